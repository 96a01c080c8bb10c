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

/* Creates a pool of `threads` threads including the caller (>= 1). With pin,
 * thread i is bound to CPU i (best effort; failure is not an error). */
hx_status_t hx_pool_create(int threads, int pin, hx_pool_t** out_pool);
void hx_pool_free(hx_pool_t* pool);
int hx_pool_thread_count(const hx_pool_t* pool);

/* Runs body over [0, n) on all pool threads and returns when every iteration
 * is done. Iterations are handed out in chunks from a shared counter so that
 * uneven tasks balance. Must not be called concurrently on the same pool. */
void hx_pool_parallel_for(hx_pool_t* pool, int64_t n, hx_pool_body_fn body, void* ctx);

#endif /* HARNESS_RUNTIME_THREAD_POOL_H */
