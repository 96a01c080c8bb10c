/* Det (opsets 11-22): determinants of the square matrices in the last two
 * dims of X (*, M, M), giving Y (*).
 *
 * Each matrix is copied into a float64 buffer and factored by Gaussian
 * elimination with partial pivoting (the row of largest magnitude, the
 * first on ties, as LAPACK's getrf that numpy uses); the determinant is the
 * product of the pivots, negated for every row swap, rounded once to the
 * output type. A zero pivot column means the matrix is singular: the
 * determinant is 0 and elimination of that column is skipped. M = 0 gives 1.
 *
 * A task is one matrix. The buffer is on the stack for matrices up to
 * DET_STACK_ELEMS elements, in the node's workspace (one slice per matrix)
 * above that. The elimination's inner loop runs along a contiguous row.
 */
#include <math.h>
#include <string.h>

#include "compiler/ops/op.h"

/* Largest matrix (elements) factored in a stack buffer. */
#define DET_STACK_ELEMS 4096

static hx_status_t infer_det(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  uint64_t m = HC_DT(HX_DTYPE_FLOAT16) | HC_DT(HX_DTYPE_FLOAT32) | HC_DT(HX_DTYPE_FLOAT64);
  if (n->opset >= 22) m |= HC_DT(HX_DTYPE_BFLOAT16);
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, m));
  const hc_value* x = n->inputs[0];
  char s1[128];
  if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "X ('%s') has shape %s; expected (*, M, M)", x->name,
                         hc_shape_str(x->rank, x->dims, s1, sizeof s1));
  hc_set_output(n, 0, x->dtype, x->rank - 2, x->dims);
  return HX_OK;
}

/* Matrices too large for the stack get a float64 slice each. */
static uint64_t det_workspace(const hc_node* n) {
  const hc_value* x = n->inputs[0];
  if (x->rank < 2) return 0;
  int64_t M = x->dims[x->rank - 1];
  if (M * M <= DET_STACK_ELEMS) return 0;
  return (uint64_t)hc_shape_numel(x->rank - 2, x->dims) * (uint64_t)(M * M) * sizeof(double);
}

static hx_status_t lower_det(hc_lower_ctx* lc, hc_node* n) {
  const hc_value *x = n->inputs[0], *y = n->outputs[0];
  hx_dtype_t dt = x->dtype;
  int64_t batch = hc_shape_numel(x->rank - 2, x->dims), M = x->dims[x->rank - 1], MM = M * M;
  if (batch == 0) return HX_OK;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, batch, &kb));
  LLVMBuilderRef b = kb.b;
  LLVMTypeRef f64 = kb.t_f64;
  LLVMValueRef X = hc_kb_ptr(&kb, x), Y = hc_kb_ptr(&kb, y);
  bool on_stack = MM <= DET_STACK_ELEMS;
  LLVMValueRef stack = on_stack ? hc_kb_alloca(&kb, LLVMArrayType2(f64, (uint64_t)(MM ? MM : 1)), "lu") : NULL;
  LLVMValueRef ws = on_stack ? NULL : hc_kb_workspace(&kb);
  LLVMValueRef det = hc_kb_alloca(&kb, f64, "det"), best = hc_kb_alloca(&kb, f64, "best");
  LLVMValueRef piv_row = hc_kb_alloca(&kb, kb.t_i64, "pivrow");
  LLVMValueRef zero = hc_kb_i64(&kb, 0), one = hc_kb_i64(&kb, 1), m = hc_kb_i64(&kb, M);
#define AT(i) LLVMBuildGEP2(b, f64, A, (LLVMValueRef[]){(i)}, 1, "")
#define IDX(r, c) hc_kb_iadd(&kb, hc_kb_imul(&kb, (r), m), (c))

  hc_loop task, il, jl, kl;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef A =
      on_stack ? stack : LLVMBuildGEP2(b, f64, ws, (LLVMValueRef[]){hc_kb_imul(&kb, t, hc_kb_i64(&kb, MM))}, 1, "");
  LLVMValueRef xb = hc_kb_imul(&kb, t, hc_kb_i64(&kb, MM));
  LLVMValueRef i = hc_loop_begin(&kb, &il, zero, hc_kb_i64(&kb, MM), "i");
  LLVMBuildStore(b, hc_kb_convert(&kb, hc_kb_load(&kb, dt, X, hc_kb_iadd(&kb, xb, i)), dt, HX_DTYPE_FLOAT64), AT(i));
  hc_loop_end(&kb, &il);
  LLVMBuildStore(b, LLVMConstReal(f64, 1.0), det);

  LLVMValueRef k = hc_loop_begin(&kb, &kl, zero, m, "k");
  LLVMValueRef kp1 = hc_kb_iadd(&kb, k, one);
  /* Pivot: the first row of largest magnitude in column k. */
  LLVMValueRef dkk = LLVMBuildLoad2(b, f64, AT(IDX(k, k)), "");
  LLVMBuildStore(b, hc_kb_math(&kb, HX_DTYPE_FLOAT64, "fabs", &dkk, 1), best);
  LLVMBuildStore(b, k, piv_row);
  i = hc_loop_begin(&kb, &il, kp1, m, "i");
  LLVMValueRef e = LLVMBuildLoad2(b, f64, AT(IDX(i, k)), "");
  LLVMValueRef av = hc_kb_math(&kb, HX_DTYPE_FLOAT64, "fabs", &e, 1);
  LLVMValueRef bv = LLVMBuildLoad2(b, f64, best, "");
  LLVMValueRef gt = LLVMBuildFCmp(b, LLVMRealOGT, av, bv, "");
  LLVMBuildStore(b, LLVMBuildSelect(b, gt, av, bv, ""), best);
  LLVMBuildStore(b, LLVMBuildSelect(b, gt, i, LLVMBuildLoad2(b, kb.t_i64, piv_row, ""), ""), piv_row);
  hc_loop_end(&kb, &il);
  LLVMValueRef pr = LLVMBuildLoad2(b, kb.t_i64, piv_row, "");
  hc_if swap;
  hc_if_begin(&kb, &swap, LLVMBuildICmp(b, LLVMIntNE, pr, k, ""));
  LLVMValueRef j = hc_loop_begin(&kb, &jl, k, m, "j");
  LLVMValueRef pa = AT(IDX(k, j)), pb = AT(IDX(pr, j));
  LLVMValueRef va = LLVMBuildLoad2(b, f64, pa, ""), vb = LLVMBuildLoad2(b, f64, pb, "");
  LLVMBuildStore(b, vb, pa);
  LLVMBuildStore(b, va, pb);
  hc_loop_end(&kb, &jl);
  LLVMBuildStore(b, LLVMBuildFNeg(b, LLVMBuildLoad2(b, f64, det, ""), ""), det);
  hc_if_end(&kb, &swap);
  LLVMValueRef piv = LLVMBuildLoad2(b, f64, AT(IDX(k, k)), "");
  LLVMBuildStore(b, LLVMBuildFMul(b, LLVMBuildLoad2(b, f64, det, ""), piv, ""), det);
  /* Eliminate column k below the pivot (nothing to do for a zero column). */
  hc_if elim;
  hc_if_begin(&kb, &elim, LLVMBuildFCmp(b, LLVMRealUNE, piv, LLVMConstReal(f64, 0.0), ""));
  i = hc_loop_begin(&kb, &il, kp1, m, "i");
  LLVMValueRef f = LLVMBuildFDiv(b, LLVMBuildLoad2(b, f64, AT(IDX(i, k)), ""), piv, "");
  LLVMValueRef rowi = hc_kb_imul(&kb, i, m), rowk = hc_kb_imul(&kb, k, m);
  j = hc_loop_begin(&kb, &jl, kp1, m, "j");
  LLVMValueRef dst = AT(hc_kb_iadd(&kb, rowi, j));
  LLVMValueRef src = LLVMBuildLoad2(b, f64, AT(hc_kb_iadd(&kb, rowk, j)), "");
  LLVMBuildStore(b, LLVMBuildFSub(b, LLVMBuildLoad2(b, f64, dst, ""), LLVMBuildFMul(b, f, src, ""), ""), dst);
  hc_loop_end(&kb, &jl);
  hc_loop_end(&kb, &il);
  hc_if_end(&kb, &elim);
  hc_loop_end(&kb, &kl);
#undef AT
#undef IDX
  hc_kb_store(&kb, dt, Y, t, hc_kb_convert(&kb, LLVMBuildLoad2(b, f64, det, ""), HX_DTYPE_FLOAT64, dt));
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, (double)batch * (2.0 / 3.0) * (double)M * (double)MM * 2.0,
            (double)hc_value_nbytes(x) + (double)hc_value_nbytes(y));
  return HX_OK;
}

const hc_op_desc hc_op_det = {"Det", "", 11, 22, NULL, 0, infer_det, lower_det, NULL, det_workspace};
