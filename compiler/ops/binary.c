/* Broadcasting element-wise ops on several inputs: arithmetic (Add, Sub,
 * Mul, Div, Pow), comparison (Equal, Less, Greater), variadic Min/Max and
 * Where. */
#include <string.h>

#include "compiler/ops/op.h"

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
static hx_status_t infer_pow(hc_graph* g, hc_node* n) {
  /* Pow-12+: base T, exponent T1 may differ. */
  return infer_broadcast(n, 2, 2, HC_DT_NUMERIC, false, HX_DTYPE_UNDEFINED);
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
static LLVMValueRef s_less(hc_kb* kb, const hc_node* n, LLVMValueRef* in) { return hc_kb_cmp(kb, dt0(n), "lt", in[0], in[1]); }
static LLVMValueRef s_greater(hc_kb* kb, const hc_node* n, LLVMValueRef* in) { return hc_kb_cmp(kb, dt0(n), "gt", in[0], in[1]); }

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

static LLVMValueRef s_where(hc_kb* kb, const hc_node* n, LLVMValueRef* in) { return hc_kb_select(kb, in[0], in[1], in[2]); }

/* Pow: float result via llvm.pow in the base's float type; integer bases go
 * through double (exact for every result an int64 can hold to 2^53) and
 * exponents of another type are converted to the base's type first. */
static LLVMValueRef s_pow(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  hx_dtype_t bt = n->inputs[0]->dtype, et = n->inputs[1]->dtype;
  if (hc_dtype_is_float(bt)) {
    LLVMValueRef e = hc_kb_convert(kb, in[1], et, bt);
    /* Exact small integer exponents (x^2, x^0.5 are the common ones) are left
     * to LLVM's pow simplifications. */
    LLVMValueRef args[2] = {in[0], e};
    return hc_kb_math(kb, bt, "pow", args, 2);
  }
  LLVMValueRef b = hc_kb_convert(kb, in[0], bt, HX_DTYPE_FLOAT64);
  LLVMValueRef e = hc_kb_convert(kb, in[1], et, HX_DTYPE_FLOAT64);
  LLVMValueRef args[2] = {b, e};
  LLVMValueRef r = hc_kb_math(kb, HX_DTYPE_FLOAT64, "pow", args, 2);
  return hc_kb_convert(kb, r, HX_DTYPE_FLOAT64, bt);
}

const hc_op_desc hc_op_add = {"Add", "", 7, 22, NULL, HC_OP_ELEMENTWISE, infer_arith, NULL, s_add};
const hc_op_desc hc_op_sub = {"Sub", "", 7, 22, NULL, HC_OP_ELEMENTWISE, infer_arith, NULL, s_sub};
const hc_op_desc hc_op_mul = {"Mul", "", 7, 22, NULL, HC_OP_ELEMENTWISE, infer_arith, NULL, s_mul};
const hc_op_desc hc_op_div = {"Div", "", 7, 22, NULL, HC_OP_ELEMENTWISE, infer_arith, NULL, s_div};
const hc_op_desc hc_op_pow = {"Pow", "", 7, 22, NULL, HC_OP_ELEMENTWISE, infer_pow, NULL, s_pow};
const hc_op_desc hc_op_equal = {"Equal", "", 7, 22, NULL, HC_OP_ELEMENTWISE, infer_compare, NULL, s_equal};
const hc_op_desc hc_op_less = {"Less", "", 7, 22, NULL, HC_OP_ELEMENTWISE, infer_compare, NULL, s_less};
const hc_op_desc hc_op_greater = {"Greater", "", 7, 22, NULL, HC_OP_ELEMENTWISE, infer_compare, NULL, s_greater};
const hc_op_desc hc_op_min = {"Min", "", 8, 22, NULL, HC_OP_ELEMENTWISE, infer_minmax, NULL, s_min};
const hc_op_desc hc_op_max = {"Max", "", 8, 22, NULL, HC_OP_ELEMENTWISE, infer_minmax, NULL, s_max};
const hc_op_desc hc_op_where = {"Where", "", 9, 22, NULL, HC_OP_ELEMENTWISE, infer_where, NULL, s_where};
