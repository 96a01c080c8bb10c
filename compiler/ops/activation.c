/* Element-wise activations: Relu, LeakyRelu, PRelu, Sigmoid, HardSigmoid,
 * HardSwish, Clip, Softplus, Softsign, Elu, Selu, Celu, ThresholdedRelu,
 * Gelu, Mish, Shrink. Float32 compute values (float32, float16, bfloat16)
 * use the inline routines of compiler/codegen/fast_math.h (exp, expm1, log1p, tanh, erfc), so
 * the element loops vectorise; float64 uses libm. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "compiler/ops/ew_legacy.h"
#include "compiler/codegen/fast_math.h"
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
static hx_status_t infer_numeric(hc_graph* g, hc_node* n) { return infer_act(n, HC_DT_NUMERIC); }
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

extern const hc_op_desc hc_op_conv, hc_op_matmul, hc_op_gemm;

/* In a convolution's or product's epilogue (SiLU after a Conv) the cheaper
 * sigmoid: there it runs once per output element, a quarter of
 * EfficientNet's time; the standalone op keeps the 1-ulp one. */
bool hc_sigmoid_fast_in(const hc_node* owner, const hc_node* sigmoid) {
  return dt0(sigmoid) == HX_DTYPE_FLOAT32 && owner && owner != sigmoid &&
         (owner->op == &hc_op_conv || owner->op == &hc_op_matmul || owner->op == &hc_op_gemm);
}

static LLVMValueRef s_sigmoid(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  if (hc_sigmoid_fast_in(kb->node, n)) return hc_ew_sigmoid_fast(kb, dt0(n), in[0]);
  return hc_ew_sigmoid(kb, dt0(n), in[0]);
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
  if (!hc_dtype_is_float(dt)) {
    if (lo) v = hc_kb_max(kb, dt, v, lo);
    if (hi) v = hc_kb_min(kb, dt, v, hi);
    return v;
  }
  /* Compare and select: a NaN input compares false and passes through, as
   * with llvm.maximum/minimum, but in two instructions per bound instead of
   * the NaN- and signed-zero-exact sequence those lower to on x86 (Clip is
   * the ReLU6 of MobileNet epilogues). */
  if (lo) v = hc_kb_select(kb, hc_kb_cmp(kb, dt, "lt", v, lo), lo, v);
  if (hi) v = hc_kb_select(kb, hc_kb_cmp(kb, dt, "gt", v, hi), hi, v);
  return v;
}

/* ---- exponential family ---------------------------------------------------- */

static LLVMValueRef s_softplus(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return hc_ew_softplus(kb, dt0(n), in[0]);
}

static LLVMValueRef s_softsign(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  LLVMValueRef den = hc_kb_add(kb, dt, hc_kb_const(kb, dt, 1.0), hc_kb_math(kb, dt, "fabs", in, 1));
  return hc_kb_div(kb, dt, in[0], den);
}

/* Elu: x for x >= 0, alpha * (exp(x) - 1) below (expm1 keeps small x exact). */
static LLVMValueRef s_elu(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  LLVMValueRef alpha = hc_kb_const(kb, dt, hc_attr_float(n, "alpha", 1.0f));
  LLVMValueRef neg = hc_kb_mul(kb, dt, alpha, hc_ew_expm1(kb, dt, in[0]));
  return hc_kb_select(kb, hc_kb_cmp(kb, dt, "lt", in[0], hc_kb_const(kb, dt, 0)), neg, in[0]);
}

/* Selu: gamma * x for x > 0, gamma * alpha * (exp(x) - 1) otherwise. */
static LLVMValueRef s_selu(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  double alpha = hc_attr_float(n, "alpha", 1.67326319217681884765625f);
  double gamma = hc_attr_float(n, "gamma", 1.05070102214813232421875f);
  LLVMValueRef neg = hc_kb_mul(kb, dt, hc_kb_const(kb, dt, alpha * gamma), hc_ew_expm1(kb, dt, in[0]));
  LLVMValueRef pos = hc_kb_mul(kb, dt, hc_kb_const(kb, dt, gamma), in[0]);
  return hc_kb_select(kb, hc_kb_cmp(kb, dt, "gt", in[0], hc_kb_const(kb, dt, 0)), pos, neg);
}

/* Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)). */
static LLVMValueRef s_celu(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  LLVMValueRef alpha = hc_kb_const(kb, dt, hc_attr_float(n, "alpha", 1.0f));
  LLVMValueRef zero = hc_kb_const(kb, dt, 0);
  LLVMValueRef e = hc_kb_mul(kb, dt, alpha, hc_ew_expm1(kb, dt, hc_kb_div(kb, dt, in[0], alpha)));
  return hc_kb_add(kb, dt, hc_kb_max(kb, dt, zero, in[0]), hc_kb_min(kb, dt, zero, e));
}

/* ThresholdedRelu: x above alpha, 0 otherwise; NaN passes through (the
 * reference clips, which keeps NaN). */
static LLVMValueRef s_thresholded_relu(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  LLVMValueRef alpha = hc_kb_const(kb, dt, hc_attr_float(n, "alpha", 1.0f));
  LLVMValueRef keep = LLVMBuildFCmp(kb->b, LLVMRealUGT, in[0], alpha, "");
  return hc_kb_select(kb, keep, in[0], hc_kb_const(kb, dt, 0));
}

/* Mish: x * tanh(softplus(x)) = x * n / (n + 2) with n = e^x (e^x + 2), one
 * exp and no cancellation; tanh(softplus(x)) rounds to 1 above 20. */
static LLVMValueRef s_mish(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  LLVMValueRef x = in[0];
  LLVMValueRef e = hc_ew_exp(kb, dt, x);
  LLVMValueRef num = hc_kb_mul(kb, dt, e, hc_kb_add(kb, dt, e, hc_kb_const(kb, dt, 2.0)));
  LLVMValueRef r = hc_kb_mul(kb, dt, x, hc_kb_div(kb, dt, num, hc_kb_add(kb, dt, num, hc_kb_const(kb, dt, 2.0))));
  return hc_kb_select(kb, hc_kb_cmp(kb, dt, "gt", x, hc_kb_const(kb, dt, 20.0)), x, r);
}

/* ---- Gelu (opset 20) ----------------------------------------------------------- */

static hx_status_t infer_gelu(hc_graph* g, hc_node* n) {
  const char* a = hc_attr_string(n, "approximate", "none");
  if (strcmp(a, "none") && strcmp(a, "tanh"))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute approximate='%s' must be \"none\" or \"tanh\"", a);
  return infer_act(n, HC_DT_FLOATS);
}

/* approximate="none": x * Phi(x) (hc_ew_gelu). approximate="tanh":
 * 0.5 x (1 + tanh(z)) = x * sigmoid(2z) with z = sqrt(2/pi) (x + 0.044715 x^3),
 * without the cancellation of 1 + tanh for negative x. Below x = -3 the
 * float32 rounding of z, amplified by exp, limits the relative accuracy to
 * about |2z| 2^-24 (1e-6 at x = -3.8, where the result is -1.5e-4). */
static LLVMValueRef s_gelu(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  LLVMValueRef x = in[0];
  if (!strcmp(hc_attr_string(n, "approximate", "none"), "tanh")) {
    LLVMValueRef x3 = hc_kb_mul(kb, dt, hc_kb_mul(kb, dt, x, x), hc_kb_const(kb, dt, 0.044715));
    LLVMValueRef z2 = hc_kb_mul(kb, dt, hc_kb_fma(kb, dt, x3, x, x), hc_kb_const(kb, dt, 2.0 * 0.79788456080286535588));
    return hc_kb_mul(kb, dt, x, hc_ew_sigmoid(kb, dt, z2));
  }
  return hc_ew_gelu(kb, dt, x);
}

/* ---- PRelu: slope broadcasts to X's shape (unidirectionally). Before opset 7
 * a 1-D slope of X's channel count applies per channel (dim 1), as the
 * exporters of that time produced. */

/* Dim of X where a legacy slope's dims start (-1: numpy alignment). */
static int prelu_axis(const hc_node* n) {
  const hc_value *x = n->inputs[0], *slope = n->inputs[1];
  if (n->opset >= 7 || hc_value_numel(slope) == 1 || slope->rank != 1 || x->rank < 2) return -1;
  if (x->dims[x->rank - 1] == slope->dims[0]) return -1;
  return slope->dims[0] == x->dims[1] ? 1 : -1;
}

static const hc_op_desc hc_op_prelu_aligned;

static hx_status_t infer_prelu(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 2, 1, 1));
  uint64_t allowed = HC_DT_FLOATS;
  if (n->opset >= 9)
    allowed |= HC_DT(HX_DTYPE_INT32) | HC_DT(HX_DTYPE_INT64) | HC_DT(HX_DTYPE_UINT32) | HC_DT(HX_DTYPE_UINT64);
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, allowed));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 1));
  const hc_value *x = n->inputs[0], *slope = n->inputs[1];
  bool same = prelu_axis(n) >= 0;
  if (!same) {
    int rank;
    int64_t dims[HC_MAX_RANK];
    HX_RETURN_IF_ERROR(hc_broadcast_shapes(n, 2, n->inputs, &rank, dims));
    same = rank == x->rank;
    for (int d = 0; same && d < rank; ++d) same = dims[d] == x->dims[d];
  }
  if (!same) {
    char s1[128], s2[128];
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "slope %s does not broadcast to X %s",
                         hc_shape_str(slope->rank, slope->dims, s1, sizeof s1),
                         hc_shape_str(x->rank, x->dims, s2, sizeof s2));
  }
  /* Channel slopes need the aligned lowering, which fusion must not bypass. */
  if (prelu_axis(n) >= 0) n->op = &hc_op_prelu_aligned;
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  return HX_OK;
}

static hx_status_t lower_prelu(hc_lower_ctx* lc, hc_node* n) { return hc_ew_lower_aligned(lc, n, 1, prelu_axis(n)); }

static LLVMValueRef s_prelu(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  LLVMValueRef scaled = hc_kb_mul(kb, dt, in[0], in[1]);
  return hc_kb_select(kb, hc_kb_cmp(kb, dt, "lt", in[0], hc_kb_const(kb, dt, 0)), scaled, in[0]);
}

/* ---- Shrink: x + bias below -lambd, x - bias above lambd, 0 between. Integer
 * inputs compute in float64 and truncate back, as the reference does. */

static LLVMValueRef s_shrink(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  hx_dtype_t ct = hc_dtype_is_float(dt) ? dt : HX_DTYPE_FLOAT64;
  double lambd = hc_attr_float(n, "lambd", 0.5f), bias = hc_attr_float(n, "bias", 0.0f);
  LLVMValueRef x = hc_kb_convert(kb, in[0], dt, ct);
  LLVMValueRef lo = hc_kb_add(kb, ct, x, hc_kb_const(kb, ct, bias));
  LLVMValueRef hi = hc_kb_sub(kb, ct, x, hc_kb_const(kb, ct, bias));
  LLVMValueRef r = hc_kb_select(kb, hc_kb_cmp(kb, ct, "gt", x, hc_kb_const(kb, ct, lambd)), hi, hc_kb_const(kb, ct, 0));
  r = hc_kb_select(kb, hc_kb_cmp(kb, ct, "lt", x, hc_kb_const(kb, ct, -lambd)), lo, r);
  return hc_kb_convert(kb, r, ct, dt);
}

/* Opsets 1-5 carry consumed_inputs, an optimisation hint without effect. */
static const char* const k_consumed_attrs[] = {"consumed_inputs", NULL};
static const char* const k_alpha_attrs[] = {"alpha", NULL};
static const char* const k_alpha_legacy_attrs[] = {"alpha", "consumed_inputs", NULL};
static const char* const k_hs_attrs[] = {"alpha", "beta", "consumed_inputs", NULL};
static const char* const k_clip_attrs[] = {"min", "max", "consumed_inputs", NULL};
static const char* const k_selu_attrs[] = {"alpha", "gamma", "consumed_inputs", NULL};
static const char* const k_gelu_attrs[] = {"approximate", NULL};
static const char* const k_shrink_attrs[] = {"bias", "lambd", NULL};

const hc_op_desc hc_op_clip = {"Clip", "", 1, 22, k_clip_attrs, HC_OP_ELEMENTWISE, infer_clip, NULL, s_clip};
const hc_op_desc hc_op_hard_sigmoid = {"HardSigmoid", "", 1, 22, k_hs_attrs, HC_OP_ELEMENTWISE, infer_float, NULL,
                                       s_hard_sigmoid};
const hc_op_desc hc_op_hard_swish = {"HardSwish", "", 14, 22, NULL, HC_OP_ELEMENTWISE, infer_float, NULL, s_hard_swish};
const hc_op_desc hc_op_leaky_relu = {"LeakyRelu", "", 1, 22, k_alpha_legacy_attrs, HC_OP_ELEMENTWISE, infer_float, NULL,
                                     s_leaky_relu};
const hc_op_desc hc_op_relu = {"Relu", "", 1, 22, k_consumed_attrs, HC_OP_ELEMENTWISE, infer_relu, NULL, s_relu};
const hc_op_desc hc_op_sigmoid = {"Sigmoid", "", 1, 22, k_consumed_attrs, HC_OP_ELEMENTWISE, infer_float, NULL,
                                  s_sigmoid};
const hc_op_desc hc_op_softplus = {"Softplus", "", 1, 22, NULL, HC_OP_ELEMENTWISE, infer_float, NULL, s_softplus};
const hc_op_desc hc_op_softsign = {"Softsign", "", 1, 22, NULL, HC_OP_ELEMENTWISE, infer_float, NULL, s_softsign};
const hc_op_desc hc_op_elu = {"Elu", "", 1, 22, k_alpha_legacy_attrs, HC_OP_ELEMENTWISE, infer_float, NULL, s_elu};
const hc_op_desc hc_op_selu = {"Selu", "", 1, 22, k_selu_attrs, HC_OP_ELEMENTWISE, infer_float, NULL, s_selu};
const hc_op_desc hc_op_celu = {"Celu", "", 12, 22, k_alpha_attrs, HC_OP_ELEMENTWISE, infer_float, NULL, s_celu};
const hc_op_desc hc_op_thresholded_relu = {"ThresholdedRelu", "", 10, 22, k_alpha_attrs, HC_OP_ELEMENTWISE, infer_float,
                                           NULL, s_thresholded_relu};
const hc_op_desc hc_op_gelu = {"Gelu", "", 20, 22, k_gelu_attrs, HC_OP_ELEMENTWISE, infer_gelu, NULL, s_gelu};
const hc_op_desc hc_op_mish = {"Mish", "", 18, 22, NULL, HC_OP_ELEMENTWISE, infer_float, NULL, s_mish};
const hc_op_desc hc_op_prelu = {"PRelu", "", 1, 22, k_consumed_attrs, HC_OP_ELEMENTWISE, infer_prelu, NULL, s_prelu};
/* Unregistered twin for nodes with a legacy channel slope (not fusable). */
static const hc_op_desc hc_op_prelu_aligned = {"PRelu", "", 1, 22, k_consumed_attrs, 0, infer_prelu, lower_prelu,
                                               s_prelu};
const hc_op_desc hc_op_shrink = {"Shrink", "", 9, 22, k_shrink_attrs, HC_OP_ELEMENTWISE, infer_numeric, NULL, s_shrink};
