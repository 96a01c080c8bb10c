/* Ops: If, Loop, Scan (see op_list.h). */
