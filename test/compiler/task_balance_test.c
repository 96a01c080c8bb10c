/* Tests compiler/ops/task_balance.c: the makespan model the kernel planners
 * use to choose task splits that spread evenly over 2 and 4 threads. */
#include <math.h>

#include "compiler/ops/task_balance.h"
#include "test/support/test_support.h"

static void equal_tasks(void** state) {
  double w[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  assert_true(fabs(hc_task_makespan(w, 4, 2) - 1.0) < 1e-12);
  /* 5 tasks on 2 threads: one thread runs 3 of 2.5. */
  assert_true(fabs(hc_task_makespan(w, 5, 2) - 1.2) < 1e-12);
  /* 5 on 4: 2 of 1.25. */
  assert_true(fabs(hc_task_makespan(w, 5, 4) - 1.6) < 1e-12);
  assert_true(fabs(hc_task_balance(w, 8) - 1.0) < 1e-12);
  assert_true(hc_task_balance(w, 7) > hc_task_balance(w, 8));
}

static void uneven_tasks(void** state) {
  /* Seven blocks of 3 tiles and a ragged one of 1: 12 + 10 on 2 threads
   * (no split makes 11 + 11), 6 of 5.5 on 4. */
  double w[8] = {3, 3, 3, 3, 3, 3, 3, 1};
  assert_true(fabs(hc_task_makespan(w, 8, 2) - 12.0 / 11.0) < 1e-12);
  assert_true(fabs(hc_task_makespan(w, 8, 4) - 6.0 / 5.5) < 1e-12);
  /* Longest first: {1, 1, 2} on 2 threads is 2 + 2, not 1+2 | 1. */
  double v[3] = {1, 1, 2};
  assert_true(fabs(hc_task_makespan(v, 3, 2) - 1.0) < 1e-12);
}

static void trivial_cases(void** state) {
  double w[2] = {1, 2};
  assert_true(hc_task_makespan(w, 2, 1) == 1.0);
  assert_true(hc_task_makespan(w, 0, 2) == 1.0);
  /* Many tasks are taken to balance. */
  assert_true(hc_task_makespan(w, HC_TASK_BALANCE_MAX + 1, 2) == 1.0);
}

static void split_penalty(void** state) {
  assert_true(hc_task_split_penalty(8, 8) == 0.0);
  assert_true(hc_task_split_penalty(8, 4) == 0.0);
  assert_true(fabs(hc_task_split_penalty(8, 16) - 0.02) < 1e-12);
  /* 13 -> 14 tasks: a small price for a large balance gain at 2 threads. */
  double w[14] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  assert_true(hc_task_balance(w, 14) + hc_task_split_penalty(13, 14) < hc_task_balance(w, 13));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(equal_tasks),
      cmocka_unit_test(uneven_tasks),
      cmocka_unit_test(trivial_cases),
      cmocka_unit_test(split_penalty),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
