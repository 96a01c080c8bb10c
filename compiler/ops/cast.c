/* Cast and CastLike: element type conversion with ONNX semantics (see
 * hc_kb_convert), correctly rounded for every pair of numeric types.
 *
 * float16 and bfloat16 are float32 in registers, so a conversion from a
 * wider source (float64, 32/64-bit integers) to them would round twice,
 * through float32 and then to the narrow type. Those go through float32
 * rounded to odd instead: a float32 that is inexact gets its last bit set,
 * which keeps the final round-to-nearest-even correct (float32 has more
 * than two extra bits over float16's 11 and bfloat16's 8). */
#include "compiler/codegen/elementwise.h"
#include "compiler/ops/op.h"

/* Decrements the magnitude of an inexact result that rounded away from zero
 * and sets the last bit: round-to-odd from a round-to-nearest value `t`
 * (float bits `bits`). */
static LLVMValueRef make_odd(hc_kb* kb, LLVMValueRef bits, LLVMValueRef inexact, LLVMValueRef away) {
  LLVMTypeRef it = LLVMTypeOf(bits);
  LLVMValueRef dec = LLVMBuildSub(kb->b, bits, LLVMConstInt(it, 1, 0), "");
  bits = LLVMBuildSelect(kb->b, away, dec, bits, "");
  LLVMValueRef odd = LLVMBuildOr(kb->b, bits, LLVMConstInt(it, 1, 0), "");
  return LLVMBuildSelect(kb->b, inexact, odd, bits, "");
}

/* float64 -> float32 rounded to odd. NaN, infinities and exact values pass
 * unchanged; overflow gives FLT_MAX (odd), which the store rounds to inf. */
static LLVMValueRef f64_to_f32_odd(hc_kb* kb, LLVMValueRef v) {
  LLVMBuilderRef b = kb->b;
  LLVMValueRef t = LLVMBuildFPTrunc(b, v, kb->t_f32, "");
  LLVMValueRef back = LLVMBuildFPExt(b, t, kb->t_f64, "");
  LLVMValueRef inexact = LLVMBuildFCmp(b, LLVMRealONE, back, v, "");
  LLVMValueRef away = LLVMBuildFCmp(b, LLVMRealOGT, hc_kb_math(kb, HX_DTYPE_FLOAT64, "fabs", &back, 1),
                                    hc_kb_math(kb, HX_DTYPE_FLOAT64, "fabs", &v, 1), "");
  LLVMValueRef bits = make_odd(kb, LLVMBuildBitCast(b, t, kb->t_i32, ""), inexact, away);
  return LLVMBuildBitCast(b, bits, kb->t_f32, "");
}

/* 64-bit integer -> float64 rounded to odd (exactness checked by converting
 * back with saturation). */
static LLVMValueRef i64_to_f64_odd(hc_kb* kb, LLVMValueRef v, hx_dtype_t from) {
  LLVMBuilderRef b = kb->b;
  bool sgn = hc_dtype_is_signed(from);
  LLVMValueRef t = hc_kb_convert(kb, v, from, HX_DTYPE_FLOAT64);
  LLVMValueRef back = hc_kb_convert(kb, t, HX_DTYPE_FLOAT64, from);
  LLVMValueRef inexact = LLVMBuildICmp(b, LLVMIntNE, back, v, "");
  LLVMValueRef away;
  if (sgn) {
    LLVMValueRef pos = LLVMBuildICmp(b, LLVMIntSGT, v, hc_kb_i64(kb, 0), "");
    LLVMValueRef above = LLVMBuildICmp(b, LLVMIntSGT, back, v, ""), below = LLVMBuildICmp(b, LLVMIntSLT, back, v, "");
    away = LLVMBuildSelect(b, pos, above, below, "");
  } else {
    away = LLVMBuildICmp(b, LLVMIntUGT, back, v, "");
  }
  LLVMValueRef bits = make_odd(kb, LLVMBuildBitCast(b, t, kb->t_i64, ""), inexact, away);
  return LLVMBuildBitCast(b, bits, kb->t_f64, "");
}

static bool is_half(hx_dtype_t dt) { return dt == HX_DTYPE_FLOAT16 || dt == HX_DTYPE_BFLOAT16; }

/* The conversion itself, from and to compute types. A float16/bfloat16
 * result is rounded here, not left to the store: when fusion keeps the value
 * in a register for the next op (Cast to float16 and back, say), that op
 * must see the rounded value. */
static LLVMValueRef cast_value(hc_kb* kb, LLVMValueRef v, hx_dtype_t from, hx_dtype_t to) {
  if (!is_half(to) || from == to) return hc_kb_convert(kb, v, from, to);
  if (from == HX_DTYPE_FLOAT64)
    v = f64_to_f32_odd(kb, v);
  else if (from == HX_DTYPE_INT32 || from == HX_DTYPE_UINT32)
    v = f64_to_f32_odd(kb, hc_kb_convert(kb, v, from, HX_DTYPE_FLOAT64));
  else if (from == HX_DTYPE_INT64 || from == HX_DTYPE_UINT64)
    v = f64_to_f32_odd(kb, i64_to_f64_odd(kb, v, from));
  else
    v = hc_kb_convert(kb, v, from, HX_DTYPE_FLOAT32);
  if (to == HX_DTYPE_BFLOAT16) return hc_kb_bf16_to_f32(kb, hc_kb_f32_to_bf16(kb, v));
  return LLVMBuildFPExt(kb->b, LLVMBuildFPTrunc(kb->b, v, kb->t_f16, ""), kb->t_f32, "");
}

/* Dtypes Harness converts between; strings, float8 and 4-bit types are not
 * supported. */
static hx_status_t check_target(const hc_node* n, hx_dtype_t dt, const char* what) {
  if ((int)dt < 0 || (int)dt > 63 || !(HC_DT_ALL & HC_DT(dt)))
    return hc_node_error(n, HX_STATUS_UNSUPPORTED, "unsupported %s element type %d (%s)", what, (int)dt,
                         hx_dtype_name(dt));
  return HX_OK;
}

/* 'saturate' (opset 19) only affects float8 targets, which are rejected. */
static hx_status_t check_saturate(const hc_node* n) {
  const hc_attr* s = hc_node_attr(n, "saturate");
  if (s && s->type != HC_ATTR_INT)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute 'saturate' must be an integer");
  return HX_OK;
}

static hx_status_t infer_cast(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  HX_RETURN_IF_ERROR(check_saturate(n));
  const hc_attr* to = hc_node_attr(n, "to");
  if (!to || to->type != HC_ATTR_INT)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "required attribute 'to' is missing");
  if (to->i < 0 || to->i > 63 || !(HC_DT_ALL & HC_DT(to->i)))
    return hc_node_error(n, HX_STATUS_UNSUPPORTED, "unsupported attribute to=%lld (%s)", (long long)to->i,
                         hx_dtype_name((hx_dtype_t)to->i));
  const hc_value* x = n->inputs[0];
  hc_set_output(n, 0, (hx_dtype_t)to->i, x->rank, x->dims);
  return HX_OK;
}

static LLVMValueRef s_cast(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return cast_value(kb, in[0], n->inputs[0]->dtype, n->outputs[0]->dtype);
}

/* ---- CastLike (opset 15): the target type is input 1's; its values and
 * shape are irrelevant, so its own kernel loads input 0 only. */

static hx_status_t infer_castlike(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 2, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  HX_RETURN_IF_ERROR(check_saturate(n));
  HX_RETURN_IF_ERROR(check_target(n, n->inputs[1]->dtype, "target"));
  const hc_value* x = n->inputs[0];
  hc_set_output(n, 0, n->inputs[1]->dtype, x->rank, x->dims);
  return HX_OK;
}

static LLVMValueRef castlike_fn(hc_kb* kb, void* ctx, LLVMValueRef* operands) {
  const hc_node* n = ctx;
  return cast_value(kb, operands[0], n->inputs[0]->dtype, n->outputs[0]->dtype);
}

static hx_status_t lower_castlike(hc_lower_ctx* lc, hc_node* n) { return hc_emit_map(lc, n, castlike_fn, n, 1.0); }

static const char* const k_cast_attrs[] = {"to", "saturate", NULL};
static const char* const k_castlike_attrs[] = {"saturate", NULL};

const hc_op_desc hc_op_cast = {"Cast", "", 6, 22, k_cast_attrs, HC_OP_ELEMENTWISE, infer_cast, NULL, s_cast};
const hc_op_desc hc_op_cast_like = {"CastLike", "", 15, 22, k_castlike_attrs, 0, infer_castlike, lower_castlike, NULL};
