/* Integer matrix products and convolutions: MatMulInteger, QLinearMatMul,
 * ConvInteger and QLinearConv (opsets 10-22), int8/uint8 operands in any
 * mix, zero points per tensor, per row/column (matrix products) or per
 * output channel (convolution weights).
 *
 * All four become one integer product Y[o][m][p] = sum_k W[o][m][k] *
 * X[o][p][k] over "outer" problems o (output batch entries of a matrix
 * product; (image, group) pairs of a convolution):
 *
 *  - the product is in outer-product form, like the float micro-kernels
 *    (gemm_microkernel.c): vector lanes run over output columns (positions
 *    of a convolution), a register tile holds IG_MR rows x NR vectors of
 *    int32 accumulators, and K is consumed in pairs: each row's pair
 *    (w[k] - zw, w[k+1] - zw) is broadcast as one 32-bit lane and one x86
 *    pmaddwd (vpdpwssd on VNNI targets, which also adds the accumulator)
 *    per (row, vector) adds w[k]*x[k][p] + w[k+1]*x[k+1][p] into lane p.
 *    Accumulation is exact int32 arithmetic (wrapping on overflow, as ONNX
 *    allows) and needs no horizontal reduction;
 *  - on AVX512-VNNI targets, convolutions with constant int8 weights of
 *    zero point 0 take a byte path instead: uint8 activation quads times
 *    broadcast weight quads with vpdpbusd (4 MACs per lane), corrected by
 *    the x zero point times compile-time weight row sums (ci_use_vnni);
 *    MatMulInteger and QLinearMatMul with a constant int8 B of zero
 *    point 0 likewise, the roles swapped: A's quads broadcast (uint8, or int8 offset by 128)
 *    times B's int8 quads packed at compile time (hc_mmi_prepack),
 *    corrected by A's zero point times B's column sums;
 *  - W (a convolution's weights), when it and its zero point are
 *    constants, is packed at compile time into int16 rows with the zero
 *    point subtracted (hc_ci_prepack, HC_PACK_ROWS_I16), so that a K pair
 *    is one broadcast load; other weights are read directly from the 8-bit
 *    tensor when K is even (the zero point subtracted in registers), else
 *    from int16 rows packed once per run with a zero pad; a matrix
 *    product's A is always packed so (mmi_a_bytes), except on the byte
 *    path;
 *    X (im2col of the convolution's input, or B) is packed once per run
 *    into int16 panels of K pairs x columns (ig_prod), zero point
 *    subtracted, zeros where a tap reads padding;
 *  - depthwise convolutions (one input channel per group) skip the product:
 *    per output channel and row, the taps accumulate in int32 over the
 *    row's columns (ci_emit_depthwise);
 *  - the epilogue goes through a stack tile of the task's block of sums
 *    that a vectorisable loop stores (MatMulInteger, ConvInteger) or
 *    requantises (QLinear*): (sum + bias) times the multiplier
 *    scale_a * scale_b / scale_y (computed in the scales' type, as the
 *    reference does), the exact product rounded half to even by one
 *    float32 fma (requant_round), plus the output zero point, saturated.
 *
 * A product task is one block of up to IG_MB rows x ig_pb() columns of one
 * outer problem. It walks K in slices (ig_k_slices) and, per slice, each
 * group of NR vectors of columns under every row tile, so that X's slice
 * for the group is loaded from L2 once and read from L1 by the other row
 * tiles (with all of K per tile, every row tile streamed the task's X from
 * L2: an int8 ResNet-18's 3x3 products ran 6-12% slower). Matrix
 * products with at most MMI_AXPY_M rows skip the packing, which would cost
 * as much as the product (see mmi_emit_axpy). Scales, zero points and bias
 * are read at run time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/backend/target.h"
#include "compiler/ops/gemm_microkernel.h"
#include "compiler/ops/prepack.h"
#include "compiler/ops/sliding_window.h"
#include "harness/artifact_abi.h"


#define IG_MAX_SP (HC_MAX_RANK - 2)
/* int16 lanes of the widest vector (512 bits). */
#define IG_MAX_LANES 32
/* Register tile of the product kernel: IG_MR rows x NR vectors of columns
 * (NR <= IG_MAX_NR, chosen per target by ig_lanes), or as a product sets
 * it (ig_prod.MR, at most IG_MAX_MR rows). */
#define IG_MR 4
#define IG_MAX_MR 8
#define IG_MAX_NR 4
/* Packed X's columns are padded to a multiple of this many (the most int32
 * lanes of a vector), whatever the target, so workspace sizes do not depend
 * on it. */
#define IG_VMAX 16
/* Product task: IG_MB rows (a multiple of IG_MR) x ig_pb() columns; with
 * taller register tiles, IG_MB / IG_MR tiles (ig_mb). */
#define IG_MB 16
/* Depthwise path: output planes up to this many positions (an int32 stack
 * tile of one plane). */
#define IG_DW_MAX_P 16384
/* Depthwise path without the byte path: input planes (padded rows) up to
 * this many bytes are copied to the stack and computed in whole rows. An
 * int8 MobileNetV2's 28x28 and smaller planes took 0.75-0.93 of the time
 * so; its 56x56 and 112x112 ones, whose border columns are few, 1.03-1.12
 * (the copy costs more than the border taps it saves). */
#define CI_DW_PLANE_BYTES 2048
/* Packing tasks: about this many int16 elements each. */
#define IG_PACK_ELEMS 8192
/* Matrix products with at most this many rows take the unpacked path
 * (mmi_emit_axpy), tasks of up to MMI_AXPY_NB columns. */
#define MMI_AXPY_M 4
#define MMI_AXPY_NB 256

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* Row-major strides of dims with 0 where a dim is 1 (broadcast). */
static void bcast_strides(int rank, const int64_t* dims, int64_t unit, int64_t* out) {
  int64_t s = unit;
  for (int i = rank - 1; i >= 0; --i) {
    out[i] = dims[i] == 1 ? 0 : s;
    s *= dims[i];
  }
}

/* Offset sum(coord_i * strides[i]) of flat index idx over row-major dims. */
static LLVMValueRef coord_offset(hc_kb* kb, LLVMValueRef idx, int rank, const int64_t* dims, const int64_t* strides) {
  LLVMValueRef off = hc_kb_i64(kb, 0);
  int first = -1;
  for (int i = 0; i < rank && first < 0; ++i)
    if (strides[i]) first = i;
  for (int i = rank - 1; i >= first && first >= 0; --i) {
    if (strides[i]) {
      LLVMValueRef c = i == 0 ? idx : LLVMBuildURem(kb->b, idx, hc_kb_i64(kb, dims[i]), "");
      off = hc_kb_iadd(kb, off, hc_kb_imul(kb, c, hc_kb_i64(kb, strides[i])));
    }
    if (i > first) idx = LLVMBuildUDiv(kb->b, idx, hc_kb_i64(kb, dims[i]), "");
  }
  return off;
}

/* Range of an 8-bit quantized type. */
static void q8_range(hx_dtype_t t, int64_t* lo, int64_t* hi) {
  *lo = t == HX_DTYPE_INT8 ? -128 : 0;
  *hi = t == HX_DTYPE_INT8 ? 127 : 255;
}

/* True for a per-tensor parameter: one value, scalar or 1-D. */
static bool is_single(const hc_value* v) { return v->rank <= 1 && hc_value_numel(v) == 1; }

/* A per-tensor zero point z as an int32 (0 when absent), plus 128 when
 * `offset` (a signed operand that vpdpbusd reads as unsigned, x + 128). */
static LLVMValueRef zero_point_i32(hc_kb* kb, const hc_value* z, bool offset) {
  LLVMValueRef v = z ? hc_kb_convert(kb, hc_kb_load(kb, z->dtype, hc_kb_ptr(kb, z), hc_kb_i64(kb, 0)), z->dtype,
                                     HX_DTYPE_INT32)
                     : hc_kb_i32(kb, 0);
  return offset ? LLVMBuildAdd(kb->b, v, hc_kb_i32(kb, 128), "") : v;
}

/* ---- the integer product --------------------------------------------------- */

/* One requantised or plain integer product over outer problems (see the
 * file comment). Offsets per outer problem are sums of its coordinates over
 * outer_dims times the *_os strides; inside a problem, row m and column p.
 *
 * W (rows) is read either directly from the 8-bit tensor `w` (rows w_ld
 * elements apart, K even, the row's zero point subtracted in registers) or
 * from int16 rows packed in the workspace at offset 0 (K odd: Kp = K + 1,
 * zero point already subtracted, a 0 in the padding). X (columns) is packed
 * in the workspace at x_ws_offset as int16 panels of K pairs: element
 * (k, p) at ((k/2)*Pp + p)*2 + k%2, zero point subtracted, Pp = Pt rounded
 * up to IG_VMAX positions (1 for a single position) with zeros in the
 * padding; on the VNNI path (vnni) as uint8 panels of K quads, element
 * (k, p) at ((k/4)*Pp + p)*4 + k%4. */
typedef struct ig_prod {
  int64_t Mt, Pt, Kp, Pp;
  unsigned L;  /* int16 lanes per vector (two per int32 accumulator lane) */
  unsigned NR; /* vectors of columns per register tile */
  int outer_rank;
  int64_t outer_dims[HC_MAX_RANK];
  int64_t w_os[HC_MAX_RANK], x_os[HC_MAX_RANK]; /* elements of W's storage; int16 elements of packed X */
  bool w_direct;                                /* W read from w (8-bit) rather than packed int16 */
  bool w_const;                                 /* packed int16 W is the constant w (HC_PACK_ROWS_I16), not in the workspace */
  const hc_value* w;
  int64_t w_ld;
  const hc_value* wz; /* direct W's zero point (NULL: none) */
  int64_t wz_os[HC_MAX_RANK], wz_step;
  uint64_t x_ws_offset; /* bytes from the workspace to packed X */
  const hc_value* x_const; /* packed X as a constant instead (HC_PACK_KQUADS_S8), or NULL */
  /* The matrix products' VNNI byte path (HC_PACK_KQUADS_S8): W is A's 8-bit rows
   * (K a multiple of 4; a quad broadcast as the unsigned operand, offset
   * by 128 when A is signed), X the constant int8 B in K-quads (zero point
   * 0); the sum is corrected by A's zero point (+128) times B's column
   * sums (a compile-time table, Pp per B matrix, cs_os per outer
   * problem). */
  bool vnni_bq, a_signed;
  int64_t cs_os[HC_MAX_RANK];
  /* VNNI byte path (ci_use_vnni): X packed as uint8 K-quads, W int8 with
   * zero point 0 read directly, vpdpbusd; the sum of x'·w over k minus
   * zx' times W's row sum (a compile-time table) is the exact sum of
   * (x - zx)·w. rs_os: row-sum offset per outer problem. */
  bool vnni;
  int64_t w_kc; /* W's row length in its tensor (w_ld is K rounded up to 4) */
  const hc_value* xz;
  bool x_signed;
  int64_t rs_os[HC_MAX_RANK];
  /* Direct convolutions (ci_use_taps): X is the padded channel-quad copy
   * of the input, not an im2col; K quad kq's rows of it start x_kq_off[kq]
   * bytes into the copy, and column p of every row is at p*4 after that.
   * The columns are the padded input's rows (y_pitch positions), of which
   * the first y_ow are outputs and the rest are dropped. NULL / 0 for
   * products whose columns are the outputs. */
  const int64_t* x_kq_off;
  int64_t y_pitch, y_ow;
  int MR; /* rows of the register tile (0: IG_MR), a power of two */
  hx_dtype_t yt; /* INT32, or the requantised 8-bit type */
  /* requantisation: scale_m per row, scale_p per column, y scale/zero point,
   * optional int32 bias per row */
  const hc_value *sm, *sp, *sy, *zy, *bias;
  int64_t sm_os[HC_MAX_RANK], sp_os[HC_MAX_RANK], bias_os[HC_MAX_RANK];
  int64_t sm_step, sp_step, bias_step;
} ig_prod;

/* Per-kernel state of the product emitter. */
typedef struct ig_emit {
  hc_kb* kb;
  const ig_prod* d;
  LLVMTypeRef v16, v32, vacc; /* <L x i16>, <L x i32>, <L/2 x i32> */
  LLVMValueRef even, odd;     /* shuffle masks selecting lanes 0,2,.. and 1,3,.. */
  LLVMValueRef wp, xp, yp, pwz;
  LLVMValueRef w_off, x_off, y_off, sm_off, sp_off, b_off, wz_off;
  LLVMValueRef psm, psp, pb, ys, yz;
  LLVMValueRef ylo, yhi, yzb; /* requant_round's bounds and zero-point offset */
  unsigned rq_lanes;           /* int32 lanes of ig_requantize's vectors */
  LLVMValueRef tile, m0, p0; /* int32 sums of the task's block */
  LLVMValueRef rq_tab;       /* requantised from registers (ig_rq_in_registers): the rows' multipliers */
  LLVMValueRef pend;         /* ... and the task's column end */
  int64_t tile_ld;           /* tile row stride */
  LLVMValueRef rs, rs_off, xzq; /* VNNI: row sums, their offset, zx' (i32) */
  LLVMValueRef xkq;             /* direct: the x_kq_off table (i32) */
  LLVMValueRef cs, cs_off;      /* vnni_bq: B's column sums, their offset */
  LLVMValueRef acc[IG_MAX_MR * IG_MAX_NR];
} ig_emit;

/* Rows of d's register tile, and of its product tasks. */
static int ig_mr(const ig_prod* d) { return d->MR ? d->MR : IG_MR; }
static int64_t ig_mb(const ig_prod* d) { return (int64_t)IG_MB / IG_MR * ig_mr(d); }

/* The emitter's state for a product kernel of d over int16 vectors of
 * d->L lanes: vector types and the even/odd lane masks. */
static void ig_emit_init(ig_emit* e, hc_kb* kb, const ig_prod* d) {
  memset(e, 0, sizeof *e);
  e->kb = kb;
  e->d = d;
  e->v16 = LLVMVectorType(kb->t_i16, d->L);
  e->v32 = LLVMVectorType(kb->t_i32, d->L);
  e->vacc = LLVMVectorType(kb->t_i32, d->L / 2);
  LLVMValueRef ev[IG_MAX_LANES / 2], od[IG_MAX_LANES / 2];
  for (unsigned i = 0; i < d->L / 2; ++i) {
    ev[i] = LLVMConstInt(kb->t_i32, 2 * i, 0);
    od[i] = LLVMConstInt(kb->t_i32, 2 * i + 1, 0);
  }
  e->even = LLVMConstVector(ev, d->L / 2);
  e->odd = LLVMConstVector(od, d->L / 2);
}

/* Calls a non-overloaded intrinsic, bitcasting each argument to the
 * declared parameter type (LLVM versions differ in whether VNNI operands
 * are i16 or i32 vectors); NULL if LLVM does not know it. */
static LLVMValueRef call_fixed_intrinsic(hc_kb* kb, const char* name, LLVMValueRef* args, unsigned nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (!id) return NULL;
  LLVMValueRef decl = LLVMGetIntrinsicDeclaration(kb->lc->mod, id, NULL, 0);
  LLVMTypeRef fty = LLVMIntrinsicGetType(kb->lc->llctx, id, NULL, 0);
  LLVMTypeRef params[4];
  if (LLVMCountParamTypes(fty) != nargs || nargs > 4) return NULL;
  LLVMGetParamTypes(fty, params);
  LLVMValueRef cast[4];
  for (unsigned i = 0; i < nargs; ++i)
    cast[i] = LLVMTypeOf(args[i]) == params[i] ? args[i] : LLVMBuildBitCast(kb->b, args[i], params[i], "");
  return LLVMBuildCall2(kb->b, fty, decl, cast, nargs, "");
}

/* acc + (lane pairs of a*b summed into int32 lanes). On x86 this is
 * vpdpwssd where the target has VNNI, else pmaddwd + add, called as
 * intrinsics because the optimiser reassociates the generic pattern
 * (sign-extend, multiply, add even and odd lanes) beyond what instruction
 * selection recognises; the generic form remains as a fallback. */
static LLVMValueRef dot_step(ig_emit* e, LLVMValueRef acc, LLVMValueRef a, LLVMValueRef b) {
  hc_kb* kb = e->kb;
  LLVMBuilderRef bd = kb->b;
  unsigned L = e->d->L;
  uint64_t f = kb->lc->target ? kb->lc->target->required_features : 0;
  bool vnni = L == 32 ? (f & HX_CPU_AVX512VNNI) != 0
                      : ((f & HX_CPU_AVXVNNI) || ((f & HX_CPU_AVX512VNNI) && (f & HX_CPU_AVX512VL)));
  if (vnni) {
    const char* name = L == 32 ? "llvm.x86.avx512.vpdpwssd.512"
                       : L == 16 ? "llvm.x86.avx512.vpdpwssd.256"
                                 : "llvm.x86.avx512.vpdpwssd.128";
    LLVMValueRef r = call_fixed_intrinsic(kb, name, (LLVMValueRef[]){acc, a, b}, 3);
    if (r) return LLVMTypeOf(r) == e->vacc ? r : LLVMBuildBitCast(bd, r, e->vacc, "");
  }
  const char* name = L == 32   ? "llvm.x86.avx512.pmaddw.d.512"
                     : L == 16 ? "llvm.x86.avx2.pmadd.wd"
                               : "llvm.x86.sse2.pmadd.wd";
  LLVMValueRef m = call_fixed_intrinsic(kb, name, (LLVMValueRef[]){a, b}, 2);
  if (m && LLVMTypeOf(m) != e->vacc) m = LLVMBuildBitCast(bd, m, e->vacc, "");
  if (!m) {
    LLVMValueRef p = LLVMBuildMul(bd, LLVMBuildSExt(bd, a, e->v32, ""), LLVMBuildSExt(bd, b, e->v32, ""), "");
    LLVMValueRef lo = LLVMBuildShuffleVector(bd, p, LLVMGetPoison(e->v32), e->even, "");
    LLVMValueRef hi = LLVMBuildShuffleVector(bd, p, LLVMGetPoison(e->v32), e->odd, "");
    m = LLVMBuildAdd(bd, lo, hi, "");
  }
  return LLVMBuildAdd(bd, acc, m, "");
}

/* 1.5 * 2^23: a float32 between 2^23 and 2^24 is an integer, so adding
 * this to a value of magnitude below 2^22 rounds it to an integer (half to
 * even, the default rounding mode) held in the low mantissa bits. */
#define RQ_MAGIC 12582912.0
#define RQ_MAGIC_BITS 0x4B400000

/* Requantises int32 sums `acc` (bias included; a scalar or a vector) with
 * the float32 multiplier `mult` (same shape): saturate(round_half_even(acc
 * * mult) + zp), as i8. lo_t/hi_t are RQ_MAGIC + (type min/max - zp) and
 * zp_bits is RQ_MAGIC_BITS - zp, all per kernel (ig_requant_setup).
 *
 * float32, 16 lanes per AVX-512 vector (float64 had 8), and exact:
 * t = fma(acc, mult, RQ_MAGIC) rounds the real product plus RQ_MAGIC once,
 * so while |acc * mult| < 2^22 (every unsaturated output) t is RQ_MAGIC
 * plus the product rounded half to even, exactly what the float64 product
 * gave; acc converts to float32 exactly while |acc| <= 2^24 (beyond, the
 * conversion's relative 2^-24 can move a value within that of a .5 tie by
 * one step). zp is added after the rounding (adding it before would round
 * ties of odd zero points the wrong way). Larger products: t - RQ_MAGIC is
 * a monotone function of the product and exceeds the range there, so
 * clamping t to [lo_t, hi_t] saturates right; after the clamp the bits of t
 * minus zp_bits are the output. A NaN (zero y scale) gives the minimum. */
static LLVMValueRef requant_round(hc_kb* kb, LLVMValueRef acc, LLVMValueRef mult, LLVMValueRef lo_t,
                                  LLVMValueRef hi_t, LLVMValueRef zp_bits) {
  LLVMBuilderRef b = kb->b;
  LLVMTypeRef at = LLVMTypeOf(acc);
  bool vec = LLVMGetTypeKind(at) == LLVMVectorTypeKind;
  unsigned n = vec ? LLVMGetVectorSize(at) : 1;
  LLVMTypeRef ft = vec ? LLVMVectorType(kb->t_f32, n) : kb->t_f32;
  LLVMTypeRef bt = vec ? LLVMVectorType(kb->t_i8, n) : kb->t_i8;
  if (vec) {
    lo_t = hc_kb_splat(kb, lo_t, n);
    hi_t = hc_kb_splat(kb, hi_t, n);
    zp_bits = hc_kb_splat(kb, zp_bits, n);
  }
  LLVMValueRef magic = LLVMConstReal(kb->t_f32, RQ_MAGIC);
  if (vec) magic = hc_kb_splat(kb, magic, n);
  LLVMValueRef a = LLVMBuildSIToFP(b, acc, ft, "");
  LLVMValueRef t = hc_kb_intrinsic(kb, "llvm.fma", ft, (LLVMValueRef[]){a, mult, magic}, 3);
  /* t > lo ? t : lo is one maxps (and maps NaN to lo) */
  t = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, t, lo_t, ""), t, lo_t, "");
  t = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, t, hi_t, ""), t, hi_t, "");
  LLVMValueRef i = LLVMBuildSub(b, LLVMBuildBitCast(b, t, LLVMTypeOf(acc), ""), zp_bits, "");
  return LLVMBuildTrunc(b, i, bt, "");
}

/* Rounds a float32 result of float16/bfloat16 operands to that type, so
 * that the multiplier is what the reference computes in the scales' type
 * (the float32 product is exact and the float32 quotient rounds correctly
 * once narrowed); float32 values pass through. */
static LLVMValueRef round_to(hc_kb* kb, hx_dtype_t st, LLVMValueRef v) {
  if (st == HX_DTYPE_FLOAT16) return LLVMBuildFPExt(kb->b, LLVMBuildFPTrunc(kb->b, v, kb->t_f16, ""), kb->t_f32, "");
  if (st == HX_DTYPE_BFLOAT16) return hc_kb_bf16_to_f32(kb, hc_kb_f32_to_bf16(kb, v));
  return v;
}

/* Row m's requantisation parameters: its scale (sm), int32 bias (NULL:
 * none) and, when row_m is given (one column scale), its multiplier
 * sm * sp / sy computed in the scales' type. */
static void ig_row_params(ig_emit* e, LLVMValueRef m, LLVMValueRef* sm, LLVMValueRef* bias, LLVMValueRef* row_m) {
  hc_kb* kb = e->kb;
  const ig_prod* d = e->d;
  *sm = hc_kb_load(kb, d->sm->dtype, e->psm, hc_kb_iadd(kb, e->sm_off, hc_kb_imul(kb, m, hc_kb_i64(kb, d->sm_step))));
  *bias = d->bias ? hc_kb_load(kb, HX_DTYPE_INT32, e->pb,
                               hc_kb_iadd(kb, e->b_off, hc_kb_imul(kb, m, hc_kb_i64(kb, d->bias_step))))
                  : NULL;
  if (!row_m) return;
  hx_dtype_t st = d->sm->dtype;
  LLVMValueRef sp = hc_kb_load(kb, d->sp->dtype, e->psp, e->sp_off);
  LLVMValueRef prod = round_to(kb, st, hc_kb_mul(kb, HX_DTYPE_FLOAT32, *sm, sp));
  *row_m = round_to(kb, st, hc_kb_div(kb, HX_DTYPE_FLOAT32, prod, e->ys));
}

/* Y's positions per row of an outer problem: the columns, or for a direct
 * convolution the outputs among them. */
static int64_t ig_y_cols(const ig_prod* d) { return d->y_pitch ? d->Pt / d->y_pitch * d->y_ow : d->Pt; }

/* The first `count` of n lanes (count an i32; none when it is <= 0). */
static LLVMValueRef first_lanes(hc_kb* kb, LLVMValueRef count, unsigned n) {
  LLVMValueRef iota[IG_MAX_LANES];
  for (unsigned i = 0; i < n; ++i) iota[i] = hc_kb_i32(kb, (int32_t)i);
  return LLVMBuildICmp(kb->b, LLVMIntSLT, LLVMConstVector(iota, n), hc_kb_splat(kb, count, n), "");
}

/* Requantises one vector of sums (plus the row's bias vbias, if any) with
 * the multiplier vector vm and stores it at Y[yi..], only the lanes of
 * `mask` when there is one. */
static void ig_requant_store(ig_emit* e, LLVMValueRef acc, LLVMValueRef vm, LLVMValueRef vbias, LLVMValueRef yi,
                             LLVMValueRef mask) {
  hc_kb* kb = e->kb;
  if (vbias) acc = LLVMBuildAdd(kb->b, acc, vbias, "");
  LLVMValueRef rq = requant_round(kb, acc, vm, e->ylo, e->yhi, e->yzb);
  LLVMValueRef at = hc_kb_gep(kb, e->d->yt, e->yp, yi);
  if (mask)
    hc_kb_masked_store(kb, rq, at, 1, mask);
  else
    LLVMSetAlignment(LLVMBuildStore(kb->b, rq, at), 1);
}

/* Row m's requantisation state while its columns are written. */
typedef struct ig_rq_row {
  LLVMValueRef sm, bias, row_m; /* row scale, int32 bias (or NULL), row multiplier (or NULL) */
  LLVMValueRef trow, yrow;      /* tile offset of column p0, Y offset of column 0 */
  hx_dtype_t st;                /* the scales' type */
} ig_rq_row;

/* Writes columns [pa, pb) of one row of the tile to Y[yrow + p + ydelta]:
 * with a row multiplier, whole vectors of the target's int32 lanes, then a
 * scalar tail. */
static void ig_requant_cols(ig_emit* e, const ig_rq_row* r, LLVMValueRef pa, LLVMValueRef pb, LLVMValueRef ydelta) {
  hc_kb* kb = e->kb;
  LLVMBuilderRef b = kb->b;
  const ig_prod* d = e->d;
  bool q = d->yt != HX_DTYPE_INT32;
  hc_loop pl;
  LLVMValueRef yrow = hc_kb_iadd(kb, r->yrow, ydelta);
  LLVMValueRef ptail = pa;
  unsigned W = e->rq_lanes;
  if (r->row_m && W > 1) {
    LLVMValueRef cnt = LLVMBuildSub(b, pb, pa, "");
    LLVMValueRef pvend = hc_kb_iadd(kb, pa, LLVMBuildAnd(b, cnt, hc_kb_i64(kb, -(int64_t)W), ""));
    LLVMTypeRef vi = LLVMVectorType(kb->t_i32, W);
    LLVMValueRef vm = hc_kb_splat(kb, r->row_m, W);
    LLVMValueRef vbias = r->bias ? hc_kb_splat(kb, r->bias, W) : NULL;
    LLVMValueRef p = hc_loop_begin_step(kb, &pl, pa, pvend, W, "qv");
    LLVMValueRef ti = hc_kb_iadd(kb, r->trow, LLVMBuildSub(b, p, e->p0, ""));
    LLVMValueRef acc = LLVMBuildLoad2(b, vi, hc_kb_gep(kb, HX_DTYPE_INT32, e->tile, ti), "");
    LLVMSetAlignment(acc, 4);
    ig_requant_store(e, acc, vm, vbias, hc_kb_iadd(kb, yrow, p), NULL);
    hc_loop_end(kb, &pl);
    ptail = pvend;
    if (W == 16) {
      /* AVX-512: the rest as one masked vector. A direct convolution's
       * output rows (28 or 14 positions) left 12 or 14 of every row to the
       * scalar loop, 12% of the kernel's time on 28x28 planes. */
      LLVMValueRef rem = LLVMBuildTrunc(b, LLVMBuildSub(b, pb, pvend, ""), kb->t_i32, "");
      hc_if tail;
      hc_if_begin(kb, &tail, LLVMBuildICmp(b, LLVMIntNE, rem, hc_kb_i32(kb, 0), ""));
      LLVMValueRef mask = first_lanes(kb, rem, 16);
      LLVMValueRef tt = hc_kb_iadd(kb, r->trow, LLVMBuildSub(b, pvend, e->p0, ""));
      LLVMValueRef tacc = hc_kb_masked_load(kb, vi, hc_kb_gep(kb, HX_DTYPE_INT32, e->tile, tt), 4, mask);
      ig_requant_store(e, tacc, vm, vbias, hc_kb_iadd(kb, yrow, pvend), mask);
      hc_if_end(kb, &tail);
      ptail = pb;
    }
  }
  LLVMValueRef p = hc_loop_begin(kb, &pl, ptail, pb, "qp");
  LLVMValueRef acc = hc_kb_load(kb, HX_DTYPE_INT32, e->tile, hc_kb_iadd(kb, r->trow, LLVMBuildSub(b, p, e->p0, "")));
  if (!q) {
    hc_kb_store(kb, HX_DTYPE_INT32, e->yp, hc_kb_iadd(kb, yrow, p), acc);
  } else {
    if (r->bias) acc = LLVMBuildAdd(b, acc, r->bias, "");
    LLVMValueRef mult = r->row_m;
    if (!mult) {
      LLVMValueRef sp = hc_kb_load(kb, d->sp->dtype, e->psp,
                                   hc_kb_iadd(kb, e->sp_off, hc_kb_imul(kb, p, hc_kb_i64(kb, d->sp_step))));
      LLVMValueRef prod = round_to(kb, r->st, hc_kb_mul(kb, HX_DTYPE_FLOAT32, r->sm, sp));
      mult = round_to(kb, r->st, hc_kb_div(kb, HX_DTYPE_FLOAT32, prod, e->ys));
    }
    hc_kb_store(kb, d->yt, e->yp, hc_kb_iadd(kb, yrow, p), requant_round(kb, acc, mult, e->ylo, e->yhi, e->yzb));
  }
  hc_loop_end(kb, &pl);
}

/* Writes the task's block [m0, mend) x [p0, pend) from the tile to Y: the
 * int32 sums as they are (MatMulInteger, ConvInteger), or requantised:
 * y = saturate(round((sum + bias) * (scale_m * scale_p / scale_y)) + zp)
 * (requant_round). With one multiplier per row, explicit vectors of the
 * target's int32 lanes and a scalar tail (the loop vectoriser would pick
 * 256-bit vectors on AVX-512 targets, twice the instructions); with one
 * per column, a scalar loop that the vectoriser handles. A direct
 * convolution's columns are y_pitch-wide rows: each row's first y_ow
 * columns are written, y_ow apart in Y. */
static void ig_requantize(ig_emit* e, LLVMValueRef mend, LLVMValueRef pend) {
  hc_kb* kb = e->kb;
  LLVMBuilderRef b = kb->b;
  const ig_prod* d = e->d;
  bool q = d->yt != HX_DTYPE_INT32;
  hc_loop ml;
  LLVMValueRef m = hc_loop_begin(kb, &ml, e->m0, mend, "qm");
  ig_rq_row r = {.st = q ? d->sm->dtype : HX_DTYPE_FLOAT32};
  /* With one column scale (a convolution's x scale) the multiplier is the
   * row's: computed once per row, outside the column loop. */
  if (q) ig_row_params(e, m, &r.sm, &r.bias, d->sp_step == 0 ? &r.row_m : NULL);
  r.trow = hc_kb_imul(kb, LLVMBuildSub(b, m, e->m0, ""), hc_kb_i64(kb, e->tile_ld));
  r.yrow = hc_kb_iadd(kb, e->y_off, hc_kb_imul(kb, m, hc_kb_i64(kb, ig_y_cols(d))));
  if (!d->y_pitch) {
    ig_requant_cols(e, &r, e->p0, pend, hc_kb_i64(kb, 0));
  } else {
    hc_loop rl;
    LLVMValueRef pitch = hc_kb_i64(kb, d->y_pitch);
    LLVMValueRef oy0 = LLVMBuildUDiv(b, e->p0, pitch, "");
    LLVMValueRef oy1 = LLVMBuildUDiv(b, hc_kb_iadd(kb, pend, hc_kb_i64(kb, d->y_pitch - 1)), pitch, "");
    LLVMValueRef oy = hc_loop_begin(kb, &rl, oy0, oy1, "qy");
    LLVMValueRef rs = hc_kb_imul(kb, oy, pitch);
    LLVMValueRef pa = hc_kb_imax(kb, e->p0, rs);
    LLVMValueRef pb = hc_kb_imin(kb, pend, hc_kb_iadd(kb, rs, hc_kb_i64(kb, d->y_ow)));
    hc_if has;
    hc_if_begin(kb, &has, LLVMBuildICmp(b, LLVMIntULT, pa, pb, ""));
    ig_requant_cols(e, &r, pa, pb, hc_kb_imul(kb, oy, hc_kb_i64(kb, d->y_ow - d->y_pitch)));
    hc_if_end(kb, &has);
    hc_loop_end(kb, &rl);
  }
  hc_loop_end(kb, &ml);
}

/* One slice of K (quads on the VNNI path, pairs otherwise) of a product
 * task: steps [k0, kend) of nslices (a compile-time count), first/last as
 * run-time flags, and the task's rows: register tiles up to mfull, single
 * rows up to mend. */
typedef struct ig_slice {
  int64_t nslices;
  LLVMValueRef k0, kend, first, last;
  LLVMValueRef mfull, mend;
} ig_slice;

/* The task tile's vector j of row m at columns p.. */
static LLVMValueRef ig_tile_at(ig_emit* e, LLVMValueRef m, LLVMValueRef p, int j) {
  hc_kb* kb = e->kb;
  LLVMValueRef row = hc_kb_imul(kb, LLVMBuildSub(kb->b, m, e->m0, ""), hc_kb_i64(kb, e->tile_ld));
  LLVMValueRef col = hc_kb_iadd(kb, LLVMBuildSub(kb->b, p, e->p0, ""), hc_kb_i64(kb, (int64_t)j * (e->d->L / 2)));
  return hc_kb_gep(kb, HX_DTYPE_INT32, e->tile, hc_kb_iadd(kb, row, col));
}

/* K steps of d, and the slices a task cuts them into: X's slice for one
 * group of columns (4 bytes per column and step on both paths) takes at
 * most half of L1, so that it stays there while every row tile of the task
 * reads it; the slices are as even as their count allows. */
static void ig_k_slices(const hc_lower_ctx* lc, const ig_prod* d, int64_t* ksteps, int64_t* kc, int64_t* nks) {
  int64_t steps = d->vnni ? d->Kp / 4 : d->Kp / 2;
  int64_t group_bytes = (int64_t)d->NR * (d->L / 2) * 4;
  int64_t max_kc = (int64_t)hc_ukr_l1d_bytes(lc) / 2 / group_bytes;
  if (max_kc < 16) max_kc = 16;
  int64_t n = (steps + max_kc - 1) / max_kc;
  *ksteps = steps;
  *nks = n;
  *kc = (steps + n - 1) / n;
}

/* Whether d's product requantises its sums straight from the registers
 * (ig_requant_vector) instead of through the task's tile: a QLinearConv on
 * the VNNI path whose K is one slice, one multiplier per row from constant
 * float32 scales, and columns that are all outputs. With a short K (a 1x1
 * over 64-256 channels: 16-64 K quads per tile) storing the tile and
 * requantising it in a second pass cost a third as much as the product. */
static bool ig_rq_in_registers(const ig_prod* d, int64_t nks) {
  if (d->yt == HX_DTYPE_INT32 || !d->vnni || d->vnni_bq || d->y_pitch || nks != 1 || d->L != 32) return false;
  if (d->sp_step != 0) return false;
  const hc_value* k[3] = {d->sm, d->sp, d->sy};
  for (int i = 0; i < 3; ++i)
    if (k[i]->kind != HC_VALUE_CONST || !k[i]->data || k[i]->dtype != HX_DTYPE_FLOAT32) return false;
  return true;
}

/* The rows' multipliers sm * sp / sy, indexed as sm, computed in float32
 * exactly as ig_row_params does at run time. */
static LLVMValueRef ig_rq_table(hc_lower_ctx* lc, hc_kb* kb, const ig_prod* d) {
  int64_t n = hc_value_numel(d->sm);
  const float *sm = (const float*)d->sm->data, *sp = (const float*)d->sp->data, *sy = (const float*)d->sy->data;
  LLVMValueRef* vals = malloc(sizeof(LLVMValueRef) * (size_t)n);
  if (!vals) return NULL;
  for (int64_t i = 0; i < n; ++i) {
    volatile float prod = sm[i] * sp[0];
    volatile float mult = prod / sy[0];
    vals[i] = LLVMConstReal(kb->t_f32, (double)mult);
  }
  LLVMValueRef t = hc_kb_const_table(lc, LLVMConstArray2(kb->t_f32, vals, (uint64_t)n), "qrqmult", 64);
  free(vals);
  return t;
}

/* Requantises one vector of row m's sums (zero point's share subtracted)
 * at columns p.. and stores the lanes before the task's column end. */
static void ig_requant_vector(ig_emit* e, LLVMValueRef m, LLVMValueRef p, LLVMValueRef v) {
  hc_kb* kb = e->kb;
  LLVMBuilderRef b = kb->b;
  const ig_prod* d = e->d;
  unsigned VL = d->L / 2;
  LLVMValueRef mult = hc_kb_load(kb, HX_DTYPE_FLOAT32, e->rq_tab,
                                 hc_kb_iadd(kb, e->sm_off, hc_kb_imul(kb, m, hc_kb_i64(kb, d->sm_step))));
  LLVMValueRef vbias = NULL;
  if (d->bias) {
    LLVMValueRef bias = hc_kb_load(kb, HX_DTYPE_INT32, e->pb,
                                   hc_kb_iadd(kb, e->b_off, hc_kb_imul(kb, m, hc_kb_i64(kb, d->bias_step))));
    vbias = hc_kb_splat(kb, bias, VL);
  }
  LLVMValueRef rem = LLVMBuildTrunc(b, LLVMBuildSub(b, e->pend, p, ""), kb->t_i32, "");
  LLVMValueRef yi = hc_kb_iadd(kb, e->y_off, hc_kb_iadd(kb, hc_kb_imul(kb, m, hc_kb_i64(kb, d->Pt)), p));
  ig_requant_store(e, v, hc_kb_splat(kb, mult, VL), vbias, yi, first_lanes(kb, rem, VL));
}

/* Register tile: r rows (m..) x c vectors of L/2 columns (p.., a multiple
 * of L/2) of int32 sums, kept in registers over one slice of K (ks;
 * resumed from and parked in the task's tile between slices): per pair, the
 * c vectors of X's panel are loaded once, each row's (w[k], w[k+1]) pair is
 * broadcast to every lane, and one pmaddwd/vpdpwssd per (row, vector)
 * adds x[k][p]*w[k] + x[k+1][p]*w[k+1] into lane p. No horizontal sums:
 * the finished vectors go to the task's tile. */
static void ig_micro(ig_emit* e, int r, int c, LLVMValueRef m, LLVMValueRef p, const ig_slice* ks) {
  hc_kb* kb = e->kb;
  LLVMBuilderRef b = kb->b;
  const ig_prod* d = e->d;
  unsigned VL = d->L / 2;
  LLVMValueRef zero = LLVMConstNull(e->vacc);
  LLVMValueRef wrow[IG_MAX_MR], z2[IG_MAX_MR];
  LLVMTypeRef v2i8 = LLVMVectorType(kb->t_i8, 2), v2i16 = LLVMVectorType(kb->t_i16, 2);
  for (int i = 0; i < r; ++i) {
    LLVMValueRef mi = hc_kb_iadd(kb, m, hc_kb_i64(kb, i));
    wrow[i] = hc_kb_iadd(kb, e->w_off, hc_kb_imul(kb, mi, hc_kb_i64(kb, d->w_ld)));
    z2[i] = NULL;
    if (d->w_direct && d->wz) {
      LLVMValueRef z = hc_kb_load(kb, d->wz->dtype, e->pwz,
                                  hc_kb_iadd(kb, e->wz_off, hc_kb_imul(kb, mi, hc_kb_i64(kb, d->wz_step))));
      z = LLVMBuildTrunc(b, hc_kb_convert(kb, z, d->wz->dtype, HX_DTYPE_INT32), kb->t_i16, "");
      z2[i] = hc_kb_splat(kb, z, 2);
    }
  }
  /* The first slice starts from zero, later ones from the sums the tile
   * holds (a select, not a branch: the tile is uninitialised memory only
   * where the select discards it). */
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < c; ++j) {
      LLVMValueRef init = zero;
      if (ks->nslices > 1) {
        LLVMValueRef part = LLVMBuildLoad2(b, e->vacc, ig_tile_at(e, hc_kb_iadd(kb, m, hc_kb_i64(kb, i)), p, j), "");
        LLVMSetAlignment(part, 4);
        init = LLVMBuildSelect(b, ks->first, zero, part, "");
      }
      LLVMBuildStore(b, init, e->acc[i * c + j]);
    }
  hc_loop kl;
  if (d->vnni) {
    /* K quads: <2L x i8> of 4 bytes per position, one i32 of 4 weights per
     * row broadcast, vpdpbusd (unsigned x' bytes times signed weights). */
    LLVMTypeRef v8 = LLVMVectorType(kb->t_i8, 2 * d->L);
    LLVMValueRef xb = hc_kb_iadd(kb, e->x_off, hc_kb_imul(kb, p, hc_kb_i64(kb, 4)));
    LLVMValueRef kq = hc_loop_begin(kb, &kl, ks->k0, ks->kend, "kq");
    LLVMValueRef xrow;
    if (e->xkq)
      xrow = hc_kb_iadd(kb, xb, LLVMBuildSExt(b, hc_kb_load(kb, HX_DTYPE_INT32, e->xkq, kq), kb->t_i64, ""));
    else
      xrow = hc_kb_iadd(kb, xb, hc_kb_imul(kb, kq, hc_kb_i64(kb, 4 * d->Pp)));
    LLVMValueRef xv[IG_MAX_NR];
    for (int j = 0; j < c; ++j) {
      LLVMValueRef idx = hc_kb_iadd(kb, xrow, hc_kb_i64(kb, (int64_t)j * 2 * d->L));
      xv[j] = LLVMBuildLoad2(b, v8, LLVMBuildGEP2(b, kb->t_i8, e->xp, &idx, 1, ""), "");
      LLVMSetAlignment(xv[j], 4);
    }
    LLVMValueRef k4 = hc_kb_imul(kb, kq, hc_kb_i64(kb, 4));
    for (int i = 0; i < r; ++i) {
      LLVMValueRef idx = hc_kb_iadd(kb, wrow[i], k4);
      LLVMValueRef wi = LLVMBuildLoad2(b, kb->t_i32, LLVMBuildGEP2(b, kb->t_i8, e->wp, &idx, 1, ""), "");
      LLVMSetAlignment(wi, 1);
      if (d->vnni_bq && d->a_signed) wi = LLVMBuildXor(b, wi, hc_kb_i32(kb, (int32_t)0x80808080u), "");
      LLVMValueRef wb = hc_kb_splat(kb, wi, VL);
      for (int j = 0; j < c; ++j) {
        LLVMValueRef a = e->acc[i * c + j];
        /* vpdpbusd: unsigned bytes of the second operand times signed
         * bytes of the third (X' times W, or A' times B). */
        LLVMValueRef u8v = d->vnni_bq ? wb : xv[j], s8v = d->vnni_bq ? xv[j] : wb;
        LLVMValueRef r2 = call_fixed_intrinsic(kb, "llvm.x86.avx512.vpdpbusd.512",
                                               (LLVMValueRef[]){LLVMBuildLoad2(b, e->vacc, a, ""), u8v, s8v}, 3);
        if (LLVMTypeOf(r2) != e->vacc) r2 = LLVMBuildBitCast(b, r2, e->vacc, "");
        LLVMBuildStore(b, r2, a);
      }
    }
    hc_loop_end(kb, &kl);
    for (int i = 0; i < r; ++i) {
      LLVMValueRef mi = hc_kb_iadd(kb, m, hc_kb_i64(kb, i));
      /* The zero point's share: zx' times W's row sum (convolution), or A's
       * zero point of this row (+128 for signed A) times B's column sums
       * (matrix product): sum (a - za) b = sum a' b - za' sum b. */
      LLVMValueRef corr = NULL, zav = NULL;
      if (!d->vnni_bq) {
        LLVMValueRef rsv = hc_kb_load(kb, HX_DTYPE_INT32, e->rs, hc_kb_iadd(kb, e->rs_off, mi));
        corr = hc_kb_splat(kb, LLVMBuildMul(b, rsv, e->xzq, ""), VL);
      } else {
        LLVMValueRef za = hc_kb_i32(kb, d->a_signed ? 128 : 0);
        if (d->wz) {
          LLVMValueRef z = hc_kb_load(kb, d->wz->dtype, e->pwz,
                                      hc_kb_iadd(kb, e->wz_off, hc_kb_imul(kb, mi, hc_kb_i64(kb, d->wz_step))));
          za = LLVMBuildAdd(b, hc_kb_convert(kb, z, d->wz->dtype, HX_DTYPE_INT32), za, "");
        }
        zav = hc_kb_splat(kb, za, VL);
      }
      for (int j = 0; j < c; ++j) {
        if (zav) {
          LLVMValueRef ci = hc_kb_iadd(kb, e->cs_off, hc_kb_iadd(kb, p, hc_kb_i64(kb, (int64_t)j * VL)));
          LLVMValueRef csv = LLVMBuildLoad2(b, e->vacc, hc_kb_gep(kb, HX_DTYPE_INT32, e->cs, ci), "");
          LLVMSetAlignment(csv, 4);
          corr = LLVMBuildMul(b, csv, zav, "");
        }
        /* ... subtracted once, after the last slice */
        if (ks->nslices > 1) corr = LLVMBuildSelect(b, ks->last, corr, zero, "");
        LLVMValueRef v = LLVMBuildSub(b, LLVMBuildLoad2(b, e->vacc, e->acc[i * c + j], ""), corr, "");
        if (e->rq_tab)
          ig_requant_vector(e, mi, hc_kb_iadd(kb, p, hc_kb_i64(kb, (int64_t)j * VL)), v);
        else
          LLVMSetAlignment(LLVMBuildStore(b, v, ig_tile_at(e, mi, p, j)), 4);
      }
    }
    return;
  }
  LLVMValueRef xb = hc_kb_iadd(kb, e->x_off, hc_kb_imul(kb, p, hc_kb_i64(kb, 2)));
  LLVMValueRef kk = hc_loop_begin(kb, &kl, ks->k0, ks->kend, "kk");
  LLVMValueRef xrow = hc_kb_iadd(kb, xb, hc_kb_imul(kb, kk, hc_kb_i64(kb, 2 * d->Pp)));
  LLVMValueRef xv[IG_MAX_NR];
  for (int j = 0; j < c; ++j) {
    xv[j] = LLVMBuildLoad2(b, e->v16, hc_kb_gep(kb, HX_DTYPE_INT16, e->xp, hc_kb_iadd(kb, xrow, hc_kb_i64(kb, (int64_t)j * d->L))), "");
    LLVMSetAlignment(xv[j], 4);
  }
  LLVMValueRef k2 = hc_kb_imul(kb, kk, hc_kb_i64(kb, 2));
  for (int i = 0; i < r; ++i) {
    LLVMValueRef wi;
    LLVMValueRef idx = hc_kb_iadd(kb, wrow[i], k2);
    if (d->w_direct) {
      LLVMValueRef pr = LLVMBuildLoad2(b, v2i8, LLVMBuildGEP2(b, kb->t_i8, e->wp, &idx, 1, ""), "");
      LLVMSetAlignment(pr, 1);
      pr = hc_dtype_is_signed(d->w->dtype) ? LLVMBuildSExt(b, pr, v2i16, "") : LLVMBuildZExt(b, pr, v2i16, "");
      if (z2[i]) pr = LLVMBuildSub(b, pr, z2[i], "");
      wi = LLVMBuildBitCast(b, pr, kb->t_i32, "");
    } else {
      wi = LLVMBuildLoad2(b, kb->t_i32, hc_kb_gep(kb, HX_DTYPE_INT16, e->wp, idx), "");
      LLVMSetAlignment(wi, 4);
    }
    LLVMValueRef wb = LLVMBuildBitCast(b, hc_kb_splat(kb, wi, VL), e->v16, "");
    for (int j = 0; j < c; ++j) {
      LLVMValueRef a = e->acc[i * c + j];
      LLVMBuildStore(b, dot_step(e, LLVMBuildLoad2(b, e->vacc, a, ""), xv[j], wb), a);
    }
  }
  hc_loop_end(kb, &kl);
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < c; ++j) {
      LLVMValueRef v = LLVMBuildLoad2(b, e->vacc, e->acc[i * c + j], "");
      LLVMSetAlignment(LLVMBuildStore(b, v, ig_tile_at(e, hc_kb_iadd(kb, m, hc_kb_i64(kb, i)), p, j)), 4);
    }
}

/* Every row of the task's block for c vectors of columns at p: register
 * tiles (ig_mr rows), then the rest one row at a time. The rows are the inner loop
 * so that X's slice for these columns, loaded from L2 by the first tile,
 * stays in L1 for the others. */
static void ig_rows(ig_emit* e, int c, LLVMValueRef p, const ig_slice* ks) {
  hc_kb* kb = e->kb;
  hc_loop ml;
  LLVMValueRef m = hc_loop_begin_step(kb, &ml, e->m0, ks->mfull, ig_mr(e->d), "m");
  ig_micro(e, ig_mr(e->d), c, m, p, ks);
  hc_loop_end(kb, &ml);
  m = hc_loop_begin(kb, &ml, ks->mfull, ks->mend, "mr");
  ig_micro(e, 1, c, m, p, ks);
  hc_loop_end(kb, &ml);
}

/* Columns [p0, pvend) of the task's rows for one slice of K, pvend a
 * multiple of L/2: groups of NR vectors up to pgrp, then the rest (at most
 * NR vectors) as one group of as many vectors, so that it reads the rows'
 * weights once. One vector at a time, the rest re-read them per vector: an
 * int8 ResNet-18's 7x7 layers (49 columns, all of them "rest") ran at 40%
 * of the speed of its 14x14 ones. */
static void ig_cols(ig_emit* e, LLVMValueRef p0, LLVMValueRef pgrp, LLVMValueRef pvend, const ig_slice* ks) {
  hc_kb* kb = e->kb;
  const ig_prod* d = e->d;
  hc_loop pl;
  LLVMValueRef p = hc_loop_begin_step(kb, &pl, p0, pgrp, (int64_t)d->NR * (d->L / 2), "p");
  ig_rows(e, (int)d->NR, p, ks);
  hc_loop_end(kb, &pl);
  LLVMValueRef nrem = LLVMBuildUDiv(kb->b, LLVMBuildSub(kb->b, pvend, pgrp, ""), hc_kb_i64(kb, d->L / 2), "");
  for (int c = 1; c <= (int)d->NR; ++c) {
    hc_if gi;
    hc_if_begin(kb, &gi, LLVMBuildICmp(kb->b, LLVMIntEQ, nrem, hc_kb_i64(kb, c), ""));
    ig_rows(e, c, pgrp, ks);
    hc_if_end(kb, &gi);
  }
}

static unsigned ig_lanes(const hc_lower_ctx* lc, unsigned* nr);

/* Loads the requantisation parameters that are the same for every task
 * and allocates the task's tile of `elems` int32 sums, rows `ld` apart. */
static void ig_requant_setup(ig_emit* e, int64_t elems, int64_t ld) {
  hc_kb* kb = e->kb;
  const ig_prod* d = e->d;
  e->tile = hc_kb_alloca(kb, LLVMArrayType2(kb->t_i32, (uint64_t)elems), "tile");
  e->tile_ld = ld;
  if (d->yt == HX_DTYPE_INT32) return;
  e->psm = hc_kb_ptr(kb, d->sm);
  e->psp = hc_kb_ptr(kb, d->sp);
  e->ys = hc_kb_load(kb, d->sy->dtype, hc_kb_ptr(kb, d->sy), hc_kb_i64(kb, 0));
  e->yz = hc_kb_convert(kb, hc_kb_load(kb, d->zy->dtype, hc_kb_ptr(kb, d->zy), hc_kb_i64(kb, 0)), d->zy->dtype,
                        HX_DTYPE_INT32);
  int64_t lo, hi;
  q8_range(d->yt, &lo, &hi);
  /* requant_round's bounds and offset (exact: integers below 2^24) */
  LLVMValueRef magic = LLVMConstReal(kb->t_f32, RQ_MAGIC);
  LLVMValueRef lo_z = LLVMBuildSub(kb->b, hc_kb_i32(kb, (int32_t)lo), e->yz, "");
  LLVMValueRef hi_z = LLVMBuildSub(kb->b, hc_kb_i32(kb, (int32_t)hi), e->yz, "");
  e->ylo = LLVMBuildFAdd(kb->b, magic, LLVMBuildSIToFP(kb->b, lo_z, kb->t_f32, ""), "");
  e->yhi = LLVMBuildFAdd(kb->b, magic, LLVMBuildSIToFP(kb->b, hi_z, kb->t_f32, ""), "");
  e->yzb = LLVMBuildSub(kb->b, hc_kb_i32(kb, RQ_MAGIC_BITS), e->yz, "");
  unsigned nr;
  e->rq_lanes = ig_lanes(kb->lc, &nr) / 2;
  if (d->bias) e->pb = hc_kb_ptr(kb, d->bias);
}

/* Columns per product task: a multiple of the register tile's width. */
static int64_t ig_pb(const ig_prod* d) {
  int64_t w = (int64_t)d->NR * (d->L / 2);
  int64_t k = 128 / w;
  return w * (k < 1 ? 1 : k);
}

/* Emits the product kernel: tasks are (outer, row block, column block). */
static hx_status_t ig_emit_product(hc_lower_ctx* lc, const hc_node* n, const ig_prod* d, const hc_value* y) {
  int64_t outer = hc_shape_numel(d->outer_rank, d->outer_dims);
  int64_t PB = ig_pb(d), VL = d->L / 2, GW = (int64_t)d->NR * VL;
  int64_t MB = ig_mb(d), nmb = (d->Mt + MB - 1) / MB, npb = (d->Pt + PB - 1) / PB;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "dot", outer * nmb * npb, &kb));
  ig_emit e;
  ig_emit_init(&e, &kb, d);
  for (int q = 0; q < ig_mr(d) * (int)d->NR; ++q) e.acc[q] = hc_kb_alloca(&kb, e.vacc, "acc");
  LLVMValueRef ws = hc_kb_workspace(&kb);
  e.wp = d->w_direct || d->w_const ? hc_kb_ptr(&kb, d->w) : ws;
  if (d->w_direct && d->wz) e.pwz = hc_kb_ptr(&kb, d->wz);
  LLVMValueRef xws = hc_kb_i64(&kb, (int64_t)d->x_ws_offset);
  e.xp = d->x_const ? hc_kb_ptr(&kb, d->x_const) : LLVMBuildGEP2(kb.b, kb.t_i8, ws, &xws, 1, "");
  e.yp = hc_kb_ptr(&kb, y);
  ig_requant_setup(&e, MB * PB, PB);
  int64_t ksteps, kc, nks;
  ig_k_slices(lc, d, &ksteps, &kc, &nks);
  if (ig_rq_in_registers(d, nks) && !(e.rq_tab = ig_rq_table(lc, &kb, d)))
    return hc_node_error(n, HX_STATUS_OUT_OF_MEMORY, "out of memory (multipliers)");
  if (d->x_kq_off) {
    int64_t Kq = d->Kp / 4;
    LLVMValueRef* offs = malloc(sizeof(LLVMValueRef) * (size_t)Kq);
    if (!offs) return hc_node_error(n, HX_STATUS_OUT_OF_MEMORY, "out of memory (quad offsets)");
    for (int64_t i = 0; i < Kq; ++i) offs[i] = LLVMConstInt(kb.t_i32, (unsigned long long)d->x_kq_off[i], 0);
    e.xkq = hc_kb_const_table(lc, LLVMConstArray2(kb.t_i32, offs, (uint64_t)Kq), "qxkq", 64);
    free(offs);
  }
  if (d->vnni_bq) {
    /* B's column sums per matrix, from its packed quads. */
    int64_t Pp = d->Pp, Kq = d->Kp / 4, nb = hc_value_numel(d->x_const) / (d->Kp * Pp);
    const int8_t* q8 = (const int8_t*)d->x_const->data;
    LLVMValueRef* vals = malloc(sizeof(LLVMValueRef) * (size_t)(nb * Pp));
    if (!vals) return hc_node_error(n, HX_STATUS_OUT_OF_MEMORY, "out of memory (column sums)");
    for (int64_t bb = 0; bb < nb; ++bb)
      for (int64_t col = 0; col < Pp; ++col) {
        int32_t sum = 0;
        for (int64_t k = 0; k < Kq * 4; ++k) sum += q8[((bb * Kq + k / 4) * Pp + col) * 4 + k % 4];
        vals[bb * Pp + col] = LLVMConstInt(kb.t_i32, (unsigned long long)(uint32_t)sum, 0);
      }
    e.cs = hc_kb_const_table(lc, LLVMConstArray2(kb.t_i32, vals, (uint64_t)(nb * Pp)), "qcolsum", 64);
    free(vals);
  } else if (d->vnni) {
    int64_t Mall = d->w->dims[0], K = d->w_kc, K4 = d->w_ld;
    const int8_t* w8 = (const int8_t*)d->w->data;
    LLVMValueRef* vals = malloc(sizeof(LLVMValueRef) * (size_t)(Mall > Mall * K4 ? Mall : Mall * K4));
    if (!vals) return hc_node_error(n, HX_STATUS_OUT_OF_MEMORY, "out of memory (row sums)");
    if (K4 != K) {
      /* rows padded to a multiple of 4 with zeros, in the code object (a
       * first convolution: K = 3*k*k, a few KB) */
      for (int64_t m = 0; m < Mall; ++m)
        for (int64_t k = 0; k < K4; ++k)
          vals[m * K4 + k] = LLVMConstInt(kb.t_i8, k < K ? (unsigned long long)(uint8_t)w8[m * K + k] : 0, 0);
      e.wp = hc_kb_const_table(lc, LLVMConstArray2(kb.t_i8, vals, (uint64_t)(Mall * K4)), "qwpad", 64);
    }
    for (int64_t m = 0; m < Mall; ++m) {
      int32_t sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += w8[m * K + k];
      vals[m] = LLVMConstInt(kb.t_i32, (unsigned long long)(uint32_t)sum, 0);
    }
    e.rs = hc_kb_const_table(lc, LLVMConstArray2(kb.t_i32, vals, (uint64_t)Mall), "qrowsum", 64);
    free(vals);
    e.xzq = zero_point_i32(&kb, d->xz, d->x_signed);
  }

  LLVMBuilderRef b = kb.b;
  hc_loop task, sl;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  /* Row blocks fastest: consecutive tasks share their column block of X,
   * which the first one brings into L2 (with column blocks fastest, every
   * row block read all of X again from L3 or memory: an int8 ResNet-50's
   * stem, 3.7 MB of X, ran at 50 GOP/s). */
  LLVMValueRef mbk = LLVMBuildURem(b, t, hc_kb_i64(&kb, nmb), "");
  LLVMValueRef rest = LLVMBuildUDiv(b, t, hc_kb_i64(&kb, nmb), "");
  LLVMValueRef pbk = LLVMBuildURem(b, rest, hc_kb_i64(&kb, npb), "");
  LLVMValueRef o = LLVMBuildUDiv(b, rest, hc_kb_i64(&kb, npb), "");
  e.w_off = coord_offset(&kb, o, d->outer_rank, d->outer_dims, d->w_os);
  e.x_off = coord_offset(&kb, o, d->outer_rank, d->outer_dims, d->x_os);
  e.y_off = hc_kb_imul(&kb, o, hc_kb_i64(&kb, d->Mt * ig_y_cols(d)));
  if (d->w_direct && d->wz) e.wz_off = coord_offset(&kb, o, d->outer_rank, d->outer_dims, d->wz_os);
  if (d->vnni && !d->vnni_bq) e.rs_off = coord_offset(&kb, o, d->outer_rank, d->outer_dims, d->rs_os);
  if (d->vnni_bq) e.cs_off = coord_offset(&kb, o, d->outer_rank, d->outer_dims, d->cs_os);
  if (d->yt != HX_DTYPE_INT32) {
    e.sm_off = coord_offset(&kb, o, d->outer_rank, d->outer_dims, d->sm_os);
    e.sp_off = coord_offset(&kb, o, d->outer_rank, d->outer_dims, d->sp_os);
    if (d->bias) e.b_off = coord_offset(&kb, o, d->outer_rank, d->outer_dims, d->bias_os);
  }
  LLVMValueRef m0 = hc_kb_imul(&kb, mbk, hc_kb_i64(&kb, MB));
  LLVMValueRef p0 = hc_kb_imul(&kb, pbk, hc_kb_i64(&kb, PB));
  e.m0 = m0, e.p0 = p0;
  LLVMValueRef mend = hc_kb_imin(&kb, hc_kb_iadd(&kb, m0, hc_kb_i64(&kb, MB)), hc_kb_i64(&kb, d->Mt));
  LLVMValueRef pend = hc_kb_imin(&kb, hc_kb_iadd(&kb, p0, hc_kb_i64(&kb, PB)), hc_kb_i64(&kb, d->Pt));
  e.pend = pend;
  /* Block starts are multiples of the tile's rows and width, so full
   * groups end at the block end rounded down; the last vector may run into
   * X's zero padding (Pp) and the tile's spare columns. */
  LLVMValueRef mfull = LLVMBuildAnd(b, mend, hc_kb_i64(&kb, ~(int64_t)(ig_mr(d) - 1)), "");
  mfull = hc_kb_imax(&kb, mfull, m0);
  LLVMValueRef cnt = LLVMBuildSub(b, pend, p0, "");
  LLVMValueRef pgrp = hc_kb_iadd(&kb, p0, LLVMBuildSub(b, cnt, LLVMBuildURem(b, cnt, hc_kb_i64(&kb, GW), ""), ""));
  LLVMValueRef pvend =
      hc_kb_iadd(&kb, p0, LLVMBuildAnd(b, hc_kb_iadd(&kb, cnt, hc_kb_i64(&kb, VL - 1)), hc_kb_i64(&kb, ~(VL - 1)), ""));
  ig_slice ks = {.nslices = nks, .mfull = mfull, .mend = mend};
  LLVMValueRef s = hc_loop_begin(&kb, &sl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, nks), "ks");
  ks.k0 = hc_kb_imul(&kb, s, hc_kb_i64(&kb, kc));
  ks.kend = hc_kb_imin(&kb, hc_kb_iadd(&kb, ks.k0, hc_kb_i64(&kb, kc)), hc_kb_i64(&kb, ksteps));
  ks.first = LLVMBuildICmp(b, LLVMIntEQ, s, hc_kb_i64(&kb, 0), "");
  ks.last = LLVMBuildICmp(b, LLVMIntEQ, s, hc_kb_i64(&kb, nks - 1), "");
  ig_cols(&e, p0, pgrp, pvend, &ks);
  hc_loop_end(&kb, &sl);
  if (!e.rq_tab) ig_requantize(&e, mend, pend);
  hc_loop_end(&kb, &task);
  double macs = (double)outer * (double)d->Mt * (double)ig_y_cols(d) * (double)d->Kp;
  hc_kb_end(&kb, 2.0 * macs,
            (double)outer * 2.0 * (double)d->Kp * (double)(d->Mt + d->Pt) + (double)hc_value_nbytes(y));
  return HX_OK;
}

/* A product with one column (a 1x1 convolution over one position: a Gemm
 * at batch 1) and W read directly: lanes over K instead of columns, which
 * would leave all lanes but one idle. Task: IG_MB rows; per group of up to
 * IG_MR rows, L weights per row (widened to int16, zero point subtracted)
 * times L packed activations (contiguous when Pp = 1) per step, reduced
 * once per row at the end; an odd tail of K in scalars. */
static hx_status_t ig_emit_gemv(hc_lower_ctx* lc, const hc_node* n, const ig_prod* d, const hc_value* y) {
  int64_t outer = hc_shape_numel(d->outer_rank, d->outer_dims);
  int64_t nmb = (d->Mt + IG_MB - 1) / IG_MB, K = d->Kp, Kv = K / d->L * d->L;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "gemv", outer * nmb, &kb));
  LLVMBuilderRef b = kb.b;
  ig_emit e;
  ig_emit_init(&e, &kb, d);
  for (int q = 0; q < IG_MR; ++q) e.acc[q] = hc_kb_alloca(&kb, e.vacc, "acc");
  LLVMValueRef ws = hc_kb_workspace(&kb);
  e.wp = hc_kb_ptr(&kb, d->w);
  if (d->wz) e.pwz = hc_kb_ptr(&kb, d->wz);
  e.xp = LLVMBuildGEP2(b, kb.t_i8, ws, (LLVMValueRef[]){hc_kb_i64(&kb, (int64_t)d->x_ws_offset)}, 1, "");
  e.yp = hc_kb_ptr(&kb, y);
  ig_requant_setup(&e, IG_MB, 1);
  LLVMTypeRef v8 = LLVMVectorType(kb.t_i8, d->L);
  bool sw = hc_dtype_is_signed(d->w->dtype);

  hc_loop task, ml, kl;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef mbk = LLVMBuildURem(b, t, hc_kb_i64(&kb, nmb), "");
  LLVMValueRef o = LLVMBuildUDiv(b, t, hc_kb_i64(&kb, nmb), "");
  e.w_off = coord_offset(&kb, o, d->outer_rank, d->outer_dims, d->w_os);
  e.x_off = coord_offset(&kb, o, d->outer_rank, d->outer_dims, d->x_os);
  e.y_off = hc_kb_imul(&kb, o, hc_kb_i64(&kb, d->Mt * ig_y_cols(d)));
  if (d->wz) e.wz_off = coord_offset(&kb, o, d->outer_rank, d->outer_dims, d->wz_os);
  if (d->yt != HX_DTYPE_INT32) {
    e.sm_off = coord_offset(&kb, o, d->outer_rank, d->outer_dims, d->sm_os);
    e.sp_off = coord_offset(&kb, o, d->outer_rank, d->outer_dims, d->sp_os);
    if (d->bias) e.b_off = coord_offset(&kb, o, d->outer_rank, d->outer_dims, d->bias_os);
  }
  LLVMValueRef m0 = hc_kb_imul(&kb, mbk, hc_kb_i64(&kb, IG_MB));
  e.m0 = m0, e.p0 = hc_kb_i64(&kb, 0);
  LLVMValueRef mend = hc_kb_imin(&kb, hc_kb_iadd(&kb, m0, hc_kb_i64(&kb, IG_MB)), hc_kb_i64(&kb, d->Mt));
  LLVMValueRef mfull = hc_kb_imax(&kb, LLVMBuildAnd(b, mend, hc_kb_i64(&kb, ~(int64_t)(IG_MR - 1)), ""), m0);
  for (int pass = 0; pass < 2; ++pass) {
    int r = pass == 0 ? IG_MR : 1;
    LLVMValueRef m = pass == 0 ? hc_loop_begin_step(&kb, &ml, m0, mfull, IG_MR, "m")
                               : hc_loop_begin(&kb, &ml, mfull, mend, "mr");
    LLVMValueRef wrow[IG_MR], zs[IG_MR], zv[IG_MR];
    for (int i = 0; i < r; ++i) {
      LLVMValueRef mi = hc_kb_iadd(&kb, m, hc_kb_i64(&kb, i));
      wrow[i] = hc_kb_iadd(&kb, e.w_off, hc_kb_imul(&kb, mi, hc_kb_i64(&kb, d->w_ld)));
      zs[i] = hc_kb_i32(&kb, 0);
      zv[i] = NULL;
      if (d->wz) {
        zs[i] = hc_kb_convert(&kb, hc_kb_load(&kb, d->wz->dtype, e.pwz,
                                              hc_kb_iadd(&kb, e.wz_off, hc_kb_imul(&kb, mi, hc_kb_i64(&kb, d->wz_step)))),
                              d->wz->dtype, HX_DTYPE_INT32);
        zv[i] = hc_kb_splat(&kb, LLVMBuildTrunc(b, zs[i], kb.t_i16, ""), d->L);
      }
      LLVMBuildStore(b, LLVMConstNull(e.vacc), e.acc[i]);
    }
    LLVMValueRef k = hc_loop_begin_step(&kb, &kl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, Kv), d->L, "k");
    LLVMValueRef xv = LLVMBuildLoad2(b, e.v16, hc_kb_gep(&kb, HX_DTYPE_INT16, e.xp, hc_kb_iadd(&kb, e.x_off, k)), "");
    LLVMSetAlignment(xv, 2);
    for (int i = 0; i < r; ++i) {
      LLVMValueRef idx = hc_kb_iadd(&kb, wrow[i], k);
      LLVMValueRef wv = LLVMBuildLoad2(b, v8, LLVMBuildGEP2(b, kb.t_i8, e.wp, &idx, 1, ""), "");
      LLVMSetAlignment(wv, 1);
      wv = sw ? LLVMBuildSExt(b, wv, e.v16, "") : LLVMBuildZExt(b, wv, e.v16, "");
      if (zv[i]) wv = LLVMBuildSub(b, wv, zv[i], "");
      LLVMBuildStore(b, dot_step(&e, LLVMBuildLoad2(b, e.vacc, e.acc[i], ""), wv, xv), e.acc[i]);
    }
    hc_loop_end(&kb, &kl);
    for (int i = 0; i < r; ++i) {
      LLVMValueRef v = LLVMBuildLoad2(b, e.vacc, e.acc[i], "");
      LLVMValueRef sum = hc_kb_intrinsic(&kb, "llvm.vector.reduce.add", e.vacc, &v, 1);
      for (int64_t kt = Kv; kt < K; ++kt) {
        LLVMValueRef wk = hc_kb_convert(&kb, hc_kb_load(&kb, d->w->dtype, e.wp, hc_kb_iadd(&kb, wrow[i], hc_kb_i64(&kb, kt))),
                                        d->w->dtype, HX_DTYPE_INT32);
        LLVMValueRef xk = hc_kb_convert(&kb, hc_kb_load(&kb, HX_DTYPE_INT16, e.xp, hc_kb_iadd(&kb, e.x_off, hc_kb_i64(&kb, kt))),
                                        HX_DTYPE_INT16, HX_DTYPE_INT32);
        sum = LLVMBuildAdd(b, sum, LLVMBuildMul(b, LLVMBuildSub(b, wk, zs[i], ""), xk, ""), "");
      }
      LLVMValueRef ti = LLVMBuildSub(b, hc_kb_iadd(&kb, m, hc_kb_i64(&kb, i)), m0, "");
      hc_kb_store(&kb, HX_DTYPE_INT32, e.tile, ti, sum);
    }
    hc_loop_end(&kb, &ml);
  }
  ig_requantize(&e, mend, hc_kb_i64(&kb, 1));
  hc_loop_end(&kb, &task);
  double macs = (double)outer * (double)d->Mt * (double)K;
  hc_kb_end(&kb, 2.0 * macs, (double)outer * (double)d->Mt * (double)K + (double)hc_value_nbytes(y));
  return HX_OK;
}

/* int16 lanes per vector: the widest with a pmaddwd (512 bits needs
 * AVX512BW, 256 AVX2, else 128); and the register tile's width in vectors
 * (IG_MR x NR accumulators, NR X vectors and a broadcast fit the register
 * file: 32 registers with AVX-512, 16 otherwise). */
static unsigned ig_target_lanes(const hc_target* t, unsigned* nr) {
  uint64_t f = t ? t->required_features : 0;
  int vbits = t ? t->vector_bits : 128;
  if (vbits > 256 && !(f & HX_CPU_AVX512BW)) vbits = 256;
  if (vbits > 128 && !(f & HX_CPU_AVX2)) vbits = 128;
  unsigned L = vbits >= 128 ? (unsigned)vbits / 16 : 8;
  if (L > IG_MAX_LANES) L = IG_MAX_LANES;
  *nr = L == 32 ? 4 : 2;
  return L;
}

static unsigned ig_lanes(const hc_lower_ctx* lc, unsigned* nr) { return ig_target_lanes(lc->target, nr); }

/* Whether target t's product has the byte path: 512-bit vectors (32 int16
 * lanes) and vpdpbusd (AVX512-VNNI, known to this LLVM). */
static bool ig_byte_target(const hc_target* t) {
  unsigned nr;
  if (!t || ig_target_lanes(t, &nr) != 32 || !(t->required_features & HX_CPU_AVX512VNNI)) return false;
  const char* name = "llvm.x86.avx512.vpdpbusd.512";
  return LLVMLookupIntrinsicID(name, strlen(name)) != 0;
}

/* An 8-bit zero point that is absent or constant zeros (the byte paths'
 * condition on their int8 operand). */
static bool zero_point_is_zero(const hc_value* z) {
  if (!z) return true;
  if (z->kind != HC_VALUE_CONST || !z->data) return false;
  const uint8_t* d = z->data;
  for (int64_t i = 0; i < hc_value_numel(z); ++i)
    if (d[i]) return false;
  return true;
}

/* ---- packing ----------------------------------------------------------------- */

/* Packs `rows` contiguous rows of K 8-bit elements of src into
 * int16 rows of Kp at dst (byte offset dst_off in the workspace), minus the
 * zero point zp[coord_offset(row; rdims, zs)] (zp may be NULL). */
static hx_status_t ig_pack_rows(hc_lower_ctx* lc, const hc_node* n, const char* name, const hc_value* src,
                                int64_t rows, int64_t K, int64_t Kp, uint64_t dst_off, const hc_value* zp, int rrank,
                                const int64_t* rdims, const int64_t* zs) {
  int64_t per = IG_PACK_ELEMS / (Kp > 0 ? Kp : 1);
  if (per < 1) per = 1;
  int64_t tasks = (rows + per - 1) / per;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, name, tasks, &kb));
  LLVMValueRef ps = hc_kb_ptr(&kb, src), pz = zp ? hc_kb_ptr(&kb, zp) : NULL;
  LLVMValueRef ws = hc_kb_workspace(&kb);
  LLVMValueRef dst = LLVMBuildGEP2(kb.b, kb.t_i8, ws, (LLVMValueRef[]){hc_kb_i64(&kb, (int64_t)dst_off)}, 1, "");
  hc_loop task, rl, kl;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef r0 = hc_kb_imul(&kb, t, hc_kb_i64(&kb, per));
  LLVMValueRef r1 = hc_kb_imin(&kb, hc_kb_iadd(&kb, r0, hc_kb_i64(&kb, per)), hc_kb_i64(&kb, rows));
  LLVMValueRef r = hc_loop_begin(&kb, &rl, r0, r1, "r");
  LLVMValueRef z = hc_kb_i32(&kb, 0);
  if (zp) z = hc_kb_convert(&kb, hc_kb_load(&kb, zp->dtype, pz, coord_offset(&kb, r, rrank, rdims, zs)), zp->dtype,
                            HX_DTYPE_INT32);
  LLVMValueRef sbase = hc_kb_imul(&kb, r, hc_kb_i64(&kb, K)), dbase = hc_kb_imul(&kb, r, hc_kb_i64(&kb, Kp));
  LLVMValueRef k = hc_loop_begin(&kb, &kl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, K), "k");
  LLVMValueRef v = hc_kb_convert(&kb, hc_kb_load(&kb, src->dtype, ps, hc_kb_iadd(&kb, sbase, k)), src->dtype,
                                 HX_DTYPE_INT32);
  hc_kb_store(&kb, HX_DTYPE_INT16, dst, hc_kb_iadd(&kb, dbase, k),
              LLVMBuildTrunc(kb.b, LLVMBuildSub(kb.b, v, z, ""), kb.t_i16, ""));
  hc_loop_end(&kb, &kl);
  k = hc_loop_begin(&kb, &kl, hc_kb_i64(&kb, K), hc_kb_i64(&kb, Kp), "kpad");
  hc_kb_store(&kb, HX_DTYPE_INT16, dst, hc_kb_iadd(&kb, dbase, k), LLVMConstInt(kb.t_i16, 0, 0));
  hc_loop_end(&kb, &kl);
  hc_loop_end(&kb, &rl);
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, (double)rows * (double)K, (double)rows * (double)(K + 2 * Kp));
  return HX_OK;
}

/* ---- MatMulInteger and QLinearMatMul ----------------------------------------- */

/* A scale or zero point of a matrix operand, indexed over the operand's own
 * batch dims (own_bs) and its row (A) or column (B) with step. */
typedef struct mm_param {
  const hc_value* v;
  int64_t own_bs[HC_MAX_RANK];
  int64_t step;
} mm_param;

/* Numpy matmul geometry of two integer operands. */
typedef struct mmi_plan {
  int64_t M, N, K;
  int abr, bbr, br; /* batch ranks of A, B and the output */
  int64_t adims[HC_MAX_RANK], bdims[HC_MAX_RANK], odims[HC_MAX_RANK];
  int64_t abatch, bbatch;
  int out_rank;
  int64_t out_dims[HC_MAX_RANK];
  mm_param azp, bzp, as, bs;
  const hc_value *a, *b, *sy, *zy;
  hx_dtype_t yt;
} mmi_plan;

/* Classifies a scale or zero point of operand op: per tensor (one value),
 * per row of A / column of B (a 1-D tensor of M / N values), or with op's
 * rank, shape [..., M, 1] (A) or [..., 1, N] (B) with batch dims equal to
 * op's or 1. */
static hx_status_t mm_classify(const hc_node* n, const hc_value* v, const hc_value* op, bool is_a, int64_t len,
                               mm_param* out) {
  memset(out, 0, sizeof *out);
  out->v = v;
  if (!v || is_single(v)) return HX_OK;
  char s1[128], s2[128];
  if (v->rank == 1 && v->dims[0] == len) {
    out->step = 1;
    return HX_OK;
  }
  int r = v->rank;
  bool ok = r == op->rank && r >= 2;
  if (ok) {
    int64_t one = is_a ? v->dims[r - 1] : v->dims[r - 2], l = is_a ? v->dims[r - 2] : v->dims[r - 1];
    ok = one == 1 && (l == len || l == 1);
    for (int i = 0; ok && i < r - 2; ++i) ok = v->dims[i] == op->dims[i] || v->dims[i] == 1;
  }
  if (!ok)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "'%s' has shape %s; for %s of shape %s expected one value, %lld values (per %s) or shape "
                         "[..., %s]",
                         v->name, hc_shape_str(v->rank, v->dims, s1, sizeof s1), op->name,
                         hc_shape_str(op->rank, op->dims, s2, sizeof s2), (long long)len, is_a ? "row" : "column",
                         is_a ? "M, 1" : "1, N");
  int64_t st[HC_MAX_RANK];
  bcast_strides(r, v->dims, 1, st);
  for (int i = 0; i < r - 2; ++i) out->own_bs[i] = st[i];
  out->step = is_a ? st[r - 2] : st[r - 1];
  return HX_OK;
}

/* Strides over the output batch dims (rank br) of a tensor whose own batch
 * dims (rank r) align right with them. */
static void align_batch(int br, int r, const int64_t* own, int64_t* out) {
  for (int i = 0; i < br; ++i) {
    int oi = i - (br - r);
    out[i] = oi >= 0 ? own[oi] : 0;
  }
}

/* B's input slot of MatMulInteger (q = false) or QLinearMatMul (q = true). */
static int mmi_b_slot(bool q) { return q ? 3 : 1; }

/* Validates MatMulInteger (q = false) or QLinearMatMul (q = true) and fills
 * the plan. */
static hx_status_t mmi_setup(const hc_node* n, bool q, mmi_plan* p) {
  memset(p, 0, sizeof *p);
  const uint64_t q8 = HC_DT(HX_DTYPE_UINT8) | HC_DT(HX_DTYPE_INT8);
  static const int k_scales[3] = {1, 4, 6};
  int ia = 0, ib = mmi_b_slot(q), iaz = 2, ibz = q ? 5 : 3;
  if (q) {
    HX_RETURN_IF_ERROR(hc_check_arity(n, 8, 8, 1, 1));
    uint64_t sdt = HC_DT(HX_DTYPE_FLOAT32);
    if (n->opset >= 21) sdt |= HC_DT(HX_DTYPE_FLOAT16) | HC_DT(HX_DTYPE_BFLOAT16);
    for (int i = 0; i < 3; ++i) HX_RETURN_IF_ERROR(hc_check_dtype(n, k_scales[i], sdt));
    HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 1, 4));
    HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 1, 6));
    HX_RETURN_IF_ERROR(hc_check_dtype(n, 7, q8));
  } else {
    HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 4, 1, 1));
  }
  /* A B packed at compile time (hc_mmi_prepack) was checked before; its
   * geometry is the original's. */
  bool b_packed = hc_packed_is(n, ib, HC_PACK_KQUADS_S8) || hc_packed_is(n, ib, HC_PACK_KPAIRS_I16);
  HX_RETURN_IF_ERROR(hc_check_dtype(n, ia, q8));
  if (!b_packed) HX_RETURN_IF_ERROR(hc_check_dtype(n, ib, q8));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, ia, iaz));
  if (!b_packed) HX_RETURN_IF_ERROR(hc_check_same_dtype(n, ib, ibz));
  const hc_value *a = n->inputs[ia], *b = b_packed ? n->packed->original : n->inputs[ib];
  p->a = a;
  p->b = b;
  char s1[128], s2[128];
  if (a->rank < 1 || b->rank < 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "operands must have rank >= 1, got %s and %s",
                         hc_shape_str(a->rank, a->dims, s1, sizeof s1), hc_shape_str(b->rank, b->dims, s2, sizeof s2));
  p->M = a->rank == 1 ? 1 : a->dims[a->rank - 2];
  p->K = a->dims[a->rank - 1];
  int64_t K2 = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
  p->N = b->rank == 1 ? 1 : b->dims[b->rank - 1];
  if (p->K != K2)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "inner dimensions differ: A is %s and B is %s",
                         hc_shape_str(a->rank, a->dims, s1, sizeof s1), hc_shape_str(b->rank, b->dims, s2, sizeof s2));
  p->abr = a->rank > 2 ? a->rank - 2 : 0;
  p->bbr = b->rank > 2 ? b->rank - 2 : 0;
  p->br = p->abr > p->bbr ? p->abr : p->bbr;
  memcpy(p->adims, a->dims, sizeof(int64_t) * (size_t)p->abr);
  memcpy(p->bdims, b->dims, sizeof(int64_t) * (size_t)p->bbr);
  p->abatch = hc_shape_numel(p->abr, p->adims);
  p->bbatch = hc_shape_numel(p->bbr, p->bdims);
  for (int i = 0; i < p->br; ++i) {
    int ai = i - (p->br - p->abr), bi = i - (p->br - p->bbr);
    int64_t ad = ai >= 0 ? a->dims[ai] : 1, bd = bi >= 0 ? b->dims[bi] : 1;
    if (ad != bd && ad != 1 && bd != 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "batch dimensions do not broadcast: A is %s and B is %s",
                           hc_shape_str(a->rank, a->dims, s1, sizeof s1),
                           hc_shape_str(b->rank, b->dims, s2, sizeof s2));
    p->odims[i] = ad == 1 ? bd : ad;
  }
  int r = 0;
  for (int i = 0; i < p->br; ++i) p->out_dims[r++] = p->odims[i];
  if (a->rank > 1) p->out_dims[r++] = p->M;
  if (b->rank > 1) p->out_dims[r++] = p->N;
  p->out_rank = r;

  HX_RETURN_IF_ERROR(mm_classify(n, hc_input(n, iaz), a, true, p->M, &p->azp));
  HX_RETURN_IF_ERROR(mm_classify(n, hc_input(n, ibz), b, false, p->N, &p->bzp));
  p->yt = HX_DTYPE_INT32;
  if (q) {
    HX_RETURN_IF_ERROR(mm_classify(n, n->inputs[1], a, true, p->M, &p->as));
    HX_RETURN_IF_ERROR(mm_classify(n, n->inputs[4], b, false, p->N, &p->bs));
    const hc_value *as = n->inputs[1], *az = n->inputs[2], *bs = n->inputs[4], *bz = n->inputs[5];
    if (as->rank != az->rank || memcmp(as->dims, az->dims, sizeof(int64_t) * (size_t)as->rank))
      if (!(is_single(as) && is_single(az)))
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "a_scale %s and a_zero_point %s must have the same shape",
                             hc_shape_str(as->rank, as->dims, s1, sizeof s1),
                             hc_shape_str(az->rank, az->dims, s2, sizeof s2));
    if (bs->rank != bz->rank || memcmp(bs->dims, bz->dims, sizeof(int64_t) * (size_t)bs->rank))
      if (!(is_single(bs) && is_single(bz)))
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "b_scale %s and b_zero_point %s must have the same shape",
                             hc_shape_str(bs->rank, bs->dims, s1, sizeof s1),
                             hc_shape_str(bz->rank, bz->dims, s2, sizeof s2));
    p->sy = n->inputs[6];
    p->zy = n->inputs[7];
    if (!is_single(p->sy) || !is_single(p->zy))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "y_scale %s and y_zero_point %s must each hold one value (per-tensor output quantization)",
                           hc_shape_str(p->sy->rank, p->sy->dims, s1, sizeof s1),
                           hc_shape_str(p->zy->rank, p->zy->dims, s2, sizeof s2));
    p->yt = p->zy->dtype;
  }
  return HX_OK;
}

static hx_status_t infer_mmi_common(hc_node* n, bool q) {
  mmi_plan p;
  HX_RETURN_IF_ERROR(mmi_setup(n, q, &p));
  hc_set_output(n, 0, p.yt, p.out_rank, p.out_dims);
  return HX_OK;
}

static hx_status_t infer_matmul_integer(hc_graph* g, hc_node* n) { return infer_mmi_common(n, false); }
static hx_status_t infer_qlinear_matmul(hc_graph* g, hc_node* n) { return infer_mmi_common(n, true); }

/* Packed K (pairs) and columns of a matrix product (see ig_prod). */
static int64_t mmi_kp(const mmi_plan* p) { return round_up(p->K, 2); }
static int64_t mmi_np(const mmi_plan* p) { return round_up(p->N, IG_VMAX); }

/* Workspace bytes of A packed as int16 rows (zero point subtracted), what
 * the int16 product reads: broadcasting a packed pair is one load, where a
 * pair read in place is a load, a widening and a subtraction per row and
 * step (a dynamically quantized stack's products 1.4x faster with AVX-512,
 * 1.7x with AVX2). The byte path (B in K-quads) reads A in place. */
static uint64_t mmi_a_bytes(const mmi_plan* p, bool packs_a) {
  return packs_a ? (uint64_t)round_up(p->abatch * p->M * mmi_kp(p) * 2, 64) : 0;
}

static uint64_t mmi_workspace_common(const hc_node* n, bool q) {
  mmi_plan p;
  if (mmi_setup(n, q, &p) != HX_OK) return 0;
  if (p.M <= MMI_AXPY_M) return 0;
  if (hc_packed_is(n, mmi_b_slot(q), HC_PACK_KQUADS_S8)) return 0;
  if (hc_packed_is(n, mmi_b_slot(q), HC_PACK_KPAIRS_I16)) return mmi_a_bytes(&p, true);
  return mmi_a_bytes(&p, true) + (uint64_t)(p.bbatch * mmi_kp(&p) * mmi_np(&p) * 2);
}

static uint64_t matmul_integer_workspace(const hc_node* n) { return mmi_workspace_common(n, false); }
static uint64_t qlinear_matmul_workspace(const hc_node* n) { return mmi_workspace_common(n, true); }

/* Packs B into K-pair panels (see ig_prod): task (batch, block of rows k);
 * element (k, n) of batch bb at bb*Kp*Np + ((k/2)*Np + n)*2 + k%2 holds
 * B[bb][k][n] - zp, 0 for k >= K or n >= N. */
static hx_status_t mmi_pack_b(hc_lower_ctx* lc, const hc_node* n, const mmi_plan* p, uint64_t dst_off) {
  const int64_t Kp = mmi_kp(p), Np = mmi_np(p);
  int64_t KB = round_up(8192 / Np < 2 ? 2 : 8192 / Np, 2);
  int64_t nblk = (Kp + KB - 1) / KB;
  const hc_value *b = p->b, *zp = p->bzp.v;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "pack_b", p->bbatch * nblk, &kb));
  LLVMBuilderRef bd = kb.b;
  LLVMValueRef ps = hc_kb_ptr(&kb, b), pz = zp ? hc_kb_ptr(&kb, zp) : NULL;
  LLVMValueRef ws = hc_kb_workspace(&kb);
  LLVMValueRef dst = LLVMBuildGEP2(bd, kb.t_i8, ws, (LLVMValueRef[]){hc_kb_i64(&kb, (int64_t)dst_off)}, 1, "");
  hc_loop task, kl, nl;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef bb = LLVMBuildUDiv(bd, t, hc_kb_i64(&kb, nblk), "");
  LLVMValueRef k0 = hc_kb_imul(&kb, LLVMBuildURem(bd, t, hc_kb_i64(&kb, nblk), ""), hc_kb_i64(&kb, KB));
  LLVMValueRef k1 = hc_kb_imin(&kb, hc_kb_iadd(&kb, k0, hc_kb_i64(&kb, KB)), hc_kb_i64(&kb, Kp));
  LLVMValueRef zb = zp ? coord_offset(&kb, bb, p->bbr, p->bdims, p->bzp.own_bs) : NULL;
  LLVMValueRef sbase = hc_kb_imul(&kb, bb, hc_kb_i64(&kb, p->K * p->N));
  LLVMValueRef dbase = hc_kb_imul(&kb, bb, hc_kb_i64(&kb, Kp * Np));
  LLVMValueRef k = hc_loop_begin(&kb, &kl, k0, k1, "k");
  LLVMValueRef kin = LLVMBuildICmp(bd, LLVMIntULT, k, hc_kb_i64(&kb, p->K), "");
  LLVMValueRef drow = hc_kb_iadd(&kb, dbase,
                                 hc_kb_iadd(&kb, hc_kb_imul(&kb, LLVMBuildLShr(bd, k, hc_kb_i64(&kb, 1), ""),
                                                            hc_kb_i64(&kb, 2 * Np)),
                                            LLVMBuildAnd(bd, k, hc_kb_i64(&kb, 1), "")));
  LLVMValueRef srow = hc_kb_iadd(&kb, sbase, hc_kb_imul(&kb, k, hc_kb_i64(&kb, p->N)));
  LLVMValueRef col = hc_loop_begin(&kb, &nl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, Np), "n");
  LLVMValueRef ok = LLVMBuildAnd(bd, kin, LLVMBuildICmp(bd, LLVMIntULT, col, hc_kb_i64(&kb, p->N), ""), "");
  LLVMValueRef si = LLVMBuildSelect(bd, ok, hc_kb_iadd(&kb, srow, col), hc_kb_i64(&kb, 0), "");
  LLVMValueRef v = hc_kb_convert(&kb, hc_kb_load(&kb, b->dtype, ps, si), b->dtype, HX_DTYPE_INT32);
  if (zp) {
    LLVMValueRef zc = LLVMBuildSelect(bd, ok, col, hc_kb_i64(&kb, 0), "");
    LLVMValueRef zi = hc_kb_iadd(&kb, zb, hc_kb_imul(&kb, zc, hc_kb_i64(&kb, p->bzp.step)));
    v = LLVMBuildSub(bd, v, hc_kb_convert(&kb, hc_kb_load(&kb, zp->dtype, pz, zi), zp->dtype, HX_DTYPE_INT32), "");
  }
  v = LLVMBuildSelect(bd, ok, v, hc_kb_i32(&kb, 0), "");
  LLVMValueRef di = hc_kb_iadd(&kb, drow, hc_kb_imul(&kb, col, hc_kb_i64(&kb, 2)));
  hc_kb_store(&kb, HX_DTYPE_INT16, dst, di, LLVMBuildTrunc(bd, v, kb.t_i16, ""));
  hc_loop_end(&kb, &nl);
  hc_loop_end(&kb, &kl);
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, (double)p->bbatch * (double)Kp * (double)Np, (double)p->bbatch * (double)Np * (double)(3 * Kp));
  return HX_OK;
}

extern const hc_op_desc hc_op_matmul_integer, hc_op_qlinear_matmul;

/* The int16 path's B packed at compile time: the K-pair panels mmi_pack_b
 * writes per run (zero point subtracted, zeros in the padding), as a
 * constant of twice B's bytes (HC_PACK_KPAIRS_I16). */
static hx_status_t mmi_prepack_pairs(hc_graph* g, hc_node* n, bool q, const mmi_plan* p, bool* out_done) {
  const hc_value *b = p->b, *z = p->bzp.v;
  if (z && (z->kind != HC_VALUE_CONST || !z->data)) return HX_OK;
  int64_t Kp = mmi_kp(p), Np = mmi_np(p);
  int16_t* d = (int16_t*)hc_graph_alloc_data(g, (size_t)(p->bbatch * Kp * Np) * sizeof(int16_t));
  if (!d) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory packing '%s'", b->name);
  memset(d, 0, (size_t)(p->bbatch * Kp * Np) * sizeof(int16_t));
  bool sb = hc_dtype_is_signed(b->dtype), sz = z && hc_dtype_is_signed(z->dtype);
  for (int64_t bb = 0; bb < p->bbatch; ++bb) {
    /* the zero point's offset for batch entry bb (its own batch dims) */
    int64_t zoff = 0, rem = bb;
    for (int i = p->bbr - 1; i >= 0; --i) {
      zoff += rem % p->bdims[i] * p->bzp.own_bs[i];
      rem /= p->bdims[i];
    }
    for (int64_t k = 0; k < p->K; ++k)
      for (int64_t col = 0; col < p->N; ++col) {
        int64_t si = (bb * p->K + k) * p->N + col;
        int32_t v = sb ? ((const int8_t*)b->data)[si] : ((const uint8_t*)b->data)[si];
        if (z) {
          int64_t zi = zoff + col * p->bzp.step;
          v -= sz ? ((const int8_t*)z->data)[zi] : ((const uint8_t*)z->data)[zi];
        }
        d[bb * Kp * Np + ((k / 2) * Np + col) * 2 + k % 2] = (int16_t)v;
      }
  }
  char name[256];
  snprintf(name, sizeof name, "%s.kpairs16", b->name);
  int64_t dims[4] = {p->bbatch, Kp / 2, Np, 2};
  HX_RETURN_IF_ERROR(hc_install_packed_at(g, n, mmi_b_slot(q), (hc_value*)b, name, HX_DTYPE_INT16, 4, dims, d,
                                          HC_PACK_KPAIRS_I16, NULL));
  *out_done = true;
  return HX_OK;
}

hx_status_t hc_mmi_prepack(hc_graph* g, hc_node* n, const hc_target* target, bool* out_done) {
  *out_done = false;
  bool q = n->op == &hc_op_qlinear_matmul;
  if ((!q && n->op != &hc_op_matmul_integer) || n->packed) return HX_OK;
  mmi_plan p;
  if (mmi_setup(n, q, &p) != HX_OK) return HX_OK; /* lowering reports it */
  const hc_value* b = p.b;
  /* The product path (more than MMI_AXPY_M rows) of a constant B, its batch
   * its own dense matrices. On a VNNI byte target, int8 with zero point 0
   * and whole quads of K: the K-quads hold as many bytes as B (plus the
   * column padding). Otherwise the int16 K-pair panels the product reads,
   * which double B's share of the artifact but save packing them on every
   * run (a dynamically quantized stack's products 1.3x faster, stop 31). */
  if (p.M <= MMI_AXPY_M || b->kind != HC_VALUE_CONST || !b->data) return HX_OK;
  if (hc_value_numel(b) != p.bbatch * p.K * p.N || hc_value_numel(n->outputs[0]) == 0) return HX_OK;
  if (!ig_byte_target(target) || b->dtype != HX_DTYPE_INT8 || p.K % 4 || !zero_point_is_zero(p.bzp.v))
    return mmi_prepack_pairs(g, n, q, &p, out_done);
  int64_t Np = mmi_np(&p), Kq = p.K / 4;
  size_t bytes = (size_t)(p.bbatch * p.K * Np);
  int8_t* q8 = (int8_t*)hc_graph_alloc_data(g, bytes);
  if (!q8) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory packing '%s'", b->name);
  memset(q8, 0, bytes);
  const int8_t* src = (const int8_t*)b->data;
  for (int64_t bb = 0; bb < p.bbatch; ++bb)
    for (int64_t k = 0; k < p.K; ++k)
      for (int64_t col = 0; col < p.N; ++col)
        q8[((bb * Kq + k / 4) * Np + col) * 4 + k % 4] = src[(bb * p.K + k) * p.N + col];
  char name[256];
  snprintf(name, sizeof name, "%s.kquads", b->name);
  int64_t dims[4] = {p.bbatch, Kq, Np, 4};
  HX_RETURN_IF_ERROR(hc_install_packed_at(g, n, mmi_b_slot(q), (hc_value*)b, name, HX_DTYPE_INT8, 4, dims, q8,
                                          HC_PACK_KQUADS_S8, NULL));
  *out_done = true;
  return HX_OK;
}

/* The product description of a matrix product: outer problems are the
 * output batch entries; A's rows read directly or (packs_a) packed at
 * workspace offset 0, B's panels at b_off. */
static hx_status_t mmi_prod(const mmi_plan* p, bool q, unsigned L, unsigned nr, uint64_t b_off, bool packs_a,
                            ig_prod* d) {
  memset(d, 0, sizeof *d);
  int64_t Kp = mmi_kp(p), Np = mmi_np(p);
  d->Mt = p->M, d->Pt = p->N, d->Kp = Kp, d->Pp = Np, d->L = L, d->NR = nr;
  d->outer_rank = p->br;
  memcpy(d->outer_dims, p->odims, sizeof(int64_t) * (size_t)p->br);
  d->w_direct = !packs_a;
  d->w = p->a;
  d->w_ld = d->w_direct ? p->K : Kp;
  int64_t own[HC_MAX_RANK];
  bcast_strides(p->abr, p->adims, p->M * d->w_ld, own);
  align_batch(p->br, p->abr, own, d->w_os);
  if (d->w_direct && p->azp.v) {
    d->wz = p->azp.v;
    align_batch(p->br, p->abr, p->azp.own_bs, d->wz_os);
    d->wz_step = p->azp.step;
  }
  bcast_strides(p->bbr, p->bdims, Kp * Np, own);
  align_batch(p->br, p->bbr, own, d->x_os);
  d->x_ws_offset = b_off;
  d->yt = p->yt;
  if (q) {
    d->sm = p->as.v, d->sp = p->bs.v, d->sy = p->sy, d->zy = p->zy;
    align_batch(p->br, p->abr, p->as.own_bs, d->sm_os);
    align_batch(p->br, p->bbr, p->bs.own_bs, d->sp_os);
    d->sm_step = p->as.step, d->sp_step = p->bs.step;
  }
  return HX_OK;
}

/* Products with at most MMI_AXPY_M rows per batch entry skip packing:
 * packing B would cost as much as the product itself. A task owns up to
 * MMI_AXPY_NB columns of one batch entry and accumulates, for every k, the
 * rows a'[m][k] = A[m][k] - a_zp times B's row k into a stack tile: the
 * loop over contiguous columns vectorises. B's zero point is applied at the
 * end through the row sums of a' (sum a'(b - z) = sum a'b - z sum a', exact
 * in wrapping int32). */
static hx_status_t mmi_emit_axpy(hc_lower_ctx* lc, const hc_node* n, const mmi_plan* p, const ig_prod* d) {
  const int64_t M = p->M, N = p->N, K = p->K, NB = MMI_AXPY_NB;
  int64_t nnb = (N + NB - 1) / NB, outer = hc_shape_numel(p->br, p->odims);
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "axpy", outer * nnb, &kb));
  LLVMBuilderRef b = kb.b;
  ig_emit e;
  memset(&e, 0, sizeof e);
  e.kb = &kb;
  e.d = d;
  e.yp = hc_kb_ptr(&kb, n->outputs[0]);
  if (d->yt != HX_DTYPE_INT32) ig_requant_setup(&e, M * NB, NB);
  LLVMValueRef tile = e.tile ? e.tile : hc_kb_alloca(&kb, LLVMArrayType2(kb.t_i32, (uint64_t)(M * NB)), "tile");
  LLVMValueRef rs = hc_kb_alloca(&kb, LLVMArrayType2(kb.t_i32, MMI_AXPY_M), "rowsum");
  const hc_value *a = p->a, *bv = p->b, *az = p->azp.v, *bz = p->bzp.v;
  LLVMValueRef pa = hc_kb_ptr(&kb, a), pb = hc_kb_ptr(&kb, bv);
  LLVMValueRef paz = az ? hc_kb_ptr(&kb, az) : NULL, pbz = bz ? hc_kb_ptr(&kb, bz) : NULL;
  int64_t own[HC_MAX_RANK], a_os[HC_MAX_RANK], b_os[HC_MAX_RANK], az_os[HC_MAX_RANK], bz_os[HC_MAX_RANK];
  bcast_strides(p->abr, p->adims, M * K, own);
  align_batch(p->br, p->abr, own, a_os);
  bcast_strides(p->bbr, p->bdims, K * N, own);
  align_batch(p->br, p->bbr, own, b_os);
  align_batch(p->br, p->abr, p->azp.own_bs, az_os);
  align_batch(p->br, p->bbr, p->bzp.own_bs, bz_os);

  hc_loop task, kl, jl, ml;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef o = LLVMBuildUDiv(b, t, hc_kb_i64(&kb, nnb), "");
  LLVMValueRef n0 = hc_kb_imul(&kb, LLVMBuildURem(b, t, hc_kb_i64(&kb, nnb), ""), hc_kb_i64(&kb, NB));
  LLVMValueRef cnt = hc_kb_imin(&kb, hc_kb_i64(&kb, NB), LLVMBuildSub(b, hc_kb_i64(&kb, N), n0, ""));
  LLVMValueRef aoff = coord_offset(&kb, o, p->br, p->odims, a_os);
  LLVMValueRef boff = hc_kb_iadd(&kb, coord_offset(&kb, o, p->br, p->odims, b_os), n0);
  LLVMValueRef zero = hc_kb_i64(&kb, 0), zero32 = hc_kb_i32(&kb, 0);
  LLVMValueRef azv[MMI_AXPY_M];
  for (int64_t m = 0; m < M; ++m) {
    azv[m] = zero32;
    if (az) {
      LLVMValueRef zi = hc_kb_iadd(&kb, coord_offset(&kb, o, p->br, p->odims, az_os), hc_kb_i64(&kb, m * p->azp.step));
      azv[m] = hc_kb_convert(&kb, hc_kb_load(&kb, az->dtype, paz, zi), az->dtype, HX_DTYPE_INT32);
    }
    hc_kb_store(&kb, HX_DTYPE_INT32, rs, hc_kb_i64(&kb, m), zero32);
    LLVMValueRef j = hc_loop_begin(&kb, &jl, zero, cnt, "z");
    hc_kb_store(&kb, HX_DTYPE_INT32, tile, hc_kb_iadd(&kb, hc_kb_i64(&kb, m * NB), j), zero32);
    hc_loop_end(&kb, &jl);
  }
  LLVMValueRef k = hc_loop_begin(&kb, &kl, zero, hc_kb_i64(&kb, K), "k");
  LLVMValueRef av[MMI_AXPY_M];
  for (int64_t m = 0; m < M; ++m) {
    LLVMValueRef ai = hc_kb_iadd(&kb, aoff, hc_kb_iadd(&kb, hc_kb_i64(&kb, m * K), k));
    LLVMValueRef aw = hc_kb_convert(&kb, hc_kb_load(&kb, a->dtype, pa, ai), a->dtype, HX_DTYPE_INT32);
    av[m] = LLVMBuildSub(b, aw, azv[m], "");
    LLVMValueRef mi = hc_kb_i64(&kb, m);
    hc_kb_store(&kb, HX_DTYPE_INT32, rs, mi, LLVMBuildAdd(b, hc_kb_load(&kb, HX_DTYPE_INT32, rs, mi), av[m], ""));
  }
  LLVMValueRef brow = hc_kb_iadd(&kb, boff, hc_kb_imul(&kb, k, hc_kb_i64(&kb, N)));
  LLVMValueRef j = hc_loop_begin(&kb, &jl, zero, cnt, "j");
  LLVMValueRef x = hc_kb_convert(&kb, hc_kb_load(&kb, bv->dtype, pb, hc_kb_iadd(&kb, brow, j)), bv->dtype,
                                 HX_DTYPE_INT32);
  for (int64_t m = 0; m < M; ++m) {
    LLVMValueRef ti = hc_kb_iadd(&kb, hc_kb_i64(&kb, m * NB), j);
    hc_kb_store(&kb, HX_DTYPE_INT32, tile, ti,
                LLVMBuildAdd(b, hc_kb_load(&kb, HX_DTYPE_INT32, tile, ti), LLVMBuildMul(b, av[m], x, ""), ""));
  }
  hc_loop_end(&kb, &jl);
  hc_loop_end(&kb, &kl);

  /* B's zero point through the row sums; int32 results go straight to Y. */
  LLVMValueRef yoff = hc_kb_imul(&kb, o, hc_kb_i64(&kb, M * N));
  LLVMValueRef bzo = bz ? coord_offset(&kb, o, p->br, p->odims, bz_os) : NULL;
  LLVMValueRef m = hc_loop_begin(&kb, &ml, zero, hc_kb_i64(&kb, M), "m");
  LLVMValueRef rsm = hc_kb_load(&kb, HX_DTYPE_INT32, rs, m);
  LLVMValueRef trow = hc_kb_imul(&kb, m, hc_kb_i64(&kb, NB));
  j = hc_loop_begin(&kb, &jl, zero, cnt, "j");
  LLVMValueRef ti = hc_kb_iadd(&kb, trow, j);
  LLVMValueRef acc = hc_kb_load(&kb, HX_DTYPE_INT32, tile, ti);
  if (bz) {
    LLVMValueRef zi = hc_kb_iadd(&kb, bzo, hc_kb_imul(&kb, hc_kb_iadd(&kb, n0, j), hc_kb_i64(&kb, p->bzp.step)));
    LLVMValueRef zv = hc_kb_convert(&kb, hc_kb_load(&kb, bz->dtype, pbz, zi), bz->dtype, HX_DTYPE_INT32);
    acc = LLVMBuildSub(b, acc, LLVMBuildMul(b, zv, rsm, ""), "");
  }
  if (d->yt == HX_DTYPE_INT32)
    hc_kb_store(&kb, HX_DTYPE_INT32, e.yp,
                hc_kb_iadd(&kb, yoff, hc_kb_iadd(&kb, hc_kb_imul(&kb, m, hc_kb_i64(&kb, N)), hc_kb_iadd(&kb, n0, j))),
                acc);
  else
    hc_kb_store(&kb, HX_DTYPE_INT32, tile, ti, acc);
  hc_loop_end(&kb, &jl);
  hc_loop_end(&kb, &ml);
  if (d->yt != HX_DTYPE_INT32) {
    e.y_off = yoff;
    e.m0 = zero;
    e.p0 = n0;
    e.sm_off = coord_offset(&kb, o, p->br, p->odims, d->sm_os);
    e.sp_off = coord_offset(&kb, o, p->br, p->odims, d->sp_os);
    ig_requantize(&e, hc_kb_i64(&kb, M), hc_kb_iadd(&kb, n0, cnt));
  }
  hc_loop_end(&kb, &task);
  double macs = (double)outer * (double)M * (double)N * (double)K;
  hc_kb_end(&kb, 2.0 * macs, (double)outer * (double)(M * K + K * N) + (double)hc_value_nbytes(n->outputs[0]));
  return HX_OK;
}

static hx_status_t lower_mmi_common(hc_lower_ctx* lc, hc_node* n, bool q) {
  mmi_plan p;
  HX_RETURN_IF_ERROR(mmi_setup(n, q, &p));
  if (hc_value_numel(n->outputs[0]) == 0) return HX_OK;
  if (p.M <= MMI_AXPY_M) {
    ig_prod d;
    HX_RETURN_IF_ERROR(mmi_prod(&p, q, 0, 0, 0, p.K % 2 != 0, &d));
    return mmi_emit_axpy(lc, n, &p, &d);
  }
  unsigned nr, L = ig_lanes(lc, &nr);
  bool quads = hc_packed_is(n, mmi_b_slot(q), HC_PACK_KQUADS_S8);
  bool pairs = hc_packed_is(n, mmi_b_slot(q), HC_PACK_KPAIRS_I16);
  if (quads && L != 32)
    return hc_node_error(n, HX_STATUS_INTERNAL, "B was packed for 512-bit VNNI but the target's product has %u lanes",
                         L);
  uint64_t b_off = mmi_a_bytes(&p, !quads);
  if (!quads) {
    /* A's rows: zero point index over (A batch dims..., M). */
    int64_t rdims[HC_MAX_RANK], zs[HC_MAX_RANK];
    memcpy(rdims, p.adims, sizeof(int64_t) * (size_t)p.abr);
    rdims[p.abr] = p.M;
    memcpy(zs, p.azp.own_bs, sizeof(int64_t) * (size_t)p.abr);
    zs[p.abr] = p.azp.step;
    HX_RETURN_IF_ERROR(ig_pack_rows(lc, n, "pack_a", p.a, p.abatch * p.M, p.K, mmi_kp(&p), 0, p.azp.v, p.abr + 1,
                                    rdims, zs));
  }
  if (!quads && !pairs) HX_RETURN_IF_ERROR(mmi_pack_b(lc, n, &p, b_off));

  ig_prod d;
  HX_RETURN_IF_ERROR(mmi_prod(&p, q, L, nr, b_off, !quads, &d));
  if (pairs) d.x_const = n->inputs[mmi_b_slot(q)];
  if (quads) {
    d.x_const = n->inputs[mmi_b_slot(q)];
    /* K is a multiple of 4: A's rows are read in place as quads, and the
     * packed B's matrices are K x Np bytes (mmi_prod's x_os, Kp = K). */
    d.vnni = d.vnni_bq = true;
    d.a_signed = hc_dtype_is_signed(p.a->dtype);
    int64_t own[HC_MAX_RANK];
    bcast_strides(p.bbr, p.bdims, d.Pp, own);
    align_batch(p.br, p.bbr, own, d.cs_os);
  }
  return ig_emit_product(lc, n, &d, n->outputs[0]);
}

static hx_status_t lower_matmul_integer(hc_lower_ctx* lc, hc_node* n) { return lower_mmi_common(lc, n, false); }
static hx_status_t lower_qlinear_matmul(hc_lower_ctx* lc, hc_node* n) { return lower_mmi_common(lc, n, true); }

/* ---- ConvInteger and QLinearConv --------------------------------------------- */

typedef struct ci_plan {
  int64_t N, C, M, G, Cg, Mg;
  int nd;
  int64_t in[IG_MAX_SP], out[IG_MAX_SP], k[IG_MAX_SP], s[IG_MAX_SP], d[IG_MAX_SP], pb[IG_MAX_SP], pe[IG_MAX_SP];
  int64_t P, inplane, ktot, Kc;
  const hc_value *x, *w, *xz, *wz, *xs, *wsc, *ys, *yz, *bias;
  const hc_value* w_rows; /* W packed at compile time (HC_PACK_ROWS_I16), or NULL; w is then the original */
  const hc_value* w_taps; /* W packed for the direct convolution (HC_PACK_TAP_QUADS_S8), or NULL; likewise */
  hx_dtype_t yt;
} ci_plan;

/* The weight's input slot. */
static int ci_w_slot(bool q) { return q ? 3 : 1; }

/* A per-tensor or per-output-channel parameter (one value or M values). */
static hx_status_t ci_per_channel(const hc_node* n, const hc_value* v, int64_t M, int64_t* step) {
  *step = 0;
  if (!v || is_single(v)) return HX_OK;
  if (v->rank == 1 && v->dims[0] == M) {
    *step = 1;
    return HX_OK;
  }
  char s1[128];
  return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                       "'%s' has shape %s; expected one value (per tensor) or %lld (per output channel)", v->name,
                       hc_shape_str(v->rank, v->dims, s1, sizeof s1), (long long)M);
}

/* Requires a per-tensor parameter. */
static hx_status_t ci_single(const hc_node* n, const hc_value* v, const char* what) {
  char s1[128];
  if (v && !is_single(v))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "%s ('%s') has shape %s; expected one value (per tensor)",
                         what, v->name, hc_shape_str(v->rank, v->dims, s1, sizeof s1));
  return HX_OK;
}

/* Validates ConvInteger (q = false) or QLinearConv (q = true) and computes
 * its geometry as Conv does. */
static hx_status_t ci_setup(const hc_node* n, bool q, ci_plan* p) {
  memset(p, 0, sizeof *p);
  const uint64_t q8 = HC_DT(HX_DTYPE_UINT8) | HC_DT(HX_DTYPE_INT8);
  /* Weights packed at compile time (hc_ci_prepack) were checked before; the
   * geometry is the original's. */
  bool w_rows = hc_packed_is(n, ci_w_slot(q), HC_PACK_ROWS_I16);
  bool w_taps = hc_packed_is(n, ci_w_slot(q), HC_PACK_TAP_QUADS_S8);
  bool w_packed = w_rows || w_taps;
  if (q) {
    HX_RETURN_IF_ERROR(hc_check_arity(n, 8, 9, 1, 1));
    p->x = n->inputs[0], p->xs = n->inputs[1], p->xz = n->inputs[2], p->w = n->inputs[3], p->wsc = n->inputs[4];
    p->wz = n->inputs[5], p->ys = n->inputs[6], p->yz = n->inputs[7], p->bias = hc_input(n, 8);
    static const int k_scales[3] = {1, 4, 6};
    for (int i = 0; i < 3; ++i) HX_RETURN_IF_ERROR(hc_check_dtype(n, k_scales[i], HC_DT(HX_DTYPE_FLOAT32)));
    HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, q8));
    if (!w_packed) HX_RETURN_IF_ERROR(hc_check_dtype(n, 3, q8));
    HX_RETURN_IF_ERROR(hc_check_dtype(n, 7, q8));
    HX_RETURN_IF_ERROR(hc_check_dtype(n, 8, HC_DT(HX_DTYPE_INT32)));
    HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 2));
    if (!w_packed) HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 3, 5));
    p->yt = p->yz->dtype;
  } else {
    HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 4, 1, 1));
    p->x = n->inputs[0], p->w = n->inputs[1], p->xz = hc_input(n, 2), p->wz = hc_input(n, 3);
    HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, q8));
    if (!w_packed) HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, q8));
    HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 2));
    if (!w_packed) HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 1, 3));
    p->yt = HX_DTYPE_INT32;
  }
  if (w_packed) {
    if (w_rows) p->w_rows = n->inputs[ci_w_slot(q)];
    if (w_taps) p->w_taps = n->inputs[ci_w_slot(q)];
    p->w = n->packed->original;
  }
  const hc_value *x = p->x, *w = p->w;
  char s1[128], s2[128];
  if (x->rank < 3 || x->rank > HC_MAX_RANK)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "input x ('%s') has shape %s; expected (N, C, D1, ...) with at least one spatial dimension",
                         x->name, hc_shape_str(x->rank, x->dims, s1, sizeof s1));
  if (w->rank != x->rank)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "weight w ('%s') has shape %s; expected rank %d like x %s",
                         w->name, hc_shape_str(w->rank, w->dims, s1, sizeof s1), x->rank,
                         hc_shape_str(x->rank, x->dims, s2, sizeof s2));
  p->nd = x->rank - 2;
  p->N = x->dims[0];
  p->C = x->dims[1];
  p->M = w->dims[0];
  p->G = hc_attr_int(n, "group", 1);
  if (p->G < 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "group = %lld; must be >= 1", (long long)p->G);
  if (p->C % p->G != 0 || p->M % p->G != 0)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "input channels %lld and output channels %lld must both be divisible by group %lld",
                         (long long)p->C, (long long)p->M, (long long)p->G);
  p->Cg = p->C / p->G;
  p->Mg = p->M / p->G;
  if (w->dims[1] != p->Cg)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "w ('%s') has shape %s; dimension 1 must be C/group = %lld/%lld = %lld", w->name,
                         hc_shape_str(w->rank, w->dims, s1, sizeof s1), (long long)p->C, (long long)p->G,
                         (long long)p->Cg);
  int64_t ks[IG_MAX_SP];
  int nk = hc_attr_ints(n, "kernel_shape", ks, IG_MAX_SP);
  if (nk != -1 && nk != p->nd)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'kernel_shape' has %d values; expected %d",
                         nk == -2 ? hc_node_attr(n, "kernel_shape")->n : nk, p->nd);
  for (int i = 0; i < p->nd; ++i) {
    p->k[i] = w->dims[2 + i];
    p->in[i] = x->dims[2 + i];
    if (nk > 0 && ks[i] != p->k[i])
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'kernel_shape'[%d] = %lld but w ('%s') has shape %s", i,
                           (long long)ks[i], w->name, hc_shape_str(w->rank, w->dims, s1, sizeof s1));
    if (p->k[i] < 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "w ('%s') has shape %s; kernel sizes must be >= 1", w->name,
                           hc_shape_str(w->rank, w->dims, s1, sizeof s1));
  }
  HX_RETURN_IF_ERROR(hc_sliding_window_geometry(n, p->nd, p->in, p->k, false, p->s, p->d, p->pb, p->pe, p->out));
  p->P = hc_shape_numel(p->nd, p->out);
  p->inplane = hc_shape_numel(p->nd, p->in);
  p->ktot = hc_shape_numel(p->nd, p->k);
  p->Kc = p->Cg * p->ktot;

  int64_t step;
  HX_RETURN_IF_ERROR(ci_single(n, p->xz, "x_zero_point"));
  HX_RETURN_IF_ERROR(ci_per_channel(n, p->wz, p->M, &step));
  if (q) {
    HX_RETURN_IF_ERROR(ci_single(n, p->xs, "x_scale"));
    HX_RETURN_IF_ERROR(ci_single(n, p->ys, "y_scale"));
    HX_RETURN_IF_ERROR(ci_single(n, p->yz, "y_zero_point"));
    HX_RETURN_IF_ERROR(ci_per_channel(n, p->wsc, p->M, &step));
    if (p->bias && !(p->bias->rank == 1 && p->bias->dims[0] == p->M))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "bias B ('%s') has shape %s; expected (%lld)",
                           p->bias->name, hc_shape_str(p->bias->rank, p->bias->dims, s1, sizeof s1), (long long)p->M);
  }
  return HX_OK;
}

static hx_status_t infer_ci_common(hc_node* n, bool q) {
  ci_plan p;
  HX_RETURN_IF_ERROR(ci_setup(n, q, &p));
  int64_t dims[HC_MAX_RANK] = {p.N, p.M};
  for (int i = 0; i < p.nd; ++i) dims[2 + i] = p.out[i];
  hc_set_output(n, 0, p.yt, p.nd + 2, dims);
  return HX_OK;
}

static hx_status_t infer_conv_integer(hc_graph* g, hc_node* n) { return infer_ci_common(n, false); }
static hx_status_t infer_qlinear_conv(hc_graph* g, hc_node* n) { return infer_ci_common(n, true); }

/* A convolution with one input channel per group (depthwise, any channel
 * multiplier) in 2-D takes the direct path (ci_emit_depthwise). */
static bool ci_is_depthwise(const ci_plan* p) {
  return p->Cg == 1 && p->nd == 2 && p->ktot <= 64 && p->P <= IG_DW_MAX_P;
}

/* Packed K (pairs) and output positions of the product (see ig_prod). */
static int64_t ci_kp(const ci_plan* p) { return round_up(p->Kc, 2); }
/* One position (a Gemm as a 1x1 convolution) packs contiguously for
 * ig_emit_gemv; the outer-product kernel may then read up to a vector past
 * the panel (lanes it never stores), which the workspace's slack covers. */
static int64_t ci_pp(const ci_plan* p) { return p->P == 1 ? 1 : round_up(p->P, IG_VMAX); }

/* The direct convolution (ci_use_taps) reads x from a padded copy in
 * channel quads, [C/4][Hp][Wp][4] per (image, group), the padding x's zero
 * point: K quad (c4, tap) of output column j = oy*Wp + ox is the copy's
 * quad c4 at position j + ky*dy*Wp + kx*dx, so the quad's row of every
 * column is contiguous and no im2col is needed. The columns are whole
 * padded rows; ox >= OW (the last (KW-1)*dx of each row) are computed from
 * whatever the copy holds there and dropped. */
typedef struct ci_taps_geo {
  int64_t Hp, Wp, OW; /* padded input plane, output row */
  int64_t C4, PS;     /* channel quads, positions per quad plane */
  int64_t cols;       /* product columns: OH * Wp */
  int64_t bytes;      /* the copy of one (image, group), 64-byte aligned */
} ci_taps_geo;

/* The copy's geometry; false where the convolution cannot read one (not
 * 2-D, a stride, channels per group not in whole quads, one tap). */
static bool ci_taps_geometry(const ci_plan* p, ci_taps_geo* g) {
  if (p->nd != 2 || p->Cg % 4 || p->ktot < 2 || p->P < 2 || p->s[0] != 1 || p->s[1] != 1) return false;
  g->Hp = p->in[0] + p->pb[0] + p->pe[0];
  g->Wp = p->in[1] + p->pb[1] + p->pe[1];
  g->OW = p->out[1];
  g->C4 = p->Cg / 4;
  g->PS = g->Hp * g->Wp;
  g->cols = p->out[0] * g->Wp;
  /* The last columns' vectors (up to 16 past cols) at the last tap read up
   * to (KW-1)*dx + 16 positions past the last plane. */
  g->bytes = round_up((g->C4 * g->PS + (p->k[1] - 1) * p->d[1] + 16) * 4, 64);
  return g->bytes < ((int64_t)1 << 31);
}

/* Workspace: packed W (int16 rows, only for an odd K: an even K reads W
 * directly; none when packed at compile time), then X's K-pair panels, one
 * per (image, group). */
static uint64_t ci_w_bytes(const ci_plan* p) {
  return p->Kc % 2 && !p->w_rows ? (uint64_t)round_up(p->M * ci_kp(p) * 2, 64) : 0;
}

static uint64_t ci_workspace_common(const hc_node* n, bool q) {
  ci_plan p;
  if (ci_setup(n, q, &p) != HX_OK) return 0;
  if (ci_is_depthwise(&p)) return 0;
  /* X's panels, or the direct convolution's copy where a target may take
   * it (the size must not depend on the target) */
  uint64_t x_bytes = (uint64_t)(p.N * p.G * ci_kp(&p) * ci_pp(&p) * 2);
  ci_taps_geo tg;
  if (ci_taps_geometry(&p, &tg) && (uint64_t)(p.N * p.G * tg.bytes) > x_bytes)
    x_bytes = (uint64_t)(p.N * p.G * tg.bytes);
  return ci_w_bytes(&p) + x_bytes + 2 * IG_MAX_LANES;
}

static uint64_t conv_integer_workspace(const hc_node* n) { return ci_workspace_common(n, false); }
static uint64_t qlinear_conv_workspace(const hc_node* n) { return ci_workspace_common(n, true); }

/* State of the panel packer: the tap loops nest one level per spatial dim
 * but the last, which is unrolled (its valid output range is then a
 * compile-time constant per tap). */
typedef struct ci_cols {
  hc_kb* kb;
  const ci_plan* p;
  LLVMValueRef px, dst, xz;
  LLVMValueRef xch;  /* input index of (image, channel) */
  LLVMValueRef dbase; /* panel of (image, group) */
  LLVMValueRef kbase; /* ch * ktot */
  int64_t instride[IG_MAX_SP], ostride[IG_MAX_SP];
  LLVMValueRef kv[IG_MAX_SP];
  bool vnni; /* uint8 K-quads (x' = x, or x + 128 for int8; padding zx') */
} ci_cols;

/* Output range [lo, hi) of dim e whose input index o*s - pb + tap*d is in
 * bounds. */
static void ci_valid_range(const ci_plan* p, int e, int64_t tap, int64_t* lo, int64_t* hi) {
  int64_t off = tap * p->d[e] - p->pb[e];
  int64_t l = off >= 0 ? 0 : (-off + p->s[e] - 1) / p->s[e];
  int64_t h = p->in[e] - off <= 0 ? 0 : (p->in[e] - off - 1) / p->s[e] + 1;
  if (h > p->out[e]) h = p->out[e];
  if (l > h) l = h;
  *lo = l, *hi = h;
}

/* Writes row k = kbase + tap of the panel: x - zx over the output
 * positions, 0 where the tap reads padding and for positions P..Pp. */
static void ci_pack_row(ci_cols* c, LLVMValueRef tap, int64_t klast) {
  hc_kb* kb = c->kb;
  const ci_plan* p = c->p;
  LLVMBuilderRef b = kb->b;
  int nd = p->nd, el = nd - 1;
  int64_t OL = p->out[el], Pout = p->P / OL, Pp = ci_pp(p);
  LLVMValueRef k = hc_kb_iadd(kb, c->kbase, tap);
  int64_t G = c->vnni ? 4 : 2;
  hx_dtype_t et = c->vnni ? HX_DTYPE_UINT8 : HX_DTYPE_INT16;
  LLVMValueRef drow =
      hc_kb_iadd(kb, c->dbase,
                 hc_kb_iadd(kb, hc_kb_imul(kb, LLVMBuildLShr(b, k, hc_kb_i64(kb, G == 4 ? 2 : 1), ""), hc_kb_i64(kb, G * Pp)),
                            LLVMBuildAnd(b, k, hc_kb_i64(kb, G - 1), "")));
  int64_t lo, hi;
  ci_valid_range(p, el, klast, &lo, &hi);
  int64_t off = klast * p->d[el] - p->pb[el];
  hx_dtype_t xt = p->x->dtype;
  LLVMValueRef zero16 = c->vnni ? LLVMBuildTrunc(b, c->xz, kb->t_i8, "") : LLVMConstInt(kb->t_i16, 0, 0);
  hc_loop pl, ol;
  LLVMValueRef po = hc_loop_begin(kb, &pl, hc_kb_i64(kb, 0), hc_kb_i64(kb, Pout), "po");
  LLVMValueRef ok = LLVMConstInt(kb->t_i1, 1, 0);
  LLVMValueRef idx = c->xch;
  for (int e = 0; e < el; ++e) {
    LLVMValueRef o = LLVMBuildUDiv(b, po, hc_kb_i64(kb, c->ostride[e] / OL), "");
    if (e > 0) o = LLVMBuildURem(b, o, hc_kb_i64(kb, p->out[e]), "");
    LLVMValueRef i = hc_kb_iadd(kb, LLVMBuildSub(b, hc_kb_imul(kb, o, hc_kb_i64(kb, p->s[e])), hc_kb_i64(kb, p->pb[e]), ""),
                                hc_kb_imul(kb, c->kv[e], hc_kb_i64(kb, p->d[e])));
    ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntULT, i, hc_kb_i64(kb, p->in[e]), ""), "");
    idx = hc_kb_iadd(kb, idx, hc_kb_imul(kb, i, hc_kb_i64(kb, c->instride[e])));
  }
  LLVMValueRef orow = hc_kb_iadd(kb, drow, hc_kb_imul(kb, po, hc_kb_i64(kb, G * OL)));
  /* Out-of-bounds rows (outer dims in the padding) read nothing. */
  LLVMValueRef hi_v = LLVMBuildSelect(b, ok, hc_kb_i64(kb, hi), hc_kb_i64(kb, lo), "");
  LLVMValueRef o = hc_loop_begin(kb, &ol, hc_kb_i64(kb, 0), hc_kb_i64(kb, lo), "z0");
  hc_kb_store(kb, et, c->dst, hc_kb_iadd(kb, orow, hc_kb_imul(kb, o, hc_kb_i64(kb, G))), zero16);
  hc_loop_end(kb, &ol);
  o = hc_loop_begin(kb, &ol, hc_kb_i64(kb, lo), hi_v, "ow");
  LLVMValueRef si = hc_kb_iadd(kb, idx, hc_kb_iadd(kb, hc_kb_imul(kb, o, hc_kb_i64(kb, p->s[el])), hc_kb_i64(kb, off)));
  LLVMValueRef v = hc_kb_convert(kb, hc_kb_load(kb, xt, c->px, si), xt, HX_DTYPE_INT32);
  v = c->vnni ? LLVMBuildTrunc(b, v, kb->t_i8, "") : LLVMBuildTrunc(b, LLVMBuildSub(b, v, c->xz, ""), kb->t_i16, "");
  if (c->vnni && hc_dtype_is_signed(xt)) v = LLVMBuildXor(b, v, LLVMConstInt(kb->t_i8, 0x80, 0), "");
  hc_kb_store(kb, et, c->dst, hc_kb_iadd(kb, orow, hc_kb_imul(kb, o, hc_kb_i64(kb, G))), v);
  hc_loop_end(kb, &ol);
  o = hc_loop_begin(kb, &ol, hi_v, hc_kb_i64(kb, OL), "z1");
  hc_kb_store(kb, et, c->dst, hc_kb_iadd(kb, orow, hc_kb_imul(kb, o, hc_kb_i64(kb, G))), zero16);
  hc_loop_end(kb, &ol);
  hc_loop_end(kb, &pl);
  o = hc_loop_begin(kb, &ol, hc_kb_i64(kb, p->P), hc_kb_i64(kb, Pp), "pp");
  hc_kb_store(kb, et, c->dst, hc_kb_iadd(kb, drow, hc_kb_imul(kb, o, hc_kb_i64(kb, G))), zero16);
  hc_loop_end(kb, &ol);
}

/* Tap loops of spatial dim e (the last one unrolled). */
static void ci_taps(ci_cols* c, int e, LLVMValueRef tap) {
  hc_kb* kb = c->kb;
  const ci_plan* p = c->p;
  if (e == p->nd - 1) {
    for (int64_t kl = 0; kl < p->k[e]; ++kl)
      ci_pack_row(c, hc_kb_iadd(kb, hc_kb_imul(kb, tap, hc_kb_i64(kb, p->k[e])), hc_kb_i64(kb, kl)), kl);
    return;
  }
  hc_loop kl;
  LLVMValueRef k = hc_loop_begin(kb, &kl, hc_kb_i64(kb, 0), hc_kb_i64(kb, p->k[e]), "tap");
  c->kv[e] = k;
  ci_taps(c, e + 1, hc_kb_iadd(kb, hc_kb_imul(kb, tap, hc_kb_i64(kb, p->k[e])), k));
  hc_loop_end(kb, &kl);
}

/* What both K-quad packing kernels open with: the kernel, one task per
 * (image, group, block of *QB quads of the Q), x, the packed destination at
 * dst_off in the workspace, and the zero point zx as an int32. */
static hx_status_t ci_pack_begin(hc_lower_ctx* lc, const hc_node* n, const ci_plan* p, uint64_t dst_off, int64_t Q,
                                 hc_kb* kb, LLVMValueRef* px, LLVMValueRef* dst, LLVMValueRef* xz, int64_t* QB,
                                 int64_t* nqb) {
  *QB = 4096 / ci_pp(p);
  if (*QB < 1) *QB = 1;
  *nqb = (Q + *QB - 1) / *QB;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "pack_x", p->N * p->G * *nqb, kb));
  *px = hc_kb_ptr(kb, p->x);
  *dst = LLVMBuildGEP2(kb->b, kb->t_i8, hc_kb_workspace(kb), (LLVMValueRef[]){hc_kb_i64(kb, (int64_t)dst_off)}, 1, "");
  *xz = zero_point_i32(kb, p->xz, false);
  return HX_OK;
}

/* Four VL-byte rows interleaved byte by byte into 4*VL bytes (byte 4j + r
 * is row r's byte j), from lo = rows 0,1 and hi = rows 2,3 (2*VL bytes
 * each). For 16-byte rows: the rows side by side, a dword transpose across
 * the 128-bit lanes (vpermd: lane L takes dword L of every row), then a
 * 4 x 4 byte transpose inside each lane (vpshufb). As one 64-byte shuffle
 * LLVM lowered it to ten unpacks and inserts, and the K-quad packers were
 * bound by them (quant_resnet18's 3x3 im2col: 180 -> 130 us). Targets of
 * the VNNI byte path have both instructions; narrower rows, or an LLVM
 * without the intrinsics, take the one shuffle. */
static LLVMValueRef quads_mix(hc_kb* kb, LLVMValueRef lo, LLVMValueRef hi, unsigned VL) {
  LLVMBuilderRef b = kb->b;
  LLVMTypeRef v16i32 = LLVMVectorType(kb->t_i32, 16), v64i8 = LLVMVectorType(kb->t_i8, 64);
  if (VL == 16) {
    LLVMValueRef cat64[64], dperm[16], bperm[64];
    for (unsigned i = 0; i < 64; ++i) cat64[i] = LLVMConstInt(kb->t_i32, i, 0);
    for (unsigned L = 0; L < 4; ++L)
      for (unsigned r = 0; r < 4; ++r) dperm[4 * L + r] = LLVMConstInt(kb->t_i32, 4 * r + L, 0);
    for (unsigned L = 0; L < 4; ++L)
      for (unsigned q = 0; q < 4; ++q)
        for (unsigned r = 0; r < 4; ++r) bperm[16 * L + 4 * q + r] = LLVMConstInt(kb->t_i8, 4 * r + q, 0);
    LLVMValueRef z = LLVMBuildBitCast(b, LLVMBuildShuffleVector(b, lo, hi, LLVMConstVector(cat64, 64), ""), v16i32, "");
    LLVMValueRef t =
        call_fixed_intrinsic(kb, "llvm.x86.avx512.permvar.si.512", (LLVMValueRef[]){z, LLVMConstVector(dperm, 16)}, 2);
    LLVMValueRef v = t ? call_fixed_intrinsic(kb, "llvm.x86.avx512.pshuf.b.512",
                                              (LLVMValueRef[]){LLVMBuildBitCast(b, t, v64i8, ""), LLVMConstVector(bperm, 64)}, 2)
                       : NULL;
    if (v) return LLVMBuildBitCast(b, v, v64i8, "");
  }
  LLVMValueRef mix[64];
  for (unsigned j = 0; j < VL; ++j)
    for (unsigned r = 0; r < 4; ++r) mix[4 * j + r] = LLVMConstInt(kb->t_i32, (r / 2) * 2 * VL + (r % 2) * VL + j, 0);
  return LLVMBuildShuffleVector(b, lo, hi, LLVMConstVector(mix, 4 * VL), "");
}

/* The VNNI K-quad packing of a pointwise convolution (1x1 kernel, stride
 * 1, no padding: the panel's positions are the input plane's) whose group
 * has whole quads of channels: four input rows interleaved byte by byte.
 * 16 positions at a time, the four rows' bytes are loaded as vectors and
 * one shuffle interleaves them into 64 output bytes; ci_pack_row's general
 * path would store every byte on its own (4 stores of one byte per 4
 * bytes). Task: (image, group, block of quads); the last positions go one
 * at a time and P..Pp get the zero point zx'. */
static bool ci_pointwise_quads(const ci_plan* p) {
  if (p->Cg % 4 || p->P != p->inplane || p->P < 16) return false;
  for (int e = 0; e < p->nd; ++e)
    if (p->k[e] != 1 || p->s[e] != 1 || p->pb[e] || p->pe[e]) return false;
  return true;
}

/* Interleaves 16 positions of four channel rows of x (16 bytes each, from
 * element x0 of px, rows rstride apart) into 64 bytes of quads at byte d0
 * of dst, offset to unsigned for a signed x. */
static void ci_store_quads16(hc_kb* kb, LLVMValueRef px, LLVMValueRef x0, int64_t rstride, LLVMValueRef dst,
                             LLVMValueRef d0, bool sgn) {
  LLVMBuilderRef b = kb->b;
  LLVMTypeRef v16 = LLVMVectorType(kb->t_i8, 16);
  LLVMValueRef cat[32], rows[4];
  for (unsigned i = 0; i < 32; ++i) cat[i] = LLVMConstInt(kb->t_i32, i, 0);
  for (int r = 0; r < 4; ++r) {
    LLVMValueRef a = hc_kb_gep(kb, HX_DTYPE_UINT8, px, hc_kb_iadd(kb, x0, hc_kb_i64(kb, r * rstride)));
    rows[r] = LLVMBuildLoad2(b, v16, a, "");
    LLVMSetAlignment(rows[r], 1);
  }
  LLVMValueRef lo = LLVMBuildShuffleVector(b, rows[0], rows[1], LLVMConstVector(cat, 32), "");
  LLVMValueRef hi = LLVMBuildShuffleVector(b, rows[2], rows[3], LLVMConstVector(cat, 32), "");
  LLVMValueRef v = quads_mix(kb, lo, hi, 16);
  if (sgn) v = LLVMBuildXor(b, v, hc_kb_splat(kb, LLVMConstInt(kb->t_i8, 0x80, 0), 64), "");
  LLVMSetAlignment(LLVMBuildStore(b, v, hc_kb_gep(kb, HX_DTYPE_UINT8, dst, d0)), 1);
}

static hx_status_t ci_pack_quads_1x1(hc_lower_ctx* lc, const hc_node* n, const ci_plan* p, uint64_t dst_off) {
  int64_t P = p->P, Pp = ci_pp(p), Q = p->Cg / 4;
  int64_t QB, nqb, PV = P & ~(int64_t)15;
  hc_kb kb;
  LLVMValueRef px, dst, xz;
  HX_RETURN_IF_ERROR(ci_pack_begin(lc, n, p, dst_off, Q, &kb, &px, &dst, &xz, &QB, &nqb));
  LLVMBuilderRef b = kb.b;
  bool sgn = hc_dtype_is_signed(p->x->dtype);
  if (sgn) xz = LLVMBuildAdd(b, xz, hc_kb_i32(&kb, 128), "");
  LLVMValueRef zb = LLVMBuildTrunc(b, xz, kb.t_i8, "");
  hc_loop task, ql, pl, rl;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef ng = LLVMBuildUDiv(b, t, hc_kb_i64(&kb, nqb), "");
  LLVMValueRef q0 = hc_kb_imul(&kb, LLVMBuildURem(b, t, hc_kb_i64(&kb, nqb), ""), hc_kb_i64(&kb, QB));
  LLVMValueRef q1 = hc_kb_imin(&kb, hc_kb_iadd(&kb, q0, hc_kb_i64(&kb, QB)), hc_kb_i64(&kb, Q));
  LLVMValueRef xbase = hc_kb_imul(&kb, ng, hc_kb_i64(&kb, p->Cg * P));
  LLVMValueRef dbase = hc_kb_imul(&kb, ng, hc_kb_i64(&kb, Q * 4 * Pp));
  LLVMValueRef q = hc_loop_begin(&kb, &ql, q0, q1, "q");
  LLVMValueRef xq = hc_kb_iadd(&kb, xbase, hc_kb_imul(&kb, q, hc_kb_i64(&kb, 4 * P)));
  LLVMValueRef dq = hc_kb_iadd(&kb, dbase, hc_kb_imul(&kb, q, hc_kb_i64(&kb, 4 * Pp)));
  LLVMValueRef pos = hc_loop_begin_step(&kb, &pl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, PV), 16, "pv");
  LLVMValueRef dpos = hc_kb_iadd(&kb, dq, hc_kb_imul(&kb, pos, hc_kb_i64(&kb, 4)));
  ci_store_quads16(&kb, px, hc_kb_iadd(&kb, xq, pos), P, dst, dpos, sgn);
  hc_loop_end(&kb, &pl);
  /* the last P % 16 positions, then the padding up to Pp */
  pos = hc_loop_begin(&kb, &pl, hc_kb_i64(&kb, PV), hc_kb_i64(&kb, Pp), "pt");
  LLVMValueRef in = LLVMBuildICmp(b, LLVMIntULT, pos, hc_kb_i64(&kb, P), "");
  LLVMValueRef pin = LLVMBuildSelect(b, in, pos, hc_kb_i64(&kb, 0), "");
  LLVMValueRef r = hc_loop_begin(&kb, &rl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, 4), "r");
  LLVMValueRef xv = hc_kb_load(&kb, HX_DTYPE_UINT8, px, hc_kb_iadd(&kb, xq, hc_kb_iadd(&kb, pin, hc_kb_imul(&kb, r, hc_kb_i64(&kb, P)))));
  xv = LLVMBuildTrunc(b, xv, kb.t_i8, "");
  if (sgn) xv = LLVMBuildXor(b, xv, LLVMConstInt(kb.t_i8, 0x80, 0), "");
  xv = LLVMBuildSelect(b, in, xv, zb, "");
  hc_kb_store(&kb, HX_DTYPE_UINT8, dst, hc_kb_iadd(&kb, dq, hc_kb_iadd(&kb, hc_kb_imul(&kb, pos, hc_kb_i64(&kb, 4)), r)), xv);
  hc_loop_end(&kb, &rl);
  hc_loop_end(&kb, &pl);
  hc_loop_end(&kb, &ql);
  hc_loop_end(&kb, &task);
  double elems = (double)p->N * (double)p->G * (double)Pp * (double)p->Cg;
  hc_kb_end(&kb, elems, 2.0 * elems);
  return HX_OK;
}

/* Stores zx' (the zero point's byte, four to a position) at positions
 * [from, to) of the copy from byte offset `row` of dst. */
static void ci_taps_fill(hc_kb* kb, LLVMValueRef dst, LLVMValueRef row, LLVMValueRef from, LLVMValueRef to,
                         LLVMValueRef zq) {
  hc_loop fl;
  LLVMValueRef j = hc_loop_begin(kb, &fl, from, to, "fill");
  LLVMValueRef off = hc_kb_iadd(kb, row, hc_kb_imul(kb, j, hc_kb_i64(kb, 4)));
  LLVMValueRef a = LLVMBuildGEP2(kb->b, kb->t_i8, dst, &off, 1, "");
  LLVMSetAlignment(LLVMBuildStore(kb->b, zq, a), 1);
  hc_loop_end(kb, &fl);
}

/* The direct convolution's copy of x (ci_taps_geometry): per (image,
 * group) and quad of channels, the padded plane row by row, the padding
 * zx' and the interior four channel rows interleaved 16 positions at a
 * time (quads_mix), then the positions the last columns' vectors
 * read past the last plane. Tasks: (image, group, block of quads). */
static hx_status_t ci_pack_taps(hc_lower_ctx* lc, const hc_node* n, const ci_plan* p, const ci_taps_geo* g,
                                uint64_t dst_off) {
  int64_t H = p->in[0], W = p->in[1], WV = W & ~(int64_t)15;
  int64_t QB = 32768 / (g->PS * 4);
  if (QB < 1) QB = 1;
  if (g->C4 >= 4 && QB > (g->C4 + 3) / 4) QB = (g->C4 + 3) / 4; /* at least 4 tasks per image */
  int64_t nqb = (g->C4 + QB - 1) / QB;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "taps_x", p->N * p->G * nqb, &kb));
  LLVMBuilderRef b = kb.b;
  LLVMValueRef px = hc_kb_ptr(&kb, p->x);
  LLVMValueRef doff = hc_kb_i64(&kb, (int64_t)dst_off);
  LLVMValueRef dst = LLVMBuildGEP2(b, kb.t_i8, hc_kb_workspace(&kb), &doff, 1, "");
  bool sgn = hc_dtype_is_signed(p->x->dtype);
  LLVMValueRef zb = LLVMBuildAnd(b, zero_point_i32(&kb, p->xz, sgn), hc_kb_i32(&kb, 255), "");
  LLVMValueRef zq = LLVMBuildMul(b, zb, hc_kb_i32(&kb, 0x01010101), "");
  hc_loop task, ql, hl, vl, tl, rl;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef ng = LLVMBuildUDiv(b, t, hc_kb_i64(&kb, nqb), "");
  LLVMValueRef qb = LLVMBuildURem(b, t, hc_kb_i64(&kb, nqb), "");
  LLVMValueRef q0 = hc_kb_imul(&kb, qb, hc_kb_i64(&kb, QB));
  LLVMValueRef q1 = hc_kb_imin(&kb, hc_kb_iadd(&kb, q0, hc_kb_i64(&kb, QB)), hc_kb_i64(&kb, g->C4));
  LLVMValueRef xbase = hc_kb_imul(&kb, ng, hc_kb_i64(&kb, p->Cg * p->inplane));
  LLVMValueRef dbase = hc_kb_imul(&kb, ng, hc_kb_i64(&kb, g->bytes));
  LLVMValueRef q = hc_loop_begin(&kb, &ql, q0, q1, "q");
  LLVMValueRef xq = hc_kb_iadd(&kb, xbase, hc_kb_imul(&kb, q, hc_kb_i64(&kb, 4 * p->inplane)));
  LLVMValueRef dq = hc_kb_iadd(&kb, dbase, hc_kb_imul(&kb, q, hc_kb_i64(&kb, 4 * g->PS)));
  LLVMValueRef hy = hc_loop_begin(&kb, &hl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, g->Hp), "hy");
  LLVMValueRef drow = hc_kb_iadd(&kb, dq, hc_kb_imul(&kb, hy, hc_kb_i64(&kb, 4 * g->Wp)));
  LLVMValueRef iy = LLVMBuildSub(b, hy, hc_kb_i64(&kb, p->pb[0]), "");
  hc_if inside;
  LLVMValueRef in_x = LLVMBuildICmp(b, LLVMIntULT, iy, hc_kb_i64(&kb, H), "");
  hc_if_begin(&kb, &inside, in_x);
  {
    LLVMValueRef xrow = hc_kb_iadd(&kb, xq, hc_kb_imul(&kb, iy, hc_kb_i64(&kb, W)));
    LLVMValueRef dint = hc_kb_iadd(&kb, drow, hc_kb_i64(&kb, 4 * p->pb[1]));
    ci_taps_fill(&kb, dst, drow, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, p->pb[1]), zq);
    LLVMValueRef ix = hc_loop_begin_step(&kb, &vl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, WV), 16, "ixv");
    ci_store_quads16(&kb, px, hc_kb_iadd(&kb, xrow, ix), p->inplane, dst,
                     hc_kb_iadd(&kb, dint, hc_kb_imul(&kb, ix, hc_kb_i64(&kb, 4))), sgn);
    hc_loop_end(&kb, &vl);
    /* the last W % 16 positions one byte at a time */
    ix = hc_loop_begin(&kb, &tl, hc_kb_i64(&kb, WV), hc_kb_i64(&kb, W), "ixt");
    LLVMValueRef r = hc_loop_begin(&kb, &rl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, 4), "r");
    LLVMValueRef xi = hc_kb_iadd(&kb, xrow, hc_kb_iadd(&kb, ix, hc_kb_imul(&kb, r, hc_kb_i64(&kb, p->inplane))));
    LLVMValueRef xv = hc_kb_load(&kb, HX_DTYPE_UINT8, px, xi);
    xv = LLVMBuildTrunc(b, xv, kb.t_i8, "");
    if (sgn) xv = LLVMBuildXor(b, xv, LLVMConstInt(kb.t_i8, 0x80, 0), "");
    LLVMValueRef dtail = hc_kb_iadd(&kb, dint, hc_kb_iadd(&kb, hc_kb_imul(&kb, ix, hc_kb_i64(&kb, 4)), r));
    hc_kb_store(&kb, HX_DTYPE_UINT8, dst, dtail, xv);
    hc_loop_end(&kb, &rl);
    hc_loop_end(&kb, &tl);
    ci_taps_fill(&kb, dst, drow, hc_kb_i64(&kb, p->pb[1] + W), hc_kb_i64(&kb, g->Wp), zq);
  }
  hc_if_end(&kb, &inside);
  hc_if pad;
  hc_if_begin(&kb, &pad, LLVMBuildNot(b, in_x, ""));
  ci_taps_fill(&kb, dst, drow, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, g->Wp), zq);
  hc_if_end(&kb, &pad);
  hc_loop_end(&kb, &hl);
  hc_loop_end(&kb, &ql);
  /* what the last columns read past the planes: written, so that no
   * product reads memory nothing wrote (memory checkers) */
  hc_if last;
  hc_if_begin(&kb, &last, LLVMBuildICmp(b, LLVMIntEQ, qb, hc_kb_i64(&kb, nqb - 1), ""));
  ci_taps_fill(&kb, dst, dbase, hc_kb_i64(&kb, g->C4 * g->PS), hc_kb_i64(&kb, g->bytes / 4), zq);
  hc_if_end(&kb, &last);
  hc_loop_end(&kb, &task);
  double elems = (double)p->N * (double)p->G * (double)g->C4 * 4.0 * (double)g->PS;
  hc_kb_end(&kb, elems, 2.0 * elems);
  return HX_OK;
}

/* A direct convolution (ci_use_taps, W packed in HC_PACK_TAP_QUADS_S8):
 * the copy of x, then the VNNI product over it, d's requantisation set up
 * by the caller. */
static hx_status_t ci_emit_taps(hc_lower_ctx* lc, const hc_node* n, const ci_plan* p, ig_prod* d, uint64_t x_off) {
  ci_taps_geo g;
  if (!ci_taps_geometry(p, &g))
    return hc_node_error(n, HX_STATUS_INTERNAL, "weights packed for a direct convolution the geometry does not allow");
  d->vnni = true;
  d->w_direct = true;
  d->w = p->w_taps;
  d->w_kc = d->w_ld = d->Kp = p->Kc;
  d->w_os[0] = 0, d->w_os[1] = p->Mg * p->Kc;
  d->Pt = g.cols;
  d->Pp = round_up(g.cols, IG_VMAX);
  d->y_pitch = g.Wp, d->y_ow = g.OW;
  d->x_os[0] = p->G * g.bytes, d->x_os[1] = g.bytes;
  d->x_ws_offset = x_off;
  d->xz = p->xz, d->x_signed = hc_dtype_is_signed(p->x->dtype);
  d->rs_os[1] = p->Mg;
  if (d->L == 32 && g.cols >= 128) {
    /* Its X vectors start at any 4-byte offset (a tap's kx*dx), most of
     * them across two cache lines: a tile of 8 rows x 3 vectors loads one
     * per 8 vpdpbusd where 4 x 4 loads one per 4 (an int8 ResNet-18's 3x3
     * layers on 56x56-14x14 planes 4-13% faster). 7x7 planes (63 columns)
     * keep one group of 4 vectors. */
    d->MR = 8;
    d->NR = 3;
  }
  /* K quad (c4, tap) of W's rows reads quad plane c4 at the tap's offset */
  int64_t T = p->ktot, Kq = p->Kc / 4;
  int64_t* offs = malloc(sizeof(int64_t) * (size_t)Kq);
  if (!offs) return hc_node_error(n, HX_STATUS_OUT_OF_MEMORY, "out of memory (quad offsets)");
  for (int64_t c4 = 0; c4 < g.C4; ++c4)
    for (int64_t tap = 0; tap < T; ++tap) {
      int64_t ky = tap / p->k[1], kx = tap % p->k[1];
      offs[c4 * T + tap] = (c4 * g.PS + ky * p->d[0] * g.Wp + kx * p->d[1]) * 4;
    }
  d->x_kq_off = offs;
  hx_status_t st = ci_pack_taps(lc, n, p, &g, x_off);
  if (st == HX_OK) st = ig_emit_product(lc, n, d, n->outputs[0]);
  free(offs);
  d->x_kq_off = NULL;
  return st;
}

/* The task and K-group loops that both grouped im2col packers open
 * (ci_pack_quads_2d: G = 4 rows of K, ci_pack_pairs_2d: G = 2): task
 * (image, group, block of QB groups), group q, and per row r of the group
 * its input plane (rbase), tap row and column offsets (roff, coff) and
 * whether it is inside K (kin; a row past Kc reads channel 0's plane and
 * must be masked). dq: the group's first element in the packed panel. The
 * caller ends the loops (ql, then task). */
typedef struct ci_group_rows {
  LLVMValueRef dq, rbase[4], roff[4], coff[4], kin[4];
} ci_group_rows;

static void ci_group_begin(hc_kb* kb, const ci_plan* p, int G, int64_t Q, int64_t QB, int64_t nqb, hc_loop* task,
                           hc_loop* ql, ci_group_rows* g) {
  LLVMBuilderRef b = kb->b;
  int64_t Pp = ci_pp(p), KW = p->k[1];
  LLVMValueRef t = hc_kb_task_loop_begin(kb, task);
  LLVMValueRef ng = LLVMBuildUDiv(b, t, hc_kb_i64(kb, nqb), "");
  LLVMValueRef q0 = hc_kb_imul(kb, LLVMBuildURem(b, t, hc_kb_i64(kb, nqb), ""), hc_kb_i64(kb, QB));
  LLVMValueRef q1 = hc_kb_imin(kb, hc_kb_iadd(kb, q0, hc_kb_i64(kb, QB)), hc_kb_i64(kb, Q));
  LLVMValueRef xbase = hc_kb_imul(kb, ng, hc_kb_i64(kb, p->Cg * p->inplane));
  LLVMValueRef dbase = hc_kb_imul(kb, ng, hc_kb_i64(kb, Q * G * Pp));
  LLVMValueRef q = hc_loop_begin(kb, ql, q0, q1, "q");
  g->dq = hc_kb_iadd(kb, dbase, hc_kb_imul(kb, q, hc_kb_i64(kb, G * Pp)));
  for (int r = 0; r < G; ++r) {
    LLVMValueRef k = hc_kb_iadd(kb, hc_kb_imul(kb, q, hc_kb_i64(kb, G)), hc_kb_i64(kb, r));
    g->kin[r] = LLVMBuildICmp(b, LLVMIntULT, k, hc_kb_i64(kb, p->Kc), "");
    k = LLVMBuildSelect(b, g->kin[r], k, hc_kb_i64(kb, 0), "");
    LLVMValueRef c = LLVMBuildUDiv(b, k, hc_kb_i64(kb, p->ktot), "");
    LLVMValueRef tap = LLVMBuildURem(b, k, hc_kb_i64(kb, p->ktot), "");
    LLVMValueRef kh = LLVMBuildUDiv(b, tap, hc_kb_i64(kb, KW), ""), kw = LLVMBuildURem(b, tap, hc_kb_i64(kb, KW), "");
    g->rbase[r] = hc_kb_iadd(kb, xbase, hc_kb_imul(kb, c, hc_kb_i64(kb, p->inplane)));
    g->roff[r] = LLVMBuildSub(b, hc_kb_imul(kb, kh, hc_kb_i64(kb, p->d[0])), hc_kb_i64(kb, p->pb[0]), "");
    g->coff[r] = LLVMBuildSub(b, hc_kb_imul(kb, kw, hc_kb_i64(kb, p->d[1])), hc_kb_i64(kb, p->pb[1]), "");
  }
}

/* The VNNI K-quad packing (im2col) of any 2-D convolution with a column
 * stride of 1 or 2 and output rows of 4 or more columns: per quad of rows
 * k = c*ktot + (kh, kw) and output row, VL output columns at a time, each
 * of the four rows is one load of its input row segment, masked to the
 * row (taps in the padding, and rows past K, read zx), every other byte
 * kept for stride 2, and one shuffle interleaves the four into 4*VL
 * bytes; ci_pack_row stores every byte on its own. The last vector of a
 * row overlaps the one before (same bytes). Task: (image, group, block of
 * quads); positions P..Pp get zx'. */
static bool ci_quads_2d(const ci_plan* p) { return p->nd == 2 && p->s[1] <= 2 && p->out[1] >= 4 && p->P > 1; }

static hx_status_t ci_pack_quads_2d(hc_lower_ctx* lc, const hc_node* n, const ci_plan* p, uint64_t dst_off) {
  int64_t OH = p->out[0], OW = p->out[1], H = p->in[0], W = p->in[1], sw = p->s[1];
  int64_t P = p->P, Pp = ci_pp(p), Q = round_up(p->Kc, 4) / 4;
  int64_t VL = OW >= 16 ? 16 : OW >= 8 ? 8 : 4, nch = (OW + VL - 1) / VL;
  int64_t used = (VL - 1) * sw + 1;
  unsigned R = used <= 4 ? 4 : used <= 8 ? 8 : used <= 16 ? 16 : 32;
  int64_t QB, nqb;
  hc_kb kb;
  LLVMValueRef px, dst, xz;
  HX_RETURN_IF_ERROR(ci_pack_begin(lc, n, p, dst_off, Q, &kb, &px, &dst, &xz, &QB, &nqb));
  LLVMBuilderRef b = kb.b;
  bool sgn = hc_dtype_is_signed(p->x->dtype);
  /* raw zero-point byte (loads' pass-through; the xor below makes it zx') */
  LLVMValueRef zb = LLVMBuildTrunc(b, xz, kb.t_i8, "");
  LLVMValueRef flip = LLVMConstInt(kb.t_i8, sgn ? 0x80 : 0, 0);
  LLVMTypeRef vr = LLVMVectorType(kb.t_i8, R);
  LLVMValueRef lane[32], even[16], cat[32];
  for (unsigned i = 0; i < R; ++i) lane[i] = LLVMConstInt(kb.t_i32, i < (unsigned)used ? i : 0x40000000u, 0);
  for (unsigned i = 0; i < (unsigned)VL; ++i) even[i] = LLVMConstInt(kb.t_i32, i * (unsigned)sw, 0);
  for (unsigned i = 0; i < 2 * (unsigned)VL; ++i) cat[i] = LLVMConstInt(kb.t_i32, i, 0);
  LLVMValueRef lanev = LLVMConstVector(lane, R), evenv = LLVMConstVector(even, (unsigned)VL);
  LLVMValueRef catm = LLVMConstVector(cat, 2 * (unsigned)VL);
  LLVMValueRef Wv = hc_kb_splat(&kb, hc_kb_i32(&kb, (int32_t)W), R), zv = hc_kb_splat(&kb, zb, R);
  LLVMValueRef flipv = hc_kb_splat(&kb, flip, 4 * (unsigned)VL);
  hc_loop task, ql, hl, cl, pl, rl;
  ci_group_rows g;
  ci_group_begin(&kb, p, 4, Q, QB, nqb, &task, &ql, &g);
  LLVMValueRef dq = g.dq, *rbase = g.rbase, *roff = g.roff, *coff = g.coff, *kin = g.kin;
  LLVMValueRef oh = hc_loop_begin(&kb, &hl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, OH), "oh");
  LLVMValueRef rowp[4], rin[4];
  for (int r = 0; r < 4; ++r) {
    LLVMValueRef ih = hc_kb_iadd(&kb, hc_kb_imul(&kb, oh, hc_kb_i64(&kb, p->s[0])), roff[r]);
    rin[r] = hc_kb_splat(&kb, LLVMBuildAnd(b, kin[r], LLVMBuildICmp(b, LLVMIntULT, ih, hc_kb_i64(&kb, H), ""), ""), R);
    rowp[r] = hc_kb_iadd(&kb, rbase[r], hc_kb_imul(&kb, ih, hc_kb_i64(&kb, W)));
  }
  LLVMValueRef ch = hc_loop_begin(&kb, &cl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, nch), "ch");
  LLVMValueRef ow0 = hc_kb_imin(&kb, hc_kb_imul(&kb, ch, hc_kb_i64(&kb, VL)), hc_kb_i64(&kb, OW - VL));
  LLVMValueRef v[4];
  for (int r = 0; r < 4; ++r) {
    LLVMValueRef col0 = hc_kb_iadd(&kb, hc_kb_imul(&kb, ow0, hc_kb_i64(&kb, sw)), coff[r]);
    LLVMValueRef cols = LLVMBuildAdd(b, hc_kb_splat(&kb, LLVMBuildTrunc(b, col0, kb.t_i32, ""), R), lanev, "");
    LLVMValueRef mask = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntULT, cols, Wv, ""), rin[r], "");
    LLVMValueRef idx = hc_kb_iadd(&kb, rowp[r], col0);
    LLVMValueRef ld = hc_kb_masked_load_or(&kb, vr, LLVMBuildGEP2(b, kb.t_i8, px, &idx, 1, ""), 1, mask, zv);
    v[r] = LLVMBuildShuffleVector(b, ld, LLVMGetPoison(vr), evenv, "");
  }
  LLVMValueRef lo = LLVMBuildShuffleVector(b, v[0], v[1], catm, "");
  LLVMValueRef hi = LLVMBuildShuffleVector(b, v[2], v[3], catm, "");
  LLVMValueRef out = LLVMBuildXor(b, quads_mix(&kb, lo, hi, (unsigned)VL), flipv, "");
  LLVMValueRef pos = hc_kb_iadd(&kb, hc_kb_imul(&kb, oh, hc_kb_i64(&kb, OW)), ow0);
  LLVMValueRef st = LLVMBuildStore(b, out, hc_kb_gep(&kb, HX_DTYPE_UINT8, dst, hc_kb_iadd(&kb, dq, hc_kb_imul(&kb, pos, hc_kb_i64(&kb, 4)))));
  LLVMSetAlignment(st, 1);
  hc_loop_end(&kb, &cl);
  hc_loop_end(&kb, &hl);
  /* positions P..Pp: zx' */
  LLVMValueRef zq = LLVMBuildXor(b, zb, flip, "");
  LLVMValueRef pp = hc_loop_begin(&kb, &pl, hc_kb_i64(&kb, P), hc_kb_i64(&kb, Pp), "pp");
  LLVMValueRef r = hc_loop_begin(&kb, &rl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, 4), "r");
  hc_kb_store(&kb, HX_DTYPE_UINT8, dst, hc_kb_iadd(&kb, dq, hc_kb_iadd(&kb, hc_kb_imul(&kb, pp, hc_kb_i64(&kb, 4)), r)), zq);
  hc_loop_end(&kb, &rl);
  hc_loop_end(&kb, &pl);
  hc_loop_end(&kb, &ql);
  hc_loop_end(&kb, &task);
  double elems = (double)p->N * (double)p->G * (double)Pp * (double)(Q * 4);
  hc_kb_end(&kb, elems, 2.0 * elems);
  return HX_OK;
}

/* The int16 K-pair packing (im2col) of a 2-D convolution with a column
 * stride of 1 or 2 and output rows of 8 or more columns, the int16
 * counterpart of ci_pack_quads_2d: per pair of rows k = c*ktot + (kh, kw)
 * (each its own channel and tap; a K past Kc reads nothing) and output
 * row, VL output columns at a time, each row's input segment is one
 * vector load, every other byte kept for stride 2, widened to int16 minus
 * zx, and one shuffle interleaves the two rows into 2*VL int16. The loads
 * read a stack copy of the input row between margins of zx (zx - zx = 0
 * where a tap reads the padding), or a row of zx for a padding row, so
 * every load is a plain one: masked byte loads, which AVX2 lacks, ran lane
 * by lane and made a stride-2 layer's packing 3.6 times slower than one
 * element at a time. The last vector of a row overlaps the one before
 * (same values). ci_pack_row, one element per store, took as long as a
 * quarter of the product (an int8 ResNet-18's 3x3 layers). Task: (image,
 * group, block of pairs); positions P..Pp get zeros. */
#define CI_PAIRS_MAX_ROW 4096
/* The pair packer's geometry: VL output columns per vector, R input bytes
 * per load, RB bytes per stack row (the copy at pb[1] and the last load's
 * reach). */
typedef struct ci_pairs_geom {
  int64_t VL, RB;
  unsigned R;
} ci_pairs_geom;
static ci_pairs_geom ci_pairs_geometry(const ci_plan* p) {
  ci_pairs_geom g;
  g.VL = p->out[1] >= 16 ? 16 : 8;
  int64_t used = (g.VL - 1) * p->s[1] + 1;
  g.R = used <= 8 ? 8 : used <= 16 ? 16 : 32;
  int64_t need = (p->out[1] - g.VL) * p->s[1] + (p->k[1] - 1) * p->d[1] + (int64_t)g.R;
  int64_t row = p->pb[1] + p->in[1];
  g.RB = round_up(need > row ? need : row, 32);
  return g;
}
static bool ci_pairs_2d(const ci_plan* p) {
  if (p->nd != 2 || p->s[1] > 2 || p->out[1] < 8 || p->P <= 1) return false;
  return ci_pairs_geometry(p).RB <= CI_PAIRS_MAX_ROW;
}

static hx_status_t ci_pack_pairs_2d(hc_lower_ctx* lc, const hc_node* n, const ci_plan* p, uint64_t dst_off) {
  int64_t OH = p->out[0], OW = p->out[1], H = p->in[0], W = p->in[1], sw = p->s[1];
  int64_t P = p->P, Pp = ci_pp(p), Q = ci_kp(p) / 2;
  ci_pairs_geom geo = ci_pairs_geometry(p);
  int64_t VL = geo.VL, RB = geo.RB, nch = (OW + VL - 1) / VL;
  unsigned R = geo.R;
  int64_t QB, nqb;
  hc_kb kb;
  LLVMValueRef px, dst, xz;
  HX_RETURN_IF_ERROR(ci_pack_begin(lc, n, p, dst_off, Q, &kb, &px, &dst, &xz, &QB, &nqb));
  LLVMBuilderRef b = kb.b;
  bool sgn = hc_dtype_is_signed(p->x->dtype);
  LLVMTypeRef vr = LLVMVectorType(kb.t_i8, R), vw = LLVMVectorType(kb.t_i16, (unsigned)VL);
  LLVMValueRef even[16], mix[32];
  for (unsigned i = 0; i < (unsigned)VL; ++i) even[i] = LLVMConstInt(kb.t_i32, i * (unsigned)sw, 0);
  for (unsigned j = 0; j < (unsigned)VL; ++j)
    for (unsigned r = 0; r < 2; ++r) mix[2 * j + r] = LLVMConstInt(kb.t_i32, r * (unsigned)VL + j, 0);
  LLVMValueRef evenv = LLVMConstVector(even, (unsigned)VL);
  LLVMValueRef mixm = LLVMConstVector(mix, 2 * (unsigned)VL);
  LLVMValueRef zb = LLVMBuildTrunc(b, xz, kb.t_i8, "");
  LLVMValueRef zw = hc_kb_splat(&kb, LLVMBuildTrunc(b, xz, kb.t_i16, ""), (unsigned)VL);
  /* rows 0, 1 (copies of input rows at offset pb[1]) and a row of zx */
  LLVMValueRef rowbuf = hc_kb_alloca(&kb, LLVMArrayType2(kb.t_i8, (uint64_t)(3 * RB)), "rows");
  LLVMSetAlignment(rowbuf, 32);
  LLVMBuildMemSet(b, rowbuf, zb, hc_kb_i64(&kb, 3 * RB), 32);
  hc_loop task, ql, hl, cl, pl;
  ci_group_rows g;
  ci_group_begin(&kb, p, 2, Q, QB, nqb, &task, &ql, &g);
  LLVMValueRef dq = g.dq, *rbase = g.rbase, *roff = g.roff, *coff = g.coff, *kin = g.kin;
  LLVMValueRef oh = hc_loop_begin(&kb, &hl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, OH), "oh");
  LLVMValueRef rowsrc[2];
  for (int r = 0; r < 2; ++r) {
    LLVMValueRef ih = hc_kb_iadd(&kb, hc_kb_imul(&kb, oh, hc_kb_i64(&kb, p->s[0])), roff[r]);
    LLVMValueRef rin = LLVMBuildAnd(b, kin[r], LLVMBuildICmp(b, LLVMIntULT, ih, hc_kb_i64(&kb, H), ""), "");
    LLVMValueRef rowp = hc_kb_iadd(&kb, rbase[r], hc_kb_imul(&kb, ih, hc_kb_i64(&kb, W)));
    hc_if gi;
    hc_if_begin(&kb, &gi, rin);
    LLVMValueRef at = hc_kb_i64(&kb, r * RB + p->pb[1]);
    hc_kb_memcpy(&kb, LLVMBuildGEP2(b, kb.t_i8, rowbuf, &at, 1, ""), LLVMBuildGEP2(b, kb.t_i8, px, &rowp, 1, ""),
                 hc_kb_i64(&kb, W));
    hc_if_end(&kb, &gi);
    /* buffer offset of input column 0: the copy, or the zx row */
    rowsrc[r] = LLVMBuildSelect(b, rin, hc_kb_i64(&kb, r * RB + p->pb[1]), hc_kb_i64(&kb, 2 * RB + p->pb[1]), "");
  }
  LLVMValueRef ch = hc_loop_begin(&kb, &cl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, nch), "ch");
  LLVMValueRef ow0 = hc_kb_imin(&kb, hc_kb_imul(&kb, ch, hc_kb_i64(&kb, VL)), hc_kb_i64(&kb, OW - VL));
  LLVMValueRef v[2];
  for (int r = 0; r < 2; ++r) {
    LLVMValueRef col0 = hc_kb_iadd(&kb, hc_kb_imul(&kb, ow0, hc_kb_i64(&kb, sw)), coff[r]);
    LLVMValueRef idx = hc_kb_iadd(&kb, rowsrc[r], col0);
    LLVMValueRef ld = LLVMBuildLoad2(b, vr, LLVMBuildGEP2(b, kb.t_i8, rowbuf, &idx, 1, ""), "");
    LLVMSetAlignment(ld, 1);
    LLVMValueRef bytes = LLVMBuildShuffleVector(b, ld, LLVMGetPoison(vr), evenv, "");
    LLVMValueRef wide = sgn ? LLVMBuildSExt(b, bytes, vw, "") : LLVMBuildZExt(b, bytes, vw, "");
    v[r] = LLVMBuildSub(b, wide, zw, "");
  }
  LLVMValueRef out = LLVMBuildShuffleVector(b, v[0], v[1], mixm, "");
  LLVMValueRef pos = hc_kb_iadd(&kb, hc_kb_imul(&kb, oh, hc_kb_i64(&kb, OW)), ow0);
  LLVMValueRef st =
      LLVMBuildStore(b, out, hc_kb_gep(&kb, HX_DTYPE_INT16, dst, hc_kb_iadd(&kb, dq, hc_kb_imul(&kb, pos, hc_kb_i64(&kb, 2)))));
  LLVMSetAlignment(st, 2);
  hc_loop_end(&kb, &cl);
  hc_loop_end(&kb, &hl);
  /* positions P..Pp: zeros (both rows of the pair) */
  LLVMValueRef pp = hc_loop_begin(&kb, &pl, hc_kb_i64(&kb, 2 * P), hc_kb_i64(&kb, 2 * Pp), "pp");
  hc_kb_store(&kb, HX_DTYPE_INT16, dst, hc_kb_iadd(&kb, dq, pp), LLVMConstInt(kb.t_i16, 0, 0));
  hc_loop_end(&kb, &pl);
  hc_loop_end(&kb, &ql);
  hc_loop_end(&kb, &task);
  double elems = (double)p->N * (double)p->G * (double)Pp * (double)(2 * Q);
  hc_kb_end(&kb, elems, 3.0 * elems);
  return HX_OK;
}

/* Packs x into the K-pair panels of the product (see ig_prod): task
 * (image, group, block of channels); row k = c*ktot + tap of panel (n, g)
 * holds x(n, g*Cg + c, pos*stride - pad + tap*dilation) - x_zero_point for
 * every output position, 0 where the tap falls in the padding; an odd K's
 * last row is 0. */
static hx_status_t ci_pack_x(hc_lower_ctx* lc, const hc_node* n, const ci_plan* p, uint64_t dst_off, bool vnni) {
  if (vnni && ci_pointwise_quads(p)) return ci_pack_quads_1x1(lc, n, p, dst_off);
  if (vnni && ci_quads_2d(p)) return ci_pack_quads_2d(lc, n, p, dst_off);
  if (!vnni && ci_pairs_2d(p)) return ci_pack_pairs_2d(lc, n, p, dst_off);
  int64_t Kp = vnni ? round_up(p->Kc, 4) : ci_kp(p), Pp = ci_pp(p);
  int64_t CB = 16384 / (p->ktot * Pp);
  if (CB < 1) CB = 1;
  int64_t ncb = (p->Cg + CB - 1) / CB;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "pack_x", p->N * p->G * ncb, &kb));
  LLVMBuilderRef b = kb.b;
  ci_cols c;
  memset(&c, 0, sizeof c);
  c.kb = &kb;
  c.p = p;
  c.vnni = vnni;
  c.px = hc_kb_ptr(&kb, p->x);
  LLVMValueRef ws = hc_kb_workspace(&kb);
  c.dst = LLVMBuildGEP2(b, kb.t_i8, ws, (LLVMValueRef[]){hc_kb_i64(&kb, (int64_t)dst_off)}, 1, "");
  c.xz = zero_point_i32(&kb, p->xz, vnni && hc_dtype_is_signed(p->x->dtype));
  hc_strides(p->nd, p->in, c.instride);
  hc_strides(p->nd, p->out, c.ostride);
  hc_loop task, cl, pl;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef ng = LLVMBuildUDiv(b, t, hc_kb_i64(&kb, ncb), "");
  LLVMValueRef c0 = hc_kb_imul(&kb, LLVMBuildURem(b, t, hc_kb_i64(&kb, ncb), ""), hc_kb_i64(&kb, CB));
  LLVMValueRef c1 = hc_kb_imin(&kb, hc_kb_iadd(&kb, c0, hc_kb_i64(&kb, CB)), hc_kb_i64(&kb, p->Cg));
  /* (n*G + g) * Cg is the first input channel of the group in image n. */
  LLVMValueRef xbase = hc_kb_imul(&kb, ng, hc_kb_i64(&kb, p->Cg * p->inplane));
  c.dbase = hc_kb_imul(&kb, ng, hc_kb_i64(&kb, Kp * Pp));
  LLVMValueRef ch = hc_loop_begin(&kb, &cl, c0, c1, "c");
  c.xch = hc_kb_iadd(&kb, xbase, hc_kb_imul(&kb, ch, hc_kb_i64(&kb, p->inplane)));
  c.kbase = hc_kb_imul(&kb, ch, hc_kb_i64(&kb, p->ktot));
  ci_taps(&c, 0, hc_kb_i64(&kb, 0));
  hc_loop_end(&kb, &cl);
  if (p->Kc % 2 && !vnni) {
    hc_if last;
    hc_if_begin(&kb, &last, LLVMBuildICmp(b, LLVMIntEQ, c1, hc_kb_i64(&kb, p->Cg), ""));
    LLVMValueRef drow = hc_kb_iadd(&kb, c.dbase, hc_kb_i64(&kb, (p->Kc / 2) * 2 * Pp + 1));
    LLVMValueRef pos = hc_loop_begin(&kb, &pl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, Pp), "kpad");
    hc_kb_store(&kb, HX_DTYPE_INT16, c.dst, hc_kb_iadd(&kb, drow, hc_kb_imul(&kb, pos, hc_kb_i64(&kb, 2))),
                LLVMConstInt(kb.t_i16, 0, 0));
    hc_loop_end(&kb, &pl);
    hc_if_end(&kb, &last);
  }
  if (vnni && p->Kc % 4) {
    /* The quad's rows past K meet zero weights; they are written anyway so
     * that no product reads memory nothing wrote (memory checkers). */
    hc_if last;
    hc_if_begin(&kb, &last, LLVMBuildICmp(b, LLVMIntEQ, c1, hc_kb_i64(&kb, p->Cg), ""));
    for (int64_t k = p->Kc; k < Kp; ++k) {
      LLVMValueRef drow = hc_kb_iadd(&kb, c.dbase, hc_kb_i64(&kb, (k / 4) * 4 * Pp + k % 4));
      LLVMValueRef pos = hc_loop_begin(&kb, &pl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, Pp), "kpad");
      hc_kb_store(&kb, HX_DTYPE_UINT8, c.dst, hc_kb_iadd(&kb, drow, hc_kb_imul(&kb, pos, hc_kb_i64(&kb, 4))),
                  LLVMConstInt(kb.t_i8, 0, 0));
      hc_loop_end(&kb, &pl);
    }
    hc_if_end(&kb, &last);
  }
  hc_loop_end(&kb, &task);
  double elems = (double)p->N * (double)p->G * (double)Pp * (double)Kp;
  hc_kb_end(&kb, elems, 3.0 * elems);
  return HX_OK;
}

/* Depthwise (one input channel per group, 2-D): task (image, output
 * channel), an int32 tile of the output plane. The columns whose taps are
 * all in bounds take a vector path (VL columns, every tap's weight minus its
 * zero point times x minus x's zero point summed in registers, tap rows in
 * the padding skipped); the other columns add one tap at a time over its
 * compile-time range of valid outputs (padding contributes zx - zx = 0).
 * Then the plane is requantised (or stored, ConvInteger) as the product's
 * epilogue does. */
/* The depthwise byte path: uint8 x, int8 weights with zero point 0 and a
 * VNNI target with 128/256/512-bit forms (AVX512-VNNI + VL). Each kernel
 * row's taps go in quads (zero weights past the row's end): one vpdpbusd
 * per quad adds x·w over 4 taps for VL output columns, whose bytes a
 * shuffle gathers from one masked load of the input row; the zero point's
 * share, zx times the row's weight sum, is subtracted once per row. Exact:
 * vpdpbusd accumulates in int32 without saturation. Returns the
 * intrinsic for VL lanes, or NULL where the path does not apply. */
static const char* ci_dw_vnni(const hc_lower_ctx* lc, const ci_plan* p, int64_t VL) {
  uint64_t f = lc->target ? lc->target->required_features : 0;
  if (!(f & HX_CPU_AVX512VNNI) || !(f & HX_CPU_AVX512VL) || !(f & HX_CPU_AVX512BW)) return NULL;
  if (p->x->dtype != HX_DTYPE_UINT8 || p->w->dtype != HX_DTYPE_INT8) return NULL;
  if (p->wz) {
    if (p->wz->kind != HC_VALUE_CONST || !p->wz->data) return NULL;
    const int8_t* z = (const int8_t*)p->wz->data;
    for (int64_t i = 0; i < hc_value_numel(p->wz); ++i)
      if (z[i]) return NULL;
  }
  /* the bytes of one quad load: columns (VL-1)*sw plus 3 taps, within 64 */
  if ((VL - 1) * p->s[1] + 3 * p->d[1] >= 64) return NULL;
  const char* name = VL == 16 ? "llvm.x86.avx512.vpdpbusd.512"
                     : VL == 8 ? "llvm.x86.avx512.vpdpbusd.256"
                     : VL == 4 ? "llvm.x86.avx512.vpdpbusd.128"
                               : NULL;
  return name && LLVMLookupIntrinsicID(name, strlen(name)) ? name : NULL;
}

static hx_status_t ci_emit_depthwise(hc_lower_ctx* lc, const hc_node* n, const ci_plan* p, const ig_prod* d,
                                     const hc_value* y, int64_t wz_step) {
  int64_t OW = p->out[1], W = p->in[1];
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "dw", p->N * p->M, &kb));
  LLVMBuilderRef b = kb.b;
  ig_emit e;
  memset(&e, 0, sizeof e);
  e.kb = &kb;
  e.d = d;
  e.yp = hc_kb_ptr(&kb, y);
  ig_requant_setup(&e, p->P, p->P);
  LLVMValueRef px = hc_kb_ptr(&kb, p->x), pw = hc_kb_ptr(&kb, p->w);
  LLVMValueRef pwz = p->wz ? hc_kb_ptr(&kb, p->wz) : NULL;
  LLVMValueRef xz = zero_point_i32(&kb, p->xz, false);
  hc_loop task, rl, cl;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  /* t = (n*G + g)*Mg + j: output channel g*Mg + j of image n reads input
   * channel g, i.e. input plane o = t / Mg. */
  LLVMValueRef o = LLVMBuildUDiv(b, t, hc_kb_i64(&kb, p->Mg), "");
  LLVMValueRef mi = LLVMBuildURem(b, t, hc_kb_i64(&kb, p->Mg), "");
  LLVMValueRef mabs = LLVMBuildURem(b, t, hc_kb_i64(&kb, p->M), "");
  e.y_off = hc_kb_imul(&kb, o, hc_kb_i64(&kb, p->Mg * p->P));
  if (d->yt != HX_DTYPE_INT32) {
    e.sm_off = coord_offset(&kb, o, d->outer_rank, d->outer_dims, d->sm_os);
    e.sp_off = coord_offset(&kb, o, d->outer_rank, d->outer_dims, d->sp_os);
    if (d->bias) e.b_off = coord_offset(&kb, o, d->outer_rank, d->outer_dims, d->bias_os);
  }
  LLVMValueRef zw = hc_kb_i32(&kb, 0);
  if (pwz)
    zw = hc_kb_convert(&kb, hc_kb_load(&kb, p->wz->dtype, pwz, hc_kb_imul(&kb, mabs, hc_kb_i64(&kb, wz_step))),
                       p->wz->dtype, HX_DTYPE_INT32);
  LLVMValueRef wv[64];
  LLVMValueRef wrow = hc_kb_imul(&kb, mabs, hc_kb_i64(&kb, p->ktot));
  for (int64_t i = 0; i < p->ktot; ++i) {
    LLVMValueRef w = hc_kb_convert(&kb, hc_kb_load(&kb, p->w->dtype, pw, hc_kb_iadd(&kb, wrow, hc_kb_i64(&kb, i))),
                                   p->w->dtype, HX_DTYPE_INT32);
    wv[i] = LLVMBuildSub(b, w, zw, "");
  }
  LLVMValueRef xplane = hc_kb_imul(&kb, o, hc_kb_i64(&kb, p->inplane));
  /* Whole rows on the byte path: when the plane is at least one vector of
   * 4 or more columns wide, the vectors cover every column, the border
   * ones included; their loads are masked to the row (the taps in the
   * padding read zx, which the zero-point correction cancels), so no tap
   * goes one at a time, and each vector is requantised and stored straight
   * from its registers: no int32 tile. */
  int64_t VL = d->L / 2, sw = p->s[1];
  int64_t nq = (p->k[1] + 3) / 4;
  bool full = false;
  LLVMValueRef plane = NULL; /* the padded plane copy (rows BW bytes apart), or NULL */
  int64_t BW = 0;
  {
    int64_t VF = VL;
    while (VF > 4 && OW < VF) VF /= 2;
    full = OW >= VF && sw <= 2 && p->k[0] * nq <= 64 && ci_dw_vnni(lc, p, VF) && d->sp_step == 0;
    if (full) VL = VF;
    /* Whole rows without the byte path: the plane is first copied into a
     * stack buffer between margins of zx (x - zx = 0 where a tap reads the
     * padding), so that every column is a plain vector load, computed and
     * requantised in registers like the byte path's: no int32 tile, no
     * border taps one column at a time. */
    /* a row: its copy at pb[1], and the last vector's reach from column 0 */
    int64_t reach = OW * sw + (p->k[1] - 1) * p->d[1];
    int64_t bw = round_up(p->pb[1] + W > reach ? p->pb[1] + W : reach, 16);
    if (!full && OW >= VF && sw <= 2 && d->sp_step == 0 && p->in[0] * bw <= CI_DW_PLANE_BYTES &&
        !ci_dw_vnni(lc, p, VF)) {
      full = true;
      VL = VF;
      BW = bw;
      LLVMValueRef buf = hc_kb_alloca(&kb, LLVMArrayType2(kb.t_i8, (uint64_t)(p->in[0] * bw)), "dwplane");
      LLVMSetAlignment(buf, 32);
      LLVMBuildMemSet(b, buf, LLVMBuildTrunc(b, xz, kb.t_i8, ""), hc_kb_i64(&kb, p->in[0] * bw), 32);
      LLVMValueRef r = hc_loop_begin(&kb, &rl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, p->in[0]), "copy");
      LLVMValueRef at = hc_kb_iadd(&kb, hc_kb_imul(&kb, r, hc_kb_i64(&kb, bw)), hc_kb_i64(&kb, p->pb[1]));
      LLVMValueRef from = hc_kb_iadd(&kb, xplane, hc_kb_imul(&kb, r, hc_kb_i64(&kb, W)));
      hc_kb_memcpy(&kb, LLVMBuildGEP2(b, kb.t_i8, buf, &at, 1, ""), LLVMBuildGEP2(b, kb.t_i8, px, &from, 1, ""),
                   hc_kb_i64(&kb, W));
      hc_loop_end(&kb, &rl);
      plane = buf;
    }
  }
  if (!full) {
    LLVMValueRef c = hc_loop_begin(&kb, &cl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, p->P), "z");
    hc_kb_store(&kb, HX_DTYPE_INT32, e.tile, c, hc_kb_i32(&kb, 0));
    hc_loop_end(&kb, &cl);
  }
  /* Interior columns: those whose taps are all in bounds (for a stride-2
   * row, also the odd byte after the last one read), VL columns at a time
   * over every output row with the taps summed in registers. */
  int64_t cI0 = 0, cI1 = OW;
  for (int64_t kw = 0; !full && kw < p->k[1]; ++kw) {
    int64_t lo, hi, off = kw * p->d[1] - p->pb[1];
    ci_valid_range(p, 1, kw, &lo, &hi);
    /* the widest load reads up to ow*sw + off + sw - 1 */
    int64_t h2 = W - off - sw + 1 <= 0 ? 0 : (W - off - sw) / sw + 1;
    if (h2 < hi) hi = h2;
    cI0 = lo > cI0 ? lo : cI0, cI1 = hi < cI1 ? hi : cI1;
  }
  /* Narrower vectors for narrow planes; the last chunk of a row overlaps
   * the one before instead of leaving a remainder (it stores the same sums). */
  while (!full && VL > 4 && cI1 - cI0 < VL) VL /= 2;
  int64_t cEnd = cI0, nch = 0;
  if (sw <= 2 && cI1 - cI0 >= VL) cEnd = cI1, nch = (cI1 - cI0 + VL - 1) / VL;
  /* the row's multiplier and bias for the registers' epilogue */
  LLVMValueRef fm = NULL, fbias = NULL;
  if (full && d->yt != HX_DTYPE_INT32) {
    LLVMValueRef sm;
    ig_row_params(&e, mi, &sm, &fbias, &fm);
  }
  if (cEnd > cI0) {
    LLVMTypeRef vi32 = LLVMVectorType(kb.t_i32, (unsigned)VL), vx = LLVMVectorType(kb.t_i8, (unsigned)(VL * sw));
    LLVMValueRef sel[IG_MAX_LANES / 2];
    for (int64_t i = 0; i < VL; ++i) sel[i] = LLVMConstInt(kb.t_i32, (unsigned long long)(i * sw), 0);
    LLVMValueRef selv = LLVMConstVector(sel, (unsigned)VL);
    LLVMValueRef xzv = hc_kb_splat(&kb, xz, (unsigned)VL);
    LLVMValueRef wsp[64];
    for (int64_t i = 0; i < p->ktot; ++i) wsp[i] = hc_kb_splat(&kb, wv[i], (unsigned)VL);
    bool sx = hc_dtype_is_signed(p->x->dtype);
    /* Byte path (ci_dw_vnni): weight quads per kernel row, splat, and the
     * row's zero-point correction zx * sum(w). */
    const char* dpbusd = ci_dw_vnni(lc, p, VL);
    LLVMValueRef wq[64], corr[64];
    if (dpbusd && p->k[0] * nq <= 64) {
      LLVMTypeRef v4i8 = LLVMVectorType(kb.t_i8, 4);
      for (int64_t kh = 0; kh < p->k[0]; ++kh) {
        LLVMValueRef rowsum = hc_kb_i32(&kb, 0);
        for (int64_t q = 0; q < nq; ++q) {
          LLVMValueRef quad = LLVMConstNull(v4i8);
          for (int64_t j = 0; j < 4 && 4 * q + j < p->k[1]; ++j) {
            LLVMValueRef w = wv[kh * p->k[1] + 4 * q + j];
            rowsum = LLVMBuildAdd(b, rowsum, w, "");
            quad = LLVMBuildInsertElement(b, quad, LLVMBuildTrunc(b, w, kb.t_i8, ""), hc_kb_i32(&kb, (int32_t)j), "");
          }
          wq[kh * nq + q] = hc_kb_splat(&kb, LLVMBuildBitCast(b, quad, kb.t_i32, ""), (unsigned)VL);
        }
        corr[kh] = hc_kb_splat(&kb, LLVMBuildMul(b, xz, rowsum, ""), (unsigned)VL);
      }
    } else {
      dpbusd = NULL;
    }
    LLVMValueRef accp = hc_kb_alloca(&kb, vi32, "dwacc");
    LLVMValueRef oh = hc_loop_begin(&kb, &rl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, p->out[0]), "ih");
    LLVMValueRef ch = hc_loop_begin(&kb, &cl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, nch), "iw");
    LLVMValueRef ow = hc_kb_imin(&kb, hc_kb_iadd(&kb, hc_kb_i64(&kb, cI0), hc_kb_imul(&kb, ch, hc_kb_i64(&kb, VL))),
                                 hc_kb_i64(&kb, cI1 - VL));
    LLVMBuildStore(b, LLVMConstNull(vi32), accp);
    for (int64_t kh = 0; kh < p->k[0]; ++kh) {
      LLVMValueRef ih = hc_kb_iadd(&kb, hc_kb_imul(&kb, oh, hc_kb_i64(&kb, p->s[0])),
                                   hc_kb_i64(&kb, kh * p->d[0] - p->pb[0]));
      /* rows whose tap row is in the padding skip it (x - zx = 0 there) */
      hc_if rin;
      hc_if_begin(&kb, &rin, LLVMBuildICmp(b, LLVMIntULT, ih, hc_kb_i64(&kb, p->in[0]), ""));
      LLVMValueRef acc = LLVMBuildLoad2(b, vi32, accp, "");
      LLVMValueRef xrow = hc_kb_iadd(&kb, xplane, hc_kb_iadd(&kb, hc_kb_imul(&kb, ih, hc_kb_i64(&kb, W)),
                                                             hc_kb_imul(&kb, ow, hc_kb_i64(&kb, sw))));
      if (dpbusd) acc = LLVMBuildSub(b, acc, corr[kh], "");
      for (int64_t q = 0; dpbusd && q < nq; ++q) {
        /* Quad q of this row: lane l holds the bytes of taps 4q..4q+3 for
         * column ow + l, read from one load of the bytes those taps use
         * (taps past the row's end have weight 0 and repeat byte 0). */
        int64_t taps = p->k[1] - 4 * q < 4 ? p->k[1] - 4 * q : 4;
        int64_t used = (VL - 1) * sw + (taps - 1) * p->d[1] + 1;
        unsigned R = used <= 16 ? 16 : used <= 32 ? 32 : 64;
        LLVMTypeRef vr = LLVMVectorType(kb.t_i8, R);
        LLVMValueRef idx = hc_kb_iadd(&kb, xrow, hc_kb_i64(&kb, 4 * q * p->d[1] - p->pb[1]));
        LLVMValueRef ld;
        if (full) {
          /* byte i is column col0 + i of the row: read where 0 <= col < W
           * (unsigned compare) and i < used (lanes past it get a huge
           * offset), zx elsewhere */
          LLVMValueRef col0 = LLVMBuildTrunc(
              b, hc_kb_iadd(&kb, hc_kb_imul(&kb, ow, hc_kb_i64(&kb, sw)), hc_kb_i64(&kb, 4 * q * p->d[1] - p->pb[1])),
              kb.t_i32, "");
          LLVMValueRef lane[64];
          for (unsigned i = 0; i < R; ++i) lane[i] = LLVMConstInt(kb.t_i32, i < (unsigned)used ? i : 0x40000000u, 0);
          LLVMValueRef cols = LLVMBuildAdd(b, hc_kb_splat(&kb, col0, R), LLVMConstVector(lane, R), "");
          LLVMValueRef mask = LLVMBuildICmp(b, LLVMIntULT, cols, hc_kb_splat(&kb, hc_kb_i32(&kb, (int32_t)W), R), "");
          ld = hc_kb_masked_load_or(&kb, vr, LLVMBuildGEP2(b, kb.t_i8, px, &idx, 1, ""), 1, mask,
                                    hc_kb_splat(&kb, LLVMBuildTrunc(b, xz, kb.t_i8, ""), R));
        } else {
          ld = hc_kb_masked_load(&kb, vr, LLVMBuildGEP2(b, kb.t_i8, px, &idx, 1, ""), 1,
                                 hc_kb_prefix_mask(&kb, R, (unsigned)used));
        }
        LLVMValueRef qs[64];
        for (int64_t l = 0; l < VL; ++l)
          for (int64_t j = 0; j < 4; ++j)
            qs[l * 4 + j] = LLVMConstInt(kb.t_i32, j < taps ? (unsigned long long)(l * sw + j * p->d[1]) : 0, 0);
        LLVMValueRef quads = LLVMBuildShuffleVector(b, ld, LLVMGetPoison(vr), LLVMConstVector(qs, (unsigned)(4 * VL)), "");
        LLVMValueRef r = call_fixed_intrinsic(&kb, dpbusd, (LLVMValueRef[]){acc, quads, wq[kh * nq + q]}, 3);
        acc = LLVMTypeOf(r) == vi32 ? r : LLVMBuildBitCast(b, r, vi32, "");
      }
      /* in the plane copy, input column c of row ih is at ih*BW + pb[1] + c */
      LLVMValueRef brow = plane ? hc_kb_iadd(&kb, hc_kb_imul(&kb, ih, hc_kb_i64(&kb, BW)),
                                             hc_kb_imul(&kb, ow, hc_kb_i64(&kb, sw)))
                                : NULL;
      for (int64_t kw = 0; !dpbusd && kw < p->k[1]; ++kw) {
        LLVMValueRef idx = plane ? hc_kb_iadd(&kb, brow, hc_kb_i64(&kb, kw * p->d[1]))
                                 : hc_kb_iadd(&kb, xrow, hc_kb_i64(&kb, kw * p->d[1] - p->pb[1]));
        LLVMValueRef ld = LLVMBuildLoad2(b, vx, LLVMBuildGEP2(b, kb.t_i8, plane ? plane : px, &idx, 1, ""), "");
        LLVMSetAlignment(ld, 1);
        if (sw > 1) ld = LLVMBuildShuffleVector(b, ld, LLVMGetPoison(vx), selv, "");
        LLVMValueRef xv = sx ? LLVMBuildSExt(b, ld, vi32, "") : LLVMBuildZExt(b, ld, vi32, "");
        xv = LLVMBuildSub(b, xv, xzv, "");
        acc = LLVMBuildAdd(b, acc, LLVMBuildMul(b, xv, wsp[kh * p->k[1] + kw], ""), "");
      }
      LLVMBuildStore(b, acc, accp);
      hc_if_end(&kb, &rin);
    }
    LLVMValueRef acc = LLVMBuildLoad2(b, vi32, accp, "");
    LLVMValueRef ti = hc_kb_iadd(&kb, hc_kb_imul(&kb, oh, hc_kb_i64(&kb, OW)), ow);
    LLVMValueRef stv;
    if (!full) {
      stv = LLVMBuildStore(b, acc, hc_kb_gep(&kb, HX_DTYPE_INT32, e.tile, ti));
    } else {
      /* y index as ig_requantize writes it: y_off + m*P + position */
      LLVMValueRef yi = hc_kb_iadd(&kb, e.y_off, hc_kb_iadd(&kb, hc_kb_imul(&kb, mi, hc_kb_i64(&kb, p->P)), ti));
      if (d->yt == HX_DTYPE_INT32) {
        stv = LLVMBuildStore(b, acc, hc_kb_gep(&kb, HX_DTYPE_INT32, e.yp, yi));
      } else {
        if (fbias) acc = LLVMBuildAdd(b, acc, hc_kb_splat(&kb, fbias, (unsigned)VL), "");
        LLVMValueRef r = requant_round(&kb, acc, hc_kb_splat(&kb, fm, (unsigned)VL), e.ylo, e.yhi, e.yzb);
        stv = LLVMBuildStore(b, r, hc_kb_gep(&kb, d->yt, e.yp, yi));
      }
    }
    LLVMSetAlignment(stv, 1);
    hc_loop_end(&kb, &cl);
    hc_loop_end(&kb, &rl);
  }
  /* The rest, one tap at a time into the tile: the columns outside
   * [cI0, cEnd) (the vector path covers every row there, skipping tap rows
   * in the padding). */
  for (int64_t kh = 0; kh < p->k[0]; ++kh) {
    int64_t rlo, rhi;
    ci_valid_range(p, 0, kh, &rlo, &rhi);
    if (rlo >= rhi) continue;
    int64_t roff = kh * p->d[0] - p->pb[0];
    for (int64_t kw = 0; kw < p->k[1]; ++kw) {
      int64_t lo, hi;
      ci_valid_range(p, 1, kw, &lo, &hi);
      if (lo >= hi) continue;
      int64_t off = kw * p->d[1] - p->pb[1];
      int64_t reg[5][4] = {{rlo, rhi, lo, hi}};
      int nreg = 1;
      if (cEnd > cI0) {
        nreg = 0;
        int64_t r[2][4] = {{rlo, rhi, lo, cI0 < hi ? cI0 : hi}, {rlo, rhi, cEnd > lo ? cEnd : lo, hi}};
        for (int i = 0; i < 2; ++i)
          if (r[i][0] < r[i][1] && r[i][2] < r[i][3]) memcpy(reg[nreg++], r[i], sizeof r[i]);
      }
      for (int ri = 0; ri < nreg; ++ri) {
        LLVMValueRef oh = hc_loop_begin(&kb, &rl, hc_kb_i64(&kb, reg[ri][0]), hc_kb_i64(&kb, reg[ri][1]), "oh");
        LLVMValueRef ih = hc_kb_iadd(&kb, hc_kb_imul(&kb, oh, hc_kb_i64(&kb, p->s[0])), hc_kb_i64(&kb, roff));
        LLVMValueRef xrow =
            hc_kb_iadd(&kb, xplane, hc_kb_iadd(&kb, hc_kb_imul(&kb, ih, hc_kb_i64(&kb, W)), hc_kb_i64(&kb, off)));
        LLVMValueRef trow = hc_kb_imul(&kb, oh, hc_kb_i64(&kb, OW));
        LLVMValueRef ow = hc_loop_begin(&kb, &cl, hc_kb_i64(&kb, reg[ri][2]), hc_kb_i64(&kb, reg[ri][3]), "ow");
        LLVMValueRef si = hc_kb_iadd(&kb, xrow, hc_kb_imul(&kb, ow, hc_kb_i64(&kb, p->s[1])));
        LLVMValueRef xv = hc_kb_convert(&kb, hc_kb_load(&kb, p->x->dtype, px, si), p->x->dtype, HX_DTYPE_INT32);
        LLVMValueRef prod = LLVMBuildMul(b, LLVMBuildSub(b, xv, xz, ""), wv[kh * p->k[1] + kw], "");
        LLVMValueRef ti = hc_kb_iadd(&kb, trow, ow);
        hc_kb_store(&kb, HX_DTYPE_INT32, e.tile, ti,
                    LLVMBuildAdd(b, hc_kb_load(&kb, HX_DTYPE_INT32, e.tile, ti), prod, ""));
        hc_loop_end(&kb, &cl);
        hc_loop_end(&kb, &rl);
      }
    }
  }
  if (!full) {
    e.m0 = mi;
    e.p0 = hc_kb_i64(&kb, 0);
    ig_requantize(&e, hc_kb_iadd(&kb, mi, hc_kb_i64(&kb, 1)), hc_kb_i64(&kb, p->P));
  }
  hc_loop_end(&kb, &task);
  double macs = (double)p->N * (double)p->M * (double)p->P * (double)p->ktot;
  hc_kb_end(&kb, 2.0 * macs, (double)hc_value_nbytes(p->x) + (double)hc_value_nbytes(y));
  return HX_OK;
}

/* The VNNI byte path: a 512-bit VNNI target, constant int8 weights with
 * zero point 0 (the usual symmetric quantization), more than one position.
 * K not a multiple of 4 reads rows padded at compile time; ci_pack_x
 * writes X's padding rows as zeros (they meet zero weights). */
static bool ci_use_vnni(const hc_target* t, const ci_plan* p) {
  if (!ig_byte_target(t) || p->w_rows) return false;
  if (p->w->kind != HC_VALUE_CONST || !p->w->data || p->w->dtype != HX_DTYPE_INT8) return false;
  return p->P != 1 && zero_point_is_zero(p->wz);
}

/* Whether the convolution reads x from the padded channel-quad copy
 * (ci_taps_geometry) instead of an im2col: on the VNNI byte path, where the
 * dropped columns add at most 30% to the product's column vectors. An int8
 * ResNet-18's 3x3 convolutions spent 45-130 us per layer on the im2col
 * (9 bytes written per input byte) against 6-18 for the copy. */
static bool ci_use_taps(const hc_target* t, const ci_plan* p) {
  ci_taps_geo g;
  if (!ci_use_vnni(t, p) || !ci_taps_geometry(p, &g)) return false;
  return (g.cols + 15) / 16 * 10 <= (p->P + 15) / 16 * 13;
}

extern const hc_op_desc hc_op_conv_integer, hc_op_qlinear_conv;

hx_status_t hc_ci_prepack(hc_graph* g, hc_node* n, const hc_target* target, bool* out_done) {
  *out_done = false;
  bool q = n->op == &hc_op_qlinear_conv;
  if ((!q && n->op != &hc_op_conv_integer) || n->packed) return HX_OK;
  ci_plan p;
  if (ci_setup(n, q, &p) != HX_OK) return HX_OK; /* lowering reports it */
  const hc_value *w = p.w, *wz = p.wz;
  if (w->kind != HC_VALUE_CONST || !w->data || (wz && (wz->kind != HC_VALUE_CONST || !wz->data))) return HX_OK;
  if (ci_use_taps(target, &p)) {
    /* quads of four input channels at one tap (HC_PACK_TAP_QUADS_S8) */
    int64_t T = p.ktot, C4 = p.Cg / 4;
    int8_t* tq = (int8_t*)hc_graph_alloc_data(g, (size_t)(p.M * p.Kc));
    if (!tq) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory packing '%s'", w->name);
    const int8_t* w8 = (const int8_t*)w->data;
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t c = 0; c < p.Cg; ++c)
        for (int64_t tap = 0; tap < T; ++tap)
          tq[((m * C4 + c / 4) * T + tap) * 4 + c % 4] = w8[(m * p.Cg + c) * T + tap];
    char name[256];
    snprintf(name, sizeof name, "%s.taps", w->name);
    int64_t dims[2] = {p.M, p.Kc};
    HX_RETURN_IF_ERROR(hc_install_packed_at(g, n, ci_w_slot(q), (hc_value*)w, name, HX_DTYPE_INT8, 2, dims, tq,
                                            HC_PACK_TAP_QUADS_S8, NULL));
    *out_done = true;
    return HX_OK;
  }
  /* The paths that read W in place: depthwise, one position (ig_emit_gemv)
   * and the VNNI byte path. */
  if (ci_is_depthwise(&p) || p.P == 1 || ci_use_vnni(target, &p)) return HX_OK;
  if (hc_value_numel(n->outputs[0]) == 0 || hc_value_numel(w) != p.M * p.Kc) return HX_OK;
  int64_t wz_step = 0, Kp = ci_kp(&p);
  if (ci_per_channel(n, wz, p.M, &wz_step) != HX_OK) return HX_OK;
  int16_t* rows = (int16_t*)hc_graph_alloc_data(g, (size_t)(p.M * Kp) * sizeof(int16_t));
  if (!rows) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory packing '%s'", w->name);
  bool sw = hc_dtype_is_signed(w->dtype);
  for (int64_t m = 0; m < p.M; ++m) {
    int32_t z = 0;
    if (wz) z = sw ? ((const int8_t*)wz->data)[m * wz_step] : ((const uint8_t*)wz->data)[m * wz_step];
    for (int64_t k = 0; k < Kp; ++k) {
      int32_t v = 0;
      if (k < p.Kc) v = (sw ? ((const int8_t*)w->data)[m * p.Kc + k] : ((const uint8_t*)w->data)[m * p.Kc + k]) - z;
      rows[m * Kp + k] = (int16_t)v;
    }
  }
  char name[256];
  snprintf(name, sizeof name, "%s.rows16", w->name);
  int64_t dims[2] = {p.M, Kp};
  HX_RETURN_IF_ERROR(hc_install_packed_at(g, n, ci_w_slot(q), (hc_value*)w, name, HX_DTYPE_INT16, 2, dims, rows,
                                          HC_PACK_ROWS_I16, NULL));
  *out_done = true;
  return HX_OK;
}

static hx_status_t lower_ci_common(hc_lower_ctx* lc, hc_node* n, bool q) {
  ci_plan p;
  HX_RETURN_IF_ERROR(ci_setup(n, q, &p));
  if (hc_value_numel(n->outputs[0]) == 0) return HX_OK;
  unsigned nr, L = ig_lanes(lc, &nr);
  int64_t Kp = ci_kp(&p);
  uint64_t x_off = ci_w_bytes(&p);
  int64_t wz_step = 0, ws_step = 0;
  HX_RETURN_IF_ERROR(ci_per_channel(n, p.wz, p.M, &wz_step));
  if (q) HX_RETURN_IF_ERROR(ci_per_channel(n, p.wsc, p.M, &ws_step));

  ig_prod d;
  memset(&d, 0, sizeof d);
  d.Mt = p.Mg, d.Pt = p.P, d.Kp = Kp, d.Pp = ci_pp(&p), d.L = L, d.NR = nr;
  d.outer_rank = 2;
  d.outer_dims[0] = p.N, d.outer_dims[1] = p.G;
  d.yt = p.yt;
  if (q) {
    d.sm = p.wsc, d.sp = p.xs, d.sy = p.ys, d.zy = p.yz, d.bias = p.bias;
    d.sm_os[1] = ws_step * p.Mg, d.sm_step = ws_step;
    d.bias_os[1] = p.Mg, d.bias_step = 1;
  }
  if (ci_is_depthwise(&p)) return ci_emit_depthwise(lc, n, &p, &d, n->outputs[0], wz_step);

  if (p.w_taps) return ci_emit_taps(lc, n, &p, &d, x_off);
  d.vnni = ci_use_vnni(lc->target, &p);
  d.w_const = p.w_rows != NULL;
  d.w_direct = (p.Kc % 2 == 0 && !d.w_const) || d.vnni;
  d.w = d.w_const ? p.w_rows : p.w;
  d.w_kc = p.Kc;
  d.w_ld = d.vnni ? round_up(p.Kc, 4) : d.w_direct ? p.Kc : Kp;
  d.w_os[0] = 0, d.w_os[1] = p.Mg * d.w_ld;
  if (d.w_direct && p.wz) {
    d.wz = p.wz;
    d.wz_os[1] = wz_step * p.Mg, d.wz_step = wz_step;
  }
  if (!d.w_direct && !d.w_const) {
    int64_t rdims[1] = {p.M}, zs[1] = {wz_step};
    HX_RETURN_IF_ERROR(ig_pack_rows(lc, n, "pack_w", p.w, p.M, p.Kc, Kp, 0, p.wz, 1, rdims, zs));
  }
  HX_RETURN_IF_ERROR(ci_pack_x(lc, n, &p, x_off, d.vnni));
  d.x_os[0] = p.G * Kp * d.Pp, d.x_os[1] = Kp * d.Pp;
  if (d.vnni) {
    d.Kp = d.w_ld;
    d.x_os[0] = p.G * d.Kp * d.Pp, d.x_os[1] = d.Kp * d.Pp;
    d.xz = p.xz, d.x_signed = hc_dtype_is_signed(p.x->dtype);
    d.rs_os[1] = p.Mg;
  }
  d.x_ws_offset = x_off;
  if (p.P == 1 && d.w_direct) return ig_emit_gemv(lc, n, &d, n->outputs[0]);
  return ig_emit_product(lc, n, &d, n->outputs[0]);
}

static hx_status_t lower_conv_integer(hc_lower_ctx* lc, hc_node* n) { return lower_ci_common(lc, n, false); }
static hx_status_t lower_qlinear_conv(hc_lower_ctx* lc, hc_node* n) { return lower_ci_common(lc, n, true); }

static const char* const k_conv_attrs[] = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides", NULL};

const hc_op_desc hc_op_matmul_integer = {"MatMulInteger", "", 10, 22, NULL, 0, infer_matmul_integer,
                                         lower_matmul_integer, NULL, matmul_integer_workspace};
const hc_op_desc hc_op_qlinear_matmul = {"QLinearMatMul", "", 10, 22, NULL, 0, infer_qlinear_matmul,
                                         lower_qlinear_matmul, NULL, qlinear_matmul_workspace};
const hc_op_desc hc_op_conv_integer = {"ConvInteger", "", 10, 22, k_conv_attrs, 0, infer_conv_integer,
                                       lower_conv_integer, NULL, conv_integer_workspace};
const hc_op_desc hc_op_qlinear_conv = {"QLinearConv", "", 10, 22, k_conv_attrs, 0, infer_qlinear_conv,
                                       lower_qlinear_conv, NULL, qlinear_conv_workspace};
