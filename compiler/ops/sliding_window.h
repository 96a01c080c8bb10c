/* Geometry shared by the sliding-window ops (Conv, ConvTranspose and the
 * pools), implemented in conv.c. */
#ifndef HARNESS_OPS_SLIDING_WINDOW_H
#define HARNESS_OPS_SLIDING_WINDOW_H

#include "compiler/ops/op.h"

/* Reads strides, dilations, pads and auto_pad of a Conv or pooling node and
 * computes the output spatial sizes as ONNX shape inference does: explicit
 * pads, or SAME_UPPER/SAME_LOWER (output ceil(in/stride), the total padding
 * split with the odd element at the end/beginning), or VALID (no padding).
 * ceil_mode rounds the output size up, but a last window that would start in
 * the end padding is dropped. pads are ignored when auto_pad is set. All
 * arrays have nsp (spatial rank) entries. */
hx_status_t hc_sliding_window_geometry(const hc_node* n, int nsp, const int64_t* in, const int64_t* kernel,
                                       bool ceil_mode, int64_t* strides, int64_t* dil, int64_t* pb, int64_t* pe,
                                       int64_t* out);

#endif /* HARNESS_OPS_SLIDING_WINDOW_H */
