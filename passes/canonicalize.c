/* Canonicalisation: removes no-op nodes so later passes see one form.
 * Identity and inference-mode Dropout forward their input; graph outputs
 * keep their names (hc_graph.output_names) and finalize-outputs gives them a
 * buffer of their own where needed. A Conv whose outer kernel taps only ever
 * read padding loses them (trim_conv_taps); a ConvTranspose of a 1x1 input
 * becomes a Gemm (convt_as_gemm), one whose kernel equals its stride a 1x1
 * Conv and DepthToSpace (convt_as_conv_d2s). */
#include <stdio.h>
#include <string.h>

#include "compiler/ops/op.h"
#include "compiler/ops/sliding_window.h"
#include "passes/pass.h"

extern const hc_op_desc hc_op_conv;
extern const hc_op_desc hc_op_conv_transpose;

/* ---- Conv taps that never meet the input -----------------------------------
 * A dilated convolution on a plane smaller than its dilation (DeepLabV3's
 * atrous pyramid: rates 12, 24, 36 on 33x33 or 14x14 features) has taps
 * whose every read, for every output position, falls in the zero padding.
 * They add nothing, yet the kernels multiply them (over a padded image as
 * wide as the padding). Along each spatial axis the dead taps at either end
 * are dropped: kernel k -> hi - lo + 1 taps, pads pb - lo*d and
 * pe - (k-1-hi)*d (the padded span, hence the output size and every read
 * position, stay the same), the weights sliced to the kept taps. A kernel
 * left with one tap on an axis needs no dilation there, so rate 36 on 33x33
 * becomes a 1x1 convolution (a GEMM). The result is exact: only products
 * with zeros are removed. */

/* Whether tap k (dilation d) of an axis reads the input at some output
 * position o in [0, out): o*s + k*d - pb in [0, in). */
static bool tap_meets_input(int64_t k, int64_t in, int64_t out, int64_t s, int64_t d, int64_t pb) {
  int64_t first = pb - k * d; /* o*s must lie in [first, first + in - 1] and [0, (out - 1) * s] */
  int64_t lo = first > 0 ? first : 0, hi = first + in - 1;
  if (hi > (out - 1) * s) hi = (out - 1) * s;
  if (lo > hi) return false;
  int64_t o = (lo + s - 1) / s; /* the first multiple of s at or above lo */
  return o * s <= hi;
}

static hx_status_t set_ints_attr(hc_graph* g, hc_attr* a, const char* name, const int64_t* v, int n) {
  int64_t* copy = hc_arena_memdup(&g->arena, v, sizeof(int64_t) * (size_t)n);
  if (!copy) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory trimming a Conv");
  memset(a, 0, sizeof *a);
  a->name = name;
  a->type = HC_ATTR_INTS;
  a->n = n;
  a->ints = copy;
  return HX_OK;
}

static hx_status_t trim_conv_taps(hc_graph* g, hc_node* n, bool* out_done) {
  *out_done = false;
  if (n->op != &hc_op_conv || n->num_inputs < 2 || n->num_outputs != 1) return HX_OK;
  const hc_value *x = n->inputs[0], *w = n->inputs[1];
  if (!x || !w || w->kind != HC_VALUE_CONST || !w->data || x->rank < 3 || w->rank != x->rank ||
      x->rank - 2 > HC_MAX_RANK - 2)
    return HX_OK;
  int nd = x->rank - 2;
  int64_t k[HC_MAX_RANK], s[HC_MAX_RANK], d[HC_MAX_RANK], pb[HC_MAX_RANK], pe[HC_MAX_RANK], out[HC_MAX_RANK];
  for (int i = 0; i < nd; ++i) k[i] = w->dims[2 + i];
  hx_status_t st = hc_sliding_window_geometry(n, nd, x->dims + 2, k, false, s, d, pb, pe, out);
  if (st != HX_OK) { /* shape inference accepted the node; leave it as it is */
    hx_status_free(st);
    return HX_OK;
  }
  int64_t lo[HC_MAX_RANK], hi[HC_MAX_RANK];
  bool trims = false;
  for (int i = 0; i < nd; ++i) {
    if (out[i] <= 0) return HX_OK;
    int64_t a = 0, b = k[i] - 1;
    while (a < k[i] && !tap_meets_input(a, x->dims[2 + i], out[i], s[i], d[i], pb[i])) ++a;
    if (a == k[i]) return HX_OK; /* nothing meets the input: the output is the bias; rare, left alone */
    while (!tap_meets_input(b, x->dims[2 + i], out[i], s[i], d[i], pb[i])) --b;
    /* Pads stay non-negative: at most pb/d taps off the front, pe/d off the back. */
    if (a > pb[i] / d[i]) a = pb[i] / d[i];
    if (b < k[i] - 1 - pe[i] / d[i]) b = k[i] - 1 - pe[i] / d[i];
    lo[i] = a;
    hi[i] = b;
    trims |= a > 0 || b < k[i] - 1;
  }
  if (!trims) return HX_OK;

  /* The kept taps' weights: W[:, :, lo0..hi0, lo1..hi1, ...]. */
  int64_t dims[HC_MAX_RANK], kept = 1, taps = 1;
  dims[0] = w->dims[0];
  dims[1] = w->dims[1];
  for (int i = 0; i < nd; ++i) {
    dims[2 + i] = hi[i] - lo[i] + 1;
    kept *= dims[2 + i];
    taps *= k[i];
  }
  char name[512];
  snprintf(name, sizeof name, "%s:trimmed", w->name);
  hc_value* nw;
  HX_RETURN_IF_ERROR(hc_graph_add_value(g, name, w->dtype, w->rank, dims, &nw));
  size_t es = hx_dtype_size(w->dtype);
  unsigned char* dst = hc_graph_alloc_data(g, hc_value_nbytes(nw));
  if (!dst) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory trimming Conv '%s'", n->name);
  const unsigned char* src = w->data;
  int64_t filters = w->dims[0] * w->dims[1];
  for (int64_t f = 0; f < filters; ++f)
    for (int64_t t = 0; t < kept; ++t) {
      /* t -> kept tap coordinates -> index among all taps */
      int64_t rem = t, idx = 0;
      int64_t c[HC_MAX_RANK];
      for (int i = nd - 1; i >= 0; --i) {
        c[i] = rem % dims[2 + i] + lo[i];
        rem /= dims[2 + i];
      }
      for (int i = 0; i < nd; ++i) idx = idx * k[i] + c[i];
      memcpy(dst + (size_t)(f * kept + t) * es, src + (size_t)(f * taps + idx) * es, es);
    }
  nw->kind = HC_VALUE_CONST;
  nw->data = dst;

  /* Attributes: explicit kernel_shape, pads and dilations (auto_pad
   * resolved), the others as they were. */
  int64_t kk[HC_MAX_RANK], pads[2 * HC_MAX_RANK], dil[HC_MAX_RANK];
  for (int i = 0; i < nd; ++i) {
    kk[i] = dims[2 + i];
    pads[i] = pb[i] - lo[i] * d[i];
    pads[nd + i] = pe[i] - (k[i] - 1 - hi[i]) * d[i];
    dil[i] = kk[i] == 1 ? 1 : d[i];
  }
  hc_attr* attrs = hc_arena_alloc(&g->arena, sizeof(hc_attr) * (size_t)(n->num_attrs + 3));
  if (!attrs) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory trimming Conv '%s'", n->name);
  int na = 0;
  for (int j = 0; j < n->num_attrs; ++j) {
    const char* an = n->attrs[j].name;
    if (strcmp(an, "kernel_shape") && strcmp(an, "pads") && strcmp(an, "dilations") && strcmp(an, "auto_pad"))
      attrs[na++] = n->attrs[j];
  }
  HX_RETURN_IF_ERROR(set_ints_attr(g, &attrs[na++], "kernel_shape", kk, nd));
  HX_RETURN_IF_ERROR(set_ints_attr(g, &attrs[na++], "pads", pads, 2 * nd));
  HX_RETURN_IF_ERROR(set_ints_attr(g, &attrs[na++], "dilations", dil, nd));
  n->attrs = attrs;
  n->num_attrs = na;
  n->inputs[1] = nw;
  *out_done = true;
  return HX_OK;
}

/* ---- ConvTranspose of a single input position ----------------------------
 * A generator's first layer (DCGAN: a 100-long noise vector, 1x1, to
 * 512 x 4 x 4) is a ConvTranspose whose input has one spatial position:
 * y[n, o, k] = sum_c x[n, c] W[c, o, k] + B[o], with no padding, output
 * padding or dilation gaps. That is the product of x as [N, C] by W as
 * [C, O*K] in W's own layout, so it becomes Flatten -> Gemm (the bias
 * repeated per tap as Gemm's C) -> Reshape: the GEMM kernels stream W as a
 * matrix (the pixels kernel ran that layer at 7 GB/s) and pre-pack it at -O3.
 * float32, group 1, explicit zero pads only. */
static bool all_zero_or_absent(const hc_node* n, const char* attr) {
  int64_t v[2 * HC_MAX_RANK];
  int k = hc_attr_ints(n, attr, v, 2 * HC_MAX_RANK);
  if (k < -1) return false; /* longer than any valid one: leave it to the kernel's checks */
  for (int i = 0; i < k; ++i)
    if (v[i] != 0) return false;
  return true;
}

/* A float32 ConvTranspose both rewrites below accept: constant weights
 * [C, O, k...], group 1, no padding, output padding or output_shape, a
 * constant bias of O values or none, and an output of N x O channels. */
static bool convt_plain(const hc_node* n) {
  if (n->op != &hc_op_conv_transpose || n->num_inputs < 2 || n->num_outputs != 1) return false;
  const hc_value *x = n->inputs[0], *w = n->inputs[1], *b = n->num_inputs > 2 ? n->inputs[2] : NULL, *y = n->outputs[0];
  if (!x || !w || !y || x->dtype != HX_DTYPE_FLOAT32 || w->dtype != HX_DTYPE_FLOAT32 || w->kind != HC_VALUE_CONST ||
      !w->data || x->rank < 3 || w->rank != x->rank || y->rank != x->rank)
    return false;
  const char* auto_pad = hc_attr_string(n, "auto_pad", "NOTSET");
  if ((strcmp(auto_pad, "NOTSET") && strcmp(auto_pad, "VALID")) || hc_attr_int(n, "group", 1) != 1 ||
      hc_node_attr(n, "output_shape") || !all_zero_or_absent(n, "pads") || !all_zero_or_absent(n, "output_padding"))
    return false;
  int64_t O = w->dims[1];
  if (w->dims[0] != x->dims[1] || y->dims[1] != O || y->dims[0] != x->dims[0]) return false;
  return !b || (b->kind == HC_VALUE_CONST && b->data && b->dtype == HX_DTYPE_FLOAT32 && hc_value_numel(b) == O);
}

static hx_status_t convt_as_gemm(hc_graph* g, hc_node* n, bool* out_done) {
  *out_done = false;
  if (!convt_plain(n)) return HX_OK;
  hc_value *x = n->inputs[0], *w = n->inputs[1], *b = n->num_inputs > 2 ? n->inputs[2] : NULL, *y = n->outputs[0];
  int64_t N = x->dims[0], C = x->dims[1], O = w->dims[1], K = 1;
  for (int i = 2; i < x->rank; ++i) {
    /* One input position; an output of exactly the kernel's extent rules out dilation gaps. */
    if (x->dims[i] != 1 || y->dims[i] != w->dims[i]) return HX_OK;
    K *= w->dims[i];
  }

  char name[512];
  hc_value *flat, *w2, *c2 = NULL, *prod, *shape;
  int64_t flat_dims[2] = {N, C}, w_dims[2] = {C, O * K}, c_dims[1] = {O * K}, prod_dims[2] = {N, O * K};
  snprintf(name, sizeof name, "%s:x2d", n->name);
  HX_RETURN_IF_ERROR(hc_graph_add_value(g, name, x->dtype, 2, flat_dims, &flat));
  snprintf(name, sizeof name, "%s:w2d", n->name);
  HX_RETURN_IF_ERROR(hc_pass_new_const(g, name, w->dtype, 2, w_dims, w->data, &w2));
  if (b) {
    snprintf(name, sizeof name, "%s:bias_per_tap", n->name);
    HX_RETURN_IF_ERROR(hc_pass_new_const(g, name, b->dtype, 1, c_dims, NULL, &c2));
    float* cd = (float*)c2->data; /* just allocated by hc_pass_new_const */
    const float* bd = b->data;
    for (int64_t o = 0; o < O; ++o)
      for (int64_t k = 0; k < K; ++k) cd[o * K + k] = bd[o];
  }
  snprintf(name, sizeof name, "%s:y2d", n->name);
  HX_RETURN_IF_ERROR(hc_graph_add_value(g, name, y->dtype, 2, prod_dims, &prod));
  snprintf(name, sizeof name, "%s:shape", n->name);
  HX_RETURN_IF_ERROR(hc_pass_new_const(g, name, HX_DTYPE_INT64, 1, (int64_t[]){y->rank}, y->dims, &shape));

  hc_node *fl, *gm, *rs;
  HX_RETURN_IF_ERROR(hc_pass_new_node(g, n, "Flatten", ":flatten", 1, &fl));
  hc_pass_connect(fl, (hc_value*[]){x}, flat);
  HX_RETURN_IF_ERROR(hc_pass_new_node(g, n, "Gemm", ":gemm", b ? 3 : 2, &gm));
  gm->opset = 13; /* C optional */
  hc_pass_connect(gm, (hc_value*[]){flat, w2, c2}, prod);
  HX_RETURN_IF_ERROR(hc_pass_new_node(g, n, "Reshape", ":reshape", 2, &rs));
  hc_pass_connect(rs, (hc_value*[]){prod, shape}, y);
  n->dead = true;
  HX_RETURN_IF_ERROR(fl->op->infer(g, fl));
  HX_RETURN_IF_ERROR(gm->op->infer(g, gm));
  HX_RETURN_IF_ERROR(rs->op->infer(g, rs));
  *out_done = true;
  return HX_OK;
}

/* ---- ConvTranspose whose kernel equals its stride ---------------------------
 * kernel = stride = s (per dim, 2-D; UNet's up-convolutions, PP-OCRv4
 * det's upsampling head): each input pixel owns its own s x s block of the
 * output, y[o, i*s + a, j*s + b] = sum_c x[c, i, j] W[c, o, a, b] + B[o].
 * That is a 1x1 Conv to O*s*s channels, row (a*s + b)*O + o holding
 * W[:, o, a, b] and bias B[o], then DepthToSpace(s) in its default DCR
 * order. The phase kernels read all of x once per phase (s*s times); the
 * 1x1 Conv is a GEMM that reads it once (PP-OCRv4 det's last upsampler:
 * 24 channels at 320x320, 9.8 MB). */
static hx_status_t convt_as_conv_d2s(hc_graph* g, hc_node* n, bool* out_done) {
  *out_done = false;
  if (!convt_plain(n)) return HX_OK;
  hc_value *x = n->inputs[0], *w = n->inputs[1], *b = n->num_inputs > 2 ? n->inputs[2] : NULL, *y = n->outputs[0];
  if (x->rank != 4) return HX_OK;
  int64_t s = w->dims[2];
  int64_t st[2];
  if (hc_attr_ints(n, "strides", st, 2) != 2 || st[0] != s || st[1] != s || w->dims[3] != s || s < 2) return HX_OK;
  /* With kernel = stride the output is exactly s times the input unless a
   * dilation spreads the taps (then it differs and the rewrite is skipped). */
  if (y->dims[2] != x->dims[2] * s || y->dims[3] != x->dims[3] * s) return HX_OK;
  int64_t N = x->dims[0], C = x->dims[1], O = w->dims[1], S2 = s * s;

  char name[512];
  hc_value *w2, *b2 = NULL, *z;
  int64_t w_dims[4] = {O * S2, C, 1, 1}, b_dims[1] = {O * S2}, z_dims[4] = {N, O * S2, x->dims[2], x->dims[3]};
  snprintf(name, sizeof name, "%s:w1x1", n->name);
  HX_RETURN_IF_ERROR(hc_pass_new_const(g, name, w->dtype, 4, w_dims, NULL, &w2));
  float* wd = (float*)w2->data; /* just allocated by hc_pass_new_const */
  const float* ws = w->data;
  for (int64_t ab = 0; ab < S2; ++ab)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t c = 0; c < C; ++c) wd[(ab * O + o) * C + c] = ws[(c * O + o) * S2 + ab];
  if (b) {
    snprintf(name, sizeof name, "%s:bias1x1", n->name);
    HX_RETURN_IF_ERROR(hc_pass_new_const(g, name, b->dtype, 1, b_dims, NULL, &b2));
    float* bd = (float*)b2->data;
    for (int64_t ab = 0; ab < S2; ++ab) memcpy(bd + ab * O, b->data, sizeof(float) * (size_t)O);
  }
  snprintf(name, sizeof name, "%s:blocks", n->name);
  HX_RETURN_IF_ERROR(hc_graph_add_value(g, name, x->dtype, 4, z_dims, &z));

  hc_node *cv, *ds;
  HX_RETURN_IF_ERROR(hc_pass_new_node(g, n, "Conv", ":conv1x1", b ? 3 : 2, &cv));
  hc_pass_connect(cv, (hc_value*[]){x, w2, b2}, z);
  HX_RETURN_IF_ERROR(hc_pass_new_node(g, n, "DepthToSpace", ":depth_to_space", 1, &ds));
  hc_attr* attr = hc_arena_alloc(&g->arena, sizeof *attr);
  if (!attr) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory rewriting '%s'", n->name);
  memset(attr, 0, sizeof *attr);
  attr->name = "blocksize";
  attr->type = HC_ATTR_INT;
  attr->i = s;
  ds->attrs = attr;
  ds->num_attrs = 1;
  hc_pass_connect(ds, (hc_value*[]){z}, y);
  n->dead = true;
  HX_RETURN_IF_ERROR(cv->op->infer(g, cv));
  HX_RETURN_IF_ERROR(ds->op->infer(g, ds));
  *out_done = true;
  return HX_OK;
}

static bool is_forwarding(const hc_node* n) {
  return !strcmp(n->domain, "") && (!strcmp(n->op_type, "Identity") || !strcmp(n->op_type, "Dropout"));
}

static hx_status_t run_canonicalize(hc_pass_ctx* ctx, hc_graph* g) {
  int removed = 0, trimmed = 0, gemms = 0, convs = 0;
  for (int i = 0; i < g->num_nodes; ++i) {
    hc_node* n = g->nodes[i];
    if (n->dead || !is_forwarding(n) || !n->outputs[0] || !n->inputs[0]) continue;
    if (n->outputs[0]->kind == HC_VALUE_CONST) continue; /* folded already */
    hc_graph_replace_uses(g, n->outputs[0], n->inputs[0]);
    n->dead = true;
    ++removed;
  }
  for (int i = 0; i < g->num_nodes; ++i) {
    bool done;
    if (g->nodes[i]->dead) continue;
    HX_RETURN_IF_ERROR(trim_conv_taps(g, g->nodes[i], &done));
    trimmed += done;
  }
  for (int i = 0, count = g->num_nodes; i < count; ++i) {
    bool done;
    if (g->nodes[i]->dead) continue;
    HX_RETURN_IF_ERROR(convt_as_gemm(g, g->nodes[i], &done));
    gemms += done;
    if (done) continue;
    HX_RETURN_IF_ERROR(convt_as_conv_d2s(g, g->nodes[i], &done));
    convs += done;
  }
  if (ctx->verbose && ctx->log)
    fprintf(ctx->log,
            "canonicalize: removed %d no-op nodes, trimmed %d Conv kernels, %d ConvTranspose as Gemm, %d as Conv + "
            "DepthToSpace\n",
            removed, trimmed, gemms, convs);
  hc_graph_compact(g);
  if (gemms || convs) HX_RETURN_IF_ERROR(hc_graph_sort(g));
  return HX_OK;
}

const hc_pass hc_pass_canonicalize = {"canonicalize",
                                      "remove Identity and inference-mode Dropout, trim Conv taps that only read padding, "
                                      "ConvTranspose of one input position as Gemm, with kernel = stride as Conv + DepthToSpace",
                                      run_canonicalize};
