/* Schedule execution: sequential kernels with intra-op loops, and parallel
 * groups run cooperatively by the pool's threads (see executor.h). */
#define _GNU_SOURCE
#include "executor.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define HX_CPU_RELAX() _mm_pause()
#else
#define HX_CPU_RELAX() ((void)0)
#endif

#define HX_CACHE_LINE 64

/* ---- plan ------------------------------------------------------------------ */

hx_status_t hx_exec_plan_build(const hx_abi_kernel* kernels, uint32_t num_kernels, hx_exec_plan* out) {
  memset(out, 0, sizeof(*out));
  out->kernels = kernels;
  out->num_kernels = num_kernels;
  /* Count groups; every kernel belongs to exactly one, so there are at most
   * num_kernels groups and lanes. */
  size_t cap = num_kernels ? num_kernels : 1;
  out->groups = calloc(cap, sizeof(hx_exec_group));
  out->lane_start = calloc(cap + 1, sizeof(uint32_t));
  out->lane_kernels = calloc(cap, sizeof(uint32_t));
  int32_t* lane_ids = calloc(cap, sizeof(int32_t));
  if (!out->groups || !out->lane_start || !out->lane_kernels || !lane_ids) {
    free(lane_ids);
    hx_exec_plan_release(out);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory planning the schedule");
  }
  hx_status_t st = HX_OK;
  uint32_t lanes_total = 0, placed = 0;
  for (uint32_t k = 0; k < num_kernels && st == HX_OK;) {
    uint32_t end = k + 1;
    while (end < num_kernels && kernels[end].group == kernels[k].group) ++end;
    if (end < num_kernels && kernels[end].group < kernels[k].group) {
      st = hx_status_make(HX_STATUS_INCOMPATIBLE,
                          "artifact schedule is malformed: group ids decrease at kernel '%s' (%d after %d)",
                          kernels[end].name ? kernels[end].name : "?", kernels[end].group, kernels[k].group);
      break;
    }
    /* Distinct lanes in order of first appearance. */
    uint32_t nl = 0;
    for (uint32_t i = k; i < end && st == HX_OK; ++i) {
      if (kernels[i].lane < 0) {
        st = hx_status_make(HX_STATUS_INCOMPATIBLE, "artifact schedule is malformed: kernel '%s' has lane %d",
                            kernels[i].name ? kernels[i].name : "?", kernels[i].lane);
        break;
      }
      uint32_t j = 0;
      while (j < nl && lane_ids[j] != kernels[i].lane) ++j;
      if (j == nl) lane_ids[nl++] = kernels[i].lane;
    }
    if (st != HX_OK) break;
    hx_exec_group* g = &out->groups[out->num_groups++];
    g->first = k;
    g->count = end - k;
    g->lane_first = lanes_total;
    g->num_lanes = nl;
    for (uint32_t j = 0; j < nl; ++j) {
      out->lane_start[lanes_total + j] = placed;
      for (uint32_t i = k; i < end; ++i)
        if (kernels[i].lane == lane_ids[j]) out->lane_kernels[placed++] = i;
    }
    lanes_total += nl;
    if (nl > out->max_lanes) out->max_lanes = nl;
    k = end;
  }
  out->lane_start[lanes_total] = placed;
  free(lane_ids);
  if (st != HX_OK) hx_exec_plan_release(out);
  return st;
}

void hx_exec_plan_release(hx_exec_plan* plan) {
  free(plan->groups);
  free(plan->lane_start);
  free(plan->lane_kernels);
  memset(plan, 0, sizeof(*plan));
}

/* ---- cooperative group runner ---------------------------------------------- */

/* A lane's published work is one word: the 1-based position of the kernel it
 * is running (high bits) and the next unclaimed task (low bits). Packing both
 * lets a helper claim a chunk with one compare-and-swap that fails if the
 * owner has moved on to another kernel meanwhile. */
#define SEQ_SHIFT 40
#define TASK_MASK ((UINT64_C(1) << SEQ_SHIFT) - 1)

typedef struct lane_rt {
  _Alignas(HX_CACHE_LINE) atomic_uint_fast64_t work;
  atomic_int_fast64_t done; /* tasks of the current kernel finished */
} lane_rt;

struct hx_exec_scratch {
  _Alignas(HX_CACHE_LINE) atomic_uint next_lane;
  _Alignas(HX_CACHE_LINE) atomic_uint lanes_left;
  /* Set by the calling thread before the group is published to the pool. */
  _Alignas(HX_CACHE_LINE) const hx_exec_plan* plan;
  const hx_exec_group* group;
  void* const* bases;
  int threads;
  uint32_t max_lanes;
  lane_rt* lanes;
};

hx_status_t hx_exec_scratch_create(uint32_t max_lanes, hx_exec_scratch** out) {
  *out = NULL;
  hx_exec_scratch* s = aligned_alloc(HX_CACHE_LINE, (sizeof(*s) + HX_CACHE_LINE - 1) / HX_CACHE_LINE * HX_CACHE_LINE);
  if (!s) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory creating the executor");
  memset(s, 0, sizeof(*s));
  s->max_lanes = max_lanes;
  if (max_lanes > 1) {
    s->lanes = aligned_alloc(HX_CACHE_LINE, sizeof(lane_rt) * max_lanes);
    if (!s->lanes) {
      free(s);
      return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory creating the executor");
    }
    for (uint32_t i = 0; i < max_lanes; ++i) {
      atomic_init(&s->lanes[i].work, 0);
      atomic_init(&s->lanes[i].done, 0);
    }
  }
  atomic_init(&s->next_lane, 0);
  atomic_init(&s->lanes_left, 0);
  *out = s;
  return HX_OK;
}

void hx_exec_scratch_free(hx_exec_scratch* scratch) {
  if (!scratch) return;
  free(scratch->lanes);
  free(scratch);
}

static int64_t chunk_for(int64_t tasks, int threads) {
  int64_t c = tasks / ((int64_t)threads * 4);
  return c < 1 ? 1 : c;
}

/* Claims and runs chunks of the kernel lane `l` is running, until none are
 * left. Returns whether it ran anything. Used by the owner and by helpers. */
static int work_on_lane(hx_exec_scratch* s, uint32_t l) {
  const hx_exec_plan* p = s->plan;
  const uint32_t* lk = p->lane_kernels + p->lane_start[s->group->lane_first + l];
  uint32_t nk = p->lane_start[s->group->lane_first + l + 1] - p->lane_start[s->group->lane_first + l];
  lane_rt* L = &s->lanes[l];
  int did = 0;
  uint64_t w = atomic_load_explicit(&L->work, memory_order_acquire);
  for (;;) {
    uint64_t seq = w >> SEQ_SHIFT;
    if (seq == 0 || seq > nk) return did;
    const hx_abi_kernel* k = &p->kernels[lk[seq - 1]];
    int64_t t = (int64_t)(w & TASK_MASK);
    if (t >= k->tasks) return did;
    int64_t chunk = chunk_for(k->tasks, s->threads);
    if (!atomic_compare_exchange_weak_explicit(&L->work, &w, w + (uint64_t)chunk, memory_order_acq_rel,
                                               memory_order_acquire))
      continue; /* w now holds the current word */
    int64_t e = t + chunk < k->tasks ? t + chunk : k->tasks;
    k->fn(s->bases, t, e);
    atomic_fetch_add_explicit(&L->done, e - t, memory_order_release);
    did = 1;
    w = atomic_load_explicit(&L->work, memory_order_acquire);
  }
}

/* Runs lane l's kernels in order, publishing each multi-task kernel so that
 * idle threads can help with it. */
static void run_lane(hx_exec_scratch* s, uint32_t l) {
  const hx_exec_plan* p = s->plan;
  uint32_t start = p->lane_start[s->group->lane_first + l], stop = p->lane_start[s->group->lane_first + l + 1];
  lane_rt* L = &s->lanes[l];
  for (uint32_t i = start; i < stop; ++i) {
    const hx_abi_kernel* k = &p->kernels[p->lane_kernels[i]];
    if (k->tasks <= 1) {
      k->fn(s->bases, 0, k->tasks);
      continue;
    }
    /* done is reset before the kernel is published; helpers only touch done
     * for chunks they claimed through the new word. */
    atomic_store_explicit(&L->done, 0, memory_order_relaxed);
    atomic_store_explicit(&L->work, (uint64_t)(i - start + 1) << SEQ_SHIFT, memory_order_release);
    work_on_lane(s, l);
    while (atomic_load_explicit(&L->done, memory_order_acquire) < k->tasks) HX_CPU_RELAX();
  }
  atomic_fetch_sub_explicit(&s->lanes_left, 1, memory_order_acq_rel);
}

/* Idle polls of the other lanes before a participant leaves the group: long
 * enough to catch the next multi-task kernel of a lane that is between
 * kernels (a few microseconds), short enough not to compete for a core with
 * the lane owners when every lane is inside a single-task kernel. */
#define HX_HELP_POLLS 512

/* What each pool thread does for a parallel group: own lanes while there are
 * unclaimed ones, then help the others with their kernels' tasks until every
 * lane is finished or there has been nothing to help with for a while. Lane
 * owners finish their lanes themselves, so leaving early is always safe. */
static void participate(hx_exec_scratch* s) {
  const uint32_t nl = s->group->num_lanes;
  for (;;) {
    uint32_t l = atomic_fetch_add_explicit(&s->next_lane, 1, memory_order_relaxed);
    if (l >= nl) break;
    run_lane(s, l);
  }
  unsigned idle = 0;
  while (idle < HX_HELP_POLLS && atomic_load_explicit(&s->lanes_left, memory_order_acquire) > 0) {
    int did = 0;
    for (uint32_t l = 0; l < nl; ++l) did |= work_on_lane(s, l);
    if (did) {
      idle = 0;
    } else {
      ++idle;
      HX_CPU_RELAX();
    }
  }
}

static void group_body(void* ctx, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) participate(ctx);
}

typedef struct kernel_call {
  hx_abi_kernel_fn fn;
  void* const* bases;
} kernel_call;

static void run_kernel_tasks(void* ctx, int64_t begin, int64_t end) {
  kernel_call* call = ctx;
  call->fn(call->bases, begin, end);
}

static void run_kernel(const hx_abi_kernel* k, hx_pool_t* pool, void* const* bases) {
  if (k->tasks <= 1) {
    k->fn(bases, 0, k->tasks);
  } else {
    kernel_call call = {k->fn, bases};
    hx_pool_parallel_for(pool, k->tasks, run_kernel_tasks, &call);
  }
}

void hx_exec_run(const hx_exec_plan* plan, hx_pool_t* pool, hx_exec_scratch* scratch, void* const* bases) {
  const int threads = hx_pool_thread_count(pool);
  for (uint32_t gi = 0; gi < plan->num_groups; ++gi) {
    const hx_exec_group* g = &plan->groups[gi];
    if (g->num_lanes <= 1 || threads == 1) {
      /* Schedule order is valid for any group: lanes keep their own order. */
      for (uint32_t k = g->first; k < g->first + g->count; ++k) run_kernel(&plan->kernels[k], pool, bases);
      continue;
    }
    scratch->plan = plan;
    scratch->group = g;
    scratch->bases = bases;
    scratch->threads = threads;
    for (uint32_t l = 0; l < g->num_lanes; ++l) atomic_store_explicit(&scratch->lanes[l].work, 0, memory_order_relaxed);
    atomic_store_explicit(&scratch->next_lane, 0, memory_order_relaxed);
    atomic_store_explicit(&scratch->lanes_left, g->num_lanes, memory_order_relaxed);
    /* The pool's publish orders these stores before any worker reads them. */
    hx_pool_parallel_for(pool, threads, group_body, scratch);
  }
}
