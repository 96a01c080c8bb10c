/* Tests multi-batch artifacts (harnessc --batch) from compile to serving:
 * one program per batch size sharing the weights, per-program signatures and
 * sessions, clear errors for models without a common batch dimension, the
 * server splitting real results per request, and loading of ABI 1.0
 * artifacts (no program table). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/artifact_abi.h"
#include "harness/serving.h"
#include "test/support/test_support.h"

static hx_status_t compile_batches(const char* model, const char* sizes, char* out_path) {
  strcpy(out_path, "/tmp/harness-batch-XXXXXX.so");
  int fd = mkstemps(out_path, 3);
  if (fd < 0) return hx_status_make(HX_STATUS_IO, "mkstemps failed");
  close(fd);
  hc_compile_options o;
  hc_compile_options_init(&o);
  o.input_path = ts_model(model);
  o.output_path = out_path;
  o.opt_level = 2;
  hx_status_t st = hc_parse_batch_list(sizes, &o);
  if (st == HX_OK) st = hc_compile(&o);
  if (st != HX_OK) unlink(out_path);
  return st;
}

static float expect(const float* x, const float* s, int j) {
  float v = x[j] * (float)(j - 3.5) + s[j];
  return v > 0 ? v : 0;
}

static void programs_per_batch_size(void** state) {
  char so[64];
  ts_assert_ok(compile_batches("batchable.onnx", "1,2,4", so));
  hx_model_t* m;
  ts_assert_ok(hx_model_load(so, &m));
  assert_int_equal(hx_model_batch_count(m), 3);
  assert_int_equal(hx_model_batch_size(m, 0), 1);
  assert_int_equal(hx_model_batch_size(m, 2), 4);
  hx_tensor_info_t info;
  ts_assert_ok(hx_model_input_info(m, 1, &info));
  assert_string_equal(info.name, "s");
  assert_int_equal(info.dims[0], 1);
  const char* manifest = hx_model_manifest_json(m);
  assert_non_null(strstr(manifest, "\"batch_sizes\""));
  assert_non_null(strstr(manifest, "\"programs\""));

  hx_session_t* s4;
  ts_assert_ok(hx_session_create_for_batch(m, 4, NULL, &s4));
  ts_assert_ok(hx_session_input_info(s4, 0, &info));
  assert_int_equal(info.dims[0], 4);
  assert_int_equal(info.bytes, 4 * 8 * sizeof(float));
  float x[4][8], sv[4][8], y[4][8];
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 8; ++j) {
      x[r][j] = (float)(r - j);
      sv[r][j] = (float)(r * 0.5 - 1);
    }
  ts_assert_ok(hx_session_bind_input(s4, 0, x, sizeof x));
  ts_assert_ok(hx_session_bind_input(s4, 1, sv, sizeof sv));
  ts_assert_ok(hx_session_bind_output(s4, 0, y, sizeof y));
  ts_assert_ok(hx_session_run(s4));
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 8; ++j) assert_float_equal(y[r][j], expect(x[r], sv[r], j), 1e-6);
  /* A batch-1 session (and the plain constructor) sees one row. */
  ts_assert_error(hx_session_bind_input(s4, 0, x, sizeof x[0]), HX_STATUS_INVALID_ARGUMENT, "expected 128 bytes");
  hx_session_free(s4);
  hx_session_t* s1;
  ts_assert_ok(hx_session_create(m, NULL, &s1));
  ts_assert_ok(hx_session_bind_input(s1, 0, x[2], sizeof x[2]));
  hx_session_free(s1);

  ts_assert_error(hx_session_create_for_batch(m, 3, NULL, &s1), HX_STATUS_NOT_FOUND, "compiled batch sizes: 1, 2, 4");
  hx_model_free(m);
  unlink(so);
}

static void static_batch_dimension_is_overridden(void** state) {
  char so[64];
  ts_assert_ok(compile_batches("batch_static.onnx", "2,8", so));
  hx_model_t* m;
  ts_assert_ok(hx_model_load(so, &m));
  assert_int_equal(hx_model_batch_count(m), 2);
  hx_session_t* s;
  ts_assert_ok(hx_session_create_for_batch(m, 8, NULL, &s));
  float x[8][8], y[8][8];
  for (int r = 0; r < 8; ++r)
    for (int j = 0; j < 8; ++j) x[r][j] = (float)(r + 1);
  ts_assert_ok(hx_session_bind_input(s, 0, x, sizeof x));
  ts_assert_ok(hx_session_bind_output(s, 0, y, sizeof y));
  ts_assert_ok(hx_session_run(s));
  for (int r = 0; r < 8; ++r)
    for (int j = 0; j < 8; ++j) assert_float_equal(y[r][j], (float)((r + 1) * j), 0);
  hx_session_free(s);
  hx_model_free(m);
  unlink(so);

  /* An ordinary artifact has no batch programs. */
  ts_assert_ok(ts_compile("add_relu.onnx", so, 1));
  ts_assert_ok(hx_model_load(so, &m));
  assert_int_equal(hx_model_batch_count(m), 0);
  ts_assert_error(hx_session_create_for_batch(m, 1, NULL, &s), HX_STATUS_NOT_FOUND, "without --batch");
  hx_model_free(m);
  unlink(so);
}

static void models_without_a_batch_dimension_are_refused(void** state) {
  char so[64];
  ts_assert_error(compile_batches("batch_mismatch.onnx", "1,2", so), HX_STATUS_INVALID_ARGUMENT,
                  "do not share a batch dimension: 'x' leads with 'N' but 's' with 'M'");
  ts_assert_error(compile_batches("batch_transposed.onnx", "1,4", so), HX_STATUS_INVALID_ARGUMENT,
                  "compiling batch size 1: --batch: output 'y' has shape 3x1 at batch 1; its leading dimension must be the batch");
  hc_compile_options o;
  hc_compile_options_init(&o);
  ts_assert_error(hc_parse_batch_list("4,2", &o), HX_STATUS_INVALID_ARGUMENT, "strictly increasing");
  ts_assert_error(hc_parse_batch_list("1,x", &o), HX_STATUS_INVALID_ARGUMENT, "positive sizes");
  ts_assert_error(hc_parse_batch_list("0", &o), HX_STATUS_INVALID_ARGUMENT, "positive sizes");
  /* The CLI reports the flag's error as a usage error. */
  char cmd[4096], out[4096];
  snprintf(cmd, sizeof cmd, "%s %s -o /tmp/harness-nope.so --batch 2,1", ts_tool("harnessc"), ts_model("batchable.onnx"));
  assert_int_equal(ts_run(cmd, out, sizeof out), 2);
  assert_non_null(strstr(out, "strictly increasing"));
}

static void server_splits_real_results(void** state) {
  char so[64];
  ts_assert_ok(compile_batches("batchable.onnx", "1,2,4,8", so));
  hx_model_t* m;
  ts_assert_ok(hx_model_load(so, &m));
  hx_server_options_t o;
  hx_server_options_init(&o);
  o.threads = 2;
  o.max_delay_us = 2000;
  hx_server_t* srv;
  ts_assert_ok(hx_server_create(m, &o, &srv));
  assert_int_equal(hx_server_input_bytes(srv, 1), 8 * sizeof(float));
  enum { N = 37 };
  static float x[N][8], sv[N][8], y[N][8];
  for (int r = 0; r < N; ++r) {
    for (int j = 0; j < 8; ++j) {
      x[r][j] = (float)((r * 7 + j) % 11) - 5;
      sv[r][j] = (float)(r % 3);
    }
    const void* in[2] = {x[r], sv[r]};
    void* out[1] = {y[r]};
    hx_submit_t q = {in, out, r % 3, 0, NULL};
    ts_assert_ok(hx_server_submit(srv, &q, NULL));
  }
  ts_assert_ok(hx_server_shutdown(srv, 1));
  for (int r = 0; r < N; ++r) {
    hx_completion_t c;
    ts_assert_ok(hx_server_wait(srv, -1, &c));
    assert_int_equal(c.code, HX_STATUS_OK);
  }
  for (int r = 0; r < N; ++r)
    for (int j = 0; j < 8; ++j) assert_float_equal(y[r][j], expect(x[r], sv[r], j), 1e-6);
  hx_server_free(srv);
  hx_model_free(m);
  unlink(so);
}

/* An artifact written against ABI 1.0 (112-byte header, reserved kernel word)
 * still loads and runs: the loader reads no field past its header_bytes. */
static void loads_abi_1_0_artifacts(void** state) {
  char src[] = "/tmp/harness-abi10XXXXXX.c";
  int fd = mkstemps(src, 2);
  assert_true(fd >= 0);
  dprintf(fd,
          "#include <stdint.h>\n"
          "typedef struct { const char* n; const int64_t* d; uint64_t b; int32_t dt, r; } T;\n"
          "typedef struct { const char* n; void (*f)(void* const*, int64_t, int64_t); int64_t t; double fl, by;\n"
          "                 int32_t st, dev, g, flags; } K;\n"
          "typedef struct { const char* t; uint64_t req; const K* k; uint32_t nk, res; } V;\n"
          "typedef struct { uint32_t magic; uint16_t maj, min; uint32_t hb, nb; const char *p, *m, *j;\n"
          "  uint64_t ab, al; const void* w; uint64_t wb; const T *i, *o; uint32_t ni, no; const V* v;\n"
          "  uint32_t nv, res; } H;\n"
          "static void k(void* const* b, int64_t s, int64_t e) {\n"
          "  const float* x = b[2]; float* y = b[3]; for (int64_t i = s; i < e; ++i) y[i] = x[i] * 3; }\n"
          "static const int64_t d[1] = {4};\n"
          "static const T in[1] = {{\"x\", d, 16, 1, 1}}, out[1] = {{\"y\", d, 16, 1, 1}};\n"
          "static const K ks[1] = {{\"triple\", k, 4, 4, 32, 1, 0, 0, 0}};\n"
          "static const V vs[1] = {{\"x86-64\", 0, ks, 1, 0}};\n"
          "static const char wts[64];\n"
          "static const H h = {0x%x, 1, 0, 112, 4, \"hand\", \"abi10\", \"{}\", 0, 64, wts, 0, in, out, 1, 1, vs, 1, 0};\n"
          "const void* %s(void) { return &h; }\n",
          HX_ABI_MAGIC, HX_ARTIFACT_QUERY_SYMBOL);
  close(fd);
  char cmd[1024], out[4096];
  snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o /tmp/harness-abi10.so %s", src);
  assert_int_equal(ts_run(cmd, out, sizeof out), 0);
  hx_model_t* m;
  ts_assert_ok(hx_model_load("/tmp/harness-abi10.so", &m));
  assert_int_equal(hx_model_batch_count(m), 0);
  hx_session_t* s;
  hx_session_options_t so = {.threads = 2};
  ts_assert_ok(hx_session_create(m, &so, &s));
  float x[4] = {1, 2, 3, 4}, y[4];
  ts_assert_ok(hx_session_bind_input(s, 0, x, sizeof x));
  ts_assert_ok(hx_session_bind_output(s, 0, y, sizeof y));
  ts_assert_ok(hx_session_run(s));
  for (int i = 0; i < 4; ++i) assert_float_equal(y[i], 3 * x[i], 0);
  hx_session_free(s);
  hx_model_free(m);
  unlink(src);
  unlink("/tmp/harness-abi10.so");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(programs_per_batch_size),
      cmocka_unit_test(static_batch_dimension_is_overridden),
      cmocka_unit_test(models_without_a_batch_dimension_are_refused),
      cmocka_unit_test(server_splits_real_results),
      cmocka_unit_test(loads_abi_1_0_artifacts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
