/* Control flow (If, Loop, Scan): the machinery shared by the three ops for
 * compiling a subgraph body as part of the node that owns it.
 *
 * Representation. A body is an hc_graph owned by the enclosing graph
 * (hc_graph.children), imported from the node's GRAPH attribute. Its formal
 * inputs (g->inputs) are INPUT values the owning op binds; names it does not
 * define are captures (g->captures), each standing for one implicit input of
 * the owning node (hc_node.num_captures), so every pass that walks inputs
 * sees what the node reads.
 *
 * Compilation, at the owning node's shape inference (cf_infer_body):
 *  - the owning op binds the formal inputs' types and shapes, the captures
 *    take their outer values' (constants included, so the body folds);
 *  - the body runs shape inference (with constant folding), Identity removal
 *    and DCE; constants it still reads are hoisted into the enclosing graph
 *    as implicit inputs (so the model's one weights blob holds them);
 *  - memory planning (cf_plan_body) places the body's intermediates in a
 *    region of its own with the ordinary planner; body outputs stay live to
 *    the end of the body. Formal inputs and captures get no bytes there: the
 *    owning op gives formal inputs slots of its workspace (or its own
 *    outputs) and captures keep the storage of their outer values.
 *
 * Lowering (cf_lower_body): the region is placed at an offset of the owning
 * node's workspace, every body node is lowered with the ordinary op lowering
 * into *internal* kernels (a lowering context of their own, so they never
 * enter the artifact's kernel table), and the owning op's single kernel
 * calls them as functions with the same bases and their full task range. */
#ifndef HARNESS_OPS_CONTROL_FLOW_H
#define HARNESS_OPS_CONTROL_FLOW_H

#include "compiler/ops/op.h"

/* Kernels of one lowered body, in order. */
typedef struct cf_kernels {
  hc_kernel_rec* k;
  int n;
  double flops, bytes;
} cf_kernels;

/* Sets every capture of `body` to the type, shape and (for constants) data
 * of the outer value it stands for (an input of `owner`). */
void cf_bind_captures(const hc_node* owner, hc_graph* body);

/* Compiles the body of node n of graph g as described above, up to memory
 * planning. Formal inputs must be bound first. Errors name n and the body's
 * attribute `attr`. */
hx_status_t cf_infer_body(hc_graph* g, hc_node* n, hc_graph* body, const char* attr);

/* Plans the intermediates of an inferred body; *out_bytes is the size of the
 * region they need. */
hx_status_t cf_plan_body(hc_graph* body, uint64_t* out_bytes);

/* Storage root of v within its body (views followed), before any binding. */
const hc_value* cf_root(const hc_value* v);

/* Prepares body for lowering inside node n's kernel: shifts its planned
 * intermediates (and nested workspaces) to byte `region_offset` of n's
 * workspace and points each capture at its outer value. cf_unbind_body
 * undoes it. */
void cf_bind_body(const hc_node* n, hc_graph* body, uint64_t region_offset);
void cf_unbind_body(const hc_node* n, hc_graph* body, uint64_t region_offset);

/* Gives formal input v (or any body value without planned bytes) storage at
 * byte `offset` of node n's workspace, or makes it share the storage of
 * `same_as` (when not NULL). */
void cf_bind_value(const hc_node* n, hc_value* v, uint64_t offset, const hc_value* same_as);

/* Lowers every node of a bound body into internal kernels. */
hx_status_t cf_lower_body(hc_lower_ctx* lc, hc_graph* body, cf_kernels* out);
/* Emits calls of the kernels, in order, each over its whole task range. */
void cf_call_kernels(hc_kb* kb, const cf_kernels* ks);
void cf_kernels_free(cf_kernels* ks);

/* memcpy of a compile-time byte count (nothing for 0). */
void cf_copy(hc_kb* kb, LLVMValueRef dst, LLVMValueRef src, uint64_t bytes);
/* Pointer `p` advanced by an i64 byte offset. */
LLVMValueRef cf_offset(hc_kb* kb, LLVMValueRef p, LLVMValueRef bytes);
/* Copies slice `index` (i64 value) along `axis` of a tensor of shape dims
 * (element size esize) at `whole` to/from the dense slice buffer `part`:
 * part <- whole[.., index, ..] when gather, whole[.., index, ..] <- part
 * otherwise. */
void cf_copy_slice(hc_kb* kb, LLVMValueRef whole, int rank, const int64_t* dims, int axis, size_t esize,
                   LLVMValueRef index, LLVMValueRef part, bool gather);

/* 64-byte rounding used for workspace slots. */
uint64_t cf_align(uint64_t x);

#endif /* HARNESS_OPS_CONTROL_FLOW_H */
