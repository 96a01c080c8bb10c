/* Fast, accurate float math for generated kernels: exp, expm1, log, log1p,
 * tanh, erf, erfc, Gelu, sigmoid and softplus on compute-type values of a
 * float dtype. Used by the kernel builder's hc_kb_math and by the ops.
 *
 * float32 compute values (float32, float16, bfloat16) get inline,
 * branch-free polynomial code built only from instructions and intrinsics
 * with vector forms, so the element loop around them vectorises; every
 * function is within a few ulp of the correctly rounded result over the
 * whole float32 range (checked exhaustively against double libm) and keeps
 * relative accuracy near 0 where the function is odd or tiny. float64
 * values call libm, which is already accurate.
 */
#ifndef HARNESS_CODEGEN_FAST_MATH_H
#define HARNESS_CODEGEN_FAST_MATH_H

#include "compiler/codegen/kernel_builder.h"

/* A float constant in the compute type of dt. */
LLVMValueRef hc_ew_c(hc_kb* kb, hx_dtype_t dt, double v);
/* Polynomial c[0]*x^(n-1) + ... + c[n-1] by Horner's rule with fused
 * multiply-adds. */
LLVMValueRef hc_ew_poly(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x, const double* c, int n);

LLVMValueRef hc_ew_exp(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x);
/* exp(x) - 1, accurate near 0. */
LLVMValueRef hc_ew_expm1(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x);
LLVMValueRef hc_ew_log(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x);
/* log(1 + x), accurate near 0. */
LLVMValueRef hc_ew_log1p(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x);
LLVMValueRef hc_ew_tanh(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x);
LLVMValueRef hc_ew_erf(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x);
/* erf to about 4 ulp (4.5e-7) with one division: for fused epilogues. */
LLVMValueRef hc_ew_erf_fast(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x);
/* erfc(t) for t >= 0 (or NaN), without the cancellation of 1 - erf(t). */
LLVMValueRef hc_ew_erfc_pos(hc_kb* kb, hx_dtype_t dt, LLVMValueRef t);
/* x * Phi(x) = x * erfc(-x/sqrt2) / 2 (Gelu), accurate in the negative tail. */
LLVMValueRef hc_ew_gelu(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x);
/* 1 / (1 + exp(-x)). */
LLVMValueRef hc_ew_sigmoid(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x);
/* Cheaper float32 sigmoid (relative error below 6e-6) for fused epilogues. */
LLVMValueRef hc_ew_sigmoid_fast(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x);
/* x * hc_ew_sigmoid_fast(x) (SiLU) with one division and no multiply. */
LLVMValueRef hc_ew_silu_fast(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x);
/* log(1 + exp(x)) without overflow or cancellation. */
LLVMValueRef hc_ew_softplus(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x);

#endif /* HARNESS_CODEGEN_FAST_MATH_H */
