/* How evenly a kernel's tasks spread over the runtime's threads.
 *
 * A kernel's work is cut into tasks at compile time, and the thread count
 * is only known at run time. The pool (runtime/thread_pool.c) balances
 * whole tasks, so a kernel of 5 equal tasks on 2 threads takes 3 task times
 * instead of 2.5: at 2 threads, odd task counts cost MobileNetV2 about 3% of
 * its time. Planners that can choose between splits score them with this. */
#ifndef HARNESS_OPS_TASK_BALANCE_H
#define HARNESS_OPS_TASK_BALANCE_H

#include <stdint.h>

/* Time of the slowest of `threads` threads over tasks of the given works,
 * assigned longest first to the least loaded thread (the pool's stealing
 * comes close to that), relative to a perfect split (>= 1). */
double hc_task_makespan(const double* work, int64_t n, int threads);

/* The planners' score of a split: the makespan ratios at 2 and 4 threads,
 * weighted 2:1 (1 = perfectly even on both). */
double hc_task_balance(const double* work, int64_t n);

/* What a planner adds to a split's balance score for cutting the work into
 * n tasks instead of the n0 its shape needs: 0.02 per doubling (finer
 * tasks re-read operands and run shorter loops). */
double hc_task_split_penalty(int64_t n0, int64_t n);

/* Tasks the planners' balance search considers at most. */
#define HC_TASK_BALANCE_MAX 512

#endif /* HARNESS_OPS_TASK_BALANCE_H */
