/* Ops: pooling and convolution variants beyond the foundation set (see op_list.h). */
