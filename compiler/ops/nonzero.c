/* NonZero (opsets 9 and 13): the coordinates of the non-zero elements of X,
 * int64 [rank, count] in row-major order of the elements (a scalar counts as
 * a 1-D tensor of one element, as ONNX Runtime does). NaN is non-zero.
 *
 * The count depends on the values, so the output is a value-dependent shape
 * (compiler/ops/dynamic.h) with upper bound [rank, numel(X)], unless X is a
 * compile-time constant: then the exact shape is known and the node folds.
 *
 * Two kernels over blocks of NZ_BLOCK elements, both parallel over blocks:
 * "count" stores each block's non-zero count in the workspace; "write" sums
 * the counts before its block (its first output column) and of all blocks
 * (the row length), then writes the coordinates of its block's non-zeros.
 * The task holding block 0 also writes the actual dims [rank, count]. */
#include "compiler/ops/dynamic.h"
#include "compiler/ops/movement.h"

#define NZ_BLOCK 16384

/* Whether a constant element is non-zero (NaN is). */
static bool const_nonzero(const hc_value* v, int64_t i) {
  double d = 0;
  hc_value_const_f64(v, i, &d);
  return !(d == 0);
}

static hx_status_t infer_nonzero(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  const hc_value* x = n->inputs[0];
  if (n->opset < 13 && x->dtype == HX_DTYPE_BFLOAT16)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "bfloat16 input needs opset 13");
  int64_t numel = hc_value_numel(x), count = numel;
  bool exact = x->kind == HC_VALUE_CONST;
  if (exact) {
    count = 0;
    for (int64_t i = 0; i < numel; ++i) count += const_nonzero(x, i);
  }
  int64_t dims[2] = {x->rank > 0 ? x->rank : 1, count};
  hc_set_output(n, 0, HX_DTYPE_INT64, 2, dims);
  hc_dyn_set(n->outputs[0], !exact);
  return HX_OK;
}

static uint64_t nonzero_workspace(const hc_node* n) {
  int64_t numel = hc_value_numel(n->inputs[0]);
  return (uint64_t)((numel + NZ_BLOCK - 1) / NZ_BLOCK) * sizeof(int64_t);
}

/* Is element i of x non-zero (i1)? */
static LLVMValueRef is_nonzero(hc_kb* kb, hx_dtype_t dt, LLVMValueRef px, LLVMValueRef i) {
  LLVMValueRef v = hc_kb_load(kb, dt, px, i);
  return hc_kb_cmp(kb, dt, "ne", v, hc_kb_const(kb, dt, 0));
}

/* Sum of counts[lo..hi) (i64 values). */
static LLVMValueRef sum_counts(hc_kb* kb, LLVMValueRef counts, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef acc) {
  LLVMBuildStore(kb->b, hc_kb_i64(kb, 0), acc);
  hc_loop l;
  LLVMValueRef b = hc_loop_begin(kb, &l, lo, hi, "b");
  LLVMValueRef s = LLVMBuildLoad2(kb->b, kb->t_i64, acc, "");
  LLVMBuildStore(kb->b, hc_kb_iadd(kb, s, hc_dyn_i64_load(kb, counts, b)), acc);
  hc_loop_end(kb, &l);
  return LLVMBuildLoad2(kb->b, kb->t_i64, acc, "");
}

static hx_status_t lower_nonzero(hc_lower_ctx* lc, hc_node* n) {
  const hc_value *x = n->inputs[0], *y = n->outputs[0];
  hx_dtype_t dt = x->dtype;
  int64_t numel = hc_value_numel(x), nb = (numel + NZ_BLOCK - 1) / NZ_BLOCK;
  int rank = x->rank > 0 ? x->rank : 1;
  int64_t xdims[HC_MAX_RANK];
  for (int d = 0; d < rank; ++d) xdims[d] = x->rank > 0 ? x->dims[d] : 1;
  LLVMValueRef B = NULL;

  hc_kb kb;
  hc_loop tl, il;
  if (nb > 0) {
    HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "count", nb, &kb));
    B = hc_kb_i64(&kb, NZ_BLOCK);
    LLVMValueRef px = hc_kb_ptr(&kb, x), counts = hc_kb_workspace(&kb);
    LLVMValueRef acc = hc_kb_alloca(&kb, kb.t_i64, "count");
    LLVMValueRef t = hc_kb_task_loop_begin(&kb, &tl);
    LLVMValueRef lo = hc_kb_imul(&kb, t, B);
    LLVMValueRef hi = hc_kb_imin(&kb, hc_kb_iadd(&kb, lo, B), hc_kb_i64(&kb, numel));
    LLVMBuildStore(kb.b, hc_kb_i64(&kb, 0), acc);
    LLVMValueRef i = hc_loop_begin(&kb, &il, lo, hi, "i");
    LLVMValueRef c = LLVMBuildLoad2(kb.b, kb.t_i64, acc, "");
    LLVMValueRef nz = LLVMBuildZExt(kb.b, is_nonzero(&kb, dt, px, i), kb.t_i64, "");
    LLVMBuildStore(kb.b, hc_kb_iadd(&kb, c, nz), acc);
    hc_loop_end(&kb, &il);
    hc_dyn_i64_store(&kb, counts, t, LLVMBuildLoad2(kb.b, kb.t_i64, acc, ""));
    hc_loop_end(&kb, &tl);
    hc_kb_end(&kb, (double)numel, (double)hc_value_nbytes(x));
  }

  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "write", nb, &kb));
  B = hc_kb_i64(&kb, NZ_BLOCK);
  LLVMValueRef px = hc_kb_ptr(&kb, x), py = hc_kb_ptr(&kb, y), counts = hc_kb_workspace(&kb);
  LLVMValueRef acc = hc_kb_alloca(&kb, kb.t_i64, "sum"), col = hc_kb_alloca(&kb, kb.t_i64, "col");
  LLVMValueRef total = sum_counts(&kb, counts, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, nb), acc);
  hc_if first;
  hc_dyn_first_begin(&kb, &first);
  hc_dyn_store_dims(&kb, y, (LLVMValueRef[]){hc_kb_i64(&kb, rank), total});
  hc_if_end(&kb, &first);
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &tl);
  LLVMBuildStore(kb.b, sum_counts(&kb, counts, hc_kb_i64(&kb, 0), t, acc), col);
  LLVMValueRef lo = hc_kb_imul(&kb, t, B);
  LLVMValueRef hi = hc_kb_imin(&kb, hc_kb_iadd(&kb, lo, B), hc_kb_i64(&kb, numel));
  LLVMValueRef i = hc_loop_begin(&kb, &il, lo, hi, "i");
  hc_if hit;
  hc_if_begin(&kb, &hit, is_nonzero(&kb, dt, px, i));
  LLVMValueRef j = LLVMBuildLoad2(kb.b, kb.t_i64, col, "");
  LLVMValueRef coords[HC_MAX_RANK];
  hc_mv_unflatten(&kb, i, rank, xdims, coords);
  for (int d = 0; d < rank; ++d)
    hc_dyn_i64_store(&kb, py, hc_kb_iadd(&kb, hc_kb_imul(&kb, hc_kb_i64(&kb, d), total), j), coords[d]);
  LLVMBuildStore(kb.b, hc_kb_iadd(&kb, j, hc_kb_i64(&kb, 1)), col);
  hc_if_end(&kb, &hit);
  hc_loop_end(&kb, &il);
  hc_loop_end(&kb, &tl);
  hc_kb_end(&kb, (double)numel * 2, (double)hc_value_nbytes(x) + (double)hc_value_nbytes(y));
  return HX_OK;
}

const hc_op_desc hc_op_nonzero = {"NonZero", "", 9, 22, NULL, 0, infer_nonzero, lower_nonzero, NULL, nonzero_workspace};
