/* Expand: broadcasts the input to a shape (bidirectionally, as numpy:
 * the output shape is broadcast(input.shape, shape)). The shape input must
 * be a compile-time constant; the copy is the shared element-wise generator
 * with an identity function, which handles broadcasting, dimension
 * collapsing and task splitting. */
#include "compiler/codegen/elementwise.h"
#include "compiler/ops/movement.h"

/* Output shape: numpy broadcast of the input shape and the shape input. */
static hx_status_t infer_expand(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 2, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  const hc_value* x = n->inputs[0];
  int64_t shape[HC_MAX_RANK];
  int count;
  HX_RETURN_IF_ERROR(hc_const_ints(n, 1, shape, HC_MAX_RANK, &count));
  int rank = count > x->rank ? count : x->rank;
  int64_t dims[HC_MAX_RANK];
  for (int d = 0; d < rank; ++d) {
    int xd = d - (rank - x->rank), sd = d - (rank - count);
    int64_t a = xd >= 0 ? x->dims[xd] : 1;
    int64_t b = sd >= 0 ? shape[sd] : 1;
    if (b < 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "shape[%d] = %lld is negative", sd, (long long)b);
    if (a == b || b == 1) {
      dims[d] = a;
    } else if (a == 1) {
      dims[d] = b;
    } else {
      char s[128];
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "input shape %s cannot be broadcast to shape[%d] = %lld (dimension %d has size %lld)",
                           hc_shape_str(x->rank, x->dims, s, sizeof s), sd, (long long)b, xd, (long long)a);
    }
  }
  hc_set_output(n, 0, x->dtype, rank, dims);
  return HX_OK;
}

/* The element-wise function of a copy. */
static LLVMValueRef copy_fn(hc_kb* kb, void* ctx, LLVMValueRef* operands) { return operands[0]; }

/* The broadcast copy through the shared element-wise generator. */
static hx_status_t lower_expand(hc_lower_ctx* lc, hc_node* n) { return hc_emit_map(lc, n, copy_fn, NULL, 0.0); }

const hc_op_desc hc_op_expand = {"Expand", "", 8, 22, NULL, 0, infer_expand, lower_expand, NULL};
