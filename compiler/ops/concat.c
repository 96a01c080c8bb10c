/* Concat: joins inputs along one axis.
 *
 * Seen as 2-D [outer, axis*inner] tensors, each input is a block of
 * contiguous rows written at a column offset of the output; every non-empty
 * input gets one strided-copy kernel (rows spread over tasks, each row one
 * memcpy), unless memory planning had its producer write it in place. */
#include <stdio.h>

#include "compiler/ops/movement.h"


/* Checks that all inputs agree except along axis; the output sums that axis. */
static hx_status_t infer_concat(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1 << 20, 1, 1));
  const hc_attr* ax = hc_node_attr(n, "axis");
  if (!ax || ax->type != HC_ATTR_INT)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "the integer attribute 'axis' is required");
  const hc_value* x0 = NULL;
  for (int i = 0; i < n->num_inputs; ++i) {
    if (!n->inputs[i])
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d is missing (Concat inputs are not optional)", i);
    HX_RETURN_IF_ERROR(hc_check_dtype(n, i, HC_DT_ALL));
    HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, i));
    if (!x0) x0 = n->inputs[i];
  }
  int rank = x0->rank;
  if (rank < 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "inputs must have rank >= 1, got a scalar");
  int64_t axis;
  HX_RETURN_IF_ERROR(hc_norm_axis(n, ax->i, rank, &axis));
  int64_t dims[HC_MAX_RANK];
  for (int d = 0; d < rank; ++d) dims[d] = x0->dims[d];
  dims[axis] = 0;
  for (int i = 0; i < n->num_inputs; ++i) {
    const hc_value* x = n->inputs[i];
    if (x->rank != rank)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d ('%s') has rank %d, input 0 has rank %d", i,
                           x->name, x->rank, rank);
    for (int d = 0; d < rank; ++d) {
      if (d != axis && x->dims[d] != x0->dims[d])
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                             "input %d ('%s') has size %lld in dimension %d, input 0 has %lld "
                             "(only axis %lld may differ)",
                             i, x->name, (long long)x->dims[d], d, (long long)x0->dims[d], (long long)axis);
    }
    dims[axis] += x->dims[axis];
  }
  hc_set_output(n, 0, x0->dtype, rank, dims);
  return HX_OK;
}

/* Whether memory planning had x's producer write it in place, `at` bytes
 * into y (passes/memory_plan.c, concat_in_place): nothing to copy. */
static bool written_in_place(const hc_value* x, const hc_value* y, uint64_t at) {
  return x->alias_part && x->alias_of == y && x->alias_offset == at;
}

/* One strided copy per input into its column range of the output, except
 * for inputs already written there. */
static hx_status_t lower_concat(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* y = n->outputs[0];
  int64_t axis;
  HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", 0), y->rank, &axis));
  int64_t outer = hc_shape_numel((int)axis, y->dims);
  int64_t inner = hc_shape_numel(y->rank - (int)axis - 1, y->dims + axis + 1);
  int64_t out_row = y->dims[axis] * inner, col = 0;
  for (int i = 0; i < n->num_inputs; ++i) {
    const hc_value* x = n->inputs[i];
    int64_t row = x->dims[axis] * inner;
    if (outer == 1 && written_in_place(x, y, (uint64_t)col * hx_dtype_size(y->dtype))) {
      col += row;
      continue;
    }
    int64_t dims[2] = {outer, row}, ss[2] = {row, 1}, ds[2] = {out_row, 1};
    char suffix[24];
    snprintf(suffix, sizeof suffix, "in%d", i);
    const char* name = n->num_inputs > 1 ? suffix : NULL;
    HX_RETURN_IF_ERROR(hc_mv_strided_copy(lc, n, name, x, 0, ss, y, col, ds, 2, dims, false));
    col += row;
  }
  return HX_OK;
}

static const char* const k_concat_attrs[] = {"axis", NULL};

const hc_op_desc hc_op_concat = {"Concat", "", 4, 22, k_concat_attrs, 0, infer_concat, lower_concat, NULL};
