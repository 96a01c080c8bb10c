/* Tests passes/schedule.c and the group-aware liveness of
 * passes/memory_plan.c: independent branches become one parallel group with
 * a lane each, tensors of concurrently running lanes never share bytes, and
 * the compiled artifact computes the same results on 1, 2 and 3 threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/backend/target.h"
#include "compiler/frontend/onnx_import.h"
#include "passes/pass.h"
#include "test/support/test_support.h"

static hc_graph* plan(const char* model, hc_pass_ctx* ctx, hc_target* tgt) {
  ts_assert_ok(hc_target_host(tgt));
  memset(ctx, 0, sizeof(*ctx));
  ctx->target = ctx->host = tgt;
  ctx->opt_level = 1;
  ctx->log = stderr;
  hc_import_options io = {0};
  hc_graph* g = NULL;
  ts_assert_ok(hc_import_onnx_file(ts_model(model), &io, &g));
  ts_assert_ok(hc_run_pipeline(ctx, g, hc_pipeline_for_level(1), NULL));
  return g;
}

static hc_node* find_node(hc_graph* g, const char* name) {
  for (int i = 0; i < g->num_nodes; ++i)
    if (!strcmp(g->nodes[i]->name, name)) return g->nodes[i];
  fail_msg("no node %s", name);
  return NULL;
}

static void branches_become_one_parallel_group(void** state) {
  hc_pass_ctx ctx;
  hc_target tgt;
  hc_graph* g = plan("branches.onnx", &ctx, &tgt);
  hc_node* stem = find_node(g, "stem");
  hc_node* b1 = find_node(g, "b1_sigmoid");
  hc_node* b1s = find_node(g, "b1_scale");
  hc_node* b2 = find_node(g, "b2_tanh");
  hc_node* b3 = find_node(g, "b3_neg");
  hc_node* b3e = find_node(g, "b3_exp");
  hc_node* b4 = find_node(g, "b4_abs");
  hc_node* join = find_node(g, "join");
  hc_node* head = find_node(g, "head");
  assert_int_equal(stem->group, 0);
  assert_true(b1->group > 0);
  /* The two consumers of the branches (concat and the second output's head)
   * are independent of each other: a group of their own, after the first. */
  assert_true(join->group > b1->group);
  assert_int_equal(head->group, join->group);
  assert_int_not_equal(head->lane, join->lane);
  /* One group, four lanes; each branch's nodes share a lane, in order. */
  hc_node* branch[] = {b1, b2, b3, b4};
  for (int i = 0; i < 4; ++i) assert_int_equal(branch[i]->group, b1->group);
  assert_int_equal(b1s->lane, b1->lane);
  assert_int_equal(b3e->lane, b3->lane);
  assert_true(b1s->id == b1->id + 1);
  for (int i = 0; i < 4; ++i)
    for (int j = i + 1; j < 4; ++j) assert_int_not_equal(branch[i]->lane, branch[j]->lane);
  assert_true(stem->id < b1->id && b4->id < join->id);
  ts_assert_ok(hc_schedule_verify(g));

  /* Liveness covers the whole group: the four branch tensors (and the exp
   * branch's intermediate) are live together, so their bytes are disjoint,
   * except where a branch writes its next tensor in place over its previous
   * one (a2 over a1...: same lane, run in order). */
  const char* names[] = {"a1", "a2", "b1", "b2", "c1", "c2", "d1"};
  hc_value* v[7];
  for (int i = 0; i < 7; ++i) v[i] = hc_graph_find_value(g, names[i]);
  for (int i = 0; i < 7; ++i) {
    if (v[i]->storage.base != 0) continue; /* outputs live in caller buffers */
    for (int j = i + 1; j < 7; ++j) {
      if (v[j]->storage.base != 0) continue;
      if (hc_memory_plan_inplace_source(v[j]) == v[i] || hc_memory_plan_inplace_source(v[i]) == v[j]) {
        assert_int_equal(v[i]->producer->lane, v[j]->producer->lane);
        continue;
      }
      uint64_t a0 = v[i]->storage.offset, a1 = a0 + hc_value_nbytes(v[i]);
      uint64_t b0 = v[j]->storage.offset, b1e = b0 + hc_value_nbytes(v[j]);
      if (a0 < b1e && b0 < a1) fail_msg("%s and %s share bytes", names[i], names[j]);
    }
  }
  ts_assert_ok(hc_memory_plan_verify(g, ctx.arena_bytes));

  /* The verifier catches a plan that ignores the group: put the sigmoid
   * output over the neg output, as step-by-step liveness would allow. */
  hc_value* a1 = hc_graph_find_value(g, "a1");
  hc_value* c1 = hc_graph_find_value(g, "c1");
  uint64_t saved = a1->storage.offset;
  a1->storage.offset = c1->storage.offset;
  ts_assert_error(hc_memory_plan_verify(g, ctx.arena_bytes), HX_STATUS_INTERNAL, "live together but overlap");
  a1->storage.offset = saved;

  /* A schedule where a node reads from another lane of its group is refused. */
  int lane = b1s->lane;
  b1s->lane = b2->lane;
  ts_assert_error(hc_schedule_verify(g), HX_STATUS_INTERNAL, "same parallel group");
  b1s->lane = lane;
  hc_graph_free(g);
}

static void linear_graphs_have_no_groups(void** state) {
  hc_pass_ctx ctx;
  hc_target tgt;
  hc_graph* g = plan("add_relu.onnx", &ctx, &tgt);
  for (int i = 0; i < g->num_nodes; ++i) assert_int_equal(g->nodes[i]->group, 0);
  hc_graph_free(g);
}

/* The branches model run on 1..3 threads matches a plain C reference. */
static void parallel_groups_compute_the_same(void** state) {
  char so[64];
  ts_assert_ok(ts_compile("branches.onnx", so, 2));
  hx_model_t* m;
  ts_assert_ok(hx_model_load(so, &m));
  assert_non_null(strstr(hx_model_manifest_json(m), "\"lane\":\t3"));
  enum { R = 4, C = 4096 };
  float* x = malloc(sizeof(float) * R * C);
  float* y = malloc(sizeof(float) * R * C * 4);
  float* z = malloc(sizeof(float) * R * C);
  for (int i = 0; i < R * C; ++i) x[i] = sinf((float)i * 0.37f) * 3;
  for (int threads = 1; threads <= 3; ++threads) {
    hx_session_t* s;
    hx_session_options_t o = {.threads = threads};
    ts_assert_ok(hx_session_create(m, &o, &s));
    ts_assert_ok(hx_session_bind_input(s, 0, x, sizeof(float) * R * C));
    ts_assert_ok(hx_session_bind_output(s, 0, y, sizeof(float) * R * C * 4));
    ts_assert_ok(hx_session_bind_output(s, 1, z, sizeof(float) * R * C));
    for (int rep = 0; rep < 3; ++rep) {
      memset(y, 0, sizeof(float) * R * C * 4);
      ts_assert_ok(hx_session_run(s));
      for (int r = 0; r < R; ++r) {
        for (int c = 0; c < C; ++c) {
          float v = x[r * C + c] > 0 ? x[r * C + c] : 0;
          const float* row = y + (size_t)r * C * 4;
          assert_float_equal(row[c], 2 / (1 + expf(-v)), 1e-5);
          assert_float_equal(row[C + c], tanhf(v) + 1, 1e-5);
          assert_float_equal(row[2 * C + c], expf(-v), 1e-5);
          assert_float_equal(row[3 * C + c], v, 0);
          assert_float_equal(z[r * C + c], expf(-v) + 1, 1e-5);
        }
      }
    }
    hx_session_free(s);
  }
  free(x);
  free(y);
  free(z);
  hx_model_free(m);
  unlink(so);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(branches_become_one_parallel_group),
      cmocka_unit_test(linear_graphs_have_no_groups),
      cmocka_unit_test(parallel_groups_compute_the_same),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
