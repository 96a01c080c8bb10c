/* Tests ir/graph.c, ir/verify.c and ir/print.c on hand-built graphs. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/op.h"
#include "ir/verify.h"
#include "test/support/test_support.h"

/* x -> Relu -> a -> Exp -> y, built in reverse node order. */
static hc_graph* build_chain(hc_node** relu, hc_node** exp) {
  hc_graph* g;
  ts_assert_ok(hc_graph_create("chain", &g));
  g->default_opset = 13;
  int64_t dims[2] = {2, 3};
  hc_value *x, *a, *y;
  ts_assert_ok(hc_graph_add_value(g, "x", HX_DTYPE_FLOAT32, 2, dims, &x));
  ts_assert_ok(hc_graph_add_value(g, "a", HX_DTYPE_FLOAT32, 2, dims, &a));
  ts_assert_ok(hc_graph_add_value(g, "y", HX_DTYPE_FLOAT32, 2, dims, &y));
  x->kind = HC_VALUE_INPUT;
  g->inputs = calloc(2, sizeof(hc_value*));
  g->inputs[g->num_inputs++] = x;
  ts_assert_ok(hc_graph_add_node(g, "e", "Exp", "", 1, 1, exp));
  ts_assert_ok(hc_graph_add_node(g, "r", "Relu", "", 1, 1, relu));
  (*exp)->op = hc_op_find("", "Exp");
  (*relu)->op = hc_op_find("", "Relu");
  (*exp)->inputs[0] = a;
  (*exp)->outputs[0] = y;
  y->producer = *exp;
  (*relu)->inputs[0] = x;
  (*relu)->outputs[0] = a;
  a->producer = *relu;
  ts_assert_ok(hc_graph_add_output(g, y));
  return g;
}

static void sort_restores_topological_order(void** state) {
  hc_node *relu, *exp;
  hc_graph* g = build_chain(&relu, &exp);
  ts_assert_error(hc_graph_verify(g, true), HX_STATUS_INTERNAL, "used before it is defined");
  ts_assert_ok(hc_graph_sort(g));
  assert_ptr_equal(g->nodes[0], relu);
  assert_ptr_equal(g->nodes[1], exp);
  assert_int_equal(relu->id, 0);
  ts_assert_ok(hc_graph_verify(g, true));
  hc_graph_free(g);
}

static void cycles_are_named(void** state) {
  hc_node *relu, *exp;
  hc_graph* g = build_chain(&relu, &exp);
  relu->inputs[0] = exp->outputs[0]; /* y feeds relu: relu -> exp -> relu */
  ts_assert_error(hc_graph_check_acyclic(g), HX_STATUS_INVALID_ARGUMENT, "cycle of 2 nodes");
  ts_assert_error(hc_graph_sort(g), HX_STATUS_INVALID_ARGUMENT, "is on a cycle");
  hc_graph_free(g);
}

static void self_loop_is_a_cycle(void** state) {
  hc_node *relu, *exp;
  hc_graph* g = build_chain(&relu, &exp);
  relu->inputs[0] = relu->outputs[0];
  ts_assert_error(hc_graph_check_acyclic(g), HX_STATUS_INVALID_ARGUMENT, "node \"r\" (Relu) is on a cycle of 1 node");
  hc_graph_free(g);
}

static void replace_uses_rewires_outputs(void** state) {
  hc_node *relu, *exp;
  hc_graph* g = build_chain(&relu, &exp);
  hc_value* x = g->inputs[0];
  hc_value* y = exp->outputs[0];
  hc_graph_replace_uses(g, y, x);
  assert_ptr_equal(g->outputs[0], x);
  assert_string_equal(g->output_names[0], "y"); /* the user-facing name stays */
  assert_true(x->is_output);
  assert_false(y->is_output);
  hc_graph_free(g);
}

static void verify_requires_shapes(void** state) {
  hc_node *relu, *exp;
  hc_graph* g = build_chain(&relu, &exp);
  ts_assert_ok(hc_graph_sort(g));
  relu->outputs[0]->rank = -1;
  ts_assert_error(hc_graph_verify(g, true), HX_STATUS_INTERNAL, "has no type or shape");
  ts_assert_ok(hc_graph_verify(g, false));
  hc_graph_free(g);
}

static void printer_shows_ops_types_and_names(void** state) {
  hc_node *relu, *exp;
  hc_graph* g = build_chain(&relu, &exp);
  ts_assert_ok(hc_graph_sort(g));
  char* text = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&text, &len);
  hc_graph_print(g, f);
  fclose(f);
  assert_non_null(strstr(text, "graph chain (opset 13)"));
  assert_non_null(strstr(text, "input %x: float32[2x3]"));
  assert_non_null(strstr(text, "%a: float32[2x3] = Relu(%x)  # r"));
  assert_non_null(strstr(text, "return %y"));
  free(text);
  hc_graph_free(g);
}

static void shapes_and_constants(void** state) {
  hc_graph* g;
  ts_assert_ok(hc_graph_create("c", &g));
  int64_t d[1] = {3};
  hc_value* v;
  ts_assert_ok(hc_graph_add_value(g, "k", HX_DTYPE_INT32, 1, d, &v));
  int32_t* data = malloc(12);
  data[0] = -1;
  data[1] = 7;
  data[2] = 9;
  ts_assert_ok(hc_value_set_const(g, v, data, 12));
  int64_t i;
  double f;
  assert_true(hc_value_const_i64(v, 1, &i));
  assert_int_equal(i, 7);
  assert_true(hc_value_const_f64(v, 0, &f));
  assert_float_equal(f, -1.0, 0);
  assert_false(hc_value_const_i64(v, 3, &i));
  char buf[64];
  int64_t dims[4] = {1, 3, 224, 224};
  assert_string_equal(hc_shape_str(4, dims, buf, sizeof buf), "1x3x224x224");
  assert_string_equal(hc_shape_str(0, dims, buf, sizeof buf), "scalar");
  assert_int_equal(hc_shape_numel(4, dims), 150528);
  int64_t big[9] = {0};
  ts_assert_error(hc_graph_add_value(g, "r9", HX_DTYPE_FLOAT32, 9, big, &v), HX_STATUS_UNSUPPORTED, "rank 9");
  hc_graph_free(g);
}

static void broadcasting(void** state) {
  hc_graph* g;
  ts_assert_ok(hc_graph_create("b", &g));
  hc_value *a, *b;
  int64_t da[3] = {4, 1, 5}, db[2] = {3, 1};
  ts_assert_ok(hc_graph_add_value(g, "a", HX_DTYPE_FLOAT32, 3, da, &a));
  ts_assert_ok(hc_graph_add_value(g, "b", HX_DTYPE_FLOAT32, 2, db, &b));
  hc_node* n;
  ts_assert_ok(hc_graph_add_node(g, "add", "Add", "", 2, 1, &n));
  hc_value* ins[2] = {a, b};
  int rank;
  int64_t out[HC_MAX_RANK];
  ts_assert_ok(hc_broadcast_shapes(n, 2, ins, &rank, out));
  assert_int_equal(rank, 3);
  assert_int_equal(out[0], 4);
  assert_int_equal(out[1], 3);
  assert_int_equal(out[2], 5);
  b->dims[0] = 2;
  b->dims[1] = 2;
  ts_assert_error(hc_broadcast_shapes(n, 2, ins, &rank, out), HX_STATUS_INVALID_ARGUMENT, "not broadcastable");
  hc_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sort_restores_topological_order), cmocka_unit_test(cycles_are_named),
      cmocka_unit_test(self_loop_is_a_cycle),            cmocka_unit_test(replace_uses_rewires_outputs),
      cmocka_unit_test(verify_requires_shapes),          cmocka_unit_test(printer_shows_ops_types_and_names),
      cmocka_unit_test(shapes_and_constants),            cmocka_unit_test(broadcasting),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
