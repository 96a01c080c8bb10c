/* PLACEHOLDER: to be replaced by the real implementation. */
#include "compiler/ops/op.h"

static hx_status_t infer_todo(hc_graph* g, hc_node* n) {
  return hc_node_error(n, HX_STATUS_UNSUPPORTED, "unsupported op %s (not implemented yet)", n->op_type);
}

const hc_op_desc hc_op_slice = {"Slice", "", 1, 22, NULL, 0, infer_todo, NULL, NULL};
