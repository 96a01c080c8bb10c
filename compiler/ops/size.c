/* Size: the number of elements of the input, an int64 scalar. Shapes are
 * static, so the output becomes a constant during shape inference (as Shape
 * does) and no kernel is emitted. */
#include <string.h>

#include "compiler/ops/op.h"

static hx_status_t infer_size(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  int64_t count = hc_value_numel(n->inputs[0]);
  hc_value* out = n->outputs[0];
  hc_value_set_shape(out, HX_DTYPE_INT64, 0, NULL);
  void* data = hc_make_const_value(g, out);
  if (!data) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  memcpy(data, &count, sizeof count);
  return HX_OK;
}

const hc_op_desc hc_op_size = {"Size", "", 1, 22, NULL, 0, infer_size, NULL, NULL};
