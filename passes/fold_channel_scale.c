/* Channel scales folded into the next 1x1 convolution's weights (-O2+).
 *
 * A squeeze-and-excitation block ends with e = x * s, s one run-time value
 * per channel ([1, C, 1, 1]), and e feeds only a 1x1 convolution:
 *   Conv(x * s, W) = Conv(x, W * s),   (W * s)[m, c] = W[m, c] s[c].
 * The Mul over x (C x H x W elements, written and read once more) becomes
 * a Mul over W (M x C elements) per inference, and the convolution reads
 * its product as run-time weights. Done where that is cheaper and costs
 * the convolution nothing:
 *  - one image (s is per image), float32 throughout;
 *  - a 1x1 convolution without stride, padding or groups on a plane of
 *    more than 16x16 positions, which takes the 1x1-as-GEMM path: it reads
 *    its weights in place, packed at compile time or not (smaller planes
 *    take the channels kernel, which would have to pack run-time weights);
 *  - more positions than output channels (H x W > M), so that the weights
 *    are the smaller operand;
 *  - a float32 constant weight: the precision pass runs first, and a
 *    narrowed weight keeps the Mul (its narrow copy is what the artifact
 *    stores).
 * A constant s (a scale the exporter left before the convolution) is
 * folded on any plane: W * s is then computed here, a constant.
 * EfficientNet-B0's first five SE blocks (112x112 to 28x28 planes):
 * docs/performance.md, "Squeeze-and-excitation blocks". */
#include <string.h>

#include "compiler/ops/op.h"
#include "passes/pass.h"

static bool is_op(const hc_node* n, const char* type) { return n && !n->domain[0] && !strcmp(n->op_type, type); }

/* The single live node that reads v, or NULL. */
static hc_node* only_consumer(hc_graph* g, const hc_value* v) {
  if (v->is_output || hc_value_use_count(g, v) != 1) return NULL;
  for (int i = 0; i < g->num_nodes; ++i) {
    hc_node* n = g->nodes[i];
    if (n->dead) continue;
    for (int j = 0; j < n->num_inputs; ++j)
      if (n->inputs[j] == v) return n;
  }
  return NULL;
}

/* Whether s is one value per channel of a [1, C, H, W] tensor: [1, C, 1, 1]
 * or [C, 1, 1]. */
static bool per_channel(const hc_value* s, int64_t C) {
  if (s->rank == 4) return s->dims[0] == 1 && s->dims[1] == C && s->dims[2] == 1 && s->dims[3] == 1;
  if (s->rank == 3) return s->dims[0] == C && s->dims[1] == 1 && s->dims[2] == 1;
  return false;
}

/* A 1x1 convolution without stride, padding or groups (a dilation does
 * nothing to a 1x1 kernel) whose weight is an unpacked float32 constant
 * [M, C, 1, 1]. */
static bool plain_1x1(const hc_node* conv, int64_t C) {
  const hc_value* w = conv->inputs[1];
  if (conv->packed || conv->num_fused || w->kind != HC_VALUE_CONST || !w->data || w->dtype != HX_DTYPE_FLOAT32 ||
      w->rank != 4 || w->dims[1] != C || w->dims[2] != 1 || w->dims[3] != 1)
    return false;
  const char* auto_pad = hc_attr_string(conv, "auto_pad", "NOTSET");
  if (strcmp(auto_pad, "NOTSET") && strcmp(auto_pad, "VALID")) return false;
  if (hc_attr_int(conv, "group", 1) != 1) return false;
  int64_t v[8];
  int k = hc_attr_ints(conv, "strides", v, 8);
  for (int i = 0; i < k; ++i)
    if (v[i] != 1) return false;
  k = hc_attr_ints(conv, "pads", v, 8);
  for (int i = 0; i < k; ++i)
    if (v[i] != 0) return false;
  const hc_value* b = hc_input(conv, 2);
  return !b || b->dtype == HX_DTYPE_FLOAT32;
}

/* Folds Mul node `mul` (x * s) into conv; returns whether it did. */
static hx_status_t fold_one(hc_graph* g, hc_node* mul, bool* out_done) {
  *out_done = false;
  if (mul->num_inputs != 2 || mul->num_outputs != 1 || !mul->outputs[0]) return HX_OK;
  hc_value* e = mul->outputs[0];
  for (int xi = 0; xi < 2; ++xi) {
    hc_value *x = mul->inputs[xi], *s = mul->inputs[1 - xi];
    if (!x || !s || x->dtype != HX_DTYPE_FLOAT32 || s->dtype != HX_DTYPE_FLOAT32 || x->rank != 4 ||
        x->dims[0] != 1 || e->rank != 4 || memcmp(e->dims, x->dims, sizeof(int64_t) * 4) != 0 ||
        !per_channel(s, x->dims[1]))
      continue;
    hc_node* conv = only_consumer(g, e);
    if (!is_op(conv, "Conv") || conv->inputs[0] != e || conv->num_inputs < 2 || !plain_1x1(conv, x->dims[1])) return HX_OK;
    hc_value* w = conv->inputs[1];
    int64_t plane = x->dims[2] * x->dims[3], M = w->dims[0], C = w->dims[1];
    bool const_scale = s->kind == HC_VALUE_CONST && s->data;
    if (!const_scale && (plane <= 256 || plane <= M)) return HX_OK;

    char name[512];
    snprintf(name, sizeof name, "%s:scaled_weight", conv->name);
    hc_value* ws;
    if (const_scale) {
      /* A constant scale: the scaled weights are a constant too (any plane:
       * every kernel reads constant weights), computed here. */
      HX_RETURN_IF_ERROR(hc_pass_new_const(g, name, HX_DTYPE_FLOAT32, 4, w->dims, NULL, &ws));
      float* d = (float*)ws->data; /* just allocated by hc_pass_new_const */
      const float *wd = w->data, *sd = s->data;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t c = 0; c < C; ++c) d[m * C + c] = wd[m * C + c] * sd[c];
    } else {
      HX_RETURN_IF_ERROR(hc_graph_add_value(g, name, HX_DTYPE_FLOAT32, 4, w->dims, &ws));
      hc_node* scale;
      HX_RETURN_IF_ERROR(hc_pass_new_node(g, conv, "Mul", ":scale_weight", 2, &scale));
      hc_pass_connect(scale, (hc_value*[]){w, s}, ws);
      HX_RETURN_IF_ERROR(scale->op->infer(g, scale));
    }
    hc_node_set_input(conv, 0, x);
    hc_node_set_input(conv, 1, ws);
    mul->dead = true;
    *out_done = true;
    return HX_OK;
  }
  return HX_OK;
}

static hx_status_t run_fold_channel_scale(hc_pass_ctx* ctx, hc_graph* g) {
  int folded = 0;
  for (int i = 0, count = g->num_nodes; i < count; ++i) {
    hc_node* n = g->nodes[i];
    if (n->dead || !is_op(n, "Mul")) continue;
    bool done;
    HX_RETURN_IF_ERROR(fold_one(g, n, &done));
    folded += done;
  }
  if (ctx->verbose && ctx->log)
    fprintf(ctx->log, "fold-channel-scale: folded %d per-channel scales into 1x1 Conv weights\n", folded);
  hc_graph_compact(g);
  if (folded) HX_RETURN_IF_ERROR(hc_graph_sort(g));
  return HX_OK;
}

const hc_pass hc_pass_fold_channel_scale = {
    "fold-channel-scale",
    "fold a per-channel scale (x * s, a squeeze-and-excitation block's) into the next 1x1 Conv's weights",
    run_fold_channel_scale};
