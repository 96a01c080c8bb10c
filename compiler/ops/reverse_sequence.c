/* ReverseSequence (opset 10 on): for every batch entry b, the first
 * sequence_lens[b] steps along the time axis are reversed and the rest
 * copied: out[b, t, ...] = in[b, len_b - 1 - t, ...] for t < len_b, else
 * in[b, t, ...].
 *
 * batch_axis and time_axis are 0 and 1 in either order; sequence_lens
 * (int64, one per batch entry) is read at run time. A unit is one (axis 0,
 * axis 1) pair and moves the Q = prod(dims[2:]) contiguous elements behind
 * it with one copy.
 *
 * A length outside [0, T] (T = the time axis's size) is invalid input that
 * ONNX Runtime rejects; Harness clamps it into [0, T], so it never reads
 * out of bounds (a length <= 1 copies the entry unchanged). */
#include "compiler/ops/movement.h"

static const char* const k_reverse_sequence_attrs[] = {"batch_axis", "time_axis", NULL};

/* Reads the axes; *batch0 when the batch axis is 0. */
static hx_status_t read_axes(const hc_node* n, bool* batch0) {
  int64_t b = hc_attr_int(n, "batch_axis", 1), t = hc_attr_int(n, "time_axis", 0);
  if (!((b == 0 && t == 1) || (b == 1 && t == 0)))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "batch_axis and time_axis must be 0 and 1 in some order, got %lld and %lld", (long long)b,
                         (long long)t);
  *batch0 = b == 0;
  return HX_OK;
}

/* Checks the axes and one length per batch entry; the output has the input's shape. */
static hx_status_t infer_reverse_sequence(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 2, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, HC_DT(HX_DTYPE_INT64)));
  const hc_value* x = n->inputs[0];
  const hc_value* lens = n->inputs[1];
  bool batch0 = false;
  HX_RETURN_IF_ERROR(read_axes(n, &batch0));
  if (x->rank < 2) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input must have rank >= 2, got %d", x->rank);
  int64_t B = x->dims[batch0 ? 0 : 1];
  if (lens->rank != 1 || lens->dims[0] != B)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "sequence_lens must be 1-D with %lld entries (the batch size)",
                         (long long)B);
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  return HX_OK;
}

/* One copy of Q elements per (axis 0, axis 1) pair. */
static hx_status_t lower_reverse_sequence(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* x = n->inputs[0];
  const hc_value* lv = n->inputs[1];
  const hc_value* y = n->outputs[0];
  bool batch0 = false;
  HX_RETURN_IF_ERROR(read_axes(n, &batch0));
  if (hc_value_numel(x) == 0) return HX_OK;
  int64_t D0 = x->dims[0], D1 = x->dims[1], T = batch0 ? D1 : D0;
  int64_t Q = hc_shape_numel(x->rank - 2, x->dims + 2);
  size_t esize = hx_dtype_size(x->dtype);
  int64_t units = D0 * D1, upt = hc_mv_units_per_task(Q * (int64_t)esize);

  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, hc_mv_tasks(units, upt), &kb));
  LLVMValueRef src = hc_kb_ptr(&kb, x), dst = hc_kb_ptr(&kb, y), lp = hc_kb_ptr(&kb, lv);
  hc_loop ul;
  LLVMValueRef u = hc_mv_units_begin(&kb, &ul, units, upt);
  LLVMValueRef i0 = LLVMBuildUDiv(kb.b, u, hc_kb_i64(&kb, D1), "");
  LLVMValueRef i1 = LLVMBuildURem(kb.b, u, hc_kb_i64(&kb, D1), "");
  LLVMValueRef b = batch0 ? i0 : i1, t = batch0 ? i1 : i0;
  LLVMValueRef len = hc_mv_load_in(&kb, kb.t_i64, lp, b);
  len = hc_kb_imin(&kb, hc_kb_imax(&kb, len, hc_kb_i64(&kb, 0)), hc_kb_i64(&kb, T));
  LLVMValueRef rev = LLVMBuildICmp(kb.b, LLVMIntSLT, t, len, "");
  LLVMValueRef ts =
      LLVMBuildSelect(kb.b, rev, LLVMBuildSub(kb.b, LLVMBuildSub(kb.b, len, hc_kb_i64(&kb, 1), ""), t, ""), t, "");
  LLVMValueRef su = batch0 ? hc_kb_iadd(&kb, hc_kb_imul(&kb, b, hc_kb_i64(&kb, D1)), ts)
                           : hc_kb_iadd(&kb, hc_kb_imul(&kb, ts, hc_kb_i64(&kb, D1)), b);
  LLVMValueRef q = hc_kb_i64(&kb, Q);
  hc_mv_copy_run(&kb, esize, dst, hc_kb_imul(&kb, u, q), src, hc_kb_imul(&kb, su, q), q);
  hc_loop_end(&kb, &ul);
  hc_kb_end(&kb, 0, 2.0 * (double)hc_value_nbytes(x));
  return HX_OK;
}

const hc_op_desc hc_op_reverse_sequence = {
    "ReverseSequence", "", 10, 22, k_reverse_sequence_attrs, 0, infer_reverse_sequence, lower_reverse_sequence, NULL};
