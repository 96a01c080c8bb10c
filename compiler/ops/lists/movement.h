/* Ops: tensor movement beyond the foundation set (see op_list.h). */
