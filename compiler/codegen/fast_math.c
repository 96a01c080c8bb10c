/* Vectorisable float32 math for element-wise ops (see compiler/codegen/fast_math.h).
 *
 * Every float32 routine is straight-line code (selects instead of branches)
 * over instructions and intrinsics with vector forms, so the element loop
 * that calls it stays vectorisable. Worst error measured over every float32
 * input (against double-precision libm, results above 1e-30): exp 1.3 ulp,
 * log 0.8, expm1 2.2, log1p 2.5, tanh 1.4, erf 1.2, erfc 6.7, softplus 3.2,
 * Gelu 7.9; relative accuracy holds near 0 and in the tails.
 * The erf/erfc coefficients were fitted (near-minimax, Lawson iterations)
 * to erf(x)/x - 1 on [0, 1] and to -log(erfc(t)) - t^2 on [1, 5].
 */
#include "compiler/codegen/fast_math.h"

#include <math.h>

static bool is_f64(hx_dtype_t dt) { return dt == HX_DTYPE_FLOAT64; }

/* Splat over kb->const_lanes where fused ops are evaluated on whole
 * vectors (hc_epilogue_apply_vec), like hc_kb_const. */
LLVMValueRef hc_ew_c(hc_kb* kb, hx_dtype_t dt, double v) {
  LLVMValueRef c = LLVMConstReal(hc_kb_compute_type(kb, dt), v);
  return kb->const_lanes ? hc_kb_splat(kb, c, kb->const_lanes) : c;
}

LLVMValueRef hc_ew_poly(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x, const double* c, int n) {
  LLVMValueRef p = hc_ew_c(kb, dt, c[0]);
  for (int i = 1; i < n; ++i) p = hc_kb_fma(kb, dt, p, x, hc_ew_c(kb, dt, c[i]));
  return p;
}

/* One-argument libm call or intrinsic in the compute type of dt. */
static LLVMValueRef math1(hc_kb* kb, hx_dtype_t dt, const char* name, LLVMValueRef x) {
  return hc_kb_math(kb, dt, name, &x, 1);
}

static LLVMValueRef fcmp(hc_kb* kb, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFCmp(kb->b, p, a, b, "");
}

static LLVMValueRef sel(hc_kb* kb, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(kb->b, c, a, b, "");
}

static LLVMValueRef fabs_(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x) { return math1(kb, dt, "fabs", x); }

static LLVMValueRef copysign_(hc_kb* kb, hx_dtype_t dt, LLVMValueRef mag, LLVMValueRef sign) {
  LLVMValueRef args[2] = {mag, sign};
  return hc_kb_math(kb, dt, "copysign", args, 2);
}

/* exp(xc) = 2^n * y for float32 xc in [-104, 89] (Cephes expf's reduction
 * and polynomial, about 1 ulp): returns y in [sqrt(1/2), sqrt(2)] and n as
 * a float (*nf). The callers apply 2^n as the range they serve needs. */
static LLVMValueRef exp_f32_reduced(hc_kb* kb, LLVMValueRef xc, LLVMValueRef* nf) {
  static const double k_poly[] = {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                  4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1};
  hx_dtype_t dt = HX_DTYPE_FLOAT32;
  LLVMValueRef n = hc_kb_mul(kb, dt, xc, hc_ew_c(kb, dt, 1.44269504088896341));
  n = hc_kb_intrinsic(kb, "llvm.roundeven", kb->t_f32, &n, 1);
  LLVMValueRef r = hc_kb_fma(kb, dt, n, hc_ew_c(kb, dt, -0.693359375), xc);
  r = hc_kb_fma(kb, dt, n, hc_ew_c(kb, dt, 2.12194440e-4), r);
  LLVMValueRef p = hc_ew_poly(kb, dt, r, k_poly, 6);
  *nf = n;
  return hc_kb_fma(kb, dt, p, hc_kb_mul(kb, dt, r, r), hc_kb_add(kb, dt, r, hc_ew_c(kb, dt, 1.0)));
}

/* float32 exp with 2^n applied as two factors 2^(n/2), so that results
 * near FLT_MAX (x in [88.38, 88.72]) stay finite and results below FLT_MIN
 * come out as subnormals instead of 0. */
static LLVMValueRef exp_f32(hc_kb* kb, LLVMValueRef x) {
  LLVMBuilderRef b = kb->b;
  hx_dtype_t dt = HX_DTYPE_FLOAT32;
  LLVMTypeRef i32 = kb->t_i32;
  LLVMValueRef lo = hc_ew_c(kb, dt, -104.0), hi = hc_ew_c(kb, dt, 89.0);
  LLVMValueRef nf, y = exp_f32_reduced(kb, hc_kb_min(kb, dt, hc_kb_max(kb, dt, x, lo), hi), &nf);
  /* n in [-150, 128]: n1 = floor(n/2), n2 = n - n1 are both normal exponents. */
  LLVMValueRef n = LLVMBuildFPToSI(b, nf, i32, "");
  LLVMValueRef n1 = LLVMBuildAShr(b, n, LLVMConstInt(i32, 1, 0), "");
  LLVMValueRef n2 = LLVMBuildSub(b, n, n1, "");
  LLVMValueRef bias = LLVMConstInt(i32, 127, 0), sh = LLVMConstInt(i32, 23, 0);
  LLVMValueRef s1 = LLVMBuildBitCast(b, LLVMBuildShl(b, LLVMBuildAdd(b, n1, bias, ""), sh, ""), kb->t_f32, "");
  LLVMValueRef s2 = LLVMBuildBitCast(b, LLVMBuildShl(b, LLVMBuildAdd(b, n2, bias, ""), sh, ""), kb->t_f32, "");
  y = hc_kb_mul(kb, dt, hc_kb_mul(kb, dt, y, s1), s2);
  y = sel(kb, fcmp(kb, LLVMRealOLT, x, lo), hc_ew_c(kb, dt, 0.0), y);
  return sel(kb, fcmp(kb, LLVMRealUNO, x, x), x, y);
}

/* 2^n for an integral float32 n in [-126, 127] (a normal float): n + 127
 * in the exponent field. */
static LLVMValueRef pow2_normal(hc_kb* kb, LLVMValueRef nf) {
  LLVMBuilderRef b = kb->b;
  /* float32 or a vector of them (the fast sigmoid on whole vectors). */
  LLVMTypeRef ft = LLVMTypeOf(nf);
  bool vec = LLVMGetTypeKind(ft) == LLVMVectorTypeKind;
  unsigned lanes = vec ? LLVMGetVectorSize(ft) : 0;
  LLVMTypeRef it = vec ? LLVMVectorType(kb->t_i32, lanes) : kb->t_i32;
  LLVMValueRef c127 = LLVMConstInt(kb->t_i32, 127, 0), c23 = LLVMConstInt(kb->t_i32, 23, 0);
  if (vec) {
    c127 = hc_kb_splat(kb, c127, lanes);
    c23 = hc_kb_splat(kb, c23, lanes);
  }
  LLVMValueRef n = LLVMBuildFPToSI(b, nf, it, "");
  return LLVMBuildBitCast(b, LLVMBuildShl(b, LLVMBuildAdd(b, n, c127, ""), c23, ""), ft, "");
}

/* exp_f32 for x in [-87, 88] (x is clamped there; NaN is not kept): every
 * result is a normal float, so 2^n is one exponent-field add and one
 * multiply instead of exp_f32's two-factor scaling. For sigmoid, which
 * settles the inputs beyond that range itself. */
static LLVMValueRef exp_f32_normal(hc_kb* kb, LLVMValueRef x) {
  hx_dtype_t dt = HX_DTYPE_FLOAT32;
  LLVMValueRef xc = hc_kb_min(kb, dt, hc_kb_max(kb, dt, x, hc_ew_c(kb, dt, -87.0)), hc_ew_c(kb, dt, 88.0));
  LLVMValueRef nf, y = exp_f32_reduced(kb, xc, &nf);
  return hc_kb_mul(kb, dt, y, pow2_normal(kb, nf));
}

LLVMValueRef hc_ew_exp(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x) {
  return is_f64(dt) ? math1(kb, dt, "exp", x) : exp_f32(kb, x);
}

LLVMValueRef hc_ew_expm1(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x) {
  if (is_f64(dt)) return math1(kb, dt, "expm1", x);
  /* |x| < ln2: Taylor series to x^11/11! (truncation below 2^-30
   * relative); elsewhere exp(x) - 1 loses at most about one bit. */
  static const double k[] = {1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320, 1.0 / 5040,
                             1.0 / 720,      1.0 / 120,     1.0 / 24,     1.0 / 6,     0.5};
  LLVMValueRef p = hc_ew_poly(kb, dt, x, k, 10);
  LLVMValueRef small = hc_kb_fma(kb, dt, p, hc_kb_mul(kb, dt, x, x), x);
  LLVMValueRef big = hc_kb_sub(kb, dt, hc_ew_exp(kb, dt, x), hc_ew_c(kb, dt, 1.0));
  return sel(kb, fcmp(kb, LLVMRealOLT, fabs_(kb, dt, x), hc_ew_c(kb, dt, 0.69314718055994531)), small, big);
}

/* float32 log: Cephes logf. x = 2^e * m with m in [sqrt(1/2), sqrt(2)),
 * log(m) = f - f^2/2 + f^3 P(f) with f = m - 1, and e*ln2 added in two parts
 * so the sum stays exact. Subnormal inputs are scaled by 2^23 first. */
static LLVMValueRef log_f32(hc_kb* kb, LLVMValueRef x) {
  static const double k[] = {7.0376836292E-2,  -1.1514610310E-1, 1.1676998740E-1,  -1.2420140846E-1, 1.4249322787E-1,
                             -1.6668057665E-1, 2.0000714765E-1,  -2.4999993993E-1, 3.3333331174E-1};
  LLVMBuilderRef b = kb->b;
  hx_dtype_t dt = HX_DTYPE_FLOAT32;
  LLVMTypeRef i32 = kb->t_i32;
  LLVMValueRef tiny = fcmp(kb, LLVMRealOLT, x, hc_ew_c(kb, dt, 1.17549435082228751e-38));
  LLVMValueRef xs = sel(kb, tiny, hc_kb_mul(kb, dt, x, hc_ew_c(kb, dt, 8388608.0)), x);
  LLVMValueRef bits = LLVMBuildBitCast(b, xs, i32, "");
  LLVMValueRef e = LLVMBuildLShr(b, bits, LLVMConstInt(i32, 23, 0), "");
  e = LLVMBuildAnd(b, e, LLVMConstInt(i32, 0xff, 0), "");
  e = LLVMBuildSub(b, e, sel(kb, tiny, LLVMConstInt(i32, 126 + 23, 0), LLVMConstInt(i32, 126, 0)), "");
  LLVMValueRef mbits = LLVMBuildOr(b, LLVMBuildAnd(b, bits, LLVMConstInt(i32, 0x007fffff, 0), ""),
                                   LLVMConstInt(i32, 0x3f000000, 0), "");
  LLVMValueRef m = LLVMBuildBitCast(b, mbits, kb->t_f32, "");
  LLVMValueRef lt = fcmp(kb, LLVMRealOLT, m, hc_ew_c(kb, dt, 0.707106781186547524));
  e = LLVMBuildSub(b, e, LLVMBuildZExt(b, lt, i32, ""), "");
  LLVMValueRef ef = LLVMBuildSIToFP(b, e, kb->t_f32, "");
  LLVMValueRef one = hc_ew_c(kb, dt, 1.0);
  LLVMValueRef f = hc_kb_sub(kb, dt, sel(kb, lt, hc_kb_add(kb, dt, m, m), m), one);
  LLVMValueRef z = hc_kb_mul(kb, dt, f, f);
  LLVMValueRef y = hc_kb_mul(kb, dt, hc_kb_mul(kb, dt, hc_ew_poly(kb, dt, f, k, 9), f), z);
  y = hc_kb_fma(kb, dt, ef, hc_ew_c(kb, dt, -2.12194440e-4), y);
  y = hc_kb_fma(kb, dt, z, hc_ew_c(kb, dt, -0.5), y);
  LLVMValueRef r = hc_kb_add(kb, dt, f, y);
  r = hc_kb_fma(kb, dt, ef, hc_ew_c(kb, dt, 0.693359375), r);
  /* log(0) = -inf, log(<0) = NaN, log(inf) = inf, NaN stays NaN. */
  LLVMValueRef inf = hc_ew_c(kb, dt, INFINITY);
  r = sel(kb, fcmp(kb, LLVMRealOEQ, x, hc_ew_c(kb, dt, 0.0)), LLVMConstReal(kb->t_f32, -INFINITY), r);
  r = sel(kb, fcmp(kb, LLVMRealOLT, x, hc_ew_c(kb, dt, 0.0)), hc_ew_c(kb, dt, NAN), r);
  r = sel(kb, fcmp(kb, LLVMRealOEQ, x, inf), inf, r);
  return sel(kb, fcmp(kb, LLVMRealUNO, x, x), x, r);
}

LLVMValueRef hc_ew_log(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x) {
  return is_f64(dt) ? math1(kb, dt, "log", x) : log_f32(kb, x);
}

LLVMValueRef hc_ew_log1p(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x) {
  if (is_f64(dt)) return math1(kb, dt, "log1p", x);
  /* u = 1 + x rounded; log(u) * x / (u - 1) cancels the rounding error of u
   * (Goldberg's log1p), exact when u == 1. */
  LLVMValueRef one = hc_ew_c(kb, dt, 1.0);
  LLVMValueRef u = hc_kb_add(kb, dt, one, x);
  LLVMValueRef r = hc_kb_mul(kb, dt, log_f32(kb, u), hc_kb_div(kb, dt, x, hc_kb_sub(kb, dt, u, one)));
  r = sel(kb, fcmp(kb, LLVMRealOEQ, u, one), x, r);
  LLVMValueRef inf = hc_ew_c(kb, dt, INFINITY);
  return sel(kb, fcmp(kb, LLVMRealOEQ, u, inf), inf, r);
}

LLVMValueRef hc_ew_tanh(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x) {
  if (is_f64(dt)) return math1(kb, dt, "tanh", x);
  /* Cephes tanhf: an odd polynomial below 0.625 (relative accuracy near 0),
   * 1 - 2 / (exp(2|x|) + 1) with the sign of x above (saturates to +-1). */
  static const double k[] = {-5.70498872745E-3, 2.06390887954E-2, -5.37397155531E-2, 1.33314422036E-1,
                             -3.33332819422E-1};
  LLVMValueRef a = fabs_(kb, dt, x);
  LLVMValueRef s = hc_kb_mul(kb, dt, x, x);
  LLVMValueRef small = hc_kb_fma(kb, dt, hc_kb_mul(kb, dt, hc_ew_poly(kb, dt, s, k, 5), s), x, x);
  LLVMValueRef e = hc_ew_exp(kb, dt, hc_kb_add(kb, dt, a, a));
  LLVMValueRef one = hc_ew_c(kb, dt, 1.0);
  LLVMValueRef big = hc_kb_sub(kb, dt, one, hc_kb_div(kb, dt, hc_ew_c(kb, dt, 2.0), hc_kb_add(kb, dt, e, one)));
  big = copysign_(kb, dt, big, x);
  return sel(kb, fcmp(kb, LLVMRealOLT, a, hc_ew_c(kb, dt, 0.625)), small, big);
}

/* erf(x) = x + x*Q(x^2) on |x| < 1 (max error 1.2e-9 in Q). */
static const double k_erf_small[] = {7.8891210861388423e-05, -0.00080208417457798553, 0.0051895353916865117,
                                     -0.026854444618974606,  0.112836001768888,       -0.37612627136019633,
                                     0.12837916591375875};
/* erfc(t) = exp(-t^2 - Q(t - 3)) on 1 <= t <= 5 (max error 6.9e-10 in Q). */
static const double k_erfc_q[] = {1.4519598789336119e-09, -4.0714749499366071e-09, -1.6797087829369464e-08,
                                  1.5504206062820188e-07, -1.0530639437997908e-06, 7.0681743369034212e-06,
                                  -4.3107347923306362e-05, 0.00024574869179599718, -0.0013532912645443579,
                                  0.007411863073703181,   -0.042605786661298169,   0.30375369314793016,
                                  1.7203630422400669};

static LLVMValueRef erf_small(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x) {
  LLVMValueRef q = hc_ew_poly(kb, dt, hc_kb_mul(kb, dt, x, x), k_erf_small, 7);
  return hc_kb_fma(kb, dt, q, x, x);
}

/* t*t as hi + lo exactly (Dekker's product with Veltkamp's split, so it
 * does not depend on the target fusing multiply-adds); |t| < 1e18. */
static void square2(hc_kb* kb, hx_dtype_t dt, LLVMValueRef t, LLVMValueRef* hi, LLVMValueRef* lo) {
  LLVMValueRef c = hc_kb_mul(kb, dt, t, hc_ew_c(kb, dt, 4097.0));
  LLVMValueRef th = hc_kb_sub(kb, dt, c, hc_kb_sub(kb, dt, c, t));
  LLVMValueRef tl = hc_kb_sub(kb, dt, t, th);
  *hi = hc_kb_mul(kb, dt, t, t);
  LLVMValueRef e = hc_kb_sub(kb, dt, hc_kb_mul(kb, dt, th, th), *hi);
  e = hc_kb_add(kb, dt, e, hc_kb_mul(kb, dt, hc_kb_add(kb, dt, th, th), tl));
  *lo = hc_kb_add(kb, dt, e, hc_kb_mul(kb, dt, tl, tl));
}

/* erfc(t) for 1 <= t <= 5 with t^2 = hi + lo: exp(-hi) * exp(-(lo + Q))
 * keeps the large exponent exact, so the result is good to a few ulp. */
static LLVMValueRef erfc_tail(hc_kb* kb, hx_dtype_t dt, LLVMValueRef t, LLVMValueRef hi, LLVMValueRef lo) {
  LLVMValueRef q = hc_ew_poly(kb, dt, hc_kb_sub(kb, dt, t, hc_ew_c(kb, dt, 3.0)), k_erfc_q, 13);
  LLVMValueRef e1 = hc_ew_exp(kb, dt, LLVMBuildFNeg(kb->b, hi, ""));
  return hc_kb_mul(kb, dt, e1, hc_ew_exp(kb, dt, LLVMBuildFNeg(kb->b, hc_kb_add(kb, dt, lo, q), "")));
}

/* erfc(t) for 0 <= t <= 10.5 (or NaN) with t^2 = hi + lo: 1 - erf below 1,
 * erfc_tail up to 5, then exp(-t^2) / (t sqrt(pi)) times the asymptotic
 * series to 1/t^16 (truncation below 2e-8 relative). At 10.5 the result
 * has underflowed to 0. */
static LLVMValueRef erfc_core(hc_kb* kb, hx_dtype_t dt, LLVMValueRef t, LLVMValueRef hi, LLVMValueRef lo) {
  static const double k_series[] = {2027025.0 / 256, -135135.0 / 128, 10395.0 / 64, -945.0 / 32, 105.0 / 16,
                                    -15.0 / 8,       3.0 / 4,          -0.5,         1.0};
  LLVMValueRef one = hc_ew_c(kb, dt, 1.0);
  LLVMValueRef s1 = hc_kb_sub(kb, dt, one, erf_small(kb, dt, t));
  LLVMValueRef s2 = erfc_tail(kb, dt, t, hi, lo);
  LLVMValueRef ser = hc_ew_poly(kb, dt, hc_kb_div(kb, dt, one, hi), k_series, 9);
  LLVMValueRef e = hc_kb_mul(kb, dt, hc_ew_exp(kb, dt, LLVMBuildFNeg(kb->b, hi, "")), hc_kb_sub(kb, dt, one, lo));
  LLVMValueRef s3 =
      hc_kb_div(kb, dt, hc_kb_mul(kb, dt, e, ser), hc_kb_mul(kb, dt, t, hc_ew_c(kb, dt, 1.7724538509055160)));
  LLVMValueRef r = sel(kb, fcmp(kb, LLVMRealOLE, t, hc_ew_c(kb, dt, 5.0)), s2, s3);
  return sel(kb, fcmp(kb, LLVMRealOLT, t, one), s1, r);
}

LLVMValueRef hc_ew_erf(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x) {
  if (is_f64(dt)) return math1(kb, dt, "erf", x);
  LLVMValueRef a = fabs_(kb, dt, x);
  /* erf(5) rounds to 1; the clamp keeps the square finite. */
  LLVMValueRef t = hc_kb_min(kb, dt, a, hc_ew_c(kb, dt, 5.0)), hi, lo;
  square2(kb, dt, t, &hi, &lo);
  LLVMValueRef small = erf_small(kb, dt, x);
  LLVMValueRef big = copysign_(kb, dt, hc_kb_sub(kb, dt, hc_ew_c(kb, dt, 1.0), erfc_tail(kb, dt, t, hi, lo)), x);
  return sel(kb, fcmp(kb, LLVMRealOLT, a, hc_ew_c(kb, dt, 1.0)), small, big);
}

/* Rational erf for float32 epilogues: x * P(x^2) / Q(x^2) on [-4, 4]
 * (the form Eigen and XLA use), 12 multiply-adds and one division instead
 * of hc_ew_erf's two polynomials and two exps. Worst error over float32
 * inputs 4.5e-7 absolute and relative (about 4 ulp), so it stays out of
 * the standalone Erf op (tight 1e-6 sweeps) and serves fused GEMM and
 * convolution epilogues (GELU), where the tile's products dominate the
 * error. */
LLVMValueRef hc_ew_erf_fast(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x) {
  static const double k_p[] = {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                               -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                               -1.60960333262415e-02};
  static const double k_q[] = {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                               -7.37332916720468e-03, -1.42647390514189e-02};
  if (is_f64(dt)) return hc_ew_erf(kb, dt, x);
  LLVMValueRef xc = hc_kb_min(kb, dt, hc_kb_max(kb, dt, x, hc_ew_c(kb, dt, -4.0)), hc_ew_c(kb, dt, 4.0));
  LLVMValueRef s = hc_kb_mul(kb, dt, xc, xc);
  LLVMValueRef p = hc_kb_mul(kb, dt, hc_ew_poly(kb, dt, s, k_p, 7), xc);
  LLVMValueRef r = hc_kb_div(kb, dt, p, hc_ew_poly(kb, dt, s, k_q, 5));
  return sel(kb, fcmp(kb, LLVMRealUNO, x, x), x, r);
}

LLVMValueRef hc_ew_erfc_pos(hc_kb* kb, hx_dtype_t dt, LLVMValueRef t) {
  if (is_f64(dt)) return math1(kb, dt, "erfc", t);
  LLVMValueRef tc = hc_kb_min(kb, dt, t, hc_ew_c(kb, dt, 10.5)), hi, lo;
  square2(kb, dt, tc, &hi, &lo);
  return erfc_core(kb, dt, tc, hi, lo);
}

LLVMValueRef hc_ew_gelu(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x) {
  LLVMValueRef half = hc_ew_c(kb, dt, 0.5);
  LLVMValueRef c;
  if (is_f64(dt)) {
    c = math1(kb, dt, "erfc", hc_kb_mul(kb, dt, fabs_(kb, dt, x), hc_ew_c(kb, dt, 0.70710678118654752440)));
  } else {
    /* t = |x|/sqrt2 with t^2 = x^2/2 formed exactly from x, not from the
     * rounded t: exp(-t^2) would amplify t's rounding by 2 t^2. */
    LLVMValueRef xc = hc_kb_min(kb, dt, fabs_(kb, dt, x), hc_ew_c(kb, dt, 14.849242404917497)), hi, lo;
    square2(kb, dt, xc, &hi, &lo);
    LLVMValueRef t = hc_kb_mul(kb, dt, xc, hc_ew_c(kb, dt, 0.70710678118654752440));
    c = erfc_core(kb, dt, t, hc_kb_mul(kb, dt, hi, half), hc_kb_mul(kb, dt, lo, half));
  }
  /* Phi(x) = erfc(-x/sqrt2)/2: erfc(|x|/sqrt2)/2 for x < 0 (accurate in the
   * tail), 1 - that above. */
  LLVMValueRef hc = hc_kb_mul(kb, dt, c, half);
  LLVMValueRef upper = hc_kb_sub(kb, dt, hc_ew_c(kb, dt, 1.0), hc);
  LLVMValueRef phi = sel(kb, fcmp(kb, LLVMRealOLT, x, hc_ew_c(kb, dt, 0.0)), hc, upper);
  return hc_kb_mul(kb, dt, x, phi);
}

/* 1 / (1 + e) for e = e^-x computed on x clamped to [-87, 88], then 0
 * below x = -87 and NaN passed through (the clamp dropped both). */
static LLVMValueRef sigmoid_of_exp(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x, LLVMValueRef e) {
  LLVMValueRef one = hc_ew_c(kb, dt, 1.0);
  LLVMValueRef y = hc_kb_div(kb, dt, one, hc_kb_add(kb, dt, one, e));
  y = sel(kb, fcmp(kb, LLVMRealOLT, x, hc_ew_c(kb, dt, -87.0)), hc_ew_c(kb, dt, 0.0), y);
  return sel(kb, fcmp(kb, LLVMRealUNO, x, x), x, y);
}

/* float32: exp_f32_normal (-x clamped to [-87, 88]); below -87, where
 * sigmoid(x) < 2e-38, the result is 0 (as exp_f32's underflow gave it:
 * x * sigmoid(...) in Gelu's tanh form must not turn a huge x times a tiny
 * clamped value into a finite number), and NaN is passed through. */
LLVMValueRef hc_ew_sigmoid(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x) {
  LLVMValueRef one = hc_ew_c(kb, dt, 1.0);
  if (is_f64(dt)) {
    LLVMValueRef e = hc_ew_exp(kb, dt, LLVMBuildFNeg(kb->b, x, ""));
    return hc_kb_div(kb, dt, one, hc_kb_add(kb, dt, one, e));
  }
  return sigmoid_of_exp(kb, dt, x, exp_f32_normal(kb, LLVMBuildFNeg(kb->b, x, "")));
}

/* float32 sigmoid for the epilogues of convolutions and products (SiLU),
 * 1 / (1 + e^-x) with e^-x (exp_neg_fast) as 2^t, t = -x log2(e)
 * rounded once (relative error up to |t| 2^-24, below 6e-6 over the
 * range, against about 1 ulp for hc_ew_sigmoid) and a degree-5
 * polynomial of 2^f on [-1/2, 1/2] (2.4e-7), where the epilogue is a
 * quarter of EfficientNet's time.
 * The range needs no select after the division: t is clamped to
 * [-126, 128] by compares that let NaN through (NaN then reaches the
 * result through the polynomial), and 2^n built in the exponent field is
 * +infinity at n = 128, so below x = -88.4 e^-x is infinite and the
 * sigmoid exactly 0 (x * sigmoid(x) of a huge negative x is -0, not a
 * clamped value times x); above x = 87.3 2^n stays normal and the sigmoid
 * is 1. Between -88.4 and -87.3 the result is subnormal (hc_ew_sigmoid
 * gives 0 from -87 down). */
static LLVMValueRef exp_neg_fast(hc_kb* kb, LLVMValueRef x) {
  static const double k_exp2[] = {1.327646430581808e-3, 9.675540961325169e-3, 5.550713464617729e-2,
                                  2.4022120237350464e-1, 6.931469440460205e-1, 1.0000001192092896};
  hx_dtype_t dt = HX_DTYPE_FLOAT32;
  LLVMValueRef t = hc_kb_mul(kb, dt, x, hc_ew_c(kb, dt, -1.44269504088896341));
  LLVMValueRef lo = hc_ew_c(kb, dt, -126.0), hi = hc_ew_c(kb, dt, 128.0);
  t = sel(kb, fcmp(kb, LLVMRealOLT, t, lo), lo, t);
  t = sel(kb, fcmp(kb, LLVMRealOGT, t, hi), hi, t);
  LLVMValueRef nf = hc_kb_intrinsic(kb, "llvm.roundeven", LLVMTypeOf(t), &t, 1);
  LLVMValueRef p = hc_ew_poly(kb, dt, hc_kb_sub(kb, dt, t, nf), k_exp2, 6);
  return hc_kb_mul(kb, dt, p, pow2_normal(kb, nf));
}

LLVMValueRef hc_ew_sigmoid_fast(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x) {
  if (is_f64(dt)) return hc_ew_sigmoid(kb, dt, x);
  LLVMValueRef one = hc_ew_c(kb, dt, 1.0);
  return hc_kb_div(kb, dt, one, hc_kb_add(kb, dt, one, exp_neg_fast(kb, x)));
}

/* x * hc_ew_sigmoid_fast(x) as x / (1 + e^-x): one multiply fewer on the
 * pipes that also run the polynomial (7.4 instead of 7.8 cycles a vector
 * on Zen 3, bench/kernels/silu_cost.c), one rounding fewer, and the same results at the ends: x
 * below -88.4 divides by +infinity (-0), -infinity gives NaN as
 * -infinity * 0 did, NaN passes through. */
LLVMValueRef hc_ew_silu_fast(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x) {
  if (is_f64(dt)) return hc_kb_mul(kb, dt, x, hc_ew_sigmoid(kb, dt, x));
  return hc_kb_div(kb, dt, x, hc_kb_add(kb, dt, hc_ew_c(kb, dt, 1.0), exp_neg_fast(kb, x)));
}

LLVMValueRef hc_ew_softplus(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x) {
  /* max(x, 0) + log1p(exp(-|x|)): no overflow for large x, no cancellation
   * for very negative x. NaN propagates through the max. */
  LLVMValueRef e = hc_ew_exp(kb, dt, LLVMBuildFNeg(kb->b, fabs_(kb, dt, x), ""));
  return hc_kb_add(kb, dt, hc_kb_max(kb, dt, x, hc_ew_c(kb, dt, 0.0)), hc_ew_log1p(kb, dt, e));
}
