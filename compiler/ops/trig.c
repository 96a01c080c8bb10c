/* Trigonometric and hyperbolic functions: Acos, Asin, Atan, Cos, Sin, Tan
 * (opset 7) and Acosh, Asinh, Atanh, Cosh, Sinh (opset 9). Float types
 * only (bfloat16 is in the opset-22 type lists; float16/bfloat16 compute in
 * float32). They call libm (sin/cos through the LLVM intrinsics), which is
 * correctly rounded to within an ulp; these ops are rarely hot, so accuracy
 * is preferred over an inline approximation. */
#include "compiler/ops/op.h"

static hx_status_t infer_trig(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_FLOATS));
  const hc_value* x = n->inputs[0];
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  return HX_OK;
}

/* The libm function named after the op in lower case ("Acosh" -> acosh). */
static LLVMValueRef s_trig(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  char name[16];
  size_t i = 0;
  for (; n->op_type[i] && i + 1 < sizeof name; ++i)
    name[i] = (char)(n->op_type[i] >= 'A' && n->op_type[i] <= 'Z' ? n->op_type[i] - 'A' + 'a' : n->op_type[i]);
  name[i] = 0;
  return hc_kb_math(kb, n->inputs[0]->dtype, name, in, 1);
}

#define TRIG(sym, name, since) \
  const hc_op_desc sym = {name, "", since, 22, NULL, HC_OP_ELEMENTWISE, infer_trig, NULL, s_trig}

TRIG(hc_op_acos, "Acos", 7);
TRIG(hc_op_asin, "Asin", 7);
TRIG(hc_op_atan, "Atan", 7);
TRIG(hc_op_cos, "Cos", 7);
TRIG(hc_op_sin, "Sin", 7);
TRIG(hc_op_tan, "Tan", 7);
TRIG(hc_op_acosh, "Acosh", 9);
TRIG(hc_op_asinh, "Asinh", 9);
TRIG(hc_op_atanh, "Atanh", 9);
TRIG(hc_op_cosh, "Cosh", 9);
TRIG(hc_op_sinh, "Sinh", 9);
