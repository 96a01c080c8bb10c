/* Task balance scores for the kernel planners (see task_balance.h). */
#include "compiler/ops/task_balance.h"

#include <math.h>
#include <stdlib.h>

static int by_work_desc(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

double hc_task_makespan(const double* work, int64_t n, int threads) {
  /* Beyond HC_TASK_BALANCE_MAX tasks the last ones even out the load. */
  if (n <= 0 || threads <= 1 || n > HC_TASK_BALANCE_MAX) return 1.0;
  double sorted[HC_TASK_BALANCE_MAX], load[16] = {0}, total = 0;
  if (threads > 16) threads = 16;
  for (int64_t i = 0; i < n; ++i) {
    sorted[i] = work[i];
    total += work[i];
  }
  if (total <= 0) return 1.0;
  qsort(sorted, (size_t)n, sizeof sorted[0], by_work_desc);
  for (int64_t i = 0; i < n; ++i) {
    int least = 0;
    for (int t = 1; t < threads; ++t)
      if (load[t] < load[least]) least = t;
    load[least] += sorted[i];
  }
  double most = 0;
  for (int t = 0; t < threads; ++t)
    if (load[t] > most) most = load[t];
  return most / (total / threads);
}

double hc_task_balance(const double* work, int64_t n) {
  return (2.0 * hc_task_makespan(work, n, 2) + hc_task_makespan(work, n, 4)) / 3.0;
}

double hc_task_split_penalty(int64_t n0, int64_t n) {
  return n > n0 && n0 > 0 ? 0.02 * log2((double)n / (double)n0) : 0.0;
}
