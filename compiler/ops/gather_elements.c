/* GatherElements (opset 11 on): out[i_0, ..., i_{r-1}] = data[i_0, ...,
 * indices[i_0, ..., i_{r-1}], ..., i_{r-1}], the index replacing the
 * coordinate of `axis`.
 *
 * The output has the indices' shape. As ONNX Runtime, every other axis of
 * indices must be no longer than data's. The kernel walks the indices row
 * by row (all axes but the last; long rows in blocks): the row's data
 * offset comes from its coordinates, and the inner loop over the last axis
 * loads one index and one data element per output element, branch-free,
 * so it can become a hardware gather.
 *
 * Index semantics (as gather.c): negative indices count from the end
 * (i + A, A = data.dims[axis]); an index still outside [0, A) is invalid
 * input that ONNX leaves undefined, and produces a zero element (all bytes
 * 0) without reading out of bounds. */
#include "compiler/ops/movement.h"

static const char* const k_gather_elements_attrs[] = {"axis", NULL};

/* Checks ranks and extents; the output has the indices' shape. */
static hx_status_t infer_gather_elements(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 2, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, HC_DT(HX_DTYPE_INT32) | HC_DT(HX_DTYPE_INT64)));
  int64_t axis;
  HX_RETURN_IF_ERROR(hc_mv_check_elements(n, NULL, &axis));
  const hc_value* idx = n->inputs[1];
  hc_set_output(n, 0, n->inputs[0]->dtype, idx->rank, idx->dims);
  return HX_OK;
}

/* Row-wise gather kernel of the file comment. */
static hx_status_t lower_gather_elements(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* x = n->inputs[0];
  const hc_value* iv = n->inputs[1];
  const hc_value* y = n->outputs[0];
  int rank = x->rank, last = rank - 1;
  int64_t axis;
  HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", 0), rank, &axis));
  int64_t total = hc_value_numel(iv);
  if (total == 0) return HX_OK;
  int64_t xs[HC_MAX_RANK];
  hc_strides(rank, x->dims, xs);
  int64_t A = x->dims[axis], L = iv->dims[last], R = total / L;
  size_t esize = hx_dtype_size(x->dtype);
  int64_t per = hc_mv_units_per_task((int64_t)esize);
  int64_t JB = L < per ? L : per, blocks = (L + JB - 1) / JB;
  int64_t units = R * blocks, upt = hc_mv_units_per_task(JB * (int64_t)esize);

  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, hc_mv_tasks(units, upt), &kb));
  LLVMTypeRef et = hc_mv_elem_type(&kb, esize);
  LLVMValueRef src = hc_kb_ptr(&kb, x), dst = hc_kb_ptr(&kb, y), ip = hc_kb_ptr(&kb, iv);
  hc_loop ul, jl;
  LLVMValueRef u = hc_mv_units_begin(&kb, &ul, units, upt);
  LLVMValueRef blk = blocks == 1 ? hc_kb_i64(&kb, 0) : LLVMBuildURem(kb.b, u, hc_kb_i64(&kb, blocks), "");
  LLVMValueRef row = blocks == 1 ? u : LLVMBuildUDiv(kb.b, u, hc_kb_i64(&kb, blocks), "");
  LLVMValueRef coords[HC_MAX_RANK];
  hc_mv_unflatten(&kb, row, last, iv->dims, coords);
  LLVMValueRef base = hc_kb_i64(&kb, 0);
  for (int d = 0; d < last; ++d)
    if (d != axis) base = hc_kb_iadd(&kb, base, hc_kb_imul(&kb, coords[d], hc_kb_i64(&kb, xs[d])));
  LLVMValueRef rbase = hc_kb_imul(&kb, row, hc_kb_i64(&kb, L));
  LLVMValueRef jlo = hc_kb_imul(&kb, blk, hc_kb_i64(&kb, JB));
  LLVMValueRef jhi = hc_kb_imin(&kb, hc_kb_iadd(&kb, jlo, hc_kb_i64(&kb, JB)), hc_kb_i64(&kb, L));
  LLVMValueRef j = hc_loop_begin(&kb, &jl, jlo, jhi, "j");
  LLVMValueRef o = hc_kb_iadd(&kb, rbase, j);
  LLVMValueRef valid;
  LLVMValueRef i = hc_mv_load_index(&kb, iv->dtype, ip, o, A, &valid);
  LLVMValueRef v = LLVMConstInt(et, 0, 0);
  if (A > 0) {
    LLVMValueRef safe = LLVMBuildSelect(kb.b, valid, i, hc_kb_i64(&kb, 0), "");
    LLVMValueRef s = hc_kb_iadd(&kb, base, hc_kb_imul(&kb, safe, hc_kb_i64(&kb, xs[axis])));
    if (axis != last) s = hc_kb_iadd(&kb, s, j);
    v = LLVMBuildSelect(kb.b, valid, hc_mv_load_in(&kb, et, src, s), v, "");
  }
  hc_mv_store_out(&kb, et, dst, o, v);
  hc_loop_end(&kb, &jl);
  hc_loop_end(&kb, &ul);
  hc_kb_end(&kb, 0, 2.0 * (double)hc_value_nbytes(y) + (double)hc_value_nbytes(iv));
  return HX_OK;
}

const hc_op_desc hc_op_gather_elements = {
    "GatherElements", "", 11, 22, k_gather_elements_attrs, 0, infer_gather_elements, lower_gather_elements, NULL};
