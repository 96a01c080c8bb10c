/* NonMaxSuppression (opsets 10 and 11 on): per batch and class, greedy
 * selection of boxes by descending score, dropping each box whose IoU with
 * an already selected box of the class exceeds iou_threshold, up to
 * max_output_boxes_per_class boxes. Output: selected_indices, int64
 * [num_selected, 3] of (batch, class, box), batch-major, then class, then
 * selection order.
 *
 * Arithmetic follows ONNX Runtime (float32): a box is selected if its score
 * is > score_threshold (when given); IoU uses the boxes' min/max corners
 * (center_point_box = 0: [y1, x1, y2, x2] in any corner order; 1: [x_center,
 * y_center, width, height]); an empty intersection, a non-positive area or
 * union never suppresses; suppression needs IoU > iou_threshold (default 0).
 * Equal scores keep the lower box index first. max_output_boxes_per_class
 * (default 0: select nothing), iou_threshold and score_threshold may be
 * constants or run-time scalars (or 1-element tensors).
 *
 * num_selected depends on values: the output is a value-dependent shape
 * (compiler/ops/dynamic.h) with upper bound batch * classes * min(boxes,
 * max_output_boxes_per_class) when that input is a constant, batch * classes
 * * boxes otherwise. The node never folds.
 *
 * Kernel "select" runs one task per (batch, class): it gathers the boxes
 * above the score threshold, sorts them by score (stable merge sort,
 * hc_dyn_sort) and selects greedily into its own workspace region. Kernel
 * "write" (one task) concatenates the selections into the output and writes
 * the actual dims. */
#include "compiler/ops/dynamic.h"

static const char* const k_nms_attrs[] = {"center_point_box", NULL};

typedef struct nms_geom {
  int64_t B, C, N; /* batches, classes, boxes */
  int64_t per;     /* most selections per (batch, class) */
  bool max_known;  /* max_output_boxes_per_class is a constant */
  int center;
} nms_geom;

static hx_status_t nms_geometry(const hc_node* n, nms_geom* g) {
  const hc_value *boxes = n->inputs[0], *scores = n->inputs[1];
  if (boxes->rank != 3 || boxes->dims[2] != 4)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "boxes ('%s') must be [batch, boxes, 4]", boxes->name);
  if (scores->rank != 3 || scores->dims[0] != boxes->dims[0] || scores->dims[2] != boxes->dims[1])
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "scores ('%s') must be [batch, classes, boxes] with the batch and box counts of boxes",
                         scores->name);
  g->B = boxes->dims[0];
  g->N = boxes->dims[1];
  g->C = scores->dims[1];
  int64_t c = hc_attr_int(n, "center_point_box", 0);
  if (c != 0 && c != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "center_point_box must be 0 or 1, got %lld", (long long)c);
  g->center = (int)c;
  const char* what[3] = {"max_output_boxes_per_class", "iou_threshold", "score_threshold"};
  for (int i = 2; i < 5; ++i) {
    const hc_value* v = hc_input(n, i);
    if (!v) continue;
    if (hc_value_numel(v) != 1 || v->rank > 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "%s ('%s') must be a scalar or a 1-element tensor",
                           what[i - 2], v->name);
  }
  const hc_value* mv = hc_input(n, 2);
  g->max_known = !mv || mv->kind == HC_VALUE_CONST;
  g->per = g->N;
  if (g->max_known) {
    int64_t m = 0;
    if (mv) hc_value_const_i64(mv, 0, &m);
    if (m < 0) m = 0;
    if (m < g->per) g->per = m;
  }
  const hc_value* iou = hc_input(n, 3);
  double t;
  if (iou && iou->kind == HC_VALUE_CONST && hc_value_const_f64(iou, 0, &t) && !(t >= 0 && t <= 1))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "iou_threshold = %g must be in [0, 1]", t);
  return HX_OK;
}

static hx_status_t infer_nms(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 5, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT(HX_DTYPE_FLOAT32)));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, HC_DT(HX_DTYPE_FLOAT32)));
  if (hc_input(n, 2)) HX_RETURN_IF_ERROR(hc_check_dtype(n, 2, HC_DT(HX_DTYPE_INT64)));
  if (hc_input(n, 3)) HX_RETURN_IF_ERROR(hc_check_dtype(n, 3, HC_DT(HX_DTYPE_FLOAT32)));
  if (hc_input(n, 4)) HX_RETURN_IF_ERROR(hc_check_dtype(n, 4, HC_DT(HX_DTYPE_FLOAT32)));
  nms_geom ng;
  HX_RETURN_IF_ERROR(nms_geometry(n, &ng));
  int64_t dims[2] = {ng.B * ng.C * ng.per, 3};
  hc_set_output(n, 0, HX_DTYPE_INT64, 2, dims);
  hc_dyn_set(n->outputs[0], dims[0] > 0);
  return HX_OK;
}

/* Workspace: counts[B*C], then per (batch, class) perm[N], tmp[N], sel[per]. */
static uint64_t nms_workspace(const hc_node* n) {
  nms_geom g = {0};
  hx_status_t st = nms_geometry(n, &g);
  if (st != HX_OK) {
    hx_status_free(st);
    return 0;
  }
  uint64_t T = (uint64_t)(g.B * g.C);
  return T * sizeof(int64_t) * (uint64_t)(1 + 2 * g.N + g.per);
}

typedef struct nms_emit {
  hc_kb* kb;
  LLVMValueRef scores; /* the current (batch, class) row of scores */
  LLVMValueRef boxes;  /* the current batch's boxes */
  int center;
} nms_emit;

/* Box a before box b: higher score (ties keep their order). */
static LLVMValueRef score_before(hc_kb* kb, void* ctx, LLVMValueRef a, LLVMValueRef b) {
  nms_emit* e = ctx;
  LLVMValueRef sa = hc_kb_load(kb, HX_DTYPE_FLOAT32, e->scores, a), sb = hc_kb_load(kb, HX_DTYPE_FLOAT32, e->scores, b);
  return LLVMBuildFCmp(kb->b, LLVMRealOGT, sa, sb, "");
}

static LLVMValueRef fmin2(hc_kb* kb, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(kb->b, LLVMBuildFCmp(kb->b, LLVMRealOLT, a, b, ""), a, b, "");
}
static LLVMValueRef fmax2(hc_kb* kb, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(kb->b, LLVMBuildFCmp(kb->b, LLVMRealOGT, a, b, ""), a, b, "");
}

/* Extent [lo, hi] of box i along axis 0 (x) or 1 (y). */
static void box_span(nms_emit* e, LLVMValueRef i, int axis, LLVMValueRef* lo, LLVMValueRef* hi) {
  hc_kb* kb = e->kb;
  LLVMValueRef base = hc_kb_imul(kb, i, hc_kb_i64(kb, 4));
  if (e->center) {
    /* [x_center, y_center, width, height]: axis 0 = x, 1 = y. */
    LLVMValueRef c = hc_kb_load(kb, HX_DTYPE_FLOAT32, e->boxes, hc_kb_iadd(kb, base, hc_kb_i64(kb, axis)));
    LLVMValueRef s = hc_kb_load(kb, HX_DTYPE_FLOAT32, e->boxes, hc_kb_iadd(kb, base, hc_kb_i64(kb, 2 + axis)));
    LLVMValueRef half = LLVMBuildFDiv(kb->b, s, LLVMConstReal(kb->t_f32, 2.0), "");
    *lo = LLVMBuildFSub(kb->b, c, half, "");
    *hi = LLVMBuildFAdd(kb->b, c, half, "");
    return;
  }
  /* [y1, x1, y2, x2]: axis 0 = x (slots 1, 3), 1 = y (slots 0, 2). */
  int k0 = axis == 0 ? 1 : 0;
  LLVMValueRef a = hc_kb_load(kb, HX_DTYPE_FLOAT32, e->boxes, hc_kb_iadd(kb, base, hc_kb_i64(kb, k0)));
  LLVMValueRef b = hc_kb_load(kb, HX_DTYPE_FLOAT32, e->boxes, hc_kb_iadd(kb, base, hc_kb_i64(kb, k0 + 2)));
  LLVMValueRef a_ge_b = LLVMBuildFCmp(kb->b, LLVMRealOGE, a, b, "");
  *lo = LLVMBuildSelect(kb->b, a_ge_b, b, a, "");
  *hi = LLVMBuildSelect(kb->b, a_ge_b, a, b, "");
}

/* Does selected box j suppress box i (i1)? ONNX Runtime's SuppressByIOU. */
static LLVMValueRef suppresses(nms_emit* e, LLVMValueRef i, LLVMValueRef j, LLVMValueRef thr) {
  hc_kb* kb = e->kb;
  LLVMBuilderRef b = kb->b;
  LLVMValueRef lo1[2], hi1[2], lo2[2], hi2[2], ok = LLVMConstInt(kb->t_i1, 1, 0), inter = NULL;
  LLVMValueRef zero = LLVMConstReal(kb->t_f32, 0.0);
  for (int ax = 0; ax < 2; ++ax) {
    box_span(e, i, ax, &lo1[ax], &hi1[ax]);
    box_span(e, j, ax, &lo2[ax], &hi2[ax]);
    LLVMValueRef ilo = fmax2(kb, lo1[ax], lo2[ax]), ihi = fmin2(kb, hi1[ax], hi2[ax]);
    ok = LLVMBuildAnd(b, ok, LLVMBuildFCmp(b, LLVMRealOGT, ihi, ilo, ""), "");
    LLVMValueRef ext = LLVMBuildFSub(b, ihi, ilo, "");
    inter = inter ? LLVMBuildFMul(b, inter, ext, "") : ext;
  }
  LLVMValueRef a1 = LLVMBuildFMul(b, LLVMBuildFSub(b, hi1[0], lo1[0], ""), LLVMBuildFSub(b, hi1[1], lo1[1], ""), "");
  LLVMValueRef a2 = LLVMBuildFMul(b, LLVMBuildFSub(b, hi2[0], lo2[0], ""), LLVMBuildFSub(b, hi2[1], lo2[1], ""), "");
  LLVMValueRef uni = LLVMBuildFSub(b, LLVMBuildFAdd(b, a1, a2, ""), inter, "");
  ok = LLVMBuildAnd(b, ok, LLVMBuildFCmp(b, LLVMRealOGT, inter, zero, ""), "");
  ok = LLVMBuildAnd(b, ok, LLVMBuildFCmp(b, LLVMRealOGT, a1, zero, ""), "");
  ok = LLVMBuildAnd(b, ok, LLVMBuildFCmp(b, LLVMRealOGT, a2, zero, ""), "");
  ok = LLVMBuildAnd(b, ok, LLVMBuildFCmp(b, LLVMRealOGT, uni, zero, ""), "");
  LLVMValueRef iou = LLVMBuildFDiv(b, inter, uni, "");
  return LLVMBuildAnd(b, ok, LLVMBuildFCmp(b, LLVMRealOGT, iou, thr, ""), "");
}

static hx_status_t lower_nms(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* y = n->outputs[0];
  nms_geom g = {0};
  HX_RETURN_IF_ERROR(nms_geometry(n, &g));
  const int64_t T = g.B * g.C, region = 2 * g.N + g.per;
  hc_loop tl, l, q;

  hc_kb kb;
  if (T > 0) {
    HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "select", T, &kb));
    LLVMBuilderRef b = kb.b;
    nms_emit e = {.kb = &kb, .center = g.center};
    LLVMValueRef zero = hc_kb_i64(&kb, 0), one = hc_kb_i64(&kb, 1), Nv = hc_kb_i64(&kb, g.N);
    LLVMValueRef pboxes = hc_kb_ptr(&kb, n->inputs[0]), pscores = hc_kb_ptr(&kb, n->inputs[1]);
    LLVMValueRef counts = hc_kb_workspace(&kb);
    const hc_value *mv = hc_input(n, 2), *iv = hc_input(n, 3), *sv = hc_input(n, 4);
    LLVMValueRef maxout = mv ? hc_kb_load(&kb, HX_DTYPE_INT64, hc_kb_ptr(&kb, mv), zero) : zero;
    maxout = hc_kb_imin(&kb, hc_kb_imax(&kb, maxout, zero), hc_kb_i64(&kb, g.per));
    LLVMValueRef thr = iv ? hc_kb_load(&kb, HX_DTYPE_FLOAT32, hc_kb_ptr(&kb, iv), zero) : LLVMConstReal(kb.t_f32, 0.0);
    LLVMValueRef sthr = sv ? hc_kb_load(&kb, HX_DTYPE_FLOAT32, hc_kb_ptr(&kb, sv), zero) : NULL;
    LLVMValueRef m_slot = hc_kb_alloca(&kb, kb.t_i64, "cand"), cnt_slot = hc_kb_alloca(&kb, kb.t_i64, "sel");
    LLVMValueRef keep_slot = hc_kb_alloca(&kb, kb.t_i1, "keep");

    LLVMValueRef t = hc_kb_task_loop_begin(&kb, &tl);
    LLVMValueRef bi = LLVMBuildUDiv(b, t, hc_kb_i64(&kb, g.C), "");
    e.scores = hc_kb_gep(&kb, HX_DTYPE_FLOAT32, pscores, hc_kb_imul(&kb, t, Nv));
    e.boxes = hc_kb_gep(&kb, HX_DTYPE_FLOAT32, pboxes, hc_kb_imul(&kb, bi, hc_kb_i64(&kb, g.N * 4)));
    LLVMValueRef rbase = hc_kb_iadd(&kb, hc_kb_i64(&kb, T), hc_kb_imul(&kb, t, hc_kb_i64(&kb, region)));
    LLVMValueRef perm = hc_kb_gep(&kb, HX_DTYPE_INT64, counts, rbase);
    LLVMValueRef tmp = hc_kb_gep(&kb, HX_DTYPE_INT64, perm, Nv);
    LLVMValueRef sel = hc_kb_gep(&kb, HX_DTYPE_INT64, tmp, Nv);

    /* Candidates above the score threshold, best first. */
    LLVMBuildStore(b, zero, m_slot);
    LLVMValueRef i = hc_loop_begin(&kb, &l, zero, Nv, "i");
    LLVMValueRef m = LLVMBuildLoad2(b, kb.t_i64, m_slot, "");
    hc_dyn_i64_store(&kb, perm, m, i);
    LLVMValueRef pass = LLVMConstInt(kb.t_i1, 1, 0);
    if (sthr) pass = LLVMBuildFCmp(b, LLVMRealOGT, hc_kb_load(&kb, HX_DTYPE_FLOAT32, e.scores, i), sthr, "");
    LLVMBuildStore(b, hc_kb_iadd(&kb, m, LLVMBuildZExt(b, pass, kb.t_i64, "")), m_slot);
    hc_loop_end(&kb, &l);
    LLVMValueRef mcount = LLVMBuildLoad2(b, kb.t_i64, m_slot, "");
    hc_dyn_sort(&kb, perm, tmp, mcount, score_before, &e);

    /* Greedy selection. */
    LLVMBuildStore(b, zero, cnt_slot);
    LLVMValueRef p = hc_loop_begin(&kb, &l, zero, mcount, "p");
    LLVMValueRef cnt = LLVMBuildLoad2(b, kb.t_i64, cnt_slot, "");
    hc_if room;
    hc_if_begin(&kb, &room, LLVMBuildICmp(b, LLVMIntSLT, cnt, maxout, ""));
    LLVMValueRef box = hc_dyn_i64_load(&kb, perm, p);
    LLVMBuildStore(b, LLVMConstInt(kb.t_i1, 1, 0), keep_slot);
    LLVMValueRef s = hc_loop_begin(&kb, &q, zero, cnt, "s");
    LLVMValueRef sup = suppresses(&e, box, hc_dyn_i64_load(&kb, sel, s), thr);
    LLVMValueRef keep = LLVMBuildLoad2(b, kb.t_i1, keep_slot, "");
    LLVMBuildStore(b, LLVMBuildAnd(b, keep, LLVMBuildNot(b, sup, ""), ""), keep_slot);
    hc_loop_end(&kb, &q);
    hc_if take;
    hc_if_begin(&kb, &take, LLVMBuildLoad2(b, kb.t_i1, keep_slot, ""));
    hc_dyn_i64_store(&kb, sel, cnt, box);
    LLVMBuildStore(b, hc_kb_iadd(&kb, cnt, one), cnt_slot);
    hc_if_end(&kb, &take);
    hc_if_end(&kb, &room);
    hc_loop_end(&kb, &l);
    hc_dyn_i64_store(&kb, counts, t, LLVMBuildLoad2(b, kb.t_i64, cnt_slot, ""));
    hc_loop_end(&kb, &tl);
    double nn = (double)g.N;
    hc_kb_end(&kb, (double)T * (nn * 20.0 + nn * (double)g.per * 30.0),
              (double)hc_value_nbytes(n->inputs[0]) * (double)g.C + (double)hc_value_nbytes(n->inputs[1]));
  }

  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "write", 1, &kb));
  LLVMBuilderRef b = kb.b;
  LLVMValueRef zero = hc_kb_i64(&kb, 0), one = hc_kb_i64(&kb, 1), three = hc_kb_i64(&kb, 3);
  LLVMValueRef py = hc_kb_ptr(&kb, y), counts = hc_kb_workspace(&kb);
  LLVMValueRef row_slot = hc_kb_alloca(&kb, kb.t_i64, "row");
  LLVMBuildStore(b, zero, row_slot);
  LLVMValueRef t = hc_loop_begin(&kb, &tl, zero, hc_kb_i64(&kb, T), "t");
  LLVMValueRef bi = LLVMBuildUDiv(b, t, hc_kb_i64(&kb, g.C > 0 ? g.C : 1), "");
  LLVMValueRef ci = LLVMBuildURem(b, t, hc_kb_i64(&kb, g.C > 0 ? g.C : 1), "");
  LLVMValueRef sbase = hc_kb_iadd(&kb, hc_kb_iadd(&kb, hc_kb_i64(&kb, T), hc_kb_imul(&kb, t, hc_kb_i64(&kb, region))),
                                  hc_kb_i64(&kb, 2 * g.N));
  LLVMValueRef s = hc_loop_begin(&kb, &l, zero, hc_dyn_i64_load(&kb, counts, t), "s");
  LLVMValueRef row = LLVMBuildLoad2(b, kb.t_i64, row_slot, "");
  LLVMValueRef at = hc_kb_imul(&kb, row, three);
  hc_dyn_i64_store(&kb, py, at, bi);
  hc_dyn_i64_store(&kb, py, hc_kb_iadd(&kb, at, one), ci);
  hc_dyn_i64_store(&kb, py, hc_kb_iadd(&kb, at, hc_kb_i64(&kb, 2)),
                   hc_dyn_i64_load(&kb, counts, hc_kb_iadd(&kb, sbase, s)));
  LLVMBuildStore(b, hc_kb_iadd(&kb, row, one), row_slot);
  hc_loop_end(&kb, &l);
  hc_loop_end(&kb, &tl);
  hc_dyn_store_dims(&kb, y, (LLVMValueRef[]){LLVMBuildLoad2(b, kb.t_i64, row_slot, ""), three});
  hc_kb_end(&kb, 0, (double)hc_value_nbytes(y));
  return HX_OK;
}

const hc_op_desc hc_op_nonmaxsuppression = {"NonMaxSuppression", "", 10, 22, k_nms_attrs, HC_OP_NO_FOLD,
                                            infer_nms, lower_nms, NULL, nms_workspace};
