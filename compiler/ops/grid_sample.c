/* GridSample (opsets 16-22): samples X (N, C, D1, ..., Dk) at the
 * locations of grid (N, O1, ..., Ok, k), giving Y (N, C, O1, ..., Ok).
 *
 * grid[n, o, :] holds normalised coordinates in [-1, 1], the last spatial
 * dim first (x, y, ...). As in the ONNX reference, per spatial dim of size
 * L a coordinate g becomes the position
 *   align_corners=1: (g + 1) / 2 * (L - 1)      (borders 0 and L - 1)
 *   align_corners=0: ((g + 1) * L - 1) / 2      (borders -0.5 and L - 0.5),
 * rounded half to even for nearest; a position outside the borders is
 * clamped to [0, L - 1] (padding_mode border) or reflected at the borders
 * until inside (reflection). The taps around the position (1 for nearest,
 * 2 for linear, 4 for cubic with Keys' a = -0.75) read X through the
 * padding mode: 0 outside the input (zeros), the clamped index (border) or
 * the reflected index (reflection). The N-D value is the sum over all tap
 * combinations of the product of the per-dim weights.
 *
 * Opset 16 names the modes bilinear / nearest / bicubic and is 2-D only;
 * opset 20 names them linear / nearest / cubic and allows any number of
 * spatial dims. X may have any numeric or bool type: nearest copies its
 * elements; linear and cubic interpolate floats (float16/bfloat16 in
 * float32) and are rejected for other types, where the reference's result
 * is an artefact of its integer coefficient arrays. Coordinates are
 * computed in the grid's compute type (float32, or float64 for float64).
 * Grid values are read at run time; NaN or huge coordinates cannot address
 * outside X (indices are clamped before use).
 *
 * Kernel: a task is one image and a block of output locations. For each
 * location the tap offsets and weights are computed once into stack
 * buffers; then for every channel the block's outputs (contiguous) are the
 * weighted sums of the gathered taps.
 */
#include <math.h>
#include <string.h>

#include "compiler/ops/op.h"

#define GS_MAX_SP (HC_MAX_RANK - 2)
/* Tap entries (locations x taps) a task buffers. */
#define GS_BUF 2048
/* Most locations per task. */
#define GS_MAX_BLOCK 256

enum { GS_NEAREST, GS_LINEAR, GS_CUBIC };
enum { GS_ZEROS, GS_BORDER, GS_REFLECTION };

/* A GridSample node's geometry and options. */
typedef struct gs_plan {
  int mode, pad, taps;
  bool align;
  hx_dtype_t xdt, gdt;
  int nd;
  int64_t N, C, in[GS_MAX_SP], out[GS_MAX_SP], in_plane, out_plane;
  int64_t T, block, nblocks;
} gs_plan;

/* Validates the node and computes its plan. */
static hx_status_t gs_setup(const hc_node* n, gs_plan* p) {
  memset(p, 0, sizeof *p);
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 2, 1, 1));
  uint64_t gmask = HC_DT(HX_DTYPE_FLOAT16) | HC_DT(HX_DTYPE_FLOAT32) | HC_DT(HX_DTYPE_FLOAT64);
  if (n->opset >= 22) gmask |= HC_DT(HX_DTYPE_BFLOAT16);
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, gmask));
  const hc_value *x = n->inputs[0], *g = n->inputs[1];
  char s1[128], s2[128];
  if (x->rank < 3 || (n->opset < 20 && x->rank != 4))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "X ('%s') has shape %s; expected (N, C, %s)", x->name,
                         hc_shape_str(x->rank, x->dims, s1, sizeof s1),
                         n->opset < 20 ? "H, W) before opset 20" : "D1, ...) with at least one spatial dim");
  p->nd = x->rank - 2;
  bool ok = g->rank == x->rank && g->dims[0] == x->dims[0] && g->dims[g->rank - 1] == p->nd;
  if (!ok)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "grid ('%s') has shape %s; expected (N, O1, ..., O%d, %d) for X of shape %s", g->name,
                         hc_shape_str(g->rank, g->dims, s1, sizeof s1), p->nd, p->nd,
                         hc_shape_str(x->rank, x->dims, s2, sizeof s2));
  bool new_names = n->opset >= 20;
  const char* mode = hc_attr_string(n, "mode", new_names ? "linear" : "bilinear");
  if (!strcmp(mode, "nearest"))
    p->mode = GS_NEAREST;
  else if (!strcmp(mode, new_names ? "linear" : "bilinear"))
    p->mode = GS_LINEAR;
  else if (!strcmp(mode, new_names ? "cubic" : "bicubic"))
    p->mode = GS_CUBIC;
  else
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "mode '%s' is not one of %s", mode,
                         new_names ? "linear, nearest, cubic" : "bilinear, nearest, bicubic");
  const char* pad = hc_attr_string(n, "padding_mode", "zeros");
  if (!strcmp(pad, "zeros"))
    p->pad = GS_ZEROS;
  else if (!strcmp(pad, "border"))
    p->pad = GS_BORDER;
  else if (!strcmp(pad, "reflection"))
    p->pad = GS_REFLECTION;
  else
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "padding_mode '%s' is not one of zeros, border, reflection",
                         pad);
  int64_t ac = hc_attr_int(n, "align_corners", 0);
  if (ac != 0 && ac != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "align_corners = %lld; must be 0 or 1", (long long)ac);
  p->align = ac == 1;
  p->xdt = x->dtype;
  p->gdt = g->dtype;
  if (p->mode != GS_NEAREST && !hc_dtype_is_float(p->xdt))
    return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                         "mode '%s' on %s X ('%s'): linear and cubic interpolation are supported for float types "
                         "only (nearest works for every type)",
                         mode, hx_dtype_name(p->xdt), x->name);
  p->N = x->dims[0];
  p->C = x->dims[1];
  for (int i = 0; i < p->nd; ++i) {
    p->in[i] = x->dims[2 + i];
    p->out[i] = g->dims[1 + i];
  }
  p->in_plane = hc_shape_numel(p->nd, p->in);
  p->out_plane = hc_shape_numel(p->nd, p->out);
  p->taps = p->mode == GS_NEAREST ? 1 : p->mode == GS_LINEAR ? 2 : 4;
  p->T = 1;
  for (int i = 0; i < p->nd; ++i) p->T *= p->taps;
  int64_t b = GS_BUF / p->T;
  if (b < 1) b = 1;
  if (b > GS_MAX_BLOCK) b = GS_MAX_BLOCK;
  if (b > p->out_plane) b = p->out_plane > 0 ? p->out_plane : 1;
  p->block = b;
  p->nblocks = (p->out_plane + b - 1) / b;
  return HX_OK;
}

static hx_status_t infer_grid_sample(hc_graph* g, hc_node* n) {
  gs_plan p;
  HX_RETURN_IF_ERROR(gs_setup(n, &p));
  int64_t dims[HC_MAX_RANK] = {p.N, p.C};
  for (int i = 0; i < p.nd; ++i) dims[2 + i] = p.out[i];
  hc_set_output(n, 0, p.xdt, p.nd + 2, dims);
  return HX_OK;
}

/* x reflected at the borders lo and hi until it lies in [lo, hi] (the
 * reference's _gs_reflect), in the float type of x. */
static LLVMValueRef gs_reflect(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x, double lo, double hi) {
  LLVMTypeRef t = LLVMTypeOf(x);
  if (hi - lo <= 0) return LLVMConstReal(t, lo);
  LLVMBuilderRef b = kb->b;
  LLVMValueRef clo = LLVMConstReal(t, lo), chi = LLVMConstReal(t, hi), rng = LLVMConstReal(t, hi - lo);
  LLVMValueRef half = LLVMConstReal(t, 0.5), two = LLVMConstReal(t, 2.0);
  LLVMValueRef res[2];
  for (int side = 0; side < 2; ++side) {
    LLVMValueRef dx = side == 0 ? LLVMBuildFSub(b, clo, x, "") : LLVMBuildFSub(b, x, chi, "");
    LLVMValueRef q = LLVMBuildFDiv(b, dx, rng, "");
    LLVMValueRef k = hc_kb_math(kb, dt, "floor", &q, 1);
    LLVMValueRef r = LLVMBuildFSub(b, dx, LLVMBuildFMul(b, k, rng, ""), "");
    LLVMValueRef hk = LLVMBuildFMul(b, k, half, "");
    LLVMValueRef par = LLVMBuildFSub(b, k, LLVMBuildFMul(b, two, hc_kb_math(kb, dt, "floor", &hk, 1), ""), "");
    LLVMValueRef even = LLVMBuildFCmp(b, LLVMRealOEQ, par, LLVMConstReal(t, 0.0), "");
    LLVMValueRef from_lo = LLVMBuildFAdd(b, clo, r, ""), from_hi = LLVMBuildFSub(b, chi, r, "");
    res[side] =
        side == 0 ? LLVMBuildSelect(b, even, from_lo, from_hi, "") : LLVMBuildSelect(b, even, from_hi, from_lo, "");
  }
  LLVMValueRef below = LLVMBuildFCmp(b, LLVMRealOLT, x, clo, ""), above = LLVMBuildFCmp(b, LLVMRealOGT, x, chi, "");
  return LLVMBuildSelect(b, below, res[0], LLVMBuildSelect(b, above, res[1], x, ""), "");
}

/* Keys' cubic convolution weights (a = -0.75) of the taps at floor(x) - 1
 * ... floor(x) + 2, for t = x - floor(x). */
static void gs_cubic_coeffs(hc_kb* kb, LLVMValueRef t, LLVMValueRef* w) {
  LLVMBuilderRef b = kb->b;
  LLVMTypeRef ty = LLVMTypeOf(t);
  const double A = -0.75;
#define K(v) LLVMConstReal(ty, (v))
  LLVMValueRef t1 = LLVMBuildFAdd(b, t, K(1.0), ""), u = LLVMBuildFSub(b, K(1.0), t, ""),
               u1 = LLVMBuildFSub(b, K(2.0), t, "");
  /* ((A*s - 5A)*s + 8A)*s - 4A for the outer taps (s in [1, 2]) */
  LLVMValueRef outer[2], s[2] = {t1, u1};
  for (int i = 0; i < 2; ++i) {
    LLVMValueRef v = LLVMBuildFSub(b, LLVMBuildFMul(b, K(A), s[i], ""), K(5 * A), "");
    v = LLVMBuildFAdd(b, LLVMBuildFMul(b, v, s[i], ""), K(8 * A), "");
    outer[i] = LLVMBuildFSub(b, LLVMBuildFMul(b, v, s[i], ""), K(4 * A), "");
  }
  /* ((A+2)*s - (A+3))*s*s + 1 for the inner taps (s in [0, 1]) */
  LLVMValueRef inner[2], r[2] = {t, u};
  for (int i = 0; i < 2; ++i) {
    LLVMValueRef v = LLVMBuildFSub(b, LLVMBuildFMul(b, K(A + 2), r[i], ""), K(A + 3), "");
    v = LLVMBuildFMul(b, LLVMBuildFMul(b, v, r[i], ""), r[i], "");
    inner[i] = LLVMBuildFAdd(b, v, K(1.0), "");
  }
#undef K
  w[0] = outer[0];
  w[1] = inner[0];
  w[2] = inner[1];
  w[3] = outer[1];
}

/* Index i (i64, any value) of a tap along a dim of size L, through the
 * padding mode: the index to read, or -1 for a zero (padding zeros). */
static LLVMValueRef gs_tap_index(hc_kb* kb, const gs_plan* p, LLVMValueRef i, int64_t L, double lo, double hi) {
  LLVMBuilderRef b = kb->b;
  LLVMValueRef zero = hc_kb_i64(kb, 0), last = hc_kb_i64(kb, L - 1);
  if (p->pad == GS_ZEROS) {
    LLVMValueRef valid = LLVMBuildICmp(b, LLVMIntULT, i, hc_kb_i64(kb, L), "");
    return LLVMBuildSelect(b, valid, i, hc_kb_i64(kb, -1), "");
  }
  if (p->pad == GS_REFLECTION) {
    LLVMValueRef f = LLVMBuildSIToFP(b, i, kb->t_f64, "");
    f = gs_reflect(kb, HX_DTYPE_FLOAT64, f, lo, hi);
    i = hc_kb_convert(kb, f, HX_DTYPE_FLOAT64, HX_DTYPE_INT64);
  }
  return hc_kb_imax(kb, hc_kb_imin(kb, i, last), zero);
}

/* The tap indices (per dim, `taps` each, into pidx) and weights (into pw)
 * of output location `loc` of image `img`. */
static void gs_location_taps(hc_kb* kb, const gs_plan* p, LLVMValueRef G, LLVMValueRef img, LLVMValueRef loc,
                             LLVMValueRef pidx, LLVMValueRef pw, LLVMTypeRef wt) {
  LLVMBuilderRef b = kb->b;
  hx_dtype_t gd = p->gdt;
  LLVMTypeRef ct = hc_kb_compute_type(kb, gd);
  LLVMValueRef gbase =
      hc_kb_imul(kb, hc_kb_iadd(kb, hc_kb_imul(kb, img, hc_kb_i64(kb, p->out_plane)), loc), hc_kb_i64(kb, p->nd));
  for (int i = 0; i < p->nd; ++i) {
    int64_t L = p->in[i];
    double lo = p->align ? 0.0 : -0.5, hi = p->align ? (double)L - 1.0 : (double)L - 0.5;
    LLVMValueRef g = hc_kb_load(kb, gd, G, hc_kb_iadd(kb, gbase, hc_kb_i64(kb, p->nd - 1 - i)));
    LLVMValueRef g1 = LLVMBuildFAdd(b, g, LLVMConstReal(ct, 1.0), "");
    LLVMValueRef x;
    if (p->align)
      x = LLVMBuildFMul(b, LLVMBuildFDiv(b, g1, LLVMConstReal(ct, 2.0), ""), LLVMConstReal(ct, (double)(L - 1)), "");
    else
      x = LLVMBuildFDiv(
          b, LLVMBuildFSub(b, LLVMBuildFMul(b, g1, LLVMConstReal(ct, (double)L), ""), LLVMConstReal(ct, 1.0), ""),
          LLVMConstReal(ct, 2.0), "");
    if (p->mode == GS_NEAREST) x = hc_kb_math(kb, gd, "roundeven", &x, 1);
    if (p->pad == GS_BORDER) {
      LLVMValueRef out = LLVMBuildOr(b, LLVMBuildFCmp(b, LLVMRealOLT, x, LLVMConstReal(ct, lo), ""),
                                     LLVMBuildFCmp(b, LLVMRealOGT, x, LLVMConstReal(ct, hi), ""), "");
      LLVMValueRef c = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, x, LLVMConstReal(ct, 0.0), ""),
                                       LLVMConstReal(ct, 0.0), x, "");
      c = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, c, LLVMConstReal(ct, (double)(L - 1)), ""),
                          LLVMConstReal(ct, (double)(L - 1)), c, "");
      x = LLVMBuildSelect(b, out, c, x, "");
    } else if (p->pad == GS_REFLECTION) {
      x = gs_reflect(kb, gd, x, lo, hi);
    }
    LLVMValueRef base, w[4];
    if (p->mode == GS_NEAREST) {
      base = hc_kb_convert(kb, x, gd, HX_DTYPE_INT64);
      w[0] = LLVMConstReal(ct, 1.0);
    } else {
      LLVMValueRef f = hc_kb_math(kb, gd, "floor", &x, 1);
      LLVMValueRef t = LLVMBuildFSub(b, x, f, "");
      base = hc_kb_convert(kb, f, gd, HX_DTYPE_INT64);
      if (p->mode == GS_LINEAR) {
        w[0] = LLVMBuildFSub(b, LLVMConstReal(ct, 1.0), t, "");
        w[1] = t;
      } else {
        gs_cubic_coeffs(kb, t, w);
        base = LLVMBuildSub(b, base, hc_kb_i64(kb, 1), "");
      }
    }
    /* Far-away positions: every tap is outside either way; keep i64 sums safe. */
    base = hc_kb_imax(kb, hc_kb_imin(kb, base, hc_kb_i64(kb, L + 8)), hc_kb_i64(kb, -8));
    for (int k = 0; k < p->taps; ++k) {
      LLVMValueRef slot = hc_kb_i64(kb, i * p->taps + k);
      LLVMValueRef ti = gs_tap_index(kb, p, hc_kb_iadd(kb, base, hc_kb_i64(kb, k)), L, lo, hi);
      LLVMBuildStore(b, ti, LLVMBuildGEP2(b, kb->t_i64, pidx, &slot, 1, ""));
      LLVMValueRef wv = p->mode == GS_NEAREST ? LLVMConstReal(wt, 1.0) : hc_kb_convert(kb, w[k], gd, p->xdt);
      LLVMBuildStore(b, wv, LLVMBuildGEP2(b, wt, pw, &slot, 1, ""));
    }
  }
}

static hx_status_t lower_grid_sample(hc_lower_ctx* lc, hc_node* n) {
  gs_plan p;
  HX_RETURN_IF_ERROR(gs_setup(n, &p));
  const hc_value *x = n->inputs[0], *y = n->outputs[0];
  int64_t total = hc_value_numel(y);
  if (total == 0) return HX_OK;
  hc_kb kb;
  if (p.in_plane == 0) {
    /* Every tap lies outside an empty input. */
    if (p.pad != GS_ZEROS)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "X ('%s') has an empty spatial dim; padding_mode border and "
                           "reflection need at least one element",
                           x->name);
    return hc_kb_emit_zero(lc, n, y);
  }
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, p.N * p.nblocks, &kb));
  LLVMBuilderRef b = kb.b;
  LLVMValueRef X = hc_kb_ptr(&kb, x), G = hc_kb_ptr(&kb, n->inputs[1]), Y = hc_kb_ptr(&kb, y);
  /* Weight / accumulation type: X's compute type (float32 or float64). */
  hx_dtype_t xd = p.xdt;
  LLVMTypeRef wt = hc_dtype_is_float(xd) ? hc_kb_compute_type(&kb, xd) : kb.t_f64;
  LLVMValueRef pidx = hc_kb_alloca(&kb, LLVMArrayType2(kb.t_i64, (uint64_t)(p.nd * p.taps)), "tapidx");
  LLVMValueRef pw = hc_kb_alloca(&kb, LLVMArrayType2(wt, (uint64_t)(p.nd * p.taps)), "tapw");
  LLVMValueRef offs = hc_kb_alloca(&kb, LLVMArrayType2(kb.t_i64, (uint64_t)(p.block * p.T)), "offs");
  LLVMValueRef wts = hc_kb_alloca(&kb, LLVMArrayType2(wt, (uint64_t)(p.block * p.T)), "wts");
  LLVMValueRef zero = hc_kb_i64(&kb, 0);
  int64_t xs[GS_MAX_SP];
  hc_strides(p.nd, p.in, xs);

  hc_loop task, ll, ql, cl;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef img = LLVMBuildUDiv(b, t, hc_kb_i64(&kb, p.nblocks), "");
  LLVMValueRef l0 = hc_kb_imul(&kb, LLVMBuildURem(b, t, hc_kb_i64(&kb, p.nblocks), ""), hc_kb_i64(&kb, p.block));
  LLVMValueRef cnt = hc_kb_imin(&kb, hc_kb_i64(&kb, p.block), LLVMBuildSub(b, hc_kb_i64(&kb, p.out_plane), l0, ""));

  /* Offsets (-1: a zero) and weights of every tap combination. */
  LLVMValueRef l = hc_loop_begin(&kb, &ll, zero, cnt, "loc");
  gs_location_taps(&kb, &p, G, img, hc_kb_iadd(&kb, l0, l), pidx, pw, wt);
  LLVMValueRef q = hc_loop_begin(&kb, &ql, zero, hc_kb_i64(&kb, p.T), "combo");
  LLVMValueRef off = zero, w = LLVMConstReal(wt, 1.0), bad = LLVMConstInt(kb.t_i1, 0, 0);
  int64_t pow = p.T;
  for (int i = 0; i < p.nd; ++i) {
    pow /= p.taps;
    LLVMValueRef digit = LLVMBuildURem(b, LLVMBuildUDiv(b, q, hc_kb_i64(&kb, pow), ""), hc_kb_i64(&kb, p.taps), "");
    LLVMValueRef slot = hc_kb_iadd(&kb, digit, hc_kb_i64(&kb, i * p.taps));
    LLVMValueRef ti = LLVMBuildLoad2(b, kb.t_i64, LLVMBuildGEP2(b, kb.t_i64, pidx, &slot, 1, ""), "");
    bad = LLVMBuildOr(b, bad, LLVMBuildICmp(b, LLVMIntSLT, ti, zero, ""), "");
    off = hc_kb_iadd(&kb, off, hc_kb_imul(&kb, hc_kb_imax(&kb, ti, zero), hc_kb_i64(&kb, xs[i])));
    w = LLVMBuildFMul(b, w, LLVMBuildLoad2(b, wt, LLVMBuildGEP2(b, wt, pw, &slot, 1, ""), ""), "");
  }
  LLVMValueRef e = hc_kb_iadd(&kb, hc_kb_imul(&kb, l, hc_kb_i64(&kb, p.T)), q);
  LLVMBuildStore(b, LLVMBuildSelect(b, bad, hc_kb_i64(&kb, -1), off, ""), LLVMBuildGEP2(b, kb.t_i64, offs, &e, 1, ""));
  LLVMBuildStore(b, w, LLVMBuildGEP2(b, wt, wts, &e, 1, ""));
  hc_loop_end(&kb, &ql);
  hc_loop_end(&kb, &ll);

  /* Every channel: the block's outputs from the buffered taps. */
  LLVMValueRef c = hc_loop_begin(&kb, &cl, zero, hc_kb_i64(&kb, p.C), "c");
  LLVMValueRef plane = hc_kb_iadd(&kb, hc_kb_imul(&kb, img, hc_kb_i64(&kb, p.C)), c);
  LLVMValueRef xbase = hc_kb_imul(&kb, plane, hc_kb_i64(&kb, p.in_plane));
  LLVMValueRef ybase = hc_kb_iadd(&kb, hc_kb_imul(&kb, plane, hc_kb_i64(&kb, p.out_plane)), l0);
  l = hc_loop_begin(&kb, &ll, zero, cnt, "loc");
  LLVMValueRef res;
  if (p.mode == GS_NEAREST) {
    LLVMValueRef o = LLVMBuildLoad2(b, kb.t_i64, LLVMBuildGEP2(b, kb.t_i64, offs, &l, 1, ""), "");
    LLVMValueRef v = hc_kb_load(&kb, xd, X, hc_kb_iadd(&kb, xbase, hc_kb_imax(&kb, o, zero)));
    res = hc_kb_select(&kb, LLVMBuildICmp(b, LLVMIntSLT, o, zero, ""), hc_kb_const(&kb, xd, 0), v);
  } else {
    LLVMValueRef acc = LLVMConstReal(wt, 0.0);
    LLVMValueRef e0 = hc_kb_imul(&kb, l, hc_kb_i64(&kb, p.T));
    for (int64_t k = 0; k < p.T && p.T <= 16; ++k) {
      LLVMValueRef ei = hc_kb_iadd(&kb, e0, hc_kb_i64(&kb, k));
      LLVMValueRef o = LLVMBuildLoad2(b, kb.t_i64, LLVMBuildGEP2(b, kb.t_i64, offs, &ei, 1, ""), "");
      LLVMValueRef v = hc_kb_load(&kb, xd, X, hc_kb_iadd(&kb, xbase, hc_kb_imax(&kb, o, zero)));
      v = hc_kb_select(&kb, LLVMBuildICmp(b, LLVMIntSLT, o, zero, ""), LLVMConstReal(wt, 0.0), v);
      LLVMValueRef wv = LLVMBuildLoad2(b, wt, LLVMBuildGEP2(b, wt, wts, &ei, 1, ""), "");
      acc = LLVMBuildFAdd(b, acc, LLVMBuildFMul(b, wv, v, ""), "");
    }
    if (p.T > 16) {
      LLVMValueRef slot = hc_kb_alloca(&kb, wt, "acc");
      LLVMBuildStore(b, acc, slot);
      hc_loop kl;
      LLVMValueRef k = hc_loop_begin(&kb, &kl, zero, hc_kb_i64(&kb, p.T), "tap");
      LLVMValueRef ei = hc_kb_iadd(&kb, e0, k);
      LLVMValueRef o = LLVMBuildLoad2(b, kb.t_i64, LLVMBuildGEP2(b, kb.t_i64, offs, &ei, 1, ""), "");
      LLVMValueRef v = hc_kb_load(&kb, xd, X, hc_kb_iadd(&kb, xbase, hc_kb_imax(&kb, o, zero)));
      v = hc_kb_select(&kb, LLVMBuildICmp(b, LLVMIntSLT, o, zero, ""), LLVMConstReal(wt, 0.0), v);
      LLVMValueRef wv = LLVMBuildLoad2(b, wt, LLVMBuildGEP2(b, wt, wts, &ei, 1, ""), "");
      LLVMBuildStore(b, LLVMBuildFAdd(b, LLVMBuildLoad2(b, wt, slot, ""), LLVMBuildFMul(b, wv, v, ""), ""), slot);
      hc_loop_end(&kb, &kl);
      acc = LLVMBuildLoad2(b, wt, slot, "");
    }
    res = acc;
  }
  hc_kb_store(&kb, xd, Y, hc_kb_iadd(&kb, ybase, l), res);
  hc_loop_end(&kb, &ll);
  hc_loop_end(&kb, &cl);
  hc_loop_end(&kb, &task);
  double locs = (double)p.N * (double)p.out_plane;
  hc_kb_end(&kb, locs * (double)p.T * (2.0 * (double)p.C + (double)p.nd) + locs * 20.0 * p.nd,
            (double)total * (double)p.T * (double)hx_dtype_size(xd) + (double)hc_value_nbytes(y) +
                (double)hc_value_nbytes(n->inputs[1]));
  return HX_OK;
}

static const char* const k_grid_sample_attrs[] = {"align_corners", "mode", "padding_mode", NULL};

const hc_op_desc hc_op_grid_sample = {
    "GridSample", "", 16, 22, k_grid_sample_attrs, 0, infer_grid_sample, lower_grid_sample, NULL};
