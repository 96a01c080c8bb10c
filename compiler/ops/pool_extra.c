/* Pooling beyond MaxPool/AveragePool: GlobalMaxPool (opsets 1-22),
 * GlobalLpPool (2-22, and opset 1's float p), LpPool (1-22; dilations and
 * ceil_mode from opset 18) and MaxUnpool (9-22).
 *
 *   GlobalMaxPool: y[n, c] = max over the plane of x[n, c]
 *   GlobalLpPool:  y[n, c] = (sum over the plane of |x|^p)^(1/p)
 *   LpPool:        the Lp norm of each window; padding contributes 0
 *   MaxUnpool:     y = 0, then y.flat[I[i]] = x.flat[i] for every i
 *
 * Outputs of the global pools keep the input rank with spatial dims 1.
 * LpPool's output sizes follow hc_sliding_window_geometry (conv.c), so
 * auto_pad, pads, strides, dilations and ceil_mode mean what they mean for
 * MaxPool. p = 1 and p = 2 use |x| and x*x / sqrt; other p use pow. 16-bit
 * floats accumulate in float32.
 *
 * MaxUnpool unpools into the shape (in - 1) * stride - pads + kernel per
 * spatial dim; its indices are flat positions in that whole tensor, as
 * MaxPool's Indices output gives them, read at run time: an index outside
 * it is invalid input and its element is dropped (nothing is written out
 * of bounds). Duplicate indices keep the last element, as in ONNX Runtime:
 * the scatter is one task, in input order. An output_shape input (a
 * compile-time constant, at least the unpooled shape in every dim) makes
 * the output that large, the unpooled tensor at its origin and zeros
 * elsewhere, as in the ONNX reference.
 *
 * Kernels: the global pools reduce a block of planes per task (contiguous,
 * reassociable so LLVM vectorises the reduction); LpPool's task is one row
 * of outputs of one plane, each output walking its window's valid taps
 * (computed ranges, no bounds tests; the last dim's taps are contiguous
 * for dilation 1).
 */
#include <math.h>
#include <string.h>

#include "compiler/ops/movement.h"
#include "compiler/ops/pool_common.h"
#include "compiler/ops/sliding_window.h"

#define PX_MAX_SP (HC_MAX_RANK - 2)
/* Elements per task of the global pools. */
#define PX_GLOBAL_ELEMS (1 << 14)
/* Bytes per task of MaxUnpool's zero fill. */
#define PX_FILL_BYTES (1 << 20)

/* The float types a pooling op accepts at the node's opset (bfloat16 from
 * opset 22). */
static uint64_t px_float_types(const hc_node* n) {
  uint64_t m = HC_DT(HX_DTYPE_FLOAT16) | HC_DT(HX_DTYPE_FLOAT32) | HC_DT(HX_DTYPE_FLOAT64);
  if (n->opset >= 22) m |= HC_DT(HX_DTYPE_BFLOAT16);
  return m;
}

/* Reads p (a float attribute in opset 1, an int from opset 2; default 2). */
static hx_status_t px_read_p(const hc_node* n, double* p) {
  *p = hc_attr_float(n, "p", 2.0f);
  if (!(*p > 0) || isinf(*p))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "p = %g; must be a positive finite number", *p);
  return HX_OK;
}

/* |x|^p in the compute type of dt. */
static LLVMValueRef px_pow_abs(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x, double p) {
  if (p == 2.0) return hc_kb_mul(kb, dt, x, x);
  LLVMValueRef a = hc_kb_math(kb, dt, "fabs", &x, 1);
  if (p == 1.0) return a;
  LLVMValueRef args[2] = {a, hc_kb_const(kb, dt, p)};
  return hc_kb_math(kb, dt, "pow", args, 2);
}

/* s^(1/p) in the compute type of dt. */
static LLVMValueRef px_root(hc_kb* kb, hx_dtype_t dt, LLVMValueRef s, double p) {
  if (p == 1.0) return s;
  if (p == 2.0) return hc_kb_math(kb, dt, "sqrt", &s, 1);
  LLVMValueRef args[2] = {s, hc_kb_const(kb, dt, 1.0 / p)};
  return hc_kb_math(kb, dt, "pow", args, 2);
}

/* ---- checks shared with pool.c (pool_common.h) ------------------------------------ */

/* Output (N, C, 1, ..., 1) of a global pool. */
hx_status_t hc_pool_infer_global(hc_node* n, uint64_t allowed) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, allowed));
  const hc_value* x = n->inputs[0];
  char s1[128];
  if (x->rank < 2)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input X ('%s') has shape %s; expected (N, C, D1, ...)",
                         x->name, hc_shape_str(x->rank, x->dims, s1, sizeof s1));
  int64_t dims[HC_MAX_RANK];
  for (int i = 0; i < x->rank; ++i) dims[i] = i < 2 ? x->dims[i] : 1;
  hc_set_output(n, 0, x->dtype, x->rank, dims);
  return HX_OK;
}

/* A 0/1 attribute. */
hx_status_t hc_pool_read_flag(const hc_node* n, const char* name, bool* out) {
  int64_t v = hc_attr_int(n, name, 0);
  if (v != 0 && v != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'%s' = %lld; must be 0 or 1", name, (long long)v);
  *out = v != 0;
  return HX_OK;
}

/* ---- GlobalMaxPool / GlobalLpPool ---------------------------------------------- */

static hx_status_t infer_global_max_pool(hc_graph* g, hc_node* n) { return hc_pool_infer_global(n, px_float_types(n)); }

static hx_status_t infer_global_lp_pool(hc_graph* g, hc_node* n) {
  double p;
  HX_RETURN_IF_ERROR(px_read_p(n, &p));
  return hc_pool_infer_global(n, px_float_types(n));
}

/* One task reduces a block of planes: max, or the Lp norm (p > 0). */
static hx_status_t lower_global(hc_lower_ctx* lc, hc_node* n, bool is_max) {
  double p = 2.0;
  if (!is_max) HX_RETURN_IF_ERROR(px_read_p(n, &p));
  const hc_value *x = n->inputs[0], *y = n->outputs[0];
  hx_dtype_t dt = x->dtype;
  int64_t planes = x->dims[0] * x->dims[1];
  int64_t size = hc_shape_numel(x->rank - 2, x->dims + 2);
  if (planes == 0) return HX_OK;
  int64_t per_task = size >= PX_GLOBAL_ELEMS ? 1 : PX_GLOBAL_ELEMS / (size ? size : 1);
  int64_t tasks = (planes + per_task - 1) / per_task;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, tasks, &kb));
  LLVMBuilderRef b = kb.b;
  LLVMValueRef X = hc_kb_ptr(&kb, x), Y = hc_kb_ptr(&kb, y);
  LLVMTypeRef ct = hc_kb_compute_type(&kb, dt);
  LLVMValueRef acc = hc_kb_alloca(&kb, ct, "acc");
  hc_loop task, pl, el;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef lo = hc_kb_imul(&kb, t, hc_kb_i64(&kb, per_task));
  LLVMValueRef hi = hc_kb_imin(&kb, hc_kb_iadd(&kb, lo, hc_kb_i64(&kb, per_task)), hc_kb_i64(&kb, planes));
  LLVMValueRef pi = hc_loop_begin(&kb, &pl, lo, hi, "plane");
  LLVMValueRef base = hc_kb_imul(&kb, pi, hc_kb_i64(&kb, size));
  LLVMBuildStore(b, hc_kb_const(&kb, dt, is_max ? -INFINITY : 0.0), acc);
  LLVMValueRef i = hc_loop_begin(&kb, &el, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, size), "i");
  LLVMValueRef v = hc_kb_load(&kb, dt, X, hc_kb_iadd(&kb, base, i));
  LLVMValueRef a = LLVMBuildLoad2(b, ct, acc, "");
  a = is_max ? hc_kb_max(&kb, dt, a, v) : hc_kb_add(&kb, dt, a, px_pow_abs(&kb, dt, v, p));
  LLVMBuildStore(b, hc_kb_reassoc(a), acc);
  hc_loop_end(&kb, &el);
  LLVMValueRef r = LLVMBuildLoad2(b, ct, acc, "");
  if (!is_max) r = px_root(&kb, dt, r, p);
  hc_kb_store(&kb, dt, Y, pi, r);
  hc_loop_end(&kb, &pl);
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, (double)planes * (double)size * (is_max ? 1.0 : 2.0),
            (double)hc_value_nbytes(x) + (double)hc_value_nbytes(y));
  return HX_OK;
}

static hx_status_t lower_global_max_pool(hc_lower_ctx* lc, hc_node* n) { return lower_global(lc, n, true); }
static hx_status_t lower_global_lp_pool(hc_lower_ctx* lc, hc_node* n) { return lower_global(lc, n, false); }

/* ---- LpPool -------------------------------------------------------------------- */

/* An LpPool node's geometry. */
typedef struct lp_plan {
  double p;
  int nd;
  int64_t N, C, in[PX_MAX_SP], out[PX_MAX_SP], k[PX_MAX_SP], s[PX_MAX_SP], d[PX_MAX_SP], pb[PX_MAX_SP], pe[PX_MAX_SP];
} lp_plan;

static hx_status_t lp_setup(const hc_node* n, lp_plan* p) {
  memset(p, 0, sizeof *p);
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, px_float_types(n)));
  HX_RETURN_IF_ERROR(px_read_p(n, &p->p));
  const hc_value* x = n->inputs[0];
  char s1[128];
  if (x->rank < 3)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "input X ('%s') has shape %s; expected (N, C, D1, ...) with at least one spatial dimension",
                         x->name, hc_shape_str(x->rank, x->dims, s1, sizeof s1));
  if (n->opset < 18 && (hc_node_attr(n, "dilations") || hc_node_attr(n, "ceil_mode")))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'dilations' and 'ceil_mode' need LpPool opset 18 or later");
  p->nd = x->rank - 2;
  p->N = x->dims[0];
  p->C = x->dims[1];
  int nk = hc_attr_ints(n, "kernel_shape", p->k, PX_MAX_SP);
  if (nk != p->nd)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "'kernel_shape' is required with %d values (spatial rank of %s)", p->nd,
                         hc_shape_str(x->rank, x->dims, s1, sizeof s1));
  for (int i = 0; i < p->nd; ++i) {
    if (p->k[i] < 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'kernel_shape'[%d] = %lld; must be >= 1", i,
                           (long long)p->k[i]);
    p->in[i] = x->dims[2 + i];
  }
  bool ceil_mode;
  HX_RETURN_IF_ERROR(hc_pool_read_flag(n, "ceil_mode", &ceil_mode));
  return hc_sliding_window_geometry(n, p->nd, p->in, p->k, ceil_mode, p->s, p->d, p->pb, p->pe, p->out);
}

static hx_status_t infer_lp_pool(hc_graph* g, hc_node* n) {
  lp_plan p;
  HX_RETURN_IF_ERROR(lp_setup(n, &p));
  int64_t dims[HC_MAX_RANK] = {p.N, p.C};
  for (int i = 0; i < p.nd; ++i) dims[2 + i] = p.out[i];
  hc_set_output(n, 0, n->inputs[0]->dtype, p.nd + 2, dims);
  return HX_OK;
}

/* floor(x / d) for a run-time x of any sign and a compile-time d >= 1. */
static LLVMValueRef px_floordiv(hc_kb* kb, LLVMValueRef x, int64_t d) {
  if (d == 1) return x;
  LLVMValueRef dv = hc_kb_i64(kb, d);
  LLVMValueRef q = LLVMBuildSDiv(kb->b, x, dv, "");
  LLVMValueRef r = LLVMBuildSRem(kb->b, x, dv, "");
  LLVMValueRef adj = LLVMBuildAnd(kb->b, LLVMBuildICmp(kb->b, LLVMIntNE, r, hc_kb_i64(kb, 0), ""),
                                  LLVMBuildICmp(kb->b, LLVMIntSLT, x, hc_kb_i64(kb, 0), ""), "");
  return LLVMBuildSub(kb->b, q, LLVMBuildZExt(kb->b, adj, kb->t_i64, ""), "");
}

/* Taps [lo, hi) of a window starting at a (step d, K taps) that fall inside
 * [0, I); hi <= lo when none does. */
static void px_taps(hc_kb* kb, LLVMValueRef a, int64_t d, int64_t K, int64_t I, LLVMValueRef* lo, LLVMValueRef* hi) {
  LLVMValueRef l = LLVMBuildNeg(kb->b, px_floordiv(kb, a, d), "");
  LLVMValueRef h =
      hc_kb_iadd(kb, px_floordiv(kb, LLVMBuildSub(kb->b, hc_kb_i64(kb, I - 1), a, ""), d), hc_kb_i64(kb, 1));
  *lo = hc_kb_imax(kb, l, hc_kb_i64(kb, 0));
  *hi = hc_kb_imin(kb, h, hc_kb_i64(kb, K));
}

static hx_status_t lower_lp_pool(hc_lower_ctx* lc, hc_node* n) {
  lp_plan p;
  HX_RETURN_IF_ERROR(lp_setup(n, &p));
  const hc_value *x = n->inputs[0], *y = n->outputs[0];
  hx_dtype_t dt = x->dtype;
  if (hc_value_numel(y) == 0) return HX_OK;
  int L = p.nd - 1;
  int64_t rows = hc_shape_numel(L, p.out), planes = p.N * p.C;
  int64_t in_plane = hc_shape_numel(p.nd, p.in), out_plane = hc_shape_numel(p.nd, p.out);
  int64_t xs[PX_MAX_SP];
  hc_strides(p.nd, p.in, xs);
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, planes * rows, &kb));
  LLVMBuilderRef b = kb.b;
  LLVMTypeRef ct = hc_kb_compute_type(&kb, dt);
  LLVMValueRef X = hc_kb_ptr(&kb, x), Y = hc_kb_ptr(&kb, y);
  LLVMValueRef acc = hc_kb_alloca(&kb, ct, "acc");
  LLVMValueRef zero = hc_kb_i64(&kb, 0);
  hc_loop task, cl, kl[PX_MAX_SP], il;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef plane = LLVMBuildUDiv(b, t, hc_kb_i64(&kb, rows), "");
  LLVMValueRef q = LLVMBuildURem(b, t, hc_kb_i64(&kb, rows), "");
  LLVMValueRef o[PX_MAX_SP];
  hc_mv_unflatten(&kb, q, L, p.out, o);
  LLVMValueRef xplane = hc_kb_imul(&kb, plane, hc_kb_i64(&kb, in_plane));
  LLVMValueRef ybase =
      hc_kb_iadd(&kb, hc_kb_imul(&kb, plane, hc_kb_i64(&kb, out_plane)), hc_kb_imul(&kb, q, hc_kb_i64(&kb, p.out[L])));
  LLVMValueRef a[PX_MAX_SP], lo[PX_MAX_SP], hi[PX_MAX_SP];
  for (int i = 0; i < L; ++i) {
    a[i] = LLVMBuildSub(b, hc_kb_imul(&kb, o[i], hc_kb_i64(&kb, p.s[i])), hc_kb_i64(&kb, p.pb[i]), "");
    px_taps(&kb, a[i], p.d[i], p.k[i], p.in[i], &lo[i], &hi[i]);
  }
  LLVMValueRef c = hc_loop_begin(&kb, &cl, zero, hc_kb_i64(&kb, p.out[L]), "col");
  a[L] = LLVMBuildSub(b, hc_kb_imul(&kb, c, hc_kb_i64(&kb, p.s[L])), hc_kb_i64(&kb, p.pb[L]), "");
  px_taps(&kb, a[L], p.d[L], p.k[L], p.in[L], &lo[L], &hi[L]);
  LLVMBuildStore(b, hc_kb_const(&kb, dt, 0.0), acc);
  LLVMValueRef row = xplane;
  for (int i = 0; i < L; ++i) {
    LLVMValueRef k = hc_loop_begin(&kb, &kl[i], lo[i], hi[i], "tap");
    LLVMValueRef pos = hc_kb_iadd(&kb, a[i], hc_kb_imul(&kb, k, hc_kb_i64(&kb, p.d[i])));
    row = hc_kb_iadd(&kb, row, hc_kb_imul(&kb, pos, hc_kb_i64(&kb, xs[i])));
  }
  row = hc_kb_iadd(&kb, row, a[L]);
  LLVMValueRef k = hc_loop_begin(&kb, &il, lo[L], hi[L], "tap");
  LLVMValueRef v = hc_kb_load(&kb, dt, X, hc_kb_iadd(&kb, row, hc_kb_imul(&kb, k, hc_kb_i64(&kb, p.d[L]))));
  LLVMValueRef s = hc_kb_add(&kb, dt, LLVMBuildLoad2(b, ct, acc, ""), px_pow_abs(&kb, dt, v, p.p));
  LLVMBuildStore(b, hc_kb_reassoc(s), acc);
  hc_loop_end(&kb, &il);
  for (int i = L - 1; i >= 0; --i) hc_loop_end(&kb, &kl[i]);
  hc_kb_store(&kb, dt, Y, hc_kb_iadd(&kb, ybase, c), px_root(&kb, dt, LLVMBuildLoad2(b, ct, acc, ""), p.p));
  hc_loop_end(&kb, &cl);
  hc_loop_end(&kb, &task);
  double outs = (double)hc_value_numel(y), taps = (double)hc_shape_numel(p.nd, p.k);
  hc_kb_end(&kb, outs * taps * 2.0, (double)hc_value_nbytes(x) + (double)hc_value_nbytes(y));
  return HX_OK;
}

/* ---- MaxUnpool ------------------------------------------------------------------- */

/* Validates the node; computes the shape the indices address (`inferred`)
 * and the output shape (`out`: output_shape when given, else inferred). */
static hx_status_t unpool_setup(const hc_node* n, int* rank, int64_t* inferred, int64_t* out) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 3, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, px_float_types(n)));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, HC_DT(HX_DTYPE_INT64)));
  const hc_value *x = n->inputs[0], *iv = n->inputs[1];
  char s1[128], s2[128];
  if (x->rank < 3)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "input X ('%s') has shape %s; expected (N, C, D1, ...) with at least one spatial dimension",
                         x->name, hc_shape_str(x->rank, x->dims, s1, sizeof s1));
  bool same = iv->rank == x->rank;
  for (int i = 0; same && i < x->rank; ++i) same = iv->dims[i] == x->dims[i];
  if (!same)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "indices I ('%s') has shape %s; expected X's shape %s",
                         iv->name, hc_shape_str(iv->rank, iv->dims, s1, sizeof s1),
                         hc_shape_str(x->rank, x->dims, s2, sizeof s2));
  int nd = x->rank - 2;
  int64_t k[PX_MAX_SP], s[PX_MAX_SP], pads[2 * PX_MAX_SP];
  if (hc_attr_ints(n, "kernel_shape", k, PX_MAX_SP) != nd)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'kernel_shape' is required with %d values", nd);
  int ns = hc_attr_ints(n, "strides", s, PX_MAX_SP);
  if (ns == -1)
    for (int i = 0; i < nd; ++i) s[i] = 1;
  else if (ns != nd)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'strides' must have %d values", nd);
  int np = hc_attr_ints(n, "pads", pads, 2 * PX_MAX_SP);
  if (np == -1)
    for (int i = 0; i < 2 * nd; ++i) pads[i] = 0;
  else if (np != 2 * nd)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'pads' must have %d values", 2 * nd);
  for (int i = 0; i < nd; ++i)
    if (k[i] < 1 || s[i] < 1 || pads[i] < 0 || pads[nd + i] < 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "spatial dim %d: kernel %lld and stride %lld must be >= 1, pads >= 0", i, (long long)k[i],
                           (long long)s[i]);
  *rank = x->rank;
  inferred[0] = x->dims[0];
  inferred[1] = x->dims[1];
  for (int i = 0; i < nd; ++i) {
    inferred[2 + i] = (x->dims[2 + i] - 1) * s[i] - pads[i] - pads[nd + i] + k[i];
    if (inferred[2 + i] < 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "spatial dim %d: the output size %lld is negative", i,
                           (long long)inferred[2 + i]);
  }
  memcpy(out, inferred, sizeof(int64_t) * (size_t)x->rank);
  if (!hc_input(n, 2)) return HX_OK;
  int cnt = 0;
  HX_RETURN_IF_ERROR(hc_const_ints(n, 2, out, HC_MAX_RANK, &cnt));
  if (cnt != x->rank)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "output_shape has %d values; expected %d (X's rank)", cnt,
                         x->rank);
  for (int i = 0; i < cnt; ++i)
    if (out[i] < inferred[i])
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "output_shape %s is smaller than the unpooled shape %s in dim %d",
                           hc_shape_str(cnt, out, s1, sizeof s1), hc_shape_str(cnt, inferred, s2, sizeof s2), i);
  return HX_OK;
}

static hx_status_t infer_max_unpool(hc_graph* g, hc_node* n) {
  int rank = 0;
  int64_t inferred[HC_MAX_RANK], dims[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(unpool_setup(n, &rank, inferred, dims));
  hc_set_output(n, 0, n->inputs[0]->dtype, rank, dims);
  return HX_OK;
}

/* Zero fill (parallel), then the scatter (one task, input order). With an
 * output_shape larger than the unpooled shape, the unpooled tensor sits at
 * the origin of the output (the ONNX reference): an index's coordinates in
 * the unpooled shape are its coordinates in the output. */
static hx_status_t lower_max_unpool(hc_lower_ctx* lc, hc_node* n) {
  const hc_value *x = n->inputs[0], *iv = n->inputs[1], *y = n->outputs[0];
  int rank = 0;
  int64_t inferred[HC_MAX_RANK], dims[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(unpool_setup(n, &rank, inferred, dims));
  int64_t ybytes = (int64_t)hc_value_nbytes(y), count = hc_value_numel(x);
  int64_t total = hc_shape_numel(rank, inferred);
  bool embed = memcmp(inferred, dims, sizeof(int64_t) * (size_t)rank) != 0;
  if (ybytes == 0) return HX_OK;
  size_t esize = hx_dtype_size(x->dtype);
  int64_t fills = (ybytes + PX_FILL_BYTES - 1) / PX_FILL_BYTES;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "zero", fills, &kb));
  LLVMValueRef Y = hc_kb_ptr(&kb, y);
  hc_loop task;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef off = hc_kb_imul(&kb, t, hc_kb_i64(&kb, PX_FILL_BYTES));
  LLVMValueRef len =
      hc_kb_imin(&kb, hc_kb_i64(&kb, PX_FILL_BYTES), LLVMBuildSub(kb.b, hc_kb_i64(&kb, ybytes), off, ""));
  hc_kb_memset(&kb, LLVMBuildGEP2(kb.b, kb.t_i8, Y, &off, 1, ""), 0, len);
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, 0, (double)ybytes);
  if (count == 0 || total == 0) return HX_OK;

  int64_t ys[HC_MAX_RANK];
  hc_strides(rank, dims, ys);
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "scatter", 1, &kb));
  LLVMBuilderRef b = kb.b;
  LLVMTypeRef et = hc_mv_elem_type(&kb, esize);
  LLVMValueRef X = hc_kb_ptr(&kb, x), I = hc_kb_ptr(&kb, iv);
  Y = hc_kb_ptr(&kb, y);
  hc_loop il;
  hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef i = hc_loop_begin(&kb, &il, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, count), "i");
  LLVMValueRef src = LLVMBuildLoad2(b, kb.t_i64, LLVMBuildGEP2(b, kb.t_i64, I, &i, 1, ""), "");
  hc_if ok;
  hc_if_begin(&kb, &ok, LLVMBuildICmp(b, LLVMIntULT, src, hc_kb_i64(&kb, total), ""));
  LLVMValueRef dst = src;
  if (embed) {
    LLVMValueRef co[HC_MAX_RANK];
    hc_mv_unflatten(&kb, src, rank, inferred, co);
    dst = hc_kb_i64(&kb, 0);
    for (int d = 0; d < rank; ++d) dst = hc_kb_iadd(&kb, dst, hc_kb_imul(&kb, co[d], hc_kb_i64(&kb, ys[d])));
  }
  LLVMValueRef v = LLVMBuildLoad2(b, et, hc_mv_gep(&kb, et, X, i), "");
  LLVMBuildStore(b, v, hc_mv_gep(&kb, et, Y, dst));
  hc_if_end(&kb, &ok);
  hc_loop_end(&kb, &il);
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, 0, (double)hc_value_nbytes(x) * 2.0 + (double)hc_value_nbytes(iv));
  return HX_OK;
}

static const char* const k_lp_pool_attrs[] = {"auto_pad", "ceil_mode", "dilations", "kernel_shape",
                                              "p",        "pads",      "strides",   NULL};
static const char* const k_global_lp_pool_attrs[] = {"p", NULL};
static const char* const k_max_unpool_attrs[] = {"kernel_shape", "pads", "strides", NULL};

const hc_op_desc hc_op_global_max_pool = {
    "GlobalMaxPool", "", 1, 22, NULL, 0, infer_global_max_pool, lower_global_max_pool, NULL};
const hc_op_desc hc_op_global_lp_pool = {
    "GlobalLpPool", "", 1, 22, k_global_lp_pool_attrs, 0, infer_global_lp_pool, lower_global_lp_pool, NULL};
const hc_op_desc hc_op_lp_pool = {"LpPool", "", 1, 22, k_lp_pool_attrs, 0, infer_lp_pool, lower_lp_pool, NULL};
const hc_op_desc hc_op_max_unpool = {
    "MaxUnpool", "", 9, 22, k_max_unpool_attrs, 0, infer_max_unpool, lower_max_unpool, NULL};
