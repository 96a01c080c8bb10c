/* harness-bench: latency, throughput and a per-kernel profile of a Harness
 * artifact, plus this machine's fp32 peak for efficiency figures.
 *
 * Latency is measured through the public runtime API (harness/harness.h):
 * one session, inputs bound once, every run timed on its own. The runtime has
 * no profiling hook, so --profile and --trace load the artifact a second time
 * through the ABI contract (harness/artifact_abi.h): dlopen, then
 * harness_artifact_query(), the same code variant the runtime chose, our own
 * arena and bases table, and every kernel of the table called in schedule
 * order with a timer around it. With --threads N > 1 a kernel's tasks are
 * split over this tool's own pthreads the way the runtime's pool splits them
 * (four chunks per thread; thread i first runs the i-th contiguous part of
 * them, then takes what is left in the others' parts from the back, as
 * runtime/thread_pool.c does). Profiled runs are
 * interleaved with session runs and with untimed direct runs of the same
 * kernels, so that framework overhead (session run minus the bare kernel
 * loop) is measured under the same machine load.
 *
 * --serve keeps the session loaded and answers "run K" lines on stdin with
 * the K run times, so a driver (bench/compare/compare.py) can interleave
 * Harness and another engine at fine grain without reloading either.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#include <cjson/cJSON.h>

#include "harness/artifact_abi.h"
#include "harness/harness.h"
#include "tools/common/artifact_dlopen.h"
#include "tools/common/tensor_file.h"

#include "runtime/arena_memory.h" /* the arena memory a session uses */

#define MAX_INPUT_FILES 64

typedef struct options {
  const char* model;
  int threads;
  int warmup;
  int iters;
  double max_time_s; /* stop early once this much time went into timed runs (0 = never) */
  bool json;
  bool profile;
  const char* trace;
  bool zero;
  bool pin;
  bool serve;
  bool peak;
  bool handoff;
  unsigned seed;
  int num_files;
  const char* file_name[MAX_INPUT_FILES];
  const char* file_path[MAX_INPUT_FILES];
} options;

static void usage(FILE* out) {
  fprintf(out,
          "usage: harness-bench MODEL.so [--threads N] [--warmup W] [--iters N] [--max-time S]\n"
          "                     [--json] [--profile] [--trace FILE] [--input NAME=FILE.npy ...]\n"
          "                     [--zero] [--seed S] [--pin] [--serve]\n"
          "       harness-bench --peak [--json]\n"
          "       harness-bench --handoff [--json]\n"
          "\n"
          "Measures an artifact's latency (median, p90, p99) and throughput through libharness.\n"
          "\n"
          "  --threads N       kernel threads, the caller included (default 1)\n"
          "  --warmup W        untimed runs first (default 10)\n"
          "  --iters N         timed runs (default 100)\n"
          "  --max-time S      stop after S seconds of timed runs (at least 3 runs)\n"
          "  --json            one JSON object on stdout instead of text\n"
          "  --profile         per-kernel times, GFLOP/s, share of total, framework overhead\n"
          "  --trace FILE      Chrome trace JSON of one profiled run (implies --profile)\n"
          "  --input NAME=F    input NAME from F (.npy or .pb); others are random\n"
          "  --zero            zero inputs instead of random (uniform [0,1) floats, 0 integers)\n"
          "  --seed S          seed of the random inputs (default 0)\n"
          "  --pin             pin the session's threads to CPUs\n"
          "  --serve           after warm-up, answer stdin lines 'run K' with K run times in ns\n"
          "                    (one JSON line each); 'quit' or EOF ends\n"
          "  --peak            print this machine's ISA, clock and fp32 peak (no model)\n"
          "  --handoff         only what passing data between CPUs 0 and 1 costs (no model;\n"
          "                    part of --peak): the round trip of one line, and per line of\n"
          "                    512 KiB the read of the other core's writes and the rewrite\n"
          "                    of lines the other core read\n");
}

/* ---- time and statistics --------------------------------------------------- */

static inline uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

typedef struct stats {
  double min, median, mean, p90, p99, max;
} stats;

/* Percentiles by linear interpolation between order statistics (numpy's default). */
static double percentile_sorted(const double* s, int n, double p) {
  if (n <= 0) return 0;
  double r = p / 100.0 * (n - 1);
  int lo = (int)floor(r), hi = lo + 1 < n ? lo + 1 : lo;
  return s[lo] + (s[hi] - s[lo]) * (r - lo);
}

/* Summary of n samples; `scratch` holds n doubles and ends up sorted. */
static stats summarize(const double* v, int n, double* scratch) {
  stats st = {0};
  if (n <= 0) return st;
  memcpy(scratch, v, sizeof(double) * (size_t)n);
  qsort(scratch, (size_t)n, sizeof(double), cmp_double);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += scratch[i];
  st.min = scratch[0];
  st.max = scratch[n - 1];
  st.mean = sum / n;
  st.median = percentile_sorted(scratch, n, 50);
  st.p90 = percentile_sorted(scratch, n, 90);
  st.p99 = percentile_sorted(scratch, n, 99);
  return st;
}

/* ---- machine peak ------------------------------------------------------------ */

/* Highest "cpu MHz" in /proc/cpuinfo (0 if unreadable). */
static double cpuinfo_mhz(void) {
  FILE* f = fopen("/proc/cpuinfo", "r");
  if (!f) return 0;
  char line[512];
  double best = 0;
  while (fgets(line, sizeof line, f)) {
    double mhz;
    if (strncmp(line, "cpu MHz", 7) == 0 && sscanf(strchr(line, ':') ? strchr(line, ':') + 1 : "", "%lf", &mhz) == 1 &&
        mhz > best)
      best = mhz;
  }
  fclose(f);
  return best;
}

/* Core clock in GHz from a chain of dependent register-register adds (one
 * cycle each on every x86 core; add-immediate chains are not used because
 * recent cores fold them at rename); best of several short runs, so a run
 * that was descheduled does not lower the figure. */
static double measure_ghz(void) {
#if defined(__x86_64__)
  double best = 0;
  for (int rep = 0; rep < 31; ++rep) {
    uint64_t x = 1, n = 100000; /* ~1.6M cycles: fits in one scheduler slice */
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; ++i)
      __asm__ volatile(
          "add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\t"
          "add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\t"
          "add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\t"
          "add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\t"
          : "+r"(x));
    uint64_t dt = now_ns() - t0;
    double ghz = (double)(n * 16) / (double)dt;
    if (ghz > best) best = ghz;
  }
  return best;
#else
  return 0;
#endif
}

#if defined(__x86_64__)
/* fp32 GFLOP/s one core reaches with independent 256-bit FMAs (12 chains
 * cover 2 ports x 4-5 cycles of latency). */
__attribute__((target("avx2,fma"))) static double fma_gflops_avx2(void) {
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    __m256 a[12], b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < 12; ++i) a[i] = _mm256_set1_ps((float)i);
    const long n = 400000;
    uint64_t t0 = now_ns();
    for (long it = 0; it < n; ++it)
      for (int i = 0; i < 12; ++i) a[i] = _mm256_fmadd_ps(a[i], b, c);
    uint64_t dt = now_ns() - t0;
    float sink = 0;
    for (int i = 0; i < 12; ++i) sink += _mm256_cvtss_f32(a[i]);
    __asm__ volatile("" ::"x"(sink));
    double g = (double)n * 12 * 8 * 2 / (double)dt;
    if (g > best) best = g;
  }
  return best;
}

/* The same with 512-bit FMAs (cores with one 512-bit FMA port reach half of
 * the two-port figure, which is what this measures). */
__attribute__((target("avx512f"))) static double fma_gflops_avx512(void) {
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    __m512 a[12], b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 12; ++i) a[i] = _mm512_set1_ps((float)i);
    const long n = 400000;
    uint64_t t0 = now_ns();
    for (long it = 0; it < n; ++it)
      for (int i = 0; i < 12; ++i) a[i] = _mm512_fmadd_ps(a[i], b, c);
    uint64_t dt = now_ns() - t0;
    float sink = 0;
    for (int i = 0; i < 12; ++i) sink += _mm512_reduce_add_ps(a[i]);
    __asm__ volatile("" ::"x"(sink));
    double g = (double)n * 12 * 16 * 2 / (double)dt;
    if (g > best) best = g;
  }
  return best;
}
#endif

/* GB/s that `threads` cores read from memory together, in order: each
 * thread sums one word per 64-byte line of its share of a 256 MiB buffer
 * (far beyond any cache), four independent sums; best of three passes,
 * timed from the first thread's start to the last one's end. With one
 * thread: what a kernel streaming weights at batch 1 can get; with all of
 * them: what a run on every core can stream (each thread reads its half
 * of a kernel's weights; on the stop-34 Xeon guest one core read 13.7-15
 * GB/s and two together 25-26). 0 when the buffer or the threads cannot
 * be had. */
typedef struct mem_share {
  const uint64_t* words;
  size_t count;
  uint64_t sum;
} mem_share;

static void* mem_read_share(void* arg) {
  mem_share* m = arg;
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (size_t i = 0; i + 24 < m->count; i += 32) {
    s0 += m->words[i];
    s1 += m->words[i + 8];
    s2 += m->words[i + 16];
    s3 += m->words[i + 24];
  }
  m->sum = s0 + s1 + s2 + s3;
  return NULL;
}

static double mem_read_gbps(int threads) {
  size_t bytes = (size_t)256 << 20, words = bytes / 8;
  if (threads < 1) threads = 1;
  if (threads > 64) threads = 64;
  uint64_t* buf = malloc(bytes);
  if (!buf) return 0;
  for (size_t i = 0; i < words; ++i) buf[i] = i;
  mem_share share[64];
  size_t per = words / (size_t)threads / 32 * 32;
  for (int t = 0; t < threads; ++t) share[t] = (mem_share){buf + (size_t)t * per, per, 0};
  double best = 0;
  volatile uint64_t sink = 0;
  for (int rep = 0; rep < 3; ++rep) {
    pthread_t tid[64];
    int started = 0;
    uint64_t t0 = now_ns();
    for (int t = 1; t < threads; ++t, ++started)
      if (pthread_create(&tid[t], NULL, mem_read_share, &share[t]) != 0) break;
    mem_read_share(&share[0]);
    for (int t = 1; t <= started; ++t) pthread_join(tid[t], NULL);
    uint64_t dt = now_ns() - t0;
    if (started != threads - 1) {
      best = 0;
      break;
    }
    for (int t = 0; t < threads; ++t) sink += share[t].sum;
    double g = (double)(per * 8 * (size_t)threads) / (double)dt;
    if (g > best) best = g;
  }
  free(buf);
  return best;
}

/* Core-to-core round trip: two threads pinned to CPUs 0 and 1 pass one
 * cache line back and forth; the best of five runs of 20,000 round trips,
 * in ns. It says how dear it is for one core to read a line the other has
 * just written, which every multi-thread run pays at each handoff between
 * kernels. The benchmark reports record it beside the two-thread results
 * (docs/performance.md); on the Zen 5 guest it reads 400-490 ns most of the
 * time and once read 55 ns (the vCPUs placed on cores that share a cache).
 * -1 with fewer than two CPUs or when the threads cannot be pinned. */
#define PINGPONG_ROUNDS 20000
typedef struct pingpong {
  _Alignas(64) atomic_uint turn;
  int ok;
} pingpong;

static bool pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

static void* pingpong_partner(void* arg) {
  pingpong* pp = arg;
  pp->ok = pin_to_cpu(1);
  atomic_store_explicit(&pp->turn, 1, memory_order_release); /* ready */
  for (unsigned i = 0; i < 5u * PINGPONG_ROUNDS; ++i) {
    unsigned want = 2 * i + 2; /* the caller's move of round i */
    while (atomic_load_explicit(&pp->turn, memory_order_acquire) != want) CPU_RELAX();
    atomic_store_explicit(&pp->turn, want + 1, memory_order_release);
  }
  return NULL;
}

static double core_roundtrip_ns(void) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) return -1;
  cpu_set_t saved;
  if (pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) != 0) return -1;
  if (!pin_to_cpu(0)) return -1;
  pingpong pp;
  atomic_init(&pp.turn, 0);
  pp.ok = 0;
  pthread_t t;
  if (pthread_create(&t, NULL, pingpong_partner, &pp) != 0) {
    pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
    return -1;
  }
  while (atomic_load_explicit(&pp.turn, memory_order_acquire) != 1) CPU_RELAX();
  double best = -1;
  for (unsigned run = 0; run < 5; ++run) {
    uint64_t t0 = now_ns();
    for (unsigned i = run * PINGPONG_ROUNDS; i < (run + 1) * PINGPONG_ROUNDS; ++i) {
      atomic_store_explicit(&pp.turn, 2 * i + 2, memory_order_release);
      while (atomic_load_explicit(&pp.turn, memory_order_acquire) != 2 * i + 3) CPU_RELAX();
    }
    double ns = (double)(now_ns() - t0) / PINGPONG_ROUNDS;
    if (best < 0 || ns < best) best = ns;
  }
  pthread_join(t, NULL);
  pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
  return pp.ok ? best : -1;
}

/* What a handoff of data between the two cores costs, per 64-byte line of a
 * 512 KiB buffer (L2-sized, as one kernel's output is): CPU 0 writes the
 * buffer, then CPU 1 reads it (`read`), then CPU 0 writes it again
 * (`rewrite`: every line CPU 1 holds a copy of must first be taken back from
 * it), against CPU 0 rewriting a buffer no other core has read (`local`).
 * Medians of 24 rounds, in ns per line; a two-thread inference pays the
 * first wherever a kernel reads what the other core's part of the previous
 * kernel wrote, and the second when such a tensor is written again (the next
 * run, or another tensor in the same arena bytes). All -1 with fewer than
 * two CPUs or when the threads cannot be pinned. */
#define HANDOFF_BYTES ((size_t)512 << 10)
#define HANDOFF_ROUNDS 24
typedef struct handoff {
  _Alignas(64) atomic_uint turn; /* 2r + 1: CPU 1 may read in round r; 2r + 2: it has */
  uint64_t* buf;
  double read_ns[HANDOFF_ROUNDS];
  int ok;
} handoff;

/* Aligned 256-bit stores, as a kernel's output stores are (not memset: its
 * string stores take lines another core holds about five times faster than
 * vector stores do on the Zen 5 guest, so they would hide the cost). */
#if defined(__x86_64__)
__attribute__((target("avx2"))) static void handoff_write_avx2(uint64_t* buf, uint64_t v) {
  __m256i x = _mm256_set1_epi64x((long long)v);
  for (size_t i = 0; i < HANDOFF_BYTES / 8; i += 4) _mm256_store_si256((__m256i*)(buf + i), x);
}
#endif

static void handoff_write(uint64_t* buf, uint64_t v) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) {
    handoff_write_avx2(buf, v);
    return;
  }
#endif
  for (size_t i = 0; i < HANDOFF_BYTES / 8; ++i) buf[i] = v + i;
}

static uint64_t handoff_read(const uint64_t* buf) {
  uint64_t s0 = 0, s1 = 0;
  for (size_t i = 0; i < HANDOFF_BYTES / 8; i += 16) {
    s0 += buf[i];
    s1 += buf[i + 8];
  }
  return s0 + s1;
}

static void* handoff_partner(void* arg) {
  handoff* h = arg;
  h->ok = pin_to_cpu(1);
  volatile uint64_t sink = 0;
  for (unsigned r = 0; r < HANDOFF_ROUNDS; ++r) {
    while (atomic_load_explicit(&h->turn, memory_order_acquire) != 2 * r + 1) CPU_RELAX();
    uint64_t t0 = now_ns();
    sink += handoff_read(h->buf);
    h->read_ns[r] = (double)(now_ns() - t0);
    atomic_store_explicit(&h->turn, 2 * r + 2, memory_order_release);
  }
  return NULL;
}

static double median_per_line(double* ns, int n) {
  qsort(ns, (size_t)n, sizeof(double), cmp_double);
  return ns[n / 2] / (double)(HANDOFF_BYTES / 64);
}

static void core_handoff_ns(double* read, double* rewrite, double* local) {
  *read = *rewrite = *local = -1;
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) return;
  cpu_set_t saved;
  if (pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) != 0) return;
  handoff* h = aligned_alloc(64, sizeof(handoff));
  uint64_t* buf = aligned_alloc(4096, HANDOFF_BYTES);
  if (!h || !buf || !pin_to_cpu(0)) goto out;
  memset(h, 0, sizeof *h);
  h->buf = buf;
  handoff_write(buf, 0);
  double local_ns[HANDOFF_ROUNDS], rewrite_ns[HANDOFF_ROUNDS];
  for (unsigned r = 0; r < HANDOFF_ROUNDS; ++r) { /* no other reader yet */
    uint64_t t0 = now_ns();
    handoff_write(buf, r);
    local_ns[r] = (double)(now_ns() - t0);
  }
  pthread_t t;
  if (pthread_create(&t, NULL, handoff_partner, h) != 0) goto out;
  for (unsigned r = 0; r < HANDOFF_ROUNDS; ++r) {
    atomic_store_explicit(&h->turn, 2 * r + 1, memory_order_release);
    while (atomic_load_explicit(&h->turn, memory_order_acquire) != 2 * r + 2) CPU_RELAX();
    uint64_t t0 = now_ns();
    handoff_write(buf, r);
    rewrite_ns[r] = (double)(now_ns() - t0);
  }
  pthread_join(t, NULL);
  if (h->ok) {
    *read = median_per_line(h->read_ns, HANDOFF_ROUNDS);
    *rewrite = median_per_line(rewrite_ns, HANDOFF_ROUNDS);
    *local = median_per_line(local_ns, HANDOFF_ROUNDS);
  }
out:
  pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
  free(buf);
  free(h);
}

/* --peak: ISA, clock, and the fp32 peak per core and for all cores:
 * 2 FMA ports x lanes x 2 flops x GHz, with the clock measured above. */
static int print_peak(bool json) {
  int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
  double mhz = cpuinfo_mhz(), ghz = measure_ghz();
  bool avx2 = false, avx512 = false;
  double fma2 = 0, fma512 = 0;
#if defined(__x86_64__)
  __builtin_cpu_init();
  avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  avx512 = __builtin_cpu_supports("avx512f");
  if (avx2) fma2 = fma_gflops_avx2();
  if (avx512) fma512 = fma_gflops_avx512();
#endif
  double clock = ghz > 0 ? ghz : mhz / 1000.0;
  double mem = mem_read_gbps(1), mem_all = cores > 1 ? mem_read_gbps(cores) : mem;
  double roundtrip = core_roundtrip_ns();
  double handoff_read_ns, handoff_rewrite_ns, handoff_local_ns;
  core_handoff_ns(&handoff_read_ns, &handoff_rewrite_ns, &handoff_local_ns);
  double peak2 = 2 * 8 * 2 * clock, peak512 = 2 * 16 * 2 * clock;
  const char* isa = avx512 ? "avx512" : avx2 ? "avx2" : "none";
  if (json) {
    printf("{\"isa\": \"%s\", \"cores\": %d, \"cpuinfo_mhz\": %.1f, \"measured_ghz\": %.3f, \"clock_ghz\": %.3f, "
           "\"peak_avx2_gflops_per_core\": %.2f, \"peak_avx512_gflops_per_core\": %.2f, "
           "\"fma_loop_avx2_gflops\": %.2f, \"fma_loop_avx512_gflops\": %.2f, \"mem_read_gbps_per_core\": %.2f, "
           "\"mem_read_gbps_all_cores\": %.2f, "
           "\"core_roundtrip_ns\": %.1f, \"handoff_read_ns_per_line\": %.2f, \"handoff_rewrite_ns_per_line\": %.2f, "
           "\"local_rewrite_ns_per_line\": %.2f}\n",
           isa, cores, mhz, ghz, clock, avx2 ? peak2 : 0, avx512 ? peak512 : 0, fma2, fma512, mem, mem_all, roundtrip,
           handoff_read_ns, handoff_rewrite_ns, handoff_local_ns);
  } else {
    printf("ISA: %s, %d cores, /proc/cpuinfo %.0f MHz, measured clock %.2f GHz\n", isa, cores, mhz, ghz);
    if (avx2)
      printf("AVX2 peak    (2 FMA x 8 lanes x 2 flops x %.2f GHz): %.1f GFLOP/s per core, %.1f for %d cores; "
             "FMA loop reaches %.1f per core\n",
             clock, peak2, peak2 * cores, cores, fma2);
    if (avx512)
      printf("AVX-512 peak (2 FMA x 16 lanes x 2 flops x %.2f GHz): %.1f GFLOP/s per core, %.1f for %d cores; "
             "FMA loop reaches %.1f per core\n",
             clock, peak512, peak512 * cores, cores, fma512);
    printf("Memory read  (one core, in order, 256 MiB): %.1f GB/s\n", mem);
    if (cores > 1) printf("Memory read  (%d cores together, in order, 256 MiB): %.1f GB/s\n", cores, mem_all);
    if (roundtrip > 0) printf("Core to core (a cache line between CPUs 0 and 1): round trip %.0f ns\n", roundtrip);
    if (handoff_read_ns > 0)
      printf("Handoff (512 KiB, per line): CPU 1 reads what CPU 0 wrote %.2f ns; CPU 0 rewrites it %.2f ns "
             "(%.2f ns where no other core read it)\n",
             handoff_read_ns, handoff_rewrite_ns, handoff_local_ns);
  }
  return 0;
}

/* --handoff: the cross-core figures of --peak alone (a fraction of a
 * second), for drivers that record the host's state beside each
 * two-thread measurement (bench/compare/compare.py). */
static int print_handoff(bool json) {
  double roundtrip = core_roundtrip_ns();
  double rd, rw, local;
  core_handoff_ns(&rd, &rw, &local);
  if (json)
    printf("{\"core_roundtrip_ns\": %.1f, \"handoff_read_ns_per_line\": %.2f, \"handoff_rewrite_ns_per_line\": %.2f, "
           "\"local_rewrite_ns_per_line\": %.2f}\n",
           roundtrip, rd, rw, local);
  else
    printf("round trip %.0f ns; per line of 512 KiB: read %.2f ns, rewrite %.2f ns, local rewrite %.2f ns\n", roundtrip,
           rd, rw, local);
  return 0;
}

/* ---- inputs -------------------------------------------------------------------- */

/* xorshift64*: fast, seedable, identical on every platform. */
static uint64_t rng_next(uint64_t* s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * UINT64_C(2685821657736338717);
}

/* Fills a buffer: floats uniform in [0,1), everything else (integers, which
 * may be indices, and bools) zero. */
static void fill_random(void* data, size_t bytes, hx_dtype_t dtype, uint64_t* rng) {
  memset(data, 0, bytes);
  if (dtype == HX_DTYPE_FLOAT32) {
    float* f = data;
    for (size_t i = 0; i < bytes / 4; ++i) f[i] = (float)(rng_next(rng) >> 40) / (float)(1 << 24);
  } else if (dtype == HX_DTYPE_FLOAT64) {
    double* f = data;
    for (size_t i = 0; i < bytes / 8; ++i) f[i] = (double)(rng_next(rng) >> 11) / (double)(UINT64_C(1) << 53);
  } else if (dtype == HX_DTYPE_FLOAT16 || dtype == HX_DTYPE_BFLOAT16) {
    uint16_t* h = data;
    for (size_t i = 0; i < bytes / 2; ++i) {
      float v = (float)(rng_next(rng) >> 40) / (float)(1 << 24);
      uint32_t b;
      memcpy(&b, &v, 4);
      /* bfloat16 truncation; for float16 rebias the exponent (values in [0,1)). */
      if (dtype == HX_DTYPE_BFLOAT16) {
        h[i] = (uint16_t)(b >> 16);
      } else {
        int e = (int)((b >> 23) & 0xff) - 127 + 15;
        h[i] = e <= 0 ? 0 : (uint16_t)((e << 10) | ((b >> 13) & 0x3ff));
      }
    }
  }
}

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* Graph I/O buffers shared by every way of running the model. */
typedef struct io_buffers {
  size_t nin, nout;
  void** in;
  void** out;
  size_t* in_bytes;
  size_t* out_bytes;
} io_buffers;

static void io_free(io_buffers* io) {
  for (size_t i = 0; io->in && i < io->nin; ++i) free(io->in[i]);
  for (size_t i = 0; io->out && i < io->nout; ++i) free(io->out[i]);
  free(io->in);
  free(io->out);
  free(io->in_bytes);
  free(io->out_bytes);
}

static int io_setup(const hx_model_t* model, const options* o, io_buffers* io) {
  io->nin = hx_model_input_count(model);
  io->nout = hx_model_output_count(model);
  io->in = calloc(io->nin + 1, sizeof(void*));
  io->out = calloc(io->nout + 1, sizeof(void*));
  io->in_bytes = calloc(io->nin + 1, sizeof(size_t));
  io->out_bytes = calloc(io->nout + 1, sizeof(size_t));
  if (!io->in || !io->out || !io->in_bytes || !io->out_bytes) return fprintf(stderr, "error: out of memory\n"), 1;
  uint64_t rng = UINT64_C(0x9E3779B97F4A7C15) ^ ((uint64_t)o->seed * UINT64_C(0xBF58476D1CE4E5B9));
  if (!rng) rng = 1;
  for (size_t i = 0; i < io->nin; ++i) {
    hx_tensor_info_t info;
    hx_model_input_info(model, i, &info);
    io->in_bytes[i] = info.bytes;
    io->in[i] = aligned_alloc(64, round_up(info.bytes ? info.bytes : 1, 64));
    if (!io->in[i]) return fprintf(stderr, "error: out of memory\n"), 1;
    if (o->zero)
      memset(io->in[i], 0, info.bytes);
    else
      fill_random(io->in[i], info.bytes, info.dtype, &rng);
  }
  for (int f = 0; f < o->num_files; ++f) {
    size_t idx;
    hx_status_t st = hx_model_find_input(model, o->file_name[f], &idx);
    if (st != HX_OK) {
      fprintf(stderr, "error: --input %s: %s\n", o->file_name[f], hx_status_message(st));
      hx_status_free(st);
      return 1;
    }
    hx_tensor_info_t info;
    hx_model_input_info(model, idx, &info);
    hc_tensor t = {0};
    st = hx_tensor_file_read(o->file_path[f], &t);
    if (st != HX_OK) {
      fprintf(stderr, "error: --input %s: %s\n", o->file_name[f], hx_status_message(st));
      hx_status_free(st);
      return 1;
    }
    if (t.dtype != info.dtype || t.nbytes != info.bytes) {
      fprintf(stderr, "error: --input %s: file has %s, %zu bytes; the model wants %s, %zu bytes\n", o->file_name[f],
              hx_dtype_name(t.dtype), t.nbytes, hx_dtype_name(info.dtype), info.bytes);
      hc_tensor_free(&t);
      return 1;
    }
    memcpy(io->in[idx], t.data, t.nbytes);
    hc_tensor_free(&t);
  }
  for (size_t i = 0; i < io->nout; ++i) {
    hx_tensor_info_t info;
    hx_model_output_info(model, i, &info);
    io->out_bytes[i] = info.bytes;
    io->out[i] = aligned_alloc(64, round_up(info.bytes ? info.bytes : 1, 64));
    if (!io->out[i]) return fprintf(stderr, "error: out of memory\n"), 1;
    memset(io->out[i], 0, info.bytes);
  }
  return 0;
}

/* ---- direct execution of the kernel table (profile) ---------------------------- */

/* Span of one kernel on one thread in the traced run. */
typedef struct thread_span {
  uint64_t start, end;
  int64_t tasks;
} thread_span;

typedef struct bench_pool bench_pool;

typedef struct worker_arg {
  bench_pool* pool;
  int id;
} worker_arg;

/* A fork-join pool for one kernel at a time: workers spin briefly after a
 * kernel, then park on a condition variable (so profiled runs interleaved
 * with session runs do not starve the session's threads). */
struct bench_pool {
  int threads;
  pthread_t* workers;
  worker_arg* args;
  _Alignas(64) atomic_uint generation;
  _Alignas(64) atomic_int parked;
  atomic_int stop;
  /* Per thread: its part of the current kernel's chunks, (first << 32) |
   * end, one cache line each. */
  struct { _Alignas(64) atomic_ullong word; }* ranges;
  _Alignas(64) atomic_llong done;
  _Alignas(64) atomic_int active;
  /* Current kernel, written by the caller before generation is bumped. */
  _Alignas(64) hx_abi_kernel_fn fn;
  void* const* bases;
  int64_t tasks, chunk;
  uint32_t kernel_index;
  thread_span* trace; /* [threads][num_kernels] when tracing this run, else NULL */
  uint32_t num_kernels;
  pthread_mutex_t mutex;
  pthread_cond_t cond;
};


/* Claims a chunk of thread r's part: the first one for its owner, the last
 * one for another thread; -1 when the part is empty. */
static int64_t pool_claim(bench_pool* p, int r, int owner) {
  unsigned long long w = atomic_load_explicit(&p->ranges[r].word, memory_order_acquire);
  for (;;) {
    unsigned long long first = w >> 32, end = w & 0xffffffffull;
    if (first >= end) return -1;
    unsigned long long next = owner ? ((first + 1) << 32) | end : (first << 32) | (end - 1);
    if (atomic_compare_exchange_weak_explicit(&p->ranges[r].word, &w, next, memory_order_acq_rel,
                                              memory_order_acquire))
      return (int64_t)(owner ? first : end - 1);
  }
}

/* Runs chunks of the current kernel until none are left: its own part
 * first, then the others'. */
static void pool_work(bench_pool* p, int id) {
  thread_span* span = p->trace ? &p->trace[(size_t)id * p->num_kernels + p->kernel_index] : NULL;
  int64_t ran = 0;
  uint64_t first = 0;
  for (int v = 0; v < p->threads; ++v) {
    int64_t c;
    while ((c = pool_claim(p, (id + v) % p->threads, v == 0)) >= 0) {
      int64_t b = c * p->chunk, e = b + p->chunk < p->tasks ? b + p->chunk : p->tasks;
      if (span && !ran) first = now_ns();
      p->fn(p->bases, b, e);
      ran += e - b;
      atomic_fetch_add_explicit(&p->done, e - b, memory_order_release);
    }
  }
  if (span && ran) *span = (thread_span){first, now_ns(), ran};
}

static void* pool_worker(void* argp) {
  worker_arg* a = argp;
  bench_pool* p = a->pool;
  unsigned seen = 0; /* pool_create starts the count at 0; a kernel may be published before we run */
  for (;;) {
    int spins = 0;
    while (atomic_load_explicit(&p->generation, memory_order_acquire) == seen && !atomic_load(&p->stop)) {
      if (++spins < 20000) {
        CPU_RELAX();
        continue;
      }
      atomic_fetch_add(&p->parked, 1);
      pthread_mutex_lock(&p->mutex);
      while (atomic_load(&p->generation) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->cond, &p->mutex);
      pthread_mutex_unlock(&p->mutex);
      atomic_fetch_sub(&p->parked, 1);
    }
    if (atomic_load(&p->stop)) return NULL;
    seen = atomic_load_explicit(&p->generation, memory_order_acquire);
    pool_work(p, a->id);
    atomic_fetch_sub_explicit(&p->active, 1, memory_order_release);
  }
}

static int pool_create(bench_pool* p, int threads) {
  memset(p, 0, sizeof(*p));
  p->threads = threads;
  pthread_mutex_init(&p->mutex, NULL);
  pthread_cond_init(&p->cond, NULL);
  if (threads <= 1) return 0;
  p->workers = calloc((size_t)threads, sizeof(pthread_t));
  p->args = calloc((size_t)threads, sizeof(worker_arg));
  p->ranges = aligned_alloc(64, sizeof(*p->ranges) * (size_t)threads);
  if (!p->workers || !p->args || !p->ranges) return 1;
  for (int i = 0; i < threads; ++i) atomic_init(&p->ranges[i].word, 0);
  for (int i = 1; i < threads; ++i) {
    p->args[i] = (worker_arg){p, i};
    if (pthread_create(&p->workers[i], NULL, pool_worker, &p->args[i]) != 0) {
      fprintf(stderr, "error: cannot start profiling thread %d\n", i);
      p->threads = i;
      return 1;
    }
  }
  return 0;
}

static void pool_destroy(bench_pool* p) {
  atomic_store(&p->stop, 1);
  pthread_mutex_lock(&p->mutex);
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->mutex);
  for (int i = 1; i < p->threads; ++i) pthread_join(p->workers[i], NULL);
  free(p->workers);
  free(p->args);
  free(p->ranges);
  pthread_mutex_destroy(&p->mutex);
  pthread_cond_destroy(&p->cond);
}

/* Runs all tasks of one kernel on the pool (the caller is thread 0). */
static void pool_run_kernel(bench_pool* p, const hx_abi_kernel* k, uint32_t index, void* const* bases) {
  if (p->threads <= 1 || k->tasks <= 1) {
    if (p->trace) {
      uint64_t t0 = now_ns();
      k->fn(bases, 0, k->tasks);
      p->trace[index] = (thread_span){t0, now_ns(), k->tasks};
    } else {
      k->fn(bases, 0, k->tasks);
    }
    return;
  }
  int64_t chunk = k->tasks / ((int64_t)p->threads * 4);
  p->fn = k->fn;
  p->bases = bases;
  p->tasks = k->tasks;
  p->chunk = chunk < 1 ? 1 : chunk;
  p->kernel_index = index;
  int64_t nchunks = (k->tasks + p->chunk - 1) / p->chunk;
  for (int i = 0; i < p->threads; ++i) {
    unsigned long long first = (unsigned long long)(nchunks * i / p->threads);
    unsigned long long end = (unsigned long long)(nchunks * (i + 1) / p->threads);
    atomic_store_explicit(&p->ranges[i].word, (first << 32) | end, memory_order_relaxed);
  }
  atomic_store_explicit(&p->done, 0, memory_order_relaxed);
  atomic_store_explicit(&p->active, p->threads - 1, memory_order_relaxed);
  atomic_fetch_add(&p->generation, 1);
  if (atomic_load(&p->parked) > 0) {
    pthread_mutex_lock(&p->mutex);
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mutex);
  }
  pool_work(p, 0);
  while (atomic_load_explicit(&p->done, memory_order_acquire) < k->tasks) CPU_RELAX();
  /* Workers that found nothing left must leave before the next kernel is
   * published, or they would read its fields half-written. */
  while (atomic_load_explicit(&p->active, memory_order_acquire) > 0) CPU_RELAX();
}

/* The artifact's kernel table as the runtime would run it. */
typedef struct direct_model {
  void* handle;
  const hx_abi_header* header;
  const hx_abi_variant* variant;
  const hx_abi_kernel* kernels;
  uint32_t num_kernels;
  void* arena;
  int arena_mapped;
  size_t arena_bytes;
  void** bases;
  const char** ops; /* ONNX op type per kernel, from the manifest ("?" if absent) */
  cJSON* manifest;
} direct_model;

static int direct_open(const char* path, const hx_model_t* model, const io_buffers* io, bool need_arena,
                       direct_model* d) {
  memset(d, 0, sizeof(*d));
  d->handle = hx_tool_dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!d->handle) return fprintf(stderr, "error: dlopen: %s\n", dlerror()), 1;
  hx_abi_query_fn query = (hx_abi_query_fn)dlsym(d->handle, HX_ARTIFACT_QUERY_SYMBOL);
  if (!query) return fprintf(stderr, "error: %s exports no %s\n", path, HX_ARTIFACT_QUERY_SYMBOL), 1;
  const hx_abi_header* h = query();
  if (!h || h->magic != HX_ABI_MAGIC || h->abi_major != HX_ABI_VERSION_MAJOR)
    return fprintf(stderr, "error: %s is not a Harness ABI %d artifact\n", path, HX_ABI_VERSION_MAJOR), 1;
  d->header = h;
  /* The variant the runtime chose (it picks the first one this CPU runs). */
  const char* target = hx_model_target(model);
  for (uint32_t v = 0; v < h->num_variants && !d->variant; ++v)
    if (target && h->variants[v].target && strcmp(h->variants[v].target, target) == 0) d->variant = &h->variants[v];
  if (!d->variant) return fprintf(stderr, "error: cannot find code variant '%s'\n", target ? target : "?"), 1;
  d->kernels = d->variant->kernels;
  d->num_kernels = d->variant->num_kernels;
  size_t align = h->arena_alignment < 64 ? 64 : (size_t)h->arena_alignment;
  if (need_arena && h->arena_bytes) {
    /* The same kind of memory as a session's arena (huge pages). */
    d->arena = hx_arena_memory_alloc((size_t)h->arena_bytes, align, &d->arena_mapped);
    d->arena_bytes = (size_t)h->arena_bytes;
    if (!d->arena) return fprintf(stderr, "error: cannot allocate the %llu-byte arena\n",
                                  (unsigned long long)h->arena_bytes), 1;
    memset(d->arena, 0, (size_t)h->arena_bytes);
  }
  d->bases = calloc(h->num_bases + 1, sizeof(void*));
  d->ops = calloc(d->num_kernels + 1, sizeof(char*));
  if (!d->bases || !d->ops) return fprintf(stderr, "error: out of memory\n"), 1;
  d->bases[HX_BASE_ARENA] = d->arena;
  /* Where the model's sessions read them (huge pages when copied at load). */
  d->bases[HX_BASE_WEIGHTS] = (void*)hx_model_weights(model, NULL, NULL);
  for (size_t i = 0; i < io->nin; ++i) d->bases[HX_BASE_FIRST_IO + i] = io->in[i];
  for (size_t j = 0; j < io->nout; ++j) d->bases[HX_BASE_FIRST_IO + io->nin + j] = io->out[j];
  for (uint32_t k = 0; k < d->num_kernels; ++k) d->ops[k] = "?";
  /* The runtime's copy: ABI 1.3 artifacts store the manifest compressed. */
  const char* manifest = hx_model_manifest_json(model);
  d->manifest = manifest ? cJSON_Parse(manifest) : NULL;
  cJSON* ks = cJSON_GetObjectItem(d->manifest, "kernels");
  if (cJSON_GetArraySize(ks) == (int)d->num_kernels) {
    for (uint32_t k = 0; k < d->num_kernels; ++k) {
      const char* op = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(ks, (int)k), "op"));
      if (op) d->ops[k] = op;
    }
  }
  return 0;
}

static void direct_close(direct_model* d) {
  hx_arena_memory_free(d->arena, d->arena_bytes, d->arena_mapped);
  free(d->bases);
  free(d->ops);
  cJSON_Delete(d->manifest);
  if (d->handle) dlclose(d->handle);
}

/* One run of the whole table; per-kernel times into `times` when given. */
static void direct_run(const direct_model* d, bench_pool* p, double* times) {
  void* const* bases = d->bases;
  if (!times) {
    for (uint32_t k = 0; k < d->num_kernels; ++k) pool_run_kernel(p, &d->kernels[k], k, bases);
    return;
  }
  uint64_t t = now_ns();
  for (uint32_t k = 0; k < d->num_kernels; ++k) {
    pool_run_kernel(p, &d->kernels[k], k, bases);
    uint64_t t1 = now_ns();
    times[k] = (double)(t1 - t);
    t = t1;
  }
}

/* One bare and one per-kernel-timed direct run into row i; returns their time. */
static uint64_t profile_iteration(const direct_model* d, bench_pool* p, int i, double* bare_ns, double* ksum_ns,
                                  double* kernel_ns) {
  uint64_t b0 = now_ns();
  direct_run(d, p, NULL);
  bare_ns[i] = (double)(now_ns() - b0);
  double* kt = &kernel_ns[(size_t)i * d->num_kernels];
  direct_run(d, p, kt);
  ksum_ns[i] = 0;
  for (uint32_t k = 0; k < d->num_kernels; ++k) ksum_ns[i] += kt[k];
  return (uint64_t)(bare_ns[i] + ksum_ns[i]);
}

/* ---- output -------------------------------------------------------------------- */

static void json_string(FILE* f, const char* s) {
  fputc('"', f);
  for (; s && *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static void json_stats_ms(FILE* f, const char* key, stats s) {
  fprintf(f, "\"%s\": {\"min\": %.6f, \"median\": %.6f, \"mean\": %.6f, \"p90\": %.6f, \"p99\": %.6f, \"max\": %.6f}",
          key, s.min / 1e6, s.median / 1e6, s.mean / 1e6, s.p90 / 1e6, s.p99 / 1e6, s.max / 1e6);
}

typedef struct kernel_row {
  uint32_t index;
  double median_ns;
} kernel_row;

static int cmp_row_desc(const void* a, const void* b) {
  double x = ((const kernel_row*)a)->median_ns, y = ((const kernel_row*)b)->median_ns;
  return (x < y) - (x > y);
}

/* Chrome trace (chrome://tracing, Perfetto): one complete event per kernel on
 * the calling thread's track, and with several threads one per thread per
 * kernel spanning that thread's chunks. */
static int write_trace(const char* path, const direct_model* d, const double* kernel_ns, const thread_span* spans,
                       int threads, uint64_t t_start) {
  FILE* f = fopen(path, "w");
  if (!f) return fprintf(stderr, "error: cannot write %s: %s\n", path, strerror(errno)), 1;
  fprintf(f, "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
  fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": ");
  json_string(f, d->header->model_name);
  fprintf(f, "}}");
  double t = 0;
  for (uint32_t k = 0; k < d->num_kernels; ++k) {
    const hx_abi_kernel* K = &d->kernels[k];
    fprintf(f, ",\n{\"name\": ");
    json_string(f, K->name);
    fprintf(f, ", \"cat\": ");
    json_string(f, d->ops[k]);
    fprintf(f,
            ", \"ph\": \"X\", \"pid\": 1, \"tid\": 0, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"index\": %u, "
            "\"tasks\": %lld, \"flops\": %.0f, \"bytes\": %.0f, \"gflops\": %.3f}}",
            t / 1e3, kernel_ns[k] / 1e3, k, (long long)K->tasks, K->flops, K->bytes,
            kernel_ns[k] > 0 ? K->flops / kernel_ns[k] : 0);
    t += kernel_ns[k];
  }
  for (int th = 0; threads > 1 && th < threads; ++th) {
    fprintf(f, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": %d, \"args\": {\"name\": "
               "\"thread %d\"}}", th + 1, th);
    for (uint32_t k = 0; k < d->num_kernels; ++k) {
      const thread_span* s = &spans[(size_t)th * d->num_kernels + k];
      if (!s->tasks) continue;
      fprintf(f, ",\n{\"name\": ");
      json_string(f, d->kernels[k].name);
      fprintf(f, ", \"cat\": ");
      json_string(f, d->ops[k]);
      fprintf(f, ", \"ph\": \"X\", \"pid\": 1, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"tasks\": %lld}}",
              th + 1, (double)(s->start - t_start) / 1e3, (double)(s->end - s->start) / 1e3, (long long)s->tasks);
    }
  }
  fprintf(f, "\n]}\n");
  fclose(f);
  return 0;
}

/* ---- main ------------------------------------------------------------------------ */

static int parse_args(int argc, char** argv, options* o) {
  static const struct option longopts[] = {
      {"threads", required_argument, 0, 't'}, {"warmup", required_argument, 0, 'w'},
      {"iters", required_argument, 0, 'n'},   {"max-time", required_argument, 0, 'm'},
      {"json", no_argument, 0, 'j'},          {"profile", no_argument, 0, 'p'},
      {"trace", required_argument, 0, 'T'},   {"input", required_argument, 0, 'i'},
      {"zero", no_argument, 0, 'z'},          {"seed", required_argument, 0, 's'},
      {"pin", no_argument, 0, 'P'},           {"serve", no_argument, 0, 'S'},
      {"peak", no_argument, 0, 'K'},          {"handoff", no_argument, 0, 'H'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  *o = (options){.threads = 1, .warmup = 10, .iters = 100};
  int c;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (c) {
      case 't': o->threads = atoi(optarg); break;
      case 'w': o->warmup = atoi(optarg); break;
      case 'n': o->iters = atoi(optarg); break;
      case 'm': o->max_time_s = atof(optarg); break;
      case 'j': o->json = true; break;
      case 'p': o->profile = true; break;
      case 'T': o->trace = optarg; o->profile = true; break;
      case 'z': o->zero = true; break;
      case 's': o->seed = (unsigned)strtoul(optarg, NULL, 10); break;
      case 'P': o->pin = true; break;
      case 'S': o->serve = true; break;
      case 'K': o->peak = true; break;
      case 'H': o->handoff = true; break;
      case 'i': {
        const char* eq = strrchr(optarg, '=');
        if (!eq || eq == optarg || o->num_files >= MAX_INPUT_FILES) {
          fprintf(stderr, "error: --input wants NAME=FILE (at most %d)\n", MAX_INPUT_FILES);
          return 2;
        }
        o->file_name[o->num_files] = strndup(optarg, (size_t)(eq - optarg));
        o->file_path[o->num_files++] = eq + 1;
        break;
      }
      case 'h': usage(stdout); exit(0);
      default: usage(stderr); return 2;
    }
  }
  if (o->peak || o->handoff) return 0;
  if (optind != argc - 1) {
    usage(stderr);
    return 2;
  }
  o->model = argv[optind];
  if (o->threads < 1 || o->iters < 1 || o->warmup < 0) {
    fprintf(stderr, "error: --threads and --iters must be >= 1, --warmup >= 0\n");
    return 2;
  }
  return 0;
}

static int fail_status(hx_status_t st, const char* what) {
  fprintf(stderr, "error: %s: %s\n", what, hx_status_message(st));
  hx_status_free(st);
  return 1;
}

/* --serve loop: "run K" -> {"times_ns": [...]} per line. */
static int serve(hx_session_t* s) {
  char line[128];
  uint64_t* t = NULL;
  long cap = 0;
  printf("{\"ready\": true}\n");
  fflush(stdout);
  while (fgets(line, sizeof line, stdin)) {
    long k = 0;
    if (strncmp(line, "quit", 4) == 0) break;
    if (sscanf(line, "run %ld", &k) != 1 || k < 1) {
      printf("{\"error\": \"expected 'run K' or 'quit'\"}\n");
      fflush(stdout);
      continue;
    }
    if (k > cap) {
      free(t);
      t = malloc(sizeof(uint64_t) * (size_t)k);
      cap = k;
      if (!t) return fprintf(stderr, "error: out of memory\n"), 1;
    }
    for (long i = 0; i < k; ++i) {
      uint64_t t0 = now_ns();
      hx_status_t st = hx_session_run(s);
      t[i] = now_ns() - t0;
      if (st != HX_OK) return fail_status(st, "run");
    }
    printf("{\"times_ns\": [");
    for (long i = 0; i < k; ++i) printf("%s%llu", i ? ", " : "", (unsigned long long)t[i]);
    printf("]}\n");
    fflush(stdout);
  }
  free(t);
  return 0;
}

int main(int argc, char** argv) {
  options o;
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc;
  if (o.peak) return print_peak(o.json);
  if (o.handoff) return print_handoff(o.json);

  hx_model_t* model = NULL;
  hx_session_t* session = NULL;
  hx_status_t st = hx_model_load(o.model, &model);
  if (st != HX_OK) return fail_status(st, o.model);
  io_buffers io = {0};
  if (io_setup(model, &o, &io)) return 1;
  hx_session_options_t so = {.threads = o.threads, .pin_threads = o.pin};
  st = hx_session_create(model, &so, &session);
  if (st != HX_OK) return fail_status(st, "session");
  for (size_t i = 0; i < io.nin && st == HX_OK; ++i) st = hx_session_bind_input(session, i, io.in[i], io.in_bytes[i]);
  for (size_t j = 0; j < io.nout && st == HX_OK; ++j) st = hx_session_bind_output(session, j, io.out[j], io.out_bytes[j]);
  if (st != HX_OK) return fail_status(st, "bind");

  for (int i = 0; i < o.warmup; ++i)
    if ((st = hx_session_run(session)) != HX_OK) return fail_status(st, "run");
  if (o.serve) {
    rc = serve(session);
    hx_session_free(session);
    hx_model_free(model);
    io_free(&io);
    return rc;
  }

  direct_model d = {0};
  bench_pool pool;
  if (direct_open(o.model, model, &io, o.profile, &d)) return 1;
  if (o.profile) {
    if (pool_create(&pool, o.threads)) return 1;
    for (int i = 0; i < (o.warmup < 3 ? o.warmup : 3); ++i) direct_run(&d, &pool, NULL);
  }

  const uint32_t nk = d.num_kernels;
  double* run_ns = calloc((size_t)o.iters, sizeof(double));
  double* bare_ns = calloc((size_t)o.iters, sizeof(double));
  double* ksum_ns = calloc((size_t)o.iters, sizeof(double));
  double* kernel_ns = o.profile ? calloc((size_t)o.iters * nk + 1, sizeof(double)) : NULL;
  double* scratch = calloc((size_t)o.iters + 1, sizeof(double));
  if (!run_ns || !bare_ns || !ksum_ns || !scratch || (o.profile && !kernel_ns))
    return fprintf(stderr, "error: out of memory\n"), 1;

  /* Timed runs. With --profile each iteration is a session run, a bare
   * direct run and a per-kernel-timed direct run, back to back, so all three
   * see the same machine load. With several threads the session runs come
   * first as a block: the two pools' workers spin for a while after each run
   * and would otherwise compete for the cores. */
  const bool interleave = o.profile && o.threads == 1;
  int n = 0;
  uint64_t spent = 0;
  for (; n < o.iters; ++n) {
    uint64_t t0 = now_ns();
    st = hx_session_run(session);
    uint64_t t1 = now_ns();
    if (st != HX_OK) return fail_status(st, "run");
    run_ns[n] = (double)(t1 - t0);
    spent += t1 - t0;
    if (interleave) spent += profile_iteration(&d, &pool, n, bare_ns, ksum_ns, kernel_ns);
    if (o.max_time_s > 0 && n >= 2 && (double)spent > o.max_time_s * 1e9) {
      ++n;
      break;
    }
  }
  if (o.profile && !interleave) {
    usleep(20000);
    for (int i = 0; i < n; ++i) profile_iteration(&d, &pool, i, bare_ns, ksum_ns, kernel_ns);
  }

  stats lat = summarize(run_ns, n, scratch);
  double flops = 0;
  for (uint32_t k = 0; k < nk; ++k) flops += d.kernels[k].flops;
  const char* target = hx_model_target(model);
  int threads_used = hx_session_thread_count(session);

  /* Per-kernel medians, heaviest first. */
  kernel_row* rows = NULL;
  stats bare = {0}, ksum = {0};
  double ksum_of_medians = 0, overhead_ns = 0, overhead_ksum_ns = 0, overhead_iqr_ns = 0;
  if (o.profile) {
    rows = calloc(nk + 1, sizeof(kernel_row));
    double* col = calloc((size_t)n + 1, sizeof(double));
    if (!rows || !col) return fprintf(stderr, "error: out of memory\n"), 1;
    for (uint32_t k = 0; k < nk; ++k) {
      for (int i = 0; i < n; ++i) col[i] = kernel_ns[(size_t)i * nk + k];
      rows[k] = (kernel_row){k, summarize(col, n, scratch).median};
      ksum_of_medians += rows[k].median_ns;
    }
    free(col);
    qsort(rows, nk, sizeof(kernel_row), cmp_row_desc);
    bare = summarize(bare_ns, n, scratch);
    ksum = summarize(ksum_ns, n, scratch);
    /* Overhead as the median of per-iteration differences: paired samples
     * cancel the slow drift of machine load that separate medians keep. */
    double* diff = calloc((size_t)n + 1, sizeof(double));
    if (!diff) return fprintf(stderr, "error: out of memory\n"), 1;
    for (int i = 0; i < n; ++i) diff[i] = run_ns[i] - bare_ns[i];
    overhead_ns = summarize(diff, n, scratch).median;
    overhead_iqr_ns = percentile_sorted(scratch, n, 75) - percentile_sorted(scratch, n, 25);
    for (int i = 0; i < n; ++i) diff[i] = run_ns[i] - ksum_ns[i];
    overhead_ksum_ns = summarize(diff, n, scratch).median;
    free(diff);
  }

  if (o.trace) {
    thread_span* spans = calloc((size_t)o.threads * nk + 1, sizeof(thread_span));
    double* kt = calloc(nk + 1, sizeof(double));
    if (!spans || !kt) return fprintf(stderr, "error: out of memory\n"), 1;
    direct_run(&d, &pool, kt); /* warm: the workers may have parked */
    direct_run(&d, &pool, kt);
    pool.trace = spans;
    pool.num_kernels = nk;
    uint64_t t_start = now_ns();
    direct_run(&d, &pool, kt);
    pool.trace = NULL;
    if (write_trace(o.trace, &d, kt, spans, o.threads, t_start)) return 1;
    free(spans);
    free(kt);
  }

  /* Per-op-type totals (of per-kernel medians). */
  const char* op_name[256];
  double op_ns[256], op_flops[256];
  int op_count[256], nops = 0;
  for (uint32_t k = 0; o.profile && k < nk; ++k) {
    uint32_t idx = rows[k].index;
    int j = 0;
    while (j < nops && strcmp(op_name[j], d.ops[idx]) != 0) ++j;
    if (j == nops) {
      if (nops == 256) continue;
      op_name[j] = d.ops[idx];
      op_ns[j] = op_flops[j] = 0;
      op_count[j] = 0;
      ++nops;
    }
    op_ns[j] += rows[k].median_ns;
    op_flops[j] += d.kernels[idx].flops;
    op_count[j]++;
  }

  if (o.json) {
    printf("{\"model\": ");
    json_string(stdout, o.model);
    printf(", \"name\": ");
    json_string(stdout, hx_model_name(model));
    printf(", \"target\": ");
    json_string(stdout, target);
    printf(", \"threads\": %d, \"iters\": %d, \"warmup\": %d, \"kernels\": %u, \"flops\": %.0f, ", threads_used, n,
           o.warmup, nk, flops);
    json_stats_ms(stdout, "latency_ms", lat);
    printf(", \"throughput_per_s\": %.3f, \"gflops\": %.4f", lat.mean > 0 ? 1e9 / lat.mean : 0,
           lat.median > 0 ? flops / lat.median : 0);
    if (o.profile) {
      printf(", \"profile\": {");
      json_stats_ms(stdout, "bare_kernel_loop_ms", bare);
      printf(", ");
      json_stats_ms(stdout, "kernel_sum_ms", ksum);
      printf(", \"overhead_us\": %.4f, \"overhead_iqr_us\": %.4f, \"overhead_vs_kernel_sum_us\": %.4f, \"kernels\": [",
             overhead_ns / 1e3, overhead_iqr_ns / 1e3, overhead_ksum_ns / 1e3);
      for (uint32_t r = 0; r < nk; ++r) {
        const hx_abi_kernel* K = &d.kernels[rows[r].index];
        printf("%s{\"index\": %u, \"name\": ", r ? ", " : "", rows[r].index);
        json_string(stdout, K->name);
        printf(", \"op\": ");
        json_string(stdout, d.ops[rows[r].index]);
        printf(", \"tasks\": %lld, \"flops\": %.0f, \"bytes\": %.0f, \"median_us\": %.4f, \"share\": %.6f, "
               "\"gflops\": %.4f}",
               (long long)K->tasks, K->flops, K->bytes, rows[r].median_ns / 1e3,
               ksum_of_medians > 0 ? rows[r].median_ns / ksum_of_medians : 0,
               rows[r].median_ns > 0 ? K->flops / rows[r].median_ns : 0);
      }
      printf("], \"ops\": [");
      for (int j = 0; j < nops; ++j) {
        printf("%s{\"op\": ", j ? ", " : "");
        json_string(stdout, op_name[j]);
        printf(", \"kernels\": %d, \"us\": %.4f, \"share\": %.6f, \"gflops\": %.4f}", op_count[j], op_ns[j] / 1e3,
               ksum_of_medians > 0 ? op_ns[j] / ksum_of_medians : 0, op_ns[j] > 0 ? op_flops[j] / op_ns[j] : 0);
      }
      printf("]}");
    }
    printf("}\n");
  } else {
    char variant_note[64] = ""; /* a fat artifact: which of its variants this CPU runs */
    if (d.header->num_variants > 1)
      snprintf(variant_note, sizeof variant_note, " (variant %u of %u)", (unsigned)(d.variant - d.header->variants) + 1,
               (unsigned)d.header->num_variants);
    printf("model      %s (%s), target %s%s, %d thread%s, %u kernels, %.3f GFLOP per run\n", o.model,
           hx_model_name(model), target, variant_note, threads_used, threads_used == 1 ? "" : "s", nk, flops / 1e9);
    printf("latency    median %.4f ms  p90 %.4f ms  p99 %.4f ms  (min %.4f, mean %.4f, max %.4f; %d runs)\n",
           lat.median / 1e6, lat.p90 / 1e6, lat.p99 / 1e6, lat.min / 1e6, lat.mean / 1e6, lat.max / 1e6, n);
    printf("throughput %.2f inferences/s (one stream), %.2f GFLOP/s at the median\n", lat.mean > 0 ? 1e9 / lat.mean : 0,
           lat.median > 0 ? flops / lat.median : 0);
    if (o.profile) {
      printf("\nprofile (direct kernel-table execution, medians over %d runs)\n", n);
      printf("  session run %.3f us, bare kernel loop %.3f us, sum of timed kernels %.3f us\n", lat.median / 1e3,
             bare.median / 1e3, ksum.median / 1e3);
      printf("  framework overhead: %.3f us per inference (median of session run - bare kernel loop, paired; "
             "interquartile range %.3f us)\n\n",
             overhead_ns / 1e3, overhead_iqr_ns / 1e3);
      printf("  %5s %-36s %-18s %8s %12s %7s %9s\n", "#", "kernel", "op", "tasks", "time us", "share", "GFLOP/s");
      for (uint32_t r = 0; r < nk; ++r) {
        const hx_abi_kernel* K = &d.kernels[rows[r].index];
        printf("  %5u %-36.36s %-18.18s %8lld %12.3f %6.2f%% %9.2f\n", rows[r].index, K->name, d.ops[rows[r].index],
               (long long)K->tasks, rows[r].median_ns / 1e3,
               ksum_of_medians > 0 ? 100 * rows[r].median_ns / ksum_of_medians : 0,
               rows[r].median_ns > 0 ? K->flops / rows[r].median_ns : 0);
      }
      printf("\n  %-18s %7s %12s %7s %9s\n", "op", "kernels", "time us", "share", "GFLOP/s");
      for (int j = 0; j < nops; ++j)
        printf("  %-18.18s %7d %12.3f %6.2f%% %9.2f\n", op_name[j], op_count[j], op_ns[j] / 1e3,
               ksum_of_medians > 0 ? 100 * op_ns[j] / ksum_of_medians : 0, op_ns[j] > 0 ? op_flops[j] / op_ns[j] : 0);
    }
    if (o.trace) printf("\ntrace written to %s\n", o.trace);
  }

  if (o.profile) pool_destroy(&pool);
  free(rows);
  free(run_ns);
  free(bare_ns);
  free(ksum_ns);
  free(kernel_ns);
  free(scratch);
  hx_session_free(session);
  direct_close(&d);
  hx_model_free(model);
  io_free(&io);
  return 0;
}
