/* Copy (domain ai.harness): a byte copy into a buffer of its own. The
 * compiler inserts it where a graph output would otherwise share storage
 * with an input, a weight, a view or another output. */
#include "compiler/ops/op.h"

/* Bytes per task: big copies spread over threads. */
#define HC_COPY_BLOCK (1 << 20)

static hx_status_t infer_copy(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  const hc_value* x = n->inputs[0];
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  return HX_OK;
}

static hx_status_t lower_copy(hc_lower_ctx* lc, hc_node* n) {
  int64_t bytes = (int64_t)hc_value_nbytes(n->inputs[0]);
  int64_t tasks = (bytes + HC_COPY_BLOCK - 1) / HC_COPY_BLOCK;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, tasks, &kb));
  LLVMValueRef src = hc_kb_ptr(&kb, n->inputs[0]);
  LLVMValueRef dst = hc_kb_ptr(&kb, n->outputs[0]);
  LLVMValueRef lo = hc_kb_imul(&kb, kb.begin, hc_kb_i64(&kb, HC_COPY_BLOCK));
  LLVMValueRef hi = hc_kb_imin(&kb, hc_kb_imul(&kb, kb.end, hc_kb_i64(&kb, HC_COPY_BLOCK)), hc_kb_i64(&kb, bytes));
  hc_if guard;
  hc_if_begin(&kb, &guard, LLVMBuildICmp(kb.b, LLVMIntSLT, lo, hi, ""));
  LLVMValueRef d = LLVMBuildGEP2(kb.b, kb.t_i8, dst, &lo, 1, "");
  LLVMValueRef s = LLVMBuildGEP2(kb.b, kb.t_i8, src, &lo, 1, "");
  hc_kb_memcpy(&kb, d, s, LLVMBuildSub(kb.b, hi, lo, ""));
  hc_if_end(&kb, &guard);
  hc_kb_end(&kb, 0, 2.0 * (double)bytes);
  return HX_OK;
}

const hc_op_desc hc_op_copy = {"Copy", "ai.harness", 1, 1, NULL, HC_OP_NO_FOLD, infer_copy, lower_copy, NULL};
