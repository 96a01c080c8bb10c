/* The Harness compiler as a library: what harnessc and harness-test call.
 *
 * hc_compile() runs the whole path (import -> passes -> LLVM -> artifact)
 * for one model with the given options. Errors come back as a status whose
 * message names the node, op and cause. */
#ifndef HARNESS_COMPILER_H
#define HARNESS_COMPILER_H

#include <stdio.h>

#include "harness/status.h"

#define HC_MAX_OVERRIDES 64
#define HC_MAX_BATCHES 16
#define HC_MAX_TARGETS 4 /* targets of one fat artifact (--target A,B) */

typedef struct hc_compile_options {
  const char* input_path;   /* model.onnx */
  const char* output_path;  /* artifact path, or "-" for stdout (text emits) */
  const char* target;       /* "native" (default), "x86-64-v3", "x86-64-v4", or a comma list of
                               them for a fat artifact (one code variant per target) */
  const char* mcpu;         /* optional CPU model */
  int opt_level;            /* 0..3, default 3 */
  const char* emit;         /* "lib" (default), "obj", "llvm-ir", "asm", "manifest", "memplan", "memplan-svg" */
  /* --shape NAME=DIMS and --constant NAME=FILE, as given on the command line. */
  const char* shapes[HC_MAX_OVERRIDES];
  int num_shapes;
  const char* constants[HC_MAX_OVERRIDES];
  int num_constants;
  /* --batch 1,2,4,8: compile one program per batch size (the leading
   * dimension of every input) into one artifact sharing the weights. Sizes
   * strictly increasing; num_batches 0 = an ordinary artifact. */
  int64_t batch_sizes[HC_MAX_BATCHES];
  int num_batches;
  const char* print_after;  /* pass name or "all" */
  int time_passes;
  int verbose;
  FILE* log;                /* diagnostics (default stderr) */
  /* --parallel-groups (--no-parallel-groups = none): which sets of
   * independent branches run as concurrent lanes (HC_PARALLEL_GROUPS_*).
   * --threads-hint N: the run-time thread count the choice assumes (0 = 4).
   * See docs/memory.md. */
  int parallel_groups;
  int threads_hint;
  /* --precision: element type of the Conv/Gemm/MatMul weights in the
   * artifact: "fp32" (default, NULL = fp32), "fp16", "bf16", "mixed" or
   * "int8-weights" (docs/precision.md). --keep-fp32: comma-separated op
   * types or node names whose weights stay float32. */
  const char* precision;
  const char* keep_fp32;
} hc_compile_options;

/* hc_compile_options.parallel_groups. */
enum {
  HC_PARALLEL_GROUPS_AUTO = 0, /* a group where it saves more latency than it adds memory (default) */
  HC_PARALLEL_GROUPS_ALL = 1,  /* every set of independent branches is a group */
  HC_PARALLEL_GROUPS_NONE = 2, /* no groups: every kernel runs on its own */
};

/* Fills defaults (native target, -O3, emit lib, log stderr). */
void hc_compile_options_init(hc_compile_options* opts);
hx_status_t hc_compile(const hc_compile_options* opts);

/* `harnessc check`: imports and verifies the model, reporting every problem
 * at once. Prints a summary to `out`; fails if anything would stop a compile. */
hx_status_t hc_check(const hc_compile_options* opts, FILE* out);

/* Parses a --batch list ("1,2,4,8") into opts->batch_sizes, checking the
 * sizes are positive and strictly increasing. */
hx_status_t hc_parse_batch_list(const char* text, hc_compile_options* opts);

/* Producer string, e.g. "harnessc 0.1.0". */
const char* hc_version_string(void);

#endif /* HARNESS_COMPILER_H */
