/* Window functions (HannWindow, HammingWindow, BlackmanWindow) and
 * MelWeightMatrix.
 *
 * Every output of these ops is fully determined by their inputs, which also
 * fix the output shape and must therefore be compile-time constants. So
 * infer() computes the values in C (float64, as the ONNX reference
 * evaluator does) and turns the output into a constant, like Shape: there
 * is no kernel, hence exactly one implementation. Values are converted to
 * output_datatype with ONNX Cast semantics (floats rounded to nearest even,
 * integers truncated toward zero and saturated, NaN to 0).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/op.h"

#define WIN_PI 3.14159265358979323846

/* Element types output_datatype may name (T2 / T3 of the schemas). */
#define WIN_OUT_TYPES (HC_DT_FLOATS | HC_DT_INTS)

/* Rounds a double to a binary format with `mant` fraction bits and exponent
 * bias `bias` (float16: 10/15, bfloat16: 7/127), to nearest even; returns
 * the 16 bits. */
static uint16_t round_to_small_float(double x, int mant, int bias) {
  uint16_t sign = signbit(x) ? 0x8000u : 0u;
  uint16_t exp_all = (uint16_t)(((1u << (15 - mant)) - 1u) << mant);
  if (isnan(x)) return (uint16_t)(sign | exp_all | (1u << (mant - 1)));
  double a = fabs(x);
  if (isinf(a)) return (uint16_t)(sign | exp_all);
  double min_normal = ldexp(1.0, 1 - bias);
  if (a < min_normal) {
    /* Subnormal: units of 2^(1 - bias - mant); a carry into the exponent
     * field gives the smallest normal, as it should. */
    double q = nearbyint(ldexp(a, bias - 1 + mant));
    return (uint16_t)(sign | (uint16_t)q);
  }
  int e;
  double m = frexp(a, &e);                  /* a = m * 2^e, m in [0.5, 1) */
  double q = nearbyint(ldexp(m, mant + 1)); /* in [2^mant, 2^(mant+1)] */
  if (q == ldexp(1.0, mant + 1)) {
    q = ldexp(1.0, mant);
    ++e;
  }
  int biased = e - 1 + bias;
  if (biased >= (1 << (15 - mant)) - 1) return (uint16_t)(sign | exp_all);
  return (uint16_t)(sign | (uint16_t)(biased << mant) | (uint16_t)(q - ldexp(1.0, mant)));
}

/* Float to integer with truncation toward zero, saturated to [lo, hi]
 * (llvm.fptosi.sat semantics, as the Cast kernel); NaN gives 0. */
static int64_t trunc_sat_signed(double x, double lo, double hi) {
  if (isnan(x)) return 0;
  x = trunc(x);
  if (x <= lo) return (int64_t)lo;
  if (x >= hi) return x >= 9223372036854775807.0 ? INT64_MAX : (int64_t)hi;
  return (int64_t)x;
}

static uint64_t trunc_sat_unsigned(double x, double hi) {
  if (isnan(x) || x <= 0) return 0;
  x = trunc(x);
  if (x >= hi) return x >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)hi;
  return (uint64_t)x;
}

/* Stores vals[i] (i < count) into dst as dtype dt. */
static void store_values(hx_dtype_t dt, void* dst, const double* vals, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    double v = vals[i];
    switch (dt) {
      case HX_DTYPE_FLOAT32:
        ((float*)dst)[i] = (float)v;
        break;
      case HX_DTYPE_FLOAT64:
        ((double*)dst)[i] = v;
        break;
      case HX_DTYPE_FLOAT16:
        ((uint16_t*)dst)[i] = round_to_small_float(v, 10, 15);
        break;
      case HX_DTYPE_BFLOAT16:
        ((uint16_t*)dst)[i] = round_to_small_float(v, 7, 127);
        break;
      case HX_DTYPE_INT8:
        ((int8_t*)dst)[i] = (int8_t)trunc_sat_signed(v, INT8_MIN, INT8_MAX);
        break;
      case HX_DTYPE_INT16:
        ((int16_t*)dst)[i] = (int16_t)trunc_sat_signed(v, INT16_MIN, INT16_MAX);
        break;
      case HX_DTYPE_INT32:
        ((int32_t*)dst)[i] = (int32_t)trunc_sat_signed(v, INT32_MIN, INT32_MAX);
        break;
      case HX_DTYPE_INT64:
        ((int64_t*)dst)[i] = trunc_sat_signed(v, -9223372036854775808.0, 9223372036854775807.0);
        break;
      case HX_DTYPE_UINT8:
        ((uint8_t*)dst)[i] = (uint8_t)trunc_sat_unsigned(v, UINT8_MAX);
        break;
      case HX_DTYPE_UINT16:
        ((uint16_t*)dst)[i] = (uint16_t)trunc_sat_unsigned(v, UINT16_MAX);
        break;
      case HX_DTYPE_UINT32:
        ((uint32_t*)dst)[i] = (uint32_t)trunc_sat_unsigned(v, UINT32_MAX);
        break;
      case HX_DTYPE_UINT64:
        ((uint64_t*)dst)[i] = trunc_sat_unsigned(v, 18446744073709551615.0);
        break;
      default:
        break;
    }
  }
}

/* Makes output 0 a constant of dtype dt and the given shape holding vals. */
static hx_status_t set_const_output(hc_graph* g, hc_node* n, hx_dtype_t dt, int rank, const int64_t* dims,
                                    const double* vals) {
  hc_value* out = n->outputs[0];
  hc_value_set_shape(out, dt, rank, dims);
  void* data = hc_make_const_value(g, out);
  if (!data) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory computing %s", n->name);
  store_values(dt, data, vals, hc_value_numel(out));
  return HX_OK;
}

/* Reads the output_datatype attribute (default float32). */
static hx_status_t output_datatype(const hc_node* n, hx_dtype_t* out) {
  const hc_attr* a = hc_node_attr(n, "output_datatype");
  int64_t v = 1;
  if (a) {
    if (a->type != HC_ATTR_INT)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute 'output_datatype' must be an integer");
    v = a->i;
  }
  if (v < 0 || v > 63 || !(WIN_OUT_TYPES & HC_DT(v)))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "output_datatype=%lld is not a numeric type the op allows (integers, float16, float, "
                         "double, bfloat16)",
                         (long long)v);
  *out = (hx_dtype_t)v;
  return HX_OK;
}

/* Reads constant integer scalar input i. */
static hx_status_t const_int_scalar(const hc_node* n, int i, const char* what, int64_t* out) {
  HX_RETURN_IF_ERROR(hc_check_dtype(n, i, HC_DT(HX_DTYPE_INT32) | HC_DT(HX_DTYPE_INT64)));
  int64_t v[1];
  int count = 0;
  const hc_value* x = hc_input(n, i);
  if (x && hc_value_numel(x) != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d (%s) must be a scalar, got %lld elements", i, what,
                         (long long)hc_value_numel(x));
  HX_RETURN_IF_ERROR(hc_const_ints(n, i, v, 1, &count));
  *out = v[0];
  return HX_OK;
}

/* ---- window functions ----------------------------------------------------------- */

typedef enum { WIN_HANN, WIN_HAMMING, WIN_BLACKMAN } win_kind;

/* Window value at sample k of a window whose period is `period` samples
 * (size for periodic windows, size - 1 for symmetric ones). The formulas
 * are the reference evaluator's; a symmetric window of size 1 divides 0 by
 * 0 and is NaN there too. */
static double window_value(win_kind kind, double k, double period) {
  double x = k / period;
  switch (kind) {
    case WIN_HANN: {
      double s = sin(WIN_PI * x);
      return s * s;
    }
    case WIN_HAMMING:
      return 25.0 / 46.0 - (1.0 - 25.0 / 46.0) * cos(2.0 * WIN_PI * x);
    case WIN_BLACKMAN:
      return 0.42 - 0.5 * cos(2.0 * WIN_PI * x) + 0.08 * cos(4.0 * WIN_PI * x);
  }
  return 0;
}

/* Validates a window node and makes its output the computed constant. */
static hx_status_t infer_window(hc_graph* g, hc_node* n, win_kind kind) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  hx_dtype_t dt = HX_DTYPE_FLOAT32;
  HX_RETURN_IF_ERROR(output_datatype(n, &dt));
  int64_t periodic = hc_attr_int(n, "periodic", 1);
  if (periodic != 0 && periodic != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "periodic must be 0 or 1, got %lld", (long long)periodic);
  int64_t size;
  HX_RETURN_IF_ERROR(const_int_scalar(n, 0, "size", &size));
  if (size < 0) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "size must be >= 0, got %lld", (long long)size);
  if (size > ((int64_t)1 << 31))
    return hc_node_error(n, HX_STATUS_UNSUPPORTED, "window size %lld is too large (at most 2^31)", (long long)size);
  double* vals = malloc(sizeof(double) * (size_t)(size ? size : 1));
  if (!vals) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory computing %s", n->name);
  double period = (double)(periodic ? size : size - 1);
  for (int64_t k = 0; k < size; ++k) vals[k] = window_value(kind, (double)k, period);
  hx_status_t st = set_const_output(g, n, dt, 1, &size, vals);
  free(vals);
  return st;
}

/* Per-op entry points of infer_window. */
static hx_status_t infer_hann(hc_graph* g, hc_node* n) { return infer_window(g, n, WIN_HANN); }
static hx_status_t infer_hamming(hc_graph* g, hc_node* n) { return infer_window(g, n, WIN_HAMMING); }
static hx_status_t infer_blackman(hc_graph* g, hc_node* n) { return infer_window(g, n, WIN_BLACKMAN); }

/* ---- MelWeightMatrix ----------------------------------------------------------- */

/* The edge frequencies are float inputs that need not be constants (only
 * num_mel_bins and dft_length fix the shape), so the matrix is computed by
 * a kernel, which constant folding runs when every input is known. It
 * follows the reference step by step:
 *   mel(f) = 2595 * log10(1 + f / 700) of both edges and the step
 *   (high - low) / (num_mel_bins + 2), in the edges' type (the reference
 *   works in their numpy type; float16/bfloat16 operations are evaluated
 *   in float32 and rounded, as numpy does);
 *   edge[p] = int(((dft_length + 1) * 700 * (10^((p*step + low) / 2595) - 1))
 *                 // sample_rate) in float64, // being numpy's floor_divide;
 *   column i rises linearly from edge[i] to 1 at edge[i+1] (a 1 there when
 *   they coincide), then falls to edge[i+2], the falling side overwriting
 *   the peak.
 * Band edges outside [0, floor(dft_length/2)] (which the reference rejects
 * or wraps) are clipped so that no write leaves the output. */

/* numpy's floor_divide of doubles (npy_divmod) for b > 0:
 * d = (a - fmod(a, b)) / b, minus 1 when the remainder is negative, then
 * floor(d) rounded up when d is more than half above it. The sign of a zero
 * result does not matter here: it is converted to an integer. */
static LLVMValueRef np_floor_divide(hc_kb* kb, LLVMValueRef a, LLVMValueRef b) {
  hx_dtype_t d = HX_DTYPE_FLOAT64;
  LLVMValueRef mod = LLVMBuildFRem(kb->b, a, b, "");
  LLVMValueRef div = hc_kb_div(kb, d, hc_kb_sub(kb, d, a, mod), b);
  LLVMValueRef zero = hc_kb_const(kb, d, 0.0), one = hc_kb_const(kb, d, 1.0);
  LLVMValueRef neg_mod = hc_kb_cmp(kb, d, "lt", mod, zero);
  div = hc_kb_select(kb, neg_mod, hc_kb_sub(kb, d, div, one), div);
  LLVMValueRef fl = hc_kb_math(kb, d, "floor", &div, 1);
  LLVMValueRef up = hc_kb_cmp(kb, d, "gt", hc_kb_sub(kb, d, div, fl), hc_kb_const(kb, d, 0.5));
  return hc_kb_select(kb, up, hc_kb_add(kb, d, fl, one), fl);
}

/* Rounds a float32 value to the edges' type when that is narrower (numpy
 * evaluates each float16 operation in float32 and rounds the result). */
static LLVMValueRef edge_round(hc_kb* kb, hx_dtype_t et, LLVMValueRef v) {
  if (et == HX_DTYPE_FLOAT16) return LLVMBuildFPExt(kb->b, LLVMBuildFPTrunc(kb->b, v, kb->t_f16, ""), kb->t_f32, "");
  if (et == HX_DTYPE_BFLOAT16) return hc_kb_bf16_to_f32(kb, hc_kb_f32_to_bf16(kb, v));
  return v;
}

/* 2595 * log10(1 + f / 700) in the edges' type. */
static LLVMValueRef hz_to_mel(hc_kb* kb, hx_dtype_t et, LLVMValueRef f) {
  hx_dtype_t ct = et == HX_DTYPE_FLOAT64 ? HX_DTYPE_FLOAT64 : HX_DTYPE_FLOAT32;
  LLVMValueRef q = edge_round(kb, et, hc_kb_div(kb, ct, f, hc_kb_const(kb, ct, 700.0)));
  LLVMValueRef l = edge_round(kb, et, hc_kb_add(kb, ct, hc_kb_const(kb, ct, 1.0), q));
  l = edge_round(kb, et, hc_kb_math(kb, ct, "log10", &l, 1));
  return edge_round(kb, et, hc_kb_mul(kb, ct, hc_kb_const(kb, ct, 2595.0), l));
}

/* Spectrogram bin of band edge p (i64 value): see the file comment. */
static LLVMValueRef mel_edge(hc_kb* kb, hx_dtype_t et, LLVMValueRef p, LLVMValueRef step, LLVMValueRef low,
                             LLVMValueRef len1, LLVMValueRef rate) {
  hx_dtype_t d = HX_DTYPE_FLOAT64;
  LLVMValueRef mel = LLVMBuildSIToFP(kb->b, p, kb->t_f64, "");
  mel = hc_kb_add(kb, d, hc_kb_mul(kb, d, mel, hc_kb_convert(kb, step, et, d)), hc_kb_convert(kb, low, et, d));
  LLVMValueRef args[2] = {hc_kb_const(kb, d, 10.0), hc_kb_div(kb, d, mel, hc_kb_const(kb, d, 2595.0))};
  LLVMValueRef hz = hc_kb_math(kb, d, "pow", args, 2);
  hz = hc_kb_mul(kb, d, hc_kb_const(kb, d, 700.0), hc_kb_sub(kb, d, hz, hc_kb_const(kb, d, 1.0)));
  LLVMValueRef b = np_floor_divide(kb, hc_kb_mul(kb, d, len1, hz), rate);
  return hc_kb_convert(kb, b, d, HX_DTYPE_INT64);
}

/* Writes (numerator / den) to column i, rows j in [lo, hi) clipped to
 * [0, bins); numerator = j - base when rising, base - j when falling. */
static void mel_ramp(hc_kb* kb, hx_dtype_t dt, LLVMValueRef py, int64_t bins, int64_t cols, LLVMValueRef i,
                     LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef base, LLVMValueRef den, bool rising) {
  hx_dtype_t d = HX_DTYPE_FLOAT64;
  lo = hc_kb_imax(kb, lo, hc_kb_i64(kb, 0));
  hi = hc_kb_imin(kb, hi, hc_kb_i64(kb, bins));
  LLVMValueRef fden = LLVMBuildSIToFP(kb->b, den, kb->t_f64, "");
  hc_loop l;
  LLVMValueRef j = hc_loop_begin(kb, &l, lo, hi, "j");
  LLVMValueRef num = rising ? LLVMBuildSub(kb->b, j, base, "") : LLVMBuildSub(kb->b, base, j, "");
  LLVMValueRef v = hc_kb_div(kb, d, LLVMBuildSIToFP(kb->b, num, kb->t_f64, ""), fden);
  LLVMValueRef idx = hc_kb_iadd(kb, hc_kb_imul(kb, j, hc_kb_i64(kb, cols)), i);
  hc_kb_store(kb, dt, py, idx, hc_kb_convert(kb, v, d, dt));
  hc_loop_end(kb, &l);
}

/* Validates the node; the output is [floor(dft_length/2) + 1, num_mel_bins]. */
static hx_status_t infer_mel_weight_matrix(hc_graph* g, hc_node* n) {
  (void)g;
  HX_RETURN_IF_ERROR(hc_check_arity(n, 5, 5, 1, 1));
  hx_dtype_t dt = HX_DTYPE_FLOAT32;
  HX_RETURN_IF_ERROR(output_datatype(n, &dt));
  int64_t num_mel_bins, dft_length;
  HX_RETURN_IF_ERROR(const_int_scalar(n, 0, "num_mel_bins", &num_mel_bins));
  HX_RETURN_IF_ERROR(const_int_scalar(n, 1, "dft_length", &dft_length));
  for (int i = 2; i < 5; ++i)
    if (hc_value_numel(n->inputs[i]) != 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d must be a scalar, got %lld elements", i,
                           (long long)hc_value_numel(n->inputs[i]));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 2, HC_DT(HX_DTYPE_INT32) | HC_DT(HX_DTYPE_INT64)));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 1));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 2));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 3, HC_DT_FLOATS));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 3, 4));
  if (num_mel_bins < 0)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "num_mel_bins must be >= 0, got %lld", (long long)num_mel_bins);
  if (dft_length < 1 || dft_length > ((int64_t)1 << 40))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "dft_length must be in [1, 2^40], got %lld",
                         (long long)dft_length);
  int64_t rate;
  if (hc_value_const_i64(n->inputs[2], 0, &rate) && rate < 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "sample_rate must be positive, got %lld", (long long)rate);
  int64_t dims[2] = {dft_length / 2 + 1, num_mel_bins};
  hc_set_output(n, 0, dt, 2, dims);
  return HX_OK;
}

/* One single-task kernel: zero the matrix, then write each column's triangle. */
static hx_status_t lower_mel_weight_matrix(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* y = n->outputs[0];
  if (hc_value_numel(y) == 0) return HX_OK;
  int64_t bins = y->dims[0], cols = y->dims[1], dft_length;
  hc_value_const_i64(n->inputs[1], 0, &dft_length);
  hx_dtype_t dt = y->dtype, et = n->inputs[3]->dtype, rt = n->inputs[2]->dtype;
  hx_dtype_t ct = et == HX_DTYPE_FLOAT64 ? HX_DTYPE_FLOAT64 : HX_DTYPE_FLOAT32;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, 1, &kb));
  LLVMValueRef py = hc_kb_ptr(&kb, y);
  LLVMValueRef zero64 = hc_kb_i64(&kb, 0);
  LLVMValueRef low = hz_to_mel(&kb, et, hc_kb_load(&kb, et, hc_kb_ptr(&kb, n->inputs[3]), zero64));
  LLVMValueRef high = hz_to_mel(&kb, et, hc_kb_load(&kb, et, hc_kb_ptr(&kb, n->inputs[4]), zero64));
  LLVMValueRef step = edge_round(&kb, et, hc_kb_sub(&kb, ct, high, low));
  step = edge_round(&kb, et, hc_kb_div(&kb, ct, step, hc_kb_const(&kb, ct, (double)(cols + 2))));
  LLVMValueRef rate = hc_kb_load(&kb, rt, hc_kb_ptr(&kb, n->inputs[2]), zero64);
  rate = hc_kb_convert(&kb, rate, rt, HX_DTYPE_FLOAT64);
  LLVMValueRef len1 = hc_kb_const(&kb, HX_DTYPE_FLOAT64, (double)(dft_length + 1));
  hc_kb_memset(&kb, py, 0, hc_kb_i64(&kb, (int64_t)hc_value_nbytes(y)));

  hc_loop il;
  LLVMValueRef i = hc_loop_begin(&kb, &il, zero64, hc_kb_i64(&kb, cols), "i");
  LLVMValueRef lo = mel_edge(&kb, ct, i, step, low, len1, rate);
  LLVMValueRef mid = mel_edge(&kb, ct, hc_kb_iadd(&kb, i, hc_kb_i64(&kb, 1)), step, low, len1, rate);
  LLVMValueRef hi = mel_edge(&kb, ct, hc_kb_iadd(&kb, i, hc_kb_i64(&kb, 2)), step, low, len1, rate);
  LLVMValueRef one64 = hc_kb_i64(&kb, 1);
  LLVMValueRef flat = LLVMBuildICmp(kb.b, LLVMIntEQ, mid, lo, "");
  /* Rising side: [lo, mid] over (mid - lo); a single 1 at mid when flat. */
  LLVMValueRef r_lo = hc_kb_select(&kb, flat, mid, lo);
  LLVMValueRef r_den = hc_kb_select(&kb, flat, one64, LLVMBuildSub(kb.b, mid, lo, ""));
  LLVMValueRef r_base = hc_kb_select(&kb, flat, LLVMBuildSub(kb.b, mid, one64, ""), lo);
  mel_ramp(&kb, dt, py, bins, cols, i, r_lo, hc_kb_iadd(&kb, mid, one64), r_base, r_den, true);
  /* Falling side: [mid, hi) over (hi - mid), when hi > mid. */
  mel_ramp(&kb, dt, py, bins, cols, i, mid, hi, hi, LLVMBuildSub(kb.b, hi, mid, ""), false);
  hc_loop_end(&kb, &il);
  hc_kb_end(&kb, 60.0 * (double)cols + (double)hc_value_numel(y), (double)hc_value_nbytes(y));
  return HX_OK;
}

static const char* const k_window_attrs[] = {"output_datatype", "periodic", NULL};
static const char* const k_mel_attrs[] = {"output_datatype", NULL};

const hc_op_desc hc_op_hann_window = {"HannWindow", "", 17, 22, k_window_attrs, 0, infer_hann, NULL, NULL, NULL};
const hc_op_desc hc_op_hamming_window = {"HammingWindow", "",   17,   22,  k_window_attrs, 0,
                                         infer_hamming,   NULL, NULL, NULL};
const hc_op_desc hc_op_blackman_window = {"BlackmanWindow", "",   17,   22,  k_window_attrs, 0,
                                          infer_blackman,   NULL, NULL, NULL};
const hc_op_desc hc_op_mel_weight_matrix = {
    "MelWeightMatrix", "", 17, 22, k_mel_attrs, 0, infer_mel_weight_matrix, lower_mel_weight_matrix, NULL, NULL};
