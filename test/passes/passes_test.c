/* Tests the pass pipeline: shape inference with folding, canonicalisation,
 * BatchNorm folding, DCE, output finalisation, scheduling and the memory
 * plan (and its verifier). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "compiler/backend/target.h"
#include "compiler/frontend/onnx_import.h"
#include "harness/artifact_abi.h"
#include "passes/pass.h"
#include "test/support/test_support.h"

static hc_target g_host;

static hc_graph* compile_graph(const char* path, int level, hc_pass_ctx* ctx) {
  hc_graph* g;
  ts_assert_ok(hc_import_onnx_file(path, NULL, &g));
  memset(ctx, 0, sizeof(*ctx));
  ctx->target = ctx->host = &g_host;
  ctx->opt_level = level;
  ts_assert_ok(hc_run_pipeline(ctx, g, hc_pipeline_for_level(level), NULL));
  return g;
}

static int count_op(const hc_graph* g, const char* op) {
  int n = 0;
  for (int i = 0; i < g->num_nodes; ++i) n += !strcmp(g->nodes[i]->op_type, op);
  return n;
}

static void folding_and_dce(void** state) {
  hc_pass_ctx ctx;
  hc_graph* g = compile_graph(ts_model("fold_dce.onnx"), 1, &ctx);
  assert_int_equal(g->num_nodes, 1); /* the constant Add is folded, the dead Exp removed */
  assert_string_equal(g->nodes[0]->op_type, "Mul");
  hc_value* c3 = g->nodes[0]->inputs[1];
  assert_int_equal(c3->kind, HC_VALUE_CONST);
  const float* d = c3->data;
  assert_float_equal(d[0], 2, 0);
  assert_float_equal(d[3], 5, 0);
  assert_int_equal(c3->storage.base, HX_BASE_WEIGHTS);
  hc_graph_free(g);
}

static void shape_subgraph_folds(void** state) {
  hc_pass_ctx ctx;
  hc_graph* g = compile_graph(ts_model("shape_subgraph.onnx"), 0, &ctx);
  /* Shape -> Slice -> Concat is evaluated at compile time; only the Exp
   * kernel remains, reading x through the Reshape view. */
  assert_int_equal(count_op(g, "Shape") + count_op(g, "Slice") + count_op(g, "Concat"), 0);
  assert_int_equal(count_op(g, "Exp"), 1);
  hc_value* y = g->outputs[0];
  assert_int_equal(y->rank, 2);
  assert_int_equal(y->dims[0], 2);
  assert_int_equal(y->dims[1], 12);
  hc_graph_free(g);
}

static void outputs_get_their_own_buffers(void** state) {
  hc_pass_ctx ctx;
  hc_graph* g = compile_graph(ts_model("output_copies.onnx"), 1, &ctx);
  /* x (an input), c (a weight), v (a view) and the second n need copies. */
  assert_int_equal(count_op(g, "Copy"), 4);
  assert_int_equal(g->num_outputs, 5);
  const char* names[5] = {"x", "c", "v", "n", "n"};
  for (int i = 0; i < 5; ++i) {
    assert_string_equal(g->output_names[i], names[i]);
    assert_int_equal(g->outputs[i]->storage.base, HX_BASE_FIRST_IO + g->num_inputs + i);
    assert_non_null(g->outputs[i]->producer);
  }
  hc_graph_free(g);
}

static void memory_plan_reuses_and_verifies(void** state) {
  hc_pass_ctx ctx;
  hc_graph* g = compile_graph(ts_model("chain.onnx"), 1, &ctx);
  uint64_t tensor = 64 * 64 * 4;
  /* Six intermediates, at most three alive at once (t2 lives until the end). */
  assert_true(ctx.arena_bytes <= 3 * tensor);
  assert_true(ctx.arena_lower_bound <= ctx.arena_bytes);
  assert_true(ctx.arena_lower_bound >= 2 * tensor);
  ts_assert_ok(hc_memory_plan_verify(g, ctx.arena_bytes));
  /* Corrupt the plan: put two simultaneously live tensors on top of each other. */
  hc_value* t2 = hc_graph_find_value(g, "t2");
  hc_value* t3 = hc_graph_find_value(g, "t3");
  t3->storage.offset = t2->storage.offset;
  ts_assert_error(hc_memory_plan_verify(g, ctx.arena_bytes), HX_STATUS_INTERNAL, "overlap");
  t3->storage.offset = ctx.arena_bytes; /* and outside the arena */
  ts_assert_error(hc_memory_plan_verify(g, ctx.arena_bytes), HX_STATUS_INTERNAL, "misplaced");
  hc_graph_free(g);
}

static void batchnorm_folds_into_conv(void** state) {
  char path[4096];
  snprintf(path, sizeof path, "%s/examples/tiny_cnn.onnx", getenv("HARNESS_SOURCE_DIR"));
  hc_pass_ctx ctx;
  hc_graph* g = compile_graph(path, 1, &ctx);
  assert_int_equal(count_op(g, "BatchNormalization"), 0);
  assert_int_equal(count_op(g, "Conv"), 2);
  hc_graph_free(g);
  g = compile_graph(path, 0, &ctx); /* -O0 keeps it */
  assert_int_equal(count_op(g, "BatchNormalization"), 1);
  hc_graph_free(g);
}

static const hc_node* find_node(const hc_graph* g, const char* name) {
  for (int i = 0; i < g->num_nodes; ++i)
    if (!strcmp(g->nodes[i]->name, name)) return g->nodes[i];
  return NULL;
}

static void channel_scale_folds_into_conv(void** state) {
  hc_pass_ctx ctx;
  hc_graph* g = compile_graph(ts_model("channel_scale.onnx"), 2, &ctx);
  /* mul1 became conv1's weights times s; mul2's product has two uses. */
  assert_null(find_node(g, "mul1"));
  assert_non_null(find_node(g, "mul2"));
  const hc_node* scale = find_node(g, "conv1:scale_weight");
  const hc_node* conv1 = find_node(g, "conv1");
  assert_non_null(scale);
  assert_non_null(conv1);
  assert_ptr_equal(conv1->inputs[1], scale->outputs[0]);
  assert_string_equal(conv1->inputs[0]->name, "r");
  assert_null(find_node(g, "conv2:scale_weight"));
  /* A constant scale: constant weights, computed at compile time. */
  const hc_node* conv3 = find_node(g, "conv3");
  assert_non_null(conv3);
  assert_null(find_node(g, "mul3"));
  assert_null(find_node(g, "conv3:scale_weight"));
  const hc_value* w3 = conv3->packed ? conv3->packed->original : conv3->inputs[1];
  assert_int_equal(w3->kind, HC_VALUE_CONST);
  assert_float_equal(((const float*)w3->data)[7], 0.25f * 8.0f, 0); /* w2[0][7] * c3[7] */
  hc_graph_free(g);
  g = compile_graph(ts_model("channel_scale.onnx"), 1, &ctx); /* -O1 keeps it */
  assert_non_null(find_node(g, "mul1"));
  hc_graph_free(g);
}

static void unknown_pass_names(void** state) {
  assert_non_null(hc_pass_find("memory-plan"));
  assert_null(hc_pass_find("no-such-pass"));
}

int main(void) {
  hc_target_host(&g_host);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(folding_and_dce),          cmocka_unit_test(shape_subgraph_folds),
      cmocka_unit_test(outputs_get_their_own_buffers), cmocka_unit_test(memory_plan_reuses_and_verifies),
      cmocka_unit_test(batchnorm_folds_into_conv), cmocka_unit_test(channel_scale_folds_into_conv),
      cmocka_unit_test(unknown_pass_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
