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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/codegen/epilogue.h"
#include "compiler/ops/conv_winograd.h"
#include "compiler/ops/gemm_internal.h"
#include "compiler/ops/gemm_microkernel.h"
#include "compiler/ops/prepack.h"
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
  /* Weights narrowed by passes/precision.c: their storage type (FLOAT16,
   * BFLOAT16, INT8; UNDEFINED = dt) and, for INT8, where the weight
   * constant keeps the per-output-channel scales. */
  hx_dtype_t wt;
  hc_q8_scales wscales;
  int wlayout;     /* HC_PACK_* of the weight's packed copy (HC_PACK_NONE: none) */
  bool prepacking; /* asked by pack-weights, which may still repack the weight */
  int wino_m;      /* tile size of a weight packed as U (HC_PACK_WINOGRAD), else 0 */
  /* Not Winograd, though the shape is a candidate: the pack-weights pass
   * found the target's direct kernel faster (hc_wino_choose_packed) and
   * packed the weights for the channels kernel, whose panels tell the
   * passes after it (HC_PACK_PANELS). */
  bool no_wino;
} conv_plan;

/* Input i as the op sees it: the unpacked original of a pre-packed input. */
static const hc_value* weight_input(const hc_node* n, int i) {
  return n->packed && n->packed->input == i ? n->packed->original : n->inputs[i];
}

/* Checks inputs and attributes shared by Conv and ConvTranspose and fills
 * the dtype, channel counts and kernel sizes. */
static hx_status_t check_conv_inputs(const hc_node* n, bool transpose, conv_plan* p) {
  /* A fused node has extra operands after its own inputs (checked before
   * fusion, when shapes were inferred). */
  if (!n->num_fused) HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 3, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_FLOATS));
  /* A packed weight (panels, or narrowed by the precision pass) is checked
   * through its original. */
  if (!(n->packed && n->packed->input == 1)) HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 1));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 2));
  const hc_value* x = n->inputs[0];
  const hc_value* w = weight_input(n, 1);
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
  hx_dtype_t wt = hc_packed_elem(n, 1);
  if (wt != p->dt && (wt == HX_DTYPE_FLOAT16 || wt == HX_DTYPE_BFLOAT16 || wt == HX_DTYPE_INT8)) {
    p->wt = wt;
    if (wt == HX_DTYPE_INT8) p->wscales = hc_packed_q8_scales(n, 1);
  }
  p->wlayout = n->packed && n->packed->input == 1 ? n->packed->layout : HC_PACK_NONE;
  /* U[xi][oc/16][c][16] has one row per distinct xi (hc_wino_prepack): 36
   * for F(4,3), 16 for F(2,3) of stride 1 or 2. */
  if (p->wlayout == HC_PACK_WINOGRAD) p->wino_m = n->inputs[1]->dims[0] == 36 ? 4 : 2;
  p->no_wino = p->wlayout == HC_PACK_PANELS;
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

/* conv_setup for the questions asked about a node outside its lowering
 * (fast path, prepacking, in-place output): false when the node is
 * malformed, which shape inference reports. */
static bool conv_plan_of(const hc_node* n, bool transpose, conv_plan* p) {
  hx_status_t st = conv_setup(n, transpose, p);
  if (st == HX_OK) return true;
  hx_status_free(st);
  return false;
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
  /* Elements per input channel in the copy: nimg images, padded by a line
   * where their size is a multiple of 256 bytes (flat_build). */
  int64_t CS;
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
  /* float16 x is copied to float32 images even where it could be read in
   * place: the fast kernels read each element once per tile of output
   * channels, and widening it at every read took FMA-port uops (a float16
   * ResNet-50's 1x1 convolutions: ~1.6x the time of float32's). */
  f->repack = !direct || p->dt == HX_DTYPE_FLOAT16;
  /* The kernels read a line from each of many input channels' copies in
   * turn (a channels tile every step): copies a multiple of 256 bytes
   * apart put those lines in a quarter of L1's sets or fewer. A stride-2
   * 1x1 from 32x32 to 16x16 (1 KiB images, 4 sets) ran at 48 GFLOP/s
   * against 59-60 from 30x30 and 34x34; a line of padding spreads them.
   * Without a copy the kernels read x, whose planes are what they are. */
  f->CS = f->nimg * f->PV;
  if (f->repack && f->CS % 64 == 0) f->CS += 16;
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

static LLVMValueRef dw_load(hc_kb* kb, LLVMValueRef X, LLVMValueRef row, int64_t c0, int64_t W, unsigned vl);
static LLVMValueRef dw_cols(hc_kb* kb, LLVMValueRef X, LLVMValueRef row, int64_t ow0, int64_t c, int64_t s, int64_t W,
                            unsigned vl);
static void cf_masked_store(hc_kb* kb, LLVMValueRef ptr, LLVMValueRef idx, LLVMValueRef v, LLVMValueRef mask,
                            unsigned vl);
static LLVMValueRef dw_cols_clean(hc_kb* kb, LLVMValueRef X, LLVMValueRef row, LLVMValueRef ow0, int64_t c, int64_t s,
                                  unsigned vl);

/* Most vectors per image row the vectorised repack unrolls whole (longer
 * rows loop over their inner vectors: PP-OCRv4 det's 640-wide stem, copied
 * element by element before, took 1.2-1.4 ms in three tasks). */
#define REPACK_MAX_CHUNKS 16

/* Whether emit_repack can copy whole image rows as vectors: float32, 1-D
 * or 2-D, a last-dim step of 1 or 2, few images and short rows. */
static bool repack_vectorised(const hc_lower_ctx* lc, const conv_plan* p, const flat_plan* f) {
  if (p->dt != HX_DTYPE_FLOAT32 || p->nd < 1 || p->nd > 2) return false;
  const int L = p->nd - 1;
  unsigned vl = hc_ukr_lanes(lc, HX_DTYPE_FLOAT32);
  if (vl < 4 || vl > 64) return false;
  return (f->step[L] == 1 || f->step[L] == 2) && f->nimg <= 16;
}

/* Whether the image-row chunk from column j0 is a whole vector read with
 * plain loads (dw_cols_clean): every x column it reads (j*step + c) inside
 * [0, W), or any whole chunk of a zero row (!copy). */
static bool repack_chunk_clean(int64_t j0, int64_t c, int64_t step, int64_t VL, int64_t W, unsigned vl, bool copy) {
  if (j0 + (int64_t)vl > VL) return false;
  if (!copy) return true;
  int64_t first = step * j0 + (step == 2 ? c & ~(int64_t)1 : c);
  return first >= 0 && first + step * (int64_t)vl <= W;
}

/* Image rows [lo, hi) of one image: row v of the image at dst[dbase + v*VL],
 * read from x row xrow0 + v*rstride (copy) or zeros (xrow0 NULL). The last
 * dim is copied as whole vectors: constant masks keep the loads inside x's
 * row (zeros outside) and the stores inside the image row. */
static void repack_rows(hc_kb* kb, const conv_plan* p, const flat_plan* f, LLVMValueRef X, LLVMValueRef xrow0,
                        int64_t rstride, int64_t lo, int64_t hi, int64_t c, LLVMValueRef WS, LLVMValueRef dbase,
                        unsigned vl) {
  if (hi <= lo) return;
  const int L = p->nd - 1;
  int64_t VL = f->V[L], W = p->in[L], step = f->step[L];
  LLVMTypeRef vt = hc_ukr_vtype(kb, HX_DTYPE_FLOAT32, vl);
  hc_loop rl;
  LLVMValueRef v = hc_loop_begin(kb, &rl, hc_kb_i64(kb, lo), hc_kb_i64(kb, hi), "prow");
  LLVMValueRef dst = hc_kb_iadd(kb, dbase, hc_kb_imul(kb, v, hc_kb_i64(kb, VL)));
  LLVMValueRef xrow = xrow0 ? hc_kb_iadd(kb, xrow0, hc_kb_imul(kb, v, hc_kb_i64(kb, rstride))) : NULL;
  /* The next row's lines of the copy, for writing: the workspace was last
   * another kernel's, and each row's stores otherwise wait for their lines
   * (ResNet-50's stride-2 copies in 0.93 of the time at one thread, 0.89
   * at two; kbench, 8 rounds, against 1.02-1.04 for its 1x1s). */
  hc_kb_prefetch_write_span(kb, HX_DTYPE_FLOAT32, WS, hc_kb_iadd(kb, dst, hc_kb_i64(kb, VL)), VL, 2);
  /* Rows of more than REPACK_MAX_CHUNKS vectors: the chunks whose columns
   * all lie inside x's row (and all of a zero row's whole chunks) in a
   * run-time loop of plain loads, the others unrolled with their masks.
   * The condition is monotone in the chunk, so the clean ones are one run
   * [k_lo, k_hi). */
  int64_t nch = (VL + vl - 1) / vl, k_lo = nch, k_hi = nch;
  if (nch > REPACK_MAX_CHUNKS) {
    k_lo = 0;
    while (k_lo < nch && !repack_chunk_clean(k_lo * vl, c, step, VL, W, vl, xrow != NULL)) ++k_lo;
    k_hi = k_lo;
    while (k_hi < nch && repack_chunk_clean(k_hi * vl, c, step, VL, W, vl, xrow != NULL)) ++k_hi;
  }
  for (int64_t k = 0; k < nch; ++k) {
    if (k == k_lo && k_hi > k_lo) {
      hc_loop cl;
      LLVMValueRef kk = hc_loop_begin(kb, &cl, hc_kb_i64(kb, k_lo), hc_kb_i64(kb, k_hi), "pchunk");
      LLVMValueRef j0 = hc_kb_imul(kb, kk, hc_kb_i64(kb, vl));
      LLVMValueRef val = xrow ? dw_cols_clean(kb, X, xrow, j0, c, step, vl) : LLVMConstNull(vt);
      hc_ukr_store(kb, HX_DTYPE_FLOAT32, WS, hc_kb_iadd(kb, dst, j0), val, vl, vl);
      hc_loop_end(kb, &cl);
      k = k_hi - 1;
      continue;
    }
    int64_t j0 = k * vl;
    int64_t lanes = VL - j0 < (int64_t)vl ? VL - j0 : (int64_t)vl;
    LLVMValueRef val = xrow ? (step == 1 ? dw_load(kb, X, xrow, j0 + c, W, vl) : dw_cols(kb, X, xrow, j0, c, 2, W, vl))
                            : LLVMConstNull(vt);
    LLVMValueRef at = hc_kb_iadd(kb, dst, hc_kb_i64(kb, j0));
    hc_kb_prefix_store(kb, val, hc_kb_gep(kb, HX_DTYPE_FLOAT32, WS, at), 4, (unsigned)lanes);
  }
  hc_loop_end(kb, &rl);
}

/* emit_repack's task body when repack_vectorised: every image unrolled
 * (its residues are constants), its rows split at compile time into the
 * zero rows above x, the copied rows and the zero rows below. With `which`
 * (a task per image), only image `which` of the plane. */
static void repack_plane_vectorised(hc_kb* kb, const conv_plan* p, const flat_plan* f, LLVMValueRef X,
                                    LLVMValueRef xb, LLVMValueRef wb, unsigned vl, LLVMValueRef which) {
  const int L = p->nd - 1;
  for (int64_t im = 0; im < f->nimg; ++im) {
    hc_if only;
    if (which) hc_if_begin(kb, &only, LLVMBuildICmp(kb->b, LLVMIntEQ, which, hc_kb_i64(kb, im), ""));
    int64_t r[WIN_MAX_SP], rem = im;
    for (int e = p->nd - 1; e >= 0; --e) {
      r[e] = f->res[e][rem % f->nres[e]];
      rem /= f->nres[e];
    }
    LLVMValueRef db = hc_kb_iadd(kb, wb, hc_kb_i64(kb, im * f->PV));
    int64_t c = r[L] - f->margin[L]; /* x column of image column 0 */
    if (p->nd == 1) {
      repack_rows(kb, p, f, X, xb, 0, 0, 1, c, hc_kb_workspace(kb), db, vl);
      if (which) hc_if_end(kb, &only);
      continue;
    }
    /* image row v reads x row v*step + r - margin when inside [0, H) */
    int64_t s0 = f->step[0], a0 = r[0] - f->margin[0], H = p->in[0], V0 = f->V[0];
    int64_t lo = cdiv(-a0, s0), hi = fdiv(H - 1 - a0, s0) + 1;
    if (lo < 0) lo = 0;
    if (lo > V0) lo = V0;
    if (hi > V0) hi = V0;
    if (hi < lo) hi = lo;
    LLVMValueRef WS = hc_kb_workspace(kb);
    LLVMValueRef xrow0 = hc_kb_iadd(kb, xb, hc_kb_i64(kb, a0 * p->in[1]));
    repack_rows(kb, p, f, X, NULL, 0, 0, lo, c, WS, db, vl);
    repack_rows(kb, p, f, X, xrow0, s0 * p->in[1], lo, hi, c, WS, db, vl);
    repack_rows(kb, p, f, X, NULL, 0, hi, V0, c, WS, db, vl);
    if (which) hc_if_end(kb, &only);
  }
}

/* Copies x into the workspace images (zero padding included); one task per
 * (image, channel) plane of x. */
static hx_status_t emit_repack(hc_lower_ctx* lc, const hc_node* n, const conv_plan* p, const flat_plan* f) {
  hc_kb kb;
  /* The vectorised copy takes a task per image of a plane: a stride-2
   * stem's 3 planes were 3 tasks, 2 for one thread and 1 for the other. */
  bool vec = repack_vectorised(lc, p, f);
  int64_t per = vec && f->nimg > 1 ? f->nimg : 1;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "pad", p->N * p->C * per, &kb));
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
  LLVMValueRef plane = per > 1 ? LLVMBuildUDiv(kb.b, t, hc_kb_i64(&kb, per), "") : t;
  LLVMValueRef xb = hc_kb_imul(&kb, plane, hc_kb_i64(&kb, p->in_plane));
  LLVMValueRef wb = hc_kb_imul(&kb, plane, hc_kb_i64(&kb, f->CS));
  if (vec) {
    repack_plane_vectorised(&kb, p, f, X, xb, wb, hc_ukr_lanes(lc, HX_DTYPE_FLOAT32),
                            per > 1 ? LLVMBuildURem(kb.b, t, hc_kb_i64(&kb, per), "") : NULL);
    hc_loop_end(&kb, &task);
    hc_kb_end(&kb, 0,
              (double)hc_value_nbytes(n->inputs[0]) + (double)(p->N * p->C * f->CS) * 4.0);
    return HX_OK;
  }
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
                (double)(p->N * p->C * f->CS) * (double)hx_dtype_size(copy_dtype(p->dt)));
  return HX_OK;
}

/* Emission state of a phase kernel: MB output channels accumulate in acc,
 * MB rows of CBS elements; sources are read as src_dt. */
typedef struct phase_emit {
  const hc_epilogue* epi; /* fused ops (Conv only), NULL = none */
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

/* A constant that tells the output phases of a ConvTranspose apart (their
 * position rho, extent T, tap offsets): read from the kernel's table, so
 * that phases with the same number of taps share one body. An immediate
 * for Conv's single phase. */
static LLVMValueRef phase_const(hc_kb* kb, const conv_plan* p, int64_t x) {
  return p->transpose ? hc_kb_param(kb, x) : hc_kb_i64(kb, x);
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
  LLVMValueRef yo = phase_const(kb, p, P->rho[L]);
  LLVMValueRef rem = row;
  for (int i = L - 1; i >= 0; --i) {
    LLVMValueRef ti = rem;
    if (i > 0) {
      ti = LLVMBuildURem(b, rem, hc_kb_i64(kb, f->V[i]), "");
      rem = LLVMBuildUDiv(b, rem, hc_kb_i64(kb, f->V[i]), "");
      valid = LLVMBuildAnd(b, valid, LLVMBuildICmp(b, LLVMIntULT, ti, phase_const(kb, p, P->T[i]), ""), "");
    }
    LLVMValueRef oi = hc_kb_iadd(kb, hc_kb_imul(kb, ti, hc_kb_i64(kb, so[i])), phase_const(kb, p, P->rho[i]));
    yo = hc_kb_iadd(kb, yo, hc_kb_imul(kb, oi, hc_kb_i64(kb, ys[i])));
  }
  LLVMValueRef c_lo = hc_kb_imax(kb, LLVMBuildSub(b, fb, rs, ""), hc_kb_i64(kb, 0));
  LLVMValueRef c_hi = hc_kb_imin(kb, LLVMBuildSub(b, fe, rs, ""), phase_const(kb, p, P->T[L]));
  c_hi = LLVMBuildSelect(b, valid, c_hi, c_lo, "");
  LLVMValueRef aoff = LLVMBuildSub(b, rs, fb, "");
  for (int j = 0; j < e->MB; ++j) {
    LLVMValueRef plane = hc_kb_iadd(kb, hc_kb_imul(kb, nn, hc_kb_i64(kb, p->M)), hc_kb_iadd(kb, m0, hc_kb_i64(kb, j)));
    LLVMValueRef ybase = hc_kb_iadd(kb, hc_kb_imul(kb, plane, hc_kb_i64(kb, p->out_plane)), yo);
    hc_loop cl;
    LLVMValueRef c = hc_loop_begin(kb, &cl, c_lo, c_hi, "store");
    LLVMValueRef v = LLVMBuildLoad2(b, ct, acc_at(e, j, hc_kb_iadd(kb, aoff, c)), "");
    LLVMValueRef yi = hc_kb_iadd(kb, ybase, so[L] == 1 ? c : hc_kb_imul(kb, c, hc_kb_i64(kb, so[L])));
    if (e->epi && e->epi->count) {
      LLVMValueRef coord[3] = {nn, hc_kb_iadd(kb, m0, hc_kb_i64(kb, j)), hc_kb_iadd(kb, yo, c)};
      v = hc_epilogue_apply(kb, e->epi, v, coord);
    }
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
  int64_t chan = f->CS; /* source elements per input channel */

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
  hc_epilogue epi;
  const int split[2] = {1, 2};
  if (!p->transpose) {
    HX_RETURN_IF_ERROR(hc_epilogue_begin(&kb, n, split, &epi));
    e.epi = &epi;
  }
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
      /* In the kernel's table for ConvTranspose (see phase_const). */
      LLVMValueRef wtab = p->transpose ? hc_kb_param_array(&kb, wrel, nfull * gsz)
                                       : const_i64_table(&kb, wrel, nfull * gsz, "conv_wrel");
      LLVMValueRef stab = p->transpose ? hc_kb_param_array(&kb, srel, nfull * gsz)
                                       : const_i64_table(&kb, srel, nfull * gsz, "conv_srel");
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
          w[j][i] = hc_kb_load(&kb, p->dt, W, hc_kb_iadd(&kb, wch[j], phase_const(&kb, p, wrel[at])));
        base[i] = hc_kb_iadd(&kb, sbase, phase_const(&kb, p, srel[at]));
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

/* ---- fast kernels: float32 Conv through the register-tiled micro-kernel ----
 *
 * Both fast kernels are implicit GEMMs over the flat source images of the
 * general path (x itself, or the workspace images the "pad" kernel writes,
 * so that every tap of every input channel is one contiguous stream at a
 * constant offset from the output's flat index): the reduction runs over
 * the group's input channels (outer loop) and the kernel taps (unrolled
 * terms), and no im2col buffer is ever made.
 *
 *  - "pixels": output channels are the broadcast rows (weights read in
 *    place) and flat output positions the vectors: best for large planes
 *    and few channels (early layers, depthwise with one row, 1x1 over big
 *    images); flat positions that exist only because of the pitch are
 *    computed and dropped when stored.
 *  - "channels": output pixels are the broadcast rows (read from the images)
 *    and output channels the vectors, from weights packed in panels of 16
 *    channels (HC_PACK_PANELS, at compile time or by a "packw" kernel): no
 *    work is wasted on pitch padding or ragged planes, which suits the small
 *    planes (14x14, 7x7) of deep layers with many channels. Tiles are TR
 *    rows x TW columns of output pixels, stored transposed through a stack
 *    tile.
 *
 * Bias seeds the accumulators; fused ops are applied when storing.
 */

enum { CF_NONE = 0, CF_PIXELS = 1, CF_CHANNELS = 2, CF_DEPTHWISE = 3, CF_GEMM = 4, CF_WINOGRAD = 5 };

extern const hc_op_desc hc_op_conv;


/* Which fast kernel a Conv gets, from shapes only (every target and the
 * pack-weights pass agree). */
/* A 1x1 convolution that is a plain product per image (big planes: on
 * small ones the channels kernel wastes nothing on ragged pixel vectors). */
static bool conv_is_gemm(const conv_plan* p) {
  if (p->G != 1) return false;
  for (int i = 0; i < p->nd; ++i)
    if (p->k[i] != 1 || p->s[i] != 1 || p->pb[i] != 0 || p->pe[i] != 0) return false;
  return true;
}

/* A convolution with one output position per image whose kernel covers the
 * whole unpadded input (a Squeeze-and-Excitation block's 1x1 convolutions
 * on pooled 1x1 features, a classifier head written as a k x k convolution
 * over k x k features): y[n][m] = sum_k W[m][k] x[n][k] over k = C * taps,
 * a product of the images (rows) with W transposed (columns: the output
 * channels), whose vectors run along the output channels. As a product of
 * W's rows with one pixel per image it used one lane in 16 (EfficientNet's
 * 48 -> 1152 expansion: 27 us, 3.5 times its 1152 -> 48 reduction). */
static bool conv_is_gemv(const conv_plan* p) {
  if (p->transpose || p->G != 1) return false;
  for (int i = 0; i < p->nd; ++i)
    if (p->out[i] != 1 || p->in[i] != p->k[i] || p->pb[i] != 0 || p->pe[i] != 0) return false;
  return true;
}

/* The Winograd candidate shape of a 2-D float32 (or float16) 3x3 Conv of
 * one group, stride 1 or 2 (false otherwise); hc_wino_choose decides. Weights of
 * the activations' type, or float32 activations with weights the precision
 * pass narrowed: their products build U from the narrowed weights
 * (HC_PACK_WINOGRAD_G, which pack-weights makes from the plain narrowed
 * copy). A narrowed copy still plain at lowering (-O0, -O1: no
 * pack-weights) gets the direct kernels, which read it in place. Stride 2
 * in both dims: float32 activations and weights only (a U that
 * pack-weights transforms, see hc_wino_choose_packed). */
static bool conv_wino_shape(const conv_plan* p, hc_wino_shape* s) {
  if (p->no_wino || p->transpose || (p->dt != HX_DTYPE_FLOAT32 && p->dt != HX_DTYPE_FLOAT16) || p->nd != 2 ||
      p->G != 1)
    return false;
  bool narrowed = p->wt != HX_DTYPE_UNDEFINED && p->wt != HX_DTYPE_FLOAT32;
  if (narrowed && (p->dt != HX_DTYPE_FLOAT32 ||
                   !(p->wlayout == HC_PACK_WINOGRAD_G || (p->wlayout == HC_PACK_PLAIN && p->prepacking))))
    return false;
  int stride = p->s[0];
  if (stride != p->s[1] || (stride != 1 && stride != 2)) return false;
  if (stride == 2 && (p->dt != HX_DTYPE_FLOAT32 || narrowed)) return false;
  for (int i = 0; i < 2; ++i)
    if (p->k[i] != 3 || p->d[i] != 1) return false;
  *s = (hc_wino_shape){.N = p->N, .C = p->C, .M = p->M, .H = p->in[0], .W = p->in[1], .OH = p->out[0],
                       .OW = p->out[1], .pt = p->pb[0], .pl = p->pb[1], .stride = stride, .dt = p->dt};
  s->wt = narrowed ? p->wt : HX_DTYPE_UNDEFINED;
  return true;
}

/* Winograd's tile size for the node (0: not Winograd). */
/* Lanes a Winograd node's blocks of tiles may run in (hc_wino_shape.lanes):
 * two unless the schedule put the node in a parallel group, whose lanes
 * are its own. The memory plan (workspace) and the lowering both ask after
 * the schedule pass, so they agree. */
static int wino_lanes(const hc_node* n) { return n->group ? 1 : 2; }

/* The tile size: the packed U's, which pack-weights chose for the target
 * (hc_wino_choose_packed), or the shape's. */
static int conv_wino_m(const conv_plan* p, hc_wino_shape* s) {
  if (!conv_wino_shape(p, s)) return 0;
  if (p->N * p->M * p->out_plane == 0 || p->Cg == 0) return 0;
  return p->wino_m ? p->wino_m : hc_wino_choose(s);
}

/* Whether a float32 ConvTranspose takes the channels kernel: as for a
 * convolution, many output channels on small (phase) planes, where the
 * pixels kernel pads short flat rows to whole vectors and reads its weights
 * as broadcasts (DCGAN's 512->256 layer on 4x4 inputs: phases of 4x4
 * outputs, 16 useful lanes in 32, ~50 GFLOP/s). Every phase must have a
 * tap (dilation 1 and a kernel at least the stride per dim): the channels
 * kernel has no bias-only tiles. */
static bool convt_channels(const conv_plan* p) {
  if (p->nd > 2 || p->Mg < 32) return false;
  int64_t plane = 1, taps = 1;
  for (int i = 0; i < p->nd; ++i) {
    if (p->d[i] != 1 || p->k[i] < p->s[i]) return false;
    plane *= cdiv(p->out[i], p->s[i]);
    taps *= p->k[i] / p->s[i];
  }
  /* DCGAN: 4x4 phases 2.5x faster, 8x8 1.4x; 16x16 phases ran 1.1x slower
   * than in the pixels kernel, whose flat rows are long enough there. */
  return p->Cg * taps >= 64 && plane <= 64;
}

/* Whether a stride-1 1x1 convolution (conv_is_gemm) on a plane of 128 to
 * 256 pixels runs faster as the GEMM than in the channels kernel, whose
 * range that is otherwise. The GEMM's tiles run along the plane in vectors
 * of pixels and store them as they are; the channels kernel broadcasts
 * pixels from a new input plane every step and transposes each tile to
 * store it. One-layer models, AVX2 (Zen 3), GEMM / channels time, paired
 * rounds of `bench/kernels/ab_kbench.py` (docs/performance.md, stop 32):
 *  - planes of whole 16-pixel vectors: 12x12 0.75-0.90 (K 64-384), 16x16
 *    0.58-0.80 (K 96-1024). At 16x16 each input plane is 1 KiB, so the
 *    128 planes a channels tile reads every step fall into 4 of L1's 64
 *    sets;
 *  - 14x14 expansions of few input channels: K 64, 80, 96 at 0.82, 0.89,
 *    0.95, against 1.06-1.14 from K 112 up; 15x15: 1.00 at K 96, 1.22 at
 *    K 1024.
 * Smaller planes (10x10 1.02, 7x7 1.2-1.7) stay in the channels kernel. */
static bool gemm_beats_channels(const conv_plan* p) {
  if (p->out_plane < 128 || p->out_plane > 256) return false;
  return p->out_plane % 16 == 0 || p->Cg <= 96;
}

static int conv_fast_kind(const conv_plan* p) {
  if ((p->dt != HX_DTYPE_FLOAT32 && p->dt != HX_DTYPE_FLOAT16) || p->nd < 1 || p->nd > 3) return CF_NONE;
  if (p->N * p->M * p->out_plane == 0 || p->Cg == 0) return CF_NONE;
  if (p->dt == HX_DTYPE_FLOAT32 && conv_is_gemv(p)) return CF_GEMM;
  if (p->ktot > HC_UKR_MAX_TERMS) return CF_NONE;
  /* float16 (weights and activations): Winograd or the pixels kernel (for
   * ConvTranspose too, one kernel per phase), accumulating in float32 and
   * rounding each output once, as a float16 Conv's result is; fusion gives
   * them no epilogue (hc_conv_fast), so every later op still rounds its own
   * result. */
  if (p->dt == HX_DTYPE_FLOAT16) {
    hc_wino_shape ws;
    if (p->wt != HX_DTYPE_UNDEFINED) return CF_NONE;
    if (conv_wino_m(p, &ws)) return CF_WINOGRAD;
    /* The channels kernel where float32 takes it (small planes). */
    if (!p->transpose && p->nd <= 2 && p->Mg >= 32 && p->Cg * p->ktot >= 64 &&
        (p->out_plane <= 256 || (p->out_plane <= 784 && !conv_is_gemm(p))))
      return CF_CHANNELS;
    return CF_PIXELS;
  }
  /* ConvTranspose: each output phase is a stride-1 product over the input
   * image with its own taps (flat_build), which the pixels kernel computes
   * like a convolution's, one kernel per phase, or the channels kernel on
   * small phase planes (convt_channels). float32 weights only (the
   * precision pass narrows Conv, Gemm and MatMul weights). */
  if (p->transpose) {
    if (p->wt != HX_DTYPE_UNDEFINED && p->wt != HX_DTYPE_FLOAT32) return CF_NONE;
    return convt_channels(p) ? CF_CHANNELS : CF_PIXELS;
  }
  /* 3-D: the pixels kernel over the flat positions of the volume (the
   * others are 1-D/2-D). */
  if (p->nd == 3) return CF_PIXELS;
  hc_wino_shape ws;
  if (conv_wino_m(p, &ws)) return CF_WINOGRAD;
  if (p->nd == 2 && p->Cg == 1 && p->Mg == 1 && p->s[0] == p->s[1] && (p->s[0] == 1 || p->s[0] == 2) && p->d[0] == 1 &&
      p->d[1] == 1 && p->k[0] <= 7 && p->k[1] <= 7)
    return CF_DEPTHWISE;
  int64_t K = p->Cg * p->ktot;
  /* Up to 28x28 outputs the channels kernel also wins on k x k and strided
   * convolutions (ResNet-50's stride-2 3x3 on 28x28: 12% faster than the
   * pixels kernel); a stride-1 1x1 there is a GEMM (5-8% faster). */
  if (conv_is_gemm(p) && gemm_beats_channels(p)) return CF_GEMM;
  if (p->Mg >= 32 && K >= 64 && (p->out_plane <= 256 || (p->out_plane <= 784 && !conv_is_gemm(p)))) return CF_CHANNELS;
  /* A dilated kernel as wide as half the output rows makes the pixels
   * kernel's flat rows (pitch = output width + (k-1)*d) at least 1.5 times
   * the output: the channels kernel computes only real pixels (DeepLabV3's
   * atrous rates 12 and 24 on 33x33 features: 2.5x less time). */
  int L = p->nd - 1;
  if (p->Mg >= 32 && K >= 64 && p->s[L] == 1 && 2 * (p->k[L] - 1) * p->d[L] >= p->out[L]) return CF_CHANNELS;
  if (conv_is_gemm(p)) return CF_GEMM;
  return CF_PIXELS;
}

/* What both convolution products share: y's type and rank, the bias as C,
 * alpha = beta = 1, epilogue groups split at (s0, s1). */
static void conv_product_common(const hc_node* n, const conv_plan* p, int s0, int s1, hc_mm_desc* d) {
  memset(d, 0, sizeof *d);
  d->dt = p->dt;
  d->c = hc_input(n, 2);
  d->y = n->outputs[0];
  d->alpha = d->beta = 1.0;
  d->out_rank = p->nd + 2;
  d->has_split = true;
  d->split[0] = s0;
  d->split[1] = s1;
}

/* The product X[images][C * taps] x W^T of a conv_is_gemv convolution:
 * B is W read with its rows as columns (pre-packed in panels at -O2), the
 * bias one value per column, Y's rows the images and its columns the
 * output channels (with their 1 x 1 positions). */
static void conv_gemv_desc(const hc_node* n, const conv_plan* p, hc_mm_desc* d) {
  conv_product_common(n, p, 0, 1, d);
  d->a = n->inputs[0];
  d->b = n->inputs[1];
  d->M = p->N;
  d->N = p->M;
  d->K = p->C * p->ktot;
  d->a_sm = d->K;
  d->a_sk = 1;
  d->b_sk = 1;
  d->b_sn = d->K;
  d->batch = 1;
  d->c_sn = 1;
  d->b_packed = hc_packed_is(n, 1, HC_PACK_PANELS);
  d->b_st = p->wt;
  d->b_scales = p->wscales;
}

/* Whether the 1x1 product reads x's planes in place as its B (else it packs
 * them into panels in its workspace first, gemm.c B_WORKSPACE). Planes of
 * whole KiB put every input channel's row in the same few L1 sets, and
 * packing them pays off where many output channels (rows of W) reuse each
 * packed element; with fewer, the copy, a whole extra pass over x, costs
 * more than the conflicts. One-layer 1x1 convolutions with ReLU, 1 thread,
 * read in place / packed (`ab_rounds.py`, 8 rounds, AVX-512, 2 MiB L2):
 *  - up to 96 output channels: 0.59-0.97 (64x64, 96x128, 80x80, 112x112
 *    and batch-3 48x64 planes; 96 from 16 channels on 96x128: 1.03);
 *  - 128 to 512: 1.10-1.26 on 32x32, 64x64, 96x128 and 112x112 planes;
 *    ties (0.99-1.03) on 32x32 from 128 and 512 channels, 96x128 from 64 to
 *    192 and 16x32 from 128 to 512, and 0.94 on 80x80 from 64 to 256.
 * Models, 1 thread: MnasNet at batch 3 (192x256) 0.94 of the time,
 * PP-OCRv4 det 0.97, RAFT-small 0.98; reading in place at every channel
 * count made a U-Net's up-convolution (a 1x1 to 4x its channels) 15% slower.
 * Planes of other sizes are read in place (1x1s on 24x24-28x28 planes:
 * 0.80-0.99 of the time packed). */
static bool gemm_reads_x_in_place(const conv_plan* p) { return (p->in_plane * 4) % 1024 != 0 || p->M < 128; }

/* The product W[M][C] x X[C][pixels] of each image, for a 1x1 convolution
 * without stride, padding or groups (or conv_gemv_desc's for one output
 * position per image). */
static void conv_gemm_desc(const hc_node* n, const conv_plan* p, hc_mm_desc* d) {
  if (conv_is_gemv(p)) {
    conv_gemv_desc(n, p, d);
    return;
  }
  conv_product_common(n, p, 1, 2, d);
  d->a = n->inputs[1];
  d->b = n->inputs[0];
  d->M = p->M;
  d->N = p->out_plane;
  d->K = p->C;
  d->a_sm = p->C;
  d->a_sk = 1;
  d->b_sk = p->in_plane;
  d->b_sn = 1;
  d->batch_rank = 1;
  d->batch_dims[0] = p->N;
  d->b_bs[0] = p->C * p->in_plane;
  d->batch = p->N;
  d->c_sm = 1;
  d->direct_b = gemm_reads_x_in_place(p);
  d->a_st = p->wt;
  d->a_scales = p->wscales;
}

/* Workspace layout of a fast Conv: the images (when x is repacked), then
 * the weight panels (channels kernel without compile-time packing). */
typedef struct cf_layout {
  uint64_t images, panels, total; /* byte offsets / size */
  int64_t pw, npanel, K;          /* panel width, panels per group, reduction */
} cf_layout;

static void cf_workspace_layout(const hc_node* n, const conv_plan* p, const flat_plan* f, int kind, cf_layout* l) {
  memset(l, 0, sizeof *l);
  l->pw = hc_pack_panel_width(p->dt);
  l->npanel = (p->Mg + l->pw - 1) / l->pw;
  l->K = p->Cg * p->ktot;
  uint64_t off = 0;
  if (f->repack && kind != CF_DEPTHWISE) off = (uint64_t)(p->N * p->C * f->CS) * 4u;
  off = (off + 63) / 64 * 64;
  l->panels = off;
  bool packed = hc_packed_is(n, 1, HC_PACK_PANELS);
  if (kind == CF_CHANNELS && !packed)
    off += (uint64_t)(p->G * l->npanel * l->K * l->pw) * (p->wt ? (uint64_t)hx_dtype_size(p->wt) : 4u);
  l->total = off;
}

/* Where reduction element k = ci*taps + tap of output channel m of group g
 * lies in W: [G*Mg][Cg][taps] for a Conv, [G*Cg][Mg][taps] for a
 * ConvTranspose. */
static int64_t weight_index(const conv_plan* p, int64_t g, int64_t m, int64_t k) {
  if (!p->transpose) return (g * p->Mg + m) * p->Cg * p->ktot + k;
  return ((g * p->Cg + k / p->ktot) * p->Mg + m) * p->ktot + k % p->ktot;
}

/* Packs W into [G][ceil(Mg/pw)][Cg*taps][pw] (zeros past Mg). */
static void pack_conv_weights(const float* w, const conv_plan* p, int64_t pw, float* out) {
  int64_t K = p->Cg * p->ktot, np = (p->Mg + pw - 1) / pw;
  for (int64_t g = 0; g < p->G; ++g)
    for (int64_t q = 0; q < np; ++q)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < pw; ++j) {
          int64_t m = q * pw + j;
          out[((g * np + q) * K + k) * pw + j] = m < p->Mg ? w[weight_index(p, g, m, k)] : 0.0f;
        }
}

/* The run-time packing of the weights (when they are not constants, or
 * at -O1): one task per (group, panel). */
static hx_status_t emit_pack_weights(hc_lower_ctx* lc, const hc_node* n, const conv_plan* p, const cf_layout* l) {
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "packw", p->G * l->npanel, &kb));
  LLVMValueRef W = hc_kb_ptr(&kb, n->inputs[1]);
  LLVMValueRef WS = LLVMBuildGEP2(kb.b, kb.t_i8, hc_kb_workspace(&kb), (LLVMValueRef[]){hc_kb_i64(&kb, (int64_t)l->panels)}, 1, "");
  hc_loop task, kl, jl;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef g = LLVMBuildUDiv(kb.b, t, hc_kb_i64(&kb, l->npanel), "");
  LLVMValueRef q = LLVMBuildURem(kb.b, t, hc_kb_i64(&kb, l->npanel), "");
  LLVMValueRef m0 = hc_kb_imul(&kb, q, hc_kb_i64(&kb, l->pw));
  LLVMValueRef width = hc_kb_imin(&kb, hc_kb_i64(&kb, l->pw), LLVMBuildSub(kb.b, hc_kb_i64(&kb, p->Mg), m0, ""));
  LLVMValueRef dbase = hc_kb_imul(&kb, t, hc_kb_i64(&kb, l->K * l->pw));
  LLVMValueRef j = hc_loop_begin(&kb, &jl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, l->pw), "j");
  LLVMValueRef inb = LLVMBuildICmp(kb.b, LLVMIntSLT, j, width, "");
  LLVMValueRef jj = hc_kb_imin(&kb, j, LLVMBuildSub(kb.b, width, hc_kb_i64(&kb, 1), ""));
  LLVMValueRef m = hc_kb_iadd(&kb, m0, jj);
  LLVMValueRef k = hc_loop_begin(&kb, &kl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, l->K), "k");
  /* weight_index() at run time. */
  LLVMValueRef src;
  if (!p->transpose) {
    src = hc_kb_iadd(&kb, hc_kb_imul(&kb, hc_kb_iadd(&kb, hc_kb_imul(&kb, g, hc_kb_i64(&kb, p->Mg)), m), hc_kb_i64(&kb, l->K)), k);
  } else {
    LLVMValueRef ci = LLVMBuildUDiv(kb.b, k, hc_kb_i64(&kb, p->ktot), "");
    LLVMValueRef tap = LLVMBuildURem(kb.b, k, hc_kb_i64(&kb, p->ktot), "");
    LLVMValueRef c = hc_kb_iadd(&kb, hc_kb_imul(&kb, g, hc_kb_i64(&kb, p->Cg)), ci);
    src = hc_kb_iadd(&kb, hc_kb_imul(&kb, hc_kb_iadd(&kb, hc_kb_imul(&kb, c, hc_kb_i64(&kb, p->Mg)), m), hc_kb_i64(&kb, p->ktot)), tap);
  }
  /* Narrowed weights are copied in their own type (exact round trip). */
  hx_dtype_t et = p->wt ? p->wt : p->dt;
  LLVMValueRef v = hc_kb_load(&kb, et, W, src);
  v = LLVMBuildSelect(kb.b, inb, v, hc_kb_const(&kb, et, 0), "");
  hc_kb_store(&kb, et, WS, hc_kb_iadd(&kb, dbase, hc_kb_iadd(&kb, hc_kb_imul(&kb, k, hc_kb_i64(&kb, l->pw)), j)), v);
  hc_loop_end(&kb, &kl);
  hc_loop_end(&kb, &jl);
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, 0, 2.0 * (double)(p->G * l->npanel * l->K * l->pw) * 4.0);
  return HX_OK;
}

/* The type the fast kernels read the weights in: a narrowed copy's, or
 * float16 for a float16 convolution (widened in registers); UNDEFINED for
 * float32. */
static hx_dtype_t conv_weight_st(const conv_plan* p) {
  return p->wt ? p->wt : p->dt == HX_DTYPE_FLOAT16 ? HX_DTYPE_FLOAT16 : HX_DTYPE_UNDEFINED;
}

/* Whether ConvTranspose output phases interleave (a stride above 1): a
 * phase's outputs are then not contiguous in y. */
static bool conv_strided_phases(const conv_plan* p) {
  if (!p->transpose) return false;
  for (int i = 0; i < p->nd; ++i)
    if (p->s[i] != 1) return true;
  return false;
}

/* Kernel-time state shared by both fast kernels. */
typedef struct cf_emit {
  hc_kb* kb;
  const hc_node* n;
  const conv_plan* p;
  const flat_plan* f;
  const flat_phase* P;
  unsigned vl;
  LLVMValueRef X, W, B, Y, src; /* src: images (x or workspace) */
  int64_t chan;                 /* source elements per input channel */
  hc_epilogue epi;
  LLVMValueRef tile;            /* stack tile for stores through memory */
  bool direct;                  /* flat positions are the output's spatial index */
  bool masked_rows;             /* pixels kernel: masked stores of flat vectors (2-D, pitch >= a vector) */
  hc_ukr_scales scales;         /* int8 weights: scale per output channel (.ptr NULL otherwise) */
  bool tile_epilogue;           /* channels kernel: heavy fused ops whose operands are uniform over the
                                   image, applied to the stack tile in a vector loop before the stores */
  bool prefetch_ahead;          /* prefetch the output lines stored next (and the epilogue operands'):
                                   the channels kernel each channel's next line, the pixels kernel
                                   the next flat panel's; Y's own lines when prefetch_y (not in place) */
  bool prefetch_y;
  /* ConvTranspose phases: the phase's residues and its terms' tap and
   * source offsets read from the kernel's table (hc_kb_param), so that
   * phases of one shape share one body; NULL for a convolution. */
  LLVMValueRef rho[WIN_MAX_SP], tap[HC_UKR_MAX_TERMS], tsrc[HC_UKR_MAX_TERMS];
  LLVMValueRef phase_base;      /* weights in HC_PACK_CONVT_PHASES: this phase's first element */
  /* ConvTranspose in the channels kernel with panels packed at compile
   * time: each panel's rows grouped by phase (convt_pack_panels), this
   * phase's from row phase_row0, nterms rows per input channel. */
  bool phase_panels;
  int64_t phase_row0;
} cf_emit;

/* Turns on the output prefetch (cf_emit.prefetch_ahead) for an output
 * larger than L2: a smaller one is still there from the kernel that last
 * wrote those bytes, or will be after the first touch. Y's own lines are
 * left out when Y lies over an epilogue operand (its prefetch fetches
 * them). */
static void cf_prefetch_setup(const hc_lower_ctx* lc, cf_emit* e) {
  if (hc_value_nbytes(e->n->outputs[0]) <= (uint64_t)hc_ukr_l2_bytes(lc)) return;
  e->prefetch_ahead = true;
  e->prefetch_y = !hc_epilogue_output_over_any_operand(e->n);
}

/* Element offset in y of output channel m's plane of image nn. */
static LLVMValueRef cf_y_plane(const cf_emit* e, LLVMValueRef nn, LLVMValueRef m) {
  hc_kb* kb = e->kb;
  return hc_kb_imul(kb, hc_kb_iadd(kb, hc_kb_imul(kb, nn, hc_kb_i64(kb, e->p->M)), m), hc_kb_i64(kb, e->p->out_plane));
}

/* Stores the first `valid` lanes of v at y[idx] in y's type. */
static void cf_store_y(cf_emit* e, LLVMValueRef idx, LLVMValueRef v, unsigned valid) {
  hc_ukr_store_st(e->kb, e->p->dt, e->Y, idx, v, e->vl, valid);
}

/* Stores the outputs c in [lo, hi) of one run: tile[tbase + (toff + c) *
 * tstride] to y position sp = y0 + c * so of channel m (ybase: the
 * channel's plane), through the fused ops (heavy ones with an operand in a
 * pass of their own over the tile: hc_epilogue_heavy_with_operands). */
static void cf_store_run(cf_emit* e, LLVMValueRef nn, LLVMValueRef m, LLVMValueRef ybase, LLVMValueRef lo,
                         LLVMValueRef hi, LLVMValueRef tbase, LLVMValueRef toff, int64_t tstride, LLVMValueRef y0,
                         int64_t so) {
  hc_kb* kb = e->kb;
  LLVMBuilderRef b = kb->b;
  bool split = hc_epilogue_heavy_with_operands(e->n);
  for (int pass = split ? 0 : 1; pass < 2; ++pass) {
    hc_loop cl;
    LLVMValueRef c = hc_loop_begin(kb, &cl, lo, hi, pass ? "st" : "epi");
    LLVMValueRef tc = hc_kb_iadd(kb, toff, c);
    LLVMValueRef ti = hc_kb_iadd(kb, tbase, tstride == 1 ? tc : hc_kb_imul(kb, tc, hc_kb_i64(kb, tstride)));
    LLVMValueRef tp = LLVMBuildGEP2(b, kb->t_f32, e->tile, &ti, 1, "");
    LLVMValueRef v = LLVMBuildLoad2(b, kb->t_f32, tp, "");
    LLVMValueRef sp = hc_kb_iadd(kb, y0, so == 1 ? c : hc_kb_imul(kb, c, hc_kb_i64(kb, so)));
    LLVMValueRef coord[3] = {nn, m, sp};
    if (pass == 0 || !split) v = hc_epilogue_apply(kb, &e->epi, v, coord);
    if (pass == 0)
      LLVMBuildStore(b, v, tp);
    else
      hc_kb_store(kb, e->p->dt, e->Y, hc_kb_iadd(kb, ybase, sp), v);
    hc_loop_end(kb, &cl);
  }
}

/* Stores `count` flat outputs starting at flat position fpos of output
 * channel m (image nn) from tile[tbase + c*tstride], skipping positions past
 * the output's last dim, applying the fused ops. */
static void cf_store_flat(cf_emit* e, LLVMValueRef nn, LLVMValueRef m, LLVMValueRef fpos, int64_t count,
                          LLVMValueRef tbase, int64_t tstride) {
  hc_kb* kb = e->kb;
  const conv_plan* p = e->p;
  const flat_plan* f = e->f;
  LLVMBuilderRef b = kb->b;
  LLVMValueRef ybase = cf_y_plane(e, nn, m);
  int64_t VL = f->V[p->nd - 1];
  if (e->direct) {
    cf_store_run(e, nn, m, ybase, hc_kb_i64(kb, 0), hc_kb_i64(kb, count), tbase, hc_kb_i64(kb, 0), tstride, fpos, 1);
    return;
  }
  /* Rows of pitch VL: the run [max(fpos, rs), min(fpos+count, rs+T)), T the
   * phase's outputs per row (OW for a convolution); in 3-D, rows past the
   * phase's extent in the middle dim are pitch padding and store nothing.
   * A ConvTranspose phase's output t of a dim lands at y position
   * t*stride + rho. */
  const flat_phase* P = e->P;
  int L = p->nd - 1;
  int64_t so = p->transpose ? p->s[L] : 1;
  LLVMValueRef rho = e->rho[L] ? e->rho[L] : hc_kb_i64(kb, P->rho[L]);
  LLVMValueRef fe = hc_kb_iadd(kb, fpos, hc_kb_i64(kb, count));
  LLVMValueRef row_lo = LLVMBuildUDiv(b, fpos, hc_kb_i64(kb, VL), "");
  LLVMValueRef row_hi = hc_kb_iadd(kb, LLVMBuildUDiv(b, LLVMBuildSub(b, fe, hc_kb_i64(kb, 1), ""), hc_kb_i64(kb, VL), ""), hc_kb_i64(kb, 1));
  hc_loop rl;
  LLVMValueRef row = hc_loop_begin(kb, &rl, row_lo, row_hi, "srow");
  LLVMValueRef rs = hc_kb_imul(kb, row, hc_kb_i64(kb, VL));
  LLVMValueRef c_lo = hc_kb_imax(kb, LLVMBuildSub(b, fpos, rs, ""), hc_kb_i64(kb, 0));
  LLVMValueRef c_hi = hc_kb_imin(kb, LLVMBuildSub(b, fe, rs, ""), hc_kb_i64(kb, P->T[L]));
  /* The row's outer coordinates and where its outputs start in y. */
  LLVMValueRef yrow = hc_kb_i64(kb, 0), rem = row, valid = NULL;
  int64_t ystride = p->out[L];
  for (int d = L - 1; d >= 0; --d) {
    LLVMValueRef t = rem;
    if (d > 0) {
      t = LLVMBuildURem(b, rem, hc_kb_i64(kb, f->V[d]), "");
      rem = LLVMBuildUDiv(b, rem, hc_kb_i64(kb, f->V[d]), "");
      LLVMValueRef in = LLVMBuildICmp(b, LLVMIntULT, t, hc_kb_i64(kb, P->T[d]), "");
      valid = valid ? LLVMBuildAnd(b, valid, in, "") : in;
    }
    int64_t sd = p->transpose ? p->s[d] : 1;
    LLVMValueRef rd = e->rho[d] ? e->rho[d] : hc_kb_i64(kb, P->rho[d]);
    LLVMValueRef pos = sd == 1 && !e->rho[d] && P->rho[d] == 0 ? t : hc_kb_iadd(kb, hc_kb_imul(kb, t, hc_kb_i64(kb, sd)), rd);
    yrow = hc_kb_iadd(kb, yrow, hc_kb_imul(kb, pos, hc_kb_i64(kb, ystride)));
    ystride *= p->out[d];
  }
  if (valid) c_hi = LLVMBuildSelect(b, valid, c_hi, c_lo, "");
  LLVMValueRef toff = LLVMBuildSub(b, rs, fpos, "");
  cf_store_run(e, nn, m, ybase, c_lo, c_hi, tbase, toff, tstride, so == 1 ? yrow : hc_kb_iadd(kb, yrow, rho), so);
  hc_loop_end(kb, &rl);
}

/* ---- "pixels": rows = output channels, vectors = flat positions ---- */

typedef struct cf_pix_plan {
  int mr, nv;
  int64_t nr, mc, fc, nmb, nfb, F;
  /* Panels by output row (2-D convolutions whose flat rows are longer than
   * the output's): each row's panels start at the row, the last one
   * `lastw` positions wide when the row is not whole panels, and a task
   * block is rbt rows (nfb blocks). */
  bool rows;
  int64_t ppr, lastw, rbt;
} cf_pix_plan;

/* Cycles per reduction step of a tile with `acc` accumulators and `loads`
 * loads (two FMA and two load ports), at least `floor` (the FMA latency:
 * 4 cycles need 8 chains). */
static double step_cycles(int acc, int loads, double floor) {
  double c = acc / 2.0;
  if (c < floor) c = floor;
  if (loads / 2.0 > c) c = loads / 2.0;
  return c;
}

/* Uops on the FMA ports that widening one narrowed weight broadcast costs
 * (a float16 or int8 broadcast-and-convert about two, a bfloat16 shift and
 * broadcast about one; see gemm_microkernel.c). */
static int widen_cost(hx_dtype_t wt) {
  return wt == HX_DTYPE_BFLOAT16 ? 1 : wt ? 2 : 0;
}

static void plan_pixels(const hc_lower_ctx* lc, const conv_plan* p, const flat_plan* f, const flat_phase* P, unsigned vl,
                        cf_pix_plan* q) {
  int regs = hc_ukr_registers(lc), max_acc = regs == 32 ? 28 : 12;
  q->F = P->F;
  int64_t nvec = (q->F + vl - 1) / vl;
  /* Candidate tiles (channels x vectors); the one with the fewest
   * estimated cycles over the whole output wins (ragged channel tiles and
   * the ragged last panel included). */
  static const int k512[][2] = {{6, 4}, {8, 3}, {12, 2}, {4, 6}, {5, 4}, {7, 3}, {0, 0}};
  static const int k256[][2] = {{6, 2}, {4, 3}, {5, 2}, {3, 4}, {0, 0}};
  /* Narrowed weights (the broadcast rows): wider tiles widen fewer. */
  static const int k512w[][2] = {{4, 6}, {3, 7}, {2, 8}, {4, 5}, {5, 4}, {6, 4}, {0, 0}};
  static const int k256w[][2] = {{4, 3}, {6, 2}, {5, 2}, {3, 3}, {0, 0}};
  hx_dtype_t wst = conv_weight_st(p);
  int wc = widen_cost(wst);
  int mr = 6, nv = regs == 32 ? 4 : 2;
  {
    double best = 1e300;
    for (const int(*c)[2] = wc ? (regs == 32 ? k512w : k256w) : (regs == 32 ? k512 : k256);; ++c) {
      int cm = (*c)[0], cv = (*c)[1];
      if (!cm) {
        /* Few channels: all of them, as many vectors as fit beside their
         * accumulators and a weight broadcast. */
        if (p->Mg >= 6) break;
        cm = (int)p->Mg;
        cv = max_acc / cm > HC_UKR_MAX_NV ? HC_UKR_MAX_NV : max_acc / cm;
        while (cm > 1 && cv > 1 && !hc_ukr_tile_fits(lc, cm, cv)) --cv;
      }
      if (cm > p->Mg) cm = (int)p->Mg;
      if (cv > nvec) cv = (int)nvec;
      /* Candidates that would spill are skipped (AVX2's 3 x 4). The last
       * entry ends the loop whatever it holds, so no `continue` here. */
      bool usable = cm >= 1 && cv >= 1 && cm * cv <= max_acc && (cm == 1 || hc_ukr_tile_fits(lc, cm, cv));
      if (usable) {
        int64_t ft = (q->F + (int64_t)cv * vl - 1) / ((int64_t)cv * vl);
        int lnv = (int)((q->F - (ft - 1) * cv * (int64_t)vl + vl - 1) / vl);
        int rem = (int)(p->Mg % cm);
        double per = 0;
        for (int last = 0; last < 2; ++last) {
          int vv = last ? lnv : cv;
          double x = (double)(p->Mg / cm) * step_cycles(cm * vv + wc * cm, cm + vv, 4.0) +
                     (rem ? step_cycles(rem * vv + wc * rem, rem + vv, 4.0) : 0);
          per += x * (double)(last ? 1 : ft - 1);
        }
        if (per < best) {
          best = per;
          mr = cm;
          nv = cv;
        }
      }
      if (!(*c)[0]) break;
    }
  }
  if (nv > nvec) nv = (int)nvec;
  if (mr > p->Mg) mr = (int)p->Mg;
  if (mr * nv > max_acc) mr = max_acc / nv;
  if (mr < 1) mr = 1;
  q->mr = mr;
  q->nv = nv;
  q->nr = (int64_t)nv * vl;
  int64_t mt = (p->Mg + mr - 1) / mr, ft = (q->F + q->nr - 1) / q->nr;
  int64_t mct = mt < 8 ? mt : 8, fct = ft < 8 ? ft : 8;
  double work = 2.0 * (double)p->N * (double)p->M * (double)q->F * (double)p->Cg * (double)P->nterms;
  int want = work > 4e6 ? 8 : work > 1e6 ? 4 : 1;
  while (p->N * p->G * ((mt + mct - 1) / mct) * ((ft + fct - 1) / fct) < want && (mct > 1 || fct > 1)) {
    if (fct > 1)
      fct = (fct + 1) / 2;
    else
      mct = (mct + 1) / 2;
  }
  /* A panel's channel tiles take turns over the same input vectors, so the
   * weights of all of a block's channels cycle through L1 once per panel:
   * 8 tiles of ResNet-50's 7x7 stem (147 terms) are 28 KB, all of Zen 3's
   * L1, and each panel found them in L2. Blocks whose weights take at most
   * a quarter of L1 (2 tiles, 12 channels there) keep them in L1 beside the
   * panel's input: `r50_conv1` alone 0.96 of the time, the stem in
   * ResNet-50 0.76-0.92 at one thread and 0.88-1.00 at two
   * (docs/performance.md, stop 28). Stems of 3x3 taps (27 terms: 5 KB for
   * 8 tiles) keep their blocks, and so do reductions too long for two
   * tiles' weights to fit (they would only re-read the input more often). */
  int64_t tile_wbytes = (int64_t)mr * p->Cg * P->nterms * (int64_t)hx_dtype_size(wst ? wst : p->dt);
  int64_t l1_quarter = hc_ukr_l1d_bytes(lc) / 4;
  if (2 * tile_wbytes <= l1_quarter)
    while (mct > 2 && mct * tile_wbytes > l1_quarter) mct = (mct + 1) / 2;
  q->mc = mct * mr;
  q->fc = fct * q->nr;
  q->nmb = (p->Mg + q->mc - 1) / q->mc;
  q->nfb = (q->F + q->fc - 1) / q->fc;
  /* Flat panels run on across the row ends (the pitch's extra columns are
   * computed and dropped), so a vector that spans two output rows is
   * stored in two masked parts: 16-22 cycles each on Zen 3 without
   * AVX-512, against a 3x3 stem's 27 FMA steps per tile. With OW + 1
   * positions to a flat row (MobileNetV2's first convolution) almost
   * every row has such a vector; stored whole (wrongly) instead, the
   * kernel took 0.86-0.89 of the time. Panels that start at each row
   * store only whole rows. Rows of at least two panels: a row of one,
   * narrower than the tile, would leave fewer FMA chains than the
   * latency needs. */
  q->rows = false;
  if (!p->transpose && p->nd == 2 && f && f->V[1] > P->T[1] && P->T[1] >= 2 * q->nr) {
    int64_t OH = P->T[0], OW = P->T[1];
    q->rows = true;
    q->ppr = (OW + q->nr - 1) / q->nr;
    q->lastw = OW - (q->ppr - 1) * q->nr;
    q->rbt = fct / q->ppr > 1 ? fct / q->ppr : 1;
    while (q->rbt > 1 && p->N * p->G * q->nmb * ((OH + q->rbt - 1) / q->rbt) < want) q->rbt = (q->rbt + 1) / 2;
    q->nfb = (OH + q->rbt - 1) / q->rbt;
  }
}

/* llvm.masked.store of float vector v at ptr[idx] under a run-time mask. */
static void cf_masked_store(hc_kb* kb, LLVMValueRef ptr, LLVMValueRef idx, LLVMValueRef v, LLVMValueRef mask, unsigned vl) {
  hc_kb_masked_store(kb, v, hc_kb_gep(kb, HX_DTYPE_FLOAT32, ptr, idx), 4, mask);
  (void)vl;
}

/* Prefetches into L2 the output lines that this tile's rows (channels m..)
 * store in the next flat panel (fpos + nr), and those the epilogue's
 * operands read there: a panel sweeps every channel tile before moving
 * on, so each channel plane is visited a line at a time, the products'
 * pattern (gemm.c, prefetch_next_panel_y). A flat position maps to the
 * output through the pitch; one in the pitch padding names a line of the
 * next row, which is harmless. */
static void pix_prefetch_next_panel(cf_emit* e, const cf_pix_plan* q, int rows, LLVMValueRef nn, LLVMValueRef m,
                                    LLVMValueRef fpos) {
  hc_kb* kb = e->kb;
  const conv_plan* p = e->p;
  LLVMValueRef ends[2];
  for (int j = 0; j < 2; ++j) {
    LLVMValueRef f = hc_kb_iadd(kb, fpos, hc_kb_i64(kb, q->nr + (j ? q->nr - 1 : 0)));
    if (!e->direct) {
      int64_t VL = e->f->V[1];
      f = hc_kb_iadd(kb, hc_kb_imul(kb, LLVMBuildUDiv(kb->b, f, hc_kb_i64(kb, VL), ""), hc_kb_i64(kb, p->out[1])),
                     LLVMBuildURem(kb->b, f, hc_kb_i64(kb, VL), ""));
    }
    ends[j] = f;
  }
  for (int i = 0; i < rows; ++i) {
    LLVMValueRef mi = hc_kb_iadd(kb, m, hc_kb_i64(kb, i));
    LLVMValueRef yb = cf_y_plane(e, nn, mi);
    for (int j = 0; j < 2; ++j) {
      if (e->prefetch_y) hc_kb_prefetch(kb, hc_kb_gep(kb, p->dt, e->Y, hc_kb_iadd(kb, yb, ends[j])), 2);
      LLVMValueRef coord[3] = {nn, mi, ends[j]};
      hc_epilogue_prefetch(kb, &e->epi, coord, 2, 2);
    }
  }
}

/* One tile of the pixels kernel: rows output channels from m (global),
 * nv vectors from flat position fpos (lanes valid in the last). */
static void pix_tile(cf_emit* e, const cf_pix_plan* q, int rows, int nv, unsigned lanes, LLVMValueRef nn,
                     LLVMValueRef g, LLVMValueRef m, LLVMValueRef fpos) {
  hc_kb* kb = e->kb;
  const conv_plan* p = e->p;
  unsigned vl = e->vl;
  hc_ukr u;
  memset(&u, 0, sizeof u);
  u.dt = HX_DTYPE_FLOAT32;
  u.mr = rows;
  u.nv = nv;
  u.vl = vl;
  u.last_lanes = lanes;
  u.a = e->W;
  u.a_st = conv_weight_st(p);
  u.b = e->src;
  u.outer = hc_kb_i64(kb, p->Cg);
  if (p->transpose && e->phase_base) {
    /* HC_PACK_CONVT_PHASES: [G][Cg][Mg][nterms] from the phase's base. */
    int64_t nt = e->P->nterms;
    LLVMValueRef mg = LLVMBuildSub(kb->b, m, hc_kb_imul(kb, g, hc_kb_i64(kb, p->Mg)), "");
    u.a_base = hc_kb_iadd(kb, e->phase_base,
                          hc_kb_imul(kb, hc_kb_iadd(kb, hc_kb_imul(kb, g, hc_kb_i64(kb, p->Cg * p->Mg)), mg), hc_kb_i64(kb, nt)));
    u.a_outer = p->Mg * nt;
    for (int i = 0; i < rows; ++i) u.a_row[i] = (int64_t)i * nt;
  } else if (p->transpose) {
    /* W[C][Mg][taps]: input channel g*Cg + c, output channel m = g*Mg + mg. */
    LLVMValueRef mg = LLVMBuildSub(kb->b, m, hc_kb_imul(kb, g, hc_kb_i64(kb, p->Mg)), "");
    u.a_base = hc_kb_imul(kb, hc_kb_iadd(kb, hc_kb_imul(kb, g, hc_kb_i64(kb, p->Cg * p->Mg)), mg), hc_kb_i64(kb, p->ktot));
    u.a_outer = p->Mg * p->ktot;
    for (int i = 0; i < rows; ++i) u.a_row[i] = (int64_t)i * p->ktot;
  } else {
    u.a_base = hc_kb_imul(kb, m, hc_kb_i64(kb, p->Cg * p->ktot));
    u.a_outer = p->ktot;
    for (int i = 0; i < rows; ++i) u.a_row[i] = (int64_t)i * p->Cg * p->ktot;
  }
  LLVMValueRef c0 = hc_kb_iadd(kb, hc_kb_imul(kb, nn, hc_kb_i64(kb, p->C)), hc_kb_imul(kb, g, hc_kb_i64(kb, p->Cg)));
  u.b_base = hc_kb_iadd(kb, hc_kb_imul(kb, c0, hc_kb_i64(kb, e->chan)), fpos);
  u.b_outer = e->chan;
  for (int v = 0; v < nv; ++v) u.b_vec[v] = (int64_t)v * vl;
  for (int t = 0; t < e->P->nterms; ++t) {
    u.a_term[t] = e->phase_base ? t : e->P->terms[t].tap;
    u.b_term[t] = e->P->terms[t].src;
    u.a_term_rt[t] = e->phase_base ? NULL : e->tap[t];
    u.b_term_rt[t] = e->tsrc[t];
  }
  u.nterms = e->P->nterms;
  if (e->prefetch_ahead) pix_prefetch_next_panel(e, q, rows, nn, m, fpos);
  LLVMValueRef acc[HC_UKR_MAX_MR * HC_UKR_MAX_NV] = {0};
  if (e->B && !e->scales.ptr)
    for (int i = 0; i < rows; ++i) {
      LLVMValueRef bs = hc_kb_splat(kb, hc_kb_load(kb, p->dt, e->B, hc_kb_iadd(kb, m, hc_kb_i64(kb, i))), vl);
      for (int v = 0; v < nv; ++v) acc[i * nv + v] = bs;
    }
  hc_ukr_emit(kb, &u, acc);
  if (e->scales.ptr)
    /* int8 weights: sums times the channel's scale, plus the bias. */
    for (int i = 0; i < rows; ++i) {
      LLVMValueRef mi = hc_kb_iadd(kb, m, hc_kb_i64(kb, i));
      LLVMValueRef sc = hc_kb_splat(kb, hc_ukr_load_scales(kb, &e->scales, mi, 1, 1), vl);
      LLVMValueRef bs = e->B ? hc_kb_splat(kb, hc_kb_load(kb, p->dt, e->B, mi), vl) : NULL;
      for (int v = 0; v < nv; ++v)
        acc[i * nv + v] = bs ? hc_kb_fma(kb, HX_DTYPE_FLOAT32, acc[i * nv + v], sc, bs)
                             : LLVMBuildFMul(kb->b, acc[i * nv + v], sc, "");
    }
  int64_t cols = (int64_t)(nv - 1) * vl + lanes;
  if (e->direct && (!e->epi.count || hc_epilogue_light(e->n))) {
    for (int i = 0; i < rows; ++i) {
      LLVMValueRef mi = hc_kb_iadd(kb, m, hc_kb_i64(kb, i));
      LLVMValueRef yb = hc_kb_iadd(kb, cf_y_plane(e, nn, mi), fpos);
      for (int v = 0; v < nv; ++v) {
        LLVMValueRef coord[3] = {nn, mi, hc_kb_iadd(kb, fpos, hc_kb_i64(kb, (int64_t)v * vl))};
        unsigned valid = v == nv - 1 ? lanes : vl;
        LLVMValueRef y = hc_epilogue_apply_vec(kb, &e->epi, acc[i * nv + v], coord, 2, valid);
        cf_store_y(e, hc_kb_iadd(kb, yb, hc_kb_i64(kb, (int64_t)v * vl)), y, valid);
      }
    }
    return;
  }
  if (e->masked_rows) {
    /* Each vector of flat positions spans at most two output rows (the
     * pitch is at least a vector): two masked stores put its valid lanes
     * in place. */
    const flat_plan* f = e->f;
    int64_t V = f->V[1], OW = p->out[1];
    LLVMBuilderRef b = kb->b;
    LLVMTypeRef it = LLVMVectorType(kb->t_i64, vl);
    LLVMValueRef iota_e[64];
    for (unsigned l = 0; l < vl; ++l) iota_e[l] = LLVMConstInt(kb->t_i64, l, 0);
    LLVMValueRef iota = LLVMConstVector(iota_e, vl);
    bool heavy = e->epi.count && !hc_epilogue_light(e->n);
    if (heavy) {
      /* Heavy fused ops (no operands) over the whole tile in a loop the
       * vectoriser handles, then back into the vectors. */
      for (int i = 0; i < rows; ++i)
        for (int v = 0; v < nv; ++v)
          hc_ukr_store(kb, HX_DTYPE_FLOAT32, e->tile, hc_kb_i64(kb, (int64_t)i * q->nr + (int64_t)v * vl), acc[i * nv + v], vl, vl);
      hc_loop el;
      LLVMValueRef x = hc_loop_begin(kb, &el, hc_kb_i64(kb, 0), hc_kb_i64(kb, (int64_t)rows * q->nr), "epi");
      LLVMValueRef ptr = LLVMBuildGEP2(b, kb->t_f32, e->tile, &x, 1, "");
      LLVMValueRef zero = hc_kb_i64(kb, 0);
      LLVMValueRef coord[3] = {zero, zero, zero};
      LLVMBuildStore(b, hc_epilogue_apply(kb, &e->epi, LLVMBuildLoad2(b, kb->t_f32, ptr, ""), coord), ptr);
      hc_loop_end(kb, &el);
      for (int i = 0; i < rows; ++i)
        for (int v = 0; v < nv; ++v)
          acc[i * nv + v] = hc_ukr_load(kb, HX_DTYPE_FLOAT32, e->tile, hc_kb_i64(kb, (int64_t)i * q->nr + (int64_t)v * vl), vl, vl);
    }
    for (int v = 0; v < nv; ++v) {
      unsigned valid = v == nv - 1 ? lanes : vl;
      LLVMValueRef fv = hc_kb_iadd(kb, fpos, hc_kb_i64(kb, (int64_t)v * vl));
      LLVMValueRef r0 = LLVMBuildUDiv(b, fv, hc_kb_i64(kb, V), "");
      LLVMValueRef c0 = LLVMBuildSub(b, fv, hc_kb_imul(kb, r0, hc_kb_i64(kb, V)), "");
      LLVMValueRef col = LLVMBuildAdd(b, hc_kb_splat(kb, c0, vl), iota, "");
      LLVMValueRef inl = LLVMBuildICmp(b, LLVMIntULT, iota, hc_kb_splat(kb, hc_kb_i64(kb, valid), vl), "");
      LLVMValueRef m1 = LLVMBuildAnd(b, inl, LLVMBuildICmp(b, LLVMIntULT, col, hc_kb_splat(kb, hc_kb_i64(kb, OW), vl), ""), "");
      LLVMValueRef c2 = LLVMBuildSub(b, col, hc_kb_splat(kb, hc_kb_i64(kb, V), vl), "");
      LLVMValueRef m2 = LLVMBuildAnd(b, inl, LLVMBuildICmp(b, LLVMIntULT, c2, hc_kb_splat(kb, hc_kb_i64(kb, OW), vl), ""), "");
      (void)it;
      LLVMValueRef o1 = hc_kb_iadd(kb, hc_kb_imul(kb, r0, hc_kb_i64(kb, OW)), c0);
      LLVMValueRef o2 = hc_kb_iadd(kb, o1, hc_kb_i64(kb, OW - V));
      /* Without AVX-512 a masked store takes 16-22 cycles on AMD Zen 3
       * (vmaskmovps): a vector whose valid lanes lie in one output row, as
       * most do in rows of 16 and more, gets plain stores instead
       * (hc_kb_prefix_store). ResNet-50's 7x7 stem stored 12 vectors twice
       * per 6 x 2 tile: about 380 cycles against 880 of FMAs. */
      bool plain = hc_kb_plain_prefix_stores(kb);
      LLVMValueRef in_row[2] = {NULL, NULL}; /* pass 0: plain stores; pass 1: two masked ones */
      if (plain) {
        in_row[0] = LLVMBuildICmp(b, LLVMIntULE, hc_kb_iadd(kb, c0, hc_kb_i64(kb, valid)), hc_kb_i64(kb, OW), "");
        in_row[1] = LLVMBuildNot(b, in_row[0], "");
      }
      for (int pass = plain ? 0 : 1; pass < 2; ++pass) {
        hc_if branch;
        if (plain) hc_if_begin(kb, &branch, in_row[pass]);
        for (int i = 0; i < rows; ++i) {
          LLVMValueRef mi = hc_kb_iadd(kb, m, hc_kb_i64(kb, i));
          LLVMValueRef yb = cf_y_plane(e, nn, mi);
          LLVMValueRef coord[3] = {nn, mi, o1};
          LLVMValueRef y = heavy ? acc[i * nv + v] : hc_epilogue_apply_vec(kb, &e->epi, acc[i * nv + v], coord, 2, vl);
          if (pass == 0) {
            hc_kb_prefix_store(kb, y, hc_kb_gep(kb, HX_DTYPE_FLOAT32, e->Y, hc_kb_iadd(kb, yb, o1)), 4, valid);
          } else {
            cf_masked_store(kb, e->Y, hc_kb_iadd(kb, yb, o1), y, m1, vl);
            cf_masked_store(kb, e->Y, hc_kb_iadd(kb, yb, o2), y, m2, vl);
          }
        }
        if (plain) hc_if_end(kb, &branch);
      }
    }
    return;
  }
  for (int i = 0; i < rows; ++i)
    for (int v = 0; v < nv; ++v)
      hc_ukr_store(kb, HX_DTYPE_FLOAT32, e->tile, hc_kb_i64(kb, (int64_t)i * q->nr + (int64_t)v * vl), acc[i * nv + v], vl, vl);
  for (int i = 0; i < rows; ++i)
    cf_store_flat(e, nn, hc_kb_iadd(kb, m, hc_kb_i64(kb, i)), fpos, cols, hc_kb_i64(kb, (int64_t)i * q->nr), 1);
}

/* All channel tiles of one flat panel in the task's channel block. */
static void pix_panel(cf_emit* e, const cf_pix_plan* q, int nv, unsigned lanes, LLVMValueRef nn, LLVMValueRef g,
                      LLVMValueRef mb, LLVMValueRef fpos) {
  hc_kb* kb = e->kb;
  const conv_plan* p = e->p;
  LLVMValueRef mg0 = hc_kb_imul(kb, mb, hc_kb_i64(kb, q->mc));
  LLVMValueRef m0 = hc_kb_iadd(kb, hc_kb_imul(kb, g, hc_kb_i64(kb, p->Mg)), mg0);
  int64_t last_rows = p->Mg - (q->nmb - 1) * q->mc;
  LLVMValueRef is_last = LLVMBuildICmp(kb->b, LLVMIntEQ, mb, hc_kb_i64(kb, q->nmb - 1), "");
  LLVMValueRef ntiles = LLVMBuildSelect(kb->b, is_last, hc_kb_i64(kb, last_rows / q->mr), hc_kb_i64(kb, q->mc / q->mr), "");
  hc_loop tl;
  LLVMValueRef ti = hc_loop_begin(kb, &tl, hc_kb_i64(kb, 0), ntiles, "mt");
  pix_tile(e, q, q->mr, nv, lanes, nn, g, hc_kb_iadd(kb, m0, hc_kb_imul(kb, ti, hc_kb_i64(kb, q->mr))), fpos);
  hc_loop_end(kb, &tl);
  int rem = (int)(last_rows % q->mr);
  if (rem) {
    hc_if gi;
    hc_if_begin(kb, &gi, is_last);
    pix_tile(e, q, rem, nv, lanes, nn, g, hc_kb_iadd(kb, m0, hc_kb_i64(kb, last_rows - rem)), fpos);
    hc_if_end(kb, &gi);
  }
}

/* npanels whole panels from flat position f0, then (where `has_rem`, or
 * always when it is NULL) one of rem_cols positions after them. */
static void pix_run(cf_emit* e, const cf_pix_plan* q, LLVMValueRef nn, LLVMValueRef g, LLVMValueRef mb, LLVMValueRef f0,
                    LLVMValueRef npanels, int64_t rem_cols, LLVMValueRef has_rem) {
  hc_kb* kb = e->kb;
  hc_loop pl;
  LLVMValueRef pj = hc_loop_begin(kb, &pl, hc_kb_i64(kb, 0), npanels, "fp");
  pix_panel(e, q, q->nv, e->vl, nn, g, mb, hc_kb_iadd(kb, f0, hc_kb_imul(kb, pj, hc_kb_i64(kb, q->nr))));
  hc_loop_end(kb, &pl);
  if (!rem_cols) return;
  int nvr = (int)((rem_cols + e->vl - 1) / e->vl);
  unsigned lanes = (unsigned)(rem_cols - (int64_t)(nvr - 1) * e->vl);
  hc_if gi;
  if (has_rem) hc_if_begin(kb, &gi, has_rem);
  pix_panel(e, q, nvr, lanes, nn, g, mb, hc_kb_iadd(kb, f0, hc_kb_imul(kb, npanels, hc_kb_i64(kb, q->nr))));
  if (has_rem) hc_if_end(kb, &gi);
}

static hx_status_t emit_conv_pixels(hc_lower_ctx* lc, cf_emit* e) {
  const conv_plan* p = e->p;
  hc_kb* kb = e->kb;
  cf_pix_plan q;
  plan_pixels(lc, p, e->f, e->P, e->vl, &q);
  /* Fused ops whose operands do not vary over the plane (scalars such as
   * Clip's bounds; per-channel ones when light) can run on whole vectors
   * whatever row their lanes land in (heavy ones run over a tile of several
   * channels with zero coordinates, so only scalars there). */
  bool plane_uniform = true;
  bool heavy = e->epi.count && !hc_epilogue_light(e->n);
  for (int i = e->n->fused_input_base; e->epi.count && i < e->n->num_inputs; ++i) {
    const int64_t* cf = e->epi.coef[i - e->n->fused_input_base];
    if (e->n->inputs[i] && (cf[2] != 0 || (heavy && (cf[0] != 0 || cf[1] != 0)))) plane_uniform = false;
  }
  e->masked_rows = !e->direct && p->nd == 2 && e->f->V[1] >= (int64_t)e->vl && plane_uniform && !conv_strided_phases(p) &&
                   p->dt == HX_DTYPE_FLOAT32;
  if (!e->direct || e->epi.count) e->tile = hc_kb_alloca(kb, LLVMArrayType2(kb->t_f32, (uint64_t)(q.mr * q.nr)), "tile");
  /* The next panel's lines (1-D and 2-D convolutions; a ConvTranspose
   * phase's outputs interleave). */
  if (!p->transpose && p->nd <= 2 && (e->direct || p->nd == 2) && (q.rows || q.nfb * q.fc > q.nr)) cf_prefetch_setup(lc, e);
  hc_loop task;
  LLVMValueRef t = hc_kb_task_loop_begin(kb, &task);
  LLVMValueRef fb = LLVMBuildURem(kb->b, t, hc_kb_i64(kb, q.nfb), "");
  LLVMValueRef r1 = LLVMBuildUDiv(kb->b, t, hc_kb_i64(kb, q.nfb), "");
  LLVMValueRef mb = LLVMBuildURem(kb->b, r1, hc_kb_i64(kb, q.nmb), "");
  LLVMValueRef r2 = LLVMBuildUDiv(kb->b, r1, hc_kb_i64(kb, q.nmb), "");
  LLVMValueRef g = LLVMBuildURem(kb->b, r2, hc_kb_i64(kb, p->G), "");
  LLVMValueRef nn = LLVMBuildUDiv(kb->b, r2, hc_kb_i64(kb, p->G), "");
  LLVMValueRef flast = LLVMBuildICmp(kb->b, LLVMIntEQ, fb, hc_kb_i64(kb, q.nfb - 1), "");
  if (q.rows) {
    /* Rows [fb*rbt, +rbt) of the output, each its whole panels, then the
     * narrower last one. */
    int64_t OH = e->P->T[0], pitch = e->f->V[1];
    LLVMValueRef row0 = hc_kb_imul(kb, fb, hc_kb_i64(kb, q.rbt));
    LLVMValueRef nrows = LLVMBuildSelect(kb->b, flast, hc_kb_i64(kb, OH - (q.nfb - 1) * q.rbt), hc_kb_i64(kb, q.rbt), "");
    hc_loop rl;
    LLVMValueRef r = hc_loop_begin(kb, &rl, hc_kb_i64(kb, 0), nrows, "row");
    int64_t whole = q.lastw == q.nr ? q.ppr : q.ppr - 1;
    pix_run(e, &q, nn, g, mb, hc_kb_imul(kb, hc_kb_iadd(kb, row0, r), hc_kb_i64(kb, pitch)), hc_kb_i64(kb, whole),
            q.lastw % q.nr, NULL);
    hc_loop_end(kb, &rl);
  } else {
    int64_t last_cols = q.F - (q.nfb - 1) * q.fc;
    LLVMValueRef npan = LLVMBuildSelect(kb->b, flast, hc_kb_i64(kb, last_cols / q.nr), hc_kb_i64(kb, q.fc / q.nr), "");
    pix_run(e, &q, nn, g, mb, hc_kb_imul(kb, fb, hc_kb_i64(kb, q.fc)), npan, last_cols % q.nr, flast);
  }
  hc_loop_end(kb, &task);
  return HX_OK;
}

/* ---- "channels": rows = output pixels, vectors = output channels ---- */

typedef struct cf_ch_plan {
  int nv, tr, tw;    /* tile: tr x tw pixels, nv vectors */
  int64_t nr;        /* channels per tile */
  int64_t OH, OW;    /* output grid (OH = 1 for 1-D) */
  int64_t nrg, ncg;  /* tile rows / columns of the grid */
  int64_t cbw, ncb;  /* channels per task block (multiple of nr), blocks per group */
  int64_t rbt, nrb;  /* tile rows per task block, blocks */
  bool rows_outer;   /* tasks take the channel blocks fastest (else the row blocks) */
  bool slices_outer; /* a task's reduction slices outside its panels (else each panel's slices) */
  int64_t kic, nks;  /* input channels per reduction slice, slices */
  int64_t slot;      /* elements of a tile's partial sums (mr * nr) */
} cf_ch_plan;

/* Pixel tile (tr x tw) for at most mr pixels on an OH x OW grid: whole
 * rows when they fit, else the width in [mr/2, mr] that wastes least on
 * the ragged last tile. */
static void tile_shape(int64_t OH, int64_t OW, int mr, int* tr, int* tw) {
  if (OW <= mr) {
    *tw = (int)OW;
    *tr = mr / (int)OW;
    if (*tr > OH) *tr = (int)OH;
    return;
  }
  int best = mr;
  int64_t best_cost = INT64_MAX;
  for (int w = mr; w >= (mr + 1) / 2 && w >= 1; --w) {
    int64_t cost = (OW + w - 1) / w * mr;
    if (cost < best_cost) {
      best_cost = cost;
      best = w;
    }
  }
  *tw = best;
  *tr = 1;
}

/* The busier thread's share of the work when two threads split the
 * channels kernel's tasks in halves (the runtime gives the first thread the
 * first half): 1 is an even split, 1.5 one thread with three times the
 * other's work. Tasks are `images` repeats of channel blocks (cbt panels of
 * nv vectors, the last block ragged) times row blocks (rbt of nrg tile
 * rows), the row blocks fastest unless rows_outer (emit_conv_channels); a
 * task's work is its vectors of output channels times its tile rows. */
static double two_thread_share(int64_t images, int64_t Mg, unsigned vl, int nv, int64_t nrg, int64_t ct, int64_t cbt,
                               int64_t rbt, bool rows_outer) {
  int64_t ncb = (ct + cbt - 1) / cbt, nrb = (nrg + rbt - 1) / rbt, per_image = ncb * nrb;
  int64_t tasks = images * per_image, first = tasks / 2;
  int64_t last_vec = (Mg - (ncb - 1) * cbt * nv * (int64_t)vl + vl - 1) / vl;
  double w0 = 0, total = 0;
  for (int64_t t = 0; t < tasks; ++t) {
    int64_t i = t % per_image, inner = rows_outer ? ncb : nrb;
    int64_t cb = rows_outer ? i % inner : i / inner, rb = rows_outer ? i / inner : i % inner;
    double w = (double)(cb < ncb - 1 ? cbt * nv : last_vec) * (double)(rb < nrb - 1 ? rbt : nrg - rb * rbt);
    total += w;
    if (t < first) w0 += w;
  }
  if (tasks < 2 || total <= 0) return 1.0;
  double busier = w0 > total - w0 ? w0 : total - w0;
  return busier / (total / 2);
}

/* T: the output (phase) extents the kernel computes (p->out for a Conv). */
static void plan_channels(const hc_lower_ctx* lc, const conv_plan* p, const int64_t* T, unsigned vl, cf_ch_plan* q) {
  int regs = hc_ukr_registers(lc);
  q->OW = T[p->nd - 1];
  q->OH = p->nd == 2 ? T[0] : 1;
  /* Candidate tiles (pixels x vectors) that leave registers for the
   * unrolled taps' loads: LLVM's scheduler overlaps the terms, and a tile
   * that uses every register spills. A kernel of one tap (a 1x1 or a
   * strided 1x1 convolution) has no other term's loads to hoist: its tile
   * may take every register but the weight vectors and the broadcast, and
   * a taller one reads each weight vector from L2 for more pixels (14 x 2
   * on AVX-512: ResNet-50's 7x7 and 14x14 1x1 layers 10-12% faster than
   * 7 x 3, MobileNetV2's 2-10%; ties go to the earlier candidate). */
  static const int k512[][2] = {{7, 3}, {8, 3}, {12, 2}, {6, 4}, {24, 1}};
  static const int k256[][2] = {{5, 2}, {4, 2}, {8, 1}, {10, 1}};
  static const int k512_one[][2] = {{14, 2}, {7, 3}, {8, 3}, {12, 2}, {6, 4}, {24, 1}};
  bool one_tap = p->ktot == 1;
  const int(*cand)[2] = regs == 32 ? (one_tap ? k512_one : k512) : k256;
  int ncand = regs == 32 ? (one_tap ? 6 : 5) : 4;
  int64_t pw = hc_pack_panel_width(p->dt);
  /* In a one-tap AVX2 kernel 8 chains do not reach the FMA throughput: a
   * 4 x 2 tile took 1.37 times as long per FMA as 5 x 2 (Zen 3, a 1024 ->
   * 512 1x1 convolution on 14x14 flattened), so fewer than 10 count 5
   * cycles there. With 3x3 taps unrolled, 4 x 2 stays: on 7x7 its 4 + 3
   * pixel tiles ran 4% faster than 5 + 2 (ResNet-50's layer4 3x3). The
   * AVX-512 candidates (21 or more) keep the plain latency. */
  double floor = regs == 16 && one_tap ? 5.0 : 4.0;
  /* Taps of one kernel row that read neighbouring pixels of one image row
   * (stride-2 phase images hold every other column). */
  int64_t kw = p->k[p->nd - 1], sw = p->s[p->nd - 1], dw = p->d[p->nd - 1];
  int row_taps = (int)(dw == 1 ? (kw + sw - 1) / sw : 1);
  double best = 1e300;
  for (int c = 0; c < ncand; ++c) {
    int mr = cand[c][0], nv = cand[c][1];
    int64_t cvec = (p->Mg + vl - 1) / vl;
    if (nv > cvec) nv = (int)cvec;
    /* A tile's channels must cover whole weight panels or lie in one. */
    int64_t nr = (int64_t)nv * vl;
    if (nr % pw != 0 && pw % nr != 0) continue;
    int tr, tw;
    tile_shape(q->OH, q->OW, mr, &tr, &tw);
    /* Cost of one image: full and ragged tiles x full and ragged panels. */
    int64_t nrg = (q->OH + tr - 1) / tr, ncg = (q->OW + tw - 1) / tw;
    int ltr = (int)(q->OH - (nrg - 1) * tr), ltw = (int)(q->OW - (ncg - 1) * tw);
    int64_t npan = (p->Mg + (int64_t)nv * vl - 1) / ((int64_t)nv * vl);
    int lnv = (int)(((p->Mg - (npan - 1) * nv * (int64_t)vl) + vl - 1) / vl);
    double cost = 0;
    for (int pr = 0; pr < 2; ++pr)
      for (int pc = 0; pc < 2; ++pc)
        for (int pp = 0; pp < 2; ++pp) {
          int64_t cnt = (pr ? 1 : nrg - 1) * (pc ? 1 : ncg - 1) * (pp ? 1 : npan - 1);
          int rr = pr ? ltr : tr, cc = pc ? ltw : tw, vv = pp ? lnv : nv;
          if (cnt > 0) cost += (double)cnt * step_cycles(rr * cc * vv, rr * cc + vv, floor);
        }
    /* With the taps unrolled, LLVM loads the next terms' weight vectors
     * early: on AVX-512 a full tile of more than 25 live registers
     * (accumulators, weight vectors, a broadcast) spills accumulators to
     * the stack in the inner loop (ResNet-50's 14x14 3x3 convolutions ran
     * 25% slower with a spilling 6x4 tile than with a 7x3 one). */
    if (regs == 32 && !one_tap && tr * tw * nv + nv + 1 > 25) cost *= 1.3;
    /* On AVX2 LLVM loads each input pixel once for all the taps of a row
     * that read it and keeps it live across them: a tile whose
     * accumulators, weight vectors and those pixels exceed the 16
     * registers spills in the inner loop. Inception-v3's 1x7 convolutions
     * on 17x17 (5 x 2 tiles: 10 + 2 + 5) ran at 35 GFLOP/s, 2.1 times ORT's
     * time; with 4 x 2 tiles, which the cost model had rated 5% slower,
     * 0.47 of the time (1x5: 0.57). A 10% handicap flips such near ties
     * and keeps 5 x 2 where it is clearly ahead (a 5x5 on 14x14, whose
     * 5 + 5 + 4 tiles were 1.10 times faster than 4 x 2's four). */
    if (regs == 16 && !one_tap && tr * tw * nv + nv + (row_taps < tw ? row_taps : tw) > 16) cost *= 1.1;
    if (cost < best) {
      best = cost;
      q->nv = nv;
      q->tr = tr;
      q->tw = tw;
    }
  }
  q->nr = (int64_t)q->nv * vl;
  q->nrg = (q->OH + q->tr - 1) / q->tr;
  q->ncg = (q->OW + q->tw - 1) / q->tw;
  q->slot = (int64_t)q->tr * q->tw * q->nr;
  /* Reduction slices whose weight panel (kic*taps x nr) stays in cache
   * while every pixel tile of the task sweeps it; partial sums wait in a
   * stack buffer of the task's tiles. A tile step reads a line of weights
   * and one or two lines of input pixels (an input channel's row). A tile of
   * at least 12 FMAs per step (AVX-512's) hides reading them from L2, so its
   * panel takes 128 KiB of L2. A smaller one (every AVX2 tile: 10 FMAs, 5
   * cycles) cannot: on Zen 3, with 32 bytes a cycle from L2, ResNet-50's
   * layer4 1x1 convolutions ran at 53% of the peak. Its slice keeps a
   * quarter of L1 of weights (128 input channels of a 1x1 on AVX2), which
   * leaves L1 room for the input rows the tiles share (docs/performance.md,
   * "On the Zen 3 guest"). Slices of a plane of one tile would only add
   * partial-sum traffic. */
  int tile_fmas = q->tr * q->tw * q->nv;
  bool one_tile = q->nrg * q->ncg == 1; /* no tile shares the panel */
  bool l2_panel = tile_fmas >= 12 || one_tile;
  int64_t panel_bytes = l2_panel ? 131072 : hc_ukr_l1d_bytes(lc) / 4;
  q->kic = panel_bytes / (p->ktot * q->nr * 4);
  /* On small planes the tiles of a task sweep all of a slice's input
   * planes, again for every tile: a slice whose input planes and panel
   * fit a third of L1 keeps them there (7x7: 42 input channels instead
   * of 128; MobileNetV2's 960 -> 320 and 960 -> 160 projections alone
   * in 0.92-0.95 of the time, half of L1 gained less, a sixth lost).
   * Larger planes would need slices too thin to pay for their partial
   * sums (14x14: 12 channels), and keep the panel's rule. */
  int64_t in_l1 = hc_ukr_l1d_bytes(lc) / 3 / ((p->in_plane + p->ktot * q->nr) * 4);
  if (!l2_panel && in_l1 >= 16 && in_l1 < q->kic) q->kic = in_l1;
  if (q->kic < 1) q->kic = 1;
  if (q->kic >= p->Cg) q->kic = p->Cg;
  q->nks = (p->Cg + q->kic - 1) / q->kic;
  int64_t ct = (p->Mg + q->nr - 1) / q->nr;
  int64_t cbt = ct, rbt = q->nrg;
  /* With slices, a task's partial sums must fit the stack. */
  while (q->nks > 1 && rbt > 1 && rbt * q->ncg * q->slot * 4 > 64 * 1024) rbt = (rbt + 1) / 2;
  double work = 2.0 * (double)p->N * (double)p->M * (double)p->out_plane * (double)p->Cg * (double)p->ktot;
  int want = work > 4e6 ? 8 : work > 1e6 ? 4 : 1;
  /* Split channels first (tasks then write whole planes); split pixel rows
   * only at whole cache lines of the output planes, so that two threads
   * never write the same line (unit: tile rows covering 16 floats). */
  int64_t px = (int64_t)q->tr * q->OW, unit = 16;
  while (px % 2 == 0 && unit > 1) {
    px /= 2;
    unit /= 2;
  }
  /* But first two row blocks where whole lines allow and the input is the
   * larger tensor (a projection: 384 -> 64 channels): every channel block
   * reads all of the input, so two threads splitting only channels each
   * read all of it, half of it written by the other core (the previous
   * kernel splits its own way); with rows first each thread reads its
   * half of the rows (the task order takes the channel blocks fastest).
   * An expansion keeps its channel split, which the depthwise convolution
   * after it shares; so does an input up to 4 times the output, where the
   * unequal row blocks (8 + 6 rows of 14) cost more than the reads save
   * (MobileNetV2: 384 -> 64 and 576 -> 96 gain 8-12%, 384 -> 96 lost 10%). */
  q->rows_outer = false;
  if (want > 1 && rbt > unit && p->C * p->in_plane > 4 * p->M * p->out_plane) {
    int64_t half = ((rbt + 1) / 2 + unit - 1) / unit * unit;
    if (half < rbt) {
      rbt = half;
      q->rows_outer = true;
    }
  }
  while (p->N * p->G * ((ct + cbt - 1) / cbt) * ((q->nrg + rbt - 1) / rbt) < want) {
    if (cbt > 1) {
      cbt = (cbt + 1) / 2;
    } else if (rbt > unit) {
      int64_t half = (rbt + 1) / 2;
      rbt = (half + unit - 1) / unit * unit;
      if (rbt >= q->nrg) break;
    } else {
      break;
    }
  }
  /* An odd number of tasks below `want` (the channel blocks ran out, the
   * rows were not split: 5 panels of a 960 -> 160 projection on 7x7) keeps
   * one thread idle for a task in three at two threads; two row blocks
   * make it even, at whole output lines where the rows allow, else at a
   * tile row (a small plane: the two threads then share one line per
   * channel at the boundary). MobileNetV2's 7x7 projections 5 -> 10
   * tasks: 8% faster at two threads. */
  int64_t tasks = p->N * p->G * ((ct + cbt - 1) / cbt) * ((q->nrg + rbt - 1) / rbt);
  if (tasks < want && tasks % 2 == 1 && rbt == q->nrg && q->nrg >= 2) {
    int64_t half = ((rbt + 1) / 2 + unit - 1) / unit * unit;
    rbt = half < rbt ? half : (q->nrg + 1) / 2;
  }
  /* Even halves at two threads. Channel blocks of whole panels leave a
   * ragged last block (3 panels of 48 in two blocks: 96 + 32 channels), and
   * with the row blocks fastest the first thread took every task of the
   * large block: ResNet-50's stride-2 3x3 on 28x28 gave it three times the
   * other's work, and the other waited a fifth of the kernel after
   * stealing what it could (`trace_idle.py`: the first thread last in
   * every run). Smaller channel blocks, or the channel blocks fastest (each
   * thread then takes whole row blocks: half the rows of every channel),
   * where they split the work more evenly. Rows of whole lines in two
   * unequal blocks (8 + 6 rows of 14: ResNet-50's layer3.0 3x3 with 256
   * channels, MobileNetV2's projections, 8/14 of the work on the first
   * thread) split at a tile row instead measured no faster (0.995 against
   * a control of 0.987 at two threads), so they stay. */
  double share = two_thread_share(p->N * p->G, p->Mg, vl, q->nv, q->nrg, ct, cbt, rbt, q->rows_outer);
  if (share > 1.03) {
    int64_t best_cbt = cbt;
    bool best_ro = q->rows_outer;
    /* A projection's rows stay outermost (each thread reads its half of
     * the input rows, see above): only its channel blocks may change. */
    for (int pass = 0; pass < (q->rows_outer ? 1 : 2); ++pass) {
      bool ro = pass == 1 || q->rows_outer;
      for (int64_t c = cbt; c >= 1; --c) {
        double s = two_thread_share(p->N * p->G, p->Mg, vl, q->nv, q->nrg, ct, c, rbt, ro);
        if (s < share - 0.03) {
          share = s;
          best_cbt = c;
          best_ro = ro;
        }
      }
    }
    cbt = best_cbt;
    q->rows_outer = best_ro;
  }
  q->cbw = cbt * q->nr;
  q->ncb = (ct + cbt - 1) / cbt;
  q->rbt = rbt;
  q->nrb = (q->nrg + rbt - 1) / rbt;
  /* A task of several panels and L1 slices sweeps all of its input once per
   * panel, and an input larger than L2 (ResNet-50's 1024 -> 256 1x1 on
   * 14x14: 800 KB, two panels a task) then comes from L3 every time:
   * cachegrind with a 512 KiB last level counted 14 MB of misses a run,
   * the input 16 times over. With the slices outside the panels, each
   * slice's input planes (128 channels of 14x14: 100 KB) serve all of the
   * task's panels from L2 while the partial sums of every panel wait on
   * the stack. Where the plan allows it; emit_conv_channels keeps it for
   * inputs (x, or its copy) over half of L2. AVX-512's L2 slices keep their
   * order (not measured there). */
  q->slices_outer = !l2_panel && q->nks > 1 && cbt > 1 && cbt * rbt * q->ncg * q->slot * 4 <= 64 * 1024;
}

/* Tile context of the channels kernel: the reduction slice and the partial
 * sums buffer. */
typedef struct ch_ctx {
  LLVMValueRef ic0, kcur;        /* slice: first input channel, count */
  LLVMValueRef first, last;      /* i1, NULL when there is one slice */
  LLVMValueRef part;             /* stack buffer of partial sums */
  LLVMValueRef slot;             /* this tile's slot index among the panel's tiles */
  /* Slices outside the panels (cf_ch_plan.slices_outer): the panel's first
   * slot in `part`, whether it is the task's last panel, and the task's
   * first channel (where the next slice's weights start); else NULL. */
  LLVMValueRef slot0, last_panel, c_first;
} ch_ctx;

/* Output pixels ahead of a tile at which ch_store_transposed prefetches
 * each channel's next line: a task sweeps the pixels of its channel panel
 * (16 channels on AVX2) tile by tile, so every channel of the panel, and of
 * a residual read in the epilogue, is a stream of its own. With the input's
 * channel planes, far more streams than the hardware prefetchers follow:
 * the stores and the residual's loads of ResNet-50's 1.6 MB layer2 ends
 * came from L3 or memory, a wait at every new line. 16 floats is the next
 * line, three 5-pixel tiles ahead. */
#define CH_PREFETCH_AHEAD 16

/* Stores a finished tile (acc[i * nv + v]: pixel i, channels v*vl..) to the
 * NCHW output: per tile row and run of up to 8 pixels, the pixel vectors
 * are transposed in registers (within 128-bit lanes: unpack, shuffle, then
 * one two-source shuffle per channel) into one 8-lane vector of pixels per
 * channel, which gets the (light) fused ops and one masked store. Stored
 * element by element through a stack tile instead, the stores took a
 * quarter of an expand convolution's time (reduction of 64-96 channels). */
static void ch_store_transposed(cf_emit* e, LLVMValueRef* acc, int tr, int tw, int nv, unsigned lanes, LLVMValueRef nn,
                                LLVMValueRef mch, LLVMValueRef oh, LLVMValueRef ow) {
  hc_kb* kb = e->kb;
  const conv_plan* p = e->p;
  unsigned vl = e->vl;
  int64_t OW = p->out[p->nd - 1];
  LLVMTypeRef vt = hc_ukr_vtype(kb, HX_DTYPE_FLOAT32, vl);
  int64_t cols = (int64_t)(nv - 1) * vl + lanes;
  int lo[16], hi[16], s44[16], sEE[16];
  for (unsigned L = 0; L < vl / 4; ++L)
    for (int k = 0; k < 4; ++k) {
      int base = 4 * (int)L;
      static const int ul[4] = {0, 0, 1, 1}, uh[4] = {2, 2, 3, 3};
      lo[base + k] = base + ul[k] + (k & 1 ? (int)vl : 0);
      hi[base + k] = base + uh[k] + (k & 1 ? (int)vl : 0);
      s44[base + k] = base + (k & 1) + (k >= 2 ? (int)vl : 0);
      sEE[base + k] = base + 2 + (k & 1) + (k >= 2 ? (int)vl : 0);
    }
  for (int r = 0; r < tr; ++r) {
    LLVMValueRef sp_row = hc_kb_iadd(kb, hc_kb_imul(kb, hc_kb_iadd(kb, oh, hc_kb_i64(kb, r)), hc_kb_i64(kb, OW)), ow);
    for (int w0 = 0; w0 < tw; w0 += 8) {
      int cnt = tw - w0 < 8 ? tw - w0 : 8;
      LLVMValueRef sp = hc_kb_iadd(kb, sp_row, hc_kb_i64(kb, w0));
      for (int v = 0; v < nv; ++v) {
        LLVMValueRef rw[8], t[8], u[8];
        for (int k = 0; k < 8; ++k) rw[k] = k < cnt ? acc[(r * tw + w0 + k) * nv + v] : LLVMGetUndef(vt);
        for (int k = 0; k < 4; ++k) {
          t[2 * k] = hc_kb_shuffle(kb, rw[2 * k], rw[2 * k + 1], lo, vl);
          t[2 * k + 1] = hc_kb_shuffle(kb, rw[2 * k], rw[2 * k + 1], hi, vl);
        }
        for (int h = 0; h < 2; ++h) {
          LLVMValueRef *tt = t + 4 * h, *uu = u + 4 * h;
          uu[0] = hc_kb_shuffle(kb, tt[0], tt[2], s44, vl);
          uu[1] = hc_kb_shuffle(kb, tt[0], tt[2], sEE, vl);
          uu[2] = hc_kb_shuffle(kb, tt[1], tt[3], s44, vl);
          uu[3] = hc_kb_shuffle(kb, tt[1], tt[3], sEE, vl);
        }
        for (unsigned c = 0; c < vl; ++c) {
          int64_t col = (int64_t)v * vl + c;
          if (col >= cols) break;
          unsigned L = c / 4, k = c % 4;
          int idx[8];
          for (int j = 0; j < 4; ++j) {
            idx[j] = (int)(4 * L) + j;
            idx[4 + j] = (int)vl + (int)(4 * L) + j;
          }
          LLVMValueRef y = hc_kb_shuffle(kb, u[k], u[4 + k], idx, 8);
          LLVMValueRef m = hc_kb_iadd(kb, mch, hc_kb_i64(kb, col));
          LLVMValueRef coord[3] = {nn, m, sp};
          if (!e->tile_epilogue) y = hc_epilogue_apply_vec(kb, &e->epi, y, coord, 2, (unsigned)cnt);
          LLVMValueRef ybase = cf_y_plane(e, nn, m);
          hc_ukr_store_st(kb, p->dt, e->Y, hc_kb_iadd(kb, ybase, sp), y, 8, (unsigned)cnt);
          if (e->prefetch_ahead && r == 0 && w0 == 0) {
            LLVMValueRef ahead = hc_kb_iadd(kb, sp, hc_kb_i64(kb, CH_PREFETCH_AHEAD));
            if (e->prefetch_y) hc_kb_prefetch(kb, hc_kb_gep(kb, p->dt, e->Y, hc_kb_iadd(kb, ybase, ahead)), 2);
            LLVMValueRef pc[3] = {nn, m, ahead};
            hc_epilogue_prefetch(kb, &e->epi, pc, 2, 2);
          }
        }
      }
    }
  }
}

/* Taps that read only padding for a whole tile add nothing to it: a
 * dilated convolution on a small image (DeepLabV3's ASPP, rates 12 and 24
 * on 33x33 features) has most of its taps outside the image for most of
 * its tiles. The tile grid is known at compile time, so each tile's taps
 * that touch the image are too: per tile row (a mask of kernel rows) and
 * per tile column (a mask of kernel columns). ch_emit_terms groups the
 * tiles by those masks and emits the reduction once per group, with only
 * the taps that group needs, behind a switch on the tile's group. (A skipped
 * tap would add weight x 0: only a non-finite weight could tell.) */
#define CH_MAX_TAP_DIM 32

/* Bit k of the result: kernel position k of dim `dim` reads inside the
 * input for at least one of the output positions [o0, o0 + n). */
static uint32_t ch_tap_mask(const conv_plan* p, int dim, int64_t o0, int64_t n) {
  uint32_t m = 0;
  for (int64_t k = 0; k < p->k[dim] && k < CH_MAX_TAP_DIM; ++k)
    for (int64_t o = o0; o < o0 + n; ++o) {
      int64_t i = o * p->s[dim] + k * p->d[dim] - p->pb[dim];
      if (i >= 0 && i < p->in[dim]) {
        m |= 1u << k;
        break;
      }
    }
  return m;
}

/* Distinct tap masks one axis can have before ch_emit_terms gives up. */
#define CH_MAX_MASKS (CH_MAX_TAP_DIM + 2)

/* The tap masks of n tiles along dim (-1: a 1-D convolution's absent row
 * axis, every mask 1), tile i covering `span` outputs from (first + i) *
 * step: mask[i], its class cls[i] (index into dist) and the distinct masks
 * dist[]. Returns how many distinct masks, or -1 past CH_MAX_MASKS. */
static int ch_tap_classes(const conv_plan* p, int dim, int64_t first, int64_t n, int64_t step, int64_t span,
                          uint32_t* mask, int64_t* cls, uint32_t* dist) {
  int nd = 0;
  for (int64_t i = 0; i < n; ++i) {
    mask[i] = dim >= 0 ? ch_tap_mask(p, dim, (first + i) * step, span) : 1u;
    int k = 0;
    while (k < nd && dist[k] != mask[i]) ++k;
    if (k == nd) {
      if (nd == CH_MAX_MASKS) return -1;
      dist[nd++] = mask[i];
    }
    cls[i] = k;
  }
  return nd;
}

/* The tile's reduction (hc_ukr_emit of u), with the taps that read only
 * padding left out where that saves at least a tenth of the kernel's
 * products (otherwise every tile takes every tap, as before). tr x tw is
 * the tile; this call serves the tiles of that size at oh, ow. */
static void ch_emit_terms(cf_emit* e, const cf_ch_plan* q, hc_ukr* u, LLVMValueRef* acc, int tr, int tw,
                          LLVMValueRef oh, LLVMValueRef ow) {
  hc_kb* kb = e->kb;
  const conv_plan* p = e->p;
  const flat_phase* P = e->P;
  int nd = p->nd, R = nd - 2 < 0 ? -1 : 0, C = nd - 1;
  if (p->transpose || nd > 2 || p->k[C] > CH_MAX_TAP_DIM || (R >= 0 && p->k[R] > CH_MAX_TAP_DIM)) {
    hc_ukr_emit(kb, u, acc);
    return;
  }
  /* The tile rows and columns this call serves (full or ragged ones). */
  int64_t full_cg = q->OW / q->tw, full_rg = q->OH % q->tr ? q->nrg - 1 : q->nrg;
  int64_t r_lo = tr == q->tr ? 0 : q->nrg - 1, r_hi = tr == q->tr ? full_rg : q->nrg;
  int64_t c_lo = tw == q->tw ? 0 : full_cg, c_hi = tw == q->tw ? full_cg : full_cg + 1;
  if (r_hi <= r_lo || c_hi <= c_lo) {
    hc_ukr_emit(kb, u, acc);
    return;
  }
  int64_t nrow = r_hi - r_lo, ncol = c_hi - c_lo;
  uint32_t* rmask = malloc(sizeof(uint32_t) * (size_t)(nrow + ncol));
  int64_t* rclass = malloc(sizeof(int64_t) * (size_t)(nrow + ncol));
  if (!rmask || !rclass) {
    free(rmask);
    free(rclass);
    hc_ukr_emit(kb, u, acc);
    return;
  }
  uint32_t* cmask = rmask + nrow;
  int64_t* cclass = rclass + nrow;
  /* Distinct masks per axis, and each tile row's / column's class. */
  uint32_t rdist[CH_MAX_MASKS], cdist[CH_MAX_MASKS];
  int nrd = ch_tap_classes(p, R, r_lo, nrow, q->tr, tr, rmask, rclass, rdist);
  int ncd = ch_tap_classes(p, C, c_lo, ncol, q->tw, tw, cmask, cclass, cdist);
  bool ok = nrd > 0 && ncd > 0;
  /* Products saved over the tiles this call serves. */
  int64_t all = 0, kept = 0;
  for (int64_t i = 0; i < nrow && ok; ++i)
    for (int64_t j = 0; j < ncol; ++j)
      for (int t = 0; t < u->nterms; ++t) {
        int64_t tap = P->terms[t].tap, ky = R >= 0 ? tap / p->k[C] : 0, kx = tap % p->k[C];
        ++all;
        kept += (rmask[i] >> ky & 1u) && (cmask[j] >> kx & 1u);
      }
  if (!ok || all == 0 || (all - kept) * 10 < all) {
    free(rmask);
    free(rclass);
    hc_ukr_emit(kb, u, acc);
    return;
  }
  int groups = nrd * ncd, n = u->mr * u->nv;
  LLVMValueRef* ins = malloc(sizeof(LLVMValueRef) * (size_t)(groups * n));
  LLVMBasicBlockRef* from = malloc(sizeof(LLVMBasicBlockRef) * (size_t)groups);
  LLVMValueRef rtab = ins && from ? const_i64_table(kb, rclass, nrow, "ch_tap_rows") : NULL;
  LLVMValueRef ctab = rtab ? const_i64_table(kb, cclass, ncol, "ch_tap_cols") : NULL;
  free(rmask);
  free(rclass);
  if (!ctab) {
    free(ins);
    free(from);
    hc_ukr_emit(kb, u, acc);
    return;
  }
  LLVMBuilderRef b = kb->b;
  LLVMValueRef ri = LLVMBuildSub(b, LLVMBuildUDiv(b, oh, hc_kb_i64(kb, q->tr), ""), hc_kb_i64(kb, r_lo), "");
  LLVMValueRef ci = LLVMBuildSub(b, LLVMBuildUDiv(b, ow, hc_kb_i64(kb, q->tw), ""), hc_kb_i64(kb, c_lo), "");
  LLVMTypeRef rty = LLVMArrayType2(kb->t_i64, (uint64_t)nrow), cty = LLVMArrayType2(kb->t_i64, (uint64_t)ncol);
  LLVMValueRef z = hc_kb_i64(kb, 0);
  LLVMValueRef rc = LLVMBuildLoad2(b, kb->t_i64, LLVMBuildGEP2(b, rty, rtab, (LLVMValueRef[]){z, ri}, 2, ""), "");
  LLVMValueRef cc = LLVMBuildLoad2(b, kb->t_i64, LLVMBuildGEP2(b, cty, ctab, (LLVMValueRef[]){z, ci}, 2, ""), "");
  LLVMValueRef key = hc_kb_iadd(kb, hc_kb_imul(kb, rc, hc_kb_i64(kb, ncd)), cc);
  LLVMTypeRef vt = hc_ukr_vtype(kb, HX_DTYPE_FLOAT32, u->vl);
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(kb->lc->llctx, kb->fn, "taps_done");
  /* Every tile row and column is in the tables, so the key is always a
   * group: group 0 is the switch's default, the others its cases. */
  LLVMBasicBlockRef first = LLVMAppendBasicBlockInContext(kb->lc->llctx, kb->fn, "taps");
  LLVMValueRef sw = LLVMBuildSwitch(b, key, first, (unsigned)(groups - 1));
  int got = 0;
  for (int g = 0; g < groups; ++g) {
    LLVMBasicBlockRef bb = g ? LLVMAppendBasicBlockInContext(kb->lc->llctx, kb->fn, "taps") : first;
    if (g) LLVMAddCase(sw, hc_kb_i64(kb, g), bb);
    LLVMPositionBuilderAtEnd(b, bb);
    hc_ukr v = *u;
    v.nterms = 0;
    for (int t = 0; t < u->nterms; ++t) {
      int64_t tap = P->terms[t].tap, ky = R >= 0 ? tap / p->k[C] : 0, kx = tap % p->k[C];
      if (!((rdist[g / ncd] >> ky & 1u) && (cdist[g % ncd] >> kx & 1u))) continue;
      v.a_term[v.nterms] = u->a_term[t];
      v.b_term[v.nterms] = u->b_term[t];
      v.a_term_rt[v.nterms] = u->a_term_rt[t];
      v.b_term_rt[v.nterms] = u->b_term_rt[t];
      v.nterms++;
    }
    LLVMValueRef a[HC_UKR_MAX_MR * HC_UKR_MAX_NV];
    memcpy(a, acc, sizeof(LLVMValueRef) * (size_t)n);
    if (v.nterms > 0) {
      v.a_prefetch = (32 + v.nterms - 1) / v.nterms;
      if (v.a_prefetch < 4) v.a_prefetch = 4;
      hc_ukr_emit(kb, &v, a);
    }
    for (int i = 0; i < n; ++i) ins[got * n + i] = a[i] ? a[i] : LLVMConstNull(vt);
    from[got++] = LLVMGetInsertBlock(b);
    LLVMBuildBr(b, join);
  }
  LLVMPositionBuilderAtEnd(b, join);
  for (int i = 0; i < n; ++i) {
    LLVMValueRef ph = LLVMBuildPhi(b, vt, "");
    for (int g = 0; g < got; ++g) LLVMAddIncoming(ph, &ins[g * n + i], &from[g], 1);
    acc[i] = ph;
  }
  free(ins);
  free(from);
}

/* One tile: tr x tw output pixels at (oh, ow) x nv channel vectors from
 * group channel c (lanes valid in the last), over one reduction slice. */
static void ch_tile(cf_emit* e, const cf_ch_plan* q, const ch_ctx* x, int tr, int tw, int nv, unsigned lanes,
                    LLVMValueRef nn, LLVMValueRef g, LLVMValueRef c, LLVMValueRef oh, LLVMValueRef ow,
                    LLVMValueRef wpanel) {
  hc_kb* kb = e->kb;
  LLVMBuilderRef b = kb->b;
  const conv_plan* p = e->p;
  const flat_plan* f = e->f;
  unsigned vl = e->vl;
  int64_t pitch = p->nd == 2 ? f->pitch[0] : 0;
  hc_ukr u;
  memset(&u, 0, sizeof u);
  u.dt = HX_DTYPE_FLOAT32;
  u.mr = tr * tw;
  u.nv = nv;
  u.vl = vl;
  u.last_lanes = vl; /* weight panels are zero-padded */
  u.a = e->src;
  u.b = e->W;
  u.b_st = conv_weight_st(p);
  u.outer = x->kcur;
  LLVMValueRef c0 = hc_kb_iadd(kb, hc_kb_imul(kb, nn, hc_kb_i64(kb, p->C)),
                               hc_kb_iadd(kb, hc_kb_imul(kb, g, hc_kb_i64(kb, p->Cg)), x->ic0));
  LLVMValueRef fpos = hc_kb_iadd(kb, hc_kb_imul(kb, oh, hc_kb_i64(kb, pitch)), ow);
  u.a_base = hc_kb_iadd(kb, hc_kb_imul(kb, c0, hc_kb_i64(kb, e->chan)), fpos);
  u.a_outer = e->chan;
  for (int i = 0; i < u.mr; ++i) u.a_row[i] = (int64_t)(i / tw) * pitch + i % tw;
  int64_t pw = hc_pack_panel_width(p->dt), K = p->Cg * p->ktot;
  /* Panel c/pw of group g, row ic0*ktot; per input channel ktot rows (a
   * ConvTranspose's panels packed by phase: from the phase's first row,
   * nterms rows per input channel, the phase's taps in order). */
  LLVMValueRef prow = hc_kb_imul(kb, hc_kb_iadd(kb, wpanel, LLVMBuildUDiv(b, c, hc_kb_i64(kb, pw), "")), hc_kb_i64(kb, K * pw));
  if (q->nr < pw) prow = hc_kb_iadd(kb, prow, LLVMBuildURem(b, c, hc_kb_i64(kb, pw), "")); /* a tile inside a panel */
  int64_t ci_rows = e->phase_panels ? e->P->nterms : p->ktot;
  if (e->phase_panels) prow = hc_kb_iadd(kb, prow, hc_kb_i64(kb, e->phase_row0 * pw));
  u.b_base = hc_kb_iadd(kb, prow, hc_kb_imul(kb, x->ic0, hc_kb_i64(kb, ci_rows * pw)));
  u.b_outer = ci_rows * pw;
  /* Prefetch, shared out among the task's tiles, of the weights that the
   * tiles read after this chunk: the next slice of the same panels, or
   * after the last slice the next panel group's first one (the packed
   * weights are read in memory order). Without it the first tile of each
   * chunk waited for the weights from memory, then the others read them
   * from L2: ResNet-50's layer4 (60 MB of weights at batch 1) 23-27%
   * faster; into L2 (locality 2) measured 2.5% better than locality 1
   * on the whole model. A prefetch takes a load slot: with fewer than 8
   * pixel broadcasts per step (AVX2's 5 x 2 tiles of a 1x1) it is kept
   * for weights that cannot still be in L2 from the last run
   * (hc_ukr_weights_cold): larger than L2 (ResNet-50's 1 MB layer3 1x1s
   * were 5% slower with it on Zen 5, 1 MiB of L2, its 4-9 MB layer4 ones
   * 1-12% faster; on Zen 3, 512 KiB, the 1 MB ones 3-12% faster), or
   * smaller but in a model whose weights are not: MobileNetV2's 98-369 KB
   * 1x1s on 14x14 and 7x7 in 0.93-0.96 of the time, 0.77 for the 576 ->
   * 160 projection (docs/performance.md, stop 27). A one-layer model keeps
   * its weights in L2 and the prefetch out. */
  int64_t wbytes = p->G * ((p->Mg + pw - 1) / pw) * K * pw * (int64_t)hx_dtype_size(u.b_st ? u.b_st : p->dt);
  if (!e->phase_panels && q->nr >= pw && (u.mr * e->P->nterms >= 8 || hc_ukr_weights_cold(kb->lc, wbytes))) {
    LLVMValueRef next_slice = hc_kb_iadd(kb, u.b_base, hc_kb_imul(kb, x->kcur, hc_kb_i64(kb, ci_rows * pw)));
    LLVMValueRef cn = hc_kb_iadd(kb, c, hc_kb_i64(kb, q->nr));
    LLVMValueRef next_group =
        hc_kb_imul(kb, hc_kb_iadd(kb, wpanel, LLVMBuildUDiv(b, cn, hc_kb_i64(kb, pw), "")), hc_kb_i64(kb, K * pw));
    u.pf_next = x->last ? LLVMBuildSelect(b, x->last, next_group, next_slice, "") : next_group;
    if (x->slot0) {
      /* Slices outside the panels: the next panel's chunk of this slice,
       * after the task's last panel the next slice's first one, after the
       * last slice the next panel group's first slice. */
      LLVMValueRef next_panel = hc_kb_iadd(kb, next_group, hc_kb_imul(kb, x->ic0, hc_kb_i64(kb, ci_rows * pw)));
      LLVMValueRef first = hc_kb_imul(kb, hc_kb_iadd(kb, wpanel, LLVMBuildUDiv(b, x->c_first, hc_kb_i64(kb, pw), "")),
                                      hc_kb_i64(kb, K * pw));
      LLVMValueRef first_next_slice =
          hc_kb_iadd(kb, first, hc_kb_imul(kb, hc_kb_iadd(kb, x->ic0, x->kcur), hc_kb_i64(kb, ci_rows * pw)));
      LLVMValueRef after_last = LLVMBuildSelect(b, x->last, next_group, first_next_slice, "");
      u.pf_next = LLVMBuildSelect(b, x->last_panel, after_last, next_panel, "");
    }
    u.pf_locality = 2;
    u.pf_ord = x->slot;
    u.pf_ntiles = q->rbt * q->ncg;
    u.pf_max_outer = q->kic;
  }

  for (int v = 0; v < nv; ++v) {
    int64_t col = (int64_t)v * vl;
    u.b_vec[v] = col / pw * K * pw + col % pw;
  }
  for (int t = 0; t < e->P->nterms; ++t) {
    u.a_term[t] = e->P->terms[t].src;
    u.b_term[t] = (e->phase_panels ? t : e->P->terms[t].tap) * pw;
  }
  u.nterms = e->P->nterms;
  /* The pixels' lines of input channel o + d, about 32 unrolled terms
   * ahead: each step reads a line or two per tap row from another channel
   * plane, a stride the hardware prefetchers do not follow, and at two
   * threads half of them sit in the other core's cache (the previous
   * kernel wrote them): MobileNetV2's 14x14 project convolutions ran no
   * faster at two threads than at one without this. */
  u.a_prefetch = (32 + u.nterms - 1) / u.nterms;
  if (u.a_prefetch < 4) u.a_prefetch = 4;
  u.a_prefetch_hint = 3;
  int n = u.mr * nv;
  LLVMValueRef acc[HC_UKR_MAX_MR * HC_UKR_MAX_NV] = {0};
  LLVMValueRef mch = hc_kb_iadd(kb, hc_kb_imul(kb, g, hc_kb_i64(kb, p->Mg)), c);
  LLVMValueRef pslot =
      x->part ? hc_kb_imul(kb, x->slot0 ? hc_kb_iadd(kb, x->slot0, x->slot) : x->slot, hc_kb_i64(kb, q->slot)) : NULL;
  LLVMTypeRef vt = hc_ukr_vtype(kb, HX_DTYPE_FLOAT32, vl);
  /* Initial sums: the bias on the first slice, the parked partial sums on
   * the others. */
  LLVMValueRef init[HC_UKR_MAX_MR * HC_UKR_MAX_NV];
  LLVMValueRef bias[HC_UKR_MAX_NV];
  for (int v = 0; v < nv; ++v) {
    /* The bias in y's type (float16 widened). */
    LLVMValueRef bv = e->B ? hc_ukr_load_st(kb, p->dt, e->B, hc_kb_iadd(kb, mch, hc_kb_i64(kb, (int64_t)v * vl)), vl,
                                            v == nv - 1 ? lanes : vl)
                           : LLVMConstNull(vt);
    /* int8 weights: the sums start at zero; scale and bias come at the end. */
    bias[v] = bv;
    if (e->scales.ptr) bv = LLVMConstNull(vt);
    for (int i = 0; i < u.mr; ++i) init[i * nv + v] = bv;
  }
  if (x->first) {
    LLVMBasicBlockRef from = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef ld = LLVMAppendBasicBlockInContext(kb->lc->llctx, kb->fn, "partial_in");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(kb->lc->llctx, kb->fn, "acc_init");
    LLVMBuildCondBr(b, x->first, join, ld);
    LLVMPositionBuilderAtEnd(b, ld);
    LLVMValueRef parked[HC_UKR_MAX_MR * HC_UKR_MAX_NV];
    for (int i = 0; i < u.mr; ++i)
      for (int v = 0; v < nv; ++v)
        parked[i * nv + v] = hc_ukr_load(kb, HX_DTYPE_FLOAT32, x->part,
                                         hc_kb_iadd(kb, pslot, hc_kb_i64(kb, (int64_t)i * q->nr + (int64_t)v * vl)), vl, vl);
    LLVMBasicBlockRef ldend = LLVMGetInsertBlock(b);
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, join);
    for (int i = 0; i < n; ++i) {
      LLVMValueRef ph = LLVMBuildPhi(b, vt, "");
      LLVMValueRef in[2] = {init[i], parked[i]};
      LLVMBasicBlockRef bb[2] = {from, ldend};
      LLVMAddIncoming(ph, in, bb, 2);
      acc[i] = ph;
    }
  } else {
    for (int i = 0; i < n; ++i) acc[i] = init[i];
  }
  ch_emit_terms(e, q, &u, acc, tr, tw, oh, ow);
  LLVMBasicBlockRef done = NULL;
  if (x->last) {
    /* Not the last slice: park the sums and go on. */
    LLVMBasicBlockRef park = LLVMAppendBasicBlockInContext(kb->lc->llctx, kb->fn, "park");
    LLVMBasicBlockRef fin = LLVMAppendBasicBlockInContext(kb->lc->llctx, kb->fn, "finish");
    done = LLVMAppendBasicBlockInContext(kb->lc->llctx, kb->fn, "tile_done");
    LLVMBuildCondBr(b, x->last, fin, park);
    LLVMPositionBuilderAtEnd(b, park);
    for (int i = 0; i < u.mr; ++i)
      for (int v = 0; v < nv; ++v)
        hc_ukr_store(kb, HX_DTYPE_FLOAT32, x->part, hc_kb_iadd(kb, pslot, hc_kb_i64(kb, (int64_t)i * q->nr + (int64_t)v * vl)),
                     acc[i * nv + v], vl, vl);
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, fin);
  }
  int64_t nr = q->nr;
  if (e->scales.ptr)
    for (int v = 0; v < nv; ++v) {
      LLVMValueRef sc = hc_ukr_load_scales(kb, &e->scales, hc_kb_iadd(kb, mch, hc_kb_i64(kb, (int64_t)v * vl)), vl,
                                              v == nv - 1 ? lanes : vl);
      for (int i = 0; i < u.mr; ++i)
        acc[i * nv + v] = hc_kb_fma(kb, HX_DTYPE_FLOAT32, acc[i * nv + v], sc, bias[v]);
    }
  if (e->tile_epilogue) {
    /* Heavy fused ops (SiLU, Sigmoid, GELU...) over the whole tile in a
     * loop the vectoriser handles (lanes past the last channel included:
     * harmless), then the plain transposed stores. */
    for (int i = 0; i < u.mr; ++i)
      for (int v = 0; v < nv; ++v)
        hc_ukr_store(kb, HX_DTYPE_FLOAT32, e->tile, hc_kb_i64(kb, (int64_t)i * nr + (int64_t)v * vl), acc[i * nv + v], vl, vl);
    hc_loop el;
    LLVMValueRef l = hc_loop_begin(kb, &el, hc_kb_i64(kb, 0), hc_kb_i64(kb, (int64_t)u.mr * nr), "epi");
    LLVMValueRef ptr = LLVMBuildGEP2(b, kb->t_f32, e->tile, &l, 1, "");
    LLVMValueRef coord[3] = {nn, hc_kb_i64(kb, 0), hc_kb_i64(kb, 0)};
    LLVMBuildStore(b, hc_epilogue_apply(kb, &e->epi, LLVMBuildLoad2(b, kb->t_f32, ptr, ""), coord), ptr);
    hc_loop_end(kb, &el);
    for (int i = 0; i < u.mr; ++i)
      for (int v = 0; v < nv; ++v)
        acc[i * nv + v] = hc_ukr_load(kb, HX_DTYPE_FLOAT32, e->tile, hc_kb_i64(kb, (int64_t)i * nr + (int64_t)v * vl), vl, vl);
  }
  bool strided = conv_strided_phases(p);
  if ((vl == 8 || vl == 16) && !strided && (!e->epi.count || e->tile_epilogue || hc_epilogue_light(e->n))) {
    ch_store_transposed(e, acc, tr, tw, nv, lanes, nn, mch, oh, ow);
    if (done) {
      LLVMBuildBr(b, done);
      LLVMPositionBuilderAtEnd(b, done);
    }
    return;
  }
  for (int i = 0; i < u.mr; ++i)
    for (int v = 0; v < nv; ++v)
      hc_ukr_store(kb, HX_DTYPE_FLOAT32, e->tile, hc_kb_i64(kb, (int64_t)i * nr + (int64_t)v * vl), acc[i * nv + v], vl, vl);
  /* Transposed store: per channel, tr runs of tw contiguous pixels. */
  int64_t cols = (int64_t)(nv - 1) * vl + lanes;
  hc_loop cl, rl, wl;
  LLVMValueRef j = hc_loop_begin(kb, &cl, hc_kb_i64(kb, 0), hc_kb_i64(kb, cols), "ch");
  LLVMValueRef m = hc_kb_iadd(kb, mch, j);
  LLVMValueRef ybase = cf_y_plane(e, nn, m);
  LLVMValueRef r = hc_loop_begin(kb, &rl, hc_kb_i64(kb, 0), hc_kb_i64(kb, tr), "tr");
  LLVMValueRef sp_row = hc_kb_iadd(kb, hc_kb_imul(kb, hc_kb_iadd(kb, oh, r), hc_kb_i64(kb, q->OW)), ow);
  LLVMValueRef trow = hc_kb_iadd(kb, hc_kb_imul(kb, r, hc_kb_i64(kb, (int64_t)tw * nr)), j);
  LLVMValueRef w = hc_loop_begin(kb, &wl, hc_kb_i64(kb, 0), hc_kb_i64(kb, tw), "tw");
  LLVMValueRef ti = hc_kb_iadd(kb, trow, hc_kb_imul(kb, w, hc_kb_i64(kb, nr)));
  LLVMValueRef val = LLVMBuildLoad2(b, kb->t_f32, LLVMBuildGEP2(b, kb->t_f32, e->tile, &ti, 1, ""), "");
  LLVMValueRef sp = hc_kb_iadd(kb, sp_row, w);
  if (strided) {
    /* ConvTranspose phase output (t0, t1) lands at y (t0*s0 + rho0, t1*s1 + rho1). */
    int L = p->nd - 1;
    sp = hc_kb_iadd(kb, hc_kb_imul(kb, hc_kb_iadd(kb, ow, w), hc_kb_i64(kb, p->s[L])), e->rho[L]);
    if (p->nd == 2) {
      LLVMValueRef row = hc_kb_iadd(kb, hc_kb_imul(kb, hc_kb_iadd(kb, oh, r), hc_kb_i64(kb, p->s[0])), e->rho[0]);
      sp = hc_kb_iadd(kb, hc_kb_imul(kb, row, hc_kb_i64(kb, p->out[1])), sp);
    }
  }
  LLVMValueRef coord[3] = {nn, m, sp};
  val = hc_epilogue_apply(kb, &e->epi, val, coord);
  hc_kb_store(kb, p->dt, e->Y, hc_kb_iadd(kb, ybase, sp), val);
  hc_loop_end(kb, &wl);
  hc_loop_end(kb, &rl);
  hc_loop_end(kb, &cl);
  if (done) {
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
  }
}

/* Every pixel tile of tile rows [r0, r0 + rbt) for one channel panel and
 * one reduction slice. */
static void ch_rows(cf_emit* e, const cf_ch_plan* q, const ch_ctx* x0, int nv, unsigned lanes, LLVMValueRef nn,
                    LLVMValueRef g, LLVMValueRef c, LLVMValueRef rb, LLVMValueRef wpanel) {
  hc_kb* kb = e->kb;
  LLVMValueRef r0 = hc_kb_imul(kb, rb, hc_kb_i64(kb, q->rbt));
  LLVMValueRef r1 = hc_kb_imin(kb, hc_kb_iadd(kb, r0, hc_kb_i64(kb, q->rbt)), hc_kb_i64(kb, q->nrg));
  int last_tr = (int)(q->OH - (q->nrg - 1) * q->tr);
  int64_t full_cg = q->OW / q->tw;
  int last_tw = (int)(q->OW % q->tw);
  ch_ctx x = *x0;
  hc_loop rl;
  LLVMValueRef tri = hc_loop_begin(kb, &rl, r0, r1, "trow");
  LLVMValueRef oh = hc_kb_imul(kb, tri, hc_kb_i64(kb, q->tr));
  LLVMValueRef rslot = hc_kb_imul(kb, LLVMBuildSub(kb->b, tri, r0, ""), hc_kb_i64(kb, q->ncg));
  for (int part = 0; part < 2; ++part) {
    int tr = part == 0 ? q->tr : last_tr;
    if (part == 1 && last_tr == q->tr) break;
    hc_if gi;
    bool guarded = last_tr != q->tr;
    if (guarded)
      hc_if_begin(kb, &gi, LLVMBuildICmp(kb->b, part == 0 ? LLVMIntSLT : LLVMIntEQ, tri, hc_kb_i64(kb, q->nrg - 1), ""));
    if (full_cg > 0) {
      hc_loop cl;
      LLVMValueRef tc = hc_loop_begin(kb, &cl, hc_kb_i64(kb, 0), hc_kb_i64(kb, full_cg), "tcol");
      x.slot = hc_kb_iadd(kb, rslot, tc);
      ch_tile(e, q, &x, tr, q->tw, nv, lanes, nn, g, c, oh, hc_kb_imul(kb, tc, hc_kb_i64(kb, q->tw)), wpanel);
      hc_loop_end(kb, &cl);
    }
    if (last_tw) {
      x.slot = hc_kb_iadd(kb, rslot, hc_kb_i64(kb, full_cg));
      ch_tile(e, q, &x, tr, last_tw, nv, lanes, nn, g, c, oh, hc_kb_i64(kb, full_cg * q->tw), wpanel);
    }
    if (guarded) hc_if_end(kb, &gi);
  }
  hc_loop_end(kb, &rl);
}

/* Opens the loop over the reduction slices and sets x's slice. */
static void ch_slice_begin(hc_kb* kb, const conv_plan* p, const cf_ch_plan* q, hc_loop* sl, ch_ctx* x) {
  LLVMValueRef si = hc_loop_begin(kb, sl, hc_kb_i64(kb, 0), hc_kb_i64(kb, q->nks), "slice");
  x->ic0 = hc_kb_imul(kb, si, hc_kb_i64(kb, q->kic));
  x->kcur = hc_kb_imin(kb, hc_kb_i64(kb, q->kic), LLVMBuildSub(kb->b, hc_kb_i64(kb, p->Cg), x->ic0, ""));
  x->first = LLVMBuildICmp(kb->b, LLVMIntEQ, si, hc_kb_i64(kb, 0), "");
  x->last = LLVMBuildICmp(kb->b, LLVMIntEQ, si, hc_kb_i64(kb, q->nks - 1), "");
}

static hx_status_t emit_conv_channels(hc_lower_ctx* lc, cf_emit* e) {
  const conv_plan* p = e->p;
  hc_kb* kb = e->kb;
  cf_ch_plan q;
  plan_channels(lc, p, e->P->T, e->vl, &q);
  /* The input the kernel reads: x's planes or its copy's (e->chan a channel). */
  q.slices_outer = q.slices_outer && p->Cg * e->chan * 4 > hc_ukr_l2_bytes(lc) / 2;
  e->tile = hc_kb_alloca(kb, LLVMArrayType2(kb->t_f32, (uint64_t)q.slot), "tile");
  /* Heavy fused ops whose operands vary neither over channels nor pixels
   * (the stores transpose the tile: vectors of a pixel's channels). */
  e->tile_epilogue = (e->vl == 8 || e->vl == 16) && e->epi.count && !hc_epilogue_light(e->n);
  for (int i = e->n->fused_input_base; e->tile_epilogue && i < e->n->num_inputs; ++i)
    if (e->n->inputs[i] &&
        (e->epi.coef[i - e->n->fused_input_base][1] != 0 || e->epi.coef[i - e->n->fused_input_base][2] != 0))
      e->tile_epilogue = false;
  if (!conv_strided_phases(p)) cf_prefetch_setup(lc, e);
  ch_ctx x = {0};
  if (q.nks > 1) {
    int64_t panels = q.slices_outer ? q.cbw / q.nr : 1; /* the most a task has, ragged one included */
    x.part = hc_kb_alloca(kb, LLVMArrayType2(kb->t_f32, (uint64_t)(panels * q.rbt * q.ncg * q.slot)), "partial");
  }
  int64_t pw = hc_pack_panel_width(p->dt), npanel = (p->Mg + pw - 1) / pw;
  hc_loop task;
  LLVMValueRef t = hc_kb_task_loop_begin(kb, &task);
  int64_t inner = q.rows_outer ? q.ncb : q.nrb, outer = q.rows_outer ? q.nrb : q.ncb;
  LLVMValueRef i0 = LLVMBuildURem(kb->b, t, hc_kb_i64(kb, inner), "");
  LLVMValueRef r1 = LLVMBuildUDiv(kb->b, t, hc_kb_i64(kb, inner), "");
  LLVMValueRef i1 = LLVMBuildURem(kb->b, r1, hc_kb_i64(kb, outer), "");
  LLVMValueRef r2 = LLVMBuildUDiv(kb->b, r1, hc_kb_i64(kb, outer), "");
  LLVMValueRef cb = q.rows_outer ? i0 : i1, rb = q.rows_outer ? i1 : i0;
  LLVMValueRef g = LLVMBuildURem(kb->b, r2, hc_kb_i64(kb, p->G), "");
  LLVMValueRef nn = LLVMBuildUDiv(kb->b, r2, hc_kb_i64(kb, p->G), "");
  LLVMValueRef wpanel = hc_kb_imul(kb, g, hc_kb_i64(kb, npanel));
  LLVMValueRef c0 = hc_kb_imul(kb, cb, hc_kb_i64(kb, q.cbw));
  int64_t last_w = p->Mg - (q.ncb - 1) * q.cbw;
  LLVMValueRef clast = LLVMBuildICmp(kb->b, LLVMIntEQ, cb, hc_kb_i64(kb, q.ncb - 1), "");
  LLVMValueRef npan = LLVMBuildSelect(kb->b, clast, hc_kb_i64(kb, last_w / q.nr), hc_kb_i64(kb, q.cbw / q.nr), "");
  int64_t rem = last_w % q.nr;
  hc_loop sl;
  if (q.slices_outer) {
    ch_slice_begin(kb, p, &q, &sl, &x);
    x.c_first = c0;
  }
  for (int part = 0; part < 2; ++part) {
    if (part == 1 && !rem) break;
    hc_if gi;
    hc_loop pl, psl;
    LLVMValueRef c;
    int nv = q.nv;
    unsigned lanes = e->vl;
    if (part == 0) {
      LLVMValueRef pj = hc_loop_begin(kb, &pl, hc_kb_i64(kb, 0), npan, "cp");
      c = hc_kb_iadd(kb, c0, hc_kb_imul(kb, pj, hc_kb_i64(kb, q.nr)));
      if (q.slices_outer) {
        x.slot0 = hc_kb_imul(kb, pj, hc_kb_i64(kb, q.rbt * q.ncg));
        x.last_panel = LLVMBuildICmp(kb->b, LLVMIntEQ, pj, LLVMBuildSub(kb->b, npan, hc_kb_i64(kb, 1), ""), "");
        if (rem) x.last_panel = LLVMBuildAnd(kb->b, x.last_panel, LLVMBuildNot(kb->b, clast, ""), "");
      }
    } else {
      nv = (int)((rem + e->vl - 1) / e->vl);
      lanes = (unsigned)(rem - (int64_t)(nv - 1) * e->vl);
      hc_if_begin(kb, &gi, clast);
      c = hc_kb_iadd(kb, c0, hc_kb_i64(kb, last_w - rem));
      if (q.slices_outer) {
        x.slot0 = hc_kb_imul(kb, npan, hc_kb_i64(kb, q.rbt * q.ncg));
        x.last_panel = LLVMConstInt(kb->t_i1, 1, 0);
      }
    }
    if (q.nks > 1 && !q.slices_outer) {
      ch_slice_begin(kb, p, &q, &psl, &x);
    } else if (q.nks == 1) {
      x.ic0 = hc_kb_i64(kb, 0);
      x.kcur = hc_kb_i64(kb, p->Cg);
    }
    ch_rows(e, &q, &x, nv, lanes, nn, g, c, rb, wpanel);
    if (q.nks > 1 && !q.slices_outer) hc_loop_end(kb, &psl);
    if (part == 0)
      hc_loop_end(kb, &pl);
    else
      hc_if_end(kb, &gi);
  }
  if (q.slices_outer) hc_loop_end(kb, &sl);
  hc_loop_end(kb, &task);
  return HX_OK;
}

/* ---- "depthwise": one input channel per output channel, rows as vectors ----
 *
 * Each output row is cut into segments of VL lanes; R rows are computed at
 * once (R * segments accumulators, enough independent FMA chains). Every
 * tap adds w * x over a segment, read straight from x: for stride 1 a
 * (masked at the image borders) vector load, for stride 2 two loads whose
 * even lanes a shuffle keeps. Rows of taps outside the image get a zero
 * weight (and a clamped row), so no padded copy of x is ever made; the
 * masks of the border columns are compile-time constants per segment.
 * Supported: 2-D, Cg = Mg = 1, stride 1 or 2, dilation 1, kernels up to 7x7. */

typedef struct cf_dw_plan {
  int nseg, R;      /* segments per row, rows per step */
  int64_t rb, nrb;  /* rows per task, blocks per channel */
} cf_dw_plan;

static void plan_dw(const conv_plan* p, unsigned vl, cf_dw_plan* q) {
  int64_t OH = p->out[0], OW = p->out[1];
  q->nseg = (int)((OW + vl - 1) / vl);
  /* About 8 independent accumulators per step (rows x segments). */
  q->R = q->nseg >= 8 ? 1 : (8 + q->nseg - 1) / q->nseg;
  if (q->R > OH) q->R = (int)OH;
  if (q->R > 6) q->R = 6;
  /* Whole planes per task unless there are few planes to share. */
  q->rb = OH;
  int64_t planes = p->N * p->C;
  double work = 2.0 * (double)planes * (double)p->out_plane * (double)p->ktot;
  while (work > 2e6 && planes * ((OH + q->rb - 1) / q->rb) < 8 && q->rb > q->R) q->rb = (q->rb + 1) / 2;
  q->nrb = (OH + q->rb - 1) / q->rb;
}

/* Lanes [0, lanes) of a VL-lane row segment starting at input column c0
 * (any sign), reading only columns in [0, W): a constant mask. */
static LLVMValueRef dw_load(hc_kb* kb, LLVMValueRef X, LLVMValueRef row, int64_t c0, int64_t W, unsigned vl) {
  LLVMValueRef bits[64];
  bool all = true, none = true;
  for (unsigned l = 0; l < vl; ++l) {
    bool ok = c0 + (int64_t)l >= 0 && c0 + (int64_t)l < W;
    bits[l] = LLVMConstInt(kb->t_i1, ok, 0);
    all &= ok;
    none &= !ok;
  }
  LLVMTypeRef vt = hc_ukr_vtype(kb, HX_DTYPE_FLOAT32, vl);
  if (none) return LLVMConstNull(vt);
  LLVMValueRef p = hc_kb_gep(kb, HX_DTYPE_FLOAT32, X, hc_kb_iadd(kb, row, hc_kb_i64(kb, c0)));
  if (all) {
    LLVMValueRef v = LLVMBuildLoad2(kb->b, vt, p, "");
    LLVMSetAlignment(v, 4);
    return v;
  }
  return hc_kb_masked_load(kb, vt, p, 4, LLVMConstVector(bits, vl));
}

/* Stride 2: lanes odd, odd + 2, ... of the 2 * vl columns in a and b. */
static LLVMValueRef dw_stride2_lanes(hc_kb* kb, LLVMValueRef a, LLVMValueRef b, int odd, unsigned vl) {
  int idx[64];
  for (unsigned l = 0; l < vl; ++l) idx[l] = 2 * (int)l + odd;
  return hc_kb_shuffle(kb, a, b, idx, vl);
}

/* Input columns (ow0 + l)*s + c for l < vl as one vector. */
static LLVMValueRef dw_cols(hc_kb* kb, LLVMValueRef X, LLVMValueRef row, int64_t ow0, int64_t c, int64_t s, int64_t W,
                            unsigned vl) {
  if (s == 1) return dw_load(kb, X, row, ow0 + c, W, vl);
  /* An odd offset takes the odd lanes of the loads at c - 1, which the
   * tap at c - 1 makes too (LLVM keeps one copy): 3x3 taps load 4 vectors
   * a row instead of 6 (stride-2 depthwise kernels of MobileNetV2 and
   * EfficientNet in 0.91-0.96 of the time). */
  int64_t c0 = c & ~(int64_t)1;
  LLVMValueRef a = dw_load(kb, X, row, 2 * ow0 + c0, W, vl);
  LLVMValueRef b = dw_load(kb, X, row, 2 * ow0 + c0 + vl, W, vl);
  return dw_stride2_lanes(kb, a, b, (int)(c - c0), vl);
}

/* Task-invariant state of the depthwise kernel. */
typedef struct dw_ctx {
  cf_emit* e;
  const cf_dw_plan* q;
  LLVMValueRef nn, c, xplane, yplane, bias;
  LLVMValueRef wv[49];   /* scalar weights */
  LLVMValueRef ws[49];   /* their splats (rows whose taps are all inside) */
  bool light;
  bool vec_heavy;        /* heavy fused ops, operands uniform over the plane: applied to a block in a vector loop */
  bool plane_epilogue;   /* vec_heavy on a block that is the whole plane: stored first, then applied to the
                            plane's elements in place (no work on the lanes past a short row) */
} dw_ctx;

/* Row segments are handled in blocks: the border ones (some lanes outside
 * the image for some tap, or a partial last segment) one by one with
 * constant masks, the clean ones in a run-time loop of blocks. */
#define DW_MAX_ACC 24
/* Whole-plane tasks of at most this many row steps are unrolled at
 * constant rows (emit_conv_depthwise). */
#define DW_CONST_ROW_BLOCKS 6

/* Segment columns ow0 + l (l < vl) of tap column offset c as one vector,
 * all lanes inside the image (a clean segment, run-time ow0). */
static LLVMValueRef dw_cols_clean(hc_kb* kb, LLVMValueRef X, LLVMValueRef row, LLVMValueRef ow0, int64_t c, int64_t s,
                                  unsigned vl) {
  /* As dw_cols: an odd offset shares the loads of the even one below. */
  int64_t c0 = s == 2 ? c & ~(int64_t)1 : c;
  LLVMValueRef at = hc_kb_iadd(kb, row, hc_kb_iadd(kb, hc_kb_imul(kb, ow0, hc_kb_i64(kb, s)), hc_kb_i64(kb, c0)));
  LLVMValueRef a = hc_ukr_load(kb, HX_DTYPE_FLOAT32, X, at, vl, vl);
  if (s == 1) return a;
  LLVMValueRef b = hc_ukr_load(kb, HX_DTYPE_FLOAT32, X, hc_kb_iadd(kb, at, hc_kb_i64(kb, vl)), vl, vl);
  return dw_stride2_lanes(kb, a, b, (int)(c - c0), vl);
}

/* R output rows from oh0 x nsg segments from column ow0: taps, then the
 * stores. `checked`: some tap rows may fall outside the image (border rows).
 * `clean`: every lane of every tap is inside the image and every segment is
 * full (ow0 may be a run-time value); otherwise ow0 is the constant c_ow0. */
static void dw_block(dw_ctx* x, LLVMValueRef oh0, int R, bool checked, LLVMValueRef ow0, int64_t c_ow0, int nsg,
                     bool clean) {
  cf_emit* e = x->e;
  const conv_plan* p = e->p;
  hc_kb* kb = e->kb;
  LLVMBuilderRef b = kb->b;
  unsigned vl = e->vl;
  int64_t OW = p->out[1], H = p->in[0], W = p->in[1], KH = p->k[0], KW = p->k[1], s = p->s[0];
  int64_t pt = p->pb[0], pl = p->pb[1];
  LLVMTypeRef vt = hc_ukr_vtype(kb, HX_DTYPE_FLOAT32, vl);
  LLVMValueRef acc[DW_MAX_ACC];
  for (int i = 0; i < R * nsg; ++i) acc[i] = x->bias;
  for (int r = 0; r < R; ++r) {
    LLVMValueRef oh = hc_kb_iadd(kb, oh0, hc_kb_i64(kb, r));
    for (int64_t kh = 0; kh < KH; ++kh) {
      LLVMValueRef ih = hc_kb_iadd(kb, hc_kb_imul(kb, oh, hc_kb_i64(kb, s)), hc_kb_i64(kb, kh - pt));
      LLVMValueRef inside = NULL;
      if (checked && LLVMIsAConstantInt(oh0)) {
        /* Constant rows (a whole small plane in one block): taps outside
         * the image are skipped at compile time. */
        int64_t cih = (LLVMConstIntGetSExtValue(oh0) + r) * s + kh - pt;
        if (cih < 0 || cih >= H) continue;
        ih = hc_kb_i64(kb, cih);
      } else if (checked) {
        /* A row outside the image: clamped, its taps weigh zero. */
        inside = LLVMBuildICmp(b, LLVMIntULT, ih, hc_kb_i64(kb, H), "");
        ih = hc_kb_imin(kb, hc_kb_imax(kb, ih, hc_kb_i64(kb, 0)), hc_kb_i64(kb, H - 1));
      }
      LLVMValueRef row = hc_kb_iadd(kb, x->xplane, hc_kb_imul(kb, ih, hc_kb_i64(kb, W)));
      for (int64_t kw = 0; kw < KW; ++kw) {
        LLVMValueRef ws = x->ws[kh * KW + kw];
        if (inside)
          ws = hc_kb_splat(kb, LLVMBuildSelect(b, inside, x->wv[kh * KW + kw], LLVMConstReal(kb->t_f32, 0.0), ""), vl);
        for (int j = 0; j < nsg; ++j) {
          LLVMValueRef xv =
              clean ? dw_cols_clean(kb, e->X, row, hc_kb_iadd(kb, ow0, hc_kb_i64(kb, (int64_t)j * vl)), kw - pl, s, vl)
                    : dw_cols(kb, e->X, row, c_ow0 + (int64_t)j * vl, kw - pl, s, W, vl);
          LLVMValueRef args[3] = {ws, xv, acc[r * nsg + j]};
          acc[r * nsg + j] = hc_kb_intrinsic(kb, "llvm.fma", vt, args, 3);
        }
      }
    }
  }
  if (x->vec_heavy && !x->plane_epilogue) {
    /* Heavy fused ops without operands: over the whole block in a loop the
     * vectoriser handles, then back into the accumulators. */
    for (int i = 0; i < R * nsg; ++i)
      hc_ukr_store(kb, HX_DTYPE_FLOAT32, e->tile, hc_kb_i64(kb, (int64_t)i * vl), acc[i], vl, vl);
    hc_loop el;
    LLVMValueRef l = hc_loop_begin(kb, &el, hc_kb_i64(kb, 0), hc_kb_i64(kb, (int64_t)R * nsg * vl), "epi");
    LLVMValueRef ptr = LLVMBuildGEP2(b, kb->t_f32, e->tile, &l, 1, "");
    LLVMValueRef coord[3] = {x->nn, x->c, hc_kb_i64(kb, 0)};
    LLVMBuildStore(b, hc_epilogue_apply(kb, &e->epi, LLVMBuildLoad2(b, kb->t_f32, ptr, ""), coord), ptr);
    /* With more taps than vector registers (5x5 on AVX2) the unrolled
     * loop's constants joined the taps' weights spilling in the reduction:
     * kept a loop, EfficientNet's 5x5 depthwise with SiLU took 0.80 of the
     * time. With fewer (3x3), unrolled and interleaved was 10-15% faster. */
    if (KH * KW > hc_ukr_registers(kb->lc))
      hc_loop_end_rolled(kb, &el);
    else
      hc_loop_end(kb, &el);
    for (int i = 0; i < R * nsg; ++i) acc[i] = hc_ukr_load(kb, HX_DTYPE_FLOAT32, e->tile, hc_kb_i64(kb, (int64_t)i * vl), vl, vl);
  }
  for (int r = 0; r < R; ++r) {
    LLVMValueRef oh = hc_kb_iadd(kb, oh0, hc_kb_i64(kb, r));
    LLVMValueRef yrow = hc_kb_imul(kb, oh, hc_kb_i64(kb, OW));
    for (int j = 0; j < nsg; ++j) {
      unsigned valid = vl;
      LLVMValueRef sp;
      if (clean) {
        sp = hc_kb_iadd(kb, yrow, hc_kb_iadd(kb, ow0, hc_kb_i64(kb, (int64_t)j * vl)));
      } else {
        int64_t o = c_ow0 + (int64_t)j * vl;
        valid = (unsigned)(OW - o < (int64_t)vl ? OW - o : (int64_t)vl);
        sp = hc_kb_iadd(kb, yrow, hc_kb_i64(kb, o));
      }
      LLVMValueRef y = acc[r * nsg + j];
      if (x->vec_heavy) {
        hc_ukr_store(kb, HX_DTYPE_FLOAT32, e->Y, hc_kb_iadd(kb, x->yplane, sp), y, vl, valid);
      } else if (x->light) {
        LLVMValueRef coord[3] = {x->nn, x->c, sp};
        y = hc_epilogue_apply_vec(kb, &e->epi, y, coord, 2, valid);
        hc_ukr_store(kb, HX_DTYPE_FLOAT32, e->Y, hc_kb_iadd(kb, x->yplane, sp), y, vl, valid);
      } else {
        hc_ukr_store(kb, HX_DTYPE_FLOAT32, e->tile, hc_kb_i64(kb, 0), y, vl, vl);
        hc_loop el;
        LLVMValueRef l = hc_loop_begin(kb, &el, hc_kb_i64(kb, 0), hc_kb_i64(kb, valid), "el");
        LLVMValueRef v = LLVMBuildLoad2(b, kb->t_f32, LLVMBuildGEP2(b, kb->t_f32, e->tile, &l, 1, ""), "");
        LLVMValueRef coord[3] = {x->nn, x->c, hc_kb_iadd(kb, sp, l)};
        v = hc_epilogue_apply(kb, &e->epi, v, coord);
        hc_kb_store(kb, HX_DTYPE_FLOAT32, e->Y, hc_kb_iadd(kb, x->yplane, hc_kb_iadd(kb, sp, l)), v);
        hc_loop_end(kb, &el);
      }
    }
  }
  if (x->plane_epilogue) {
    /* The whole plane is stored: the fused ops over its OH*OW contiguous
     * elements (a 7x7 plane is 49 elements, its row segments 7 x 16 lanes). */
    hc_loop el;
    LLVMValueRef l = hc_loop_begin(kb, &el, hc_kb_i64(kb, 0), hc_kb_i64(kb, p->out_plane), "epi");
    LLVMValueRef at = hc_kb_iadd(kb, x->yplane, l);
    LLVMValueRef ptr = LLVMBuildGEP2(b, kb->t_f32, e->Y, &at, 1, "");
    LLVMValueRef coord[3] = {x->nn, x->c, hc_kb_i64(kb, 0)};
    LLVMBuildStore(b, hc_epilogue_apply(kb, &e->epi, LLVMBuildLoad2(b, kb->t_f32, ptr, ""), coord), ptr);
    hc_loop_end(kb, &el);
  }
}

/* R rows from oh0, every segment: border segments one block each, the
 * clean run [ja, jb) in blocks of g segments. */
static void dw_step(dw_ctx* x, LLVMValueRef oh0, int R, bool checked) {
  cf_emit* e = x->e;
  const conv_plan* p = e->p;
  hc_kb* kb = e->kb;
  int64_t vl = (int64_t)e->vl, OW = p->out[1], W = p->in[1], KW = p->k[1], s = p->s[0], pl = p->pb[1];
  int nseg = x->q->nseg;
  /* Clean segment j: columns j*vl*s - pl .. (j*vl + vl - 1)*s + KW - 1 - pl
   * (two loads for stride 2 reach vl*s - 1 past the first, and start a
   * column early for an odd offset) inside [0, W), and a full segment. */
  int ja = nseg, jb = nseg;
  for (int j = 0; j < nseg; ++j) {
    int64_t o = (int64_t)j * vl;
    bool ok = o * s - pl - (s == 2) >= 0 && o * s - pl + (KW - 1) + vl * s - 1 <= W - 1 && o + vl <= OW;
    if (ok && ja == nseg) ja = j;
    if (ok) jb = j + 1;
    if (!ok && ja != nseg && jb != nseg) break;
  }
  if (ja == nseg) ja = jb = 0;
  /* Accumulators per block: DW_MAX_ACC beside the taps' weight splats on
   * AVX-512. On AVX2 a 3x3 kernel at stride 1 takes 12: a block of 14
   * segments (rows 112 or 56 wide) spilled, and 12 ran those in 0.82-0.84x
   * the time. Stride 2 and wider kernels keep DW_MAX_ACC: their blocks of
   * 12 ran 1-6% slower. */
  int budget = hc_ukr_registers(kb->lc) == 16 && p->s[1] == 1 && KW <= 3 ? 12 : DW_MAX_ACC;
  int per = budget / R;
  if (nseg <= per) {
    /* Every segment at once: the most independent accumulators. */
    dw_block(x, oh0, R, checked, NULL, 0, nseg, false);
    return;
  }
  /* Border segments before the clean run, in blocks of up to `per`. */
  for (int j = 0; j < ja; j += per) dw_block(x, oh0, R, checked, NULL, (int64_t)j * vl, ja - j < per ? ja - j : per, false);
  if (jb > ja) {
    int g = per < 4 ? per : 4;
    int64_t nblk = (jb - ja) / g;
    if (nblk > 0) {
      hc_loop bl;
      LLVMValueRef bi = hc_loop_begin(kb, &bl, hc_kb_i64(kb, 0), hc_kb_i64(kb, nblk), "dwseg");
      LLVMValueRef ow0 = hc_kb_iadd(kb, hc_kb_i64(kb, (int64_t)ja * vl), hc_kb_imul(kb, bi, hc_kb_i64(kb, (int64_t)g * vl)));
      dw_block(x, oh0, R, checked, ow0, 0, g, true);
      hc_loop_end(kb, &bl);
    }
    int left = (int)((jb - ja) - nblk * g);
    if (left > 0) dw_block(x, oh0, R, checked, hc_kb_i64(kb, (int64_t)(jb - left) * vl), 0, left, true);
  }
  for (int j = jb; j < nseg; j += per)
    dw_block(x, oh0, R, checked, NULL, (int64_t)j * vl, nseg - j < per ? nseg - j : per, false);
}

/* Rows [lo, hi): steps of R rows, then single rows. */
static void dw_rows(dw_ctx* x, LLVMValueRef lo, LLVMValueRef hi, bool checked) {
  hc_kb* kb = x->e->kb;
  LLVMBuilderRef b = kb->b;
  int R = x->q->R;
  LLVMValueRef n = hc_kb_imul(kb, LLVMBuildUDiv(b, hc_kb_imax(kb, LLVMBuildSub(b, hi, lo, ""), hc_kb_i64(kb, 0)),
                                                hc_kb_i64(kb, R), ""),
                              hc_kb_i64(kb, R));
  LLVMValueRef mid = hc_kb_iadd(kb, lo, n);
  hc_loop rl;
  LLVMValueRef oh0 = hc_loop_begin_step(kb, &rl, lo, mid, R, "dwrow");
  dw_step(x, oh0, R, checked);
  hc_loop_end(kb, &rl);
  if (R > 1) {
    hc_loop sl;
    LLVMValueRef oh = hc_loop_begin(kb, &sl, mid, hi, "dwrow1");
    dw_step(x, oh, 1, checked);
    hc_loop_end(kb, &sl);
  }
}

static hx_status_t emit_conv_depthwise(hc_lower_ctx* lc, cf_emit* e) {
  const conv_plan* p = e->p;
  hc_kb* kb = e->kb;
  LLVMBuilderRef b = kb->b;
  unsigned vl = e->vl;
  cf_dw_plan q;
  plan_dw(p, vl, &q);
  int64_t OH = p->out[0], H = p->in[0], KH = p->k[0], KW = p->k[1], s = p->s[0], pt = p->pb[0];
  dw_ctx x = {.e = e, .q = &q};
  /* SiLU too goes on the accumulators as whole vectors: through a stack
   * tile and a loop it took 1.1-1.3x the time of EfficientNet's depthwise
   * kernels. (The products and the other convolution kernels lost 8-15%
   * that way: their tiles hold more accumulators.) */
  x.light = !e->epi.count || hc_epilogue_light(e->n) || hc_epilogue_whole_vectors(&e->epi, 2);
  /* A block is one channel: operands that vary only by image and channel
   * (scalars, per-channel) are read at the block's coordinates. */
  x.vec_heavy = !x.light;
  for (int i = e->n->fused_input_base; x.vec_heavy && i < e->n->num_inputs; ++i)
    if (e->n->inputs[i] && e->epi.coef[i - e->n->fused_input_base][2] != 0) x.vec_heavy = false;
  if (!x.light)
    e->tile = hc_kb_alloca(kb, LLVMArrayType2(kb->t_f32, (uint64_t)vl * (x.vec_heavy ? DW_MAX_ACC : 1)), "tile");
  LLVMTypeRef vt = hc_ukr_vtype(kb, HX_DTYPE_FLOAT32, vl);
  hc_loop task;
  LLVMValueRef t = hc_kb_task_loop_begin(kb, &task);
  LLVMValueRef rbk = LLVMBuildURem(b, t, hc_kb_i64(kb, q.nrb), "");
  LLVMValueRef plane = LLVMBuildUDiv(b, t, hc_kb_i64(kb, q.nrb), ""); /* n*C + c */
  x.c = LLVMBuildURem(b, plane, hc_kb_i64(kb, p->C), "");
  x.nn = LLVMBuildUDiv(b, plane, hc_kb_i64(kb, p->C), "");
  x.xplane = hc_kb_imul(kb, plane, hc_kb_i64(kb, p->in_plane));
  x.yplane = hc_kb_imul(kb, plane, hc_kb_i64(kb, p->out_plane));
  LLVMValueRef wbase = hc_kb_imul(kb, x.c, hc_kb_i64(kb, p->ktot));
  /* Narrowed weights are widened (and int8 ones scaled) once per task, as
   * scalars in registers. */
  LLVMValueRef wscale = e->scales.ptr ? hc_ukr_load_scales(kb, &e->scales, x.c, 1, 1) : NULL;
  for (int64_t tp = 0; tp < KH * KW; ++tp) {
    LLVMValueRef wi = hc_kb_iadd(kb, wbase, hc_kb_i64(kb, tp));
    x.wv[tp] = p->wt ? hc_ukr_broadcast_st(kb, p->wt, e->W, wi, 1) : hc_kb_load(kb, HX_DTYPE_FLOAT32, e->W, wi);
    if (wscale) x.wv[tp] = LLVMBuildFMul(b, x.wv[tp], wscale, "");
    x.ws[tp] = hc_kb_splat(kb, x.wv[tp], vl);
  }
  x.bias = e->B ? hc_kb_splat(kb, hc_kb_load(kb, HX_DTYPE_FLOAT32, e->B, x.c), vl) : LLVMConstNull(vt);
  LLVMValueRef r0 = hc_kb_imul(kb, rbk, hc_kb_i64(kb, q.rb));
  LLVMValueRef r1 = hc_kb_imin(kb, hc_kb_iadd(kb, r0, hc_kb_i64(kb, q.rb)), hc_kb_i64(kb, OH));
  /* Rows whose taps all lie inside the image: [ia, ib). */
  int64_t ia = (pt + s - 1) / s, ib = H - KH + pt >= 0 ? (H - KH + pt) / s + 1 : 0;
  if (ia > OH) ia = OH;
  if (ib > OH) ib = OH;
  if (ib < ia) ib = ia;
  if (q.rb == OH && OH * q.nseg <= (hc_ukr_registers(lc) == 32 ? DW_MAX_ACC : 12)) {
    /* A small plane (7x7, 14x14): all of it in one block of independent
     * accumulators (as many as the registers hold beside a weight and an
     * input vector), border rows resolved at compile time. Split into the
     * three row ranges below, its few rows would each be one serial chain. */
    /* Heavy fused ops on the stored plane when the row segments waste a
     * fifth of their lanes or more (7x7: 49 elements instead of 112; at
     * 14x14, 196 instead of 224 did not pay for the second pass). */
    x.plane_epilogue = x.vec_heavy && (int64_t)q.nseg * vl * 4 >= 5 * p->out[1];
    dw_block(&x, hc_kb_i64(kb, 0), (int)OH, true, NULL, 0, q.nseg, false);
    hc_loop_end(kb, &task);
    return HX_OK;
  }
  if (q.nrb == 1 && (OH + q.R - 1) / q.R <= DW_CONST_ROW_BLOCKS) {
    /* A whole plane per task in a few steps (14x14): every step at
     * constant rows, the border taps skipped at compile time, the rows
     * spread evenly. The three run-time row ranges below leave the border
     * rows and each range's remainder as single rows, one serial chain per
     * segment: 6 of 14 rows of a 5x5 kernel, which ran in 1.6x the time.
     * (The same for larger planes, border steps at constant rows and a
     * loop between, changed nothing on 28x28 to 112x112.) */
    int64_t nb = (OH + q.R - 1) / q.R;
    for (int64_t i = 0, oh = 0; i < nb; ++i) {
      int64_t rows = (OH - oh) / (nb - i);
      dw_step(&x, hc_kb_i64(kb, oh), (int)rows, true);
      oh += rows;
    }
    hc_loop_end(kb, &task);
    return HX_OK;
  }
  LLVMValueRef a = hc_kb_imin(kb, hc_kb_imax(kb, r0, hc_kb_i64(kb, ia)), r1);
  LLVMValueRef z = hc_kb_imax(kb, hc_kb_imin(kb, r1, hc_kb_i64(kb, ib)), a);
  dw_rows(&x, r0, a, true);
  dw_rows(&x, a, z, false);
  dw_rows(&x, z, r1, true);
  hc_loop_end(kb, &task);
  return HX_OK;
}

/* Task count of a fast kernel (the kernel must be opened with it). */
static int64_t cf_tasks(const hc_lower_ctx* lc, const conv_plan* p, const flat_plan* f, const flat_phase* P, int kind,
                        unsigned vl) {
  if (kind == CF_DEPTHWISE) {
    cf_dw_plan q;
    plan_dw(p, vl, &q);
    return p->N * p->C * q.nrb;
  }
  if (kind == CF_PIXELS) {
    cf_pix_plan q;
    plan_pixels(lc, p, f, P, vl, &q);
    return p->N * p->G * q.nmb * q.nfb;
  }
  cf_ch_plan q;
  plan_channels(lc, p, P->T, vl, &q);
  return p->N * p->G * q.ncb * q.nrb;
}

/* Offset (in elements) of phase phi's taps in HC_PACK_CONVT_PHASES. */
static int64_t convt_phase_base(const conv_plan* p, const flat_plan* f, int phi) {
  int64_t off = 0;
  for (int q = 0; q < phi; ++q) off += p->G * p->Cg * p->Mg * f->phases[q].nterms;
  return off;
}

/* The fast kernel of output phase phi. `img` is the plan whose copy of x
 * (its images, when it repacks) the kernel reads: f itself, or the 2-D plan
 * of a convolution the channels kernel computes flattened (flatten_one_tap). */
static hx_status_t emit_fast_phase(hc_lower_ctx* lc, hc_node* n, const conv_plan* p, int kind, const flat_plan* f,
                                   const flat_plan* img, const cf_layout* l, bool packed, int phi, unsigned vl) {
  cf_emit e = {.n = n, .p = p, .f = f, .P = &f->phases[phi], .vl = vl};
  hc_kb kb;
  char suffix[32];
  snprintf(suffix, sizeof suffix, "phase%d", phi);
  hx_status_t st = hc_kb_begin(lc, n, f->nphase > 1 ? suffix : NULL, cf_tasks(lc, p, f, e.P, kind, vl), &kb);
  if (st != HX_OK) return st;
  e.kb = &kb;
  hc_ukr_prefer_full_width(&kb);
  e.X = hc_kb_ptr(&kb, n->inputs[0]);
  if (kind == CF_CHANNELS && !packed)
    e.W = LLVMBuildGEP2(kb.b, kb.t_i8, hc_kb_workspace(&kb), (LLVMValueRef[]){hc_kb_i64(&kb, (int64_t)l->panels)}, 1, "");
  else
    e.W = hc_kb_ptr(&kb, n->inputs[1]);
  e.B = hc_input(n, 2) ? hc_kb_ptr(&kb, hc_input(n, 2)) : NULL;
  if (p->wt == HX_DTYPE_INT8)
    e.scales = hc_ukr_scales_at(&kb, &p->wscales, hc_kb_ptr(&kb, n->inputs[1]));
  e.Y = hc_kb_ptr(&kb, n->outputs[0]);
  /* float16 x is always repacked (flat_build): the images are float32. */
  e.src = img->repack ? hc_kb_workspace(&kb) : e.X;
  e.chan = img->repack ? img->CS : p->in_plane;
  e.direct = !conv_strided_phases(p);
  for (int i = 1; i < p->nd; ++i) e.direct = e.direct && f->V[i] == p->out[i];
  if (p->transpose) {
    if (hc_packed_is(n, 1, HC_PACK_CONVT_PHASES)) e.phase_base = hc_kb_param(&kb, convt_phase_base(p, f, phi));
    e.phase_panels = kind == CF_CHANNELS && packed;
    for (int q = 0; q < phi; ++q) e.phase_row0 += p->Cg * f->phases[q].nterms;
    for (int i = 0; i < p->nd; ++i) e.rho[i] = hc_kb_param(&kb, e.P->rho[i]);
    for (int t = 0; t < e.P->nterms; ++t) {
      e.tap[t] = hc_kb_param(&kb, e.P->terms[t].tap);
      e.tsrc[t] = hc_kb_param(&kb, e.P->terms[t].src);
    }
  }
  const int split[2] = {1, 2};
  st = hc_epilogue_begin(&kb, n, split, &e.epi);
  if (st == HX_OK)
    st = kind == CF_PIXELS     ? emit_conv_pixels(lc, &e)
         : kind == CF_CHANNELS ? emit_conv_channels(lc, &e)
                               : emit_conv_depthwise(lc, &e);
  if (st == HX_OK) {
    /* A phase's share: its outputs and its taps. */
    const flat_phase* P = e.P;
    double points = (double)p->N * (double)p->M * (double)hc_shape_numel(p->nd, P->T);
    double flops = 2.0 * points * (double)p->Cg * (double)P->nterms + points * hc_epilogue_flops_per_element(n);
    double share = (double)hc_shape_numel(p->nd, P->T) / (double)p->out_plane;
    double bytes = (double)(img->repack && kind != CF_DEPTHWISE ? (double)(p->N * p->C * img->CS) * 4.0
                                                               : (double)hc_value_nbytes(n->inputs[0])) +
                   (double)hc_value_nbytes(n->inputs[1]) + points * 4.0 + hc_epilogue_bytes(n) * share;
    hc_kb_end(&kb, flops, bytes);
  }
  return st;
}


/* The channels kernel sees a 2-D one-tap convolution without padding as the
 * 1-D one it is: output pixel i reads pixel i of one flat plane, x's own
 * with unit strides, else the image of the strided pixels that the 2-D
 * plan's repack copies (its one residue, output-sized). Its pixel tiles then
 * run along the flat plane instead of stopping at each row's end: a 7x7
 * plane is 9 tiles of 5 and one of 4 instead of 7 rows of 5 + 2, whose
 * 2-pixel tiles are load- and latency-bound (AVX2: ResNet-50's layer4 1x1
 * convolutions 13-16% faster). Only the kernel's geometry changes: which
 * kernel runs was decided on the 2-D plan, and the repack, the workspace,
 * the weights' panels and the epilogue's flat output index do not depend
 * on it. False (q untouched) where the 2-D plan stays: AVX-512, whose
 * 14-pixel tiles take whole rows of 7x7 and 14x14 planes; a projection
 * (input over 4 times the output) whose rows the 2-D plan splits into
 * blocks (rows_outer at two threads, or an odd task count made even). */
static bool flatten_one_tap(const hc_lower_ctx* lc, const conv_plan* p, const flat_plan* f, int kind, conv_plan* q) {
  if (kind != CF_CHANNELS || p->transpose || p->nd != 2 || p->ktot != 1) return false;
  if (hc_ukr_registers(lc) == 32) return false;
  if (p->C * p->in_plane > 4 * p->M * p->out_plane) {
    /* A projection whose 2-D plan splits no rows (a 7x7 plane is shorter
     * than a row block's whole lines) loses nothing flat: MobileNetV2's
     * 960 -> 160 projections on 7x7 took 0.85 of the time alone and 0.86
     * in the model at one thread, 0.88 alone at two. */
    cf_ch_plan rows;
    plan_channels(lc, p, p->out, hc_ukr_lanes(lc, HX_DTYPE_FLOAT32), &rows);
    if (rows.nrb > 1) return false;
  }
  for (int i = 0; i < p->nd; ++i)
    if (p->pb[i] != 0 || p->pe[i] != 0) return false;
  /* The flat plane: x's (no copy), or the copy's one output-sized image. */
  int64_t plane = f->repack ? f->PV : p->in_plane;
  if (f->repack ? f->nimg != 1 || f->PV != p->out_plane : p->in_plane != p->out_plane) return false;
  *q = *p;
  q->nd = 1;
  q->in[0] = q->out[0] = plane;
  q->in_plane = q->out_plane = plane;
  q->k[0] = q->s[0] = q->d[0] = 1;
  q->pb[0] = q->pe[0] = 0;
  return true;
}

static hx_status_t lower_conv_fast(hc_lower_ctx* lc, hc_node* n, const conv_plan* p, int kind) {
  if (kind == CF_WINOGRAD) {
    hc_wino_shape ws;
    int m = conv_wino_m(p, &ws);
    ws.lanes = wino_lanes(n);
    return hc_wino_emit(lc, n, &ws, m);
  }
  if (kind == CF_GEMM) {
    hc_mm_desc d;
    conv_gemm_desc(n, p, &d);
    return hc_gemm_emit(lc, n, &d);
  }
  flat_plan f;
  hx_status_t st = flat_build(n, p, true, &f);
  if (st != HX_OK) {
    flat_free(&f); /* what it allocated before failing */
    return st;
  }
  cf_layout l;
  cf_workspace_layout(n, p, &f, kind, &l);
  bool packed = hc_packed_is(n, 1, HC_PACK_PANELS);
  if (f.repack && kind != CF_DEPTHWISE) st = emit_repack(lc, n, p, &f);
  if (st == HX_OK && kind == CF_CHANNELS && !packed) st = emit_pack_weights(lc, n, p, &l);
  /* The kernel's own plan: p's, or the flattened one reading f's image. */
  conv_plan pk;
  flat_plan fk;
  const flat_plan* kf = &f;
  if (st == HX_OK && flatten_one_tap(lc, p, &f, kind, &pk)) {
    st = flat_build(n, &pk, true, &fk); /* freed below even when it fails */
    p = &pk;
    kf = &fk;
  }
  unsigned vl = hc_ukr_lanes(lc, HX_DTYPE_FLOAT32);
  /* One kernel per output phase (ConvTranspose with strides; a
   * convolution has one). */
  for (int phi = 0; st == HX_OK && phi < kf->nphase; ++phi) {
    if (!kf->phases[phi].F) continue;
    st = emit_fast_phase(lc, n, p, kind, kf, &f, &l, packed, phi, vl);
  }
  if (kf != &f) flat_free(&fk);
  flat_free(&f);
  return st;
}

bool hc_conv_fast(const hc_node* n) {
  if (n->op != &hc_op_conv) return false;
  conv_plan p;
  if (!conv_plan_of(n, false, &p)) return false;
  /* Epilogues only on float32: a float16 graph rounds every op's result. */
  return p.dt == HX_DTYPE_FLOAT32 && conv_fast_kind(&p) != CF_NONE;
}

/* pack_conv_weights for narrowed elements of es bytes; `out` is zeroed. */
static void pack_conv_weights_bytes(const uint8_t* w, size_t es, const conv_plan* p, int64_t pw, uint8_t* out) {
  int64_t K = p->Cg * p->ktot, np = (p->Mg + pw - 1) / pw;
  for (int64_t g = 0; g < p->G; ++g)
    for (int64_t q = 0; q < np; ++q)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < pw && q * pw + j < p->Mg; ++j)
          memcpy(out + (size_t)(((g * np + q) * K + k) * pw + j) * es, w + (size_t)weight_index(p, g, q * pw + j, k) * es,
                 es);
}

extern const hc_op_desc hc_op_conv_transpose;

/* A ConvTranspose weight [G*Cg][Mg][taps] in the channels kernel's panels
 * [G][ceil(Mg/pw)][Cg*taps][pw], each panel's rows grouped by output phase
 * (phase-major, then input channel, then the phase's taps), so that a
 * phase's kernel streams its rows instead of every taps-th line. Each tap
 * reaches exactly one phase per dim (convt_channels: dilation 1), so the
 * phases' rows add up to Cg*taps. */
static void convt_pack_panels(const float* w, const conv_plan* p, const flat_plan* f, int64_t pw, float* out) {
  int64_t K = p->Cg * p->ktot, np = (p->Mg + pw - 1) / pw;
  for (int64_t g = 0; g < p->G; ++g)
    for (int64_t q = 0; q < np; ++q) {
      int64_t row = 0;
      for (int phi = 0; phi < f->nphase; ++phi) {
        const flat_phase* P = &f->phases[phi];
        for (int64_t ci = 0; ci < p->Cg; ++ci)
          for (int t = 0; t < P->nterms; ++t, ++row)
            for (int64_t j = 0; j < pw; ++j) {
              int64_t m = q * pw + j;
              out[((g * np + q) * K + row) * pw + j] =
                  m < p->Mg ? w[((g * p->Cg + ci) * p->Mg + m) * p->ktot + P->terms[t].tap] : 0.0f;
            }
      }
    }
}

/* Packs a constant float32 ConvTranspose weight for the channels kernel
 * (convt_pack_panels). Left as it is when some phase has no outputs (a
 * stride above the output's extent): its taps would have no rows, and the
 * kernels pack W at run time in tap order instead. */
static hx_status_t convt_prepack_panels(hc_graph* g, hc_node* n, const conv_plan* p, bool* out_done) {
  hc_value* w = n->inputs[1];
  flat_plan f;
  HX_RETURN_IF_ERROR(flat_build(n, p, true, &f));
  int64_t pw = hc_pack_panel_width(p->dt), np = (p->Mg + pw - 1) / pw, K = p->Cg * p->ktot, rows = 0;
  for (int phi = 0; phi < f.nphase; ++phi) rows += p->Cg * f.phases[phi].nterms;
  size_t bytes = (size_t)(p->G * np * K * pw) * sizeof(float);
  float* data = rows == K ? hc_graph_alloc_data(g, bytes) : NULL;
  if (data) convt_pack_panels(w->data, p, &f, pw, data);
  flat_free(&f);
  if (rows != K) return HX_OK;
  if (!data) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory packing '%s'", w->name);
  HX_RETURN_IF_ERROR(hc_install_panels(g, n, w, p->dt, (uint8_t*)(void*)data, bytes, (int64_t[4]){p->G, np, K, pw}));
  *out_done = true;
  return HX_OK;
}

/* Regroups a constant float32 ConvTranspose weight by output phase. */
static hx_status_t convt_prepack(hc_graph* g, hc_node* n, bool* out_done) {
  conv_plan p;
  if (!conv_plan_of(n, true, &p)) return HX_OK;
  hc_value* w = n->inputs[1];
  if (n->packed || p.dt != HX_DTYPE_FLOAT32 || conv_fast_kind(&p) != CF_PIXELS || w->kind != HC_VALUE_CONST || !w->data)
    return HX_OK;
  flat_plan f;
  HX_RETURN_IF_ERROR(flat_build(n, &p, true, &f));
  int64_t total = convt_phase_base(&p, &f, f.nphase);
  float* data = hc_graph_alloc_data(g, (size_t)(total > 0 ? total : 1) * sizeof(float));
  if (!data) {
    flat_free(&f);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory packing '%s'", w->name);
  }
  const float* src = w->data;
  for (int phi = 0; phi < f.nphase; ++phi) {
    const flat_phase* P = &f.phases[phi];
    float* dst = data + convt_phase_base(&p, &f, phi);
    for (int64_t c = 0; c < p.C; ++c) /* [G][Cg] is C */
      for (int64_t mg = 0; mg < p.Mg; ++mg)
        for (int t = 0; t < P->nterms; ++t)
          dst[(c * p.Mg + mg) * P->nterms + t] = src[(c * p.Mg + mg) * p.ktot + P->terms[t].tap];
  }
  flat_free(&f);
  char name[256];
  snprintf(name, sizeof name, "%s.phases", w->name);
  int64_t dims[1] = {total};
  HX_RETURN_IF_ERROR(hc_install_packed(g, n, w, name, p.dt, 1, dims, data, HC_PACK_CONVT_PHASES, NULL));
  *out_done = true;
  return HX_OK;
}

hx_status_t hc_conv_prepack(hc_graph* g, hc_node* n, const struct hc_target* target, bool* out_done) {
  *out_done = false;
  bool transpose = n->op == &hc_op_conv_transpose;
  conv_plan p;
  /* ConvTranspose: regrouped by phase for the pixels kernel, panels for the channels kernel. */
  if (transpose && conv_plan_of(n, true, &p) && conv_fast_kind(&p) == CF_PIXELS) return convt_prepack(g, n, out_done);
  /* A weight the precision pass narrowed (HC_PACK_PLAIN) is packed in its
   * element type, from the narrowed copy. */
  bool narrowed = hc_packed_is(n, 1, HC_PACK_PLAIN);
  if ((n->op != &hc_op_conv && !transpose) || (n->packed && !narrowed)) return HX_OK;
  if (!conv_plan_of(n, transpose, &p)) return HX_OK;
  p.prepacking = true;
  hc_value* src = n->inputs[1];
  hc_value* w = narrowed ? n->packed->original : src;
  /* U transformed here is the target's layout: its tile size may be, and
   * whether a stride-2 convolution takes Winograd at all. */
  hc_wino_shape ws;
  int wm = conv_fast_kind(&p) == CF_WINOGRAD ? conv_wino_m(&p, &ws) : 0;
  if (!narrowed && p.dt == HX_DTYPE_FLOAT32 && (wm || (conv_wino_shape(&p, &ws) && ws.stride == 2))) {
    int chosen = hc_wino_choose_packed(&ws, target);
    /* Direct instead of the shape's Winograd: only where the direct kernel
     * is the channels kernel, whose packed panels record the choice. */
    if (wm && !chosen) {
      conv_plan direct = p;
      direct.no_wino = true;
      if (conv_fast_kind(&direct) == CF_CHANNELS)
        p.no_wino = true;
      else
        chosen = wm;
    }
    wm = chosen;
  }
  if (wm) return hc_wino_prepack(g, n, &ws, wm, out_done);
  if (conv_fast_kind(&p) == CF_GEMM && conv_is_gemv(&p)) {
    hc_mm_desc d;
    conv_gemv_desc(n, &p, &d);
    return hc_gemm_prepack_b(g, n, &d, out_done);
  }
  if (conv_fast_kind(&p) != CF_CHANNELS || src->kind != HC_VALUE_CONST || !src->data) return HX_OK;
  int64_t pw = hc_pack_panel_width(p.dt), np = (p.Mg + pw - 1) / pw, K = p.Cg * p.ktot;
  hx_dtype_t elem = narrowed ? n->packed->elem : p.dt;
  size_t bytes = (size_t)(p.G * np * K * pw) * hx_dtype_size(elem);
  size_t total =
      elem == HX_DTYPE_INT8 ? hc_q8_total_bytes(bytes, n->packed->scales_count, hc_packed_q8_scales(n, 1).elem) : bytes;
  if (transpose) return convt_prepack_panels(g, n, &p, out_done);
  uint8_t* data = hc_graph_alloc_data(g, total);
  if (!data) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory packing '%s'", w->name);
  if (!narrowed && p.dt == HX_DTYPE_FLOAT32)
    pack_conv_weights(w->data, &p, pw, (float*)(void*)data);
  else
    pack_conv_weights_bytes(src->data, hx_dtype_size(elem), &p, pw, data);
  HX_RETURN_IF_ERROR(hc_install_panels(g, n, w, elem, data, bytes, (int64_t[4]){p.G, np, K, pw}));
  *out_done = true;
  return HX_OK;
}

static hx_status_t lower_conv_common(hc_lower_ctx* lc, hc_node* n, bool transpose) {
  conv_plan p;
  HX_RETURN_IF_ERROR(conv_setup(n, transpose, &p));
  int kind = conv_fast_kind(&p);
  if (kind != CF_NONE) return lower_conv_fast(lc, n, &p, kind);
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
  int kind = st == HX_OK ? conv_fast_kind(&p) : CF_NONE;
  if (kind == CF_WINOGRAD) {
    hc_wino_shape ws;
    int m = conv_wino_m(&p, &ws);
    ws.lanes = wino_lanes(n);
    bytes = hc_wino_workspace(n, &ws, m);
  } else if (kind == CF_GEMM) {
    hc_mm_desc d;
    conv_gemm_desc(n, &p, &d);
    bytes = hc_gemm_workspace(&d);
  } else if (kind != CF_NONE) {
    /* Also for a one-tap convolution the channels kernel computes
     * flattened (flatten_one_tap): it reads this plan's copy of x. */
    cf_layout l;
    cf_workspace_layout(n, &p, &f, kind, &l);
    bytes = l.total;
  } else if (st == HX_OK && f.repack && !conv_blocks(&p, &f).local)
    bytes = (uint64_t)(p.N * p.C * f.CS) * hx_dtype_size(copy_dtype(p.dt));
  if (st == HX_OK) flat_free(&f);
  hx_status_free(st); /* infer reports the problem */
  return bytes;
}

static uint64_t conv_workspace(const hc_node* n) { return conv_workspace_common(n, false); }
static uint64_t conv_transpose_workspace(const hc_node* n) { return conv_workspace_common(n, true); }

/* Output over a residual operand (hc_op_desc.inplace_input). Every Conv
 * kernel accumulates an output element in registers or on the stack (the
 * channels kernel parks the partial sums of its reduction slices in a stack
 * buffer, never in Y), then applies the epilogue to it, reading the operand
 * at that element's index, and stores it; each element is owned by one
 * task; the pad and weight-packing kernels read x and W only. The one
 * exception is the 1x1 product lowered through gemm.c: when its plan for
 * the target splits the reduction, partial sums are parked in Y. Only the
 * fast kernels are answered for: fusion gives epilogues to no other. */
static bool conv_inplace_input(const struct hc_target* target, const hc_node* n, int input) {
  if (!hc_epilogue_operand_overwritable(n, input)) return false;
  conv_plan p;
  if (!conv_plan_of(n, false, &p)) return false;
  int kind = conv_fast_kind(&p);
  /* Fusion gives epilogues to the fast kernels only (hc_conv_fast). */
  if (kind == CF_NONE) return false;
  if (kind != CF_GEMM) return true;
  hc_mm_desc d;
  conv_gemm_desc(n, &p, &d);
  return hc_gemm_single_pass(target, &d);
}

static const char* const k_conv_attrs[] = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides", NULL};
static const char* const k_conv_transpose_attrs[] = {
    "auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides", NULL};

const hc_op_desc hc_op_conv = {"Conv", "", 1, 22, k_conv_attrs, 0, infer_conv, lower_conv, NULL, conv_workspace,
                               conv_inplace_input};
const hc_op_desc hc_op_conv_transpose = {
    "ConvTranspose",         "", 1, 22, k_conv_transpose_attrs, 0, infer_conv_transpose, lower_conv_transpose, NULL,
    conv_transpose_workspace};
