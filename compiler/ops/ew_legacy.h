/* Legacy broadcasting of element-wise binary ops (opsets 1-6 of Add, Sub,
 * Mul, Div, Pow, And, Or, Xor, Equal, Less, Greater; PRelu before 7).
 *
 * There the second input broadcasts to the first only when the attribute
 * broadcast=1, either as a one-element tensor or with its shape equal to a
 * contiguous run of the first input's dims starting at `axis` (suffix
 * matching when axis is absent); the output has the first input's shape.
 * Suffix alignment is what numpy broadcasting does already; any other axis
 * needs the operand viewed with trailing 1-dims appended. Such a node is
 * switched by its infer to an unregistered twin of its descriptor that is
 * not HC_OP_ELEMENTWISE (fusion, which broadcasts numpy-style, leaves it
 * alone) and lowers with that view (hc_ew_lower_legacy).
 */
#ifndef HARNESS_OPS_EW_LEGACY_H
#define HARNESS_OPS_EW_LEGACY_H

#include "compiler/ops/op.h"

/* Checks the legacy broadcast of input 1 to input 0 (broadcast/axis
 * attributes) and reports in *axis where input 1's dims start in input 0's
 * (-1 when numpy broadcasting already aligns them). */
hx_status_t hc_ew_legacy_axis(const hc_node* n, int* axis);
/* hc_ew_legacy_axis, then output 0 = input 0's shape with dtype out_dtype
 * (HX_DTYPE_UNDEFINED: input 0's); a node that needs re-alignment gets the
 * descriptor `aligned` (its twin) instead of its own. */
hx_status_t hc_ew_legacy_infer(hc_node* n, hx_dtype_t out_dtype, const hc_op_desc* aligned);
/* `lower` of the twins: hc_ew_lower_aligned with input 1 at its legacy
 * axis (plain broadcasting when none is needed). */
hx_status_t hc_ew_lower_legacy(hc_lower_ctx* lc, hc_node* n);

/* Lowers an element-wise node through its scalar function, with input
 * `operand` aligned at dim `axis` of the output (axis < 0: plain numpy
 * broadcasting). */
hx_status_t hc_ew_lower_aligned(hc_lower_ctx* lc, hc_node* n, int operand, int axis);

#endif /* HARNESS_OPS_EW_LEGACY_H */
