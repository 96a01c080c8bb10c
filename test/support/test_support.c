/* Test helpers (see test_support.h). */
#define _GNU_SOURCE
#include "test/support/test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char* ts_model(const char* name) {
  static char buf[4][4096];
  static int k;
  char* b = buf[k++ % 4];
  const char* dir = getenv("HARNESS_TEST_MODELS");
  snprintf(b, 4096, "%s/%s", dir ? dir : "test-models", name);
  return b;
}

const char* ts_tool(const char* name) {
  static char buf[4][4096];
  static int k;
  char* b = buf[k++ % 4];
  const char* dir = getenv("HARNESS_BIN");
  snprintf(b, 4096, "%s/%s", dir ? dir : "bin", name);
  return b;
}

hx_status_t ts_compile(const char* model, char* out_path, int opt_level) {
  return ts_compile_groups(model, out_path, opt_level, HC_PARALLEL_GROUPS_AUTO);
}

hx_status_t ts_compile_groups(const char* model, char* out_path, int opt_level, int parallel_groups) {
  hc_compile_options o;
  hc_compile_options_init(&o);
  o.input_path = ts_model(model);
  o.opt_level = opt_level;
  o.parallel_groups = parallel_groups;
  return ts_compile_with(&o, out_path);
}

hx_status_t ts_compile_with(hc_compile_options* o, char* out_path) {
  strcpy(out_path, "/tmp/harness-unit-XXXXXX.so");
  int fd = mkstemps(out_path, 3);
  if (fd < 0) return hx_status_make(HX_STATUS_IO, "mkstemps failed");
  close(fd);
  o->output_path = out_path;
  hx_status_t st = hc_compile(o);
  if (st != HX_OK) unlink(out_path);
  return st;
}

void ts_assert_ok_impl(hx_status_t st, const char* file, int line) {
  if (st != HX_OK) {
    print_error("%s:%d: unexpected error: %s\n", file, line, hx_status_message(st));
    hx_status_free(st);
    fail();
  }
}

void ts_assert_error(hx_status_t st, hx_status_code_t code, const char* needle) {
  assert_non_null(st);
  if (hx_status_code(st) != code || !strstr(hx_status_message(st), needle)) {
    print_error("expected %s error containing '%s', got %s: %s\n", hx_status_code_name(code), needle,
                hx_status_code_name(hx_status_code(st)), hx_status_message(st));
    hx_status_free(st);
    fail();
  }
  hx_status_free(st);
}

int ts_run(const char* cmd, char* out, size_t cap) {
  char* full = NULL;
  if (asprintf(&full, "%s 2>&1", cmd) < 0) return -1;
  FILE* p = popen(full, "r");
  free(full);
  if (!p) return -1;
  size_t n = fread(out, 1, cap - 1, p);
  out[n] = '\0';
  /* Drain what did not fit: a command whose reader left would die of
   * SIGPIPE and report that instead of its own exit status. */
  char rest[4096];
  while (fread(rest, 1, sizeof rest, p) > 0) {
  }
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

size_t ts_resident_bytes(void) {
  FILE* f = fopen("/proc/self/statm", "r");
  assert_non_null(f);
  unsigned long size = 0, resident = 0;
  assert_int_equal(fscanf(f, "%lu %lu", &size, &resident), 2);
  fclose(f);
  return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}
