/* Operator descriptors: everything Harness knows about one ONNX operator.
 *
 * One descriptor per op, defined in the file of its family
 * (compiler/ops/<family>.c) and listed once in compiler/ops/op_list.h.
 * A descriptor states the op's opset range, the attributes it accepts, how
 * to verify a node and infer its output types and shapes, and how to lower
 * it to LLVM IR. Adding an op touches its family file, op_list.h and a test.
 *
 * Three kinds of lowering:
 *  - `lower`: the op emits its own kernel(s) through the kernel builder;
 *  - `scalar`: an element-wise op gives a per-element function and the
 *    shared element-wise generator (compiler/codegen/elementwise.c) emits the
 *    broadcasting loop nest; fusion chains several scalar functions in one
 *    kernel;
 *  - HC_OP_VIEW: the output is the input's bytes under another shape
 *    (Reshape, Squeeze...); no kernel, the memory planner aliases them.
 */
#ifndef HARNESS_OPS_OP_H
#define HARNESS_OPS_OP_H

#include <llvm-c/Core.h>

#include "compiler/codegen/kernel_builder.h"
#include "ir/graph.h"

enum {
  HC_OP_VIEW = 1u << 0,        /* output 0 aliases input 0 (same bytes, new shape) */
  HC_OP_ELEMENTWISE = 1u << 1, /* output[i] depends only on inputs[i] (after broadcast) */
  HC_OP_NO_FOLD = 1u << 2,     /* never constant-fold (random ops) */
  /* The kernel may write output 0 over an input of the same element count
   * and element size: each output element is computed from the elements at
   * the same index only, each read before that element is stored. Memory
   * planning then lets the output reuse the input's bytes when that input is
   * dead afterwards. Ops lowered by the shared element-wise generator
   * (HC_OP_ELEMENTWISE with `scalar`, no `lower`) have this property without
   * the flag; set it on an op with its own `lower` only where it is
   * provably true of every kernel it emits. */
  HC_OP_INPLACE_OK = 1u << 3,
};

typedef struct hc_op_desc {
  const char* name;        /* ONNX op_type */
  const char* domain;      /* "" for ai.onnx */
  int since_opset;         /* oldest opset whose semantics are implemented */
  int max_opset;           /* newest opset whose semantics are implemented */
  const char* const* attrs;/* accepted attribute names, NULL-terminated (NULL = none) */
  unsigned flags;          /* HC_OP_* */
  /* Checks the node (input count, dtypes, attribute values) and sets the
   * dtype and shape of every output. Constant inputs are available through
   * hc_value_const_*. Must fail with hc_node_error naming what was expected. */
  hx_status_t (*infer)(hc_graph* g, hc_node* n);
  /* Emits the node's kernel(s). NULL for views and scalar ops. */
  hx_status_t (*lower)(hc_lower_ctx* lc, hc_node* n);
  /* Element-wise ops: output element from input elements, all in compute
   * types (see kernel_builder.h). `in` has num_inputs entries. */
  LLVMValueRef (*scalar)(hc_kb* kb, const hc_node* n, LLVMValueRef* in);
  /* Optional: bytes of scratch memory the node's kernels need while they
   * run (packing buffers...). Memory planning places it in the arena; the
   * kernels reach it with hc_kb_workspace. */
  uint64_t (*workspace)(const hc_node* n);
  /* Optional, for ops with their own `lower` and a fused epilogue: whether
   * the kernels node n is lowered to for `target` may write output 0 over
   * input `input`, one of the epilogue's extra operands (a residual) with
   * the output's shape and dtype. True only where it holds of the kernel
   * plan lowering will pick for that target: nothing (partial sums, packed
   * copies) is written to the output before the epilogue has read the
   * operand element at the same index, each output element is written by
   * the task that read that element, and no other read of the node (its
   * data inputs, workspace packing) touches the operand's bytes. Memory
   * planning records the answers in hc_node.inplace_inputs. */
  bool (*inplace_input)(const struct hc_target* target, const hc_node* n, int input);
  /* Optional, for ops with their own `lower` and a `scalar` function that
   * is right only for some nodes (not flagged HC_OP_ELEMENTWISE): whether
   * node n is element-wise as written (each output element from the inputs'
   * elements at the same index after numpy broadcasting), so that fusion
   * may evaluate it with `scalar` inside a FusedElementwise chain. */
  bool (*elementwise_node)(const hc_node* n);
} hc_op_desc;

/* Finds the descriptor for (domain, op_type); NULL if Harness has none.
 * The opset range is checked separately by hc_op_check_opset. */
const hc_op_desc* hc_op_find(const char* domain, const char* op_type);
/* Checks that the node's opset is within the descriptor's range and that
 * every attribute is one the descriptor accepts. */
hx_status_t hc_op_check_node(const hc_node* n);
/* Emits the node's kernels: op->lower, or the shared element-wise generator
 * for scalar ops. Views emit nothing. */
hx_status_t hc_op_lower(hc_lower_ctx* lc, hc_node* n);
/* Whether a Sigmoid fused into owner's epilogue takes the fast sigmoid
 * (float32, in a convolution's or product's epilogue), which is built
 * from arithmetic alone and so is valid on whole vectors too. */
bool hc_sigmoid_fast_in(const hc_node* owner, const hc_node* sigmoid);
/* Iterates the registry (for docs and `harnessc check`). */
int hc_op_count(void);
const hc_op_desc* hc_op_at(int i);

/* ---- helpers for descriptor implementations ----------------------------- */

/* Attribute accessors with defaults. */
int64_t hc_attr_int(const hc_node* n, const char* name, int64_t dflt);
float hc_attr_float(const hc_node* n, const char* name, float dflt);
const char* hc_attr_string(const hc_node* n, const char* name, const char* dflt);
/* Copies an INTS attribute into out (capacity cap); returns count, or -1 if
 * absent. Fails (returns -2) if it has more than cap entries. */
int hc_attr_ints(const hc_node* n, const char* name, int64_t* out, int cap);

/* Input i if present (NULL if omitted or out of range). */
hc_value* hc_input(const hc_node* n, int i);
/* Requires between min and max inputs, the required ones present. */
hx_status_t hc_check_arity(const hc_node* n, int min_inputs, int max_inputs, int min_outputs, int max_outputs);
/* Requires input i to be a float type / one of a dtype mask. */
hx_status_t hc_check_dtype(const hc_node* n, int i, uint64_t allowed_mask);
#define HC_DT(x) (1ull << (x))
#define HC_DT_FLOATS (HC_DT(HX_DTYPE_FLOAT32) | HC_DT(HX_DTYPE_FLOAT64) | HC_DT(HX_DTYPE_FLOAT16) | HC_DT(HX_DTYPE_BFLOAT16))
#define HC_DT_SINTS (HC_DT(HX_DTYPE_INT8) | HC_DT(HX_DTYPE_INT16) | HC_DT(HX_DTYPE_INT32) | HC_DT(HX_DTYPE_INT64))
#define HC_DT_UINTS (HC_DT(HX_DTYPE_UINT8) | HC_DT(HX_DTYPE_UINT16) | HC_DT(HX_DTYPE_UINT32) | HC_DT(HX_DTYPE_UINT64))
#define HC_DT_INTS (HC_DT_SINTS | HC_DT_UINTS)
#define HC_DT_NUMERIC (HC_DT_FLOATS | HC_DT_INTS)
#define HC_DT_ALL (HC_DT_NUMERIC | HC_DT(HX_DTYPE_BOOL))
/* Requires inputs i and j to have the same dtype. */
hx_status_t hc_check_same_dtype(const hc_node* n, int i, int j);

/* Numpy-style multidirectional broadcast of input shapes; fails naming the
 * node if they are incompatible. */
hx_status_t hc_broadcast_shapes(const hc_node* n, int count, hc_value* const* values, int* out_rank,
                                int64_t* out_dims);
/* Normalises an axis in [-rank, rank) (or [-rank-1, rank] with allow_end). */
hx_status_t hc_norm_axis(const hc_node* n, int64_t axis, int rank, int64_t* out);
/* Reads a 1-D integer input (constant) into out; fails naming the node when
 * it is not a compile-time constant, suggesting --constant. Returns count. */
hx_status_t hc_const_ints(const hc_node* n, int input, int64_t* out, int cap, int* out_count);
/* Sets output i's dtype and shape. */
void hc_set_output(hc_node* n, int i, hx_dtype_t dtype, int rank, const int64_t* dims);
/* Makes v (an output whose dtype and shape are set) a compile-time
 * constant, as ops known at shape inference do (Constant, Shape, Size...):
 * allocates its data in g's arena and returns it for the caller to fill;
 * NULL (v unchanged) when out of memory. */
void* hc_make_const_value(hc_graph* g, hc_value* v);

/* Lowers a node through the shared element-wise generator using op->scalar. */
hx_status_t hc_lower_elementwise(hc_lower_ctx* lc, hc_node* n);

#endif /* HARNESS_OPS_OP_H */
