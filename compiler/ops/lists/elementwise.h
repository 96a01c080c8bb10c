/* Ops: element-wise math, logic and activations beyond the foundation set (see op_list.h). */

/* unary.c: rounding, sign and float classification */
HC_OP(hc_op_ceil)
HC_OP(hc_op_floor)
HC_OP(hc_op_isinf)
HC_OP(hc_op_isnan)
HC_OP(hc_op_round)
HC_OP(hc_op_sign)

/* trig.c: trigonometric and hyperbolic functions */
HC_OP(hc_op_acos)
HC_OP(hc_op_acosh)
HC_OP(hc_op_asin)
HC_OP(hc_op_asinh)
HC_OP(hc_op_atan)
HC_OP(hc_op_atanh)
HC_OP(hc_op_cos)
HC_OP(hc_op_cosh)
HC_OP(hc_op_sin)
HC_OP(hc_op_sinh)
HC_OP(hc_op_tan)

/* logic.c: logical and bitwise ops */
HC_OP(hc_op_and)
HC_OP(hc_op_bitshift)
HC_OP(hc_op_bitwise_and)
HC_OP(hc_op_bitwise_not)
HC_OP(hc_op_bitwise_or)
HC_OP(hc_op_bitwise_xor)
HC_OP(hc_op_not)
HC_OP(hc_op_or)
HC_OP(hc_op_xor)

/* binary.c: more broadcasting arithmetic and comparison */
HC_OP(hc_op_greater_or_equal)
HC_OP(hc_op_less_or_equal)
HC_OP(hc_op_mean)
HC_OP(hc_op_mod)
HC_OP(hc_op_sum)

/* activation.c */
HC_OP(hc_op_celu)
HC_OP(hc_op_elu)
HC_OP(hc_op_gelu)
HC_OP(hc_op_mish)
HC_OP(hc_op_prelu)
HC_OP(hc_op_selu)
HC_OP(hc_op_shrink)
HC_OP(hc_op_softplus)
HC_OP(hc_op_softsign)
HC_OP(hc_op_thresholded_relu)

/* cast.c */
HC_OP(hc_op_cast_like)

/* size.c */
HC_OP(hc_op_size)
