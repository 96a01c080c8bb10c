/* Resize: nearest, (multi)linear and (multi)cubic resampling of any rank.
 *
 * Opset 10 takes X and scales; 11+ take X, roi, scales, sizes and the
 * attributes coordinate_transformation_mode, cubic_coeff_a,
 * exclude_outside, extrapolation_value, mode and nearest_mode; 18 adds
 * antialias, axes and keep_aspect_ratio_policy; 19 adds the
 * half_pixel_symmetric transformation. sizes must be a compile-time
 * constant; scales (and roi for tf_crop_and_resize) may also be computed or
 * fed at run time when the model declares the output's static shape (see
 * "Run-time scales and roi" below).
 *
 * Interpolation is separable, so everything that depends on coordinates is
 * computed here, in C, once per axis: for each output index along an axis,
 * the source indices of its taps (edge-clamped) and their weights, plus an
 * "outside" flag for tf_crop_and_resize. Arithmetic follows the ONNX
 * reference implementation (float64, with the length_resized it uses), so
 * results match the reference outputs, including floor/ceil decisions.
 *
 * Each axis then is one of
 *  - identity: output index i reads input index i;
 *  - gather: one tap of weight 1 (nearest, or linear/cubic landing exactly
 *    on samples): a table of source offsets;
 *  - blend: K taps: tables of K offsets and K weights per output index.
 * The kernel only walks the output, sums offsets from the tables and, for
 * blend axes, accumulates the weighted taps in the compute type. Without
 * blend axes it moves bits, so nearest works for every dtype.
 *
 * Opset 10 has no coordinate_transformation_mode; as ONNX Runtime, Harness
 * uses asymmetric coordinates and, for nearest, floor (ceil when the axis
 * is downsampled). Output sizes from scales are floor(dim * scale); roi
 * does not enter them (as the reference, ONNX shape inference and ONNX
 * Runtime).
 *
 * Run-time scales and roi. When scales (or tf_crop_and_resize's roi) is not
 * a compile-time constant, the output shape is the one the model declares
 * (compiler/ops/dynamic.h) and the axes the run-time values touch ("run-time
 * axes") get their tables at run time: a preamble kernel reads scales and
 * roi and computes, per output index, the same source offsets, weights and
 * outside flags as the C code above (same float64 arithmetic, in IR) into
 * the node's workspace; the main kernel then reads those tables instead of
 * module constants. Run-time axes are always gathers (nearest) or 2/4-tap
 * blends (linear/cubic); antialias needs constant scales. Constant inputs
 * keep the compile-time path. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/dynamic.h"
#include "compiler/ops/movement.h"


typedef enum { MODE_NEAREST, MODE_LINEAR, MODE_CUBIC } interp_mode;
typedef enum {
  CT_HALF_PIXEL,
  CT_HALF_PIXEL_SYMMETRIC,
  CT_PYTORCH_HALF_PIXEL,
  CT_ALIGN_CORNERS,
  CT_ASYMMETRIC,
  CT_TF_CROP_AND_RESIZE,
  CT_TF_HALF_PIXEL_FOR_NN,
} coord_mode;
typedef enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_OPSET10 } nearest_mode;

typedef struct resize_plan {
  int rank;
  interp_mode mode;
  coord_mode ct;
  nearest_mode nm;
  double cubic_a, extrapolation;
  bool exclude_outside, antialias;
  int64_t in[HC_MAX_RANK], out[HC_MAX_RANK];
  double scale[HC_MAX_RANK];  /* scale used by the coordinate transformation */
  double length[HC_MAX_RANK]; /* length_resized as the reference computes it */
  double roi_lo[HC_MAX_RANK], roi_hi[HC_MAX_RANK];
  /* Run-time inputs: axis d reads scales[scale_at[d]] / roi[roi_at[d]] and
   * roi[na + roi_at[d]] at run time (see the file comment). */
  int na;
  bool rt_scale[HC_MAX_RANK], rt_roi[HC_MAX_RANK], any_rt;
  int scale_at[HC_MAX_RANK], roi_at[HC_MAX_RANK];
} resize_plan;

/* ---- attributes and inputs ----------------------------------------------------- */

static hx_status_t parse_attrs(const hc_node* n, resize_plan* p) {
  static const char* const v11[] = {"coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
                                    "extrapolation_value", "nearest_mode", NULL};
  static const char* const v18[] = {"antialias", "axes", "keep_aspect_ratio_policy", NULL};
  for (int i = 0; v11[i]; ++i)
    if (n->opset < 11 && hc_node_attr(n, v11[i]))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute '%s' exists from opset 11 on", v11[i]);
  for (int i = 0; v18[i]; ++i)
    if (n->opset < 18 && hc_node_attr(n, v18[i]))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute '%s' exists from opset 18 on", v18[i]);

  const char* m = hc_attr_string(n, "mode", "nearest");
  if (!strcmp(m, "nearest")) p->mode = MODE_NEAREST;
  else if (!strcmp(m, "linear")) p->mode = MODE_LINEAR;
  else if (!strcmp(m, "cubic") && n->opset >= 11) p->mode = MODE_CUBIC;
  else
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "mode '%s' is not one of nearest, linear%s", m,
                         n->opset >= 11 ? ", cubic" : " (opset 10)");

  const char* ct = hc_attr_string(n, "coordinate_transformation_mode", "half_pixel");
  if (n->opset < 11) p->ct = CT_ASYMMETRIC;
  else if (!strcmp(ct, "half_pixel")) p->ct = CT_HALF_PIXEL;
  else if (!strcmp(ct, "half_pixel_symmetric") && n->opset >= 19) p->ct = CT_HALF_PIXEL_SYMMETRIC;
  else if (!strcmp(ct, "pytorch_half_pixel")) p->ct = CT_PYTORCH_HALF_PIXEL;
  else if (!strcmp(ct, "align_corners")) p->ct = CT_ALIGN_CORNERS;
  else if (!strcmp(ct, "asymmetric")) p->ct = CT_ASYMMETRIC;
  else if (!strcmp(ct, "tf_crop_and_resize")) p->ct = CT_TF_CROP_AND_RESIZE;
  else if (!strcmp(ct, "tf_half_pixel_for_nn") && n->opset < 13) p->ct = CT_TF_HALF_PIXEL_FOR_NN;
  else
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "coordinate_transformation_mode '%s' is not valid in opset %d (half_pixel, "
                         "%spytorch_half_pixel, align_corners, asymmetric, tf_crop_and_resize%s)",
                         ct, n->opset, n->opset >= 19 ? "half_pixel_symmetric, " : "",
                         n->opset < 13 ? ", tf_half_pixel_for_nn" : "");

  const char* nm = hc_attr_string(n, "nearest_mode", "round_prefer_floor");
  if (n->opset < 11) p->nm = NM_OPSET10;
  else if (!strcmp(nm, "round_prefer_floor")) p->nm = NM_ROUND_PREFER_FLOOR;
  else if (!strcmp(nm, "round_prefer_ceil")) p->nm = NM_ROUND_PREFER_CEIL;
  else if (!strcmp(nm, "floor")) p->nm = NM_FLOOR;
  else if (!strcmp(nm, "ceil")) p->nm = NM_CEIL;
  else
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "nearest_mode '%s' is not one of round_prefer_floor, round_prefer_ceil, floor, ceil", nm);

  p->cubic_a = hc_attr_float(n, "cubic_coeff_a", -0.75f);
  p->extrapolation = hc_attr_float(n, "extrapolation_value", 0.0f);
  p->exclude_outside = hc_attr_int(n, "exclude_outside", 0) != 0;
  int64_t aa = hc_attr_int(n, "antialias", 0);
  if (aa != 0 && aa != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "antialias must be 0 or 1, got %lld", (long long)aa);
  /* Antialiasing widens linear and cubic filters; nearest ignores it. */
  p->antialias = aa == 1 && p->mode != MODE_NEAREST;
  return HX_OK;
}

/* A float input (roi, scales) read at compile time. An omitted or empty
 * input is "not given" (*count = 0). */
static hx_status_t const_floats(const hc_node* n, int input, const char* what, double* out, int cap, int* count) {
  *count = 0;
  const hc_value* v = hc_input(n, input);
  if (!v || hc_value_numel(v) == 0) return HX_OK;
  if (v->kind != HC_VALUE_CONST)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                         "input %d ('%s', %s) determines the output and must be known at compile time; it is computed "
                         "at run time here (freeze it with --constant %s=FILE.pb if it is a graph input)",
                         input, v->name, what, v->name);
  if (!hc_dtype_is_float(v->dtype))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d ('%s', %s) must be a float tensor, got %s", input,
                         v->name, what, hx_dtype_name(v->dtype));
  if (v->rank != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d ('%s', %s) must be 1-D, got rank %d", input, v->name,
                         what, v->rank);
  int64_t c = hc_value_numel(v);
  if (c > cap)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d ('%s', %s) has %lld entries, expected at most %d",
                         input, v->name, what, (long long)c, cap);
  for (int64_t i = 0; i < c; ++i) hc_value_const_f64(v, i, &out[i]);
  *count = (int)c;
  return HX_OK;
}

/* A float input (scales, roi) that is read at run time: checks its type and
 * that it is 1-D with `count` entries. */
static hx_status_t runtime_floats(const hc_node* n, int input, const char* what, int64_t count) {
  const hc_value* v = hc_input(n, input);
  if (!hc_dtype_is_float(v->dtype))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d ('%s', %s) must be a float tensor, got %s", input,
                         v->name, what, hx_dtype_name(v->dtype));
  if (v->rank != 1 || v->dims[0] != count)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d ('%s', %s) must be 1-D with %lld entries", input,
                         v->name, what, (long long)count);
  return HX_OK;
}

/* Whether optional input i is given, non-empty and not a constant. */
static bool runtime_input(const hc_node* n, int i) {
  const hc_value* v = hc_input(n, i);
  return v && hc_value_numel(v) > 0 && v->kind != HC_VALUE_CONST;
}

/* Fills the plan: attributes, output sizes, per-axis scales and roi. */
static hx_status_t make_plan(const hc_node* n, resize_plan* p) {
  const hc_value* x = n->inputs[0];
  memset(p, 0, sizeof *p);
  int rank = p->rank = x->rank;
  HX_RETURN_IF_ERROR(parse_attrs(n, p));

  /* axes (18+): scales, sizes and roi list only these axes. */
  int64_t axes[HC_MAX_RANK];
  int na = hc_attr_ints(n, "axes", axes, HC_MAX_RANK);
  if (na == -2) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axes has more entries than the rank %d", rank);
  bool seen[HC_MAX_RANK] = {0};
  if (na < 0) {
    na = rank;
    for (int d = 0; d < rank; ++d) axes[d] = d;
  }
  for (int i = 0; i < na; ++i) {
    HX_RETURN_IF_ERROR(hc_norm_axis(n, axes[i], rank, &axes[i]));
    if (seen[axes[i]])
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axis %lld appears twice in axes", (long long)axes[i]);
    seen[axes[i]] = true;
  }

  double scales[HC_MAX_RANK], roi[HC_MAX_RANK * 2];
  int64_t sizes[HC_MAX_RANK];
  int ns = 0, nz = 0, nr = 0;
  int scales_input = n->opset < 11 ? 1 : 2;
  bool scales_rt = runtime_input(n, scales_input);
  if (scales_rt)
    ns = (int)(hc_value_numel(n->inputs[scales_input]) < HC_MAX_RANK + 1 ? hc_value_numel(n->inputs[scales_input])
                                                                          : HC_MAX_RANK + 1);
  else
    HX_RETURN_IF_ERROR(const_floats(n, scales_input, "scales", scales, HC_MAX_RANK, &ns));
  if (n->opset >= 11) {
    const hc_value* sz = hc_input(n, 3);
    if (sz && hc_value_numel(sz) > 0) HX_RETURN_IF_ERROR(hc_const_ints(n, 3, sizes, HC_MAX_RANK, &nz));
  }
  if (ns > 0 && nz > 0)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "give either scales or sizes, not both");
  if (ns == 0 && nz == 0)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "one of scales or sizes must be given (non-empty)");
  if ((ns > 0 ? ns : nz) != na)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "%s has %d entries, expected %d (%s)",
                         ns > 0 ? "scales" : "sizes", ns > 0 ? ns : nz, na,
                         na == rank ? "the input rank" : "the number of axes");

  for (int d = 0; d < rank; ++d) {
    p->in[d] = p->out[d] = x->dims[d];
    p->scale[d] = 1.0;
    p->length[d] = (double)x->dims[d];
    p->roi_lo[d] = 0.0;
    p->roi_hi[d] = 1.0;
  }
  p->na = na;
  if (ns > 0 && scales_rt) {
    /* Output shape from the model's declaration; scales read at run time. */
    HX_RETURN_IF_ERROR(runtime_floats(n, scales_input, "scales", na));
    int drank;
    int64_t ddims[HC_MAX_RANK];
    if (!hc_declared_shape(n->outputs[0], &drank, ddims)) return hc_dyn_need_declared(n, scales_input, "scales");
    if (drank != rank)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "output '%s' is declared with rank %d, expected %d",
                           n->outputs[0]->name, drank, rank);
    for (int d = 0; d < rank; ++d)
      if (!seen[d] && ddims[d] != p->in[d])
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                             "output '%s' is declared with %lld at axis %d, which is not resized (expected %lld)",
                             n->outputs[0]->name, (long long)ddims[d], d, (long long)p->in[d]);
    for (int i = 0; i < na; ++i) {
      int64_t d = axes[i];
      p->out[d] = ddims[d];
      p->rt_scale[d] = true;
      p->scale_at[d] = i;
    }
  } else if (ns > 0) {
    for (int i = 0; i < na; ++i) {
      int64_t d = axes[i];
      float s = (float)scales[i];
      if (!(s > 0.0f) || !isfinite(s))
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "scales[%d] = %g must be positive", i, scales[i]);
      double o = floor((double)s * (double)p->in[d]);
      if (o > (double)INT64_MAX / 2)
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "scales[%d] = %g gives a huge output", i, scales[i]);
      p->out[d] = (int64_t)o;
      p->scale[d] = (double)s;
      /* The reference multiplies the float32 scale by the length in float32. */
      p->length[d] = (double)(s * (float)p->in[d]);
    }
  } else {
    const char* policy = hc_attr_string(n, "keep_aspect_ratio_policy", "stretch");
    for (int i = 0; i < na; ++i)
      if (sizes[i] < 0)
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "sizes[%d] = %lld is negative", i, (long long)sizes[i]);
    if (!strcmp(policy, "stretch")) {
      for (int i = 0; i < na; ++i) {
        int64_t d = axes[i];
        p->out[d] = sizes[i];
        p->scale[d] = p->in[d] ? (double)sizes[i] / (double)p->in[d] : 1.0;
        p->length[d] = p->scale[d] * (double)p->in[d];
      }
    } else if (!strcmp(policy, "not_larger") || !strcmp(policy, "not_smaller")) {
      bool larger = !strcmp(policy, "not_smaller");
      double s = 0.0;
      for (int i = 0; i < na; ++i) {
        int64_t d = axes[i];
        double r = p->in[d] ? (double)sizes[i] / (double)p->in[d] : 1.0;
        if (i == 0 || (larger ? r > s : r < s)) s = r;
      }
      for (int i = 0; i < na; ++i) {
        int64_t d = axes[i];
        p->out[d] = (int64_t)(s * (double)p->in[d] + 0.5); /* round half up */
        p->scale[d] = s;
        p->length[d] = s * (double)p->in[d];
      }
    } else {
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "keep_aspect_ratio_policy '%s' is not one of stretch, not_larger, not_smaller", policy);
    }
  }

  if (p->ct == CT_TF_CROP_AND_RESIZE) {
    if (n->opset < 11 || !hc_input(n, 1))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "tf_crop_and_resize needs the roi input");
    if (runtime_input(n, 1)) {
      HX_RETURN_IF_ERROR(runtime_floats(n, 1, "roi", 2 * na));
      for (int i = 0; i < na; ++i) {
        p->rt_roi[axes[i]] = true;
        p->roi_at[axes[i]] = i;
      }
    } else {
      HX_RETURN_IF_ERROR(const_floats(n, 1, "roi", roi, HC_MAX_RANK * 2, &nr));
      if (nr != 2 * na)
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "roi has %d entries, expected 2 * %d", nr, na);
      for (int i = 0; i < na; ++i) {
        p->roi_lo[axes[i]] = roi[i];
        p->roi_hi[axes[i]] = roi[na + i];
      }
    }
  }
  for (int d = 0; d < rank; ++d) p->any_rt |= p->rt_scale[d] || p->rt_roi[d];
  if (p->any_rt && p->antialias)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                         "antialias = 1 needs compile-time scales and roi; freeze them with --constant NAME=FILE.pb");

  int64_t total = 1;
  for (int d = 0; d < rank; ++d) total *= p->out[d];
  for (int d = 0; d < rank && total > 0; ++d)
    if (p->in[d] == 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axis %d is empty: there is nothing to resample", d);
  return HX_OK;
}

/* ---- per-axis taps -------------------------------------------------------------- */

typedef struct axis_taps {
  int K;               /* taps per output index */
  int64_t* idx;        /* [out][K] source indices, edge-clamped */
  double* w;           /* [out][K] weights */
  unsigned char* oob;  /* [out] tf_crop_and_resize: outside the input (NULL when never) */
} axis_taps;

/* Releases the tables of one axis. */
static void free_taps(axis_taps* t) {
  free(t->idx);
  free(t->w);
  free(t->oob);
  memset(t, 0, sizeof *t);
}

/* Source coordinate of output index x (ONNX reference arithmetic). Sets
 * *outside for tf_crop_and_resize samples beyond the input. */
static double source_coord(const resize_plan* p, int d, int64_t xi, bool* outside) {
  double x = (double)xi, in = (double)p->in[d], ow = p->length[d], s = p->scale[d];
  *outside = false;
  switch (p->ct) {
    case CT_ALIGN_CORNERS: return ow == 1.0 ? 0.0 : x * (in - 1) / (ow - 1);
    case CT_ASYMMETRIC: return x / s;
    case CT_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / s;
    case CT_PYTORCH_HALF_PIXEL: return ow == 1.0 ? -0.5 : (x + 0.5) / s - 0.5;
    case CT_HALF_PIXEL: return (x + 0.5) / s - 0.5;
    case CT_HALF_PIXEL_SYMMETRIC: {
      double adjustment = (double)p->out[d] / ow;
      double offset = in / 2 * (1 - adjustment);
      return offset + (x + 0.5) / s - 0.5;
    }
    case CT_TF_CROP_AND_RESIZE: {
      double lo = p->roi_lo[d], hi = p->roi_hi[d];
      double xo = ow == 1.0 ? (hi - lo) * (in - 1) / 2 : x * (hi - lo) * (in - 1) / (ow - 1);
      xo += lo * (in - 1);
      *outside = xo < 0 || xo > in - 1;
      return xo;
    }
  }
  return x;
}

/* Cubic convolution kernel with parameter A. */
static double cubic_kernel(double x, double A) {
  x = fabs(x);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0.0;
}

/* Taps per output index of an interpolating axis (an even count: they sit
 * at floor + i for i in [1 - K/2, K/2]). */
static int tap_count(const resize_plan* p, double scale) {
  if (p->mode == MODE_NEAREST) return 1;
  int base = p->mode == MODE_LINEAR ? 1 : 2;
  if (!p->antialias || scale >= 1.0) return 2 * base;
  /* Antialiasing stretches the filter by 1/scale: taps from
   * floor(-base/scale) + 1 to its mirror. */
  int64_t start = (int64_t)floor(-(double)base / scale) + 1;
  return (int)(2 - 2 * start);
}

/* Filter weights for the K taps at ratio (the sample's distance from the
 * tap 1 - K/2 + (K/2 - 1), i.e. from its floor), per the reference. */
static void tap_weights(const resize_plan* p, double ratio, double scale, int K, double* w) {
  double A = p->cubic_a;
  if (!p->antialias) {
    if (p->mode == MODE_LINEAR) {
      w[0] = 1 - ratio;
      w[1] = ratio;
    } else {
      w[0] = ((A * (ratio + 1) - 5 * A) * (ratio + 1) + 8 * A) * (ratio + 1) - 4 * A;
      w[1] = ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1;
      w[2] = ((A + 2) * (1 - ratio) - (A + 3)) * (1 - ratio) * (1 - ratio) + 1;
      w[3] = ((A * ((1 - ratio) + 1) - 5 * A) * ((1 - ratio) + 1) + 8 * A) * ((1 - ratio) + 1) - 4 * A;
    }
    return;
  }
  if (scale > 1.0) scale = 1.0;
  double sum = 0;
  for (int k = 0; k < K; ++k) {
    double arg = ((double)(k + 1 - K / 2) - ratio) * scale;
    w[k] = p->mode == MODE_LINEAR ? fmax(0.0, fmin(1.0, 1 - fabs(arg))) : cubic_kernel(arg, A);
    sum += w[k];
  }
  for (int k = 0; k < K; ++k) w[k] /= sum;
}

/* Nearest source index of coordinate xo (before clamping). */
static int64_t nearest_index(const resize_plan* p, int d, double xo) {
  double f = floor(xo);
  if (p->nm == NM_OPSET10) return (int64_t)(p->scale[d] < 1.0 ? ceil(xo) : f);
  if (xo == f) return (int64_t)f;
  double r = xo - f;
  switch (p->nm) {
    case NM_ROUND_PREFER_FLOOR: return (int64_t)f + (r > 0.5);
    case NM_ROUND_PREFER_CEIL: return (int64_t)f + (r >= 0.5);
    case NM_FLOOR: return (int64_t)f;
    default: return (int64_t)f + 1;
  }
}

static int64_t clamp_index(int64_t i, int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

/* Computes the taps of axis d, then shrinks them to one when every output
 * index has a single tap of weight 1. */
static hx_status_t axis_taps_make(const resize_plan* p, int d, axis_taps* t) {
  int64_t out = p->out[d], in = p->in[d];
  int K = tap_count(p, p->scale[d]);
  memset(t, 0, sizeof *t);
  t->K = K;
  size_t cells = (size_t)(out > 0 ? out : 1) * (size_t)K;
  t->idx = calloc(cells, sizeof(int64_t));
  t->w = calloc(cells, sizeof(double));
  if (!t->idx || !t->w) {
    free_taps(t);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  for (int64_t o = 0; o < out; ++o) {
    int64_t* idx = t->idx + o * K;
    double* w = t->w + o * K;
    bool outside;
    double xo = source_coord(p, d, o, &outside);
    if (outside) {
      if (!t->oob && !(t->oob = calloc((size_t)out, 1))) {
        free_taps(t);
        return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
      }
      t->oob[o] = 1; /* taps stay at index 0 with weight 0 */
      continue;
    }
    if (p->mode == MODE_NEAREST) {
      idx[0] = clamp_index(nearest_index(p, d, xo), in);
      w[0] = 1.0;
      continue;
    }
    /* The reference prefers the sample on the left: an exact sample index
     * counts as ratio 1 from its left neighbour. */
    double f = floor(xo), ratio = xo - f;
    if (ratio == 0.0) {
      f -= 1;
      ratio = 1.0;
    }
    tap_weights(p, ratio, p->scale[d], K, w);
    double sum = 0;
    for (int k = 0; k < K; ++k) {
      int64_t pos = (int64_t)f + k + 1 - K / 2;
      if (p->exclude_outside && (pos < 0 || pos >= in)) w[k] = 0;
      sum += w[k];
      idx[k] = clamp_index(pos, in);
    }
    if (p->exclude_outside && sum != 0)
      for (int k = 0; k < K; ++k) w[k] /= sum;
  }

  if (K > 1) {
    bool single = true;
    for (int64_t o = 0; o < out && single; ++o) {
      if (t->oob && t->oob[o]) continue;
      int nz = 0;
      for (int k = 0; k < K; ++k)
        if (t->w[o * K + k] != 0) {
          ++nz;
          if (t->w[o * K + k] != 1.0) single = false;
        }
      if (nz != 1) single = false;
    }
    if (single) {
      for (int64_t o = 0; o < out; ++o) {
        int64_t pick = 0;
        for (int k = 0; k < K; ++k)
          if (t->w[o * K + k] != 0) pick = t->idx[o * K + k];
        t->idx[o] = pick;
        t->w[o] = 1.0;
      }
      t->K = 1;
    }
  }
  return HX_OK;
}

/* Whether axis d maps every output index to the same input index. */
static bool taps_identity(const resize_plan* p, int d, const axis_taps* t) {
  if (t->K != 1 || t->oob || p->out[d] != p->in[d]) return false;
  for (int64_t o = 0; o < p->out[d]; ++o)
    if (t->idx[o] != o) return false;
  return true;
}

/* ---- infer ------------------------------------------------------------------------ */

/* Checks inputs and attributes and sets the resized shape. */
static hx_status_t infer_resize(hc_graph* g, hc_node* n) {
  if (n->opset < 11)
    HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 2, 1, 1));
  else if (n->opset < 13)
    HX_RETURN_IF_ERROR(hc_check_arity(n, 3, 4, 1, 1));
  else
    HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 4, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  const hc_value* x = n->inputs[0];
  if (x->rank < 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "X must have rank >= 1, got a scalar");
  resize_plan p;
  HX_RETURN_IF_ERROR(make_plan(n, &p));
  if (p.mode != MODE_NEAREST && !hc_dtype_is_float(x->dtype))
    return hc_node_error(n, HX_STATUS_UNSUPPORTED, "mode '%s' interpolates and needs a float input; X is %s",
                         p.mode == MODE_LINEAR ? "linear" : "cubic", hx_dtype_name(x->dtype));
  hc_set_output(n, 0, x->dtype, p.rank, p.out);
  return HX_OK;
}

/* ---- lowering -------------------------------------------------------------------- */

enum { AX_IDENTITY, AX_GATHER, AX_BLEND };

/* Per-axis kernel state: tables (in module globals) and the values that
 * select an output index's slice of them. */
typedef struct axis_code {
  int kind;
  int K;
  int64_t stride;        /* input element stride of the axis */
  hc_mv_table off;       /* [out][K] source offsets (index * stride) */
  LLVMValueRef w;        /* [out][K] weights (blend) */
  hc_mv_table oob;       /* [out] outside flags, when any */
  bool has_oob;
} axis_code;

typedef struct resize_emit {
  hc_kb* kb;
  hx_dtype_t dt;
  LLVMTypeRef ct;         /* compute type */
  LLVMValueRef src;
  int nblend;             /* blend axes before the last one */
  int blend_axes[HC_MAX_RANK];
  LLVMValueRef cell[HC_MAX_RANK]; /* o_d * K_d for those axes */
  axis_code* ax;
  int last;
  LLVMValueRef acc;       /* alloca */
} resize_emit;

/* Taps this many or fewer are unrolled in the IR (then vectorisable). */
#define RESIZE_UNROLL 8
/* Widest input row the separable path blends on the stack (floats). */
#define RESIZE_ROW_MAX 4096

/* Input element `index` in the compute type (a float type here). */
static LLVMValueRef load_x(resize_emit* e, LLVMValueRef index) {
  hc_kb* kb = e->kb;
  if (e->dt == HX_DTYPE_BFLOAT16) /* widened with integer ops, see hc_kb_bf16_to_f32 */
    return hc_kb_bf16_to_f32(kb, hc_mv_load_in(kb, kb->t_i16, e->src, index));
  LLVMValueRef v = hc_mv_load_in(kb, hc_kb_storage_type(kb, e->dt), e->src, index);
  return e->dt == HX_DTYPE_FLOAT16 ? LLVMBuildFPExt(kb->b, v, e->ct, "") : v;
}

/* Value of the last axis at output column j, from source offset base:
 * a load, or the weighted sum of its taps. */
static LLVMValueRef last_axis_value(resize_emit* e, LLVMValueRef base, LLVMValueRef j) {
  hc_kb* kb = e->kb;
  axis_code* a = &e->ax[e->last];
  if (a->kind == AX_IDENTITY) return load_x(e, hc_kb_iadd(kb, base, j));
  if (a->kind == AX_GATHER) return load_x(e, hc_kb_iadd(kb, base, hc_mv_table_get(kb, a->off, j)));
  LLVMValueRef cell = hc_kb_imul(kb, j, hc_kb_i64(kb, a->K));
  LLVMValueRef sum = NULL;
  for (int k = 0; k < a->K; ++k) {
    LLVMValueRef c = hc_kb_iadd(kb, cell, hc_kb_i64(kb, k));
    LLVMValueRef v = load_x(e, hc_kb_iadd(kb, base, hc_mv_table_get(kb, a->off, c)));
    LLVMValueRef w = LLVMBuildLoad2(kb->b, e->ct, hc_mv_gep(kb, e->ct, a->w, c), "");
    sum = sum ? hc_kb_fma(kb, e->dt, v, w, sum) : hc_kb_mul(kb, e->dt, v, w);
  }
  return sum;
}

/* Accumulates into e->acc the taps of blend axes i.. (outer ones), with
 * offset base and weight product wprod so far. */
static void blend_taps(resize_emit* e, int i, LLVMValueRef base, LLVMValueRef wprod, LLVMValueRef j) {
  hc_kb* kb = e->kb;
  if (i == e->nblend) {
    LLVMValueRef v = last_axis_value(e, base, j);
    if (wprod) v = hc_kb_mul(kb, e->dt, v, wprod);
    LLVMValueRef acc = LLVMBuildLoad2(kb->b, e->ct, e->acc, "");
    LLVMBuildStore(kb->b, hc_kb_add(kb, e->dt, acc, v), e->acc);
    return;
  }
  axis_code* a = &e->ax[e->blend_axes[i]];
  int64_t rest = 1;
  for (int r = i; r < e->nblend; ++r) rest *= e->ax[e->blend_axes[r]].K;
  if (rest <= RESIZE_UNROLL) {
    for (int k = 0; k < a->K; ++k) {
      LLVMValueRef c = hc_kb_iadd(kb, e->cell[i], hc_kb_i64(kb, k));
      LLVMValueRef off = hc_kb_iadd(kb, base, hc_mv_table_get(kb, a->off, c));
      LLVMValueRef w = LLVMBuildLoad2(kb->b, e->ct, hc_mv_gep(kb, e->ct, a->w, c), "");
      blend_taps(e, i + 1, off, wprod ? hc_kb_mul(kb, e->dt, wprod, w) : w, j);
    }
    return;
  }
  hc_loop l;
  LLVMValueRef k = hc_loop_begin(kb, &l, hc_kb_i64(kb, 0), hc_kb_i64(kb, a->K), "tap");
  LLVMValueRef c = hc_kb_iadd(kb, e->cell[i], k);
  LLVMValueRef off = hc_kb_iadd(kb, base, hc_mv_table_get(kb, a->off, c));
  LLVMValueRef w = LLVMBuildLoad2(kb->b, e->ct, hc_mv_gep(kb, e->ct, a->w, c), "");
  blend_taps(e, i + 1, off, wprod ? hc_kb_mul(kb, e->dt, wprod, w) : w, j);
  hc_loop_end(kb, &l);
}

/* Whether entry i of a 0/1 flag table is set (i1). */
static LLVMValueRef flag_at(hc_kb* kb, hc_mv_table t, LLVMValueRef i) {
  return LLVMBuildICmp(kb->b, LLVMIntNE, hc_mv_table_get(kb, t, i), hc_kb_i64(kb, 0), "");
}

/* ---- run-time tables ------------------------------------------------------------ */

/* Taps per output index of a run-time axis (no antialias there). */
static int rt_taps(const resize_plan* p) { return p->mode == MODE_NEAREST ? 1 : p->mode == MODE_LINEAR ? 2 : 4; }

static bool rt_axis(const resize_plan* p, int d) { return p->rt_scale[d] || p->rt_roi[d]; }

/* Workspace layout of the run-time tables: per run-time axis, offsets
 * [out][K] (int64), weights [out][K] (8 bytes each, read in the compute
 * type) when K > 1, outside flags [out] (int64) for tf_crop_and_resize.
 * Returns the total bytes. */
static int64_t rt_layout(const resize_plan* p, int64_t* off, int64_t* w, int64_t* oob) {
  int64_t cur = 0;
  int K = rt_taps(p);
  for (int d = 0; d < p->rank; ++d) {
    off[d] = w[d] = oob[d] = -1;
    if (!rt_axis(p, d)) continue;
    off[d] = cur;
    cur += p->out[d] * K * 8;
    if (K > 1) {
      w[d] = cur;
      cur += p->out[d] * K * 8;
    }
    if (p->ct == CT_TF_CROP_AND_RESIZE) {
      oob[d] = cur;
      cur += p->out[d] * 8;
    }
  }
  return cur;
}

static uint64_t resize_workspace(const hc_node* n) {
  resize_plan p;
  hx_status_t st = make_plan(n, &p);
  if (st != HX_OK) {
    hx_status_free(st);
    return 0;
  }
  int64_t off[HC_MAX_RANK], w[HC_MAX_RANK], oob[HC_MAX_RANK];
  return p.any_rt && hc_value_numel(n->outputs[0]) > 0 ? (uint64_t)rt_layout(&p, off, w, oob) : 0;
}

/* float64 helpers for the table kernel. */
static LLVMValueRef dconst(hc_kb* kb, double v) { return LLVMConstReal(kb->t_f64, v); }
static LLVMValueRef dcall(hc_kb* kb, const char* intrinsic, LLVMValueRef x) {
  return hc_kb_intrinsic(kb, intrinsic, kb->t_f64, &x, 1);
}
static LLVMValueRef dsel(hc_kb* kb, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(kb->b, c, a, b, "");
}
static LLVMValueRef fcmp(hc_kb* kb, LLVMRealPredicate pr, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFCmp(kb->b, pr, a, b, "");
}
/* x clamped to [lo, hi] as float64; NaN becomes lo. */
static LLVMValueRef dclamp(hc_kb* kb, LLVMValueRef x, double lo, double hi) {
  LLVMValueRef c = dsel(kb, fcmp(kb, LLVMRealOGE, x, dconst(kb, lo)), x, dconst(kb, lo));
  return dsel(kb, fcmp(kb, LLVMRealOGT, c, dconst(kb, hi)), dconst(kb, hi), c);
}
/* Element i of a float input, as float64 (through float32 when f32 is set,
 * as the reference reads scales). */
static LLVMValueRef load_real(hc_kb* kb, const hc_value* v, int64_t i, bool f32) {
  LLVMValueRef x = hc_kb_load(kb, v->dtype, hc_kb_ptr(kb, v), hc_kb_i64(kb, i));
  if (LLVMTypeOf(x) == kb->t_f64 && f32) x = LLVMBuildFPTrunc(kb->b, x, kb->t_f32, "");
  return LLVMTypeOf(x) == kb->t_f64 ? x : LLVMBuildFPExt(kb->b, x, kb->t_f64, "");
}

/* source_coord() in IR: the source coordinate of output index x (float64)
 * with run-time scale s, length ow and roi [lo, hi]; *outside for
 * tf_crop_and_resize. */
static LLVMValueRef rt_source_coord(hc_kb* kb, const resize_plan* p, int d, LLVMValueRef x, LLVMValueRef s,
                                    LLVMValueRef ow, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef* outside) {
  LLVMBuilderRef b = kb->b;
  double in = (double)p->in[d];
  LLVMValueRef half = dconst(kb, 0.5), one = dconst(kb, 1.0);
  LLVMValueRef ow_is_1 = fcmp(kb, LLVMRealOEQ, ow, one);
  LLVMValueRef hp = LLVMBuildFSub(b, LLVMBuildFDiv(b, LLVMBuildFAdd(b, x, half, ""), s, ""), half, "");
  *outside = LLVMConstInt(kb->t_i1, 0, 0);
  switch (p->ct) {
    case CT_ALIGN_CORNERS:
      return dsel(kb, ow_is_1, dconst(kb, 0.0),
                  LLVMBuildFDiv(b, LLVMBuildFMul(b, x, dconst(kb, in - 1), ""), LLVMBuildFSub(b, ow, one, ""), ""));
    case CT_ASYMMETRIC: return LLVMBuildFDiv(b, x, s, "");
    case CT_TF_HALF_PIXEL_FOR_NN: return LLVMBuildFDiv(b, LLVMBuildFAdd(b, x, half, ""), s, "");
    case CT_PYTORCH_HALF_PIXEL: return dsel(kb, ow_is_1, dconst(kb, -0.5), hp);
    case CT_HALF_PIXEL: return hp;
    case CT_HALF_PIXEL_SYMMETRIC: {
      LLVMValueRef adjustment = LLVMBuildFDiv(b, dconst(kb, (double)p->out[d]), ow, "");
      LLVMValueRef offset = LLVMBuildFMul(b, dconst(kb, in / 2), LLVMBuildFSub(b, one, adjustment, ""), "");
      return LLVMBuildFAdd(b, offset, hp, "");
    }
    case CT_TF_CROP_AND_RESIZE: {
      LLVMValueRef span = LLVMBuildFMul(b, LLVMBuildFSub(b, hi, lo, ""), dconst(kb, in - 1), "");
      LLVMValueRef mid = LLVMBuildFDiv(b, span, dconst(kb, 2.0), "");
      LLVMValueRef step = LLVMBuildFDiv(b, LLVMBuildFMul(b, x, span, ""), LLVMBuildFSub(b, ow, one, ""), "");
      LLVMValueRef xo = dsel(kb, ow_is_1, mid, step);
      xo = LLVMBuildFAdd(b, xo, LLVMBuildFMul(b, lo, dconst(kb, in - 1), ""), "");
      LLVMValueRef below = fcmp(kb, LLVMRealOLT, xo, dconst(kb, 0.0));
      *outside = LLVMBuildOr(b, below, fcmp(kb, LLVMRealOGT, xo, dconst(kb, in - 1)), "");
      return xo;
    }
  }
  return x;
}

/* The table kernel of the file comment: one task fills the tables of every
 * run-time axis (they are small: sum of out * K entries). */
static hx_status_t emit_runtime_tables(hc_lower_ctx* lc, hc_node* n, const resize_plan* p, const int64_t* in_strides) {
  const hc_value* x = n->inputs[0];
  int64_t off_at[HC_MAX_RANK], w_at[HC_MAX_RANK], oob_at[HC_MAX_RANK];
  rt_layout(p, off_at, w_at, oob_at);
  int K = rt_taps(p);
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "tables", 1, &kb));
  LLVMBuilderRef b = kb.b;
  LLVMTypeRef ct = hc_kb_compute_type(&kb, x->dtype);
  const hc_value* sv = hc_input(n, n->opset < 11 ? 1 : 2);
  const hc_value* rv = n->opset >= 11 ? hc_input(n, 1) : NULL;
  double A = p->cubic_a;
  for (int d = 0; d < p->rank; ++d) {
    if (!rt_axis(p, d)) continue;
    double in = (double)p->in[d];
    LLVMValueRef s, ow, lo, hi;
    if (p->rt_scale[d]) {
      LLVMValueRef sf = LLVMBuildFPTrunc(b, load_real(&kb, sv, p->scale_at[d], true), kb.t_f32, "");
      s = LLVMBuildFPExt(b, sf, kb.t_f64, "");
      ow = LLVMBuildFPExt(b, LLVMBuildFMul(b, sf, LLVMConstReal(kb.t_f32, (double)(float)in), ""), kb.t_f64, "");
    } else {
      s = dconst(&kb, p->scale[d]);
      ow = dconst(&kb, p->length[d]);
    }
    if (p->rt_roi[d]) {
      lo = load_real(&kb, rv, p->roi_at[d], false);
      hi = load_real(&kb, rv, p->na + p->roi_at[d], false);
    } else {
      lo = dconst(&kb, p->roi_lo[d]);
      hi = dconst(&kb, p->roi_hi[d]);
    }
    LLVMValueRef toff = hc_dyn_workspace_at(&kb, off_at[d]);
    LLVMValueRef tw = w_at[d] >= 0 ? hc_dyn_workspace_at(&kb, w_at[d]) : NULL;
    LLVMValueRef toob = oob_at[d] >= 0 ? hc_dyn_workspace_at(&kb, oob_at[d]) : NULL;
    LLVMValueRef stride = hc_kb_i64(&kb, in_strides[d]), last = hc_kb_i64(&kb, p->in[d] - 1);
    hc_loop l;
    LLVMValueRef o = hc_loop_begin(&kb, &l, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, p->out[d]), "o");
    LLVMValueRef outside;
    LLVMValueRef xo = rt_source_coord(&kb, p, d, LLVMBuildSIToFP(b, o, kb.t_f64, ""), s, ow, lo, hi, &outside);
    if (toob) hc_dyn_i64_store(&kb, toob, o, LLVMBuildZExt(b, outside, kb.t_i64, ""));
    LLVMValueRef f = dcall(&kb, "llvm.floor", xo);
    if (p->mode == MODE_NEAREST) {
      LLVMValueRef r = LLVMBuildFSub(b, xo, f, ""), idx;
      if (p->nm == NM_OPSET10) {
        idx = dsel(&kb, fcmp(&kb, LLVMRealOLT, s, dconst(&kb, 1.0)), dcall(&kb, "llvm.ceil", xo), f);
      } else {
        LLVMValueRef inc = p->nm == NM_ROUND_PREFER_FLOOR  ? fcmp(&kb, LLVMRealOGT, r, dconst(&kb, 0.5))
                           : p->nm == NM_ROUND_PREFER_CEIL ? fcmp(&kb, LLVMRealOGE, r, dconst(&kb, 0.5))
                           : p->nm == NM_FLOOR            ? LLVMConstInt(kb.t_i1, 0, 0)
                                                           : fcmp(&kb, LLVMRealOGT, r, dconst(&kb, 0.0));
        idx = LLVMBuildFAdd(b, f, LLVMBuildUIToFP(b, inc, kb.t_f64, ""), "");
      }
      LLVMValueRef i = LLVMBuildFPToSI(b, dclamp(&kb, idx, 0.0, in - 1), kb.t_i64, "");
      hc_dyn_i64_store(&kb, toff, o, hc_kb_imul(&kb, i, stride));
    } else {
      /* The left sample wins an exact hit: ratio 1 from its left neighbour. */
      LLVMValueRef r = LLVMBuildFSub(b, xo, f, "");
      LLVMValueRef exact = fcmp(&kb, LLVMRealOEQ, r, dconst(&kb, 0.0));
      f = dsel(&kb, exact, LLVMBuildFSub(b, f, dconst(&kb, 1.0), ""), f);
      r = dsel(&kb, exact, dconst(&kb, 1.0), r);
      LLVMValueRef w[4];
      if (p->mode == MODE_LINEAR) {
        w[0] = LLVMBuildFSub(b, dconst(&kb, 1.0), r, "");
        w[1] = r;
      } else {
        /* tap_weights(): cubic convolution at distances r + 1, r, 1 - r,
         * (1 - r) + 1, rounded as the C code rounds them. */
        LLVMValueRef rm = LLVMBuildFSub(b, dconst(&kb, 1.0), r, "");
        LLVMValueRef dist[4] = {LLVMBuildFAdd(b, r, dconst(&kb, 1.0), ""), r, rm,
                                LLVMBuildFAdd(b, rm, dconst(&kb, 1.0), "")};
        for (int k = 0; k < 4; ++k) {
          LLVMValueRef t = dist[k];
          if (k == 1 || k == 2) { /* ((A + 2) t - (A + 3)) t t + 1 */
            LLVMValueRef v = LLVMBuildFSub(b, LLVMBuildFMul(b, dconst(&kb, A + 2), t, ""), dconst(&kb, A + 3), "");
            w[k] = LLVMBuildFAdd(b, LLVMBuildFMul(b, LLVMBuildFMul(b, v, t, ""), t, ""), dconst(&kb, 1.0), "");
          } else { /* ((A t - 5A) t + 8A) t - 4A */
            LLVMValueRef v = LLVMBuildFSub(b, LLVMBuildFMul(b, dconst(&kb, A), t, ""), dconst(&kb, 5 * A), "");
            v = LLVMBuildFAdd(b, LLVMBuildFMul(b, v, t, ""), dconst(&kb, 8 * A), "");
            w[k] = LLVMBuildFSub(b, LLVMBuildFMul(b, v, t, ""), dconst(&kb, 4 * A), "");
          }
        }
      }
      LLVMValueRef fi = LLVMBuildFPToSI(b, dclamp(&kb, f, -16.0, in + 16.0), kb.t_i64, "");
      LLVMValueRef sum = dconst(&kb, 0.0), idx[4];
      for (int k = 0; k < K; ++k) {
        LLVMValueRef pos = hc_kb_iadd(&kb, fi, hc_kb_i64(&kb, k + 1 - K / 2));
        if (p->exclude_outside) {
          LLVMValueRef inside = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSGE, pos, hc_kb_i64(&kb, 0), ""),
                                             LLVMBuildICmp(b, LLVMIntSLE, pos, last, ""), "");
          w[k] = dsel(&kb, inside, w[k], dconst(&kb, 0.0));
          sum = LLVMBuildFAdd(b, sum, w[k], "");
        }
        idx[k] = hc_kb_imin(&kb, hc_kb_imax(&kb, pos, hc_kb_i64(&kb, 0)), last);
      }
      LLVMValueRef nonzero = fcmp(&kb, LLVMRealUNE, sum, dconst(&kb, 0.0));
      LLVMValueRef cell = hc_kb_imul(&kb, o, hc_kb_i64(&kb, K));
      for (int k = 0; k < K; ++k) {
        LLVMValueRef wk = w[k];
        if (p->exclude_outside) wk = dsel(&kb, nonzero, LLVMBuildFDiv(b, wk, sum, ""), wk);
        if (ct != kb.t_f64) wk = LLVMBuildFPTrunc(b, wk, ct, "");
        LLVMValueRef c = hc_kb_iadd(&kb, cell, hc_kb_i64(&kb, k));
        hc_dyn_i64_store(&kb, toff, c, hc_kb_imul(&kb, idx[k], stride));
        LLVMBuildStore(b, wk, hc_mv_gep(&kb, ct, tw, c));
      }
    }
    hc_loop_end(&kb, &l);
  }
  double cells = 0;
  for (int d = 0; d < p->rank; ++d)
    if (rt_axis(p, d)) cells += (double)p->out[d] * K;
  hc_kb_end(&kb, 30.0 * cells, 16.0 * cells);
  return HX_OK;
}

/* Builds the per-axis tables, then one kernel over output rows (see the
 * top of the file); an all-identity resize is a copy. */
static hx_status_t lower_resize(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* x = n->inputs[0];
  const hc_value* y = n->outputs[0];
  resize_plan p;
  HX_RETURN_IF_ERROR(make_plan(n, &p));
  int rank = p.rank, last = rank - 1;
  int64_t total = hc_value_numel(y);
  if (total == 0) return HX_OK;

  axis_taps taps[HC_MAX_RANK];
  memset(taps, 0, sizeof taps);
  hx_status_t st = HX_OK;
  for (int d = 0; d < rank && st == HX_OK; ++d)
    if (!rt_axis(&p, d)) st = axis_taps_make(&p, d, &taps[d]);
  bool identity = true, any_blend = false, any_oob = false;
  int kinds[HC_MAX_RANK];
  int64_t taps_total = 1;
  for (int d = 0; d < rank && st == HX_OK; ++d) {
    if (rt_axis(&p, d)) { /* tables built at run time */
      taps[d].K = rt_taps(&p);
      kinds[d] = taps[d].K == 1 ? AX_GATHER : AX_BLEND;
      any_oob |= p.ct == CT_TF_CROP_AND_RESIZE;
    } else {
      kinds[d] = taps_identity(&p, d, &taps[d]) ? AX_IDENTITY : taps[d].K == 1 ? AX_GATHER : AX_BLEND;
      any_oob |= taps[d].oob != NULL;
    }
    identity &= kinds[d] == AX_IDENTITY;
    any_blend |= kinds[d] == AX_BLEND;
    taps_total *= taps[d].K;
  }
  if (st == HX_OK && identity) { /* every axis keeps its samples: a copy */
    int64_t one = 1;
    st = hc_mv_strided_copy(lc, n, NULL, x, 0, &one, y, 0, &one, 1, &total, false);
  }
  if (st != HX_OK || identity) {
    for (int d = 0; d < rank; ++d) free_taps(&taps[d]);
    return st;
  }

  size_t esize = hx_dtype_size(x->dtype);
  int64_t in_strides[HC_MAX_RANK];
  hc_strides(rank, x->dims, in_strides);
  /* Units: output rows (all axes but the last), the row cut in blocks when
   * it is long. */
  int64_t W = p.out[last];
  int64_t per_task = hc_mv_units_per_task((int64_t)esize * taps_total); /* columns a task should take */
  int64_t JB = W <= 2 * per_task ? W : per_task;
  int64_t jblocks = (W + JB - 1) / JB;
  int64_t udims[HC_MAX_RANK + 1];
  for (int d = 0; d < last; ++d) udims[d] = p.out[d];
  udims[last] = jblocks;
  int64_t units = hc_shape_numel(rank, udims);
  int64_t upt = hc_mv_units_per_task(JB * (int64_t)esize * taps_total);
  int64_t rt_off[HC_MAX_RANK], rt_w[HC_MAX_RANK], rt_oob[HC_MAX_RANK];
  if (p.any_rt) {
    rt_layout(&p, rt_off, rt_w, rt_oob);
    st = emit_runtime_tables(lc, n, &p, in_strides);
    if (st != HX_OK) {
      for (int d = 0; d < rank; ++d) free_taps(&taps[d]);
      return st;
    }
  }

  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, hc_mv_tasks(units, upt), &kb));
  hx_dtype_t dt = x->dtype;
  LLVMTypeRef ct = hc_kb_compute_type(&kb, dt);
  axis_code ax[HC_MAX_RANK];
  memset(ax, 0, sizeof ax);
  for (int d = 0; d < rank; ++d) {
    axis_taps* t = &taps[d];
    axis_code* a = &ax[d];
    a->kind = kinds[d];
    a->K = t->K;
    a->stride = in_strides[d];
    if (rt_axis(&p, d)) { /* the tables the "tables" kernel filled */
      a->off = (hc_mv_table){hc_dyn_workspace_at(&kb, rt_off[d]), kb.t_i64};
      if (rt_w[d] >= 0) a->w = hc_dyn_workspace_at(&kb, rt_w[d]);
      if (rt_oob[d] >= 0) {
        a->oob = (hc_mv_table){hc_dyn_workspace_at(&kb, rt_oob[d]), kb.t_i64};
        a->has_oob = true;
      }
      continue;
    }
    int64_t cells = p.out[d] * t->K;
    if (a->kind != AX_IDENTITY) {
      for (int64_t c = 0; c < cells; ++c) t->idx[c] *= in_strides[d];
      a->off = hc_mv_int_table(&kb, t->idx, cells, "resize_off");
    }
    if (a->kind == AX_BLEND) a->w = hc_mv_real_table(&kb, ct, t->w, cells, "resize_w");
    if (t->oob) {
      int64_t* flags = malloc(sizeof(int64_t) * (size_t)p.out[d]);
      if (!flags) {
        st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
        break;
      }
      for (int64_t o = 0; o < p.out[d]; ++o) flags[o] = t->oob[o];
      a->oob = hc_mv_int_table(&kb, flags, p.out[d], "resize_outside");
      a->has_oob = true;
      free(flags);
    }
    if ((a->kind != AX_IDENTITY && !a->off.ptr) || (a->kind == AX_BLEND && !a->w) || (a->has_oob && !a->oob.ptr)) {
      st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
      break;
    }
  }
  for (int d = 0; d < rank; ++d) free_taps(&taps[d]);
  if (st != HX_OK) return st;

  resize_emit e = {.kb = &kb, .dt = dt, .ct = ct, .ax = ax, .last = last};
  e.src = hc_kb_ptr(&kb, x);
  /* Separable rows: with one blend axis besides the last (NCHW bilinear or
   * bicubic, H and W), the outer axis's taps are the same for a whole
   * output row. Its blend of the source rows is made once per row into a
   * stack row of the input's width, which the last axis then samples: per
   * output element, K_last taps from L1 instead of K_outer x K_last
   * gathered from x: bilinear 33x33 -> 130x130 over 21 channels 1.5x
   * faster, 28x28 -> 56x56 over 64 channels 1.2x (docs/performance.md);
   * outputs too large for the caches are bound by their stores either way.
   * For upsampling rows of float32 only (the stack row holds the compute
   * type, and each output block reuses it). */
  int outer = -1, nouter = 0;
  for (int d = 0; d < last; ++d)
    if (kinds[d] == AX_BLEND) {
      outer = d;
      ++nouter;
    }
  int64_t in_W = x->dims[last];
  bool separable = nouter == 1 && !any_oob && !p.any_rt && dt == HX_DTYPE_FLOAT32 && kinds[last] != AX_IDENTITY &&
                   in_W <= RESIZE_ROW_MAX && JB >= in_W && ax[outer].K <= RESIZE_UNROLL;
  LLVMValueRef row = separable ? hc_kb_alloca(&kb, LLVMArrayType2(ct, (uint64_t)in_W), "resize_row") : NULL;
  LLVMValueRef dst = hc_kb_ptr(&kb, y);
  if (any_blend) e.acc = hc_kb_alloca(&kb, ct, "acc");
  LLVMValueRef extrap = NULL;
  if (any_oob) {
    extrap = hc_kb_const(&kb, dt, p.extrapolation);
    if (!any_blend) extrap = hc_mv_storage_bits(&kb, dt, extrap);
  }

  hc_loop ul;
  LLVMValueRef u = hc_mv_units_begin(&kb, &ul, units, upt);
  LLVMValueRef iv[HC_MAX_RANK + 1];
  hc_mv_unflatten(&kb, u, rank, udims, iv);
  /* Row: offsets of identity/gather axes, table cells of blend axes. */
  LLVMValueRef base = hc_kb_i64(&kb, 0), outside = LLVMConstInt(kb.t_i1, 0, 0);
  LLVMValueRef drow = hc_kb_i64(&kb, 0);
  int64_t ostrides[HC_MAX_RANK];
  hc_strides(rank, p.out, ostrides);
  for (int d = 0; d < last; ++d) {
    axis_code* a = &ax[d];
    drow = hc_kb_iadd(&kb, drow, hc_kb_imul(&kb, iv[d], hc_kb_i64(&kb, ostrides[d])));
    if (a->kind == AX_IDENTITY)
      base = hc_kb_iadd(&kb, base, hc_kb_imul(&kb, iv[d], hc_kb_i64(&kb, a->stride)));
    else if (a->kind == AX_GATHER)
      base = hc_kb_iadd(&kb, base, hc_mv_table_get(&kb, a->off, iv[d]));
    else {
      e.blend_axes[e.nblend] = d;
      e.cell[e.nblend++] = hc_kb_imul(&kb, iv[d], hc_kb_i64(&kb, a->K));
    }
    if (a->has_oob) outside = LLVMBuildOr(kb.b, outside, flag_at(&kb, a->oob, iv[d]), "");
  }
  if (separable) {
    /* row[v] = sum_k w[k] x[base + off[k] + v]: a loop the vectoriser takes. */
    axis_code* a = &ax[outer];
    LLVMValueRef offs[RESIZE_UNROLL], ws[RESIZE_UNROLL];
    for (int k = 0; k < a->K; ++k) {
      LLVMValueRef c = hc_kb_iadd(&kb, e.cell[0], hc_kb_i64(&kb, k));
      offs[k] = hc_kb_iadd(&kb, base, hc_mv_table_get(&kb, a->off, c));
      ws[k] = LLVMBuildLoad2(kb.b, ct, hc_mv_gep(&kb, ct, a->w, c), "");
    }
    hc_loop vl;
    LLVMValueRef v = hc_loop_begin(&kb, &vl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, in_W), "v");
    LLVMValueRef sum = NULL;
    for (int k = 0; k < a->K; ++k) {
      LLVMValueRef xv = load_x(&e, hc_kb_iadd(&kb, offs[k], v));
      sum = sum ? hc_kb_fma(&kb, dt, xv, ws[k], sum) : hc_kb_mul(&kb, dt, xv, ws[k]);
    }
    LLVMBuildStore(kb.b, sum, LLVMBuildGEP2(kb.b, ct, row, &v, 1, ""));
    hc_loop_end(&kb, &vl);
    /* What follows (the output row's loop) reads the stack row through the
     * last axis alone. */
    e.src = row;
    e.nblend = 0;
    base = hc_kb_i64(&kb, 0);
  }
  LLVMValueRef jlo = hc_kb_imul(&kb, iv[last], hc_kb_i64(&kb, JB));
  LLVMValueRef jhi = hc_kb_imin(&kb, hc_kb_iadd(&kb, jlo, hc_kb_i64(&kb, JB)), hc_kb_i64(&kb, W));
  hc_loop jl;
  LLVMValueRef j = hc_loop_begin(&kb, &jl, jlo, jhi, "j");
  LLVMValueRef doff = hc_kb_iadd(&kb, drow, j);
  LLVMValueRef out_v;
  LLVMValueRef out_side = outside;
  if (ax[last].has_oob) out_side = LLVMBuildOr(kb.b, out_side, flag_at(&kb, ax[last].oob, j), "");
  if (!any_blend) {
    /* Pure gather: move the element's bits. */
    LLVMTypeRef et = hc_mv_elem_type(&kb, esize);
    axis_code* a = &ax[last];
    LLVMValueRef off = a->kind == AX_IDENTITY ? j : hc_mv_table_get(&kb, a->off, j);
    out_v = hc_mv_load_in(&kb, et, e.src, hc_kb_iadd(&kb, base, off));
    if (any_oob) out_v = LLVMBuildSelect(kb.b, out_side, extrap, out_v, "");
    hc_mv_store_out(&kb, et, dst, doff, out_v);
  } else {
    LLVMBuildStore(kb.b, LLVMConstReal(ct, 0.0), e.acc);
    blend_taps(&e, 0, base, NULL, j);
    out_v = LLVMBuildLoad2(kb.b, ct, e.acc, "");
    if (any_oob) out_v = LLVMBuildSelect(kb.b, out_side, extrap, out_v, "");
    /* bfloat16 narrows with integer rounding (see hc_kb_f32_to_bf16). */
    LLVMTypeRef st = hc_kb_storage_type(&kb, dt);
    if (dt == HX_DTYPE_FLOAT16) out_v = LLVMBuildFPTrunc(kb.b, out_v, st, "");
    if (dt == HX_DTYPE_BFLOAT16) {
      out_v = hc_kb_f32_to_bf16(&kb, out_v);
      st = kb.t_i16;
    }
    hc_mv_store_out(&kb, st, dst, doff, out_v);
  }
  hc_loop_end(&kb, &jl);
  hc_loop_end(&kb, &ul);
  double bytes = (double)hc_value_nbytes(y) + (double)hc_value_nbytes(x);
  hc_kb_end(&kb, any_blend ? 2.0 * (double)taps_total * (double)total : 0.0, bytes);
  return HX_OK;
}

static const char* const k_resize_attrs[] = {"antialias",
                                             "axes",
                                             "coordinate_transformation_mode",
                                             "cubic_coeff_a",
                                             "exclude_outside",
                                             "extrapolation_value",
                                             "keep_aspect_ratio_policy",
                                             "mode",
                                             "nearest_mode",
                                             NULL};

const hc_op_desc hc_op_resize = {"Resize", "", 10, 22, k_resize_attrs, 0, infer_resize, lower_resize, NULL,
                                 resize_workspace};
