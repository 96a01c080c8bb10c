/* Constant folding: nodes whose inputs are all constants are evaluated at
 * compile time (through the JIT, i.e. with the node's own generated code)
 * and their outputs become weights. */
#include "compiler/backend/jit.h"
#include "compiler/ops/op.h"
#include "passes/pass.h"

/* Folding may not grow the artifact much: an output larger than this and
 * than twice its inputs (ConstantOfShape, Expand, Tile of a small tensor)
 * stays a kernel that computes it at run time. */
#define HC_FOLD_MAX_GROWTH_BYTES (1u << 20)

static bool all_inputs_const(const hc_node* n) {
  for (int i = 0; i < n->num_inputs; ++i)
    if (n->inputs[i] && n->inputs[i]->kind != HC_VALUE_CONST) return false;
  return true;
}

hx_status_t hc_try_fold_node(hc_pass_ctx* ctx, hc_graph* g, hc_node* n, bool* out_folded) {
  *out_folded = false;
  if (n->dead || (n->op->flags & HC_OP_NO_FOLD) || !all_inputs_const(n)) return HX_OK;
  /* A value-dependent shape (a Loop that may stop early...) is known only
   * after running: keep the kernel. */
  for (int j = 0; j < n->num_outputs; ++j)
    if (n->outputs[j] && n->outputs[j]->dynamic) return HX_OK;
  size_t in_bytes = 0, out_bytes = 0;
  for (int i = 0; i < n->num_inputs; ++i)
    if (n->inputs[i]) in_bytes += hc_value_nbytes(n->inputs[i]);
  for (int j = 0; j < n->num_outputs; ++j)
    if (n->outputs[j] && n->outputs[j]->kind != HC_VALUE_CONST) out_bytes += hc_value_nbytes(n->outputs[j]);
  if (out_bytes > HC_FOLD_MAX_GROWTH_BYTES && out_bytes > 2 * in_bytes) return HX_OK;

  if (n->op->flags & HC_OP_VIEW) {
    /* Same bytes, new shape: share the constant's data. */
    hc_value* out = n->outputs[0];
    out->kind = HC_VALUE_CONST;
    out->data = n->inputs[0]->data;
    out->producer = NULL;
  } else {
    HX_RETURN_IF_ERROR(hc_jit_eval_node(ctx->host, g, n));
  }
  n->dead = true;
  *out_folded = true;
  return HX_OK;
}

static hx_status_t run_constant_folding(hc_pass_ctx* ctx, hc_graph* g) {
  int folded = 0;
  for (int i = 0; i < g->num_nodes; ++i) {
    bool f;
    HX_RETURN_IF_ERROR(hc_try_fold_node(ctx, g, g->nodes[i], &f));
    folded += f;
  }
  if (ctx->verbose && ctx->log) fprintf(ctx->log, "constant-folding: folded %d nodes\n", folded);
  hc_graph_compact(g);
  return HX_OK;
}

const hc_pass hc_pass_constant_folding = {"constant-folding", "evaluate nodes with constant inputs at compile time",
                                          run_constant_folding};
