/* Cast: element type conversion with ONNX semantics (see hc_kb_convert). */
#include "compiler/ops/op.h"

static hx_status_t infer_cast(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  const hc_attr* to = hc_node_attr(n, "to");
  if (!to || to->type != HC_ATTR_INT)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "required attribute 'to' is missing");
  hx_dtype_t dt = (hx_dtype_t)to->i;
  if (!(HC_DT_ALL & HC_DT(dt)) || to->i < 0 || to->i > 63)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED, "unsupported attribute to=%lld (%s)", (long long)to->i,
                         hx_dtype_name(dt));
  const hc_value* x = n->inputs[0];
  hc_set_output(n, 0, dt, x->rank, x->dims);
  return HX_OK;
}

static LLVMValueRef s_cast(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return hc_kb_convert(kb, in[0], n->inputs[0]->dtype, n->outputs[0]->dtype);
}

/* 'saturate' (opset 19) only affects float8 targets, which are rejected above. */
static const char* const k_cast_attrs[] = {"to", "saturate", NULL};

const hc_op_desc hc_op_cast = {"Cast", "", 6, 22, k_cast_attrs, HC_OP_ELEMENTWISE, infer_cast, NULL, s_cast};
