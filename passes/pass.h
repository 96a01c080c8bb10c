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

/* What memory planning did beyond the arena size (passes/memory_plan.c),
 * for `harnessc --emit memplan` and -v. */
#define HC_MEMPLAN_MAX_HEURISTICS 16
/* The run-time thread count the scheduling pass chooses parallel groups for
 * when not told (a constant, so artifacts do not depend on the machine that
 * compiles them). */
#define HC_SCHEDULE_DEFAULT_THREADS 4
/* hc_pass_ctx.parallel_groups. */
enum {
  HC_GROUPS_AUTO = 0, /* form a candidate where it saves more latency than it adds memory */
  HC_GROUPS_ALL = 1,  /* form every candidate */
  HC_GROUPS_NONE = 2, /* form none */
};
typedef struct hc_memplan_stats {
  int num_heuristics;                               /* packings tried */
  const char* heuristic[HC_MEMPLAN_MAX_HEURISTICS]; /* their names ("size/first-fit"...) */
  uint64_t arena[HC_MEMPLAN_MAX_HEURISTICS];        /* arena bytes each one needed */
  int chosen;                                       /* index of the one kept: smallest, first on ties */
  int inplace;                                      /* outputs written over one of their inputs */
  int concat_parts;                                 /* Concat inputs written in place into its output */
  uint64_t lower_bound_no_inplace;                  /* the lower bound had nothing been written in place */
  uint64_t lower_bound_sequential;                  /* the lower bound had no steps been grouped (what the
                                                       parallel groups cost) */
} hc_memplan_stats;

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
  hc_memplan_stats memplan;
  /* Memory-planning knobs for tests and experiments (0 = default): run only
   * packing heuristic memplan_only - 1; never write an output in place. */
  int memplan_only;
  int memplan_no_inplace;
  /* Scheduling knobs (passes/schedule.c; harnessc --parallel-groups and
   * --threads-hint): which candidate parallel groups to form (HC_GROUPS_*);
   * the run-time thread count the choice assumes (0 =
   * HC_SCHEDULE_DEFAULT_THREADS). Filled by the pass: groups formed, and
   * candidates left sequential because they cost more memory than they save
   * time. */
  int parallel_groups;
  int schedule_threads;
  int schedule_groups, schedule_groups_declined;
  /* Check mode (harnessc check): shape inference records each failing
   * node's error here (one per line) and carries on with the nodes that do
   * not depend on it, instead of stopping at the first. NULL = stop. */
  char** collected_errors;
  int num_collected_errors;
  /* Weight precision (passes/precision.c; harnessc --precision and
   * --keep-fp32): HC_PRECISION_*, and a comma-separated list of op types or
   * node names whose weights stay float32 (NULL = none). */
  int precision;
  const char* keep_fp32;
  /* Filled by the precision pass: weights it stored narrower, and their
   * bytes before and after. */
  int precision_converted;
  uint64_t precision_bytes_before, precision_bytes_after;
} hc_pass_ctx;

/* Weight precision policies (docs/precision.md). */
enum {
  HC_PRECISION_FP32 = 0,    /* everything float32 (the default; the pass does nothing) */
  HC_PRECISION_FP16,        /* Conv/Gemm/MatMul weights float16 */
  HC_PRECISION_BF16,        /* Conv/Gemm/MatMul weights bfloat16 */
  HC_PRECISION_MIXED,       /* float16 where it represents the weight well, float32 elsewhere */
  HC_PRECISION_INT8_WEIGHTS /* Conv/Gemm/MatMul weights int8, symmetric per output channel */
};
/* Parses a --precision name (fp32, fp16, bf16, mixed, int8-weights). */
hx_status_t hc_precision_parse(const char* name, int* out);
/* The --precision name of a policy. */
const char* hc_precision_name(int precision);

/* Lays out the weights blob of one program, or of the programs of one
 * artifact together (passes/weights_layout.c): sets the storage offset of
 * every constant whose storage base is HX_BASE_WEIGHTS and the blob's
 * bytes. Constants with equal bytes share a place. */
hx_status_t hc_weights_layout(hc_graph* const* graphs, int n, uint64_t* bytes);

typedef struct hc_pass {
  const char* name;        /* as used by --print-after */
  const char* description;
  hx_status_t (*run)(hc_pass_ctx* ctx, hc_graph* g);
} hc_pass;

extern const hc_pass hc_pass_shape_inference;
extern const hc_pass hc_pass_fold_batchnorm;
extern const hc_pass hc_pass_canonicalize;
extern const hc_pass hc_pass_channel_blocks;
extern const hc_pass hc_pass_constant_folding;
extern const hc_pass hc_pass_dce;
extern const hc_pass hc_pass_finalize_outputs;
extern const hc_pass hc_pass_schedule;
extern const hc_pass hc_pass_memory_plan;
/* -O2 and above (passes/fusion.c). */
extern const hc_pass hc_pass_fusion;
extern const hc_pass hc_pass_pack_weights;
/* Weight precision policy (passes/precision.c): before fusion and
 * pack-weights, at every level; does nothing at --precision fp32. */
extern const hc_pass hc_pass_precision;
/* A per-channel scale into the next 1x1 Conv's weights
 * (passes/fold_channel_scale.c): -O2+, after precision, before fusion. */
extern const hc_pass hc_pass_fold_channel_scale;
/* QDQ groups to integer operators (passes/qdq.c): first, before shape
 * inference, at -O1 and above. */
extern const hc_pass hc_pass_qdq;

typedef struct hc_pipeline_options {
  const char* print_after; /* pass name, "all", or NULL */
  FILE* print_out;
  int time_passes;         /* print per-pass wall time to log */
} hc_pipeline_options;

/* The pipeline for an optimisation level (NULL-terminated). */
/* For passes that rewrite nodes (passes/rewrite.c). A new node named
 * like->name + suffix, appended to g->nodes (hc_graph_sort restores the
 * order), with op's descriptor and like's opset clamped to the
 * descriptor's range; inputs and outputs are the caller's to set. */
hx_status_t hc_pass_new_node(hc_graph* g, const hc_node* like, const char* op, const char* suffix, int nin,
                             hc_node** out);
/* Sets n's inputs (its num_inputs first entries of `inputs`) and makes
 * `output` its output 0. */
void hc_pass_connect(hc_node* n, hc_value* const* inputs, hc_value* output);
/* A new constant of the given shape holding a copy of `data` (NULL: zeros). */
hx_status_t hc_pass_new_const(hc_graph* g, const char* name, hx_dtype_t dtype, int rank, const int64_t* dims,
                              const void* data, hc_value** out);

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
 * the arena, and disjoint from everything that may be live at the same
 * moment of an execution the executor allows (lanes of a parallel group run
 * in their own order, independently of each other), unless the two form a
 * legal in-place chain; recorded lifetimes cover the real ones. Liveness is
 * derived from the graph, not from the planner. */
hx_status_t hc_memory_plan_verify(const hc_graph* g, uint64_t arena_bytes);

/* Whether node n's kernel may write its output 0 over its input `input`
 * (the op allows it and the two have the same element count and element
 * size). Element-wise kernels of the shared generator and ops flagged
 * HC_OP_INPLACE_OK always may; ops with hc_op_desc.inplace_input (Conv,
 * Gemm, MatMul over a residual of their fused epilogue) as memory planning
 * recorded it for the target in n->inplace_inputs. Only the op and shapes
 * are checked: the planner and the verifier add that the input must be an
 * arena tensor whose last reader is n. */
bool hc_memory_plan_inplace_ok(const hc_node* n, int input);

/* For an arena tensor the planner wrote over one of its producer's inputs,
 * that input's storage root (the tensor whose bytes it reuses); NULL
 * otherwise. Reads the plan's offsets, so call it on a planned graph. */
const hc_value* hc_memory_plan_inplace_source(const hc_value* v);

/* Marks nodes whose outputs are all constants or unused as dead and compacts. */
void hc_remove_dead_nodes(hc_graph* g);

#endif /* HARNESS_PASSES_PASS_H */
