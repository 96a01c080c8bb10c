/* Tests the command-line tools as users run them: exit codes, one-line
 * error messages naming node/op/cause, emit kinds, harness-run and
 * harness-test behaviour. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test/support/test_support.h"

static char g_out[1 << 16];

/* Runs "TOOL ARGS", returns the exit code; output in g_out. */
static int run(const char* tool, const char* fmt, ...) {
  char args[4096], cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "%s %s", ts_tool(tool), args);
  return ts_run(cmd, g_out, sizeof g_out);
}

#define assert_output_has(s)                                          \
  do {                                                                \
    if (!strstr(g_out, (s))) {                                        \
      print_error("output lacks '%s':\n%s\n", (s), g_out);            \
      fail();                                                         \
    }                                                                 \
  } while (0)

static void harnessc_usage_errors(void** state) {
  assert_int_equal(run("harnessc", ""), 2);
  assert_int_equal(run("harnessc", "--help"), 0);
  assert_output_has("--target");
  assert_output_has("--constant NAME=FILE");
  assert_int_equal(run("harnessc", "--bogus %s -o /tmp/x.so", ts_model("add_relu.onnx")), 2);
  assert_int_equal(run("harnessc", "-O7 %s -o /tmp/x.so", ts_model("add_relu.onnx")), 2);
  assert_int_equal(run("harnessc", "%s", ts_model("add_relu.onnx")), 2);
  assert_output_has("use -o FILE");
}

static void harnessc_compile_errors_name_the_cause(void** state) {
  assert_int_equal(run("harnessc", "%s -o /tmp/harness-cli.so", ts_model("unknown_op.onnx")), 1);
  assert_output_has("error: ");
  assert_output_has("node \"mystery\" (FooBar, opset 13): unsupported op FooBar");
  assert_int_equal(run("harnessc", "%s -o /tmp/harness-cli.so", ts_model("truncated.onnx")), 1);
  assert_output_has("not a valid ONNX model");
  assert_int_equal(run("harnessc", "%s -o /tmp/harness-cli.so", ts_model("bad_initializer.onnx")), 1);
  assert_output_has("initializer 'b'");
  assert_int_equal(run("harnessc", "%s -o /tmp/harness-cli.so", ts_model("symbolic.onnx")), 1);
  assert_output_has("--shape x=Nx3");
  assert_int_equal(run("harnessc", "%s -o /tmp/harness-cli.so --target pentium", ts_model("add_relu.onnx")), 1);
  assert_output_has("unknown --target 'pentium'");
  assert_int_equal(run("harnessc", "%s -o /tmp/harness-cli.so --mcpu bogus", ts_model("add_relu.onnx")), 1);
  assert_output_has("unknown --mcpu 'bogus'");
  assert_int_equal(run("harnessc", "%s -o /tmp/harness-cli.so --print-after nopass", ts_model("add_relu.onnx")), 1);
  assert_output_has("unknown pass 'nopass'");
  assert_int_equal(run("harnessc", "%s -o /nonexistent-dir/a.so", ts_model("add_relu.onnx")), 1);
  assert_output_has("error: ");
  /* Exactly one line per error. */
  assert_int_equal(run("harnessc", "%s -o /tmp/harness-cli.so", ts_model("unknown_op.onnx")), 1);
  assert_non_null(strchr(g_out, '\n'));
  assert_null(strchr(strchr(g_out, '\n') + 1, '\n'));
}

static void harnessc_emit_kinds(void** state) {
  const char* m = ts_model("add_relu.onnx");
  assert_int_equal(run("harnessc", "%s -o - --emit manifest", m), 0);
  assert_output_has("\"format\":\t\"harness-manifest\"");
  assert_output_has("\"kernels\"");
  assert_output_has("\"lower_bound_bytes\"");
  assert_int_equal(run("harnessc", "%s -o - --emit llvm-ir -O2", m), 0);
  assert_output_has("define internal void @hk");
  assert_output_has("harness_artifact_query");
  assert_int_equal(run("harnessc", "%s -o - --emit asm --target x86-64-v3", m), 0);
  assert_output_has("harness_artifact_query:");
  assert_int_equal(run("harnessc", "%s -o - --emit asm --target x86-64-v4", m), 0);
  assert_int_equal(run("harnessc", "%s -o /tmp/harness-cli.o --emit obj", m), 0);
  struct stat sb;
  assert_int_equal(stat("/tmp/harness-cli.o", &sb), 0);
  unlink("/tmp/harness-cli.o");
  assert_int_equal(run("harnessc", "%s -o - --emit bogus", m), 1);
  assert_output_has("unknown --emit");
  /* Parallel-group policies: accepted, reported in the plan; bad values are
   * usage errors. */
  assert_int_equal(run("harnessc", "%s -o - --emit memplan --no-parallel-groups", m), 0);
  assert_output_has("\"parallel_groups\":\t0");
  assert_int_equal(run("harnessc", "%s -o - --emit memplan --parallel-groups all --threads-hint 8", m), 0);
  assert_output_has("\"parallel_groups_declined\":\t0");
  assert_int_equal(run("harnessc", "%s -o - --emit memplan --parallel-groups some", m), 2);
  assert_output_has("--parallel-groups expects auto, all or none");
  assert_int_equal(run("harnessc", "%s -o - --emit memplan --threads-hint 0", m), 2);
  assert_output_has("--threads-hint expects");
  assert_int_equal(run("harnessc", "%s -o /tmp/harness-cli.so --print-after shape-inference --time-passes -v", m), 0);
  assert_output_has("IR after shape-inference");
  assert_output_has("time: memory-plan");
}

static void harnessc_is_deterministic(void** state) {
  const char* m = ts_model("fold_dce.onnx");
  assert_int_equal(run("harnessc", "%s -o /tmp/harness-det1.so", m), 0);
  assert_int_equal(run("harnessc", "%s -o /tmp/harness-det2.so", m), 0);
  assert_int_equal(ts_run("cmp /tmp/harness-det1.so /tmp/harness-det2.so", g_out, sizeof g_out), 0);
  unlink("/tmp/harness-det1.so");
  unlink("/tmp/harness-det2.so");
}

/* A shared object's weights come from their own object (blob_object.c),
 * joined by the linker: harness_weights is a local read-only symbol of the
 * artifact with exactly the weights' size (the size `harnessc -v` reports,
 * which bench/precision reads back with nm), and the artifact runs. */
static void harnessc_weights_object(void** state) {
  assert_int_equal(run("harnessc", "-v %s -o /tmp/harness-wobj.so", ts_model("fold_dce.onnx")), 0);
  const char* w = strstr(g_out, "weights ");
  assert_non_null(w);
  unsigned long long bytes = strtoull(w + 8, NULL, 10);
  assert_true(bytes > 0);
  assert_int_equal(ts_run("nm -S /tmp/harness-wobj.so", g_out, sizeof g_out), 0);
  char want[96];
  snprintf(want, sizeof want, "%016llx r harness_weights", bytes);
  assert_output_has(want);
  unlink("/tmp/harness-wobj.so");
}

/* Counts the occurrences of `needle` in g_out. */
static int count_in_output(const char* needle) {
  int n = 0;
  for (const char* p = strstr(g_out, needle); p; p = strstr(p + 1, needle)) ++n;
  return n;
}

/* Kernels that differ only in the tensors they touch share one body: of
 * four MatMul+Relu blocks, the two arena-to-arena ones keep one shared body
 * and the others are inlined into their kernels; the result is still exact. */
static void harnessc_shares_kernel_bodies(void** state) {
  const char* m = ts_model("repeated_blocks.onnx");
  /* The IR outgrows g_out on some targets (147 KB for AVX2, which ended
   * the read early and killed harnessc with SIGPIPE): keep its definitions
   * and calls only, as harnessc_shares_phase_bodies does. */
  assert_int_equal(run("harnessc", "%s -o /tmp/harness-blocks.ll --emit llvm-ir -O3", m), 0);
  assert_int_equal(ts_run("grep -E '^define|call .*@' /tmp/harness-blocks.ll", g_out, sizeof g_out), 0);
  unlink("/tmp/harness-blocks.ll");
  assert_int_equal(count_in_output("define internal "), 5); /* 4 kernels + 1 body */
  assert_int_equal(count_in_output(".body("), 3);           /* its definition and 2 calls */
  assert_int_equal(run("harness-test", "-O 3 %s/shared_bodies", getenv("HARNESS_TEST_MODELS")), 0);
  assert_output_has("1 passed, 0 failed, 0 skipped");
}

/* A ConvTranspose's output phases that differ only in their position and
 * tap offsets (read from each kernel's table) share one body: the four
 * phases of a padded stride-2, 2x2 ConvTranspose call it, none has its own
 * copy. */
static void harnessc_shares_phase_bodies(void** state) {
  const char* m = ts_model("convt_phases.onnx");
  /* The IR is larger than g_out: keep its definitions and calls only. */
  assert_int_equal(run("harnessc", "%s -o /tmp/harness-convt.ll --emit llvm-ir -O3", m), 0);
  assert_int_equal(ts_run("grep -E '^define|call .*@' /tmp/harness-convt.ll", g_out, sizeof g_out), 0);
  assert_int_equal(count_in_output("define internal "), 5); /* 4 phase kernels + 1 body */
  assert_int_equal(count_in_output("_phase0.body("), 5);   /* its definition and 4 calls */
  unlink("/tmp/harness-convt.ll");
}

static void harnessc_check_reports_everything(void** state) {
  assert_int_equal(run("harnessc", "check %s", ts_model("three_problems.onnx")), 1);
  assert_output_has("unsupported op FooBar");
  assert_output_has("unsupported attribute 'beta'");
  assert_output_has("--shape x=Nx3");
  assert_int_equal(run("harnessc", "check %s", ts_model("add_relu.onnx")), 0);
  assert_output_has("OK");
}

static void harness_run_end_to_end(void** state) {
  assert_int_equal(run("harnessc", "%s -o /tmp/harness-run.so", ts_model("add_relu.onnx")), 0);
  char in[512];
  snprintf(in, sizeof in, "%s/suite/test_good/test_data_set_0", getenv("HARNESS_TEST_MODELS"));
  assert_int_equal(run("harness-run", "/tmp/harness-run.so --inputs %s --outputs /tmp/harness-run-out --print", in), 0);
  assert_output_has("y: float32[2x3] = [0, 0, 3, 2, 0, 6]");
  struct stat sb;
  assert_int_equal(stat("/tmp/harness-run-out/output_0.pb", &sb), 0);
  assert_int_equal(run("harness-run", "/tmp/harness-run.so --input x=%s/input_0.pb --outputs /tmp/harness-run-out --format npy", in), 0);
  assert_int_equal(stat("/tmp/harness-run-out/output_0.npy", &sb), 0);
  /* The .npy output reads back as an input. */
  assert_int_equal(run("harness-run", "/tmp/harness-run.so --input x=/tmp/harness-run-out/output_0.npy --print"), 0);
  assert_output_has("y: float32[2x3] = [1, 0, 6, 3, 0, 9]");
  /* A file of another shape, a scalar (0-d .npy) included, is refused naming both shapes. */
  FILE* f = fopen("/tmp/harness-run-scalar.npy", "wb");
  assert_non_null(f);
  char hdr[64];
  int n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }");
  while ((10 + n + 1) % 64) hdr[n++] = ' ';
  hdr[n++] = '\n';
  const unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)n, 0};
  const float one = 1.0f;
  fwrite(pre, 1, sizeof pre, f);
  fwrite(hdr, 1, (size_t)n, f);
  fwrite(&one, sizeof one, 1, f);
  fclose(f);
  assert_int_equal(run("harness-run", "/tmp/harness-run.so --input x=/tmp/harness-run-scalar.npy"), 1);
  assert_output_has("input 'x' must have shape 2x3 (the artifact was compiled for it), the file holds a scalar");
  unlink("/tmp/harness-run-scalar.npy");
  assert_int_equal(run("harness-run", "/tmp/harness-run.so"), 2);
  assert_output_has("input 0 ('x') not given");
  assert_int_equal(run("harness-run", "/tmp/harness-run.so --input x=%s", ts_model("not_onnx.onnx")), 1);
  assert_output_has("not a serialized ONNX TensorProto");
  assert_int_equal(run("harness-run", "/tmp/harness-nope.so --input x=a.pb"), 1);
  assert_output_has("cannot load artifact");
  unlink("/tmp/harness-run.so");
}

/* An artifact named without a directory is a file in the current
 * directory for every tool (dlopen alone would search the library path):
 * harness-bench opens the shared object itself for its kernel table, and
 * harness-run -v for the variant list. */
static void tools_open_artifact_in_current_directory(void** state) {
  assert_int_equal(run("harnessc", "%s -o /tmp/harness-bare.so", ts_model("add_relu.onnx")), 0);
  char cwd[4096];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir("/tmp"), 0);
  int bench = run("harness-bench", "harness-bare.so --warmup 1 --iters 3 --json");
  char bench_out[sizeof g_out];
  memcpy(bench_out, g_out, sizeof g_out);
  char in[512];
  snprintf(in, sizeof in, "%s/suite/test_good/test_data_set_0", getenv("HARNESS_TEST_MODELS"));
  int run_v = run("harness-run", "harness-bare.so -v --inputs %s --outputs /tmp/harness-bare-out", in);
  assert_int_equal(chdir(cwd), 0);
  unlink("/tmp/harness-bare.so");
  if (bench != 0) print_error("%s\n", bench_out);
  assert_int_equal(bench, 0);
  assert_non_null(strstr(bench_out, "\"latency_ms\""));
  assert_int_equal(run_v, 0);
  assert_output_has("chosen for this CPU");
}

/* --handoff measures the cross-core costs that compare.py records beside
 * every several-thread result: each figure a positive time, or -1 where the
 * machine has one CPU or the threads cannot be pinned. */
static void harness_bench_handoff(void** state) {
  assert_int_equal(run("harness-bench", "--help"), 0);
  assert_output_has("--handoff");
  assert_int_equal(run("harness-bench", "--handoff --json"), 0);
  static const char* const keys[] = {"core_roundtrip_ns", "handoff_read_ns_per_line", "handoff_rewrite_ns_per_line",
                                     "local_rewrite_ns_per_line"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; ++i) {
    char key[64];
    snprintf(key, sizeof key, "\"%s\": ", keys[i]);
    const char* at = strstr(g_out, key);
    if (!at) print_error("no %s in:\n%s\n", keys[i], g_out);
    assert_non_null(at);
    double v = strtod(at + strlen(key), NULL);
    if (!(v > 0 || v == -1)) print_error("%s = %g\n", keys[i], v);
    assert_true(v > 0 || v == -1);
  }
  /* --peak carries the same figures. */
  assert_int_equal(run("harness-bench", "--peak --json"), 0);
  assert_output_has("\"handoff_rewrite_ns_per_line\": ");
  assert_output_has("\"mem_read_gbps_all_cores\": ");
}

static void harness_test_counts(void** state) {
  char suite[512];
  snprintf(suite, sizeof suite, "%s/suite", getenv("HARNESS_TEST_MODELS"));
  assert_int_equal(run("harness-test", "-j 2 %s", suite), 1);
  assert_output_has("PASS test_good");
  assert_output_has("FAIL test_wrong_expectation: test_data_set_0: output 'y'");
  assert_output_has("SKIP test_unsupported: unsupported op FooBar");
  assert_output_has("1 passed, 1 failed, 1 skipped");
  assert_int_equal(run("harness-test", "%s/test_good", suite), 0);
  assert_output_has("1 passed, 0 failed, 0 skipped");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(harnessc_usage_errors),     cmocka_unit_test(harnessc_compile_errors_name_the_cause),
      cmocka_unit_test(harnessc_emit_kinds),       cmocka_unit_test(harnessc_is_deterministic),
      cmocka_unit_test(harnessc_check_reports_everything), cmocka_unit_test(harness_run_end_to_end),
      cmocka_unit_test(harness_test_counts),       cmocka_unit_test(harness_bench_handoff),       cmocka_unit_test(harnessc_shares_kernel_bodies),
      cmocka_unit_test(harnessc_shares_phase_bodies), cmocka_unit_test(tools_open_artifact_in_current_directory),
      cmocka_unit_test(harnessc_weights_object),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
