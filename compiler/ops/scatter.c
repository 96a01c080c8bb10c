/* ScatterElements (opset 11 on), its deprecated alias Scatter (opsets 9-10)
 * and ScatterND (opset 11 on): a copy of data with elements or slices
 * replaced by (or, with `reduction`, combined with) updates.
 *
 * reduction (opset 16 on): none (default), add, mul; max and min from
 * opset 18. Reductions compute in the compute type (float32 for float16 and
 * bfloat16, i1 or/and for bool) and round once per update, as ONNX Runtime.
 *
 * Each op is two kernels: a copy of data into the output, then the scatter.
 * Updates are applied in row-major order of the updates tensor, so with
 * duplicate indices and reduction none the last update wins (as the
 * reference implementation); tasks only ever split work that touches
 * disjoint outputs:
 *  - ScatterElements: updates at different coordinates outside `axis` never
 *    meet. A unit is one point of the axes other than `axis` and the last
 *    (with `axis` not last, also a block of the last axis) and walks the
 *    axis, then the last axis, in order.
 *  - ScatterND: tuple g replaces the slice at its index of Q contiguous
 *    elements. Tasks split the slice into column blocks; every task walks
 *    all tuples in order for its block.
 *
 * Index semantics: negative indices count from the end of their axis. An
 * index still out of range is invalid input that ONNX leaves undefined;
 * Harness skips that update (ScatterElements) or that tuple's whole slice
 * (ScatterND), so the output keeps data's values there and no memory
 * outside the output is written. */
#include <string.h>

#include "compiler/ops/movement.h"

/* ScatterElements units below which the last axis is cut into blocks. */
#define SCATTER_MIN_UNITS 16

typedef enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } reduction;

static const char* const k_scatter_elements_attrs[] = {"axis", "reduction", NULL};
static const char* const k_scatter_nd_attrs[] = {"reduction", NULL};
static const char* const k_scatter_attrs[] = {"axis", NULL};

/* Parses `reduction` for the node's opset. */
static hx_status_t read_reduction(const hc_node* n, reduction* r) {
  const char* s = hc_attr_string(n, "reduction", "none");
  if (n->opset < 16 && hc_node_attr(n, "reduction"))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute 'reduction' exists from opset 16 on");
  if (!strcmp(s, "none")) *r = RED_NONE;
  else if (!strcmp(s, "add")) *r = RED_ADD;
  else if (!strcmp(s, "mul")) *r = RED_MUL;
  else if (!strcmp(s, "max") && n->opset >= 18) *r = RED_MAX;
  else if (!strcmp(s, "min") && n->opset >= 18) *r = RED_MIN;
  else
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "reduction '%s' is not one of none, add, mul%s", s,
                         n->opset >= 18 ? ", max, min" : " (max and min need opset 18)");
  return HX_OK;
}

/* out[o] = reduce(out[o], upd[u]). Output reads are unmarked: they alias
 * the writes. */
static void apply_update(hc_kb* kb, hx_dtype_t dt, reduction red, LLVMValueRef out, LLVMValueRef o, LLVMValueRef upd,
                         LLVMValueRef u) {
  if (red == RED_NONE) {
    LLVMTypeRef et = hc_mv_elem_type(kb, hx_dtype_size(dt));
    LLVMValueRef v = hc_mv_load_in(kb, et, upd, u);
    LLVMBuildStore(kb->b, v, hc_mv_gep(kb, et, out, o));
    return;
  }
  LLVMValueRef a = hc_kb_load(kb, dt, out, o);
  LLVMTypeRef st = dt == HX_DTYPE_BFLOAT16 ? kb->t_i16 : hc_kb_storage_type(kb, dt);
  LLVMValueRef b = hc_mv_load_in(kb, st, upd, u);
  if (dt == HX_DTYPE_FLOAT16) b = LLVMBuildFPExt(kb->b, b, kb->t_f32, "");
  else if (dt == HX_DTYPE_BFLOAT16) b = hc_kb_bf16_to_f32(kb, b);
  else if (dt == HX_DTYPE_BOOL) b = LLVMBuildICmp(kb->b, LLVMIntNE, b, LLVMConstInt(kb->t_i8, 0, 0), "");
  LLVMValueRef r;
  switch (red) {
    case RED_ADD: r = hc_kb_add(kb, dt, a, b); break;
    case RED_MUL: r = hc_kb_mul(kb, dt, a, b); break;
    case RED_MAX: r = hc_kb_max(kb, dt, a, b); break;
    default: r = hc_kb_min(kb, dt, a, b); break;
  }
  hc_kb_store(kb, dt, out, o, r);
}

/* Kernel 1 of every scatter: output = data. */
static hx_status_t copy_data(hc_lower_ctx* lc, const hc_node* n) {
  int64_t total = hc_value_numel(n->inputs[0]), one = 1;
  return hc_mv_strided_copy(lc, n, "copy", n->inputs[0], 0, &one, n->outputs[0], 0, &one, 1, &total, false);
}

/* ---- ScatterElements / Scatter ------------------------------------------------ */

/* Checks ranks, the updates shape and extents; the output has data's shape. */
static hx_status_t infer_scatter_elements(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 3, 3, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, HC_DT(HX_DTYPE_INT32) | HC_DT(HX_DTYPE_INT64)));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 2));
  reduction red;
  HX_RETURN_IF_ERROR(read_reduction(n, &red));
  int64_t axis;
  HX_RETURN_IF_ERROR(hc_mv_check_elements(n, n->inputs[2], &axis));
  const hc_value* x = n->inputs[0];
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  return HX_OK;
}

/* Copy, then the unit-wise scatter of the file comment. */
static hx_status_t lower_scatter_elements(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* x = n->inputs[0];
  const hc_value* iv = n->inputs[1];
  const hc_value* uv = n->inputs[2];
  const hc_value* y = n->outputs[0];
  reduction red;
  HX_RETURN_IF_ERROR(read_reduction(n, &red));
  int rank = x->rank, last = rank - 1;
  int64_t axis;
  HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", 0), rank, &axis));
  HX_RETURN_IF_ERROR(copy_data(lc, n));
  int64_t total = hc_value_numel(iv);
  if (total == 0) return HX_OK;
  int64_t xs[HC_MAX_RANK], us[HC_MAX_RANK];
  hc_strides(rank, x->dims, xs);
  hc_strides(rank, iv->dims, us);
  /* Unit axes: all but `axis` and the last one. */
  int64_t udims[HC_MAX_RANK];
  int uaxes[HC_MAX_RANK], nu = 0;
  for (int d = 0; d < last; ++d)
    if (d != axis) {
      uaxes[nu] = d;
      udims[nu++] = iv->dims[d];
    }
  /* With axis != last, blocks of the last axis are independent too: cut it
   * when there are few units, so the work still spreads over threads. */
  int64_t L = iv->dims[last], outer = hc_shape_numel(nu, udims), jblocks = 1;
  if (axis != last && outer < SCATTER_MIN_UNITS) {
    jblocks = (SCATTER_MIN_UNITS + outer - 1) / outer;
    int64_t most = (L + 63) / 64; /* blocks of at least 64 */
    if (jblocks > most) jblocks = most;
  }
  int64_t JB = (L + jblocks - 1) / jblocks;
  jblocks = (L + JB - 1) / JB;
  int64_t units = outer * jblocks, per_unit = total / outer / jblocks;
  size_t esize = hx_dtype_size(x->dtype);
  int64_t upt = hc_mv_units_per_task(per_unit * (int64_t)(esize * 2 + hx_dtype_size(iv->dtype)));
  int64_t A = x->dims[axis];

  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "scatter", hc_mv_tasks(units, upt), &kb));
  LLVMValueRef out = hc_kb_ptr(&kb, y), ip = hc_kb_ptr(&kb, iv), up = hc_kb_ptr(&kb, uv);
  hc_loop ul, al, jl;
  LLVMValueRef u = hc_mv_units_begin(&kb, &ul, units, upt);
  LLVMValueRef blk = jblocks == 1 ? hc_kb_i64(&kb, 0) : LLVMBuildURem(kb.b, u, hc_kb_i64(&kb, jblocks), "");
  if (jblocks > 1) u = LLVMBuildUDiv(kb.b, u, hc_kb_i64(&kb, jblocks), "");
  LLVMValueRef jlo = hc_kb_imul(&kb, blk, hc_kb_i64(&kb, JB));
  LLVMValueRef jhi = hc_kb_imin(&kb, hc_kb_iadd(&kb, jlo, hc_kb_i64(&kb, JB)), hc_kb_i64(&kb, L));
  LLVMValueRef coords[HC_MAX_RANK];
  hc_mv_unflatten(&kb, u, nu, udims, coords);
  LLVMValueRef xbase = hc_kb_i64(&kb, 0), ubase = hc_kb_i64(&kb, 0);
  for (int i = 0; i < nu; ++i) {
    xbase = hc_kb_iadd(&kb, xbase, hc_kb_imul(&kb, coords[i], hc_kb_i64(&kb, xs[uaxes[i]])));
    ubase = hc_kb_iadd(&kb, ubase, hc_kb_imul(&kb, coords[i], hc_kb_i64(&kb, us[uaxes[i]])));
  }
  if (axis != last) {
    LLVMValueRef a = hc_loop_begin(&kb, &al, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, iv->dims[axis]), "a");
    ubase = hc_kb_iadd(&kb, ubase, hc_kb_imul(&kb, a, hc_kb_i64(&kb, us[axis])));
  }
  LLVMValueRef j = hc_loop_begin(&kb, &jl, jlo, jhi, "j");
  LLVMValueRef uoff = hc_kb_iadd(&kb, ubase, j);
  LLVMValueRef valid;
  LLVMValueRef i = hc_mv_load_index(&kb, iv->dtype, ip, uoff, A, &valid);
  LLVMValueRef xoff = hc_kb_iadd(&kb, xbase, hc_kb_imul(&kb, i, hc_kb_i64(&kb, xs[axis])));
  if (axis != last) xoff = hc_kb_iadd(&kb, xoff, j);
  hc_if s;
  hc_if_begin(&kb, &s, valid);
  apply_update(&kb, x->dtype, red, out, xoff, up, uoff);
  hc_if_end(&kb, &s);
  hc_loop_end(&kb, &jl);
  if (axis != last) hc_loop_end(&kb, &al);
  hc_loop_end(&kb, &ul);
  hc_kb_end(&kb, red == RED_NONE ? 0 : (double)total, (double)total * (double)(3 * esize + hx_dtype_size(iv->dtype)));
  return HX_OK;
}

/* ---- ScatterND ------------------------------------------------------------------- */

/* Checks ranks and the updates shape; tuples G of k components, slices of
 * Q elements. */
static hx_status_t nd_plan(const hc_node* n, int64_t* G, int64_t* k, int64_t* Q) {
  const hc_value* x = n->inputs[0];
  const hc_value* idx = n->inputs[1];
  const hc_value* upd = n->inputs[2];
  int r = x->rank, q = idx->rank;
  if (r < 1 || q < 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "data and indices must have rank >= 1 (got %d and %d)", r, q);
  *k = idx->dims[q - 1];
  if (*k < 1 || *k > r)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "indices.shape[-1] = %lld must be in [1, %d]", (long long)*k,
                         r);
  int64_t want[2 * HC_MAX_RANK];
  int wr = 0;
  for (int d = 0; d < q - 1; ++d) want[wr++] = idx->dims[d];
  for (int d = (int)*k; d < r; ++d) want[wr++] = x->dims[d];
  if (upd->rank != wr || memcmp(upd->dims, want, sizeof(int64_t) * (size_t)wr)) {
    char s1[128], s2[128];
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "updates has shape %s, expected indices.shape[:-1] ++ data.shape[%lld:] = %s",
                         hc_shape_str(upd->rank, upd->dims, s1, sizeof s1), (long long)*k,
                         wr <= HC_MAX_RANK ? hc_shape_str(wr, want, s2, sizeof s2) : "(rank too large)");
  }
  *G = hc_shape_numel(q - 1, idx->dims);
  *Q = hc_shape_numel(r - (int)*k, x->dims + *k);
  return HX_OK;
}

/* Checks dtypes, reduction and shapes; the output has data's shape. */
static hx_status_t infer_scatter_nd(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 3, 3, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, HC_DT(HX_DTYPE_INT64)));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 2));
  reduction red;
  HX_RETURN_IF_ERROR(read_reduction(n, &red));
  int64_t G, k, Q;
  HX_RETURN_IF_ERROR(nd_plan(n, &G, &k, &Q));
  const hc_value* x = n->inputs[0];
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  return HX_OK;
}

/* Copy, then the column-blocked scatter of the file comment. */
static hx_status_t lower_scatter_nd(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* x = n->inputs[0];
  const hc_value* iv = n->inputs[1];
  const hc_value* uv = n->inputs[2];
  const hc_value* y = n->outputs[0];
  reduction red;
  HX_RETURN_IF_ERROR(read_reduction(n, &red));
  int64_t G, k, Q;
  HX_RETURN_IF_ERROR(nd_plan(n, &G, &k, &Q));
  HX_RETURN_IF_ERROR(copy_data(lc, n));
  if (G * Q == 0) return HX_OK;
  size_t esize = hx_dtype_size(x->dtype);
  /* Columns per task: about a task's worth of traffic over all tuples, but
   * runs of at least 64 elements. */
  int64_t per = hc_mv_units_per_task((int64_t)esize * 3) / G;
  int64_t QB = per < 64 ? 64 : per;
  if (QB > Q) QB = Q;
  int64_t blocks = (Q + QB - 1) / QB;
  int64_t xs[HC_MAX_RANK];
  hc_strides(x->rank, x->dims, xs);

  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "scatter", blocks, &kb));
  LLVMValueRef out = hc_kb_ptr(&kb, y), ip = hc_kb_ptr(&kb, iv), up = hc_kb_ptr(&kb, uv);
  hc_loop tl, gl, ql;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &tl);
  LLVMValueRef qlo = hc_kb_imul(&kb, t, hc_kb_i64(&kb, QB));
  LLVMValueRef qhi = hc_kb_imin(&kb, hc_kb_iadd(&kb, qlo, hc_kb_i64(&kb, QB)), hc_kb_i64(&kb, Q));
  LLVMValueRef g = hc_loop_begin(&kb, &gl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, G), "g");
  LLVMValueRef first = hc_kb_imul(&kb, g, hc_kb_i64(&kb, k));
  LLVMValueRef ok = LLVMConstInt(kb.t_i1, 1, 0), xoff = hc_kb_i64(&kb, 0);
  for (int64_t c = 0; c < k; ++c) {
    LLVMValueRef valid;
    LLVMValueRef at = hc_kb_iadd(&kb, first, hc_kb_i64(&kb, c));
    LLVMValueRef i = hc_mv_load_index(&kb, iv->dtype, ip, at, x->dims[c], &valid);
    ok = LLVMBuildAnd(kb.b, ok, valid, "");
    xoff = hc_kb_iadd(&kb, xoff, hc_kb_imul(&kb, i, hc_kb_i64(&kb, xs[c])));
  }
  LLVMValueRef ubase = hc_kb_imul(&kb, g, hc_kb_i64(&kb, Q));
  hc_if s;
  hc_if_begin(&kb, &s, ok);
  if (red == RED_NONE) {
    LLVMValueRef cnt = LLVMBuildSub(kb.b, qhi, qlo, "");
    hc_kb_memcpy(&kb, hc_mv_gep(&kb, hc_mv_elem_type(&kb, esize), out, hc_kb_iadd(&kb, xoff, qlo)),
                 hc_mv_gep(&kb, hc_mv_elem_type(&kb, esize), up, hc_kb_iadd(&kb, ubase, qlo)),
                 hc_kb_imul(&kb, cnt, hc_kb_i64(&kb, (int64_t)esize)));
  } else {
    LLVMValueRef q = hc_loop_begin(&kb, &ql, qlo, qhi, "q");
    apply_update(&kb, x->dtype, red, out, hc_kb_iadd(&kb, xoff, q), up, hc_kb_iadd(&kb, ubase, q));
    hc_loop_end(&kb, &ql);
  }
  hc_if_end(&kb, &s);
  hc_loop_end(&kb, &gl);
  hc_loop_end(&kb, &tl);
  hc_kb_end(&kb, red == RED_NONE ? 0 : (double)(G * Q),
            (double)(G * Q) * (double)(3 * esize) + (double)hc_value_nbytes(iv));
  return HX_OK;
}

const hc_op_desc hc_op_scatter_elements = {
    "ScatterElements", "", 11, 22, k_scatter_elements_attrs, 0, infer_scatter_elements, lower_scatter_elements, NULL};
const hc_op_desc hc_op_scatter = {
    "Scatter", "", 9, 10, k_scatter_attrs, 0, infer_scatter_elements, lower_scatter_elements, NULL};
const hc_op_desc hc_op_scatter_nd = {"ScatterND",      "",  11, 22, k_scatter_nd_attrs, 0, infer_scatter_nd,
                                     lower_scatter_nd, NULL};
