/* Gives every graph output a buffer of its own. Outputs are written straight
 * into the caller's buffers by the kernel that produces them; where that is
 * impossible (the output is a graph input, a weight, a view of another
 * tensor, or listed twice) a Copy kernel is inserted. */
#include <stdio.h>

#include "compiler/ops/op.h"
#include "passes/pass.h"

extern const hc_op_desc hc_op_copy;

static bool needs_copy(const hc_graph* g, int index) {
  const hc_value* v = g->outputs[index];
  if (v->kind != HC_VALUE_INTERMEDIATE || !v->producer) return true;
  if (v->producer->op->flags & HC_OP_VIEW) return true;
  for (int i = 0; i < index; ++i)
    if (g->outputs[i] == v) return true;
  return false;
}

static hx_status_t run_finalize_outputs(hc_pass_ctx* ctx, hc_graph* g) {
  for (int i = 0; i < g->num_outputs; ++i) {
    if (!needs_copy(g, i)) continue;
    hc_value* src = g->outputs[i];
    char name[512];
    snprintf(name, sizeof name, "%s:output%d", g->output_names[i], i);
    hc_value* dst;
    HX_RETURN_IF_ERROR(hc_graph_add_value(g, name, src->dtype, src->rank, src->dims, &dst));
    hc_node* n;
    HX_RETURN_IF_ERROR(hc_graph_add_node(g, name, "Copy", "ai.harness", 1, 1, &n));
    n->op = &hc_op_copy;
    n->opset = 1;
    n->inputs[0] = src;
    n->outputs[0] = dst;
    dst->producer = n;
    dst->is_output = true;
    /* A copy of a value-dependent shape shares its dims slot (dynamic.h). */
    if (src->dynamic) {
      dst->dynamic = true;
      dst->dyn_source = src->dyn_source ? src->dyn_source : src;
    }
    g->outputs[i] = dst;
  }
  /* Recompute is_output from the final list. */
  for (int i = 0; i < g->num_values; ++i) g->values[i]->is_output = false;
  for (int i = 0; i < g->num_outputs; ++i) g->outputs[i]->is_output = true;
  return HX_OK;
}

const hc_pass hc_pass_finalize_outputs = {"finalize-outputs", "give each graph output its own buffer", run_finalize_outputs};
