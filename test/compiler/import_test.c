/* Tests compiler/frontend/onnx_import.c and tensor_proto.c: valid models,
 * every malformed-file error, external data, --shape and --constant. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/frontend/onnx_import.h"
#include "compiler/frontend/tensor_proto.h"
#include "test/support/test_support.h"

static hx_status_t import(const char* name, const hc_import_options* o, hc_graph** g) {
  return hc_import_onnx_file(ts_model(name), o, g);
}

static void imports_a_valid_model(void** state) {
  hc_graph* g;
  ts_assert_ok(import("add_relu.onnx", NULL, &g));
  assert_int_equal(g->num_nodes, 2);
  assert_int_equal(g->num_inputs, 1);
  assert_string_equal(g->inputs[0]->name, "x");
  assert_int_equal(g->inputs[0]->kind, HC_VALUE_INPUT);
  assert_int_equal(g->num_outputs, 1);
  assert_string_equal(g->output_names[0], "y");
  assert_int_equal(g->default_opset, 13);
  hc_value* b = hc_graph_find_value(g, "b");
  assert_non_null(b);
  assert_int_equal(b->kind, HC_VALUE_CONST);
  assert_float_equal(((const float*)b->data)[1], -2.0f, 0);
  assert_string_equal(g->nodes[0]->op_type, "Add");
  assert_string_equal(g->nodes[0]->name, "add0");
  assert_ptr_equal(g->nodes[1]->inputs[0], g->nodes[0]->outputs[0]);
  hc_graph_free(g);
}

static void malformed_files(void** state) {
  hc_graph* g = NULL;
  ts_assert_error(import("truncated.onnx", NULL, &g), HX_STATUS_INVALID_ARGUMENT, "protobuf parsing failed");
  assert_null(g);
  ts_assert_error(import("not_onnx.onnx", NULL, &g), HX_STATUS_INVALID_ARGUMENT, "not a valid ONNX model");
  ts_assert_error(import("missing.onnx", NULL, &g), HX_STATUS_NOT_FOUND, "cannot open");
  ts_assert_error(import("unknown_op.onnx", NULL, &g), HX_STATUS_UNSUPPORTED,
                  "node \"mystery\" (FooBar, opset 13): unsupported op FooBar");
  ts_assert_error(import("bad_initializer.onnx", NULL, &g), HX_STATUS_INVALID_ARGUMENT,
                  "initializer 'b' has 12 bytes of data but its dims (4, float32) need 16");
  ts_assert_error(import("bad_attribute.onnx", NULL, &g), HX_STATUS_UNSUPPORTED,
                  "node \"lrelu\" (LeakyRelu, opset 13): unsupported attribute 'beta'");
  ts_assert_error(import("cycle.onnx", NULL, &g), HX_STATUS_INVALID_ARGUMENT, "node \"loop_a\" (Add) is on a cycle");
}

static void external_data_loads(void** state) {
  hc_graph* g;
  ts_assert_ok(import("external.onnx", NULL, &g));
  hc_value* w = hc_graph_find_value(g, "w");
  assert_non_null(w);
  const float* d = w->data;
  assert_float_equal(d[0], 1, 0);
  assert_float_equal(d[3], 4, 0);
  hc_graph_free(g);
}

static void symbolic_dims_need_shape_flags(void** state) {
  hc_graph* g;
  ts_assert_error(import("symbolic.onnx", NULL, &g), HX_STATUS_INVALID_ARGUMENT,
                  "graph input 'x' has symbolic dimension 0 ('batch'); fix it with --shape x=Nx3 or --shape batch=N");
  hc_shape_override whole = {.name = "x", .rank = 2, .dims = {4, 3}};
  hc_import_options o = {.shapes = &whole, .num_shapes = 1};
  ts_assert_ok(import("symbolic.onnx", &o, &g));
  assert_int_equal(g->inputs[0]->dims[0], 4);
  hc_graph_free(g);
  hc_shape_override param = {.name = "batch", .rank = 1, .dims = {5}};
  o.shapes = &param;
  ts_assert_ok(import("symbolic.onnx", &o, &g));
  assert_int_equal(g->inputs[0]->dims[0], 5);
  assert_int_equal(g->inputs[0]->dims[1], 3);
  hc_graph_free(g);
  hc_shape_override wrong = {.name = "x", .rank = 2, .dims = {4, 7}};
  o.shapes = &wrong;
  ts_assert_error(import("symbolic.onnx", &o, &g), HX_STATUS_INVALID_ARGUMENT, "dim 1 is fixed to 3 by the model");
  hc_shape_override unknown = {.name = "nosuch", .rank = 1, .dims = {1}};
  o.shapes = &unknown;
  hc_shape_override both[2] = {whole, unknown};
  o.shapes = both;
  o.num_shapes = 2;
  ts_assert_error(import("symbolic.onnx", &o, &g), HX_STATUS_NOT_FOUND, "--shape nosuch");
}

static void constant_freezes_an_input(void** state) {
  char path[] = "/tmp/harness-const-XXXXXX.pb";
  int fd = mkstemps(path, 3);
  close(fd);
  float data[6] = {1, 2, 3, 4, 5, 6};
  hc_tensor t = {.name = "x", .dtype = HX_DTYPE_FLOAT32, .rank = 2, .dims = {2, 3}, .data = data, .nbytes = sizeof data};
  ts_assert_ok(hc_tensor_write_pb(path, &t));
  hc_constant_override c = {.name = "x", .path = path};
  hc_import_options o = {.constants = &c, .num_constants = 1};
  hc_graph* g;
  ts_assert_ok(import("add_relu.onnx", &o, &g));
  assert_int_equal(g->num_inputs, 0);
  hc_value* x = hc_graph_find_value(g, "x");
  assert_int_equal(x->kind, HC_VALUE_CONST);
  assert_float_equal(((const float*)x->data)[5], 6, 0);
  hc_graph_free(g);
  hc_constant_override none = {.name = "zz", .path = path};
  o.constants = &none;
  ts_assert_error(import("add_relu.onnx", &o, &g), HX_STATUS_NOT_FOUND, "--constant zz");
  unlink(path);
}

static void collect_mode_reports_everything(void** state) {
  hc_import_options o = {.collect_errors = true};
  hc_graph* g = NULL;
  hx_status_t st = import("three_problems.onnx", &o, &g);
  assert_non_null(st);
  const char* m = hx_status_message(st);
  assert_non_null(strstr(m, "symbolic dimension 0 ('batch')"));
  assert_non_null(strstr(m, "unsupported op FooBar"));
  assert_non_null(strstr(m, "unsupported attribute 'beta'"));
  hx_status_free(st);
  hc_graph_free(g);
}

static void tensor_files_round_trip(void** state) {
  char path[] = "/tmp/harness-rt-XXXXXX.pb";
  int fd = mkstemps(path, 3);
  close(fd);
  int64_t data[3] = {-5, 0, 1ll << 40};
  hc_tensor t = {.name = "k", .dtype = HX_DTYPE_INT64, .rank = 1, .dims = {3}, .data = data, .nbytes = sizeof data};
  ts_assert_ok(hc_tensor_write_pb(path, &t));
  hc_tensor r;
  ts_assert_ok(hc_tensor_read_pb(path, &r));
  assert_string_equal(r.name, "k");
  assert_int_equal(r.dtype, HX_DTYPE_INT64);
  assert_int_equal(r.rank, 1);
  assert_memory_equal(r.data, data, sizeof data);
  hc_tensor_free(&r);
  unlink(path);
  ts_assert_error(hc_tensor_read_pb(ts_model("not_onnx.onnx"), &r), HX_STATUS_INVALID_ARGUMENT, "not a serialized");
}

static void parse_dims(void** state) {
  int64_t d[HC_MAX_RANK];
  int r;
  ts_assert_ok(hc_parse_dims("1x3x224x224", d, &r));
  assert_int_equal(r, 4);
  assert_int_equal(d[3], 224);
  ts_assert_ok(hc_parse_dims("8", d, &r));
  assert_int_equal(r, 1);
  ts_assert_error(hc_parse_dims("1x", d, &r), HX_STATUS_INVALID_ARGUMENT, "cannot parse");
  ts_assert_error(hc_parse_dims("1xax2", d, &r), HX_STATUS_INVALID_ARGUMENT, "cannot parse");
  ts_assert_error(hc_parse_dims("-1", d, &r), HX_STATUS_INVALID_ARGUMENT, "cannot parse");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(imports_a_valid_model),         cmocka_unit_test(malformed_files),
      cmocka_unit_test(external_data_loads),           cmocka_unit_test(symbolic_dims_need_shape_flags),
      cmocka_unit_test(constant_freezes_an_input),     cmocka_unit_test(collect_mode_reports_everything),
      cmocka_unit_test(tensor_files_round_trip),       cmocka_unit_test(parse_dims),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
