/* Tests fat artifacts (harnessc --target x86-64-v3,x86-64-v4): one shared
 * object with a code variant per target, best first; the runtime picks the
 * first the CPU runs. HARNESS_DISABLE_CPU_FEATURES hides AVX-512 (the v3
 * fallback must run and agree with v4) and AVX2 (the load must be refused
 * with a clear message). Passes on AVX2-only machines too: there the native
 * run already picks v3. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/artifact_abi.h"
#include "test/support/test_support.h"

static int host_has_v4(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512cd");
}

static hx_status_t compile_fat(const char* model_path, const char* targets, const char* batches, char* out_path) {
  hc_compile_options o;
  hc_compile_options_init(&o);
  o.input_path = model_path;
  o.target = targets;
  o.opt_level = 2;
  hx_status_t st = batches ? hc_parse_batch_list(batches, &o) : HX_OK;
  return st == HX_OK ? ts_compile_with(&o, out_path) : st;
}

static const char* tiny_cnn(void) {
  static char path[1024];
  const char* src = getenv("HARNESS_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/examples/tiny_cnn.onnx", src ? src : ".");
  return path;
}

/* Loads the artifact, checks the chosen variant, runs it on a fixed input
 * and returns output 0 (malloc'd, *n floats). */
static float* run_once(const char* so, const char* expect_target, size_t* n) {
  hx_model_t* m;
  ts_assert_ok(hx_model_load(so, &m));
  assert_string_equal(hx_model_target(m), expect_target);
  hx_tensor_info_t in, out;
  ts_assert_ok(hx_model_input_info(m, 0, &in));
  ts_assert_ok(hx_model_output_info(m, 0, &out));
  float* x = malloc(in.bytes);
  float* y = calloc(1, out.bytes);
  for (size_t i = 0; i < in.bytes / sizeof(float); ++i) x[i] = (float)sin(0.37 * (double)i);
  hx_session_t* s;
  ts_assert_ok(hx_session_create(m, NULL, &s));
  ts_assert_ok(hx_session_bind_input(s, 0, x, in.bytes));
  ts_assert_ok(hx_session_bind_output(s, 0, y, out.bytes));
  ts_assert_ok(hx_session_run(s));
  hx_session_free(s);
  hx_model_free(m);
  free(x);
  *n = out.bytes / sizeof(float);
  return y;
}

static void assert_close(const float* a, const float* b, size_t n) {
  for (size_t i = 0; i < n; ++i) assert_true(fabsf(a[i] - b[i]) <= 1e-4f + 1e-4f * fabsf(b[i]));
}

static void picks_best_variant_and_falls_back(void** state) {
  (void)state;
  char so[64];
  /* Given in the "wrong" order: the compiler sorts most capable first. */
  ts_assert_ok(compile_fat(tiny_cnn(), "x86-64-v3,x86-64-v4", NULL, so));

  /* The header lists both variants, v4 first, sharing one weights blob. */
  hx_model_t* m;
  ts_assert_ok(hx_model_load(so, &m));
  const char* manifest = hx_model_manifest_json(m);
  const char* v4 = strstr(manifest, "\"variants\"");
  assert_non_null(v4);
  v4 = strstr(v4, "x86-64-v4");
  assert_non_null(v4);
  assert_non_null(strstr(v4, "x86-64-v3"));
  hx_model_free(m);

  unsetenv("HARNESS_DISABLE_CPU_FEATURES");
  size_t n_native, n_v3;
  float* y_native = run_once(so, host_has_v4() ? "x86-64-v4" : "x86-64-v3", &n_native);

  setenv("HARNESS_DISABLE_CPU_FEATURES", "avx512f", 1);
  float* y_v3 = run_once(so, "x86-64-v3", &n_v3);
  assert_int_equal(n_native, n_v3);
  assert_close(y_native, y_v3, n_v3);

  /* Nothing left that this CPU runs: a clear refusal naming the feature. */
  setenv("HARNESS_DISABLE_CPU_FEATURES", "avx512f,avx2", 1);
  ts_assert_error(hx_model_load(so, &m), HX_STATUS_INCOMPATIBLE, "avx2");
  unsetenv("HARNESS_DISABLE_CPU_FEATURES");

  /* The fallback variant computes what a v3-only artifact computes. */
  char so3[64];
  ts_assert_ok(compile_fat(tiny_cnn(), "x86-64-v3", NULL, so3));
  size_t n3;
  float* y3 = run_once(so3, "x86-64-v3", &n3);
  assert_int_equal(n3, n_v3);
  assert_close(y_v3, y3, n3);
  free(y3);
  unlink(so3);

  free(y_native);
  free(y_v3);
  unlink(so);
}

static void fat_with_batches(void** state) {
  (void)state;
  char so[64];
  ts_assert_ok(compile_fat(ts_model("batchable.onnx"), "x86-64-v4,x86-64-v3", "1,2", so));
  const hx_abi_header* h = NULL;
  for (int pass = 0; pass < 2; ++pass) {
    if (pass) setenv("HARNESS_DISABLE_CPU_FEATURES", "avx512f", 1);
    hx_model_t* m;
    ts_assert_ok(hx_model_load(so, &m));
    assert_string_equal(hx_model_target(m), pass || !host_has_v4() ? "x86-64-v3" : "x86-64-v4");
    assert_int_equal(hx_model_batch_count(m), 2);
    hx_session_t* s;
    ts_assert_ok(hx_session_create_for_batch(m, 2, NULL, &s));
    float x[2][8], sv[2][8], y[2][8];
    for (int r = 0; r < 2; ++r)
      for (int j = 0; j < 8; ++j) {
        x[r][j] = (float)(r - j);
        sv[r][j] = (float)(r * 0.5 - 1);
      }
    ts_assert_ok(hx_session_bind_input(s, 0, x, sizeof x));
    ts_assert_ok(hx_session_bind_input(s, 1, sv, sizeof sv));
    ts_assert_ok(hx_session_bind_output(s, 0, y, sizeof y));
    ts_assert_ok(hx_session_run(s));
    for (int r = 0; r < 2; ++r)
      for (int j = 0; j < 8; ++j) {
        float v = x[r][j] * (float)(j - 3.5) + sv[r][j];
        assert_float_equal(y[r][j], v > 0 ? v : 0, 1e-6);
      }
    hx_session_free(s);
    hx_model_free(m);
  }
  unsetenv("HARNESS_DISABLE_CPU_FEATURES");
  (void)h;
  unlink(so);
}

static void bad_target_lists(void** state) {
  (void)state;
  char so[64];
  ts_assert_error(compile_fat(tiny_cnn(), "x86-64-v3,x86-64-v3", NULL, so), HX_STATUS_INVALID_ARGUMENT,
                  "need the same CPU features");
  ts_assert_error(compile_fat(tiny_cnn(), "x86-64-v3,bogus", NULL, so), HX_STATUS_INVALID_ARGUMENT, "bogus");
  ts_assert_error(compile_fat(tiny_cnn(), "x86-64-v3,", NULL, so), HX_STATUS_INVALID_ARGUMENT, "separated by commas");
  /* --mcpu names one CPU; the memory plan is one target's. */
  hc_compile_options o;
  hc_compile_options_init(&o);
  o.input_path = tiny_cnn();
  o.output_path = "/tmp/harness-fat-never-written.so";
  o.target = "x86-64-v3,x86-64-v4";
  o.mcpu = "znver4";
  ts_assert_error(hc_compile(&o), HX_STATUS_INVALID_ARGUMENT, "--mcpu names one CPU");
  o.mcpu = NULL;
  o.emit = "memplan";
  ts_assert_error(hc_compile(&o), HX_STATUS_INVALID_ARGUMENT, "give a single --target");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(picks_best_variant_and_falls_back),
      cmocka_unit_test(fat_with_batches),
      cmocka_unit_test(bad_target_lists),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
