/* Register-tiled micro-kernels for GEMM and convolution.
 *
 * A micro-kernel keeps an MR x NV tile of accumulator vectors (VL lanes each)
 * in registers and adds to it, for every step of a reduction,
 *     acc[i][v] += broadcast(A[a_off(i)]) * B[b_off + v*VL .. + VL]
 * with llvm.fma on explicit vector types, so that the back end sees exactly
 * the BLIS inner kernel (one vector load per column vector and one
 * broadcast per row, MR*NV independent FMAs per step). The "A" side is the
 * broadcast operand and the "B" side the vector operand; which tensor plays
 * which role is the caller's choice (for an NCHW convolution the weights
 * can be A with pixels as vectors, or B with output channels as vectors).
 *
 * The reduction is an outer loop of `outer` iterations, each doing `nterms`
 * unrolled terms at constant offsets: a plain GEMM uses nterms = 1 (or a
 * small unroll), a k x k convolution uses one term per kernel tap and the
 * outer loop over input channels, so that taps address the input directly
 * (implicit GEMM) without an im2col buffer.
 *
 * Element addresses (in elements of the operand's storage type):
 *   A: a_base + o*a_outer + a_term[t] + a_row[i]     (i < mr)
 *   B: b_base + o*b_outer + b_term[t] + b_vec[v]      (v < nv)
 * (b_vec[v] = v*vl for a contiguous row; panel strides for packed panels
 * narrower than the tile).
 * Only float32 and float64 operands are supported (compute = storage type).
 */
#ifndef HARNESS_OPS_GEMM_MICROKERNEL_H
#define HARNESS_OPS_GEMM_MICROKERNEL_H

#include <stdbool.h>

#include "compiler/codegen/kernel_builder.h"

#define HC_UKR_MAX_MR 32
#define HC_UKR_MAX_NV 8
#define HC_UKR_MAX_TERMS 64

typedef struct hc_ukr {
  hx_dtype_t dt;        /* FLOAT32 or FLOAT64 (both operands and the accumulators) */
  int mr, nv;           /* tile: mr broadcast rows x nv vectors */
  unsigned vl;          /* lanes per vector */
  unsigned last_lanes;  /* lanes of vector nv-1 that B really has (1..vl); loads are masked below vl */
  LLVMValueRef a, b;    /* base pointers */
  LLVMValueRef a_base, b_base; /* i64 element offsets of (o = 0, t = 0) */
  LLVMValueRef outer;   /* i64 iterations of the outer loop (>= 0) */
  int64_t a_outer, b_outer;
  int nterms;
  int64_t a_term[HC_UKR_MAX_TERMS], b_term[HC_UKR_MAX_TERMS];
  int64_t a_row[HC_UKR_MAX_MR];
  int64_t b_vec[HC_UKR_MAX_NV];
} hc_ukr;

/* Emits the reduction. acc has mr*nv entries (row-major: acc[i*nv + v]);
 * entries are the initial vectors on entry (NULL = zeros) and the final
 * sums on return. */
void hc_ukr_emit(hc_kb* kb, const hc_ukr* u, LLVMValueRef* acc);

/* Vector type of `lanes` compute elements of dt. */
LLVMTypeRef hc_ukr_vtype(hc_kb* kb, hx_dtype_t dt, unsigned lanes);
/* Loads `lanes` consecutive elements at ptr[idx]; when valid < lanes only the
 * first `valid` are read (llvm.masked.load, zeros elsewhere). */
LLVMValueRef hc_ukr_load(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef idx, unsigned lanes, unsigned valid);
/* Stores the first `valid` lanes of v at ptr[idx] (masked below lanes). */
void hc_ukr_store(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef idx, LLVMValueRef v, unsigned lanes,
                  unsigned valid);

/* Asks LLVM to auto-vectorise the kernel's plain loops (epilogues, packing)
 * at the target's full width: x86 back ends prefer 256-bit vectors by
 * default even with AVX-512. */
void hc_ukr_prefer_full_width(hc_kb* kb);

/* Register budget of the target: vector lanes for dt and the number of
 * vector registers (16 on AVX2, 32 on AVX-512). */
unsigned hc_ukr_lanes(const hc_lower_ctx* lc, hx_dtype_t dt);
int hc_ukr_registers(const hc_lower_ctx* lc);

#endif /* HARNESS_OPS_GEMM_MICROKERNEL_H */
