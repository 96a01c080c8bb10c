/* Kernel builder: the vocabulary op lowerings use to emit LLVM IR.
 *
 * Every kernel is an LLVM function
 *     void @k(ptr %bases, i64 %begin, i64 %end)
 * computing tasks [begin, end) (see runtime/include/harness/artifact_abi.h).
 * A lowering opens a kernel with hc_kb_begin, gets tensor pointers with
 * hc_kb_ptr, writes loops with hc_loop_begin/hc_loop_end, loads and stores
 * elements in their *compute type* (float for float16/bfloat16, i1 for bool,
 * the storage type otherwise) and closes with hc_kb_end, which records the
 * kernel for the artifact's schedule.
 *
 * Kernels of the same shape share their code: the function a lowering
 * builds is a *body*
 *     void @k.body(ptr %bases, i64 %begin, i64 %end, ptr %offsets)
 * that reads every tensor and workspace byte offset from %offsets (a
 * constant table per kernel) instead of having it as an immediate, and the
 * kernel @k itself is a wrapper passing its own table. Bodies of identical
 * kernels (same shapes, ops and fused epilogue; different tensors) are then
 * identical functions, which hc_kb_share_bodies merges before optimisation;
 * a body used by one kernel only is inlined back into its wrapper, where the
 * table loads fold to the immediates they would have been.
 *
 * Loops are emitted in canonical form (preheader, header phi, single latch)
 * so that LLVM's loop vectoriser and unroller can work on them for the
 * target chosen with --target/--mcpu.
 */
#ifndef HARNESS_CODEGEN_KERNEL_BUILDER_H
#define HARNESS_CODEGEN_KERNEL_BUILDER_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include <stdbool.h>

#include "ir/graph.h"

struct hc_target;

/* A kernel emitted into the module, in schedule order. */
typedef struct hc_kernel_rec {
  const char* name;      /* node name (+ suffix) */
  const char* symbol;    /* LLVM function name */
  LLVMValueRef fn;       /* the kernel (wrapper) function the schedule calls */
  LLVMValueRef body;     /* the body it calls; invalid after hc_kb_share_bodies */
  int64_t tasks;
  double flops, bytes;
  int stage, group;
  /* > 0: the kernel runs in lane sublane - 1 of a parallel group of its
   * node's own kernels (consecutive ones with sublanes; the node must be in
   * no schedule group): for a lowering whose kernels form independent
   * chains, e.g. the Winograd convolution's blocks of tiles
   * (conv_winograd.c). 0: the node's lane. */
  int sublane;
  const hc_node* node;
  const uint64_t* offset_values; /* its table's entries (lc's arena), for hc_kb_repeat */
  int num_offsets;
} hc_kernel_rec;

/* State shared by all kernels of one module. */
typedef struct hc_lower_ctx {
  LLVMContextRef llctx;
  LLVMModuleRef mod;
  const struct hc_target* target; /* vector width and features; never NULL */
  hc_graph* graph;
  hc_kernel_rec* kernels;
  int num_kernels, cap_kernels;
  int symbol_counter;
  hc_arena* arena;      /* names of kernels */
  const char* symbol_prefix; /* prepended to kernel symbols (the variant tag of a fat artifact); NULL = none */
  /* Bytes of constant data the graph's nodes read (hc_ukr_weights_cold),
   * counted on first use: weight_bytes_known says whether it has been. */
  uint64_t weight_bytes;
  bool weight_bytes_known;
} hc_lower_ctx;

/* Builder for one kernel function. */
typedef struct hc_kb {
  hc_lower_ctx* lc;
  const hc_node* node;
  LLVMBuilderRef b;
  LLVMValueRef fn;     /* the body function being built */
  LLVMValueRef bases;  /* ptr argument */
  LLVMValueRef offsets; /* ptr argument: the kernel's table of byte offsets */
  uint64_t* offset_values; /* the table's entries so far (lc's arena) */
  int num_offsets, cap_offsets;
  int last_param;          /* table entry of the latest hc_kb_param (-1: none) */
  LLVMValueRef begin;  /* i64 first task */
  LLVMValueRef end;    /* i64 one past the last task */
  LLVMBasicBlockRef entry;
  int64_t tasks;
  /* When > 0, hc_kb_const and hc_kb_const_i return vectors of this many
   * lanes (scalar op lowerings evaluated on whole vectors, see
   * hc_epilogue_apply_vec). */
  unsigned const_lanes;
  LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64, t_f16, t_bf16, t_f32, t_f64, t_ptr;
} hc_kb;

/* A counted loop: for (iv = lo; iv < hi; iv += step). */
typedef struct hc_loop {
  LLVMBasicBlockRef header, body, exit;
  LLVMValueRef iv, step, hi;
} hc_loop;

/* Opens kernel `suffix` (may be NULL) of `node` with `tasks` tasks. */
hx_status_t hc_kb_begin(hc_lower_ctx* lc, const hc_node* node, const char* suffix, int64_t tasks, hc_kb* kb);
/* Closes the kernel (ret void), emits its wrapper and offset table, and
 * records it with its cost estimate. */
void hc_kb_end(hc_kb* kb, double flops, double bytes);
/* Merges identical kernel bodies of the module (LLVM's constmerge and
 * mergefunc) and marks each body left with a single caller always-inline.
 * Run once, after every kernel is emitted and before optimisation. */
hx_status_t hc_kb_share_bodies(hc_lower_ctx* lc, LLVMTargetMachineRef tm);
/* Records one more kernel that runs the body of the earlier kernel `proto`
 * (an index into lc->kernels) with proto's table, its entries slots[i] set
 * to values[i] (i < nset; a negative slot is skipped): its name, node,
 * tasks, cost and sublane are proto's. For kernels that differ only in
 * parameters (hc_kb_param; the Winograd convolution's blocks of tiles), so
 * that their bodies are emitted and compiled once, not built again and
 * merged. */
hx_status_t hc_kb_repeat(hc_lower_ctx* lc, int proto, int nset, const int* slots, const int64_t* values);
/* The lane the schedule gives kernel r in its group (hc_kernel_rec.sublane,
 * else its node's). */
int hc_kernel_lane(const hc_kernel_rec* r);

/* Pointer to the first byte of v at run time (arena, weights or I/O buffer). */
LLVMValueRef hc_kb_ptr(hc_kb* kb, const hc_value* v);

/* The node's scratch memory in the arena (see hc_op_desc.workspace). */
LLVMValueRef hc_kb_workspace(hc_kb* kb);

/* The i64 constant x read from the kernel's table, like a tensor offset:
 * for a parameter that differs between kernels of otherwise one shape (the
 * first tile of a block of tiles), so that their bodies stay identical and
 * are shared; folds back to the immediate where the body is inlined. */
LLVMValueRef hc_kb_param(hc_kb* kb, int64_t x);
/* The same for an array of n constants (indexed at run time): a pointer to
 * them in the kernel's table, instead of a table global per kernel that
 * would tell otherwise identical bodies apart. NULL when out of memory. */
LLVMValueRef hc_kb_param_array(hc_kb* kb, const int64_t* v, int64_t n);

/* Constants. */
LLVMValueRef hc_kb_i64(hc_kb* kb, int64_t x);
LLVMValueRef hc_kb_i32(hc_kb* kb, int32_t x);
/* A constant in the compute type of dtype (ints are converted, floats exact). */
LLVMValueRef hc_kb_const(hc_kb* kb, hx_dtype_t dtype, double x);
LLVMValueRef hc_kb_const_i(hc_kb* kb, hx_dtype_t dtype, int64_t x);

/* Types: storage (in memory) and compute (in registers) of a dtype. */
LLVMTypeRef hc_kb_storage_type(hc_kb* kb, hx_dtype_t dtype);
LLVMTypeRef hc_kb_compute_type(hc_kb* kb, hx_dtype_t dtype);
bool hc_dtype_is_float(hx_dtype_t dtype);  /* float16/bfloat16/float32/float64 */
bool hc_dtype_is_signed(hx_dtype_t dtype); /* signed integers */
bool hc_dtype_is_integer(hx_dtype_t dtype);/* integers excluding bool */

/* Loads element `index` (i64, in elements) of a dtype array at ptr, as the
 * compute type; stores a compute-type value back. */
LLVMValueRef hc_kb_load(hc_kb* kb, hx_dtype_t dtype, LLVMValueRef ptr, LLVMValueRef index);
void hc_kb_store(hc_kb* kb, hx_dtype_t dtype, LLVMValueRef ptr, LLVMValueRef index, LLVMValueRef value);
/* bfloat16 bits (i16, or a vector of i16) <-> float32, with integer
 * operations (exact widening; round-to-nearest-even narrowing). */
LLVMValueRef hc_kb_bf16_to_f32(hc_kb* kb, LLVMValueRef raw_i16);
LLVMValueRef hc_kb_f32_to_bf16(hc_kb* kb, LLVMValueRef f32);
/* Marks a float instruction reassociable so LLVM may split a reduction into
 * vector lanes; returns v. */
LLVMValueRef hc_kb_reassoc(LLVMValueRef v);
/* Broadcasts a scalar into every lane of an n-lane vector. */
LLVMValueRef hc_kb_splat(hc_kb* kb, LLVMValueRef s, unsigned n);
/* Shuffle of vectors a and b (one type) by the constant lanes idx[0..n)
 * (a's lanes first, then b's); n <= 128. */
LLVMValueRef hc_kb_shuffle(hc_kb* kb, LLVMValueRef a, LLVMValueRef b, const int* idx, unsigned n);
/* Vectorisable float32 exp (about 1 ulp; see kernel_builder.c). */
LLVMValueRef hc_kb_exp_f32(hc_kb* kb, LLVMValueRef x);
/* Element address (typed GEP). */
LLVMValueRef hc_kb_gep(hc_kb* kb, hx_dtype_t dtype, LLVMValueRef ptr, LLVMValueRef index);

/* Converts a compute-type value between dtypes with ONNX Cast semantics
 * (float->int truncates toward zero, x->bool is x != 0, bool->x is 0/1). */
LLVMValueRef hc_kb_convert(hc_kb* kb, LLVMValueRef v, hx_dtype_t from, hx_dtype_t to);

/* Arithmetic on compute-type values of dtype (chooses fadd/add, sdiv/udiv...). */
LLVMValueRef hc_kb_add(hc_kb* kb, hx_dtype_t dt, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef hc_kb_sub(hc_kb* kb, hx_dtype_t dt, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef hc_kb_mul(hc_kb* kb, hx_dtype_t dt, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef hc_kb_div(hc_kb* kb, hx_dtype_t dt, LLVMValueRef a, LLVMValueRef b);
/* a*b+c; fused (llvm.fmuladd) for floats. */
LLVMValueRef hc_kb_fma(hc_kb* kb, hx_dtype_t dt, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c);
/* min/max: NaN-propagating for floats (as numpy and ONNX Runtime). */
LLVMValueRef hc_kb_min(hc_kb* kb, hx_dtype_t dt, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef hc_kb_max(hc_kb* kb, hx_dtype_t dt, LLVMValueRef a, LLVMValueRef b);
/* Comparisons returning i1: pred is one of "eq","ne","lt","le","gt","ge". */
LLVMValueRef hc_kb_cmp(hc_kb* kb, hx_dtype_t dt, const char* pred, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef hc_kb_select(hc_kb* kb, LLVMValueRef cond, LLVMValueRef a, LLVMValueRef b);

/* Calls an overloaded LLVM intrinsic such as "llvm.exp" on values of `type`. */
LLVMValueRef hc_kb_intrinsic(hc_kb* kb, const char* name, LLVMTypeRef type, LLVMValueRef* args, unsigned nargs);
/* llvm.prefetch of the data line at ptr, for reading, with locality
 * 0..3 (3 = keep in L1, 2 = L2). */
void hc_kb_prefetch(hc_kb* kb, LLVMValueRef ptr, int locality);
/* Prefetches for writing (prefetchw on x86: the line arrives owned, so the
 * stores that follow need no request for ownership of their own) every
 * 64-byte line of `count` elements of type dt from ptr[index]: a row an
 * output kernel stores next. */
void hc_kb_prefetch_write_span(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef index, int64_t count,
                               int locality);
/* Calls a C math function (e.g. "erff") declared on demand: all params and
 * the result have type `type`. */
LLVMValueRef hc_kb_libm(hc_kb* kb, const char* name, LLVMTypeRef type, LLVMValueRef* args, unsigned nargs);
/* Float math on compute-type values of a float dtype: picks the intrinsic or
 * libm function of the right width. name is the float64 C name ("exp",
 * "log", "sqrt", "tanh", "erf", "pow", ...). */
LLVMValueRef hc_kb_math(hc_kb* kb, hx_dtype_t dt, const char* name, LLVMValueRef* args, unsigned nargs);

/* i64 helpers. */
LLVMValueRef hc_kb_iadd(hc_kb* kb, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef hc_kb_imul(hc_kb* kb, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef hc_kb_imin(hc_kb* kb, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef hc_kb_imax(hc_kb* kb, LLVMValueRef a, LLVMValueRef b);

/* Loops. hc_loop_begin emits the header and positions the builder in the
 * body; returns the induction variable. Nest freely; close in reverse order. */
LLVMValueRef hc_loop_begin(hc_kb* kb, hc_loop* loop, LLVMValueRef lo, LLVMValueRef hi, const char* name);
LLVMValueRef hc_loop_begin_step(hc_kb* kb, hc_loop* loop, LLVMValueRef lo, LLVMValueRef hi, int64_t step,
                                const char* name);
void hc_loop_end(hc_kb* kb, hc_loop* loop);
/* Makes the loop advance by `step`, an i64 computed in its body (before
 * hc_loop_end), instead of its constant step: runs of varying length. */
void hc_loop_step_by(hc_loop* loop, LLVMValueRef step);
/* hc_loop_end for a loop LLVM must not unroll: one whose body is large
 * and emitted for every tile shape of a kernel (an epilogue's exp). */
void hc_loop_end_rolled(hc_kb* kb, hc_loop* loop);
/* hc_loop_end for a loop over a row of `trip` elements (a constant):
 * rows shorter than HC_ROW_ROLLED stay loops, because LLVM unrolls short
 * rows fully before its vectoriser runs and leaves scalar code. Measured
 * with bench/kernels/row_ops.py: Softmax rows of 16-64 elements 2.7-5.8x
 * faster, LayerNormalization rows of 16-96 2.7-4.8x; Softmax rows of
 * 96-127 about 16% slower than LLVM's default, which is kept from 128 on. */
#define HC_ROW_ROLLED 128
void hc_loop_end_row(hc_kb* kb, hc_loop* loop, int64_t trip);
/* The task loop over [begin, end). */
LLVMValueRef hc_kb_task_loop_begin(hc_kb* kb, hc_loop* loop);

/* if (cond) { ... }: hc_if_begin positions the builder in the then-block;
 * hc_if_end joins. */
typedef struct hc_if {
  LLVMBasicBlockRef then_bb, merge_bb;
} hc_if;
void hc_if_begin(hc_kb* kb, hc_if* s, LLVMValueRef cond);
void hc_if_end(hc_kb* kb, hc_if* s);

/* A stack slot in the entry block (accumulators that survive a loop). */
LLVMValueRef hc_kb_alloca(hc_kb* kb, LLVMTypeRef type, const char* name);

/* memcpy of `bytes` (i64 value) between two pointers. */
void hc_kb_memcpy(hc_kb* kb, LLVMValueRef dst, LLVMValueRef src, LLVMValueRef bytes);
void hc_kb_memset(hc_kb* kb, LLVMValueRef dst, int byte, LLVMValueRef bytes);
/* The constant <lanes x i1> mask whose first `valid` lanes are set. */
LLVMValueRef hc_kb_prefix_mask(hc_kb* kb, unsigned lanes, unsigned valid);
/* Loads a vector of type vt from ptr (alignment `align` bytes) reading only
 * the lanes set in `mask` (llvm.masked.load; the others are zero and their
 * addresses are never touched, so they may lie outside a buffer). */
LLVMValueRef hc_kb_masked_load(hc_kb* kb, LLVMTypeRef vt, LLVMValueRef ptr, unsigned align, LLVMValueRef mask);
/* The same, with the lanes not set in `mask` taken from `passthru`. */
LLVMValueRef hc_kb_masked_load_or(hc_kb* kb, LLVMTypeRef vt, LLVMValueRef ptr, unsigned align, LLVMValueRef mask,
                                  LLVMValueRef passthru);
/* Stores the lanes of vector v set in `mask` at ptr (llvm.masked.store). */
void hc_kb_masked_store(hc_kb* kb, LLVMValueRef v, LLVMValueRef ptr, unsigned align, LLVMValueRef mask);
/* Stores the first `valid` lanes of vector v at ptr (elements of `align`
 * bytes). Without AVX-512 as plain stores of power-of-two pieces (5 lanes:
 * 4 + 1): AVX2's masked store (vmaskmovps) takes 16-22 cycles on AMD Zen 3
 * (bench/kernels/maskstore_cost.c). With AVX-512, one masked store. */
void hc_kb_prefix_store(hc_kb* kb, LLVMValueRef v, LLVMValueRef ptr, unsigned align, unsigned valid);
/* Whether hc_kb_prefix_store writes plain pieces (no AVX-512), so that a
 * kernel can prefer layouts whose partial vectors it stores that way. */
bool hc_kb_plain_prefix_stores(const hc_kb* kb);

/* Row-major strides (in elements) of a shape. */
void hc_strides(int rank, const int64_t* dims, int64_t* out_strides);

/* A private, constant, unnamed_addr global of the module named `name` and
 * initialised with `init` (a constant array: a lookup table, a blob of raw
 * bytes), aligned to `align` bytes (0: the type's own alignment). Returns
 * its address. */
LLVMValueRef hc_kb_const_table(hc_lower_ctx* lc, LLVMValueRef init, const char* name, unsigned align);

/* Emits a one-task kernel (name suffix "zero") that writes zero bytes over
 * all of value v: the whole lowering of node n when its output does not
 * depend on the inputs (e.g. every sample falls outside an empty input). */
hx_status_t hc_kb_emit_zero(hc_lower_ctx* lc, const hc_node* n, const hc_value* v);

#endif /* HARNESS_CODEGEN_KERNEL_BUILDER_H */
