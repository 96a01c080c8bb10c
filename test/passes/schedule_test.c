/* Tests passes/schedule.c and the lane-aware liveness of
 * passes/memory_plan.c: independent branches become one parallel group with
 * a lane each; the memory-aware choice declines groups that cost more memory
 * than they save time and keeps the others; tensors of concurrently running
 * lanes never share bytes while tensors of one lane do, in order; random wide
 * DAGs plan correctly under every policy (checked by the verifier and by the
 * moment oracle of plan_oracle.h); and compiled artifacts compute the same
 * results on 1, 2 and 3 threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/backend/target.h"
#include "compiler/frontend/onnx_import.h"
#include "passes/pass.h"
#include "test/support/test_support.h"
#include "test/passes/plan_oracle.h"

/* Imports and plans a test model at -O1 under a grouping policy. */
static hc_graph* plan(const char* model, hc_pass_ctx* ctx, hc_target* tgt, int groups) {
  ts_assert_ok(hc_target_host(tgt));
  memset(ctx, 0, sizeof(*ctx));
  ctx->target = ctx->host = tgt;
  ctx->opt_level = 1;
  ctx->parallel_groups = groups;
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
  hc_graph* g = plan("branches.onnx", &ctx, &tgt, HC_GROUPS_ALL);
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

  /* Tensors of different lanes may be live at once, so their bytes are
   * disjoint; within a lane a branch writes its next tensor in place over
   * its previous one (a2 over a1...: same lane, run in order). */
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

  /* The verifier catches a plan that ignores the lanes: put the sigmoid
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
  hc_graph* g = plan("add_relu.onnx", &ctx, &tgt, HC_GROUPS_ALL);
  for (int i = 0; i < g->num_nodes; ++i) assert_int_equal(g->nodes[i]->group, 0);
  hc_graph_free(g);
}

/* The branches model run on 1..3 threads matches a plain C reference. */
static void parallel_groups_compute_the_same(void** state) {
  char so[64];
  ts_assert_ok(ts_compile_groups("branches.onnx", so, 2, HC_PARALLEL_GROUPS_ALL));
  hx_model_t* m;
  ts_assert_ok(hx_model_load(so, &m));
  assert_non_null(strstr(hx_model_manifest_json(m), "\"lane\":3"));
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

/* The memory-aware choice on branches.onnx: the four-lane group of cheap
 * element-wise branches costs memory (+60 % over the serial peak) for little
 * latency and is declined; the two consumers of the branches form a group
 * that costs nothing and is kept. With groups off, the bound is the serial
 * one; declining never raises the arena. */
static void memory_aware_choice_on_branches(void** state) {
  hc_pass_ctx all, ctx, none;
  hc_target tgt;
  hc_graph* ga = plan("branches.onnx", &all, &tgt, HC_GROUPS_ALL);
  hc_graph* g = plan("branches.onnx", &ctx, &tgt, HC_GROUPS_AUTO);
  assert_int_equal(find_node(g, "b1_sigmoid")->group, 0);
  assert_int_equal(find_node(g, "b3_exp")->group, 0);
  assert_true(find_node(g, "join")->group > 0);
  assert_int_equal(find_node(g, "head")->group, find_node(g, "join")->group);
  assert_int_equal(ctx.schedule_groups, 1);
  assert_int_equal(ctx.schedule_groups_declined, 1);
  assert_int_equal(all.schedule_groups, 2);
  assert_true(ctx.arena_bytes <= all.arena_bytes);
  assert_true(ctx.arena_lower_bound < all.arena_lower_bound);
  /* The order does not depend on the policy, only the marks. */
  for (int i = 0; i < g->num_nodes; ++i) assert_string_equal(g->nodes[i]->name, ga->nodes[i]->name);
  ts_assert_ok(hc_schedule_verify(g));
  ts_assert_ok(hc_memory_plan_verify(g, ctx.arena_bytes));
  oracle_moments(g, ctx.arena_bytes, "branches auto");
  hc_graph* gn = plan("branches.onnx", &none, &tgt, HC_GROUPS_NONE);
  for (int i = 0; i < gn->num_nodes; ++i) assert_int_equal(gn->nodes[i]->group, 0);
  assert_int_equal(none.schedule_groups, 0);
  assert_int_equal(none.arena_lower_bound, none.memplan.lower_bound_sequential);
  hc_graph_free(g);
  hc_graph_free(ga);
  hc_graph_free(gn);
}

/* lanes.onnx at -O1 with every group formed: three lanes of four tensors of
 * 64 KiB; the stem is read by all lanes (live across the group), and each
 * lane needs only two slots at its busiest step, so the arena is
 * 64 KiB * (1 + 3 * 2) = 448 KiB (one step per group would need 576 KiB).
 * Reaching it forces b4 onto b1's bytes and c3 onto c1's (same lane, in
 * order); no two lanes ever share. */
static void lanes_share_bytes_in_order(void** state) {
  hc_pass_ctx ctx;
  hc_target tgt;
  hc_graph* g = plan("lanes.onnx", &ctx, &tgt, HC_GROUPS_ALL);
  assert_true(find_node(g, "a1_softmax")->group > 0);
  assert_int_equal(ctx.arena_lower_bound, 7 * 65536);
  assert_int_equal(ctx.arena_bytes, 7 * 65536);
  const char* names[] = {"r", "a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4", "c1", "c2", "c3", "c4"};
  enum { NV = sizeof(names) / sizeof(names[0]) };
  hc_value* v[NV];
  for (int i = 0; i < NV; ++i) {
    v[i] = hc_graph_find_value(g, names[i]);
    assert_int_equal(v[i]->storage.base, HX_BASE_ARENA);
  }
  for (int i = 1; i < NV; ++i)
    for (int j = i + 1; j < NV; ++j) {
      bool overlap = v[i]->storage.offset < v[j]->storage.offset + 65536 &&
                     v[j]->storage.offset < v[i]->storage.offset + 65536;
      if (overlap && v[i]->producer->lane != v[j]->producer->lane)
        fail_msg("%s and %s (different lanes) share bytes", names[i], names[j]);
    }
  assert_int_equal(hc_graph_find_value(g, "b4")->storage.offset, hc_graph_find_value(g, "b1")->storage.offset);
  assert_int_equal(hc_graph_find_value(g, "c3")->storage.offset, hc_graph_find_value(g, "c1")->storage.offset);
  ts_assert_ok(hc_memory_plan_verify(g, ctx.arena_bytes));
  oracle_moments(g, ctx.arena_bytes, "lanes");

  /* The verifier refuses what lanes forbid even where steps are disjoint:
   * c1 (lane 2) over a1 (lane 0), and a4 over the stem that later lanes
   * still read. */
  hc_value* a1 = hc_graph_find_value(g, "a1");
  hc_value* c1 = hc_graph_find_value(g, "c1");
  uint64_t saved = c1->storage.offset;
  c1->storage.offset = a1->storage.offset;
  ts_assert_error(hc_memory_plan_verify(g, ctx.arena_bytes), HX_STATUS_INTERNAL, "live together but overlap");
  c1->storage.offset = saved;
  hc_value* a3 = hc_graph_find_value(g, "a3");
  saved = a3->storage.offset;
  a3->storage.offset = hc_graph_find_value(g, "r")->storage.offset;
  ts_assert_error(hc_memory_plan_verify(g, ctx.arena_bytes), HX_STATUS_INTERNAL, "live together but overlap");
  a3->storage.offset = saved;
  /* A recorded lifetime in the wrong lane of a group is refused too. */
  hc_value* b2 = hc_graph_find_value(g, "b2");
  int last = b2->live_last;
  b2->live_last = find_node(g, "c1_exp")->id;
  ts_assert_error(hc_memory_plan_verify(g, ctx.arena_bytes), HX_STATUS_INTERNAL, "recorded live");
  b2->live_last = last;
  ts_assert_ok(hc_memory_plan_verify(g, ctx.arena_bytes));
  hc_graph_free(g);
}

/* lanes.onnx run with its lanes concurrent (bytes shared within lanes) on
 * 1..3 threads, and with no groups, matches a C reference. */
static void softmax_rows(float* v, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    float* row = v + (size_t)r * cols;
    float mx = row[0], sum = 0;
    for (int c = 1; c < cols; ++c) mx = row[c] > mx ? row[c] : mx;
    for (int c = 0; c < cols; ++c) sum += row[c] = expf(row[c] - mx);
    for (int c = 0; c < cols; ++c) row[c] /= sum;
  }
}

static void lanes_compute_the_same(void** state) {
  enum { R = 4, C = 4096 };
  float* x = malloc(sizeof(float) * R * C);
  float* ref = malloc(sizeof(float) * R * C * 3);
  float* y = malloc(sizeof(float) * R * C * 3);
  float* t = malloc(sizeof(float) * R * C);
  for (int i = 0; i < R * C; ++i) x[i] = sinf((float)i * 0.11f) * 4;
  /* a: softmax, neg, softmax, abs; b: sigmoid, softmax, tanh, softmax;
   * c: exp, softmax, softmax, neg (over relu(x)); concatenated per row. */
  for (int lane = 0; lane < 3; ++lane) {
    for (int i = 0; i < R * C; ++i) t[i] = x[i] > 0 ? x[i] : 0;
    if (lane == 0) {
      softmax_rows(t, R, C);
      for (int i = 0; i < R * C; ++i) t[i] = -t[i];
      softmax_rows(t, R, C);
      for (int i = 0; i < R * C; ++i) t[i] = fabsf(t[i]);
    } else if (lane == 1) {
      for (int i = 0; i < R * C; ++i) t[i] = 1 / (1 + expf(-t[i]));
      softmax_rows(t, R, C);
      for (int i = 0; i < R * C; ++i) t[i] = tanhf(t[i]);
      softmax_rows(t, R, C);
    } else {
      for (int i = 0; i < R * C; ++i) t[i] = expf(t[i]);
      softmax_rows(t, R, C);
      softmax_rows(t, R, C);
      for (int i = 0; i < R * C; ++i) t[i] = -t[i];
    }
    for (int r = 0; r < R; ++r) memcpy(ref + (size_t)r * 3 * C + (size_t)lane * C, t + (size_t)r * C, sizeof(float) * C);
  }
  const int policies[2] = {HC_PARALLEL_GROUPS_ALL, HC_PARALLEL_GROUPS_NONE};
  for (int p = 0; p < 2; ++p) {
    char so[64];
    ts_assert_ok(ts_compile_groups("lanes.onnx", so, 1, policies[p]));
    hx_model_t* m;
    ts_assert_ok(hx_model_load(so, &m));
    for (int threads = 1; threads <= 3; ++threads) {
      hx_session_t* s;
      hx_session_options_t o = {.threads = threads};
      ts_assert_ok(hx_session_create(m, &o, &s));
      ts_assert_ok(hx_session_bind_input(s, 0, x, sizeof(float) * R * C));
      ts_assert_ok(hx_session_bind_output(s, 0, y, sizeof(float) * R * C * 3));
      for (int rep = 0; rep < 20; ++rep) {
        memset(y, 0, sizeof(float) * R * C * 3);
        ts_assert_ok(hx_session_run(s));
        for (int i = 0; i < R * C * 3; ++i)
          if (fabsf(y[i] - ref[i]) > 1e-5f + 1e-4f * fabsf(ref[i]))
            fail_msg("policy %d, %d threads, run %d: y[%d] = %g, expected %g", policies[p], threads, rep, i, y[i],
                     ref[i]);
      }
      hx_session_free(s);
    }
    hx_model_free(m);
    unlink(so);
  }
  free(x);
  free(ref);
  free(y);
  free(t);
}

/* ---- hand-built graphs --------------------------------------------------- */

typedef struct builder {
  hc_graph* g;
  int counter;
} builder;

static void b_init(builder* b) {
  memset(b, 0, sizeof(*b));
  ts_assert_ok(hc_graph_create("hand", &b->g));
  b->g->default_opset = 17;
}

static hc_value* b_value(builder* b, int rank, const int64_t* dims) {
  char name[32];
  snprintf(name, sizeof name, "v%d", b->counter++);
  hc_value* v;
  ts_assert_ok(hc_graph_add_value(b->g, name, HX_DTYPE_FLOAT32, rank, dims, &v));
  return v;
}

static hc_value* b_input(builder* b, int64_t rows, int64_t cols) {
  hc_value* v = b_value(b, 2, (const int64_t[]){rows, cols});
  v->kind = HC_VALUE_INPUT;
  b->g->inputs = realloc(b->g->inputs, sizeof(hc_value*) * (size_t)(b->g->num_inputs + 1));
  b->g->inputs[b->g->num_inputs++] = v;
  return v;
}

static hc_value* b_const(builder* b, int64_t rows, int64_t cols) {
  hc_value* v = b_value(b, 2, (const int64_t[]){rows, cols});
  size_t nb = hc_value_nbytes(v);
  ts_assert_ok(hc_value_set_const(b->g, v, calloc(1, nb), nb));
  return v;
}

/* A node of op `op` reading ins[0..nin) with one rows x cols output. The
 * planning passes need shapes and op descriptors, not attributes. */
static hc_value* b_node(builder* b, const char* op, hc_value* const* ins, int nin, int64_t rows, int64_t cols) {
  char name[32];
  snprintf(name, sizeof name, "n%d_%s", b->counter++, op);
  hc_node* n;
  ts_assert_ok(hc_graph_add_node(b->g, name, op, "", nin, 1, &n));
  n->op = hc_op_find("", op);
  assert_non_null(n->op);
  for (int i = 0; i < nin; ++i) hc_node_set_input(n, i, ins[i]);
  hc_value* out = b_value(b, 2, (const int64_t[]){rows, cols});
  n->outputs[0] = out;
  out->producer = n;
  return out;
}

static hc_value* b_unary(builder* b, const char* op, hc_value* x) {
  return b_node(b, op, &x, 1, x->dims[0], x->dims[1]);
}

static hc_value* b_matmul(builder* b, hc_value* x, int64_t cols) {
  hc_value* in[2] = {x, b_const(b, x->dims[1], cols)};
  return b_node(b, "MatMul", in, 2, x->dims[0], cols);
}

static const hc_pass* const k_plan_passes[] = {&hc_pass_dce, &hc_pass_finalize_outputs, &hc_pass_schedule,
                                               &hc_pass_memory_plan, NULL};

static void b_plan(builder* b, hc_pass_ctx* ctx, int groups, int threads, const hc_target* tgt) {
  memset(ctx, 0, sizeof(*ctx));
  ctx->target = ctx->host = tgt;
  ctx->opt_level = 1;
  ctx->parallel_groups = groups;
  ctx->schedule_threads = threads;
  ts_assert_ok(hc_run_pipeline(ctx, b->g, k_plan_passes, NULL));
}

/* Two lanes of single-task products (a 1x4096 result each, then 1x64)
 * after a Softmax over 1x3584 that sets the serial peak (28 KiB): running
 * the lanes together costs about 20 % more peak and saves about half the
 * latency on 2 or more threads, so the group is formed; on one thread it
 * saves nothing and is declined; `none` and `all` do what they say. */
static void memory_aware_choice_weighs_latency(void** state) {
  hc_target tgt;
  ts_assert_ok(hc_target_host(&tgt));
  const int threads[4] = {4, 2, 1, 4};
  const int policy[4] = {HC_GROUPS_AUTO, HC_GROUPS_AUTO, HC_GROUPS_AUTO, HC_GROUPS_NONE};
  const bool grouped[4] = {true, true, false, false};
  for (int k = 0; k < 5; ++k) {
    builder b;
    b_init(&b);
    hc_value* x0 = b_input(&b, 1, 3584);
    hc_value* f = b_unary(&b, "Softmax", b_unary(&b, "Exp", x0));
    hc_value* x = b_node(&b, "ReduceSum", &f, 1, 1, 256);
    hc_value* a = b_matmul(&b, b_matmul(&b, x, 4096), 64);
    hc_value* c = b_matmul(&b, b_matmul(&b, x, 4096), 64);
    hc_value* in[2] = {a, c};
    ts_assert_ok(hc_graph_add_output(b.g, b_node(&b, "Concat", in, 2, 1, 128)));
    hc_pass_ctx ctx;
    int pol = k < 4 ? policy[k] : HC_GROUPS_ALL;
    b_plan(&b, &ctx, pol, k < 4 ? threads[k] : 1, &tgt);
    bool expect = k < 4 ? grouped[k] : true;
    if ((a->producer->group > 0) != expect)
      fail_msg("case %d (policy %d, %d threads): group %d, expected %s", k, pol, k < 4 ? threads[k] : 1,
               a->producer->group, expect ? "a group" : "none");
    assert_int_equal(ctx.schedule_groups_declined, k == 2 ? 1 : 0);
    ts_assert_ok(hc_memory_plan_verify(b.g, ctx.arena_bytes));
    oracle_moments(b.g, ctx.arena_bytes, "latency case");
    hc_graph_free(b.g);
  }
}

/* ---- random wide DAGs ---------------------------------------------------- */

static uint32_t rnd(uint64_t* s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

/* Blocks of 2-5 branches of 1-5 ops each (element-wise ops that may write
 * in place, Softmax with its own kernel, products that change the width,
 * now and then a product with an earlier tensor of the same shape, which
 * breaks a branch into chains), each block joined by a Concat; some branch
 * tensors are also read by a final Concat, so lifetimes cross groups. */
static void build_wide(builder* b, uint64_t seed) {
  uint64_t s = seed * 2654435761u + 7;
  static const char* const unaries[] = {"Relu", "Sigmoid", "Exp", "Softmax", "Neg", "Tanh"};
  int64_t rows = 2 + rnd(&s) % 8;
  hc_value* cur = b_input(b, rows, 32 * (1 + rnd(&s) % 16));
  hc_value* pool[256];
  int np = 0;
  hc_value* late[8];
  int nl = 0;
  int blocks = 1 + rnd(&s) % 4;
  for (int blk = 0; blk < blocks; ++blk) {
    int lanes = 2 + rnd(&s) % 4;
    hc_value* ends[5];
    int64_t width = 0;
    for (int l = 0; l < lanes; ++l) {
      hc_value* v = cur;
      int len = 1 + rnd(&s) % 5;
      for (int k = 0; k < len; ++k) {
        int op = rnd(&s) % 9;
        if (op < 6) {
          v = b_unary(b, unaries[op], v);
        } else if (op < 8) {
          int64_t cols = v->dims[1] * (1 + rnd(&s) % 4) / 2;
          v = b_matmul(b, v, cols < 32 ? 32 : cols > 2048 ? 2048 : cols);
        } else {
          hc_value* other = v;
          for (int t = np - 1; t >= 0; --t)
            if (pool[t] != v && pool[t]->dims[0] == v->dims[0] && pool[t]->dims[1] == v->dims[1]) {
              other = pool[t];
              break;
            }
          hc_value* in[2] = {v, other};
          v = b_node(b, "Mul", in, 2, v->dims[0], v->dims[1]);
        }
        if (np < 256) pool[np++] = v;
        if (nl < 8 && rnd(&s) % 7 == 0) late[nl++] = v;
      }
      ends[l] = v;
      width += v->dims[1];
    }
    cur = b_node(b, "Concat", ends, lanes, rows, width);
    if (np < 256) pool[np++] = cur;
  }
  if (nl > 0) {
    hc_value* in[9];
    int64_t width = cur->dims[1];
    in[0] = cur;
    for (int i = 0; i < nl; ++i) in[i + 1] = late[i], width += late[i]->dims[1];
    cur = b_node(b, "Concat", in, nl + 1, rows, width);
  }
  ts_assert_ok(hc_graph_add_output(b->g, cur));
}

/* Under every policy: a valid schedule, a plan the verifier and the moment
 * oracle accept, arena >= bound; the order is the same, `auto` forms a
 * subset of `all`'s groups (whole ones), `none` forms none, and fewer groups
 * never raise the bound. */
static void random_wide_dags_schedule_and_plan(void** state) {
  hc_target tgt;
  ts_assert_ok(hc_target_host(&tgt));
  int formed = 0, declined = 0, grouped_all = 0;
  long moments = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    builder b;
    b_init(&b);
    build_wide(&b, seed);
    static const int modes[3] = {HC_GROUPS_ALL, HC_GROUPS_AUTO, HC_GROUPS_NONE};
    int n = 0;
    char** order = NULL;
    int* group_all = NULL;
    uint64_t lower[3];
    for (int m = 0; m < 3; ++m) {
      hc_pass_ctx ctx;
      b_plan(&b, &ctx, modes[m], 1 + (int)(seed % 4), &tgt);
      char what[64];
      snprintf(what, sizeof what, "wide DAG %llu (groups %d)", (unsigned long long)seed, modes[m]);
      hc_graph* g = b.g;
      ts_assert_ok(hc_schedule_verify(g));
      hx_status_t st = hc_memory_plan_verify(g, ctx.arena_bytes);
      if (st != HX_OK) fail_msg("%s: %s", what, hx_status_message(st));
      moments += oracle_moments(g, ctx.arena_bytes, what);
      if (ctx.arena_bytes < ctx.arena_lower_bound) fail_msg("%s: arena below the bound", what);
      lower[m] = ctx.arena_lower_bound;
      if (m == 0) {
        n = g->num_nodes;
        order = malloc(sizeof(char*) * (size_t)n);
        group_all = malloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; ++i) order[i] = (char*)g->nodes[i]->name, group_all[i] = g->nodes[i]->group;
        grouped_all += ctx.schedule_groups;
        continue;
      }
      assert_int_equal(g->num_nodes, n);
      for (int i = 0; i < n; ++i) {
        assert_string_equal(g->nodes[i]->name, order[i]);
        if (modes[m] == HC_GROUPS_NONE) assert_int_equal(g->nodes[i]->group, 0);
        /* An `auto` group is one of `all`'s, whole. */
        for (int j = 0; j < n && g->nodes[i]->group; ++j)
          if ((g->nodes[j]->group == g->nodes[i]->group) != (group_all[j] == group_all[i]))
            fail_msg("%s: steps %d and %d grouped differently from `all`", what, i, j);
      }
      if (modes[m] == HC_GROUPS_AUTO) formed += ctx.schedule_groups, declined += ctx.schedule_groups_declined;
    }
    if (!(lower[2] <= lower[1] && lower[1] <= lower[0]))
      fail_msg("wide DAG %llu: bounds all/auto/none %llu/%llu/%llu", (unsigned long long)seed,
               (unsigned long long)lower[0], (unsigned long long)lower[1], (unsigned long long)lower[2]);
    free(order);
    free(group_all);
    hc_graph_free(b.g);
  }
  print_message("wide DAGs: %d groups with all; auto formed %d, declined %d; %ld moments checked\n", grouped_all,
                formed, declined, moments);
  assert_true(grouped_all > 200);
  assert_true(formed > 20);
  assert_true(declined > 20);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(branches_become_one_parallel_group),
      cmocka_unit_test(linear_graphs_have_no_groups),
      cmocka_unit_test(parallel_groups_compute_the_same),
      cmocka_unit_test(memory_aware_choice_on_branches),
      cmocka_unit_test(lanes_share_bytes_in_order),
      cmocka_unit_test(lanes_compute_the_same),
      cmocka_unit_test(memory_aware_choice_weighs_latency),
      cmocka_unit_test(random_wide_dags_schedule_and_plan),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
