/* Range (opset 11 on): out[i] = start + i * delta for
 * i < max(ceil((limit - start) / delta), 0).
 *
 * start, limit and delta (scalars of one type: float, double, int16, int32
 * or int64) all determine the output length: compile-time constants, or,
 * when any is computed or fed at run time, the length the model declares for
 * the output (compiler/ops/dynamic.h). The length follows ONNX Runtime: limit - start in the input
 * type, then a float64 division and ceil; integer types use exact integer
 * arithmetic instead, so int64 extremes do not lose precision.
 *
 * The kernel reads start and delta from their tensors and fills the output
 * in blocks, start + i * delta per element (integers wrap in the element
 * type, floats compute in their own precision), a loop LLVM vectorises.
 * With constant inputs the node is folded at compile time. */
#include <math.h>

#include "compiler/ops/dynamic.h"
#include "compiler/ops/movement.h"

/* Block of elements per task. */
#define RANGE_BLOCK 16384

/* The output length: from the three constants, or the declared one when
 * any of them is known only at run time. */
static hx_status_t range_count(const hc_node* n, int64_t* count) {
  const char* what[3] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) {
    const hc_value* v = n->inputs[i];
    if (hc_value_numel(v) != 1 || v->rank > 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "%s ('%s') must be a scalar", what[i], v->name);
  }
  for (int i = 0; i < 3; ++i) {
    if (n->inputs[i]->kind == HC_VALUE_CONST) continue;
    /* A run-time bound: the declared length (read from start/delta at run time). */
    int rank;
    int64_t dims[HC_MAX_RANK];
    if (!hc_declared_shape(n->outputs[0], &rank, dims)) return hc_dyn_need_declared(n, i, what[i]);
    if (rank != 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "output '%s' is declared with rank %d, expected 1",
                           n->outputs[0]->name, rank);
    *count = dims[0];
    return HX_OK;
  }
  hx_dtype_t dt = n->inputs[0]->dtype;
  if (hc_dtype_is_integer(dt)) {
    int64_t s, l, d;
    hc_value_const_i64(n->inputs[0], 0, &s);
    hc_value_const_i64(n->inputs[1], 0, &l);
    hc_value_const_i64(n->inputs[2], 0, &d);
    if (d == 0) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "delta is 0");
    __int128 diff = (__int128)l - s, c;
    if (d > 0) c = diff > 0 ? (diff + d - 1) / d : 0;
    else c = diff < 0 ? (-diff + (-(__int128)d) - 1) / -(__int128)d : 0;
    if (c > ((__int128)1 << 40))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "the range has %g elements", (double)c);
    *count = (int64_t)c;
    return HX_OK;
  }
  double s, l, d;
  hc_value_const_f64(n->inputs[0], 0, &s);
  hc_value_const_f64(n->inputs[1], 0, &l);
  hc_value_const_f64(n->inputs[2], 0, &d);
  if (d == 0) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "delta is 0");
  double diff = dt == HX_DTYPE_FLOAT32 ? (double)((float)l - (float)s) : l - s;
  double c = ceil(diff / d);
  if (!(c < (double)((int64_t)1 << 40)))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "the range from %g to %g by %g has %g elements", s, l, d, c);
  *count = c > 0 ? (int64_t)c : 0;
  return HX_OK;
}

/* Checks three scalars of one type; the output is 1-D of the computed length. */
static hx_status_t infer_range(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 3, 3, 1, 1));
  uint64_t types = HC_DT(HX_DTYPE_FLOAT32) | HC_DT(HX_DTYPE_FLOAT64) | HC_DT(HX_DTYPE_INT16) | HC_DT(HX_DTYPE_INT32) |
                   HC_DT(HX_DTYPE_INT64);
  for (int i = 0; i < 3; ++i) HX_RETURN_IF_ERROR(hc_check_dtype(n, i, types));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 1));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 2));
  int64_t count;
  HX_RETURN_IF_ERROR(range_count(n, &count));
  hc_set_output(n, 0, n->inputs[0]->dtype, 1, &count);
  return HX_OK;
}

/* Fill kernel of the file comment. */
static hx_status_t lower_range(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* y = n->outputs[0];
  hx_dtype_t dt = y->dtype;
  int64_t count = hc_value_numel(y);
  if (count == 0) return HX_OK;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, (count + RANGE_BLOCK - 1) / RANGE_BLOCK, &kb));
  LLVMValueRef start = hc_kb_load(&kb, dt, hc_kb_ptr(&kb, n->inputs[0]), hc_kb_i64(&kb, 0));
  LLVMValueRef delta = hc_kb_load(&kb, dt, hc_kb_ptr(&kb, n->inputs[2]), hc_kb_i64(&kb, 0));
  LLVMValueRef dst = hc_kb_ptr(&kb, y);
  hc_loop tl, il;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &tl);
  LLVMValueRef lo = hc_kb_imul(&kb, t, hc_kb_i64(&kb, RANGE_BLOCK));
  LLVMValueRef hi = hc_kb_imin(&kb, hc_kb_iadd(&kb, lo, hc_kb_i64(&kb, RANGE_BLOCK)), hc_kb_i64(&kb, count));
  LLVMValueRef i = hc_loop_begin(&kb, &il, lo, hi, "i");
  LLVMValueRef fi = hc_kb_convert(&kb, i, HX_DTYPE_INT64, dt);
  hc_mv_store_out(&kb, hc_kb_storage_type(&kb, dt), dst, i, hc_kb_fma(&kb, dt, fi, delta, start));
  hc_loop_end(&kb, &il);
  hc_loop_end(&kb, &tl);
  hc_kb_end(&kb, 2.0 * (double)count, (double)hc_value_nbytes(y));
  return HX_OK;
}

const hc_op_desc hc_op_range = {"Range", "", 11, 22, NULL, 0, infer_range, lower_range, NULL};
