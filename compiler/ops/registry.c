/* The op registry and the helpers shared by descriptor implementations. */
#include <stdio.h>
#include <string.h>

#include "compiler/ops/op.h"

#define HC_OP(sym) extern const hc_op_desc sym;
#include "compiler/ops/op_list.h"
#undef HC_OP

static const hc_op_desc* const k_ops[] = {
#define HC_OP(sym) &sym,
#include "compiler/ops/op_list.h"
#undef HC_OP
};

#define NUM_OPS ((int)(sizeof(k_ops) / sizeof(k_ops[0])))

int hc_op_count(void) { return NUM_OPS; }
const hc_op_desc* hc_op_at(int i) { return (i >= 0 && i < NUM_OPS) ? k_ops[i] : NULL; }

static bool same_domain(const char* a, const char* b) {
  /* "ai.onnx" is the long name of the default domain. */
  if (!a || !strcmp(a, "ai.onnx")) a = "";
  if (!b || !strcmp(b, "ai.onnx")) b = "";
  return strcmp(a, b) == 0;
}

const hc_op_desc* hc_op_find(const char* domain, const char* op_type) {
  for (int i = 0; i < NUM_OPS; ++i)
    if (same_domain(k_ops[i]->domain, domain) && strcmp(k_ops[i]->name, op_type) == 0) return k_ops[i];
  return NULL;
}

hx_status_t hc_op_check_node(const hc_node* n) {
  const hc_op_desc* d = n->op;
  if (n->opset < d->since_opset || n->opset > d->max_opset)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED, "unsupported opset %d for %s (Harness implements opsets %d..%d)",
                         n->opset, d->name, d->since_opset, d->max_opset);
  for (int a = 0; a < n->num_attrs; ++a) {
    bool known = false;
    for (int k = 0; d->attrs && d->attrs[k]; ++k)
      if (strcmp(d->attrs[k], n->attrs[a].name) == 0) known = true;
    if (!known)
      return hc_node_error(n, HX_STATUS_UNSUPPORTED, "unsupported attribute '%s'", n->attrs[a].name);
  }
  return HX_OK;
}

hx_status_t hc_op_lower(hc_lower_ctx* lc, hc_node* n) {
  const hc_op_desc* d = n->op;
  if (d->lower) return d->lower(lc, n);
  if (d->scalar) return hc_lower_elementwise(lc, n);
  if (d->flags & HC_OP_VIEW) return HX_OK;
  return hc_node_error(n, HX_STATUS_UNSUPPORTED, "no code generator for %s", d->name);
}
