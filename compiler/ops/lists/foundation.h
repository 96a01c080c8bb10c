/* Ops of the foundation set (see op_list.h). */

/* unary.c: element-wise math on one input */
HC_OP(hc_op_abs)
HC_OP(hc_op_erf)
HC_OP(hc_op_exp)
HC_OP(hc_op_log)
HC_OP(hc_op_neg)
HC_OP(hc_op_reciprocal)
HC_OP(hc_op_sqrt)
HC_OP(hc_op_tanh)

/* activation.c: element-wise activations */
HC_OP(hc_op_clip)
HC_OP(hc_op_hard_sigmoid)
HC_OP(hc_op_hard_swish)
HC_OP(hc_op_leaky_relu)
HC_OP(hc_op_relu)
HC_OP(hc_op_sigmoid)

/* binary.c: broadcasting arithmetic, comparison and selection */
HC_OP(hc_op_add)
HC_OP(hc_op_div)
HC_OP(hc_op_equal)
HC_OP(hc_op_greater)
HC_OP(hc_op_less)
HC_OP(hc_op_max)
HC_OP(hc_op_min)
HC_OP(hc_op_mul)
HC_OP(hc_op_pow)
HC_OP(hc_op_sub)
HC_OP(hc_op_where)

/* cast.c */
HC_OP(hc_op_cast)

/* views.c: zero-copy reshapes */
HC_OP(hc_op_dropout)
HC_OP(hc_op_flatten)
HC_OP(hc_op_identity)
HC_OP(hc_op_reshape)
HC_OP(hc_op_squeeze)
HC_OP(hc_op_unsqueeze)

/* constant.c: values known at compile time */
HC_OP(hc_op_constant)
HC_OP(hc_op_constant_of_shape)
HC_OP(hc_op_shape)

/* copy.c: Harness-internal byte copy (graph outputs that need their own buffer) */
HC_OP(hc_op_copy)

/* conv.c */
HC_OP(hc_op_conv)
HC_OP(hc_op_conv_transpose)

/* gemm.c */
HC_OP(hc_op_gemm)
HC_OP(hc_op_matmul)

/* normalization.c */
HC_OP(hc_op_batch_normalization)
HC_OP(hc_op_layer_normalization)

/* softmax.c */
HC_OP(hc_op_softmax)

/* pool.c */
HC_OP(hc_op_average_pool)
HC_OP(hc_op_global_average_pool)
HC_OP(hc_op_max_pool)

/* reduce.c */
HC_OP(hc_op_reduce_mean)
HC_OP(hc_op_reduce_sum)

/* data movement */
HC_OP(hc_op_concat)      /* concat.c */
HC_OP(hc_op_expand)      /* expand.c */
HC_OP(hc_op_gather)      /* gather.c */
HC_OP(hc_op_pad)         /* pad.c */
HC_OP(hc_op_resize)      /* resize.c */
HC_OP(hc_op_slice)       /* slice.c */
HC_OP(hc_op_split)       /* split.c */
HC_OP(hc_op_transpose)   /* transpose.c */
