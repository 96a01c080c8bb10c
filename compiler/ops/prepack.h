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

struct hc_target;

/* Packs the constant weight of a Gemm/MatMul/Conv node that its fast kernel
 * reads pre-packed: adds the packed constant to the graph, rewires the node's
 * input and records hc_node.packed. *out_done tells whether it did (false
 * when the node's weight is not a constant or its kernel reads it as is).
 * A Conv's Winograd U takes the tile size `target`'s products favour
 * (hc_wino_choose_packed). */
hx_status_t hc_matmul_prepack(hc_graph* g, hc_node* n, bool* out_done);
hx_status_t hc_conv_prepack(hc_graph* g, hc_node* n, const struct hc_target* target, bool* out_done);
/* MatMulInteger's or QLinearMatMul's constant B: int8 with zero point 0
 * and K a multiple of 4 in the K-quads of the VNNI byte path, where
 * `target` has it (HC_PACK_KQUADS_S8); otherwise (a constant zero point)
 * in the int16 K-pair panels of the int16 product (HC_PACK_KPAIRS_I16,
 * compiler/ops/integer_ops.c). */
hx_status_t hc_mmi_prepack(hc_graph* g, hc_node* n, const struct hc_target* target, bool* out_done);
/* ConvInteger's or QLinearConv's constant 8-bit weights (constant zero
 * points) as int16 rows (HC_PACK_ROWS_I16), for the product kernel of
 * targets without the VNNI byte path; depthwise and one-position
 * convolutions read theirs in place. */
hx_status_t hc_ci_prepack(hc_graph* g, hc_node* n, const struct hc_target* target, bool* out_done);

/* Adds the packed constant `name` (elem, rank/dims, `data` from
 * hc_graph_alloc_data) of input 1 of n, records hc_node.packed with
 * `layout` and `original` (the unpacked weight), and rewires input 1 to it.
 * *out (may be NULL): the record, for layout-specific fields. */
hx_status_t hc_install_packed(hc_graph* g, hc_node* n, hc_value* original, const char* name, hx_dtype_t elem,
                              int rank, const int64_t* dims, void* data, int layout, struct hc_packed_input** out);
/* The same for input `input` (QLinearMatMul's B is input 3). */
hx_status_t hc_install_packed_at(hc_graph* g, hc_node* n, int input, hc_value* original, const char* name,
                                 hx_dtype_t elem, int rank, const int64_t* dims, void* data, int layout,
                                 struct hc_packed_input** out);
/* The end both panel prepacks share: `data` (from hc_graph_alloc_data) holds
 * `bytes` of panels of input 1 of n in `elem` (dims: [batches, panels, K,
 * pw]); for INT8 the narrowed copy's scales are appended after them. Adds
 * the packed constant, records hc_node.packed (layout HC_PACK_PANELS,
 * `original` the unpacked float weight) and rewires input 1. */
hx_status_t hc_install_panels(hc_graph* g, hc_node* n, hc_value* original, hx_dtype_t elem, uint8_t* data,
                              size_t bytes, const int64_t dims[4]);

/* ---- reduced-precision weights (passes/precision.c) ---------------------- */

/* True when input `input` of n is a packed copy in `layout` (HC_PACK_*). */
static inline bool hc_packed_is(const hc_node* n, int input, int layout) {
  return n->packed && n->packed->input == input && n->packed->layout == layout;
}

/* The element type the kernels read input `input` of n in: a packed copy's
 * elem when it has one (FLOAT16, BFLOAT16, INT8), else the value's dtype. */
static inline hx_dtype_t hc_packed_elem(const hc_node* n, int input) {
  if (n->packed && n->packed->input == input && n->packed->elem != HX_DTYPE_UNDEFINED) return n->packed->elem;
  return n->inputs[input] ? n->inputs[input]->dtype : HX_DTYPE_UNDEFINED;
}

/* How the INT8 per-channel scales of a packed input are stored: from byte
 * `offset` of the constant (-1: it has none), each of type `elem` (FLOAT16
 * or FLOAT32) and equal to the scale times 2^exp (passes/precision.c). */
typedef struct hc_q8_scales {
  int64_t offset;
  hx_dtype_t elem;
  int exp;
} hc_q8_scales;

/* Where input `input`'s packed copy of n keeps its INT8 scales. */
static inline hc_q8_scales hc_packed_q8_scales(const hc_node* n, int input) {
  hc_q8_scales s = {-1, HX_DTYPE_FLOAT32, 0};
  if (hc_packed_elem(n, input) != HX_DTYPE_INT8 || !n->packed || n->packed->input != input) return s;
  s.offset = (int64_t)n->packed->scales_offset;
  if (n->packed->scales_elem == HX_DTYPE_FLOAT16) s.elem = HX_DTYPE_FLOAT16;
  s.exp = n->packed->scales_exp;
  return s;
}

/* Layout of a packed INT8 value: `bytes` bytes of quantised weights, then
 * `count` scales of type `scales_elem` (FLOAT16 or FLOAT32) from the next
 * multiple of 64 bytes. */
static inline uint64_t hc_q8_scales_offset(uint64_t bytes) { return (bytes + 63) / 64 * 64; }
static inline uint64_t hc_q8_total_bytes(uint64_t bytes, int64_t count, hx_dtype_t scales_elem) {
  return hc_q8_scales_offset(bytes) + (uint64_t)count * hx_dtype_size(scales_elem);
}

#endif /* HARNESS_OPS_PREPACK_H */
