/* Scheduling: the final kernel order. Rejects cyclic graphs (Tarjan SCC,
 * naming a node of each cycle) and orders nodes topologically, keeping the
 * model's order among independent nodes. */
#include "passes/pass.h"

static hx_status_t run_schedule(hc_pass_ctx* ctx, hc_graph* g) {
  HX_RETURN_IF_ERROR(hc_graph_check_acyclic(g));
  return hc_graph_sort(g);
}

const hc_pass hc_pass_schedule = {"schedule", "order kernels topologically; reject cycles", run_schedule};
