/* A persistent fork-join thread pool for data-parallel loops.
 *
 * Created once per session; the calling thread is one of the pool's threads,
 * so a pool of N threads starts N-1 workers and never has more than N busy
 * threads. Workers spin briefly after a loop (the next kernel usually follows
 * within microseconds) and then park on a condition variable, so an idle
 * session burns no CPU. parallel_for allocates nothing and takes no lock on
 * the fast path.
 */
#ifndef HARNESS_RUNTIME_THREAD_POOL_H
#define HARNESS_RUNTIME_THREAD_POOL_H

#include <stdint.h>

#include "harness/status.h"

typedef struct hx_pool hx_pool_t;

/* Body of a parallel loop: processes iterations [begin, end). */
typedef void (*hx_pool_body_fn)(void* ctx, int64_t begin, int64_t end);

/* Pinning modes for hx_pool_create. */
enum {
  HX_POOL_PIN_NONE = 0,
  /* Thread i (the creating thread is thread 0) is bound to the i-th CPU of
   * the process's NUMA-ordered CPU list (cpu_topology.h). */
  HX_POOL_PIN = 1,
  /* Same for the workers only: thread 0 is whichever thread will call
   * parallel_for later, which pins itself with hx_pool_pin_caller. */
  HX_POOL_PIN_WORKERS = 2,
};

/* Creates a pool of `threads` threads including the caller (>= 1). Pinning
 * (HX_POOL_PIN*) is best effort: a CPU that refuses is left unpinned. */
hx_status_t hx_pool_create(int threads, int pin, hx_pool_t** out_pool);
void hx_pool_free(hx_pool_t* pool);
int hx_pool_thread_count(const hx_pool_t* pool);
/* CPU thread i is pinned to, or -1 when the pool is not pinned. */
int hx_pool_thread_cpu(const hx_pool_t* pool, int i);
/* Pins the calling thread to thread 0's CPU (no-op for an unpinned pool). */
void hx_pool_pin_caller(const hx_pool_t* pool);

/* Busy-time accounting for utilisation metrics, off by default so that plain
 * sessions pay nothing. When on, each thread adds the time it spends inside
 * loops (kernels, helping other lanes) to its own counter. */
void hx_pool_set_accounting(hx_pool_t* pool, int on);
/* Copies min(cap, threads) busy-time counters (ns; index 0 = calling thread). */
void hx_pool_busy_ns(const hx_pool_t* pool, uint64_t* out, int cap);

/* Runs body over [0, n) on all pool threads and returns when every iteration
 * is done. Iterations are handed out in chunks: thread i first runs the i-th
 * of `threads` contiguous parts (so that loops split alike keep their data on
 * the same core), then takes chunks left in the others' parts, so that uneven
 * tasks and late threads balance. Must not be called concurrently on the same
 * pool. */
void hx_pool_parallel_for(hx_pool_t* pool, int64_t n, hx_pool_body_fn body, void* ctx);

#endif /* HARNESS_RUNTIME_THREAD_POOL_H */
