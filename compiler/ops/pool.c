/* Pooling: MaxPool (with the optional Indices output), AveragePool and
 * GlobalAveragePool, opsets 1-22, any number of spatial dims.
 *
 * MaxPool and AveragePool share one kernel shaped like the Conv kernel in
 * conv.c: a task reduces a block of output rows of one (image, channel)
 * plane; a row accumulates in a stack buffer (compute type: float32 for
 * 16-bit floats), the valid taps of the outer dims come from a computed
 * range, and along the last dim the window's taps are fused into one loop
 * over the interior columns (every tap inside the input) with per-tap loops
 * on the edges, so the vectorised inner loop never tests bounds. Padding
 * never takes part: MaxPool ignores it; AveragePool divides by a count that
 * includes it only with count_include_pad (never the ceil_mode overhang,
 * as in PyTorch and ONNX Runtime). GlobalAveragePool is a reassociable sum
 * per plane, which LLVM vectorises.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/pool_common.h"
#include "compiler/ops/sliding_window.h"

#define POOL_MAX_SP (HC_MAX_RANK - 2)
/* Widest output row segment a task accumulates at once (stack buffer). */
#define POOL_MAX_COLS 1024
/* Window taps per task the row blocking aims for. */
#define POOL_TASK_OPS (1 << 14)
/* Taps fused in one inner loop. */
#define POOL_MAX_TERMS 8
/* Elements per GlobalAveragePool task. */
#define GAP_TASK_ELEMS (1 << 14)

/* floor(a / b) and ceil(a / b) for b > 0 and any sign of a. */
static int64_t fdiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
static int64_t cdiv(int64_t a, int64_t b) { return -fdiv(-a, b); }
static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ---- MaxPool / AveragePool -------------------------------------------------- */

/* floor(x / b) at run time for a compile-time b > 0 and |x| <= bound: the
 * offset keeps the dividend non-negative so truncation is flooring. */
static LLVMValueRef rt_fdiv(hc_kb* kb, LLVMValueRef x, int64_t b, int64_t bound) {
  if (b == 1) return x;
  int64_t q = bound / b + 1;
  LLVMValueRef t = LLVMBuildSDiv(kb->b, hc_kb_iadd(kb, x, hc_kb_i64(kb, q * b)), hc_kb_i64(kb, b), "");
  return LLVMBuildSub(kb->b, t, hc_kb_i64(kb, q), "");
}

/* Emits the range [*lo, *hi) of taps k in [0, K) for which i = a + k*d lies
 * in [0, I), for a run-time a with |a| <= bound and a compile-time d >= 1.
 * *hi may be below *lo (empty). */
static void tap_range(hc_kb* kb, LLVMValueRef a, int64_t d, int64_t I, int64_t K, int64_t bound, LLVMValueRef* lo,
                      LLVMValueRef* hi) {
  int64_t bnd = bound + I + 1;
  LLVMValueRef top = LLVMBuildSub(kb->b, hc_kb_i64(kb, I - 1), a, "");
  LLVMValueRef l = LLVMBuildNeg(kb->b, rt_fdiv(kb, a, d, bnd), "");             /* ceil(-a/d) */
  LLVMValueRef h = hc_kb_iadd(kb, rt_fdiv(kb, top, d, bnd), hc_kb_i64(kb, 1)); /* floor((I-1-a)/d)+1 */
  *lo = hc_kb_imax(kb, l, hc_kb_i64(kb, 0));
  *hi = hc_kb_imin(kb, h, hc_kb_i64(kb, K));
}

/* A MaxPool/AveragePool node's geometry (elements; pads pb/pe at the
 * beginning/end of each spatial dim) and options. */
typedef struct pool_plan {
  bool is_max, with_indices, count_include_pad, column_major;
  hx_dtype_t dt;
  int64_t N, C;
  int nd;
  int64_t in[POOL_MAX_SP], out[POOL_MAX_SP], k[POOL_MAX_SP], s[POOL_MAX_SP], d[POOL_MAX_SP], pb[POOL_MAX_SP],
      pe[POOL_MAX_SP];
  int64_t in_plane, out_plane, ktot;
} pool_plan;

/* Validates a MaxPool/AveragePool node and computes its plan. */
static hx_status_t pool_setup(const hc_node* n, bool is_max, pool_plan* p) {
  memset(p, 0, sizeof *p);
  p->is_max = is_max;
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, is_max ? 2 : 1));
  const hc_value* x = n->inputs[0];
  uint64_t allowed = HC_DT_FLOATS;
  if (is_max) allowed |= HC_DT(HX_DTYPE_INT8) | HC_DT(HX_DTYPE_UINT8);
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, allowed));
  if (hc_dtype_is_integer(x->dtype) && n->opset < 12)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "%s input ('%s') needs MaxPool opset 12 or later",
                         hx_dtype_name(x->dtype), x->name);
  char s1[128];
  if (x->rank < 3)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "input X ('%s') has shape %s; expected (N, C, D1, ...) with at least one spatial dimension",
                         x->name, hc_shape_str(x->rank, x->dims, s1, sizeof s1));
  p->dt = x->dtype;
  p->nd = x->rank - 2;
  p->N = x->dims[0];
  p->C = x->dims[1];
  int nk = hc_attr_ints(n, "kernel_shape", p->k, POOL_MAX_SP);
  if (nk == -1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'kernel_shape' is required");
  if (nk != p->nd)
    return hc_node_error(
        n, HX_STATUS_INVALID_ARGUMENT, "'kernel_shape' has %d values; expected %d (spatial rank of %s)",
        nk == -2 ? hc_node_attr(n, "kernel_shape")->n : nk, p->nd, hc_shape_str(x->rank, x->dims, s1, sizeof s1));
  for (int i = 0; i < p->nd; ++i) {
    if (p->k[i] < 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'kernel_shape'[%d] = %lld; must be >= 1", i,
                           (long long)p->k[i]);
    p->in[i] = x->dims[2 + i];
  }
  bool ceil_mode = false;
  HX_RETURN_IF_ERROR(hc_pool_read_flag(n, "ceil_mode", &ceil_mode));
  HX_RETURN_IF_ERROR(hc_pool_read_flag(n, "count_include_pad", &p->count_include_pad));
  HX_RETURN_IF_ERROR(hc_pool_read_flag(n, "storage_order", &p->column_major));
  HX_RETURN_IF_ERROR(hc_sliding_window_geometry(n, p->nd, p->in, p->k, ceil_mode, p->s, p->d, p->pb, p->pe, p->out));
  p->with_indices = is_max && n->num_outputs > 1 && n->outputs[1];
  p->in_plane = hc_shape_numel(p->nd, p->in);
  p->out_plane = hc_shape_numel(p->nd, p->out);
  p->ktot = hc_shape_numel(p->nd, p->k);
  return HX_OK;
}

static hx_status_t infer_pool(hc_node* n, bool is_max) {
  pool_plan p;
  HX_RETURN_IF_ERROR(pool_setup(n, is_max, &p));
  int64_t dims[HC_MAX_RANK] = {p.N, p.C};
  for (int i = 0; i < p.nd; ++i) dims[2 + i] = p.out[i];
  hc_set_output(n, 0, p.dt, p.nd + 2, dims);
  if (p.with_indices) hc_set_output(n, 1, HX_DTYPE_INT64, p.nd + 2, dims);
  return HX_OK;
}

static hx_status_t infer_max_pool(hc_graph* g, hc_node* n) { return infer_pool(n, true); }
static hx_status_t infer_average_pool(hc_graph* g, hc_node* n) { return infer_pool(n, false); }

/* Taps of the window at output position o of dim i: the ones inside the
 * input, or (count_include_pad) inside the padded input. */
static int64_t window_count(const pool_plan* p, int i, int64_t o, bool with_pad) {
  int64_t start = o * p->s[i] - p->pb[i];
  if (with_pad) return clamp64(fdiv(p->in[i] + p->pe[i] - 1 - start, p->d[i]) + 1, 0, p->k[i]);
  int64_t lo = clamp64(cdiv(-start, p->d[i]), 0, p->k[i]);
  int64_t hi = clamp64(fdiv(p->in[i] - 1 - start, p->d[i]) + 1, 0, p->k[i]);
  return hi > lo ? hi - lo : 0;
}

/* Task t of a kernel split into (plane, block of RB output rows) tasks,
 * NRB blocks per plane: the plane's x and y offsets and its rows [lo, hi). */
static void task_rows(hc_kb* kb, const pool_plan* p, LLVMValueRef t, int64_t NRB, int64_t RB, int64_t rows,
                      LLVMValueRef* xplane, LLVMValueRef* yplane, LLVMValueRef* lo, LLVMValueRef* hi) {
  LLVMValueRef rb = LLVMBuildURem(kb->b, t, hc_kb_i64(kb, NRB), "");
  LLVMValueRef plane = LLVMBuildUDiv(kb->b, t, hc_kb_i64(kb, NRB), "");
  *xplane = hc_kb_imul(kb, plane, hc_kb_i64(kb, p->in_plane));
  *yplane = hc_kb_imul(kb, plane, hc_kb_i64(kb, p->out_plane));
  *lo = hc_kb_imul(kb, rb, hc_kb_i64(kb, RB));
  *hi = hc_kb_imin(kb, hc_kb_iadd(kb, *lo, hc_kb_i64(kb, RB)), hc_kb_i64(kb, rows));
}

/* State of one pooling kernel while it is emitted. */
typedef struct pool_emit {
  hc_kb* kb;
  const pool_plan* p;
  LLVMValueRef X, acc, idx;
  LLVMValueRef c0, cw; /* column block start and width */
  LLVMValueRef xrow;   /* x index of the current row (absolute) */
  LLVMValueRef irow;   /* Indices value of the row start (absolute) */
  int64_t istep;       /* Indices value per step along the last dim */
} pool_emit;

/* Folds the values xv (Indices candidates iv) of nt taps into column c, in
 * tap order so that the first maximum wins. */
static void fold(pool_emit* e, LLVMValueRef c, int nt, LLVMValueRef* xv, LLVMValueRef* iv) {
  hc_kb* kb = e->kb;
  const pool_plan* p = e->p;
  LLVMTypeRef ct = hc_kb_compute_type(kb, p->dt);
  LLVMValueRef aptr = LLVMBuildGEP2(kb->b, ct, e->acc, &c, 1, "");
  LLVMValueRef a = LLVMBuildLoad2(kb->b, ct, aptr, "");
  LLVMValueRef iptr = NULL, id = NULL;
  if (p->with_indices) {
    iptr = LLVMBuildGEP2(kb->b, kb->t_i64, e->idx, &c, 1, "");
    id = LLVMBuildLoad2(kb->b, kb->t_i64, iptr, "");
  }
  for (int t = 0; t < nt; ++t) {
    if (!p->is_max) {
      a = hc_kb_add(kb, p->dt, a, xv[t]);
    } else if (!p->with_indices) {
      a = hc_kb_max(kb, p->dt, a, xv[t]);
    } else {
      /* Strictly greater, a first NaN, or the first tap at all. */
      LLVMValueRef take = hc_kb_cmp(kb, p->dt, "gt", xv[t], a);
      if (hc_dtype_is_float(p->dt)) {
        LLVMValueRef nan = LLVMBuildAnd(kb->b, LLVMBuildFCmp(kb->b, LLVMRealUNO, xv[t], xv[t], ""),
                                        LLVMBuildFCmp(kb->b, LLVMRealORD, a, a, ""), "");
        take = LLVMBuildOr(kb->b, take, nan, "");
      }
      take = LLVMBuildOr(kb->b, take, LLVMBuildICmp(kb->b, LLVMIntSLT, id, hc_kb_i64(kb, 0), ""), "");
      a = hc_kb_select(kb, take, xv[t], a);
      id = hc_kb_select(kb, take, iv[t], id);
    }
  }
  LLVMBuildStore(kb->b, a, aptr);
  if (iptr) LLVMBuildStore(kb->b, id, iptr);
}

/* Loop over block columns [from, to) folding the taps `which`; xb/ib are
 * the x index / Indices value of column 0 for each tap. */
static void pool_loop(pool_emit* e, LLVMValueRef from, LLVMValueRef to, int nt, const int* which, LLVMValueRef* xb,
                      LLVMValueRef* ib) {
  hc_kb* kb = e->kb;
  const pool_plan* p = e->p;
  int64_t S = p->s[p->nd - 1];
  hc_loop loop;
  LLVMValueRef c = hc_loop_begin(kb, &loop, from, to, "col");
  LLVMValueRef xv[POOL_MAX_TERMS], iv[POOL_MAX_TERMS] = {0}; /* iv: only with Indices */
  for (int t = 0; t < nt; ++t) {
    LLVMValueRef xi = hc_kb_iadd(kb, xb[which[t]], S == 1 ? c : hc_kb_imul(kb, c, hc_kb_i64(kb, S)));
    xv[t] = hc_kb_load(kb, p->dt, e->X, xi);
    if (p->with_indices)
      iv[t] = p->column_major ? hc_kb_iadd(kb, ib[which[t]], hc_kb_imul(kb, c, hc_kb_i64(kb, e->istep))) : xi;
  }
  fold(e, c, nt, xv, iv);
  hc_loop_end(kb, &loop);
}

/* Last-dim taps [k0, k1) for the current row: one fused loop over the
 * columns where all of them are inside the input, per-tap loops on the
 * edges. */
static void pool_group(pool_emit* e, int64_t k0, int64_t k1) {
  hc_kb* kb = e->kb;
  const pool_plan* p = e->p;
  int L = p->nd - 1;
  int64_t S = p->s[L], I = p->in[L], O = p->out[L];
  int nt = (int)(k1 - k0);
  int64_t lo[POOL_MAX_TERMS], hi[POOL_MAX_TERMS], ilo = 0, ihi = O;
  LLVMValueRef xb[POOL_MAX_TERMS], ib[POOL_MAX_TERMS];
  int which[POOL_MAX_TERMS];
  LLVMValueRef c0s = S == 1 ? e->c0 : hc_kb_imul(kb, e->c0, hc_kb_i64(kb, S));
  for (int t = 0; t < nt; ++t) {
    int64_t off = (k0 + t) * p->d[L] - p->pb[L];
    /* columns o with 0 <= o*S + off < I */
    lo[t] = clamp64(cdiv(-off, S), 0, O);
    hi[t] = clamp64(fdiv(I - 1 - off, S) + 1, lo[t], O);
    if (lo[t] > ilo) ilo = lo[t];
    if (hi[t] < ihi) ihi = hi[t];
    LLVMValueRef first = hc_kb_iadd(kb, c0s, hc_kb_i64(kb, off)); /* last-dim input index of column 0 */
    xb[t] = hc_kb_iadd(kb, e->xrow, first);
    ib[t] = e->irow ? hc_kb_iadd(kb, e->irow, hc_kb_imul(kb, first, hc_kb_i64(kb, e->istep / S))) : NULL;
    which[t] = t;
  }
  if (ihi < ilo) ihi = ilo;
  LLVMValueRef zero = hc_kb_i64(kb, 0);
  LLVMValueRef A = hc_kb_imin(kb, hc_kb_imax(kb, LLVMBuildSub(kb->b, hc_kb_i64(kb, ilo), e->c0, ""), zero), e->cw);
  LLVMValueRef B = hc_kb_imin(kb, hc_kb_imax(kb, LLVMBuildSub(kb->b, hc_kb_i64(kb, ihi), e->c0, ""), A), e->cw);
  /* Left edge, interior, right edge: each column sees its taps in order. */
  for (int t = 0; t < nt; ++t) {
    if (lo[t] == ilo && hi[t] == ihi) continue;
    LLVMValueRef tlo = LLVMBuildSub(kb->b, hc_kb_i64(kb, lo[t]), e->c0, "");
    LLVMValueRef thi = LLVMBuildSub(kb->b, hc_kb_i64(kb, hi[t]), e->c0, "");
    pool_loop(e, hc_kb_imax(kb, tlo, zero), hc_kb_imin(kb, A, thi), 1, &which[t], xb, ib);
  }
  pool_loop(e, A, B, nt, which, xb, ib);
  for (int t = 0; t < nt; ++t) {
    if (lo[t] == ilo && hi[t] == ihi) continue;
    LLVMValueRef tlo = LLVMBuildSub(kb->b, hc_kb_i64(kb, lo[t]), e->c0, "");
    LLVMValueRef thi = LLVMBuildSub(kb->b, hc_kb_i64(kb, hi[t]), e->c0, "");
    pool_loop(e, hc_kb_imax(kb, tlo, B), hc_kb_imin(kb, e->cw, thi), 1, &which[t], xb, ib);
  }
}

/* A private constant array of compute-type values (per-column divisors). */
static LLVMValueRef const_table(hc_kb* kb, hx_dtype_t dt, const double* v, int64_t count) {
  LLVMTypeRef ct = hc_kb_compute_type(kb, dt);
  LLVMValueRef* elems = malloc(sizeof(LLVMValueRef) * (size_t)(count ? count : 1));
  if (!elems) return NULL;
  for (int64_t i = 0; i < count; ++i) elems[i] = LLVMConstReal(ct, v[i]);
  LLVMValueRef init = LLVMConstArray2(ct, elems, (uint64_t)count);
  free(elems);
  return hc_kb_const_table(kb->lc, init, "pool_counts", 0);
}

/* Widest padded input row the separable MaxPool kernel keeps on the stack. */
#define POOL_MAX_SEP_COLS 4096
/* Most last-dim taps the separable kernel unrolls per output column. */
#define POOL_MAX_SEP_TAPS 16
/* Output columns per vector of the separable kernel, and the largest
 * stride it gathers with one load and a shuffle per tap. */
#define SEP_VL 8
#define SEP_MAX_VSTRIDE 4

/* MaxPool without Indices is separable: a task first folds the window's
 * outer-dim taps into one padded input row (vbuf, the reduction's identity
 * in the padding), a contiguous pass that vectorises, then reduces each
 * output column over its last-dim taps in vbuf, so the last dim's taps are
 * read once per input column instead of once per output column and tap. The
 * maximum is commutative and the identity is what an all-padding window
 * gives, so the result is the one of the general kernel. */
static bool pool_separable(const pool_plan* p) {
  if (!p->is_max || p->with_indices) return false;
  const int L = p->nd - 1;
  int64_t wp = p->pb[L] + p->in[L];
  int64_t need = p->out[L] ? (p->out[L] - 1) * p->s[L] + (p->k[L] - 1) * p->d[L] + 1 : 0;
  if (need > wp) wp = need;
  return p->out_plane > 0 && p->in[L] > 0 && p->k[L] <= POOL_MAX_SEP_TAPS && wp <= POOL_MAX_SEP_COLS &&
         p->out[L] <= POOL_MAX_COLS;
}

/* max(a, x) propagating a NaN of either operand, cheaper than llvm.maximum
 * (which also orders -0 below +0, which MaxPool does not need): a compare
 * and select (one maxps) plus a NaN test of x. */
static LLVMValueRef sep_max(hc_kb* kb, hx_dtype_t dt, LLVMValueRef a, LLVMValueRef x) {
  if (!hc_dtype_is_float(dt)) return hc_kb_max(kb, dt, a, x);
  LLVMValueRef m = LLVMBuildSelect(kb->b, LLVMBuildFCmp(kb->b, LLVMRealOGT, x, a, ""), x, a, "");
  return LLVMBuildSelect(kb->b, LLVMBuildFCmp(kb->b, LLVMRealUNO, x, x, ""), x, m, "");
}

/* Part `part` of a row pass over the IL input columns: [0, vec_il) in
 * vectors of w = SEP_VL float32 columns (part 0), then the rest one by one
 * (part 1). False past the last part. */
static bool sep_part(int part, int64_t vec_il, int64_t IL, int64_t* w, int64_t* from, int64_t* to) {
  if (part > 1) return false;
  *w = part == 0 ? SEP_VL : 1;
  *from = part == 0 ? 0 : vec_il;
  *to = part == 0 ? vec_il : IL;
  return true;
}

/* x[xi .. xi + w) in the compute type ct: a vector of w float32 columns,
 * or one element (w = 1, converted from dt). */
static LLVMValueRef sep_load(hc_kb* kb, hx_dtype_t dt, LLVMTypeRef ct, LLVMValueRef X, LLVMValueRef xi, int64_t w) {
  if (w == 1) return hc_kb_load(kb, dt, X, xi);
  LLVMValueRef v = LLVMBuildLoad2(kb->b, LLVMVectorType(ct, (unsigned)w), hc_kb_gep(kb, dt, X, xi), "");
  LLVMSetAlignment(v, 4);
  return v;
}

static hx_status_t lower_max_pool_separable(hc_lower_ctx* lc, hc_node* n, const pool_plan* pp) {
  const pool_plan p = *pp;
  const int L = p.nd - 1;
  int64_t OL = p.out[L], IL = p.in[L], PB = p.pb[L];
  int64_t WP = PB + IL;
  int64_t need = (OL - 1) * p.s[L] + (p.k[L] - 1) * p.d[L] + 1;
  if (need > WP) WP = need;
  /* float32 output columns in vectors of SEP_VL for strides up to 4: each
   * tap loads SEP_VL * s consecutive elements of vbuf and keeps every s-th
   * (a shuffle), instead of SEP_VL scalar loads and maxima (ResNet-50's 3x3
   * stride-2 MaxPool: 2.9x ONNX Runtime's time with scalar columns). The
   * last vector's load runs up to s - 1 elements past the taps it uses:
   * vbuf gets that slack (lanes never kept). */
  int64_t vcols = p.dt == HX_DTYPE_FLOAT32 && p.s[L] <= SEP_MAX_VSTRIDE ? OL / SEP_VL * SEP_VL : 0;
  int64_t vneed = vcols ? (vcols - SEP_VL) * p.s[L] + (p.k[L] - 1) * p.d[L] + SEP_VL * p.s[L] : 0;
  int64_t WB = vneed > WP ? vneed : WP;
  /* The row passes over the input columns go in explicit vectors too:
   * left to LLVM, the 112-column loop of ResNet-50's MaxPool was unrolled
   * into scalar compares and branches (2.6x ONNX Runtime's time). */
  int64_t vec_il = p.dt == HX_DTYPE_FLOAT32 ? IL / SEP_VL * SEP_VL : 0;
  int64_t rows = 1;
  for (int i = 0; i < L; ++i) rows *= p.out[i];
  int64_t outer_taps = 1;
  for (int i = 0; i < L; ++i) outer_taps *= p.k[i];
  int64_t ops_row = outer_taps * IL + p.k[L] * OL;
  int64_t RB = ops_row >= POOL_TASK_OPS ? 1 : POOL_TASK_OPS / (ops_row ? ops_row : 1);
  if (RB > rows) RB = rows;
  if (RB < 1) RB = 1;
  int64_t NRB = (rows + RB - 1) / RB;
  int64_t planes = p.N * p.C;
  int64_t tasks = planes * NRB;
  int64_t xs[POOL_MAX_SP];
  hc_strides(p.nd, p.in, xs);

  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, tasks, &kb));
  LLVMBuilderRef b = kb.b;
  LLVMValueRef X = hc_kb_ptr(&kb, n->inputs[0]);
  LLVMValueRef Y = hc_kb_ptr(&kb, n->outputs[0]);
  LLVMTypeRef ct = hc_kb_compute_type(&kb, p.dt);
  LLVMValueRef vbuf = hc_kb_alloca(&kb, LLVMArrayType2(ct, (uint64_t)WB), "vrow");
  LLVMValueRef init;
  if (hc_dtype_is_float(p.dt))
    init = LLVMConstReal(ct, -INFINITY);
  else
    init = hc_kb_const_i(&kb, p.dt, p.dt == HX_DTYPE_INT8 ? -128 : 0);

  hc_loop task;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  /* The padding columns of vbuf never change: set them once per task. */
  {
    hc_loop cl;
    LLVMValueRef c = hc_loop_begin(&kb, &cl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, PB), "padl");
    LLVMBuildStore(b, init, LLVMBuildGEP2(b, ct, vbuf, &c, 1, ""));
    hc_loop_end(&kb, &cl);
    c = hc_loop_begin(&kb, &cl, hc_kb_i64(&kb, PB + IL), hc_kb_i64(&kb, WP), "padr");
    LLVMBuildStore(b, init, LLVMBuildGEP2(b, ct, vbuf, &c, 1, ""));
    hc_loop_end(&kb, &cl);
  }
  LLVMValueRef xplane, yplane, r_lo, r_hi;
  task_rows(&kb, &p, t, NRB, RB, rows, &xplane, &yplane, &r_lo, &r_hi);

  hc_loop row;
  LLVMValueRef q = hc_loop_begin(&kb, &row, r_lo, r_hi, "row");
  LLVMValueRef o[POOL_MAX_SP];
  LLVMValueRef rem = q;
  for (int i = L - 1; i >= 0; --i) {
    o[i] = i > 0 ? LLVMBuildURem(b, rem, hc_kb_i64(&kb, p.out[i]), "") : rem;
    if (i > 0) rem = LLVMBuildUDiv(b, rem, hc_kb_i64(&kb, p.out[i]), "");
  }
  LLVMValueRef vin = LLVMBuildGEP2(b, ct, vbuf, (LLVMValueRef[]){hc_kb_i64(&kb, PB)}, 1, "");
  LLVMBasicBlockRef bb_join = NULL;
  if (L == 1 && p.k[0] <= POOL_MAX_TERMS) {
    /* 2-D, a window with all its rows inside: one pass over the columns. */
    int64_t bound = (p.out[0] + 1) * p.s[0] + p.pb[0] + p.k[0] * p.d[0] + 2;
    LLVMValueRef a0 = LLVMBuildSub(b, hc_kb_imul(&kb, q, hc_kb_i64(&kb, p.s[0])), hc_kb_i64(&kb, p.pb[0]), "");
    LLVMValueRef lo0, hi0;
    tap_range(&kb, a0, p.d[0], p.in[0], p.k[0], bound, &lo0, &hi0);
    LLVMValueRef full = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, lo0, hc_kb_i64(&kb, 0), ""),
                                     LLVMBuildICmp(b, LLVMIntEQ, hi0, hc_kb_i64(&kb, p.k[0]), ""), "");
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
    LLVMBasicBlockRef bb_full = LLVMAppendBasicBlockInContext(kb.lc->llctx, fn, "sep_full");
    LLVMBasicBlockRef bb_part = LLVMAppendBasicBlockInContext(kb.lc->llctx, fn, "sep_part");
    bb_join = LLVMAppendBasicBlockInContext(kb.lc->llctx, fn, "sep_join");
    LLVMBuildCondBr(b, full, bb_full, bb_part);
    LLVMPositionBuilderAtEnd(b, bb_full);
    LLVMValueRef x0 = hc_kb_iadd(&kb, xplane, hc_kb_imul(&kb, a0, hc_kb_i64(&kb, xs[0])));
    int64_t w, from, to;
    for (int part = 0; sep_part(part, vec_il, IL, &w, &from, &to); ++part) {
      if (to <= from) continue;
      hc_loop cl;
      LLVMValueRef c = hc_loop_begin_step(&kb, &cl, hc_kb_i64(&kb, from), hc_kb_i64(&kb, to), w, "vert");
      LLVMValueRef v = NULL;
      for (int64_t k = 0; k < p.k[0]; ++k) {
        LLVMValueRef xi = hc_kb_iadd(&kb, hc_kb_iadd(&kb, x0, hc_kb_i64(&kb, k * p.d[0] * xs[0])), c);
        LLVMValueRef xv = sep_load(&kb, p.dt, ct, X, xi, w);
        v = v ? sep_max(&kb, p.dt, v, xv) : xv;
      }
      LLVMSetAlignment(LLVMBuildStore(b, v, LLVMBuildGEP2(b, ct, vin, &c, 1, "")), 4);
      hc_loop_end(&kb, &cl);
    }
    LLVMBuildBr(b, bb_join);
    LLVMPositionBuilderAtEnd(b, bb_part);
  }
  {
    hc_loop cl;
    LLVMValueRef c = hc_loop_begin(&kb, &cl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, IL), "init");
    LLVMBuildStore(b, init, LLVMBuildGEP2(b, ct, vin, &c, 1, ""));
    hc_loop_end(&kb, &cl);
  }
  /* Outer dims: fold the input rows of the window's valid taps into vbuf. */
  LLVMValueRef oa[POOL_MAX_SP], klo[POOL_MAX_SP], khi[POOL_MAX_SP];
  for (int i = 0; i < L; ++i) {
    int64_t bound = (p.out[i] + 1) * p.s[i] + p.pb[i] + p.k[i] * p.d[i] + 2;
    oa[i] = LLVMBuildSub(b, hc_kb_imul(&kb, o[i], hc_kb_i64(&kb, p.s[i])), hc_kb_i64(&kb, p.pb[i]), "");
    tap_range(&kb, oa[i], p.d[i], p.in[i], p.k[i], bound, &klo[i], &khi[i]);
  }
  LLVMValueRef xr = xplane;
  hc_loop kl[POOL_MAX_SP];
  for (int i = 0; i < L; ++i) {
    LLVMValueRef k = hc_loop_begin(&kb, &kl[i], klo[i], khi[i], "tap");
    LLVMValueRef pos = hc_kb_iadd(&kb, oa[i], hc_kb_imul(&kb, k, hc_kb_i64(&kb, p.d[i])));
    xr = hc_kb_iadd(&kb, xr, hc_kb_imul(&kb, pos, hc_kb_i64(&kb, xs[i])));
  }
  int64_t w, from, to;
  for (int part = 0; sep_part(part, vec_il, IL, &w, &from, &to); ++part) {
    if (to <= from) continue;
    hc_loop cl;
    LLVMValueRef c = hc_loop_begin_step(&kb, &cl, hc_kb_i64(&kb, from), hc_kb_i64(&kb, to), w, "fold");
    LLVMValueRef vp = LLVMBuildGEP2(b, ct, vin, &c, 1, "");
    LLVMValueRef xv = sep_load(&kb, p.dt, ct, X, hc_kb_iadd(&kb, xr, c), w);
    LLVMValueRef old = LLVMBuildLoad2(b, LLVMTypeOf(xv), vp, "");
    LLVMSetAlignment(old, 4);
    LLVMSetAlignment(LLVMBuildStore(b, sep_max(&kb, p.dt, old, xv), vp), 4);
    hc_loop_end(&kb, &cl);
  }
  for (int i = L - 1; i >= 0; --i) hc_loop_end(&kb, &kl[i]);
  if (bb_join) {
    LLVMBuildBr(b, bb_join);
    LLVMPositionBuilderAtEnd(b, bb_join);
  }

  /* Last dim: output column c reduces vbuf[c*s + k*d] over its taps. */
  LLVMValueRef ybase = hc_kb_iadd(&kb, yplane, hc_kb_imul(&kb, q, hc_kb_i64(&kb, OL)));
  /* The next output row's lines, for writing: the output is cold (its
   * arena slot was last another tensor's), and each row's stores otherwise
   * wait for their lines (ResNet-50's 3x3 max pool: 0.88 of the time at
   * two threads, 0.96 at one; kbench, 8 rounds, against controls of
   * 0.99-1.03). */
  hc_kb_prefetch_write_span(&kb, p.dt, Y, hc_kb_iadd(&kb, ybase, hc_kb_i64(&kb, OL)), OL, 2);
  if (vcols) {
    int64_t st = p.s[L];
    LLVMTypeRef vt = LLVMVectorType(ct, SEP_VL), wt = LLVMVectorType(ct, (unsigned)(SEP_VL * st));
    LLVMValueRef every[SEP_VL];
    for (int i = 0; i < SEP_VL; ++i) every[i] = LLVMConstInt(kb.t_i32, (unsigned long long)(i * st), 0);
    LLVMValueRef pick = LLVMConstVector(every, SEP_VL);
    hc_loop cl;
    LLVMValueRef c = hc_loop_begin_step(&kb, &cl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, vcols), SEP_VL, "vcol");
    LLVMValueRef base = hc_kb_imul(&kb, c, hc_kb_i64(&kb, st));
    LLVMValueRef v = NULL;
    for (int64_t k = 0; k < p.k[L]; ++k) {
      LLVMValueRef at = hc_kb_iadd(&kb, base, hc_kb_i64(&kb, k * p.d[L]));
      LLVMValueRef w = LLVMBuildLoad2(b, st == 1 ? vt : wt, LLVMBuildGEP2(b, ct, vbuf, &at, 1, ""), "");
      LLVMSetAlignment(w, 4);
      LLVMValueRef xv = st == 1 ? w : LLVMBuildShuffleVector(b, w, LLVMGetUndef(wt), pick, "");
      v = v ? sep_max(&kb, p.dt, v, xv) : xv;
    }
    LLVMValueRef yi = hc_kb_iadd(&kb, ybase, c);
    LLVMValueRef sv = LLVMBuildStore(b, v, LLVMBuildGEP2(b, ct, Y, &yi, 1, ""));
    LLVMSetAlignment(sv, 4);
    hc_loop_end(&kb, &cl);
  }
  {
    hc_loop cl;
    LLVMValueRef c = hc_loop_begin(&kb, &cl, hc_kb_i64(&kb, vcols), hc_kb_i64(&kb, OL), "col");
    LLVMValueRef base = hc_kb_imul(&kb, c, hc_kb_i64(&kb, p.s[L]));
    LLVMValueRef v = NULL;
    for (int64_t k = 0; k < p.k[L]; ++k) {
      LLVMValueRef at = hc_kb_iadd(&kb, base, hc_kb_i64(&kb, k * p.d[L]));
      LLVMValueRef xv = LLVMBuildLoad2(b, ct, LLVMBuildGEP2(b, ct, vbuf, &at, 1, ""), "");
      v = v ? sep_max(&kb, p.dt, v, xv) : xv;
    }
    hc_kb_store(&kb, p.dt, Y, hc_kb_iadd(&kb, ybase, c), v);
    hc_loop_end(&kb, &cl);
  }
  hc_loop_end(&kb, &row);
  hc_loop_end(&kb, &task);
  double outs = (double)planes * (double)p.out_plane;
  hc_kb_end(&kb, outs * (double)p.ktot,
            (double)hc_value_nbytes(n->inputs[0]) + (double)hc_value_nbytes(n->outputs[0]));
  return HX_OK;
}

static hx_status_t lower_pool(hc_lower_ctx* lc, hc_node* n, bool is_max) {
  pool_plan p;
  HX_RETURN_IF_ERROR(pool_setup(n, is_max, &p));
  if (pool_separable(&p)) return lower_max_pool_separable(lc, n, &p);
  const int L = p.nd - 1;
  int64_t OL = p.out[L];
  int64_t NCB = OL > POOL_MAX_COLS ? (OL + POOL_MAX_COLS - 1) / POOL_MAX_COLS : 1;
  int64_t CB = NCB > 1 ? (OL + NCB - 1) / NCB : OL;
  int64_t rows = NCB;
  for (int i = 0; i < L; ++i) rows *= p.out[i];
  int64_t ops_row = p.ktot * (CB ? CB : 1);
  int64_t RB = ops_row >= POOL_TASK_OPS ? 1 : POOL_TASK_OPS / ops_row;
  if (RB > rows) RB = rows;
  if (RB < 1) RB = 1;
  int64_t NRB = (rows + RB - 1) / RB;
  int64_t planes = p.N * p.C;
  int64_t tasks = p.out_plane ? planes * NRB : 0;

  /* Column-major Indices: the stride of each spatial dim counts from the first. */
  int64_t xs[POOL_MAX_SP], cs[POOL_MAX_SP];
  hc_strides(p.nd, p.in, xs);
  int64_t st = 1;
  for (int i = 0; i < p.nd; ++i) {
    cs[i] = st;
    st *= p.in[i];
  }

  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, tasks, &kb));
  LLVMBuilderRef b = kb.b;
  pool_emit e = {.kb = &kb, .p = &p};
  e.X = hc_kb_ptr(&kb, n->inputs[0]);
  LLVMValueRef Y = hc_kb_ptr(&kb, n->outputs[0]);
  LLVMValueRef Ind = p.with_indices ? hc_kb_ptr(&kb, n->outputs[1]) : NULL;
  LLVMTypeRef ct = hc_kb_compute_type(&kb, p.dt);
  e.acc = hc_kb_alloca(&kb, LLVMArrayType2(ct, (uint64_t)(CB ? CB : 1)), "acc");
  if (p.with_indices) e.idx = hc_kb_alloca(&kb, LLVMArrayType2(kb.t_i64, (uint64_t)(CB ? CB : 1)), "idx");
  e.istep = p.column_major ? p.s[L] * cs[L] : p.s[L];

  /* Divisors of the last dim, per column. */
  LLVMValueRef counts = NULL;
  if (!is_max) {
    double* v = malloc(sizeof(double) * (size_t)(OL ? OL : 1));
    if (!v) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory lowering %s", n->name);
    for (int64_t o = 0; o < OL; ++o) v[o] = (double)window_count(&p, L, o, p.count_include_pad);
    counts = const_table(&kb, p.dt, v, OL);
    free(v);
    if (!counts) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory lowering %s", n->name);
  }

  hc_loop task;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef xplane, yplane, r_lo, r_hi;
  task_rows(&kb, &p, t, NRB, RB, rows, &xplane, &yplane, &r_lo, &r_hi);

  hc_loop row;
  LLVMValueRef r = hc_loop_begin(&kb, &row, r_lo, r_hi, "row");
  LLVMValueRef q = r;
  if (NCB > 1) {
    e.c0 = hc_kb_imul(&kb, LLVMBuildURem(b, r, hc_kb_i64(&kb, NCB), ""), hc_kb_i64(&kb, CB));
    e.cw = hc_kb_imin(&kb, LLVMBuildSub(b, hc_kb_i64(&kb, OL), e.c0, ""), hc_kb_i64(&kb, CB));
    q = LLVMBuildUDiv(b, r, hc_kb_i64(&kb, NCB), "");
  } else {
    e.c0 = hc_kb_i64(&kb, 0);
    e.cw = hc_kb_i64(&kb, OL);
  }
  LLVMValueRef o[POOL_MAX_SP];
  LLVMValueRef rem = q;
  for (int i = L - 1; i >= 0; --i) {
    o[i] = i > 0 ? LLVMBuildURem(b, rem, hc_kb_i64(&kb, p.out[i]), "") : rem;
    if (i > 0) rem = LLVMBuildUDiv(b, rem, hc_kb_i64(&kb, p.out[i]), "");
  }

  /* Start values: the identity of the reduction, no index yet. */
  LLVMValueRef init;
  if (!is_max)
    init = hc_kb_const(&kb, p.dt, 0);
  else if (hc_dtype_is_float(p.dt))
    init = LLVMConstReal(ct, -INFINITY);
  else
    init = hc_kb_const_i(&kb, p.dt, p.dt == HX_DTYPE_INT8 ? -128 : 0);
  {
    hc_loop cl;
    LLVMValueRef c = hc_loop_begin(&kb, &cl, hc_kb_i64(&kb, 0), e.cw, "init");
    LLVMBuildStore(b, init, LLVMBuildGEP2(b, ct, e.acc, &c, 1, ""));
    if (p.with_indices) LLVMBuildStore(b, hc_kb_i64(&kb, -1), LLVMBuildGEP2(b, kb.t_i64, e.idx, &c, 1, ""));
    hc_loop_end(&kb, &cl);
  }

  /* Outer dims: input position a + k*d for taps k in [klo, khi). */
  LLVMValueRef oa[POOL_MAX_SP], klo[POOL_MAX_SP], khi[POOL_MAX_SP];
  LLVMValueRef outer_count = hc_kb_i64(&kb, 1);
  for (int i = 0; i < L; ++i) {
    int64_t bound = (p.out[i] + 1) * p.s[i] + p.pb[i] + p.k[i] * p.d[i] + 2;
    oa[i] = LLVMBuildSub(b, hc_kb_imul(&kb, o[i], hc_kb_i64(&kb, p.s[i])), hc_kb_i64(&kb, p.pb[i]), "");
    tap_range(&kb, oa[i], p.d[i], p.in[i], p.k[i], bound, &klo[i], &khi[i]);
    if (!is_max) {
      LLVMValueRef cnt;
      if (p.count_include_pad) {
        /* taps with a + k*d < in + pe; a + pe... >= 0 for every output kept */
        LLVMValueRef room = LLVMBuildSub(b, hc_kb_i64(&kb, p.in[i] + p.pe[i] - 1), oa[i], "");
        cnt = hc_kb_iadd(&kb, LLVMBuildSDiv(b, room, hc_kb_i64(&kb, p.d[i]), ""), hc_kb_i64(&kb, 1));
        cnt = hc_kb_imax(&kb, hc_kb_imin(&kb, cnt, hc_kb_i64(&kb, p.k[i])), hc_kb_i64(&kb, 0));
      } else {
        cnt = hc_kb_imax(&kb, LLVMBuildSub(b, khi[i], klo[i], ""), hc_kb_i64(&kb, 0));
      }
      outer_count = hc_kb_imul(&kb, outer_count, cnt);
    }
  }

  LLVMValueRef xr = xplane;
  LLVMValueRef ir = p.column_major && p.with_indices ? xplane : NULL;
  hc_loop kl[POOL_MAX_SP];
  for (int i = 0; i < L; ++i) {
    LLVMValueRef k = hc_loop_begin(&kb, &kl[i], klo[i], khi[i], "tap");
    LLVMValueRef pos = hc_kb_iadd(&kb, oa[i], hc_kb_imul(&kb, k, hc_kb_i64(&kb, p.d[i])));
    xr = hc_kb_iadd(&kb, xr, hc_kb_imul(&kb, pos, hc_kb_i64(&kb, xs[i])));
    if (ir) ir = hc_kb_iadd(&kb, ir, hc_kb_imul(&kb, pos, hc_kb_i64(&kb, cs[i])));
  }
  e.xrow = xr;
  e.irow = ir;
  for (int64_t k0 = 0; k0 < p.k[L]; k0 += POOL_MAX_TERMS)
    pool_group(&e, k0, k0 + POOL_MAX_TERMS < p.k[L] ? k0 + POOL_MAX_TERMS : p.k[L]);
  for (int i = L - 1; i >= 0; --i) hc_loop_end(&kb, &kl[i]);

  /* Store the row (averages divided by their tap counts). */
  LLVMValueRef ybase = hc_kb_iadd(&kb, yplane, hc_kb_iadd(&kb, hc_kb_imul(&kb, q, hc_kb_i64(&kb, OL)), e.c0));
  LLVMValueRef outer_f = is_max ? NULL : LLVMBuildSIToFP(b, outer_count, ct, "");
  {
    hc_loop cl;
    LLVMValueRef c = hc_loop_begin(&kb, &cl, hc_kb_i64(&kb, 0), e.cw, "store");
    LLVMValueRef v = LLVMBuildLoad2(b, ct, LLVMBuildGEP2(b, ct, e.acc, &c, 1, ""), "");
    if (!is_max) {
      LLVMValueRef col = hc_kb_iadd(&kb, e.c0, c);
      LLVMValueRef cnt = LLVMBuildLoad2(b, ct, LLVMBuildGEP2(b, ct, counts, &col, 1, ""), "");
      v = LLVMBuildFDiv(b, v, LLVMBuildFMul(b, outer_f, cnt, ""), "");
    }
    LLVMValueRef yi = hc_kb_iadd(&kb, ybase, c);
    hc_kb_store(&kb, p.dt, Y, yi, v);
    if (Ind)
      LLVMBuildStore(b, LLVMBuildLoad2(b, kb.t_i64, LLVMBuildGEP2(b, kb.t_i64, e.idx, &c, 1, ""), ""),
                     LLVMBuildGEP2(b, kb.t_i64, Ind, &yi, 1, ""));
    hc_loop_end(&kb, &cl);
  }
  hc_loop_end(&kb, &row);
  hc_loop_end(&kb, &task);

  double outs = (double)planes * (double)p.out_plane;
  double bytes = (double)hc_value_nbytes(n->inputs[0]) + (double)hc_value_nbytes(n->outputs[0]) +
                 (Ind ? (double)hc_value_nbytes(n->outputs[1]) : 0.0);
  hc_kb_end(&kb, outs * (double)p.ktot + (is_max ? 0.0 : outs), bytes);
  return HX_OK;
}

static hx_status_t lower_max_pool(hc_lower_ctx* lc, hc_node* n) { return lower_pool(lc, n, true); }
static hx_status_t lower_average_pool(hc_lower_ctx* lc, hc_node* n) { return lower_pool(lc, n, false); }

/* ---- GlobalAveragePool ---------------------------------------------------------- */

static hx_status_t infer_global_average_pool(hc_graph* g, hc_node* n) {
  return hc_pool_infer_global(n, HC_DT_FLOATS);
}

/* One task averages a block of (image, channel) planes; the sum is marked
 * reassociable so that LLVM vectorises it. */
static hx_status_t lower_global_average_pool(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* x = n->inputs[0];
  hx_dtype_t dt = x->dtype;
  int64_t planes = x->dims[0] * x->dims[1];
  int64_t size = hc_shape_numel(x->rank - 2, x->dims + 2);
  int64_t per_task = size >= GAP_TASK_ELEMS ? 1 : GAP_TASK_ELEMS / (size ? size : 1);
  int64_t tasks = (planes + per_task - 1) / per_task;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, tasks, &kb));
  LLVMBuilderRef b = kb.b;
  LLVMValueRef X = hc_kb_ptr(&kb, x);
  LLVMValueRef Y = hc_kb_ptr(&kb, n->outputs[0]);
  LLVMTypeRef ct = hc_kb_compute_type(&kb, dt);
  LLVMValueRef sum = hc_kb_alloca(&kb, ct, "sum");
  hc_loop task;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef lo = hc_kb_imul(&kb, t, hc_kb_i64(&kb, per_task));
  LLVMValueRef hi = hc_kb_imin(&kb, hc_kb_iadd(&kb, lo, hc_kb_i64(&kb, per_task)), hc_kb_i64(&kb, planes));
  hc_loop pl;
  LLVMValueRef pi = hc_loop_begin(&kb, &pl, lo, hi, "plane");
  LLVMValueRef base = hc_kb_imul(&kb, pi, hc_kb_i64(&kb, size));
  LLVMBuildStore(b, hc_kb_const(&kb, dt, 0), sum);
  hc_loop el;
  LLVMValueRef i = hc_loop_begin(&kb, &el, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, size), "i");
  LLVMValueRef v = hc_kb_load(&kb, dt, X, hc_kb_iadd(&kb, base, i));
  LLVMBuildStore(b, hc_kb_reassoc(LLVMBuildFAdd(b, LLVMBuildLoad2(b, ct, sum, ""), v, "")), sum);
  /* Small planes (7x7) stay a loop, or LLVM unrolls them into one serial
   * chain of scalar adds before the vectoriser sees the sum
   * (bench/kernels/row_ops.py: planes of 16-96 elements 1.7-3.2x faster). */
  if (size >= 16)
    hc_loop_end_row(&kb, &el, size);
  else
    hc_loop_end(&kb, &el);
  LLVMValueRef avg = LLVMBuildFDiv(b, LLVMBuildLoad2(b, ct, sum, ""), hc_kb_const(&kb, dt, (double)size), "");
  hc_kb_store(&kb, dt, Y, pi, avg);
  hc_loop_end(&kb, &pl);
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, (double)planes * (double)(size + 1),
            (double)hc_value_nbytes(x) + (double)hc_value_nbytes(n->outputs[0]));
  return HX_OK;
}

static const char* const k_max_pool_attrs[] = {"auto_pad", "ceil_mode",     "dilations", "kernel_shape",
                                               "pads",     "storage_order", "strides",   NULL};
static const char* const k_average_pool_attrs[] = {"auto_pad",     "ceil_mode", "count_include_pad", "dilations",
                                                   "kernel_shape", "pads",      "strides",           NULL};

const hc_op_desc hc_op_max_pool = {"MaxPool", "", 1, 22, k_max_pool_attrs, 0, infer_max_pool, lower_max_pool, NULL};
const hc_op_desc hc_op_average_pool = {"AveragePool",      "",  1, 22, k_average_pool_attrs, 0, infer_average_pool,
                                       lower_average_pool, NULL};
const hc_op_desc hc_op_global_average_pool = {"GlobalAveragePool",       "",  1, 22, NULL, 0, infer_global_average_pool,
                                              lower_global_average_pool, NULL};
