/* Helpers shared by the unit tests: where the generated models are, and
 * compiling a model into a temporary artifact. */
#ifndef HARNESS_TEST_SUPPORT_H
#define HARNESS_TEST_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness/compiler.h"
#include "harness/harness.h"

/* Path of a generated test model (HARNESS_TEST_MODELS/<name>); static buffer. */
const char* ts_model(const char* name);
/* Path of a built tool (HARNESS_BIN/<name>); static buffer. */
const char* ts_tool(const char* name);
/* Compiles model (a ts_model name) to a fresh temporary .so whose path is
 * written to out_path (capacity >= 64); extra flags may be NULL. */
hx_status_t ts_compile(const char* model, char* out_path, int opt_level);
/* The same with a parallel-groups policy (HC_PARALLEL_GROUPS_*), e.g. ALL
 * for tests that need a model's branches to run as concurrent lanes. */
hx_status_t ts_compile_groups(const char* model, char* out_path, int opt_level, int parallel_groups);
/* Compiles with the options in o (its output_path is set here) into a new
 * temporary artifact, named in out_path (removed again on failure). */
hx_status_t ts_compile_with(hc_compile_options* o, char* out_path);
/* Asserts st is OK, printing its message otherwise; frees it. */
#define ts_assert_ok(st) ts_assert_ok_impl((st), __FILE__, __LINE__)
void ts_assert_ok_impl(hx_status_t st, const char* file, int line);
/* Asserts st failed with `code` and its message contains `needle`; frees it. */
void ts_assert_error(hx_status_t st, hx_status_code_t code, const char* needle);
/* Runs a command line, captures stdout+stderr into out (its first cap - 1
 * bytes; the rest is read and dropped), returns the exit status (or -1). */
int ts_run(const char* cmd, char* out, size_t cap);
/* This process's resident set in bytes (/proc/self/statm). */
size_t ts_resident_bytes(void);

#endif
