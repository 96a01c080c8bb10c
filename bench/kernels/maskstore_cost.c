/* Cost of AVX2's masked store (vmaskmovps to memory) and masked load
 * against plain ones, the measurement behind hc_kb_prefix_store
 * (docs/performance.md, "On the Zen 3 guest"):
 *
 *   cc -O2 -mavx2 bench/kernels/maskstore_cost.c -o /tmp/maskstore_cost
 *   taskset -c 1 /tmp/maskstore_cost [GHZ]
 *
 * Each loop does one memory operation per iteration at a stride of 196
 * floats (a 14x14 plane: a new line each time, as the channels kernel's
 * stores), inside a 256 KiB buffer. The mask keeps 5 of 8 lanes, as the
 * channels kernel's 5-pixel runs did. Prints nanoseconds per operation
 * and, at GHZ (default 3.2, the clock `harness-bench --peak` measures),
 * cycles. The plain-store loop is bound by the loop itself (about 3
 * cycles), so read the masked store's figure against it, not against 1. */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 100000000L
#define MASK 0xfff0 /* 64 Ki floats, 16-float aligned offsets */

static float buf[MASK + 16] __attribute__((aligned(64)));

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  double ghz = argc > 1 ? atof(argv[1]) : 3.2;
  __m256i m = _mm256_setr_epi32(-1, -1, -1, -1, -1, 0, 0, 0);
  __m256 v = _mm256_set1_ps(1.0f);
  double t0 = now();
  for (long i = 0; i < N; i++) _mm256_maskstore_ps(buf + ((i * 196) & MASK), m, v);
  double t1 = now();
  for (long i = 0; i < N; i++) _mm256_storeu_ps(buf + ((i * 196) & MASK), v);
  double t2 = now();
  /* Loads: four independent sums, so the adds' latency does not bound them. */
  __m256 a = _mm256_setzero_ps(), b = a, c = a, d = a;
  for (long i = 0; i < N; i += 4) {
    a = _mm256_add_ps(a, _mm256_maskload_ps(buf + ((i * 196) & MASK), m));
    b = _mm256_add_ps(b, _mm256_maskload_ps(buf + ((i * 196 + 16) & MASK), m));
    c = _mm256_add_ps(c, _mm256_maskload_ps(buf + ((i * 196 + 32) & MASK), m));
    d = _mm256_add_ps(d, _mm256_maskload_ps(buf + ((i * 196 + 48) & MASK), m));
  }
  double t3 = now();
  for (long i = 0; i < N; i += 4) {
    a = _mm256_add_ps(a, _mm256_loadu_ps(buf + ((i * 196) & MASK)));
    b = _mm256_add_ps(b, _mm256_loadu_ps(buf + ((i * 196 + 16) & MASK)));
    c = _mm256_add_ps(c, _mm256_loadu_ps(buf + ((i * 196 + 32) & MASK)));
    d = _mm256_add_ps(d, _mm256_loadu_ps(buf + ((i * 196 + 48) & MASK)));
  }
  double t4 = now();
  const char* what[4] = {"masked store (vmaskmovps)", "plain store (vmovups)", "masked load (vmaskmovps)",
                         "plain load (vmovups)"};
  double secs[4] = {t1 - t0, t2 - t1, t3 - t2, t4 - t3};
  for (int k = 0; k < 4; ++k)
    printf("%-26s %6.2f ns  %6.1f cycles at %.2f GHz\n", what[k], secs[k] / N * 1e9, secs[k] / N * ghz * 1e9, ghz);
  a = _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d));
  return _mm256_cvtss_f32(a) == 12345.0f; /* keeps the sums alive */
}
