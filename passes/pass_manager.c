/* Pass manager: named pipelines, verification, --print-after, --time-passes. */
#include <string.h>
#include <time.h>

#include "ir/verify.h"
#include "passes/pass.h"

static const hc_pass* const k_all_passes[] = {
    &hc_pass_shape_inference, &hc_pass_fold_batchnorm,    &hc_pass_canonicalize, &hc_pass_constant_folding,
    &hc_pass_dce,             &hc_pass_finalize_outputs, &hc_pass_schedule,     &hc_pass_memory_plan,
    &hc_pass_channel_blocks,  &hc_pass_fusion,          &hc_pass_pack_weights,     &hc_pass_precision,    &hc_pass_qdq,
    &hc_pass_fold_channel_scale, NULL,
};

/* -O0 does only what correctness needs: shapes (which folds shape
 * subgraphs), removing dead code, and planning. The precision pass runs at
 * every level (a no-op at --precision fp32): the weights' element type is
 * the user's request, not an optimisation. */
static const hc_pass* const k_o0[] = {
    &hc_pass_shape_inference, &hc_pass_dce,         &hc_pass_precision, &hc_pass_finalize_outputs,
    &hc_pass_schedule,        &hc_pass_memory_plan, NULL,
};

/* -O1 and above first turn QDQ groups into integer operators (before shape
 * inference folds the weights' DequantizeLinear away; at -O0 a QDQ model
 * runs as written, in float). */
static const hc_pass* const k_o1[] = {
    &hc_pass_qdq,       &hc_pass_shape_inference,  &hc_pass_canonicalize, &hc_pass_fold_batchnorm,
    &hc_pass_constant_folding, &hc_pass_dce,       &hc_pass_precision,    &hc_pass_finalize_outputs,
    &hc_pass_schedule,  &hc_pass_memory_plan,      NULL,
};

/* -O2 and -O3 also split large expansion + depthwise pairs into channel
 * blocks, fold per-channel scales into 1x1 convolutions' weights, fuse
 * element-wise epilogues and chains into one kernel each and store weights
 * pre-packed; -O1 keeps every op in a kernel of its
 * own (so tests at -O1 exercise the unfused kernels). */
static const hc_pass* const k_o2[] = {
    &hc_pass_qdq,              &hc_pass_shape_inference, &hc_pass_canonicalize, &hc_pass_fold_batchnorm,
    &hc_pass_constant_folding, &hc_pass_dce,             &hc_pass_channel_blocks, &hc_pass_precision,
    &hc_pass_fold_channel_scale, &hc_pass_fusion,        &hc_pass_pack_weights,     &hc_pass_finalize_outputs,
    &hc_pass_schedule,         &hc_pass_memory_plan,      NULL,
};

const hc_pass* const* hc_pipeline_for_level(int opt_level) {
  return opt_level <= 0 ? k_o0 : opt_level == 1 ? k_o1 : k_o2;
}

const hc_pass* hc_pass_find(const char* name) {
  for (int i = 0; k_all_passes[i]; ++i)
    if (!strcmp(k_all_passes[i]->name, name)) return k_all_passes[i];
  return NULL;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

hx_status_t hc_run_pipeline(hc_pass_ctx* ctx, hc_graph* g, const hc_pass* const* passes,
                            const hc_pipeline_options* opts) {
  /* Passes before shape inference (qdq) see values without shapes yet, so
   * only the graph's structure is verified after them. */
  bool shapes = true;
  for (int i = 0; passes[i]; ++i)
    if (passes[i] == &hc_pass_shape_inference) shapes = false;
  for (int i = 0; passes[i]; ++i) {
    const hc_pass* p = passes[i];
    double t0 = now_ms();
    hx_status_t st = p->run(ctx, g);
    double t1 = now_ms();
    if (st != HX_OK) return st;
    if (opts && opts->time_passes && ctx->log)
      fprintf(ctx->log, "time: %-20s %9.3f ms  (%d nodes)\n", p->name, t1 - t0, g->num_nodes);
    /* Verification is cheap next to codegen; always on, so a pass bug is
     * reported at the pass that made it. */
    if (p == &hc_pass_shape_inference) shapes = true;
    st = hc_graph_verify(g, shapes);
    if (st != HX_OK) return hx_status_annotate(st, "after pass %s", p->name);
    if (opts && opts->print_after && (!strcmp(opts->print_after, p->name) || !strcmp(opts->print_after, "all"))) {
      FILE* out = opts->print_out ? opts->print_out : stderr;
      fprintf(out, "// ----- IR after %s -----\n", p->name);
      hc_graph_print(g, out);
    }
  }
  return HX_OK;
}
