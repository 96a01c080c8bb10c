/* kbench: latency and per-kernel profile of a Harness artifact.
 *
 *   kbench MODEL.so [--threads N] [--warmup W] [--iters N] [--profile] [--top K]
 *          [--flush weights|all] [--warm]
 *
 * Without --profile it times hx_session_run (libharness, the production
 * path) and prints the median, p10 and p90 latency in milliseconds. With
 * --profile it runs the artifact's kernel table itself, kernel by kernel in
 * schedule order (so every kernel sees the caches the previous ones left, as
 * in a real run), on a small spin-waiting fork-join pool that splits each
 * kernel's tasks into dynamic chunks like the runtime does, and prints per
 * kernel the median time, the GFLOP/s from the compiler's flops estimate,
 * and its share of the total. It exists to measure the convolution and GEMM
 * kernels (docs in bench/kernels/README.md); inputs are uniform random in
 * [-1, 1).
 *
 * --flush evicts data from every cache level (clflush) before each kernel
 * (--profile) or run: "weights" the weights blob, as a layer of a model
 * larger than the cache finds its weights one inference after it last read
 * them; "all" the arena and the inputs and outputs too. A one-layer model
 * then runs as it does inside a large model on a host whose other tenants
 * share the L3, reproducibly (docs/performance.md, stop 27).
 *
 * --warm (with --profile) runs each kernel once more, untimed, right before
 * its timed run: the kernel then finds its weights, input and output where
 * its own last run left them, in its own core's caches. The difference to
 * a plain profile is what the kernel pays in the model for data that other
 * kernels moved out of its caches or that the other core wrote
 * (docs/performance.md, stop 34).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/artifact_abi.h"
#include "harness/harness.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of the process (all threads): under contention from other
 * processes it counts only the time this run really had a core. */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* What --flush evicts before each kernel (profile) or run (latency). */
enum { FLUSH_NONE, FLUSH_WEIGHTS, FLUSH_ALL };

typedef struct span {
  const void* p;
  size_t bytes;
} span;

static void flush_span(span s) {
  const char* p = (const char*)((uintptr_t)s.p & ~(uintptr_t)63);
  const char* end = (const char*)s.p + s.bytes;
  for (; p < end; p += 64) _mm_clflush(p);
}

static void flush_spans(const span* s, int n) {
  for (int i = 0; i < n; ++i)
    if (s[i].p) flush_span(s[i]);
  _mm_mfence();
}

/* Fills a buffer of dtype with deterministic values in [-1, 1) (floats) or
 * small non-negative integers. */
static void fill(void* p, hx_dtype_t dt, size_t bytes, unsigned seed) {
  size_t es = hx_dtype_size(dt);
  size_t n = es ? bytes / es : 0;
  uint32_t s = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    float f = (float)(s >> 8) / 16777216.0f * 2.0f - 1.0f;
    switch (dt) {
      case HX_DTYPE_FLOAT32: ((float*)p)[i] = f; break;
      case HX_DTYPE_FLOAT64: ((double*)p)[i] = f; break;
      case HX_DTYPE_INT64: ((int64_t*)p)[i] = (int64_t)((s >> 8) % 100); break;
      case HX_DTYPE_INT32: ((int32_t*)p)[i] = (int32_t)((s >> 8) % 100); break;
      default: ((uint8_t*)p)[i] = (uint8_t)((s >> 8) % 100); break;
    }
  }
}

/* ---- a tiny fork-join pool for the profile ------------------------------- */

typedef struct job {
  const hx_abi_kernel* k;
  void* const* bases;
  int64_t chunk;
} job;

static struct {
  int threads;
  _Atomic int64_t next;
  _Atomic int done_workers;
  _Atomic unsigned generation;
  _Atomic int quit;
  job j;
} g_pool;

static void run_chunks(void) {
  const job* j = &g_pool.j;
  for (;;) {
    int64_t b = atomic_fetch_add(&g_pool.next, j->chunk);
    if (b >= j->k->tasks) return;
    int64_t e = b + j->chunk < j->k->tasks ? b + j->chunk : j->k->tasks;
    j->k->fn(j->bases, b, e);
  }
}

static void* worker(void* arg) {
  unsigned seen = 0;
  for (;;) {
    unsigned g;
    while ((g = atomic_load(&g_pool.generation)) == seen) {
      if (atomic_load(&g_pool.quit)) return NULL;
      __builtin_ia32_pause();
    }
    seen = g;
    run_chunks();
    atomic_fetch_add(&g_pool.done_workers, 1);
  }
  return arg;
}

static void run_kernel(const hx_abi_kernel* k, void* const* bases) {
  if (g_pool.threads <= 1 || k->tasks <= 1) {
    if (k->tasks > 0) k->fn(bases, 0, k->tasks);
    return;
  }
  int64_t chunk = k->tasks / ((int64_t)g_pool.threads * 4);
  g_pool.j = (job){k, bases, chunk < 1 ? 1 : chunk};
  atomic_store(&g_pool.next, 0);
  atomic_store(&g_pool.done_workers, 0);
  atomic_fetch_add(&g_pool.generation, 1);
  run_chunks();
  while (atomic_load(&g_pool.done_workers) < g_pool.threads - 1) __builtin_ia32_pause();
}

/* ---- profile ----------------------------------------------------------------- */

typedef struct kstat {
  int index;
  double med, min;
} kstat;

static int cmp_kstat(const void* a, const void* b) {
  double x = ((const kstat*)a)->med, y = ((const kstat*)b)->med;
  return x > y ? -1 : x < y;
}

static int profile(const char* path, const hx_model_t* model, int threads, int warmup, int iters, int top, int flush,
                   bool warm) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  hx_abi_query_fn q = (hx_abi_query_fn)dlsym(h, HX_ARTIFACT_QUERY_SYMBOL);
  const hx_abi_header* hd = q();
  const hx_abi_variant* var = &hd->variants[0];
  const char* chosen = hx_model_target(model);
  for (uint32_t i = 0; i < hd->num_variants; ++i)
    if (chosen && !strcmp(hd->variants[i].target, chosen)) var = &hd->variants[i];
  int nb = (int)hd->num_bases;
  void** bases = calloc((size_t)nb, sizeof(void*));
  size_t ab = (hd->arena_bytes + 63) / 64 * 64;
  bases[HX_BASE_ARENA] = aligned_alloc(64, ab ? ab : 64);
  memset(bases[HX_BASE_ARENA], 0, ab);
  size_t wbytes = 0;
  bases[HX_BASE_WEIGHTS] = (void*)hx_model_weights(model, &wbytes, NULL); /* as sessions read them */
  span spans[64];
  int nspans = 0;
  spans[nspans++] = (span){bases[HX_BASE_WEIGHTS], wbytes};
  if (flush == FLUSH_ALL) spans[nspans++] = (span){bases[HX_BASE_ARENA], ab};
  for (uint32_t i = 0; i < hd->num_inputs; ++i) {
    size_t bytes = (hd->inputs[i].bytes + 63) / 64 * 64;
    bases[HX_BASE_FIRST_IO + i] = aligned_alloc(64, bytes ? bytes : 64);
    fill(bases[HX_BASE_FIRST_IO + i], (hx_dtype_t)hd->inputs[i].dtype, hd->inputs[i].bytes, i + 1);
    if (flush == FLUSH_ALL && nspans < 64) spans[nspans++] = (span){bases[HX_BASE_FIRST_IO + i], bytes};
  }
  for (uint32_t i = 0; i < hd->num_outputs; ++i) {
    size_t bytes = (hd->outputs[i].bytes + 63) / 64 * 64;
    bases[HX_BASE_FIRST_IO + hd->num_inputs + i] = aligned_alloc(64, bytes ? bytes : 64);
    if (flush == FLUSH_ALL && nspans < 64) spans[nspans++] = (span){bases[HX_BASE_FIRST_IO + hd->num_inputs + i], bytes};
  }
  g_pool.threads = threads;
  pthread_t* tids = calloc((size_t)threads, sizeof(pthread_t));
  for (int t = 1; t < threads; ++t) pthread_create(&tids[t], NULL, worker, NULL);

  uint32_t nk = var->num_kernels;
  double* times = calloc((size_t)nk * (size_t)iters, sizeof(double));
  double* totals = calloc((size_t)iters, sizeof(double));
  for (int it = -warmup; it < iters; ++it) {
    double t0 = threads == 1 ? cpu_s() : now_s(), timed = 0;
    for (uint32_t k = 0; k < nk; ++k) {
      /* One thread: CPU time of the kernel (robust when other processes
       * share the cores); several: wall time. */
      if (flush) flush_spans(spans, nspans);
      if (warm) run_kernel(&var->kernels[k], bases);
      double a = threads == 1 ? cpu_s() : now_s();
      run_kernel(&var->kernels[k], bases);
      double b = threads == 1 ? cpu_s() : now_s();
      if (it >= 0) times[(size_t)k * (size_t)iters + (size_t)it] = b - a;
      timed += b - a;
    }
    /* With --warm the total is that of the timed runs only. */
    if (it >= 0) totals[it] = warm ? timed : (threads == 1 ? cpu_s() : now_s()) - t0;
  }
  atomic_store(&g_pool.quit, 1);
  for (int t = 1; t < threads; ++t) pthread_join(tids[t], NULL);

  kstat* ks = calloc(nk, sizeof(kstat));
  double sum_med = 0, flops = 0;
  for (uint32_t k = 0; k < nk; ++k) {
    qsort(times + (size_t)k * (size_t)iters, (size_t)iters, sizeof(double), cmp_double);
    ks[k].index = (int)k;
    ks[k].med = times[(size_t)k * (size_t)iters + (size_t)iters / 2];
    ks[k].min = times[(size_t)k * (size_t)iters];
    sum_med += ks[k].med;
    flops += var->kernels[k].flops;
  }
  qsort(totals, (size_t)iters, sizeof(double), cmp_double);
  qsort(ks, nk, sizeof(kstat), cmp_kstat);
  printf("profile: %u kernels, %d threads, median total %.3f ms (min %.3f, sum of kernel medians %.3f ms), %.2f GFLOP, %.1f GFLOP/s\n",
         nk, threads, totals[iters / 2] * 1e3, totals[0] * 1e3, sum_med * 1e3, flops * 1e-9, flops * 1e-9 / totals[iters / 2]);
  printf("%9s %6s %8s %8s %7s %8s  %s\n", "ms", "share", "GFLOP/s", "tasks", "GFLOP", "best/s", "kernel");
  int shown = 0;
  for (uint32_t i = 0; i < nk && (top <= 0 || shown < top); ++i, ++shown) {
    const hx_abi_kernel* k = &var->kernels[ks[i].index];
    printf("%9.4f %5.1f%% %8.1f %8lld %7.3f %8.1f  %s\n", ks[i].med * 1e3, 100.0 * ks[i].med / sum_med,
           ks[i].med > 0 ? k->flops * 1e-9 / ks[i].med : 0.0, (long long)k->tasks, k->flops * 1e-9,
           ks[i].min > 0 ? k->flops * 1e-9 / ks[i].min : 0.0, k->name);
  }
  return 0;
}

/* ---- latency through libharness ------------------------------------------ */

static int latency(const hx_model_t* model, int threads, int warmup, int iters, int flush) {
  hx_session_options_t opts = {.threads = threads};
  hx_session_t* s = NULL;
  hx_status_t st = hx_session_create(model, &opts, &s);
  if (st) {
    fprintf(stderr, "session: %s\n", hx_status_message(st));
    return 1;
  }
  for (size_t i = 0; i < hx_model_input_count(model); ++i) {
    hx_tensor_info_t info;
    hx_model_input_info(model, i, &info);
    void* p = aligned_alloc(64, (info.bytes + 63) / 64 * 64 + 64);
    fill(p, info.dtype, info.bytes, (unsigned)i + 1);
    hx_session_bind_input(s, i, p, info.bytes);
  }
  for (size_t i = 0; i < hx_model_output_count(model); ++i) {
    hx_tensor_info_t info;
    hx_model_output_info(model, i, &info);
    void* p = aligned_alloc(64, (info.bytes + 63) / 64 * 64 + 64);
    hx_session_bind_output(s, i, p, info.bytes);
  }
  size_t wbytes = 0;
  const void* w = hx_model_weights(model, &wbytes, NULL);
  double* t = calloc((size_t)iters, sizeof(double));
  double* c = calloc((size_t)iters, sizeof(double));
  for (int it = -warmup; it < iters; ++it) {
    /* The session's arena is internal: "all" flushes the weights here too. */
    if (flush) flush_spans(&(span){w, wbytes}, 1);
    double a = now_s(), ca = cpu_s();
    st = hx_session_run(s);
    double b = now_s(), cb = cpu_s();
    if (st) {
      fprintf(stderr, "run: %s\n", hx_status_message(st));
      return 1;
    }
    if (it >= 0) {
      t[it] = b - a;
      c[it] = cb - ca;
    }
  }
  qsort(t, (size_t)iters, sizeof(double), cmp_double);
  qsort(c, (size_t)iters, sizeof(double), cmp_double);
  printf("latency: threads %d  median %.3f ms  min %.3f ms  p10 %.3f ms  p90 %.3f ms  cpu median %.3f ms  (%d iters)\n",
         hx_session_thread_count(s), t[iters / 2] * 1e3, t[0] * 1e3, t[iters / 10] * 1e3, t[iters * 9 / 10] * 1e3,
         c[iters / 2] * 1e3, iters);
  hx_session_free(s);
  return 0;
}

int main(int argc, char** argv) {
  const char* path = NULL;
  int threads = 1, warmup = 3, iters = 20, prof = 0, top = 25, flush = FLUSH_NONE;
  bool warm = false;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
      warmup = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
      iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--top") && i + 1 < argc)
      top = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--profile"))
      prof = 1;
    else if (!strcmp(argv[i], "--warm"))
      warm = true;
    else if (!strcmp(argv[i], "--flush") && i + 1 < argc && !strcmp(argv[i + 1], "weights"))
      flush = FLUSH_WEIGHTS, ++i;
    else if (!strcmp(argv[i], "--flush") && i + 1 < argc && !strcmp(argv[i + 1], "all"))
      flush = FLUSH_ALL, ++i;
    else if (argv[i][0] != '-')
      path = argv[i];
    else {
      fprintf(stderr, "usage: kbench MODEL.so [--threads N] [--warmup W] [--iters N] [--profile] [--top K] [--flush weights|all] [--warm]\n");
      return 2;
    }
  }
  if (!path || iters < 1 || threads < 1) {
    fprintf(stderr, "usage: kbench MODEL.so [--threads N] [--warmup W] [--iters N] [--profile] [--top K] [--flush weights|all] [--warm]\n");
    return 2;
  }
  hx_model_t* model = NULL;
  hx_status_t st = hx_model_load(path, &model);
  if (st) {
    fprintf(stderr, "load: %s\n", hx_status_message(st));
    return 1;
  }
  int rc = prof ? profile(path, model, threads, warmup, iters, top, flush, warm) : latency(model, threads, warmup, iters, flush);
  hx_model_free(model);
  return rc;
}
