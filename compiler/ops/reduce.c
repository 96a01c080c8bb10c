/* ReduceSum and ReduceMean.
 *
 * Axes are an attribute before opset 13 (ReduceSum) / 18 (ReduceMean) and an
 * optional constant input from then on, where noop_with_empty_axes=1 turns
 * empty axes into the identity; otherwise empty axes reduce every dimension.
 *
 * Lowering collapses the input into alternating kept/reduced groups (size-1
 * dims dropped, neighbours with the same role merged), then:
 *  - innermost group reduced: a task is one output element; nested loops
 *    walk the reduced groups, the innermost over contiguous memory;
 *  - innermost group kept: a task is a block of up to RD_BLOCK contiguous
 *    output elements whose partial sums live in a stack buffer; for every
 *    reduced index the block adds one contiguous run of the input.
 * Floats accumulate in float32 (float64 for float64), integers in 64 bits;
 * integer means divide with truncation toward zero, as numpy's
 * mean(...).astype(T) does for exact values.
 */
#include <string.h>

#include "compiler/ops/op.h"

/* Output elements per task when the innermost dimension is kept. */
#define RD_BLOCK 512
/* Bytes per task of the identity copy. */
#define RD_COPY_BLOCK (1 << 20)

typedef struct red_plan {
  bool identity;              /* noop_with_empty_axes with empty axes */
  bool reduced[HC_MAX_RANK];  /* per input dim */
  int64_t count;              /* input elements per output element */
} red_plan;

/* Opset from which axes are an input rather than an attribute. */
static int axes_input_opset(const hc_node* n) { return strcmp(n->op_type, "ReduceMean") == 0 ? 18 : 13; }

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
  p->count = 1;
  if (count == 0 && axes_input && hc_attr_int(n, "noop_with_empty_axes", 0) != 0) {
    p->identity = true;
    *out_rank = x->rank;
    memcpy(out_dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    return HX_OK;
  }
  for (int i = 0; i < count; ++i) {
    int64_t a;
    HX_RETURN_IF_ERROR(hc_norm_axis(n, axes[i], x->rank, &a));
    if (p->reduced[a])
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axis %lld appears twice", (long long)axes[i]);
    p->reduced[a] = true;
  }
  if (count == 0)
    for (int d = 0; d < x->rank; ++d) p->reduced[d] = true;
  int r = 0;
  for (int d = 0; d < x->rank; ++d) {
    if (p->reduced[d]) {
      p->count *= x->dims[d];
      if (keepdims) out_dims[r++] = 1;
    } else {
      out_dims[r++] = x->dims[d];
    }
  }
  *out_rank = r;
  return HX_OK;
}

static hx_status_t infer_reduce(hc_graph* g, hc_node* n) {
  bool axes_input = n->opset >= axes_input_opset(n);
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, axes_input ? 2 : 1, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_FLOATS | HC_DT(HX_DTYPE_INT32) | HC_DT(HX_DTYPE_INT64) |
                                              HC_DT(HX_DTYPE_UINT32) | HC_DT(HX_DTYPE_UINT64)));
  red_plan p;
  int rank;
  int64_t dims[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(reduce_plan(n, &p, &rank, dims));
  hc_set_output(n, 0, n->inputs[0]->dtype, rank, dims);
  return HX_OK;
}

/* ---- lowering -------------------------------------------------------------- */

/* One collapsed group of input dims. */
typedef struct red_group {
  int64_t size, stride; /* stride in input elements */
  bool reduced;
} red_group;

typedef struct red_emit {
  hc_kb* kb;
  hx_dtype_t dt, adt; /* element and accumulator dtypes */
  bool mean;
  int64_t count;
  LLVMValueRef px, py;
} red_emit;

/* hc_kb_load, except that bfloat16 is widened with integer ops (exact):
 * an fpext the optimiser can see lets it narrow float32 arithmetic back to
 * bfloat, which the back end then legalises through __truncsfbf2. */
static LLVMValueRef load_elem(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef idx) {
  if (dt != HX_DTYPE_BFLOAT16) return hc_kb_load(kb, dt, ptr, idx);
  LLVMValueRef raw = LLVMBuildLoad2(kb->b, kb->t_i16, hc_kb_gep(kb, dt, ptr, idx), "");
  LLVMValueRef wide = LLVMBuildShl(kb->b, LLVMBuildZExt(kb->b, raw, kb->t_i32, ""), LLVMConstInt(kb->t_i32, 16, 0), "");
  return LLVMBuildBitCast(kb->b, wide, kb->t_f32, "");
}

/* hc_kb_store, except that bfloat16 is rounded to nearest-even with integer
 * ops: fptrunc to bfloat lowers to __truncsfbf2 on targets without
 * AVX512-BF16, and libgcc before GCC 13 does not have it. */
static void store_elem(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef idx, LLVMValueRef v) {
  if (dt != HX_DTYPE_BFLOAT16) {
    hc_kb_store(kb, dt, ptr, idx, v);
    return;
  }
  LLVMBuilderRef b = kb->b;
  LLVMValueRef bits = LLVMBuildBitCast(b, v, kb->t_i32, "");
  LLVMValueRef high = LLVMBuildLShr(b, bits, LLVMConstInt(kb->t_i32, 16, 0), "");
  LLVMValueRef bias = LLVMBuildAdd(b, LLVMBuildAnd(b, high, LLVMConstInt(kb->t_i32, 1, 0), ""),
                                   LLVMConstInt(kb->t_i32, 0x7FFF, 0), "");
  LLVMValueRef rounded = LLVMBuildLShr(b, LLVMBuildAdd(b, bits, bias, ""), LLVMConstInt(kb->t_i32, 16, 0), "");
  LLVMValueRef quiet_nan = LLVMBuildOr(b, high, LLVMConstInt(kb->t_i32, 0x40, 0), "");
  LLVMValueRef is_nan = LLVMBuildFCmp(b, LLVMRealUNO, v, v, "");
  LLVMValueRef r = LLVMBuildTrunc(b, LLVMBuildSelect(b, is_nan, quiet_nan, rounded, ""), kb->t_i16, "");
  LLVMBuildStore(b, r, hc_kb_gep(kb, dt, ptr, idx));
}

/* Marks a floating-point instruction reassociable so that sums can be
 * split into vector lanes. */
static LLVMValueRef reassoc(LLVMValueRef v) {
  if (LLVMIsAInstruction(v) && LLVMCanValueUseFastMathFlags(v)) LLVMSetFastMathFlags(v, LLVMFastMathAllowReassoc);
  return v;
}

static LLVMValueRef load_acc(const red_emit* e, LLVMValueRef idx) {
  return hc_kb_convert(e->kb, load_elem(e->kb, e->dt, e->px, idx), e->dt, e->adt);
}

/* Turns an accumulated sum into the output element. */
static void store_result(const red_emit* e, LLVMValueRef idx, LLVMValueRef acc) {
  hc_kb* kb = e->kb;
  if (e->mean) acc = hc_kb_div(kb, e->adt, acc, hc_kb_const_i(kb, e->adt, e->count));
  store_elem(kb, e->dt, e->py, idx, hc_kb_convert(kb, acc, e->adt, e->dt));
}

/* Opens one loop per group in gs (outermost first); returns the input offset
 * base + sum(index * stride). */
static LLVMValueRef open_loops(hc_kb* kb, const red_group* gs, int count, hc_loop* loops, LLVMValueRef base) {
  for (int i = 0; i < count; ++i) {
    LLVMValueRef iv = hc_loop_begin(kb, &loops[i], hc_kb_i64(kb, 0), hc_kb_i64(kb, gs[i].size), "r");
    base = hc_kb_iadd(kb, base, hc_kb_imul(kb, iv, hc_kb_i64(kb, gs[i].stride)));
  }
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

/* Innermost group reduced: one output element per task. */
static void emit_inner_reduced(red_emit* e, const red_group* kept, int nk, const red_group* red, int nr) {
  hc_kb* kb = e->kb;
  LLVMTypeRef at = hc_kb_compute_type(kb, e->adt);
  LLVMValueRef acc = hc_kb_alloca(kb, at, "acc");
  hc_loop task, loops[HC_MAX_RANK], inner;
  LLVMValueRef o = hc_kb_task_loop_begin(kb, &task);
  LLVMBuildStore(kb->b, hc_kb_const(kb, e->adt, 0), acc);
  LLVMValueRef base = open_loops(kb, red, nr - 1, loops, kept_offset(kb, kept, nk, o));
  LLVMValueRef j = hc_loop_begin(kb, &inner, hc_kb_i64(kb, 0), hc_kb_i64(kb, red[nr - 1].size), "j");
  LLVMValueRef v = load_acc(e, hc_kb_iadd(kb, base, j));
  LLVMBuildStore(kb->b, reassoc(hc_kb_add(kb, e->adt, LLVMBuildLoad2(kb->b, at, acc, ""), v)), acc);
  hc_loop_end(kb, &inner);
  close_loops(kb, loops, nr - 1);
  store_result(e, o, LLVMBuildLoad2(kb->b, at, acc, ""));
  hc_loop_end(kb, &task);
}

/* Innermost group kept (size inner): a task is a block of up to RD_BLOCK
 * neighbouring output elements of one outer kept index. */
static void emit_inner_kept(red_emit* e, const red_group* kept, int nk, const red_group* red, int nr) {
  hc_kb* kb = e->kb;
  LLVMTypeRef at = hc_kb_compute_type(kb, e->adt);
  int64_t inner = kept[nk - 1].size;
  int64_t blocks = (inner + RD_BLOCK - 1) / RD_BLOCK;
  LLVMValueRef buf = hc_kb_alloca(kb, LLVMArrayType2(at, RD_BLOCK), "acc");
  hc_loop task, loops[HC_MAX_RANK], il;
  LLVMValueRef t = hc_kb_task_loop_begin(kb, &task);
  LLVMValueRef o = LLVMBuildUDiv(kb->b, t, hc_kb_i64(kb, blocks), "");
  LLVMValueRef i0 = hc_kb_imul(kb, LLVMBuildURem(kb->b, t, hc_kb_i64(kb, blocks), ""), hc_kb_i64(kb, RD_BLOCK));
  LLVMValueRef cnt = hc_kb_imin(kb, hc_kb_i64(kb, RD_BLOCK), LLVMBuildSub(kb->b, hc_kb_i64(kb, inner), i0, ""));
  LLVMValueRef zero = hc_kb_i64(kb, 0);

  LLVMValueRef i = hc_loop_begin(kb, &il, zero, cnt, "i");
  LLVMBuildStore(kb->b, hc_kb_const(kb, e->adt, 0), LLVMBuildGEP2(kb->b, at, buf, &i, 1, ""));
  hc_loop_end(kb, &il);

  LLVMValueRef base = hc_kb_iadd(kb, kept_offset(kb, kept, nk - 1, o), i0);
  base = open_loops(kb, red, nr, loops, base);
  i = hc_loop_begin(kb, &il, zero, cnt, "i");
  LLVMValueRef p = LLVMBuildGEP2(kb->b, at, buf, &i, 1, "");
  LLVMValueRef v = load_acc(e, hc_kb_iadd(kb, base, i));
  LLVMBuildStore(kb->b, hc_kb_add(kb, e->adt, LLVMBuildLoad2(kb->b, at, p, ""), v), p);
  hc_loop_end(kb, &il);
  close_loops(kb, loops, nr);

  LLVMValueRef out0 = hc_kb_iadd(kb, hc_kb_imul(kb, o, hc_kb_i64(kb, inner)), i0);
  i = hc_loop_begin(kb, &il, zero, cnt, "i");
  store_result(e, hc_kb_iadd(kb, out0, i), LLVMBuildLoad2(kb->b, at, LLVMBuildGEP2(kb->b, at, buf, &i, 1, ""), ""));
  hc_loop_end(kb, &il);
  hc_loop_end(kb, &task);
}

/* noop_with_empty_axes: the output is a copy of the input. */
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
  if (p.identity) return hc_value_numel(x) ? emit_copy(lc, n) : HX_OK;

  /* Collapse into groups, outermost first, with contiguous input strides. */
  red_group gs[HC_MAX_RANK];
  int ng = 0;
  for (int d = 0; d < x->rank; ++d) {
    if (x->dims[d] == 1) continue;
    if (ng > 0 && gs[ng - 1].reduced == p.reduced[d]) {
      gs[ng - 1].size *= x->dims[d];
      continue;
    }
    gs[ng++] = (red_group){x->dims[d], 0, p.reduced[d]};
  }
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

  hx_dtype_t dt = x->dtype;
  hx_dtype_t adt = hc_dtype_is_float(dt) ? dt : hc_dtype_is_signed(dt) ? HX_DTYPE_INT64 : HX_DTYPE_UINT64;
  int64_t outputs = hc_value_numel(y);
  if (outputs == 0) return HX_OK; /* nothing to write */
  bool inner_reduced = gs[ng - 1].reduced;
  int64_t tasks = outputs;
  if (!inner_reduced) {
    int64_t inner = kept[nk - 1].size;
    tasks = outputs / inner * ((inner + RD_BLOCK - 1) / RD_BLOCK);
  }

  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, tasks, &kb));
  red_emit e = {.kb = &kb, .dt = dt, .adt = adt, .mean = strcmp(n->op_type, "ReduceMean") == 0, .count = p.count};
  e.px = hc_kb_ptr(&kb, x);
  e.py = hc_kb_ptr(&kb, y);
  if (inner_reduced)
    emit_inner_reduced(&e, kept, nk, red, nr);
  else
    emit_inner_kept(&e, kept, nk, red, nr);
  hc_kb_end(&kb, (double)hc_value_numel(x) + (e.mean ? (double)outputs : 0.0),
            (double)hc_value_nbytes(x) + (double)hc_value_nbytes(y));
  return HX_OK;
}

static const char* const k_reduce_attrs[] = {"axes", "keepdims", "noop_with_empty_axes", NULL};

const hc_op_desc hc_op_reduce_mean = {"ReduceMean", "", 1, 22, k_reduce_attrs, 0, infer_reduce, lower_reduce, NULL};
const hc_op_desc hc_op_reduce_sum = {"ReduceSum", "", 1, 22, k_reduce_attrs, 0, infer_reduce, lower_reduce, NULL};
