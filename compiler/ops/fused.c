/* FusedElementwise (domain ai.harness): a chain of element-wise ops that
 * passes/fusion.c merged into one kernel. The node's inputs are every
 * operand the chain reads from outside; hc_node.fused lists the ops in order
 * (see ir/graph.h). The kernel is the shared broadcasting element-wise loop
 * (compiler/codegen/elementwise.c) whose per-element function evaluates the
 * whole chain with each op's own scalar function, so intermediate values
 * live in registers and never touch memory.
 *
 * The op is created only by the fusion pass: it is not in the op registry
 * and no model can name it. Being the shared element-wise loop, it may
 * write its output over an operand of the same size (HC_OP_INPLACE_OK). */
#include "compiler/codegen/elementwise.h"
#include "compiler/codegen/epilogue.h"
#include "compiler/ops/op.h"

static hx_status_t infer_fused(hc_graph* g, hc_node* n) {
  if (!n->num_fused) return hc_node_error(n, HX_STATUS_INTERNAL, "FusedElementwise without fused ops");
  return HX_OK; /* outputs keep the shapes inferred before fusion */
}

/* Per element: the chain on the loaded operands. */
static LLVMValueRef chain_of_node(hc_kb* kb, void* ctx, LLVMValueRef* operands) {
  return hc_fused_eval(kb, ctx, NULL, operands);
}

static hx_status_t lower_fused(hc_lower_ctx* lc, hc_node* n) {
  hc_elementwise_spec spec = {
      .node = n,
      .num_operands = n->num_inputs,
      .operands = (const hc_value* const*)n->inputs,
      .out = n->outputs[0],
      .fn = chain_of_node,
      .ctx = n,
      .flops_per_element = (double)n->num_fused,
  };
  return hc_emit_elementwise(lc, &spec);
}

const hc_op_desc hc_op_fused_elementwise = {
    "FusedElementwise", "ai.harness", 1, 1, NULL, HC_OP_NO_FOLD | HC_OP_INPLACE_OK, infer_fused, lower_fused, NULL, NULL};
