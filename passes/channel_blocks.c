/* Channel blocks: an inverted-residual expansion and its depthwise
 * convolution, one block of channels at a time.
 *
 * MobileNetV2's and EfficientNet's blocks expand a few channels into many
 * with a 1x1 Conv, apply an activation, then a depthwise Conv:
 *
 *     x [1,C0,H,W] -> Conv 1x1 -> e [1,C1,H,W] -> act -> DW Conv (group C1) -> act -> d
 *
 * At 112x112 the expanded tensor is 4.8 MB, larger than L2: the 1x1 Conv
 * writes it to memory and the depthwise Conv reads it back, both at memory
 * speed. Channel c of the depthwise output depends only on channel c of e,
 * so the pair splits exactly into G blocks of C1/G channels, each a 1x1
 * Conv with those rows of the weights, the same activations, a depthwise
 * Conv on those channels, and a Concat of the blocks' outputs along the
 * channels. Each block's e fits in L2 and is read back from there; memory
 * planning reuses one block's bytes for the next, and writes the blocks'
 * outputs straight into the Concat's output (passes/memory_plan.c, concat
 * in place), so the Concat copies nothing. The sum of work is unchanged:
 * each block reads all of x (small: C0 channels), no halo is recomputed.
 *
 * Applied when e is larger than HC_CB_SPLIT_BYTES (1.5 MiB) and:
 *  - the expansion is a Conv with a constant [C1,C0,1,1] weight, group 1,
 *    strides 1, no padding, an optional constant bias, on a batch-1 4-D x;
 *  - the depthwise Conv has a constant [C1,1,kh,kw] weight, group C1 and an
 *    optional constant bias (any strides, pads, dilations: copied);
 *  - between them, and after the depthwise Conv, only element-wise ops whose
 *    other inputs are scalar constants (Relu, Clip, HardSwish; SiLU as
 *    Mul(v, Sigmoid(v))), every intermediate read only inside the pattern.
 * The block size is the largest divisor of C1 that is a multiple of 8
 * channels (a vector of float32 on AVX2), at least HC_CB_MIN_CHANNELS, and
 * keeps a block of e within HC_CHANNEL_BLOCK_BYTES. New nodes are named after the ones they replace
 * with ":cb<block>" (so `--keep-fp32` can name them) and the Concat
 * ":cb_concat". Runs at -O2 and -O3, before precision and fusion (each
 * block's activations fuse into its convolutions). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/op.h"
#include "passes/pass.h"

/* Half of a 2 MiB L2 (this machine's; server cores have 1-2 MiB): the block
 * of e and the depthwise output rows being written share it. */
#define HC_CHANNEL_BLOCK_BYTES ((uint64_t)1 << 20)
/* Only an expanded tensor larger than this is split: one that nearly fits
 * in L2 gains too little for the code its blocks add (PP-OCRv4 det's
 * 1.2 MB expansions at 40x40: +9 KB of int8 artifact, no faster). */
#define HC_CB_SPLIT_BYTES ((uint64_t)3 << 19)
/* Fewer output channels leave the 1x1 Conv's register tiles mostly empty:
 * PP-OCRv4 det's 8-channel blocks ran 1.1x slower than the whole. */
#define HC_CB_MIN_CHANNELS 16
/* Element-wise ops between the convolutions, and after the second. */
#define HC_CB_MAX_REGION 8
/* Inputs of an element-wise op copied per block (Clip has three). */
#define HC_MAX_INPUTS_FOR_CLONE 8

typedef struct region {
  hc_node* nodes[HC_CB_MAX_REGION]; /* in dependency order */
  int count;
  hc_value* end; /* the value the region leaves for what follows */
} region;

typedef struct uses {
  int* count; /* live nodes reading each value (an input slot each), by value id */
} uses;

static bool is_onnx(const hc_node* n, const char* op) { return !n->domain[0] && !strcmp(n->op_type, op); }

static bool scalar_const(const hc_value* v) { return v->kind == HC_VALUE_CONST && hc_value_numel(v) == 1; }

static bool same_shape(const hc_value* a, const hc_value* b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; ++i)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

static bool in_values(hc_value* const* vals, int n, const hc_value* v) {
  for (int i = 0; i < n; ++i)
    if (vals[i] == v) return true;
  return false;
}

/* Grows the element-wise region after `start` (a value of start's shape):
 * adds every live element-wise node whose inputs are region values or
 * scalar constants, in dependency order, until none is left. The region is
 * valid when exactly one of its values (its end) is read outside it, or by
 * `stop` (if given), or is a graph output; with `stop`, the end must be read
 * by `stop` alone. Returns whether it is valid; an invalid region comes
 * back empty, ending at `start`. */
static bool grow_region(const hc_graph* g, const uses* u, hc_value* start, const hc_node* stop, region* r) {
  hc_value* vals[HC_CB_MAX_REGION + 1] = {start};
  int nv = 1;
  r->count = 0;
  r->end = start;
  for (bool grew = true; grew && r->count < HC_CB_MAX_REGION;) {
    grew = false;
    for (int i = 0; i < g->num_nodes && r->count < HC_CB_MAX_REGION; ++i) {
      hc_node* n = g->nodes[i];
      if (n->dead || n == stop || !n->op || !(n->op->flags & HC_OP_ELEMENTWISE) || n->num_outputs != 1 ||
          !n->outputs[0] || in_values(vals, nv, n->outputs[0]) || !same_shape(n->outputs[0], start))
        continue;
      bool reads_region = false, ok = true;
      for (int k = 0; k < n->num_inputs && ok; ++k) {
        const hc_value* v = n->inputs[k];
        if (!v) continue;
        if (in_values(vals, nv, v)) reads_region = true;
        else if (!scalar_const(v)) ok = false;
      }
      if (!ok || !reads_region) continue;
      r->nodes[r->count++] = n;
      vals[nv++] = n->outputs[0];
      grew = true;
    }
  }
  int ends = 0;
  hc_value* end = NULL;
  bool end_elsewhere = false;
  for (int i = 0; i < nv; ++i) {
    hc_value* v = vals[i];
    int inside = 0, by_stop = 0;
    for (int k = 0; k < r->count; ++k)
      for (int j = 0; j < r->nodes[k]->num_inputs; ++j) inside += r->nodes[k]->inputs[j] == v;
    for (int j = 0; stop && j < stop->num_inputs; ++j) by_stop += stop->inputs[j] == v;
    bool elsewhere = v->is_output || u->count[v->id] > inside + by_stop;
    if (elsewhere || by_stop) {
      ++ends;
      end = v;
      end_elsewhere = elsewhere;
    }
  }
  if (ends != 1 || (stop && end_elsewhere)) {
    r->count = 0;
    return false;
  }
  r->end = end;
  return true;
}

static bool attr_all(const hc_node* n, const char* name, int64_t want) {
  int64_t v[2 * HC_MAX_RANK];
  int k = hc_attr_ints(n, name, v, 2 * HC_MAX_RANK);
  for (int i = 0; i < k; ++i)
    if (v[i] != want) return false;
  return true;
}

/* The expansion: a plain 1x1 Conv with constant weights on a batch-1 4-D x. */
static bool expansion_conv(const hc_node* n) {
  if (!is_onnx(n, "Conv") || n->num_inputs < 2 || n->num_outputs != 1) return false;
  const hc_value *x = n->inputs[0], *w = n->inputs[1], *b = n->num_inputs > 2 ? n->inputs[2] : NULL;
  if (!x || !w || x->rank != 4 || x->dims[0] != 1 || x->dtype != HX_DTYPE_FLOAT32 || w->kind != HC_VALUE_CONST ||
      w->rank != 4 || w->dims[2] != 1 || w->dims[3] != 1 || w->dtype != HX_DTYPE_FLOAT32)
    return false;
  if (b && b->kind != HC_VALUE_CONST) return false;
  const char* auto_pad = hc_attr_string(n, "auto_pad", "NOTSET");
  if (strcmp(auto_pad, "NOTSET") && strcmp(auto_pad, "VALID")) return false;
  return hc_attr_int(n, "group", 1) == 1 && attr_all(n, "strides", 1) && attr_all(n, "pads", 0) &&
         attr_all(n, "dilations", 1);
}

/* The depthwise Conv: one constant filter per channel. */
static bool depthwise_conv(const hc_node* n) {
  if (!is_onnx(n, "Conv") || n->num_inputs < 2 || n->num_outputs != 1 || !n->inputs[0] || !n->outputs[0])
    return false;
  const hc_value *x = n->inputs[0], *w = n->inputs[1], *b = n->num_inputs > 2 ? n->inputs[2] : NULL;
  if (!w || x->rank != 4 || w->kind != HC_VALUE_CONST || w->rank != 4 || w->dims[1] != 1 ||
      w->dims[0] != x->dims[1] || w->dtype != HX_DTYPE_FLOAT32 || n->outputs[0]->rank != 4)
    return false;
  if (b && b->kind != HC_VALUE_CONST) return false;
  return hc_attr_int(n, "group", 1) == x->dims[1];
}

/* Channels per block: the largest divisor of C that is a multiple of 8 and
 * keeps a block of `plane_bytes` per channel within the budget; 0 = none
 * smaller than C. */
static int64_t block_channels(int64_t C, uint64_t plane_bytes) {
  for (int64_t cb = C - 8; cb >= HC_CB_MIN_CHANNELS; cb -= 8)
    if (C % cb == 0 && cb % 8 == 0 && (uint64_t)cb * plane_bytes <= HC_CHANNEL_BLOCK_BYTES) return cb;
  return 0;
}

/* Rows [c0, c0 + cb) of a constant whose first dimension is the channel. */
static hx_status_t slice_const(hc_graph* g, const hc_value* v, int64_t c0, int64_t cb, int b, hc_value** out) {
  int64_t dims[HC_MAX_RANK];
  for (int i = 0; i < v->rank; ++i) dims[i] = v->dims[i];
  size_t row = hc_value_nbytes(v) / (size_t)v->dims[0];
  dims[0] = cb;
  char name[512];
  snprintf(name, sizeof name, "%s:cb%d", v->name, b);
  return hc_pass_new_const(g, name, v->dtype, v->rank, dims, (const char*)v->data + row * (size_t)c0, out);
}

/* A copy of node `like` for block b, reading `inputs`, writing a new value of
 * `like`'s output shape with `channels` channels. */
static hx_status_t clone_node(hc_graph* g, const hc_node* like, int b, hc_value* const* inputs, int64_t channels,
                              hc_node** out_node, hc_value** out_value) {
  char suffix[32], name[512];
  snprintf(suffix, sizeof suffix, ":cb%d", b);
  hc_node* n;
  HX_RETURN_IF_ERROR(hc_pass_new_node(g, like, like->op_type, suffix, like->num_inputs, &n));
  n->op = like->op;
  n->opset = like->opset;
  n->attrs = like->attrs;
  n->num_attrs = like->num_attrs;
  n->channel_block = true;
  const hc_value* y = like->outputs[0];
  int64_t dims[HC_MAX_RANK];
  for (int i = 0; i < y->rank; ++i) dims[i] = y->dims[i];
  dims[1] = channels;
  snprintf(name, sizeof name, "%s:cb%d", y->name, b);
  hc_value* v;
  HX_RETURN_IF_ERROR(hc_graph_add_value(g, name, y->dtype, y->rank, dims, &v));
  hc_pass_connect(n, inputs, v);
  *out_node = n;
  *out_value = v;
  return HX_OK;
}

/* Copies of a region's nodes for block b, reading `from` where the original
 * read the region's start. Returns the copy of the region's end. */
static hx_status_t clone_region(hc_graph* g, const region* r, const hc_value* start, hc_value* from, int b,
                                int64_t channels, hc_value** out_end) {
  const hc_value* orig[HC_CB_MAX_REGION + 1] = {start};
  hc_value* copy[HC_CB_MAX_REGION + 1] = {from};
  int nv = 1;
  for (int k = 0; k < r->count; ++k) {
    const hc_node* like = r->nodes[k];
    hc_value* in[HC_MAX_INPUTS_FOR_CLONE];
    if (like->num_inputs > HC_MAX_INPUTS_FOR_CLONE)
      return hx_status_make(HX_STATUS_INTERNAL, "channel blocks: node '%s' has too many inputs", like->name);
    for (int j = 0; j < like->num_inputs; ++j) {
      in[j] = like->inputs[j];
      for (int i = 0; i < nv; ++i)
        if (orig[i] == like->inputs[j]) in[j] = copy[i];
    }
    hc_node* n;
    hc_value* v;
    HX_RETURN_IF_ERROR(clone_node(g, like, b, in, channels, &n, &v));
    HX_RETURN_IF_ERROR(n->op->infer(g, n));
    orig[nv] = like->outputs[0];
    copy[nv++] = v;
  }
  *out_end = copy[nv - 1];
  for (int i = 0; i < nv; ++i)
    if (orig[i] == r->end) *out_end = copy[i];
  return HX_OK;
}

/* The depthwise Conv's attributes with group = channels. */
static hx_status_t attrs_with_group(hc_graph* g, const hc_node* like, int64_t channels, hc_attr** out, int* out_n) {
  hc_attr* a = hc_arena_alloc(&g->arena, sizeof(hc_attr) * (size_t)(like->num_attrs + 1));
  if (!a) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory splitting '%s'", like->name);
  int na = 0;
  for (int i = 0; i < like->num_attrs; ++i)
    if (strcmp(like->attrs[i].name, "group")) a[na++] = like->attrs[i];
  memset(&a[na], 0, sizeof a[na]);
  a[na].name = "group";
  a[na].type = HC_ATTR_INT;
  a[na++].i = channels;
  *out = a;
  *out_n = na;
  return HX_OK;
}

/* Splits the pattern at depthwise Conv dw if it matches (file comment). */
static hx_status_t split_at(hc_graph* g, const uses* u, hc_node* dw, bool* out_done) {
  *out_done = false;
  if (!depthwise_conv(dw)) return HX_OK;
  /* Find the expansion: walk back from dw's input through element-wise ops
   * with one non-constant input to a 1x1 Conv's output. */
  hc_value* a = dw->inputs[0];
  hc_value* e = a;
  for (int steps = 0; e->producer && !expansion_conv(e->producer) && steps < HC_CB_MAX_REGION; ++steps) {
    /* Any path back will do (SiLU's Mul reads e directly and through its
     * Sigmoid); grow_region checks the whole region below. */
    const hc_node* p = e->producer;
    if (p->dead || !p->op || !(p->op->flags & HC_OP_ELEMENTWISE)) return HX_OK;
    hc_value* next = NULL;
    for (int k = 0; k < p->num_inputs && !next; ++k)
      if (p->inputs[k] && !scalar_const(p->inputs[k])) next = p->inputs[k];
    if (!next) return HX_OK;
    e = next;
  }
  if (!e->producer || !expansion_conv(e->producer) || e->producer->dead || e->is_output) return HX_OK;
  hc_node* ex = e->producer;
  int64_t C1 = e->dims[1], H = e->dims[2], W = e->dims[3];
  uint64_t plane = (uint64_t)H * (uint64_t)W * sizeof(float);
  if (C1 * (int64_t)plane <= (int64_t)HC_CB_SPLIT_BYTES || C1 != a->dims[1]) return HX_OK;
  int64_t cb = block_channels(C1, plane);
  if (!cb) return HX_OK;

  region pre, post;
  /* The region after e must lead exactly to dw's input, and nothing else
   * may read e or it. */
  if (!grow_region(g, u, e, dw, &pre) || pre.end != a) return HX_OK;
  hc_value* d = dw->outputs[0];
  if (d->is_output) return HX_OK;
  /* After dw: the element-wise ops that go with it, or none (the Concat
   * then replaces d itself, whoever reads it). */
  grow_region(g, u, d, NULL, &post);
  hc_value* f = post.end;

  int blocks = (int)(C1 / cb);
  hc_value** parts = calloc((size_t)blocks, sizeof(hc_value*));
  if (!parts) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory splitting '%s'", dw->name);
  hx_status_t st = HX_OK;
  hc_attr* dw_attrs = NULL;
  int dw_nattrs = 0;
  st = attrs_with_group(g, dw, cb, &dw_attrs, &dw_nattrs);
  for (int b = 0; st == HX_OK && b < blocks; ++b) {
    int64_t c0 = (int64_t)b * cb;
    hc_value *w1, *b1 = NULL, *w2, *b2 = NULL, *eb, *ab, *db, *fb;
    hc_node *exb, *dwb;
    st = slice_const(g, ex->inputs[1], c0, cb, b, &w1);
    if (st == HX_OK && ex->num_inputs > 2 && ex->inputs[2]) st = slice_const(g, ex->inputs[2], c0, cb, b, &b1);
    if (st == HX_OK) st = clone_node(g, ex, b, (hc_value*[]){ex->inputs[0], w1, b1}, cb, &exb, &eb);
    if (st == HX_OK) st = exb->op->infer(g, exb);
    if (st == HX_OK) st = clone_region(g, &pre, e, eb, b, cb, &ab);
    if (st == HX_OK) st = slice_const(g, dw->inputs[1], c0, cb, b, &w2);
    if (st == HX_OK && dw->num_inputs > 2 && dw->inputs[2]) st = slice_const(g, dw->inputs[2], c0, cb, b, &b2);
    if (st == HX_OK) st = clone_node(g, dw, b, (hc_value*[]){ab, w2, b2}, cb, &dwb, &db);
    if (st == HX_OK) {
      dwb->attrs = dw_attrs;
      dwb->num_attrs = dw_nattrs;
      st = dwb->op->infer(g, dwb);
    }
    if (st == HX_OK) st = clone_region(g, &post, d, db, b, cb, &fb);
    if (st == HX_OK) parts[b] = fb;
  }
  if (st == HX_OK) {
    hc_node* cat;
    st = hc_pass_new_node(g, dw, "Concat", ":cb_concat", blocks, &cat);
    if (st == HX_OK) {
      hc_attr* axis = hc_arena_alloc(&g->arena, sizeof *axis);
      if (!axis) st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory splitting '%s'", dw->name);
      if (st == HX_OK) {
        memset(axis, 0, sizeof *axis);
        axis->name = "axis";
        axis->type = HC_ATTR_INT;
        axis->i = 1;
        cat->attrs = axis;
        cat->num_attrs = 1;
        hc_pass_connect(cat, parts, f);
        st = cat->op->infer(g, cat);
      }
    }
  }
  free(parts);
  if (st != HX_OK) return hx_status_annotate(st, "splitting '%s' into channel blocks", dw->name);
  ex->dead = dw->dead = true;
  for (int k = 0; k < pre.count; ++k) pre.nodes[k]->dead = true;
  for (int k = 0; k < post.count; ++k) post.nodes[k]->dead = true;
  *out_done = true;
  return HX_OK;
}

static hx_status_t uses_build(const hc_graph* g, uses* u) {
  u->count = calloc((size_t)g->num_values + 1, sizeof(int));
  if (!u->count) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory in channel blocks");
  for (int i = 0; i < g->num_nodes; ++i) {
    const hc_node* n = g->nodes[i];
    if (n->dead) continue;
    for (int j = 0; j < n->num_inputs; ++j)
      if (n->inputs[j]) u->count[n->inputs[j]->id]++;
  }
  return HX_OK;
}

static hx_status_t run_channel_blocks(hc_pass_ctx* ctx, hc_graph* g) {
  int split = 0;
  uses u;
  HX_RETURN_IF_ERROR(uses_build(g, &u));
  hx_status_t st = HX_OK;
  for (int i = 0, count = g->num_nodes; st == HX_OK && i < count; ++i) {
    if (g->nodes[i]->dead) continue;
    bool done;
    st = split_at(g, &u, g->nodes[i], &done);
    split += done;
    if (st == HX_OK && done) {
      free(u.count);
      st = uses_build(g, &u);
    }
  }
  free(u.count);
  HX_RETURN_IF_ERROR(st);
  if (ctx->verbose && ctx->log)
    fprintf(ctx->log, "channel-blocks: %d expansion + depthwise pairs split into channel blocks\n", split);
  if (!split) return HX_OK;
  hc_graph_compact(g);
  return hc_graph_sort(g);
}

const hc_pass hc_pass_channel_blocks = {
    "channel-blocks", "split a 1x1 expansion and its depthwise Conv into blocks of channels that fit in L2",
    run_channel_blocks};
