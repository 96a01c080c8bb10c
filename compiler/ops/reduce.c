/* Reductions and the normalisations built on them.
 *
 * Ops: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
 * ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare, ArgMax, ArgMin,
 * MeanVarianceNormalization and LpNormalization.
 *
 * Axes are an attribute before opset 13 (ReduceSum) / 18 (the others) and
 * an optional constant input from then on, where noop_with_empty_axes=1
 * turns empty axes into a reduction over no axes (each output element is
 * its one input element, mapped: |x| for ReduceL1, x*x for ReduceSumSquare,
 * ...); otherwise empty axes reduce every dimension. Reductions over an
 * empty set give the identity of the operation (0, 1, -inf / the type's
 * minimum for ReduceMax, log(0) = -inf for ReduceLogSum...).
 *
 * One reducer serves every op. The input is collapsed into alternating
 * kept/reduced groups (size-1 dims dropped, neighbours with the same role
 * merged); an op describes what one kept element computes as a few passes
 * over its reduced elements, each with per-element state ("slots"):
 *  - innermost group reduced: a task is one kept element; its slots are
 *    scalars and nested loops walk the reduced groups, the innermost over
 *    contiguous memory;
 *  - innermost group kept: a task is a block of up to RD_BLOCK contiguous
 *    kept elements whose slots live in stack buffers; for every reduced
 *    index the block walks one contiguous run of the input.
 * A reduction is one pass (two for ReduceLogSumExp: the maximum, then the
 * sum of exp(x - max)) ending with a store to the output; ArgMax keeps the
 * best value and its index; MeanVarianceNormalization and LpNormalization
 * gather statistics and then rewrite every reduced element in a last pass.
 *
 * Floats accumulate in float32 (float64 for float64), integers in 64 bits;
 * integer means divide with truncation toward zero, as numpy's
 * mean(...).astype(T) does for exact values, and ReduceL2/LogSum/LogSumExp
 * of integers compute in float64 and truncate.
 */
#include <math.h>
#include <string.h>

#include "compiler/ops/op.h"

/* Kept elements per task when the innermost dimension is kept. */
#define RD_BLOCK 512
/* Bytes per task of the identity copy. */
#define RD_COPY_BLOCK (1 << 20)
/* Most state values one kept element carries between passes. */
#define RK_SLOTS 3

/* ---- the reducer ------------------------------------------------------------- */

/* One collapsed group of input dims. */
typedef struct red_group {
  int64_t size, stride; /* stride in input elements */
  bool reduced;
} red_group;

typedef struct red_kernel red_kernel;

/* What one kept element computes: `passes` walks over its reduced elements
 * with `nslots` state values (slot pointers address a scalar or one entry
 * of a block buffer). kidx is the kept element's index in the kept space
 * (the output index of a reduction), xidx the input index of the element a
 * step sees, ridx its index in the reduced space (when need_ridx). */
struct red_kernel {
  const hc_node* n;
  hx_dtype_t dt; /* input element type */
  int passes, nslots;
  hx_dtype_t slot_dt[RK_SLOTS]; /* slot compute types, by dtype */
  bool need_ridx;
  void (*setup)(red_kernel* k); /* after hc_kb_begin: pointers, constants */
  void (*init)(red_kernel* k, int pass, LLVMValueRef* slots);
  void (*step)(red_kernel* k, int pass, LLVMValueRef* slots, LLVMValueRef x, LLVMValueRef xidx, LLVMValueRef ridx);
  void (*post)(red_kernel* k, int pass, LLVMValueRef* slots, LLVMValueRef kidx);
  /* Set by the driver. */
  hc_kb* kb;
  LLVMValueRef px;
  int64_t count; /* reduced elements per kept element */
  /* Op state. */
  int kind;
  hx_dtype_t adt; /* accumulator dtype */
  bool flag;      /* select_last_index (ArgMax/ArgMin), p == 2 (LpNormalization) */
  LLVMValueRef py;
};

static LLVMTypeRef slot_type(red_kernel* k, int i) { return hc_kb_compute_type(k->kb, k->slot_dt[i]); }
static LLVMValueRef slot_get(red_kernel* k, LLVMValueRef* slots, int i) {
  return LLVMBuildLoad2(k->kb->b, slot_type(k, i), slots[i], "");
}
static void slot_set(red_kernel* k, LLVMValueRef* slots, int i, LLVMValueRef v) {
  LLVMBuildStore(k->kb->b, v, slots[i]);
}

/* Opens one loop per group in gs (outermost first); returns the input offset
 * base + sum(index * stride) and, if ridx is given, the linear index in the
 * space of these groups. */
static LLVMValueRef open_loops(hc_kb* kb, const red_group* gs, int count, hc_loop* loops, LLVMValueRef base,
                               LLVMValueRef* ridx) {
  LLVMValueRef r = hc_kb_i64(kb, 0);
  for (int i = 0; i < count; ++i) {
    LLVMValueRef iv = hc_loop_begin(kb, &loops[i], hc_kb_i64(kb, 0), hc_kb_i64(kb, gs[i].size), "r");
    base = hc_kb_iadd(kb, base, gs[i].stride == 1 ? iv : hc_kb_imul(kb, iv, hc_kb_i64(kb, gs[i].stride)));
    if (ridx) r = i == 0 ? iv : hc_kb_iadd(kb, hc_kb_imul(kb, r, hc_kb_i64(kb, gs[i].size)), iv);
  }
  if (ridx) *ridx = r;
  return base;
}

static void close_loops(hc_kb* kb, hc_loop* loops, int count) {
  for (int i = count - 1; i >= 0; --i) hc_loop_end(kb, &loops[i]);
}

/* Input offset of the kept groups for kept-space index `idx` (kept groups in
 * order, the last varying fastest). */
static LLVMValueRef kept_offset(hc_kb* kb, const red_group* kept, int nk, LLVMValueRef idx) {
  LLVMValueRef off = hc_kb_i64(kb, 0);
  for (int i = nk - 1; i >= 0; --i) {
    LLVMValueRef q = i > 0 ? LLVMBuildURem(kb->b, idx, hc_kb_i64(kb, kept[i].size), "") : idx;
    if (i > 0) idx = LLVMBuildUDiv(kb->b, idx, hc_kb_i64(kb, kept[i].size), "");
    off = hc_kb_iadd(kb, off, hc_kb_imul(kb, q, hc_kb_i64(kb, kept[i].stride)));
  }
  return off;
}

/* Innermost group reduced: one kept element per task, scalar slots. */
static void emit_inner_reduced(red_kernel* k, const red_group* kept, int nk, const red_group* red, int nr) {
  hc_kb* kb = k->kb;
  LLVMValueRef slots[RK_SLOTS];
  for (int s = 0; s < k->nslots; ++s) slots[s] = hc_kb_alloca(kb, slot_type(k, s), "slot");
  hc_loop task, loops[HC_MAX_RANK];
  LLVMValueRef o = hc_kb_task_loop_begin(kb, &task);
  LLVMValueRef base = kept_offset(kb, kept, nk, o);
  for (int p = 0; p < k->passes; ++p) {
    if (k->init) k->init(k, p, slots);
    LLVMValueRef ridx = NULL;
    LLVMValueRef xi = open_loops(kb, red, nr, loops, base, k->need_ridx ? &ridx : NULL);
    k->step(k, p, slots, hc_kb_load(kb, k->dt, k->px, xi), xi, ridx);
    close_loops(kb, loops, nr);
    if (k->post) k->post(k, p, slots, o);
  }
  hc_loop_end(kb, &task);
}

/* Pointers to entry i of every slot buffer. */
static void slots_at(red_kernel* k, LLVMValueRef* bufs, LLVMValueRef i, LLVMValueRef* slots) {
  for (int s = 0; s < k->nslots; ++s) slots[s] = LLVMBuildGEP2(k->kb->b, slot_type(k, s), bufs[s], &i, 1, "");
}

/* Innermost group kept (size inner, stride 1): a task is a block of up to
 * RD_BLOCK neighbouring kept elements of one outer kept index. */
static void emit_inner_kept(red_kernel* k, const red_group* kept, int nk, const red_group* red, int nr) {
  hc_kb* kb = k->kb;
  int64_t inner = kept[nk - 1].size;
  int64_t blocks = (inner + RD_BLOCK - 1) / RD_BLOCK;
  LLVMValueRef bufs[RK_SLOTS], slots[RK_SLOTS];
  for (int s = 0; s < k->nslots; ++s) bufs[s] = hc_kb_alloca(kb, LLVMArrayType2(slot_type(k, s), RD_BLOCK), "slots");
  hc_loop task, loops[HC_MAX_RANK], il;
  LLVMValueRef t = hc_kb_task_loop_begin(kb, &task);
  LLVMValueRef o = LLVMBuildUDiv(kb->b, t, hc_kb_i64(kb, blocks), "");
  LLVMValueRef i0 = hc_kb_imul(kb, LLVMBuildURem(kb->b, t, hc_kb_i64(kb, blocks), ""), hc_kb_i64(kb, RD_BLOCK));
  LLVMValueRef cnt = hc_kb_imin(kb, hc_kb_i64(kb, RD_BLOCK), LLVMBuildSub(kb->b, hc_kb_i64(kb, inner), i0, ""));
  LLVMValueRef kbase = hc_kb_iadd(kb, hc_kb_imul(kb, o, hc_kb_i64(kb, inner)), i0);
  LLVMValueRef xbase = hc_kb_iadd(kb, kept_offset(kb, kept, nk - 1, o), i0);
  LLVMValueRef zero = hc_kb_i64(kb, 0);
  for (int p = 0; p < k->passes; ++p) {
    if (k->init) {
      LLVMValueRef i = hc_loop_begin(kb, &il, zero, cnt, "i");
      slots_at(k, bufs, i, slots);
      k->init(k, p, slots);
      hc_loop_end(kb, &il);
    }
    LLVMValueRef ridx = NULL;
    LLVMValueRef xi0 = open_loops(kb, red, nr, loops, xbase, k->need_ridx ? &ridx : NULL);
    LLVMValueRef i = hc_loop_begin(kb, &il, zero, cnt, "i");
    slots_at(k, bufs, i, slots);
    LLVMValueRef xi = hc_kb_iadd(kb, xi0, i);
    k->step(k, p, slots, hc_kb_load(kb, k->dt, k->px, xi), xi, ridx);
    hc_loop_end(kb, &il);
    close_loops(kb, loops, nr);
    if (k->post) {
      i = hc_loop_begin(kb, &il, zero, cnt, "i");
      slots_at(k, bufs, i, slots);
      k->post(k, p, slots, hc_kb_iadd(kb, kbase, i));
      hc_loop_end(kb, &il);
    }
  }
  hc_loop_end(kb, &task);
}

/* Emits the kernel of k for input x with the dims marked in `reduced`.
 * flops_per_elem counts the work per input element over all passes; bytes
 * adds the passes' reads of x to out_bytes (what the op writes). */
static hx_status_t red_run(hc_lower_ctx* lc, red_kernel* k, const hc_value* x, const bool* reduced,
                           double flops_per_elem, double out_bytes) {
  red_group gs[HC_MAX_RANK];
  int ng = 0;
  k->count = 1;
  int64_t kept_count = 1;
  for (int d = 0; d < x->rank; ++d) {
    if (reduced[d])
      k->count *= x->dims[d];
    else
      kept_count *= x->dims[d];
    if (x->dims[d] == 1) continue;
    if (ng > 0 && gs[ng - 1].reduced == reduced[d]) {
      gs[ng - 1].size *= x->dims[d];
      continue;
    }
    gs[ng++] = (red_group){x->dims[d], 0, reduced[d]};
  }
  if (kept_count == 0) return HX_OK; /* nothing to write */
  if (ng == 0) gs[ng++] = (red_group){1, 0, true};
  for (int i = ng - 1, s = 1; i >= 0; --i) {
    gs[i].stride = s;
    s *= gs[i].size;
  }
  red_group kept[HC_MAX_RANK], red[HC_MAX_RANK];
  int nk = 0, nr = 0;
  for (int i = 0; i < ng; ++i) {
    if (gs[i].reduced)
      red[nr++] = gs[i];
    else
      kept[nk++] = gs[i];
  }
  bool inner_reduced = gs[ng - 1].reduced;
  int64_t tasks = kept_count;
  if (!inner_reduced) {
    int64_t inner = kept[nk - 1].size;
    tasks = kept_count / inner * ((inner + RD_BLOCK - 1) / RD_BLOCK);
  }
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, k->n, NULL, tasks, &kb));
  k->kb = &kb;
  k->px = hc_kb_ptr(&kb, x);
  if (k->setup) k->setup(k);
  if (inner_reduced)
    emit_inner_reduced(k, kept, nk, red, nr);
  else
    emit_inner_kept(k, kept, nk, red, nr);
  hc_kb_end(&kb, flops_per_elem * (double)hc_value_numel(x),
            (double)k->passes * (double)hc_value_nbytes(x) + out_bytes);
  return HX_OK;
}

/* Marks the dims named by axes[0..count) in reduced[] (normalised; a
 * repeated axis is an error). */
static hx_status_t mark_axes(const hc_node* n, int rank, const int64_t* axes, int count, bool* reduced) {
  memset(reduced, 0, sizeof(bool) * HC_MAX_RANK);
  for (int i = 0; i < count; ++i) {
    int64_t a;
    HX_RETURN_IF_ERROR(hc_norm_axis(n, axes[i], rank, &a));
    if (reduced[a]) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axis %lld appears twice", (long long)axes[i]);
    reduced[a] = true;
  }
  return HX_OK;
}

/* ---- value helpers ------------------------------------------------------------- */

/* The smallest (or largest) value of an integer or bool compute type. */
static LLVMValueRef int_limit(hc_kb* kb, hx_dtype_t dt, bool largest) {
  LLVMTypeRef t = hc_kb_compute_type(kb, dt);
  unsigned w = LLVMGetIntTypeWidth(t);
  unsigned long long mask = w >= 64 ? ~0ull : (1ull << w) - 1;
  unsigned long long bits;
  if (hc_dtype_is_signed(dt))
    bits = largest ? mask >> 1 : 1ull << (w - 1);
  else
    bits = largest ? mask : 0;
  return LLVMConstInt(t, bits, 0);
}

/* The identity of max (lowest value) or min (highest value) for dt. */
static LLVMValueRef extreme(hc_kb* kb, hx_dtype_t dt, bool highest) {
  if (hc_dtype_is_float(dt)) return hc_kb_const(kb, dt, highest ? INFINITY : -INFINITY);
  return int_limit(kb, dt, highest);
}

static LLVMValueRef abs_of(hc_kb* kb, hx_dtype_t dt, LLVMValueRef v) {
  if (hc_dtype_is_float(dt)) return hc_kb_math(kb, dt, "fabs", &v, 1);
  if (!hc_dtype_is_signed(dt)) return v;
  LLVMValueRef zero = hc_kb_const(kb, dt, 0);
  return hc_kb_select(kb, hc_kb_cmp(kb, dt, "lt", v, zero), hc_kb_sub(kb, dt, zero, v), v);
}

static LLVMValueRef is_nan(hc_kb* kb, LLVMValueRef v) { return LLVMBuildFCmp(kb->b, LLVMRealUNO, v, v, ""); }

/* ---- Reduce* ------------------------------------------------------------------- */

enum { RD_SUM, RD_MEAN, RD_MAX, RD_MIN, RD_PROD, RD_L1, RD_L2, RD_SUMSQ, RD_LOGSUM, RD_LSE };

static const struct {
  const char* name;
  int kind;
} k_reduce_kinds[] = {{"ReduceSum", RD_SUM},     {"ReduceMean", RD_MEAN},     {"ReduceMax", RD_MAX},
                      {"ReduceMin", RD_MIN},     {"ReduceProd", RD_PROD},     {"ReduceL1", RD_L1},
                      {"ReduceL2", RD_L2},       {"ReduceSumSquare", RD_SUMSQ}, {"ReduceLogSum", RD_LOGSUM},
                      {"ReduceLogSumExp", RD_LSE}};

static int reduce_kind(const hc_node* n) {
  for (size_t i = 0; i < sizeof k_reduce_kinds / sizeof k_reduce_kinds[0]; ++i)
    if (strcmp(n->op_type, k_reduce_kinds[i].name) == 0) return k_reduce_kinds[i].kind;
  return RD_SUM;
}

/* Opset from which axes are an input rather than an attribute. */
static int axes_input_opset(const hc_node* n) { return reduce_kind(n) == RD_SUM ? 13 : 18; }

/* Element types each opset allows. */
static uint64_t reduce_dtypes(const hc_node* n) {
  int kind = reduce_kind(n);
  uint64_t m = HC_DT(HX_DTYPE_FLOAT32) | HC_DT(HX_DTYPE_FLOAT64) | HC_DT(HX_DTYPE_FLOAT16) | HC_DT(HX_DTYPE_INT32) |
               HC_DT(HX_DTYPE_INT64) | HC_DT(HX_DTYPE_UINT32) | HC_DT(HX_DTYPE_UINT64);
  if (n->opset >= 13) m |= HC_DT(HX_DTYPE_BFLOAT16);
  if (kind == RD_MAX || kind == RD_MIN) {
    if (n->opset >= 12) m |= HC_DT(HX_DTYPE_INT8) | HC_DT(HX_DTYPE_UINT8);
    if (n->opset >= 20) m |= HC_DT(HX_DTYPE_BOOL);
  }
  return m;
}

typedef struct red_plan {
  bool noop;                 /* noop_with_empty_axes with empty axes */
  bool reduced[HC_MAX_RANK]; /* per input dim */
} red_plan;

/* Reads and checks axes and keepdims; sets the output shape. */
static hx_status_t reduce_plan(const hc_node* n, red_plan* p, int* out_rank, int64_t* out_dims) {
  const hc_value* x = n->inputs[0];
  int since = axes_input_opset(n);
  bool axes_input = n->opset >= since;
  int64_t axes[HC_MAX_RANK];
  int count = 0;
  if (axes_input) {
    if (hc_node_attr(n, "axes"))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axes is an input from opset %d on, not an attribute", since);
    if (hc_input(n, 1)) HX_RETURN_IF_ERROR(hc_const_ints(n, 1, axes, HC_MAX_RANK, &count));
  } else {
    if (hc_node_attr(n, "noop_with_empty_axes"))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute 'noop_with_empty_axes' exists from opset %d on",
                           since);
    count = hc_attr_ints(n, "axes", axes, HC_MAX_RANK);
    if (count == -2)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "more axes than the input has dimensions (%d)", x->rank);
    if (count < 0) count = 0;
  }
  bool keepdims = hc_attr_int(n, "keepdims", 1) != 0;
  memset(p, 0, sizeof *p);
  HX_RETURN_IF_ERROR(mark_axes(n, x->rank, axes, count, p->reduced));
  if (count == 0 && axes_input && hc_attr_int(n, "noop_with_empty_axes", 0) != 0) {
    p->noop = true;
  } else if (count == 0) {
    for (int d = 0; d < x->rank; ++d) p->reduced[d] = true;
  }
  int r = 0;
  for (int d = 0; d < x->rank; ++d) {
    if (!p->reduced[d])
      out_dims[r++] = x->dims[d];
    else if (keepdims)
      out_dims[r++] = 1;
  }
  *out_rank = r;
  return HX_OK;
}

static hx_status_t infer_reduce(hc_graph* g, hc_node* n) {
  bool axes_input = n->opset >= axes_input_opset(n);
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, axes_input ? 2 : 1, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, reduce_dtypes(n)));
  red_plan p;
  int rank;
  int64_t dims[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(reduce_plan(n, &p, &rank, dims));
  hc_set_output(n, 0, n->inputs[0]->dtype, rank, dims);
  return HX_OK;
}

static void reduce_setup(red_kernel* k) { k->py = hc_kb_ptr(k->kb, k->n->outputs[0]); }

static void reduce_init(red_kernel* k, int pass, LLVMValueRef* slots) {
  hc_kb* kb = k->kb;
  LLVMValueRef v;
  switch (k->kind) {
    case RD_MAX: v = extreme(kb, k->adt, false); break;
    case RD_MIN: v = extreme(kb, k->adt, true); break;
    case RD_PROD: v = hc_kb_const(kb, k->adt, 1); break;
    case RD_LSE: v = pass == 0 ? extreme(kb, k->adt, false) : hc_kb_const(kb, k->adt, 0); break;
    default: v = hc_kb_const(kb, k->adt, 0); break;
  }
  slot_set(k, slots, pass, v);
}

/* The maximum of a LogSumExp run, replaced by 0 when infinite so that
 * x - max stays defined (all -inf: log(0) = -inf; any +inf: +inf). */
static LLVMValueRef lse_shift(red_kernel* k, LLVMValueRef mx) {
  hc_kb* kb = k->kb;
  LLVMValueRef inf = hc_kb_const(kb, k->adt, INFINITY);
  LLVMValueRef is_inf = hc_kb_cmp(kb, k->adt, "eq", hc_kb_math(kb, k->adt, "fabs", &mx, 1), inf);
  return hc_kb_select(kb, is_inf, hc_kb_const(kb, k->adt, 0), mx);
}

static void reduce_step(red_kernel* k, int pass, LLVMValueRef* slots, LLVMValueRef x, LLVMValueRef xidx,
                        LLVMValueRef ridx) {
  hc_kb* kb = k->kb;
  hx_dtype_t a = k->adt;
  LLVMValueRef v = hc_kb_convert(kb, x, k->dt, a);
  LLVMValueRef acc = slot_get(k, slots, pass), r;
  switch (k->kind) {
    case RD_MAX: r = hc_kb_max(kb, a, acc, v); break;
    case RD_MIN: r = hc_kb_min(kb, a, acc, v); break;
    case RD_PROD: r = hc_kb_reassoc(hc_kb_mul(kb, a, acc, v)); break;
    case RD_L1: r = hc_kb_reassoc(hc_kb_add(kb, a, acc, abs_of(kb, a, v))); break;
    case RD_L2:
    case RD_SUMSQ: r = hc_kb_reassoc(hc_kb_add(kb, a, acc, hc_kb_mul(kb, a, v, v))); break;
    case RD_LSE:
      if (pass == 0) {
        r = hc_kb_max(kb, a, acc, v);
      } else {
        LLVMValueRef d = hc_kb_sub(kb, a, v, lse_shift(k, slot_get(k, slots, 0)));
        r = hc_kb_reassoc(hc_kb_add(kb, a, acc, hc_kb_math(kb, a, "exp", &d, 1)));
      }
      break;
    default: r = hc_kb_reassoc(hc_kb_add(kb, a, acc, v)); break;
  }
  slot_set(k, slots, pass, r);
}

/* f(acc) computed in float: acc itself for float accumulators, else via
 * float64. Returns the value and its dtype in *rdt. */
static LLVMValueRef float_math(red_kernel* k, const char* fn, LLVMValueRef acc, hx_dtype_t* rdt) {
  hx_dtype_t fdt = hc_dtype_is_float(k->adt) ? k->adt : HX_DTYPE_FLOAT64;
  LLVMValueRef v = hc_kb_convert(k->kb, acc, k->adt, fdt);
  *rdt = fdt;
  return hc_kb_math(k->kb, fdt, fn, &v, 1);
}

static void reduce_post(red_kernel* k, int pass, LLVMValueRef* slots, LLVMValueRef kidx) {
  if (pass != k->passes - 1) return;
  hc_kb* kb = k->kb;
  LLVMValueRef acc = slot_get(k, slots, pass), r = acc;
  hx_dtype_t rdt = k->adt;
  switch (k->kind) {
    case RD_MEAN: r = hc_kb_div(kb, k->adt, acc, hc_kb_const_i(kb, k->adt, k->count)); break;
    case RD_L2: r = float_math(k, "sqrt", acc, &rdt); break;
    case RD_LOGSUM: r = float_math(k, "log", acc, &rdt); break;
    case RD_LSE: {
      LLVMValueRef lg = hc_kb_math(kb, k->adt, "log", &acc, 1);
      r = hc_kb_add(kb, k->adt, lse_shift(k, slot_get(k, slots, 0)), lg);
      break;
    }
    default: break;
  }
  hc_kb_store(kb, k->dt, k->py, kidx, hc_kb_convert(kb, r, rdt, k->dt));
}

/* noop_with_empty_axes for ops whose per-element map is the identity: the
 * output is a copy of the input. */
static hx_status_t emit_copy(hc_lower_ctx* lc, const hc_node* n) {
  int64_t bytes = (int64_t)hc_value_nbytes(n->inputs[0]);
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, (bytes + RD_COPY_BLOCK - 1) / RD_COPY_BLOCK, &kb));
  LLVMValueRef src = hc_kb_ptr(&kb, n->inputs[0]), dst = hc_kb_ptr(&kb, n->outputs[0]);
  LLVMValueRef lo = hc_kb_imul(&kb, kb.begin, hc_kb_i64(&kb, RD_COPY_BLOCK));
  LLVMValueRef hi = hc_kb_imin(&kb, hc_kb_imul(&kb, kb.end, hc_kb_i64(&kb, RD_COPY_BLOCK)), hc_kb_i64(&kb, bytes));
  hc_if guard;
  hc_if_begin(&kb, &guard, LLVMBuildICmp(kb.b, LLVMIntSLT, lo, hi, ""));
  hc_kb_memcpy(&kb, LLVMBuildGEP2(kb.b, kb.t_i8, dst, &lo, 1, ""), LLVMBuildGEP2(kb.b, kb.t_i8, src, &lo, 1, ""),
               LLVMBuildSub(kb.b, hi, lo, ""));
  hc_if_end(&kb, &guard);
  hc_kb_end(&kb, 0, 2.0 * (double)bytes);
  return HX_OK;
}

static hx_status_t lower_reduce(hc_lower_ctx* lc, hc_node* n) {
  const hc_value *x = n->inputs[0], *y = n->outputs[0];
  red_plan p;
  int rank;
  int64_t dims[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(reduce_plan(n, &p, &rank, dims));
  int kind = reduce_kind(n);
  bool identity_map = kind == RD_SUM || kind == RD_MEAN || kind == RD_MAX || kind == RD_MIN || kind == RD_PROD;
  if (p.noop && identity_map) return hc_value_numel(x) ? emit_copy(lc, n) : HX_OK;

  hx_dtype_t dt = x->dtype, adt;
  if (kind == RD_MAX || kind == RD_MIN)
    adt = dt;
  else if (hc_dtype_is_float(dt))
    adt = dt;
  else if (kind == RD_LSE)
    adt = HX_DTYPE_FLOAT64;
  else
    adt = hc_dtype_is_signed(dt) ? HX_DTYPE_INT64 : HX_DTYPE_UINT64;
  red_kernel k = {.n = n, .dt = dt, .passes = kind == RD_LSE ? 2 : 1, .nslots = kind == RD_LSE ? 2 : 1,
                  .slot_dt = {adt, adt}, .setup = reduce_setup, .init = reduce_init, .step = reduce_step,
                  .post = reduce_post, .kind = kind, .adt = adt};
  double flops = kind == RD_LSE ? 14.0 : (kind == RD_L1 || kind == RD_L2 || kind == RD_SUMSQ) ? 2.0 : 1.0;
  return red_run(lc, &k, x, p.reduced, flops, (double)hc_value_nbytes(y));
}

/* ---- ArgMax / ArgMin ----------------------------------------------------------- */

/* Reads axis and keepdims; sets the output shape. */
static hx_status_t arg_plan(const hc_node* n, bool* reduced, int* out_rank, int64_t* out_dims) {
  const hc_value* x = n->inputs[0];
  int64_t axis = hc_attr_int(n, "axis", 0);
  HX_RETURN_IF_ERROR(mark_axes(n, x->rank, &axis, 1, reduced));
  bool keepdims = hc_attr_int(n, "keepdims", 1) != 0;
  int r = 0;
  for (int d = 0; d < x->rank; ++d) {
    if (!reduced[d])
      out_dims[r++] = x->dims[d];
    else if (keepdims)
      out_dims[r++] = 1;
  }
  *out_rank = r;
  return HX_OK;
}

static hx_status_t infer_arg(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  uint64_t m = HC_DT_NUMERIC & ~HC_DT(HX_DTYPE_BFLOAT16);
  if (n->opset >= 13) m |= HC_DT(HX_DTYPE_BFLOAT16);
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, m));
  if (n->opset < 12 && hc_node_attr(n, "select_last_index"))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute 'select_last_index' exists from opset 12 on");
  const hc_value* x = n->inputs[0];
  if (x->rank < 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "the input must have rank >= 1, got a scalar");
  bool reduced[HC_MAX_RANK];
  int rank;
  int64_t dims[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(arg_plan(n, reduced, &rank, dims));
  for (int d = 0; d < x->rank; ++d)
    if (reduced[d] && x->dims[d] == 0 && hc_shape_numel(rank, dims) > 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axis %d has size 0: there is no element to select", d);
  hc_set_output(n, 0, HX_DTYPE_INT64, rank, dims);
  return HX_OK;
}

static void arg_init(red_kernel* k, int pass, LLVMValueRef* slots) {
  slot_set(k, slots, 0, extreme(k->kb, k->dt, k->kind == RD_MIN));
  slot_set(k, slots, 1, hc_kb_i64(k->kb, 0));
}

/* A new best when strictly better (first index) or at least as good (last
 * index); NaN beats every number, as numpy's argmax/argmin. */
static void arg_step(red_kernel* k, int pass, LLVMValueRef* slots, LLVMValueRef x, LLVMValueRef xidx,
                     LLVMValueRef ridx) {
  hc_kb* kb = k->kb;
  LLVMValueRef best = slot_get(k, slots, 0);
  const char* pred = k->kind == RD_MAX ? (k->flag ? "ge" : "gt") : (k->flag ? "le" : "lt");
  LLVMValueRef better = hc_kb_cmp(kb, k->dt, pred, x, best);
  if (hc_dtype_is_float(k->dt)) {
    LLVMValueRef nan_wins = is_nan(kb, x);
    if (!k->flag) nan_wins = LLVMBuildAnd(kb->b, nan_wins, LLVMBuildNot(kb->b, is_nan(kb, best), ""), "");
    better = LLVMBuildOr(kb->b, better, nan_wins, "");
  }
  slot_set(k, slots, 0, hc_kb_select(kb, better, x, best));
  slot_set(k, slots, 1, hc_kb_select(kb, better, ridx, slot_get(k, slots, 1)));
}

static void arg_post(red_kernel* k, int pass, LLVMValueRef* slots, LLVMValueRef kidx) {
  hc_kb_store(k->kb, HX_DTYPE_INT64, k->py, kidx, slot_get(k, slots, 1));
}

static hx_status_t lower_arg(hc_lower_ctx* lc, hc_node* n) {
  bool reduced[HC_MAX_RANK];
  int rank;
  int64_t dims[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(arg_plan(n, reduced, &rank, dims));
  const hc_value* x = n->inputs[0];
  red_kernel k = {.n = n, .dt = x->dtype, .passes = 1, .nslots = 2, .slot_dt = {x->dtype, HX_DTYPE_INT64},
                  .need_ridx = true, .setup = reduce_setup, .init = arg_init, .step = arg_step, .post = arg_post,
                  .kind = strcmp(n->op_type, "ArgMax") == 0 ? RD_MAX : RD_MIN,
                  .flag = hc_attr_int(n, "select_last_index", 0) != 0};
  return red_run(lc, &k, x, reduced, 2.0, (double)hc_value_nbytes(n->outputs[0]));
}

/* ---- MeanVarianceNormalization and LpNormalization ----------------------------- */

/* Both read floats and compute in float32 (float64 for float64). */
static hx_dtype_t norm_cdt(hx_dtype_t dt) { return dt == HX_DTYPE_FLOAT64 ? HX_DTYPE_FLOAT64 : HX_DTYPE_FLOAT32; }

/* MeanVarianceNormalization: y = (x - mean) / (sqrt(var) + 1e-9) over
 * `axes` (default [0, 2, 3]); slot 0 is the mean, slot 1 the variance and
 * then the reciprocal of the denominator. */
static hx_status_t mvn_axes(const hc_node* n, bool* reduced) {
  int64_t axes[HC_MAX_RANK] = {0, 2, 3};
  int count = hc_attr_ints(n, "axes", axes, HC_MAX_RANK);
  if (count == -2)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "more axes than the input has dimensions (%d)",
                         n->inputs[0]->rank);
  if (count < 0) count = 3;
  return mark_axes(n, n->inputs[0]->rank, axes, count, reduced);
}

static hx_status_t infer_mvn(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  uint64_t m = HC_DT(HX_DTYPE_FLOAT32) | HC_DT(HX_DTYPE_FLOAT64) | HC_DT(HX_DTYPE_FLOAT16);
  if (n->opset >= 13) m |= HC_DT(HX_DTYPE_BFLOAT16);
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, m));
  bool reduced[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(mvn_axes(n, reduced));
  const hc_value* x = n->inputs[0];
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  return HX_OK;
}

static void mvn_init(red_kernel* k, int pass, LLVMValueRef* slots) {
  if (pass < 2) slot_set(k, slots, pass, hc_kb_const(k->kb, k->adt, 0));
}

static void mvn_step(red_kernel* k, int pass, LLVMValueRef* slots, LLVMValueRef x, LLVMValueRef xidx,
                     LLVMValueRef ridx) {
  hc_kb* kb = k->kb;
  hx_dtype_t a = k->adt;
  LLVMValueRef v = hc_kb_convert(kb, x, k->dt, a);
  if (pass == 0) {
    slot_set(k, slots, 0, hc_kb_reassoc(hc_kb_add(kb, a, slot_get(k, slots, 0), v)));
    return;
  }
  LLVMValueRef d = hc_kb_sub(kb, a, v, slot_get(k, slots, 0));
  if (pass == 1) {
    slot_set(k, slots, 1, hc_kb_reassoc(hc_kb_fma(kb, a, d, d, slot_get(k, slots, 1))));
    return;
  }
  hc_kb_store(kb, k->dt, k->py, xidx, hc_kb_convert(kb, hc_kb_mul(kb, a, d, slot_get(k, slots, 1)), a, k->dt));
}

static void mvn_post(red_kernel* k, int pass, LLVMValueRef* slots, LLVMValueRef kidx) {
  hc_kb* kb = k->kb;
  hx_dtype_t a = k->adt;
  LLVMValueRef cnt = hc_kb_const(kb, a, (double)k->count);
  if (pass == 0) {
    slot_set(k, slots, 0, hc_kb_div(kb, a, slot_get(k, slots, 0), cnt));
  } else if (pass == 1) {
    LLVMValueRef var = hc_kb_div(kb, a, slot_get(k, slots, 1), cnt);
    LLVMValueRef den = hc_kb_add(kb, a, hc_kb_math(kb, a, "sqrt", &var, 1), hc_kb_const(kb, a, 1e-9));
    slot_set(k, slots, 1, hc_kb_div(kb, a, hc_kb_const(kb, a, 1.0), den));
  }
}

static hx_status_t lower_mvn(hc_lower_ctx* lc, hc_node* n) {
  bool reduced[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(mvn_axes(n, reduced));
  const hc_value* x = n->inputs[0];
  hx_dtype_t cdt = norm_cdt(x->dtype);
  red_kernel k = {.n = n, .dt = x->dtype, .passes = 3, .nslots = 2, .slot_dt = {cdt, cdt}, .setup = reduce_setup,
                  .init = mvn_init, .step = mvn_step, .post = mvn_post, .adt = cdt};
  return red_run(lc, &k, x, reduced, 6.0, (double)hc_value_nbytes(n->outputs[0]));
}

/* LpNormalization: y = x / ||x||_p along `axis`, p = 1 or 2; slot 0 is the
 * sum of |x| or x*x, then the norm. */
static hx_status_t lp_plan(const hc_node* n, bool* reduced) {
  int64_t p = hc_attr_int(n, "p", 2);
  if (p != 1 && p != 2)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "p = %lld; LpNormalization defines only p = 1 and p = 2",
                         (long long)p);
  int64_t axis = hc_attr_int(n, "axis", -1);
  return mark_axes(n, n->inputs[0]->rank, &axis, 1, reduced);
}

static hx_status_t infer_lp_norm(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  uint64_t m = HC_DT(HX_DTYPE_FLOAT32) | HC_DT(HX_DTYPE_FLOAT64) | HC_DT(HX_DTYPE_FLOAT16);
  if (n->opset >= 22) m |= HC_DT(HX_DTYPE_BFLOAT16);
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, m));
  const hc_value* x = n->inputs[0];
  if (x->rank < 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "the input must have rank >= 1, got a scalar");
  bool reduced[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(lp_plan(n, reduced));
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  return HX_OK;
}

static void lp_init(red_kernel* k, int pass, LLVMValueRef* slots) {
  if (pass == 0) slot_set(k, slots, 0, hc_kb_const(k->kb, k->adt, 0));
}

static void lp_step(red_kernel* k, int pass, LLVMValueRef* slots, LLVMValueRef x, LLVMValueRef xidx,
                    LLVMValueRef ridx) {
  hc_kb* kb = k->kb;
  hx_dtype_t a = k->adt;
  LLVMValueRef v = hc_kb_convert(kb, x, k->dt, a);
  LLVMValueRef acc = slot_get(k, slots, 0);
  if (pass == 0) {
    LLVMValueRef s = k->flag ? hc_kb_fma(kb, a, v, v, acc) : hc_kb_add(kb, a, acc, abs_of(kb, a, v));
    slot_set(k, slots, 0, hc_kb_reassoc(s));
    return;
  }
  hc_kb_store(kb, k->dt, k->py, xidx, hc_kb_convert(kb, hc_kb_div(kb, a, v, acc), a, k->dt));
}

static void lp_post(red_kernel* k, int pass, LLVMValueRef* slots, LLVMValueRef kidx) {
  if (pass != 0 || !k->flag) return;
  LLVMValueRef s = slot_get(k, slots, 0);
  slot_set(k, slots, 0, hc_kb_math(k->kb, k->adt, "sqrt", &s, 1));
}

static hx_status_t lower_lp_norm(hc_lower_ctx* lc, hc_node* n) {
  bool reduced[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(lp_plan(n, reduced));
  const hc_value* x = n->inputs[0];
  hx_dtype_t cdt = norm_cdt(x->dtype);
  red_kernel k = {.n = n, .dt = x->dtype, .passes = 2, .nslots = 1, .slot_dt = {cdt}, .setup = reduce_setup,
                  .init = lp_init, .step = lp_step, .post = lp_post, .adt = cdt,
                  .flag = hc_attr_int(n, "p", 2) == 2};
  return red_run(lc, &k, x, reduced, 3.0, (double)hc_value_nbytes(n->outputs[0]));
}

/* ---- descriptors ----------------------------------------------------------------- */

static const char* const k_reduce_attrs[] = {"axes", "keepdims", "noop_with_empty_axes", NULL};
static const char* const k_arg_attrs[] = {"axis", "keepdims", "select_last_index", NULL};
static const char* const k_mvn_attrs[] = {"axes", NULL};
static const char* const k_lp_attrs[] = {"axis", "p", NULL};

#define HC_REDUCE_DESC(sym, name) \
  const hc_op_desc sym = {name, "", 1, 22, k_reduce_attrs, 0, infer_reduce, lower_reduce, NULL}

HC_REDUCE_DESC(hc_op_reduce_sum, "ReduceSum");
HC_REDUCE_DESC(hc_op_reduce_mean, "ReduceMean");
HC_REDUCE_DESC(hc_op_reduce_max, "ReduceMax");
HC_REDUCE_DESC(hc_op_reduce_min, "ReduceMin");
HC_REDUCE_DESC(hc_op_reduce_prod, "ReduceProd");
HC_REDUCE_DESC(hc_op_reduce_l1, "ReduceL1");
HC_REDUCE_DESC(hc_op_reduce_l2, "ReduceL2");
HC_REDUCE_DESC(hc_op_reduce_sum_square, "ReduceSumSquare");
HC_REDUCE_DESC(hc_op_reduce_log_sum, "ReduceLogSum");
HC_REDUCE_DESC(hc_op_reduce_log_sum_exp, "ReduceLogSumExp");

const hc_op_desc hc_op_arg_max = {"ArgMax", "", 1, 22, k_arg_attrs, 0, infer_arg, lower_arg, NULL};
const hc_op_desc hc_op_arg_min = {"ArgMin", "", 1, 22, k_arg_attrs, 0, infer_arg, lower_arg, NULL};
const hc_op_desc hc_op_mean_variance_normalization = {"MeanVarianceNormalization", "", 9, 22, k_mvn_attrs, 0,
                                                      infer_mvn, lower_mvn, NULL};
const hc_op_desc hc_op_lp_normalization = {"LpNormalization", "", 1, 22, k_lp_attrs, 0, infer_lp_norm,
                                           lower_lp_norm, NULL};
