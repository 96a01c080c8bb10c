/* Element-wise math on one input: Abs, Erf, Exp, Log, Neg, Reciprocal,
 * Sqrt, Tanh. Shapes and dtypes pass through unchanged. */
#include "compiler/ops/op.h"

/* Shared inference: one input of an allowed dtype, output like it. */
static hx_status_t infer_same(hc_node* n, uint64_t allowed) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, allowed));
  const hc_value* x = n->inputs[0];
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  return HX_OK;
}

static hx_status_t infer_float(hc_graph* g, hc_node* n) { return infer_same(n, HC_DT_FLOATS); }
static hx_status_t infer_numeric(hc_graph* g, hc_node* n) { return infer_same(n, HC_DT_NUMERIC); }
static hx_status_t infer_signed(hc_graph* g, hc_node* n) { return infer_same(n, HC_DT_FLOATS | HC_DT_SINTS); }

static hx_dtype_t dt0(const hc_node* n) { return n->inputs[0]->dtype; }

static LLVMValueRef s_abs(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  if (hc_dtype_is_float(dt)) return hc_kb_math(kb, dt, "fabs", in, 1);
  if (!hc_dtype_is_signed(dt)) return in[0];
  LLVMValueRef neg = LLVMBuildNeg(kb->b, in[0], "");
  return hc_kb_select(kb, hc_kb_cmp(kb, dt, "lt", in[0], hc_kb_const(kb, dt, 0)), neg, in[0]);
}
static LLVMValueRef s_neg(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return hc_dtype_is_float(dt0(n)) ? LLVMBuildFNeg(kb->b, in[0], "") : LLVMBuildNeg(kb->b, in[0], "");
}
static LLVMValueRef s_erf(hc_kb* kb, const hc_node* n, LLVMValueRef* in) { return hc_kb_math(kb, dt0(n), "erf", in, 1); }
static LLVMValueRef s_exp(hc_kb* kb, const hc_node* n, LLVMValueRef* in) { return hc_kb_math(kb, dt0(n), "exp", in, 1); }
static LLVMValueRef s_log(hc_kb* kb, const hc_node* n, LLVMValueRef* in) { return hc_kb_math(kb, dt0(n), "log", in, 1); }
static LLVMValueRef s_sqrt(hc_kb* kb, const hc_node* n, LLVMValueRef* in) { return hc_kb_math(kb, dt0(n), "sqrt", in, 1); }
static LLVMValueRef s_tanh(hc_kb* kb, const hc_node* n, LLVMValueRef* in) { return hc_kb_math(kb, dt0(n), "tanh", in, 1); }
static LLVMValueRef s_reciprocal(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return LLVMBuildFDiv(kb->b, hc_kb_const(kb, dt0(n), 1.0), in[0], "");
}

const hc_op_desc hc_op_abs = {"Abs", "", 6, 22, NULL, HC_OP_ELEMENTWISE, infer_numeric, NULL, s_abs};
const hc_op_desc hc_op_erf = {"Erf", "", 9, 22, NULL, HC_OP_ELEMENTWISE, infer_float, NULL, s_erf};
const hc_op_desc hc_op_exp = {"Exp", "", 6, 22, NULL, HC_OP_ELEMENTWISE, infer_float, NULL, s_exp};
const hc_op_desc hc_op_log = {"Log", "", 6, 22, NULL, HC_OP_ELEMENTWISE, infer_float, NULL, s_log};
const hc_op_desc hc_op_neg = {"Neg", "", 6, 22, NULL, HC_OP_ELEMENTWISE, infer_signed, NULL, s_neg};
const hc_op_desc hc_op_reciprocal = {"Reciprocal", "", 6, 22, NULL, HC_OP_ELEMENTWISE, infer_float, NULL, s_reciprocal};
const hc_op_desc hc_op_sqrt = {"Sqrt", "", 6, 22, NULL, HC_OP_ELEMENTWISE, infer_float, NULL, s_sqrt};
const hc_op_desc hc_op_tanh = {"Tanh", "", 6, 22, NULL, HC_OP_ELEMENTWISE, infer_float, NULL, s_tanh};
