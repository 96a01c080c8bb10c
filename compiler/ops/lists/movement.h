/* Ops: tensor movement beyond the foundation set (see op_list.h). */

HC_OP(hc_op_center_crop_pad)  /* center_crop_pad.c */
HC_OP(hc_op_col2im)           /* col2im.c */
HC_OP(hc_op_depth_to_space)   /* depth_to_space.c */
HC_OP(hc_op_einsum)           /* einsum.c */
HC_OP(hc_op_eyelike)          /* eyelike.c */
HC_OP(hc_op_gather_elements)  /* gather_elements.c */
HC_OP(hc_op_gather_nd)        /* gather_nd.c */
HC_OP(hc_op_onehot)           /* onehot.c */
HC_OP(hc_op_range)            /* range.c */
HC_OP(hc_op_reverse_sequence) /* reverse_sequence.c */
HC_OP(hc_op_scatter)          /* scatter.c */
HC_OP(hc_op_scatter_elements) /* scatter.c */
HC_OP(hc_op_scatter_nd)       /* scatter.c */
HC_OP(hc_op_space_to_depth)   /* depth_to_space.c */
HC_OP(hc_op_tile)             /* tile.c */
HC_OP(hc_op_trilu)            /* trilu.c */
HC_OP(hc_op_upsample)         /* upsample.c */
