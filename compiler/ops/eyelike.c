/* EyeLike (opset 9 on): a matrix of the input's 2-D shape with ones on
 * diagonal k (out[i, i + k] = 1) and zeros elsewhere, of type `dtype`
 * (default: the input's type).
 *
 * Only the input's shape matters, so its values are never read. The kernel
 * clears blocks of rows with memset and stores the one of each row that
 * has one; every row of a task is independent. */
#include "compiler/ops/movement.h"

static const char* const k_eyelike_attrs[] = {"dtype", "k", NULL};

/* The output dtype: attribute `dtype` or the input's. */
static hx_status_t out_dtype(const hc_node* n, hx_dtype_t* dt) {
  const hc_attr* a = hc_node_attr(n, "dtype");
  *dt = n->inputs[0]->dtype;
  if (!a) return HX_OK;
  *dt = (hx_dtype_t)a->i;
  if (a->type != HC_ATTR_INT || !(HC_DT_ALL & HC_DT(*dt)))
    return hc_node_error(n, HX_STATUS_UNSUPPORTED, "dtype %lld is not a supported numeric or bool type",
                         (long long)a->i);
  return HX_OK;
}

/* Requires a 2-D input; the output has its shape and the chosen dtype. */
static hx_status_t infer_eyelike(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  const hc_value* x = n->inputs[0];
  if (x->rank != 2) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input must be 2-D, got rank %d", x->rank);
  hx_dtype_t dt;
  HX_RETURN_IF_ERROR(out_dtype(n, &dt));
  hc_set_output(n, 0, dt, 2, x->dims);
  return HX_OK;
}

/* Rows in blocks: memset, then the row's one when i + k is a column. */
static hx_status_t lower_eyelike(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* y = n->outputs[0];
  int64_t rows = y->dims[0], cols = y->dims[1], k = hc_attr_int(n, "k", 0);
  if (rows * cols == 0) return HX_OK;
  k = k < -rows ? -rows : k > cols ? cols : k; /* same (possibly empty) diagonal, no overflow */
  size_t esize = hx_dtype_size(y->dtype);
  int64_t upt = hc_mv_units_per_task(cols * (int64_t)esize);
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, hc_mv_tasks(rows, upt), &kb));
  LLVMValueRef dst = hc_kb_ptr(&kb, y);
  LLVMValueRef lo = hc_kb_imul(&kb, kb.begin, hc_kb_i64(&kb, upt));
  LLVMValueRef hi = hc_kb_imin(&kb, hc_kb_imul(&kb, kb.end, hc_kb_i64(&kb, upt)), hc_kb_i64(&kb, rows));
  LLVMValueRef nbytes = hc_kb_imul(&kb, LLVMBuildSub(kb.b, hi, lo, ""), hc_kb_i64(&kb, cols * (int64_t)esize));
  hc_kb_memset(&kb, hc_kb_gep(&kb, y->dtype, dst, hc_kb_imul(&kb, lo, hc_kb_i64(&kb, cols))), 0, nbytes);
  /* Rows whose diagonal column i + k lies in [0, cols). */
  int64_t first = k < 0 ? -k : 0, last = cols - k; /* [first, last) */
  if (first < rows && last > 0 && first < last) {
    LLVMValueRef rlo = hc_kb_imax(&kb, lo, hc_kb_i64(&kb, first));
    LLVMValueRef rhi = hc_kb_imin(&kb, hi, hc_kb_i64(&kb, last));
    hc_loop l;
    LLVMValueRef i = hc_loop_begin(&kb, &l, rlo, rhi, "i");
    LLVMValueRef at = hc_kb_iadd(&kb, hc_kb_imul(&kb, i, hc_kb_i64(&kb, cols)), hc_kb_iadd(&kb, i, hc_kb_i64(&kb, k)));
    hc_kb_store(&kb, y->dtype, dst, at, hc_kb_const(&kb, y->dtype, 1.0));
    hc_loop_end(&kb, &l);
  }
  hc_kb_end(&kb, 0, (double)hc_value_nbytes(y));
  return HX_OK;
}

const hc_op_desc hc_op_eyelike = {"EyeLike", "", 9, 22, k_eyelike_attrs, 0, infer_eyelike, lower_eyelike, NULL};
