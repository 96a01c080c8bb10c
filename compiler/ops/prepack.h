/* Fast-path predicates and compile-time weight packing shared by the GEMM
 * and convolution lowerings (gemm.c, conv.c) and passes/fusion.c.
 *
 * The predicates depend only on the node (dtypes and shapes), never on the
 * target, so the fusion and pack-weights passes and every code variant of
 * an artifact agree on which kernels a node gets. */
#ifndef HARNESS_OPS_PREPACK_H
#define HARNESS_OPS_PREPACK_H

#include <stdbool.h>

#include "ir/graph.h"

/* Panel width of HC_PACK_PANELS for a dtype (16 float32, 8 float64). */
int hc_pack_panel_width(hx_dtype_t dt);

/* True when a Gemm/MatMul node is lowered by the register-tiled GEMM (and
 * so accepts fused epilogues and a pre-packed B). */
bool hc_matmul_fast(const hc_node* n);
/* True when a Conv node is lowered by one of the fast convolution kernels
 * (and so accepts fused epilogues). */
bool hc_conv_fast(const hc_node* n);

/* Packs the constant weight of a Gemm/MatMul/Conv node that its fast kernel
 * reads pre-packed: adds the packed constant to the graph, rewires the node's
 * input and records hc_node.packed. *out_done tells whether it did (false
 * when the node's weight is not a constant or its kernel reads it as is). */
hx_status_t hc_matmul_prepack(hc_graph* g, hc_node* n, bool* out_done);
hx_status_t hc_conv_prepack(hc_graph* g, hc_node* n, bool* out_done);

#endif /* HARNESS_OPS_PREPACK_H */
