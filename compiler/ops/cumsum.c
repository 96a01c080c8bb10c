/* CumSum: running sums of x along an axis (opsets 11 and 14).
 *
 * y[j] = x[0] + ... + x[j] (inclusive), x[0] + ... + x[j-1] (exclusive=1),
 * or the same from the end (reverse=1). The axis is an input; it selects
 * the loop structure, so it must be a compile-time constant.
 *
 * The work splits into (outer, n, inner): n elements spaced `inner` apart.
 * inner == 1: a task is one contiguous row, summed sequentially.
 * inner > 1: a task is a block of up to CS_BLOCK neighbouring columns of one
 * outer index; the running sums live in a stack buffer, so each step along
 * the axis is a contiguous, vectorisable loop over the block.
 * Floats accumulate in float32 (float64 for float64) and every output is
 * rounded once; integers wrap in their own width.
 */
#include "compiler/ops/op.h"

/* Columns per task in the strided form. */
#define CS_BLOCK 512

/* Reads the constant axis input and normalises it. */
static hx_status_t cumsum_axis(const hc_node* n, int64_t* axis) {
  const hc_value *x = n->inputs[0], *a = n->inputs[1];
  if (a->dtype != HX_DTYPE_INT32 && a->dtype != HX_DTYPE_INT64)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axis ('%s') must be int32 or int64, got %s", a->name,
                         hx_dtype_name(a->dtype));
  if (a->rank > 1 || hc_value_numel(a) != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axis ('%s') must hold one value (a scalar or 1-D of size 1)",
                         a->name);
  if (a->kind != HC_VALUE_CONST)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                         "input 1 ('%s') selects the summation axis and must be known at compile time; it is "
                         "computed at run time here (freeze it with --constant %s=FILE.pb if it is a graph input)",
                         a->name, a->name);
  int64_t v = 0;
  hc_value_const_i64(a, 0, &v);
  return hc_norm_axis(n, v, x->rank, axis);
}

static hx_status_t infer_cumsum(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 2, 1, 1));
  uint64_t m = HC_DT(HX_DTYPE_FLOAT32) | HC_DT(HX_DTYPE_FLOAT64) | HC_DT(HX_DTYPE_INT32) | HC_DT(HX_DTYPE_INT64) |
               HC_DT(HX_DTYPE_UINT32) | HC_DT(HX_DTYPE_UINT64);
  if (n->opset >= 14) m |= HC_DT(HX_DTYPE_FLOAT16) | HC_DT(HX_DTYPE_BFLOAT16);
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, m));
  const hc_value* x = n->inputs[0];
  if (x->rank < 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "x must have rank >= 1, got a scalar");
  int64_t axis;
  HX_RETURN_IF_ERROR(cumsum_axis(n, &axis));
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  return HX_OK;
}

/* One step of the scan: y[idx] gets the sum before (exclusive) or after
 * adding x[idx] to the accumulator at acc. */
static void scan_step(hc_kb* kb, hx_dtype_t dt, bool exclusive, LLVMValueRef px, LLVMValueRef py, LLVMValueRef idx,
                      LLVMValueRef acc) {
  LLVMValueRef s = LLVMBuildLoad2(kb->b, hc_kb_compute_type(kb, dt), acc, "");
  LLVMValueRef next = hc_kb_add(kb, dt, s, hc_kb_load(kb, dt, px, idx));
  hc_kb_store(kb, dt, py, idx, exclusive ? s : next);
  LLVMBuildStore(kb->b, next, acc);
}

static hx_status_t lower_cumsum(hc_lower_ctx* lc, hc_node* n) {
  const hc_value *x = n->inputs[0], *y = n->outputs[0];
  if (hc_value_numel(x) == 0) return HX_OK; /* nothing to write */
  int64_t axis;
  HX_RETURN_IF_ERROR(cumsum_axis(n, &axis));
  bool exclusive = hc_attr_int(n, "exclusive", 0) != 0, reverse = hc_attr_int(n, "reverse", 0) != 0;
  int64_t outer = hc_shape_numel((int)axis, x->dims), len = x->dims[axis];
  int64_t inner = hc_shape_numel(x->rank - (int)axis - 1, x->dims + axis + 1);
  int64_t blocks = (inner + CS_BLOCK - 1) / CS_BLOCK;
  hx_dtype_t dt = x->dtype;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, inner == 1 ? outer : outer * blocks, &kb));
  LLVMTypeRef t = hc_kb_compute_type(&kb, dt);
  LLVMValueRef px = hc_kb_ptr(&kb, x), py = hc_kb_ptr(&kb, y);
  LLVMValueRef zero = hc_kb_i64(&kb, 0);
  hc_loop task, jl, il;
  LLVMValueRef tk = hc_kb_task_loop_begin(&kb, &task);
  if (inner == 1) {
    LLVMValueRef acc = hc_kb_alloca(&kb, t, "acc");
    LLVMBuildStore(kb.b, hc_kb_const(&kb, dt, 0), acc);
    LLVMValueRef base = hc_kb_imul(&kb, tk, hc_kb_i64(&kb, len));
    LLVMValueRef j = hc_loop_begin(&kb, &jl, zero, hc_kb_i64(&kb, len), "j");
    if (reverse) j = LLVMBuildSub(kb.b, hc_kb_i64(&kb, len - 1), j, "");
    scan_step(&kb, dt, exclusive, px, py, hc_kb_iadd(&kb, base, j), acc);
    hc_loop_end(&kb, &jl);
  } else {
    LLVMValueRef buf = hc_kb_alloca(&kb, LLVMArrayType2(t, CS_BLOCK), "acc");
    LLVMValueRef o = LLVMBuildUDiv(kb.b, tk, hc_kb_i64(&kb, blocks), "");
    LLVMValueRef i0 = hc_kb_imul(&kb, LLVMBuildURem(kb.b, tk, hc_kb_i64(&kb, blocks), ""), hc_kb_i64(&kb, CS_BLOCK));
    LLVMValueRef cnt = hc_kb_imin(&kb, hc_kb_i64(&kb, CS_BLOCK), LLVMBuildSub(kb.b, hc_kb_i64(&kb, inner), i0, ""));
    LLVMValueRef base = hc_kb_iadd(&kb, hc_kb_imul(&kb, o, hc_kb_i64(&kb, len * inner)), i0);
    LLVMValueRef i = hc_loop_begin(&kb, &il, zero, cnt, "i");
    LLVMBuildStore(kb.b, hc_kb_const(&kb, dt, 0), LLVMBuildGEP2(kb.b, t, buf, &i, 1, ""));
    hc_loop_end(&kb, &il);
    LLVMValueRef j = hc_loop_begin(&kb, &jl, zero, hc_kb_i64(&kb, len), "j");
    if (reverse) j = LLVMBuildSub(kb.b, hc_kb_i64(&kb, len - 1), j, "");
    LLVMValueRef row = hc_kb_iadd(&kb, base, hc_kb_imul(&kb, j, hc_kb_i64(&kb, inner)));
    i = hc_loop_begin(&kb, &il, zero, cnt, "i");
    scan_step(&kb, dt, exclusive, px, py, hc_kb_iadd(&kb, row, i), LLVMBuildGEP2(kb.b, t, buf, &i, 1, ""));
    hc_loop_end(&kb, &il);
    hc_loop_end(&kb, &jl);
  }
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, (double)hc_value_numel(x), (double)hc_value_nbytes(x) + (double)hc_value_nbytes(y));
  return HX_OK;
}

static const char* const k_cumsum_attrs[] = {"exclusive", "reverse", NULL};

const hc_op_desc hc_op_cumsum = {"CumSum", "", 11, 22, k_cumsum_attrs, 0, infer_cumsum, lower_cumsum, NULL};
