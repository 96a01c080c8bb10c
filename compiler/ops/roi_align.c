/* Region-of-interest pooling: RoiAlign (opsets 10-22) and MaxRoiPool
 * (opsets 1-22). Both read the regions (and RoiAlign its batch indices) at
 * run time and pool each region of image X (N, C, H, W) into a fixed
 * (output_height, output_width) grid per channel.
 *
 * RoiAlign follows ONNX Runtime (and the ONNX reference ported from it):
 * a roi (x1, y1, x2, y2) scaled by spatial_scale, shifted by -0.5 with
 * coordinate_transformation_mode half_pixel (the default from opset 16;
 * earlier opsets behave as output_half_pixel, which also forces a roi to be
 * at least 1x1), is cut into bins; each bin averages (mode avg) or takes
 * the maximum (mode max) of sampling_ratio x sampling_ratio bilinear
 * samples (adaptive ceil(roi size / bins) per axis when sampling_ratio is
 * 0). A sample more than one pixel outside the image counts as 0. As in
 * ONNX Runtime, max mode takes the largest of the four weighted corner
 * terms of each sample, not the interpolated value, and an empty bin is 0.
 * The avg divisor counts every sample of the bin.
 *
 * MaxRoiPool (rois (R, 5): batch index, x1, y1, x2, y2) rounds the scaled
 * corners to pixels (half away from zero), splits the inclusive region
 * into bins of size (roi size) / (pooled size) and takes the maximum of the
 * pixels of each bin (floor of the start, ceil of the end, clipped to the
 * image); an empty bin is 0.
 *
 * Run-time values never address outside X: a batch index outside [0, N)
 * gives an all-zero output for that roi; NaN or infinite coordinates give
 * NaN or 0 samples. RoiAlign's adaptive sampling grid is capped at
 * 16 * (H + 1) (16 * (W + 1)) samples per bin and axis, which is exact for
 * every roi up to 16 * output_height (output_width) times the feature map
 * and keeps absurd rois from running for hours.
 *
 * Kernels: RoiAlign's task is one roi and a block of channels; sample
 * positions and bilinear weights are computed once per sample and applied
 * to every channel of the block. MaxRoiPool's task is one (roi, channel)
 * plane; the innermost loop walks a bin's row (contiguous).
 */
#include <math.h>
#include <string.h>

#include "compiler/ops/op.h"

/* Channels per RoiAlign task. */
#define RA_CHANNELS 64

/* The float types the op accepts at the node's opset. */
static uint64_t roi_float_types(const hc_node* n) {
  uint64_t m = HC_DT(HX_DTYPE_FLOAT16) | HC_DT(HX_DTYPE_FLOAT32) | HC_DT(HX_DTYPE_FLOAT64);
  if (n->opset >= 22) m |= HC_DT(HX_DTYPE_BFLOAT16);
  return m;
}

/* ---- RoiAlign ---------------------------------------------------------------- */

/* A RoiAlign node's attributes. */
typedef struct ra_plan {
  bool is_max, half_pixel;
  int64_t oh, ow, sr;
  double scale;
} ra_plan;

static hx_status_t ra_setup(const hc_node* n, ra_plan* p) {
  memset(p, 0, sizeof *p);
  HX_RETURN_IF_ERROR(hc_check_arity(n, 3, 3, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, roi_float_types(n)));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 2, HC_DT(HX_DTYPE_INT64)));
  const hc_value *x = n->inputs[0], *r = n->inputs[1], *bi = n->inputs[2];
  char s1[128];
  if (x->rank != 4)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "X ('%s') has shape %s; expected (N, C, H, W)", x->name,
                         hc_shape_str(x->rank, x->dims, s1, sizeof s1));
  if (r->rank != 2 || r->dims[1] != 4)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "rois ('%s') has shape %s; expected (num_rois, 4)", r->name,
                         hc_shape_str(r->rank, r->dims, s1, sizeof s1));
  if (bi->rank != 1 || bi->dims[0] != r->dims[0])
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "batch_indices ('%s') has shape %s; expected (%lld)", bi->name,
                         hc_shape_str(bi->rank, bi->dims, s1, sizeof s1), (long long)r->dims[0]);
  const char* mode = hc_attr_string(n, "mode", "avg");
  if (strcmp(mode, "avg") && strcmp(mode, "max"))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "mode '%s' is not one of avg, max", mode);
  p->is_max = !strcmp(mode, "max");
  if (n->opset < 16 && hc_node_attr(n, "coordinate_transformation_mode"))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'coordinate_transformation_mode' needs opset 16 or later");
  const char* ctm =
      hc_attr_string(n, "coordinate_transformation_mode", n->opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (strcmp(ctm, "half_pixel") && strcmp(ctm, "output_half_pixel"))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "coordinate_transformation_mode '%s' is not one of half_pixel, output_half_pixel", ctm);
  p->half_pixel = !strcmp(ctm, "half_pixel");
  p->oh = hc_attr_int(n, "output_height", 1);
  p->ow = hc_attr_int(n, "output_width", 1);
  p->sr = hc_attr_int(n, "sampling_ratio", 0);
  p->scale = hc_attr_float(n, "spatial_scale", 1.0f);
  if (p->oh < 1 || p->ow < 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "output_height %lld and output_width %lld must be >= 1",
                         (long long)p->oh, (long long)p->ow);
  if (p->sr < 0)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "sampling_ratio = %lld; must be >= 0", (long long)p->sr);
  return HX_OK;
}

static hx_status_t infer_roi_align(hc_graph* g, hc_node* n) {
  ra_plan p;
  HX_RETURN_IF_ERROR(ra_setup(n, &p));
  const hc_value* x = n->inputs[0];
  int64_t dims[4] = {n->inputs[1]->dims[0], x->dims[1], p.oh, p.ow};
  hc_set_output(n, 0, x->dtype, 4, dims);
  return HX_OK;
}

/* Float constant of type t. */
static LLVMValueRef fc(LLVMTypeRef t, double v) { return LLVMConstReal(t, v); }

/* Address of element i of a stack buffer of type t. */
static LLVMValueRef buf_at(hc_kb* kb, LLVMTypeRef t, LLVMValueRef buf, LLVMValueRef i) {
  return LLVMBuildGEP2(kb->b, t, buf, &i, 1, "");
}

/* One axis of a bilinear sample at coordinate v in an axis of `size`
 * pixels: the low/high pixel indices and the weights of each; `empty` is
 * set when v is more than one pixel outside. */
static void ra_axis(hc_kb* kb, hx_dtype_t dt, LLVMValueRef v, int64_t size, LLVMValueRef* empty, LLVMValueRef* lo,
                    LLVMValueRef* hi, LLVMValueRef* wlo, LLVMValueRef* whi) {
  LLVMBuilderRef b = kb->b;
  LLVMTypeRef ct = LLVMTypeOf(v);
  *empty = LLVMBuildOr(b, LLVMBuildFCmp(b, LLVMRealOLT, v, fc(ct, -1.0), ""),
                       LLVMBuildFCmp(b, LLVMRealOGT, v, fc(ct, (double)size), ""), "");
  v = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLE, v, fc(ct, 0.0), ""), fc(ct, 0.0), v, "");
  LLVMValueRef l = hc_kb_convert(kb, v, dt, HX_DTYPE_INT64);
  LLVMValueRef at_end = LLVMBuildICmp(b, LLVMIntSGE, l, hc_kb_i64(kb, size - 1), "");
  LLVMValueRef last = hc_kb_i64(kb, size - 1);
  l = LLVMBuildSelect(b, at_end, last, hc_kb_imax(kb, l, hc_kb_i64(kb, 0)), "");
  *lo = l;
  *hi = LLVMBuildSelect(b, at_end, last, hc_kb_iadd(kb, l, hc_kb_i64(kb, 1)), "");
  v = LLVMBuildSelect(b, at_end, fc(ct, (double)(size - 1)), v, "");
  LLVMValueRef frac = LLVMBuildFSub(b, v, LLVMBuildSIToFP(b, l, ct, ""), "");
  *whi = frac;
  *wlo = LLVMBuildFSub(b, fc(ct, 1.0), frac, "");
}

static hx_status_t lower_roi_align(hc_lower_ctx* lc, hc_node* n) {
  ra_plan p;
  HX_RETURN_IF_ERROR(ra_setup(n, &p));
  const hc_value *x = n->inputs[0], *y = n->outputs[0];
  hx_dtype_t dt = x->dtype;
  int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], R = n->inputs[1]->dims[0];
  if (hc_value_numel(y) == 0) return HX_OK;
  if (H == 0 || W == 0) return hc_kb_emit_zero(lc, n, y);
  int64_t CB = C < RA_CHANNELS ? C : RA_CHANNELS, ncb = (C + CB - 1) / CB;

  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, R * ncb, &kb));
  LLVMBuilderRef b = kb.b;
  LLVMTypeRef ct = hc_kb_compute_type(&kb, dt);
  LLVMValueRef X = hc_kb_ptr(&kb, x), RO = hc_kb_ptr(&kb, n->inputs[1]), BI = hc_kb_ptr(&kb, n->inputs[2]);
  LLVMValueRef Y = hc_kb_ptr(&kb, y);
  LLVMValueRef acc = hc_kb_alloca(&kb, LLVMArrayType2(ct, (uint64_t)CB), "acc");
  LLVMValueRef zero = hc_kb_i64(&kb, 0);

  hc_loop task, cl, phl, pwl, iyl, ixl;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef r = LLVMBuildUDiv(b, t, hc_kb_i64(&kb, ncb), "");
  LLVMValueRef c0 = hc_kb_imul(&kb, LLVMBuildURem(b, t, hc_kb_i64(&kb, ncb), ""), hc_kb_i64(&kb, CB));
  LLVMValueRef ccnt = hc_kb_imin(&kb, hc_kb_i64(&kb, CB), LLVMBuildSub(b, hc_kb_i64(&kb, C), c0, ""));
  LLVMValueRef bi = LLVMBuildLoad2(b, kb.t_i64, LLVMBuildGEP2(b, kb.t_i64, BI, &r, 1, ""), "");
  LLVMValueRef bok = LLVMBuildICmp(b, LLVMIntULT, bi, hc_kb_i64(&kb, N), "");
  bi = LLVMBuildSelect(b, bok, bi, zero, "");

  LLVMValueRef sc = fc(ct, p.scale), off = fc(ct, p.half_pixel ? 0.5 : 0.0);
  LLVMValueRef co[4];
  for (int i = 0; i < 4; ++i) {
    LLVMValueRef v = hc_kb_load(&kb, dt, RO, hc_kb_iadd(&kb, hc_kb_imul(&kb, r, hc_kb_i64(&kb, 4)), hc_kb_i64(&kb, i)));
    co[i] = LLVMBuildFSub(b, LLVMBuildFMul(b, v, sc, ""), off, "");
  }
  LLVMValueRef rw = LLVMBuildFSub(b, co[2], co[0], ""), rh = LLVMBuildFSub(b, co[3], co[1], "");
  if (!p.half_pixel) {
    rw = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, rw, fc(ct, 1.0), ""), fc(ct, 1.0), rw, "");
    rh = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, rh, fc(ct, 1.0), ""), fc(ct, 1.0), rh, "");
  }
  LLVMValueRef bh = LLVMBuildFDiv(b, rh, fc(ct, (double)p.oh), ""), bw = LLVMBuildFDiv(b, rw, fc(ct, (double)p.ow), "");
  LLVMValueRef gh, gw;
  if (p.sr > 0) {
    gh = gw = hc_kb_i64(&kb, p.sr);
  } else {
    gh = hc_kb_convert(&kb, hc_kb_math(&kb, dt, "ceil", &bh, 1), dt, HX_DTYPE_INT64);
    gw = hc_kb_convert(&kb, hc_kb_math(&kb, dt, "ceil", &bw, 1), dt, HX_DTYPE_INT64);
    gh = hc_kb_imax(&kb, hc_kb_imin(&kb, gh, hc_kb_i64(&kb, 16 * (H + 1))), zero);
    gw = hc_kb_imax(&kb, hc_kb_imin(&kb, gw, hc_kb_i64(&kb, 16 * (W + 1))), zero);
  }
  /* No samples at all in a bad-batch roi: every bin is then 0. */
  gh = LLVMBuildSelect(b, bok, gh, zero, "");
  LLVMValueRef samples = hc_kb_imul(&kb, gh, gw);
  LLVMValueRef count = LLVMBuildSIToFP(b, hc_kb_imax(&kb, samples, hc_kb_i64(&kb, 1)), ct, "");
  LLVMValueRef ghf = LLVMBuildSIToFP(b, gh, ct, ""), gwf = LLVMBuildSIToFP(b, gw, ct, "");
  LLVMValueRef xb0 =
      hc_kb_imul(&kb, hc_kb_iadd(&kb, hc_kb_imul(&kb, bi, hc_kb_i64(&kb, C)), c0), hc_kb_i64(&kb, H * W));

  LLVMValueRef ph = hc_loop_begin(&kb, &phl, zero, hc_kb_i64(&kb, p.oh), "ph");
  LLVMValueRef pw = hc_loop_begin(&kb, &pwl, zero, hc_kb_i64(&kb, p.ow), "pw");
  LLVMValueRef c = hc_loop_begin(&kb, &cl, zero, ccnt, "c");
  LLVMBuildStore(b, fc(ct, p.is_max ? -INFINITY : 0.0), buf_at(&kb, ct, acc, c));
  hc_loop_end(&kb, &cl);
  LLVMValueRef ystart = LLVMBuildFAdd(b, co[1], LLVMBuildFMul(b, LLVMBuildSIToFP(b, ph, ct, ""), bh, ""), "");
  LLVMValueRef xstart = LLVMBuildFAdd(b, co[0], LLVMBuildFMul(b, LLVMBuildSIToFP(b, pw, ct, ""), bw, ""), "");
  LLVMValueRef iy = hc_loop_begin(&kb, &iyl, zero, gh, "iy");
  LLVMValueRef fy = LLVMBuildFAdd(b, LLVMBuildSIToFP(b, iy, ct, ""), fc(ct, 0.5), "");
  LLVMValueRef yy = LLVMBuildFAdd(b, ystart, LLVMBuildFDiv(b, LLVMBuildFMul(b, fy, bh, ""), ghf, ""), "");
  LLVMValueRef ey, ylo, yhi, wylo, wyhi;
  ra_axis(&kb, dt, yy, H, &ey, &ylo, &yhi, &wylo, &wyhi);
  LLVMValueRef ix = hc_loop_begin(&kb, &ixl, zero, gw, "ix");
  LLVMValueRef fx = LLVMBuildFAdd(b, LLVMBuildSIToFP(b, ix, ct, ""), fc(ct, 0.5), "");
  LLVMValueRef xx = LLVMBuildFAdd(b, xstart, LLVMBuildFDiv(b, LLVMBuildFMul(b, fx, bw, ""), gwf, ""), "");
  LLVMValueRef ex, xlo, xhi, wxlo, wxhi;
  ra_axis(&kb, dt, xx, W, &ex, &xlo, &xhi, &wxlo, &wxhi);
  LLVMValueRef empty = LLVMBuildOr(b, ey, ex, "");
  LLVMValueRef wts[4] = {LLVMBuildFMul(b, wylo, wxlo, ""), LLVMBuildFMul(b, wylo, wxhi, ""),
                         LLVMBuildFMul(b, wyhi, wxlo, ""), LLVMBuildFMul(b, wyhi, wxhi, "")};
  LLVMValueRef pos[4] = {hc_kb_iadd(&kb, hc_kb_imul(&kb, ylo, hc_kb_i64(&kb, W)), xlo),
                         hc_kb_iadd(&kb, hc_kb_imul(&kb, ylo, hc_kb_i64(&kb, W)), xhi),
                         hc_kb_iadd(&kb, hc_kb_imul(&kb, yhi, hc_kb_i64(&kb, W)), xlo),
                         hc_kb_iadd(&kb, hc_kb_imul(&kb, yhi, hc_kb_i64(&kb, W)), xhi)};
  for (int i = 0; i < 4; ++i) {
    wts[i] = LLVMBuildSelect(b, empty, fc(ct, 0.0), wts[i], "");
    pos[i] = LLVMBuildSelect(b, empty, zero, pos[i], "");
  }
  c = hc_loop_begin(&kb, &cl, zero, ccnt, "c");
  LLVMValueRef xb = hc_kb_iadd(&kb, xb0, hc_kb_imul(&kb, c, hc_kb_i64(&kb, H * W)));
  LLVMValueRef v = NULL;
  for (int i = 0; i < 4; ++i) {
    LLVMValueRef term = LLVMBuildFMul(b, wts[i], hc_kb_load(&kb, dt, X, hc_kb_iadd(&kb, xb, pos[i])), "");
    v = !v ? term : p.is_max ? hc_kb_max(&kb, dt, v, term) : LLVMBuildFAdd(b, v, term, "");
  }
  LLVMValueRef ap = buf_at(&kb, ct, acc, c);
  LLVMValueRef a = LLVMBuildLoad2(b, ct, ap, "");
  LLVMBuildStore(b, p.is_max ? hc_kb_max(&kb, dt, a, v) : LLVMBuildFAdd(b, a, v, ""), ap);
  hc_loop_end(&kb, &cl);
  hc_loop_end(&kb, &ixl);
  hc_loop_end(&kb, &iyl);
  c = hc_loop_begin(&kb, &cl, zero, ccnt, "c");
  a = LLVMBuildLoad2(b, ct, buf_at(&kb, ct, acc, c), "");
  if (p.is_max)
    a = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, samples, zero, ""), a, fc(ct, 0.0), "");
  else
    a = LLVMBuildFDiv(b, a, count, "");
  LLVMValueRef plane = hc_kb_iadd(&kb, hc_kb_imul(&kb, r, hc_kb_i64(&kb, C)), hc_kb_iadd(&kb, c0, c));
  LLVMValueRef yi = hc_kb_iadd(&kb, hc_kb_imul(&kb, plane, hc_kb_i64(&kb, p.oh * p.ow)),
                               hc_kb_iadd(&kb, hc_kb_imul(&kb, ph, hc_kb_i64(&kb, p.ow)), pw));
  hc_kb_store(&kb, dt, Y, yi, a);
  hc_loop_end(&kb, &cl);
  hc_loop_end(&kb, &pwl);
  hc_loop_end(&kb, &phl);
  hc_loop_end(&kb, &task);
  /* Samples per bin are run-time values; estimate 2x2 per bin. */
  double outs = (double)hc_value_numel(y);
  hc_kb_end(&kb, outs * 4.0 * 8.0, outs * 4.0 * 4.0 * (double)hx_dtype_size(dt) + (double)hc_value_nbytes(y));
  return HX_OK;
}

/* ---- MaxRoiPool ---------------------------------------------------------------- */

static hx_status_t mrp_setup(const hc_node* n, int64_t* ph, int64_t* pw) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 2, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, roi_float_types(n)));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 1));
  const hc_value *x = n->inputs[0], *r = n->inputs[1];
  char s1[128];
  if (x->rank != 4)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "X ('%s') has shape %s; expected (N, C, H, W)", x->name,
                         hc_shape_str(x->rank, x->dims, s1, sizeof s1));
  if (r->rank != 2 || r->dims[1] != 5)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "rois ('%s') has shape %s; expected (num_rois, 5): batch index, x1, y1, x2, y2", r->name,
                         hc_shape_str(r->rank, r->dims, s1, sizeof s1));
  int64_t ps[2];
  int got = hc_attr_ints(n, "pooled_shape", ps, 2);
  if (got != 2 || ps[0] < 1 || ps[1] < 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "'pooled_shape' is required: two values (height, width), each >= 1");
  *ph = ps[0];
  *pw = ps[1];
  return HX_OK;
}

static hx_status_t infer_max_roi_pool(hc_graph* g, hc_node* n) {
  int64_t ph = 0, pw = 0;
  HX_RETURN_IF_ERROR(mrp_setup(n, &ph, &pw));
  int64_t dims[4] = {n->inputs[1]->dims[0], n->inputs[0]->dims[1], ph, pw};
  hc_set_output(n, 0, n->inputs[0]->dtype, 4, dims);
  return HX_OK;
}

/* round(v * scale) as a pixel index, kept far from i64 overflow. */
static LLVMValueRef mrp_pixel(hc_kb* kb, hx_dtype_t dt, LLVMValueRef v, LLVMValueRef scale) {
  LLVMValueRef s = LLVMBuildFMul(kb->b, v, scale, "");
  s = hc_kb_math(kb, dt, "round", &s, 1);
  LLVMValueRef i = hc_kb_convert(kb, s, dt, HX_DTYPE_INT64);
  return hc_kb_imax(kb, hc_kb_imin(kb, i, hc_kb_i64(kb, (int64_t)1 << 40)), hc_kb_i64(kb, -((int64_t)1 << 40)));
}

/* Bin bounds [start, end) along an axis: floor(k * bin) and ceil((k + 1) *
 * bin) offset by the roi start and clipped to [0, size]. */
static void mrp_bounds(hc_kb* kb, hx_dtype_t dt, LLVMValueRef k, LLVMValueRef bin, LLVMValueRef rs, int64_t size,
                       LLVMValueRef* start, LLVMValueRef* end) {
  LLVMBuilderRef b = kb->b;
  LLVMTypeRef ct = LLVMTypeOf(bin);
  LLVMValueRef kf = LLVMBuildSIToFP(b, k, ct, "");
  LLVMValueRef lo = LLVMBuildFMul(b, kf, bin, "");
  LLVMValueRef hi = LLVMBuildFMul(b, LLVMBuildFAdd(b, kf, fc(ct, 1.0), ""), bin, "");
  lo = hc_kb_convert(kb, hc_kb_math(kb, dt, "floor", &lo, 1), dt, HX_DTYPE_INT64);
  hi = hc_kb_convert(kb, hc_kb_math(kb, dt, "ceil", &hi, 1), dt, HX_DTYPE_INT64);
  LLVMValueRef z = hc_kb_i64(kb, 0), sz = hc_kb_i64(kb, size);
  *start = hc_kb_imin(kb, hc_kb_imax(kb, hc_kb_iadd(kb, lo, rs), z), sz);
  *end = hc_kb_imin(kb, hc_kb_imax(kb, hc_kb_iadd(kb, hi, rs), z), sz);
}

static hx_status_t lower_max_roi_pool(hc_lower_ctx* lc, hc_node* n) {
  int64_t PH = 0, PW = 0;
  HX_RETURN_IF_ERROR(mrp_setup(n, &PH, &PW));
  const hc_value *x = n->inputs[0], *y = n->outputs[0];
  hx_dtype_t dt = x->dtype;
  int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], R = n->inputs[1]->dims[0];
  if (hc_value_numel(y) == 0) return HX_OK;
  double scale = hc_attr_float(n, "spatial_scale", 1.0f);

  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, R * C, &kb));
  LLVMBuilderRef b = kb.b;
  LLVMTypeRef ct = hc_kb_compute_type(&kb, dt);
  LLVMValueRef X = hc_kb_ptr(&kb, x), RO = hc_kb_ptr(&kb, n->inputs[1]), Y = hc_kb_ptr(&kb, y);
  LLVMValueRef m = hc_kb_alloca(&kb, ct, "max");
  LLVMValueRef zero = hc_kb_i64(&kb, 0), one = hc_kb_i64(&kb, 1);
  hc_loop task, phl, pwl, hl, wl;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef r = LLVMBuildUDiv(b, t, hc_kb_i64(&kb, C), "");
  LLVMValueRef c = LLVMBuildURem(b, t, hc_kb_i64(&kb, C), "");
  LLVMValueRef rb = hc_kb_imul(&kb, r, hc_kb_i64(&kb, 5));
  LLVMValueRef v[5];
  for (int i = 0; i < 5; ++i) v[i] = hc_kb_load(&kb, dt, RO, hc_kb_iadd(&kb, rb, hc_kb_i64(&kb, i)));
  LLVMValueRef bi = hc_kb_convert(&kb, v[0], dt, HX_DTYPE_INT64);
  LLVMValueRef bok = LLVMBuildICmp(b, LLVMIntULT, bi, hc_kb_i64(&kb, N), "");
  bi = LLVMBuildSelect(b, bok, bi, zero, "");
  LLVMValueRef sc = fc(ct, scale);
  LLVMValueRef sw = mrp_pixel(&kb, dt, v[1], sc), sh = mrp_pixel(&kb, dt, v[2], sc);
  LLVMValueRef ew = mrp_pixel(&kb, dt, v[3], sc), eh = mrp_pixel(&kb, dt, v[4], sc);
  LLVMValueRef rw = hc_kb_imax(&kb, hc_kb_iadd(&kb, LLVMBuildSub(b, ew, sw, ""), one), one);
  LLVMValueRef rh = hc_kb_imax(&kb, hc_kb_iadd(&kb, LLVMBuildSub(b, eh, sh, ""), one), one);
  LLVMValueRef bh = LLVMBuildFDiv(b, LLVMBuildSIToFP(b, rh, ct, ""), fc(ct, (double)PH), "");
  LLVMValueRef bw = LLVMBuildFDiv(b, LLVMBuildSIToFP(b, rw, ct, ""), fc(ct, (double)PW), "");
  LLVMValueRef xb = hc_kb_imul(&kb, hc_kb_iadd(&kb, hc_kb_imul(&kb, bi, hc_kb_i64(&kb, C)), c), hc_kb_i64(&kb, H * W));
  LLVMValueRef yb = hc_kb_imul(&kb, t, hc_kb_i64(&kb, PH * PW));

  LLVMValueRef ph = hc_loop_begin(&kb, &phl, zero, hc_kb_i64(&kb, PH), "ph");
  LLVMValueRef hs, he;
  mrp_bounds(&kb, dt, ph, bh, sh, H, &hs, &he);
  he = LLVMBuildSelect(b, bok, he, zero, "");
  LLVMValueRef pw = hc_loop_begin(&kb, &pwl, zero, hc_kb_i64(&kb, PW), "pw");
  LLVMValueRef ws, we;
  mrp_bounds(&kb, dt, pw, bw, sw, W, &ws, &we);
  LLVMBuildStore(b, fc(ct, -INFINITY), m);
  LLVMValueRef h = hc_loop_begin(&kb, &hl, hs, he, "h");
  LLVMValueRef row = hc_kb_iadd(&kb, xb, hc_kb_imul(&kb, h, hc_kb_i64(&kb, W)));
  LLVMValueRef w = hc_loop_begin(&kb, &wl, ws, we, "w");
  LLVMValueRef xv = hc_kb_load(&kb, dt, X, hc_kb_iadd(&kb, row, w));
  LLVMBuildStore(b, hc_kb_reassoc(hc_kb_max(&kb, dt, LLVMBuildLoad2(b, ct, m, ""), xv)), m);
  hc_loop_end(&kb, &wl);
  hc_loop_end(&kb, &hl);
  LLVMValueRef empty =
      LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntSLE, he, hs, ""), LLVMBuildICmp(b, LLVMIntSLE, we, ws, ""), "");
  LLVMValueRef res = LLVMBuildSelect(b, empty, fc(ct, 0.0), LLVMBuildLoad2(b, ct, m, ""), "");
  hc_kb_store(&kb, dt, Y, hc_kb_iadd(&kb, yb, hc_kb_iadd(&kb, hc_kb_imul(&kb, ph, hc_kb_i64(&kb, PW)), pw)), res);
  hc_loop_end(&kb, &pwl);
  hc_loop_end(&kb, &phl);
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, (double)hc_value_numel(x) * (double)R / (double)(N ? N : 1),
            (double)hc_value_nbytes(y) + (double)hc_value_nbytes(x) * (double)R / (double)(N ? N : 1));
  return HX_OK;
}

static const char* const k_roi_align_attrs[] = {
    "coordinate_transformation_mode", "mode", "output_height", "output_width", "sampling_ratio", "spatial_scale", NULL};
static const char* const k_max_roi_pool_attrs[] = {"pooled_shape", "spatial_scale", NULL};

const hc_op_desc hc_op_roi_align = {
    "RoiAlign", "", 10, 22, k_roi_align_attrs, 0, infer_roi_align, lower_roi_align, NULL};
const hc_op_desc hc_op_max_roi_pool = {
    "MaxRoiPool", "", 1, 22, k_max_roi_pool_attrs, 0, infer_max_roi_pool, lower_max_roi_pool, NULL};
