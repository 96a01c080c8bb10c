/* Split: cuts the input along one axis into consecutive parts.
 *
 * Part sizes come from the 'split' attribute (before opset 13), the 'split'
 * input (13+, a compile-time constant), the 'num_outputs' attribute (18+,
 * ceil-sized chunks, the last one smaller) or, by default, an equal split
 * over the outputs. Each non-empty output is one strided-copy kernel
 * reading a column range of the input seen as [outer, axis*inner]. */
#include <stdio.h>
#include <stdlib.h>

#include "compiler/ops/movement.h"


/* Normalised axis and the size of every part (sizes has num_outputs + 1
 * entries of room). Checks that the parts cover the axis exactly. */
static hx_status_t split_sizes(const hc_node* n, int64_t* axis_out, int64_t* sizes) {
  const hc_value* x = n->inputs[0];
  int parts = n->num_outputs;
  if (x->rank < 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "cannot split a scalar");
  int64_t axis;
  HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", 0), x->rank, &axis));
  int64_t dim = x->dims[axis];
  *axis_out = axis;

  if (n->opset >= 13 && hc_node_attr(n, "split"))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'split' is an input from opset 13 on, not an attribute");
  if (n->opset < 18 && hc_node_attr(n, "num_outputs"))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "the 'num_outputs' attribute exists from opset 18 on");
  int count = -1;
  if (n->opset < 13) {
    count = hc_attr_ints(n, "split", sizes, parts + 1);
    if (count == -2)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'split' has more entries than the %d outputs", parts);
  } else if (hc_input(n, 1)) {
    HX_RETURN_IF_ERROR(hc_const_ints(n, 1, sizes, parts + 1, &count));
    if (count == 0) count = -1; /* an empty list means "not given" */
  }
  const hc_attr* num_outputs = n->opset >= 18 ? hc_node_attr(n, "num_outputs") : NULL;
  if (num_outputs && count >= 0)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "give either the 'split' input or 'num_outputs', not both");

  if (count >= 0) {
    if (count != parts)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'split' has %d entries but the node has %d outputs", count,
                           parts);
    int64_t sum = 0;
    for (int i = 0; i < parts; ++i) {
      if (sizes[i] < 0)
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "split[%d] = %lld is negative", i, (long long)sizes[i]);
      sum += sizes[i];
    }
    if (sum != dim)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "split sizes sum to %lld but axis %lld has size %lld",
                           (long long)sum, (long long)axis, (long long)dim);
  } else if (num_outputs) {
    if (num_outputs->type != HC_ATTR_INT || num_outputs->i < 1 || num_outputs->i != parts)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "num_outputs = %lld but the node has %d outputs",
                           (long long)num_outputs->i, parts);
    /* Chunks of ceil(dim / parts); the last one takes what is left. */
    int64_t chunk = (dim + parts - 1) / parts;
    int64_t last = dim - chunk * (parts - 1);
    if (last < 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "axis %lld of size %lld cannot be split into %d chunks of %lld "
                           "(the last would have negative size)",
                           (long long)axis, (long long)dim, parts, (long long)chunk);
    for (int i = 0; i < parts; ++i) sizes[i] = i + 1 < parts ? chunk : last;
  } else {
    if (dim % parts != 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "axis %lld of size %lld does not split evenly into %d outputs (give 'split' sizes)",
                           (long long)axis, (long long)dim, parts);
    for (int i = 0; i < parts; ++i) sizes[i] = dim / parts;
  }
  return HX_OK;
}

/* Each output is the input with the axis cut to its part size. */
static hx_status_t infer_split(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, n->opset >= 13 ? 2 : 1, 1, 1 << 20));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  const hc_value* x = n->inputs[0];
  int64_t* sizes = malloc(sizeof(int64_t) * (size_t)(n->num_outputs + 1));
  if (!sizes) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  int64_t axis;
  hx_status_t st = split_sizes(n, &axis, sizes);
  if (st == HX_OK) {
    int64_t dims[HC_MAX_RANK];
    for (int d = 0; d < x->rank; ++d) dims[d] = x->dims[d];
    for (int i = 0; i < n->num_outputs; ++i) {
      dims[axis] = sizes[i];
      hc_set_output(n, i, x->dtype, x->rank, dims);
    }
  }
  free(sizes);
  return st;
}

/* One strided copy per output from its column range of the input. */
static hx_status_t lower_split(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* x = n->inputs[0];
  int64_t* sizes = malloc(sizeof(int64_t) * (size_t)(n->num_outputs + 1));
  if (!sizes) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  int64_t axis;
  hx_status_t st = split_sizes(n, &axis, sizes);
  int64_t outer = hc_shape_numel((int)axis, x->dims);
  int64_t inner = hc_shape_numel(x->rank - (int)axis - 1, x->dims + axis + 1);
  int64_t in_row = x->dims[axis] * inner, col = 0;
  for (int i = 0; st == HX_OK && i < n->num_outputs; ++i) {
    int64_t row = sizes[i] * inner;
    const hc_value* y = n->outputs[i];
    if (y) {
      int64_t dims[2] = {outer, row}, ss[2] = {in_row, 1}, ds[2] = {row, 1};
      char suffix[24];
      snprintf(suffix, sizeof suffix, "out%d", i);
      st = hc_mv_strided_copy(lc, n, suffix, x, col, ss, y, 0, ds, 2, dims, false);
    }
    col += row;
  }
  free(sizes);
  return st;
}

static const char* const k_split_attrs[] = {"axis", "split", "num_outputs", NULL};

const hc_op_desc hc_op_split = {"Split", "", 2, 22, k_split_attrs, 0, infer_split, lower_split, NULL};
