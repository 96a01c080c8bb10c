/* Pad: grows (or, with negative pads, crops) each axis.
 *
 * Opsets 2-10 take 'pads' and 'value' attributes; 11+ take pads (constant),
 * an optional constant_value (read by the kernel, so it may be computed at
 * run time) and, from 18, axes. Modes: constant, edge, reflect and, from
 * 19, wrap.
 *
 * Negative pads crop first and the remaining window is then padded (as
 * ONNX Runtime does): along an axis with pads (b, e) the input window is
 * [max(0,-b), dim - max(0,-e)) and output index o reads window element
 * o - max(b,0) when it lies inside; otherwise the mode decides: the fill
 * value, the nearest edge, a reflection (repeated for pads larger than the
 * window, as numpy) or a periodic wrap.
 *
 * Lowering: trailing unpadded axes merge into blocks of B elements; the
 * last padded axis q forms output rows. Every row (an index over the axes
 * before q) finds its source row through per-axis tables computed at
 * compile time, then writes a head (fill or table-driven copies of blocks),
 * a middle (one memcpy of the window) and a tail. Rows go to tasks. */
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/movement.h"


typedef enum { PAD_CONSTANT, PAD_EDGE, PAD_REFLECT, PAD_WRAP } pad_mode;

/* Per-axis plan: pads, the input window [lo, lo + E) and the output size. */
typedef struct pad_plan {
  pad_mode mode;
  int rank;
  int64_t pb[HC_MAX_RANK], pe[HC_MAX_RANK];
  int64_t lo[HC_MAX_RANK], E[HC_MAX_RANK], head[HC_MAX_RANK];
  int64_t out[HC_MAX_RANK];
} pad_plan;

/* Parses the mode attribute (wrap exists from opset 19). */
static hx_status_t read_mode(const hc_node* n, pad_mode* mode) {
  const char* m = hc_attr_string(n, "mode", "constant");
  if (!strcmp(m, "constant")) *mode = PAD_CONSTANT;
  else if (!strcmp(m, "edge")) *mode = PAD_EDGE;
  else if (!strcmp(m, "reflect")) *mode = PAD_REFLECT;
  else if (!strcmp(m, "wrap") && n->opset >= 19) *mode = PAD_WRAP;
  else
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "mode '%s' is not one of constant, edge, reflect%s", m,
                         n->opset >= 19 ? ", wrap" : " (wrap needs opset 19)");
  return HX_OK;
}

/* Reads pads (and axes) into per-axis begin/end pads and checks them. */
static hx_status_t make_plan(const hc_node* n, pad_plan* p) {
  const hc_value* x = n->inputs[0];
  int rank = x->rank;
  memset(p, 0, sizeof *p);
  p->rank = rank;
  HX_RETURN_IF_ERROR(read_mode(n, &p->mode));
  int64_t pads[HC_MAX_RANK * 2], axes[HC_MAX_RANK];
  int np, na;
  if (n->opset < 11) {
    np = hc_attr_ints(n, "pads", pads, HC_MAX_RANK * 2);
    if (np == -1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "the attribute 'pads' is required");
    if (np == -2) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'pads' has more than 2 * rank entries");
  } else {
    if (hc_node_attr(n, "pads") || hc_node_attr(n, "value"))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "pads and value are inputs from opset 11 on, not attributes");
    HX_RETURN_IF_ERROR(hc_const_ints(n, 1, pads, HC_MAX_RANK * 2, &np));
  }
  const hc_value* axes_in = n->opset >= 18 ? hc_input(n, 3) : NULL;
  if (axes_in) {
    HX_RETURN_IF_ERROR(hc_const_ints(n, 3, axes, HC_MAX_RANK, &na));
  } else {
    na = rank;
    for (int d = 0; d < rank; ++d) axes[d] = d;
  }
  if (np != 2 * na)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "pads has %d entries, expected 2 * %d (%s)", np, na,
                         axes_in ? "number of axes" : "input rank");
  bool seen[HC_MAX_RANK] = {0};
  for (int i = 0; i < na; ++i) {
    int64_t a;
    HX_RETURN_IF_ERROR(hc_norm_axis(n, axes[i], rank, &a));
    if (seen[a]) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axis %lld appears twice in axes", (long long)a);
    seen[a] = true;
    p->pb[a] = pads[i];
    p->pe[a] = pads[i + na];
  }
  int64_t total = 1;
  for (int d = 0; d < rank; ++d) {
    int64_t dim = x->dims[d], b = p->pb[d], e = p->pe[d];
    p->lo[d] = b < 0 ? -b : 0;
    p->E[d] = dim - p->lo[d] - (e < 0 ? -e : 0);
    p->head[d] = b > 0 ? b : 0;
    if (p->E[d] < 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "pads (%lld, %lld) crop more than axis %d's %lld elements",
                           (long long)b, (long long)e, d, (long long)dim);
    p->out[d] = p->E[d] + p->head[d] + (e > 0 ? e : 0);
    total *= p->out[d];
  }
  if (total > 0 && p->mode != PAD_CONSTANT) {
    for (int d = 0; d < rank; ++d)
      if (p->E[d] == 0 && p->out[d] > 0)
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                             "mode '%s' pads axis %d but nothing of it is left to replicate (size %lld after cropping)",
                             hc_attr_string(n, "mode", "constant"), d, (long long)p->E[d]);
  }
  return HX_OK;
}

/* Window element (in [0, E)) read by output index o of axis d, or -1 for
 * the constant fill. */
static int64_t source_index(const pad_plan* p, int d, int64_t o) {
  int64_t E = p->E[d], e = o - p->head[d];
  if (e >= 0 && e < E) return e;
  switch (p->mode) {
    case PAD_CONSTANT: return -1;
    case PAD_EDGE: return e < 0 ? 0 : E - 1;
    case PAD_WRAP: return ((e % E) + E) % E;
    case PAD_REFLECT: {
      if (E == 1) return 0;
      int64_t period = 2 * (E - 1);
      int64_t m = ((e % period) + period) % period;
      return m < E ? m : period - m;
    }
  }
  return -1;
}

/* An axis without padding or cropping. */
static bool is_identity(const pad_plan* p, int d) { return p->pb[d] == 0 && p->pe[d] == 0; }

/* Checks the inputs and sets the padded shape. */
static hx_status_t infer_pad(hc_graph* g, hc_node* n) {
  if (n->opset < 11)
    HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  else
    HX_RETURN_IF_ERROR(hc_check_arity(n, 2, n->opset >= 18 ? 4 : 3, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  const hc_value* cv = hc_input(n, 2);
  if (cv) {
    HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 2));
    if (hc_value_numel(cv) > 1 || cv->rank > 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "constant_value ('%s') must be a scalar", cv->name);
  }
  pad_plan p;
  HX_RETURN_IF_ERROR(make_plan(n, &p));
  hc_set_output(n, 0, n->inputs[0]->dtype, p.rank, p.out);
  return HX_OK;
}

/* The fill value's storage bits, emitted at the kernel's entry. */
static LLVMValueRef fill_bits(hc_kb* kb, const hc_node* n, LLVMTypeRef et) {
  hx_dtype_t dt = n->inputs[0]->dtype;
  if (n->opset < 11) return hc_mv_storage_bits(kb, dt, hc_kb_const(kb, dt, hc_attr_float(n, "value", 0.0f)));
  const hc_value* cv = hc_input(n, 2);
  if (!cv || hc_value_numel(cv) == 0) return LLVMConstInt(et, 0, 0);
  return LLVMBuildLoad2(kb->b, et, hc_kb_ptr(kb, cv), "");
}

/* Emits the row kernel described at the top of the file. */
static hx_status_t lower_pad(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* x = n->inputs[0];
  const hc_value* y = n->outputs[0];
  pad_plan p;
  HX_RETURN_IF_ERROR(make_plan(n, &p));
  int rank = p.rank;
  size_t esize = hx_dtype_size(x->dtype);
  int64_t total = hc_value_numel(y);
  if (total == 0) return HX_OK;
  int q = -1;
  for (int d = 0; d < rank; ++d)
    if (!is_identity(&p, d)) q = d;
  int64_t in_strides[HC_MAX_RANK];
  hc_strides(rank, x->dims, in_strides);
  if (q < 0) { /* nothing padded: a plain copy */
    int64_t all = hc_value_numel(x), one = 1;
    return hc_mv_strided_copy(lc, n, NULL, x, 0, &one, y, 0, &one, 1, &all, false);
  }
  int64_t B = hc_shape_numel(rank - q - 1, x->dims + q + 1);
  int64_t W = p.out[q];
  bool constant = p.mode == PAD_CONSTANT;

  /* Outer axes (before q): consecutive unpadded ones merge. */
  int no = 0;
  int64_t odims[HC_MAX_RANK], ostride[HC_MAX_RANK];
  int oaxis[HC_MAX_RANK]; /* source axis of a padded outer loop, -1 if unpadded */
  for (int d = 0; d < q; ++d) {
    if (is_identity(&p, d) && no > 0 && oaxis[no - 1] < 0) {
      odims[no - 1] *= p.out[d];
      ostride[no - 1] = in_strides[d];
      continue;
    }
    odims[no] = p.out[d];
    ostride[no] = in_strides[d];
    oaxis[no] = is_identity(&p, d) ? -1 : d;
    ++no;
  }
  int64_t units = hc_shape_numel(no, odims);
  int64_t upt = hc_mv_units_per_task(W * B * (int64_t)esize);

  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, hc_mv_tasks(units, upt), &kb));
  LLVMTypeRef et = hc_mv_elem_type(&kb, esize);
  LLVMValueRef src = hc_kb_ptr(&kb, x), dst = hc_kb_ptr(&kb, y);
  LLVMValueRef fill = constant ? fill_bits(&kb, n, et) : NULL;

  /* Tables: source offsets (elements) of every padded outer axis; -1 marks
   * a fill row. */
  hc_mv_table otab[HC_MAX_RANK];
  for (int k = 0; k < no; ++k) {
    if (oaxis[k] < 0) continue;
    int d = oaxis[k];
    int64_t* v = malloc(sizeof(int64_t) * (size_t)p.out[d]);
    if (!v) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int64_t o = 0; o < p.out[d]; ++o) {
      int64_t s = source_index(&p, d, o);
      v[o] = s < 0 ? -1 : (p.lo[d] + s) * in_strides[d];
    }
    otab[k] = hc_mv_int_table(&kb, v, p.out[d], "pad_rows");
    free(v);
    if (!otab[k].ptr) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  /* Head and tail of the row axis: source offset of each block from the
   * start of the window. */
  int64_t h = p.head[q], c = p.E[q], t = W - h - c;
  hc_mv_table edge_tab = {0};
  if (!constant && h + t > 0) {
    int64_t* v = malloc(sizeof(int64_t) * (size_t)(h + t));
    if (!v) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int64_t i = 0; i < h + t; ++i) {
      int64_t o = i < h ? i : h + c + (i - h);
      v[i] = source_index(&p, q, o) * B;
    }
    edge_tab = hc_mv_int_table(&kb, v, h + t, "pad_edges");
    free(v);
    if (!edge_tab.ptr) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  }

  hc_loop ul;
  LLVMValueRef u = hc_mv_units_begin(&kb, &ul, units, upt);
  LLVMValueRef iv[HC_MAX_RANK];
  hc_mv_unflatten(&kb, u, no, odims, iv);
  LLVMValueRef srow = hc_kb_i64(&kb, 0), is_fill = LLVMConstInt(kb.t_i1, 0, 0);
  for (int k = 0; k < no; ++k) {
    LLVMValueRef off;
    if (oaxis[k] < 0) {
      off = hc_kb_imul(&kb, iv[k], hc_kb_i64(&kb, ostride[k]));
    } else {
      off = hc_mv_table_get(&kb, otab[k], iv[k]);
      if (constant) {
        LLVMValueRef neg = LLVMBuildICmp(kb.b, LLVMIntSLT, off, hc_kb_i64(&kb, 0), "");
        is_fill = LLVMBuildOr(kb.b, is_fill, neg, "");
      }
    }
    srow = hc_kb_iadd(&kb, srow, off);
  }
  srow = hc_kb_iadd(&kb, srow, hc_kb_i64(&kb, p.lo[q] * B));
  LLVMValueRef drow = hc_kb_imul(&kb, u, hc_kb_i64(&kb, W * B));

  /* A row whose outer index falls in the padding is all fill. */
  LLVMBasicBlockRef body_bb = LLVMAppendBasicBlockInContext(lc->llctx, kb.fn, "row");
  LLVMBasicBlockRef fill_bb = LLVMAppendBasicBlockInContext(lc->llctx, kb.fn, "fill_row");
  LLVMBasicBlockRef next_bb = LLVMAppendBasicBlockInContext(lc->llctx, kb.fn, "next_row");
  LLVMBuildCondBr(kb.b, is_fill, fill_bb, body_bb);
  LLVMPositionBuilderAtEnd(kb.b, fill_bb);
  if (constant) hc_mv_fill(&kb, et, dst, drow, hc_kb_i64(&kb, W * B), fill);
  LLVMBuildBr(kb.b, next_bb);

  LLVMPositionBuilderAtEnd(kb.b, body_bb);
  if (c > 0)
    hc_mv_copy_run(&kb, esize, dst, hc_kb_iadd(&kb, drow, hc_kb_i64(&kb, h * B)), src, srow, hc_kb_i64(&kb, c * B));
  for (int side = 0; side < 2; ++side) {
    int64_t count = side == 0 ? h : t;
    int64_t first = side == 0 ? 0 : h + c;
    if (count == 0) continue;
    LLVMValueRef dstart = hc_kb_iadd(&kb, drow, hc_kb_i64(&kb, first * B));
    if (constant) {
      hc_mv_fill(&kb, et, dst, dstart, hc_kb_i64(&kb, count * B), fill);
      continue;
    }
    hc_loop l;
    LLVMValueRef i = hc_loop_begin(&kb, &l, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, count), "edge");
    LLVMValueRef soff = hc_mv_table_get(&kb, edge_tab, side == 0 ? i : hc_kb_iadd(&kb, i, hc_kb_i64(&kb, h)));
    soff = hc_kb_iadd(&kb, srow, soff);
    LLVMValueRef doff = hc_kb_iadd(&kb, dstart, B == 1 ? i : hc_kb_imul(&kb, i, hc_kb_i64(&kb, B)));
    if (B == 1) {
      hc_mv_store_out(&kb, et, dst, doff, hc_mv_load_in(&kb, et, src, soff));
    } else {
      hc_mv_copy_run(&kb, esize, dst, doff, src, soff, hc_kb_i64(&kb, B));
    }
    hc_loop_end(&kb, &l);
  }
  LLVMBuildBr(kb.b, next_bb);
  LLVMPositionBuilderAtEnd(kb.b, next_bb);
  hc_loop_end(&kb, &ul);
  hc_kb_end(&kb, 0, (double)hc_value_nbytes(y) + (double)hc_value_nbytes(x));
  return HX_OK;
}

static const char* const k_pad_attrs[] = {"mode", "pads", "value", NULL};

const hc_op_desc hc_op_pad = {"Pad", "", 2, 22, k_pad_attrs, 0, infer_pad, lower_pad, NULL};
