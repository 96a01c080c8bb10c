/* Shape inference: each op descriptor's infer() in topological order. Nodes
 * whose inputs are constants are folded on the way, so shape-computing
 * subgraphs (Shape -> Gather -> Concat -> Reshape) resolve to constants
 * before the ops that need them are inferred. */
#include "compiler/ops/dynamic.h"
#include "compiler/ops/op.h"
#include "passes/pass.h"

static hx_status_t run_shape_inference(hc_pass_ctx* ctx, hc_graph* g) {
  for (int i = 0; i < g->num_nodes; ++i) {
    hc_node* n = g->nodes[i];
    if (n->dead) continue;
    for (int j = 0; j < n->num_inputs; ++j) {
      const hc_value* v = n->inputs[j];
      if (v && v->rank < 0)
        return hc_node_error(n, HX_STATUS_INTERNAL, "input '%s' has no inferred shape", v->name);
    }
    HX_RETURN_IF_ERROR(n->op->infer(g, n));
    /* Replaced by nodes it inserted after itself (an If with a constant
     * condition inlines its branch): they are inferred next. */
    if (n->dead) continue;
    /* Consumers of value-dependent shapes are checked here (dynamic.h). */
    HX_RETURN_IF_ERROR(hc_dyn_check_node(n));
    bool all_const = true;
    for (int j = 0; j < n->num_outputs; ++j) {
      hc_value* v = n->outputs[j];
      if (!v) continue;
      if (v->rank < 0 || v->dtype == HX_DTYPE_UNDEFINED)
        return hc_node_error(n, HX_STATUS_INTERNAL, "shape inference left output '%s' without a shape", v->name);
      for (int d = 0; d < v->rank; ++d)
        if (v->dims[d] < 0)
          return hc_node_error(n, HX_STATUS_INTERNAL, "shape inference left output '%s' with a negative dimension", v->name);
      if (v->kind != HC_VALUE_CONST) all_const = false;
    }
    if (all_const) { /* Constant, Shape...: the op made its outputs constants */
      n->dead = true;
      continue;
    }
    bool folded;
    HX_RETURN_IF_ERROR(hc_try_fold_node(ctx, g, n, &folded));
  }
  hc_graph_compact(g);
  return HX_OK;
}

const hc_pass hc_pass_shape_inference = {"shape-inference", "infer dtypes and static shapes, folding constant subgraphs",
                                         run_shape_inference};
