/* Running a compiled schedule: kernels in order, parallel groups spread over
 * one thread pool.
 *
 * A plan is built once per program at model load (it only reads the
 * artifact's kernel table) and says, for every parallel group, which kernels
 * belong to which lane. Running it allocates nothing: the per-run state lives
 * in a scratch object that the session creates once.
 *
 * A group with one lane runs its kernels one after another, each kernel's
 * tasks spread over the pool (intra-op parallelism). A group with several
 * lanes runs them cooperatively on the same pool: each pool thread claims a
 * whole lane and runs its kernels; a thread that finds no unclaimed lane
 * helps with the tasks of kernels other lanes are running. So inter-op and
 * intra-op parallelism share the pool's threads and there are never more busy
 * threads than the pool has. */
#ifndef HARNESS_RUNTIME_EXECUTOR_H
#define HARNESS_RUNTIME_EXECUTOR_H

#include <stdint.h>

#include "harness/artifact_abi.h"
#include "harness/status.h"
#include "thread_pool.h"

typedef struct hx_exec_group {
  uint32_t first, count;          /* kernels [first, first + count) in schedule order */
  uint32_t lane_first, num_lanes; /* lanes [lane_first, lane_first + num_lanes) of the plan */
} hx_exec_group;

typedef struct hx_exec_plan {
  const hx_abi_kernel* kernels; /* lent by the artifact */
  uint32_t num_kernels;
  hx_exec_group* groups;
  uint32_t num_groups;
  /* Lane j holds kernels lane_kernels[lane_start[j] .. lane_start[j + 1]),
   * in schedule order. */
  uint32_t* lane_start;
  uint32_t* lane_kernels;
  uint32_t max_lanes; /* most lanes of any group */
} hx_exec_plan;

/* Builds the plan for a kernel table. Fails (INCOMPATIBLE) on a table whose
 * group ids decrease (a group must be contiguous) or whose lanes are negative. */
hx_status_t hx_exec_plan_build(const hx_abi_kernel* kernels, uint32_t num_kernels, hx_exec_plan* out);
void hx_exec_plan_release(hx_exec_plan* plan);

/* Per-run state of the cooperative group runner, sized for max_lanes. One
 * scratch serves one run at a time. */
typedef struct hx_exec_scratch hx_exec_scratch;
hx_status_t hx_exec_scratch_create(uint32_t max_lanes, hx_exec_scratch** out);
void hx_exec_scratch_free(hx_exec_scratch* scratch);

/* Runs every kernel of the plan on `bases` (see artifact_abi.h). The scratch
 * must have been created for at least plan->max_lanes lanes. */
void hx_exec_run(const hx_exec_plan* plan, hx_pool_t* pool, hx_exec_scratch* scratch, void* const* bases);

#endif /* HARNESS_RUNTIME_EXECUTOR_H */
