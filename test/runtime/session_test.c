/* Tests the public runtime API (runtime/model.c, runtime/session.c) on real
 * artifacts compiled from generated models. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena_memory.h"
#include "harness/artifact_abi.h"
#include "test/support/test_support.h"

static char g_add_relu[64];

static int setup(void** state) {
  hx_status_t st = ts_compile("add_relu.onnx", g_add_relu, 2);
  if (st != HX_OK) {
    fprintf(stderr, "setup: %s\n", hx_status_message(st));
    hx_status_free(st);
    return -1;
  }
  return 0;
}

static int teardown(void** state) {
  unlink(g_add_relu);
  return 0;
}

static void signature_is_queryable(void** state) {
  hx_model_t* m;
  ts_assert_ok(hx_model_load(g_add_relu, &m));
  assert_int_equal(hx_model_input_count(m), 1);
  assert_int_equal(hx_model_output_count(m), 1);
  hx_tensor_info_t in, out;
  ts_assert_ok(hx_model_input_info(m, 0, &in));
  ts_assert_ok(hx_model_output_info(m, 0, &out));
  assert_string_equal(in.name, "x");
  assert_int_equal(in.dtype, HX_DTYPE_FLOAT32);
  assert_int_equal(in.rank, 2);
  assert_int_equal(in.dims[0], 2);
  assert_int_equal(in.dims[1], 3);
  assert_int_equal(in.bytes, 24);
  assert_string_equal(out.name, "y");
  size_t idx = 9;
  ts_assert_ok(hx_model_find_output(m, "y", &idx));
  assert_int_equal(idx, 0);
  ts_assert_error(hx_model_find_input(m, "nope", &idx), HX_STATUS_NOT_FOUND, "nope");
  ts_assert_error(hx_model_input_info(m, 1, &in), HX_STATUS_INVALID_ARGUMENT, "out of range");
  assert_non_null(strstr(hx_model_producer(m), "harnessc"));
  assert_string_equal(hx_model_name(m), "m");
  assert_non_null(strstr(hx_model_manifest_json(m), "\"kernels\""));
  assert_true(hx_model_kernel_count(m) >= 1);
  size_t wbytes = 0;
  int copied = -1;
  assert_non_null(hx_model_weights(m, &wbytes, &copied));
  assert_true(wbytes >= 12 && wbytes < ((size_t)2 << 20));
  assert_int_equal(copied, 0); /* small blobs stay in the file mapping */
  hx_model_free(m);
}

static void runs_and_computes(void** state) {
  hx_model_t* m;
  ts_assert_ok(hx_model_load(g_add_relu, &m));
  for (int threads = 1; threads <= 3; ++threads) {
    hx_session_t* s;
    hx_session_options_t o = {.threads = threads};
    ts_assert_ok(hx_session_create(m, &o, &s));
    assert_int_equal(hx_session_thread_count(s), threads);
    float x[6] = {-2, -1, 0, 1, 2, 3}, y[6] = {0};
    ts_assert_ok(hx_session_bind_input(s, 0, x, sizeof x));
    ts_assert_ok(hx_session_bind_output(s, 0, y, sizeof y));
    ts_assert_ok(hx_session_run(s));
    const float want[6] = {0, 0, 3, 2, 0, 6}; /* relu(x + [1,-2,3]) */
    for (int i = 0; i < 6; ++i) assert_float_equal(y[i], want[i], 0);
    /* Bindings persist: rerun after changing the input in place. */
    x[0] = 10;
    ts_assert_ok(hx_session_run(s));
    assert_float_equal(y[0], 11, 0);
    hx_session_free(s);
  }
  hx_model_free(m);
}

/* y = x W of make_unit_models.py's big_weights.onnx for x = (k mod 5) - 2. */
static void check_big_weights(hx_model_t* m, int threads) {
  static float x[1024], y[768];
  for (int k = 0; k < 1024; ++k) x[k] = (float)(k % 5 - 2);
  hx_session_t* s;
  hx_session_options_t o = {.threads = threads};
  ts_assert_ok(hx_session_create(m, &o, &s));
  ts_assert_ok(hx_session_bind_input(s, 0, x, sizeof x));
  ts_assert_ok(hx_session_bind_output(s, 0, y, sizeof y));
  ts_assert_ok(hx_session_run(s));
  for (int j = 0; j < 768; ++j) {
    double want = 0;
    for (int i = 0; i < 1024; ++i) want += x[i] * (double)((i * 7 + j * 13) % 17 - 8) / 64;
    assert_float_equal(y[j], want, 0);
  }
  hx_session_free(s);
}

/* Weights of 2 MiB or more run from the runtime's huge-page copy, or in
 * place with HX_HUGEPAGES=0; the results are the same either way. */
static void large_weights_move_to_huge_pages(void** state) {
  char path[64];
  ts_assert_ok(ts_compile("big_weights.onnx", path, 2));
  for (int off = 0; off < 2; ++off) {
    if (off) setenv("HX_HUGEPAGES", "0", 1);
    hx_model_t* m;
    ts_assert_ok(hx_model_load(path, &m));
    size_t bytes = 0;
    int copied = -1;
    const void* w = hx_model_weights(m, &bytes, &copied);
    assert_non_null(w);
    assert_true(bytes >= (size_t)1024 * 768 * 4);
    assert_int_equal(copied, !off && hx_thp_available());
    if (copied) assert_int_equal((uintptr_t)w % ((uintptr_t)2 << 20), 0);
    check_big_weights(m, 1);
    check_big_weights(m, 2);
    hx_model_free(m);
    unsetenv("HX_HUGEPAGES");
  }
  unlink(path);
}

static void binding_errors_are_statuses(void** state) {
  hx_model_t* m;
  ts_assert_ok(hx_model_load(g_add_relu, &m));
  hx_session_t* s;
  ts_assert_ok(hx_session_create(m, NULL, &s));
  float buf[6];
  ts_assert_error(hx_session_run(s), HX_STATUS_FAILED_PRECONDITION, "input 0 ('x') is not bound");
  ts_assert_error(hx_session_bind_input(s, 0, buf, 20), HX_STATUS_INVALID_ARGUMENT, "expected 24 bytes");
  ts_assert_error(hx_session_bind_input(s, 3, buf, 24), HX_STATUS_INVALID_ARGUMENT, "out of range");
  ts_assert_error(hx_session_bind_output(s, 0, NULL, 24), HX_STATUS_INVALID_ARGUMENT, "NULL");
  ts_assert_ok(hx_session_bind_input(s, 0, buf, 24));
  ts_assert_error(hx_session_run(s), HX_STATUS_FAILED_PRECONDITION, "output 0 ('y') is not bound");
  hx_session_free(s);
  hx_session_options_t bad = {.threads = -1};
  ts_assert_error(hx_session_create(m, &bad, &s), HX_STATUS_INVALID_ARGUMENT, "threads");
  hx_model_free(m);
}

static void caller_owned_arena(void** state) {
  hx_model_t* m;
  ts_assert_ok(hx_model_load(g_add_relu, &m));
  size_t bytes = hx_model_arena_bytes(m);
  unsigned char* mem = aligned_alloc(64, bytes + 128);
  hx_session_t* s;
  hx_session_options_t misaligned = {.threads = 1, .arena = mem + 8};
  ts_assert_error(hx_session_create(m, &misaligned, &s), HX_STATUS_INVALID_ARGUMENT, "aligned");
  hx_session_options_t o = {.threads = 1, .arena = mem};
  ts_assert_ok(hx_session_create(m, &o, &s));
  float x[6] = {1, 1, 1, 1, 1, 1}, y[6];
  ts_assert_ok(hx_session_bind_input(s, 0, x, sizeof x));
  ts_assert_ok(hx_session_bind_output(s, 0, y, sizeof y));
  ts_assert_ok(hx_session_run(s));
  assert_float_equal(y[2], 4, 0);
  hx_session_free(s);
  free(mem);
  hx_model_free(m);
}

static void load_errors(void** state) {
  hx_model_t* m = (hx_model_t*)1;
  ts_assert_error(hx_model_load("/nonexistent/model.so", &m), HX_STATUS_IO, "cannot load");
  assert_null(m);
  /* A shared object that is not an artifact. */
  char cmd[512], out[4096];
  snprintf(cmd, sizeof cmd, "echo 'int f(void){return 1;}' | cc -x c -shared -fPIC -o /tmp/harness-notart.so -");
  assert_int_equal(ts_run(cmd, out, sizeof out), 0);
  ts_assert_error(hx_model_load("/tmp/harness-notart.so", &m), HX_STATUS_INCOMPATIBLE, "not a Harness artifact");
  unlink("/tmp/harness-notart.so");
}

/* An artifact from a future ABI major version must be refused by name. */
static void refuses_other_abi_major(void** state) {
  char src[] = "/tmp/harness-abiXXXXXX.c";
  int fd = mkstemps(src, 2);
  assert_true(fd >= 0);
  dprintf(fd,
          "#include <stdint.h>\n"
          "struct h { uint32_t magic; uint16_t major, minor; uint32_t hb, nb; void* p[16]; };\n"
          "static struct h hdr = {0x%x, %d, 0, 112, 2};\n"
          "const void* %s(void) { return &hdr; }\n",
          HX_ABI_MAGIC, HX_ABI_VERSION_MAJOR + 1, HX_ARTIFACT_QUERY_SYMBOL);
  close(fd);
  char cmd[1024], out[4096];
  snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o /tmp/harness-abi.so %s", src);
  assert_int_equal(ts_run(cmd, out, sizeof out), 0);
  hx_model_t* m;
  ts_assert_error(hx_model_load("/tmp/harness-abi.so", &m), HX_STATUS_INCOMPATIBLE, "uses ABI 2.0");
  unlink(src);
  unlink("/tmp/harness-abi.so");
}

/* An x86-64-v4 artifact on a machine without AVX-512 is refused with the
 * missing features named. HARNESS_DISABLE_CPU_FEATURES makes any machine
 * such a machine. */
static void refuses_missing_cpu_features(void** state) {
  char so[] = "/tmp/harness-v4-XXXXXX.so";
  int fd = mkstemps(so, 3);
  close(fd);
  hc_compile_options o;
  hc_compile_options_init(&o);
  o.input_path = ts_model("add_relu.onnx");
  o.output_path = so;
  o.target = "x86-64-v4";
  ts_assert_ok(hc_compile(&o));
  setenv("HARNESS_DISABLE_CPU_FEATURES", "avx512f,avx512bw", 1);
  hx_model_t* m;
  hx_status_t st = hx_model_load(so, &m);
  unsetenv("HARNESS_DISABLE_CPU_FEATURES");
  assert_non_null(st);
  assert_int_equal(hx_status_code(st), HX_STATUS_INCOMPATIBLE);
  assert_non_null(strstr(hx_status_message(st), "x86-64-v4"));
  assert_non_null(strstr(hx_status_message(st), "avx512f, avx512bw"));
  hx_status_free(st);
  /* Only where the CPU really has AVX-512 can the same artifact load. */
  if ((hx_cpu_features() & HX_CPU_AVX512BW) && (hx_cpu_features() & HX_CPU_AVX512DQ)) {
    ts_assert_ok(hx_model_load(so, &m));
    hx_model_free(m);
  }
  unlink(so);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(signature_is_queryable), cmocka_unit_test(runs_and_computes),
      cmocka_unit_test(binding_errors_are_statuses), cmocka_unit_test(caller_owned_arena),
      cmocka_unit_test(load_errors), cmocka_unit_test(refuses_other_abi_major),
      cmocka_unit_test(refuses_missing_cpu_features), cmocka_unit_test(large_weights_move_to_huge_pages),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
