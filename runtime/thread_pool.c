/* Fork-join pool: a generation counter publishes each loop, workers claim
 * chunks from an atomic counter, the caller waits for the last worker. */
#define _GNU_SOURCE
#include "thread_pool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define HX_CPU_RELAX() _mm_pause()
#else
#define HX_CPU_RELAX() ((void)0)
#endif

/* Spin iterations before a worker parks. ~50-100 us on current x86 cores:
 * long enough to bridge the gap between consecutive kernels of one run. */
#define HX_POOL_SPIN_ITERS 20000

#define HX_CACHE_LINE 64

typedef struct hx_pool_worker {
  struct hx_pool* pool;
  pthread_t thread;
  int index;
} hx_pool_worker;

struct hx_pool {
  /* Fields written per loop by the caller, read by workers. */
  _Alignas(HX_CACHE_LINE) hx_pool_body_fn body;
  void* ctx;
  int64_t n;
  int64_t chunk;
  /* Published loop number; workers run a loop when it changes. */
  _Alignas(HX_CACHE_LINE) atomic_uint_fast64_t generation;
  /* Next unclaimed iteration. Own line: every thread hammers it. */
  _Alignas(HX_CACHE_LINE) atomic_int_fast64_t next;
  /* Workers still inside the current loop. */
  _Alignas(HX_CACHE_LINE) atomic_int active;
  atomic_int parked; /* workers sleeping on the condition variable */
  atomic_int stop;
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  int threads;
  hx_pool_worker* workers; /* threads - 1 entries */
};

static void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Claims chunks until the loop is exhausted. */
static void run_chunks(struct hx_pool* pool) {
  const int64_t n = pool->n, chunk = pool->chunk;
  for (;;) {
    int64_t begin = atomic_fetch_add_explicit(&pool->next, chunk, memory_order_relaxed);
    if (begin >= n) break;
    int64_t end = begin + chunk < n ? begin + chunk : n;
    pool->body(pool->ctx, begin, end);
  }
}

static void* worker_main(void* arg) {
  hx_pool_worker* w = arg;
  struct hx_pool* pool = w->pool;
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen;
    int spins = 0;
    while ((gen = atomic_load_explicit(&pool->generation, memory_order_acquire)) == seen &&
           !atomic_load_explicit(&pool->stop, memory_order_relaxed)) {
      if (++spins < HX_POOL_SPIN_ITERS) {
        HX_CPU_RELAX();
        continue;
      }
      pthread_mutex_lock(&pool->mutex);
      atomic_fetch_add(&pool->parked, 1);
      while (atomic_load(&pool->generation) == seen && !atomic_load(&pool->stop))
        pthread_cond_wait(&pool->cond, &pool->mutex);
      atomic_fetch_sub(&pool->parked, 1);
      pthread_mutex_unlock(&pool->mutex);
      spins = 0;
    }
    if (atomic_load_explicit(&pool->stop, memory_order_relaxed)) break;
    seen = gen;
    run_chunks(pool);
    atomic_fetch_sub_explicit(&pool->active, 1, memory_order_acq_rel);
  }
  return NULL;
}

static void stop_workers(struct hx_pool* pool, int started) {
  pthread_mutex_lock(&pool->mutex);
  atomic_store(&pool->stop, 1);
  pthread_cond_broadcast(&pool->cond);
  pthread_mutex_unlock(&pool->mutex);
  for (int i = 0; i < started; ++i) pthread_join(pool->workers[i].thread, NULL);
}

hx_status_t hx_pool_create(int threads, int pin, hx_pool_t** out_pool) {
  *out_pool = NULL;
  if (threads < 1) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "thread pool needs at least 1 thread, got %d", threads);
  struct hx_pool* pool = aligned_alloc(HX_CACHE_LINE, (sizeof(*pool) + HX_CACHE_LINE - 1) / HX_CACHE_LINE * HX_CACHE_LINE);
  if (!pool) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "cannot allocate thread pool");
  memset(pool, 0, sizeof(*pool));
  pool->threads = threads;
  atomic_init(&pool->generation, 0);
  atomic_init(&pool->next, 0);
  atomic_init(&pool->active, 0);
  atomic_init(&pool->parked, 0);
  atomic_init(&pool->stop, 0);
  pthread_mutex_init(&pool->mutex, NULL);
  pthread_cond_init(&pool->cond, NULL);
  pool->workers = calloc((size_t)threads, sizeof(hx_pool_worker));
  if (!pool->workers) {
    free(pool);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "cannot allocate thread pool");
  }
  if (pin) pin_to_cpu(0);
  for (int i = 0; i < threads - 1; ++i) {
    pool->workers[i].pool = pool;
    pool->workers[i].index = i + 1;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (pin) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(i + 1, &set);
      (void)pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
    }
    int rc = pthread_create(&pool->workers[i].thread, &attr, worker_main, &pool->workers[i]);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
      stop_workers(pool, i);
      free(pool->workers);
      free(pool);
      return hx_status_make(HX_STATUS_UNAVAILABLE, "cannot start worker thread %d: %s", i + 1, strerror(rc));
    }
  }
  *out_pool = pool;
  return HX_OK;
}

void hx_pool_free(hx_pool_t* pool) {
  if (!pool) return;
  stop_workers(pool, pool->threads - 1);
  pthread_mutex_destroy(&pool->mutex);
  pthread_cond_destroy(&pool->cond);
  free(pool->workers);
  free(pool);
}

int hx_pool_thread_count(const hx_pool_t* pool) { return pool->threads; }

void hx_pool_parallel_for(hx_pool_t* pool, int64_t n, hx_pool_body_fn body, void* ctx) {
  if (n <= 0) return;
  if (pool->threads == 1 || n == 1) {
    body(ctx, 0, n);
    return;
  }
  /* Four chunks per thread balance uneven tasks without much counter traffic. */
  int64_t chunk = n / ((int64_t)pool->threads * 4);
  if (chunk < 1) chunk = 1;
  pool->body = body;
  pool->ctx = ctx;
  pool->n = n;
  pool->chunk = chunk;
  atomic_store_explicit(&pool->next, 0, memory_order_relaxed);
  atomic_store_explicit(&pool->active, pool->threads - 1, memory_order_relaxed);
  /* Sequentially consistent publish-then-check pairs with the worker's
   * parked++-then-check, so a worker cannot fall asleep on a published loop. */
  atomic_fetch_add(&pool->generation, 1);
  if (atomic_load(&pool->parked) > 0) {
    pthread_mutex_lock(&pool->mutex);
    pthread_cond_broadcast(&pool->cond);
    pthread_mutex_unlock(&pool->mutex);
  }
  run_chunks(pool);
  while (atomic_load_explicit(&pool->active, memory_order_acquire) > 0) HX_CPU_RELAX();
}
