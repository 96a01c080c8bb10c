/* Fused element-wise epilogues: evaluating a node's fused ops (hc_node.fused,
 * made by passes/fusion.c) on a value its kernel has just computed.
 *
 * A GEMM or convolution kernel calls hc_epilogue_apply on each output
 * element it stores, giving the element's coordinates as three groups of
 * output dimensions (e.g. for NCHW: [N], [C], [H, W]; for a product:
 * [batch...], [M], [N]). Each extra operand is addressed as
 * sum_g coef[g] * coord[g], which works when every group of the operand is
 * either complete (same extents as the output) or entirely broadcast;
 * passes/fusion.c only fuses operands that hc_epilogue_coefs accepts.
 */
#ifndef HARNESS_CODEGEN_EPILOGUE_H
#define HARNESS_CODEGEN_EPILOGUE_H

#include <stdbool.h>

#include "compiler/codegen/kernel_builder.h"

#define HC_EPILOGUE_MAX_INPUTS 16

/* Coefficients of an operand over the output's dimension groups
 * [0, split[0]), [split[0], split[1]), [split[1], rank): false if some group
 * of the operand (numpy-aligned to the output) is neither complete nor
 * entirely broadcast, or the operand does not broadcast to the output. */
bool hc_epilogue_coefs(const hc_value* out, const hc_value* operand, const int split[2], int64_t coef[3]);

/* Per-kernel state: the node, its extra operands' pointers and coefficients. */
typedef struct hc_epilogue {
  const hc_node* node;
  int count;                                  /* node->num_fused (0 = nothing to apply) */
  LLVMValueRef ptr[HC_EPILOGUE_MAX_INPUTS];   /* by owner input slot - fused_input_base */
  int64_t coef[HC_EPILOGUE_MAX_INPUTS][3];
} hc_epilogue;

/* Prepares the epilogue of node n (pointers are loaded in the current block,
 * which should dominate every use, e.g. the kernel's entry). */
hx_status_t hc_epilogue_begin(hc_kb* kb, const hc_node* n, const int split[2], hc_epilogue* e);
/* Applies the fused ops to `value` (the owner's result, a compute-type
 * scalar) for the output element at coord[0..2] (i64). */
LLVMValueRef hc_epilogue_apply(hc_kb* kb, const hc_epilogue* e, LLVMValueRef value, LLVMValueRef* coord);

/* The same on a vector of `lanes` consecutive output elements along
 * dimension group `g` (coord[g] is lane 0's coordinate). The ops are
 * applied lane by lane with their scalar functions, in straight-line code
 * that LLVM's SLP vectoriser turns back into vector instructions (operand
 * loads of consecutive lanes become vector loads). */
LLVMValueRef hc_epilogue_apply_vec(hc_kb* kb, const hc_epilogue* e, LLVMValueRef value, LLVMValueRef* coord, int g,
                                   unsigned lanes);
/* True when hc_epilogue_apply_vec evaluates e's ops on whole float32
 * vectors along group g (ops built from arithmetic alone, the epilogues'
 * fast Sigmoid among them; operands uniform or contiguous along g), not
 * lane by lane. */
bool hc_epilogue_whole_vectors(const hc_epilogue* e, int g);

/* Output 0 of n shares its bytes with input k, an epilogue operand
 * (memory planning wrote it in place there). */
bool hc_epilogue_output_over_operand(const hc_node* n, int k);
/* The same for any of n's epilogue operands. */
bool hc_epilogue_output_over_any_operand(const hc_node* n);

/* Prefetches, with llvm.prefetch locality `locality`, the cache line of
 * every extra operand that varies along dimension group g (a tensor shaped
 * like the output, such as a residual; not a per-channel vector, which
 * stays in cache) at output coordinates coord[0..2]. For kernels that
 * visit output lines far apart, which the hardware prefetchers do not
 * follow. */
void hc_epilogue_prefetch(hc_kb* kb, const hc_epilogue* e, LLVMValueRef* coord, int g, int locality);

/* True when every fused op of n is cheap and branch-free (Relu, Clip, Add,
 * Mul, HardSwish...), so that hc_epilogue_apply_vec's lane-by-lane code
 * vectorises well. Heavier ops (Erf, Tanh, Sigmoid...) are better applied in
 * a loop over a stored tile, which the loop vectoriser handles. */
bool hc_epilogue_light(const hc_node* n);

/* True when n has heavy fused ops (not hc_epilogue_light) and an extra
 * operand. A kernel applying such ops element by element from a stack tile
 * should do so in one loop that writes the results back into the tile, and
 * store them in a second: the output may be written over the operand (in
 * place), and LLVM does not vectorise a loop that loads the operand and
 * stores where it may alias (WaveNet's Tanh * gate ran one scalar element
 * at a time, 7x slower than its convolution). The tile aliases nothing. */
bool hc_epilogue_heavy_with_operands(const hc_node* n);

/* Whether input `input` of n is an epilogue operand that the kernel could
 * overwrite with its output as far as the operand goes: one of the extra
 * operands [fused_input_base, num_inputs), with output 0's dtype and shape
 * (so the epilogue reads it at the very index it writes), and none of n's
 * other inputs (data, weights, bias, other operands of another shape) reads
 * the same bytes, directly or through a view. The op's kernel plan must
 * still say whether partial results reach the output before the epilogue
 * (hc_op_desc.inplace_input). */
bool hc_epilogue_operand_overwritable(const hc_node* n, int input);

/* Evaluates n's fused ops given the owner's result (NULL for a
 * FusedElementwise node) and the values of the owner's inputs (indexed by
 * input slot; only the extra operands are read). */
LLVMValueRef hc_fused_eval(hc_kb* kb, const hc_node* n, LLVMValueRef result, LLVMValueRef* inputs);

/* Bytes the extra operands add to a kernel's traffic, and the flops of the
 * fused ops per output element (one per op). */
double hc_epilogue_bytes(const hc_node* n);
double hc_epilogue_flops_per_element(const hc_node* n);

#endif /* HARNESS_CODEGEN_EPILOGUE_H */
