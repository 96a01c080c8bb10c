/* Gather: out[pre, j..., post] = data[pre, indices[j...], post].
 *
 * The indices are read by the kernel at run time (they may be a graph input
 * or computed), so the output shape depends only on their shape. With
 * P = prod(data.dims[:axis]), J = indices elements, A = data.dims[axis] and
 * Q = prod(data.dims[axis+1:]) the output is [P, J, Q]:
 *  - Q > 1: each (p, j) is one contiguous run of Q elements (a memcpy);
 *  - Q == 1: each p is a row of J single-element loads, a gather loop the
 *    vectoriser can turn into hardware gathers.
 *
 * Index semantics: negative indices count from the end (i + A). An index
 * still outside [0, A) is invalid input that ONNX leaves undefined; Harness
 * must not read out of bounds, so such an index produces zeros (all bytes
 * 0) in its output run. Zeros rather than clamping make a bad index visible
 * instead of silently duplicating a neighbour. */
#include "compiler/ops/movement.h"


/* Output shape: data.dims[:axis] + indices.dims + data.dims[axis+1:]. */
static hx_status_t infer_gather(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 2, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, HC_DT(HX_DTYPE_INT32) | HC_DT(HX_DTYPE_INT64)));
  const hc_value* x = n->inputs[0];
  const hc_value* idx = n->inputs[1];
  if (x->rank < 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "data must have rank >= 1, got a scalar");
  int64_t axis;
  HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", 0), x->rank, &axis));
  int rank = x->rank - 1 + idx->rank;
  if (rank > HC_MAX_RANK)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED, "output rank %d exceeds the maximum %d", rank, HC_MAX_RANK);
  int64_t dims[HC_MAX_RANK];
  int r = 0;
  for (int d = 0; d < axis; ++d) dims[r++] = x->dims[d];
  for (int d = 0; d < idx->rank; ++d) dims[r++] = idx->dims[d];
  for (int d = (int)axis + 1; d < x->rank; ++d) dims[r++] = x->dims[d];
  hc_set_output(n, 0, x->dtype, rank, dims);
  return HX_OK;
}

/* Emits the run-copy (Q > 1) or element-gather (Q == 1) kernel. */
static hx_status_t lower_gather(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* x = n->inputs[0];
  const hc_value* iv = n->inputs[1];
  const hc_value* y = n->outputs[0];
  int64_t axis;
  HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", 0), x->rank, &axis));
  int64_t P = hc_shape_numel((int)axis, x->dims);
  int64_t A = x->dims[axis];
  int64_t Q = hc_shape_numel(x->rank - (int)axis - 1, x->dims + axis + 1);
  int64_t J = hc_value_numel(iv);
  size_t esize = hx_dtype_size(x->dtype);
  int64_t total = P * J * Q;
  if (total == 0) return HX_OK;
  double bytes = 2.0 * (double)total * (double)esize + (double)hc_value_nbytes(iv);

  hc_kb kb;
  if (Q > 1) {
    /* Units are (p, j) pairs, each one run of Q elements. */
    int64_t units = P * J, upt = hc_mv_units_per_task(Q * (int64_t)esize);
    HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, hc_mv_tasks(units, upt), &kb));
    LLVMValueRef src = hc_kb_ptr(&kb, x), dst = hc_kb_ptr(&kb, y), ip = hc_kb_ptr(&kb, iv);
    hc_loop ul;
    LLVMValueRef u = hc_mv_units_begin(&kb, &ul, units, upt);
    LLVMValueRef j = J == 1 ? hc_kb_i64(&kb, 0) : LLVMBuildURem(kb.b, u, hc_kb_i64(&kb, J), "");
    LLVMValueRef p = J == 1 ? u : LLVMBuildUDiv(kb.b, u, hc_kb_i64(&kb, J), "");
    LLVMValueRef valid;
    LLVMValueRef i = hc_mv_load_index(&kb, iv->dtype, ip, j, A, &valid);
    LLVMValueRef doff = hc_kb_imul(&kb, u, hc_kb_i64(&kb, Q));
    LLVMValueRef row = hc_kb_iadd(&kb, hc_kb_imul(&kb, p, hc_kb_i64(&kb, A)), i);
    LLVMValueRef soff = hc_kb_imul(&kb, row, hc_kb_i64(&kb, Q));
    LLVMBasicBlockRef copy_bb = LLVMAppendBasicBlockInContext(lc->llctx, kb.fn, "copy");
    LLVMBasicBlockRef zero_bb = LLVMAppendBasicBlockInContext(lc->llctx, kb.fn, "zero");
    LLVMBasicBlockRef next_bb = LLVMAppendBasicBlockInContext(lc->llctx, kb.fn, "next");
    LLVMBuildCondBr(kb.b, valid, copy_bb, zero_bb);
    LLVMPositionBuilderAtEnd(kb.b, copy_bb);
    hc_mv_copy_run(&kb, esize, dst, doff, src, soff, hc_kb_i64(&kb, Q));
    LLVMBuildBr(kb.b, next_bb);
    LLVMPositionBuilderAtEnd(kb.b, zero_bb);
    hc_kb_memset(&kb, hc_mv_gep(&kb, hc_mv_elem_type(&kb, esize), dst, doff), 0, hc_kb_i64(&kb, Q * (int64_t)esize));
    LLVMBuildBr(kb.b, next_bb);
    LLVMPositionBuilderAtEnd(kb.b, next_bb);
    hc_loop_end(&kb, &ul);
  } else {
    /* Units are blocks of a row of J single-element gathers. */
    int64_t upt_elems = hc_mv_units_per_task((int64_t)esize);
    int64_t JB = J < upt_elems ? J : upt_elems;
    int64_t blocks = (J + JB - 1) / JB;
    int64_t units = P * blocks, upt = hc_mv_units_per_task(JB * (int64_t)esize);
    HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, hc_mv_tasks(units, upt), &kb));
    LLVMTypeRef et = hc_mv_elem_type(&kb, esize);
    LLVMValueRef src = hc_kb_ptr(&kb, x), dst = hc_kb_ptr(&kb, y), ip = hc_kb_ptr(&kb, iv);
    hc_loop ul;
    LLVMValueRef u = hc_mv_units_begin(&kb, &ul, units, upt);
    LLVMValueRef blk = blocks == 1 ? hc_kb_i64(&kb, 0) : LLVMBuildURem(kb.b, u, hc_kb_i64(&kb, blocks), "");
    LLVMValueRef p = blocks == 1 ? u : LLVMBuildUDiv(kb.b, u, hc_kb_i64(&kb, blocks), "");
    LLVMValueRef jlo = hc_kb_imul(&kb, blk, hc_kb_i64(&kb, JB));
    LLVMValueRef jhi = hc_kb_imin(&kb, hc_kb_iadd(&kb, jlo, hc_kb_i64(&kb, JB)), hc_kb_i64(&kb, J));
    LLVMValueRef sbase = hc_kb_imul(&kb, p, hc_kb_i64(&kb, A));
    LLVMValueRef dbase = hc_kb_imul(&kb, p, hc_kb_i64(&kb, J));
    hc_loop jl;
    LLVMValueRef j = hc_loop_begin(&kb, &jl, jlo, jhi, "j");
    LLVMValueRef valid;
    LLVMValueRef i = hc_mv_load_index(&kb, iv->dtype, ip, j, A, &valid);
    /* Branch-free: read a safe address, then select zero for bad indices
     * (with A == 0 every index is bad and there is nothing to read). */
    LLVMValueRef v = LLVMConstInt(et, 0, 0);
    if (A > 0) {
      LLVMValueRef safe = LLVMBuildSelect(kb.b, valid, i, hc_kb_i64(&kb, 0), "");
      LLVMValueRef x_v = hc_mv_load_in(&kb, et, src, hc_kb_iadd(&kb, sbase, safe));
      v = LLVMBuildSelect(kb.b, valid, x_v, v, "");
    }
    hc_mv_store_out(&kb, et, dst, hc_kb_iadd(&kb, dbase, j), v);
    hc_loop_end(&kb, &jl);
    hc_loop_end(&kb, &ul);
  }
  hc_kb_end(&kb, 0, bytes);
  return HX_OK;
}

static const char* const k_gather_attrs[] = {"axis", NULL};

const hc_op_desc hc_op_gather = {"Gather", "", 1, 22, k_gather_attrs, 0, infer_gather, lower_gather, NULL};
