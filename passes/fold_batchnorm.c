/* Folds an inference BatchNormalization into the Conv that feeds it:
 *   y = s * (conv(x, W) + B - mean) / sqrt(var + eps) + b
 *     = conv(x, W * k) + (B - mean) * k + b,   k = s / sqrt(var + eps)
 * per output channel. Requires constant weights and BN parameters and a
 * Conv output used only by the BN. Computed in double, stored as float32. */
#include <math.h>
#include <string.h>

#include "compiler/ops/op.h"
#include "passes/pass.h"

static bool is_op(const hc_node* n, const char* type) { return n && !n->domain[0] && !strcmp(n->op_type, type); }

static bool all_const_f32(hc_node* bn) {
  for (int i = 1; i < 5; ++i) {
    const hc_value* v = hc_input(bn, i);
    if (!v || v->kind != HC_VALUE_CONST || v->dtype != HX_DTYPE_FLOAT32) return false;
  }
  return true;
}

static hx_status_t fold_one(hc_graph* g, hc_node* conv, hc_node* bn) {
  hc_value* W = conv->inputs[1];
  hc_value* B = hc_input(conv, 2);
  int64_t M = W->dims[0];
  int64_t per = hc_value_numel(W) / (M ? M : 1);
  const float* scale = bn->inputs[1]->data;
  const float* shift = bn->inputs[2]->data;
  const float* mean = bn->inputs[3]->data;
  const float* var = bn->inputs[4]->data;
  for (int i = 1; i < 5; ++i)
    if (hc_value_numel(bn->inputs[i]) != M) return HX_OK; /* malformed; BN's own infer reports it */
  double eps = hc_attr_float(bn, "epsilon", 1e-5f);

  char name[512];
  snprintf(name, sizeof name, "%s:bn_folded_weight", conv->name);
  hc_value* W2;
  HX_RETURN_IF_ERROR(hc_graph_add_value(g, name, HX_DTYPE_FLOAT32, W->rank, W->dims, &W2));
  snprintf(name, sizeof name, "%s:bn_folded_bias", conv->name);
  hc_value* B2;
  HX_RETURN_IF_ERROR(hc_graph_add_value(g, name, HX_DTYPE_FLOAT32, 1, &M, &B2));
  float* w2 = hc_graph_alloc_data(g, hc_value_nbytes(W2));
  float* b2 = hc_graph_alloc_data(g, hc_value_nbytes(B2));
  if (!w2 || !b2) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory folding BatchNormalization");
  const float* w = W->data;
  const float* b = B ? B->data : NULL;
  for (int64_t m = 0; m < M; ++m) {
    double k = (double)scale[m] / sqrt((double)var[m] + eps);
    for (int64_t j = 0; j < per; ++j) w2[m * per + j] = (float)((double)w[m * per + j] * k);
    b2[m] = (float)(((b ? (double)b[m] : 0.0) - (double)mean[m]) * k + (double)shift[m]);
  }
  W2->kind = B2->kind = HC_VALUE_CONST;
  W2->data = w2;
  B2->data = b2;

  if (conv->num_inputs < 3) {
    hc_value** ins = hc_arena_alloc(&g->arena, sizeof(hc_value*) * 3);
    if (!ins) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
    ins[0] = conv->inputs[0];
    conv->inputs = ins;
    conv->num_inputs = 3;
  }
  conv->inputs[1] = W2;
  conv->inputs[2] = B2;
  hc_graph_replace_uses(g, bn->outputs[0], conv->outputs[0]);
  bn->dead = true;
  return HX_OK;
}

static hx_status_t run_fold_batchnorm(hc_pass_ctx* ctx, hc_graph* g) {
  int folded = 0;
  for (int i = 0; i < g->num_nodes; ++i) {
    hc_node* bn = g->nodes[i];
    if (bn->dead || !is_op(bn, "BatchNormalization") || !all_const_f32(bn)) continue;
    /* Only inference with running statistics folds: training mode uses batch
     * statistics, and spatial=0 (before opset 9) has per-element ones. */
    if (hc_attr_int(bn, "training_mode", 0) != 0) continue;
    if (bn->opset < 9 && hc_attr_int(bn, "spatial", 1) == 0) continue;
    if (bn->num_outputs > 1) {
      bool extra = false; /* training-mode statistics outputs */
      for (int j = 1; j < bn->num_outputs; ++j) extra |= bn->outputs[j] != NULL;
      if (extra) continue;
    }
    hc_value* x = bn->inputs[0];
    hc_node* conv = x->producer;
    if (!is_op(conv, "Conv") || conv->dead || x->is_output || hc_value_use_count(g, x) != 1) continue;
    hc_value* W = conv->inputs[1];
    hc_value* B = hc_input(conv, 2);
    if (W->kind != HC_VALUE_CONST || W->dtype != HX_DTYPE_FLOAT32) continue;
    if (B && (B->kind != HC_VALUE_CONST || B->dtype != HX_DTYPE_FLOAT32)) continue;
    HX_RETURN_IF_ERROR(fold_one(g, conv, bn));
    ++folded;
  }
  if (ctx->verbose && ctx->log) fprintf(ctx->log, "fold-batchnorm: folded %d BatchNormalization nodes into Conv\n", folded);
  hc_graph_compact(g);
  return HX_OK;
}

const hc_pass hc_pass_fold_batchnorm = {"fold-batchnorm", "fold inference BatchNormalization into the preceding Conv",
                                        run_fold_batchnorm};
