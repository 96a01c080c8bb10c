/* Canonicalisation: removes no-op nodes so later passes see one form.
 * Identity and inference-mode Dropout forward their input; graph outputs
 * keep their names (hc_graph.output_names) and finalize-outputs gives them a
 * buffer of their own where needed. */
#include <string.h>

#include "compiler/ops/op.h"
#include "passes/pass.h"

static bool is_forwarding(const hc_node* n) {
  return !strcmp(n->domain, "") && (!strcmp(n->op_type, "Identity") || !strcmp(n->op_type, "Dropout"));
}

static hx_status_t run_canonicalize(hc_pass_ctx* ctx, hc_graph* g) {
  int removed = 0;
  for (int i = 0; i < g->num_nodes; ++i) {
    hc_node* n = g->nodes[i];
    if (n->dead || !is_forwarding(n) || !n->outputs[0] || !n->inputs[0]) continue;
    if (n->outputs[0]->kind == HC_VALUE_CONST) continue; /* folded already */
    hc_graph_replace_uses(g, n->outputs[0], n->inputs[0]);
    n->dead = true;
    ++removed;
  }
  if (ctx->verbose && ctx->log) fprintf(ctx->log, "canonicalize: removed %d no-op nodes\n", removed);
  hc_graph_compact(g);
  return HX_OK;
}

const hc_pass hc_pass_canonicalize = {"canonicalize", "remove Identity and inference-mode Dropout", run_canonicalize};
