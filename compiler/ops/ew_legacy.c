/* Legacy (opset < 7) broadcasting for element-wise binary ops (see
 * ew_legacy.h). */
#include "compiler/ops/ew_legacy.h"

#include "compiler/codegen/elementwise.h"

hx_status_t hc_ew_legacy_axis(const hc_node* n, int* axis) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 2, 1, 1));
  const hc_value *a = n->inputs[0], *b = n->inputs[1];
  char s1[128], s2[128];
  *axis = -1;
  bool same = a->rank == b->rank;
  for (int d = 0; same && d < a->rank; ++d) same = a->dims[d] == b->dims[d];
  if (!hc_attr_int(n, "broadcast", 0)) {
    if (!same)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "inputs must have the same shape without broadcast=1 (opset %d): %s vs %s", n->opset,
                           hc_shape_str(a->rank, a->dims, s1, sizeof s1),
                           hc_shape_str(b->rank, b->dims, s2, sizeof s2));
  } else if (hc_value_numel(b) == 1) {
    if (b->rank > 0) *axis = a->rank; /* viewed as a scalar */
  } else if (!same) {
    int64_t ax = hc_attr_int(n, "axis", a->rank - b->rank);
    if (ax < 0) ax += a->rank;
    bool ok = ax >= 0 && ax + b->rank <= a->rank;
    for (int d = 0; ok && d < b->rank; ++d) ok = b->dims[d] == a->dims[ax + d] || b->dims[d] == 1;
    if (!ok)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "input 1 (shape %s) does not match input 0 (shape %s) at axis %lld "
                           "(legacy broadcasting, opset %d)",
                           hc_shape_str(b->rank, b->dims, s2, sizeof s2), hc_shape_str(a->rank, a->dims, s1, sizeof s1),
                           (long long)ax, n->opset);
    if (ax + b->rank != a->rank) *axis = (int)ax;
  }
  return HX_OK;
}

hx_status_t hc_ew_legacy_infer(hc_node* n, hx_dtype_t out_dtype, const hc_op_desc* aligned) {
  int axis;
  HX_RETURN_IF_ERROR(hc_ew_legacy_axis(n, &axis));
  if (axis >= 0) n->op = aligned;
  const hc_value* a = n->inputs[0];
  hc_set_output(n, 0, out_dtype == HX_DTYPE_UNDEFINED ? a->dtype : out_dtype, a->rank, a->dims);
  return HX_OK;
}

/* Adapts the node's scalar function to the element-wise generator. */
static LLVMValueRef scalar_fn(hc_kb* kb, void* ctx, LLVMValueRef* operands) {
  const hc_node* n = ctx;
  return n->op->scalar(kb, n, operands);
}

hx_status_t hc_ew_lower_aligned(hc_lower_ctx* lc, hc_node* n, int operand, int axis) {
  if (axis < 0) return hc_lower_elementwise(lc, n);
  const hc_value* out = n->outputs[0];
  /* The same storage under a shape padded with trailing 1-dims up to the
   * output's rank, so numpy alignment puts it at `axis`; a one-element
   * operand aligned at the rank becomes a scalar. */
  hc_value view = *n->inputs[operand];
  if (hc_value_numel(&view) == 1 && axis >= out->rank) {
    view.rank = 0;
  } else {
    int rank = out->rank - axis;
    for (int d = view.rank; d < rank; ++d) view.dims[d] = 1;
    view.rank = rank;
  }
  const hc_value* operands[16];
  if (n->num_inputs > 16) return hc_node_error(n, HX_STATUS_UNSUPPORTED, "too many inputs (%d)", n->num_inputs);
  for (int i = 0; i < n->num_inputs; ++i) operands[i] = i == operand ? &view : n->inputs[i];
  hc_elementwise_spec spec = {
      .node = n,
      .num_operands = n->num_inputs,
      .operands = operands,
      .out = out,
      .fn = scalar_fn,
      .ctx = n,
      .flops_per_element = 1.0,
  };
  return hc_emit_elementwise(lc, &spec);
}

hx_status_t hc_ew_lower_legacy(hc_lower_ctx* lc, hc_node* n) {
  int axis = -1;
  if (n->opset < 7) HX_RETURN_IF_ERROR(hc_ew_legacy_axis(n, &axis));
  return hc_ew_lower_aligned(lc, n, 1, axis);
}
