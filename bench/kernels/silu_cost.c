/* Cycles per 8-lane vector of the SiLU forms the convolution epilogues
 * could take (docs/performance.md, "Depthwise planes, SiLU and the
 * Winograd input transform"), on an L1-resident array:
 *
 *   cc -O3 -mavx2 -mfma bench/kernels/silu_cost.c -o /tmp/silu_cost
 *   taskset -c 1 /tmp/silu_cost [GHZ]
 *
 *   mul   x * (1 / (1 + e^-x)): hc_ew_sigmoid_fast, then the Mul;
 *   fold  x / (1 + e^-x): hc_ew_silu_fast (one multiply fewer);
 *   rcp   mul with the division as rcpps and one Newton step;
 *   deg4  fold with a degree-4 polynomial of 2^f (less accurate: not used);
 *   exp   e^-x alone; div: one division alone.
 * e^-x is 2^t, t = -x log2(e) clamped to [-126, 128], split into round(t)
 * (the exponent field) and a polynomial of the rest, as in fast_math.c.
 * GHZ (default 3.24, what `harness-bench --peak` measured on the Zen 3
 * guest) turns the best of 50 timings into cycles. */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 4096
static float xs[N] __attribute__((aligned(64))), ys[N] __attribute__((aligned(64)));

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline __m256 exp_neg(__m256 v, int degree) {
  static const float c5[] = {1.327646430581808e-3f, 9.675540961325169e-3f, 5.550713464617729e-2f,
                             2.4022120237350464e-1f, 6.931469440460205e-1f, 1.0000001192092896f};
  __m256 t = _mm256_mul_ps(v, _mm256_set1_ps(-1.44269504f));
  t = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(-126.f)), _mm256_set1_ps(128.f));
  __m256 nf = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 f = _mm256_sub_ps(t, nf);
  int first = degree == 5 ? 0 : 1;
  __m256 p = _mm256_set1_ps(c5[first]);
  for (int i = first + 1; i < 6; ++i) p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(c5[i]));
  __m256i n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(nf), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(n));
}

static inline __m256 silu_mul(__m256 v) {
  __m256 one = _mm256_set1_ps(1.f);
  return _mm256_mul_ps(v, _mm256_div_ps(one, _mm256_add_ps(one, exp_neg(v, 5))));
}
static inline __m256 silu_fold(__m256 v) { return _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.f), exp_neg(v, 5))); }
static inline __m256 silu_rcp(__m256 v) {
  __m256 d = _mm256_add_ps(_mm256_set1_ps(1.f), exp_neg(v, 5));
  __m256 r = _mm256_rcp_ps(d);
  r = _mm256_fmadd_ps(r, _mm256_fnmadd_ps(d, r, _mm256_set1_ps(1.f)), r);
  return _mm256_mul_ps(v, r);
}
static inline __m256 silu_deg4(__m256 v) { return _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.f), exp_neg(v, 4))); }
static inline __m256 only_exp(__m256 v) { return exp_neg(v, 5); }
static inline __m256 only_div(__m256 v) { return _mm256_div_ps(_mm256_set1_ps(1.f), _mm256_add_ps(_mm256_set1_ps(1.f), v)); }

#define BENCH(name, F)                                                                                \
  do {                                                                                                \
    double best = 1e9;                                                                                \
    for (int r = 0; r < 50; ++r) {                                                                    \
      double t0 = now();                                                                              \
      for (int it = 0; it < 100; ++it) {                                                              \
        for (int i = 0; i < N; i += 8) _mm256_store_ps(ys + i, F(_mm256_load_ps(xs + i)));            \
        __asm__ volatile("" ::"r"(ys) : "memory");                                                    \
      }                                                                                               \
      double t = now() - t0;                                                                          \
      if (t < best) best = t;                                                                         \
    }                                                                                                 \
    printf("%-5s %6.2f cycles per vector\n", name, best / (100.0 * N / 8) * ghz * 1e9);               \
  } while (0)

int main(int argc, char** argv) {
  double ghz = argc > 1 ? atof(argv[1]) : 3.24;
  for (int i = 0; i < N; ++i) xs[i] = (float)(i % 200 - 100) * 0.07f;
  BENCH("mul", silu_mul);
  BENCH("fold", silu_fold);
  BENCH("rcp", silu_rcp);
  BENCH("deg4", silu_deg4);
  BENCH("exp", only_exp);
  BENCH("div", only_div);
  return 0;
}
