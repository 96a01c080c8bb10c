/* The runtime allocates nothing per inference: 1,000 runs of hx_session_run
 * make zero calls to the C allocator, on 1 and 2 threads, for a convolution
 * network at -O3 (fused kernels, workspaces), a model with parallel groups
 * and an element-wise chain with outputs written in place.
 *
 * The test executable defines malloc, calloc, realloc, free and the aligned
 * allocators itself (forwarding to glibc's __libc_* entry points). Being in
 * the executable, these definitions come first in the global symbol scope,
 * so they receive the calls of libharness (linked statically here), of libc
 * itself (glibc supports replacing malloc this way) and of every artifact
 * loaded with dlopen, from any thread. Allocations are counted only while a
 * flag is set around the runs; the first run is counted too (no warm-up). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/support/test_support.h"

extern void* __libc_malloc(size_t size);
extern void* __libc_calloc(size_t n, size_t size);
extern void* __libc_realloc(void* p, size_t size);
extern void* __libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void* p);

static atomic_int g_counting;
static atomic_long g_calls;

static void count(void) {
  if (atomic_load_explicit(&g_counting, memory_order_relaxed)) atomic_fetch_add(&g_calls, 1);
}

void* malloc(size_t size) {
  count();
  return __libc_malloc(size);
}
void* calloc(size_t n, size_t size) {
  count();
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t size) {
  count();
  return __libc_realloc(p, size);
}
void free(void* p) {
  if (p) count();
  __libc_free(p);
}
void* aligned_alloc(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}
void* memalign(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  count();
  void* p = __libc_memalign(alignment, size);
  if (!p) return 12; /* ENOMEM */
  *out = p;
  return 0;
}
void* valloc(size_t size) {
  count();
  return __libc_memalign((size_t)sysconf(_SC_PAGESIZE), size);
}
void* pvalloc(size_t size) {
  count();
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return __libc_memalign(page, (size + page - 1) / page * page);
}

/* The interposer works: calls made while counting are seen, from this file,
 * from inside libc, and through the global scope that a dlopen'ed artifact
 * resolves its symbols in. */
static void counter_sees_allocations(void** state) {
  void* (*volatile m)(size_t) = malloc;
  atomic_store(&g_calls, 0);
  atomic_store(&g_counting, 1);
  void* p = m(16);
  char* s = strdup("harness"); /* libc calls malloc internally */
  atomic_store(&g_counting, 0);
  free(p);
  free(s);
  assert_int_equal(atomic_load(&g_calls), 2);
  assert_ptr_equal(dlsym(RTLD_DEFAULT, "malloc"), (void*)malloc);
  assert_ptr_equal(dlsym(RTLD_DEFAULT, "posix_memalign"), (void*)posix_memalign);

  /* A shared object loaded like an artifact (RTLD_NOW | RTLD_LOCAL) reaches
   * the counter too. Built with the C compiler driver artifacts are linked
   * with. */
  char src[] = "/tmp/harness-alloc-probe-XXXXXX.c";
  int fd = mkstemps(src, 2);
  assert_true(fd >= 0);
  const char* code = "#include <stdlib.h>\nvoid* probe_alloc(void) { return malloc(32); }\n";
  assert_int_equal(write(fd, code, strlen(code)), (ssize_t)strlen(code));
  close(fd);
  char so[64], cmd[512], out[4096];
  snprintf(so, sizeof so, "%.*s.so", (int)(strlen(src) - 2), src);
  const char* cc = getenv("HARNESS_CC") ? getenv("HARNESS_CC") : "cc";
  snprintf(cmd, sizeof cmd, "%s -shared -fPIC -o %s %s", cc, so, src);
  assert_int_equal(ts_run(cmd, out, sizeof out), 0);
  void* lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  assert_non_null(lib);
  void* (*probe)(void) = (void* (*)(void))dlsym(lib, "probe_alloc");
  assert_non_null(probe);
  atomic_store(&g_calls, 0);
  atomic_store(&g_counting, 1);
  p = probe();
  atomic_store(&g_counting, 0);
  free(p);
  assert_int_equal(atomic_load(&g_calls), 1);
  dlclose(lib);
  unlink(so);
  unlink(src);
}

/* Compiles the model at `path` into a temporary artifact (path in so). */
static void compile(const char* path, int opt_level, char* so) {
  hc_compile_options o;
  hc_compile_options_init(&o);
  o.input_path = path;
  o.opt_level = opt_level;
  o.parallel_groups = HC_PARALLEL_GROUPS_ALL; /* branches.onnx runs its four lanes concurrently */
  ts_assert_ok(ts_compile_with(&o, so));
}

/* Compiles the model at `path`, then counts allocator calls over 1,000 runs. */
static void runs_allocate_nothing(const char* path, int opt_level, int threads) {
  char so[64];
  compile(path, opt_level, so);
  const char* model = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  hx_model_t* m;
  ts_assert_ok(hx_model_load(so, &m));
  hx_session_t* s;
  hx_session_options_t o = {.threads = threads};
  ts_assert_ok(hx_session_create(m, &o, &s));
  size_t ni = hx_model_input_count(m), no = hx_model_output_count(m);
  void* bufs[16] = {0};
  assert_true(ni + no <= 16);
  for (size_t i = 0; i < ni + no; ++i) {
    hx_tensor_info_t info;
    ts_assert_ok(i < ni ? hx_model_input_info(m, i, &info) : hx_model_output_info(m, i - ni, &info));
    bufs[i] = calloc(1, info.bytes ? info.bytes : 1);
    if (i < ni) {
      float* f = bufs[i];
      for (size_t k = 0; info.dtype == HX_DTYPE_FLOAT32 && k < info.bytes / 4; ++k) f[k] = (float)(k % 17) * 0.25f - 2;
      ts_assert_ok(hx_session_bind_input(s, i, bufs[i], info.bytes));
    } else {
      ts_assert_ok(hx_session_bind_output(s, i - ni, bufs[i], info.bytes));
    }
  }
  atomic_store(&g_calls, 0);
  atomic_store(&g_counting, 1);
  hx_status_t st = HX_OK;
  for (int r = 0; r < 1000 && st == HX_OK; ++r) st = hx_session_run(s);
  atomic_store(&g_counting, 0);
  ts_assert_ok(st);
  long calls = atomic_load(&g_calls);
  if (calls != 0)
    fail_msg("%s (-O%d, %d threads): %ld allocator calls in 1000 runs", model, opt_level, threads, calls);
  for (size_t i = 0; i < ni + no; ++i) free(bufs[i]);
  hx_session_free(s);
  hx_model_free(m);
  unlink(so);
}

static void cnn_runs_allocate_nothing(void** state) {
  char path[4096];
  snprintf(path, sizeof path, "%s/examples/tiny_cnn.onnx", getenv("HARNESS_SOURCE_DIR"));
  runs_allocate_nothing(path, 3, 1);
  runs_allocate_nothing(path, 3, 2);
}

static void parallel_group_runs_allocate_nothing(void** state) {
  char path[4096];
  snprintf(path, sizeof path, "%s", ts_model("branches.onnx"));
  runs_allocate_nothing(path, 2, 1);
  runs_allocate_nothing(path, 2, 3);
}

static void inplace_chain_runs_allocate_nothing(void** state) {
  char path[4096];
  snprintf(path, sizeof path, "%s", ts_model("chain.onnx"));
  runs_allocate_nothing(path, 1, 1);
  runs_allocate_nothing(path, 1, 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(counter_sees_allocations),
      cmocka_unit_test(cnn_runs_allocate_nothing),
      cmocka_unit_test(parallel_group_runs_allocate_nothing),
      cmocka_unit_test(inplace_chain_runs_allocate_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
