/* Code generation shared by the data-movement ops (Transpose, Concat, Split,
 * Slice, Pad, Gather, Resize).
 *
 * These ops move elements without looking at them, so they copy bytes with
 * an integer type of the element's width: one code path serves every dtype.
 * The centrepiece is hc_mv_strided_copy, which emits a kernel copying an
 * N-D strided region of one tensor into an N-D strided region of another
 * (a transpose, a slice, one input of a concat...). It collapses dimensions,
 * copies contiguous runs with memcpy, tiles transposes of the innermost
 * dimension and groups the outer iterations into tasks of a useful size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/movement.h"

/* Output bytes per task: enough to amortise a task call, small enough to
 * spread medium tensors over the threads. */
#define MV_TASK_BYTES (64 * 1024)
/* Bytes an outer iteration ("unit") should at least move before the loop
 * nest is split there: below this, more dimensions move into the inner nest
 * so the per-unit index arithmetic stays negligible. */
#define MV_MIN_UNIT_BYTES 1024

#define MV_MAX_LOOPS (HC_MAX_RANK + 4)

/* ---- small shared helpers --------------------------------------------------- */

/* The integer type moving one element of esize bytes. */
LLVMTypeRef hc_mv_elem_type(hc_kb* kb, size_t esize) {
  switch (esize) {
    case 1: return kb->t_i8;
    case 2: return kb->t_i16;
    case 4: return kb->t_i32;
    default: return kb->t_i64;
  }
}

/* Units (outer iterations of unit_bytes each) one task should take. */
int64_t hc_mv_units_per_task(int64_t unit_bytes) {
  if (unit_bytes < 1) unit_bytes = 1;
  int64_t upt = MV_TASK_BYTES / unit_bytes;
  return upt < 1 ? 1 : upt;
}

/* Task count for `units` outer iterations grouped `upt` at a time. */
int64_t hc_mv_tasks(int64_t units, int64_t upt) { return units <= 0 ? 0 : (units + upt - 1) / upt; }

/* Opens the loop over the units of the current task range:
 * [begin*upt, min(end*upt, units)). Returns the unit index. */
LLVMValueRef hc_mv_units_begin(hc_kb* kb, hc_loop* loop, int64_t units, int64_t upt) {
  LLVMValueRef lo = hc_kb_imul(kb, kb->begin, hc_kb_i64(kb, upt));
  LLVMValueRef hi = hc_kb_imin(kb, hc_kb_imul(kb, kb->end, hc_kb_i64(kb, upt)), hc_kb_i64(kb, units));
  return hc_loop_begin(kb, loop, lo, hi, "unit");
}

/* Splits a row-major flat index over dims[0..count) into coordinates. */
void hc_mv_unflatten(hc_kb* kb, LLVMValueRef flat, int count, const int64_t* dims, LLVMValueRef* out) {
  LLVMValueRef rem = flat;
  for (int d = count - 1; d >= 0; --d) {
    if (d == 0) {
      out[d] = rem;
    } else if (dims[d] == 1) {
      out[d] = hc_kb_i64(kb, 0);
    } else {
      out[d] = LLVMBuildURem(kb->b, rem, hc_kb_i64(kb, dims[d]), "");
      rem = LLVMBuildUDiv(kb->b, rem, hc_kb_i64(kb, dims[d]), "");
    }
  }
}

/* Element address in a byte-addressed tensor: ptr + index * esize. */
LLVMValueRef hc_mv_gep(hc_kb* kb, LLVMTypeRef et, LLVMValueRef ptr, LLVMValueRef index) {
  return LLVMBuildGEP2(kb->b, et, ptr, &index, 1, "");
}

/* Tells LLVM that a kernel's reads of its inputs (out = false) and its
 * writes to its output (out = true) never overlap, with scoped noalias
 * metadata (one domain per kernel). The memory planner never places a
 * node's output over its inputs; without this LLVM must assume they may
 * alias, and cannot vectorise loops with data-dependent addresses (gathers
 * through tables or indices) or must add run-time overlap checks. */
void hc_mv_mark(hc_kb* kb, LLVMValueRef inst, bool out) {
  LLVMContextRef c = kb->lc->llctx;
  size_t len;
  const char* fname = LLVMGetValueName2(kb->fn, &len);
  char name[256];
  int nlen = snprintf(name, sizeof name, "%.*s.dom", (int)len, fname);
  LLVMMetadataRef dom_name = LLVMMDStringInContext2(c, name, (size_t)nlen);
  LLVMMetadataRef dom = LLVMMDNodeInContext2(c, &dom_name, 1);
  LLVMMetadataRef scopes[2];
  for (int i = 0; i < 2; ++i) {
    nlen = snprintf(name, sizeof name, "%.*s.%s", (int)len, fname, i ? "out" : "in");
    LLVMMetadataRef parts[2] = {LLVMMDStringInContext2(c, name, (size_t)nlen), dom};
    LLVMMetadataRef scope = LLVMMDNodeInContext2(c, parts, 2);
    scopes[i] = LLVMMDNodeInContext2(c, &scope, 1);
  }
  unsigned k_scope = LLVMGetMDKindIDInContext(c, "alias.scope", 11);
  unsigned k_noalias = LLVMGetMDKindIDInContext(c, "noalias", 7);
  LLVMSetMetadata(inst, k_scope, LLVMMetadataAsValue(c, scopes[out ? 1 : 0]));
  LLVMSetMetadata(inst, k_noalias, LLVMMetadataAsValue(c, scopes[out ? 0 : 1]));
}

/* Loads element `index` of an input tensor as et (marked, see hc_mv_mark). */
LLVMValueRef hc_mv_load_in(hc_kb* kb, LLVMTypeRef et, LLVMValueRef ptr, LLVMValueRef index) {
  LLVMValueRef v = LLVMBuildLoad2(kb->b, et, hc_mv_gep(kb, et, ptr, index), "");
  hc_mv_mark(kb, v, false);
  return v;
}

/* Stores v (of type et) to element `index` of the output (marked). */
void hc_mv_store_out(hc_kb* kb, LLVMTypeRef et, LLVMValueRef ptr, LLVMValueRef index, LLVMValueRef v) {
  hc_mv_mark(kb, LLVMBuildStore(kb->b, v, hc_mv_gep(kb, et, ptr, index)), true);
}

/* Wraps a negative index by dim; *valid (if asked) is 0 <= result < dim. */
LLVMValueRef hc_mv_wrap_index(hc_kb* kb, LLVMValueRef i, LLVMValueRef dim, LLVMValueRef* valid) {
  LLVMValueRef neg = LLVMBuildICmp(kb->b, LLVMIntSLT, i, hc_kb_i64(kb, 0), "");
  i = LLVMBuildSelect(kb->b, neg, hc_kb_iadd(kb, i, dim), i, "");
  if (valid) *valid = LLVMBuildICmp(kb->b, LLVMIntULT, i, dim, "");
  return i;
}

/* Loads an int32/int64 index as i64 and wraps it (hc_mv_wrap_index). */
LLVMValueRef hc_mv_load_index(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef at, int64_t dim,
                              LLVMValueRef* valid) {
  LLVMValueRef i = hc_mv_load_in(kb, hc_kb_storage_type(kb, dt), ptr, at);
  if (dt != HX_DTYPE_INT64) i = LLVMBuildSExt(kb->b, i, kb->t_i64, "");
  return hc_mv_wrap_index(kb, i, hc_kb_i64(kb, dim), valid);
}

/* Ranks, the updates shape, the axis and the extents, in that order. */
hx_status_t hc_mv_check_elements(const hc_node* n, const hc_value* upd, int64_t* axis) {
  const hc_value* x = n->inputs[0];
  const hc_value* idx = n->inputs[1];
  if (x->rank < 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "data must have rank >= 1, got a scalar");
  if (idx->rank != x->rank)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "indices must have the rank of data (%d), got %d", x->rank,
                         idx->rank);
  char s1[128], s2[128];
  if (upd && (upd->rank != idx->rank || memcmp(upd->dims, idx->dims, sizeof(int64_t) * (size_t)idx->rank)))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "updates (%s) must have the shape of indices (%s)",
                         hc_shape_str(upd->rank, upd->dims, s1, sizeof s1),
                         hc_shape_str(idx->rank, idx->dims, s2, sizeof s2));
  HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", 0), x->rank, axis));
  for (int d = 0; d < x->rank; ++d)
    if (d != *axis && idx->dims[d] > x->dims[d])
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "indices dimension %d (%lld) exceeds the data's (%lld); only the axis may differ", d,
                           (long long)idx->dims[d], (long long)x->dims[d]);
  return HX_OK;
}

/* Stores `value` (of type et) to ptr[off + i] for i in [0, count). */
void hc_mv_fill(hc_kb* kb, LLVMTypeRef et, LLVMValueRef ptr, LLVMValueRef off, LLVMValueRef count,
                LLVMValueRef value) {
  hc_loop l;
  LLVMValueRef i = hc_loop_begin(kb, &l, hc_kb_i64(kb, 0), count, "fill");
  hc_mv_store_out(kb, et, ptr, hc_kb_iadd(kb, off, i), value);
  hc_loop_end(kb, &l);
}

/* Copies count elements of esize bytes from src[soff] to dst[doff]. */
void hc_mv_copy_run(hc_kb* kb, size_t esize, LLVMValueRef dst, LLVMValueRef doff, LLVMValueRef src,
                    LLVMValueRef soff, LLVMValueRef count) {
  LLVMTypeRef et = hc_mv_elem_type(kb, esize);
  LLVMValueRef bytes = hc_kb_imul(kb, count, hc_kb_i64(kb, (int64_t)esize));
  hc_kb_memcpy(kb, hc_mv_gep(kb, et, dst, doff), hc_mv_gep(kb, et, src, soff), bytes);
}

/* A private constant array in the module; returns its address. */
static LLVMValueRef add_const_array(hc_kb* kb, LLVMTypeRef et, LLVMValueRef* elems, int64_t count, const char* name) {
  return hc_kb_const_table(kb->lc, LLVMConstArray2(et, elems, (uint64_t)count), name, 16);
}

/* A table of count entries (vals) in the module; ptr is NULL when out of
 * memory. */
hc_mv_table hc_mv_int_table(hc_kb* kb, const int64_t* vals, int64_t count, const char* name) {
  bool narrow = true;
  for (int64_t i = 0; i < count; ++i)
    if (vals[i] < INT32_MIN || vals[i] > INT32_MAX) narrow = false;
  hc_mv_table t = {NULL, narrow ? kb->t_i32 : kb->t_i64};
  if (count < 1) count = 1; /* never read, but keep the global well formed */
  LLVMValueRef* elems = malloc(sizeof(LLVMValueRef) * (size_t)count);
  if (!elems) return t;
  for (int64_t i = 0; i < count; ++i) elems[i] = LLVMConstInt(t.type, (unsigned long long)(vals ? vals[i] : 0), 1);
  t.ptr = add_const_array(kb, t.type, elems, count, name);
  free(elems);
  return t;
}

/* Entry `index` of an integer table, widened to i64. */
LLVMValueRef hc_mv_table_get(hc_kb* kb, hc_mv_table t, LLVMValueRef index) {
  LLVMValueRef v = LLVMBuildLoad2(kb->b, t.type, hc_mv_gep(kb, t.type, t.ptr, index), "");
  return t.type == kb->t_i64 ? v : LLVMBuildSExt(kb->b, v, kb->t_i64, "");
}

/* A float/double lookup table of type ft; returns its address. */
LLVMValueRef hc_mv_real_table(hc_kb* kb, LLVMTypeRef ft, const double* vals, int64_t count, const char* name) {
  if (count < 1) count = 1;
  LLVMValueRef* elems = malloc(sizeof(LLVMValueRef) * (size_t)count);
  if (!elems) return NULL;
  for (int64_t i = 0; i < count; ++i) elems[i] = LLVMConstReal(ft, vals ? vals[i] : 0.0);
  LLVMValueRef g = add_const_array(kb, ft, elems, count, name);
  free(elems);
  return g;
}

/* The storage bits (as hc_mv_elem_type) of a compute-type value of dtype. */
LLVMValueRef hc_mv_storage_bits(hc_kb* kb, hx_dtype_t dt, LLVMValueRef v) {
  LLVMTypeRef it = hc_mv_elem_type(kb, hx_dtype_size(dt));
  switch (dt) {
    case HX_DTYPE_FLOAT16: return LLVMBuildBitCast(kb->b, LLVMBuildFPTrunc(kb->b, v, kb->t_f16, ""), it, "");
    /* Integer rounding: an fptrunc to bfloat needs __truncsfbf2 on targets
     * without AVX512-BF16 (see hc_kb_f32_to_bf16). */
    case HX_DTYPE_BFLOAT16: return hc_kb_f32_to_bf16(kb, v);
    case HX_DTYPE_FLOAT32:
    case HX_DTYPE_FLOAT64: return LLVMBuildBitCast(kb->b, v, it, "");
    case HX_DTYPE_BOOL: return LLVMBuildZExt(kb->b, v, it, "");
    default: return v;
  }
}

/* ---- strided copy ------------------------------------------------------------- */

/* One loop of the copy nest. A blocked dimension becomes a block loop
 * (count ceil(total/B), strides scaled by B) and a child loop of B
 * iterations whose last block is cut short: child.parent names the block
 * loop and child.total the full extent. */
typedef struct mv_loop {
  int64_t n;
  int64_t os, ss; /* element strides in the destination and the source */
  int parent;
  int64_t total;
} mv_loop;

/* Transposition micro-kernel: an MV_MICRO x MV_MICRO block moved through
 * registers. */
#define MV_MICRO 8

typedef struct mv_nest {
  mv_loop l[MV_MAX_LOOPS];
  int m;
  /* Each iteration of the last loop transposes one micro block whose
   * source rows are micro_ss apart and destination rows micro_os apart
   * (both walked contiguously along the rows). */
  bool micro;
  int64_t micro_os, micro_ss;
} mv_nest;

/* Appends a loop without a parent. */
static void nest_push(mv_nest* s, int64_t n, int64_t os, int64_t ss) {
  s->l[s->m++] = (mv_loop){n, os, ss, -1, 0};
}

typedef struct mv_emit {
  hc_kb* kb;
  const mv_nest* nest;
  size_t esize;
  LLVMTypeRef et;
  LLVMValueRef dst, src;
  LLVMValueRef iv[MV_MAX_LOOPS];
} mv_emit;

/* Trip count of loop d given the ivs of the loops around it. */
static LLVMValueRef loop_bound(mv_emit* e, int d) {
  const mv_loop* L = &e->nest->l[d];
  if (L->parent < 0) return hc_kb_i64(e->kb, L->n);
  LLVMValueRef left = LLVMBuildSub(e->kb->b, hc_kb_i64(e->kb, L->total),
                                   hc_kb_imul(e->kb, e->iv[L->parent], hc_kb_i64(e->kb, L->n)), "");
  return hc_kb_imin(e->kb, hc_kb_i64(e->kb, L->n), left);
}

static LLVMValueRef add_scaled(hc_kb* kb, LLVMValueRef base, LLVMValueRef i, int64_t stride) {
  if (stride == 0) return base;
  return hc_kb_iadd(kb, base, stride == 1 ? i : hc_kb_imul(kb, i, hc_kb_i64(kb, stride)));
}

/* Transposes one micro block in registers: loads MV_MICRO source rows as
 * vectors, swaps index bits between rows and lanes with log2(MV_MICRO)
 * rounds of two-input shuffles (round d exchanges the off-diagonal d x d
 * sub-blocks), and stores the rows to the destination. */
static void emit_micro(mv_emit* e, LLVMValueRef doff, LLVMValueRef soff) {
  hc_kb* kb = e->kb;
  enum { N = MV_MICRO };
  LLVMTypeRef vt = LLVMVectorType(e->et, N);
  unsigned align = (unsigned)e->esize;
  LLVMValueRef r[N];
  for (int i = 0; i < N; ++i) {
    LLVMValueRef p = hc_mv_gep(kb, e->et, e->src, hc_kb_iadd(kb, soff, hc_kb_i64(kb, i * e->nest->micro_ss)));
    r[i] = LLVMBuildLoad2(kb->b, vt, p, "");
    LLVMSetAlignment(r[i], align);
    hc_mv_mark(kb, r[i], false);
  }
  for (int d = N / 2; d >= 1; d /= 2) {
    LLVMValueRef lo_mask[N], hi_mask[N];
    for (int k = 0; k < N; ++k) {
      /* Lanes 0..N-1 pick from the first operand, N..2N-1 from the second. */
      lo_mask[k] = LLVMConstInt(kb->t_i32, (k & d) ? (unsigned)(N + k - d) : (unsigned)k, 0);
      hi_mask[k] = LLVMConstInt(kb->t_i32, (k & d) ? (unsigned)(N + k) : (unsigned)(k + d), 0);
    }
    LLVMValueRef lo = LLVMConstVector(lo_mask, N), hi = LLVMConstVector(hi_mask, N);
    for (int i = 0; i < N; ++i) {
      if (i & d) continue;
      LLVMValueRef a = r[i], b = r[i + d];
      r[i] = LLVMBuildShuffleVector(kb->b, a, b, lo, "");
      r[i + d] = LLVMBuildShuffleVector(kb->b, a, b, hi, "");
    }
  }
  for (int j = 0; j < N; ++j) {
    LLVMValueRef p = hc_mv_gep(kb, e->et, e->dst, hc_kb_iadd(kb, doff, hc_kb_i64(kb, j * e->nest->micro_os)));
    LLVMValueRef st = LLVMBuildStore(kb->b, r[j], p);
    LLVMSetAlignment(st, align);
    hc_mv_mark(kb, st, true);
  }
}

/* Emits loops d..m-1 of the nest at destination/source offsets doff/soff. */
static void emit_inner(mv_emit* e, int d, LLVMValueRef doff, LLVMValueRef soff) {
  hc_kb* kb = e->kb;
  const mv_loop* L = &e->nest->l[d];
  LLVMValueRef hi = loop_bound(e, d);
  bool last = d == e->nest->m - 1;
  if (last && !e->nest->micro && L->os == 1 && L->ss == 1) {
    hc_mv_copy_run(kb, e->esize, e->dst, doff, e->src, soff, hi);
    return;
  }
  hc_loop loop;
  LLVMValueRef i = hc_loop_begin(kb, &loop, hc_kb_i64(kb, 0), hi, "i");
  e->iv[d] = i;
  LLVMValueRef di = add_scaled(kb, doff, i, L->os), si = add_scaled(kb, soff, i, L->ss);
  if (last && e->nest->micro) {
    emit_micro(e, di, si);
  } else if (last) {
    hc_mv_store_out(kb, e->et, e->dst, di, hc_mv_load_in(kb, e->et, e->src, si));
  } else {
    emit_inner(e, d + 1, di, si);
  }
  hc_loop_end(kb, &loop);
}

/* Emits one kernel running nest s (elements per innermost iteration:
 * MV_MICRO^2 for micro blocks, else 1). */
static hx_status_t emit_nest(hc_lower_ctx* lc, const hc_node* n, const char* suffix, const hc_value* src,
                             int64_t src_off, const hc_value* dst, int64_t dst_off, mv_nest s, size_t esize) {
  double elems = s.micro ? MV_MICRO * MV_MICRO : 1;
  double total = elems;
  for (int d = 0; d < s.m; ++d) total *= (double)s.l[d].n;
  if (total == 0) return HX_OK;

  /* Split point: loops [0, k) are units handed to tasks, [k, m) run inside. */
  int k = s.m - 1;
  double inner = (double)s.l[k].n * elems * (double)esize;
  while (k > 0 && inner < MV_MIN_UNIT_BYTES) {
    --k;
    inner *= (double)s.l[k].n;
  }
  /* A huge inner nest is cut into blocks of its outermost loop so that a
   * task moves about MV_TASK_BYTES. */
  bool is_parent = false;
  for (int d = k + 1; d < s.m; ++d)
    if (s.l[d].parent == k) is_parent = true;
  if (inner > 2.0 * MV_TASK_BYTES && s.l[k].parent < 0 && !is_parent && s.l[k].n > 1 && s.m < MV_MAX_LOOPS) {
    double per_iter = inner / (double)s.l[k].n;
    int64_t B = (int64_t)(MV_TASK_BYTES / per_iter);
    if (B < 1) B = 1;
    if (B < s.l[k].n) {
      mv_loop L = s.l[k];
      memmove(&s.l[k + 1], &s.l[k], sizeof(mv_loop) * (size_t)(s.m - k));
      ++s.m;
      for (int d = k + 2; d < s.m; ++d)
        if (s.l[d].parent > k) ++s.l[d].parent;
      s.l[k] = (mv_loop){(L.n + B - 1) / B, L.os * B, L.ss * B, -1, 0};
      s.l[k + 1] = (mv_loop){B, L.os, L.ss, k, L.n};
      inner = per_iter * (double)B;
      ++k;
    }
  }
  int64_t units = 1, unit_dims[MV_MAX_LOOPS];
  for (int d = 0; d < k; ++d) {
    units *= s.l[d].n;
    unit_dims[d] = s.l[d].n;
  }
  int64_t upt = hc_mv_units_per_task((int64_t)inner);
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, suffix, hc_mv_tasks(units, upt), &kb));
  mv_emit e = {.kb = &kb, .nest = &s, .esize = esize, .et = hc_mv_elem_type(&kb, esize)};
  e.src = hc_kb_ptr(&kb, src);
  e.dst = hc_kb_ptr(&kb, dst);
  hc_loop uloop;
  LLVMValueRef u = hc_mv_units_begin(&kb, &uloop, units, upt);
  hc_mv_unflatten(&kb, u, k, unit_dims, e.iv);
  LLVMValueRef doff = hc_kb_i64(&kb, dst_off), soff = hc_kb_i64(&kb, src_off);
  for (int d = 0; d < k; ++d) {
    doff = add_scaled(&kb, doff, e.iv[d], s.l[d].os);
    soff = add_scaled(&kb, soff, e.iv[d], s.l[d].ss);
  }
  emit_inner(&e, k, doff, soff);
  hc_loop_end(&kb, &uloop);
  hc_kb_end(&kb, 0, 2.0 * total * (double)esize);
  return HX_OK;
}

/* Width (elements) of the column strip a transposition block walks: a
 * multiple of MV_MICRO covering a cache line or two of each source row. */
static int64_t strip_width(size_t esize) {
  int64_t t = 128 / (int64_t)esize;
  return t < 16 ? 16 : t > 64 ? 64 : t;
}

/* Emits a kernel copying the region dims[0..rank) from src (element offset
 * src_off, element strides ss, which may be negative or zero) to dst
 * (element offset dst_off, strides ds). src and dst have the same element
 * size. Emits nothing for an empty region.
 *
 * With `tile`, a region whose innermost destination dimension b is read
 * with a stride while another dimension a is read contiguously (a
 * transpose) is copied by MV_MICRO x MV_MICRO register transposes: loops
 * over strips of a (strip_width), then b, then the micro blocks of the
 * strip, so each source line and each destination line is used whole while
 * it is in cache. The rims that do not fill micro blocks get kernels of
 * their own. */
hx_status_t hc_mv_strided_copy(hc_lower_ctx* lc, const hc_node* n, const char* suffix, const hc_value* src,
                               int64_t src_off, const int64_t* ss, const hc_value* dst, int64_t dst_off,
                               const int64_t* ds, int rank, const int64_t* dims, bool tile) {
  size_t esize = hx_dtype_size(dst->dtype);
  if (hc_shape_numel(rank, dims) == 0) return HX_OK;

  /* Collapse: drop unit dimensions, merge neighbours both sides walk alike. */
  mv_nest c = {.m = 0};
  for (int d = 0; d < rank; ++d) {
    if (dims[d] == 1) continue;
    if (c.m > 0) {
      mv_loop* p = &c.l[c.m - 1];
      if (p->os == ds[d] * dims[d] && p->ss == ss[d] * dims[d]) {
        p->n *= dims[d];
        p->os = ds[d];
        p->ss = ss[d];
        continue;
      }
    }
    nest_push(&c, dims[d], ds[d], ss[d]);
  }
  if (c.m == 0) nest_push(&c, 1, 1, 1);

  int a = -1, b = c.m - 1;
  if (tile && c.m >= 2 && c.l[b].os == 1 && c.l[b].ss != 1 && c.l[b].n >= MV_MICRO)
    for (int d = 0; d < b; ++d)
      if (c.l[d].ss == 1 && c.l[d].n >= MV_MICRO) a = d;
  if (a < 0) return emit_nest(lc, n, suffix, src, src_off, dst, dst_off, c, esize);

  const mv_loop A = c.l[a], B = c.l[b];
  int64_t na = A.n / MV_MICRO * MV_MICRO, nb = B.n / MV_MICRO * MV_MICRO;
  /* Main part: [outer..., strip of a, b / MV_MICRO, micro blocks in the strip]. */
  int64_t W = strip_width(esize), per_strip = W / MV_MICRO, blocks_a = na / MV_MICRO;
  mv_nest s = {.m = 0, .micro = true, .micro_os = A.os, .micro_ss = B.ss};
  for (int d = 0; d < b; ++d)
    if (d != a) s.l[s.m++] = c.l[d];
  int strip = -1;
  if (blocks_a > per_strip) {
    strip = s.m;
    nest_push(&s, (blocks_a + per_strip - 1) / per_strip, W * A.os, W * A.ss);
  }
  nest_push(&s, nb / MV_MICRO, MV_MICRO * B.os, MV_MICRO * B.ss);
  if (strip >= 0)
    s.l[s.m++] = (mv_loop){per_strip, MV_MICRO * A.os, MV_MICRO * A.ss, strip, blocks_a};
  else
    nest_push(&s, blocks_a, MV_MICRO * A.os, MV_MICRO * A.ss);
  HX_RETURN_IF_ERROR(emit_nest(lc, n, suffix, src, src_off, dst, dst_off, s, esize));

  /* Rims: the last A.n - na rows of a (all of b), then the last B.n - nb
   * columns of b for the first na rows of a. */
  char rim[64];
  snprintf(rim, sizeof rim, "%s%srim", suffix ? suffix : "", suffix ? "_" : "");
  if (na < A.n) {
    mv_nest r = c;
    r.l[a].n = A.n - na;
    HX_RETURN_IF_ERROR(emit_nest(lc, n, rim, src, src_off + na * A.ss, dst, dst_off + na * A.os, r, esize));
  }
  if (nb < B.n) {
    mv_nest r = c;
    r.l[a].n = na;
    r.l[b].n = B.n - nb;
    HX_RETURN_IF_ERROR(emit_nest(lc, n, rim, src, src_off + nb * B.ss, dst, dst_off + nb * B.os, r, esize));
  }
  return HX_OK;
}
