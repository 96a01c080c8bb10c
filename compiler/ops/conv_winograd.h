/* Winograd convolution F(m x m, 3 x 3) for float32 2-D Conv (3x3 kernel,
 * stride 1 or 2, dilation 1, one group): conv.c asks hc_wino_choose which
 * tile size (if any) a node gets and hands the lowering, the workspace size
 * and the compile-time weight transform to this file. See conv_winograd.c. */
#ifndef HARNESS_OPS_CONV_WINOGRAD_H
#define HARNESS_OPS_CONV_WINOGRAD_H

#include <stdbool.h>

#include "compiler/codegen/kernel_builder.h"

/* The shape of a candidate Conv (NCHW, float32, 3x3, dilation 1, group 1):
 * pt/pl are the top/left pads. */
typedef struct hc_wino_shape {
  int64_t N, C, M, H, W, OH, OW, pt, pl;
  /* 1, or 2 in both dims (float32 with float32 weights only): F(2x2, 3x3)
   * with stride 2, whose 5x5 patches split into the even and odd input
   * columns and rows (see conv_winograd.c). 0 reads as 1. */
  int stride;
  /* Type of x, w and y: FLOAT32, or FLOAT16 (read and written as float16,
   * transformed and multiplied in float32, each output rounded once). */
  hx_dtype_t dt;
  /* Lanes the blocks of tiles may run in (conv.c: 2 for a node in no
   * schedule group, else 1; 0 reads as 1). With 2 and more than one block,
   * the blocks go in two parallel lanes, the first half of the tiles in
   * one and the rest in the other, each lane with its own V and Mx (twice
   * the workspace), so that at two threads each thread takes whole blocks
   * through all three stages in its own cache instead of sharing every
   * stage's data with the other core. */
  int lanes;
  /* Storage type of weights the precision pass narrowed (FLOAT16, BFLOAT16,
   * INT8) under float32 activations; UNDEFINED: the weights are dt. Such
   * weights are stored as g in HC_PACK_WINOGRAD_G, and the products build
   * each task's U from them. */
  hx_dtype_t wt;
} hc_wino_shape;

/* Output tile size m (4: F(4x4,3x3), 2: F(2x2,3x3)) Winograd is used with
 * for this shape, or 0 when the direct kernels are faster. Shapes only, so
 * that the lowering, the workspace and the pack-weights pass agree on a
 * convolution whose weights are not transformed at compile time. Always 0
 * for stride 2, which only pack-weights chooses. */
int hc_wino_choose(const hc_wino_shape* s);

/* The tile size for the pack-weights pass, which transforms the constant
 * float32 weights into U for one target: hc_wino_choose's, except where
 * that target's products favour F(4,3) on fewer tiles, and stride 2, which
 * takes F(2,3) on 256-bit targets where it pays. The packed U then carries
 * m and the stride (its alpha^2 rows) for everything after the pass. For
 * stride 1, nonzero where hc_wino_choose is, except F(2,3) on few tiles
 * for 512-bit targets (0: the direct kernel; conv.c then packs the
 * weights for its channels kernel, whose panels record the choice, or
 * keeps Winograd where the direct kernel would be another). */
int hc_wino_choose_packed(const hc_wino_shape* s, const struct hc_target* target);

/* Workspace bytes of n's lowering (no room for U where pack-weights
 * prepared the weights at compile time). */
uint64_t hc_wino_workspace(const hc_node* n, const hc_wino_shape* s, int m);

/* Replaces the constant float32 weight (input 1) of n by its transform
 * U[xi][c][oc] (layout HC_PACK_WINOGRAD), or a narrowed copy (s->wt) by its
 * panels (HC_PACK_WINOGRAD_G); *out_done tells whether it did. */
hx_status_t hc_wino_prepack(hc_graph* g, hc_node* n, const hc_wino_shape* s, int m, bool* out_done);

/* Emits the kernels of n: weight transform (unless pre-packed), input
 * transform, the (m+2)^2 products and the output transform with the
 * node's bias and fused epilogue. */
hx_status_t hc_wino_emit(hc_lower_ctx* lc, const hc_node* n, const hc_wino_shape* s, int m);

#endif /* HARNESS_OPS_CONV_WINOGRAD_H */
