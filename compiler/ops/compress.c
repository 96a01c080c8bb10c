/* Compress (opsets 9 and 11): the slices of `input` along `axis` (or the
 * elements of the flattened input when axis is absent) whose entry of the
 * 1-D bool `condition` is true. Entries beyond the condition's length are
 * dropped, as the specification says; condition entries beyond the axis are
 * ignored. Opset 11 allows a negative axis.
 *
 * The output length along the axis is the number of true entries: a
 * value-dependent shape (compiler/ops/dynamic.h) with the upper bound
 * min(len(condition), axis size), exact when the condition is a constant.
 *
 * With outer / L / inner the sizes before, along and after the axis (1 / numel
 * / 1 for the flattened form), a unit is one outer index: it walks the
 * condition and copies each selected run of `inner` elements to the next
 * output slot. Units are independent, so tasks take groups of them. Each task
 * counts the true entries first (the output's row length); the task holding
 * unit 0 writes the actual dims. Elements move as bits, so every dtype works. */
#include "compiler/ops/dynamic.h"
#include "compiler/ops/movement.h"

static const char* const k_compress_attrs[] = {"axis", NULL};

typedef struct compress_geom {
  bool has_axis;
  int64_t axis, outer, len, inner, eff; /* eff: condition entries used */
} compress_geom;

static hx_status_t compress_geometry(const hc_node* n, compress_geom* c) {
  const hc_value *x = n->inputs[0], *cond = n->inputs[1];
  c->has_axis = hc_node_attr(n, "axis") != NULL;
  if (c->has_axis) {
    int64_t a = hc_attr_int(n, "axis", 0);
    if (n->opset < 11 && a < 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "a negative axis (%lld) needs opset 11", (long long)a);
    if (x->rank < 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axis is given but the input is a scalar");
    HX_RETURN_IF_ERROR(hc_norm_axis(n, a, x->rank, &c->axis));
    c->outer = hc_shape_numel((int)c->axis, x->dims);
    c->len = x->dims[c->axis];
    c->inner = hc_shape_numel(x->rank - (int)c->axis - 1, x->dims + c->axis + 1);
  } else {
    c->axis = 0;
    c->outer = 1;
    c->len = hc_value_numel(x);
    c->inner = 1;
  }
  int64_t cl = hc_value_numel(cond);
  c->eff = cl < c->len ? cl : c->len;
  return HX_OK;
}

static hx_status_t infer_compress(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 2, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, HC_DT(HX_DTYPE_BOOL)));
  const hc_value *x = n->inputs[0], *cond = n->inputs[1];
  if (cond->rank != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "condition ('%s') must be 1-D, got rank %d", cond->name,
                         cond->rank);
  compress_geom c;
  HX_RETURN_IF_ERROR(compress_geometry(n, &c));
  int64_t count = c.eff;
  bool exact = cond->kind == HC_VALUE_CONST;
  if (exact) {
    count = 0;
    for (int64_t a = 0; a < c.eff; ++a) count += ((const uint8_t*)cond->data)[a] != 0;
  }
  int64_t dims[HC_MAX_RANK];
  if (c.has_axis) {
    for (int d = 0; d < x->rank; ++d) dims[d] = d == c.axis ? count : x->dims[d];
    hc_set_output(n, 0, x->dtype, x->rank, dims);
  } else {
    hc_set_output(n, 0, x->dtype, 1, &count);
  }
  hc_dyn_set(n->outputs[0], !exact);
  return HX_OK;
}

static hx_status_t lower_compress(hc_lower_ctx* lc, hc_node* n) {
  const hc_value *x = n->inputs[0], *cond = n->inputs[1], *y = n->outputs[0];
  compress_geom c;
  HX_RETURN_IF_ERROR(compress_geometry(n, &c));
  size_t esize = hx_dtype_size(x->dtype);
  int64_t upt = hc_mv_units_per_task((c.eff > 0 ? c.eff : 1) * c.inner * (int64_t)esize);
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, hc_mv_tasks(c.outer, upt), &kb));
  LLVMBuilderRef b = kb.b;
  LLVMTypeRef et = hc_mv_elem_type(&kb, esize);
  LLVMValueRef px = hc_kb_ptr(&kb, x), pc = hc_kb_ptr(&kb, cond), py = hc_kb_ptr(&kb, y);
  LLVMValueRef acc = hc_kb_alloca(&kb, kb.t_i64, "count"), slot = hc_kb_alloca(&kb, kb.t_i64, "slot");
  LLVMValueRef zero = hc_kb_i64(&kb, 0), one = hc_kb_i64(&kb, 1), inner = hc_kb_i64(&kb, c.inner);

  /* The number of selected slices. */
  hc_loop l;
  LLVMBuildStore(b, zero, acc);
  LLVMValueRef a = hc_loop_begin(&kb, &l, zero, hc_kb_i64(&kb, c.eff), "a");
  LLVMValueRef sel = LLVMBuildZExt(b, hc_kb_load(&kb, HX_DTYPE_BOOL, pc, a), kb.t_i64, "");
  LLVMBuildStore(b, hc_kb_iadd(&kb, LLVMBuildLoad2(b, kb.t_i64, acc, ""), sel), acc);
  hc_loop_end(&kb, &l);
  LLVMValueRef count = LLVMBuildLoad2(b, kb.t_i64, acc, "");
  hc_if first;
  hc_dyn_first_begin(&kb, &first);
  LLVMValueRef dims[HC_MAX_RANK];
  if (c.has_axis)
    for (int d = 0; d < x->rank; ++d) dims[d] = d == c.axis ? count : hc_kb_i64(&kb, x->dims[d]);
  else
    dims[0] = count;
  hc_dyn_store_dims(&kb, y, dims);
  hc_if_end(&kb, &first);

  hc_loop ul;
  LLVMValueRef u = hc_mv_units_begin(&kb, &ul, c.outer, upt);
  LLVMBuildStore(b, zero, slot);
  LLVMValueRef xrow = hc_kb_imul(&kb, u, hc_kb_i64(&kb, c.len));
  LLVMValueRef yrow = hc_kb_imul(&kb, u, count);
  a = hc_loop_begin(&kb, &l, zero, hc_kb_i64(&kb, c.eff), "a");
  hc_if take;
  hc_if_begin(&kb, &take, hc_kb_load(&kb, HX_DTYPE_BOOL, pc, a));
  LLVMValueRef j = LLVMBuildLoad2(b, kb.t_i64, slot, "");
  LLVMValueRef src = hc_kb_imul(&kb, hc_kb_iadd(&kb, xrow, a), inner);
  LLVMValueRef dst = hc_kb_imul(&kb, hc_kb_iadd(&kb, yrow, j), inner);
  if (c.inner == 1)
    hc_mv_store_out(&kb, et, py, dst, hc_mv_load_in(&kb, et, px, src));
  else
    hc_mv_copy_run(&kb, esize, py, dst, px, src, inner);
  LLVMBuildStore(b, hc_kb_iadd(&kb, j, one), slot);
  hc_if_end(&kb, &take);
  hc_loop_end(&kb, &l);
  hc_loop_end(&kb, &ul);
  hc_kb_end(&kb, 0, 2.0 * (double)hc_value_nbytes(y) + (double)hc_value_nbytes(cond));
  return HX_OK;
}

const hc_op_desc hc_op_compress = {"Compress", "", 9, 22, k_compress_attrs, 0, infer_compress, lower_compress, NULL};
