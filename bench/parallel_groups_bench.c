/* Inter-op parallelism: the same kernels run as one parallel group (lanes
 * on the shared pool) against the sequential schedule (each kernel a group
 * of its own, its tasks spread over the pool), plus the executor's own
 * overhead per kernel.
 *
 *   harness-parallel-bench [--lanes L] [--chain C] [--kernel-us U] [--tasks T]
 *                          [--threads N] [--reps R] [--mode spin|sleep]
 *
 * Each lane is a chain of C kernels. A kernel is T tasks that each spin
 * U / T us, so with T = 1 a kernel is indivisible (the case intra-op loops
 * cannot help, e.g. small kernels of an Inception branch) and with large T it
 * is a data-parallel loop. --mode sleep makes tasks wait instead of spin: the
 * overlap the executor achieves then shows even on a machine whose cores are
 * busy with other work (spinning kernels measure real CPU parallelism and
 * need idle cores). Reports median wall time per run of both
 * schedules and the speed-up, then the cost of running empty kernels. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "executor.h"

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t g_task_ns;
static int g_sleep;

static void spin_kernel(void* const* bases, int64_t begin, int64_t end) {
  int64_t until = now_ns() + g_task_ns * (end - begin);
  if (g_sleep) {
    struct timespec ts = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
    }
    return;
  }
  while (now_ns() < until) {
  }
}

static void empty_kernel(void* const* bases, int64_t begin, int64_t end) {}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Median ms per run of `plan` over reps runs. */
static double time_plan(const hx_exec_plan* plan, hx_pool_t* pool, int reps) {
  hx_exec_scratch* scratch;
  hx_status_free(hx_exec_scratch_create(plan->max_lanes, &scratch));
  void* bases[4] = {0};
  double* t = malloc(sizeof(double) * (size_t)reps);
  hx_exec_run(plan, pool, scratch, bases); /* warm-up */
  for (int r = 0; r < reps; ++r) {
    int64_t t0 = now_ns();
    hx_exec_run(plan, pool, scratch, bases);
    t[r] = (double)(now_ns() - t0) / 1e6;
  }
  qsort(t, (size_t)reps, sizeof(double), cmp_double);
  double med = t[reps / 2];
  free(t);
  hx_exec_scratch_free(scratch);
  return med;
}

int main(int argc, char** argv) {
  int lanes = 4, chain = 4, tasks = 1, threads = 2, reps = 41;
  double kernel_us = 500;
  static const struct option opts[] = {{"lanes", required_argument, NULL, 'l'}, {"chain", required_argument, NULL, 'c'},
                                       {"kernel-us", required_argument, NULL, 'u'}, {"tasks", required_argument, NULL, 't'},
                                       {"threads", required_argument, NULL, 'n'}, {"reps", required_argument, NULL, 'r'},
                                       {"mode", required_argument, NULL, 'm'}, {NULL, 0, NULL, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (o) {
      case 'l': lanes = atoi(optarg); break;
      case 'c': chain = atoi(optarg); break;
      case 'u': kernel_us = atof(optarg); break;
      case 't': tasks = atoi(optarg); break;
      case 'n': threads = atoi(optarg); break;
      case 'r': reps = atoi(optarg); break;
      case 'm': g_sleep = !strcmp(optarg, "sleep"); break;
      default: fprintf(stderr, "see the comment at the top of bench/parallel_groups_bench.c\n"); return 2;
    }
  }
  if (lanes < 1 || chain < 1 || tasks < 1 || threads < 1 || reps < 1) return 2;
  g_task_ns = (int64_t)(kernel_us * 1000 / tasks);
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* sleeping tasks wake on time; the pool inherits it */
  int n = lanes * chain;
  hx_abi_kernel* grouped = calloc((size_t)n, sizeof(hx_abi_kernel));
  hx_abi_kernel* sequential = calloc((size_t)n, sizeof(hx_abi_kernel));
  for (int l = 0; l < lanes; ++l)
    for (int k = 0; k < chain; ++k) {
      int i = l * chain + k;
      grouped[i] = (hx_abi_kernel){"k", spin_kernel, tasks, 0, 0, HX_STAGE_INFER, HX_DEVICE_CPU, 0, l};
      sequential[i] = grouped[i];
      sequential[i].group = i;
      sequential[i].lane = 0;
    }
  hx_exec_plan pg, ps;
  hx_status_free(hx_exec_plan_build(grouped, (uint32_t)n, &pg));
  hx_status_free(hx_exec_plan_build(sequential, (uint32_t)n, &ps));
  hx_pool_t* pool;
  hx_status_t st = hx_pool_create(threads, 0, &pool);
  if (st != HX_OK) return 1;
  double tg = time_plan(&pg, pool, reps), ts = time_plan(&ps, pool, reps);
  double ideal = kernel_us * n / 1000.0;
  printf("%d lanes x %d kernels x %.0f us (%d tasks each, %s), %d threads:\n", lanes, chain, kernel_us, tasks,
         g_sleep ? "sleeping" : "spinning", threads);
  printf("  sequential schedule %.3f ms, parallel group %.3f ms: speed-up %.2fx (work %.3f ms, ideal %.3f ms)\n", ts, tg,
         ts / tg, ideal, ideal / threads);

  /* Executor overhead: empty kernels, one group each or all in one group. */
  for (int i = 0; i < n; ++i) grouped[i].fn = sequential[i].fn = empty_kernel;
  double eg = time_plan(&pg, pool, reps * 10), es = time_plan(&ps, pool, reps * 10);
  printf("  overhead per kernel (empty kernels): sequential %.2f us, in a parallel group %.2f us\n", es * 1e3 / n,
         eg * 1e3 / n);
  hx_pool_free(pool);
  hx_exec_plan_release(&pg);
  hx_exec_plan_release(&ps);
  free(grouped);
  free(sequential);
  return 0;
}
