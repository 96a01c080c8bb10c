/* IR verifier and text printer. */
#ifndef HARNESS_IR_VERIFY_H
#define HARNESS_IR_VERIFY_H

#include <stdio.h>

#include "ir/graph.h"

/* Checks structural invariants: every node input is defined before use
 * (graph input, constant, or output of an earlier node), each value has one
 * producer, producer links are consistent, graph outputs are defined, and,
 * when shapes_known, every value has a dtype and a non-negative static shape. */
hx_status_t hc_graph_verify(const hc_graph* g, bool shapes_known);

/* Prints the graph in Harness's text form (what --print-after shows):
 *   %y: float32[1x64x56x56] = Relu(%x)  {attrs}  @arena+4096
 * Constants are listed with their shape but not their data. */
void hc_graph_print(const hc_graph* g, FILE* out);

#endif /* HARNESS_IR_VERIFY_H */
