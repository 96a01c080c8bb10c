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
 * Accumulation is in float32 or float64 (dt). Either operand may be stored
 * in a narrower type (a_st, b_st: reduced-precision weights, see
 * docs/precision.md): float16, bfloat16 or int8 elements are widened to
 * float32 in registers right after their load (F16C vcvtph2ps, or the
 * AVX512-FP16 forms with an embedded broadcast where the target has them;
 * a 16-bit shift for bfloat16; sign extension and vcvtdq2ps for int8), and
 * never written back to memory. int8 weights leave the per-channel scale to
 * the caller, which applies it to the finished sums.
 */
#ifndef HARNESS_OPS_GEMM_MICROKERNEL_H
#define HARNESS_OPS_GEMM_MICROKERNEL_H

#include <stdbool.h>

#include "compiler/codegen/kernel_builder.h"
#include "compiler/ops/prepack.h"

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
  /* Term offsets known only at run time (i64 values, e.g. hc_kb_param
   * reads, so that kernels differing only in them share one body); where
   * set they replace a_term / b_term. */
  LLVMValueRef a_term_rt[HC_UKR_MAX_TERMS], b_term_rt[HC_UKR_MAX_TERMS];
  int64_t a_row[HC_UKR_MAX_MR];
  int64_t b_vec[HC_UKR_MAX_NV];
  /* Storage types of A and B elements when they differ from dt (float32
   * only): FLOAT16, BFLOAT16 or INT8; HX_DTYPE_UNDEFINED = dt. */
  hx_dtype_t a_st, b_st;
  /* Optional software prefetch, one per step: the cache line holding
   * B element pf_base + o*b_outer (NULL = none); pf_locality 0..3 as in
   * llvm.prefetch. Lets a caller pull in B it reads soon (the next column
   * panel) while this reduction runs. */
  LLVMValueRef pf_base;
  int pf_locality;
  /* Optional prefetch of the B chunk the caller reads next (its first
   * element pf_next; nv panels at b_vec[v], outer steps of b_outer
   * elements each, as this one), shared out among the pf_ntiles
   * reductions that sweep this same chunk (pf_ord: this one's ordinal,
   * i64): each step prefetches its share of every panel's lines, so that
   * the next chunk streams in from memory over all of them instead of
   * stalling the first one to read it (B larger than the caches: weights
   * at batch 1). Locality pf_locality. */
  LLVMValueRef pf_next, pf_ord;
  int64_t pf_ntiles;
  /* The most outer steps any of those reductions takes (0 = unknown).
   * When it makes each one's share a few lines, the share is prefetched
   * in a short loop before the reduction instead of a line per step. */
  int64_t pf_max_outer;
  /* Software prefetch of A, a_prefetch outer iterations ahead (0 = none):
   * one prefetch per cache line the step's A elements touch. For A read
   * with a large outer stride (a channel plane), whose lines the hardware
   * prefetchers do not follow: when another core wrote them (the previous
   * kernel's tasks), every miss waits for a cross-core transfer.
   * a_prefetch_hint: llvm.prefetch locality (3 = L1, 2 = L2). */
  int a_prefetch, a_prefetch_hint;
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

/* Widens a scalar or vector of storage type st (FLOAT16, BFLOAT16 as i16
 * bits, INT8) to float32; other types are returned unchanged. */
LLVMValueRef hc_ukr_widen(hc_kb* kb, hx_dtype_t st, LLVMValueRef v);
/* Stores the first `valid` of the `lanes` lanes of the float32 vector v at
 * ptr[idx] in storage type st (FLOAT32 or UNDEFINED: as is; FLOAT16:
 * rounded once, to nearest even), the counterpart of hc_ukr_load_st for a
 * kernel's output. */
void hc_ukr_store_st(hc_kb* kb, hx_dtype_t st, LLVMValueRef ptr, LLVMValueRef idx, LLVMValueRef v, unsigned lanes,
                     unsigned valid);
/* hc_ukr_load for elements stored as st (FLOAT32 or a narrower type of
 * hc_ukr_widen): a float32 vector of `lanes` lanes, the first `valid` read. */
LLVMValueRef hc_ukr_load_st(hc_kb* kb, hx_dtype_t st, LLVMValueRef ptr, LLVMValueRef idx, unsigned lanes,
                            unsigned valid);
/* INT8 weights' per-channel scales as a kernel reads them. */
typedef struct hc_ukr_scales {
  LLVMValueRef ptr;     /* the first scale (NULL: the weights have none) */
  hx_dtype_t elem;      /* FLOAT16 or FLOAT32 */
  LLVMValueRef unshift; /* float16 scales: 2^-exp, a float32 read from the kernel's table */
} hc_ukr_scales;
/* The scales s of the weight constant at `weights`. The exponent is a
 * table parameter (hc_kb_param), so that kernels of one shape share their
 * body whatever their weights' exponents. */
hc_ukr_scales hc_ukr_scales_at(hc_kb* kb, const hc_q8_scales* s, LLVMValueRef weights);
/* The scales of channels idx.. as float32: a vector of `lanes` lanes, the
 * first `valid` read, or the scalar for lanes = 1. */
LLVMValueRef hc_ukr_load_scales(hc_kb* kb, const hc_ukr_scales* s, LLVMValueRef idx, unsigned lanes, unsigned valid);
/* One element stored as st at ptr[idx], as float32 broadcast into `lanes`
 * lanes (lanes = 1: the scalar). */
LLVMValueRef hc_ukr_broadcast_st(hc_kb* kb, hx_dtype_t st, LLVMValueRef ptr, LLVMValueRef idx, unsigned lanes);

/* Asks LLVM to auto-vectorise the kernel's plain loops (epilogues, packing)
 * at the target's full width: x86 back ends prefer 256-bit vectors by
 * default even with AVX-512. */
void hc_ukr_prefer_full_width(hc_kb* kb);

/* Register budget of the target: vector lanes for dt and the number of
 * vector registers (16 on AVX2, 32 on AVX-512). */
unsigned hc_ukr_lanes(const hc_lower_ctx* lc, hx_dtype_t dt);
int hc_ukr_registers(const hc_lower_ctx* lc);
/* Whether an mr x nv register tile fits beside its nv vectors of B and one
 * broadcast of A (mr * nv + nv + 1 vector registers). A tile that does not
 * spills accumulators to the stack inside the reduction loop: a GEMM tile
 * of 7 x 4 on AVX-512 ran 1.75x slower than 6 x 4. With one row each B
 * vector is used once and FMAs read it from memory, so planners may exempt
 * mr = 1. */
bool hc_ukr_tile_fits(const hc_lower_ctx* lc, int mr, int nv);
/* The target's L1 data cache per core in bytes (32 KiB when unknown). */
int hc_ukr_l1d_bytes(const hc_lower_ctx* lc);
/* The target's L2 per core in bytes (512 KiB when unknown). */
int hc_ukr_l2_bytes(const hc_lower_ctx* lc);
/* Whether a kernel's weights (`bytes` of them) are, at each run, no longer
 * in L2 from the run before: larger than L2 themselves, or in a model whose
 * weights together are (every other layer's pass through the core's caches
 * in between; on a host whose other tenants share the L3 they come from
 * memory). Kernels prefetch such weights ahead of their tiles. */
bool hc_ukr_weights_cold(hc_lower_ctx* lc, int64_t bytes);

#endif /* HARNESS_OPS_GEMM_MICROKERNEL_H */
