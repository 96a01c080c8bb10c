/* Trilu (opset 14): the upper (upper = 1, default) or lower triangle of
 * every matrix of a [..., N, M] tensor, the rest set to zero.
 *
 * Row i of a matrix keeps columns j with j - i >= k (upper) or j - i <= k
 * (lower), so each row is one contiguous kept run and one zero run whose
 * boundary is min(max(i + k (+ 1 for lower), 0), M). The kernel walks rows:
 * a memcpy and a memset each, for every dtype (zero is all-zero bytes in
 * every type Harness supports). The diagonal offset k (optional input,
 * default 0) does not change the output shape, so it may be computed at
 * run time; a constant k is baked into the kernel. */
#include "compiler/ops/movement.h"

static const char* const k_trilu_attrs[] = {"upper", NULL};

/* Checks rank >= 2 and a scalar int64 k; the output has the input's shape. */
static hx_status_t infer_trilu(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 2, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, HC_DT(HX_DTYPE_INT64)));
  const hc_value* x = n->inputs[0];
  const hc_value* k = hc_input(n, 1);
  if (x->rank < 2) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input must have rank >= 2, got %d", x->rank);
  if (k && hc_value_numel(k) != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "k ('%s') must be a scalar", k->name);
  int64_t upper = hc_attr_int(n, "upper", 1);
  if (upper != 0 && upper != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "upper must be 0 or 1, got %lld", (long long)upper);
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  return HX_OK;
}

/* Row kernel of the file comment. */
static hx_status_t lower_trilu(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* x = n->inputs[0];
  const hc_value* kv = hc_input(n, 1);
  const hc_value* y = n->outputs[0];
  bool upper = hc_attr_int(n, "upper", 1) != 0;
  int64_t N = x->dims[x->rank - 2], M = x->dims[x->rank - 1];
  int64_t rows = hc_value_numel(x) / (M > 0 ? M : 1);
  if (hc_value_numel(x) == 0) return HX_OK;
  size_t esize = hx_dtype_size(x->dtype);
  int64_t upt = hc_mv_units_per_task(M * (int64_t)esize);

  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, hc_mv_tasks(rows, upt), &kb));
  LLVMTypeRef et = hc_mv_elem_type(&kb, esize);
  LLVMValueRef src = hc_kb_ptr(&kb, x), dst = hc_kb_ptr(&kb, y);
  /* k clamped to [-N-1, M+1] (same triangle, no overflow in i + k + 1). */
  LLVMValueRef k;
  int64_t kc = 0;
  if (!kv || hc_value_const_i64(kv, 0, &kc)) {
    kc = kc < -N - 1 ? -N - 1 : kc > M + 1 ? M + 1 : kc;
    k = hc_kb_i64(&kb, kc);
  } else {
    k = hc_mv_load_in(&kb, kb.t_i64, hc_kb_ptr(&kb, kv), hc_kb_i64(&kb, 0));
    k = hc_kb_imax(&kb, hc_kb_imin(&kb, k, hc_kb_i64(&kb, M + 1)), hc_kb_i64(&kb, -N - 1));
  }
  hc_loop ul;
  LLVMValueRef r = hc_mv_units_begin(&kb, &ul, rows, upt);
  LLVMValueRef i = LLVMBuildURem(kb.b, r, hc_kb_i64(&kb, N), "");
  LLVMValueRef c = hc_kb_iadd(&kb, i, upper ? k : hc_kb_iadd(&kb, k, hc_kb_i64(&kb, 1)));
  c = hc_kb_imin(&kb, hc_kb_imax(&kb, c, hc_kb_i64(&kb, 0)), hc_kb_i64(&kb, M));
  LLVMValueRef base = hc_kb_imul(&kb, r, hc_kb_i64(&kb, M));
  LLVMValueRef rest = LLVMBuildSub(kb.b, hc_kb_i64(&kb, M), c, "");
  LLVMValueRef esz = hc_kb_i64(&kb, (int64_t)esize);
  if (upper) {
    hc_kb_memset(&kb, hc_mv_gep(&kb, et, dst, base), 0, hc_kb_imul(&kb, c, esz));
    LLVMValueRef off = hc_kb_iadd(&kb, base, c);
    hc_mv_copy_run(&kb, esize, dst, off, src, off, rest);
  } else {
    hc_mv_copy_run(&kb, esize, dst, base, src, base, c);
    hc_kb_memset(&kb, hc_mv_gep(&kb, et, dst, hc_kb_iadd(&kb, base, c)), 0, hc_kb_imul(&kb, rest, esz));
  }
  hc_loop_end(&kb, &ul);
  hc_kb_end(&kb, 0, 2.0 * (double)hc_value_nbytes(x));
  return HX_OK;
}

const hc_op_desc hc_op_trilu = {"Trilu", "", 14, 22, k_trilu_attrs, 0, infer_trilu, lower_trilu, NULL};
