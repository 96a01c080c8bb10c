/* TopK: the k largest (or smallest) elements along an axis and their
 * indices (opsets 1, 10 and 11).
 *
 * k is an attribute before opset 10 and an input after. A constant k sets
 * the output shape. A k computed or fed at run time makes both outputs
 * value-dependent shapes (compiler/ops/dynamic.h) with the axis length as
 * upper bound: the kernel reads k (clamped to [0, axis length]), writes the
 * outputs dense in the actual shape and records it. Outputs are sorted best
 * first whether or not `sorted` is set (the
 * spec leaves the order free when it is 0); equal values keep the lower
 * index first, and NaN ranks below every number in both directions (as a
 * sort would place it last).
 *
 * A task is one slice of n elements spaced `inner` apart. The k best are
 * kept in a binary heap stored in the slice's own outputs (Values and
 * Indices), the worst of them at the root: the first k elements are
 * heapified, every later element that beats the root replaces it and sifts
 * down, and a final heap sort leaves the slice ordered best first.
 * O(n log k) per slice, no scratch memory.
 */
#include "compiler/ops/dynamic.h"
#include "compiler/ops/op.h"

/* Reads k (attribute or constant input; -1 when the input is known only at
 * run time) and the normalised axis. */
static hx_status_t topk_params(const hc_node* n, int64_t* k, int64_t* axis) {
  const hc_value* x = n->inputs[0];
  HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", -1), x->rank, axis));
  if (n->opset < 10) {
    if (!hc_node_attr(n, "k")) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "required attribute 'k' is missing");
    *k = hc_attr_int(n, "k", 0);
  } else {
    const hc_value* kv = n->inputs[1];
    if (kv->dtype != HX_DTYPE_INT64)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "K ('%s') must be int64, got %s", kv->name,
                           hx_dtype_name(kv->dtype));
    if (hc_value_numel(kv) != 1 || kv->rank > 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "K ('%s') must hold exactly one value, got %lld", kv->name,
                           (long long)hc_value_numel(kv));
    if (kv->kind != HC_VALUE_CONST) {
      *k = -1; /* run-time k: value-dependent output shapes */
      return HX_OK;
    }
    int64_t vals[1];
    int count = 0;
    HX_RETURN_IF_ERROR(hc_const_ints(n, 1, vals, 1, &count));
    if (count != 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "K ('%s') must hold exactly one value, got %d", kv->name,
                           count);
    *k = vals[0];
  }
  if (*k < 0 || *k > x->dims[*axis])
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "k = %lld is outside [0, %lld] (the size of axis %lld)",
                         (long long)*k, (long long)x->dims[*axis], (long long)*axis);
  return HX_OK;
}

static hx_status_t infer_topk(hc_graph* g, hc_node* n) {
  int nin = n->opset < 10 ? 1 : 2;
  HX_RETURN_IF_ERROR(hc_check_arity(n, nin, nin, 2, 2));
  uint64_t m = HC_DT(HX_DTYPE_FLOAT32) | HC_DT(HX_DTYPE_FLOAT64) | HC_DT(HX_DTYPE_FLOAT16);
  if (n->opset >= 11) m |= HC_DT_INTS;
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, m));
  if (n->opset >= 10 && hc_node_attr(n, "k"))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "k is an input from opset 10 on, not an attribute");
  if (n->opset < 11 && (hc_node_attr(n, "largest") || hc_node_attr(n, "sorted")))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attributes 'largest' and 'sorted' exist from opset 11 on");
  const hc_value* x = n->inputs[0];
  if (x->rank < 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "X must have rank >= 1, got a scalar");
  int64_t k, axis;
  HX_RETURN_IF_ERROR(topk_params(n, &k, &axis));
  int64_t dims[HC_MAX_RANK];
  for (int d = 0; d < x->rank; ++d) dims[d] = d == axis ? (k < 0 ? x->dims[d] : k) : x->dims[d];
  hc_set_output(n, 0, x->dtype, x->rank, dims);
  hc_set_output(n, 1, HX_DTYPE_INT64, x->rank, dims);
  hc_dyn_set(n->outputs[0], k < 0);
  hc_dyn_set(n->outputs[1], k < 0);
  return HX_OK;
}

/* The kernel's view of one slice. */
typedef struct topk_emit {
  hc_kb* kb;
  hx_dtype_t dt;
  bool largest;
  int depth;              /* levels a sift-down may descend */
  LLVMValueRef pv, pi;    /* Values, Indices */
  LLVMValueRef ybase;     /* output offset of the slice */
  LLVMValueRef inner;     /* i64 stride along the axis */
  LLVMValueRef pos_slot;  /* sift-down position */
} topk_emit;

/* Does (a, ia) rank strictly before (b, ib)? */
static LLVMValueRef better(topk_emit* e, LLVMValueRef a, LLVMValueRef ia, LLVMValueRef b, LLVMValueRef ib) {
  hc_kb* kb = e->kb;
  LLVMBuilderRef bd = kb->b;
  LLVMValueRef lower_index = LLVMBuildICmp(bd, LLVMIntSLT, ia, ib, "");
  LLVMValueRef strict = hc_kb_cmp(kb, e->dt, e->largest ? "gt" : "lt", a, b);
  LLVMValueRef tie = LLVMBuildAnd(bd, hc_kb_cmp(kb, e->dt, "eq", a, b), lower_index, "");
  LLVMValueRef r = LLVMBuildOr(bd, strict, tie, "");
  if (!hc_dtype_is_float(e->dt)) return r;
  LLVMValueRef an = LLVMBuildFCmp(bd, LLVMRealUNO, a, a, ""), bn = LLVMBuildFCmp(bd, LLVMRealUNO, b, b, "");
  LLVMValueRef if_b_nan = LLVMBuildSelect(bd, an, lower_index, LLVMConstInt(kb->t_i1, 1, 0), "");
  LLVMValueRef if_b_num = LLVMBuildSelect(bd, an, LLVMConstInt(kb->t_i1, 0, 0), r, "");
  return LLVMBuildSelect(bd, bn, if_b_nan, if_b_num, "");
}

static LLVMValueRef heap_off(topk_emit* e, LLVMValueRef p) {
  return hc_kb_iadd(e->kb, e->ybase, hc_kb_imul(e->kb, p, e->inner));
}
static void heap_get(topk_emit* e, LLVMValueRef p, LLVMValueRef* v, LLVMValueRef* i) {
  LLVMValueRef off = heap_off(e, p);
  *v = hc_kb_load(e->kb, e->dt, e->pv, off);
  *i = hc_kb_load(e->kb, HX_DTYPE_INT64, e->pi, off);
}
static void heap_set(topk_emit* e, LLVMValueRef p, LLVMValueRef v, LLVMValueRef i) {
  LLVMValueRef off = heap_off(e, p);
  hc_kb_store(e->kb, e->dt, e->pv, off, v);
  hc_kb_store(e->kb, HX_DTYPE_INT64, e->pi, off, i);
}

/* Moves the entry at p0 down the heap of `size` entries until both
 * children rank before it: depth bounded iterations, each guarded. */
static void sift_down(topk_emit* e, LLVMValueRef p0, LLVMValueRef size) {
  hc_kb* kb = e->kb;
  LLVMBuilderRef b = kb->b;
  LLVMBuildStore(b, p0, e->pos_slot);
  hc_loop lvl;
  hc_loop_begin(kb, &lvl, hc_kb_i64(kb, 0), hc_kb_i64(kb, e->depth), "lvl");
  LLVMValueRef pos = LLVMBuildLoad2(b, kb->t_i64, e->pos_slot, "");
  LLVMValueRef l = hc_kb_iadd(kb, hc_kb_imul(kb, pos, hc_kb_i64(kb, 2)), hc_kb_i64(kb, 1));
  hc_if has_child;
  hc_if_begin(kb, &has_child, LLVMBuildICmp(b, LLVMIntSLT, l, size, ""));
  LLVMValueRef pv, pidx, lv, li, rv, ri;
  heap_get(e, pos, &pv, &pidx);
  heap_get(e, l, &lv, &li);
  LLVMValueRef r = hc_kb_iadd(kb, l, hc_kb_i64(kb, 1));
  LLVMValueRef r_in = LLVMBuildICmp(b, LLVMIntSLT, r, size, "");
  heap_get(e, LLVMBuildSelect(b, r_in, r, l, ""), &rv, &ri);
  /* w: the worst of pos, l and r. */
  LLVMValueRef take_l = better(e, pv, pidx, lv, li);
  LLVMValueRef w = LLVMBuildSelect(b, take_l, l, pos, "");
  LLVMValueRef wv = hc_kb_select(kb, take_l, lv, pv), wi = hc_kb_select(kb, take_l, li, pidx);
  LLVMValueRef take_r = LLVMBuildAnd(b, r_in, better(e, wv, wi, rv, ri), "");
  w = LLVMBuildSelect(b, take_r, r, w, "");
  wv = hc_kb_select(kb, take_r, rv, wv);
  wi = hc_kb_select(kb, take_r, ri, wi);
  heap_set(e, pos, wv, wi);
  heap_set(e, w, pv, pidx);
  LLVMBuildStore(b, LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, w, pos, ""), size, w, ""), e->pos_slot);
  hc_if_end(kb, &has_child);
  hc_loop_end(kb, &lvl);
}

static hx_status_t lower_topk(hc_lower_ctx* lc, hc_node* n) {
  const hc_value *x = n->inputs[0], *vals = n->outputs[0], *idxs = n->outputs[1];
  int64_t k, axis;
  HX_RETURN_IF_ERROR(topk_params(n, &k, &axis));
  bool runtime_k = k < 0;
  if (!runtime_k && (k == 0 || hc_value_numel(x) == 0)) return HX_OK; /* nothing to write */
  int64_t len = x->dims[axis];
  int64_t outer = hc_shape_numel((int)axis, x->dims);
  int64_t inner = hc_shape_numel(x->rank - (int)axis - 1, x->dims + axis + 1);
  int64_t kmax = runtime_k ? len : k; /* bounds the heap's depth */
  int depth = 1;
  while ((1ll << depth) <= kmax) ++depth;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, outer * inner, &kb));
  topk_emit e = {.kb = &kb, .dt = x->dtype, .largest = n->opset < 11 || hc_attr_int(n, "largest", 1) != 0,
                 .depth = depth, .inner = hc_kb_i64(&kb, inner)};
  e.pv = hc_kb_ptr(&kb, vals);
  e.pi = hc_kb_ptr(&kb, idxs);
  e.pos_slot = hc_kb_alloca(&kb, kb.t_i64, "pos");
  LLVMValueRef px = hc_kb_ptr(&kb, x);
  LLVMBuilderRef b = kb.b;
  LLVMValueRef zero = hc_kb_i64(&kb, 0), one = hc_kb_i64(&kb, 1), K = hc_kb_i64(&kb, k);
  if (runtime_k) {
    K = hc_kb_load(&kb, HX_DTYPE_INT64, hc_kb_ptr(&kb, n->inputs[1]), zero);
    K = hc_kb_imin(&kb, hc_kb_imax(&kb, K, zero), hc_kb_i64(&kb, len));
    hc_if first;
    hc_dyn_first_begin(&kb, &first);
    LLVMValueRef dims[HC_MAX_RANK];
    for (int d = 0; d < x->rank; ++d) dims[d] = d == axis ? K : hc_kb_i64(&kb, x->dims[d]);
    hc_dyn_store_dims(&kb, vals, dims);
    hc_dyn_store_dims(&kb, idxs, dims);
    hc_if_end(&kb, &first);
  }
  LLVMValueRef khalf = LLVMBuildSDiv(b, K, hc_kb_i64(&kb, 2), "");

  hc_loop task, l;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef o = LLVMBuildUDiv(b, t, e.inner, "");
  LLVMValueRef i = LLVMBuildURem(b, t, e.inner, "");
  LLVMValueRef xbase = hc_kb_iadd(&kb, hc_kb_imul(&kb, o, hc_kb_i64(&kb, len * inner)), i);
  e.ybase = hc_kb_iadd(&kb, hc_kb_imul(&kb, o, hc_kb_imul(&kb, K, e.inner)), i);

  /* The first k elements, heapified. */
  LLVMValueRef j = hc_loop_begin(&kb, &l, zero, K, "j");
  heap_set(&e, j, hc_kb_load(&kb, e.dt, px, hc_kb_iadd(&kb, xbase, hc_kb_imul(&kb, j, e.inner))), j);
  hc_loop_end(&kb, &l);
  if (runtime_k || k / 2 > 0) {
    LLVMValueRef q = hc_loop_begin(&kb, &l, zero, khalf, "q");
    sift_down(&e, LLVMBuildSub(b, LLVMBuildSub(b, khalf, one, ""), q, ""), K);
    hc_loop_end(&kb, &l);
  }
  /* The rest: replace the root when better. */
  if (runtime_k || len > k) {
    /* (A run-time k of 0 has no heap: skip the loop.) */
    LLVMValueRef empty = LLVMBuildICmp(b, LLVMIntEQ, K, zero, "");
    LLVMValueRef from = runtime_k ? LLVMBuildSelect(b, empty, hc_kb_i64(&kb, len), K, "") : K;
    j = hc_loop_begin(&kb, &l, from, hc_kb_i64(&kb, len), "j");
    LLVMValueRef v = hc_kb_load(&kb, e.dt, px, hc_kb_iadd(&kb, xbase, hc_kb_imul(&kb, j, e.inner)));
    LLVMValueRef rv, ri;
    heap_get(&e, zero, &rv, &ri);
    hc_if replace;
    hc_if_begin(&kb, &replace, better(&e, v, j, rv, ri));
    heap_set(&e, zero, v, j);
    sift_down(&e, zero, K);
    hc_if_end(&kb, &replace);
    hc_loop_end(&kb, &l);
  }
  /* Heap sort: the worst goes last. */
  if (runtime_k || k > 1) {
    LLVMValueRef km1 = LLVMBuildSub(b, K, one, "");
    LLVMValueRef q = hc_loop_begin(&kb, &l, zero, km1, "q");
    LLVMValueRef last = LLVMBuildSub(b, km1, q, "");
    LLVMValueRef rv, ri, lv, li;
    heap_get(&e, zero, &rv, &ri);
    heap_get(&e, last, &lv, &li);
    heap_set(&e, zero, lv, li);
    heap_set(&e, last, rv, ri);
    sift_down(&e, zero, last);
    hc_loop_end(&kb, &l);
  }
  hc_loop_end(&kb, &task);
  double lg = (double)depth;
  hc_kb_end(&kb, (double)hc_value_numel(x) * 2.0 + (double)(outer * inner) * (double)kmax * lg * 6.0,
            (double)hc_value_nbytes(x) + (double)hc_value_nbytes(vals) + (double)hc_value_nbytes(idxs));
  return HX_OK;
}

static const char* const k_topk_attrs[] = {"axis", "k", "largest", "sorted", NULL};

const hc_op_desc hc_op_topk = {"TopK", "", 1, 22, k_topk_attrs, 0, infer_topk, lower_topk, NULL};
