/* Logical and bitwise ops: Not, And, Or, Xor on bool (opset 1; And/Or/Xor
 * use the legacy broadcast/axis attributes before opset 7, see
 * ew_legacy.h), BitwiseAnd/Or/Xor/Not on integers (opset 18) and BitShift
 * on unsigned integers (opset 11). Binary ops broadcast numpy-style through
 * the shared element-wise generator. */
#include <string.h>

#include "compiler/ops/ew_legacy.h"
#include "compiler/ops/op.h"

static const hc_op_desc* aligned_twin(const hc_op_desc* d);

/* Inference for 1 or 2 same-typed inputs of an allowed dtype, broadcast. */
static hx_status_t infer_logic(hc_node* n, int arity, uint64_t allowed) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, arity, arity, 1, 1));
  for (int i = 0; i < arity; ++i) {
    HX_RETURN_IF_ERROR(hc_check_dtype(n, i, allowed));
    HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, i));
  }
  if (arity == 2 && n->opset < 7) return hc_ew_legacy_infer(n, HX_DTYPE_UNDEFINED, aligned_twin(n->op));
  int rank;
  int64_t dims[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(hc_broadcast_shapes(n, arity, n->inputs, &rank, dims));
  hc_set_output(n, 0, n->inputs[0]->dtype, rank, dims);
  return HX_OK;
}

static hx_status_t infer_not(hc_graph* g, hc_node* n) { return infer_logic(n, 1, HC_DT(HX_DTYPE_BOOL)); }
static hx_status_t infer_bool2(hc_graph* g, hc_node* n) { return infer_logic(n, 2, HC_DT(HX_DTYPE_BOOL)); }
static hx_status_t infer_bitwise_not(hc_graph* g, hc_node* n) { return infer_logic(n, 1, HC_DT_INTS); }
static hx_status_t infer_bitwise2(hc_graph* g, hc_node* n) { return infer_logic(n, 2, HC_DT_INTS); }

static hx_status_t infer_bitshift(hc_graph* g, hc_node* n) {
  const char* dir = hc_attr_string(n, "direction", NULL);
  if (!dir) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "required attribute 'direction' is missing");
  if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute direction='%s' must be \"LEFT\" or \"RIGHT\"", dir);
  return infer_logic(n, 2, HC_DT_UINTS);
}

/* i1 and integer values alike: the LLVM bitwise instructions are the
 * logical ones on i1. */
static LLVMValueRef s_not(hc_kb* kb, const hc_node* n, LLVMValueRef* in) { return LLVMBuildNot(kb->b, in[0], ""); }
static LLVMValueRef s_and(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return LLVMBuildAnd(kb->b, in[0], in[1], "");
}
static LLVMValueRef s_or(hc_kb* kb, const hc_node* n, LLVMValueRef* in) { return LLVMBuildOr(kb->b, in[0], in[1], ""); }
static LLVMValueRef s_xor(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  return LLVMBuildXor(kb->b, in[0], in[1], "");
}

/* Shifts by the type's width or more give 0 (numpy), where LLVM's shl/lshr
 * would be poison. */
static LLVMValueRef s_bitshift(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  LLVMTypeRef t = LLVMTypeOf(in[0]);
  LLVMValueRef width = LLVMConstInt(t, LLVMGetIntTypeWidth(t), 0);
  bool left = !strcmp(hc_attr_string(n, "direction", "LEFT"), "LEFT");
  LLVMValueRef r = left ? LLVMBuildShl(kb->b, in[0], in[1], "") : LLVMBuildLShr(kb->b, in[0], in[1], "");
  LLVMValueRef ok = LLVMBuildICmp(kb->b, LLVMIntULT, in[1], width, "");
  return LLVMBuildSelect(kb->b, ok, r, LLVMConstInt(t, 0, 0), "");
}

static const char* const k_bitshift_attrs[] = {"direction", NULL};
static const char* const k_legacy_attrs[] = {"axis", "broadcast", NULL};

const hc_op_desc hc_op_not = {"Not", "", 1, 22, NULL, HC_OP_ELEMENTWISE, infer_not, NULL, s_not};

/* And/Or/Xor have unregistered twins for nodes whose second input needs
 * re-aligning (legacy axis, see ew_legacy.h). */
#define LEGACY_OP(sym, name, scalar)                                                                          \
  const hc_op_desc sym = {name, "", 1, 22, k_legacy_attrs, HC_OP_ELEMENTWISE, infer_bool2, NULL, scalar}; \
  static const hc_op_desc sym##_aligned = {name, "", 1, 22, k_legacy_attrs, 0, infer_bool2, hc_ew_lower_legacy, scalar}

LEGACY_OP(hc_op_and, "And", s_and);
LEGACY_OP(hc_op_or, "Or", s_or);
LEGACY_OP(hc_op_xor, "Xor", s_xor);

static const hc_op_desc* aligned_twin(const hc_op_desc* d) {
  if (d == &hc_op_and || d == &hc_op_and_aligned) return &hc_op_and_aligned;
  if (d == &hc_op_or || d == &hc_op_or_aligned) return &hc_op_or_aligned;
  return &hc_op_xor_aligned;
}

const hc_op_desc hc_op_bitwise_and = {"BitwiseAnd", "", 18, 22, NULL, HC_OP_ELEMENTWISE, infer_bitwise2, NULL, s_and};
const hc_op_desc hc_op_bitwise_or = {"BitwiseOr", "", 18, 22, NULL, HC_OP_ELEMENTWISE, infer_bitwise2, NULL, s_or};
const hc_op_desc hc_op_bitwise_xor = {"BitwiseXor", "", 18, 22, NULL, HC_OP_ELEMENTWISE, infer_bitwise2, NULL, s_xor};
const hc_op_desc hc_op_bitwise_not = {"BitwiseNot", "", 18, 22, NULL, HC_OP_ELEMENTWISE, infer_bitwise_not, NULL,
                                      s_not};
const hc_op_desc hc_op_bitshift = {"BitShift", "", 11, 22, k_bitshift_attrs, HC_OP_ELEMENTWISE, infer_bitshift, NULL,
                                   s_bitshift};
