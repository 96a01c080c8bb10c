/* Graph verifier: catches pass bugs at the pass that caused them. */
#include "ir/verify.h"

#include <stdlib.h>
#include <string.h>

/* Checks subgraph `sub` of node `owner`: its own invariants, and that each
 * capture stands for one of the owner's implicit inputs. Subgraph shapes are
 * bound by the owning op at shape inference, so only structure is checked. */
static hx_status_t verify_subgraph(const hc_node* owner, const hc_graph* sub) {
  if (owner->num_captures < 0 || owner->num_captures > owner->num_inputs)
    return hc_node_error(owner, HX_STATUS_INTERNAL, "verifier: %d implicit inputs of %d inputs", owner->num_captures,
                         owner->num_inputs);
  for (int i = 0; i < sub->num_captures; ++i) {
    int slot = sub->capture_slots[i];
    if (slot < owner->num_inputs - owner->num_captures || slot >= owner->num_inputs)
      return hc_node_error(owner, HX_STATUS_INTERNAL,
                           "verifier: subgraph '%s' capture '%s' stands for input %d, not an implicit input", sub->name,
                           sub->captures[i]->name, slot);
  }
  return hx_status_annotate(hc_graph_verify(sub, false), "subgraph '%s' of node \"%s\"", sub->name, owner->name);
}

hx_status_t hc_graph_verify(const hc_graph* g, bool shapes_known) {
  /* defined[v] = 1 once v is available to later nodes. */
  char* defined = calloc((size_t)g->num_values + 1, 1);
  if (!defined) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  hx_status_t st = HX_OK;
  for (int i = 0; i < g->num_values; ++i) {
    const hc_value* v = g->values[i];
    if (v->id != i) {
      st = hx_status_make(HX_STATUS_INTERNAL, "verifier: value '%s' has id %d at index %d", v->name, v->id, i);
      goto done;
    }
    if (v->kind == HC_VALUE_INPUT || v->kind == HC_VALUE_CONST) defined[i] = 1;
    if (v->kind == HC_VALUE_CONST && !v->data && hc_value_nbytes(v) > 0) {
      st = hx_status_make(HX_STATUS_INTERNAL, "verifier: constant '%s' has no data", v->name);
      goto done;
    }
  }
  for (int i = 0; i < g->num_nodes; ++i) {
    const hc_node* n = g->nodes[i];
    if (n->dead) {
      st = hc_node_error(n, HX_STATUS_INTERNAL, "verifier: dead node left in the node list");
      goto done;
    }
    if (n->id != i) {
      st = hc_node_error(n, HX_STATUS_INTERNAL, "verifier: node id %d at position %d", n->id, i);
      goto done;
    }
    if (!n->op) {
      st = hc_node_error(n, HX_STATUS_INTERNAL, "verifier: node has no op descriptor");
      goto done;
    }
    for (int j = 0; j < n->num_inputs; ++j) {
      const hc_value* v = n->inputs[j];
      if (v && !defined[v->id]) {
        st = hc_node_error(n, HX_STATUS_INTERNAL, "verifier: input %d ('%s') is used before it is defined", j, v->name);
        goto done;
      }
    }
    for (int j = 0; j < n->num_outputs; ++j) {
      const hc_value* v = n->outputs[j];
      if (!v) continue;
      if (v->kind == HC_VALUE_CONST) continue; /* folded output of a node awaiting DCE */
      if (v->producer != n) {
        st = hc_node_error(n, HX_STATUS_INTERNAL, "verifier: output '%s' names another producer", v->name);
        goto done;
      }
      if (defined[v->id]) {
        st = hc_node_error(n, HX_STATUS_INTERNAL, "verifier: output '%s' is defined twice", v->name);
        goto done;
      }
      defined[v->id] = 1;
      if (shapes_known && (v->rank < 0 || v->dtype == HX_DTYPE_UNDEFINED)) {
        st = hc_node_error(n, HX_STATUS_INTERNAL, "verifier: output '%s' has no type or shape", v->name);
        goto done;
      }
      for (int d = 0; shapes_known && d < v->rank; ++d) {
        if (v->dims[d] < 0) {
          st = hc_node_error(n, HX_STATUS_INTERNAL, "verifier: output '%s' has a negative dimension", v->name);
          goto done;
        }
      }
    }
  }
  for (int i = 0; i < g->num_nodes && st == HX_OK; ++i)
    for (int a = 0; a < g->nodes[i]->num_attrs && st == HX_OK; ++a)
      if (g->nodes[i]->attrs[a].type == HC_ATTR_GRAPH && g->nodes[i]->attrs[a].g)
        st = verify_subgraph(g->nodes[i], g->nodes[i]->attrs[a].g);
  if (st != HX_OK) goto done;
  for (int i = 0; i < g->num_outputs; ++i) {
    if (!defined[g->outputs[i]->id]) {
      st = hx_status_make(HX_STATUS_INTERNAL, "verifier: graph output '%s' is never defined", g->outputs[i]->name);
      goto done;
    }
  }
done:
  free(defined);
  return st;
}
