/* Ops: quantized operators (see op_list.h). */

/* quantize.c: linear quantization */
HC_OP(hc_op_dequantize_linear)
HC_OP(hc_op_dynamic_quantize_linear)
HC_OP(hc_op_quantize_linear)

/* integer_ops.c: integer matrix products and convolutions */
HC_OP(hc_op_conv_integer)
HC_OP(hc_op_matmul_integer)
HC_OP(hc_op_qlinear_conv)
HC_OP(hc_op_qlinear_matmul)
