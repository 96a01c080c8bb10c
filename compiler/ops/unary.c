/* Element-wise math on one input: Abs, Neg, Erf, Exp, Log, Sqrt, Tanh,
 * Reciprocal, Ceil, Floor, Round, Sign, IsNaN, IsInf. Shapes pass through;
 * IsNaN/IsInf return bool, the others the input's dtype. Float32 compute
 * values use the vectorisable routines of compiler/codegen/fast_math.h where libm would
 * otherwise be called per element. */
#include <math.h>

#include "compiler/codegen/fast_math.h"
#include "compiler/ops/op.h"

/* Shared inference: one input of an allowed dtype, output of `out` dtype
 * (HX_DTYPE_UNDEFINED: the input's). */
static hx_status_t infer_unary(hc_node* n, uint64_t allowed, hx_dtype_t out) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, allowed));
  const hc_value* x = n->inputs[0];
  hc_set_output(n, 0, out == HX_DTYPE_UNDEFINED ? x->dtype : out, x->rank, x->dims);
  return HX_OK;
}

static hx_status_t infer_float(hc_graph* g, hc_node* n) { return infer_unary(n, HC_DT_FLOATS, HX_DTYPE_UNDEFINED); }
static hx_status_t infer_numeric(hc_graph* g, hc_node* n) { return infer_unary(n, HC_DT_NUMERIC, HX_DTYPE_UNDEFINED); }
static hx_status_t infer_signed(hc_graph* g, hc_node* n) {
  return infer_unary(n, HC_DT_FLOATS | HC_DT_SINTS, HX_DTYPE_UNDEFINED);
}
static hx_status_t infer_float_to_bool(hc_graph* g, hc_node* n) { return infer_unary(n, HC_DT_FLOATS, HX_DTYPE_BOOL); }

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

extern const hc_op_desc hc_op_matmul, hc_op_gemm, hc_op_conv;

/* Erf-13 accepts integers: erf in float64, truncated back (0 or +-1), as
 * the reference's astype does. */
static LLVMValueRef s_erf(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  /* In a GEMM's or a convolution's epilogue (GELU after a MatMul, or after
   * MaxViT's 1x1 expansions) the cheaper erf: there it runs once per output
   * element of a compute-bound kernel. */
  if (dt == HX_DTYPE_FLOAT32 && kb->node && kb->node != n &&
      (kb->node->op == &hc_op_matmul || kb->node->op == &hc_op_gemm || kb->node->op == &hc_op_conv))
    return hc_ew_erf_fast(kb, dt, in[0]);
  if (hc_dtype_is_float(dt)) return hc_ew_erf(kb, dt, in[0]);
  LLVMValueRef d = hc_kb_convert(kb, in[0], dt, HX_DTYPE_FLOAT64);
  return hc_kb_convert(kb, hc_ew_erf(kb, HX_DTYPE_FLOAT64, d), HX_DTYPE_FLOAT64, dt);
}
static LLVMValueRef s_exp(hc_kb* kb, const hc_node* n, LLVMValueRef* in) { return hc_ew_exp(kb, dt0(n), in[0]); }
static LLVMValueRef s_log(hc_kb* kb, const hc_node* n, LLVMValueRef* in) { return hc_ew_log(kb, dt0(n), in[0]); }
static LLVMValueRef s_sqrt(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return hc_kb_math(kb, dt0(n), "sqrt", in, 1);
}
static LLVMValueRef s_tanh(hc_kb* kb, const hc_node* n, LLVMValueRef* in) { return hc_ew_tanh(kb, dt0(n), in[0]); }
static LLVMValueRef s_reciprocal(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return LLVMBuildFDiv(kb->b, hc_kb_const(kb, dt0(n), 1.0), in[0], "");
}
static LLVMValueRef s_ceil(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return hc_kb_math(kb, dt0(n), "ceil", in, 1);
}
static LLVMValueRef s_floor(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return hc_kb_math(kb, dt0(n), "floor", in, 1);
}
/* Round: halves to even, as numpy.round. */
static LLVMValueRef s_round(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return hc_kb_math(kb, dt0(n), "roundeven", in, 1);
}

/* Sign: -1, 0 or 1; float zeros and NaN pass through (numpy.sign). */
static LLVMValueRef s_sign(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  LLVMValueRef x = in[0], zero = hc_kb_const(kb, dt, 0), one = hc_kb_const(kb, dt, 1);
  if (!hc_dtype_is_float(dt) && !hc_dtype_is_signed(dt))
    return hc_kb_select(kb, hc_kb_cmp(kb, dt, "ne", x, zero), one, zero);
  LLVMValueRef rest = hc_kb_select(kb, hc_kb_cmp(kb, dt, "lt", x, zero), hc_kb_const(kb, dt, -1),
                                   hc_dtype_is_float(dt) ? x : zero);
  return hc_kb_select(kb, hc_kb_cmp(kb, dt, "gt", x, zero), one, rest);
}

static LLVMValueRef s_isnan(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return LLVMBuildFCmp(kb->b, LLVMRealUNO, in[0], in[0], "");
}

/* IsInf: +inf and/or -inf as detect_positive / detect_negative ask. */
static LLVMValueRef s_isinf(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  LLVMValueRef r = LLVMConstInt(kb->t_i1, 0, 0);
  if (hc_attr_int(n, "detect_positive", 1))
    r = LLVMBuildOr(kb->b, r, hc_kb_cmp(kb, dt, "eq", in[0], hc_kb_const(kb, dt, INFINITY)), "");
  if (hc_attr_int(n, "detect_negative", 1))
    r = LLVMBuildOr(kb->b, r, hc_kb_cmp(kb, dt, "eq", in[0], hc_kb_const(kb, dt, -INFINITY)), "");
  return r;
}

static const char* const k_isinf_attrs[] = {"detect_negative", "detect_positive", NULL};
/* Opsets 1-5 carry consumed_inputs, an optimisation hint without effect. */
static const char* const k_consumed_attrs[] = {"consumed_inputs", NULL};

const hc_op_desc hc_op_abs = {"Abs", "", 1, 22, k_consumed_attrs, HC_OP_ELEMENTWISE, infer_numeric, NULL, s_abs};
const hc_op_desc hc_op_erf = {"Erf", "", 9, 22, NULL, HC_OP_ELEMENTWISE, infer_numeric, NULL, s_erf};
const hc_op_desc hc_op_exp = {"Exp", "", 1, 22, k_consumed_attrs, HC_OP_ELEMENTWISE, infer_float, NULL, s_exp};
const hc_op_desc hc_op_log = {"Log", "", 1, 22, k_consumed_attrs, HC_OP_ELEMENTWISE, infer_float, NULL, s_log};
const hc_op_desc hc_op_neg = {"Neg", "", 1, 22, k_consumed_attrs, HC_OP_ELEMENTWISE, infer_signed, NULL, s_neg};
const hc_op_desc hc_op_reciprocal = {"Reciprocal", "", 1, 22, k_consumed_attrs, HC_OP_ELEMENTWISE, infer_float, NULL,
                                     s_reciprocal};
const hc_op_desc hc_op_sqrt = {"Sqrt", "", 1, 22, k_consumed_attrs, HC_OP_ELEMENTWISE, infer_float, NULL, s_sqrt};
const hc_op_desc hc_op_tanh = {"Tanh", "", 1, 22, k_consumed_attrs, HC_OP_ELEMENTWISE, infer_float, NULL, s_tanh};
const hc_op_desc hc_op_ceil = {"Ceil", "", 1, 22, k_consumed_attrs, HC_OP_ELEMENTWISE, infer_float, NULL, s_ceil};
const hc_op_desc hc_op_floor = {"Floor", "", 1, 22, k_consumed_attrs, HC_OP_ELEMENTWISE, infer_float, NULL, s_floor};
const hc_op_desc hc_op_round = {"Round", "", 11, 22, NULL, HC_OP_ELEMENTWISE, infer_float, NULL, s_round};
const hc_op_desc hc_op_sign = {"Sign", "", 9, 22, NULL, HC_OP_ELEMENTWISE, infer_numeric, NULL, s_sign};
const hc_op_desc hc_op_isnan = {"IsNaN", "", 9, 22, NULL, HC_OP_ELEMENTWISE, infer_float_to_bool, NULL, s_isnan};
const hc_op_desc hc_op_isinf = {"IsInf", "", 10, 22, k_isinf_attrs, HC_OP_ELEMENTWISE, infer_float_to_bool, NULL,
                                s_isinf};
