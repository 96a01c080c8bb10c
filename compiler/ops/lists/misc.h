/* Ops: everything else (see op_list.h). */
/* Value-dependent output shapes (compiler/ops/dynamic.h). */
HC_OP(hc_op_nonzero)
HC_OP(hc_op_compress)
HC_OP(hc_op_unique)
HC_OP(hc_op_nonmaxsuppression)

/* loss.c, grid_sample.c, roi_align.c (MaxRoiPool is listed in pooling.h), tfidf.c, det.c */
HC_OP(hc_op_negative_log_likelihood_loss)
HC_OP(hc_op_softmax_cross_entropy_loss)
HC_OP(hc_op_grid_sample)
HC_OP(hc_op_roi_align)
HC_OP(hc_op_tfidf_vectorizer)
HC_OP(hc_op_det)
