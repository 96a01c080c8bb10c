/* Unique (opset 11): the unique elements of the flattened input, or the
 * unique slices along `axis`, with the optional outputs indices (first
 * occurrence of each), inverse_indices (for each input element or slice, its
 * position in Y) and counts. sorted = 1 (default) orders Y ascending (slices
 * lexicographically, in row-major order of their elements, as numpy.unique);
 * sorted = 0 keeps the order of first occurrence. Floats compare as numbers
 * with NaN after every number and all NaNs equal (numpy >= 1.21); -0 == 0.
 *
 * Y, indices and counts have value-dependent shapes (compiler/ops/dynamic.h):
 * their upper bounds hold every item (n elements or slices);
 * inverse_indices is always [n]. The node never folds (its exact shape is
 * known only after running it).
 *
 * One kernel, one task (sorting is sequential): a stable merge sort of the
 * item indices by value (hc_dyn_sort); a pass over the sorted order that
 * numbers the groups of equal items, recording each group's first (smallest)
 * index and size; for sorted = 0 a pass in input order ranks the groups by
 * first occurrence; then the outputs. Workspace: six int64 arrays of n. */
#include "compiler/ops/dynamic.h"
#include "compiler/ops/movement.h"

static const char* const k_unique_attrs[] = {"axis", "sorted", NULL};

typedef struct unique_geom {
  bool has_axis, sorted;
  int64_t axis, outer, n, inner; /* items: n slices of outer x inner elements */
} unique_geom;

static hx_status_t unique_geometry(const hc_node* n, unique_geom* u) {
  const hc_value* x = n->inputs[0];
  int64_t s = hc_attr_int(n, "sorted", 1);
  if (s != 0 && s != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "sorted must be 0 or 1, got %lld", (long long)s);
  u->sorted = s == 1;
  u->has_axis = hc_node_attr(n, "axis") != NULL;
  if (u->has_axis) {
    if (x->rank < 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axis is given but X is a scalar");
    HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", 0), x->rank, &u->axis));
    u->outer = hc_shape_numel((int)u->axis, x->dims);
    u->n = x->dims[u->axis];
    u->inner = hc_shape_numel(x->rank - (int)u->axis - 1, x->dims + u->axis + 1);
  } else {
    u->axis = 0;
    u->outer = 1;
    u->n = hc_value_numel(x);
    u->inner = 1;
  }
  return HX_OK;
}

static hx_status_t infer_unique(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 4));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  const hc_value* x = n->inputs[0];
  unique_geom u;
  HX_RETURN_IF_ERROR(unique_geometry(n, &u));
  if (u.has_axis)
    hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  else
    hc_set_output(n, 0, x->dtype, 1, &u.n);
  for (int k = 1; k < 4; ++k) hc_set_output(n, k, HX_DTYPE_INT64, 1, &u.n);
  for (int k = 0; k < 4 && k < n->num_outputs; ++k) hc_dyn_set(n->outputs[k], k != 2);
  return HX_OK;
}

static uint64_t unique_workspace(const hc_node* n) {
  unique_geom u;
  hx_status_t st = unique_geometry(n, &u);
  if (st != HX_OK) {
    hx_status_free(st);
    return 0;
  }
  return 6 * (uint64_t)u.n * sizeof(int64_t);
}

typedef struct unique_emit {
  unique_geom u;
  hx_dtype_t dt;
  LLVMValueRef px;
  LLVMValueRef lt_slot, done_slot; /* lexicographic comparison state */
} unique_emit;

/* a < b for two elements: numbers ascending, NaN last. */
static LLVMValueRef elem_less(hc_kb* kb, hx_dtype_t dt, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef lt = hc_kb_cmp(kb, dt, "lt", a, b);
  if (!hc_dtype_is_float(dt)) return lt;
  LLVMValueRef a_nan = LLVMBuildFCmp(kb->b, LLVMRealUNO, a, a, ""), b_nan = LLVMBuildFCmp(kb->b, LLVMRealUNO, b, b, "");
  return LLVMBuildOr(kb->b, lt, LLVMBuildAnd(kb->b, b_nan, LLVMBuildNot(kb->b, a_nan, ""), ""), "");
}

/* Item a sorts before item b (elements, or slices lexicographically). */
static LLVMValueRef item_less(hc_kb* kb, void* ctx, LLVMValueRef a, LLVMValueRef b) {
  unique_emit* e = ctx;
  LLVMBuilderRef bd = kb->b;
  if (!e->u.has_axis) return elem_less(kb, e->dt, hc_kb_load(kb, e->dt, e->px, a), hc_kb_load(kb, e->dt, e->px, b));
  LLVMBuildStore(bd, LLVMConstInt(kb->t_i1, 0, 0), e->lt_slot);
  LLVMBuildStore(bd, LLVMConstInt(kb->t_i1, 0, 0), e->done_slot);
  LLVMValueRef inner = hc_kb_i64(kb, e->u.inner), len = hc_kb_i64(kb, e->u.n);
  hc_loop ol, il;
  LLVMValueRef o = hc_loop_begin(kb, &ol, hc_kb_i64(kb, 0), hc_kb_i64(kb, e->u.outer), "o");
  LLVMValueRef row = hc_kb_imul(kb, o, len);
  LLVMValueRef ba = hc_kb_imul(kb, hc_kb_iadd(kb, row, a), inner), bb = hc_kb_imul(kb, hc_kb_iadd(kb, row, b), inner);
  LLVMValueRef i = hc_loop_begin(kb, &il, hc_kb_i64(kb, 0), inner, "i");
  LLVMValueRef va = hc_kb_load(kb, e->dt, e->px, hc_kb_iadd(kb, ba, i));
  LLVMValueRef vb = hc_kb_load(kb, e->dt, e->px, hc_kb_iadd(kb, bb, i));
  LLVMValueRef lt = elem_less(kb, e->dt, va, vb), gt = elem_less(kb, e->dt, vb, va);
  LLVMValueRef done = LLVMBuildLoad2(bd, kb->t_i1, e->done_slot, "");
  LLVMValueRef res = LLVMBuildLoad2(bd, kb->t_i1, e->lt_slot, "");
  LLVMBuildStore(bd, LLVMBuildSelect(bd, done, res, lt, ""), e->lt_slot);
  LLVMBuildStore(bd, LLVMBuildOr(bd, done, LLVMBuildOr(bd, lt, gt, ""), ""), e->done_slot);
  hc_loop_end(kb, &il);
  hc_loop_end(kb, &ol);
  return LLVMBuildLoad2(bd, kb->t_i1, e->lt_slot, "");
}

static hx_status_t lower_unique(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* x = n->inputs[0];
  hc_value* out[4] = {NULL, NULL, NULL, NULL};
  for (int k = 0; k < 4 && k < n->num_outputs; ++k) out[k] = n->outputs[k];
  unique_emit e = {.dt = x->dtype};
  HX_RETURN_IF_ERROR(unique_geometry(n, &e.u));
  const int64_t N = e.u.n;
  size_t esize = hx_dtype_size(x->dtype);
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, 1, &kb));
  LLVMBuilderRef b = kb.b;
  e.px = hc_kb_ptr(&kb, x);
  e.lt_slot = hc_kb_alloca(&kb, kb.t_i1, "lt");
  e.done_slot = hc_kb_alloca(&kb, kb.t_i1, "done");
  LLVMValueRef zero = hc_kb_i64(&kb, 0), one = hc_kb_i64(&kb, 1), n_v = hc_kb_i64(&kb, N);
  LLVMValueRef perm = hc_dyn_workspace_at(&kb, 0), tmp = hc_dyn_workspace_at(&kb, 8 * N);
  LLVMValueRef gid = hc_dyn_workspace_at(&kb, 16 * N), gfirst = hc_dyn_workspace_at(&kb, 24 * N);
  LLVMValueRef gcount = hc_dyn_workspace_at(&kb, 32 * N), grank = hc_dyn_workspace_at(&kb, 40 * N);
  LLVMValueRef g_slot = hc_kb_alloca(&kb, kb.t_i64, "group"), next_slot = hc_kb_alloca(&kb, kb.t_i64, "next");
  hc_loop l, m;

  /* Stable sort of the item indices. */
  LLVMValueRef i = hc_loop_begin(&kb, &l, zero, n_v, "i");
  hc_dyn_i64_store(&kb, perm, i, i);
  hc_loop_end(&kb, &l);
  hc_dyn_sort(&kb, perm, tmp, n_v, item_less, &e);

  /* Groups of equal items in sorted order. */
  LLVMBuildStore(b, hc_kb_i64(&kb, -1), g_slot);
  LLVMValueRef p = hc_loop_begin(&kb, &l, zero, n_v, "p");
  LLVMValueRef cur = hc_dyn_i64_load(&kb, perm, p);
  LLVMValueRef prev = hc_dyn_i64_load(&kb, perm, hc_kb_imax(&kb, LLVMBuildSub(b, p, one, ""), zero));
  LLVMValueRef fresh = LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntEQ, p, zero, ""), item_less(&kb, &e, prev, cur), "");
  LLVMValueRef g = hc_kb_iadd(&kb, LLVMBuildLoad2(b, kb.t_i64, g_slot, ""), LLVMBuildZExt(b, fresh, kb.t_i64, ""));
  LLVMBuildStore(b, g, g_slot);
  hc_if start;
  hc_if_begin(&kb, &start, fresh);
  hc_dyn_i64_store(&kb, gfirst, g, cur);
  hc_dyn_i64_store(&kb, gcount, g, zero);
  hc_if_end(&kb, &start);
  hc_dyn_i64_store(&kb, gcount, g, hc_kb_iadd(&kb, hc_dyn_i64_load(&kb, gcount, g), one));
  hc_dyn_i64_store(&kb, gid, cur, g);
  hc_loop_end(&kb, &l);
  LLVMValueRef U = hc_kb_iadd(&kb, LLVMBuildLoad2(b, kb.t_i64, g_slot, ""), one);

  /* Output position of each group. */
  if (e.u.sorted) {
    g = hc_loop_begin(&kb, &l, zero, U, "g");
    hc_dyn_i64_store(&kb, grank, g, g);
    hc_loop_end(&kb, &l);
  } else {
    LLVMBuildStore(b, zero, next_slot);
    i = hc_loop_begin(&kb, &l, zero, n_v, "i");
    g = hc_dyn_i64_load(&kb, gid, i);
    hc_if is_first;
    hc_if_begin(&kb, &is_first, LLVMBuildICmp(b, LLVMIntEQ, hc_dyn_i64_load(&kb, gfirst, g), i, ""));
    LLVMValueRef next = LLVMBuildLoad2(b, kb.t_i64, next_slot, "");
    hc_dyn_i64_store(&kb, grank, g, next);
    LLVMBuildStore(b, hc_kb_iadd(&kb, next, one), next_slot);
    hc_if_end(&kb, &is_first);
    hc_loop_end(&kb, &l);
  }

  /* Y, indices and counts per group; inverse_indices per item. */
  LLVMValueRef py = out[0] ? hc_kb_ptr(&kb, out[0]) : NULL;
  g = hc_loop_begin(&kb, &l, zero, U, "g");
  LLVMValueRef pos = hc_dyn_i64_load(&kb, grank, g), f = hc_dyn_i64_load(&kb, gfirst, g);
  if (py && !e.u.has_axis) {
    LLVMTypeRef et = hc_mv_elem_type(&kb, esize);
    hc_mv_store_out(&kb, et, py, pos, hc_mv_load_in(&kb, et, e.px, f));
  } else if (py) {
    LLVMValueRef o = hc_loop_begin(&kb, &m, zero, hc_kb_i64(&kb, e.u.outer), "o");
    LLVMValueRef src = hc_kb_imul(&kb, hc_kb_iadd(&kb, hc_kb_imul(&kb, o, n_v), f), hc_kb_i64(&kb, e.u.inner));
    LLVMValueRef dst = hc_kb_imul(&kb, hc_kb_iadd(&kb, hc_kb_imul(&kb, o, U), pos), hc_kb_i64(&kb, e.u.inner));
    hc_mv_copy_run(&kb, esize, py, dst, e.px, src, hc_kb_i64(&kb, e.u.inner));
    hc_loop_end(&kb, &m);
  }
  if (out[1]) hc_dyn_i64_store(&kb, hc_kb_ptr(&kb, out[1]), pos, f);
  if (out[3]) hc_dyn_i64_store(&kb, hc_kb_ptr(&kb, out[3]), pos, hc_dyn_i64_load(&kb, gcount, g));
  hc_loop_end(&kb, &l);
  if (out[2]) {
    LLVMValueRef pinv = hc_kb_ptr(&kb, out[2]);
    i = hc_loop_begin(&kb, &l, zero, n_v, "i");
    hc_dyn_i64_store(&kb, pinv, i, hc_dyn_i64_load(&kb, grank, hc_dyn_i64_load(&kb, gid, i)));
    hc_loop_end(&kb, &l);
  }

  LLVMValueRef dims[HC_MAX_RANK];
  if (e.u.has_axis)
    for (int d = 0; d < x->rank; ++d) dims[d] = d == e.u.axis ? U : hc_kb_i64(&kb, x->dims[d]);
  else
    dims[0] = U;
  hc_dyn_store_dims(&kb, out[0], dims);
  hc_dyn_store_dims(&kb, out[1], &U);
  hc_dyn_store_dims(&kb, out[3], &U);
  double lg = 1;
  while ((1ll << (int)lg) < N) ++lg;
  hc_kb_end(&kb, (double)N * lg * (double)(e.u.outer * e.u.inner) * 2.0,
            (double)hc_value_nbytes(x) * (lg + 1) + 12.0 * 8.0 * (double)N);
  return HX_OK;
}

const hc_op_desc hc_op_unique = {"Unique", "", 11, 22, k_unique_attrs, HC_OP_NO_FOLD, infer_unique, lower_unique, NULL,
                                 unique_workspace};
