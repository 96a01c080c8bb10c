/* Shape inference: each op descriptor's infer() in topological order. Nodes
 * whose inputs are constants are folded on the way, so shape-computing
 * subgraphs (Shape -> Gather -> Concat -> Reshape) resolve to constants
 * before the ops that need them are inferred. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/dynamic.h"
#include "compiler/ops/op.h"
#include "passes/pass.h"

/* Check mode: appends a node's error to ctx->collected_errors (one line). */
static void collect(hc_pass_ctx* ctx, hx_status_t st) {
  const char* msg = hx_status_message(st);
  size_t old = *ctx->collected_errors ? strlen(*ctx->collected_errors) : 0;
  char* grown = realloc(*ctx->collected_errors, old + strlen(msg) + 2);
  if (grown) {
    sprintf(grown + old, "%s%s", old ? "\n" : "", msg);
    *ctx->collected_errors = grown;
    ctx->num_collected_errors++;
  }
  hx_status_free(st);
}

/* Whether a node can be inferred: known op, every input has a shape. In
 * check mode a node downstream of a reported failure is skipped quietly. */
static hx_status_t ready(const hc_node* n, bool* out_ready) {
  *out_ready = n->op != NULL;
  for (int j = 0; j < n->num_inputs && *out_ready; ++j) {
    const hc_value* v = n->inputs[j];
    if (!v) continue;
    if (v->rank < 0) *out_ready = false;
    for (int d = 0; d < v->rank && *out_ready; ++d)
      if (v->dims[d] < 0) *out_ready = false; /* an unresolved symbolic dimension, reported by import */
  }
  return HX_OK;
}

static hx_status_t run_shape_inference(hc_pass_ctx* ctx, hc_graph* g) {
  for (int i = 0; i < g->num_nodes; ++i) {
    hc_node* n = g->nodes[i];
    if (n->dead) continue;
    bool ok;
    ready(n, &ok);
    if (!ok) {
      if (ctx->collected_errors) continue; /* its cause is reported already */
      for (int j = 0; j < n->num_inputs; ++j) {
        const hc_value* v = n->inputs[j];
        if (v && v->rank < 0) return hc_node_error(n, HX_STATUS_INTERNAL, "input '%s' has no inferred shape", v->name);
      }
      return hc_node_error(n, HX_STATUS_INTERNAL, "node has no op descriptor");
    }
    hx_status_t st = n->op->infer(g, n);
    if (st != HX_OK && ctx->collected_errors) {
      collect(ctx, st);
      for (int j = 0; j < n->num_outputs; ++j)
        if (n->outputs[j]) n->outputs[j]->rank = -1;
      continue;
    }
    HX_RETURN_IF_ERROR(st);
    /* Replaced by nodes it inserted after itself (an If with a constant
     * condition inlines its branch): they are inferred next. */
    if (n->dead) continue;
    /* Consumers of value-dependent shapes are checked here (dynamic.h). */
    st = hc_dyn_check_node(n);
    if (st != HX_OK && ctx->collected_errors) {
      collect(ctx, st);
      continue;
    }
    HX_RETURN_IF_ERROR(st);
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
    st = hc_try_fold_node(ctx, g, n, &folded);
    if (st != HX_OK && ctx->collected_errors) {
      collect(ctx, st);
      continue;
    }
    HX_RETURN_IF_ERROR(st);
  }
  hc_graph_compact(g);
  if (ctx->collected_errors && ctx->num_collected_errors)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "%d problem%s found", ctx->num_collected_errors,
                          ctx->num_collected_errors == 1 ? "" : "s");
  return HX_OK;
}

const hc_pass hc_pass_shape_inference = {"shape-inference", "infer dtypes and static shapes, folding constant subgraphs",
                                         run_shape_inference};
