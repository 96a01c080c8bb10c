/* Ops: quantized operators (see op_list.h). */
