/* CenterCropPad (opset 18 on): crops or zero-pads each listed axis to a
 * target size, centred.
 *
 * shape (constant, one entry per axis in `axes`, default all axes) gives
 * the target sizes. An axis of size dim growing to s is padded with
 * (s - dim) / 2 zeros before (rounded down, the rest after); one shrinking
 * to s keeps the window starting at (dim - s) / 2 (rounded down), as the
 * ONNX reference.
 *
 * Lowering: when some axis is padded, a kernel first clears the output;
 * then one strided copy (movement.c) moves the cropped window of the
 * input into its place in the output. */
#include <string.h>

#include "compiler/ops/movement.h"

/* Output bytes cleared per task. */
#define CCP_CLEAR_BLOCK (256 * 1024)

static const char* const k_center_crop_pad_attrs[] = {"axes", NULL};

/* Per axis: output size, input window start and output placement start. */
typedef struct ccp_plan {
  int64_t out[HC_MAX_RANK], in_start[HC_MAX_RANK], out_start[HC_MAX_RANK], count[HC_MAX_RANK];
  bool padded;
} ccp_plan;

/* Reads shape and axes and fills the plan. */
static hx_status_t make_plan(const hc_node* n, ccp_plan* p) {
  const hc_value* x = n->inputs[0];
  int rank = x->rank;
  int64_t shape[HC_MAX_RANK], axes[HC_MAX_RANK];
  int ns = 0;
  HX_RETURN_IF_ERROR(hc_const_ints(n, 1, shape, HC_MAX_RANK, &ns));
  int na = hc_attr_ints(n, "axes", axes, HC_MAX_RANK);
  if (na == -2) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axes has more entries than the rank %d", rank);
  if (na < 0) {
    na = rank;
    for (int d = 0; d < rank; ++d) axes[d] = d;
  }
  if (ns != na)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "shape has %d entries, expected %d (%s)", ns, na,
                         hc_node_attr(n, "axes") ? "one per axis in axes" : "the input rank");
  memset(p, 0, sizeof *p);
  for (int d = 0; d < rank; ++d) p->out[d] = p->count[d] = x->dims[d];
  bool seen[HC_MAX_RANK] = {0};
  for (int i = 0; i < na; ++i) {
    int64_t a;
    HX_RETURN_IF_ERROR(hc_norm_axis(n, axes[i], rank, &a));
    if (seen[a]) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axis %lld appears twice in axes", (long long)a);
    seen[a] = true;
    int64_t dim = x->dims[a], s = shape[i];
    if (s < 0) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "shape[%d] = %lld is negative", i, (long long)s);
    p->out[a] = s;
    if (s < dim) {
      p->in_start[a] = (dim - s) / 2;
      p->count[a] = s;
    } else if (s > dim) {
      p->out_start[a] = (s - dim) / 2;
      p->padded = true;
    }
  }
  return HX_OK;
}

/* Checks shape/axes; the output has the target sizes on the listed axes. */
static hx_status_t infer_center_crop_pad(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 2, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, HC_DT(HX_DTYPE_INT32) | HC_DT(HX_DTYPE_INT64)));
  ccp_plan p;
  HX_RETURN_IF_ERROR(make_plan(n, &p));
  hc_set_output(n, 0, n->inputs[0]->dtype, n->inputs[0]->rank, p.out);
  return HX_OK;
}

/* Clears the output in blocks (one memset per task). */
static hx_status_t emit_clear(hc_lower_ctx* lc, const hc_node* n, const hc_value* y) {
  int64_t bytes = (int64_t)hc_value_nbytes(y);
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "clear", (bytes + CCP_CLEAR_BLOCK - 1) / CCP_CLEAR_BLOCK, &kb));
  LLVMValueRef dst = hc_kb_ptr(&kb, y);
  LLVMValueRef lo = hc_kb_imul(&kb, kb.begin, hc_kb_i64(&kb, CCP_CLEAR_BLOCK));
  LLVMValueRef hi = hc_kb_imin(&kb, hc_kb_imul(&kb, kb.end, hc_kb_i64(&kb, CCP_CLEAR_BLOCK)), hc_kb_i64(&kb, bytes));
  hc_kb_memset(&kb, LLVMBuildGEP2(kb.b, kb.t_i8, dst, &lo, 1, ""), 0, LLVMBuildSub(kb.b, hi, lo, ""));
  hc_kb_end(&kb, 0, (double)bytes);
  return HX_OK;
}

/* Clear (when padding), then copy the window. */
static hx_status_t lower_center_crop_pad(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* x = n->inputs[0];
  const hc_value* y = n->outputs[0];
  ccp_plan p;
  HX_RETURN_IF_ERROR(make_plan(n, &p));
  if (hc_value_numel(y) == 0) return HX_OK;
  if (p.padded) HX_RETURN_IF_ERROR(emit_clear(lc, n, y));
  int rank = x->rank;
  int64_t xs[HC_MAX_RANK], ys[HC_MAX_RANK], soff = 0, doff = 0;
  hc_strides(rank, x->dims, xs);
  hc_strides(rank, y->dims, ys);
  for (int d = 0; d < rank; ++d) {
    soff += p.in_start[d] * xs[d];
    doff += p.out_start[d] * ys[d];
  }
  if (rank == 0) {
    int64_t one = 1;
    return hc_mv_strided_copy(lc, n, NULL, x, 0, &one, y, 0, &one, 1, &one, false);
  }
  return hc_mv_strided_copy(lc, n, NULL, x, soff, xs, y, doff, ys, rank, p.count, false);
}

const hc_op_desc hc_op_center_crop_pad = {
    "CenterCropPad", "", 18, 22, k_center_crop_pad_attrs, 0, infer_center_crop_pad, lower_center_crop_pad, NULL};
