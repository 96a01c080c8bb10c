/* Element-wise activations: Clip, HardSigmoid, HardSwish, LeakyRelu, Relu,
 * Sigmoid. */
#include <float.h>
#include <math.h>

#include "compiler/ops/op.h"

static hx_dtype_t dt0(const hc_node* n) { return n->inputs[0]->dtype; }

static hx_status_t infer_act(hc_node* n, uint64_t allowed) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, allowed));
  const hc_value* x = n->inputs[0];
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  return HX_OK;
}
static hx_status_t infer_float(hc_graph* g, hc_node* n) { return infer_act(n, HC_DT_FLOATS); }
static hx_status_t infer_relu(hc_graph* g, hc_node* n) {
  /* Relu-14 accepts signed integers too. */
  return infer_act(n, n->opset >= 14 ? (HC_DT_FLOATS | HC_DT_SINTS) : HC_DT_FLOATS);
}

static LLVMValueRef s_relu(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  /* max(x, 0) that keeps NaN, as the reference does. */
  return hc_kb_select(kb, hc_kb_cmp(kb, dt, "lt", in[0], hc_kb_const(kb, dt, 0)), hc_kb_const(kb, dt, 0), in[0]);
}

static LLVMValueRef s_leaky_relu(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  LLVMValueRef alpha = hc_kb_const(kb, dt, hc_attr_float(n, "alpha", 0.01f));
  LLVMValueRef scaled = hc_kb_mul(kb, dt, in[0], alpha);
  return hc_kb_select(kb, hc_kb_cmp(kb, dt, "lt", in[0], hc_kb_const(kb, dt, 0)), scaled, in[0]);
}

static LLVMValueRef s_sigmoid(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  LLVMValueRef neg = LLVMBuildFNeg(kb->b, in[0], "");
  LLVMValueRef e = hc_kb_math(kb, dt, "exp", &neg, 1);
  return LLVMBuildFDiv(kb->b, hc_kb_const(kb, dt, 1.0), hc_kb_add(kb, dt, hc_kb_const(kb, dt, 1.0), e), "");
}

/* clamp(v, 0, 1) with NaN passing through. */
static LLVMValueRef clamp01(hc_kb* kb, hx_dtype_t dt, LLVMValueRef v) {
  return hc_kb_min(kb, dt, hc_kb_max(kb, dt, v, hc_kb_const(kb, dt, 0)), hc_kb_const(kb, dt, 1));
}

static LLVMValueRef s_hard_sigmoid(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  LLVMValueRef alpha = hc_kb_const(kb, dt, hc_attr_float(n, "alpha", 0.2f));
  LLVMValueRef beta = hc_kb_const(kb, dt, hc_attr_float(n, "beta", 0.5f));
  return clamp01(kb, dt, hc_kb_fma(kb, dt, in[0], alpha, beta));
}

static LLVMValueRef s_hard_swish(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  /* x * HardSigmoid(x) with alpha = 1/6, beta = 0.5 (ONNX definition). */
  LLVMValueRef hs = clamp01(kb, dt, hc_kb_fma(kb, dt, in[0], hc_kb_const(kb, dt, 1.0 / 6.0), hc_kb_const(kb, dt, 0.5)));
  return hc_kb_mul(kb, dt, in[0], hs);
}

/* ---- Clip: min/max are attributes before opset 11, optional inputs after. */

static hx_status_t infer_clip(hc_graph* g, hc_node* n) {
  if (n->opset < 11) return infer_act(n, HC_DT_FLOATS);
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 3, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, n->opset >= 12 ? HC_DT_NUMERIC : HC_DT_FLOATS));
  for (int i = 1; i < 3; ++i) {
    const hc_value* b = hc_input(n, i);
    if (!b) continue;
    HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, i));
    if (hc_value_numel(b) != 1 || b->rank > 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d ('%s') must be a scalar", i, b->name);
  }
  const hc_value* x = n->inputs[0];
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  return HX_OK;
}

static LLVMValueRef s_clip(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  LLVMValueRef lo = NULL, hi = NULL;
  if (n->opset < 11) {
    lo = hc_kb_const(kb, dt, hc_attr_float(n, "min", -FLT_MAX));
    hi = hc_kb_const(kb, dt, hc_attr_float(n, "max", FLT_MAX));
  } else {
    lo = n->num_inputs > 1 ? in[1] : NULL;
    hi = n->num_inputs > 2 ? in[2] : NULL;
  }
  LLVMValueRef v = in[0];
  if (lo) v = hc_kb_max(kb, dt, v, lo);
  if (hi) v = hc_kb_min(kb, dt, v, hi);
  return v;
}

static const char* const k_leaky_attrs[] = {"alpha", NULL};
static const char* const k_hs_attrs[] = {"alpha", "beta", NULL};
static const char* const k_clip_attrs[] = {"min", "max", NULL};

const hc_op_desc hc_op_clip = {"Clip", "", 6, 22, k_clip_attrs, HC_OP_ELEMENTWISE, infer_clip, NULL, s_clip};
const hc_op_desc hc_op_hard_sigmoid = {"HardSigmoid", "", 6, 22, k_hs_attrs, HC_OP_ELEMENTWISE, infer_float, NULL, s_hard_sigmoid};
const hc_op_desc hc_op_hard_swish = {"HardSwish", "", 14, 22, NULL, HC_OP_ELEMENTWISE, infer_float, NULL, s_hard_swish};
const hc_op_desc hc_op_leaky_relu = {"LeakyRelu", "", 6, 22, k_leaky_attrs, HC_OP_ELEMENTWISE, infer_float, NULL, s_leaky_relu};
const hc_op_desc hc_op_relu = {"Relu", "", 6, 22, NULL, HC_OP_ELEMENTWISE, infer_relu, NULL, s_relu};
const hc_op_desc hc_op_sigmoid = {"Sigmoid", "", 6, 22, NULL, HC_OP_ELEMENTWISE, infer_float, NULL, s_sigmoid};
