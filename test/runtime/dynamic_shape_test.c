/* Tests outputs whose shape depends on values (issue 3) through the public
 * API: hx_model_output_is_dynamic and hx_session_output_shape on compiled
 * NonZero / TopK / Unique models, element-wise consumers, the serving
 * layer's refusal, the compile errors
 * for consumers that cannot take such a tensor, and the ABI 1.2
 * dynamic-output table on hand-written artifacts (older headers still load,
 * a malformed table is refused). Models come from
 * test/models/make_dynamic_cases.py (HARNESS_TEST_MODELS/dynamic and
 * dynamic-errors). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/artifact_abi.h"
#include "harness/serving.h"
#include "test/support/test_support.h"

/* Compiles a generated test-case model (HARNESS_TEST_MODELS/dynamic/<case>). */
static void compile_case(const char* name, char* so) {
  char rel[256];
  snprintf(rel, sizeof rel, "dynamic/%s/model.onnx", name);
  ts_assert_ok(ts_compile(rel, so, 1));
}

static void static_outputs_report_their_shape(void** state) {
  char so[64];
  ts_assert_ok(ts_compile("add_relu.onnx", so, 1));
  hx_model_t* m;
  ts_assert_ok(hx_model_load(so, &m));
  assert_int_equal(hx_model_output_is_dynamic(m, 0), 0);
  assert_int_equal(hx_model_output_is_dynamic(m, 7), 0);
  hx_session_t* s;
  ts_assert_ok(hx_session_create(m, NULL, &s));
  int32_t rank = -1;
  int64_t dims[8];
  ts_assert_ok(hx_session_output_shape(s, 0, &rank, dims, 8));
  assert_int_equal(rank, 2);
  assert_int_equal(dims[0], 2);
  assert_int_equal(dims[1], 3);
  ts_assert_error(hx_session_output_shape(s, 1, &rank, dims, 8), HX_STATUS_INVALID_ARGUMENT, "out of range");
  ts_assert_error(hx_session_output_shape(s, 0, &rank, dims, 1), HX_STATUS_INVALID_ARGUMENT, "room for 1");
  ts_assert_error(hx_session_output_shape(s, 0, NULL, dims, 8), HX_STATUS_INVALID_ARGUMENT, "NULL");
  hx_session_free(s);
  hx_model_free(m);
  unlink(so);
}

/* NonZero of a float32 [2,3,4]: the upper bound before the first run, the
 * true shape and dense data after each run, with 1 and 2 threads and a
 * caller-owned arena. */
static void nonzero_reports_actual_shape(void** state) {
  char so[64];
  compile_case("dyn_nonzero_float32", so);
  hx_model_t* m;
  ts_assert_ok(hx_model_load(so, &m));
  assert_int_equal(hx_model_output_is_dynamic(m, 0), 1);
  hx_tensor_info_t info;
  ts_assert_ok(hx_model_output_info(m, 0, &info));
  assert_int_equal(info.rank, 2);
  assert_int_equal(info.dims[0], 3);
  assert_int_equal(info.dims[1], 24); /* the upper bound */
  assert_int_equal(info.bytes, 3 * 24 * 8);
  void* arena = aligned_alloc(64, (hx_model_arena_bytes(m) + 63) / 64 * 64);
  for (int threads = 1; threads <= 2; ++threads) {
    hx_session_t* s;
    hx_session_options_t o = {.threads = threads, .arena = threads == 2 ? arena : NULL};
    ts_assert_ok(hx_session_create(m, &o, &s));
    int32_t rank = 0;
    int64_t dims[4];
    ts_assert_ok(hx_session_output_shape(s, 0, &rank, dims, 4));
    assert_int_equal(rank, 2);
    assert_int_equal(dims[1], 24); /* before the first run */
    float x[24] = {0};
    int64_t y[3 * 24];
    ts_assert_ok(hx_session_bind_input(s, 0, x, sizeof x));
    ts_assert_ok(hx_session_bind_output(s, 0, y, sizeof y));
    for (int run = 0; run < 3; ++run) {
      /* run 0: elements 5 and 23; run 1: none; run 2: all. */
      for (int i = 0; i < 24; ++i) x[i] = run == 2 || (run == 0 && (i == 5 || i == 23)) ? 1.0f : 0.0f;
      ts_assert_ok(hx_session_run(s));
      ts_assert_ok(hx_session_output_shape(s, 0, &rank, dims, 4));
      int64_t want = run == 0 ? 2 : run == 1 ? 0 : 24;
      assert_int_equal(rank, 2);
      assert_int_equal(dims[0], 3);
      assert_int_equal(dims[1], want);
      if (run == 0) { /* dense [3, 2]: coordinates of 5 = (0,1,1) and 23 = (1,2,3) */
        const int64_t expect[6] = {0, 1, 1, 2, 1, 3};
        for (int k = 0; k < 6; ++k) assert_int_equal(y[k], expect[k]);
      }
      if (run == 2) /* row 2 (last axis) of all 24: 0,1,2,3,0,1,... */
        for (int k = 0; k < 24; ++k) assert_int_equal(y[2 * 24 + k], k % 4);
    }
    hx_session_free(s);
  }
  free(arena);
  /* The serving layer cannot report per-request shapes yet: it refuses. */
  hx_server_t* srv = NULL;
  ts_assert_error(hx_server_create(m, NULL, &srv), HX_STATUS_UNSUPPORTED, "value-dependent shape");
  hx_model_free(m);
  unlink(so);
}

/* TopK with k fed at run time: both outputs are dynamic; Unique's
 * inverse_indices stays static beside its dynamic outputs. */
static void topk_and_unique_outputs(void** state) {
  char so[64];
  compile_case("dyn_topk_f32", so); /* x [3, 10], k [1], axis 1 */
  hx_model_t* m;
  ts_assert_ok(hx_model_load(so, &m));
  assert_int_equal(hx_model_output_is_dynamic(m, 0), 1);
  assert_int_equal(hx_model_output_is_dynamic(m, 1), 1);
  hx_session_t* s;
  ts_assert_ok(hx_session_create(m, NULL, &s));
  float x[30], v[30];
  int64_t k = 4, idx[30];
  for (int i = 0; i < 30; ++i) x[i] = (float)((i * 7) % 10);
  ts_assert_ok(hx_session_bind_input(s, 0, x, sizeof x));
  ts_assert_ok(hx_session_bind_input(s, 1, &k, sizeof k));
  ts_assert_ok(hx_session_bind_output(s, 0, v, sizeof v));
  ts_assert_ok(hx_session_bind_output(s, 1, idx, sizeof idx));
  ts_assert_ok(hx_session_run(s));
  int32_t rank;
  int64_t dims[2];
  ts_assert_ok(hx_session_output_shape(s, 1, &rank, dims, 2));
  assert_int_equal(dims[0], 3);
  assert_int_equal(dims[1], 4);
  /* Row 1 is 0,7,4,1,8,5,2,9,6,3: the 4 largest are 9, 8, 7, 6; dense rows of 4. */
  assert_float_equal(v[4], 9, 0);
  assert_float_equal(v[7], 6, 0);
  assert_int_equal(idx[4], 7);
  k = 99; /* clamped to the axis length */
  ts_assert_ok(hx_session_run(s));
  ts_assert_ok(hx_session_output_shape(s, 0, &rank, dims, 2));
  assert_int_equal(dims[1], 10);
  hx_session_free(s);
  hx_model_free(m);
  unlink(so);

  compile_case("dyn_unique_i64_axis0_sorted", so); /* X [6, 3] int64 */
  ts_assert_ok(hx_model_load(so, &m));
  assert_int_equal(hx_model_output_is_dynamic(m, 0), 1);
  assert_int_equal(hx_model_output_is_dynamic(m, 1), 1);
  assert_int_equal(hx_model_output_is_dynamic(m, 2), 0);
  assert_int_equal(hx_model_output_is_dynamic(m, 3), 1);
  ts_assert_ok(hx_session_create(m, NULL, &s));
  int64_t X[18] = {1, 2, 3, 0, 0, 0, 1, 2, 3, 5, 5, 5, 0, 0, 0, 1, 2, 3}, Y[18], I[6], V[6], C[6];
  ts_assert_ok(hx_session_bind_input(s, 0, X, sizeof X));
  ts_assert_ok(hx_session_bind_output(s, 0, Y, sizeof Y));
  ts_assert_ok(hx_session_bind_output(s, 1, I, sizeof I));
  ts_assert_ok(hx_session_bind_output(s, 2, V, sizeof V));
  ts_assert_ok(hx_session_bind_output(s, 3, C, sizeof C));
  ts_assert_ok(hx_session_run(s));
  ts_assert_ok(hx_session_output_shape(s, 0, &rank, dims, 2));
  assert_int_equal(dims[0], 3); /* rows [0,0,0], [1,2,3], [5,5,5] */
  assert_int_equal(dims[1], 3);
  ts_assert_ok(hx_session_output_shape(s, 2, &rank, dims, 2));
  assert_int_equal(rank, 1);
  assert_int_equal(dims[0], 6);
  const int64_t counts[3] = {2, 3, 1}, inverse[6] = {1, 0, 1, 2, 0, 1};
  for (int i = 0; i < 3; ++i) assert_int_equal(C[i], counts[i]);
  for (int i = 0; i < 6; ++i) assert_int_equal(V[i], inverse[i]);
  assert_int_equal(Y[6], 5);
  hx_session_free(s);
  hx_model_free(m);
  unlink(so);
}

/* Element-wise consumers share the slot of the value they read. */
static void elementwise_consumers_follow(void** state) {
  char so[64];
  compile_case("dyn_nonzero_elementwise", so); /* outputs: relu(cast(nz) * 0.5), nz; x [3, 4] */
  hx_model_t* m;
  ts_assert_ok(hx_model_load(so, &m));
  assert_int_equal(hx_model_output_is_dynamic(m, 0), 1);
  assert_int_equal(hx_model_output_is_dynamic(m, 1), 1);
  assert_non_null(strstr(hx_model_manifest_json(m), "\"dims_offset\""));
  hx_session_t* s;
  ts_assert_ok(hx_session_create(m, NULL, &s));
  float x[12] = {0, 0, 3, 0, 0, 0, 0, 0, 0, 1, 0, 0}, f[24];
  int64_t nz[24];
  ts_assert_ok(hx_session_bind_input(s, 0, x, sizeof x));
  ts_assert_ok(hx_session_bind_output(s, 0, f, sizeof f));
  ts_assert_ok(hx_session_bind_output(s, 1, nz, sizeof nz));
  ts_assert_ok(hx_session_run(s));
  for (size_t o = 0; o < 2; ++o) {
    int32_t rank;
    int64_t dims[2];
    ts_assert_ok(hx_session_output_shape(s, o, &rank, dims, 2));
    assert_int_equal(dims[0], 2);
    assert_int_equal(dims[1], 2);
  }
  const float want[4] = {0, 1, 1, 0.5f}; /* coordinates (0,2) and (2,1), halved */
  for (int i = 0; i < 4; ++i) assert_float_equal(f[i], want[i], 0);
  hx_session_free(s);
  hx_model_free(m);
  unlink(so);
}

/* Consumers that cannot take a value-dependent shape fail at compile time,
 * naming node, input and producer; so do run-time scales without a declared
 * output shape. */
static void unsupported_consumers_are_errors(void** state) {
  char so[] = "/tmp/harness-dynerr-XXXXXX.so";
  int fd = mkstemps(so, 3);
  close(fd);
  hc_compile_options o;
  hc_compile_options_init(&o);
  o.output_path = so;
  o.opt_level = 1;
  o.input_path = ts_model("dynamic-errors/err_nonzero_transpose.onnx");
  ts_assert_error(hc_compile(&o), HX_STATUS_UNSUPPORTED,
                  "node \"tr\" (Transpose, opset 13): input 0 ('nz') has a value-dependent shape (upper bound 2x6, "
                  "from NonZero node \"nz\")");
  o.input_path = ts_model("dynamic-errors/err_two_dynamic.onnx");
  ts_assert_error(hc_compile(&o), HX_STATUS_UNSUPPORTED, "both have value-dependent shapes");
  o.input_path = ts_model("dynamic-errors/err_resize_undeclared.onnx");
  ts_assert_error(hc_compile(&o), HX_STATUS_UNSUPPORTED, "declares no static shape for output 'y'");
  unlink(so);
}

/* Builds a hand-written artifact: one kernel that copies x (int64[4]) to y
 * and writes y's actual dims {x[0]} into the arena at `dims_offset` (ABI
 * 1.2), with a header of `header_bytes` claiming ABI 1.`minor`. */
static void build_artifact(const char* so, int minor, unsigned header_bytes, unsigned long long dims_offset) {
  char src[] = "/tmp/harness-abi12XXXXXX.c";
  int fd = mkstemps(src, 2);
  assert_true(fd >= 0);
  dprintf(fd,
          "#include <stdint.h>\n"
          "typedef struct { const char* n; const int64_t* d; uint64_t b; int32_t dt, r; } T;\n"
          "typedef struct { const char* n; void (*f)(void* const*, int64_t, int64_t); int64_t t; double fl, by;\n"
          "                 int32_t st, dev, g, lane; } K;\n"
          "typedef struct { const char* t; uint64_t req; const K* k; uint32_t nk, res; } V;\n"
          "typedef struct { uint32_t program, output; uint64_t off; } D;\n"
          "typedef struct { uint32_t magic; uint16_t maj, min; uint32_t hb, nb; const char *p, *m, *j;\n"
          "  uint64_t ab, al; const void* w; uint64_t wb; const T *i, *o; uint32_t ni, no; const V* v;\n"
          "  uint32_t nv, res; const void* progs; uint32_t np, res2; const D* dyn; uint32_t nd, res3; } H;\n"
          "static void k(void* const* b, int64_t s, int64_t e) {\n"
          "  const int64_t* x = b[2]; int64_t* y = b[3]; int64_t* dims = (int64_t*)((char*)b[0] + %llu);\n"
          "  for (int i = 0; i < 4; ++i) y[i] = x[i]; dims[0] = x[0]; }\n"
          "static const int64_t d[1] = {4};\n"
          "static const T in[1] = {{\"x\", d, 32, 7, 1}}, out[1] = {{\"y\", d, 32, 7, 1}};\n"
          "static const K ks[1] = {{\"copy\", k, 1, 0, 64, 1, 0, 0, 0}};\n"
          "static const V vs[1] = {{\"x86-64\", 0, ks, 1, 0}};\n"
          "static const D dyn[1] = {{0, 0, %llu}};\n"
          "static const char wts[64];\n"
          "static const H h = {0x%x, 1, %d, %u, 4, \"hand\", \"abi12\", \"{}\", 64, 64, wts, 0, in, out, 1, 1,\n"
          "                    vs, 1, 0, 0, 0, 0, dyn, 1, 0};\n"
          "const void* %s(void) { return &h; }\n",
          dims_offset, dims_offset, HX_ABI_MAGIC, minor, header_bytes, HX_ARTIFACT_QUERY_SYMBOL);
  close(fd);
  char cmd[1024], out[4096];
  snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o %s %s", so, src);
  assert_int_equal(ts_run(cmd, out, sizeof out), 0);
  unlink(src);
}

/* The ABI 1.2 table on hand-written artifacts: read when the header has it,
 * ignored in a 1.1 header (the same artifact claiming 1.1 and 128 bytes), a
 * slot outside the arena refused. */
static void abi_dynamic_output_table(void** state) {
  const char* so = "/tmp/harness-abi12.so";
  build_artifact(so, 2, HX_ABI_HEADER_BYTES_1_2, 8);
  hx_model_t* m;
  ts_assert_ok(hx_model_load(so, &m));
  assert_int_equal(hx_model_output_is_dynamic(m, 0), 1);
  hx_session_t* s;
  ts_assert_ok(hx_session_create(m, NULL, &s));
  int64_t x[4] = {3, 1, 2, 9}, y[4];
  ts_assert_ok(hx_session_bind_input(s, 0, x, sizeof x));
  ts_assert_ok(hx_session_bind_output(s, 0, y, sizeof y));
  int32_t rank;
  int64_t dims[1];
  ts_assert_ok(hx_session_output_shape(s, 0, &rank, dims, 1));
  assert_int_equal(dims[0], 4); /* upper bound before the first run */
  ts_assert_ok(hx_session_run(s));
  ts_assert_ok(hx_session_output_shape(s, 0, &rank, dims, 1));
  assert_int_equal(dims[0], 3);
  x[0] = 7; /* beyond the upper bound: reported as an error, not trusted */
  ts_assert_ok(hx_session_run(s));
  ts_assert_error(hx_session_output_shape(s, 0, &rank, dims, 1), HX_STATUS_INTERNAL, "outside its upper bound");
  hx_session_free(s);
  hx_model_free(m);

  build_artifact(so, 1, HX_ABI_HEADER_BYTES_1_1, 8);
  ts_assert_ok(hx_model_load(so, &m));
  assert_int_equal(hx_model_output_is_dynamic(m, 0), 0);
  hx_model_free(m);

  build_artifact(so, 2, HX_ABI_HEADER_BYTES_1_2, 64);
  ts_assert_error(hx_model_load(so, &m), HX_STATUS_INCOMPATIBLE, "outside the arena");
  unlink(so);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(static_outputs_report_their_shape), cmocka_unit_test(nonzero_reports_actual_shape),
      cmocka_unit_test(topk_and_unique_outputs),          cmocka_unit_test(elementwise_consumers_follow),
      cmocka_unit_test(unsupported_consumers_are_errors),  cmocka_unit_test(abi_dynamic_output_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
