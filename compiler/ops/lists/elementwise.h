/* Ops: element-wise math, logic and activations beyond the foundation set (see op_list.h). */
