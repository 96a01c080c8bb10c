/* The shared element-wise kernel generator.
 *
 * Emits one kernel computing out[i] = f(in_0[bcast(i)], ..., in_k[bcast(i)])
 * over the output shape with numpy broadcasting. Dimensions are collapsed
 * where every operand is contiguous or broadcast alike, so that most kernels
 * become one flat loop the vectoriser turns into full-width SIMD. Tasks are
 * blocks of the outer (collapsed) index space.
 */
#ifndef HARNESS_CODEGEN_ELEMENTWISE_H
#define HARNESS_CODEGEN_ELEMENTWISE_H

#include "compiler/codegen/kernel_builder.h"

/* Per-element function: operands are loaded in their compute types. */
typedef LLVMValueRef (*hc_elementwise_fn)(hc_kb* kb, void* ctx, LLVMValueRef* operands);

typedef struct hc_elementwise_spec {
  const hc_node* node;           /* for the kernel name */
  const char* suffix;            /* kernel name suffix, may be NULL */
  int num_operands;
  const hc_value* const* operands; /* each broadcastable to out; NULL entries load nothing (operand = NULL) */
  const hc_value* out;
  hc_elementwise_fn fn;
  void* ctx;
  double flops_per_element;
} hc_elementwise_spec;

hx_status_t hc_emit_elementwise(hc_lower_ctx* lc, const hc_elementwise_spec* spec);

/* The one-operand form: output 0 of node = fn(input 0), input 0 broadcast
 * to the output's shape (a copy, a conversion...). */
hx_status_t hc_emit_map(hc_lower_ctx* lc, const hc_node* node, hc_elementwise_fn fn, void* ctx,
                        double flops_per_element);

#endif /* HARNESS_CODEGEN_ELEMENTWISE_H */
