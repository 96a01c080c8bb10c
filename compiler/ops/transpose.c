/* Transpose: out[i_0, ..., i_{r-1}] = in[j] with j[perm[d]] = i_d.
 *
 * Lowered as one strided copy (compiler/ops/movement.c): the output is
 * written contiguously, dimensions that stay adjacent are merged, and when
 * the innermost dimension moves the copy is tiled so reads are not fully
 * strided. */
#include "compiler/ops/movement.h"


/* Reads perm (default: reversed axes) and checks it is a permutation. */
static hx_status_t read_perm(const hc_node* n, int rank, int64_t* perm) {
  int count = hc_attr_ints(n, "perm", perm, HC_MAX_RANK);
  if (count == -2)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "perm has more entries than the input rank %d", rank);
  if (count < 0) {
    for (int d = 0; d < rank; ++d) perm[d] = rank - 1 - d;
    return HX_OK;
  }
  if (count != rank)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "perm has %d entries but the input has rank %d", count, rank);
  bool seen[HC_MAX_RANK] = {0};
  for (int d = 0; d < rank; ++d) {
    if (perm[d] < 0 || perm[d] >= rank || seen[perm[d]])
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "perm must be a permutation of 0..%d; entry %d is %lld", rank - 1, d, (long long)perm[d]);
    seen[perm[d]] = true;
  }
  return HX_OK;
}

/* Output dims are the input dims permuted. */
static hx_status_t infer_transpose(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  const hc_value* x = n->inputs[0];
  int64_t perm[HC_MAX_RANK], dims[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(read_perm(n, x->rank, perm));
  for (int d = 0; d < x->rank; ++d) dims[d] = x->dims[perm[d]];
  hc_set_output(n, 0, x->dtype, x->rank, dims);
  return HX_OK;
}

/* Output dimension d reads input dimension perm[d]: source strides permuted. */
static hx_status_t lower_transpose(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* x = n->inputs[0];
  const hc_value* y = n->outputs[0];
  int64_t perm[HC_MAX_RANK], in_strides[HC_MAX_RANK], ss[HC_MAX_RANK], ds[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(read_perm(n, x->rank, perm));
  hc_strides(x->rank, x->dims, in_strides);
  hc_strides(y->rank, y->dims, ds);
  for (int d = 0; d < y->rank; ++d) ss[d] = in_strides[perm[d]];
  return hc_mv_strided_copy(lc, n, NULL, x, 0, ss, y, 0, ds, y->rank, y->dims, true);
}

static const char* const k_transpose_attrs[] = {"perm", NULL};

const hc_op_desc hc_op_transpose = {"Transpose", "", 1, 22, k_transpose_attrs, 0, infer_transpose,
                                     lower_transpose, NULL};
