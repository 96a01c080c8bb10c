/* Weight precision policy (harnessc --precision, --keep-fp32; see
 * docs/precision.md).
 *
 * Activations, accumulators and every op's arithmetic stay float32; what
 * changes is how the constant weights of Conv, Gemm and MatMul are stored in
 * the artifact. For each such node whose kernel is one of the register-tiled
 * ones (hc_conv_fast / hc_matmul_fast: those read narrow weights, widening
 * them in registers), the weight is replaced by a copy in the policy's
 * element type, recorded as an hc_packed_input with layout HC_PACK_PLAIN
 * (same shape and order, the original kept for its shape); pack-weights
 * (-O2 and above) then rearranges that copy into panels of the same element
 * type. Everything else stays float32: the numerically sensitive ops
 * (Softmax, LayerNormalization, BatchNormalization statistics, reductions,
 * Exp/Log...) read no narrowed data, and their constants (gamma, beta,
 * biases) are not touched.
 *
 *  - fp16: float16, rounded to nearest even. A tensor with a value float16
 *    cannot hold (|w| >= 65520 rounds to infinity) stays float32.
 *  - bf16: bfloat16, rounded to nearest even (float32's range, 8-bit
 *    significand).
 *  - mixed: float16 where it represents the tensor well, float32 elsewhere:
 *    besides overflow, a tensor with more than 1% of its non-zero values
 *    below float16's normal range (2^-14, where the relative precision
 *    drops) stays float32.
 *  - int8-weights: symmetric int8 per output channel, scale = max|w| / 127,
 *    q = round-half-even(w / scale) in [-127, 127]; the scales (one per
 *    output channel; float16, shifted by a power of two per tensor and rounded
 *    up, see q8_scales) follow the int8 data in the same constant. The
 *    kernels convert q to float32 in registers and apply the scale to the
 *    finished sums (sum_k x*q*s = s * sum_k x*q).
 *
 * Input layers stay float32 in every mode: a node whose data input is a
 * graph input, when its weight is at most 1% of the narrowable weight
 * bytes. The first layer sees the raw input's full dynamic range and its
 * error reaches every later layer, while its weights are a tiny share of
 * the model (ResNet-50's conv1: 0.04%); with bf16 on PP-OCRv4 det this
 * alone lifts the output cosine from 0.99897 to 0.99905. The size bound
 * keeps a large input projection (an encoder's first MatMul) narrowed.
 *
 * --keep-fp32 lists op types (Conv, Gemm, MatMul) or node names whose
 * weights stay float32 too. A weight shared by several nodes is converted once
 * per element type and channel order. Subgraph bodies (If/Loop/Scan) are
 * left alone.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/op.h"
#include "compiler/ops/prepack.h"
#include "passes/pass.h"

extern const hc_op_desc hc_op_conv, hc_op_gemm, hc_op_matmul;

static const struct {
  const char* name;
  int value;
} k_precisions[] = {
    {"fp32", HC_PRECISION_FP32},
    {"fp16", HC_PRECISION_FP16},
    {"bf16", HC_PRECISION_BF16},
    {"mixed", HC_PRECISION_MIXED},
    {"int8-weights", HC_PRECISION_INT8_WEIGHTS},
};

hx_status_t hc_precision_parse(const char* name, int* out) {
  for (size_t i = 0; i < sizeof k_precisions / sizeof k_precisions[0]; ++i)
    if (!strcmp(name, k_precisions[i].name)) {
      *out = k_precisions[i].value;
      return HX_OK;
    }
  return hx_status_make(HX_STATUS_INVALID_ARGUMENT,
                        "unknown --precision '%s' (expected fp32, fp16, bf16, mixed or int8-weights)", name);
}

const char* hc_precision_name(int precision) {
  for (size_t i = 0; i < sizeof k_precisions / sizeof k_precisions[0]; ++i)
    if (k_precisions[i].value == precision) return k_precisions[i].name;
  return "?";
}

/* ---- element conversions ---------------------------------------------------- */

/* float32 -> float16 bits, round to nearest even (infinity past 65504, NaN kept). */
static uint16_t f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return (uint16_t)(sign | 0x7E00u);
  if (ax >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* >= 65520 (and infinity) */
  if (ax < 0x38800000u) {
    /* Below 2^-14: a subnormal multiple of 2^-24 (exact scaling, then the
     * default rounding mode, to nearest even). */
    float a;
    memcpy(&a, &ax, 4);
    return (uint16_t)(sign | (uint16_t)lrintf(a * 16777216.0f));
  }
  uint32_t r = ax - 0x38000000u; /* rebias the exponent (127 - 15) */
  r += 0xFFFu + ((r >> 13) & 1u);
  return (uint16_t)(sign | (uint16_t)(r >> 13));
}

/* float32 -> bfloat16 bits, round to nearest even (NaN kept quiet). */
static uint16_t f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

/* A positive finite float16 (bits h) as float32. */
static float f16_to_f32(uint16_t h) {
  int e = (h >> 10) & 0x1F;
  float m = (float)(h & 0x3FFu) / 1024.0f;
  return e ? ldexpf(1.0f + m, e - 15) : ldexpf(m, -14);
}

/* ---- which weights, and their output channels -------------------------------- */

/* How an element index of the weight maps to its output channel (the
 * scale index the kernels use). */
typedef struct chan_map {
  int kind;          /* 0 conv (index / per), 1 column (index % N), 2 row (index / K), 3 matmul */
  int64_t per, N, K; /* as the kind needs */
  int64_t count;     /* channels */
} chan_map;

static int64_t chan_of(const chan_map* c, int64_t i) {
  switch (c->kind) {
    case 0: return i / c->per;
    case 1: return i % c->N;
    case 2: return i / c->K;
    default: return i / (c->K * c->N) * c->N + i % c->N;
  }
}

/* The node's constant float32 weight (input 1) when the policy may narrow
 * it, with its channel map; NULL otherwise. */
static hc_value* eligible_weight(const hc_node* n, chan_map* c) {
  if (n->dead || n->packed || n->num_inputs < 2) return NULL;
  hc_value* w = n->inputs[1];
  if (!w || w->kind != HC_VALUE_CONST || !w->data || w->dtype != HX_DTYPE_FLOAT32 || hc_value_numel(w) == 0)
    return NULL;
  memset(c, 0, sizeof *c);
  int64_t numel = hc_value_numel(w);
  if (n->op == &hc_op_conv) {
    if (!hc_conv_fast(n) || w->rank < 3 || w->dims[0] < 1) return NULL;
    c->kind = 0;
    c->count = w->dims[0];
    c->per = numel / c->count;
    return w;
  }
  if (n->op != &hc_op_gemm && n->op != &hc_op_matmul) return NULL;
  if (!hc_matmul_fast(n) || w->rank < 2) return NULL;
  int64_t d0 = w->dims[w->rank - 2], d1 = w->dims[w->rank - 1];
  if (d0 < 1 || d1 < 1) return NULL;
  if (n->op == &hc_op_gemm) {
    if (hc_attr_int(n, "transB", 0)) {
      c->kind = 2;
      c->K = d1;
      c->count = d0;
    } else {
      c->kind = 1;
      c->N = d1;
      c->count = d1;
    }
    return w;
  }
  c->kind = 3;
  c->K = d0;
  c->N = d1;
  c->count = numel / d0;
  return w;
}

/* Whether the keep list (comma-separated) names the node or its op type. */
static bool kept(const char* list, const hc_node* n) {
  if (!list) return false;
  const char* p = list;
  while (*p) {
    const char* e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len && ((strlen(n->op_type) == len && !strncmp(n->op_type, p, len)) ||
                (n->name && strlen(n->name) == len && !strncmp(n->name, p, len))))
      return true;
    p += len + (e ? 1 : 0);
  }
  return false;
}

/* Why float16 would damage a tensor (NULL = it would not): a value past its
 * range, or (mixed) many values below its normal range. */
static const char* f16_damage(const float* w, int64_t n, bool strict) {
  int64_t tiny = 0, nonzero = 0;
  for (int64_t i = 0; i < n; ++i) {
    float a = fabsf(w[i]);
    if (!(a < 65520.0f)) return "values beyond float16's range";
    if (a != 0.0f) {
      ++nonzero;
      if (a < 6.103515625e-05f) ++tiny;
    }
  }
  if (strict && tiny * 100 > nonzero) return "more than 1% of its values below float16's normal range";
  return NULL;
}

/* ---- conversion -------------------------------------------------------------- */

/* A converted weight, shared by every node that reads the same original with
 * the same element type and channel map. */
typedef struct converted {
  const hc_value* original;
  hx_dtype_t elem;
  chan_map chan;
  hc_value* value;
  uint64_t scales_offset;
  hx_dtype_t scales_elem;
  int scales_exp;
} converted;

/* The int8 scales of w per chan: max|w| / 127 per channel (for an
 * all-zero channel the largest, for a non-finite one 1), and how they are
 * stored. As float16 (half the bytes: 67 -> 33 KB in PP-OCRv4 rec) unless
 * a channel is not finite: shifted by 2^*exp so that the largest lies in
 * [2^14, 2^15), and each rounded up to a float16 (so |w| / scale stays
 * <= 127); `scales` then holds the stored values, shifted back, and the
 * weights are quantised with them. A scale that stays normal loses nothing but a quantisation
 * step at most 2^-10 coarser; one that falls below float16's normal range
 * (2^-28 of the largest: dead channels, the weights of trained models have
 * some) gets a step of at most 2^-39 of the largest channel's scale. */
static hx_dtype_t q8_scales(const float* src, int64_t n, const chan_map* chan, float* scales, int* exp) {
  *exp = 0;
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) {
    float a = fabsf(src[i]);
    int64_t c = chan_of(chan, i);
    if (a > scales[c]) scales[c] = a; /* NaN never is: ignored */
  }
  float smax = 0;
  for (int64_t c = 0; c < chan->count; ++c) {
    if (!isfinite(scales[c])) finite = false;
    scales[c] = isfinite(scales[c]) ? (float)((double)scales[c] / 127.0) : 1.0f;
    if (scales[c] > smax) smax = scales[c];
  }
  /* An all-zero channel's scale is arbitrary (its q are 0): the largest. */
  for (int64_t c = 0; c < chan->count; ++c)
    if (scales[c] == 0) scales[c] = smax > 0 ? smax : 1.0f;
  int e;
  frexpf(smax > 0 ? smax : 1.0f, &e); /* the largest scale is in [2^(e-1), 2^e) */
  if (!finite || 15 - e > 120) return HX_DTYPE_FLOAT32; /* 2^-exp must be a normal float32 */
  *exp = 15 - e;
  for (int64_t c = 0; c < chan->count; ++c) {
    float shifted = ldexpf(scales[c], *exp);
    uint16_t h = f32_to_f16(shifted);
    if (f16_to_f32(h) < shifted) ++h; /* the next float16 up: positive, at most 2^15 */
    if (h == 0) h = 1;                /* a scale is never 0 */
    scales[c] = ldexpf(f16_to_f32(h), -*exp);
  }
  return HX_DTYPE_FLOAT16;
}

/* Makes the narrowed copy of w (elem, per chan for INT8). */
static hx_status_t convert(hc_graph* g, const hc_value* w, hx_dtype_t elem, const chan_map* chan, converted* out) {
  int64_t n = hc_value_numel(w);
  const float* src = w->data;
  char name[512];
  const char* suffix = elem == HX_DTYPE_FLOAT16 ? "fp16" : elem == HX_DTYPE_BFLOAT16 ? "bf16" : "int8";
  snprintf(name, sizeof name, "%s.%s", w->name, suffix);
  hc_value* v;
  out->scales_offset = 0;
  if (elem != HX_DTYPE_INT8) {
    HX_RETURN_IF_ERROR(hc_graph_add_value(g, name, elem, w->rank, w->dims, &v));
    uint16_t* d = hc_graph_alloc_data(g, (size_t)n * 2);
    if (!d) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory converting '%s'", w->name);
    for (int64_t i = 0; i < n; ++i) d[i] = elem == HX_DTYPE_FLOAT16 ? f32_to_f16(src[i]) : f32_to_bf16(src[i]);
    v->data = d;
  } else {
    float* scales = calloc((size_t)chan->count, sizeof(float));
    if (!scales) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory converting '%s'", w->name);
    out->scales_elem = q8_scales(src, n, chan, scales, &out->scales_exp);
    uint64_t total = hc_q8_total_bytes((uint64_t)n, chan->count, out->scales_elem);
    int64_t dims[1] = {(int64_t)total};
    hx_status_t st = hc_graph_add_value(g, name, HX_DTYPE_INT8, 1, dims, &v);
    int8_t* d = st == HX_OK ? hc_graph_alloc_data(g, (size_t)total) : NULL;
    if (!d) {
      free(scales);
      return st != HX_OK ? st : hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory converting '%s'", w->name);
    }
    for (int64_t i = 0; i < n; ++i) {
      double q = nearbyint((double)src[i] / (double)scales[chan_of(chan, i)]);
      d[i] = (int8_t)(q > 127 ? 127 : q < -127 ? -127 : q);
    }
    out->scales_offset = hc_q8_scales_offset((uint64_t)n);
    uint8_t* sd = (uint8_t*)d + out->scales_offset;
    for (int64_t c = 0; c < chan->count; ++c) {
      if (out->scales_elem == HX_DTYPE_FLOAT16) {
        uint16_t h = f32_to_f16(ldexpf(scales[c], out->scales_exp)); /* exact */
        memcpy(sd + c * 2, &h, 2);
      } else {
        memcpy(sd + c * 4, &scales[c], 4);
      }
    }
    free(scales);
    v->data = d;
  }
  v->kind = HC_VALUE_CONST;
  out->original = w;
  out->elem = elem;
  out->chan = *chan;
  out->value = v;
  return HX_OK;
}

/* The input-layer rule of the file comment: n reads a graph input and its
 * weight w is at most 1% of all narrowable weight bytes. */
static bool input_layer(const hc_node* n, const hc_value* w, uint64_t narrowable_bytes) {
  return n->inputs[0] && n->inputs[0]->kind == HC_VALUE_INPUT && hc_value_nbytes(w) * 100 <= narrowable_bytes;
}

static hx_status_t run_precision(hc_pass_ctx* ctx, hc_graph* g) {
  ctx->precision_converted = 0;
  ctx->precision_bytes_before = ctx->precision_bytes_after = 0;
  if (ctx->precision == HC_PRECISION_FP32) return HX_OK;
  hx_dtype_t elem = ctx->precision == HC_PRECISION_BF16           ? HX_DTYPE_BFLOAT16
                    : ctx->precision == HC_PRECISION_INT8_WEIGHTS ? HX_DTYPE_INT8
                                                                  : HX_DTYPE_FLOAT16;
  converted* done = NULL;
  int ndone = 0, cap = 0, kept_count = 0;
  hx_status_t st = HX_OK;
  uint64_t narrowable_bytes = 0;
  for (int i = 0; i < g->num_nodes; ++i) {
    chan_map chan;
    const hc_value* w = eligible_weight(g->nodes[i], &chan);
    if (w) narrowable_bytes += hc_value_nbytes(w);
  }
  for (int i = 0; st == HX_OK && i < g->num_nodes; ++i) {
    hc_node* n = g->nodes[i];
    chan_map chan;
    hc_value* w = eligible_weight(n, &chan);
    if (!w) continue;
    if (kept(ctx->keep_fp32, n)) {
      ++kept_count;
      continue;
    }
    if (input_layer(n, w, narrowable_bytes)) {
      ++kept_count;
      if (ctx->verbose && ctx->log) fprintf(ctx->log, "precision: '%s' stays float32 (input layer)\n", n->name);
      continue;
    }
    if (elem == HX_DTYPE_FLOAT16) {
      const char* why = f16_damage(w->data, hc_value_numel(w), ctx->precision == HC_PRECISION_MIXED);
      if (why) {
        ++kept_count;
        if (ctx->verbose && ctx->log) fprintf(ctx->log, "precision: '%s' stays float32 (%s)\n", n->name, why);
        continue;
      }
    }
    converted* c = NULL;
    for (int k = 0; k < ndone && !c; ++k)
      if (done[k].original == w && done[k].elem == elem && !memcmp(&done[k].chan, &chan, sizeof chan)) c = &done[k];
    if (!c) {
      if (ndone == cap) {
        cap = cap ? 2 * cap : 16;
        converted* grown = realloc(done, sizeof *done * (size_t)cap);
        if (!grown) {
          st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory in precision");
          break;
        }
        done = grown;
      }
      c = &done[ndone];
      memset(c, 0, sizeof *c);
      st = convert(g, w, elem, &chan, c);
      if (st != HX_OK) break;
      ++ndone;
      ctx->precision_bytes_before += hc_value_nbytes(w);
      ctx->precision_bytes_after += hc_value_nbytes(c->value);
    }
    hc_packed_input* pk = hc_arena_alloc(&g->arena, sizeof *pk);
    if (!pk) {
      st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory in precision");
      break;
    }
    pk->input = 1;
    pk->layout = HC_PACK_PLAIN;
    pk->original = w;
    pk->elem = elem;
    pk->scales_offset = c->scales_offset;
    pk->scales_count = elem == HX_DTYPE_INT8 ? chan.count : 0;
    pk->scales_elem = elem == HX_DTYPE_INT8 ? c->scales_elem : HX_DTYPE_UNDEFINED;
    pk->scales_exp = elem == HX_DTYPE_INT8 ? c->scales_exp : 0;
    n->packed = pk;
    hc_node_set_input(n, 1, c->value);
    ++ctx->precision_converted;
  }
  free(done);
  if (st == HX_OK && ctx->verbose && ctx->log)
    fprintf(ctx->log, "precision: %s: %d weights narrowed (%llu -> %llu bytes), %d kept float32\n",
            hc_precision_name(ctx->precision), ctx->precision_converted,
            (unsigned long long)ctx->precision_bytes_before, (unsigned long long)ctx->precision_bytes_after,
            kept_count);
  return st;
}

const hc_pass hc_pass_precision = {"precision", "store Conv/Gemm/MatMul weights in the --precision element type",
                                   run_precision};
