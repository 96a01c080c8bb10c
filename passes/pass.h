/* Graph passes and the pass manager.
 *
 * Each pass is one file with one public descriptor. The pass manager runs a
 * named pipeline (chosen by -O level), verifies the graph after every pass,
 * and implements --print-after and --time-passes. */
#ifndef HARNESS_PASSES_PASS_H
#define HARNESS_PASSES_PASS_H

#include <stdio.h>

#include "ir/graph.h"

struct hc_target;

/* What every pass may consult. */
typedef struct hc_pass_ctx {
  const struct hc_target* target; /* the compilation target */
  const struct hc_target* host;   /* this machine, for compile-time evaluation */
  int opt_level;
  int verbose;
  FILE* log;
  /* Filled by the scheduling and memory-planning passes. */
  uint64_t arena_bytes;
  uint64_t arena_lower_bound;
  uint64_t weights_bytes;
} hc_pass_ctx;

typedef struct hc_pass {
  const char* name;        /* as used by --print-after */
  const char* description;
  hx_status_t (*run)(hc_pass_ctx* ctx, hc_graph* g);
} hc_pass;

extern const hc_pass hc_pass_shape_inference;
extern const hc_pass hc_pass_fold_batchnorm;
extern const hc_pass hc_pass_canonicalize;
extern const hc_pass hc_pass_constant_folding;
extern const hc_pass hc_pass_dce;
extern const hc_pass hc_pass_finalize_outputs;
extern const hc_pass hc_pass_schedule;
extern const hc_pass hc_pass_memory_plan;

typedef struct hc_pipeline_options {
  const char* print_after; /* pass name, "all", or NULL */
  FILE* print_out;
  int time_passes;         /* print per-pass wall time to log */
} hc_pipeline_options;

/* The pipeline for an optimisation level (NULL-terminated). */
const hc_pass* const* hc_pipeline_for_level(int opt_level);
/* Looks a pass up by name (for --print-after validation). */
const hc_pass* hc_pass_find(const char* name);
/* Runs passes in order; stops at the first failure. */
hx_status_t hc_run_pipeline(hc_pass_ctx* ctx, hc_graph* g, const hc_pass* const* passes,
                            const hc_pipeline_options* opts);

/* Evaluates a node whose inputs are all constant and turns its outputs into
 * constants (compile-time execution through the JIT). Returns OK without
 * change when policy says not to fold (large outputs, HC_OP_NO_FOLD);
 * *out_folded tells whether it did. */
hx_status_t hc_try_fold_node(hc_pass_ctx* ctx, hc_graph* g, hc_node* n, bool* out_folded);

/* Checks a schedule: ids are steps, every node runs after its inputs, group
 * ids never decrease, and no node reads from another lane of its own
 * parallel group. */
hx_status_t hc_schedule_verify(const hc_graph* g);

/* Checks a memory plan: every arena tensor and workspace is aligned, inside
 * the arena, and disjoint from everything live at the same step, where all
 * steps of one parallel group count as one (their kernels may run at once). */
hx_status_t hc_memory_plan_verify(const hc_graph* g, uint64_t arena_bytes);

/* Marks nodes whose outputs are all constants or unused as dead and compacts. */
void hc_remove_dead_nodes(hc_graph* g);

#endif /* HARNESS_PASSES_PASS_H */
