/* Ops: reductions, normalisations, softmax variants, TopK, CumSum (see op_list.h). */

/* reduce.c: reductions and reduction-based normalisations (ReduceSum and
 * ReduceMean are listed in foundation.h) */
HC_OP(hc_op_arg_max)
HC_OP(hc_op_arg_min)
HC_OP(hc_op_lp_normalization)
HC_OP(hc_op_mean_variance_normalization)
HC_OP(hc_op_reduce_l1)
HC_OP(hc_op_reduce_l2)
HC_OP(hc_op_reduce_log_sum)
HC_OP(hc_op_reduce_log_sum_exp)
HC_OP(hc_op_reduce_max)
HC_OP(hc_op_reduce_min)
HC_OP(hc_op_reduce_prod)
HC_OP(hc_op_reduce_sum_square)

/* softmax.c (Softmax is listed in foundation.h) */
HC_OP(hc_op_hardmax)
HC_OP(hc_op_log_softmax)

/* normalization.c (BatchNormalization and LayerNormalization are listed in
 * foundation.h) */
HC_OP(hc_op_group_normalization)
HC_OP(hc_op_instance_normalization)
HC_OP(hc_op_lrn)

HC_OP(hc_op_cumsum)      /* cumsum.c */
HC_OP(hc_op_topk)        /* topk.c */
