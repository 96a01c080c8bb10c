/* Dead-code elimination: removes nodes none of whose outputs reach a graph
 * output. Works backwards over the topological order, so one sweep is enough. */
#include <stdlib.h>

#include "passes/pass.h"

void hc_remove_dead_nodes(hc_graph* g) {
  char* live = calloc((size_t)g->num_values + 1, 1);
  if (!live) return; /* keeping dead code is safe */
  for (int i = 0; i < g->num_outputs; ++i) live[g->outputs[i]->id] = 1;
  for (int i = g->num_nodes - 1; i >= 0; --i) {
    hc_node* n = g->nodes[i];
    if (n->dead) continue;
    bool needed = false;
    for (int j = 0; j < n->num_outputs; ++j)
      if (n->outputs[j] && n->outputs[j]->producer == n && live[n->outputs[j]->id]) needed = true;
    if (!needed) {
      n->dead = true;
      continue;
    }
    for (int j = 0; j < n->num_inputs; ++j)
      if (n->inputs[j]) live[n->inputs[j]->id] = 1;
  }
  free(live);
  hc_graph_compact(g);
}

static hx_status_t run_dce(hc_pass_ctx* ctx, hc_graph* g) {
  int before = g->num_nodes;
  hc_remove_dead_nodes(g);
  if (ctx->verbose && ctx->log) fprintf(ctx->log, "dce: removed %d nodes\n", before - g->num_nodes);
  return HX_OK;
}

const hc_pass hc_pass_dce = {"dce", "remove nodes that do not contribute to a graph output", run_dce};
