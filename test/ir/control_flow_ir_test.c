/* Tests the IR side of control flow (ir/graph.c, ir/verify.c, ir/print.c,
 * passes/dce.c) on hand-built graphs: implicit inputs (captures) seen by
 * sort, DCE and the verifier, subgraph copies and splicing, and the printer. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/op.h"
#include "ir/verify.h"
#include "passes/pass.h"
#include "test/support/test_support.h"

/* Top graph:  c (bool input), x (input) -> Relu -> r;  y = If(c | r) whose
 * then branch is Neg(r') and else branch Exp(r') (r' capturing r). The If
 * node is added before the Relu, so only its implicit input orders them. */
typedef struct fixture {
  hc_graph* g;
  hc_node *iff, *relu;
  hc_value *c, *x, *r, *y;
  hc_graph *then_b, *else_b;
} fixture;

static hc_graph* branch(hc_graph* g, hc_node* owner, const char* name, const char* op, hc_value* outer) {
  hc_graph* b;
  ts_assert_ok(hc_graph_create(name, &b));
  ts_assert_ok(hc_graph_add_child(g, b));
  b->default_opset = 13;
  int64_t dims[1] = {4};
  hc_value *cap, *out;
  ts_assert_ok(hc_graph_add_value(b, outer->name, HX_DTYPE_FLOAT32, 1, dims, &cap));
  ts_assert_ok(hc_graph_add_value(b, "o", HX_DTYPE_FLOAT32, 1, dims, &out));
  cap->kind = HC_VALUE_INPUT;
  int slot;
  ts_assert_ok(hc_node_add_capture(g, owner, outer, &slot));
  ts_assert_ok(hc_graph_add_capture(b, cap, slot));
  hc_node* n;
  ts_assert_ok(hc_graph_add_node(b, op, op, "", 1, 1, &n));
  n->op = hc_op_find("", op);
  n->inputs[0] = cap;
  n->outputs[0] = out;
  out->producer = n;
  ts_assert_ok(hc_graph_add_output(b, out));
  return b;
}

static void build(fixture* f) {
  memset(f, 0, sizeof(*f));
  ts_assert_ok(hc_graph_create("top", &f->g));
  hc_graph* g = f->g;
  g->default_opset = 13;
  int64_t dims[1] = {4};
  ts_assert_ok(hc_graph_add_value(g, "c", HX_DTYPE_BOOL, 0, NULL, &f->c));
  ts_assert_ok(hc_graph_add_value(g, "x", HX_DTYPE_FLOAT32, 1, dims, &f->x));
  ts_assert_ok(hc_graph_add_value(g, "r", HX_DTYPE_FLOAT32, 1, dims, &f->r));
  ts_assert_ok(hc_graph_add_value(g, "y", HX_DTYPE_FLOAT32, 1, dims, &f->y));
  f->c->kind = f->x->kind = HC_VALUE_INPUT;
  g->inputs = calloc(2, sizeof(hc_value*));
  g->inputs[g->num_inputs++] = f->c;
  g->inputs[g->num_inputs++] = f->x;
  ts_assert_ok(hc_graph_add_node(g, "if", "If", "", 1, 1, &f->iff));
  f->iff->op = hc_op_find("", "If");
  f->iff->inputs[0] = f->c;
  f->iff->outputs[0] = f->y;
  f->y->producer = f->iff;
  ts_assert_ok(hc_graph_add_node(g, "relu", "Relu", "", 1, 1, &f->relu));
  f->relu->op = hc_op_find("", "Relu");
  f->relu->inputs[0] = f->x;
  f->relu->outputs[0] = f->r;
  f->r->producer = f->relu;
  f->then_b = branch(g, f->iff, "then_b", "Neg", f->r);
  f->else_b = branch(g, f->iff, "else_b", "Exp", f->r);
  f->iff->num_attrs = 2;
  f->iff->attrs = hc_arena_alloc(&g->arena, 2 * sizeof(hc_attr));
  f->iff->attrs[0] = (hc_attr){.name = "then_branch", .type = HC_ATTR_GRAPH, .g = f->then_b};
  f->iff->attrs[1] = (hc_attr){.name = "else_branch", .type = HC_ATTR_GRAPH, .g = f->else_b};
  ts_assert_ok(hc_graph_add_output(g, f->y));
}

static void captures_are_implicit_inputs(void** state) {
  fixture f;
  build(&f);
  /* Both branches capture r: one implicit input, shared. */
  assert_int_equal(f.iff->num_inputs, 2);
  assert_int_equal(f.iff->num_captures, 1);
  assert_ptr_equal(f.iff->inputs[1], f.r);
  assert_int_equal(f.then_b->capture_slots[0], 1);
  assert_int_equal(f.else_b->capture_slots[0], 1);
  assert_int_equal(hc_value_use_count(f.g, f.r), 1);
  /* The Relu comes after the If in the list: the capture orders them. */
  ts_assert_error(hc_graph_verify(f.g, true), HX_STATUS_INTERNAL, "used before it is defined");
  ts_assert_ok(hc_graph_sort(f.g));
  assert_ptr_equal(f.g->nodes[0], f.relu);
  ts_assert_ok(hc_graph_verify(f.g, true));
  /* DCE keeps the Relu: only the If's implicit input reads it. */
  hc_remove_dead_nodes(f.g);
  assert_int_equal(f.g->num_nodes, 2);
  /* A capture must stand for an implicit input. */
  f.then_b->capture_slots[0] = 0;
  ts_assert_error(hc_graph_verify(f.g, true), HX_STATUS_INTERNAL, "not an implicit input");
  f.then_b->capture_slots[0] = 1;
  hc_graph_free(f.g);
}

static void printer_shows_subgraphs(void** state) {
  fixture f;
  build(&f);
  ts_assert_ok(hc_graph_sort(f.g));
  char* text = NULL;
  size_t len = 0;
  FILE* out = open_memstream(&text, &len);
  hc_graph_print(f.g, out);
  fclose(out);
  assert_non_null(strstr(text, "= If(%c | %r) {then_branch=graph then_b, else_branch=graph else_b}"));
  assert_non_null(strstr(text, "\n    graph then_b (opset 13) {\n      capture %r: float32[4]  (input 1 of the owner)\n"));
  assert_non_null(strstr(text, "      %o: float32[4] = Neg(%r)"));
  free(text);
  hc_graph_free(f.g);
}

static void clone_copies_deeply(void** state) {
  fixture f;
  build(&f);
  hc_graph* copy;
  ts_assert_ok(hc_graph_clone(f.g, f.then_b, &copy));
  assert_int_equal(copy->num_values, f.then_b->num_values);
  assert_int_equal(copy->num_nodes, 1);
  assert_ptr_not_equal(copy->nodes[0], f.then_b->nodes[0]);
  assert_ptr_equal(copy->nodes[0]->inputs[0], copy->captures[0]);
  assert_ptr_equal(copy->outputs[0]->producer, copy->nodes[0]);
  assert_int_equal(copy->capture_slots[0], 1);
  assert_string_equal(copy->output_names[0], "o");
  /* Changing the copy leaves the original alone. */
  copy->outputs[0]->dims[0] = 9;
  assert_int_equal(f.then_b->outputs[0]->dims[0], 4);
  ts_assert_ok(hc_graph_verify(copy, true));
  hc_graph_free(f.g); /* frees the copy too */
}

static void splice_moves_a_branch(void** state) {
  fixture f;
  build(&f);
  ts_assert_ok(hc_graph_sort(f.g)); /* relu, if */
  /* Inline the then branch by hand, as If does for a constant condition. */
  hc_graph* b = f.then_b;
  b->nodes[0]->inputs[0] = f.r;
  hc_value* o = b->outputs[0];
  int nv = f.g->num_values;
  b->values[0] = b->values[1]; /* drop the capture */
  b->values[0]->id = 0;
  b->num_values = 1;
  ts_assert_ok(hc_graph_splice(f.g, 2, b));
  assert_int_equal(f.g->num_nodes, 3);
  assert_int_equal(f.g->num_values, nv + 1);
  assert_ptr_equal(f.g->values[nv], o);
  assert_int_equal(o->id, nv);
  assert_string_equal(f.g->nodes[2]->op_type, "Neg");
  assert_int_equal(f.g->nodes[2]->id, 2);
  assert_int_equal(b->num_nodes, 0);
  hc_graph_replace_uses(f.g, f.y, o);
  f.iff->dead = true;
  hc_graph_compact(f.g);
  assert_ptr_equal(f.g->outputs[0], o);
  ts_assert_ok(hc_graph_verify(f.g, true));
  hc_graph_free(f.g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(captures_are_implicit_inputs),
      cmocka_unit_test(printer_shows_subgraphs),
      cmocka_unit_test(clone_copies_deeply),
      cmocka_unit_test(splice_moves_a_branch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
