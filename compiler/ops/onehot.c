/* OneHot (opsets 9 and 11 on): out[p, d, q] = (indices[p, q] == d) ? on : off
 * where the new axis of size depth is inserted at `axis` and values is
 * [off, on].
 *
 * depth determines the output shape: a compile-time constant (any numeric
 * type, truncated to an integer as ONNX Runtime does), or, when it is
 * computed or fed at run time, the depth the model declares for the output
 * (compiler/ops/dynamic.h); the kernel then reads depth at run time to wrap
 * negative indices. indices and values are read at run time. Float indices
 * are truncated toward zero
 * (ONNX Runtime casts them to int64). Opset 11 wraps indices in
 * [-depth, -1] by adding depth; opset 9 does not. Any other index outside
 * [0, depth) gives an all-off row, as the specification says.
 *
 * With P = prod(indices.dims[:axis]) and Q = prod(indices.dims[axis:]) the
 * output is [P, depth, Q]. For Q > 1 a unit is an output row (p, d) of Q
 * elements computed by a vectorisable compare-and-select over a row of
 * indices; for Q == 1 (axis last) a unit is the depth-long row of one
 * index. The output moves bits, so every values dtype is served. */
#include <math.h>

#include "compiler/ops/dynamic.h"
#include "compiler/ops/movement.h"

static const char* const k_onehot_attrs[] = {"axis", NULL};

/* Reads depth (a scalar or one-element tensor): the constant, or for a
 * run-time depth the size of the declared output at the one-hot axis. */
static hx_status_t read_depth(const hc_node* n, int64_t* depth) {
  const hc_value* v = n->inputs[1];
  if (hc_value_numel(v) != 1 || v->rank > 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "depth ('%s') must be a scalar or a one-element tensor",
                         v->name);
  if (v->kind != HC_VALUE_CONST) {
    int rank = n->inputs[0]->rank + 1, drank;
    int64_t dims[HC_MAX_RANK], axis;
    if (!hc_declared_shape(n->outputs[0], &drank, dims)) return hc_dyn_need_declared(n, 1, "depth");
    if (drank != rank)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "output '%s' is declared with rank %d, expected %d",
                           n->outputs[0]->name, drank, rank);
    HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", -1), rank, &axis));
    *depth = dims[axis];
    return HX_OK;
  }
  double d;
  if (!hc_value_const_f64(v, 0, &d))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "cannot read depth ('%s')", v->name);
  if (!(d >= 0) || d > 1e15)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "depth = %g must be a non-negative integer", d);
  *depth = (int64_t)d;
  return HX_OK;
}

/* Output: indices' shape with depth inserted at axis; dtype of values. */
static hx_status_t infer_onehot(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 3, 3, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_NUMERIC));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, HC_DT_NUMERIC));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 2, HC_DT_ALL));
  const hc_value* idx = n->inputs[0];
  const hc_value* vals = n->inputs[2];
  if (hc_value_numel(vals) != 2 || vals->rank != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "values ('%s') must be a 1-D tensor [off, on] of 2 elements",
                         vals->name);
  int64_t depth = 0, axis;
  HX_RETURN_IF_ERROR(read_depth(n, &depth));
  int rank = idx->rank + 1;
  if (rank > HC_MAX_RANK)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED, "output rank %d exceeds the maximum %d", rank, HC_MAX_RANK);
  HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", -1), rank, &axis));
  int64_t dims[HC_MAX_RANK];
  for (int d = 0, s = 0; d < rank; ++d) dims[d] = d == axis ? depth : idx->dims[s++];
  hc_set_output(n, 0, vals->dtype, rank, dims);
  return HX_OK;
}

/* Index element `at` as i64: floats truncated, opset-11 negatives wrapped
 * by depth (an i64 value). */
static LLVMValueRef load_index(hc_kb* kb, const hc_node* n, LLVMValueRef ip, LLVMValueRef at, LLVMValueRef depth) {
  hx_dtype_t dt = n->inputs[0]->dtype;
  LLVMValueRef i = hc_kb_convert(kb, hc_kb_load(kb, dt, ip, at), dt, HX_DTYPE_INT64);
  return n->opset >= 11 ? hc_mv_wrap_index(kb, i, depth, NULL) : i;
}

/* The row kernel of the file comment. */
static hx_status_t lower_onehot(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* iv = n->inputs[0];
  const hc_value* vv = n->inputs[2];
  const hc_value* y = n->outputs[0];
  int64_t depth = 0, axis;
  HX_RETURN_IF_ERROR(read_depth(n, &depth));
  HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", -1), y->rank, &axis));
  int64_t total = hc_value_numel(y);
  if (total == 0) return HX_OK;
  int64_t P = hc_shape_numel((int)axis, iv->dims), Q = hc_shape_numel(iv->rank - (int)axis, iv->dims + axis);
  size_t esize = hx_dtype_size(y->dtype);
  int64_t row = Q > 1 ? Q : depth, units = Q > 1 ? P * depth : P;
  int64_t upt = hc_mv_units_per_task(row * (int64_t)esize);

  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, hc_mv_tasks(units, upt), &kb));
  LLVMTypeRef et = hc_mv_elem_type(&kb, esize);
  LLVMValueRef ip = hc_kb_ptr(&kb, iv), vp = hc_kb_ptr(&kb, vv), dst = hc_kb_ptr(&kb, y);
  LLVMValueRef off = hc_mv_load_in(&kb, et, vp, hc_kb_i64(&kb, 0));
  LLVMValueRef on = hc_mv_load_in(&kb, et, vp, hc_kb_i64(&kb, 1));
  /* The wrapping depth: the constant, or the run-time value (truncated). */
  const hc_value* dv = n->inputs[1];
  LLVMValueRef wrap = hc_kb_i64(&kb, depth);
  if (dv->kind != HC_VALUE_CONST)
    wrap = hc_kb_convert(&kb, hc_kb_load(&kb, dv->dtype, hc_kb_ptr(&kb, dv), hc_kb_i64(&kb, 0)), dv->dtype,
                         HX_DTYPE_INT64);
  hc_loop ul, il;
  LLVMValueRef u = hc_mv_units_begin(&kb, &ul, units, upt);
  LLVMValueRef obase = hc_kb_imul(&kb, u, hc_kb_i64(&kb, row));
  if (Q > 1) {
    LLVMValueRef p = LLVMBuildUDiv(kb.b, u, hc_kb_i64(&kb, depth), "");
    LLVMValueRef d = LLVMBuildURem(kb.b, u, hc_kb_i64(&kb, depth), "");
    LLVMValueRef ibase = hc_kb_imul(&kb, p, hc_kb_i64(&kb, Q));
    LLVMValueRef q = hc_loop_begin(&kb, &il, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, Q), "q");
    LLVMValueRef i = load_index(&kb, n, ip, hc_kb_iadd(&kb, ibase, q), wrap);
    LLVMValueRef hit = LLVMBuildICmp(kb.b, LLVMIntEQ, i, d, "");
    hc_mv_store_out(&kb, et, dst, hc_kb_iadd(&kb, obase, q), LLVMBuildSelect(kb.b, hit, on, off, ""));
  } else {
    LLVMValueRef i = load_index(&kb, n, ip, u, wrap);
    LLVMValueRef d = hc_loop_begin(&kb, &il, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, depth), "d");
    LLVMValueRef hit = LLVMBuildICmp(kb.b, LLVMIntEQ, i, d, "");
    hc_mv_store_out(&kb, et, dst, hc_kb_iadd(&kb, obase, d), LLVMBuildSelect(kb.b, hit, on, off, ""));
  }
  hc_loop_end(&kb, &il);
  hc_loop_end(&kb, &ul);
  hc_kb_end(&kb, 0, (double)hc_value_nbytes(y) + (double)hc_value_nbytes(iv));
  return HX_OK;
}

const hc_op_desc hc_op_onehot = {"OneHot", "", 9, 22, k_onehot_attrs, 0, infer_onehot, lower_onehot, NULL};
