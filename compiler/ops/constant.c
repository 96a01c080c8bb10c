/* Ops whose result is known at compile time: Constant and Shape become
 * constants during shape inference; ConstantOfShape has a fill kernel for
 * outputs too large to store as weights. */
#include <string.h>

#include "compiler/ops/op.h"

static hx_status_t make_const(hc_graph* g, hc_node* n, hx_dtype_t dt, int rank, const int64_t* dims,
                              const void* data, size_t nbytes) {
  hc_value* out = n->outputs[0];
  hc_value_set_shape(out, dt, rank, dims);
  if (hc_value_nbytes(out) != nbytes)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "constant holds %zu bytes but its shape needs %zu", nbytes,
                         hc_value_nbytes(out));
  void* copy = hc_make_const_value(g, out);
  if (!copy) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  if (nbytes) memcpy(copy, data, nbytes);
  return HX_OK;
}

/* ---- Constant ------------------------------------------------------------- */

static hx_status_t infer_constant(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 0, 0, 1, 1));
  if (n->num_attrs != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "exactly one value attribute is required, got %d", n->num_attrs);
  const hc_attr* a = &n->attrs[0];
  if (!strcmp(a->name, "value")) {
    if (a->type != HC_ATTR_TENSOR) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'value' must be a tensor");
    const hc_attr_tensor* t = a->t;
    if (!(HC_DT_ALL & HC_DT(t->dtype)))
      return hc_node_error(n, HX_STATUS_UNSUPPORTED, "unsupported constant element type %s", hx_dtype_name(t->dtype));
    return make_const(g, n, t->dtype, t->rank, t->dims, t->data, t->nbytes);
  }
  if (!strcmp(a->name, "value_float")) return make_const(g, n, HX_DTYPE_FLOAT32, 0, NULL, &a->f, sizeof(float));
  if (!strcmp(a->name, "value_int")) return make_const(g, n, HX_DTYPE_INT64, 0, NULL, &a->i, sizeof(int64_t));
  if (!strcmp(a->name, "value_floats")) {
    int64_t d = a->n;
    return make_const(g, n, HX_DTYPE_FLOAT32, 1, &d, a->floats, sizeof(float) * (size_t)a->n);
  }
  if (!strcmp(a->name, "value_ints")) {
    int64_t d = a->n;
    return make_const(g, n, HX_DTYPE_INT64, 1, &d, a->ints, sizeof(int64_t) * (size_t)a->n);
  }
  return hc_node_error(n, HX_STATUS_UNSUPPORTED, "unsupported attribute '%s' (string and sparse constants are not supported)",
                       a->name);
}

/* ---- Shape ------------------------------------------------------------------ */

static hx_status_t infer_shape(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  const hc_value* x = n->inputs[0];
  int64_t r = x->rank;
  int64_t start = hc_attr_int(n, "start", 0), end = hc_attr_int(n, "end", r);
  /* Opset 15: start/end are clamped into [0, rank] after adding rank to negatives. */
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = start < 0 ? 0 : start > r ? r : start;
  end = end < 0 ? 0 : end > r ? r : end;
  int64_t count = end > start ? end - start : 0;
  return make_const(g, n, HX_DTYPE_INT64, 1, &count, x->dims + start, sizeof(int64_t) * (size_t)count);
}

/* ---- ConstantOfShape ----------------------------------------------------------- */

static hx_status_t infer_constant_of_shape(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  int64_t dims[HC_MAX_RANK];
  int rank;
  HX_RETURN_IF_ERROR(hc_const_ints(n, 0, dims, HC_MAX_RANK, &rank));
  for (int i = 0; i < rank; ++i)
    if (dims[i] < 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "shape[%d] = %lld is negative", i, (long long)dims[i]);
  hx_dtype_t dt = HX_DTYPE_FLOAT32;
  const hc_attr* v = hc_node_attr(n, "value");
  if (v) {
    if (v->type != HC_ATTR_TENSOR || hc_shape_numel(v->t->rank, v->t->dims) != 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'value' must be a one-element tensor");
    dt = v->t->dtype;
    if (!(HC_DT_ALL & HC_DT(dt)))
      return hc_node_error(n, HX_STATUS_UNSUPPORTED, "unsupported value element type %s", hx_dtype_name(dt));
  }
  hc_set_output(n, 0, dt, rank, dims);
  return HX_OK;
}

static hx_status_t lower_constant_of_shape(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* out = n->outputs[0];
  const hc_attr* v = hc_node_attr(n, "value");
  size_t esize = hx_dtype_size(out->dtype);
  int64_t total = hc_value_numel(out);
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, total > 0 ? 1 : 0, &kb));
  LLVMValueRef dst = hc_kb_ptr(&kb, out);
  /* Fill by storing the element's exact bit pattern as an integer. */
  uint64_t bits = 0;
  if (v) memcpy(&bits, v->t->data, esize);
  LLVMTypeRef it = LLVMIntTypeInContext(lc->llctx, (unsigned)(esize * 8));
  LLVMValueRef val = LLVMConstInt(it, bits, 0);
  hc_loop loop;
  LLVMValueRef i = hc_loop_begin(&kb, &loop, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, total), "i");
  LLVMBuildStore(kb.b, val, LLVMBuildGEP2(kb.b, it, dst, &i, 1, ""));
  hc_loop_end(&kb, &loop);
  hc_kb_end(&kb, 0, (double)hc_value_nbytes(out));
  return HX_OK;
}

static const char* const k_constant_attrs[] = {"value", "value_float", "value_floats", "value_int", "value_ints",
                                               "value_string", "value_strings", "sparse_value", NULL};
static const char* const k_shape_attrs[] = {"start", "end", NULL};
static const char* const k_cos_attrs[] = {"value", NULL};

const hc_op_desc hc_op_constant = {"Constant", "", 1, 22, k_constant_attrs, 0, infer_constant, NULL, NULL};
const hc_op_desc hc_op_shape = {"Shape", "", 1, 22, k_shape_attrs, 0, infer_shape, NULL, NULL};
const hc_op_desc hc_op_constant_of_shape = {"ConstantOfShape", "", 9, 22, k_cos_attrs, 0, infer_constant_of_shape,
                                            lower_constant_of_shape, NULL};
