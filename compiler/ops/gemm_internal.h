/* The register-tiled GEMM of gemm.c as a building block for other ops: a
 * 1x1 convolution is the product W[M][C] x X[C][pixels] per image, and
 * conv.c lowers it through the same kernel (cache blocking, packing, split
 * reductions, fused epilogues). */
#ifndef HARNESS_OPS_GEMM_INTERNAL_H
#define HARNESS_OPS_GEMM_INTERNAL_H

#include <stdbool.h>

#include "compiler/codegen/kernel_builder.h"
#include "compiler/ops/prepack.h"

/* A (batched) product Y[b] = alpha * A[b] x B[b] + beta * C, all shapes
 * static, strides in elements. */
typedef struct hc_mm_desc {
  hx_dtype_t dt; /* A, B, C and Y element type */
  const hc_value *a, *b, *c, *y;
  int64_t M, N, K;
  int64_t a_sm, a_sk, b_sk, b_sn; /* element strides inside one matrix */
  int batch_rank;
  int64_t batch_dims[HC_MAX_RANK];
  int64_t a_bs[HC_MAX_RANK], b_bs[HC_MAX_RANK]; /* batch strides, 0 = broadcast */
  int64_t batch;
  double alpha, beta;
  int64_t c_sm, c_sn; /* C strides over (M, N), 0 = broadcast */
  /* MatMul with the batch folded into the rows (B shared): the original M,
   * so that epilogue coordinates can be split back into (batch, row). */
  int64_t fold_m;
  int out_rank;       /* rank of Y (epilogue dimension groups) */
  bool b_packed;      /* B is the pre-packed constant (HC_PACK_PANELS) */
  /* Epilogue dimension groups of Y when they are not [batch..], [M], [N]
   * of a rank-out_rank output (a convolution's [N], [C], [spatial]). */
  bool has_split;
  int split[2];
  /* Read B in place even when it is large (its rows are not 4 KiB apart,
   * e.g. the image planes of a convolution): saves the packing pass. */
  bool direct_b;
  /* Reduced-precision weights (passes/precision.c): the storage types of A
   * and B when narrower than dt (FLOAT16, BFLOAT16, INT8; UNDEFINED = dt).
   * An INT8 operand carries scales (*_scales: where in the operand and as
   * what): B's per column (index bmat * N + n, bmat the B matrix), A's per
   * row; the kernel multiplies the finished sums by them. */
  hx_dtype_t a_st, b_st;
  hc_q8_scales a_scales, b_scales;
} hc_mm_desc;

/* Emits the fast float32 product of d for node n (fused ops included). */
hx_status_t hc_gemm_emit(hc_lower_ctx* lc, const hc_node* n, const hc_mm_desc* d);
/* Whether the product's kernel for `target` finishes each output element
 * in one pass: a single reduction slice, so no partial sums are parked in
 * Y before the epilogue reads its operands (the condition for writing Y
 * over an epilogue operand, hc_op_desc.inplace_input). */
bool hc_gemm_single_pass(const struct hc_target* target, const hc_mm_desc* d);
/* Stores the constant B of n (input 1, or the precision pass's narrowed
 * copy of it) in the panels d's kernel reads (HC_PACK_PANELS) and rewires
 * the input; *out_done tells whether it did (not for a B that is not a
 * constant of d's K x N matrices). */
hx_status_t hc_gemm_prepack_b(hc_graph* g, hc_node* n, const hc_mm_desc* d, bool* out_done);
/* Workspace bytes the product needs (B packed at run time), from shapes. */
uint64_t hc_gemm_workspace(const hc_mm_desc* d);

#endif /* HARNESS_OPS_GEMM_INTERNAL_H */
