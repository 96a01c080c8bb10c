/* Helpers for passes that rewrite one node into others (qdq.c,
 * canonicalize.c): new nodes with a resolved descriptor, new constants. */
#include <string.h>

#include "compiler/ops/op.h"
#include "passes/pass.h"

hx_status_t hc_pass_new_node(hc_graph* g, const hc_node* like, const char* op, const char* suffix, int nin,
                             hc_node** out) {
  char name[512];
  snprintf(name, sizeof name, "%s%s", like->name, suffix);
  HX_RETURN_IF_ERROR(hc_graph_add_node(g, name, op, "", nin, 1, out));
  (*out)->op = hc_op_find("", op);
  if (!(*out)->op) return hx_status_make(HX_STATUS_INTERNAL, "no descriptor for %s (rewriting node '%s')", op, like->name);
  int opset = like->opset;
  if (opset < (*out)->op->since_opset) opset = (*out)->op->since_opset;
  if (opset > (*out)->op->max_opset) opset = (*out)->op->max_opset;
  (*out)->opset = opset;
  return HX_OK;
}

hx_status_t hc_pass_new_const(hc_graph* g, const char* name, hx_dtype_t dtype, int rank, const int64_t* dims,
                              const void* data, hc_value** out) {
  HX_RETURN_IF_ERROR(hc_graph_add_value(g, name, dtype, rank, dims, out));
  size_t nbytes = hc_value_nbytes(*out);
  void* d = hc_graph_alloc_data(g, nbytes);
  if (!d) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory for constant '%s'", name);
  if (data) memcpy(d, data, nbytes);
  (*out)->kind = HC_VALUE_CONST;
  (*out)->data = d;
  return HX_OK;
}

void hc_pass_connect(hc_node* n, hc_value* const* inputs, hc_value* output) {
  for (int i = 0; i < n->num_inputs; ++i) n->inputs[i] = inputs[i];
  n->outputs[0] = output;
  output->producer = n;
}
