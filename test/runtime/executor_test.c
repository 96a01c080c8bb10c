/* Tests runtime/executor.c: plans built from kernel tables, and parallel
 * groups run on the shared pool (lane order kept, every task exactly once,
 * lanes of a group really overlapping, malformed tables refused). Kernels are
 * plain C functions here, so no compiler is involved. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "executor.h"
#include "test/runtime/rt_support.h"

#define TASKS 64

/* Shared by the test kernels through bases[0]. */
typedef struct trace {
  atomic_int step;             /* global order counter */
  atomic_int done_at[8];       /* step at which kernel k finished */
  atomic_int hits[8][TASKS];   /* per kernel, per task */
  atomic_int in_group;         /* probe kernels running now */
  atomic_int max_in_group;
  int threads;
} trace;

static void record(void* const* bases, int k, int64_t begin, int64_t end) {
  trace* t = bases[0];
  for (int64_t i = begin; i < end; ++i) atomic_fetch_add(&t->hits[k][i], 1);
}

static void finish(void* const* bases, int k) {
  trace* t = bases[0];
  atomic_store(&t->done_at[k], atomic_fetch_add(&t->step, 1) + 1);
}

/* k1 and k4 sit in different lanes of one group. With two or more threads
 * each waits (up to 10 s, a generous bound that only a stalled machine
 * reaches) for the other to arrive: they meet only if the lanes really run
 * at the same time. No timing is asserted: meeting is immediate when they
 * overlap, and the bound only turns a hang into a failure. */
static void probe(void* const* bases) {
  trace* t = bases[0];
  int now = atomic_fetch_add(&t->in_group, 1) + 1;
  int prev = atomic_load(&t->max_in_group);
  while (now > prev && !atomic_compare_exchange_weak(&t->max_in_group, &prev, now)) {
  }
  for (int i = 0; t->threads > 1 && i < 100000 && atomic_load(&t->max_in_group) < 2; ++i) usleep(100);
  atomic_fetch_sub(&t->in_group, 1);
}

#define SINGLE(K, PROBE)                                             \
  static void k##K(void* const* bases, int64_t begin, int64_t end) { \
    record(bases, K, begin, end);                                    \
    if (PROBE) probe(bases);                                         \
    finish(bases, K);                                                \
  }
SINGLE(0, 0)
SINGLE(1, 1)
SINGLE(4, 1)

/* Multi-task kernels: finish() marks only when the last task is recorded. */
#define MULTI(K)                                                      \
  static void k##K(void* const* bases, int64_t begin, int64_t end) {  \
    record(bases, K, begin, end);                                     \
    trace* t = bases[0];                                              \
    int all = 1;                                                      \
    for (int i = 0; i < TASKS; ++i) all &= atomic_load(&t->hits[K][i]) > 0; \
    if (all) finish(bases, K);                                        \
  }
MULTI(2)
MULTI(3)
MULTI(5)

/* Schedule: k0 alone; group {lane 0: k1 -> k2, lane 1: k3 -> k4}; k5 alone. */
static const hx_abi_kernel k_table[] = {
    {"k0", k0, 1, 0, 0, HX_STAGE_INFER, HX_DEVICE_CPU, 0, 0},
    {"k1", k1, 1, 0, 0, HX_STAGE_INFER, HX_DEVICE_CPU, 1, 0},
    {"k2", k2, TASKS, 0, 0, HX_STAGE_INFER, HX_DEVICE_CPU, 1, 0},
    {"k3", k3, TASKS, 0, 0, HX_STAGE_INFER, HX_DEVICE_CPU, 1, 1},
    {"k4", k4, 1, 0, 0, HX_STAGE_INFER, HX_DEVICE_CPU, 1, 1},
    {"k5", k5, TASKS, 0, 0, HX_STAGE_INFER, HX_DEVICE_CPU, 2, 0},
};

static void plan_groups_and_lanes(void** state) {
  hx_exec_plan p;
  rt_assert_ok(hx_exec_plan_build(k_table, 6, &p));
  assert_int_equal(p.num_groups, 3);
  assert_int_equal(p.max_lanes, 2);
  assert_int_equal(p.groups[1].first, 1);
  assert_int_equal(p.groups[1].count, 4);
  assert_int_equal(p.groups[1].num_lanes, 2);
  /* Lane 0 of the group: k1, k2; lane 1: k3, k4. */
  uint32_t l0 = p.groups[1].lane_first;
  assert_int_equal(p.lane_start[l0 + 1] - p.lane_start[l0], 2);
  assert_int_equal(p.lane_kernels[p.lane_start[l0]], 1);
  assert_int_equal(p.lane_kernels[p.lane_start[l0] + 1], 2);
  assert_int_equal(p.lane_kernels[p.lane_start[l0 + 1]], 3);
  assert_int_equal(p.lane_kernels[p.lane_start[l0 + 1] + 1], 4);
  hx_exec_plan_release(&p);
}

static void malformed_tables_are_refused(void** state) {
  hx_abi_kernel bad[3] = {k_table[0], k_table[1], k_table[0]}; /* group 0, 1, 0 */
  hx_exec_plan p;
  rt_assert_error(hx_exec_plan_build(bad, 3, &p), HX_STATUS_INCOMPATIBLE, "group ids decrease");
  hx_abi_kernel neg[1] = {k_table[0]};
  neg[0].lane = -1;
  rt_assert_error(hx_exec_plan_build(neg, 1, &p), HX_STATUS_INCOMPATIBLE, "lane -1");
  rt_assert_ok(hx_exec_plan_build(NULL, 0, &p));
  assert_int_equal(p.num_groups, 0);
  hx_exec_plan_release(&p);
}

/* Runs the table on 1..4 threads, many times: each task exactly once, lane
 * order kept, groups in order, and with 2+ threads the two lanes overlap. */
static void runs_groups_on_the_pool(void** state) {
  hx_exec_plan p;
  rt_assert_ok(hx_exec_plan_build(k_table, 6, &p));
  for (int threads = 1; threads <= 4; ++threads) {
    hx_pool_t* pool;
    hx_exec_scratch* scratch;
    rt_assert_ok(hx_pool_create(threads, 0, &pool));
    rt_assert_ok(hx_exec_scratch_create(p.max_lanes, &scratch));
    for (int rep = 0; rep < 5; ++rep) {
      trace* t = calloc(1, sizeof(trace));
      t->threads = threads;
      void* bases[1] = {t};
      hx_exec_run(&p, pool, scratch, bases);
      for (int k = 0; k < 6; ++k) {
        int64_t tasks = k_table[k].tasks;
        for (int64_t i = 0; i < tasks; ++i) assert_int_equal(atomic_load(&t->hits[k][i]), 1);
        assert_true(atomic_load(&t->done_at[k]) > 0);
      }
      /* Lane order, and group boundaries. */
      assert_true(t->done_at[0] < t->done_at[1]);
      assert_true(t->done_at[1] < t->done_at[2]);
      assert_true(t->done_at[3] < t->done_at[4]);
      assert_true(t->done_at[0] < t->done_at[3]);
      assert_true(t->done_at[2] < t->done_at[5]);
      assert_true(t->done_at[4] < t->done_at[5]);
      /* One thread never overlaps lanes; more always do. */
      if (threads == 1) assert_int_equal(atomic_load(&t->max_in_group), 1);
      else assert_int_equal(atomic_load(&t->max_in_group), 2);
      free(t);
    }
    hx_exec_scratch_free(scratch);
    hx_pool_free(pool);
  }
  hx_exec_plan_release(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(plan_groups_and_lanes),
      cmocka_unit_test(malformed_tables_are_refused),
      cmocka_unit_test(runs_groups_on_the_pool),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
