/* Gemm and MatMul: (batched) matrix products.
 *
 * Both ops lower to one tiled kernel. A task computes one MR x NB tile of
 * one output matrix over the whole K range; tasks are ordered with the row
 * block fastest so that a thread walking consecutive tasks reuses the same
 * panel of B from cache. Inside a tile the product is accumulated in the
 * compute type (float32 for float16/bfloat16, the storage type otherwise)
 * by one of three micro-kernels, chosen from the operand layouts:
 *
 *  - "axpy" (B rows contiguous, i.e. no transB): R rows x NV vectors of
 *    output columns held in registers across the k loop; each k step loads
 *    NV vectors of B once and broadcasts one element of A per row. This is
 *    the i-k-j order with the j loop as explicit vectors.
 *  - "dot" (transB with A rows contiguous): R rows x C columns of dot
 *    products over k, vectorised along k and reduced horizontally at the
 *    end; k is contiguous in both operands.
 *  - "generic" (any strides, the ragged last column block, and products of
 *    one or two rows against a wide B): the i-k-j loop over a tile buffer
 *    on the stack, k unrolled so each pass streams several rows of B.
 *
 * The epilogue applies alpha, beta and the broadcast C, converts and stores
 * the tile. Shapes are static, so ragged edges are compile-time constants
 * and the micro-kernels are emitted once per row count they can meet.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/backend/target.h"
#include "compiler/codegen/epilogue.h"
#include "compiler/ops/gemm_internal.h"
#include "compiler/ops/gemm_microkernel.h"
#include "compiler/ops/op.h"
#include "compiler/ops/prepack.h"
#include "harness/artifact_abi.h"

/* Rows per tile; 6 rows x 2 vectors keeps 12 accumulators in registers on
 * AVX2 (16 registers) and leaves room on AVX-512. */
#define MM_MR 6
/* Vector accumulators the axpy micro-kernel keeps in registers; with fewer
 * than MM_MR rows the tile grows wider instead (up to MM_MAX_NV vectors), so
 * that GEMV-like products read longer contiguous runs of B. */
#define MM_ACC 12
#define MM_MAX_NV 8
/* Products with at most MM_STREAM_ROWS rows and a B of at least
 * 2 * MM_STREAM_NB contiguous columns use MM_STREAM_NB-wide generic tiles. */
#define MM_STREAM_ROWS 2
#define MM_STREAM_NB 1024
/* k steps per pass of the generic micro-kernel. */
#define MM_GENERIC_KU 4
/* Columns handled per step of the dot micro-kernel. */
#define MM_DOT_C 2
/* Tile width of the dot and generic micro-kernels. */
#define MM_DOT_NB 16

/* A (batched) product Y[b] = alpha * A[b] x B[b] + beta * C, all shapes static. */
typedef hc_mm_desc mm_desc;

/* Input i as the op sees it: the unpacked original of a pre-packed input. */
static const hc_value* weight_input(const hc_node* n, int i) {
  return n->packed && n->packed->input == i ? n->packed->original : n->inputs[i];
}

extern const hc_op_desc hc_op_gemm, hc_op_matmul;

/* Kernel-time state shared by the emitters of one kernel. */
typedef struct mm_emit {
  hc_kb* kb;
  const mm_desc* d;
  hx_dtype_t ct;   /* dtype whose compute type accumulates */
  LLVMTypeRef t;   /* compute type */
  unsigned vw;     /* vector lanes */
  unsigned cbytes; /* bytes of one compute-type element */
  int nv;          /* vectors per row in the axpy kernel */
  int64_t nb;      /* tile width in columns */
  LLVMValueRef pa, pb, pc, py;
  LLVMValueRef a_off, b_off, y_off; /* batch offsets in elements */
  LLVMValueRef tile;                /* [rows * nb] compute-type buffer */
  LLVMValueRef bi;                  /* batch index of the task */
  hc_epilogue epi;                  /* fused element-wise ops */
} mm_emit;

/* ---- small IR helpers ---------------------------------------------------- */

/* hc_kb_load, except that bfloat16 is widened with integer ops (exact):
 * an fpext the optimiser can see lets it narrow float32 arithmetic back to
 * bfloat, which the back end then legalises through __truncsfbf2. */
static LLVMValueRef load_elem(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef idx) {
  if (dt != HX_DTYPE_BFLOAT16) return hc_kb_load(kb, dt, ptr, idx);
  LLVMValueRef raw = LLVMBuildLoad2(kb->b, kb->t_i16, hc_kb_gep(kb, dt, ptr, idx), "");
  LLVMValueRef wide = LLVMBuildShl(kb->b, LLVMBuildZExt(kb->b, raw, kb->t_i32, ""), LLVMConstInt(kb->t_i32, 16, 0), "");
  return LLVMBuildBitCast(kb->b, wide, kb->t_f32, "");
}

/* hc_kb_store, except that bfloat16 is rounded to nearest-even with integer
 * ops: fptrunc to bfloat lowers to __truncsfbf2 on targets without
 * AVX512-BF16, and libgcc before GCC 13 does not have it. */
static void store_elem(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef idx, LLVMValueRef v) {
  if (dt != HX_DTYPE_BFLOAT16) {
    hc_kb_store(kb, dt, ptr, idx, v);
    return;
  }
  LLVMBuilderRef b = kb->b;
  LLVMValueRef bits = LLVMBuildBitCast(b, v, kb->t_i32, "");
  LLVMValueRef high = LLVMBuildLShr(b, bits, LLVMConstInt(kb->t_i32, 16, 0), "");
  LLVMValueRef bias = LLVMBuildAdd(b, LLVMBuildAnd(b, high, LLVMConstInt(kb->t_i32, 1, 0), ""),
                                   LLVMConstInt(kb->t_i32, 0x7FFF, 0), "");
  LLVMValueRef rounded = LLVMBuildLShr(b, LLVMBuildAdd(b, bits, bias, ""), LLVMConstInt(kb->t_i32, 16, 0), "");
  LLVMValueRef quiet_nan = LLVMBuildOr(b, high, LLVMConstInt(kb->t_i32, 0x40, 0), "");
  LLVMValueRef is_nan = LLVMBuildFCmp(b, LLVMRealUNO, v, v, "");
  LLVMValueRef r = LLVMBuildTrunc(b, LLVMBuildSelect(b, is_nan, quiet_nan, rounded, ""), kb->t_i16, "");
  LLVMBuildStore(b, r, hc_kb_gep(kb, dt, ptr, idx));
}

static LLVMValueRef i64c(const mm_emit* e, int64_t x) { return hc_kb_i64(e->kb, x); }

static LLVMValueRef imul_c(const mm_emit* e, LLVMValueRef v, int64_t c) {
  if (c == 0) return i64c(e, 0);
  if (c == 1) return v;
  return hc_kb_imul(e->kb, v, i64c(e, c));
}

/* Marks a floating-point instruction reassociable so that sums can be
 * reordered into vector lanes. */
static LLVMValueRef reassoc(LLVMValueRef v) {
  if (LLVMIsAInstruction(v) && LLVMCanValueUseFastMathFlags(v)) LLVMSetFastMathFlags(v, LLVMFastMathAllowReassoc);
  return v;
}

/* Broadcasts a scalar into every lane of an n-lane vector. */
static LLVMValueRef splat(hc_kb* kb, LLVMValueRef s, unsigned n) {
  LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(s), n);
  LLVMValueRef v = LLVMBuildInsertElement(kb->b, LLVMGetPoison(vt), s, LLVMConstInt(kb->t_i32, 0, 0), "");
  return LLVMBuildShuffleVector(kb->b, v, LLVMGetPoison(vt), LLVMConstNull(LLVMVectorType(kb->t_i32, n)), "");
}

/* Loads n consecutive elements of dtype dt at ptr[idx] as a compute-type vector. */
static LLVMValueRef vload(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef idx, unsigned n) {
  /* bfloat16 is widened with integer ops, as in load_elem. */
  LLVMTypeRef st = dt == HX_DTYPE_BFLOAT16 ? kb->t_i16 : hc_kb_storage_type(kb, dt);
  LLVMValueRef v = LLVMBuildLoad2(kb->b, LLVMVectorType(st, n), hc_kb_gep(kb, dt, ptr, idx), "");
  LLVMSetAlignment(v, (unsigned)hx_dtype_size(dt));
  if (dt == HX_DTYPE_FLOAT16) v = LLVMBuildFPExt(kb->b, v, LLVMVectorType(kb->t_f32, n), "");
  if (dt == HX_DTYPE_BFLOAT16) {
    LLVMTypeRef wide = LLVMVectorType(kb->t_i32, n);
    v = LLVMBuildShl(kb->b, LLVMBuildZExt(kb->b, v, wide, ""), splat(kb, LLVMConstInt(kb->t_i32, 16, 0), n), "");
    v = LLVMBuildBitCast(kb->b, v, LLVMVectorType(kb->t_f32, n), "");
  }
  return v;
}

/* Address of tile[r * nb + j]. */
static LLVMValueRef tile_at(const mm_emit* e, LLVMValueRef r, LLVMValueRef j) {
  LLVMValueRef idx = hc_kb_iadd(e->kb, imul_c(e, r, e->nb), j);
  return LLVMBuildGEP2(e->kb->b, e->t, e->tile, &idx, 1, "");
}

static LLVMValueRef load_a(const mm_emit* e, LLVMValueRef m, LLVMValueRef k) {
  const mm_desc* d = e->d;
  LLVMValueRef idx = hc_kb_iadd(e->kb, e->a_off, hc_kb_iadd(e->kb, imul_c(e, m, d->a_sm), imul_c(e, k, d->a_sk)));
  return load_elem(e->kb, d->dt, e->pa, idx);
}

static LLVMValueRef load_b(const mm_emit* e, LLVMValueRef k, LLVMValueRef n) {
  const mm_desc* d = e->d;
  LLVMValueRef idx = hc_kb_iadd(e->kb, e->b_off, hc_kb_iadd(e->kb, imul_c(e, k, d->b_sk), imul_c(e, n, d->b_sn)));
  return load_elem(e->kb, d->dt, e->pb, idx);
}

/* ---- micro-kernels -------------------------------------------------------- */

/* axpy form: R full rows from m0, nv*vw columns from n0, B rows contiguous. */
static void emit_axpy(mm_emit* e, int R, LLVMValueRef m0, LLVMValueRef n0) {
  hc_kb* kb = e->kb;
  const mm_desc* d = e->d;
  LLVMTypeRef vt = LLVMVectorType(e->t, e->vw);
  LLVMValueRef acc[MM_MR][MM_MAX_NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < e->nv; ++v) {
      acc[r][v] = hc_kb_alloca(kb, vt, "acc");
      LLVMBuildStore(kb->b, LLVMConstNull(vt), acc[r][v]);
    }
  LLVMValueRef a_row[MM_MR];
  for (int r = 0; r < R; ++r) a_row[r] = hc_kb_iadd(kb, m0, i64c(e, r));
  LLVMValueRef b_col = hc_kb_iadd(kb, e->b_off, n0);

  hc_loop kl;
  LLVMValueRef k = hc_loop_begin(kb, &kl, i64c(e, 0), i64c(e, d->K), "k");
  LLVMValueRef b_row = hc_kb_iadd(kb, b_col, imul_c(e, k, d->b_sk));
  LLVMValueRef bv[MM_MAX_NV];
  for (int v = 0; v < e->nv; ++v)
    bv[v] = vload(kb, d->dt, e->pb, hc_kb_iadd(kb, b_row, i64c(e, (int64_t)v * e->vw)), e->vw);
  for (int r = 0; r < R; ++r) {
    LLVMValueRef as = splat(kb, load_a(e, a_row[r], k), e->vw);
    for (int v = 0; v < e->nv; ++v) {
      LLVMValueRef cur = LLVMBuildLoad2(kb->b, vt, acc[r][v], "");
      LLVMBuildStore(kb->b, hc_kb_fma(kb, e->ct, as, bv[v], cur), acc[r][v]);
    }
  }
  hc_loop_end(kb, &kl);

  for (int r = 0; r < R; ++r)
    for (int v = 0; v < e->nv; ++v) {
      LLVMValueRef val = LLVMBuildLoad2(kb->b, vt, acc[r][v], "");
      LLVMValueRef st = LLVMBuildStore(kb->b, val, tile_at(e, i64c(e, r), i64c(e, (int64_t)v * e->vw)));
      LLVMSetAlignment(st, e->cbytes);
    }
}

/* Sum of a vector's lanes. */
static LLVMValueRef hsum(const mm_emit* e, LLVMValueRef v) {
  hc_kb* kb = e->kb;
  LLVMTypeRef vt = LLVMTypeOf(v);
  if (hc_dtype_is_float(e->ct)) {
    LLVMValueRef args[2] = {LLVMConstReal(e->t, -0.0), v};
    return reassoc(hc_kb_intrinsic(kb, "llvm.vector.reduce.fadd", vt, args, 2));
  }
  return hc_kb_intrinsic(kb, "llvm.vector.reduce.add", vt, &v, 1);
}

/* dot form: R rows from m0 x C columns from n (tile column j), k contiguous
 * in both A rows and B rows (transB). */
static void emit_dot(mm_emit* e, int R, int C, LLVMValueRef m0, LLVMValueRef n, LLVMValueRef j) {
  hc_kb* kb = e->kb;
  const mm_desc* d = e->d;
  LLVMTypeRef vt = LLVMVectorType(e->t, e->vw);
  int64_t kv = d->K - d->K % (int64_t)e->vw;
  LLVMValueRef a_base[MM_MR], b_base[MM_DOT_C];
  for (int r = 0; r < R; ++r) a_base[r] = hc_kb_iadd(kb, e->a_off, imul_c(e, hc_kb_iadd(kb, m0, i64c(e, r)), d->a_sm));
  for (int c = 0; c < C; ++c) b_base[c] = hc_kb_iadd(kb, e->b_off, imul_c(e, hc_kb_iadd(kb, n, i64c(e, c)), d->b_sn));

  LLVMValueRef sum[MM_MR][MM_DOT_C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) sum[r][c] = hc_kb_alloca(kb, e->t, "dot");

  if (kv > 0) {
    LLVMValueRef acc[MM_MR][MM_DOT_C];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) {
        acc[r][c] = hc_kb_alloca(kb, vt, "acc");
        LLVMBuildStore(kb->b, LLVMConstNull(vt), acc[r][c]);
      }
    hc_loop kl;
    LLVMValueRef k = hc_loop_begin_step(kb, &kl, i64c(e, 0), i64c(e, kv), (int64_t)e->vw, "k");
    LLVMValueRef av[MM_MR], bv[MM_DOT_C];
    for (int r = 0; r < R; ++r) av[r] = vload(kb, d->dt, e->pa, hc_kb_iadd(kb, a_base[r], k), e->vw);
    for (int c = 0; c < C; ++c) bv[c] = vload(kb, d->dt, e->pb, hc_kb_iadd(kb, b_base[c], k), e->vw);
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) {
        LLVMValueRef cur = LLVMBuildLoad2(kb->b, vt, acc[r][c], "");
        LLVMBuildStore(kb->b, hc_kb_fma(kb, e->ct, av[r], bv[c], cur), acc[r][c]);
      }
    hc_loop_end(kb, &kl);
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) LLVMBuildStore(kb->b, hsum(e, LLVMBuildLoad2(kb->b, vt, acc[r][c], "")), sum[r][c]);
  } else {
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) LLVMBuildStore(kb->b, hc_kb_const(kb, e->ct, 0), sum[r][c]);
  }

  if (kv < d->K) {
    hc_loop kl;
    LLVMValueRef k = hc_loop_begin(kb, &kl, i64c(e, kv), i64c(e, d->K), "ktail");
    LLVMValueRef as[MM_MR], bs[MM_DOT_C];
    for (int r = 0; r < R; ++r) as[r] = load_elem(kb, d->dt, e->pa, hc_kb_iadd(kb, a_base[r], k));
    for (int c = 0; c < C; ++c) bs[c] = load_elem(kb, d->dt, e->pb, hc_kb_iadd(kb, b_base[c], k));
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) {
        LLVMValueRef cur = LLVMBuildLoad2(kb->b, e->t, sum[r][c], "");
        LLVMBuildStore(kb->b, hc_kb_fma(kb, e->ct, as[r], bs[c], cur), sum[r][c]);
      }
    hc_loop_end(kb, &kl);
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      LLVMBuildStore(kb->b, LLVMBuildLoad2(kb->b, e->t, sum[r][c], ""),
                     tile_at(e, i64c(e, r), hc_kb_iadd(kb, j, i64c(e, c))));
}

/* All column pairs of a dot tile (cols columns from n0), then the odd one. */
static void emit_dot_tile(mm_emit* e, int R, LLVMValueRef m0, LLVMValueRef n0, int64_t cols) {
  hc_kb* kb = e->kb;
  int64_t pairs = cols / MM_DOT_C;
  if (pairs > 0) {
    hc_loop jl;
    LLVMValueRef j = hc_loop_begin_step(kb, &jl, i64c(e, 0), i64c(e, pairs * MM_DOT_C), MM_DOT_C, "j");
    emit_dot(e, R, MM_DOT_C, m0, hc_kb_iadd(kb, n0, j), j);
    hc_loop_end(kb, &jl);
  }
  for (int64_t j = pairs * MM_DOT_C; j < cols; ++j) emit_dot(e, R, 1, m0, hc_kb_iadd(kb, n0, i64c(e, j)), i64c(e, j));
}

/* tile[r][j] += sum over u < ku of A[m0 + r, k + u] * B[k + u, n0 + j]. */
static void emit_generic_step(mm_emit* e, int ku, int64_t rows, LLVMValueRef m0, LLVMValueRef n0, int64_t cols,
                              LLVMValueRef k) {
  hc_kb* kb = e->kb;
  hc_loop rl, jl;
  LLVMValueRef ks[MM_GENERIC_KU], a[MM_GENERIC_KU];
  for (int u = 0; u < ku; ++u) ks[u] = hc_kb_iadd(kb, k, i64c(e, u));
  LLVMValueRef r = hc_loop_begin(kb, &rl, i64c(e, 0), i64c(e, rows), "r");
  for (int u = 0; u < ku; ++u) a[u] = load_a(e, hc_kb_iadd(kb, m0, r), ks[u]);
  LLVMValueRef j = hc_loop_begin(kb, &jl, i64c(e, 0), i64c(e, cols), "j");
  LLVMValueRef p = tile_at(e, r, j);
  LLVMValueRef n = hc_kb_iadd(kb, n0, j);
  LLVMValueRef cur = LLVMBuildLoad2(kb->b, e->t, p, "");
  for (int u = 0; u < ku; ++u) cur = hc_kb_fma(kb, e->ct, a[u], load_b(e, ks[u], n), cur);
  LLVMBuildStore(kb->b, cur, p);
  hc_loop_end(kb, &jl);
  hc_loop_end(kb, &rl);
}

/* generic form: rows x cols from (m0, n0) with any strides, i-k-j over the
 * tile with k unrolled MM_GENERIC_KU times (fewer passes over the partial
 * sums, and as many concurrent runs of B for the prefetchers). */
static void emit_generic(mm_emit* e, int64_t rows, LLVMValueRef m0, LLVMValueRef n0, int64_t cols) {
  hc_kb* kb = e->kb;
  const mm_desc* d = e->d;
  hc_loop rl, jl, kl;
  LLVMValueRef r = hc_loop_begin(kb, &rl, i64c(e, 0), i64c(e, rows), "r");
  LLVMValueRef j = hc_loop_begin(kb, &jl, i64c(e, 0), i64c(e, cols), "j");
  LLVMBuildStore(kb->b, hc_kb_const(kb, e->ct, 0), tile_at(e, r, j));
  hc_loop_end(kb, &jl);
  hc_loop_end(kb, &rl);

  int64_t kmain = d->K - d->K % MM_GENERIC_KU;
  if (kmain > 0) {
    LLVMValueRef k = hc_loop_begin_step(kb, &kl, i64c(e, 0), i64c(e, kmain), MM_GENERIC_KU, "k");
    emit_generic_step(e, MM_GENERIC_KU, rows, m0, n0, cols, k);
    hc_loop_end(kb, &kl);
  }
  for (int64_t k = kmain; k < d->K; ++k) emit_generic_step(e, 1, rows, m0, n0, cols, i64c(e, k));
}

/* Epilogue coordinates (batch, row, column) of output element (m, n) of
 * batch bi; with the batch folded into the rows, m is split back. */
static void epilogue_coords(hc_kb* kb, const mm_desc* d, LLVMValueRef bi, LLVMValueRef m, LLVMValueRef n,
                            LLVMValueRef* coord) {
  if (d->fold_m) {
    coord[0] = LLVMBuildUDiv(kb->b, m, hc_kb_i64(kb, d->fold_m), "");
    coord[1] = LLVMBuildURem(kb->b, m, hc_kb_i64(kb, d->fold_m), "");
  } else {
    coord[0] = bi;
    coord[1] = m;
  }
  coord[2] = n;
}

/* Dimension groups of Y for the epilogue: [batch...], [M], [N]. */
static void epilogue_split(const mm_desc* d, int* split) {
  split[0] = d->has_split ? d->split[0] : d->out_rank - 2;
  split[1] = d->has_split ? d->split[1] : d->out_rank - 1;
}

/* Y = alpha * tile + beta * C for rows x cols of the tile at (m0, n0). */
static void emit_epilogue(mm_emit* e, int64_t rows, LLVMValueRef m0, LLVMValueRef n0, int64_t cols) {
  hc_kb* kb = e->kb;
  const mm_desc* d = e->d;
  bool use_c = d->c && d->beta != 0.0;
  bool is_int = !hc_dtype_is_float(d->dt);
  /* Integer products stay integers unless alpha/beta scale them; then the
   * scaled value is computed in double and truncated, as numpy's
   * (A @ B * alpha + C * beta).astype(T) does. */
  bool int_via_double = is_int && (d->alpha != 1.0 || (use_c && d->beta != 1.0));
  hc_loop rl, jl;
  LLVMValueRef r = hc_loop_begin(kb, &rl, i64c(e, 0), i64c(e, rows), "r");
  LLVMValueRef m = hc_kb_iadd(kb, m0, r);
  LLVMValueRef y_row = hc_kb_iadd(kb, e->y_off, imul_c(e, m, d->N));
  LLVMValueRef c_row = use_c ? imul_c(e, m, d->c_sm) : NULL;
  LLVMValueRef j = hc_loop_begin(kb, &jl, i64c(e, 0), i64c(e, cols), "j");
  LLVMValueRef n = hc_kb_iadd(kb, n0, j);
  LLVMValueRef v = LLVMBuildLoad2(kb->b, e->t, tile_at(e, r, j), "");
  LLVMValueRef cv = use_c ? load_elem(kb, d->dt, e->pc, hc_kb_iadd(kb, c_row, imul_c(e, n, d->c_sn))) : NULL;
  if (int_via_double) {
    LLVMValueRef y = hc_kb_mul(kb, HX_DTYPE_FLOAT64, hc_kb_convert(kb, v, d->dt, HX_DTYPE_FLOAT64),
                               hc_kb_const(kb, HX_DTYPE_FLOAT64, d->alpha));
    if (use_c)
      y = hc_kb_fma(kb, HX_DTYPE_FLOAT64, hc_kb_convert(kb, cv, d->dt, HX_DTYPE_FLOAT64),
                    hc_kb_const(kb, HX_DTYPE_FLOAT64, d->beta), y);
    v = hc_kb_convert(kb, y, HX_DTYPE_FLOAT64, d->dt);
  } else {
    if (d->alpha != 1.0) v = hc_kb_mul(kb, d->dt, v, hc_kb_const(kb, d->dt, d->alpha));
    if (use_c)
      v = d->beta == 1.0 ? hc_kb_add(kb, d->dt, v, cv) : hc_kb_fma(kb, d->dt, cv, hc_kb_const(kb, d->dt, d->beta), v);
  }
  if (e->epi.count) {
    LLVMValueRef coord[3];
    epilogue_coords(kb, d, e->bi, m, n, coord);
    v = hc_epilogue_apply(kb, &e->epi, v, coord);
  }
  store_elem(kb, d->dt, e->py, hc_kb_iadd(kb, y_row, n), v);
  hc_loop_end(kb, &jl);
  hc_loop_end(kb, &rl);
}

/* ---- the kernel ------------------------------------------------------------ */

typedef enum { MM_AXPY, MM_DOT, MM_GENERIC } mm_form;

/* The whole tile (rows rows at m0, column block cb): micro-kernel, then epilogue. */
static void emit_tile(mm_emit* e, mm_form form, int rows, LLVMValueRef m0, LLVMValueRef cb) {
  hc_kb* kb = e->kb;
  const mm_desc* d = e->d;
  LLVMValueRef n0 = imul_c(e, cb, e->nb);
  int64_t full_cb = d->N / e->nb, rem_cols = d->N % e->nb;
  /* Full column blocks, then the ragged last one (a compile-time width). */
  for (int part = 0; part < 2; ++part) {
    int64_t cols = part == 0 ? e->nb : rem_cols;
    if (cols == 0 || (part == 0 && full_cb == 0)) continue;
    bool guarded = part == 0 ? rem_cols != 0 : full_cb != 0;
    hc_if g;
    if (guarded)
      hc_if_begin(kb, &g, LLVMBuildICmp(kb->b, part == 0 ? LLVMIntSLT : LLVMIntSGE, cb, i64c(e, full_cb), ""));
    if (form == MM_AXPY && part == 0)
      emit_axpy(e, rows, m0, n0);
    else if (form == MM_DOT)
      emit_dot_tile(e, rows, m0, n0, cols);
    else
      emit_generic(e, rows, m0, n0, cols);
    emit_epilogue(e, rows, m0, n0, cols);
    if (guarded) hc_if_end(kb, &g);
  }
}

static hx_status_t emit_matmul(hc_lower_ctx* lc, const hc_node* n, const mm_desc* d) {
  if (d->M == 0 || d->N == 0 || d->batch == 0) return HX_OK; /* nothing to write */
  hx_dtype_t ct = d->dt;
  hc_kb kb;
  /* Vector lanes: the target's widest vector of compute-type elements. */
  int cbytes = (d->dt == HX_DTYPE_FLOAT64 || d->dt == HX_DTYPE_INT64 || d->dt == HX_DTYPE_UINT64) ? 8 : 4;
  int vbits = lc->target && lc->target->vector_bits >= 128 ? lc->target->vector_bits : 128;
  unsigned vw = (unsigned)(vbits / 8 / cbytes);

  mm_form form = MM_GENERIC;
  int nv = 1;
  int64_t nb = MM_DOT_NB;
  if (d->b_sn == 1 && d->M <= MM_STREAM_ROWS && d->N >= 2 * MM_STREAM_NB) {
    /* A row or two against a wide B: i-k-j over a stack row of partial
     * sums, so that every k step streams a long contiguous run of B. */
    form = MM_GENERIC;
    nb = MM_STREAM_NB;
  } else if (d->b_sn == 1 && d->N >= 4) {
    form = MM_AXPY;
    while (vw > 4 && (int64_t)vw > d->N) vw /= 2;
    int64_t rows = d->M < MM_MR ? d->M : MM_MR;
    nv = rows > 0 ? (int)(MM_ACC / rows) : 2;
    if (nv > MM_MAX_NV) nv = MM_MAX_NV;
    while (nv > 1 && (int64_t)nv * vw > d->N) --nv;
    nb = (int64_t)nv * vw;
  } else if (d->b_sk == 1 && d->a_sk == 1) {
    form = MM_DOT;
  }
  int64_t nrb = (d->M + MM_MR - 1) / MM_MR, ncb = (d->N + nb - 1) / nb;
  int64_t tasks = d->batch * nrb * ncb;

  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, tasks, &kb));
  mm_emit e = {.kb = &kb, .d = d, .ct = ct, .t = hc_kb_compute_type(&kb, ct), .vw = vw,
               .cbytes = (unsigned)cbytes, .nv = nv, .nb = nb};
  int split[2];
  epilogue_split(d, split);
  HX_RETURN_IF_ERROR(hc_epilogue_begin(&kb, n, split, &e.epi));
  e.pa = hc_kb_ptr(&kb, d->a);
  e.pb = hc_kb_ptr(&kb, d->b);
  e.pc = d->c ? hc_kb_ptr(&kb, d->c) : NULL;
  e.py = hc_kb_ptr(&kb, d->y);
  int64_t tile_rows = d->M < MM_MR ? (d->M > 0 ? d->M : 1) : MM_MR;
  e.tile = hc_kb_alloca(&kb, LLVMArrayType2(e.t, (uint64_t)(tile_rows * nb)), "tile");

  hc_loop task;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef rb = LLVMBuildURem(kb.b, t, i64c(&e, nrb), "");
  LLVMValueRef rest = LLVMBuildUDiv(kb.b, t, i64c(&e, nrb), "");
  LLVMValueRef cb = LLVMBuildURem(kb.b, rest, i64c(&e, ncb), "");
  LLVMValueRef bi = LLVMBuildUDiv(kb.b, rest, i64c(&e, ncb), "");
  /* Batch offsets: decompose the batch index over the broadcast batch dims. */
  e.a_off = e.b_off = i64c(&e, 0);
  LLVMValueRef rem = bi;
  for (int k = d->batch_rank - 1; k >= 0; --k) {
    LLVMValueRef idx = k > 0 ? LLVMBuildURem(kb.b, rem, i64c(&e, d->batch_dims[k]), "") : rem;
    if (k > 0) rem = LLVMBuildUDiv(kb.b, rem, i64c(&e, d->batch_dims[k]), "");
    e.a_off = hc_kb_iadd(&kb, e.a_off, imul_c(&e, idx, d->a_bs[k]));
    e.b_off = hc_kb_iadd(&kb, e.b_off, imul_c(&e, idx, d->b_bs[k]));
  }
  e.y_off = imul_c(&e, bi, d->M * d->N);
  e.bi = bi;
  LLVMValueRef m0 = imul_c(&e, rb, MM_MR);

  int64_t full_rb = d->M / MM_MR, rem_rows = d->M % MM_MR;
  for (int part = 0; part < 2; ++part) {
    int rows = part == 0 ? MM_MR : (int)rem_rows;
    if (rows == 0 || (part == 0 && full_rb == 0)) continue;
    bool guarded = part == 0 ? rem_rows != 0 : full_rb != 0;
    hc_if g;
    if (guarded)
      hc_if_begin(&kb, &g, LLVMBuildICmp(kb.b, part == 0 ? LLVMIntSLT : LLVMIntSGE, rb, i64c(&e, full_rb), ""));
    emit_tile(&e, form, rows, m0, cb);
    if (guarded) hc_if_end(&kb, &g);
  }
  hc_loop_end(&kb, &task);

  double mnb = (double)d->M * (double)d->N * (double)d->batch;
  double flops = 2.0 * mnb * (double)d->K + (d->c ? 2.0 * mnb : 0.0);
  double bytes = (double)hc_value_nbytes(d->a) + (double)hc_value_nbytes(d->b) + (double)hc_value_nbytes(d->y) +
                 (d->c ? (double)hc_value_nbytes(d->c) : 0.0);
  hc_kb_end(&kb, flops, bytes);
  return HX_OK;
}

/* ---- the register-tiled fast path (float32) ---------------------------------
 *
 * BLIS structure over the micro-kernel of gemm_microkernel.h: the output is
 * cut into blocks of MC rows x NC columns, one task each (times the batch);
 * inside a task the reduction is split into KC-long slices, and for every
 * slice each NR-wide panel of B (vectors) is swept over every MR-row tile of
 * A (broadcasts), so the B micro-panel stays in L1 while the A rows stream
 * from L2. B is read from HC_PACK_PANELS panels: packed at compile time when
 * it is a constant (pack-weights pass), packed by a "packb" kernel into the
 * workspace when it is a large run-time tensor, or read in place (row-major,
 * small or single-tile products). A is always read in place (its broadcasts
 * touch MR rows, one cache line per 16 steps each). Partial sums of a split
 * reduction live in Y; the last slice applies alpha, beta*C and the fused
 * ops. */

enum { B_DIRECT, B_PACKED, B_WORKSPACE };

/* Tile and blocking of one fast product. */
typedef struct fast_plan {
  unsigned vl;
  int mr, nv;
  int64_t nr, kc, mc, nc; /* nr = nv*vl; mc, nc multiples of mr, nr (nc: the nominal column block; the
                           * kernel spaces nnb blocks evenly, emit_matmul_fast) */
  int64_t nmb, nnb, nkb;
  int b_mode;
  int64_t pw, panels;     /* panel width and panels per B matrix (packed modes) */
  int64_t nbmat;          /* distinct B matrices (batch) */
} fast_plan;


/* Rows of A that one B element meets: more than a few tiles make packing
 * B pay off. */
static int64_t total_rows(const mm_desc* d) { return d->M * (d->batch > 0 ? d->batch : 1); }

/* B is read in place when it is small (fits L1/L2 comfortably) or meets
 * too few rows of A to amortise a copy; otherwise it is packed. Decided from
 * shapes only (the workspace size must not depend on the target). */
static int b_mode_of(const mm_desc* d) {
  if (d->b_packed) return B_PACKED;
  if (d->b_sn == 1 && (d->direct_b || d->K * d->N <= 16384 || total_rows(d) <= 16)) return B_DIRECT;
  return B_WORKSPACE;
}

static int64_t nb_matrices(const mm_desc* d) {
  int64_t n = 1;
  for (int i = 0; i < d->batch_rank; ++i)
    if (d->b_bs[i]) n *= d->batch_dims[i];
  return n;
}

static void plan_fast(const hc_lower_ctx* lc, const mm_desc* d, fast_plan* p) {
  memset(p, 0, sizeof *p);
  p->vl = hc_ukr_lanes(lc, d->dt);
  int regs = hc_ukr_registers(lc);
  int max_acc = regs == 32 ? 28 : 12;
  p->b_mode = b_mode_of(d);
  p->pw = hc_pack_panel_width(d->dt);
  int64_t nvec = (d->N + p->vl - 1) / p->vl;
  int mr = regs == 32 ? 6 : 6, nv = regs == 32 ? 4 : 2;
  if (d->a_st) {
    /* Narrowed A (a convolution's weights): every broadcast is widened on
     * the FMA ports, so fewer, wider rows spend fewer conversions per FMA
     * (4 x 6 on AVX-512; AVX2 has no wider tile that fits its registers). */
    mr = regs == 32 ? 4 : 6;
    nv = regs == 32 ? 6 : 2;
  }
  if (regs == 32 && !d->a_st && p->b_mode == B_DIRECT && d->M % 8 == 0 && d->M % 6 != 0 && nvec >= 3) {
    /* Row counts that are multiples of 8 but not of 6 (convolution
     * channels: 64, 128, 256, 512...): 8 x 3 tiles leave no ragged row
     * tile; measured 3-7% faster on ResNet-50's 1x1 convolutions. */
    mr = 8;
    nv = 3;
  }
  if (nv > nvec) nv = (int)nvec;
  if (p->b_mode != B_DIRECT) {
    /* Tiles cover whole panels: nv*vl a multiple of the panel width. */
    int per = (int)(p->pw / p->vl) > 0 ? (int)(p->pw / p->vl) : 1;
    nv = (nv + per - 1) / per * per;
  }
  if (nv < 1) nv = 1;
  if (nv > HC_UKR_MAX_NV) nv = HC_UKR_MAX_NV;
  if (mr * nv > max_acc) mr = max_acc / nv;
  if (d->M * (d->fold_m ? 1 : 1) < mr) {
    mr = (int)d->M;
    /* Few rows: widen the tile so enough FMAs are independent. */
    int per = p->b_mode != B_DIRECT && p->pw > p->vl ? (int)(p->pw / p->vl) : 1;
    int want = max_acc / mr;
    /* But only as wide as fits the registers (one row is exempt): 4 x 7 on
     * AVX-512, 3 x 4 and 2 x 6 on AVX2 spilled, and a MatMul of 2-4 rows by
     * a 512 x 1024 weight ran 1.4-1.7x faster as 4 x 6, 3 x 2 and 2 x 4. */
    while (mr > 1 && want > 1 && !hc_ukr_tile_fits(lc, mr, want)) --want;
    if (want > HC_UKR_MAX_NV) want = HC_UKR_MAX_NV;
    want = want / per * per;
    int64_t cap = (nvec + per - 1) / per * per;
    if (want > cap) want = (int)cap;
    if (want > nv) nv = want;
  } else if (mr * nv < max_acc && nv >= nvec) {
    /* Narrow B: taller tiles instead, as tall as fits the registers: on
     * AVX-512 a 64-column B gave 7 x 4 (33 registers), which spilled and
     * ran an SGEMM 3136x64x576 at 122 GFLOP/s; 6 x 4 runs it at 222. */
    mr = max_acc / nv;
    while (mr > 1 && !hc_ukr_tile_fits(lc, mr, nv)) --mr;
    if (mr > 14) mr = 14;
    if (mr > d->M) mr = (int)d->M;
  }
  if (mr < 1) mr = 1;
  /* A few rows against a large B (a batch-1 Gemm on a weight matrix): the
   * time is B streaming from L2 or memory, not the FMAs, so at least two
   * column tiles let two threads each stream half of B, and keep that half
   * in their own L2 from run to run (the runtime gives thread i the same
   * tasks every time). */
  int64_t b_bytes = d->K * d->N * (int64_t)hx_dtype_size(d->b_st ? d->b_st : d->dt);
  bool streams_b = d->M * d->batch <= 4 && b_bytes >= ((int64_t)256 << 10);
  if (streams_b) {
    int per = p->b_mode != B_DIRECT && p->pw > p->vl ? (int)(p->pw / p->vl) : 1;
    int half = (int)((nvec + 1) / 2);
    half = (half + per - 1) / per * per;
    if (half >= per && half < nv) nv = half;
  }
  p->mr = mr;
  p->nv = nv;
  p->nr = (int64_t)nv * p->vl;
  /* KC: the B micro-panel (kc x nr) takes 5/8 of L1, where the tiles of A
   * and C leave it (20 KiB of a 32 KiB L1; 30 KiB of Zen 5's 48 KiB, where
   * SGEMM 1024^3 ran 3.2% faster than with 20 KiB, and 40 KiB 2.3%). */
  int64_t kc = (int64_t)hc_ukr_l1d_bytes(lc) * 5 / 8 / (p->nr * 4);
  if (kc < 64) kc = 64;
  if (kc > 512) kc = 512;
  if (d->K <= kc + kc / 2) kc = d->K;
  /* Even slices: K = 1024 with kc = 320 would leave a last slice of 64
   * steps that pays a whole slice's partial-sum traffic for a fifth of the
   * work (SGEMM 1024^3 with AVX2: about 5% slower than 4 x 256). */
  int64_t slices = (d->K + kc - 1) / kc;
  if (slices > 1) kc = ((d->K + slices - 1) / slices + 7) / 8 * 8;
  p->kc = kc;
  p->nkb = (d->K + kc - 1) / kc;
  int64_t mt = (d->M + mr - 1) / mr, nt = (d->N + p->nr - 1) / p->nr;
  /* MC x NC blocks (about 96 x 512): a block of A stays in L2 while the
   * block's B panels sweep it. */
  int64_t mct = 96 / mr, nct = 512 / p->nr;
  if (mct < 1) mct = 1;
  if (nct < 1) nct = 1;
  if (mct > mt) mct = mt;
  if (nct > nt) nct = nt;
  /* At least 8 tasks where the product is big enough to share. */
  double work = 2.0 * (double)d->M * (double)d->N * (double)d->K * (double)d->batch;
  int want_tasks = work > 4e6 ? 8 : work > 1e6 ? 4 : streams_b ? 2 : 1;
  /* B streamed from beyond L2 (a classifier's 1280 x 1000 weights: 5 MB)
   * runs at whatever rate each part of it comes in: some lines from L3,
   * others from memory, which part differs from run to run. With four
   * tasks two threads took two each and one waited for the other for 40%
   * of the kernel (MobileNetV2's classifier: 66-70 against 121-127 us,
   * `trace_idle.py`); with eight the one that finishes first takes the
   * other's last tasks. */
  if (streams_b && b_bytes >= ((int64_t)1 << 20) && want_tasks < 8) want_tasks = 8;
  while (d->batch * ((mt + mct - 1) / mct) * ((nt + nct - 1) / nct) < want_tasks && (mct > 1 || nct > 1)) {
    if (mct * mr >= nct * p->nr && mct > 1)
      mct = (mct + 1) / 2;
    else if (nct > 1)
      nct = (nct + 1) / 2;
    else
      mct = (mct + 1) / 2;
  }
  /* Even blocks: 22 row tiles in two blocks are 11 + 11, not 16 + 6, so
   * that two threads splitting the tasks finish together. */
  int64_t nmb = (mt + mct - 1) / mct, nnb = (nt + nct - 1) / nct;
  /* An even number of tasks: the runtime gives each of two threads half
   * of them, and the odd one out leaves a thread idle for a task's time
   * (ResNet-50's 56x56 1x1 convolutions had 13 and 21 tasks; MobileNetV2's
   * 112x112 and 56x56 ones 25 and 13): column blocks of a few panels
   * fewer or more, the nearest width that gives an even count (49 panels:
   * 10 blocks of 5, not 13 of 4). */
  int64_t nb_batch = d->batch > 0 ? d->batch : 1;
  if ((nb_batch * nmb * nnb) % 2 == 1 && nb_batch * nmb * nnb > 1 && nnb > 1) {
    int64_t w0 = (nt + nnb - 1) / nnb;
    for (int64_t delta = 1; delta <= (w0 + 1) / 2; ++delta) {
      int64_t w = w0 - delta, real = w >= 1 ? (nt + w - 1) / w : 0;
      if (real < 2 || (nb_batch * nmb * real) % 2) {
        w = w0 + delta;
        real = (nt + w - 1) / w;
      }
      if (real >= 2 && (nb_batch * nmb * real) % 2 == 0) {
        nnb = real;
        break;
      }
    }
  }
  mct = (mt + nmb - 1) / nmb;
  nct = (nt + nnb - 1) / nnb;
  p->mc = mct * mr;
  p->nc = nct * p->nr;
  p->nmb = (d->M + p->mc - 1) / p->mc;
  p->nnb = (d->N + p->nc - 1) / p->nc;
  p->panels = (d->N + p->pw - 1) / p->pw;
  p->nbmat = nb_matrices(d);
}

/* Packs B (K x N with strides b_sk, b_sn, nbmat matrices of b_mat elements)
 * into [nbmat][panels][K][pw] panels, zero beyond N. */
static void pack_panels_f32(const float* b, int64_t nbmat, int64_t bmat, int64_t K, int64_t N, int64_t b_sk,
                            int64_t b_sn, int64_t pw, float* out) {
  int64_t panels = (N + pw - 1) / pw;
  for (int64_t m = 0; m < nbmat; ++m)
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < pw; ++j) {
          int64_t n = p * pw + j;
          out[((m * panels + p) * K + k) * pw + j] = n < N ? b[m * bmat + k * b_sk + n * b_sn] : 0.0f;
        }
}

/* Copies 16 narrowed elements (st: 1 or 2 bytes) from src[sidx] to
 * dst[didx] as integers, the first `valid` read, zeros after. */
static void copy_narrow(hc_kb* kb, hx_dtype_t st, LLVMValueRef src, LLVMValueRef sidx, LLVMValueRef dst, LLVMValueRef didx,
                        unsigned valid) {
  hx_dtype_t it = hx_dtype_size(st) == 1 ? HX_DTYPE_INT8 : HX_DTYPE_INT16;
  LLVMTypeRef et = hx_dtype_size(st) == 1 ? kb->t_i8 : kb->t_i16, vt = LLVMVectorType(et, 16);
  LLVMValueRef v = LLVMConstNull(vt);
  if (valid >= 16) {
    v = LLVMBuildLoad2(kb->b, vt, hc_kb_gep(kb, it, src, sidx), "");
    LLVMSetAlignment(v, 1);
  } else {
    for (unsigned l = 0; l < valid; ++l) {
      LLVMValueRef e = LLVMBuildLoad2(kb->b, et, hc_kb_gep(kb, it, src, hc_kb_iadd(kb, sidx, hc_kb_i64(kb, l))), "");
      v = LLVMBuildInsertElement(kb->b, v, e, LLVMConstInt(kb->t_i32, l, 0), "");
    }
  }
  LLVMValueRef stv = LLVMBuildStore(kb->b, v, hc_kb_gep(kb, it, dst, didx));
  LLVMSetAlignment(stv, 1);
}

/* Element offset of B matrix m (counting only the batch dimensions B is
 * not broadcast over, the last fastest, as the packed copies are laid out):
 * MatMul's matrices lie K * N apart, an Einsum's wherever its labels put
 * them. */
static LLVMValueRef b_matrix_offset(hc_kb* kb, const mm_desc* d, LLVMValueRef m) {
  LLVMValueRef off = hc_kb_i64(kb, 0);
  for (int k = d->batch_rank - 1; k >= 0; --k) {
    if (!d->b_bs[k]) continue;
    LLVMValueRef idx = LLVMBuildURem(kb->b, m, hc_kb_i64(kb, d->batch_dims[k]), "");
    m = LLVMBuildUDiv(kb->b, m, hc_kb_i64(kb, d->batch_dims[k]), "");
    off = hc_kb_iadd(kb, off, hc_kb_imul(kb, idx, hc_kb_i64(kb, d->b_bs[k])));
  }
  return off;
}

/* Transposes the 16 x 16 block whose rows are r[0..16) in place: four
 * stages, each swapping one bit of the row index with the same bit of the
 * lane index, two-source shuffles of 16 lanes (vpermt2ps on AVX-512). */
static void transpose16(hc_kb* kb, LLVMValueRef* r) {
  for (int h = 8; h >= 1; h /= 2) {
    LLVMValueRef lo[16], hi[16];
    for (int l = 0; l < 16; ++l) {
      lo[l] = LLVMConstInt(kb->t_i32, (unsigned)((l & h) ? 16 + l - h : l), 0);
      hi[l] = LLVMConstInt(kb->t_i32, (unsigned)((l & h) ? 16 + l : l + h), 0);
    }
    LLVMValueRef mlo = LLVMConstVector(lo, 16), mhi = LLVMConstVector(hi, 16);
    for (int i = 0; i < 16; ++i) {
      if (i & h) continue;
      LLVMValueRef a = r[i], b = r[i | h];
      r[i] = LLVMBuildShuffleVector(kb->b, a, b, mlo, "");
      r[i | h] = LLVMBuildShuffleVector(kb->b, a, b, mhi, "");
    }
  }
}

/* One 16-column float32 panel of a B whose columns are contiguous along K
 * (b_sk == 1: a transposed B, an Einsum's "bhjd" keys): 16 x 16 blocks are
 * read a column at a time, transposed in registers and stored as 16 panel
 * rows. Columns past `width` (the last panel) are zeros; the last block of
 * K reads and stores only its rows. Element by element, the packing had
 * taken as long as MaxViT's attention products it fed. */
static void pack_b_columns(hc_kb* kb, const mm_desc* d, LLVMValueRef B, LLVMValueRef src, LLVMValueRef WS,
                           LLVMValueRef dst, LLVMValueRef width) {
  LLVMValueRef zero = LLVMConstNull(hc_ukr_vtype(kb, d->dt, 16));
  LLVMValueRef last = LLVMBuildSub(kb->b, hc_kb_imin(kb, width, hc_kb_i64(kb, 16)), hc_kb_i64(kb, 1), "");
  int64_t full = d->K / 16, tail = d->K % 16;
  for (int part = 0; part < 2; ++part) {
    int64_t count = part == 0 ? full : (tail ? 1 : 0);
    if (count == 0) continue;
    unsigned rows = part == 0 ? 16 : (unsigned)tail;
    hc_loop kl;
    LLVMValueRef kblk = hc_loop_begin(kb, &kl, hc_kb_i64(kb, 0), hc_kb_i64(kb, count), "kb");
    LLVMValueRef k0 = part == 0 ? hc_kb_imul(kb, kblk, hc_kb_i64(kb, 16)) : hc_kb_i64(kb, full * 16);
    LLVMValueRef r[16];
    for (int j = 0; j < 16; ++j) {
      /* Columns past the matrix read its last one (in bounds) and are zeroed. */
      LLVMValueRef jj = hc_kb_imin(kb, hc_kb_i64(kb, j), last);
      LLVMValueRef v = hc_ukr_load(kb, d->dt, B, hc_kb_iadd(kb, src, hc_kb_iadd(kb, k0, hc_kb_imul(kb, jj, hc_kb_i64(kb, d->b_sn)))), 16, rows);
      r[j] = LLVMBuildSelect(kb->b, LLVMBuildICmp(kb->b, LLVMIntSLT, hc_kb_i64(kb, j), width, ""), v, zero, "");
    }
    transpose16(kb, r);
    for (unsigned i = 0; i < rows; ++i)
      hc_ukr_store(kb, d->dt, WS, hc_kb_iadd(kb, dst, hc_kb_imul(kb, hc_kb_iadd(kb, k0, hc_kb_i64(kb, i)), hc_kb_i64(kb, 16))), r[i], 16, 16);
    hc_loop_end(kb, &kl);
  }
}

/* The run-time version of pack_panels_f32: one task per panel. Rows of B
 * (b_sn == 1) are copied a vector at a time (masked in the last panel);
 * columns contiguous along K a 16 x 16 block at a time (pack_b_columns);
 * other layouts element by element. */
static hx_status_t emit_pack_b(hc_lower_ctx* lc, const hc_node* n, const mm_desc* d, const fast_plan* p) {
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "packb", p->nbmat * p->panels, &kb));
  LLVMValueRef B = hc_kb_ptr(&kb, d->b), WS = hc_kb_workspace(&kb);
  hc_loop task, kl, jl;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef m = LLVMBuildUDiv(kb.b, t, hc_kb_i64(&kb, p->panels), "");
  LLVMValueRef pn = LLVMBuildURem(kb.b, t, hc_kb_i64(&kb, p->panels), "");
  LLVMValueRef n0 = hc_kb_imul(&kb, pn, hc_kb_i64(&kb, p->pw));
  LLVMValueRef src = hc_kb_iadd(&kb, b_matrix_offset(&kb, d, m), hc_kb_imul(&kb, n0, hc_kb_i64(&kb, d->b_sn)));
  LLVMValueRef dst = hc_kb_imul(&kb, t, hc_kb_i64(&kb, d->K * p->pw));
  if (d->b_sn == 1) {
    int64_t full = d->N / p->pw, tail = d->N % p->pw;
    for (int part = 0; part < 2; ++part) {
      int64_t width = part == 0 ? p->pw : tail;
      if (width == 0 || (part == 0 && full == 0)) continue;
      hc_if g;
      bool guarded = part == 0 ? tail != 0 : full != 0;
      if (guarded)
        hc_if_begin(&kb, &g, LLVMBuildICmp(kb.b, part == 0 ? LLVMIntSLT : LLVMIntSGE, pn, hc_kb_i64(&kb, full), ""));
      LLVMValueRef k = hc_loop_begin(&kb, &kl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, d->K), "k");
      LLVMValueRef srow = hc_kb_iadd(&kb, src, hc_kb_imul(&kb, k, hc_kb_i64(&kb, d->b_sk)));
      LLVMValueRef drow = hc_kb_iadd(&kb, dst, hc_kb_imul(&kb, k, hc_kb_i64(&kb, p->pw)));
      for (int64_t c = 0; c < p->pw; c += 16) {
        int64_t valid = width - c < 0 ? 0 : width - c > 16 ? 16 : width - c;
        if (d->b_st) {
          copy_narrow(&kb, d->b_st, B, hc_kb_iadd(&kb, srow, hc_kb_i64(&kb, c)), WS, hc_kb_iadd(&kb, drow, hc_kb_i64(&kb, c)),
                      (unsigned)valid);
          continue;
        }
        LLVMValueRef v = valid ? hc_ukr_load(&kb, d->dt, B, hc_kb_iadd(&kb, srow, hc_kb_i64(&kb, c)), 16, (unsigned)valid)
                               : LLVMConstNull(hc_ukr_vtype(&kb, d->dt, 16));
        hc_ukr_store(&kb, d->dt, WS, hc_kb_iadd(&kb, drow, hc_kb_i64(&kb, c)), v, 16, 16);
      }
      hc_loop_end(&kb, &kl);
      if (guarded) hc_if_end(&kb, &g);
    }
  } else if (d->b_sk == 1 && !d->b_st && d->dt == HX_DTYPE_FLOAT32 && p->pw == 16) {
    pack_b_columns(&kb, d, B, src, WS, dst, LLVMBuildSub(kb.b, hc_kb_i64(&kb, d->N), n0, ""));
  } else {
    LLVMValueRef width = hc_kb_imin(&kb, hc_kb_i64(&kb, p->pw), LLVMBuildSub(kb.b, hc_kb_i64(&kb, d->N), n0, ""));
    LLVMValueRef k = hc_loop_begin(&kb, &kl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, d->K), "k");
    LLVMValueRef srow = hc_kb_iadd(&kb, src, hc_kb_imul(&kb, k, hc_kb_i64(&kb, d->b_sk)));
    LLVMValueRef drow = hc_kb_iadd(&kb, dst, hc_kb_imul(&kb, k, hc_kb_i64(&kb, p->pw)));
    LLVMValueRef j = hc_loop_begin(&kb, &jl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, p->pw), "j");
    LLVMValueRef inb = LLVMBuildICmp(kb.b, LLVMIntSLT, j, width, "");
    LLVMValueRef jj = hc_kb_imin(&kb, j, LLVMBuildSub(kb.b, width, hc_kb_i64(&kb, 1), ""));
    /* Narrowed elements are copied in their own type (a float16 or
     * bfloat16 value survives the round trip through float32 exactly). */
    hx_dtype_t et = d->b_st ? d->b_st : d->dt;
    LLVMValueRef v = hc_kb_load(&kb, et, B, hc_kb_iadd(&kb, srow, hc_kb_imul(&kb, jj, hc_kb_i64(&kb, d->b_sn))));
    v = LLVMBuildSelect(kb.b, inb, v, hc_kb_const(&kb, et, 0), "");
    hc_kb_store(&kb, et, WS, hc_kb_iadd(&kb, drow, j), v);
    hc_loop_end(&kb, &jl);
    hc_loop_end(&kb, &kl);
  }
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, 0, (double)hc_value_nbytes(d->b) +
                       (double)(p->nbmat * p->panels * d->K * p->pw) * (double)hx_dtype_size(d->b_st ? d->b_st : d->dt));
  return HX_OK;
}

/* Kernel-time state of the fast product. */
typedef struct fast_emit {
  hc_kb* kb;
  const mm_desc* d;
  const fast_plan* p;
  LLVMValueRef pa, pb, pc, py;
  LLVMValueRef a_off, b_off, y_off, bi; /* per task */
  LLVMValueRef tile;                    /* [mr * nr] float stack buffer (fused epilogue) */
  hc_epilogue epi;
  bool scalar_epilogue;
  bool c_seeds;                         /* C starts the accumulators (one slice, alpha = beta = 1) */
  bool prefetch_y;                      /* prefetch_next_panel_y before each tile */
  bool prefetch_y_lines;                /* ...Y's own lines too (not in place over an operand) */
  /* int8 weights: per-channel scales of A (per row) and B (per column of
   * B matrix bmat), NULL when the operand has none. */
  hc_ukr_scales sa, sb;
  LLVMValueRef bmat;
} fast_emit;

/* Final values of a tile: alpha, beta*C, then the fused ops, stored to Y.
 * rows x (cols) at (m, n); acc[i*nv + v]. */
static void fast_store_final(fast_emit* e, int rows, int nv, unsigned lanes, LLVMValueRef m, LLVMValueRef n,
                             LLVMValueRef* acc) {
  hc_kb* kb = e->kb;
  const mm_desc* d = e->d;
  const fast_plan* p = e->p;
  unsigned vl = p->vl;
  LLVMTypeRef vt = hc_ukr_vtype(kb, d->dt, vl);
  bool use_c = d->c && d->beta != 0.0 && !e->c_seeds;
  /* int8 weights: the sums times the channel scales, before alpha and C. */
  LLVMValueRef sbv[HC_UKR_MAX_NV] = {0};
  if (e->sb.ptr) {
    LLVMValueRef s0 = hc_kb_iadd(kb, hc_kb_imul(kb, e->bmat, hc_kb_i64(kb, d->N)), n);
    for (int v = 0; v < nv; ++v)
      sbv[v] = hc_ukr_load_scales(kb, &e->sb, hc_kb_iadd(kb, s0, hc_kb_i64(kb, (int64_t)v * vl)), vl,
                                  v == nv - 1 ? lanes : vl);
  }
  for (int i = 0; i < rows; ++i) {
    LLVMValueRef mi = hc_kb_iadd(kb, m, hc_kb_i64(kb, i));
    LLVMValueRef sav = e->sa.ptr ? hc_kb_splat(kb, hc_ukr_load_scales(kb, &e->sa, mi, 1, 1), vl) : NULL;
    LLVMValueRef yrow = hc_kb_iadd(kb, e->y_off, hc_kb_iadd(kb, hc_kb_imul(kb, mi, hc_kb_i64(kb, d->N)), n));
    LLVMValueRef crow = use_c ? hc_kb_imul(kb, mi, hc_kb_i64(kb, d->c_sm)) : NULL;
    LLVMValueRef cs = NULL;
    if (use_c && d->c_sn == 0) cs = hc_kb_splat(kb, hc_kb_load(kb, d->dt, e->pc, crow), vl);
    for (int v = 0; v < nv; ++v) {
      unsigned valid = v == nv - 1 ? lanes : vl;
      LLVMValueRef x = acc[i * nv + v];
      if (sav) x = LLVMBuildFMul(kb->b, x, sav, "");
      if (sbv[v]) x = LLVMBuildFMul(kb->b, x, sbv[v], "");
      if (d->alpha != 1.0) x = LLVMBuildFMul(kb->b, x, hc_kb_splat(kb, LLVMConstReal(kb->t_f32, d->alpha), vl), "");
      if (use_c) {
        LLVMValueRef cv = cs;
        if (!cv) {
          LLVMValueRef ci = hc_kb_iadd(kb, crow, hc_kb_iadd(kb, n, hc_kb_i64(kb, (int64_t)v * vl)));
          cv = hc_ukr_load(kb, d->dt, e->pc, ci, vl, valid);
        }
        if (d->beta != 1.0) cv = LLVMBuildFMul(kb->b, cv, hc_kb_splat(kb, LLVMConstReal(kb->t_f32, d->beta), vl), "");
        x = LLVMBuildFAdd(kb->b, x, cv, "");
      }
      if (e->epi.count && !e->scalar_epilogue) {
        LLVMValueRef coord[3];
        epilogue_coords(kb, d, e->bi, mi, hc_kb_iadd(kb, n, hc_kb_i64(kb, (int64_t)v * vl)), coord);
        x = hc_epilogue_apply_vec(kb, &e->epi, x, coord, 2, valid);
      }
      if (e->scalar_epilogue) {
        LLVMValueRef idx = hc_kb_i64(kb, (int64_t)i * p->nr + (int64_t)v * vl);
        LLVMValueRef st = LLVMBuildStore(kb->b, x, LLVMBuildGEP2(kb->b, kb->t_f32, e->tile, &idx, 1, ""));
        LLVMSetAlignment(st, 4);
      } else {
        hc_ukr_store(kb, d->dt, e->py, hc_kb_iadd(kb, yrow, hc_kb_i64(kb, (int64_t)v * vl)), x, vl, valid);
      }
    }
  }
  (void)vt;
  if (!e->scalar_epilogue) return;
  /* Fused ops element by element over the tile (a loop LLVM vectorises);
   * with an operand, into the tile first and stored in a second pass
   * (hc_epilogue_heavy_with_operands). */
  int64_t cols = (int64_t)(nv - 1) * vl + lanes;
  bool split = hc_epilogue_heavy_with_operands(e->epi.node);
  for (int pass = split ? 0 : 1; pass < 2; ++pass) {
    hc_loop rl, cl;
    LLVMValueRef r = hc_loop_begin(kb, &rl, hc_kb_i64(kb, 0), hc_kb_i64(kb, rows), "er");
    LLVMValueRef mi = hc_kb_iadd(kb, m, r);
    LLVMValueRef yrow = hc_kb_iadd(kb, e->y_off, hc_kb_iadd(kb, hc_kb_imul(kb, mi, hc_kb_i64(kb, d->N)), n));
    LLVMValueRef trow = hc_kb_imul(kb, r, hc_kb_i64(kb, p->nr));
    LLVMValueRef c = hc_loop_begin(kb, &cl, hc_kb_i64(kb, 0), hc_kb_i64(kb, cols), pass ? "ec" : "ea");
    LLVMValueRef ti = hc_kb_iadd(kb, trow, c);
    LLVMValueRef tp = LLVMBuildGEP2(kb->b, kb->t_f32, e->tile, &ti, 1, "");
    LLVMValueRef x = LLVMBuildLoad2(kb->b, kb->t_f32, tp, "");
    if (pass == 0 || !split) {
      LLVMValueRef coord[3];
      epilogue_coords(kb, d, e->bi, mi, hc_kb_iadd(kb, n, c), coord);
      x = hc_epilogue_apply(kb, &e->epi, x, coord);
    }
    if (pass == 0)
      LLVMBuildStore(kb->b, x, tp);
    else
      hc_kb_store(kb, d->dt, e->py, hc_kb_iadd(kb, yrow, c), x);
    hc_loop_end(kb, &cl);
    /* Rows stay a loop: unrolled, every row would repeat the vectorised
     * element loop (a SiLU epilogue made a 40x120 MatMul's kernel 24 KB). */
    hc_loop_end_rolled(kb, &rl);
  }
}

/* Prefetches into L2 the lines of Y that the tile at (m, n + nr), the same
 * rows of the next column panel, will store, and those its epilogue
 * operands (a residual) will read. A panel sweeps every row tile of its
 * block before moving right, so each row of Y is visited one line at a time
 * with a whole panel's tiles in between: a pattern of many far-apart
 * streams that the hardware prefetchers do not follow, and a big Y
 * (ResNet-50's 56x56x256 residual) came from L3 or memory with every tile
 * waiting on its stores' and operands' lines. One panel ahead is about
 * mc/mr tiles' time, enough to hide memory's latency. */
static void prefetch_next_panel_y(fast_emit* e, int rows, LLVMValueRef m, LLVMValueRef n) {
  hc_kb* kb = e->kb;
  const mm_desc* d = e->d;
  const fast_plan* p = e->p;
  LLVMValueRef nn = hc_kb_iadd(kb, n, hc_kb_i64(kb, p->nr));
  /* One prefetch per 64-byte line of the tile's row (16 floats), and one
   * at its last element when rows do not start on a line. */
  int64_t offs[HC_UKR_MAX_NV + 1];
  int count = 0;
  for (int64_t o = 0; o < p->nr; o += 16) offs[count++] = o;
  if ((d->N * 4) % 64) offs[count++] = p->nr - 1;
  for (int i = 0; i < rows; ++i) {
    LLVMValueRef mi = hc_kb_iadd(kb, m, hc_kb_i64(kb, i));
    LLVMValueRef yrow = hc_kb_iadd(kb, e->y_off, hc_kb_iadd(kb, hc_kb_imul(kb, mi, hc_kb_i64(kb, d->N)), nn));
    for (int j = 0; j < count; ++j) {
      LLVMValueRef off = hc_kb_i64(kb, offs[j]);
      if (e->prefetch_y_lines) hc_kb_prefetch(kb, hc_kb_gep(kb, d->dt, e->py, hc_kb_iadd(kb, yrow, off)), 2);
      LLVMValueRef coord[3];
      epilogue_coords(kb, d, e->bi, mi, hc_kb_iadd(kb, nn, off), coord);
      hc_epilogue_prefetch(kb, &e->epi, coord, 2, 2);
    }
  }
}

/* One tile: rows x (nv vectors, the last with `lanes` lanes) at (m, n) of
 * the reduction slice [k0, k0 + kcur); first/last: runtime i1 (or NULL when
 * the reduction is not split). */
static void fast_tile(fast_emit* e, int rows, int nv, unsigned lanes, LLVMValueRef m, LLVMValueRef n, LLVMValueRef k0,
                      LLVMValueRef kcur, LLVMValueRef first, LLVMValueRef last) {
  hc_kb* kb = e->kb;
  const mm_desc* d = e->d;
  const fast_plan* p = e->p;
  unsigned vl = p->vl;
  hc_ukr u;
  memset(&u, 0, sizeof u);
  u.dt = d->dt;
  u.mr = rows;
  u.nv = nv;
  u.vl = vl;
  u.a = e->pa;
  u.b = e->pb;
  u.outer = kcur;
  u.nterms = 1;
  u.a_st = d->a_st;
  u.b_st = d->b_st;
  u.a_base = hc_kb_iadd(kb, e->a_off, hc_kb_iadd(kb, hc_kb_imul(kb, m, hc_kb_i64(kb, d->a_sm)), hc_kb_imul(kb, k0, hc_kb_i64(kb, d->a_sk))));
  u.a_outer = d->a_sk;
  for (int i = 0; i < rows; ++i) u.a_row[i] = (int64_t)i * d->a_sm;
  if (p->b_mode == B_DIRECT) {
    u.b_base = hc_kb_iadd(kb, e->b_off, hc_kb_iadd(kb, n, hc_kb_imul(kb, k0, hc_kb_i64(kb, d->b_sk))));
    u.b_outer = d->b_sk;
    for (int v = 0; v < nv; ++v) u.b_vec[v] = (int64_t)v * vl;
    u.last_lanes = lanes;
    if (!u.b_st && d->K >= 64 && d->K * d->N * (int64_t)hx_dtype_size(d->dt) > hc_ukr_l2_bytes(kb->lc) / 4) {
      /* A B of a quarter of L2 or more read in place (a 1x1 convolution's input
       * planes): its rows are far apart, too many streams for the hardware
       * prefetcher, so the first tile of each panel would wait on memory.
       * Prefetch the next column panel's rows into L2, one vector per step:
       * row tile t of the panel takes vector t mod nv, so the first nv tiles
       * fetch it all. Measured 6-9% faster on ResNet-50's 1x1 convolutions
       * with 1.6-3.2 MB inputs (Zen 5, 1 MiB L2). In a model an input of a
       * quarter of L2 or more is mostly not in L2 any more when the kernel
       * starts: the kernel before wrote it beside its own operands. On an
       * Intel Xeon with 2 MiB of L2 (stop 33), ResNet-50's 1x1s with
       * 0.8-1.6 MB inputs, which the L2 threshold had left out, ran in
       * 0.92 of the time at one thread and 0.90 at two (ab_profile.py
       * groups, paired), MobileNetV2's 56x56 projections in 0.87;
       * PP-OCRv4 det's seven such kernels were unchanged (1.01). */
      LLVMValueRef t = LLVMBuildURem(kb->b, LLVMBuildUDiv(kb->b, m, hc_kb_i64(kb, p->mr), ""), hc_kb_i64(kb, nv), "");
      u.pf_base = hc_kb_iadd(kb, u.b_base, hc_kb_iadd(kb, hc_kb_i64(kb, p->nr), hc_kb_imul(kb, t, hc_kb_i64(kb, vl))));
      u.pf_locality = 2;
    }
  } else {
    /* Panel n/pw of this B matrix, row k0. */
    LLVMValueRef panel = LLVMBuildUDiv(kb->b, n, hc_kb_i64(kb, p->pw), "");
    u.b_base = hc_kb_iadd(kb, e->b_off,
                          hc_kb_iadd(kb, hc_kb_imul(kb, panel, hc_kb_i64(kb, d->K * p->pw)), hc_kb_imul(kb, k0, hc_kb_i64(kb, p->pw))));
    u.b_outer = p->pw;
    for (int v = 0; v < nv; ++v) {
      int64_t col = (int64_t)v * vl;
      u.b_vec[v] = col / p->pw * d->K * p->pw + col % p->pw;
    }
    u.last_lanes = vl; /* panels are zero-padded */
    /* A block's panels larger than L2 come from L3 or memory for every
     * block, each panel's slice (16 KiB) waited for by the first of the
     * block's row tiles while the hardware prefetcher ramps up. The tiles
     * share out prefetching the next panels' slice into L2 instead (as the
     * conv channels kernel's pf_next): SGEMM 1024^3 and 2048^3 (2 and 4
     * MiB of panels per block) in 0.97 and 0.92 of the time; 512^3 (512
     * KiB, L2's size here) was 1.5% slower with it, and keeps without.
     * Weights packed at compile time in a model whose weights exceed L2
     * are not in L2 from the last run, whatever the block's size
     * (hc_ukr_weights_cold). */
    int64_t tiles = p->mc / p->mr;
    int64_t block_bytes = p->nc * d->K * (int64_t)hx_dtype_size(d->b_st ? d->b_st : d->dt);
    bool cold = p->b_mode == B_PACKED ? hc_ukr_weights_cold(kb->lc, block_bytes) : block_bytes > hc_ukr_l2_bytes(kb->lc);
    if (tiles >= 8 && cold) {
      int64_t next = p->nr >= p->pw ? p->nr / p->pw * d->K * p->pw : p->nr;
      u.pf_next = hc_kb_iadd(kb, u.b_base, hc_kb_i64(kb, next));
      u.pf_ord = LLVMBuildURem(kb->b, LLVMBuildUDiv(kb->b, m, hc_kb_i64(kb, p->mr), ""), hc_kb_i64(kb, tiles), "");
      u.pf_ntiles = tiles;
      u.pf_max_outer = p->kc;
      u.pf_locality = 2;
    }
  }
  LLVMValueRef acc[HC_UKR_MAX_MR * HC_UKR_MAX_NV] = {0};
  if (e->c_seeds) {
    /* The accumulators start from C (a bias): no add when storing. */
    for (int i = 0; i < rows; ++i) {
      LLVMValueRef crow = hc_kb_imul(kb, hc_kb_iadd(kb, m, hc_kb_i64(kb, i)), hc_kb_i64(kb, d->c_sm));
      LLVMValueRef cs = d->c_sn == 0 ? hc_kb_splat(kb, hc_kb_load(kb, d->dt, e->pc, crow), vl) : NULL;
      for (int v = 0; v < nv; ++v)
        acc[i * nv + v] = cs ? cs
                             : hc_ukr_load(kb, d->dt, e->pc, hc_kb_iadd(kb, crow, hc_kb_iadd(kb, n, hc_kb_i64(kb, (int64_t)v * vl))), vl,
                                           v == nv - 1 ? lanes : vl);
    }
  }
  if (e->prefetch_y) prefetch_next_panel_y(e, rows, m, n);
  hc_ukr_emit(kb, &u, acc);
  if (!first) {
    fast_store_final(e, rows, nv, lanes, m, n, acc);
    return;
  }
  /* Split reduction: add the partial sums so far, then either park the
   * result in Y or finish it. */
  LLVMBasicBlockRef cur = LLVMGetInsertBlock(kb->b);
  LLVMBasicBlockRef addbb = LLVMAppendBasicBlockInContext(kb->lc->llctx, kb->fn, "partial");
  LLVMBasicBlockRef joinbb = LLVMAppendBasicBlockInContext(kb->lc->llctx, kb->fn, "joined");
  LLVMBuildCondBr(kb->b, first, joinbb, addbb);
  LLVMPositionBuilderAtEnd(kb->b, addbb);
  LLVMValueRef added[HC_UKR_MAX_MR * HC_UKR_MAX_NV];
  for (int i = 0; i < rows; ++i) {
    LLVMValueRef yrow = hc_kb_iadd(kb, e->y_off, hc_kb_iadd(kb, hc_kb_imul(kb, hc_kb_iadd(kb, m, hc_kb_i64(kb, i)), hc_kb_i64(kb, d->N)), n));
    for (int v = 0; v < nv; ++v) {
      unsigned valid = v == nv - 1 ? lanes : vl;
      LLVMValueRef y = hc_ukr_load(kb, d->dt, e->py, hc_kb_iadd(kb, yrow, hc_kb_i64(kb, (int64_t)v * vl)), vl, valid);
      added[i * nv + v] = LLVMBuildFAdd(kb->b, acc[i * nv + v], y, "");
    }
  }
  LLVMBasicBlockRef addend = LLVMGetInsertBlock(kb->b);
  LLVMBuildBr(kb->b, joinbb);
  LLVMPositionBuilderAtEnd(kb->b, joinbb);
  LLVMTypeRef vt = hc_ukr_vtype(kb, d->dt, vl);
  for (int i = 0; i < rows * nv; ++i) {
    LLVMValueRef ph = LLVMBuildPhi(kb->b, vt, "");
    LLVMValueRef in[2] = {acc[i], added[i]};
    LLVMBasicBlockRef from[2] = {cur, addend};
    LLVMAddIncoming(ph, in, from, 2);
    acc[i] = ph;
  }
  hc_if fin;
  LLVMBasicBlockRef parkbb = LLVMAppendBasicBlockInContext(kb->lc->llctx, kb->fn, "park");
  LLVMBasicBlockRef finbb = LLVMAppendBasicBlockInContext(kb->lc->llctx, kb->fn, "final");
  LLVMBasicBlockRef endbb = LLVMAppendBasicBlockInContext(kb->lc->llctx, kb->fn, "tile_end");
  (void)fin;
  LLVMBuildCondBr(kb->b, last, finbb, parkbb);
  LLVMPositionBuilderAtEnd(kb->b, parkbb);
  for (int i = 0; i < rows; ++i) {
    LLVMValueRef yrow = hc_kb_iadd(kb, e->y_off, hc_kb_iadd(kb, hc_kb_imul(kb, hc_kb_iadd(kb, m, hc_kb_i64(kb, i)), hc_kb_i64(kb, d->N)), n));
    for (int v = 0; v < nv; ++v) {
      unsigned valid = v == nv - 1 ? lanes : vl;
      hc_ukr_store(kb, d->dt, e->py, hc_kb_iadd(kb, yrow, hc_kb_i64(kb, (int64_t)v * vl)), acc[i * nv + v], vl, valid);
    }
  }
  LLVMBuildBr(kb->b, endbb);
  LLVMPositionBuilderAtEnd(kb->b, finbb);
  fast_store_final(e, rows, nv, lanes, m, n, acc);
  LLVMBuildBr(kb->b, endbb);
  LLVMPositionBuilderAtEnd(kb->b, endbb);
}

/* All row tiles of one column panel: full tiles, then the ragged one when
 * this block holds the last rows. */
static void fast_panel(fast_emit* e, int nv, unsigned lanes, LLVMValueRef mb, LLVMValueRef n, LLVMValueRef k0,
                       LLVMValueRef kcur, LLVMValueRef first, LLVMValueRef last) {
  hc_kb* kb = e->kb;
  const mm_desc* d = e->d;
  const fast_plan* p = e->p;
  LLVMValueRef m0 = hc_kb_imul(kb, mb, hc_kb_i64(kb, p->mc));
  int64_t last_rows = d->M - (p->nmb - 1) * p->mc;
  LLVMValueRef is_last = LLVMBuildICmp(kb->b, LLVMIntEQ, mb, hc_kb_i64(kb, p->nmb - 1), "");
  LLVMValueRef ntiles = LLVMBuildSelect(kb->b, is_last, hc_kb_i64(kb, last_rows / p->mr), hc_kb_i64(kb, p->mc / p->mr), "");
  hc_loop tl;
  LLVMValueRef ti = hc_loop_begin(kb, &tl, hc_kb_i64(kb, 0), ntiles, "tile");
  fast_tile(e, p->mr, nv, lanes, hc_kb_iadd(kb, m0, hc_kb_imul(kb, ti, hc_kb_i64(kb, p->mr))), n, k0, kcur, first, last);
  hc_loop_end(kb, &tl);
  int rem = (int)(last_rows % p->mr);
  if (rem) {
    hc_if g;
    hc_if_begin(kb, &g, is_last);
    fast_tile(e, rem, nv, lanes, hc_kb_iadd(kb, m0, hc_kb_i64(kb, last_rows - rem)), n, k0, kcur, first, last);
    hc_if_end(kb, &g);
  }
}

static hx_status_t emit_matmul_fast(hc_lower_ctx* lc, const hc_node* n, const mm_desc* d) {
  fast_plan p;
  plan_fast(lc, d, &p);
  /* Split reductions park partial sums in Y: never over an operand the
   * epilogue still has to read (the planner asked inplace_input with the
   * same target; this catches a plan made for another one). */
  for (int k = n->fused_input_base; p.nkb > 1 && k < n->num_inputs; ++k)
    if (k > 0 && hc_epilogue_output_over_operand(n, k))
      return hx_status_make(HX_STATUS_INTERNAL,
                            "node '%s': its product splits the reduction (%lld slices) but its output was planned "
                            "over epilogue operand '%s'",
                            n->name, (long long)p.nkb, n->inputs[k]->name);
  if (p.b_mode == B_WORKSPACE) HX_RETURN_IF_ERROR(emit_pack_b(lc, n, d, &p));
  int64_t tasks = d->batch * p.nmb * p.nnb;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, tasks, &kb));
  fast_emit e = {.kb = &kb, .d = d, .p = &p};
  e.pa = hc_kb_ptr(&kb, d->a);
  e.pb = p.b_mode == B_WORKSPACE ? hc_kb_workspace(&kb) : hc_kb_ptr(&kb, d->b);
  e.pc = d->c ? hc_kb_ptr(&kb, d->c) : NULL;
  e.py = hc_kb_ptr(&kb, d->y);
  int split[2];
  epilogue_split(d, split);
  HX_RETURN_IF_ERROR(hc_epilogue_begin(&kb, n, split, &e.epi));
  e.scalar_epilogue = e.epi.count > 0 && !hc_epilogue_light(n);
  e.c_seeds = d->c && d->beta == 1.0 && d->alpha == 1.0 && p.nkb == 1 && (d->c_sn == 0 || d->c_sn == 1) &&
              d->a_st != HX_DTYPE_INT8 && d->b_st != HX_DTYPE_INT8;
  if (d->a_st == HX_DTYPE_INT8)
    e.sa = hc_ukr_scales_at(&kb, &d->a_scales, hc_kb_ptr(&kb, d->a));
  if (d->b_st == HX_DTYPE_INT8)
    e.sb = hc_ukr_scales_at(&kb, &d->b_scales, hc_kb_ptr(&kb, d->b));
  /* Outputs larger than L2 come from L3 or memory (prefetch_next_panel_y). */
  if (d->dt == HX_DTYPE_FLOAT32 && hc_value_nbytes(d->y) > (uint64_t)hc_ukr_l2_bytes(lc) && p.nnb * p.nc > p.nr) {
    e.prefetch_y = true;
    /* In place over an operand, the operand's prefetch fetches Y's lines. */
    e.prefetch_y_lines = !hc_epilogue_output_over_any_operand(n);
  }
  hc_ukr_prefer_full_width(&kb);
  if (e.scalar_epilogue) e.tile = hc_kb_alloca(&kb, LLVMArrayType2(kb.t_f32, (uint64_t)(p.mr * p.nr)), "tile");

  hc_loop task;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef mb = LLVMBuildURem(kb.b, t, hc_kb_i64(&kb, p.nmb), "");
  LLVMValueRef rest = LLVMBuildUDiv(kb.b, t, hc_kb_i64(&kb, p.nmb), "");
  LLVMValueRef nb = LLVMBuildURem(kb.b, rest, hc_kb_i64(&kb, p.nnb), "");
  LLVMValueRef bi = LLVMBuildUDiv(kb.b, rest, hc_kb_i64(&kb, p.nnb), "");
  e.bi = bi;
  /* Batch offsets (in elements) and the B matrix index. */
  e.a_off = hc_kb_i64(&kb, 0);
  LLVMValueRef bmat = hc_kb_i64(&kb, 0), boff = hc_kb_i64(&kb, 0);
  LLVMValueRef rem = bi;
  int64_t bscale = 1;
  for (int k = d->batch_rank - 1; k >= 0; --k) {
    LLVMValueRef idx = k > 0 ? LLVMBuildURem(kb.b, rem, hc_kb_i64(&kb, d->batch_dims[k]), "") : rem;
    if (k > 0) rem = LLVMBuildUDiv(kb.b, rem, hc_kb_i64(&kb, d->batch_dims[k]), "");
    e.a_off = hc_kb_iadd(&kb, e.a_off, hc_kb_imul(&kb, idx, hc_kb_i64(&kb, d->a_bs[k])));
    boff = hc_kb_iadd(&kb, boff, hc_kb_imul(&kb, idx, hc_kb_i64(&kb, d->b_bs[k])));
    if (d->b_bs[k]) {
      bmat = hc_kb_iadd(&kb, bmat, hc_kb_imul(&kb, idx, hc_kb_i64(&kb, bscale)));
      bscale *= d->batch_dims[k];
    }
  }
  e.b_off = p.b_mode == B_DIRECT ? boff : hc_kb_imul(&kb, bmat, hc_kb_i64(&kb, p.panels * d->K * p.pw));
  e.bmat = bmat;
  e.y_off = hc_kb_imul(&kb, bi, hc_kb_i64(&kb, d->M * d->N));

  /* Column blocks: block nb holds column tiles floor(nb * N / (nnb * nr))
   * up to the next block's first (the last block to the end, with the
   * partial tile when nr does not divide N). The boundaries lie evenly in
   * columns, so the first half of the blocks, which the first of two
   * threads runs (tasks take the row blocks fastest), holds half of the
   * columns, and products over the same columns split them at the same
   * place whatever their block counts: the second thread reads the part
   * of its input that it wrote itself. Blocks of nc columns with the
   * remainder last gave ResNet-50's 28x28 1x1 convolutions (17 tiles of
   * 48 pixels) 480 pixels on one thread and 304 on the other, and its
   * 56x56 ones 1728 and 1408; the balanced blocks ran those kernels in
   * 0.963 of the time at two threads (a control group 0.987) and 0.985 at
   * one (control 0.997), MobileNetV2's 112x112 to 28x28 layers in 0.982
   * (control 1.001; bench/compare/ab_profile.py, 12 rounds). */
  int64_t nt = (d->N + p.nr - 1) / p.nr, rem_cols = d->N % p.nr;
  LLVMValueRef nlast = LLVMBuildICmp(kb.b, LLVMIntEQ, nb, hc_kb_i64(&kb, p.nnb - 1), "");
  LLVMValueRef t0, t1;
  if (d->N >= p.nnb * p.nr) {
    LLVMValueRef span = hc_kb_i64(&kb, p.nnb * p.nr);
    t0 = LLVMBuildUDiv(kb.b, hc_kb_imul(&kb, nb, hc_kb_i64(&kb, d->N)), span, "");
    t1 = LLVMBuildUDiv(kb.b, hc_kb_imul(&kb, hc_kb_iadd(&kb, nb, hc_kb_i64(&kb, 1)), hc_kb_i64(&kb, d->N)), span, "");
  } else {
    /* Fewer full tiles than blocks, so nnb = nt (nnb never exceeds nt): a
     * tile per block, the last one partial. */
    t0 = nb;
    t1 = hc_kb_iadd(&kb, nb, hc_kb_i64(&kb, 1));
  }
  t1 = LLVMBuildSelect(kb.b, nlast, hc_kb_i64(&kb, nt), t1, "");
  LLVMValueRef n0 = hc_kb_imul(&kb, t0, hc_kb_i64(&kb, p.nr));
  LLVMValueRef npanels = LLVMBuildSub(kb.b, t1, t0, "");
  if (rem_cols) npanels = LLVMBuildSelect(kb.b, nlast, LLVMBuildSub(kb.b, npanels, hc_kb_i64(&kb, 1), ""), npanels, "");

  /* Reduction slices. */
  hc_loop kl;
  LLVMValueRef k0, kcur, first = NULL, last = NULL;
  if (p.nkb > 1) {
    LLVMValueRef ks = hc_loop_begin(&kb, &kl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, p.nkb), "kslice");
    k0 = hc_kb_imul(&kb, ks, hc_kb_i64(&kb, p.kc));
    kcur = hc_kb_imin(&kb, hc_kb_i64(&kb, p.kc), LLVMBuildSub(kb.b, hc_kb_i64(&kb, d->K), k0, ""));
    first = LLVMBuildICmp(kb.b, LLVMIntEQ, ks, hc_kb_i64(&kb, 0), "");
    last = LLVMBuildICmp(kb.b, LLVMIntEQ, ks, hc_kb_i64(&kb, p.nkb - 1), "");
  } else {
    k0 = hc_kb_i64(&kb, 0);
    kcur = hc_kb_i64(&kb, d->K);
  }
  hc_loop pl;
  LLVMValueRef pj = hc_loop_begin(&kb, &pl, hc_kb_i64(&kb, 0), npanels, "panel");
  fast_panel(&e, p.nv, p.vl, mb, hc_kb_iadd(&kb, n0, hc_kb_imul(&kb, pj, hc_kb_i64(&kb, p.nr))), k0, kcur, first, last);
  hc_loop_end(&kb, &pl);
  if (rem_cols) {
    int nvr = (int)((rem_cols + p.vl - 1) / p.vl);
    unsigned lanes = (unsigned)(rem_cols - (int64_t)(nvr - 1) * p.vl);
    hc_if g;
    hc_if_begin(&kb, &g, nlast);
    fast_panel(&e, nvr, lanes, mb, hc_kb_i64(&kb, d->N - rem_cols), k0, kcur, first, last);
    hc_if_end(&kb, &g);
  }
  if (p.nkb > 1) hc_loop_end(&kb, &kl);
  hc_loop_end(&kb, &task);

  double mnb = (double)d->M * (double)d->N * (double)d->batch;
  double flops = 2.0 * mnb * (double)d->K + (d->c ? 2.0 * mnb : 0.0) + mnb * hc_epilogue_flops_per_element(n);
  /* Traffic: A once per column block, B once per row block, Y once (plus
   * a read and write per extra reduction slice), C and fused operands. */
  double bbytes = p.b_mode == B_DIRECT ? (double)hc_value_nbytes(d->b)
                                        : (double)(p.nbmat * p.panels * p.pw * d->K) * (double)hx_dtype_size(d->b_st ? d->b_st : d->dt);
  double bytes = (double)hc_value_nbytes(d->a) * (double)p.nnb + bbytes * (double)p.nmb +
                 (double)hc_value_nbytes(d->y) * (double)(2 * p.nkb - 1) + (d->c ? (double)hc_value_nbytes(d->c) : 0.0) +
                 hc_epilogue_bytes(n);
  hc_kb_end(&kb, flops, bytes);
  return HX_OK;
}

hx_status_t hc_gemm_emit(hc_lower_ctx* lc, const hc_node* n, const hc_mm_desc* d) { return emit_matmul_fast(lc, n, d); }

bool hc_gemm_single_pass(const struct hc_target* target, const hc_mm_desc* d) {
  hc_lower_ctx lc = {.target = target}; /* plan_fast reads only the target */
  fast_plan p;
  plan_fast(&lc, d, &p);
  return p.nkb == 1;
}

uint64_t hc_gemm_workspace(const hc_mm_desc* d) {
  if (b_mode_of(d) != B_WORKSPACE) return 0;
  int64_t pw = hc_pack_panel_width(d->dt);
  return (uint64_t)(nb_matrices(d) * ((d->N + pw - 1) / pw) * pw * d->K) * hx_dtype_size(d->b_st ? d->b_st : d->dt);
}

int hc_pack_panel_width(hx_dtype_t dt) { return dt == HX_DTYPE_FLOAT64 ? 8 : 16; }

hx_status_t hc_install_packed(hc_graph* g, hc_node* n, hc_value* original, const char* name, hx_dtype_t elem,
                              int rank, const int64_t* dims, void* data, int layout, hc_packed_input** out) {
  return hc_install_packed_at(g, n, 1, original, name, elem, rank, dims, data, layout, out);
}

hx_status_t hc_install_packed_at(hc_graph* g, hc_node* n, int input, hc_value* original, const char* name,
                                 hx_dtype_t elem, int rank, const int64_t* dims, void* data, int layout,
                                 hc_packed_input** out) {
  hc_value* pv;
  HX_RETURN_IF_ERROR(hc_graph_add_value(g, name, elem, rank, dims, &pv));
  pv->kind = HC_VALUE_CONST;
  pv->data = data;
  hc_packed_input* pk = hc_arena_alloc(&g->arena, sizeof *pk);
  if (!pk) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory packing '%s'", original->name);
  memset(pk, 0, sizeof *pk);
  pk->input = input;
  pk->layout = layout;
  pk->original = original;
  n->packed = pk;
  n->inputs[input] = pv;
  if (out) *out = pk;
  return HX_OK;
}

hx_status_t hc_install_panels(hc_graph* g, hc_node* n, hc_value* original, hx_dtype_t elem, uint8_t* data,
                              size_t bytes, const int64_t dims[4]) {
  hc_value* src = n->inputs[1];
  bool narrowed = hc_packed_is(n, 1, HC_PACK_PLAIN);
  int scales_count = narrowed ? n->packed->scales_count : 0;
  hc_q8_scales scales = hc_packed_q8_scales(n, 1);
  /* An INT8 copy is a flat byte value: panels, then the scales. */
  int64_t flat[1] = {(int64_t)bytes};
  if (elem == HX_DTYPE_INT8) {
    memcpy(data + hc_q8_scales_offset(bytes), (const uint8_t*)src->data + n->packed->scales_offset,
           (size_t)n->packed->scales_count * hx_dtype_size(scales.elem));
    flat[0] = (int64_t)hc_q8_total_bytes(bytes, n->packed->scales_count, scales.elem);
  }
  char name[256];
  snprintf(name, sizeof name, "%s.panels%d", src->name, (int)dims[3]);
  hc_packed_input* pk;
  HX_RETURN_IF_ERROR(hc_install_packed(g, n, original, name, elem, elem == HX_DTYPE_INT8 ? 1 : 4,
                                       elem == HX_DTYPE_INT8 ? flat : dims, data, HC_PACK_PANELS, &pk));
  if (narrowed) {
    pk->elem = elem;
    pk->scales_count = scales_count;
    pk->scales_offset = elem == HX_DTYPE_INT8 ? hc_q8_scales_offset(bytes) : 0;
    pk->scales_elem = elem == HX_DTYPE_INT8 ? scales.elem : HX_DTYPE_UNDEFINED;
    pk->scales_exp = elem == HX_DTYPE_INT8 ? scales.exp : 0;
  }
  return HX_OK;
}

/* Shapes of a Gemm/MatMul node (the unpacked B when it was packed). */
static hx_status_t node_desc(const hc_node* n, mm_desc* d);

bool hc_matmul_fast(const hc_node* n) {
  if (n->op != &hc_op_gemm && n->op != &hc_op_matmul) return false;
  mm_desc d;
  if (node_desc(n, &d) != HX_OK) return false;
  return d.dt == HX_DTYPE_FLOAT32 && d.N >= 8 && d.M >= 1 && d.K >= 1 && d.batch >= 1 && n->inputs[0]->rank >= 2 &&
         weight_input(n, 1)->rank >= 2;
}

/* pack_panels_f32 for elements of es bytes (narrowed weights); `out` is
 * zeroed. */
static void pack_panels_bytes(const uint8_t* b, size_t es, int64_t nbmat, int64_t bmat, int64_t K, int64_t N,
                              int64_t b_sk, int64_t b_sn, int64_t pw, uint8_t* out) {
  int64_t panels = (N + pw - 1) / pw;
  for (int64_t m = 0; m < nbmat; ++m)
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < pw && p * pw + j < N; ++j)
          memcpy(out + (size_t)(((m * panels + p) * K + k) * pw + j) * es,
                 b + (size_t)(m * bmat + k * b_sk + (p * pw + j) * b_sn) * es, es);
}

hx_status_t hc_gemm_prepack_b(hc_graph* g, hc_node* n, const hc_mm_desc* d, bool* out_done) {
  *out_done = false;
  /* A weight the precision pass narrowed (HC_PACK_PLAIN) is packed in its
   * element type, from the narrowed copy. */
  bool narrowed = hc_packed_is(n, 1, HC_PACK_PLAIN);
  if (n->packed && !narrowed) return HX_OK;
  hc_value* src = n->inputs[1];
  hc_value* b = narrowed ? n->packed->original : src;
  if (src->kind != HC_VALUE_CONST || !src->data) return HX_OK;
  /* Only B whose batch is its own dense matrices (what the kernel indexes). */
  int64_t pw = hc_pack_panel_width(d->dt);
  int64_t nbmat = nb_matrices(d), panels = (d->N + pw - 1) / pw;
  if (nbmat * d->K * d->N != hc_value_numel(b)) return HX_OK;
  hx_dtype_t elem = narrowed ? n->packed->elem : d->dt;
  size_t es = hx_dtype_size(elem);
  size_t bytes = (size_t)(nbmat * panels * d->K * pw) * es;
  size_t total =
      elem == HX_DTYPE_INT8 ? hc_q8_total_bytes(bytes, n->packed->scales_count, hc_packed_q8_scales(n, 1).elem) : bytes;
  uint8_t* data = hc_graph_alloc_data(g, total);
  if (!data) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory packing '%s'", b->name);
  if (!narrowed)
    pack_panels_f32(b->data, nbmat, d->K * d->N, d->K, d->N, d->b_sk, d->b_sn, pw, (float*)(void*)data);
  else
    pack_panels_bytes(src->data, es, nbmat, d->K * d->N, d->K, d->N, d->b_sk, d->b_sn, pw, data);
  HX_RETURN_IF_ERROR(hc_install_panels(g, n, b, elem, data, bytes, (int64_t[4]){nbmat, panels, d->K, pw}));
  *out_done = true;
  return HX_OK;
}

hx_status_t hc_matmul_prepack(hc_graph* g, hc_node* n, bool* out_done) {
  *out_done = false;
  if (!hc_matmul_fast(n) || (n->packed && !hc_packed_is(n, 1, HC_PACK_PLAIN))) return HX_OK;
  mm_desc d;
  HX_RETURN_IF_ERROR(node_desc(n, &d));
  return hc_gemm_prepack_b(g, n, &d, out_done);
}

/* ---- MatMul ------------------------------------------------------------------ */

/* Numpy matmul shapes: 1-D operands get a 1 prepended (A) or appended (B),
 * which is removed from the result; leading dims broadcast. Fills d (without
 * value pointers) and the output shape. */
static hx_status_t matmul_shapes(const hc_node* n, mm_desc* d, int* out_rank, int64_t* out_dims) {
  const hc_value *a = n->inputs[0], *b = weight_input(n, 1);
  char s1[128], s2[128];
  if (a->rank < 1 || b->rank < 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "MatMul operands must have rank >= 1, got %s and %s",
                         hc_shape_str(a->rank, a->dims, s1, sizeof s1), hc_shape_str(b->rank, b->dims, s2, sizeof s2));
  int64_t M = a->rank == 1 ? 1 : a->dims[a->rank - 2];
  int64_t K = a->dims[a->rank - 1];
  int64_t K2 = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
  int64_t N = b->rank == 1 ? 1 : b->dims[b->rank - 1];
  if (K != K2)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "inner dimensions differ: A is %s (K = %lld) and B is %s (K = %lld)",
                         hc_shape_str(a->rank, a->dims, s1, sizeof s1), (long long)K,
                         hc_shape_str(b->rank, b->dims, s2, sizeof s2), (long long)K2);
  int abr = a->rank > 2 ? a->rank - 2 : 0, bbr = b->rank > 2 ? b->rank - 2 : 0;
  int br = abr > bbr ? abr : bbr;
  memset(d, 0, sizeof *d);
  d->M = M;
  d->N = N;
  d->K = K;
  d->a_sm = K;
  d->a_sk = 1;
  d->b_sk = N;
  d->b_sn = 1;
  d->batch_rank = br;
  d->batch = 1;
  int64_t a_st = M * K, b_st = K * N;
  for (int i = br - 1; i >= 0; --i) {
    int ai = i - (br - abr), bi = i - (br - bbr);
    int64_t ad = ai >= 0 ? a->dims[ai] : 1, bd = bi >= 0 ? b->dims[bi] : 1;
    if (ad != bd && ad != 1 && bd != 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "batch dimensions do not broadcast: A is %s and B is %s (%lld vs %lld)",
                           hc_shape_str(a->rank, a->dims, s1, sizeof s1), hc_shape_str(b->rank, b->dims, s2, sizeof s2),
                           (long long)ad, (long long)bd);
    int64_t od = ad == 1 ? bd : ad;
    d->batch_dims[i] = od;
    d->a_bs[i] = ad == 1 ? 0 : a_st;
    d->b_bs[i] = bd == 1 ? 0 : b_st;
    a_st *= ad;
    b_st *= bd;
    d->batch *= od;
  }
  int r = 0;
  for (int i = 0; i < br; ++i) out_dims[r++] = d->batch_dims[i];
  if (a->rank > 1) out_dims[r++] = M;
  if (b->rank > 1) out_dims[r++] = N;
  *out_rank = r;
  return HX_OK;
}

/* B's packing and storage type from the node's packed record: panels
 * (compile-time packed) or the original layout, float32 or narrower. */
static void set_weight_storage(const hc_node* n, mm_desc* d) {
  d->b_packed = hc_packed_is(n, 1, HC_PACK_PANELS);
  hx_dtype_t st = hc_packed_elem(n, 1);
  if (st != d->dt && (st == HX_DTYPE_FLOAT16 || st == HX_DTYPE_BFLOAT16 || st == HX_DTYPE_INT8)) {
    d->b_st = st;
    if (st == HX_DTYPE_INT8) d->b_scales = hc_packed_q8_scales(n, 1);
  }
}

/* Element types of A and B: floats, and from opset 9 on 32/64-bit integers. */
static hx_status_t mm_check_dtype(const hc_node* n) {
  const uint64_t ints = HC_DT(HX_DTYPE_INT32) | HC_DT(HX_DTYPE_INT64) | HC_DT(HX_DTYPE_UINT32) | HC_DT(HX_DTYPE_UINT64);
  const hc_value* a = n->inputs[0];
  if (n->opset < 9 && (ints & HC_DT(a->dtype)))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "element type %s needs opset 9 or later (floats only before)",
                         hx_dtype_name(a->dtype));
  return hc_check_dtype(n, 0, HC_DT_FLOATS | ints);
}

static hx_status_t infer_matmul(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 2, 1, 1));
  HX_RETURN_IF_ERROR(mm_check_dtype(n));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 1));
  mm_desc d;
  int rank;
  int64_t dims[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(matmul_shapes(n, &d, &rank, dims));
  hc_set_output(n, 0, n->inputs[0]->dtype, rank, dims);
  return HX_OK;
}

/* The full description of a MatMul node's product (value pointers
 * included); the batch is folded into the rows when B is shared by every
 * batch and A is not broadcast: one tall product tiles and balances better. */
static hx_status_t matmul_desc(const hc_node* n, mm_desc* d) {
  int rank;
  int64_t dims[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(matmul_shapes(n, d, &rank, dims));
  d->dt = n->inputs[0]->dtype;
  d->a = n->inputs[0];
  d->b = n->inputs[1];
  d->y = n->outputs[0];
  d->alpha = 1.0;
  d->out_rank = rank;
  set_weight_storage(n, d);
  bool b_shared = true, a_dense = true;
  for (int i = 0; i < d->batch_rank; ++i) {
    b_shared &= d->b_bs[i] == 0;
    a_dense &= d->a_bs[i] != 0 || d->batch_dims[i] == 1;
  }
  if (d->batch > 1 && b_shared && a_dense) {
    d->fold_m = d->M;
    d->M *= d->batch;
    d->batch = 1;
    d->batch_rank = 0;
  }
  return HX_OK;
}

static hx_status_t lower_matmul(hc_lower_ctx* lc, hc_node* n) {
  mm_desc d;
  HX_RETURN_IF_ERROR(matmul_desc(n, &d));
  if (hc_matmul_fast(n)) return emit_matmul_fast(lc, n, &d);
  return emit_matmul(lc, n, &d);
}

/* ---- Gemm ---------------------------------------------------------------------- */

static hx_status_t gemm_shapes(const hc_node* n, mm_desc* d) {
  const hc_value *a = n->inputs[0], *b = weight_input(n, 1), *c = hc_input(n, 2);
  char s1[128], s2[128];
  if (a->rank != 2 || b->rank != 2)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "A and B must be 2-D, got %s and %s",
                         hc_shape_str(a->rank, a->dims, s1, sizeof s1), hc_shape_str(b->rank, b->dims, s2, sizeof s2));
  bool ta = hc_attr_int(n, "transA", 0) != 0, tb = hc_attr_int(n, "transB", 0) != 0;
  memset(d, 0, sizeof *d);
  d->M = ta ? a->dims[1] : a->dims[0];
  d->K = ta ? a->dims[0] : a->dims[1];
  int64_t K2 = tb ? b->dims[1] : b->dims[0];
  d->N = tb ? b->dims[0] : b->dims[1];
  if (d->K != K2)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "inner dimensions differ: A is %s%s (K = %lld) and B is %s%s (K = %lld)",
                         hc_shape_str(a->rank, a->dims, s1, sizeof s1), ta ? " transposed" : "", (long long)d->K,
                         hc_shape_str(b->rank, b->dims, s2, sizeof s2), tb ? " transposed" : "", (long long)K2);
  d->a_sm = ta ? 1 : d->K;
  d->a_sk = ta ? d->M : 1;
  d->b_sk = tb ? 1 : d->N;
  d->b_sn = tb ? d->K : 1;
  d->batch = 1;
  d->alpha = hc_attr_float(n, "alpha", 1.0f);
  d->beta = hc_attr_float(n, "beta", 1.0f);
  if (c) {
    /* C broadcasts unidirectionally to (M, N); before opset 7 only with
     * broadcast=1, otherwise it must be exactly (M, N). */
    bool exact = n->opset < 7 && hc_attr_int(n, "broadcast", 0) == 0;
    int64_t cm = c->rank == 2 ? c->dims[0] : 1, cn = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
    bool ok = c->rank <= 2 && (cm == 1 || cm == d->M) && (cn == 1 || cn == d->N);
    if (exact) ok = c->rank == 2 && cm == d->M && cn == d->N;
    if (!ok)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "C has shape %s; it must %s (M, N) = (%lld, %lld)",
                           hc_shape_str(c->rank, c->dims, s1, sizeof s1),
                           exact ? "be exactly (broadcast=0)" : "broadcast to", (long long)d->M, (long long)d->N);
    d->c_sm = cm == 1 ? 0 : cn;
    d->c_sn = cn == 1 ? 0 : 1;
  }
  return HX_OK;
}

static hx_status_t infer_gemm(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, n->opset >= 11 ? 2 : 3, 3, 1, 1));
  HX_RETURN_IF_ERROR(mm_check_dtype(n));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 1));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 2));
  if (n->opset >= 7 && hc_node_attr(n, "broadcast"))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute 'broadcast' was removed in opset 7");
  mm_desc d;
  HX_RETURN_IF_ERROR(gemm_shapes(n, &d));
  int64_t dims[2] = {d.M, d.N};
  hc_set_output(n, 0, n->inputs[0]->dtype, 2, dims);
  return HX_OK;
}

static hx_status_t gemm_desc(const hc_node* n, mm_desc* d) {
  HX_RETURN_IF_ERROR(gemm_shapes(n, d));
  d->dt = n->inputs[0]->dtype;
  d->a = n->inputs[0];
  d->b = n->inputs[1];
  d->c = hc_input(n, 2);
  d->y = n->outputs[0];
  d->out_rank = 2;
  set_weight_storage(n, d);
  return HX_OK;
}

static hx_status_t lower_gemm(hc_lower_ctx* lc, hc_node* n) {
  mm_desc d;
  HX_RETURN_IF_ERROR(gemm_desc(n, &d));
  if (hc_matmul_fast(n)) return emit_matmul_fast(lc, n, &d);
  return emit_matmul(lc, n, &d);
}

static hx_status_t node_desc(const hc_node* n, mm_desc* d) {
  return n->op == &hc_op_gemm ? gemm_desc(n, d) : matmul_desc(n, d);
}

/* Scratch for B packed at run time (none when it is read in place or was
 * packed at compile time). */
static uint64_t matmul_workspace(const hc_node* n) {
  if (!hc_matmul_fast(n)) return 0;
  mm_desc d;
  if (node_desc(n, &d) != HX_OK) return 0;
  return hc_gemm_workspace(&d);
}

/* Output over a residual operand: the fast kernel finishes a tile in
 * registers, then applies the epilogue to each element (reading the operand
 * at its index) and stores it, each element in one task, unless it splits
 * the reduction (then Y holds partial sums before the epilogue runs); B is
 * packed from B only. Fusion gives epilogues to the fast kernel only. */
static bool matmul_inplace_input(const struct hc_target* target, const hc_node* n, int input) {
  if (!hc_epilogue_operand_overwritable(n, input) || !hc_matmul_fast(n)) return false;
  mm_desc d;
  if (node_desc(n, &d) != HX_OK) return false;
  return hc_gemm_single_pass(target, &d);
}

static const char* const k_gemm_attrs[] = {"alpha", "beta", "transA", "transB", "broadcast", NULL};

const hc_op_desc hc_op_gemm = {"Gemm", "", 1, 22, k_gemm_attrs, 0, infer_gemm, lower_gemm, NULL, matmul_workspace,
                               matmul_inplace_input};
const hc_op_desc hc_op_matmul = {"MatMul", "", 1, 22, NULL, 0, infer_matmul, lower_matmul, NULL, matmul_workspace,
                                 matmul_inplace_input};
