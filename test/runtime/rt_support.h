/* Helpers for the runtime-only unit tests (executor, scheduler, batching,
 * serving): they link libharness and CMocka but not the compiler, so the
 * ThreadSanitizer build (run_tsan.sh) stays small. The synthetic artifact
 * (bench/synthetic_artifact.c) stands in for a compiled model. */
#ifndef HARNESS_TEST_RT_SUPPORT_H
#define HARNESS_TEST_RT_SUPPORT_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "harness/harness.h"

/* Asserts st is OK, printing its message otherwise; frees it. */
#define rt_assert_ok(st) rt_assert_ok_impl((st), __FILE__, __LINE__)
static inline void rt_assert_ok_impl(hx_status_t st, const char* file, int line) {
  if (st != HX_OK) {
    print_error("%s:%d: unexpected error: %s\n", file, line, hx_status_message(st));
    hx_status_free(st);
    fail();
  }
}

/* Asserts st failed with `code` and a message containing `needle`; frees it. */
static inline void rt_assert_error(hx_status_t st, hx_status_code_t code, const char* needle) {
  assert_non_null(st);
  if (hx_status_code(st) != code || !strstr(hx_status_message(st), needle)) {
    print_error("expected %s error containing '%s', got %s: %s\n", hx_status_code_name(code), needle,
                hx_status_code_name(hx_status_code(st)), hx_status_message(st));
    hx_status_free(st);
    fail();
  }
  hx_status_free(st);
}

/* Path of the synthetic artifact (HARNESS_SYNTHETIC, set by CTest). */
static inline const char* rt_synthetic_path(void) {
  const char* p = getenv("HARNESS_SYNTHETIC");
  return p ? p : "synthetic.so";
}

enum { RT_COST_NONE = 0, RT_COST_SPIN = 1, RT_COST_SLEEP = 2 };

/* Sets the synthetic artifact's cost per run (see synthetic_artifact.c). Call it
 * while a model loaded from the artifact is alive: dlopen then shares that
 * handle, so the setting is the one the model's kernels read. */
static inline void rt_synthetic_configure(long base_us, long per_sample_us, int mode) {
  void* h = dlopen(rt_synthetic_path(), RTLD_NOW | RTLD_LOCAL);
  assert_non_null(h);
  void (*fn)(long, long, int) = (void (*)(long, long, int))dlsym(h, "harness_synthetic_configure");
  assert_non_null(fn);
  fn(base_us, per_sample_us, mode);
  dlclose(h);
}

/* Inference runs the synthetic artifact has made so far (all batch sizes). */
static inline long rt_synthetic_runs(void) {
  void* h = dlopen(rt_synthetic_path(), RTLD_NOW | RTLD_LOCAL);
  assert_non_null(h);
  long (*fn)(void) = (long (*)(void))dlsym(h, "harness_synthetic_runs");
  assert_non_null(fn);
  long n = fn();
  dlclose(h);
  return n;
}

#endif /* HARNESS_TEST_RT_SUPPORT_H */
