/* Zero-copy ops: the output is the input's bytes under a new shape.
 * Reshape, Flatten, Squeeze, Unsqueeze, Identity and inference-mode Dropout
 * emit no kernel; the memory planner makes the output alias the input. */
#include <string.h>

#include "compiler/ops/op.h"

static hx_status_t set_view_output(hc_node* n, int rank, const int64_t* dims) {
  const hc_value* x = n->inputs[0];
  if (hc_shape_numel(rank, dims) != hc_value_numel(x)) {
    char a[128], b[128];
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "cannot view %s (%lld elements) as %s (%lld elements)",
                         hc_shape_str(x->rank, x->dims, a, sizeof a), (long long)hc_value_numel(x),
                         hc_shape_str(rank, dims, b, sizeof b), (long long)hc_shape_numel(rank, dims));
  }
  hc_set_output(n, 0, x->dtype, rank, dims);
  return HX_OK;
}

/* ---- Reshape ------------------------------------------------------------ */

static hx_status_t infer_reshape(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 2, 1, 1));
  const hc_value* x = n->inputs[0];
  int64_t shape[HC_MAX_RANK];
  int rank;
  HX_RETURN_IF_ERROR(hc_const_ints(n, 1, shape, HC_MAX_RANK, &rank));
  bool allowzero = hc_attr_int(n, "allowzero", 0) != 0;
  int infer_at = -1;
  int64_t known = 1;
  for (int i = 0; i < rank; ++i) {
    if (shape[i] == 0 && !allowzero) {
      if (i >= x->rank)
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "shape[%d] = 0 copies a dimension the input (rank %d) lacks",
                             i, x->rank);
      shape[i] = x->dims[i];
    }
    if (shape[i] == -1) {
      if (infer_at >= 0)
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "shape has more than one -1 entry");
      infer_at = i;
      continue;
    }
    if (shape[i] < 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "shape[%d] = %lld is invalid", i, (long long)shape[i]);
    known *= shape[i];
  }
  if (infer_at >= 0) {
    int64_t total = hc_value_numel(x);
    if (known == 0 || total % known != 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "cannot infer the -1 dimension: %lld elements into blocks of %lld",
                           (long long)total, (long long)known);
    shape[infer_at] = total / known;
  }
  return set_view_output(n, rank, shape);
}

/* ---- Flatten ------------------------------------------------------------ */

static hx_status_t infer_flatten(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  const hc_value* x = n->inputs[0];
  int64_t axis = hc_attr_int(n, "axis", 1);
  if (axis < -x->rank || axis > x->rank)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
  if (axis < 0) axis += x->rank;
  int64_t dims[2] = {hc_shape_numel((int)axis, x->dims), hc_shape_numel(x->rank - (int)axis, x->dims + axis)};
  return set_view_output(n, 2, dims);
}

/* ---- Squeeze / Unsqueeze: axes are an attribute before opset 13, an input after. */

static hx_status_t read_axes(hc_node* n, int64_t* axes, int* count, bool* present) {
  *present = false;
  *count = 0;
  if (n->opset < 13) {
    int c = hc_attr_ints(n, "axes", axes, HC_MAX_RANK * 2);
    if (c == -2) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "too many axes");
    if (c >= 0) {
      *present = true;
      *count = c;
    }
    return HX_OK;
  }
  if (hc_input(n, 1)) {
    HX_RETURN_IF_ERROR(hc_const_ints(n, 1, axes, HC_MAX_RANK * 2, count));
    *present = true;
  }
  return HX_OK;
}

static hx_status_t infer_squeeze(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 2, 1, 1));
  const hc_value* x = n->inputs[0];
  int64_t axes[HC_MAX_RANK * 2];
  int count;
  bool present;
  HX_RETURN_IF_ERROR(read_axes(n, axes, &count, &present));
  bool drop[HC_MAX_RANK] = {0};
  if (!present) {
    for (int d = 0; d < x->rank; ++d) drop[d] = x->dims[d] == 1;
  } else {
    for (int i = 0; i < count; ++i) {
      int64_t a;
      HX_RETURN_IF_ERROR(hc_norm_axis(n, axes[i], x->rank, &a));
      if (x->dims[a] != 1)
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "cannot squeeze axis %lld of size %lld", (long long)a,
                             (long long)x->dims[a]);
      drop[a] = true;
    }
  }
  int64_t dims[HC_MAX_RANK];
  int rank = 0;
  for (int d = 0; d < x->rank; ++d)
    if (!drop[d]) dims[rank++] = x->dims[d];
  return set_view_output(n, rank, dims);
}

static hx_status_t infer_unsqueeze(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 2, 1, 1));
  const hc_value* x = n->inputs[0];
  int64_t axes[HC_MAX_RANK * 2];
  int count;
  bool present;
  HX_RETURN_IF_ERROR(read_axes(n, axes, &count, &present));
  if (!present) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axes are required");
  int rank = x->rank + count;
  if (rank > HC_MAX_RANK)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED, "output rank %d exceeds the maximum %d", rank, HC_MAX_RANK);
  bool inserted[HC_MAX_RANK] = {0};
  for (int i = 0; i < count; ++i) {
    int64_t a;
    HX_RETURN_IF_ERROR(hc_norm_axis(n, axes[i], rank, &a));
    if (inserted[a]) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axis %lld appears twice", (long long)a);
    inserted[a] = true;
  }
  int64_t dims[HC_MAX_RANK];
  for (int d = 0, s = 0; d < rank; ++d) dims[d] = inserted[d] ? 1 : x->dims[s++];
  return set_view_output(n, rank, dims);
}

/* ---- Identity / Dropout -------------------------------------------------- */

static hx_status_t infer_identity(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  return set_view_output(n, n->inputs[0]->rank, n->inputs[0]->dims);
}

/* Inference-mode Dropout is the identity; its optional mask output is all
 * true and therefore a compile-time constant. Training mode (opset 12+,
 * training_mode=true) is the identity too when the drop probability `ratio`
 * is a constant 0 (scale 1 / (1 - 0), nothing dropped): exporters emit that
 * for attention dropout written as F.dropout(x, p=0.0), e.g. torchvision's
 * Swin Transformer. Any other training-mode ratio draws random masks. */
static hx_status_t infer_dropout(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 3, 1, 2));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_FLOATS));
  const hc_value* training = hc_input(n, 2);
  if (training) {
    int64_t t;
    if (training->kind != HC_VALUE_CONST || !hc_value_const_i64(training, 0, &t))
      return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                           "training_mode ('%s') must be a compile-time constant (freeze it with --constant)",
                           training->name);
    if (t) {
      const hc_value* ratio = hc_input(n, 1);
      double r = 0.5; /* the default when the input is absent */
      if (ratio && (ratio->kind != HC_VALUE_CONST || !hc_value_const_f64(ratio, 0, &r)))
        return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                             "training_mode=true with a ratio ('%s') that is not a compile-time constant draws "
                             "random masks; Harness compiles inference graphs only",
                             ratio->name);
      if (r != 0.0)
        return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                             "training_mode=true with ratio %g draws random masks; Harness compiles inference "
                             "graphs only (only ratio 0, the identity, is accepted in training mode)",
                             r);
    }
  }
  const hc_value* x = n->inputs[0];
  HX_RETURN_IF_ERROR(set_view_output(n, x->rank, x->dims));
  if (n->num_outputs > 1 && n->outputs[1]) {
    hc_value* mask = n->outputs[1];
    hc_value_set_shape(mask, HX_DTYPE_BOOL, x->rank, x->dims);
    unsigned char* ones = hc_make_const_value(g, mask);
    if (!ones) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
    memset(ones, 1, hc_value_nbytes(mask));
  }
  return HX_OK;
}

static const char* const k_reshape_attrs[] = {"allowzero", NULL};
static const char* const k_flatten_attrs[] = {"axis", NULL};
static const char* const k_axes_attrs[] = {"axes", NULL};
static const char* const k_dropout_attrs[] = {"ratio", "seed", NULL};

const hc_op_desc hc_op_reshape = {"Reshape", "", 5, 22, k_reshape_attrs, HC_OP_VIEW, infer_reshape, NULL, NULL};
const hc_op_desc hc_op_flatten = {"Flatten", "", 1, 22, k_flatten_attrs, HC_OP_VIEW, infer_flatten, NULL, NULL};
const hc_op_desc hc_op_squeeze = {"Squeeze", "", 1, 22, k_axes_attrs, HC_OP_VIEW, infer_squeeze, NULL, NULL};
const hc_op_desc hc_op_unsqueeze = {"Unsqueeze", "", 1, 22, k_axes_attrs, HC_OP_VIEW, infer_unsqueeze, NULL, NULL};
const hc_op_desc hc_op_identity = {"Identity", "", 1, 22, NULL, HC_OP_VIEW, infer_identity, NULL, NULL};
const hc_op_desc hc_op_dropout = {"Dropout", "", 7, 22, k_dropout_attrs, HC_OP_VIEW, infer_dropout, NULL, NULL};
