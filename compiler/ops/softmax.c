/* Softmax: y = exp(x - max) / sum(exp(x - max)) along an axis.
 *
 * Before opset 13 the input is coerced to 2-D at `axis` (default 1) and each
 * row of the flattened trailing block is normalised; from opset 13 on the
 * op runs along `axis` alone (default -1). Either way the work splits into
 * (outer, n, inner): softmax over n elements spaced `inner` apart.
 *
 * inner == 1: a task is one contiguous row (max, exp-and-sum, scale).
 * inner > 1: a task is a block of up to SM_BLOCK neighbouring columns of one
 * outer index; per-column maxima and sums live in stack buffers so that
 * every inner loop walks contiguous memory.
 *
 * exp of float32 (and float16/bfloat16) values is computed inline so the
 * loops vectorise; float64 calls libm.
 *
 * float32/float64 outputs keep exp(x - max) in the output between the sum
 * and the scaling; float16/bfloat16 recompute it so the result is rounded
 * once.
 */
#include <math.h>

#include "compiler/ops/op.h"

/* Columns per task in the strided form. */
#define SM_BLOCK 256

static hx_status_t infer_softmax(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_FLOATS));
  const hc_value* x = n->inputs[0];
  int64_t axis;
  HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", n->opset >= 13 ? -1 : 1), x->rank, &axis));
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  return HX_OK;
}

/* hc_kb_load, except that bfloat16 is widened with integer ops (exact):
 * an fpext the optimiser can see lets it narrow float32 arithmetic back to
 * bfloat, which the back end then legalises through __truncsfbf2. */
static LLVMValueRef load_elem(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef idx) {
  if (dt != HX_DTYPE_BFLOAT16) return hc_kb_load(kb, dt, ptr, idx);
  LLVMValueRef raw = LLVMBuildLoad2(kb->b, kb->t_i16, hc_kb_gep(kb, dt, ptr, idx), "");
  LLVMValueRef wide = LLVMBuildShl(kb->b, LLVMBuildZExt(kb->b, raw, kb->t_i32, ""), LLVMConstInt(kb->t_i32, 16, 0), "");
  return LLVMBuildBitCast(kb->b, wide, kb->t_f32, "");
}

/* hc_kb_store, except that bfloat16 is rounded to nearest-even with integer
 * ops: fptrunc to bfloat lowers to __truncsfbf2 on targets without
 * AVX512-BF16, and libgcc before GCC 13 does not have it. */
static void store_elem(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef idx, LLVMValueRef v) {
  if (dt != HX_DTYPE_BFLOAT16) {
    hc_kb_store(kb, dt, ptr, idx, v);
    return;
  }
  LLVMBuilderRef b = kb->b;
  LLVMValueRef bits = LLVMBuildBitCast(b, v, kb->t_i32, "");
  LLVMValueRef high = LLVMBuildLShr(b, bits, LLVMConstInt(kb->t_i32, 16, 0), "");
  LLVMValueRef bias = LLVMBuildAdd(b, LLVMBuildAnd(b, high, LLVMConstInt(kb->t_i32, 1, 0), ""),
                                   LLVMConstInt(kb->t_i32, 0x7FFF, 0), "");
  LLVMValueRef rounded = LLVMBuildLShr(b, LLVMBuildAdd(b, bits, bias, ""), LLVMConstInt(kb->t_i32, 16, 0), "");
  LLVMValueRef quiet_nan = LLVMBuildOr(b, high, LLVMConstInt(kb->t_i32, 0x40, 0), "");
  LLVMValueRef is_nan = LLVMBuildFCmp(b, LLVMRealUNO, v, v, "");
  LLVMValueRef r = LLVMBuildTrunc(b, LLVMBuildSelect(b, is_nan, quiet_nan, rounded, ""), kb->t_i16, "");
  LLVMBuildStore(b, r, hc_kb_gep(kb, dt, ptr, idx));
}

/* Marks a floating-point instruction reassociable so that the sum can be
 * split into vector lanes. */
static LLVMValueRef reassoc(LLVMValueRef v) {
  if (LLVMIsAInstruction(v) && LLVMCanValueUseFastMathFlags(v)) LLVMSetFastMathFlags(v, LLVMFastMathAllowReassoc);
  return v;
}

/* exp(x) for float32 x <= 0 (or NaN) without a libm call, so that loops
 * around it vectorise: x = n*ln2 + r with |r| <= ln2/2 (Cody-Waite split of
 * ln2), exp(r) by the Cephes expf polynomial (about 1 ulp), and 2^n built
 * in the exponent bits. Below -87.33 the result is 0 (float32 underflow);
 * NaN passes through. */
static LLVMValueRef exp_nonpos_f32(hc_kb* kb, LLVMValueRef x) {
  static const double k_poly[] = {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                  4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1};
  LLVMBuilderRef b = kb->b;
  LLVMTypeRef f = kb->t_f32;
  hx_dtype_t dt = HX_DTYPE_FLOAT32;
  LLVMValueRef lo = LLVMConstReal(f, -87.33654);
  LLVMValueRef xc = hc_kb_max(kb, dt, x, lo);
  LLVMValueRef nf = hc_kb_mul(kb, dt, xc, LLVMConstReal(f, 1.44269504088896341));
  nf = hc_kb_math(kb, dt, "roundeven", &nf, 1);
  LLVMValueRef r = hc_kb_fma(kb, dt, nf, LLVMConstReal(f, -0.693359375), xc);
  r = hc_kb_fma(kb, dt, nf, LLVMConstReal(f, 2.12194440e-4), r);
  LLVMValueRef p = LLVMConstReal(f, k_poly[0]);
  for (size_t i = 1; i < sizeof k_poly / sizeof k_poly[0]; ++i)
    p = hc_kb_fma(kb, dt, p, r, LLVMConstReal(f, k_poly[i]));
  LLVMValueRef r2 = hc_kb_mul(kb, dt, r, r);
  LLVMValueRef y = hc_kb_fma(kb, dt, p, r2, hc_kb_add(kb, dt, r, LLVMConstReal(f, 1.0)));
  LLVMValueRef n = LLVMBuildFPToSI(b, nf, kb->t_i32, "");
  LLVMValueRef biased = LLVMBuildAdd(b, n, LLVMConstInt(kb->t_i32, 127, 0), "");
  LLVMValueRef bits = LLVMBuildShl(b, biased, LLVMConstInt(kb->t_i32, 23, 0), "");
  y = hc_kb_mul(kb, dt, y, LLVMBuildBitCast(b, bits, f, ""));
  y = hc_kb_select(kb, LLVMBuildFCmp(b, LLVMRealOLT, x, lo, ""), LLVMConstReal(f, 0.0), y);
  return hc_kb_select(kb, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, y);
}

/* exp(x - mx), where mx is the maximum of the run x belongs to. */
static LLVMValueRef exp_of(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x, LLVMValueRef mx) {
  LLVMValueRef d = hc_kb_sub(kb, dt, x, mx);
  if (dt == HX_DTYPE_FLOAT64) return hc_kb_math(kb, dt, "exp", &d, 1);
  return exp_nonpos_f32(kb, d);
}

/* One contiguous row of n elements per task. */
static void emit_rows(hc_kb* kb, hx_dtype_t dt, LLVMValueRef px, LLVMValueRef py, int64_t n) {
  LLVMTypeRef t = hc_kb_compute_type(kb, dt);
  bool keep_exp = dt == HX_DTYPE_FLOAT32 || dt == HX_DTYPE_FLOAT64;
  LLVMValueRef mx_slot = hc_kb_alloca(kb, t, "max");
  LLVMValueRef sum_slot = hc_kb_alloca(kb, t, "sum");
  hc_loop task, l;
  LLVMValueRef row = hc_kb_task_loop_begin(kb, &task);
  LLVMValueRef base = hc_kb_imul(kb, row, hc_kb_i64(kb, n));
  LLVMValueRef zero = hc_kb_i64(kb, 0), len = hc_kb_i64(kb, n);

  LLVMBuildStore(kb->b, hc_kb_const(kb, dt, -INFINITY), mx_slot);
  LLVMValueRef j = hc_loop_begin(kb, &l, zero, len, "j");
  LLVMValueRef x = load_elem(kb, dt, px, hc_kb_iadd(kb, base, j));
  LLVMBuildStore(kb->b, hc_kb_max(kb, dt, LLVMBuildLoad2(kb->b, t, mx_slot, ""), x), mx_slot);
  hc_loop_end(kb, &l);
  LLVMValueRef mx = LLVMBuildLoad2(kb->b, t, mx_slot, "");

  LLVMBuildStore(kb->b, hc_kb_const(kb, dt, 0), sum_slot);
  j = hc_loop_begin(kb, &l, zero, len, "j");
  LLVMValueRef idx = hc_kb_iadd(kb, base, j);
  LLVMValueRef e = exp_of(kb, dt, load_elem(kb, dt, px, idx), mx);
  if (keep_exp) store_elem(kb, dt, py, idx, e);
  LLVMBuildStore(kb->b, reassoc(hc_kb_add(kb, dt, LLVMBuildLoad2(kb->b, t, sum_slot, ""), e)), sum_slot);
  hc_loop_end(kb, &l);
  LLVMValueRef inv = hc_kb_div(kb, dt, hc_kb_const(kb, dt, 1.0), LLVMBuildLoad2(kb->b, t, sum_slot, ""));

  j = hc_loop_begin(kb, &l, zero, len, "j");
  idx = hc_kb_iadd(kb, base, j);
  e = keep_exp ? load_elem(kb, dt, py, idx) : exp_of(kb, dt, load_elem(kb, dt, px, idx), mx);
  store_elem(kb, dt, py, idx, hc_kb_mul(kb, dt, e, inv));
  hc_loop_end(kb, &l);
  hc_loop_end(kb, &task);
}

/* Address of element i of a stack buffer of compute-type values. */
static LLVMValueRef buf_at(hc_kb* kb, LLVMTypeRef t, LLVMValueRef buf, LLVMValueRef i) {
  return LLVMBuildGEP2(kb->b, t, buf, &i, 1, "");
}

/* Softmax over n elements spaced `inner` apart; a task is one outer index
 * and a block of up to SM_BLOCK columns. */
static void emit_strided(hc_kb* kb, hx_dtype_t dt, LLVMValueRef px, LLVMValueRef py, int64_t n, int64_t inner) {
  LLVMTypeRef t = hc_kb_compute_type(kb, dt);
  bool keep_exp = dt == HX_DTYPE_FLOAT32 || dt == HX_DTYPE_FLOAT64;
  int64_t blocks = (inner + SM_BLOCK - 1) / SM_BLOCK;
  LLVMValueRef mx_buf = hc_kb_alloca(kb, LLVMArrayType2(t, SM_BLOCK), "max");
  LLVMValueRef sum_buf = hc_kb_alloca(kb, LLVMArrayType2(t, SM_BLOCK), "sum");
  hc_loop task, jl, il;
  LLVMValueRef tk = hc_kb_task_loop_begin(kb, &task);
  LLVMValueRef o = LLVMBuildUDiv(kb->b, tk, hc_kb_i64(kb, blocks), "");
  LLVMValueRef i0 = hc_kb_imul(kb, LLVMBuildURem(kb->b, tk, hc_kb_i64(kb, blocks), ""), hc_kb_i64(kb, SM_BLOCK));
  LLVMValueRef cnt = hc_kb_imin(kb, hc_kb_i64(kb, SM_BLOCK), LLVMBuildSub(kb->b, hc_kb_i64(kb, inner), i0, ""));
  LLVMValueRef base = hc_kb_iadd(kb, hc_kb_imul(kb, o, hc_kb_i64(kb, n * inner)), i0);
  LLVMValueRef zero = hc_kb_i64(kb, 0), len = hc_kb_i64(kb, n);

  LLVMValueRef i = hc_loop_begin(kb, &il, zero, cnt, "i");
  LLVMBuildStore(kb->b, hc_kb_const(kb, dt, -INFINITY), buf_at(kb, t, mx_buf, i));
  LLVMBuildStore(kb->b, hc_kb_const(kb, dt, 0), buf_at(kb, t, sum_buf, i));
  hc_loop_end(kb, &il);

  LLVMValueRef j = hc_loop_begin(kb, &jl, zero, len, "j");
  LLVMValueRef row = hc_kb_iadd(kb, base, hc_kb_imul(kb, j, hc_kb_i64(kb, inner)));
  i = hc_loop_begin(kb, &il, zero, cnt, "i");
  LLVMValueRef p = buf_at(kb, t, mx_buf, i);
  LLVMValueRef xv = load_elem(kb, dt, px, hc_kb_iadd(kb, row, i));
  LLVMBuildStore(kb->b, hc_kb_max(kb, dt, LLVMBuildLoad2(kb->b, t, p, ""), xv), p);
  hc_loop_end(kb, &il);
  hc_loop_end(kb, &jl);

  j = hc_loop_begin(kb, &jl, zero, len, "j");
  row = hc_kb_iadd(kb, base, hc_kb_imul(kb, j, hc_kb_i64(kb, inner)));
  i = hc_loop_begin(kb, &il, zero, cnt, "i");
  LLVMValueRef idx = hc_kb_iadd(kb, row, i);
  LLVMValueRef e = exp_of(kb, dt, load_elem(kb, dt, px, idx), LLVMBuildLoad2(kb->b, t, buf_at(kb, t, mx_buf, i), ""));
  if (keep_exp) store_elem(kb, dt, py, idx, e);
  p = buf_at(kb, t, sum_buf, i);
  LLVMBuildStore(kb->b, hc_kb_add(kb, dt, LLVMBuildLoad2(kb->b, t, p, ""), e), p);
  hc_loop_end(kb, &il);
  hc_loop_end(kb, &jl);

  i = hc_loop_begin(kb, &il, zero, cnt, "i");
  p = buf_at(kb, t, sum_buf, i);
  LLVMBuildStore(kb->b, hc_kb_div(kb, dt, hc_kb_const(kb, dt, 1.0), LLVMBuildLoad2(kb->b, t, p, "")), p);
  hc_loop_end(kb, &il);

  j = hc_loop_begin(kb, &jl, zero, len, "j");
  row = hc_kb_iadd(kb, base, hc_kb_imul(kb, j, hc_kb_i64(kb, inner)));
  i = hc_loop_begin(kb, &il, zero, cnt, "i");
  idx = hc_kb_iadd(kb, row, i);
  e = keep_exp ? load_elem(kb, dt, py, idx)
               : exp_of(kb, dt, load_elem(kb, dt, px, idx), LLVMBuildLoad2(kb->b, t, buf_at(kb, t, mx_buf, i), ""));
  store_elem(kb, dt, py, idx, hc_kb_mul(kb, dt, e, LLVMBuildLoad2(kb->b, t, buf_at(kb, t, sum_buf, i), "")));
  hc_loop_end(kb, &il);
  hc_loop_end(kb, &jl);
  hc_loop_end(kb, &task);
}

static hx_status_t lower_softmax(hc_lower_ctx* lc, hc_node* n) {
  const hc_value *x = n->inputs[0], *y = n->outputs[0];
  int64_t axis;
  HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", n->opset >= 13 ? -1 : 1), x->rank, &axis));
  int64_t outer = hc_shape_numel((int)axis, x->dims);
  int64_t len, inner;
  if (n->opset < 13) {
    len = hc_shape_numel(x->rank - (int)axis, x->dims + axis);
    inner = 1;
  } else {
    len = x->dims[axis];
    inner = hc_shape_numel(x->rank - (int)axis - 1, x->dims + axis + 1);
  }
  int64_t total = hc_value_numel(x);
  if (total == 0) return HX_OK; /* nothing to write */
  int64_t tasks = inner == 1 ? outer : outer * ((inner + SM_BLOCK - 1) / SM_BLOCK);
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, tasks, &kb));
  LLVMValueRef px = hc_kb_ptr(&kb, x), py = hc_kb_ptr(&kb, y);
  if (inner == 1)
    emit_rows(&kb, x->dtype, px, py, len);
  else
    emit_strided(&kb, x->dtype, px, py, len, inner);
  /* max, subtract, exp (counted as ~10 flops), add, multiply per element. */
  hc_kb_end(&kb, 14.0 * (double)total, (double)hc_value_nbytes(x) + (double)hc_value_nbytes(y));
  return HX_OK;
}

static const char* const k_softmax_attrs[] = {"axis", NULL};

const hc_op_desc hc_op_softmax = {"Softmax", "", 1, 22, k_softmax_attrs, 0, infer_softmax, lower_softmax, NULL};
