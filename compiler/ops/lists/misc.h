/* Ops: everything else (see op_list.h). */
