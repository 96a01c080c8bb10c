/* Ops: pooling and convolution variants beyond the foundation set (see op_list.h). */

/* pool_extra.c: global max / Lp pooling, LpPool, MaxUnpool */
HC_OP(hc_op_global_lp_pool)
HC_OP(hc_op_global_max_pool)
HC_OP(hc_op_lp_pool)
HC_OP(hc_op_max_unpool)

/* roi_align.c (RoiAlign is listed in misc.h) */
HC_OP(hc_op_max_roi_pool)
