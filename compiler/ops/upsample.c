/* Upsample (opsets 7-9; deprecated in 10 in favour of Resize): nearest or
 * (multi)linear upsampling by per-axis scales >= 1, output dims
 * floor(dim * scale).
 *
 * scales is an attribute in opsets 7-8 and an input from 9: a constant, or
 * a tensor computed or fed at run time when the model declares the output
 * shape (Resize's run-time scales, see resize.c). The
 * math is Resize-10's, as in ONNX Runtime: asymmetric coordinates
 * (x_in = x_out / scale), nearest rounding down, linear clamped at the
 * edge. So Upsample is lowered by the Resize descriptor (resize.c) on a
 * stand-in node: the same inputs and outputs, opset 10, and for opsets 7-8
 * the scales attribute turned into a constant input. Kernels the stand-in
 * records are then attributed back to the Upsample node. */
#include <string.h>

#include "compiler/ops/movement.h"

extern const hc_op_desc hc_op_resize;

static const char* const k_upsample_attrs[] = {"mode", "scales", NULL};

/* A Resize-10 view of an Upsample node; `inputs` and `scales` back it. */
typedef struct upsample_proxy {
  hc_node node;
  hc_value* inputs[2];
  hc_value scales;
  float data[HC_MAX_RANK];
} upsample_proxy;

/* Validates the node and fills the stand-in (see the file comment). */
static hx_status_t make_proxy(hc_node* n, upsample_proxy* p) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, n->opset < 9 ? 1 : 2, n->opset < 9 ? 1 : 2, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  const hc_value* x = n->inputs[0];
  const char* mode = hc_attr_string(n, "mode", "nearest");
  if (strcmp(mode, "nearest") && strcmp(mode, "linear"))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "mode '%s' is not one of nearest, linear", mode);
  if (x->rank < 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "X must have rank >= 1, got a scalar");
  memset(p, 0, sizeof *p);
  p->node = *n;
  p->node.opset = 10;
  p->node.inputs = p->inputs;
  p->node.num_inputs = 2;
  p->inputs[0] = n->inputs[0];
  const hc_value* sv;
  if (n->opset < 9) {
    if (hc_input(n, 1))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "scales is an attribute before opset 9, not an input");
    const hc_attr* a = hc_node_attr(n, "scales");
    if (!a || a->type != HC_ATTR_FLOATS)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "the float list attribute 'scales' is required");
    if (a->n != x->rank)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "scales has %d entries, expected the input rank %d", a->n,
                           x->rank);
    for (int d = 0; d < a->n; ++d) p->data[d] = a->floats[d];
    p->scales.name = "scales";
    p->scales.dtype = HX_DTYPE_FLOAT32;
    p->scales.rank = 1;
    p->scales.dims[0] = a->n;
    p->scales.kind = HC_VALUE_CONST;
    p->scales.data = p->data;
    p->scales.storage.base = -1;
    p->inputs[1] = &p->scales;
    sv = &p->scales;
  } else {
    if (hc_node_attr(n, "scales"))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "scales is an input from opset 9 on, not an attribute");
    HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, HC_DT(HX_DTYPE_FLOAT32)));
    p->inputs[1] = n->inputs[1];
    sv = n->inputs[1];
    if (sv->rank != 1 || sv->dims[0] != x->rank)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "scales ('%s') must be 1-D with %d entries (the input rank)",
                           sv->name, x->rank);
    if (sv->kind != HC_VALUE_CONST) return HX_OK; /* read at run time (resize.c) */
  }
  for (int d = 0; d < x->rank; ++d) {
    double s = 0;
    hc_value_const_f64(sv, d, &s);
    if (!(s >= 1.0)) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "scales[%d] = %g must be >= 1", d, s);
  }
  return HX_OK;
}

/* Resize-10's shape inference on the stand-in (outputs are shared). */
static hx_status_t infer_upsample(hc_graph* g, hc_node* n) {
  upsample_proxy p;
  HX_RETURN_IF_ERROR(make_proxy(n, &p));
  return hc_op_resize.infer(g, &p.node);
}

/* Resize-10's kernels, attributed to this node. */
static hx_status_t lower_upsample(hc_lower_ctx* lc, hc_node* n) {
  upsample_proxy p;
  HX_RETURN_IF_ERROR(make_proxy(n, &p));
  int first = lc->num_kernels;
  hx_status_t st = hc_op_resize.lower(lc, &p.node);
  for (int k = first; k < lc->num_kernels; ++k) lc->kernels[k].node = n;
  return st;
}

/* Resize-10's workspace (its run-time scale tables) for the stand-in. */
static uint64_t upsample_workspace(const hc_node* n) {
  upsample_proxy p;
  hx_status_t st = make_proxy((hc_node*)n, &p);
  if (st != HX_OK) {
    hx_status_free(st);
    return 0;
  }
  return hc_op_resize.workspace(&p.node);
}

const hc_op_desc hc_op_upsample = {"Upsample", "", 7, 9, k_upsample_attrs, 0, infer_upsample, lower_upsample, NULL,
                                   upsample_workspace};
