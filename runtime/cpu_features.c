/* CPU feature detection for the artifact loader.
 *
 * GCC's __builtin_cpu_supports checks both CPUID and the OS's XSAVE state
 * (XCR0), so a feature reported here is usable, not merely present. */
#include <stdlib.h>
#include <string.h>

#include "harness/artifact_abi.h"
#include "harness/harness.h"

typedef struct feature_name {
  uint64_t bit;
  const char* name;
} feature_name;

static const feature_name k_features[] = {
    {HX_CPU_SSE42, "sse4.2"},         {HX_CPU_AVX, "avx"},
    {HX_CPU_AVX2, "avx2"},            {HX_CPU_FMA, "fma"},
    {HX_CPU_F16C, "f16c"},            {HX_CPU_BMI2, "bmi2"},
    {HX_CPU_AVX512F, "avx512f"},      {HX_CPU_AVX512BW, "avx512bw"},
    {HX_CPU_AVX512DQ, "avx512dq"},    {HX_CPU_AVX512VL, "avx512vl"},
    {HX_CPU_AVX512CD, "avx512cd"},    {HX_CPU_AVX512VNNI, "avx512vnni"},
    {HX_CPU_AVX512BF16, "avx512bf16"},{HX_CPU_AVX512FP16, "avx512fp16"},
    {HX_CPU_AVXVNNI, "avxvnni"},
};

const char* hx_cpu_feature_name(uint64_t feature_bit) {
  for (size_t i = 0; i < sizeof(k_features) / sizeof(k_features[0]); ++i)
    if (k_features[i].bit == feature_bit) return k_features[i].name;
  return "unknown";
}

/* HARNESS_DISABLE_CPU_FEATURES=avx512f,avx512bw hides features from the
 * loader, so a fat artifact's fallback variant (or the refusal message) can
 * be exercised on any machine -- like oneDNN's ONEDNN_MAX_CPU_ISA. */
static uint64_t disabled_features(void) {
  const char* env = getenv("HARNESS_DISABLE_CPU_FEATURES");
  if (!env) return 0;
  uint64_t off = 0;
  while (*env) {
    size_t len = strcspn(env, ", ");
    for (size_t i = 0; i < sizeof(k_features) / sizeof(k_features[0]); ++i)
      if (strlen(k_features[i].name) == len && strncmp(k_features[i].name, env, len) == 0) off |= k_features[i].bit;
    env += len;
    env += strspn(env, ", ");
  }
  return off;
}

uint64_t hx_cpu_features(void) {
  uint64_t f = 0;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2")) f |= HX_CPU_SSE42;
  if (__builtin_cpu_supports("avx")) f |= HX_CPU_AVX;
  if (__builtin_cpu_supports("avx2")) f |= HX_CPU_AVX2;
  if (__builtin_cpu_supports("fma")) f |= HX_CPU_FMA;
  if (__builtin_cpu_supports("bmi2")) f |= HX_CPU_BMI2;
  if (__builtin_cpu_supports("avx512f")) f |= HX_CPU_AVX512F;
  if (__builtin_cpu_supports("avx512bw")) f |= HX_CPU_AVX512BW;
  if (__builtin_cpu_supports("avx512dq")) f |= HX_CPU_AVX512DQ;
  if (__builtin_cpu_supports("avx512vl")) f |= HX_CPU_AVX512VL;
  if (__builtin_cpu_supports("avx512cd")) f |= HX_CPU_AVX512CD;
  if (__builtin_cpu_supports("avx512vnni")) f |= HX_CPU_AVX512VNNI;
  if (__builtin_cpu_supports("avx512bf16")) f |= HX_CPU_AVX512BF16;
#if __GNUC__ >= 12
  if (__builtin_cpu_supports("avx512fp16")) f |= HX_CPU_AVX512FP16;
  if (__builtin_cpu_supports("avxvnni")) f |= HX_CPU_AVXVNNI;
#endif
  /* F16C has no __builtin_cpu_supports name in older GCCs: CPUID.1:ECX[29],
   * usable whenever AVX is (same XSAVE state). */
  {
    unsigned a = 1, b, c = 0, d;
    __asm__("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
    if ((c >> 29) & 1u && (f & HX_CPU_AVX)) f |= HX_CPU_F16C;
  }
#endif
  return f & ~disabled_features();
}
