/* Fork-join pool: a generation counter publishes each loop, threads claim
 * chunks with a compare-and-swap on a word holding (generation, next index),
 * and the caller returns as soon as every iteration is done -- not when every
 * worker has checked in, so a worker the OS has descheduled cannot stall a
 * kernel: whoever is running does its share. A late worker that wakes after
 * its loop ended finds the generation changed and claims nothing. */
#define _GNU_SOURCE
#include "thread_pool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_topology.h"

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

/* Per-thread busy time, one cache line each (written by its thread only). */
typedef struct hx_pool_counter {
  _Alignas(HX_CACHE_LINE) atomic_uint_fast64_t busy_ns;
} hx_pool_counter;

/* The claim word: the loop's generation in the high bits, the next
 * unclaimed iteration in the low HX_POOL_INDEX_BITS. */
#define HX_POOL_INDEX_BITS 44
#define HX_POOL_INDEX_MASK ((1ull << HX_POOL_INDEX_BITS) - 1)
#define HX_POOL_GEN_MASK ((1ull << (64 - HX_POOL_INDEX_BITS)) - 1)

/* A loop's description. Two slots alternate by generation parity: a worker
 * that read a slot late sees its generation gone from the claim word and
 * uses nothing it read. Atomics because such late reads may race with the
 * caller filling the slot for a later loop. */
typedef struct hx_pool_job {
  atomic_uintptr_t body;
  atomic_uintptr_t ctx;
  atomic_int_fast64_t n;
  atomic_int_fast64_t chunk;
} hx_pool_job;

struct hx_pool {
  _Alignas(HX_CACHE_LINE) hx_pool_job jobs[2];
  /* Published loop number; workers run a loop when it changes. */
  _Alignas(HX_CACHE_LINE) atomic_uint_fast64_t generation;
  /* (generation, next iteration). Own line: every thread hammers it. */
  _Alignas(HX_CACHE_LINE) atomic_uint_fast64_t claim;
  /* Iterations finished in the current loop. */
  _Alignas(HX_CACHE_LINE) atomic_int_fast64_t done;
  atomic_int parked; /* workers sleeping on the condition variable */
  atomic_int stop;
  atomic_int caller_parked; /* the caller sleeps on done_cond for the last chunk */
  pthread_cond_t done_cond;
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  atomic_int accounting;
  int threads;
  hx_pool_worker* workers; /* threads - 1 entries */
  hx_pool_counter* counters; /* threads entries */
  int* cpus;               /* pinned CPU per thread, NULL when unpinned */
};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Claims chunks of loop `gen` until it is exhausted or over; `self` is the
 * thread's index for busy-time accounting. */
static void run_chunks(struct hx_pool* pool, uint64_t gen, int self) {
  const hx_pool_job* job = &pool->jobs[gen & 1];
  hx_pool_body_fn body = (hx_pool_body_fn)atomic_load_explicit(&job->body, memory_order_relaxed);
  void* ctx = (void*)atomic_load_explicit(&job->ctx, memory_order_relaxed);
  const int64_t n = atomic_load_explicit(&job->n, memory_order_relaxed);
  const int64_t chunk = atomic_load_explicit(&job->chunk, memory_order_relaxed);
  const uint64_t tag = (gen & HX_POOL_GEN_MASK) << HX_POOL_INDEX_BITS;
  const int account = atomic_load_explicit(&pool->accounting, memory_order_relaxed);
  uint64_t t0 = account ? now_ns() : 0;
  uint64_t word = atomic_load_explicit(&pool->claim, memory_order_acquire);
  for (;;) {
    if ((word & ~HX_POOL_INDEX_MASK) != tag) break; /* the loop is over: a later one owns the word */
    int64_t begin = (int64_t)(word & HX_POOL_INDEX_MASK);
    if (begin >= n) break;
    int64_t end = begin + chunk < n ? begin + chunk : n;
    /* Success proves the loop (and what was read of its job) is current. */
    if (!atomic_compare_exchange_weak_explicit(&pool->claim, &word, tag | (uint64_t)end, memory_order_acq_rel,
                                               memory_order_acquire))
      continue;
    body(ctx, begin, end);
    /* Sequentially consistent add-then-check pairs with the caller's
     * flag-then-check, so the caller's wake-up cannot be missed. */
    if (atomic_fetch_add(&pool->done, end - begin) + (end - begin) == n && atomic_load(&pool->caller_parked)) {
      pthread_mutex_lock(&pool->mutex);
      pthread_cond_broadcast(&pool->done_cond);
      pthread_mutex_unlock(&pool->mutex);
    }
    word = atomic_load_explicit(&pool->claim, memory_order_acquire);
  }
  if (account)
    atomic_fetch_add_explicit(&pool->counters[self].busy_ns, now_ns() - t0, memory_order_relaxed);
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
    run_chunks(pool, gen, w->index);
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

static void free_pool_memory(struct hx_pool* pool) {
  free(pool->workers);
  free(pool->counters);
  free(pool->cpus);
  free(pool);
}

/* Chooses a CPU per thread from the NUMA-ordered topology; NULL (unpinned)
 * if the topology cannot be read. More threads than CPUs wrap around. */
static int* choose_cpus(int threads) {
  hx_cpu_topology* topo = malloc(sizeof(*topo));
  if (!topo) return NULL;
  int* cpus = NULL;
  hx_status_t st = hx_cpu_topology_read(topo);
  if (st == HX_OK) {
    cpus = malloc(sizeof(int) * (size_t)threads);
    for (int i = 0; cpus && i < threads; ++i) cpus[i] = topo->cpus[i % topo->num_cpus];
  }
  hx_status_free(st);
  free(topo);
  return cpus;
}

hx_status_t hx_pool_create(int threads, int pin, hx_pool_t** out_pool) {
  *out_pool = NULL;
  if (threads < 1) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "thread pool needs at least 1 thread, got %d", threads);
  struct hx_pool* pool = aligned_alloc(HX_CACHE_LINE, (sizeof(*pool) + HX_CACHE_LINE - 1) / HX_CACHE_LINE * HX_CACHE_LINE);
  if (!pool) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "cannot allocate thread pool");
  memset(pool, 0, sizeof(*pool));
  atomic_init(&pool->accounting, 0);
  pool->threads = threads;
  atomic_init(&pool->generation, 0);
  atomic_init(&pool->claim, 0);
  atomic_init(&pool->done, 0);
  for (int j = 0; j < 2; ++j) {
    atomic_init(&pool->jobs[j].body, 0);
    atomic_init(&pool->jobs[j].ctx, 0);
    atomic_init(&pool->jobs[j].n, 0);
    atomic_init(&pool->jobs[j].chunk, 1);
  }
  atomic_init(&pool->parked, 0);
  atomic_init(&pool->stop, 0);
  atomic_init(&pool->caller_parked, 0);
  pthread_mutex_init(&pool->mutex, NULL);
  pthread_cond_init(&pool->cond, NULL);
  pthread_cond_init(&pool->done_cond, NULL);
  pool->workers = calloc((size_t)threads, sizeof(hx_pool_worker));
  pool->counters = aligned_alloc(HX_CACHE_LINE, sizeof(hx_pool_counter) * (size_t)threads);
  if (!pool->workers || !pool->counters) {
    free_pool_memory(pool);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "cannot allocate thread pool");
  }
  for (int i = 0; i < threads; ++i) atomic_init(&pool->counters[i].busy_ns, 0);
  if (pin) pool->cpus = choose_cpus(threads);
  if (pool->cpus && pin == HX_POOL_PIN) pin_to_cpu(pool->cpus[0]);
  for (int i = 0; i < threads - 1; ++i) {
    pool->workers[i].pool = pool;
    pool->workers[i].index = i + 1;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (pool->cpus) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(pool->cpus[i + 1], &set);
      (void)pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
    }
    int rc = pthread_create(&pool->workers[i].thread, &attr, worker_main, &pool->workers[i]);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
      stop_workers(pool, i);
      free_pool_memory(pool);
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
  pthread_cond_destroy(&pool->done_cond);
  free_pool_memory(pool);
}

int hx_pool_thread_count(const hx_pool_t* pool) { return pool->threads; }

int hx_pool_thread_cpu(const hx_pool_t* pool, int i) {
  return pool->cpus && i >= 0 && i < pool->threads ? pool->cpus[i] : -1;
}

void hx_pool_pin_caller(const hx_pool_t* pool) {
  if (pool->cpus) pin_to_cpu(pool->cpus[0]);
}

void hx_pool_set_accounting(hx_pool_t* pool, int on) { atomic_store(&pool->accounting, on ? 1 : 0); }

void hx_pool_busy_ns(const hx_pool_t* pool, uint64_t* out, int cap) {
  for (int i = 0; i < cap && i < pool->threads; ++i)
    out[i] = atomic_load_explicit(&((hx_pool_t*)pool)->counters[i].busy_ns, memory_order_relaxed);
}

void hx_pool_parallel_for(hx_pool_t* pool, int64_t n, hx_pool_body_fn body, void* ctx) {
  if (n <= 0) return;
  if (pool->threads == 1 || n == 1) {
    if (!atomic_load_explicit(&pool->accounting, memory_order_relaxed)) {
      body(ctx, 0, n);
      return;
    }
    uint64_t t0 = now_ns();
    body(ctx, 0, n);
    atomic_fetch_add_explicit(&pool->counters[0].busy_ns, now_ns() - t0, memory_order_relaxed);
    return;
  }
  /* Four chunks per thread balance uneven tasks without much counter traffic. */
  int64_t chunk = n / ((int64_t)pool->threads * 4);
  if (chunk < 1) chunk = 1;
  uint64_t gen = atomic_load_explicit(&pool->generation, memory_order_relaxed) + 1;
  hx_pool_job* job = &pool->jobs[gen & 1];
  atomic_store_explicit(&job->body, (uintptr_t)body, memory_order_relaxed);
  atomic_store_explicit(&job->ctx, (uintptr_t)ctx, memory_order_relaxed);
  atomic_store_explicit(&job->n, n, memory_order_relaxed);
  atomic_store_explicit(&job->chunk, chunk, memory_order_relaxed);
  atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
  atomic_store_explicit(&pool->claim, (gen & HX_POOL_GEN_MASK) << HX_POOL_INDEX_BITS, memory_order_release);
  /* Sequentially consistent publish-then-check pairs with the worker's
   * parked++-then-check, so a worker cannot fall asleep on a published loop. */
  atomic_store(&pool->generation, gen);
  if (atomic_load(&pool->parked) > 0) {
    pthread_mutex_lock(&pool->mutex);
    pthread_cond_broadcast(&pool->cond);
    pthread_mutex_unlock(&pool->mutex);
  }
  run_chunks(pool, gen, 0);
  /* Wait until every iteration is done (other threads may still be inside
   * chunks they claimed): spin briefly, then sleep, so that a long-running
   * chunk (a lane of a parallel group) does not have the caller burning a
   * core beside it. */
  for (int spins = 0; atomic_load_explicit(&pool->done, memory_order_acquire) < n; ++spins) {
    if (spins < HX_POOL_SPIN_ITERS) {
      HX_CPU_RELAX();
      continue;
    }
    pthread_mutex_lock(&pool->mutex);
    atomic_store(&pool->caller_parked, 1);
    while (atomic_load(&pool->done) < n) pthread_cond_wait(&pool->done_cond, &pool->mutex);
    atomic_store(&pool->caller_parked, 0);
    pthread_mutex_unlock(&pool->mutex);
  }
}
