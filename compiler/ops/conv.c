/* Convolutions: Conv and ConvTranspose (opsets 1-22) over any number of
 * spatial dimensions, float16/bfloat16/float32/float64 (16-bit types
 * accumulate in float32).
 *
 * Both lower to "flat" direct kernels. The input is viewed as images of
 * extent V per spatial dim, laid out row-major with pitch[] = strides of V:
 * for Conv, image r holds the padded input at positions v*stride + r (one
 * image per stride residue r that some tap reads, so strided taps become
 * contiguous); for ConvTranspose, the single image is the input with zero
 * margins. Output positions t are numbered with the same pitch, so every
 * kernel tap reads its image at f + constant for output flat index f: a
 * product (input channel, tap) is one contiguous stream with no bounds
 * checks, and the positions that exist only because V > T are computed and
 * dropped. Stride-1 unpadded convolutions (1x1 included: a GEMM ordered
 * oc, ic, pixel) read x itself; otherwise a "pad" kernel first writes the
 * images to the workspace in the compute type, or, when a task is the only
 * reader of its input channels (depthwise, small groups), each task pads its
 * own window on the stack.
 *
 * A task computes MB output channels for a block of flat positions of one
 * image: the block accumulates in a stack buffer that starts from the bias,
 * each loop fuses up to CONV_MAX_FMAS multiply-adds per position (MB output
 * channels x taps or input channels), and the block's real outputs are then
 * stored. ConvTranspose has one kernel per output phase (output index modulo
 * the stride): phase rho receives the taps k with rho + pad - k*dilation
 * divisible by the stride, each again a constant offset into the image.
 *
 * hc_sliding_window_geometry is shared with pool.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/sliding_window.h"

#define WIN_MAX_SP (HC_MAX_RANK - 2)
/* Accumulator elements per task (MB channels x block): 16 KiB of float32. */
#define CONV_MAX_ACC 4096
/* Fused multiply-adds per inner-loop element: the weights of a fused loop
 * (MB x terms) stay in registers. */
#define CONV_MAX_FMAS 16
#define CONV_MAX_TERMS 8
/* ConvTranspose output phases (product of the strides), one kernel each. */
#define CONV_MAX_PHASES 1024

/* floor(a / b) and ceil(a / b) for b > 0 and any sign of a. */
static int64_t fdiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
static int64_t cdiv(int64_t a, int64_t b) { return -fdiv(-a, b); }

/* ---- attributes and geometry (hc_sliding_window_geometry is shared with pool.c) ---- */

/* Reads an INTS attribute with one value per spatial dim (`count` values),
 * each >= min; absent means every entry is dflt. */
static hx_status_t read_dims_attr(const hc_node* n, const char* name, int count, int64_t dflt, int64_t min,
                                  int64_t* out) {
  int got = hc_attr_ints(n, name, out, count);
  if (got == -1) {
    for (int i = 0; i < count; ++i) out[i] = dflt;
    return HX_OK;
  }
  const hc_attr* a = hc_node_attr(n, name);
  if (got != count)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'%s' has %d values; expected %d", name, got == -2 ? a->n : got,
                         count);
  for (int i = 0; i < count; ++i)
    if (out[i] < min)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'%s'[%d] = %lld; must be >= %lld", name, i,
                           (long long)out[i], (long long)min);
  return HX_OK;
}

typedef enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID } auto_pad_kind;

static hx_status_t read_auto_pad(const hc_node* n, auto_pad_kind* out) {
  const char* s = hc_attr_string(n, "auto_pad", "NOTSET");
  if (!strcmp(s, "NOTSET") || !s[0])
    *out = PAD_NOTSET;
  else if (!strcmp(s, "SAME_UPPER"))
    *out = PAD_SAME_UPPER;
  else if (!strcmp(s, "SAME_LOWER"))
    *out = PAD_SAME_LOWER;
  else if (!strcmp(s, "VALID"))
    *out = PAD_VALID;
  else
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", s);
  return HX_OK;
}

/* Reads strides, dilations, pads and auto_pad of a Conv or pooling node and
 * computes the output spatial sizes as ONNX shape inference does: explicit
 * pads, or SAME_UPPER/SAME_LOWER (output ceil(in/stride), the total padding
 * split with the odd element at the end/beginning), or VALID (no padding).
 * ceil_mode rounds the output size up, but a last window that would start in
 * the end padding is dropped. pads are ignored when auto_pad is set. */
hx_status_t hc_sliding_window_geometry(const hc_node* n, int nsp, const int64_t* in, const int64_t* kernel,
                                       bool ceil_mode, int64_t* strides, int64_t* dil, int64_t* pb, int64_t* pe,
                                       int64_t* out) {
  HX_RETURN_IF_ERROR(read_dims_attr(n, "strides", nsp, 1, 1, strides));
  HX_RETURN_IF_ERROR(read_dims_attr(n, "dilations", nsp, 1, 1, dil));
  auto_pad_kind ap;
  HX_RETURN_IF_ERROR(read_auto_pad(n, &ap));
  int64_t pads[2 * WIN_MAX_SP];
  HX_RETURN_IF_ERROR(read_dims_attr(n, "pads", 2 * nsp, 0, 0, pads));
  for (int i = 0; i < nsp; ++i) {
    int64_t ek = (kernel[i] - 1) * dil[i] + 1;
    if (ap == PAD_SAME_UPPER || ap == PAD_SAME_LOWER) {
      int64_t target = cdiv(in[i], strides[i]);
      int64_t total = (target - 1) * strides[i] + ek - in[i];
      if (total < 0) total = 0;
      pb[i] = ap == PAD_SAME_UPPER ? total / 2 : total - total / 2;
      pe[i] = total - pb[i];
    } else if (ap == PAD_VALID) {
      pb[i] = pe[i] = 0;
    } else {
      pb[i] = pads[i];
      pe[i] = pads[nsp + i];
    }
    int64_t span = in[i] + pb[i] + pe[i] - ek;
    if (span < 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "spatial dimension %d: input size %lld padded by %lld+%lld is smaller than the %s window "
                           "%lld",
                           i, (long long)in[i], (long long)pb[i], (long long)pe[i], dil[i] > 1 ? "dilated" : "kernel",
                           (long long)ek);
    out[i] = (ceil_mode ? cdiv(span, strides[i]) : span / strides[i]) + 1;
    if (ceil_mode && (out[i] - 1) * strides[i] >= in[i] + pb[i]) --out[i];
  }
  return HX_OK;
}

/* floor(x / b) at run time for a compile-time b > 0 and |x| <= bound: the
 * offset keeps the dividend non-negative so truncation is flooring. */
static LLVMValueRef rt_fdiv(hc_kb* kb, LLVMValueRef x, int64_t b, int64_t bound) {
  if (b == 1) return x;
  int64_t q = bound / b + 1;
  LLVMValueRef t = LLVMBuildSDiv(kb->b, hc_kb_iadd(kb, x, hc_kb_i64(kb, q * b)), hc_kb_i64(kb, b), "");
  return LLVMBuildSub(kb->b, t, hc_kb_i64(kb, q), "");
}

/* ---- node checks and plan ------------------------------------------------- */

/* Everything the kernel needs, in elements. dims hold the spatial geometry:
 * Conv reads x[o*s + k*d - pb]; ConvTranspose writes y[i*s + k*d - pb]. */
typedef struct conv_plan {
  bool transpose;
  hx_dtype_t dt;
  int64_t N, C, M, G, Cg, Mg;
  int nd;
  int64_t in[WIN_MAX_SP], out[WIN_MAX_SP], k[WIN_MAX_SP], s[WIN_MAX_SP], d[WIN_MAX_SP], pb[WIN_MAX_SP], pe[WIN_MAX_SP];
  int64_t in_plane, out_plane, ktot;
} conv_plan;

/* Checks inputs and attributes shared by Conv and ConvTranspose and fills
 * the dtype, channel counts and kernel sizes. */
static hx_status_t check_conv_inputs(const hc_node* n, bool transpose, conv_plan* p) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 3, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_FLOATS));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 1));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 2));
  const hc_value* x = n->inputs[0];
  const hc_value* w = n->inputs[1];
  const hc_value* b = hc_input(n, 2);
  char s1[128], s2[128];
  if (x->rank < 3)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "input X ('%s') has shape %s; expected (N, C, D1, ...) with at least one spatial dimension",
                         x->name, hc_shape_str(x->rank, x->dims, s1, sizeof s1));
  if (w->rank != x->rank)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "weight W ('%s') has shape %s; expected rank %d like X %s",
                         w->name, hc_shape_str(w->rank, w->dims, s1, sizeof s1), x->rank,
                         hc_shape_str(x->rank, x->dims, s2, sizeof s2));
  memset(p, 0, sizeof *p);
  p->transpose = transpose;
  p->dt = x->dtype;
  p->nd = x->rank - 2;
  p->N = x->dims[0];
  p->C = x->dims[1];
  p->G = hc_attr_int(n, "group", 1);
  if (p->G < 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "group = %lld; must be >= 1", (long long)p->G);
  if (p->C % p->G != 0)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input channels %lld are not divisible by group %lld",
                         (long long)p->C, (long long)p->G);
  p->Cg = p->C / p->G;
  if (!transpose) {
    p->M = w->dims[0];
    if (p->M % p->G != 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "W ('%s') has %lld output channels, not divisible by group %lld", w->name, (long long)p->M,
                           (long long)p->G);
    if (w->dims[1] != p->Cg)
      return hc_node_error(
          n, HX_STATUS_INVALID_ARGUMENT, "W ('%s') has shape %s; dimension 1 must be C/group = %lld/%lld = %lld",
          w->name, hc_shape_str(w->rank, w->dims, s1, sizeof s1), (long long)p->C, (long long)p->G, (long long)p->Cg);
    p->Mg = p->M / p->G;
  } else {
    if (w->dims[0] != p->C)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "W ('%s') has shape %s; dimension 0 must be the input channels C = %lld", w->name,
                           hc_shape_str(w->rank, w->dims, s1, sizeof s1), (long long)p->C);
    p->Mg = w->dims[1];
    p->M = p->Mg * p->G;
  }
  int64_t ks[WIN_MAX_SP];
  int nk = hc_attr_ints(n, "kernel_shape", ks, WIN_MAX_SP);
  if (nk != -1 && nk != p->nd)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'kernel_shape' has %d values; expected %d",
                         nk == -2 ? hc_node_attr(n, "kernel_shape")->n : nk, p->nd);
  for (int i = 0; i < p->nd; ++i) {
    p->k[i] = w->dims[2 + i];
    if (nk > 0 && ks[i] != p->k[i])
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'kernel_shape'[%d] = %lld but W ('%s') has shape %s", i,
                           (long long)ks[i], w->name, hc_shape_str(w->rank, w->dims, s1, sizeof s1));
    if (p->k[i] < 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "W ('%s') has shape %s; kernel sizes must be >= 1", w->name,
                           hc_shape_str(w->rank, w->dims, s1, sizeof s1));
    p->in[i] = x->dims[2 + i];
  }
  if (b && !(b->rank == 1 && b->dims[0] == p->M))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "bias B ('%s') has shape %s; expected (%lld)", b->name,
                         hc_shape_str(b->rank, b->dims, s1, sizeof s1), (long long)p->M);
  return HX_OK;
}

/* ConvTranspose output sizes and pads (ONNX ConvTranspose): explicit pads,
 * or output_shape (or SAME_*: in*stride) fixing the output and the total
 * padding stride*(in-1) + output_padding + (k-1)*dilation + 1 - out being
 * split (SAME_UPPER: the smaller half at the beginning; otherwise the
 * larger). An output larger than the full result is not negative padding:
 * as in ONNX Runtime and the ONNX test data, the extra positions come at
 * the end and hold just the bias. */
static hx_status_t conv_transpose_geometry(const hc_node* n, conv_plan* p) {
  int nd = p->nd;
  HX_RETURN_IF_ERROR(read_dims_attr(n, "strides", nd, 1, 1, p->s));
  HX_RETURN_IF_ERROR(read_dims_attr(n, "dilations", nd, 1, 1, p->d));
  int64_t opad[WIN_MAX_SP], pads[2 * WIN_MAX_SP], os[WIN_MAX_SP + 2];
  HX_RETURN_IF_ERROR(read_dims_attr(n, "output_padding", nd, 0, 0, opad));
  HX_RETURN_IF_ERROR(read_dims_attr(n, "pads", 2 * nd, 0, 0, pads));
  auto_pad_kind ap;
  HX_RETURN_IF_ERROR(read_auto_pad(n, &ap));
  int nos = hc_attr_ints(n, "output_shape", os, WIN_MAX_SP + 2);
  const int64_t* target = NULL;
  if (nos != -1) {
    /* Spatial sizes, or (as some exporters write) the full output shape. */
    if (nos == nd) {
      target = os;
    } else if (nos == nd + 2 && os[0] == p->N && os[1] == p->M) {
      target = os + 2;
    } else {
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "'output_shape' has %d values; expected the %d spatial output sizes",
                           nos == -2 ? hc_node_attr(n, "output_shape")->n : nos, nd);
    }
  }
  for (int i = 0; i < nd; ++i) {
    int64_t full = p->s[i] * (p->in[i] - 1) + opad[i] + (p->k[i] - 1) * p->d[i] + 1;
    if (target || ap == PAD_SAME_UPPER || ap == PAD_SAME_LOWER) {
      int64_t o = target ? target[i] : p->in[i] * p->s[i];
      if (o < 0)
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'output_shape'[%d] = %lld is negative", i, (long long)o);
      int64_t total = full > o ? full - o : 0;
      p->pb[i] = ap == PAD_SAME_UPPER ? total / 2 : total - total / 2;
      p->pe[i] = total - p->pb[i];
      p->out[i] = o;
    } else {
      p->pb[i] = ap == PAD_VALID ? 0 : pads[i];
      p->pe[i] = ap == PAD_VALID ? 0 : pads[nd + i];
      p->out[i] = full - p->pb[i] - p->pe[i];
      if (p->out[i] < 0)
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                             "spatial dimension %d: pads %lld+%lld exceed the full output size %lld", i,
                             (long long)p->pb[i], (long long)p->pe[i], (long long)full);
    }
  }
  return HX_OK;
}

/* Validates the node and computes its plan. */
static hx_status_t conv_setup(const hc_node* n, bool transpose, conv_plan* p) {
  HX_RETURN_IF_ERROR(check_conv_inputs(n, transpose, p));
  if (!transpose)
    HX_RETURN_IF_ERROR(hc_sliding_window_geometry(n, p->nd, p->in, p->k, false, p->s, p->d, p->pb, p->pe, p->out));
  else
    HX_RETURN_IF_ERROR(conv_transpose_geometry(n, p));
  p->in_plane = hc_shape_numel(p->nd, p->in);
  p->out_plane = hc_shape_numel(p->nd, p->out);
  p->ktot = hc_shape_numel(p->nd, p->k);
  if (transpose) {
    /* One kernel per output phase (see the file comment). */
    int64_t phases = 1;
    for (int i = 0; i < p->nd; ++i) {
      phases *= p->s[i];
      if (phases > CONV_MAX_PHASES)
        return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                             "strides whose product exceeds %d (one kernel per output phase) are not supported",
                             CONV_MAX_PHASES);
    }
  }
  return HX_OK;
}

static hx_status_t infer_conv_common(hc_node* n, bool transpose) {
  conv_plan p;
  HX_RETURN_IF_ERROR(conv_setup(n, transpose, &p));
  int64_t dims[HC_MAX_RANK] = {p.N, p.M};
  for (int i = 0; i < p.nd; ++i) dims[2 + i] = p.out[i];
  hc_set_output(n, 0, p.dt, p.nd + 2, dims);
  return HX_OK;
}

static hx_status_t infer_conv(hc_graph* g, hc_node* n) { return infer_conv_common(n, false); }
static hx_status_t infer_conv_transpose(hc_graph* g, hc_node* n) { return infer_conv_common(n, true); }

/* ---- flat layout ---------------------------------------------------------------- */

/* One product stream of a phase kernel: kernel tap `tap` (row-major index
 * over W's kernel dims) reads its source image at flat offset `src` past the
 * output's flat index. */
typedef struct flat_term {
  int64_t tap, src;
} flat_term;

/* An output phase: outputs y[t*so + rho] for t < T in every dim, where so
 * is the stride for ConvTranspose (one phase per stride residue) and 1 for
 * Conv (the single phase rho = 0). */
typedef struct flat_phase {
  int64_t rho[WIN_MAX_SP], T[WIN_MAX_SP];
  int64_t F; /* flat domain length: sum (T-1)*pitch + 1, 0 when T has a 0 */
  int nterms;
  flat_term* terms;
} flat_phase;

/* Where the phase kernels read x from. Image im of plane (n, c) holds
 *   img[v] = x[v*step + r(im) - margin]   (0 outside x), v < V per dim,
 * row-major with `pitch`. The output flat index f = sum t*pitch uses the same
 * pitch, so a tap reads img[f + const]: one contiguous stream, no bounds.
 * Without repacking (stride 1, no padding) the single image is x itself. */
typedef struct flat_plan {
  bool repack;
  int64_t V[WIN_MAX_SP], pitch[WIN_MAX_SP], PV;
  int64_t step[WIN_MAX_SP], margin[WIN_MAX_SP];
  int nres[WIN_MAX_SP];
  int64_t* res[WIN_MAX_SP]; /* residues r with an image, ascending, per dim */
  int64_t nimg;
  int64_t halo; /* span of the in-image offsets of all taps */
  int nphase;
  flat_phase* phases;
} flat_plan;

static void flat_free(flat_plan* f) {
  for (int i = 0; i < WIN_MAX_SP; ++i) free(f->res[i]);
  for (int q = 0; f->phases && q < f->nphase; ++q) free(f->phases[q].terms);
  free(f->phases);
  memset(f, 0, sizeof *f);
}

static int64_t pmod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r < 0 ? r + b : r;
}

/* Where tap k of dim e reads for output phase rho: image residue and
 * position offset q (img position = t + q). False if the tap does not reach
 * this phase (ConvTranspose). */
static bool tap_source(const conv_plan* p, const flat_plan* f, int e, int64_t rho, int64_t k, int64_t* r, int64_t* q) {
  if (!p->transpose) {
    *r = pmod(k * p->d[e], p->s[e]);
    *q = k * p->d[e] / p->s[e];
    return true;
  }
  int64_t num = rho + p->pb[e] - k * p->d[e];
  if (pmod(num, p->s[e]) != 0) return false;
  *r = 0;
  *q = fdiv(num, p->s[e]) + f->margin[e];
  return true;
}

/* The source offset (image * PV + position) that kernel tap `tap` reads
 * for phase P; false if the tap does not reach the phase. */
static bool phase_tap(const conv_plan* p, const flat_plan* f, const flat_phase* P, int64_t tap, int64_t* src) {
  int64_t img = 0, imgstride = 1, off = 0;
  for (int e = p->nd - 1; e >= 0; --e) {
    int64_t k = tap % p->k[e], r, q;
    tap /= p->k[e];
    if (!tap_source(p, f, e, P->rho[e], k, &r, &q)) return false;
    int ri = 0;
    while (f->res[e][ri] != r) ++ri;
    img += ri * imgstride;
    imgstride *= f->nres[e];
    off += q * f->pitch[e];
  }
  *src = img * f->PV + off;
  return true;
}

/* Plans the source images, output phases and the terms of each phase.
 * Conv: images are the stride residues of the padded input that some tap
 * reads. ConvTranspose: one image, x with margins; output phase rho takes
 * the taps with (rho + pb - k*d) divisible by the stride. */
static hx_status_t flat_build(const hc_node* n, const conv_plan* p, bool with_terms, flat_plan* f) {
  memset(f, 0, sizeof *f);
  const int nd = p->nd;
  int64_t qmin[WIN_MAX_SP], qmax[WIN_MAX_SP];
  int64_t nphase = 1;
  for (int e = 0; e < nd; ++e) nphase *= p->transpose ? p->s[e] : 1;
  for (int e = 0; e < nd; ++e) {
    int64_t s = p->s[e], d = p->d[e], K = p->k[e], O = p->out[e];
    int64_t cap = K < s ? K : s;
    f->res[e] = malloc(sizeof(int64_t) * (size_t)(p->transpose ? 1 : cap));
    if (!f->res[e]) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory lowering %s", n->name);
    if (!p->transpose) {
      f->step[e] = s;
      f->margin[e] = p->pb[e];
      for (int64_t k = 0; k < K; ++k) {
        int64_t r = pmod(k * d, s), at = 0;
        while (at < f->nres[e] && f->res[e][at] < r) ++at;
        if (at < f->nres[e] && f->res[e][at] == r) continue;
        memmove(f->res[e] + at + 1, f->res[e] + at, sizeof(int64_t) * (size_t)(f->nres[e] - at));
        f->res[e][at] = r;
        f->nres[e]++;
      }
      f->V[e] = O + (K - 1) * d / s;
      qmin[e] = 0;
      qmax[e] = (K - 1) * d / s;
    } else {
      f->step[e] = 1;
      f->res[e][0] = 0;
      f->nres[e] = 1;
      int64_t margin = 0, V = 1;
      for (int64_t rho = 0; rho < s; ++rho)
        for (int64_t k = 0; k < K; ++k) {
          int64_t num = rho + p->pb[e] - k * d;
          if (pmod(num, s) == 0 && -fdiv(num, s) > margin) margin = -fdiv(num, s);
        }
      f->margin[e] = margin;
      qmin[e] = INT64_MAX;
      qmax[e] = 0;
      for (int64_t rho = 0; rho < s; ++rho) {
        int64_t T = rho < O ? cdiv(O - rho, s) : 0, r, q;
        if (T > V) V = T;
        for (int64_t k = 0; T > 0 && k < K; ++k) {
          if (!tap_source(p, f, e, rho, k, &r, &q)) continue;
          if (T + q > V) V = T + q;
          if (q < qmin[e]) qmin[e] = q;
          if (q > qmax[e]) qmax[e] = q;
        }
      }
      if (qmin[e] > qmax[e]) qmin[e] = qmax[e];
      f->V[e] = V;
    }
  }
  hc_strides(nd, f->V, f->pitch);
  f->PV = hc_shape_numel(nd, f->V);
  for (int e = 0; e < nd; ++e) f->halo += (qmax[e] - qmin[e]) * f->pitch[e];
  f->nimg = 1;
  bool direct = true;
  for (int e = 0; e < nd; ++e) {
    f->nimg *= f->nres[e];
    direct =
        direct && f->step[e] == 1 && f->margin[e] == 0 && f->nres[e] == 1 && f->res[e][0] == 0 && f->V[e] == p->in[e];
  }
  f->repack = !direct;
  if (!with_terms) return HX_OK;

  f->nphase = (int)nphase;
  f->phases = calloc((size_t)nphase, sizeof(flat_phase));
  if (!f->phases) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory lowering %s", n->name);
  for (int64_t ph = 0; ph < nphase; ++ph) {
    flat_phase* P = &f->phases[ph];
    int64_t rem = ph;
    P->F = 1;
    for (int e = nd - 1; e >= 0; --e) {
      int64_t so = p->transpose ? p->s[e] : 1;
      P->rho[e] = rem % so;
      rem /= so;
      P->T[e] = P->rho[e] < p->out[e] ? cdiv(p->out[e] - P->rho[e], so) : 0;
    }
    for (int e = 0; e < nd; ++e) P->F += (P->T[e] - 1) * f->pitch[e];
    if (hc_shape_numel(nd, P->T) == 0) P->F = 0;
    if (!P->F) continue;
    int64_t count = 0, src;
    for (int64_t tap = 0; tap < p->ktot; ++tap) count += phase_tap(p, f, P, tap, &src);
    P->terms = malloc(sizeof(flat_term) * (size_t)(count ? count : 1));
    if (!P->terms) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory lowering %s", n->name);
    for (int64_t tap = 0; tap < p->ktot; ++tap)
      if (phase_tap(p, f, P, tap, &src)) P->terms[P->nterms++] = (flat_term){tap, src};
  }
  return HX_OK;
}

/* ---- kernels ----------------------------------------------------------------------- */

/* Stack bytes a task may use for its own padded copy of its input window. */
#define CONV_MAX_LOCAL (64 * 1024)

/* Padded copies of x hold the compute type, so 16-bit inputs are widened
 * once instead of once per tap. */
static hx_dtype_t copy_dtype(hx_dtype_t dt) { return dt == HX_DTYPE_FLOAT64 ? HX_DTYPE_FLOAT64 : HX_DTYPE_FLOAT32; }

/* Largest of 4, 2, 1 that divides n and is <= cap. */
static int block_of(int64_t n, int cap) {
  for (int b = 4; b > 1; b /= 2)
    if (b <= cap && n % b == 0) return b;
  return 1;
}

/* How a phase kernel splits the work: MB output channels per task, U input
 * channels and at most maxt products fused per loop, blocks of at most
 * fbmax flat outputs. `local`: each task pads its own input window on the
 * stack instead of reading a workspace copy; chosen when no other task
 * reads the same input channels (MB covers the group's output channels, as
 * in depthwise convolutions), which saves a pass over memory. */
typedef struct conv_blocking {
  int MB, U, maxt;
  int64_t fbmax;
  bool local;
} conv_blocking;

static conv_blocking conv_blocks(const conv_plan* p, const flat_plan* f) {
  conv_blocking bl;
  bl.MB = block_of(p->Mg, 4);
  bl.maxt = CONV_MAX_FMAS / bl.MB < CONV_MAX_TERMS ? CONV_MAX_FMAS / bl.MB : CONV_MAX_TERMS;
  bl.U = block_of(p->Cg, bl.maxt);
  bl.fbmax = CONV_MAX_ACC / bl.MB;
  int64_t csize = (int64_t)hx_dtype_size(copy_dtype(p->dt));
  int64_t windows = bl.U * f->nimg;
  bl.local = f->repack && p->Mg == bl.MB && windows <= 16 && windows * (bl.fbmax + f->halo) * csize <= CONV_MAX_LOCAL;
  return bl;
}

/* A private constant i64 array (offset tables). */
static LLVMValueRef const_i64_table(hc_kb* kb, const int64_t* v, int64_t count, const char* name) {
  LLVMValueRef* elems = malloc(sizeof(LLVMValueRef) * (size_t)count);
  if (!elems) return NULL;
  for (int64_t i = 0; i < count; ++i) elems[i] = hc_kb_i64(kb, v[i]);
  LLVMValueRef init = LLVMConstArray2(kb->t_i64, elems, (uint64_t)count);
  free(elems);
  LLVMValueRef g = LLVMAddGlobal(kb->lc->mod, LLVMTypeOf(init), name);
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  return g;
}

/* Writes positions [g0, g1) (g0 < g1) of one image of an x plane to
 * dst[dbase + g - g0] as dtype ddt: img[v] = x[v*step + r - margin], zero
 * outside x. xplane: x index of the plane; r: the image's residue per dim. */
static void emit_fill(hc_kb* kb, const conv_plan* p, const flat_plan* f, LLVMValueRef X, LLVMValueRef xplane,
                      LLVMValueRef* r, LLVMValueRef g0, LLVMValueRef g1, LLVMValueRef dst, LLVMValueRef dbase,
                      hx_dtype_t ddt) {
  LLVMBuilderRef b = kb->b;
  const int L = p->nd - 1;
  int64_t xs[WIN_MAX_SP];
  hc_strides(p->nd, p->in, xs);
  int64_t VL = f->V[L], step = f->step[L];
  LLVMValueRef zero = hc_kb_const(kb, ddt, 0);
  hc_loop rl;
  LLVMValueRef row_lo = LLVMBuildUDiv(b, g0, hc_kb_i64(kb, VL), "");
  LLVMValueRef row_hi = hc_kb_iadd(
      kb, LLVMBuildUDiv(b, LLVMBuildSub(b, g1, hc_kb_i64(kb, 1), ""), hc_kb_i64(kb, VL), ""), hc_kb_i64(kb, 1));
  LLVMValueRef row = hc_loop_begin(kb, &rl, row_lo, row_hi, "fill");
  LLVMValueRef rs = hc_kb_imul(kb, row, hc_kb_i64(kb, VL));
  LLVMValueRef valid = LLVMConstInt(kb->t_i1, 1, 0), xr = xplane, rem = row;
  for (int e = L - 1; e >= 0; --e) {
    LLVMValueRef v = rem;
    if (e > 0) {
      v = LLVMBuildURem(b, rem, hc_kb_i64(kb, f->V[e]), "");
      rem = LLVMBuildUDiv(b, rem, hc_kb_i64(kb, f->V[e]), "");
    }
    LLVMValueRef pos = LLVMBuildSub(b, hc_kb_iadd(kb, hc_kb_imul(kb, v, hc_kb_i64(kb, f->step[e])), r[e]),
                                    hc_kb_i64(kb, f->margin[e]), "");
    valid = LLVMBuildAnd(b, valid, LLVMBuildICmp(b, LLVMIntULT, pos, hc_kb_i64(kb, p->in[e]), ""), "");
    xr = hc_kb_iadd(kb, xr, hc_kb_imul(kb, pos, hc_kb_i64(kb, xs[e])));
  }
  /* Columns [cs, ce) of this row; x covers [lo, hi) of them, a = margin - r. */
  LLVMValueRef cs = hc_kb_imax(kb, LLVMBuildSub(b, g0, rs, ""), hc_kb_i64(kb, 0));
  LLVMValueRef ce = hc_kb_imin(kb, LLVMBuildSub(b, g1, rs, ""), hc_kb_i64(kb, VL));
  int64_t bound = f->margin[L] + step + p->in[L] + 1;
  LLVMValueRef a = LLVMBuildSub(b, hc_kb_i64(kb, f->margin[L]), r[L], "");
  LLVMValueRef lo = LLVMBuildNeg(b, rt_fdiv(kb, LLVMBuildNeg(b, a, ""), step, bound), "");
  LLVMValueRef hi =
      hc_kb_iadd(kb, rt_fdiv(kb, hc_kb_iadd(kb, a, hc_kb_i64(kb, p->in[L] - 1)), step, bound), hc_kb_i64(kb, 1));
  lo = hc_kb_imin(kb, hc_kb_imax(kb, lo, cs), ce);
  hi = hc_kb_imin(kb, hc_kb_imax(kb, hi, lo), ce);
  hi = LLVMBuildSelect(b, valid, hi, lo, "");
  LLVMValueRef xsrc = LLVMBuildSub(b, xr, a, "");
  LLVMValueRef dsh = LLVMBuildSub(b, hc_kb_iadd(kb, dbase, rs), g0, "");
  LLVMValueRef bounds[4] = {cs, lo, hi, ce};
  for (int part = 0; part < 3; ++part) {
    hc_loop cl;
    LLVMValueRef v = hc_loop_begin(kb, &cl, bounds[part], bounds[part + 1], "col");
    LLVMValueRef val = zero;
    if (part == 1) {
      LLVMValueRef xi = hc_kb_iadd(kb, xsrc, step == 1 ? v : hc_kb_imul(kb, v, hc_kb_i64(kb, step)));
      val = hc_kb_convert(kb, hc_kb_load(kb, p->dt, X, xi), p->dt, ddt);
    }
    hc_kb_store(kb, ddt, dst, hc_kb_iadd(kb, dsh, v), val);
    hc_loop_end(kb, &cl);
  }
  hc_loop_end(kb, &rl);
}

/* Residues of image im (mixed radix over the residue lists, last dim
 * fastest): constants when im is. */
static void image_residues(hc_kb* kb, const flat_plan* f, int nd, LLVMValueRef rtab, const int64_t* roff,
                           LLVMValueRef im, LLVMValueRef* r) {
  LLVMBuilderRef b = kb->b;
  LLVMValueRef rem = im;
  for (int e = nd - 1; e >= 0; --e) {
    if (f->nres[e] == 1) {
      r[e] = hc_kb_i64(kb, f->res[e][0]);
      continue;
    }
    if (LLVMIsAConstantInt(rem)) {
      int64_t c = LLVMConstIntGetSExtValue(rem);
      r[e] = hc_kb_i64(kb, f->res[e][c % f->nres[e]]);
      rem = hc_kb_i64(kb, c / f->nres[e]);
      continue;
    }
    LLVMValueRef ri = LLVMBuildURem(b, rem, hc_kb_i64(kb, f->nres[e]), "");
    rem = LLVMBuildUDiv(b, rem, hc_kb_i64(kb, f->nres[e]), "");
    LLVMValueRef at = hc_kb_iadd(kb, ri, hc_kb_i64(kb, roff[e]));
    r[e] = LLVMBuildLoad2(b, kb->t_i64, LLVMBuildGEP2(b, kb->t_i64, rtab, &at, 1, ""), "");
  }
}

/* Copies x into the workspace images (zero padding included); one task per
 * (image, channel) plane of x. */
static hx_status_t emit_repack(hc_lower_ctx* lc, const hc_node* n, const conv_plan* p, const flat_plan* f) {
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "pad", p->N * p->C, &kb));
  LLVMValueRef X = hc_kb_ptr(&kb, n->inputs[0]);
  LLVMValueRef WS = hc_kb_workspace(&kb);
  /* Residues of every dim in one constant table. */
  int64_t roff[WIN_MAX_SP], total = 0;
  for (int e = 0; e < p->nd; ++e) {
    roff[e] = total;
    total += f->nres[e];
  }
  int64_t* all = malloc(sizeof(int64_t) * (size_t)total);
  if (!all) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory lowering %s", n->name);
  for (int e = 0; e < p->nd; ++e) memcpy(all + roff[e], f->res[e], sizeof(int64_t) * (size_t)f->nres[e]);
  LLVMValueRef rtab = const_i64_table(&kb, all, total, "conv_residues");
  free(all);
  if (!rtab) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory lowering %s", n->name);

  hc_loop task;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef xb = hc_kb_imul(&kb, t, hc_kb_i64(&kb, p->in_plane));
  LLVMValueRef wb = hc_kb_imul(&kb, t, hc_kb_i64(&kb, f->nimg * f->PV));
  hc_loop iml;
  LLVMValueRef im = hc_loop_begin(&kb, &iml, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, f->nimg), "image");
  LLVMValueRef r[WIN_MAX_SP];
  image_residues(&kb, f, p->nd, rtab, roff, im, r);
  LLVMValueRef db = hc_kb_iadd(&kb, wb, hc_kb_imul(&kb, im, hc_kb_i64(&kb, f->PV)));
  emit_fill(&kb, p, f, X, xb, r, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, f->PV), WS, db, copy_dtype(p->dt));
  hc_loop_end(&kb, &iml);
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, 0,
            (double)hc_value_nbytes(n->inputs[0]) +
                (double)(p->N * p->C * f->nimg * f->PV) * (double)hx_dtype_size(copy_dtype(p->dt)));
  return HX_OK;
}

/* Emission state of a phase kernel: MB output channels accumulate in acc,
 * MB rows of CBS elements; sources are read as src_dt. */
typedef struct phase_emit {
  hc_kb* kb;
  hx_dtype_t dt, src_dt;
  LLVMValueRef acc;
  int MB;
  int64_t CBS;
} phase_emit;

static LLVMValueRef acc_at(phase_emit* e, int j, LLVMValueRef c) {
  LLVMValueRef idx = j ? hc_kb_iadd(e->kb, c, hc_kb_i64(e->kb, j * e->CBS)) : c;
  return LLVMBuildGEP2(e->kb->b, hc_kb_compute_type(e->kb, e->dt), e->acc, &idx, 1, "");
}

/* for c in [0, width): acc[j][c] += sum_t w[j][t] * src[base[t] + c]. */
static void fused_loop(phase_emit* e, LLVMValueRef src, LLVMValueRef width, int nt, LLVMValueRef* base,
                       LLVMValueRef w[4][CONV_MAX_TERMS]) {
  hc_kb* kb = e->kb;
  LLVMTypeRef ct = hc_kb_compute_type(kb, e->dt);
  hc_loop loop;
  LLVMValueRef c = hc_loop_begin(kb, &loop, hc_kb_i64(kb, 0), width, "f");
  LLVMValueRef xv[CONV_MAX_TERMS];
  for (int t = 0; t < nt; ++t) xv[t] = hc_kb_load(kb, e->src_dt, src, hc_kb_iadd(kb, base[t], c));
  for (int j = 0; j < e->MB; ++j) {
    LLVMValueRef ptr = acc_at(e, j, c);
    LLVMValueRef a = LLVMBuildLoad2(kb->b, ct, ptr, "");
    for (int t = 0; t < nt; ++t) a = hc_kb_fma(kb, e->dt, w[j][t], xv[t], a);
    LLVMBuildStore(kb->b, a, ptr);
  }
  hc_loop_end(kb, &loop);
}

/* Stores the block's flat outputs [fb, fe) of MB output channels: rows of
 * pitch V (last dim), skipping positions past T that exist only for the
 * pitch. */
static void emit_store(phase_emit* e, const conv_plan* p, const flat_plan* f, const flat_phase* P, LLVMValueRef Y,
                       LLVMValueRef nn, LLVMValueRef m0, LLVMValueRef fb, LLVMValueRef fw) {
  hc_kb* kb = e->kb;
  LLVMBuilderRef b = kb->b;
  const int L = p->nd - 1;
  LLVMTypeRef ct = hc_kb_compute_type(kb, p->dt);
  int64_t so[WIN_MAX_SP], ys[WIN_MAX_SP];
  hc_strides(p->nd, p->out, ys);
  for (int i = 0; i <= L; ++i) so[i] = p->transpose ? p->s[i] : 1;
  int64_t VL = f->V[L];
  LLVMValueRef fe = hc_kb_iadd(kb, fb, fw);
  LLVMValueRef row_lo = LLVMBuildUDiv(b, fb, hc_kb_i64(kb, VL), "");
  LLVMValueRef row_hi = hc_kb_iadd(
      kb, LLVMBuildUDiv(b, LLVMBuildSub(b, fe, hc_kb_i64(kb, 1), ""), hc_kb_i64(kb, VL), ""), hc_kb_i64(kb, 1));
  hc_loop rl;
  LLVMValueRef row = hc_loop_begin(kb, &rl, row_lo, row_hi, "row");
  LLVMValueRef rs = hc_kb_imul(kb, row, hc_kb_i64(kb, VL));
  LLVMValueRef valid = LLVMConstInt(kb->t_i1, 1, 0);
  LLVMValueRef yo = hc_kb_i64(kb, P->rho[L]);
  LLVMValueRef rem = row;
  for (int i = L - 1; i >= 0; --i) {
    LLVMValueRef ti = rem;
    if (i > 0) {
      ti = LLVMBuildURem(b, rem, hc_kb_i64(kb, f->V[i]), "");
      rem = LLVMBuildUDiv(b, rem, hc_kb_i64(kb, f->V[i]), "");
      valid = LLVMBuildAnd(b, valid, LLVMBuildICmp(b, LLVMIntULT, ti, hc_kb_i64(kb, P->T[i]), ""), "");
    }
    LLVMValueRef oi = hc_kb_iadd(kb, hc_kb_imul(kb, ti, hc_kb_i64(kb, so[i])), hc_kb_i64(kb, P->rho[i]));
    yo = hc_kb_iadd(kb, yo, hc_kb_imul(kb, oi, hc_kb_i64(kb, ys[i])));
  }
  LLVMValueRef c_lo = hc_kb_imax(kb, LLVMBuildSub(b, fb, rs, ""), hc_kb_i64(kb, 0));
  LLVMValueRef c_hi = hc_kb_imin(kb, LLVMBuildSub(b, fe, rs, ""), hc_kb_i64(kb, P->T[L]));
  c_hi = LLVMBuildSelect(b, valid, c_hi, c_lo, "");
  LLVMValueRef aoff = LLVMBuildSub(b, rs, fb, "");
  for (int j = 0; j < e->MB; ++j) {
    LLVMValueRef plane = hc_kb_iadd(kb, hc_kb_imul(kb, nn, hc_kb_i64(kb, p->M)), hc_kb_iadd(kb, m0, hc_kb_i64(kb, j)));
    LLVMValueRef ybase = hc_kb_iadd(kb, hc_kb_imul(kb, plane, hc_kb_i64(kb, p->out_plane)), yo);
    hc_loop cl;
    LLVMValueRef c = hc_loop_begin(kb, &cl, c_lo, c_hi, "store");
    LLVMValueRef v = LLVMBuildLoad2(b, ct, acc_at(e, j, hc_kb_iadd(kb, aoff, c)), "");
    LLVMValueRef yi = hc_kb_iadd(kb, ybase, so[L] == 1 ? c : hc_kb_imul(kb, c, hc_kb_i64(kb, so[L])));
    hc_kb_store(kb, p->dt, Y, yi, v);
    hc_loop_end(kb, &cl);
  }
  hc_loop_end(kb, &rl);
}

/* Emits the kernel of one output phase. A task computes MB output channels
 * of one block of the phase's flat domain for one image: the block starts
 * from the bias, every (input channel, tap) adds a contiguous stream of its
 * source image (maxt products fused per loop), and the block's outputs are
 * stored. Sources: x itself, the workspace copy, or (local) a padded copy
 * of the block's input window that the task makes on its stack. */
static hx_status_t emit_phase(hc_lower_ctx* lc, const hc_node* n, const conv_plan* p, const flat_plan* f, int phi) {
  const flat_phase* P = &f->phases[phi];
  conv_blocking bl = conv_blocks(p, f);
  const int U = bl.U;
  phase_emit e = {.dt = p->dt, .src_dt = p->dt, .MB = bl.MB};
  int64_t nblk = (P->F + bl.fbmax - 1) / bl.fbmax;
  int64_t FB = (P->F + nblk - 1) / nblk;
  e.CBS = (FB + 15) / 16 * 16;
  int64_t NMB = p->M / e.MB;
  int64_t tasks = p->N * NMB * nblk;
  int64_t chan = f->nimg * f->PV; /* source elements per input channel */

  /* In-image offsets of the terms: the local window spans [smin, FB + smax). */
  int64_t smin = INT64_MAX, smax = 0;
  for (int i = 0; i < P->nterms; ++i) {
    int64_t off = P->terms[i].src % f->PV;
    if (off < smin) smin = off;
    if (off > smax) smax = off;
  }
  if (!P->nterms) smin = 0;
  int64_t WL = FB + smax - smin;

  char suffix[32];
  snprintf(suffix, sizeof suffix, "phase%d", phi);
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, f->nphase > 1 ? suffix : NULL, tasks, &kb));
  e.kb = &kb;
  LLVMBuilderRef b = kb.b;
  const hc_value* bias = hc_input(n, 2);
  LLVMValueRef X = hc_kb_ptr(&kb, n->inputs[0]);
  LLVMValueRef W = hc_kb_ptr(&kb, n->inputs[1]);
  LLVMValueRef Bp = bias ? hc_kb_ptr(&kb, bias) : NULL;
  LLVMValueRef Y = hc_kb_ptr(&kb, n->outputs[0]);
  LLVMTypeRef ct = hc_kb_compute_type(&kb, p->dt);
  e.acc = hc_kb_alloca(&kb, LLVMArrayType2(ct, (uint64_t)(e.MB * e.CBS)), "acc");
  LLVMValueRef src = X, window = NULL;
  if (f->repack) e.src_dt = copy_dtype(p->dt);
  if (bl.local) {
    window = hc_kb_alloca(&kb, LLVMArrayType2(ct, (uint64_t)(U * f->nimg * WL)), "window");
    src = window;
  } else if (f->repack) {
    src = hc_kb_workspace(&kb);
  }

  hc_loop task;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef blk = LLVMBuildURem(b, t, hc_kb_i64(&kb, nblk), "");
  LLVMValueRef t2 = LLVMBuildUDiv(b, t, hc_kb_i64(&kb, nblk), "");
  LLVMValueRef m0 = hc_kb_imul(&kb, LLVMBuildURem(b, t2, hc_kb_i64(&kb, NMB), ""), hc_kb_i64(&kb, e.MB));
  LLVMValueRef nn = LLVMBuildUDiv(b, t2, hc_kb_i64(&kb, NMB), "");
  LLVMValueRef grp = LLVMBuildUDiv(b, m0, hc_kb_i64(&kb, p->Mg), "");
  LLVMValueRef fb = hc_kb_imul(&kb, blk, hc_kb_i64(&kb, FB));
  LLVMValueRef fw = hc_kb_imin(&kb, LLVMBuildSub(b, hc_kb_i64(&kb, P->F), fb, ""), hc_kb_i64(&kb, FB));

  for (int j = 0; j < e.MB; ++j) {
    LLVMValueRef v =
        Bp ? hc_kb_load(&kb, p->dt, Bp, hc_kb_iadd(&kb, m0, hc_kb_i64(&kb, j))) : hc_kb_const(&kb, p->dt, 0);
    hc_loop cl;
    LLVMValueRef c = hc_loop_begin(&kb, &cl, hc_kb_i64(&kb, 0), fw, "init");
    LLVMBuildStore(b, v, acc_at(&e, j, c));
    hc_loop_end(&kb, &cl);
  }

  if (P->nterms > 0 && p->Cg > 0) {
    /* First input channel of the group for image nn. */
    LLVMValueRef c0 =
        hc_kb_iadd(&kb, hc_kb_imul(&kb, nn, hc_kb_i64(&kb, p->C)), hc_kb_imul(&kb, grp, hc_kb_i64(&kb, p->Cg)));
    hc_loop icl;
    LLVMValueRef ic = hc_loop_begin_step(&kb, &icl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, p->Cg), U, "ic");
    LLVMValueRef cin = hc_kb_iadd(&kb, c0, ic);
    /* Local windows: image im of input channel ic+u at (u*nimg + im)*WL
     * holds image positions [fb + smin, fb + fw + smax). */
    for (int u = 0; bl.local && u < U; ++u) {
      LLVMValueRef xplane = hc_kb_imul(&kb, hc_kb_iadd(&kb, cin, hc_kb_i64(&kb, u)), hc_kb_i64(&kb, p->in_plane));
      LLVMValueRef g0 = hc_kb_iadd(&kb, fb, hc_kb_i64(&kb, smin));
      LLVMValueRef g1 = hc_kb_iadd(&kb, hc_kb_iadd(&kb, fb, fw), hc_kb_i64(&kb, smax));
      for (int64_t im = 0; im < f->nimg; ++im) {
        LLVMValueRef r[WIN_MAX_SP];
        image_residues(&kb, f, p->nd, NULL, NULL, hc_kb_i64(&kb, im), r);
        emit_fill(&kb, p, f, X, xplane, r, g0, g1, window, hc_kb_i64(&kb, (u * f->nimg + im) * WL), e.src_dt);
      }
    }
    /* Source index of the block start of input channel ic (image 0, or the
     * local window origin), and W index of tap 0 of (m0+j, ic). */
    LLVMValueRef sbase =
        bl.local ? hc_kb_i64(&kb, -smin) : hc_kb_iadd(&kb, hc_kb_imul(&kb, cin, hc_kb_i64(&kb, chan)), fb);
    LLVMValueRef wch[4];
    for (int j = 0; j < e.MB; ++j) {
      LLVMValueRef m = hc_kb_iadd(&kb, m0, hc_kb_i64(&kb, j)), ch;
      if (!p->transpose) { /* W[m, ic, taps] */
        ch = hc_kb_iadd(&kb, hc_kb_imul(&kb, m, hc_kb_i64(&kb, p->Cg)), ic);
      } else { /* W[grp*Cg + ic, m - grp*Mg, taps] */
        LLVMValueRef ci = hc_kb_iadd(&kb, hc_kb_imul(&kb, grp, hc_kb_i64(&kb, p->Cg)), ic);
        LLVMValueRef mm = LLVMBuildSub(b, m, hc_kb_imul(&kb, grp, hc_kb_i64(&kb, p->Mg)), "");
        ch = hc_kb_iadd(&kb, hc_kb_imul(&kb, ci, hc_kb_i64(&kb, p->Mg)), mm);
      }
      wch[j] = hc_kb_imul(&kb, ch, hc_kb_i64(&kb, p->ktot));
    }
    /* Products (term, u) in groups of gsz: the full groups run in a loop
     * over constant tables (code size independent of the kernel size), the
     * rest is one more group. Table entries are offsets from the W index of
     * tap 0 of input channel ic and from the source index of channel ic. */
    int64_t total = (int64_t)P->nterms * U;
    int64_t ngroups = (total + bl.maxt - 1) / bl.maxt;
    int gsz = (int)((total + ngroups - 1) / ngroups);
    int64_t nfull = total / gsz;
    int rest = (int)(total % gsz);
    int64_t wstride = p->transpose ? p->Mg * p->ktot : p->ktot; /* W index step per input channel */
    int64_t* wrel = malloc(sizeof(int64_t) * (size_t)total * 2);
    if (!wrel) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory lowering %s", n->name);
    int64_t* srel = wrel + total;
    for (int64_t at = 0; at < total; ++at) {
      const flat_term* term = &P->terms[at / U];
      int64_t u = at % U, img = term->src / f->PV, off = term->src % f->PV;
      wrel[at] = u * wstride + term->tap;
      srel[at] = bl.local ? (u * f->nimg + img) * WL + off : u * chan + term->src;
    }
    if (nfull > 0) {
      LLVMValueRef wtab = const_i64_table(&kb, wrel, nfull * gsz, "conv_wrel");
      LLVMValueRef stab = const_i64_table(&kb, srel, nfull * gsz, "conv_srel");
      if (!wtab || !stab) {
        free(wrel);
        return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory lowering %s", n->name);
      }
      hc_loop gl;
      LLVMValueRef g = hc_loop_begin(&kb, &gl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, nfull), "group");
      LLVMValueRef w[4][CONV_MAX_TERMS], base[CONV_MAX_TERMS];
      for (int i = 0; i < gsz; ++i) {
        LLVMValueRef at = hc_kb_iadd(&kb, hc_kb_imul(&kb, g, hc_kb_i64(&kb, gsz)), hc_kb_i64(&kb, i));
        LLVMValueRef wr = LLVMBuildLoad2(b, kb.t_i64, LLVMBuildGEP2(b, kb.t_i64, wtab, &at, 1, ""), "");
        LLVMValueRef sr = LLVMBuildLoad2(b, kb.t_i64, LLVMBuildGEP2(b, kb.t_i64, stab, &at, 1, ""), "");
        for (int j = 0; j < e.MB; ++j) w[j][i] = hc_kb_load(&kb, p->dt, W, hc_kb_iadd(&kb, wch[j], wr));
        base[i] = hc_kb_iadd(&kb, sbase, sr);
      }
      fused_loop(&e, src, fw, gsz, base, w);
      hc_loop_end(&kb, &gl);
    }
    if (rest > 0) {
      LLVMValueRef w[4][CONV_MAX_TERMS], base[CONV_MAX_TERMS];
      for (int i = 0; i < rest; ++i) {
        int64_t at = nfull * gsz + i;
        for (int j = 0; j < e.MB; ++j)
          w[j][i] = hc_kb_load(&kb, p->dt, W, hc_kb_iadd(&kb, wch[j], hc_kb_i64(&kb, wrel[at])));
        base[i] = hc_kb_iadd(&kb, sbase, hc_kb_i64(&kb, srel[at]));
      }
      fused_loop(&e, src, fw, rest, base, w);
    }
    free(wrel);
    hc_loop_end(&kb, &icl);
  }

  emit_store(&e, p, f, P, Y, nn, m0, fb, fw);
  hc_loop_end(&kb, &task);

  double points = (double)p->N * (double)p->M * (double)hc_shape_numel(p->nd, P->T);
  double bytes = (bl.local || !f->repack ? (double)hc_value_nbytes(n->inputs[0])
                                         : (double)(p->N * p->C * chan) * (double)hx_dtype_size(e.src_dt)) +
                 (double)hc_value_nbytes(n->inputs[1]) + points * (double)hx_dtype_size(p->dt);
  hc_kb_end(&kb, 2.0 * points * (double)p->Cg * (double)P->nterms, bytes);
  return HX_OK;
}

static hx_status_t lower_conv_common(hc_lower_ctx* lc, hc_node* n, bool transpose) {
  conv_plan p;
  HX_RETURN_IF_ERROR(conv_setup(n, transpose, &p));
  flat_plan f;
  hx_status_t st = flat_build(n, &p, true, &f);
  if (st == HX_OK && f.repack && !conv_blocks(&p, &f).local && p.N * p.C > 0) st = emit_repack(lc, n, &p, &f);
  for (int phi = 0; st == HX_OK && phi < f.nphase; ++phi)
    if (f.phases[phi].F > 0 && p.N * p.M > 0) st = emit_phase(lc, n, &p, &f, phi);
  flat_free(&f);
  return st;
}

static hx_status_t lower_conv(hc_lower_ctx* lc, hc_node* n) { return lower_conv_common(lc, n, false); }
static hx_status_t lower_conv_transpose(hc_lower_ctx* lc, hc_node* n) { return lower_conv_common(lc, n, true); }

/* Bytes of the padded, phase-split copy of x (0 when the kernels read x or
 * pad per task). */
static uint64_t conv_workspace_common(const hc_node* n, bool transpose) {
  conv_plan p;
  flat_plan f;
  hx_status_t st = conv_setup(n, transpose, &p);
  if (st == HX_OK) st = flat_build(n, &p, false, &f);
  uint64_t bytes = 0;
  if (st == HX_OK && f.repack && !conv_blocks(&p, &f).local)
    bytes = (uint64_t)(p.N * p.C * f.nimg * f.PV) * hx_dtype_size(copy_dtype(p.dt));
  if (st == HX_OK) flat_free(&f);
  hx_status_free(st); /* infer reports the problem */
  return bytes;
}

static uint64_t conv_workspace(const hc_node* n) { return conv_workspace_common(n, false); }
static uint64_t conv_transpose_workspace(const hc_node* n) { return conv_workspace_common(n, true); }

static const char* const k_conv_attrs[] = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides", NULL};
static const char* const k_conv_transpose_attrs[] = {
    "auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides", NULL};

const hc_op_desc hc_op_conv = {"Conv", "", 1, 22, k_conv_attrs, 0, infer_conv, lower_conv, NULL, conv_workspace};
const hc_op_desc hc_op_conv_transpose = {
    "ConvTranspose",         "", 1, 22, k_conv_transpose_attrs, 0, infer_conv_transpose, lower_conv_transpose, NULL,
    conv_transpose_workspace};
