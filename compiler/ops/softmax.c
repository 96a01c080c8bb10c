/* Softmax, LogSoftmax and Hardmax along an axis.
 *
 *   Softmax:    y = exp(x - max) / sum(exp(x - max))
 *   LogSoftmax: y = x - max - log(sum(exp(x - max)))
 *   Hardmax:    y = 1 at the first maximum, 0 elsewhere (a NaN counts as
 *               the maximum, as numpy's argmax)
 *
 * Before opset 13 the input is coerced to 2-D at `axis` (default 1) and each
 * row of the flattened trailing block is processed; from opset 13 on the
 * op runs along `axis` alone (default -1). Either way the work splits into
 * (outer, n, inner): the op over n elements spaced `inner` apart.
 *
 * inner == 1: a task is one contiguous row (max, exp-and-sum, write).
 * inner > 1: a task is a block of up to SM_BLOCK neighbouring columns of one
 * outer index; per-column maxima and sums live in stack buffers so that
 * every inner loop walks contiguous memory.
 *
 * exp of float32 (and float16/bfloat16) values is computed inline so the
 * loops vectorise; float64 uses llvm.exp.
 *
 * Softmax with float32/float64 outputs keeps exp(x - max) in the output
 * between the sum and the scaling; float16/bfloat16 recompute it so the
 * result is rounded once.
 */
#include <math.h>
#include <string.h>

#include "compiler/ops/gemm_microkernel.h"
#include "compiler/ops/op.h"

/* Columns per task in the strided form. */
#define SM_BLOCK 256

enum { SM_SOFTMAX, SM_LOG, SM_HARD };

static int sm_kind(const hc_node* n) {
  if (strcmp(n->op_type, "LogSoftmax") == 0) return SM_LOG;
  if (strcmp(n->op_type, "Hardmax") == 0) return SM_HARD;
  return SM_SOFTMAX;
}

static hx_status_t infer_softmax(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  uint64_t m = HC_DT(HX_DTYPE_FLOAT32) | HC_DT(HX_DTYPE_FLOAT64) | HC_DT(HX_DTYPE_FLOAT16);
  if (n->opset >= 13) m |= HC_DT(HX_DTYPE_BFLOAT16);
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, m));
  const hc_value* x = n->inputs[0];
  int64_t axis;
  HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", n->opset >= 13 ? -1 : 1), x->rank, &axis));
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  return HX_OK;
}

/* exp(x - mx), where mx is the maximum of the run x belongs to. */
static LLVMValueRef exp_of(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x, LLVMValueRef mx) {
  LLVMValueRef d = hc_kb_sub(kb, dt, x, mx);
  return hc_kb_math(kb, dt, "exp", &d, 1);
}

/* Hardmax's running maximum: is x a new first maximum over best? */
static LLVMValueRef hard_better(hc_kb* kb, hx_dtype_t dt, LLVMValueRef x, LLVMValueRef best) {
  LLVMValueRef x_nan = LLVMBuildFCmp(kb->b, LLVMRealUNO, x, x, "");
  LLVMValueRef best_num = LLVMBuildFCmp(kb->b, LLVMRealORD, best, best, "");
  return LLVMBuildOr(kb->b, hc_kb_cmp(kb, dt, "gt", x, best), LLVMBuildAnd(kb->b, x_nan, best_num, ""), "");
}

/* The value written for element j of a row: sum holds the reciprocal of the
 * sum (Softmax) or log(sum) (LogSoftmax; x - max is formed first so that
 * large inputs keep the small log term); idx the Hardmax position. */
static LLVMValueRef sm_result(hc_kb* kb, int kind, hx_dtype_t dt, LLVMValueRef x, LLVMValueRef e, LLVMValueRef mx,
                              LLVMValueRef sum, LLVMValueRef j, LLVMValueRef idx) {
  switch (kind) {
    case SM_LOG: return hc_kb_sub(kb, dt, hc_kb_sub(kb, dt, x, mx), sum);
    case SM_HARD: {
      LLVMValueRef at_max = LLVMBuildICmp(kb->b, LLVMIntEQ, j, idx, "");
      return hc_kb_select(kb, at_max, hc_kb_const(kb, dt, 1), hc_kb_const(kb, dt, 0));
    }
    default: return hc_kb_mul(kb, dt, e ? e : exp_of(kb, dt, x, mx), sum);
  }
}

/* One contiguous row of n elements per task. */
static void emit_rows(hc_kb* kb, int kind, hx_dtype_t dt, LLVMValueRef px, LLVMValueRef py, int64_t n) {
  LLVMTypeRef t = hc_kb_compute_type(kb, dt);
  bool keep_exp = kind == SM_SOFTMAX && (dt == HX_DTYPE_FLOAT32 || dt == HX_DTYPE_FLOAT64);
  LLVMValueRef mx_slot = hc_kb_alloca(kb, t, "max");
  LLVMValueRef sum_slot = hc_kb_alloca(kb, t, "sum");
  LLVMValueRef idx_slot = hc_kb_alloca(kb, kb->t_i64, "idx");
  hc_loop task, l;
  LLVMValueRef row = hc_kb_task_loop_begin(kb, &task);
  LLVMValueRef base = hc_kb_imul(kb, row, hc_kb_i64(kb, n));
  LLVMValueRef zero = hc_kb_i64(kb, 0), len = hc_kb_i64(kb, n);

  LLVMBuildStore(kb->b, hc_kb_const(kb, dt, -INFINITY), mx_slot);
  LLVMBuildStore(kb->b, zero, idx_slot);
  LLVMValueRef j = hc_loop_begin(kb, &l, zero, len, "j");
  LLVMValueRef x = hc_kb_load(kb, dt, px, hc_kb_iadd(kb, base, j));
  LLVMValueRef best = LLVMBuildLoad2(kb->b, t, mx_slot, "");
  if (kind == SM_HARD) {
    LLVMValueRef better = hard_better(kb, dt, x, best);
    LLVMBuildStore(kb->b, hc_kb_select(kb, better, x, best), mx_slot);
    LLVMBuildStore(kb->b, hc_kb_select(kb, better, j, LLVMBuildLoad2(kb->b, kb->t_i64, idx_slot, "")), idx_slot);
  } else {
    LLVMBuildStore(kb->b, hc_kb_max(kb, dt, best, x), mx_slot);
  }
  hc_loop_end_row(kb, &l, n);
  LLVMValueRef mx = LLVMBuildLoad2(kb->b, t, mx_slot, "");
  LLVMValueRef idx = LLVMBuildLoad2(kb->b, kb->t_i64, idx_slot, "");

  LLVMValueRef sum = NULL;
  if (kind != SM_HARD) {
    LLVMBuildStore(kb->b, hc_kb_const(kb, dt, 0), sum_slot);
    j = hc_loop_begin(kb, &l, zero, len, "j");
    LLVMValueRef i = hc_kb_iadd(kb, base, j);
    LLVMValueRef e = exp_of(kb, dt, hc_kb_load(kb, dt, px, i), mx);
    if (keep_exp) hc_kb_store(kb, dt, py, i, e);
    LLVMBuildStore(kb->b, hc_kb_reassoc(hc_kb_add(kb, dt, LLVMBuildLoad2(kb->b, t, sum_slot, ""), e)), sum_slot);
    hc_loop_end_row(kb, &l, n);
    sum = LLVMBuildLoad2(kb->b, t, sum_slot, "");
    if (kind == SM_LOG)
      sum = hc_kb_math(kb, dt, "log", &sum, 1);
    else
      sum = hc_kb_div(kb, dt, hc_kb_const(kb, dt, 1.0), sum);
  }

  j = hc_loop_begin(kb, &l, zero, len, "j");
  LLVMValueRef i = hc_kb_iadd(kb, base, j);
  LLVMValueRef xv = kind == SM_HARD || keep_exp ? NULL : hc_kb_load(kb, dt, px, i);
  LLVMValueRef e = keep_exp ? hc_kb_load(kb, dt, py, i) : NULL;
  hc_kb_store(kb, dt, py, i, sm_result(kb, kind, dt, xv, e, mx, sum, j, idx));
  hc_loop_end_row(kb, &l, n);
  hc_loop_end(kb, &task);
}

/* Address of element i of a stack buffer. */
static LLVMValueRef buf_at(hc_kb* kb, LLVMTypeRef t, LLVMValueRef buf, LLVMValueRef i) {
  return LLVMBuildGEP2(kb->b, t, buf, &i, 1, "");
}

/* The op over n elements spaced `inner` apart; a task is one outer index
 * and a block of up to SM_BLOCK columns. */
static void emit_strided(hc_kb* kb, int kind, hx_dtype_t dt, LLVMValueRef px, LLVMValueRef py, int64_t n,
                         int64_t inner) {
  LLVMTypeRef t = hc_kb_compute_type(kb, dt);
  bool keep_exp = kind == SM_SOFTMAX && (dt == HX_DTYPE_FLOAT32 || dt == HX_DTYPE_FLOAT64);
  int64_t blocks = (inner + SM_BLOCK - 1) / SM_BLOCK;
  LLVMValueRef mx_buf = hc_kb_alloca(kb, LLVMArrayType2(t, SM_BLOCK), "max");
  LLVMValueRef sum_buf = hc_kb_alloca(kb, LLVMArrayType2(t, SM_BLOCK), "sum");
  LLVMValueRef idx_buf = hc_kb_alloca(kb, LLVMArrayType2(kb->t_i64, SM_BLOCK), "idx");
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
  LLVMBuildStore(kb->b, zero, buf_at(kb, kb->t_i64, idx_buf, i));
  hc_loop_end(kb, &il);

  LLVMValueRef j = hc_loop_begin(kb, &jl, zero, len, "j");
  LLVMValueRef row = hc_kb_iadd(kb, base, hc_kb_imul(kb, j, hc_kb_i64(kb, inner)));
  i = hc_loop_begin(kb, &il, zero, cnt, "i");
  LLVMValueRef p = buf_at(kb, t, mx_buf, i);
  LLVMValueRef xv = hc_kb_load(kb, dt, px, hc_kb_iadd(kb, row, i));
  LLVMValueRef best = LLVMBuildLoad2(kb->b, t, p, "");
  if (kind == SM_HARD) {
    LLVMValueRef better = hard_better(kb, dt, xv, best);
    LLVMValueRef ip = buf_at(kb, kb->t_i64, idx_buf, i);
    LLVMBuildStore(kb->b, hc_kb_select(kb, better, xv, best), p);
    LLVMBuildStore(kb->b, hc_kb_select(kb, better, j, LLVMBuildLoad2(kb->b, kb->t_i64, ip, "")), ip);
  } else {
    LLVMBuildStore(kb->b, hc_kb_max(kb, dt, best, xv), p);
  }
  hc_loop_end(kb, &il);
  hc_loop_end(kb, &jl);

  if (kind != SM_HARD) {
    j = hc_loop_begin(kb, &jl, zero, len, "j");
    row = hc_kb_iadd(kb, base, hc_kb_imul(kb, j, hc_kb_i64(kb, inner)));
    i = hc_loop_begin(kb, &il, zero, cnt, "i");
    LLVMValueRef idx = hc_kb_iadd(kb, row, i);
    LLVMValueRef e =
        exp_of(kb, dt, hc_kb_load(kb, dt, px, idx), LLVMBuildLoad2(kb->b, t, buf_at(kb, t, mx_buf, i), ""));
    if (keep_exp) hc_kb_store(kb, dt, py, idx, e);
    p = buf_at(kb, t, sum_buf, i);
    LLVMBuildStore(kb->b, hc_kb_add(kb, dt, LLVMBuildLoad2(kb->b, t, p, ""), e), p);
    hc_loop_end(kb, &il);
    hc_loop_end(kb, &jl);

    i = hc_loop_begin(kb, &il, zero, cnt, "i");
    p = buf_at(kb, t, sum_buf, i);
    LLVMValueRef s = LLVMBuildLoad2(kb->b, t, p, "");
    if (kind == SM_LOG)
      s = hc_kb_math(kb, dt, "log", &s, 1);
    else
      s = hc_kb_div(kb, dt, hc_kb_const(kb, dt, 1.0), s);
    LLVMBuildStore(kb->b, s, p);
    hc_loop_end(kb, &il);
  }

  j = hc_loop_begin(kb, &jl, zero, len, "j");
  row = hc_kb_iadd(kb, base, hc_kb_imul(kb, j, hc_kb_i64(kb, inner)));
  i = hc_loop_begin(kb, &il, zero, cnt, "i");
  LLVMValueRef idx = hc_kb_iadd(kb, row, i);
  LLVMValueRef mx = LLVMBuildLoad2(kb->b, t, buf_at(kb, t, mx_buf, i), "");
  LLVMValueRef sum = kind == SM_HARD ? NULL : LLVMBuildLoad2(kb->b, t, buf_at(kb, t, sum_buf, i), "");
  LLVMValueRef hidx = kind == SM_HARD ? LLVMBuildLoad2(kb->b, kb->t_i64, buf_at(kb, kb->t_i64, idx_buf, i), "") : NULL;
  xv = kind == SM_HARD || keep_exp ? NULL : hc_kb_load(kb, dt, px, idx);
  LLVMValueRef e = keep_exp ? hc_kb_load(kb, dt, py, idx) : NULL;
  hc_kb_store(kb, dt, py, idx, sm_result(kb, kind, dt, xv, e, mx, sum, j, hidx));
  hc_loop_end(kb, &il);
  hc_loop_end(kb, &jl);
  hc_loop_end(kb, &task);
}

static hx_status_t lower_softmax(hc_lower_ctx* lc, hc_node* n) {
  const hc_value *x = n->inputs[0], *y = n->outputs[0];
  int kind = sm_kind(n);
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
  /* 512-bit vectors where the target has them: the exp polynomial is
   * bound by instruction count (attention rows: half the time of ymm). */
  hc_ukr_prefer_full_width(&kb);
  if (inner == 1)
    emit_rows(&kb, kind, x->dtype, px, py, len);
  else
    emit_strided(&kb, kind, x->dtype, px, py, len, inner);
  /* max, subtract, exp (counted as ~10 flops), add, multiply per element;
   * Hardmax only compares and selects. */
  hc_kb_end(&kb, (kind == SM_HARD ? 2.0 : 14.0) * (double)total,
            (double)hc_value_nbytes(x) * (kind == SM_HARD ? 1.0 : 2.0) + (double)hc_value_nbytes(y));
  return HX_OK;
}

static const char* const k_softmax_attrs[] = {"axis", NULL};

const hc_op_desc hc_op_softmax = {"Softmax", "", 1, 22, k_softmax_attrs, 0, infer_softmax, lower_softmax, NULL};
const hc_op_desc hc_op_log_softmax = {"LogSoftmax", "", 1, 22, k_softmax_attrs, 0, infer_softmax, lower_softmax,
                                      NULL};
const hc_op_desc hc_op_hardmax = {"Hardmax", "", 1, 22, k_softmax_attrs, 0, infer_softmax, lower_softmax, NULL};
