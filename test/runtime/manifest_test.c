/* Tests the embedded manifest (runtime/manifest.c, its use in
 * runtime/model.c, and the writer in compiler/backend/artifact.c): a
 * compiled artifact stores it as a zlib stream (ABI 1.3) that
 * hx_model_manifest_json returns whole; a stream that disagrees with its
 * header in any way is a load error naming the artifact and the fault; and
 * ABI 1.2 artifacts with a plain manifest_json load as before. The
 * hand-written artifacts are C files built with the system compiler. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "harness/artifact_abi.h"
#include "manifest.h"
#include "test/support/test_support.h"

/* Reads a whole file; malloc'd, *out_len bytes. */
static char* read_file(const char* path, size_t* out_len) {
  FILE* f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = '\0';
  fclose(f);
  *out_len = (size_t)n;
  return buf;
}

/* A real artifact: the header has the 1.3 fields and no plain text, the
 * artifact file does not contain the JSON in clear, and the text the
 * runtime hands out is the whole manifest: it parses and equals, value for
 * value, the indented one `--emit manifest` writes for the same model. */
static void compiled_artifact_manifest_is_whole(void** state) {
  char tiny[4096];
  snprintf(tiny, sizeof tiny, "%s/examples/tiny_cnn.onnx", getenv("HARNESS_SOURCE_DIR"));
  hc_compile_options o;
  hc_compile_options_init(&o);
  o.input_path = tiny;
  o.opt_level = 2;
  char so[64];
  ts_assert_ok(ts_compile_with(&o, so));

  void* dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  assert_non_null(dl);
  hx_abi_query_fn q = (hx_abi_query_fn)dlsym(dl, HX_ARTIFACT_QUERY_SYMBOL);
  assert_non_null(q);
  const hx_abi_header* h = q();
  assert_int_equal(h->abi_minor, 3);
  assert_int_equal(h->header_bytes, sizeof(hx_abi_header));
  assert_null(h->manifest_json);
  assert_non_null(h->manifest_z);
  assert_true(h->manifest_z_bytes > 0);
  assert_true(h->manifest_z_bytes * 2 < h->manifest_bytes); /* repetitive JSON: well under half */
  uint64_t text_bytes = h->manifest_bytes;
  dlclose(dl);

  size_t file_len;
  char* file = read_file(so, &file_len);
  assert_null(memmem(file, file_len, "\"harness-manifest\"", 18));
  assert_null(memmem(file, file_len, "\"kernels\"", 9));
  free(file);

  hx_model_t* m;
  ts_assert_ok(hx_model_load(so, &m));
  const char* text = hx_model_manifest_json(m);
  assert_non_null(text);
  assert_int_equal(strlen(text), text_bytes);
  assert_ptr_equal(hx_model_manifest_json(m), text); /* inflated once, at load */
  cJSON* got = cJSON_Parse(text);
  assert_non_null(got);
  assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(got, "format")), "harness-manifest");
  assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(got, "abi")), "1.3");
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(got, "kernels")), hx_model_kernel_count(m));
  assert_true(hx_model_kernel_count(m) > 1);
  hx_model_free(m);
  unlink(so);

  o.emit = "manifest";
  ts_assert_ok(ts_compile_with(&o, so));
  size_t json_len;
  char* json = read_file(so, &json_len);
  assert_true(json_len > text_bytes); /* indented for people */
  cJSON* want = cJSON_Parse(json);
  assert_non_null(want);
  assert_true(cJSON_Compare(got, want, 1));
  cJSON_Delete(want);
  cJSON_Delete(got);
  free(json);
  unlink(so);
}

/* ---- hand-written artifacts ------------------------------------------- */

enum { ABI_1_2, ABI_1_3 };

/* Writes and builds a one-kernel artifact whose header claims ABI 1.`minor`
 * (ABI_1_2: the 1.2 layout, 144 bytes, plain manifest_json; ABI_1_3: the
 * current layout). `json` is the plain manifest_json (NULL for none). `z`
 * (z_len bytes, may be NULL) becomes manifest_z with the declared sizes
 * z_bytes and text_bytes; a 1.2 header gets the same bytes placed right
 * after it, which its loader must never read. */
static void build_artifact(const char* so, int abi, const char* json, const unsigned char* z, size_t z_len,
                           unsigned long long z_bytes, unsigned long long text_bytes) {
  char src[] = "/tmp/harness-manifest-XXXXXX.c";
  int fd = mkstemps(src, 2);
  assert_true(fd >= 0);
  FILE* f = fdopen(fd, "w");
  assert_non_null(f);
  fprintf(f,
          "#include <stddef.h>\n#include \"harness/artifact_abi.h\"\n"
          "static void k(void* const* b, int64_t s, int64_t e) { (void)b; (void)s; (void)e; }\n"
          "static const int64_t d[1] = {4};\n"
          "static const hx_abi_tensor in[1] = {{\"x\", d, 16, 1, 1}}, out[1] = {{\"y\", d, 16, 1, 1}};\n"
          "static const hx_abi_kernel ks[1] = {{\"noop\", k, 1, 0, 0, 1, 0, 0, 0}};\n"
          "static const hx_abi_variant vs[1] = {{\"x86-64\", 0, ks, 1, 0}};\n"
          "static const char wts[64];\n");
  fprintf(f, "static const unsigned char z[%zu] = {", z_len ? z_len : 1);
  for (size_t i = 0; i < z_len; ++i) fprintf(f, "%s%u", i ? "," : "", z[i]);
  fprintf(f, "%s};\n", z_len ? "" : "0");
  if (json) {
    fprintf(f, "static const char json[] = \"");
    for (const char* c = json; *c; ++c) fprintf(f, *c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
    fprintf(f, "\";\n");
  }
  const char* zp = z ? "z" : "NULL";
  if (abi == ABI_1_2) {
    /* The 1.2 header is the current one without the 1.3 fields; what
     * follows it in memory here is a would-be manifest_z that must be
     * ignored. */
    fprintf(f,
            "typedef struct { uint32_t magic; uint16_t maj, min; uint32_t hb, nb; const char *p, *m, *j;\n"
            "  uint64_t ab, al; const void* w; uint64_t wb; const hx_abi_tensor *i, *o; uint32_t ni, no;\n"
            "  const hx_abi_variant* v; uint32_t nv, res; const void* progs; uint32_t np, res2;\n"
            "  const void* dyn; uint32_t nd, res3; } H12;\n"
            "_Static_assert(sizeof(H12) == HX_ABI_HEADER_BYTES_1_2, \"1.2 layout\");\n"
            "_Static_assert(offsetof(hx_abi_header, manifest_z) == sizeof(H12), \"1.3 appends\");\n"
            "static const struct { H12 h; const void* mz; uint64_t zb, tb; } a = {{HX_ABI_MAGIC, 1, 2,\n"
            "  HX_ABI_HEADER_BYTES_1_2, 4, \"hand\", \"manifest12\", %s, 64, 64, wts, 0, in, out, 1, 1, vs, 1, 0,\n"
            "  0, 0, 0, 0, 0, 0}, %s, %lluull, %lluull};\n"
            "const void* %s(void) { return &a.h; }\n",
            json ? "json" : "NULL", zp, z_bytes, text_bytes, HX_ARTIFACT_QUERY_SYMBOL);
  } else {
    fprintf(f,
            "static const hx_abi_header h = {.magic = HX_ABI_MAGIC, .abi_major = 1, .abi_minor = 3,\n"
            "  .header_bytes = sizeof(hx_abi_header), .num_bases = 4, .producer = \"hand\",\n"
            "  .model_name = \"manifest13\", .manifest_json = %s, .arena_bytes = 64, .arena_alignment = 64,\n"
            "  .weights = wts, .inputs = in, .outputs = out, .num_inputs = 1, .num_outputs = 1,\n"
            "  .variants = vs, .num_variants = 1, .manifest_z = %s, .manifest_z_bytes = %lluull,\n"
            "  .manifest_bytes = %lluull};\n"
            "const hx_abi_header* %s(void) { return &h; }\n",
            json ? "json" : "NULL", zp, z_bytes, text_bytes, HX_ARTIFACT_QUERY_SYMBOL);
  }
  fclose(f);
  char cmd[4096], out[4096];
  snprintf(cmd, sizeof cmd, "cc -std=c11 -shared -fPIC -I%s/runtime/include -o %s %s", getenv("HARNESS_SOURCE_DIR"),
           so, src);
  int rc = ts_run(cmd, out, sizeof out);
  if (rc != 0) print_error("%s\n%s\n", cmd, out);
  assert_int_equal(rc, 0);
  unlink(src);
}

static const char k_text[] =
    "{\"format\":\"harness-manifest\",\"model\":\"hand\",\"kernels\":[{\"name\":\"noop\",\"op\":\"Identity\"},"
    "{\"name\":\"noop\",\"op\":\"Identity\"},{\"name\":\"noop\",\"op\":\"Identity\"}]}";

/* k_text as the compiler stores it. */
static size_t deflate_text(const char* text, unsigned char* out, size_t cap) {
  uLongf n = cap;
  assert_int_equal(compress2(out, &n, (const Bytef*)text, strlen(text), Z_BEST_COMPRESSION), Z_OK);
  return n;
}

/* Asserts that loading `so` fails as incompatible with a message naming the
 * artifact and containing `what`. */
static void assert_load_fails(const char* so, const char* what) {
  hx_model_t* m = NULL;
  hx_status_t st = hx_model_load(so, &m);
  assert_null(m);
  assert_non_null(st);
  const char* msg = hx_status_message(st);
  if (hx_status_code(st) != HX_STATUS_INCOMPATIBLE || !strstr(msg, so) || !strstr(msg, what))
    print_error("expected an incompatible error naming '%s' and containing '%s', got %s: %s\n", so, what,
                hx_status_code_name(hx_status_code(st)), msg);
  assert_int_equal(hx_status_code(st), HX_STATUS_INCOMPATIBLE);
  assert_non_null(strstr(msg, so));
  assert_non_null(strstr(msg, what));
  hx_status_free(st);
}

/* A well-formed hand-written 1.3 header loads and lends the inflated text. */
static void abi13_compressed_manifest_loads(void** state) {
  const char* so = "/tmp/harness-manifest13.so";
  unsigned char z[512];
  size_t n = deflate_text(k_text, z, sizeof z);
  build_artifact(so, ABI_1_3, NULL, z, n, n, strlen(k_text));
  hx_model_t* m;
  ts_assert_ok(hx_model_load(so, &m));
  assert_string_equal(hx_model_manifest_json(m), k_text);
  hx_model_free(m);
  /* A 1.3 header without manifest_z keeps a plain manifest_json. */
  build_artifact(so, ABI_1_3, k_text, NULL, 0, 0, 0);
  ts_assert_ok(hx_model_load(so, &m));
  assert_string_equal(hx_model_manifest_json(m), k_text);
  hx_model_free(m);
  unlink(so);
}

/* Every way a stream can disagree with its header is a load error that
 * names the artifact and says what was wrong; nothing crashes. */
static void corrupt_compressed_manifest_is_a_load_error(void** state) {
  const char* so = "/tmp/harness-manifest-bad.so";
  unsigned char z[512], bad[512];
  size_t n = deflate_text(k_text, z, sizeof z);
  size_t len = strlen(k_text);

  /* Not a zlib stream at all. */
  static const unsigned char garbage[] = "this is not a zlib stream, just bytes";
  build_artifact(so, ABI_1_3, NULL, garbage, sizeof garbage, sizeof garbage, len);
  assert_load_fails(so, "is corrupt (zlib: incorrect header check");

  /* Cut short: half of the stream, declared as such. */
  build_artifact(so, ABI_1_3, NULL, z, n / 2, n / 2, len);
  assert_load_fails(so, "is truncated");
  /* Cut short by its declared size only (the bytes are all there). */
  build_artifact(so, ABI_1_3, NULL, z, n, n - 3, len);
  assert_load_fails(so, "is truncated");

  /* The Adler-32 check at the end no longer matches. */
  memcpy(bad, z, n);
  bad[n - 1] ^= 0x5a;
  build_artifact(so, ABI_1_3, NULL, bad, n, n, len);
  assert_load_fails(so, "incorrect data check");

  /* Declared text sizes that disagree with the stream. */
  char want[128];
  build_artifact(so, ABI_1_3, NULL, z, n, n, len + 10);
  snprintf(want, sizeof want, "inflates to %zu bytes, not the %zu its header declares", len, len + 10);
  assert_load_fails(so, want);
  build_artifact(so, ABI_1_3, NULL, z, n, n, len - 10);
  snprintf(want, sizeof want, "inflates to more than the %zu bytes its header declares", len - 10);
  assert_load_fails(so, want);

  /* Bytes after the end of the stream, counted in its size. */
  memcpy(bad, z, n);
  memset(bad + n, 'x', 7);
  build_artifact(so, ABI_1_3, NULL, bad, n + 7, n + 7, len);
  assert_load_fails(so, "has 7 bytes after the end of its zlib stream");

  /* Empty, and a size no manifest can have. */
  build_artifact(so, ABI_1_3, NULL, z, n, 0, len);
  assert_load_fails(so, "compressed manifest is empty");
  build_artifact(so, ABI_1_3, NULL, z, n, n, 1ull << 40);
  assert_load_fails(so, "more than a manifest can be");
  unlink(so);
}

/* An ABI 1.2 artifact (plain manifest_json, a 144-byte header) loads
 * unchanged; whatever follows its header is not read as 1.3 fields. */
static void abi12_plain_manifest_still_loads(void** state) {
  const char* so = "/tmp/harness-manifest12.so";
  static const unsigned char garbage[] = "not a zlib stream";
  build_artifact(so, ABI_1_2, k_text, garbage, sizeof garbage, sizeof garbage, 999);
  hx_model_t* m;
  ts_assert_ok(hx_model_load(so, &m));
  assert_string_equal(hx_model_name(m), "manifest12");
  assert_string_equal(hx_model_manifest_json(m), k_text);
  hx_session_t* s;
  ts_assert_ok(hx_session_create(m, NULL, &s));
  float x[4] = {1, 2, 3, 4}, y[4];
  ts_assert_ok(hx_session_bind_input(s, 0, x, sizeof x));
  ts_assert_ok(hx_session_bind_output(s, 0, y, sizeof y));
  ts_assert_ok(hx_session_run(s));
  hx_session_free(s);
  hx_model_free(m);
  unlink(so);
}

/* hx_manifest_inflate itself: exact text, and a NUL inside refused. */
static void inflate_checks_the_text(void** state) {
  unsigned char z[512];
  size_t n = deflate_text(k_text, z, sizeof z);
  char* text = NULL;
  ts_assert_ok(hx_manifest_inflate(z, n, strlen(k_text), "a.so", &text));
  assert_string_equal(text, k_text);
  free(text);

  static const char with_nul[] = {'{', '}', '\0', 'x'};
  uLongf zn = sizeof z;
  assert_int_equal(compress2(z, &zn, (const Bytef*)with_nul, sizeof with_nul, 9), Z_OK);
  text = (char*)1;
  ts_assert_error(hx_manifest_inflate(z, zn, sizeof with_nul, "a.so", &text), HX_STATUS_INCOMPATIBLE,
                  "artifact 'a.so': its manifest text contains a NUL byte");
  assert_null(text);
  ts_assert_error(hx_manifest_inflate(NULL, 10, 10, "a.so", &text), HX_STATUS_INCOMPATIBLE, "missing");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(compiled_artifact_manifest_is_whole),
      cmocka_unit_test(abi13_compressed_manifest_loads),
      cmocka_unit_test(corrupt_compressed_manifest_is_a_load_error),
      cmocka_unit_test(abi12_plain_manifest_still_loads),
      cmocka_unit_test(inflate_checks_the_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
