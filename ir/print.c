/* Text form of the IR, for --print-after and golden tests. */
#include <inttypes.h>

#include "harness/artifact_abi.h"
#include "ir/verify.h"

static void print_type(const hc_value* v, FILE* out) {
  /* "<=" marks a value-dependent shape given by its upper bound. */
  fprintf(out, "%s[%s", hx_dtype_name(v->dtype), v->dynamic ? "<=" : "");
  if (v->rank < 0) {
    fputs("?", out);
  } else {
    for (int d = 0; d < v->rank; ++d) {
      if (d) fputc('x', out);
      if (v->dims[d] < 0)
        fputs(v->dim_params[d] ? v->dim_params[d] : "?", out);
      else
        fprintf(out, "%" PRId64, v->dims[d]);
    }
  }
  fputc(']', out);
}

static void print_storage(const hc_value* v, FILE* out) {
  const hc_value* root = v;
  while (root->alias_of) root = root->alias_of;
  if (root != v) fprintf(out, "  (view of %%%s)", root->name);
  if (root->storage.base < 0) return;
  const char* where = root->storage.base == HX_BASE_ARENA ? "arena" : root->storage.base == HX_BASE_WEIGHTS ? "weights" : "io";
  if (root->storage.base >= HX_BASE_FIRST_IO)
    fprintf(out, "  @io%d", root->storage.base - HX_BASE_FIRST_IO);
  else
    fprintf(out, "  @%s+%" PRIu64, where, root->storage.offset);
}

static void print_attr(const hc_attr* a, FILE* out) {
  fprintf(out, "%s=", a->name);
  switch (a->type) {
    case HC_ATTR_FLOAT: fprintf(out, "%g", a->f); break;
    case HC_ATTR_INT: fprintf(out, "%" PRId64, a->i); break;
    case HC_ATTR_STRING: fprintf(out, "\"%s\"", a->s); break;
    case HC_ATTR_INTS:
      fputc('[', out);
      for (int i = 0; i < a->n; ++i) fprintf(out, "%s%" PRId64, i ? "," : "", a->ints[i]);
      fputc(']', out);
      break;
    case HC_ATTR_FLOATS:
      fputc('[', out);
      for (int i = 0; i < a->n; ++i) fprintf(out, "%s%g", i ? "," : "", a->floats[i]);
      fputc(']', out);
      break;
    case HC_ATTR_STRINGS:
      fputc('[', out);
      for (int i = 0; i < a->n; ++i) fprintf(out, "%s\"%s\"", i ? "," : "", a->strings[i]);
      fputc(']', out);
      break;
    case HC_ATTR_TENSOR: fprintf(out, "tensor<%s>", hx_dtype_name(a->t->dtype)); break;
    case HC_ATTR_GRAPH: fprintf(out, "graph %s", a->g ? a->g->name : "?"); break;
    default: fputs("?", out); break;
  }
}

/* Prints g with every line indented by `ind` spaces; subgraphs follow the
 * node owning them, indented further. A subgraph lists its formal inputs
 * and its captures (values of the enclosing graph, by input slot of the
 * owning node); a node's implicit inputs are printed after a '|'. */
static void print_graph(const hc_graph* g, FILE* out, int ind, bool sub) {
  fprintf(out, "%*sgraph %s (opset %d) {\n", ind, "", g->name, g->default_opset);
  for (int i = 0; i < g->num_inputs; ++i) {
    const hc_value* v = g->inputs[i];
    fprintf(out, "%*s  input %%%s: ", ind, "", v->name);
    print_type(v, out);
    print_storage(v, out);
    fputc('\n', out);
  }
  for (int i = 0; i < g->num_captures; ++i) {
    const hc_value* v = g->captures[i];
    fprintf(out, "%*s  capture %%%s: ", ind, "", v->name);
    print_type(v, out);
    fprintf(out, "  (input %d of the owner)\n", g->capture_slots[i]);
  }
  for (int i = 0; i < g->num_values; ++i) {
    const hc_value* v = g->values[i];
    if (v->kind != HC_VALUE_CONST) continue;
    /* Only constants something still reads. */
    if (!v->is_output && hc_value_use_count(g, v) == 0) continue;
    if (sub && hc_graph_capture_index(g, v) >= 0) continue;
    fprintf(out, "%*s  const %%%s: ", ind, "", v->name);
    print_type(v, out);
    print_storage(v, out);
    fputc('\n', out);
  }
  for (int i = 0; i < g->num_nodes; ++i) {
    const hc_node* n = g->nodes[i];
    fprintf(out, "%*s  ", ind, "");
    int printed = 0;
    for (int j = 0; j < n->num_outputs; ++j) {
      if (!n->outputs[j]) continue;
      fprintf(out, "%s%%%s: ", printed++ ? ", " : "", n->outputs[j]->name);
      print_type(n->outputs[j], out);
    }
    fprintf(out, " = %s%s%s(", n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op_type);
    int explicit_inputs = n->num_inputs - n->num_captures;
    for (int j = 0; j < n->num_inputs; ++j)
      fprintf(out, "%s%s%s", j == explicit_inputs ? (j ? " | " : "| ") : j ? ", " : "", n->inputs[j] ? "%" : "",
              n->inputs[j] ? n->inputs[j]->name : "_");
    fputc(')', out);
    if (n->num_attrs) {
      fputs(" {", out);
      for (int a = 0; a < n->num_attrs; ++a) {
        if (a) fputs(", ", out);
        print_attr(&n->attrs[a], out);
      }
      fputc('}', out);
    }
    fprintf(out, "  # %s", n->name);
    if (n->num_outputs > 0 && n->outputs[0]) print_storage(n->outputs[0], out);
    fputc('\n', out);
    for (int a = 0; a < n->num_attrs; ++a)
      if (n->attrs[a].type == HC_ATTR_GRAPH && n->attrs[a].g) print_graph(n->attrs[a].g, out, ind + 4, true);
  }
  fprintf(out, "%*s  return ", ind, "");
  for (int i = 0; i < g->num_outputs; ++i) fprintf(out, "%s%%%s", i ? ", " : "", g->outputs[i]->name);
  fprintf(out, "\n%*s}\n", ind, "");
}

void hc_graph_print(const hc_graph* g, FILE* out) { print_graph(g, out, 0, false); }
