/* Broadcasting element-wise ops on several inputs: arithmetic (Add, Sub,
 * Mul, Div, Pow, Mod), comparison (Equal, Less, Greater, LessOrEqual,
 * GreaterOrEqual), variadic Min/Max/Sum/Mean and Where. They broadcast
 * numpy-style from opset 7; before, Add/Sub/Mul/Div/Pow/Equal/Less/Greater
 * use the legacy broadcast/axis attributes (ew_legacy.h). The opset 1-5
 * attribute consumed_inputs has no effect on inference and is ignored. */
#include <string.h>

#include "compiler/ops/ew_legacy.h"
#include "compiler/ops/op.h"

extern const hc_op_desc hc_op_add, hc_op_sub, hc_op_mul, hc_op_div, hc_op_pow, hc_op_equal, hc_op_less, hc_op_greater;
static const hc_op_desc* aligned_twin(const hc_op_desc* d);

/* Whether the node uses the legacy broadcasting form (opset < 7 of an op
 * that has the 'broadcast' attribute). */
static bool is_legacy(const hc_node* n) {
  if (n->opset >= 7) return false;
  for (int k = 0; n->op->attrs && n->op->attrs[k]; ++k)
    if (!strcmp(n->op->attrs[k], "broadcast")) return true;
  return false;
}

/* Inference shared by all: broadcast every present input; output dtype is
 * input 0's, or bool for comparisons. */
static hx_status_t infer_broadcast(hc_node* n, int min_in, int max_in, uint64_t allowed, bool same_types,
                                   hx_dtype_t out_dtype) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, min_in, max_in, 1, 1));
  for (int i = 0; i < n->num_inputs; ++i) {
    if (!n->inputs[i])
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d is missing", i);
    HX_RETURN_IF_ERROR(hc_check_dtype(n, i, allowed));
    if (same_types) HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, i));
  }
  if (is_legacy(n)) return hc_ew_legacy_infer(n, out_dtype, aligned_twin(n->op));
  int rank;
  int64_t dims[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(hc_broadcast_shapes(n, n->num_inputs, n->inputs, &rank, dims));
  hc_set_output(n, 0, out_dtype == HX_DTYPE_UNDEFINED ? n->inputs[0]->dtype : out_dtype, rank, dims);
  return HX_OK;
}

static hx_status_t infer_arith(hc_graph* g, hc_node* n) {
  return infer_broadcast(n, 2, 2, HC_DT_NUMERIC, true, HX_DTYPE_UNDEFINED);
}
static hx_status_t infer_compare(hc_graph* g, hc_node* n) {
  uint64_t allowed = HC_DT_NUMERIC;
  if (!strcmp(n->op_type, "Equal")) allowed |= HC_DT(HX_DTYPE_BOOL);
  return infer_broadcast(n, 2, 2, allowed, true, HX_DTYPE_BOOL);
}
static hx_status_t infer_minmax(hc_graph* g, hc_node* n) {
  return infer_broadcast(n, 1, 64, HC_DT_NUMERIC, true, HX_DTYPE_UNDEFINED);
}
static hx_status_t infer_sum_mean(hc_graph* g, hc_node* n) {
  return infer_broadcast(n, 1, 64, HC_DT_FLOATS, true, HX_DTYPE_UNDEFINED);
}
static hx_status_t infer_pow(hc_graph* g, hc_node* n) {
  /* Pow-12+: base T (floats, int32, int64), exponent T1 of any numeric type. */
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_FLOATS | HC_DT(HX_DTYPE_INT32) | HC_DT(HX_DTYPE_INT64)));
  return infer_broadcast(n, 2, 2, HC_DT_NUMERIC, false, HX_DTYPE_UNDEFINED);
}
static hx_status_t infer_mod(hc_graph* g, hc_node* n) {
  int64_t fmod = hc_attr_int(n, "fmod", 0);
  if (fmod != 0 && fmod != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute fmod=%lld must be 0 or 1", (long long)fmod);
  return infer_broadcast(n, 2, 2, HC_DT_NUMERIC, true, HX_DTYPE_UNDEFINED);
}

static hx_status_t infer_where(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 3, 3, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT(HX_DTYPE_BOOL)));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, HC_DT_ALL));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 1, 2));
  int rank;
  int64_t dims[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(hc_broadcast_shapes(n, 3, n->inputs, &rank, dims));
  hc_set_output(n, 0, n->inputs[1]->dtype, rank, dims);
  return HX_OK;
}

static hx_dtype_t dt0(const hc_node* n) { return n->inputs[0]->dtype; }

static LLVMValueRef s_add(hc_kb* kb, const hc_node* n, LLVMValueRef* in) { return hc_kb_add(kb, dt0(n), in[0], in[1]); }
static LLVMValueRef s_sub(hc_kb* kb, const hc_node* n, LLVMValueRef* in) { return hc_kb_sub(kb, dt0(n), in[0], in[1]); }
static LLVMValueRef s_mul(hc_kb* kb, const hc_node* n, LLVMValueRef* in) { return hc_kb_mul(kb, dt0(n), in[0], in[1]); }
static LLVMValueRef s_div(hc_kb* kb, const hc_node* n, LLVMValueRef* in) { return hc_kb_div(kb, dt0(n), in[0], in[1]); }
static LLVMValueRef s_equal(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  if (dt0(n) == HX_DTYPE_BOOL) return LLVMBuildICmp(kb->b, LLVMIntEQ, in[0], in[1], "");
  return hc_kb_cmp(kb, dt0(n), "eq", in[0], in[1]);
}
static LLVMValueRef s_less(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return hc_kb_cmp(kb, dt0(n), "lt", in[0], in[1]);
}
static LLVMValueRef s_greater(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return hc_kb_cmp(kb, dt0(n), "gt", in[0], in[1]);
}
static LLVMValueRef s_less_equal(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return hc_kb_cmp(kb, dt0(n), "le", in[0], in[1]);
}
static LLVMValueRef s_greater_equal(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return hc_kb_cmp(kb, dt0(n), "ge", in[0], in[1]);
}

static LLVMValueRef s_min(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  LLVMValueRef r = in[0];
  for (int i = 1; i < n->num_inputs; ++i) r = hc_kb_min(kb, dt0(n), r, in[i]);
  return r;
}
static LLVMValueRef s_max(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  LLVMValueRef r = in[0];
  for (int i = 1; i < n->num_inputs; ++i) r = hc_kb_max(kb, dt0(n), r, in[i]);
  return r;
}
static LLVMValueRef s_sum(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  LLVMValueRef r = in[0];
  for (int i = 1; i < n->num_inputs; ++i) r = hc_kb_add(kb, dt0(n), r, in[i]);
  return r;
}
static LLVMValueRef s_mean(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return hc_kb_div(kb, dt0(n), s_sum(kb, n, in), hc_kb_const(kb, dt0(n), n->num_inputs));
}

static LLVMValueRef s_where(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return hc_kb_select(kb, in[0], in[1], in[2]);
}

/* Mod. fmod=1: C fmod/remainder, sign of the dividend (floats and integers).
 * fmod=0: Python's %, sign of the divisor (integers; floats too, as the
 * reference's numpy.mod, though the spec asks floats to use fmod=1).
 * Integer x % 0 is 0 (numpy) and x % -1 is 0 without the INT_MIN trap. */
static LLVMValueRef s_mod(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t dt = dt0(n);
  LLVMBuilderRef b = kb->b;
  bool fmod = hc_attr_int(n, "fmod", 0) != 0;
  LLVMValueRef x = in[0], y = in[1], zero = hc_kb_const(kb, dt, 0);
  LLVMValueRef r;
  if (hc_dtype_is_float(dt)) {
    r = LLVMBuildFRem(b, x, y, "");
    if (fmod) return r;
    LLVMValueRef nz = LLVMBuildFCmp(b, LLVMRealONE, r, zero, "");
    LLVMValueRef differ = LLVMBuildXor(b, LLVMBuildFCmp(b, LLVMRealOLT, r, zero, ""),
                                       LLVMBuildFCmp(b, LLVMRealOLT, y, zero, ""), "");
    return LLVMBuildSelect(b, LLVMBuildAnd(b, nz, differ, ""), LLVMBuildFAdd(b, r, y, ""), r, "");
  }
  bool sgn = hc_dtype_is_signed(dt);
  LLVMValueRef bad = LLVMBuildICmp(b, LLVMIntEQ, y, zero, "");
  if (sgn) bad = LLVMBuildOr(b, bad, LLVMBuildICmp(b, LLVMIntEQ, y, hc_kb_const(kb, dt, -1), ""), "");
  LLVMValueRef safe = LLVMBuildSelect(b, bad, hc_kb_const(kb, dt, 1), y, "");
  r = sgn ? LLVMBuildSRem(b, x, safe, "") : LLVMBuildURem(b, x, safe, "");
  if (fmod || !sgn) return r;
  LLVMValueRef nz = LLVMBuildICmp(b, LLVMIntNE, r, zero, "");
  LLVMValueRef differ = LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildXor(b, r, y, ""), zero, "");
  return LLVMBuildSelect(b, LLVMBuildAnd(b, nz, differ, ""), LLVMBuildAdd(b, r, y, ""), r, "");
}

/* Integer base to an integer power, exactly with wrap-around (numpy): square
 * and multiply over the exponent's significant bits, in a small loop inside
 * the element loop. Negative exponents give the truncated real result: 1 for
 * base 1, +-1 for base -1, 0 otherwise. */
static LLVMValueRef int_pow(hc_kb* kb, hx_dtype_t bt, LLVMValueRef base, hx_dtype_t et, LLVMValueRef exp_in) {
  LLVMBuilderRef b = kb->b;
  LLVMTypeRef t = LLVMTypeOf(base);
  LLVMValueRef e = hc_kb_convert(kb, exp_in, et, hc_dtype_is_signed(et) ? HX_DTYPE_INT64 : HX_DTYPE_UINT64);
  LLVMValueRef one = LLVMConstInt(t, 1, 0);
  LLVMValueRef r_slot = hc_kb_alloca(kb, t, "pow_r"), b_slot = hc_kb_alloca(kb, t, "pow_b");
  LLVMBuildStore(b, one, r_slot);
  LLVMBuildStore(b, base, b_slot);
  LLVMValueRef ctlz_args[2] = {e, LLVMConstInt(kb->t_i1, 0, 0)};
  LLVMValueRef lz = hc_kb_intrinsic(kb, "llvm.ctlz", kb->t_i64, ctlz_args, 2);
  LLVMValueRef nbits = LLVMBuildSub(b, hc_kb_i64(kb, 64), lz, "");
  LLVMValueRef neg = hc_dtype_is_signed(et) ? LLVMBuildICmp(b, LLVMIntSLT, e, hc_kb_i64(kb, 0), "")
                                            : LLVMConstInt(kb->t_i1, 0, 0);
  nbits = LLVMBuildSelect(b, neg, hc_kb_i64(kb, 0), nbits, "");
  hc_loop loop;
  LLVMValueRef i = hc_loop_begin(kb, &loop, hc_kb_i64(kb, 0), nbits, "pow_bit");
  LLVMValueRef bit = LLVMBuildTrunc(b, LLVMBuildLShr(b, e, i, ""), kb->t_i1, "");
  LLVMValueRef r = LLVMBuildLoad2(b, t, r_slot, ""), p = LLVMBuildLoad2(b, t, b_slot, "");
  LLVMBuildStore(b, LLVMBuildSelect(b, bit, LLVMBuildMul(b, r, p, ""), r, ""), r_slot);
  LLVMBuildStore(b, LLVMBuildMul(b, p, p, ""), b_slot);
  hc_loop_end(kb, &loop);
  r = LLVMBuildLoad2(b, t, r_slot, "");
  LLVMValueRef odd = LLVMBuildTrunc(b, e, kb->t_i1, "");
  LLVMValueRef minus1 = LLVMConstInt(t, (unsigned long long)-1, 1);
  LLVMValueRef neg_r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, base, one, ""), one, LLVMConstInt(t, 0, 0), "");
  if (hc_dtype_is_signed(bt)) {
    LLVMValueRef m1 = LLVMBuildSelect(b, odd, minus1, one, "");
    neg_r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, base, minus1, ""), m1, neg_r, "");
  }
  return LLVMBuildSelect(b, neg, neg_r, r, "");
}

/* The one value every element of a constant exponent holds, when that value
 * is exact in the base's float type (so substituting it changes nothing). */
static bool uniform_exponent(const hc_value* e, hx_dtype_t bt, double* out) {
  int64_t n = hc_value_numel(e);
  if (n < 1 || n > 4096 || !hc_value_const_f64(e, 0, out)) return false;
  for (int64_t i = 1; i < n; ++i) {
    double v;
    if (!hc_value_const_f64(e, i, &v) || v != *out) return false;
  }
  if (bt == HX_DTYPE_FLOAT64) return true;
  if (bt == HX_DTYPE_FLOAT32) return (double)(float)*out == *out;
  /* float16, bfloat16: halves up to 64 are exact (range first: no cast of inf or NaN) */
  return *out >= -64 && *out <= 64 && *out * 2 == (double)(int64_t)(*out * 2);
}

/* Pow: float bases via llvm.pow in the base's float type (integer
 * exponents converted, exact for the usual small ones); integer bases with
 * integer exponents exactly (int_pow); integer bases with float exponents
 * through double, truncated back. */
static LLVMValueRef s_pow(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t bt = n->inputs[0]->dtype, et = n->inputs[1]->dtype;
  if (hc_dtype_is_float(bt)) {
    /* A constant exponent becomes an LLVM constant: LLVM then turns x^2 into
     * x*x, x^0.5 into a square root (with pow's -0 and -inf results), x^-1
     * into 1/x, and x^1 into x, all correctly rounded as pow is, instead of
     * a scalar powf call per element (decomposed LayerNorm's Pow(x, 2)). */
    double ev;
    LLVMValueRef e = uniform_exponent(n->inputs[1], bt, &ev) ? hc_kb_const(kb, bt, ev) : hc_kb_convert(kb, in[1], et, bt);
    LLVMValueRef args[2] = {in[0], e};
    return hc_kb_math(kb, bt, "pow", args, 2);
  }
  if (hc_dtype_is_integer(et)) return int_pow(kb, bt, in[0], et, in[1]);
  LLVMValueRef b = hc_kb_convert(kb, in[0], bt, HX_DTYPE_FLOAT64);
  LLVMValueRef e = hc_kb_convert(kb, in[1], et, HX_DTYPE_FLOAT64);
  LLVMValueRef args[2] = {b, e};
  LLVMValueRef r = hc_kb_math(kb, HX_DTYPE_FLOAT64, "pow", args, 2);
  return hc_kb_convert(kb, r, HX_DTYPE_FLOAT64, bt);
}

static const char* const k_mod_attrs[] = {"fmod", NULL};
static const char* const k_legacy_attrs[] = {"axis", "broadcast", "consumed_inputs", NULL};
static const char* const k_consumed_attrs[] = {"consumed_inputs", NULL};

/* Each legacy-capable op has an unregistered twin for nodes whose second
 * input needs re-aligning (see ew_legacy.h). */
#define LEGACY_OP(sym, name, infer, scalar)                                                           \
  const hc_op_desc sym = {name, "", 1, 22, k_legacy_attrs, HC_OP_ELEMENTWISE, infer, NULL, scalar}; \
  static const hc_op_desc sym##_aligned = {name, "", 1, 22, k_legacy_attrs, 0, infer, hc_ew_lower_legacy, scalar}

LEGACY_OP(hc_op_add, "Add", infer_arith, s_add);
LEGACY_OP(hc_op_sub, "Sub", infer_arith, s_sub);
LEGACY_OP(hc_op_mul, "Mul", infer_arith, s_mul);
LEGACY_OP(hc_op_div, "Div", infer_arith, s_div);
LEGACY_OP(hc_op_pow, "Pow", infer_pow, s_pow);
LEGACY_OP(hc_op_equal, "Equal", infer_compare, s_equal);
LEGACY_OP(hc_op_less, "Less", infer_compare, s_less);
LEGACY_OP(hc_op_greater, "Greater", infer_compare, s_greater);

static const hc_op_desc* aligned_twin(const hc_op_desc* d) {
  static const hc_op_desc* const pairs[][2] = {
      {&hc_op_add, &hc_op_add_aligned},     {&hc_op_sub, &hc_op_sub_aligned},     {&hc_op_mul, &hc_op_mul_aligned},
      {&hc_op_div, &hc_op_div_aligned},     {&hc_op_pow, &hc_op_pow_aligned},     {&hc_op_equal, &hc_op_equal_aligned},
      {&hc_op_less, &hc_op_less_aligned},   {&hc_op_greater, &hc_op_greater_aligned}};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; ++i)
    if (pairs[i][0] == d || pairs[i][1] == d) return pairs[i][1];
  return d;
}

const hc_op_desc hc_op_mod = {"Mod", "", 10, 22, k_mod_attrs, HC_OP_ELEMENTWISE, infer_mod, NULL, s_mod};
const hc_op_desc hc_op_less_or_equal = {"LessOrEqual", "", 12, 22, NULL, HC_OP_ELEMENTWISE, infer_compare, NULL,
                                        s_less_equal};
const hc_op_desc hc_op_greater_or_equal = {"GreaterOrEqual", "", 12, 22, NULL, HC_OP_ELEMENTWISE, infer_compare, NULL,
                                           s_greater_equal};
const hc_op_desc hc_op_min = {"Min", "", 1, 22, k_consumed_attrs, HC_OP_ELEMENTWISE, infer_minmax, NULL, s_min};
const hc_op_desc hc_op_max = {"Max", "", 1, 22, k_consumed_attrs, HC_OP_ELEMENTWISE, infer_minmax, NULL, s_max};
const hc_op_desc hc_op_sum = {"Sum", "", 1, 22, k_consumed_attrs, HC_OP_ELEMENTWISE, infer_sum_mean, NULL, s_sum};
const hc_op_desc hc_op_mean = {"Mean", "", 1, 22, k_consumed_attrs, HC_OP_ELEMENTWISE, infer_sum_mean, NULL, s_mean};
const hc_op_desc hc_op_where = {"Where", "", 9, 22, NULL, HC_OP_ELEMENTWISE, infer_where, NULL, s_where};
