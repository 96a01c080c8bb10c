/* OpenBLAS side of the SGEMM benchmark (bench/gemm/run_gemm.py): times
 * cblas_sgemm on C[M,N] = A[M,K] * B[K,N], row-major, no transposes, the
 * same product a Harness artifact of an ONNX MatMul computes.
 *
 *   openblas_sgemm M N K [--threads T] [--warmup W] [--iters N | --serve]
 *   openblas_sgemm --corename
 *
 * --serve answers stdin lines "run K" with {"times_ns": [...]} (the protocol
 * of harness-bench --serve) so the driver can interleave the two; otherwise
 * it prints the median time and GFLOP/s of --iters calls. Built by
 * run_gemm.py with `cc -O2 openblas_sgemm.c -lopenblas` (Debian
 * libopenblas-dev); OPENBLAS_CORETYPE=Haswell restricts it to AVX2 kernels.
 * --corename prints the kernel set OpenBLAS picked for this CPU (under
 * OPENBLAS_CORETYPE if set): a CPU newer than the library gets its generic
 * kernels ("Prescott"), which run_gemm.py then overrides.
 */
#define _GNU_SOURCE
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void openblas_set_num_threads(int num_threads);
char* openblas_get_corename(void);

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return (x > y) - (x < y);
}

/* Uniform [0,1) floats from a fixed LCG: reproducible inputs. */
static float* random_matrix(size_t n, uint32_t seed) {
  float* m = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
  if (!m) exit(1);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    m[i] = (float)(seed >> 8) / (float)(1 << 24);
  }
  return m;
}

int main(int argc, char** argv) {
  if (argc == 2 && !strcmp(argv[1], "--corename")) {
    printf("%s\n", openblas_get_corename());
    return 0;
  }
  if (argc < 4) {
    fprintf(stderr, "usage: openblas_sgemm M N K [--threads T] [--warmup W] [--iters N | --serve]\n");
    return 2;
  }
  int m = atoi(argv[1]), n = atoi(argv[2]), k = atoi(argv[3]);
  int threads = 1, warmup = 5, iters = 50, serve = 0;
  for (int i = 4; i < argc; ++i) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--serve")) serve = 1;
    else return fprintf(stderr, "unknown argument %s\n", argv[i]), 2;
  }
  openblas_set_num_threads(threads);
  float* a = random_matrix((size_t)m * k, 1);
  float* b = random_matrix((size_t)k * n, 2);
  float* c = random_matrix((size_t)m * n, 3);
  for (int i = 0; i < warmup; ++i)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
  uint64_t* t = NULL;
  long cap = 0;
  char line[128];
  if (serve) {
    printf("{\"ready\": true}\n");
    fflush(stdout);
  }
  while (serve ? fgets(line, sizeof line, stdin) != NULL : cap == 0) {
    long runs = iters;
    if (serve) {
      if (!strncmp(line, "quit", 4)) break;
      if (sscanf(line, "run %ld", &runs) != 1 || runs < 1) {
        printf("{\"error\": \"expected 'run K' or 'quit'\"}\n");
        fflush(stdout);
        continue;
      }
    }
    if (runs > cap) {
      free(t);
      t = malloc(sizeof(uint64_t) * (size_t)runs);
      if (!t) return 1;
      cap = runs;
    }
    for (long i = 0; i < runs; ++i) {
      uint64_t t0 = now_ns();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
      t[i] = now_ns() - t0;
    }
    if (serve) {
      printf("{\"times_ns\": [");
      for (long i = 0; i < runs; ++i) printf("%s%llu", i ? ", " : "", (unsigned long long)t[i]);
      printf("]}\n");
      fflush(stdout);
    } else {
      qsort(t, (size_t)runs, sizeof(uint64_t), cmp_u64);
      double med = (double)t[runs / 2];
      printf("{\"m\": %d, \"n\": %d, \"k\": %d, \"threads\": %d, \"median_ms\": %.6f, \"gflops\": %.3f}\n", m, n, k,
             threads, med / 1e6, 2.0 * m * n * k / med);
    }
  }
  free(t);
  free(a);
  free(b);
  free(c);
  return 0;
}
