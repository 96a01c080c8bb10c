/* Linear quantization: QuantizeLinear and DequantizeLinear (opsets 10-22)
 * and DynamicQuantizeLinear (opsets 11-22).
 *
 *   QuantizeLinear:   y = saturate(round_half_even(x / scale) + zero_point)
 *   DequantizeLinear: y = (x - zero_point) * scale
 *
 * The scale and zero point are per tensor (one value), per axis (opset 13:
 * a 1-D tensor along `axis`) or blocked (opset 21: the shape of x, except
 * ceil(D / block_size) along `axis`; element i of the axis uses block
 * i / block_size). They are read at run time, so they may be graph inputs.
 * Quantized types are uint8/int8 and, from opset 21, uint16/int16;
 * DequantizeLinear also reads int32. float8, int4 and uint4 are rejected
 * (the importer does not read such tensors).
 *
 * The division and the rounding are the float steps the specification
 * defines (x / scale rounded half to even, in float32; in float64 for int32
 * x, as numpy divides it; a float16/bfloat16 quotient is rounded to that
 * type first, which float32 division followed by narrowing does exactly).
 * The zero point is added and the result saturated with integer
 * arithmetic. DequantizeLinear subtracts the zero point in integers (exact)
 * and converts once before scaling. `saturate` only affects float8 outputs.
 *
 * Kernels see x as (outer, C, inner) around the axis and work on "rows":
 * contiguous runs of x along which the scale is either constant (loaded
 * once per row) or advances with x (blocked quantization, or per-axis
 * quantization of the last axis), so every inner loop walks contiguous
 * memory and vectorises. Long rows are split into chunks so that per-tensor
 * quantization of a large tensor still makes many tasks.
 *
 * DynamicQuantizeLinear (uint8 only) runs three kernels: partial minima and
 * maxima per chunk into the workspace, one task that combines them into
 * y_scale = (max(0, max x) - min(0, min x)) / 255 (1 when that range is
 * empty, as ONNX Runtime) and y_zero_point = round_half_even(saturate(
 * -min / y_scale)), and the quantization of x with them.
 */
#include <math.h>
#include <string.h>

#include "compiler/ops/op.h"

/* Elements per task when a row is split. */
#define Q_CHUNK 16384

typedef enum { Q_TENSOR, Q_AXIS, Q_BLOCK } q_gran;

/* A validated Quantize/DequantizeLinear node and its row decomposition.
 * Row (a, b, k) starts at x element a*xa + b*xb + k*ch and has
 * min(ch, len_b - k*ch) elements, len_b = lfull (or min(lfull, ltot - b*xb)
 * when ragged: the last block of a blocked last axis); its scale index is
 * a*sa + (b / bdiv)*sb + k*ch*si, advancing by si per element. */
typedef struct q_plan {
  hx_dtype_t xt, st, zt, yt; /* zt is UNDEFINED when there is no zero point */
  q_gran gran;
  int64_t numel;
  int64_t A, Bn, K, xa, xb, lfull, ltot, ch, sa, sb, bdiv, si;
  bool ragged;
} q_plan;

/* Range of a quantized integer type. */
static void q_range(hx_dtype_t t, int64_t* lo, int64_t* hi) {
  switch (t) {
    case HX_DTYPE_INT8: *lo = -128, *hi = 127; break;
    case HX_DTYPE_UINT16: *lo = 0, *hi = 65535; break;
    case HX_DTYPE_INT16: *lo = -32768, *hi = 32767; break;
    default: *lo = 0, *hi = 255; break;
  }
}

/* The quantized output type selected by output_dtype (opset 21), with the
 * float8/int4 types reported as unsupported. */
static hx_status_t q_output_dtype(const hc_node* n, int64_t code, hx_dtype_t* out) {
  switch (code) {
    case HX_DTYPE_UINT8:
    case HX_DTYPE_INT8:
    case HX_DTYPE_UINT16:
    case HX_DTYPE_INT16: *out = (hx_dtype_t)code; return HX_OK;
    case 17: case 18: case 19: case 20: case 21: case 22: {
      static const char* const k_names[] = {"float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
                                            "uint4", "int4"};
      return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                           "output_dtype %lld (%s) is not supported; Harness quantizes to uint8, int8, uint16 and "
                           "int16",
                           (long long)code, k_names[code - 17]);
    }
    default:
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "output_dtype %lld is not a quantized type (expected uint8, int8, uint16 or int16)",
                           (long long)code);
  }
}

/* Rejects attributes that the node's opset does not define. */
static hx_status_t q_check_attr_opsets(const hc_node* n) {
  static const struct { const char* name; int since; } k[] = {
      {"axis", 13}, {"saturate", 19}, {"block_size", 21}, {"output_dtype", 21}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; ++i)
    if (hc_node_attr(n, k[i].name) && n->opset < k[i].since)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute '%s' needs opset %d or later", k[i].name,
                           k[i].since);
  return HX_OK;
}

/* Fills the row decomposition of p for x's shape and the granularity. */
static void q_rows(q_plan* p, const hc_value* x, int64_t axis, int64_t B) {
  p->ragged = false;
  p->ltot = 0;
  p->bdiv = 1;
  p->sa = p->sb = p->si = 0;
  if (p->gran == Q_TENSOR) {
    p->A = p->Bn = 1;
    p->xa = p->xb = 0;
    p->lfull = p->numel;
  } else {
    int64_t outer = hc_shape_numel((int)axis, x->dims), C = x->dims[axis];
    int64_t inner = hc_shape_numel(x->rank - (int)axis - 1, x->dims + axis + 1);
    int64_t Cb = p->gran == Q_BLOCK ? (C + B - 1) / B : C;
    if (inner > 1) {
      /* One row per (outer, channel): the axis scale is constant along it. */
      p->A = outer, p->Bn = C, p->xa = C * inner, p->xb = inner, p->lfull = inner;
      if (p->gran == Q_AXIS) {
        p->sb = 1;
      } else {
        p->bdiv = B, p->sa = Cb * inner, p->sb = inner, p->si = 1;
      }
    } else if (p->gran == Q_AXIS || B == 1) {
      /* Nothing follows the axis (inner == 1): the scale advances with x. */
      p->A = outer, p->Bn = 1, p->xa = C, p->xb = 0, p->lfull = C, p->si = 1;
      p->sa = p->gran == Q_AXIS ? 0 : C;
    } else {
      /* Blocks along the last axis: one row per block, the last one ragged. */
      p->A = outer, p->Bn = Cb, p->xa = C, p->xb = B, p->lfull = B, p->sa = Cb, p->sb = 1;
      p->ragged = true, p->ltot = C;
    }
  }
  p->ch = p->lfull < Q_CHUNK ? p->lfull : Q_CHUNK;
  p->K = p->ch > 0 ? (p->lfull + p->ch - 1) / p->ch : 0;
}

/* Validates a QuantizeLinear (dequant = false) or DequantizeLinear node:
 * types, the shapes of scale and zero point, attributes; fills the plan. */
static hx_status_t q_setup(const hc_node* n, bool dequant, q_plan* p) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 3, 1, 1));
  HX_RETURN_IF_ERROR(q_check_attr_opsets(n));
  const hc_value *x = n->inputs[0], *s = n->inputs[1], *z = hc_input(n, 2);
  memset(p, 0, sizeof *p);
  uint64_t qtypes = HC_DT(HX_DTYPE_UINT8) | HC_DT(HX_DTYPE_INT8);
  if (n->opset >= 21) qtypes |= HC_DT(HX_DTYPE_UINT16) | HC_DT(HX_DTYPE_INT16);
  uint64_t stypes = HC_DT(HX_DTYPE_FLOAT32);
  if (n->opset >= 19) stypes |= HC_DT(HX_DTYPE_FLOAT16) | HC_DT(HX_DTYPE_BFLOAT16);
  if (dequant) {
    HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, qtypes | HC_DT(HX_DTYPE_INT32)));
    HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, stypes));
    HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 2));
  } else {
    HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, stypes | HC_DT(HX_DTYPE_INT32)));
    HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, stypes));
    if (x->dtype != HX_DTYPE_INT32) HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 1));
    HX_RETURN_IF_ERROR(hc_check_dtype(n, 2, qtypes));
  }
  p->xt = x->dtype;
  p->st = s->dtype;
  p->zt = z ? z->dtype : HX_DTYPE_UNDEFINED;
  p->numel = hc_value_numel(x);
  if (dequant) {
    p->yt = s->dtype;
  } else {
    int64_t code = hc_attr_int(n, "output_dtype", 0);
    if (z) {
      p->yt = z->dtype;
      if (code != 0 && code != (int64_t)z->dtype)
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "output_dtype %lld differs from y_zero_point's type %s",
                             (long long)code, hx_dtype_name(z->dtype));
    } else if (code != 0) {
      HX_RETURN_IF_ERROR(q_output_dtype(n, code, &p->yt));
    } else {
      p->yt = HX_DTYPE_UINT8;
    }
  }

  char s1[128], s2[128];
  if (z) {
    bool same = z->rank == s->rank && !memcmp(z->dims, s->dims, sizeof(int64_t) * (size_t)s->rank);
    bool both_single = hc_value_numel(z) == 1 && hc_value_numel(s) == 1 && z->rank <= 1 && s->rank <= 1;
    if (!same && !both_single)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "scale ('%s') has shape %s but zero point ('%s') has shape %s", s->name,
                           hc_shape_str(s->rank, s->dims, s1, sizeof s1), z->name,
                           hc_shape_str(z->rank, z->dims, s2, sizeof s2));
  }
  int64_t B = hc_attr_int(n, "block_size", 0);
  if (B < 0) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "block_size = %lld; must be >= 0", (long long)B);
  int64_t axis = 0;
  if (B > 0) {
    if (x->rank < 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "blocked quantization (block_size %lld) needs x of rank >= 1",
                           (long long)B);
    HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", 1), x->rank, &axis));
    bool ok = s->rank == x->rank;
    for (int d = 0; ok && d < x->rank; ++d)
      ok = s->dims[d] == (d == axis ? (x->dims[d] + B - 1) / B : x->dims[d]);
    if (!ok)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "blocked quantization along axis %lld with block_size %lld: scale ('%s') has shape %s; "
                           "expected x's shape %s with ceil(%lld / %lld) along the axis",
                           (long long)axis, (long long)B, s->name, hc_shape_str(s->rank, s->dims, s1, sizeof s1),
                           hc_shape_str(x->rank, x->dims, s2, sizeof s2), (long long)x->dims[axis], (long long)B);
    p->gran = Q_BLOCK;
  } else if (s->rank <= 1 && hc_value_numel(s) == 1) {
    p->gran = Q_TENSOR;
  } else if (s->rank == 1) {
    if (n->opset < 13)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "scale ('%s') has shape %s; per-axis quantization needs opset 13 or later (a scalar before)",
                           s->name, hc_shape_str(s->rank, s->dims, s1, sizeof s1));
    if (x->rank < 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "scale ('%s') has shape %s but x is a scalar", s->name,
                           hc_shape_str(s->rank, s->dims, s1, sizeof s1));
    HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", 1), x->rank, &axis));
    if (s->dims[0] != x->dims[axis])
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "per-axis scale ('%s') has %lld values but x %s has %lld along axis %lld", s->name,
                           (long long)s->dims[0], hc_shape_str(x->rank, x->dims, s1, sizeof s1),
                           (long long)x->dims[axis], (long long)axis);
    p->gran = Q_AXIS;
  } else {
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "scale ('%s') has shape %s; expected a scalar (per tensor) or a 1-D tensor (per axis)%s",
                         s->name, hc_shape_str(s->rank, s->dims, s1, sizeof s1),
                         n->opset >= 21 ? ", or x's rank with block_size set (blocked)" : "");
  }
  q_rows(p, x, axis, B > 0 ? B : 1);
  return HX_OK;
}

static hx_status_t infer_quantize(hc_graph* g, hc_node* n) {
  q_plan p;
  HX_RETURN_IF_ERROR(q_setup(n, false, &p));
  hc_set_output(n, 0, p.yt, n->inputs[0]->rank, n->inputs[0]->dims);
  return HX_OK;
}

static hx_status_t infer_dequantize(hc_graph* g, hc_node* n) {
  q_plan p;
  HX_RETURN_IF_ERROR(q_setup(n, true, &p));
  hc_set_output(n, 0, p.yt, n->inputs[0]->rank, n->inputs[0]->dims);
  return HX_OK;
}

/* ---- element computations ----------------------------------------------- */

/* Clamps an i32 value to [lo, hi]. */
static LLVMValueRef clamp_i32(hc_kb* kb, LLVMValueRef v, int64_t lo, int64_t hi) {
  LLVMValueRef l = hc_kb_i32(kb, (int32_t)lo), h = hc_kb_i32(kb, (int32_t)hi);
  v = LLVMBuildSelect(kb->b, LLVMBuildICmp(kb->b, LLVMIntSLT, v, l, ""), l, v, "");
  return LLVMBuildSelect(kb->b, LLVMBuildICmp(kb->b, LLVMIntSGT, v, h, ""), h, v, "");
}

/* Rounds a float quotient half to even, adds the zero point (i32, or NULL)
 * and saturates to yt's range; returns yt's compute type. */
static LLVMValueRef q_round_saturate(hc_kb* kb, LLVMValueRef q, LLVMValueRef zp, hx_dtype_t yt) {
  LLVMTypeRef ft = LLVMTypeOf(q);
  LLVMValueRef r = hc_kb_intrinsic(kb, "llvm.roundeven", ft, &q, 1);
  /* |r| <= 2^30 keeps the conversion defined and saturates the same way
   * once the zero point is added; NaN becomes the lower bound (as numpy's
   * conversion of NaN to INT_MIN followed by clipping). */
  LLVMValueRef lim[2] = {r, LLVMConstReal(ft, -1073741824.0)};
  r = hc_kb_intrinsic(kb, "llvm.maxnum", ft, lim, 2);
  lim[0] = r, lim[1] = LLVMConstReal(ft, 1073741824.0);
  r = hc_kb_intrinsic(kb, "llvm.minnum", ft, lim, 2);
  LLVMValueRef i = LLVMBuildFPToSI(kb->b, r, kb->t_i32, "");
  if (zp) i = LLVMBuildAdd(kb->b, i, zp, "");
  int64_t lo, hi;
  q_range(yt, &lo, &hi);
  return LLVMBuildTrunc(kb->b, clamp_i32(kb, i, lo, hi), hc_kb_compute_type(kb, yt), "");
}

/* QuantizeLinear of one element: x and s in their compute types, zp the
 * zero point's compute type (or NULL). */
static LLVMValueRef q_quantize_elem(hc_kb* kb, const q_plan* p, LLVMValueRef x, LLVMValueRef s, LLVMValueRef zp) {
  LLVMBuilderRef b = kb->b;
  LLVMValueRef q;
  if (p->xt == HX_DTYPE_INT32) {
    q = LLVMBuildFDiv(b, LLVMBuildSIToFP(b, x, kb->t_f64, ""), LLVMBuildFPExt(b, s, kb->t_f64, ""), "");
  } else {
    q = LLVMBuildFDiv(b, x, s, "");
    if (p->xt == HX_DTYPE_FLOAT16 && p->st == HX_DTYPE_FLOAT16)
      q = LLVMBuildFPExt(b, LLVMBuildFPTrunc(b, q, kb->t_f16, ""), kb->t_f32, "");
    else if (p->xt == HX_DTYPE_BFLOAT16 && p->st == HX_DTYPE_BFLOAT16)
      q = hc_kb_bf16_to_f32(kb, hc_kb_f32_to_bf16(kb, q));
  }
  return q_round_saturate(kb, q, zp ? hc_kb_convert(kb, zp, p->zt, HX_DTYPE_INT32) : NULL, p->yt);
}

/* DequantizeLinear of one element: the zero point is subtracted exactly in
 * integers (i64 for int32 x), then the difference is converted once and
 * scaled in float32. */
static LLVMValueRef q_dequantize_elem(hc_kb* kb, const q_plan* p, LLVMValueRef x, LLVMValueRef s, LLVMValueRef zp) {
  hx_dtype_t wide = p->xt == HX_DTYPE_INT32 ? HX_DTYPE_INT64 : HX_DTYPE_INT32;
  LLVMValueRef d = hc_kb_convert(kb, x, p->xt, wide);
  if (zp) d = LLVMBuildSub(kb->b, d, hc_kb_convert(kb, zp, p->zt, wide), "");
  return LLVMBuildFMul(kb->b, LLVMBuildSIToFP(kb->b, d, kb->t_f32, ""), s, "");
}

/* The row loop shared by both ops (see q_plan): a task is one row chunk;
 * a scale that is constant along the row is loaded once. */
static void q_emit_rows(hc_kb* kb, const q_plan* p, bool dequant, LLVMValueRef px, LLVMValueRef ps, LLVMValueRef pz,
                        LLVMValueRef py) {
  LLVMBuilderRef b = kb->b;
  hc_loop task, jl;
  LLVMValueRef t = hc_kb_task_loop_begin(kb, &task);
  LLVMValueRef k = LLVMBuildURem(b, t, hc_kb_i64(kb, p->K), "");
  LLVMValueRef r = LLVMBuildUDiv(b, t, hc_kb_i64(kb, p->K), "");
  LLVMValueRef bi = LLVMBuildURem(b, r, hc_kb_i64(kb, p->Bn), "");
  LLVMValueRef a = LLVMBuildUDiv(b, r, hc_kb_i64(kb, p->Bn), "");
  LLVMValueRef kch = hc_kb_imul(kb, k, hc_kb_i64(kb, p->ch));
  LLVMValueRef xoff = hc_kb_iadd(kb, hc_kb_iadd(kb, hc_kb_imul(kb, a, hc_kb_i64(kb, p->xa)),
                                                hc_kb_imul(kb, bi, hc_kb_i64(kb, p->xb))),
                                 kch);
  LLVMValueRef len = hc_kb_i64(kb, p->lfull);
  if (p->ragged)
    len = hc_kb_imin(kb, len, LLVMBuildSub(b, hc_kb_i64(kb, p->ltot), hc_kb_imul(kb, bi, hc_kb_i64(kb, p->xb)), ""));
  len = hc_kb_imin(kb, hc_kb_i64(kb, p->ch), LLVMBuildSub(b, len, kch, ""));
  LLVMValueRef soff = hc_kb_iadd(
      kb,
      hc_kb_iadd(kb, hc_kb_imul(kb, a, hc_kb_i64(kb, p->sa)),
                 hc_kb_imul(kb, LLVMBuildUDiv(b, bi, hc_kb_i64(kb, p->bdiv), ""), hc_kb_i64(kb, p->sb))),
      hc_kb_imul(kb, kch, hc_kb_i64(kb, p->si)));
  LLVMValueRef s0 = NULL, z0 = NULL;
  if (p->si == 0) {
    s0 = hc_kb_load(kb, p->st, ps, soff);
    if (pz) z0 = hc_kb_load(kb, p->zt, pz, soff);
  }
  LLVMValueRef j = hc_loop_begin(kb, &jl, hc_kb_i64(kb, 0), len, "j");
  LLVMValueRef xi = hc_kb_iadd(kb, xoff, j);
  LLVMValueRef s = s0, z = z0;
  if (p->si != 0) {
    LLVMValueRef si = hc_kb_iadd(kb, soff, j);
    s = hc_kb_load(kb, p->st, ps, si);
    if (pz) z = hc_kb_load(kb, p->zt, pz, si);
  }
  LLVMValueRef xv = hc_kb_load(kb, p->xt, px, xi);
  LLVMValueRef y = dequant ? q_dequantize_elem(kb, p, xv, s, z) : q_quantize_elem(kb, p, xv, s, z);
  hc_kb_store(kb, p->yt, py, xi, y);
  hc_loop_end(kb, &jl);
  hc_loop_end(kb, &task);
}

static hx_status_t lower_q_common(hc_lower_ctx* lc, hc_node* n, bool dequant) {
  q_plan p;
  HX_RETURN_IF_ERROR(q_setup(n, dequant, &p));
  int64_t tasks = p.A * p.Bn * p.K;
  if (tasks == 0) return HX_OK;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, tasks, &kb));
  const hc_value* z = hc_input(n, 2);
  LLVMValueRef px = hc_kb_ptr(&kb, n->inputs[0]), ps = hc_kb_ptr(&kb, n->inputs[1]);
  LLVMValueRef pz = z ? hc_kb_ptr(&kb, z) : NULL, py = hc_kb_ptr(&kb, n->outputs[0]);
  q_emit_rows(&kb, &p, dequant, px, ps, pz, py);
  double bytes = (double)hc_value_nbytes(n->inputs[0]) + (double)hc_value_nbytes(n->outputs[0]) +
                 (double)hc_value_nbytes(n->inputs[1]) + (z ? (double)hc_value_nbytes(z) : 0.0);
  hc_kb_end(&kb, 3.0 * (double)p.numel, bytes);
  return HX_OK;
}

static hx_status_t lower_quantize(hc_lower_ctx* lc, hc_node* n) { return lower_q_common(lc, n, false); }
static hx_status_t lower_dequantize(hc_lower_ctx* lc, hc_node* n) { return lower_q_common(lc, n, true); }

/* ---- DynamicQuantizeLinear ------------------------------------------------ */

static hx_status_t infer_dynamic_quantize(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 3));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT(HX_DTYPE_FLOAT32)));
  const hc_value* x = n->inputs[0];
  hc_set_output(n, 0, HX_DTYPE_UINT8, x->rank, x->dims);
  hc_set_output(n, 1, HX_DTYPE_FLOAT32, 0, NULL);
  hc_set_output(n, 2, HX_DTYPE_UINT8, 0, NULL);
  return HX_OK;
}

/* Chunks of x, one partial min/max pair each. */
static int64_t dq_chunks(const hc_node* n) { return (hc_value_numel(n->inputs[0]) + Q_CHUNK - 1) / Q_CHUNK; }

/* Workspace: float32 (min, max) per chunk, then the scale (float32) and the
 * zero point (int32). */
static uint64_t dynamic_quantize_workspace(const hc_node* n) { return (uint64_t)(2 * dq_chunks(n) + 2) * 4; }

static hx_status_t lower_dynamic_quantize(hc_lower_ctx* lc, hc_node* n) {
  const hc_value *x = n->inputs[0], *y = n->outputs[0];
  const hc_value* ys = n->num_outputs > 1 ? n->outputs[1] : NULL;
  const hc_value* yz = n->num_outputs > 2 ? n->outputs[2] : NULL;
  int64_t numel = hc_value_numel(x), T = dq_chunks(n);
  const hx_dtype_t f = HX_DTYPE_FLOAT32;
  hc_kb kb;
  hc_loop task, jl;

  /* 1. Partial minima and maxima. */
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "minmax", T, &kb));
  {
    LLVMValueRef px = hc_kb_ptr(&kb, x), ws = hc_kb_workspace(&kb);
    LLVMValueRef mn = hc_kb_alloca(&kb, kb.t_f32, "mn"), mx = hc_kb_alloca(&kb, kb.t_f32, "mx");
    LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
    LLVMValueRef off = hc_kb_imul(&kb, t, hc_kb_i64(&kb, Q_CHUNK));
    LLVMValueRef len = hc_kb_imin(&kb, hc_kb_i64(&kb, Q_CHUNK), LLVMBuildSub(kb.b, hc_kb_i64(&kb, numel), off, ""));
    LLVMBuildStore(kb.b, hc_kb_const(&kb, f, INFINITY), mn);
    LLVMBuildStore(kb.b, hc_kb_const(&kb, f, -INFINITY), mx);
    LLVMValueRef j = hc_loop_begin(&kb, &jl, hc_kb_i64(&kb, 0), len, "j");
    LLVMValueRef v = hc_kb_load(&kb, f, px, hc_kb_iadd(&kb, off, j));
    LLVMBuildStore(kb.b, hc_kb_min(&kb, f, LLVMBuildLoad2(kb.b, kb.t_f32, mn, ""), v), mn);
    LLVMBuildStore(kb.b, hc_kb_max(&kb, f, LLVMBuildLoad2(kb.b, kb.t_f32, mx, ""), v), mx);
    hc_loop_end(&kb, &jl);
    LLVMValueRef i2 = hc_kb_imul(&kb, t, hc_kb_i64(&kb, 2));
    hc_kb_store(&kb, f, ws, i2, LLVMBuildLoad2(kb.b, kb.t_f32, mn, ""));
    hc_kb_store(&kb, f, ws, hc_kb_iadd(&kb, i2, hc_kb_i64(&kb, 1)), LLVMBuildLoad2(kb.b, kb.t_f32, mx, ""));
    hc_loop_end(&kb, &task);
  }
  hc_kb_end(&kb, 2.0 * (double)numel, (double)hc_value_nbytes(x));

  /* 2. Scale and zero point. */
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "params", 1, &kb));
  {
    LLVMValueRef ws = hc_kb_workspace(&kb);
    LLVMValueRef pys = ys ? hc_kb_ptr(&kb, ys) : NULL, pyz = yz ? hc_kb_ptr(&kb, yz) : NULL;
    LLVMValueRef mn = hc_kb_alloca(&kb, kb.t_f32, "mn"), mx = hc_kb_alloca(&kb, kb.t_f32, "mx");
    hc_kb_task_loop_begin(&kb, &task);
    LLVMBuildStore(kb.b, hc_kb_const(&kb, f, 0.0), mn);
    LLVMBuildStore(kb.b, hc_kb_const(&kb, f, 0.0), mx);
    LLVMValueRef i = hc_loop_begin(&kb, &jl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, T), "i");
    LLVMValueRef i2 = hc_kb_imul(&kb, i, hc_kb_i64(&kb, 2));
    LLVMBuildStore(kb.b, hc_kb_min(&kb, f, LLVMBuildLoad2(kb.b, kb.t_f32, mn, ""), hc_kb_load(&kb, f, ws, i2)), mn);
    LLVMBuildStore(kb.b,
                   hc_kb_max(&kb, f, LLVMBuildLoad2(kb.b, kb.t_f32, mx, ""),
                             hc_kb_load(&kb, f, ws, hc_kb_iadd(&kb, i2, hc_kb_i64(&kb, 1)))),
                   mx);
    hc_loop_end(&kb, &jl);
    LLVMValueRef lo = LLVMBuildLoad2(kb.b, kb.t_f32, mn, ""), hi = LLVMBuildLoad2(kb.b, kb.t_f32, mx, "");
    LLVMValueRef range = hc_kb_div(&kb, f, hc_kb_sub(&kb, f, hi, lo), hc_kb_const(&kb, f, 255.0));
    LLVMValueRef scale = hc_kb_select(&kb, hc_kb_cmp(&kb, f, "eq", hi, lo), hc_kb_const(&kb, f, 1.0), range);
    /* qmin - min / scale, saturated to [0, 255], rounded half to even. */
    LLVMValueRef zf = LLVMBuildFNeg(kb.b, hc_kb_div(&kb, f, lo, scale), "");
    LLVMValueRef lim[2] = {zf, hc_kb_const(&kb, f, 0.0)};
    zf = hc_kb_intrinsic(&kb, "llvm.maxnum", kb.t_f32, lim, 2);
    lim[0] = zf, lim[1] = hc_kb_const(&kb, f, 255.0);
    zf = hc_kb_intrinsic(&kb, "llvm.minnum", kb.t_f32, lim, 2);
    zf = hc_kb_intrinsic(&kb, "llvm.roundeven", kb.t_f32, &zf, 1);
    LLVMValueRef zi = LLVMBuildFPToSI(kb.b, zf, kb.t_i32, "");
    LLVMValueRef zero = hc_kb_i64(&kb, 0);
    hc_kb_store(&kb, f, ws, hc_kb_i64(&kb, 2 * T), scale);
    hc_kb_store(&kb, HX_DTYPE_INT32, ws, hc_kb_i64(&kb, 2 * T + 1), zi);
    if (pys) hc_kb_store(&kb, f, pys, zero, scale);
    if (pyz) hc_kb_store(&kb, HX_DTYPE_UINT8, pyz, zero, LLVMBuildTrunc(kb.b, zi, kb.t_i8, ""));
    hc_loop_end(&kb, &task);
  }
  hc_kb_end(&kb, 2.0 * (double)T + 8.0, 8.0 * (double)T + 16.0);

  /* 3. Quantization with them. */
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "quantize", T, &kb));
  {
    LLVMValueRef px = hc_kb_ptr(&kb, x), py = hc_kb_ptr(&kb, y), ws = hc_kb_workspace(&kb);
    LLVMValueRef scale = hc_kb_load(&kb, f, ws, hc_kb_i64(&kb, 2 * T));
    LLVMValueRef zi = hc_kb_load(&kb, HX_DTYPE_INT32, ws, hc_kb_i64(&kb, 2 * T + 1));
    LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
    LLVMValueRef off = hc_kb_imul(&kb, t, hc_kb_i64(&kb, Q_CHUNK));
    LLVMValueRef len = hc_kb_imin(&kb, hc_kb_i64(&kb, Q_CHUNK), LLVMBuildSub(kb.b, hc_kb_i64(&kb, numel), off, ""));
    LLVMValueRef j = hc_loop_begin(&kb, &jl, hc_kb_i64(&kb, 0), len, "j");
    LLVMValueRef idx = hc_kb_iadd(&kb, off, j);
    LLVMValueRef q = hc_kb_div(&kb, f, hc_kb_load(&kb, f, px, idx), scale);
    hc_kb_store(&kb, HX_DTYPE_UINT8, py, idx, q_round_saturate(&kb, q, zi, HX_DTYPE_UINT8));
    hc_loop_end(&kb, &jl);
    hc_loop_end(&kb, &task);
  }
  hc_kb_end(&kb, 3.0 * (double)numel, (double)hc_value_nbytes(x) + (double)hc_value_nbytes(y));
  return HX_OK;
}

/* ---- inside fused element-wise chains -------------------------------------- */

/* Per-tensor QuantizeLinear (float32 x and scale) and DequantizeLinear
 * (8-bit x, float32 scale) are element-wise: the scale and zero point
 * broadcast as scalars. Fusion then evaluates them inside a chain (a QDQ
 * model's residual Add: DequantizeLinear, Add, Relu, QuantizeLinear in one
 * pass over 8-bit tensors instead of four kernels and float32 tensors in
 * between) with the same element functions as their own kernels, so the
 * results are bit-identical. */
static bool q_elementwise(const hc_node* n, bool dequant, q_plan* p) {
  hx_status_t st = q_setup(n, dequant, p);
  if (st != HX_OK) {
    hx_status_free(st);
    return false;
  }
  bool q8 = dequant ? p->xt == HX_DTYPE_UINT8 || p->xt == HX_DTYPE_INT8
                    : p->yt == HX_DTYPE_UINT8 || p->yt == HX_DTYPE_INT8;
  bool f32 = p->st == HX_DTYPE_FLOAT32 && (dequant ? p->yt == HX_DTYPE_FLOAT32 : p->xt == HX_DTYPE_FLOAT32);
  const hc_value* s = n->inputs[1];
  const hc_value* z = hc_input(n, 2);
  return p->gran == Q_TENSOR && q8 && f32 && hc_value_numel(s) == 1 && s->rank <= 1 &&
         (!z || (hc_value_numel(z) == 1 && z->rank <= 1));
}

static bool quantize_elementwise(const hc_node* n) {
  q_plan p;
  return q_elementwise(n, false, &p);
}

static bool dequantize_elementwise(const hc_node* n) {
  q_plan p;
  return q_elementwise(n, true, &p);
}

/* The element functions of a node that *_elementwise accepted: in = x,
 * scale, zero point (if any), in their compute types. */
static LLVMValueRef scalar_quantize(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  q_plan p;
  q_elementwise(n, false, &p);
  return q_quantize_elem(kb, &p, in[0], in[1], n->num_inputs > 2 && n->inputs[2] ? in[2] : NULL);
}

static LLVMValueRef scalar_dequantize(hc_kb* kb, const hc_node* n, LLVMValueRef* in) {
  q_plan p;
  q_elementwise(n, true, &p);
  return q_dequantize_elem(kb, &p, in[0], in[1], n->num_inputs > 2 && n->inputs[2] ? in[2] : NULL);
}

static const char* const k_quantize_attrs[] = {"axis", "saturate", "block_size", "output_dtype", NULL};
static const char* const k_dequantize_attrs[] = {"axis", "block_size", NULL};

const hc_op_desc hc_op_quantize_linear = {"QuantizeLinear", "", 10, 22, k_quantize_attrs, 0, infer_quantize,
                                          lower_quantize, .scalar = scalar_quantize,
                                          .elementwise_node = quantize_elementwise};
const hc_op_desc hc_op_dequantize_linear = {"DequantizeLinear", "", 10, 22, k_dequantize_attrs, 0, infer_dequantize,
                                            lower_dequantize, .scalar = scalar_dequantize,
                                            .elementwise_node = dequantize_elementwise};
const hc_op_desc hc_op_dynamic_quantize_linear = {"DynamicQuantizeLinear", "", 11, 22, NULL, 0,
                                                  infer_dynamic_quantize, lower_dynamic_quantize, NULL,
                                                  dynamic_quantize_workspace};
