/* Tests passes/memory_plan.c and compiler/backend/memplan.c:
 *  - every plan is correct, checked three times: by hc_memory_plan_verify, by
 *    an oracle here that replays the schedule group by group over the arena's
 *    bytes (who last wrote each 64-byte granule), and by the moment oracle of
 *    plan_oracle.h (every position of every lane and pair of lanes of every
 *    parallel group, as the executor may run them) — on every test model, on
 *    the ONNX backend node tests when installed, and on random DAGs (views,
 *    broadcasts, casts, parallel groups formed by every policy, several
 *    outputs);
 *  - in place happens where it must (element-wise chains, a dead operand of
 *    a binary op, an equal-sized Cast) and never where it must not (graph
 *    inputs, weights, operands read later directly or through a view, other
 *    lanes of a parallel group, broadcast operands, size-changing casts, ops
 *    with their own kernels, graph outputs, fused epilogue owners);
 *  - the heuristics: the result is the smallest of them, deterministic, and
 *    never below the lower bound;
 *  - `--emit memplan` JSON schema and the SVG next to it. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiler/backend/target.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/ops/op.h"
#include "harness/artifact_abi.h"
#include "passes/pass.h"
#include "test/support/test_support.h"
#include "test/passes/plan_oracle.h"

static hc_target g_host;

/* ---- the oracle --------------------------------------------------------- */

static const hc_value* root(const hc_value* v) { return po_root(v); }

static bool in_arena(const hc_value* v) { return v && root(v)->storage.base == HX_BASE_ARENA; }

typedef struct mem_access {
  int step;    /* node index */
  int id;      /* value id, or num_values + step for a workspace */
  const hc_value* v;
  uint64_t lo, hi; /* granules [lo, hi) */
} mem_access;

static int lane_of(const hc_graph* g, int s) { return g->nodes[s]->group ? g->nodes[s]->lane : -1; }

/* Replays the schedule over the arena and fails the test at the first byte
 * a kernel could read after someone else overwrote it. */
static void oracle_check(const hc_graph* g, uint64_t arena, const char* what) {
  uint64_t granules = (arena + 63) / 64 + 1;
  int* owner = malloc(sizeof(int) * granules);
  for (uint64_t i = 0; i < granules; ++i) owner[i] = -1;
  size_t cap = 1; /* enough for any group: every input, output and workspace of the graph */
  for (int s = 0; s < g->num_nodes; ++s) cap += (size_t)g->nodes[s]->num_inputs + (size_t)g->nodes[s]->num_outputs + 1;
  mem_access* rd = malloc(sizeof(mem_access) * cap);
  mem_access* wr = malloc(sizeof(mem_access) * cap);
  int* produced_at = malloc(sizeof(int) * ((size_t)g->num_values + 1));
  for (int i = 0; i < g->num_values; ++i) produced_at[i] = -1;
  for (int s = 0; s < g->num_nodes; ++s)
    for (int j = 0; j < g->nodes[s]->num_outputs; ++j)
      if (g->nodes[s]->outputs[j]) produced_at[g->nodes[s]->outputs[j]->id] = s;

  for (int s = 0; s < g->num_nodes;) {
    int e = s + 1;
    while (g->nodes[s]->group && e < g->num_nodes && g->nodes[e]->group == g->nodes[s]->group) ++e;
    int nr = 0, nw = 0;
    for (int t = s; t < e; ++t) {
      const hc_node* n = g->nodes[t];
      for (int j = 0; j < n->num_inputs; ++j) {
        if (!in_arena(n->inputs[j])) continue;
        const hc_value* r = root(n->inputs[j]);
        rd[nr++] =
            (mem_access){t, r->id, r, r->storage.offset / 64, (r->storage.offset + hc_value_nbytes(r) + 63) / 64};
      }
      for (int j = 0; j < n->num_outputs; ++j) {
        const hc_value* w = n->outputs[j];
        if (!w || w->alias_of || w->storage.base != HX_BASE_ARENA) continue;
        if (w->storage.offset + hc_value_nbytes(w) > arena) fail_msg("%s: '%s' ends past the arena", what, w->name);
        wr[nw++] =
            (mem_access){t, w->id, w, w->storage.offset / 64, (w->storage.offset + hc_value_nbytes(w) + 63) / 64};
      }
      if (n->workspace_bytes) {
        if (n->workspace_offset + n->workspace_bytes > arena)
          fail_msg("%s: workspace of '%s' past the arena", what, n->name);
        wr[nw++] = (mem_access){t, g->num_values + t, NULL, n->workspace_offset / 64,
                            (n->workspace_offset + n->workspace_bytes + 63) / 64};
      }
    }
    /* Values made before this group must be intact when it starts. */
    for (int a = 0; a < nr; ++a) {
      if (produced_at[rd[a].id] >= s) continue;
      for (uint64_t q = rd[a].lo; q < rd[a].hi; ++q)
        if (owner[q] != rd[a].id)
          fail_msg("%s: '%s' read at step %d was overwritten (granule %llu holds value %d)", what, rd[a].v->name,
                   rd[a].step, (unsigned long long)q, owner[q]);
    }
    /* Within the group: which writes may hit which reads. */
    for (int x = 0; x < nw; ++x) {
      for (int a = 0; a < nr; ++a) {
        if (wr[x].id == rd[a].id || wr[x].hi <= rd[a].lo || rd[a].hi <= wr[x].lo) continue;
        int m = wr[x].step, n = rd[a].step;
        bool ok;
        if (m == n) ok = wr[x].v && po_inplace_ok(g->nodes[n], rd[a].v, wr[x].v);
        else if (lane_of(g, m) == lane_of(g, n))
          ok = m > n || (produced_at[rd[a].id] >= s && m < produced_at[rd[a].id]);
        else ok = false;
        if (!ok)
          fail_msg("%s: step %d writes %s over '%s', which step %d reads", what, m,
                   wr[x].v ? wr[x].v->name : "its workspace", rd[a].v->name, n);
      }
      for (int y = x + 1; y < nw; ++y) {
        if (wr[x].hi <= wr[y].lo || wr[y].hi <= wr[x].lo) continue;
        if (wr[x].step == wr[y].step || lane_of(g, wr[x].step) != lane_of(g, wr[y].step))
          fail_msg("%s: steps %d and %d may write the same bytes at once", what, wr[x].step, wr[y].step);
      }
    }
    for (int x = 0; x < nw; ++x)
      for (uint64_t q = wr[x].lo; q < wr[x].hi; ++q) owner[q] = wr[x].id;
    s = e;
  }
  /* Dims slots (data-dependent shapes) are live for the whole run: nothing
   * else may touch their bytes. */
  for (int i = 0; i < g->num_values; ++i) {
    const hc_value* d = g->values[i];
    if (!d->dynamic || d->dyn_source || !d->producer) continue;
    uint64_t lo = d->dyn_dims_offset, hi = lo + 8 * (uint64_t)(d->rank > 0 ? d->rank : 1);
    if (hi > arena) fail_msg("%s: dims slot of '%s' past the arena", what, d->name);
    for (int j = 0; j < g->num_values; ++j) {
      const hc_value* v = g->values[j];
      if (v->alias_of || v->storage.base != HX_BASE_ARENA) continue;
      if (v->storage.offset < hi && lo < v->storage.offset + hc_value_nbytes(v))
        fail_msg("%s: dims slot of '%s' overlaps '%s'", what, d->name, v->name);
    }
  }
  free(owner);
  free(rd);
  free(wr);
  free(produced_at);
}

/* Plan checks shared by every graph: verifier, oracle, bounds, stats. */
static void check_plan(const hc_graph* g, const hc_pass_ctx* ctx, const char* what) {
  hx_status_t st = hc_memory_plan_verify(g, ctx->arena_bytes);
  if (st != HX_OK) fail_msg("%s: %s", what, hx_status_message(st));
  oracle_check(g, ctx->arena_bytes, what);
  oracle_moments(g, ctx->arena_bytes, what);
  if (ctx->arena_lower_bound > ctx->arena_bytes) fail_msg("%s: arena below the lower bound", what);
  if (ctx->arena_lower_bound > ctx->memplan.lower_bound_no_inplace) fail_msg("%s: in place raised the bound", what);
  if (ctx->memplan.lower_bound_sequential > ctx->arena_lower_bound) fail_msg("%s: groups lowered the bound", what);
  assert_true(ctx->memplan.num_heuristics >= 1);
  if (ctx->memplan.arena[ctx->memplan.chosen] != ctx->arena_bytes)
    fail_msg("%s: arena %llu, but the kept heuristic's is %llu", what, (unsigned long long)ctx->arena_bytes,
             (unsigned long long)ctx->memplan.arena[ctx->memplan.chosen]);
  for (int i = 0; i < ctx->memplan.num_heuristics; ++i) assert_true(ctx->memplan.arena[i] >= ctx->arena_bytes);
}

/* ---- every test model --------------------------------------------------- */

/* Imports and plans a model at -O`level` with a grouping policy
 * (HC_GROUPS_*); false (and no graph) when the model is one of the
 * deliberately broken ones or needs flags. */
static bool plan_file(const char* path, int level, int groups, hc_pass_ctx* ctx, hc_graph** out) {
  hc_graph* g = NULL;
  hx_status_t st = hc_import_onnx_file(path, NULL, &g);
  memset(ctx, 0, sizeof(*ctx));
  ctx->target = ctx->host = &g_host;
  ctx->opt_level = level;
  ctx->parallel_groups = groups;
  if (st == HX_OK) st = hc_run_pipeline(ctx, g, hc_pipeline_for_level(level), NULL);
  if (st != HX_OK) {
    /* The planner never reports a bad plan as a model problem. */
    if (hx_status_code(st) == HX_STATUS_INTERNAL && strstr(hx_status_message(st), "memory plan"))
      fail_msg("%s: %s", path, hx_status_message(st));
    hx_status_free(st);
    hc_graph_free(g);
    return false;
  }
  *out = g;
  return true;
}

/* An optimisation level and a grouping policy. */
typedef struct plan_mode {
  int level, groups;
} plan_mode;

/* Plans every model.onnx / *.onnx under dir (one level of folders) in each
 * mode; returns how many planned. */
static int plan_dir(const char* dir, const plan_mode* modes, int num_modes) {
  DIR* d = opendir(dir);
  if (!d) return 0;
  int planned = 0;
  struct dirent* e;
  char** names = NULL;
  int n = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    names = realloc(names, sizeof(char*) * (size_t)(n + 1));
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  for (int i = 0; i < n; ++i) {
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) snprintf(path, sizeof path, "%s/%s/model.onnx", dir, names[i]);
    else if (!strstr(names[i], ".onnx")) continue;
    if (access(path, R_OK) != 0) continue;
    for (int l = 0; l < num_modes; ++l) {
      hc_pass_ctx ctx;
      hc_graph* g;
      if (!plan_file(path, modes[l].level, modes[l].groups, &ctx, &g)) continue;
      char what[4200];
      snprintf(what, sizeof what, "%s -O%d (groups %d)", path, modes[l].level, modes[l].groups);
      check_plan(g, &ctx, what);
      hc_graph_free(g);
      ++planned;
    }
  }
  for (int i = 0; i < n; ++i) free(names[i]);
  free(names);
  return planned;
}

static void plans_of_every_test_model_verify(void** state) {
  const plan_mode modes[] = {{0, HC_GROUPS_AUTO}, {1, HC_GROUPS_AUTO}, {3, HC_GROUPS_AUTO}, {1, HC_GROUPS_ALL},
                             {3, HC_GROUPS_ALL}};
  int planned = plan_dir(getenv("HARNESS_TEST_MODELS"), modes, 5);
  print_message("planned %d test models\n", planned);
  assert_true(planned >= 40); /* the unit and serving models that compile, in five modes */
}

static void plans_of_onnx_node_tests_verify(void** state) {
  const char* dir = "/usr/share/libonnx-testdata/data/node";
  if (access(dir, R_OK) != 0) skip();
  const plan_mode modes[] = {{1, HC_GROUPS_AUTO}, {3, HC_GROUPS_AUTO}, {1, HC_GROUPS_ALL}};
  int planned = plan_dir(dir, modes, 3);
  assert_true(planned >= 750);
}

/* ---- hand-built graphs --------------------------------------------------- */

typedef struct builder {
  hc_graph* g;
  int counter;
  int cap_inputs;
} builder;

static void b_init(builder* b) {
  memset(b, 0, sizeof(*b));
  ts_assert_ok(hc_graph_create("hand", &b->g));
  b->g->default_opset = 17;
}

static hc_value* b_value(builder* b, hx_dtype_t dt, int rank, const int64_t* dims) {
  char name[32];
  snprintf(name, sizeof name, "v%d", b->counter++);
  hc_value* v;
  ts_assert_ok(hc_graph_add_value(b->g, name, dt, rank, dims, &v));
  return v;
}

static hc_value* b_input(builder* b, int rank, const int64_t* dims) {
  hc_value* v = b_value(b, HX_DTYPE_FLOAT32, rank, dims);
  v->kind = HC_VALUE_INPUT;
  if (b->g->num_inputs == b->cap_inputs) {
    b->cap_inputs = b->cap_inputs ? 2 * b->cap_inputs : 4;
    b->g->inputs = realloc(b->g->inputs, sizeof(hc_value*) * (size_t)b->cap_inputs);
  }
  b->g->inputs[b->g->num_inputs++] = v;
  return v;
}

static hc_value* b_const(builder* b, int rank, const int64_t* dims) {
  hc_value* v = b_value(b, HX_DTYPE_FLOAT32, rank, dims);
  size_t nb = hc_value_nbytes(v);
  ts_assert_ok(hc_value_set_const(b->g, v, calloc(1, nb ? nb : 1), nb));
  return v;
}

/* A node of op `op` reading ins[0..nin) and producing one output. */
static hc_value* b_node(builder* b, const char* op, hc_value* const* ins, int nin, hx_dtype_t dt, int rank,
                        const int64_t* dims) {
  char name[32];
  snprintf(name, sizeof name, "n%d_%s", b->counter++, op);
  hc_node* n;
  ts_assert_ok(hc_graph_add_node(b->g, name, op, "", nin, 1, &n));
  n->op = hc_op_find("", op);
  assert_non_null(n->op);
  for (int i = 0; i < nin; ++i) hc_node_set_input(n, i, ins[i]);
  hc_value* out = b_value(b, dt, rank, dims);
  n->outputs[0] = out;
  out->producer = n;
  return out;
}

static hc_value* unary(builder* b, const char* op, hc_value* x) {
  return b_node(b, op, &x, 1, x->dtype, x->rank, x->dims);
}

static hc_value* binary(builder* b, const char* op, hc_value* x, hc_value* y, const hc_value* shape_like) {
  hc_value* in[2] = {x, y};
  return b_node(b, op, in, 2, x->dtype, shape_like->rank, shape_like->dims);
}

static const hc_pass* const k_plan_passes[] = {&hc_pass_dce, &hc_pass_finalize_outputs, &hc_pass_schedule,
                                               &hc_pass_memory_plan, NULL};

/* Plans b's graph; keeps the caller's knobs (heuristic, in place, groups). */
static void b_plan(builder* b, hc_pass_ctx* ctx) {
  int only = ctx->memplan_only, no_inplace = ctx->memplan_no_inplace, groups = ctx->parallel_groups;
  memset(ctx, 0, sizeof(*ctx));
  ctx->target = ctx->host = &g_host;
  ctx->opt_level = 1;
  ctx->memplan_only = only;
  ctx->memplan_no_inplace = no_inplace;
  ctx->parallel_groups = groups;
  ts_assert_ok(hc_run_pipeline(ctx, b->g, k_plan_passes, NULL));
}

static bool shares(const hc_value* out, const hc_value* in) {
  return out->storage.base == HX_BASE_ARENA && hc_memory_plan_inplace_source(out) == root(in);
}

static const int64_t k_dims[2] = {16, 64}; /* 4 KiB of float32 */

/* x -> Relu -> a -> Sigmoid -> b -> Exp -> c -> Softmax -> y: b and c reuse
 * a's bytes; a does not overwrite the graph input; Softmax (own kernel)
 * does not overwrite c. */
static void inplace_chains_elementwise_ops(void** state) {
  builder b;
  b_init(&b);
  hc_value* x = b_input(&b, 2, k_dims);
  hc_value* a = unary(&b, "Relu", x);
  hc_value* bb = unary(&b, "Sigmoid", a);
  hc_value* c = unary(&b, "Exp", bb);
  hc_value* s = unary(&b, "Softmax", c);
  hc_value* y = unary(&b, "Neg", s);
  ts_assert_ok(hc_graph_add_output(b.g, y));
  hc_pass_ctx ctx = {0};
  b_plan(&b, &ctx);
  check_plan(b.g, &ctx, "chain");
  assert_null(hc_memory_plan_inplace_source(a)); /* x is the caller's */
  assert_true(shares(bb, a));
  assert_true(shares(c, bb));
  assert_null(hc_memory_plan_inplace_source(s)); /* Softmax has its own kernels */
  assert_int_equal(y->storage.base, HX_BASE_FIRST_IO + 1); /* outputs are the caller's */
  assert_int_equal(ctx.memplan.inplace, 2);
  /* One chain of three tensors and the Softmax output: two tensors' bytes. */
  assert_int_equal(ctx.arena_bytes, 2 * 4096);
  assert_int_equal(ctx.memplan.lower_bound_no_inplace, 2 * 4096);
  hc_graph_free(b.g);

  /* With in place off, nothing shares. */
  b_init(&b);
  x = b_input(&b, 2, k_dims);
  a = unary(&b, "Relu", x);
  bb = unary(&b, "Sigmoid", a);
  ts_assert_ok(hc_graph_add_output(b.g, unary(&b, "Exp", bb)));
  ctx.memplan_no_inplace = 1;
  b_plan(&b, &ctx);
  check_plan(b.g, &ctx, "no in place");
  assert_int_equal(ctx.memplan.inplace, 0);
  assert_null(hc_memory_plan_inplace_source(bb));
  hc_graph_free(b.g);
}

/* An operand read again later is not overwritten; the last reader may
 * overwrite either of its dead operands; a weight never. */
static void inplace_respects_later_readers_and_weights(void** state) {
  builder b;
  b_init(&b);
  hc_value* x = b_input(&b, 2, k_dims);
  hc_value* w = b_const(&b, 2, k_dims);
  hc_value* a = unary(&b, "Relu", x);
  hc_value* t = unary(&b, "Tanh", a);        /* a is read again below */
  hc_value* m = binary(&b, "Mul", w, t, t);  /* slot 0 is a weight, slot 1 dies here */
  hc_value* s = binary(&b, "Add", m, a, m);  /* both operands die here */
  ts_assert_ok(hc_graph_add_output(b.g, unary(&b, "Neg", s)));
  hc_pass_ctx ctx = {0};
  b_plan(&b, &ctx);
  check_plan(b.g, &ctx, "later readers");
  assert_null(hc_memory_plan_inplace_source(t));
  assert_true(shares(m, t));
  assert_int_equal(w->storage.base, HX_BASE_WEIGHTS);
  assert_non_null(hc_memory_plan_inplace_source(s));
  hc_graph_free(b.g);
}

/* The weights blob (passes/weights_layout.c): constants of 64 bytes or
 * more are 64-byte aligned in first-use order; smaller ones follow, each
 * aligned to the power of two at or above its size; equal bytes share one
 * place; distinct constants never overlap. */
static hc_value* b_const_filled(builder* b, int64_t n, float first) {
  hc_value* v = b_const(b, 1, (const int64_t[]){n});
  for (int64_t i = 0; i < n; ++i) ((float*)v->data)[i] = first + (float)i;
  return v;
}

static void weights_blob_packs_small_constants_and_shares_equal_ones(void** state) {
  builder b;
  b_init(&b);
  const int64_t dims[1] = {20};
  hc_value* x = b_input(&b, 1, dims);
  hc_value* big1 = b_const_filled(&b, 20, 1.0f);  /* 80 bytes */
  hc_value* s1 = b_const_filled(&b, 1, 3.0f);     /* 4 bytes */
  hc_value* s2 = b_const_filled(&b, 1, 6.0f);
  hc_value* s1_again = b_const_filled(&b, 1, 3.0f);
  hc_value* mid = b_const_filled(&b, 5, 7.0f);    /* 20 bytes: 32-byte aligned */
  hc_value* big2 = b_const_filled(&b, 20, 2.0f);
  hc_value* big1_again = b_const_filled(&b, 20, 1.0f);
  hc_value* y = binary(&b, "Add", x, big1, x);
  y = binary(&b, "Mul", y, s1, y);
  y = binary(&b, "Add", y, s2, y);
  y = binary(&b, "Mul", y, s1_again, y);
  y = binary(&b, "Sub", y, mid, y);
  y = binary(&b, "Add", y, big2, y);
  y = binary(&b, "Div", y, big1_again, y);
  ts_assert_ok(hc_graph_add_output(b.g, y));
  hc_pass_ctx ctx = {0};
  b_plan(&b, &ctx);
  check_plan(b.g, &ctx, "weights blob");
  hc_value* all[] = {big1, s1, s2, s1_again, mid, big2, big1_again};
  for (size_t i = 0; i < sizeof all / sizeof *all; ++i) assert_int_equal(all[i]->storage.base, HX_BASE_WEIGHTS);
  /* First use order for the large ones, then the small ones. */
  assert_int_equal(big1->storage.offset, 0);
  assert_int_equal(big2->storage.offset, 128);
  assert_int_equal(big1_again->storage.offset, big1->storage.offset);
  /* big2 ends at 208; then the 20-byte one at a multiple of 32, the
   * scalars at multiples of 4, the blob rounded up to 64. */
  assert_int_equal(mid->storage.offset, 224);
  assert_int_equal(s1->storage.offset, 244);
  assert_int_equal(s2->storage.offset, 248);
  assert_int_equal(s1_again->storage.offset, s1->storage.offset);
  assert_int_equal(ctx.weights_bytes, 256);
  hc_graph_free(b.g);
}

/* A view keeps its source alive: a Relu over the source is not in place
 * while the view is read later. */
static void inplace_respects_views(void** state) {
  builder b;
  b_init(&b);
  hc_value* x = b_input(&b, 2, k_dims);
  hc_value* a = unary(&b, "Exp", x);
  const int64_t flat[1] = {16 * 64};
  hc_value* v = b_node(&b, "Flatten", &a, 1, HX_DTYPE_FLOAT32, 1, flat);
  hc_value* r = unary(&b, "Relu", a);
  hc_value* r2 = unary(&b, "Sigmoid", r);
  hc_value* in[2] = {r2, v};
  hc_value* y = b_node(&b, "Concat", in, 2, HX_DTYPE_FLOAT32, 1, (const int64_t[]){2 * 16 * 64});
  ts_assert_ok(hc_graph_add_output(b.g, y));
  hc_pass_ctx ctx = {0};
  b_plan(&b, &ctx);
  check_plan(b.g, &ctx, "views");
  assert_ptr_equal(v->alias_of, a);
  assert_null(hc_memory_plan_inplace_source(r));
  assert_true(shares(r2, r));
  hc_graph_free(b.g);

  /* The last reader of a view may overwrite its source. */
  b_init(&b);
  x = b_input(&b, 2, k_dims);
  a = unary(&b, "Exp", x);
  v = b_node(&b, "Flatten", &a, 1, HX_DTYPE_FLOAT32, 1, flat);
  r = unary(&b, "Relu", v);
  ts_assert_ok(hc_graph_add_output(b.g, unary(&b, "Softmax", r)));
  b_plan(&b, &ctx);
  check_plan(b.g, &ctx, "view last reader");
  assert_true(shares(r, a));
  hc_graph_free(b.g);
}

/* Sizes: a broadcast operand and a narrowing Cast cannot be overwritten; an
 * equal-sized Cast can. */
static void inplace_needs_equal_sizes(void** state) {
  builder b;
  b_init(&b);
  hc_value* x = b_input(&b, 2, k_dims);
  const int64_t row[2] = {1, 64};
  hc_value* xr = b_input(&b, 2, row);
  hc_value* small = unary(&b, "Exp", xr);             /* 1x64 */
  hc_value* big = unary(&b, "Exp", x);                /* 16x64 */
  hc_value* s = binary(&b, "Add", small, big, big);   /* may reuse big, not small */
  hc_value* h = b_node(&b, "Cast", &s, 1, HX_DTYPE_FLOAT16, 2, k_dims);
  hc_value* i = b_node(&b, "Cast", &h, 1, HX_DTYPE_INT16, 2, k_dims);
  ts_assert_ok(hc_graph_add_output(b.g, unary(&b, "Softmax", i)));
  hc_pass_ctx ctx = {0};
  b_plan(&b, &ctx);
  check_plan(b.g, &ctx, "sizes");
  assert_true(shares(s, big));
  assert_null(hc_memory_plan_inplace_source(h)); /* 4 bytes -> 2 bytes */
  assert_true(shares(i, h));                     /* 2 bytes -> 2 bytes */
  hc_graph_free(b.g);
}

/* Branches of a parallel group: the stem's output is read by every lane, so
 * no lane overwrites it; inside a lane, chains still form. */
static void inplace_respects_parallel_lanes(void** state) {
  builder b;
  b_init(&b);
  hc_value* x = b_input(&b, 2, k_dims);
  hc_value* stem = unary(&b, "Relu", x);
  hc_value* l1 = unary(&b, "Sigmoid", stem);
  hc_value* l1b = unary(&b, "Neg", l1);
  hc_value* l2 = unary(&b, "Tanh", stem);
  hc_value* l2b = unary(&b, "Abs", l2);
  ts_assert_ok(hc_graph_add_output(b.g, binary(&b, "Add", l1b, l2b, l1b)));
  hc_pass_ctx ctx = {.parallel_groups = HC_GROUPS_ALL};
  b_plan(&b, &ctx);
  check_plan(b.g, &ctx, "lanes");
  assert_true(l1->producer->group > 0);
  assert_int_equal(l1->producer->group, l2->producer->group);
  assert_int_not_equal(l1->producer->lane, l2->producer->lane);
  assert_null(hc_memory_plan_inplace_source(l1));
  assert_null(hc_memory_plan_inplace_source(l2));
  assert_true(shares(l1b, l1));
  assert_true(shares(l2b, l2));
  hc_graph_free(b.g);
}

/* The op-level rule: fused epilogue owners, multi-output nodes and ops with
 * their own kernels are refused; the flag opts an op in. */
static void inplace_op_rule(void** state) {
  builder b;
  b_init(&b);
  hc_value* x = b_input(&b, 2, k_dims);
  hc_value* a = unary(&b, "Relu", x);
  hc_node* n = a->producer;
  assert_true(hc_memory_plan_inplace_ok(n, 0));
  n->num_fused = 1; /* the shape of a fused owner: its kernel is not the plain generator */
  assert_false(hc_memory_plan_inplace_ok(n, 0));
  n->num_fused = 0;
  assert_false(hc_memory_plan_inplace_ok(n, 1)); /* no such input */
  hc_value* s = unary(&b, "Softmax", a);
  assert_false(hc_memory_plan_inplace_ok(s->producer, 0));
  hc_op_desc flagged = *s->producer->op;
  flagged.flags |= HC_OP_INPLACE_OK;
  s->producer->op = &flagged;
  assert_true(hc_memory_plan_inplace_ok(s->producer, 0));
  s->producer->op = hc_op_find("", "Softmax");
  hc_graph_free(b.g);
}

/* ---- random DAGs --------------------------------------------------------- */

static uint32_t rnd(uint64_t* s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

/* A random graph: element-wise unary/binary ops (with broadcast operands),
 * views, casts, Softmax and Concat (own kernels), fan-out that makes
 * parallel groups, several outputs (some of them views or inputs). */
static void build_random(builder* b, uint64_t seed) {
  uint64_t s = seed * 7919 + 17;
  hc_value* pool[128];
  int np = 0;
  const int64_t shapes[3][2] = {{8, 16}, {4, 64}, {32, 32}};
  int ninputs = 1 + (int)(rnd(&s) % 2);
  for (int i = 0; i < ninputs; ++i) pool[np++] = b_input(b, 2, shapes[rnd(&s) % 3]);
  int nodes = 4 + (int)(rnd(&s) % 40);
  static const char* const unaries[] = {"Relu", "Sigmoid", "Exp", "Neg", "Tanh", "Abs"};
  static const char* const binaries[] = {"Add", "Mul", "Sub", "Max"};
  for (int k = 0; k < nodes && np < 120; ++k) {
    int span = np < 6 ? np : 6;
    hc_value* x = rnd(&s) % 4 ? pool[np - 1 - (int)(rnd(&s) % (uint32_t)span)] : pool[rnd(&s) % (uint32_t)np];
    int kind = (int)(rnd(&s) % 10);
    hc_value* out;
    if (x->dtype != HX_DTYPE_FLOAT32 && kind < 8) kind = 8; /* cast back before arithmetic */
    if (kind <= 3) {
      out = unary(b, unaries[rnd(&s) % 6], x);
    } else if (kind <= 5) {
      /* A partner of x's shape, or a row that broadcasts, or x itself. */
      hc_value* y = x;
      int pick = (int)(rnd(&s) % 3);
      if (pick == 0) {
        for (int t = np - 1; t >= 0; --t)
          if (pool[t] != x && pool[t]->dtype == HX_DTYPE_FLOAT32 && pool[t]->rank == 2 &&
              pool[t]->dims[0] == x->dims[0] && pool[t]->dims[1] == x->dims[1] && rnd(&s) % 2) {
            y = pool[t];
            break;
          }
      } else if (pick == 1 && x->rank == 2) {
        const int64_t row[2] = {1, x->dims[1]};
        y = unary(b, "Exp", b_const(b, 2, row));
      }
      out = rnd(&s) % 2 ? binary(b, binaries[rnd(&s) % 4], x, y, x) : binary(b, binaries[rnd(&s) % 4], y, x, x);
    } else if (kind == 6) {
      const int64_t flat[1] = {hc_value_numel(x)};
      const int64_t t2[2] = {x->rank == 2 ? x->dims[1] : 1, x->rank == 2 ? x->dims[0] : hc_value_numel(x)};
      out = rnd(&s) % 2 ? b_node(b, "Flatten", &x, 1, x->dtype, 1, flat) : b_node(b, "Reshape", &x, 1, x->dtype, 2, t2);
    } else if (kind == 7 && rnd(&s) % 2) {
      out = unary(b, "Softmax", x);
    } else if (kind == 7) {
      hc_value* in[2] = {x, x};
      int64_t d[HC_MAX_RANK];
      memcpy(d, x->dims, sizeof(int64_t) * (size_t)x->rank);
      d[0] *= 2;
      out = b_node(b, "Concat", in, 2, x->dtype, x->rank, d);
    } else {
      hx_dtype_t to = x->dtype != HX_DTYPE_FLOAT32 ? HX_DTYPE_FLOAT32
                                                  : (rnd(&s) % 2 ? HX_DTYPE_FLOAT16 : HX_DTYPE_INT32);
      out = b_node(b, "Cast", &x, 1, to, x->rank, x->dims);
    }
    pool[np++] = out;
  }
  ts_assert_ok(hc_graph_add_output(b->g, pool[np - 1]));
  int extra = (int)(rnd(&s) % 3);
  for (int i = 0; i < extra; ++i) {
    hc_value* v = pool[rnd(&s) % (uint32_t)np];
    bool dup = false;
    for (int j = 0; j < b->g->num_outputs; ++j) dup |= b->g->outputs[j] == v;
    if (!dup) ts_assert_ok(hc_graph_add_output(b->g, v));
  }
}

/* Offsets of every arena value and workspace, to compare plans. */
static uint64_t plan_hash(const hc_graph* g) {
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < g->num_values; ++i) {
    h = (h ^ (uint64_t)(g->values[i]->storage.base + 7)) * 1099511628211ull;
    h = (h ^ g->values[i]->storage.offset) * 1099511628211ull;
  }
  for (int s = 0; s < g->num_nodes; ++s) h = (h ^ g->nodes[s]->workspace_offset) * 1099511628211ull;
  return h;
}

/* Random DAGs planned under each grouping policy: every plan correct (all
 * three checks), deterministic, every heuristic alone correct and never
 * better than the kept one; fewer groups never raise the bound, and with no
 * groups the bound is the serial one. */
static void random_dags_plan_correctly(void** state) {
  int groups = 0, inplace = 0;
  static const int modes[3] = {HC_GROUPS_ALL, HC_GROUPS_AUTO, HC_GROUPS_NONE};
  for (uint64_t seed = 0; seed < 300; ++seed) {
    builder b;
    b_init(&b);
    build_random(&b, seed);
    uint64_t lower[3];
    for (int m = 0; m < 3; ++m) {
      hc_pass_ctx ctx = {.parallel_groups = modes[m]};
      b_plan(&b, &ctx);
      char what[64];
      snprintf(what, sizeof what, "random DAG %llu (groups %d)", (unsigned long long)seed, modes[m]);
      check_plan(b.g, &ctx, what);
      lower[m] = ctx.arena_lower_bound;
      if (modes[m] == HC_GROUPS_NONE) {
        for (int i = 0; i < b.g->num_nodes; ++i) assert_int_equal(b.g->nodes[i]->group, 0);
        assert_int_equal(ctx.arena_lower_bound, ctx.memplan.lower_bound_sequential);
      }
      if (modes[m] != HC_GROUPS_ALL) continue;
      for (int i = 0; i < b.g->num_nodes; ++i) groups += b.g->nodes[i]->group > 0;
      inplace += ctx.memplan.inplace;
      /* Deterministic: planning again gives the same bytes. */
      uint64_t h = plan_hash(b.g);
      uint64_t arena = ctx.arena_bytes;
      b_plan(&b, &ctx);
      assert_int_equal(plan_hash(b.g), h);
      assert_int_equal(ctx.arena_bytes, arena);
      /* Each heuristic alone also gives a correct plan, never smaller. */
      int count = ctx.memplan.num_heuristics;
      for (int k = 1; k <= count && k <= 10; ++k) {
        ctx.memplan_only = k;
        b_plan(&b, &ctx);
        snprintf(what, sizeof what, "random DAG %llu heuristic %d", (unsigned long long)seed, k);
        check_plan(b.g, &ctx, what);
        assert_true(ctx.arena_bytes >= arena);
      }
    }
    if (!(lower[2] <= lower[1] && lower[1] <= lower[0]))
      fail_msg("random DAG %llu: bounds all/auto/none %llu/%llu/%llu", (unsigned long long)seed,
               (unsigned long long)lower[0], (unsigned long long)lower[1], (unsigned long long)lower[2]);
    hc_graph_free(b.g);
  }
  /* The generator exercises what it should. */
  assert_true(groups > 50);
  assert_true(inplace > 100);
}

/* The kept heuristic is the first of the smallest, the same on every run;
 * an unknown heuristic number is an error. */
static void heuristic_choice_is_deterministic(void** state) {
  hc_pass_ctx ctx;
  hc_graph* g;
  char path[4096];
  snprintf(path, sizeof path, "%s/examples/tiny_cnn.onnx", getenv("HARNESS_SOURCE_DIR"));
  assert_true(plan_file(path, 3, HC_GROUPS_AUTO, &ctx, &g));
  uint64_t h = plan_hash(g);
  hc_memplan_stats first = ctx.memplan;
  uint64_t min = UINT64_MAX;
  int first_min = -1;
  for (int i = 0; i < first.num_heuristics; ++i)
    if (first.arena[i] < min) min = first.arena[i], first_min = i;
  assert_int_equal(first.chosen, first_min);
  assert_int_equal(ctx.arena_bytes, min);
  hc_graph_free(g);
  for (int rep = 0; rep < 3; ++rep) {
    assert_true(plan_file(path, 3, HC_GROUPS_AUTO, &ctx, &g));
    assert_int_equal(plan_hash(g), h);
    assert_int_equal(ctx.memplan.chosen, first.chosen);
    assert_string_equal(ctx.memplan.heuristic[ctx.memplan.chosen], first.heuristic[first.chosen]);
    hc_graph_free(g);
  }
  builder b;
  b_init(&b);
  ts_assert_ok(hc_graph_add_output(b.g, unary(&b, "Relu", unary(&b, "Exp", b_input(&b, 2, k_dims)))));
  memset(&ctx, 0, sizeof ctx);
  ctx.target = ctx.host = &g_host;
  ctx.memplan_only = 99;
  ts_assert_error(hc_run_pipeline(&ctx, b.g, k_plan_passes, NULL), HX_STATUS_INVALID_ARGUMENT, "no packing heuristic");
  hc_graph_free(b.g);
}

/* The verifier derives liveness itself: a plan that forgets a reader, puts
 * a tensor over a live one or claims an illegal in-place pair is refused. */
/* ---- Conv/Gemm/MatMul over a fused residual ------------------------------ */

/* Plans, at -O3 for target t, Softmax(r0) -> r; Conv(x, W, B) + r -> Relu
 * -> Softmax -> y (x is r itself when same_input), so that r and the
 * convolution's output are arena tensors and the Add and Relu fuse into its
 * epilogue. Returns the Conv node; *out_r is r. */
static hc_node* plan_residual_conv(builder* b, hc_pass_ctx* ctx, const hc_target* t, int64_t C, int64_t H, int64_t M,
                                   int64_t k, bool same_input, hc_value** out_r) {
  b_init(b);
  int64_t O = H - k + 1;
  int64_t rdims[4] = {1, M, O, O}, xdims[4] = {1, C, H, H}, wdims[4] = {M, C, k, k}, bdims[1] = {M};
  hc_value* r = unary(b, "Softmax", b_input(b, 4, rdims));
  hc_value* x = same_input ? r : b_input(b, 4, xdims);
  hc_value* cin[3] = {x, b_const(b, 4, wdims), b_const(b, 1, bdims)};
  hc_value* c = b_node(b, "Conv", cin, 3, HX_DTYPE_FLOAT32, 4, rdims);
  hc_value* a = binary(b, "Add", c, r, c);
  ts_assert_ok(hc_graph_add_output(b->g, unary(b, "Softmax", unary(b, "Relu", a))));
  memset(ctx, 0, sizeof(*ctx));
  ctx->target = t;
  ctx->host = &g_host;
  ctx->opt_level = 3;
  ts_assert_ok(hc_run_pipeline(ctx, b->g, hc_pipeline_for_level(3), NULL));
  check_plan(b->g, ctx, "residual conv");
  hc_node* conv = NULL;
  for (int i = 0; i < b->g->num_nodes; ++i)
    if (b->g->nodes[i]->op == hc_op_find("", "Conv")) conv = b->g->nodes[i];
  assert_non_null(conv);
  assert_int_equal(conv->num_fused, 2); /* Add and Relu in its epilogue */
  *out_r = r;
  return conv;
}

/* The output takes the residual's bytes exactly where the kernel plan
 * allows it: the 1x1 GEMM path with one reduction slice, the channels
 * kernel even with several (its partial sums wait on the stack); not when
 * the GEMM splits the reduction (partial sums parked in the output), which
 * depends on the target's vector width, nor when the residual is also the
 * convolution's input. The verifier follows the kernel's answer. */
static void inplace_residual_follows_kernel_plan(void** state) {
  hc_target v3, v4;
  ts_assert_ok(hc_target_init(&v3, "x86-64-v3", NULL));
  ts_assert_ok(hc_target_init(&v4, "x86-64-v4", NULL));
  builder b;
  hc_pass_ctx ctx;
  hc_value* r;
  const hc_op_desc* conv_op = hc_op_find("", "Conv");
  assert_non_null(conv_op->inplace_input);

  /* 1x1, K = 64: one slice on every target. */
  for (int i = 0; i < 2; ++i) {
    hc_node* n = plan_residual_conv(&b, &ctx, i ? &v4 : &v3, 64, 32, 64, 1, false, &r);
    assert_true(shares(n->outputs[0], r));
    assert_int_equal(ctx.memplan.inplace, 1);
    assert_true(ctx.arena_lower_bound < ctx.memplan.lower_bound_no_inplace);
    if (i == 1) {
      /* A verifier that did not take the kernel's word would accept this plan
       * with the answer withdrawn. */
      n->inplace_inputs = 0;
      ts_assert_error(hc_memory_plan_verify(b.g, ctx.arena_bytes), HX_STATUS_INTERNAL, "live together but overlap");
    }
    hc_graph_free(b.g);
  }
  /* 1x1, K = 1024: the product splits the reduction on every target. */
  for (int i = 0; i < 2; ++i) {
    hc_node* n = plan_residual_conv(&b, &ctx, i ? &v4 : &v3, 1024, 24, 32, 1, false, &r);
    assert_false(shares(n->outputs[0], r));
    assert_int_equal(n->inplace_inputs, 0);
    for (int k = 0; k < n->num_inputs; ++k) assert_false(conv_op->inplace_input(i ? &v4 : &v3, n, k));
    assert_int_equal(ctx.memplan.inplace, 0);
    hc_graph_free(b.g);
  }
  /* 1x1, K = 192 over 28x28, 512 channels: AVX-512's wider tile (8 x 3
   * vectors) takes 106-deep slices (two of them), AVX2's 320-deep ones (one). */
  hc_node* n = plan_residual_conv(&b, &ctx, &v4, 192, 28, 512, 1, false, &r);
  assert_false(shares(n->outputs[0], r));
  hc_graph_free(b.g);
  n = plan_residual_conv(&b, &ctx, &v3, 192, 28, 512, 1, false, &r);
  assert_true(shares(n->outputs[0], r));
  hc_graph_free(b.g);
  /* The slices take 5/8 of the target's L1: Zen 5's 48 KiB hold the same
   * tile's 160-deep ones, so K = 192 is one slice there, and in place. */
  hc_target z5;
  ts_assert_ok(hc_target_init(&z5, NULL, "znver5"));
  assert_int_equal(z5.l1d_bytes, 48 * 1024);
  assert_int_equal(v4.l1d_bytes, 32 * 1024);
  n = plan_residual_conv(&b, &ctx, &z5, 192, 28, 512, 1, false, &r);
  assert_true(shares(n->outputs[0], r));
  hc_graph_free(b.g);
  /* ResNet-50's second stage (K = 128): one slice on both, so in place. */
  for (int i = 0; i < 2; ++i) {
    n = plan_residual_conv(&b, &ctx, i ? &v4 : &v3, 128, 28, 512, 1, false, &r);
    assert_true(shares(n->outputs[0], r));
    hc_graph_free(b.g);
  }
  /* 3x3 over 7x7 with 256 input channels: the channels kernel, several
   * reduction slices, partial sums on the stack: allowed. */
  for (int i = 0; i < 2; ++i) {
    n = plan_residual_conv(&b, &ctx, i ? &v4 : &v3, 256, 9, 64, 3, false, &r);
    assert_true(shares(n->outputs[0], r));
    hc_graph_free(b.g);
  }
  /* The residual is the convolution's input: every task reads all of it. */
  n = plan_residual_conv(&b, &ctx, &v4, 64, 20, 64, 1, true, &r);
  assert_false(shares(n->outputs[0], r));
  assert_int_equal(n->inplace_inputs, 0);
  hc_graph_free(b.g);
}

static void verifier_catches_bad_plans(void** state) {
  builder b;
  b_init(&b);
  hc_value* x = b_input(&b, 2, k_dims);
  hc_value* a = unary(&b, "Exp", x);
  hc_value* t = unary(&b, "Tanh", a);
  hc_value* s = binary(&b, "Add", t, a, t); /* a is read late */
  ts_assert_ok(hc_graph_add_output(b.g, unary(&b, "Softmax", s)));
  hc_pass_ctx ctx = {0};
  b_plan(&b, &ctx);
  check_plan(b.g, &ctx, "base");
  /* t over a: t's producer is not a's last reader. */
  uint64_t saved = t->storage.offset;
  t->storage.offset = a->storage.offset;
  ts_assert_error(hc_memory_plan_verify(b.g, ctx.arena_bytes), HX_STATUS_INTERNAL, "live together but overlap");
  t->storage.offset = saved;
  /* A recorded lifetime that ends before the last reader. */
  int last = a->live_last;
  a->live_last = a->live_first;
  ts_assert_error(hc_memory_plan_verify(b.g, ctx.arena_bytes), HX_STATUS_INTERNAL, "recorded live");
  a->live_last = last;
  ts_assert_ok(hc_memory_plan_verify(b.g, ctx.arena_bytes));
  hc_graph_free(b.g);
}

/* ---- --emit memplan ----------------------------------------------------- */

static char* slurp(const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* s = malloc((size_t)n + 1);
  s[fread(s, 1, (size_t)n, f)] = 0;
  fclose(f);
  return s;
}

static double num(const cJSON* o, const char* key) {
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v)) fail_msg("memplan: '%s' is not a number", key);
  return v->valuedouble;
}

/* The first tensor of the in-place chain `name` belongs to (following
 * inplace_of links through the tensors list). */
static const char* chain_root(const cJSON* tensors, const char* name) {
  for (int hops = 0; hops < 10000; ++hops) {
    const char* next = NULL;
    for (int i = 0; i < cJSON_GetArraySize(tensors) && !next; ++i) {
      const cJSON* t = cJSON_GetArrayItem(tensors, i);
      const cJSON* p = cJSON_GetObjectItemCaseSensitive(t, "inplace_of");
      if (!strcmp(cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring, name) && cJSON_IsString(p))
        next = p->valuestring;
    }
    if (!next) return name;
    name = next;
  }
  fail_msg("memplan JSON: inplace_of links form a cycle at '%s'", name);
  return name;
}

static void emit_memplan_json_and_svg(void** state) {
  char dir[] = "/tmp/harness-memplan-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char json_path[128], svg_path[128], svg_only[128];
  snprintf(json_path, sizeof json_path, "%s/plan.json", dir);
  snprintf(svg_path, sizeof svg_path, "%s/plan.svg", dir);
  snprintf(svg_only, sizeof svg_only, "%s/only.svg", dir);
  hc_compile_options o;
  hc_compile_options_init(&o);
  o.input_path = ts_model("branches.onnx");
  o.output_path = json_path;
  o.emit = "memplan";
  o.opt_level = 1;
  o.parallel_groups = HC_PARALLEL_GROUPS_ALL; /* lanes in the JSON */
  ts_assert_ok(hc_compile(&o));
  o.output_path = svg_only;
  o.emit = "memplan-svg";
  ts_assert_ok(hc_compile(&o));

  char* text = slurp(json_path);
  assert_non_null(text);
  cJSON* root_j = cJSON_Parse(text);
  assert_non_null(root_j);
  double arena = num(root_j, "arena_bytes"), lower = num(root_j, "lower_bound_bytes");
  assert_true(arena >= lower && lower > 0);
  assert_true(num(root_j, "lower_bound_no_inplace_bytes") >= lower);
  assert_true(num(root_j, "lower_bound_sequential_bytes") <= lower);
  int steps = (int)num(root_j, "steps");
  assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root_j, "heuristic")));
  assert_true(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root_j, "heuristics")) >= 10);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root_j, "schedule")), steps);
  /* Super-steps and lanes from the schedule: consecutive steps of one
   * nonzero group form one super-step. */
  const cJSON* sched = cJSON_GetObjectItemCaseSensitive(root_j, "schedule");
  int* sg = calloc((size_t)steps + 1, sizeof(int));
  int* lane = calloc((size_t)steps + 1, sizeof(int));
  for (int t = 0, prev = 0; t < steps; ++t) {
    const cJSON* e = cJSON_GetArrayItem(sched, t);
    int group = (int)num(e, "group");
    sg[t] = t == 0 ? 0 : sg[t - 1] + !(group && group == prev);
    lane[t] = (int)num(e, "lane");
    prev = group;
  }
  const cJSON* tensors = cJSON_GetObjectItemCaseSensitive(root_j, "tensors");
  assert_true(cJSON_IsArray(tensors));
  int n = cJSON_GetArraySize(tensors);
  assert_true(n >= 4);
  char* svg = slurp(svg_path);
  char* svg2 = slurp(svg_only);
  assert_non_null(svg);
  assert_non_null(svg2);
  assert_string_equal(svg, svg2);
  assert_true(!strncmp(svg, "<?xml", 5));
  assert_non_null(strstr(svg, "<svg"));
  for (int i = 0; i < n; ++i) {
    const cJSON* t = cJSON_GetArrayItem(tensors, i);
    const cJSON* name = cJSON_GetObjectItemCaseSensitive(t, "name");
    assert_true(cJSON_IsString(name));
    double size = num(t, "size"), off = num(t, "offset"), first = num(t, "first"), last = num(t, "last");
    assert_true(off + size <= arena);
    assert_true((int64_t)off % 64 == 0);
    assert_true(first >= 0 && first <= last && last < steps);
    /* The picture names every tensor in a tooltip. */
    char title[256];
    snprintf(title, sizeof title, "<title>%s ", name->valuestring);
    if (!strstr(svg, title)) {
      snprintf(title, sizeof title, "<title>%s", name->valuestring);
      if (!strstr(svg, title)) fail_msg("the SVG has no tooltip for '%s'", name->valuestring);
    }
    /* The JSON alone proves the plan, by the documented rule: two tensors
     * are live together unless their super-steps are disjoint or one ends
     * before the other starts in one lane of their one shared super-step;
     * overlapping tensors live together only as an in-place pair. */
    for (int j = i + 1; j < n; ++j) {
      const cJSON* u = cJSON_GetArrayItem(tensors, j);
      double usz = num(u, "size"), uoff = num(u, "offset");
      int f1 = (int)first, l1 = (int)last, f2 = (int)num(u, "first"), l2 = (int)num(u, "last");
      bool bytes = off < uoff + usz && uoff < off + size;
      bool before12 = sg[l1] == sg[f2] && lane[l1] == lane[f2] && l1 < f2;
      bool before21 = sg[l2] == sg[f1] && lane[l2] == lane[f1] && l2 < f1;
      bool time = !(sg[l1] < sg[f2] || sg[l2] < sg[f1]) && !before12 && !before21;
      if (!bytes || !time) continue;
      const char* un = cJSON_GetObjectItemCaseSensitive(u, "name")->valuestring;
      if (strcmp(chain_root(tensors, name->valuestring), chain_root(tensors, un)) != 0)
        fail_msg("memplan JSON: '%s' and '%s' overlap", name->valuestring, un);
    }
  }
  free(sg);
  free(lane);
  cJSON_Delete(root_j);
  free(text);
  free(svg);
  free(svg2);
  unlink(json_path);
  unlink(svg_path);
  unlink(svg_only);
  rmdir(dir);
}

int main(void) {
  hc_target_host(&g_host);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(inplace_chains_elementwise_ops),
      cmocka_unit_test(inplace_respects_later_readers_and_weights),
      cmocka_unit_test(weights_blob_packs_small_constants_and_shares_equal_ones),
      cmocka_unit_test(inplace_respects_views),
      cmocka_unit_test(inplace_needs_equal_sizes),
      cmocka_unit_test(inplace_respects_parallel_lanes),
      cmocka_unit_test(inplace_op_rule),
      cmocka_unit_test(inplace_residual_follows_kernel_plan),
      cmocka_unit_test(verifier_catches_bad_plans),
      cmocka_unit_test(random_dags_plan_correctly),
      cmocka_unit_test(heuristic_choice_is_deterministic),
      cmocka_unit_test(plans_of_every_test_model_verify),
      cmocka_unit_test(plans_of_onnx_node_tests_verify),
      cmocka_unit_test(emit_memplan_json_and_svg),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
