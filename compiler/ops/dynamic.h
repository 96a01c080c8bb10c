/* Value-dependent output shapes and model-declared shapes (issue 3).
 *
 * An op whose output size depends on values (NonZero, Unique, Compress,
 * NonMaxSuppression, TopK with a run-time k) gives its output a static
 * *upper bound* shape in infer() and marks it dynamic (hc_dyn_set). Memory
 * planning reserves the upper bound, plus an int64[rank] "dims slot" in the
 * arena that lives for the whole run; the op's kernel writes the data dense
 * in the actual shape at the start of the buffer and the actual dims into
 * the slot (hc_dyn_store_dims). The artifact lists dynamic graph outputs
 * with their slot (hx_abi_dynamic_output, ABI 1.2) and the runtime reports
 * the actual shape through hx_session_output_shape.
 *
 * A dynamic value may be a graph output, or feed Identity/Dropout and
 * element-wise ops (Cast, Relu, Add with a one-element operand...) whose
 * output then shares its slot: they process the whole upper bound (the tail
 * holds stale bytes, harmless for element-wise work) and their result is
 * dense in the same actual shape. Shape inference rejects every other
 * consumer, naming it (hc_dyn_check_node).
 *
 * Declared shapes: the importer records the static shapes a model declares
 * for graph outputs and value_info (hc_value.declared_*). Ops whose output
 * shape comes from a float input computed or fed at run time (Resize's
 * scales, OneHot's depth, Range's bounds) take the declared shape instead of
 * refusing, and read the run-time values in their kernels. */
#ifndef HARNESS_OPS_DYNAMIC_H
#define HARNESS_OPS_DYNAMIC_H

#include "compiler/ops/op.h"

/* Marks output v as having a value-dependent shape (v's dims are the upper
 * bound) or a static one. */
void hc_dyn_set(hc_value* v, bool dynamic);
/* The value owning v's dims slot (v itself unless v shares a slot). */
const hc_value* hc_dyn_owner(const hc_value* v);
/* Shape-inference hook, run after a node's infer(): refuses a node that
 * reads a dynamic value it cannot consume (naming node, input and producer)
 * and makes the output of an accepted consumer dynamic, sharing the slot. */
hx_status_t hc_dyn_check_node(hc_node* n);

/* Copies v's declared static shape into rank/dims; false if none. */
bool hc_declared_shape(const hc_value* v, int* rank, int64_t* dims);

/* ---- kernel helpers --------------------------------------------------------- */

/* Opens `if (begin == 0) { ... }`: code that exactly one task range of a
 * kernel runs (the range holding task 0; a kernel with no tasks is still
 * called once with begin = end = 0). Close with hc_if_end. */
void hc_dyn_first_begin(hc_kb* kb, hc_if* s);
/* Stores the actual dims (rank i64 values) of v into its dims slot when v is
 * dynamic; does nothing for a static v. */
void hc_dyn_store_dims(hc_kb* kb, const hc_value* v, LLVMValueRef const* dims);

/* Emits a stable merge sort of the int64 array perm[0..n) (n an i64 value)
 * using tmp[0..n) as scratch. less(kb, ctx, a, b) emits an i1 "a sorts
 * before b" for two elements of perm (it may emit loops); equal elements
 * keep their order. O(n log n) comparisons, no recursion. */
typedef LLVMValueRef (*hc_dyn_less_fn)(hc_kb* kb, void* ctx, LLVMValueRef a, LLVMValueRef b);
void hc_dyn_sort(hc_kb* kb, LLVMValueRef perm, LLVMValueRef tmp, LLVMValueRef n, hc_dyn_less_fn less, void* ctx);

/* i64 pointer arithmetic helpers: &p[i] for an int64 array, load, store. */
LLVMValueRef hc_dyn_i64_load(hc_kb* kb, LLVMValueRef p, LLVMValueRef i);
void hc_dyn_i64_store(hc_kb* kb, LLVMValueRef p, LLVMValueRef i, LLVMValueRef v);

/* A byte offset into the node's workspace as a pointer. */
LLVMValueRef hc_dyn_workspace_at(hc_kb* kb, int64_t byte_offset);

/* The standard error for an input that decides an output shape, is not a
 * compile-time constant, and whose output has no declared shape. */
hx_status_t hc_dyn_need_declared(const hc_node* n, int input, const char* what);

#endif /* HARNESS_OPS_DYNAMIC_H */
