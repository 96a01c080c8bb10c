/* Helpers shared by op descriptors: attributes, arity, dtypes, shapes. */
#include <stdio.h>
#include <string.h>

#include "compiler/ops/op.h"
#include "compiler/codegen/elementwise.h"

int64_t hc_attr_int(const hc_node* n, const char* name, int64_t dflt) {
  const hc_attr* a = hc_node_attr(n, name);
  return (a && a->type == HC_ATTR_INT) ? a->i : dflt;
}

float hc_attr_float(const hc_node* n, const char* name, float dflt) {
  const hc_attr* a = hc_node_attr(n, name);
  if (!a) return dflt;
  if (a->type == HC_ATTR_FLOAT) return a->f;
  if (a->type == HC_ATTR_INT) return (float)a->i;
  return dflt;
}

const char* hc_attr_string(const hc_node* n, const char* name, const char* dflt) {
  const hc_attr* a = hc_node_attr(n, name);
  return (a && a->type == HC_ATTR_STRING) ? a->s : dflt;
}

int hc_attr_ints(const hc_node* n, const char* name, int64_t* out, int cap) {
  const hc_attr* a = hc_node_attr(n, name);
  if (!a || (a->type != HC_ATTR_INTS && a->type != HC_ATTR_INT)) return -1;
  if (a->type == HC_ATTR_INT) {
    if (cap < 1) return -2;
    out[0] = a->i;
    return 1;
  }
  if (a->n > cap) return -2;
  for (int i = 0; i < a->n; ++i) out[i] = a->ints[i];
  return a->n;
}

hc_value* hc_input(const hc_node* n, int i) { return (i >= 0 && i < n->num_inputs) ? n->inputs[i] : NULL; }

hx_status_t hc_check_arity(const hc_node* n, int min_in, int max_in, int min_out, int max_out) {
  if (n->num_inputs < min_in || n->num_inputs > max_in) {
    if (min_in == max_in)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "expected %d inputs, got %d", min_in, n->num_inputs);
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "expected %d to %d inputs, got %d", min_in, max_in,
                         n->num_inputs);
  }
  for (int i = 0; i < min_in; ++i)
    if (!n->inputs[i]) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "required input %d is missing", i);
  if (n->num_outputs < min_out || n->num_outputs > max_out)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "expected %d to %d outputs, got %d", min_out, max_out,
                         n->num_outputs);
  if (min_out > 0 && !n->outputs[0])
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "required output 0 is missing");
  return HX_OK;
}

hx_status_t hc_check_dtype(const hc_node* n, int i, uint64_t allowed) {
  const hc_value* v = hc_input(n, i);
  if (!v) return HX_OK;
  if (!(allowed & HC_DT(v->dtype)))
    return hc_node_error(n, HX_STATUS_UNSUPPORTED, "unsupported element type %s for input %d ('%s')",
                         hx_dtype_name(v->dtype), i, v->name);
  return HX_OK;
}

hx_status_t hc_check_same_dtype(const hc_node* n, int i, int j) {
  const hc_value *a = hc_input(n, i), *b = hc_input(n, j);
  if (a && b && a->dtype != b->dtype)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "inputs %d and %d must have the same element type, got %s and %s",
                         i, j, hx_dtype_name(a->dtype), hx_dtype_name(b->dtype));
  return HX_OK;
}

hx_status_t hc_broadcast_shapes(const hc_node* n, int count, hc_value* const* values, int* out_rank,
                                int64_t* out_dims) {
  int rank = 0;
  for (int i = 0; i < count; ++i)
    if (values[i] && values[i]->rank > rank) rank = values[i]->rank;
  for (int d = 0; d < rank; ++d) out_dims[d] = 1;
  for (int i = 0; i < count; ++i) {
    const hc_value* v = values[i];
    if (!v) continue;
    for (int d = 0; d < v->rank; ++d) {
      int od = rank - v->rank + d;
      int64_t a = out_dims[od], b = v->dims[d];
      if (a == b || b == 1) continue;
      if (a == 1) {
        out_dims[od] = b;
        continue;
      }
      char s1[128], s2[128];
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "shapes are not broadcastable: %s vs %s (dimension %d: %lld vs %lld)",
                           hc_shape_str(values[0]->rank, values[0]->dims, s1, sizeof s1),
                           hc_shape_str(v->rank, v->dims, s2, sizeof s2), od, (long long)a, (long long)b);
    }
  }
  *out_rank = rank;
  return HX_OK;
}

hx_status_t hc_norm_axis(const hc_node* n, int64_t axis, int rank, int64_t* out) {
  if (axis < -rank || axis >= rank)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axis %lld is out of range for rank %d", (long long)axis, rank);
  *out = axis < 0 ? axis + rank : axis;
  return HX_OK;
}

hx_status_t hc_const_ints(const hc_node* n, int input, int64_t* out, int cap, int* out_count) {
  const hc_value* v = hc_input(n, input);
  if (!v) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d is missing", input);
  if (v->kind != HC_VALUE_CONST)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                         "input %d ('%s') determines an output shape and must be known at compile time; it is "
                         "computed at run time here (freeze it with --constant %s=FILE.pb if it is a graph input)",
                         input, v->name, v->name);
  if (!hc_dtype_is_integer(v->dtype))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d ('%s') must be an integer tensor, got %s", input,
                         v->name, hx_dtype_name(v->dtype));
  int64_t count = hc_value_numel(v);
  if (v->rank > 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d ('%s') must be 1-D, got rank %d", input, v->name,
                         v->rank);
  if (count > cap)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED, "input %d ('%s') has %lld entries; at most %d supported", input,
                         v->name, (long long)count, cap);
  for (int64_t i = 0; i < count; ++i) hc_value_const_i64(v, i, &out[i]);
  *out_count = (int)count;
  return HX_OK;
}

void hc_set_output(hc_node* n, int i, hx_dtype_t dtype, int rank, const int64_t* dims) {
  if (i < n->num_outputs && n->outputs[i]) hc_value_set_shape(n->outputs[i], dtype, rank, dims);
}

void* hc_make_const_value(hc_graph* g, hc_value* v) {
  void* data = hc_graph_alloc_data(g, hc_value_nbytes(v));
  if (!data) return NULL;
  v->kind = HC_VALUE_CONST;
  v->data = data;
  v->producer = NULL;
  return data;
}

/* Adapts an op's scalar function to the element-wise generator. */
static LLVMValueRef scalar_of_node(hc_kb* kb, void* ctx, LLVMValueRef* operands) {
  const hc_node* n = ctx;
  return n->op->scalar(kb, n, operands);
}

hx_status_t hc_lower_elementwise(hc_lower_ctx* lc, hc_node* n) {
  hc_elementwise_spec spec = {
      .node = n,
      .num_operands = n->num_inputs,
      .operands = (const hc_value* const*)n->inputs,
      .out = n->outputs[0],
      .fn = scalar_of_node,
      .ctx = n,
      .flops_per_element = 1.0,
  };
  return hc_emit_elementwise(lc, &spec);
}
