/* Slice: a strided sub-box of the input.
 *
 * starts/ends/axes are attributes before opset 10 and inputs (with optional
 * steps) from 10 on; they determine the output shape, so they must be
 * compile-time constants. Per axis the spec's clamping gives a first index
 * and a count; the copy is then one strided copy whose source strides are
 * step * stride (negative for reversed axes). */
#include "compiler/ops/movement.h"


#define SLICE_CAP (HC_MAX_RANK * 2)

/* Reads starts/ends/axes/steps (attributes or constant inputs). Missing
 * axes default to 0..count-1 and missing steps to 1. */
static hx_status_t read_params(const hc_node* n, int64_t* starts, int64_t* ends, int64_t* axes, int64_t* steps,
                               int* out_count) {
  int ns, ne, na = -1, nt = -1;
  if (n->opset < 10) {
    ns = hc_attr_ints(n, "starts", starts, SLICE_CAP);
    ne = hc_attr_ints(n, "ends", ends, SLICE_CAP);
    na = hc_attr_ints(n, "axes", axes, SLICE_CAP);
    if (ns == -1 || ne == -1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "the attributes 'starts' and 'ends' are required");
    if (ns == -2 || ne == -2 || na == -2)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "starts/ends/axes have more than %d entries", SLICE_CAP);
  } else {
    if (hc_node_attr(n, "starts") || hc_node_attr(n, "ends") || hc_node_attr(n, "axes"))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "starts/ends/axes are inputs from opset 10 on, not attributes");
    HX_RETURN_IF_ERROR(hc_const_ints(n, 1, starts, SLICE_CAP, &ns));
    HX_RETURN_IF_ERROR(hc_const_ints(n, 2, ends, SLICE_CAP, &ne));
    if (hc_input(n, 3)) HX_RETURN_IF_ERROR(hc_const_ints(n, 3, axes, SLICE_CAP, &na));
    if (hc_input(n, 4)) HX_RETURN_IF_ERROR(hc_const_ints(n, 4, steps, SLICE_CAP, &nt));
  }
  if (ns != ne)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "starts has %d entries but ends has %d", ns, ne);
  if (na >= 0 && na != ns)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axes has %d entries but starts has %d", na, ns);
  if (nt >= 0 && nt != ns)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "steps has %d entries but starts has %d", nt, ns);
  for (int i = 0; i < ns; ++i) {
    if (na < 0) axes[i] = i;
    if (nt < 0) steps[i] = 1;
  }
  *out_count = ns;
  return HX_OK;
}

/* Per input dimension: first index, step and element count of the slice. */
static hx_status_t slice_plan(const hc_node* n, int64_t* first, int64_t* step, int64_t* count) {
  const hc_value* x = n->inputs[0];
  int64_t starts[SLICE_CAP], ends[SLICE_CAP], axes[SLICE_CAP], steps[SLICE_CAP];
  int k = 0;
  HX_RETURN_IF_ERROR(read_params(n, starts, ends, axes, steps, &k));
  for (int d = 0; d < x->rank; ++d) {
    first[d] = 0;
    step[d] = 1;
    count[d] = x->dims[d];
  }
  bool seen[HC_MAX_RANK] = {0};
  for (int i = 0; i < k; ++i) {
    int64_t a;
    HX_RETURN_IF_ERROR(hc_norm_axis(n, axes[i], x->rank, &a));
    if (seen[a]) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axis %lld is sliced twice", (long long)a);
    seen[a] = true;
    int64_t dim = x->dims[a], s = steps[i], b = starts[i], e = ends[i];
    if (s == 0) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "steps[%d] is 0", i);
    /* Negative indices count from the end; then clamp (INT64_MIN/MAX too). */
    if (b < 0) b += dim;
    if (e < 0) e += dim;
    int64_t c;
    if (s > 0) {
      b = b < 0 ? 0 : b > dim ? dim : b;
      e = e < 0 ? 0 : e > dim ? dim : e;
      c = e > b ? (e - b - 1) / s + 1 : 0;
    } else {
      b = b < 0 ? 0 : b;
      b = b > dim - 1 ? dim - 1 : b;
      e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
      c = b > e ? (b - e - 1) / -s + 1 : 0;
    }
    first[a] = c > 0 ? b : 0;
    step[a] = c > 1 ? s : 1;
    count[a] = c;
  }
  return HX_OK;
}

/* The output has count[d] elements along every axis. */
static hx_status_t infer_slice(hc_graph* g, hc_node* n) {
  if (n->opset < 10)
    HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  else
    HX_RETURN_IF_ERROR(hc_check_arity(n, 3, 5, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  const hc_value* x = n->inputs[0];
  int64_t first[HC_MAX_RANK], step[HC_MAX_RANK], count[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(slice_plan(n, first, step, count));
  hc_set_output(n, 0, x->dtype, x->rank, count);
  return HX_OK;
}

/* Source offset: the first index of every axis; strides scaled by the steps. */
static hx_status_t lower_slice(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* x = n->inputs[0];
  const hc_value* y = n->outputs[0];
  int64_t first[HC_MAX_RANK], step[HC_MAX_RANK], count[HC_MAX_RANK];
  int64_t in_strides[HC_MAX_RANK], ss[HC_MAX_RANK], ds[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(slice_plan(n, first, step, count));
  hc_strides(x->rank, x->dims, in_strides);
  hc_strides(y->rank, y->dims, ds);
  int64_t off = 0;
  for (int d = 0; d < x->rank; ++d) {
    off += first[d] * in_strides[d];
    ss[d] = step[d] * in_strides[d];
  }
  return hc_mv_strided_copy(lc, n, NULL, x, off, ss, y, 0, ds, y->rank, count, false);
}

static const char* const k_slice_attrs[] = {"starts", "ends", "axes", NULL};

const hc_op_desc hc_op_slice = {"Slice", "", 1, 22, k_slice_attrs, 0, infer_slice, lower_slice, NULL};
