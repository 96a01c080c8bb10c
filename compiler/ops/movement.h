/* Code generation shared by the data-movement ops (Transpose, Concat, Split,
 * Slice, Pad, Gather, Resize), implemented in movement.c.
 *
 * These ops move elements without looking at them, so they copy bytes with
 * an integer type of the element's width: one code path serves every dtype. */
#ifndef HARNESS_OPS_MOVEMENT_H
#define HARNESS_OPS_MOVEMENT_H

#include "compiler/ops/op.h"

/* The integer type moving one element of esize bytes. */
LLVMTypeRef hc_mv_elem_type(hc_kb* kb, size_t esize);
/* Units (outer iterations of unit_bytes each) one task should take. */
int64_t hc_mv_units_per_task(int64_t unit_bytes);
/* Task count for `units` outer iterations grouped `upt` at a time. */
int64_t hc_mv_tasks(int64_t units, int64_t upt);
/* Opens the loop over the units of the current task range:
 * [begin*upt, min(end*upt, units)). Returns the unit index. */
LLVMValueRef hc_mv_units_begin(hc_kb* kb, hc_loop* loop, int64_t units, int64_t upt);
/* Splits a row-major flat index over dims[0..count) into coordinates. */
void hc_mv_unflatten(hc_kb* kb, LLVMValueRef flat, int count, const int64_t* dims, LLVMValueRef* out);
/* Element address: ptr + index * sizeof(et). */
LLVMValueRef hc_mv_gep(hc_kb* kb, LLVMTypeRef et, LLVMValueRef ptr, LLVMValueRef index);
/* Marks a kernel's input reads (out = false) and output writes (out = true)
 * as never overlapping (scoped noalias metadata), so LLVM vectorises loops
 * with data-dependent addresses without run-time overlap checks. */
void hc_mv_mark(hc_kb* kb, LLVMValueRef inst, bool out);
/* Marked element load of an input / store to the output. */
LLVMValueRef hc_mv_load_in(hc_kb* kb, LLVMTypeRef et, LLVMValueRef ptr, LLVMValueRef index);
void hc_mv_store_out(hc_kb* kb, LLVMTypeRef et, LLVMValueRef ptr, LLVMValueRef index, LLVMValueRef v);
/* Index semantics shared by the ops that read indices at run time (Gather,
 * GatherElements, GatherND, Scatter*, OneHot): a negative i64 index i
 * counts from the end, i + dim. hc_mv_wrap_index returns the wrapped index
 * and, when valid is not NULL, sets *valid to whether it lies in [0, dim)
 * (one unsigned compare covers both ends). */
LLVMValueRef hc_mv_wrap_index(hc_kb* kb, LLVMValueRef i, LLVMValueRef dim, LLVMValueRef* valid);
/* Loads index ptr[at] of integer dtype dt (marked input load), widens it to
 * i64 and wraps it as hc_mv_wrap_index with the constant dim. */
LLVMValueRef hc_mv_load_index(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef at, int64_t dim,
                              LLVMValueRef* valid);
/* Shape checks shared by GatherElements and ScatterElements (data = input
 * 0, indices = input 1): data of rank >= 1, indices of the same rank,
 * updates (when not NULL) of the indices' shape, and every indices dim but
 * the one of the `axis` attribute (normalised into *axis) no longer than
 * data's. */
hx_status_t hc_mv_check_elements(const hc_node* n, const hc_value* upd, int64_t* axis);
/* Stores `value` (of type et) to ptr[off + i] for i in [0, count). */
void hc_mv_fill(hc_kb* kb, LLVMTypeRef et, LLVMValueRef ptr, LLVMValueRef off, LLVMValueRef count, LLVMValueRef value);
/* Copies count elements of esize bytes from src[soff] to dst[doff]. */
void hc_mv_copy_run(hc_kb* kb, size_t esize, LLVMValueRef dst, LLVMValueRef doff, LLVMValueRef src, LLVMValueRef soff,
                    LLVMValueRef count);

/* An integer lookup table in the module (i32 when every entry fits). */
typedef struct hc_mv_table {
  LLVMValueRef ptr;
  LLVMTypeRef type;
} hc_mv_table;
/* A table of count entries; ptr is NULL when out of memory. */
hc_mv_table hc_mv_int_table(hc_kb* kb, const int64_t* vals, int64_t count, const char* name);
/* Entry `index` of an integer table, widened to i64. */
LLVMValueRef hc_mv_table_get(hc_kb* kb, hc_mv_table t, LLVMValueRef index);
/* A float/double lookup table of type ft; returns its address. */
LLVMValueRef hc_mv_real_table(hc_kb* kb, LLVMTypeRef ft, const double* vals, int64_t count, const char* name);
/* The storage bits (as hc_mv_elem_type) of a compute-type value of dtype. */
LLVMValueRef hc_mv_storage_bits(hc_kb* kb, hx_dtype_t dt, LLVMValueRef v);

/* Emits a kernel copying the N-D strided region dims (element strides ss
 * from element offset src_off in src) into dst (strides ds from dst_off).
 * Collapses dimensions, copies contiguous runs with memcpy, tiles transposes
 * of the innermost dimension when `tile`, and groups outer iterations into
 * tasks. */
hx_status_t hc_mv_strided_copy(hc_lower_ctx* lc, const hc_node* n, const char* suffix, const hc_value* src,
                               int64_t src_off, const int64_t* ss, const hc_value* dst, int64_t dst_off,
                               const int64_t* ds, int rank, const int64_t* dims, bool tile);

#endif /* HARNESS_OPS_MOVEMENT_H */
