/* Loss functions: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
 * (opsets 12-22).
 *
 * The input x is (N, C, d1, ..., dk), the target (N, d1, ..., dk) holds
 * class indices and the optional weight is (C). For every position p of the
 * target (N * D of them, D = d1 * ... * dk):
 *
 *   lp   = x[n, t, d]                         (NegativeLogLikelihoodLoss)
 *   lp   = log_softmax(x[n, :, d])[t]         (SoftmaxCrossEntropyLoss)
 *   w    = weight[t] (1 without weights), 0 where t == ignore_index
 *   loss = -lp * w (0 where t == ignore_index)
 *
 * reduction "none" writes the losses in the target's shape; "sum" writes
 * their sum and "mean" sum(loss) / sum(w): as in the ONNX reference, the
 * mean divides by the summed weights of the targets that are not ignored
 * (the plain count without weights). Every target ignored makes the mean
 * 0 / 0 = NaN, as in the reference. SoftmaxCrossEntropyLoss may also write
 * log_softmax(x) along C (output log_prob).
 *
 * Targets are read at run time: a target outside [0, C) that is not the
 * ignore_index is invalid input and gives a NaN loss element (so a NaN sum
 * or mean) without reading outside x or weight.
 *
 * Kernels: a task takes a block of positions of one image (up to LOSS_BLOCK
 * neighbouring d; for D == 1 a block of rows of x). SoftmaxCrossEntropyLoss
 * first computes per-position maxima and log-sums in stack buffers, with
 * the inner loops on contiguous memory. For "sum"/"mean" every task writes
 * its partial sums of loss and weight (float64) to the workspace and a
 * second one-task kernel adds them in task order, so the result does not
 * depend on threading.
 */
#include <math.h>
#include <string.h>

#include "compiler/ops/op.h"

/* Positions per task when D > 1. */
#define LOSS_BLOCK 256
/* Elements of x per task when D == 1. */
#define LOSS_ROW_ELEMS 16384

enum { RED_NONE, RED_SUM, RED_MEAN };

/* The geometry and options of one loss node. */
typedef struct loss_plan {
  bool sce, has_weight, has_ii, log_prob;
  int64_t ii;
  int red;
  hx_dtype_t dt, tdt;
  int64_t N, C, D;
  int64_t block, nblocks, tasks; /* positions per task; blocks per image (D > 1) */
} loss_plan;

/* Reads and validates the node; fills the plan. */
static hx_status_t loss_setup(const hc_node* n, loss_plan* p) {
  memset(p, 0, sizeof *p);
  p->sce = strcmp(n->op_type, "SoftmaxCrossEntropyLoss") == 0;
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 3, 1, p->sce ? 2 : 1));
  uint64_t fl = HC_DT(HX_DTYPE_FLOAT16) | HC_DT(HX_DTYPE_FLOAT32) | HC_DT(HX_DTYPE_FLOAT64);
  if ((p->sce && n->opset >= 13) || n->opset >= 22) fl |= HC_DT(HX_DTYPE_BFLOAT16);
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, fl));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, HC_DT(HX_DTYPE_INT32) | HC_DT(HX_DTYPE_INT64)));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 2));
  const hc_value *x = n->inputs[0], *t = n->inputs[1], *w = hc_input(n, 2);
  char s1[128], s2[128];
  if (x->rank < 2)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input ('%s') has shape %s; expected (N, C, d1, ...)", x->name,
                         hc_shape_str(x->rank, x->dims, s1, sizeof s1));
  bool ok = t->rank == x->rank - 1 && t->dims[0] == x->dims[0];
  for (int i = 1; ok && i < t->rank; ++i) ok = t->dims[i] == x->dims[i + 1];
  if (!ok)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "target ('%s') has shape %s; expected (N, d1, ...) of input shape %s", t->name,
                         hc_shape_str(t->rank, t->dims, s1, sizeof s1), hc_shape_str(x->rank, x->dims, s2, sizeof s2));
  if (w && (w->rank != 1 || w->dims[0] != x->dims[1]))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "weight ('%s') has shape %s; expected (%lld)", w->name,
                         hc_shape_str(w->rank, w->dims, s1, sizeof s1), (long long)x->dims[1]);
  const char* red = hc_attr_string(n, "reduction", "mean");
  if (!strcmp(red, "none"))
    p->red = RED_NONE;
  else if (!strcmp(red, "sum"))
    p->red = RED_SUM;
  else if (!strcmp(red, "mean"))
    p->red = RED_MEAN;
  else
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "reduction '%s' is not one of none, sum, mean", red);
  p->has_weight = w != NULL;
  p->has_ii = hc_node_attr(n, "ignore_index") != NULL;
  p->ii = hc_attr_int(n, "ignore_index", 0);
  p->log_prob = p->sce && n->num_outputs > 1 && n->outputs[1];
  p->dt = x->dtype;
  p->tdt = t->dtype;
  p->N = x->dims[0];
  p->C = x->dims[1];
  p->D = hc_shape_numel(x->rank - 2, x->dims + 2);
  if (p->D > 1) {
    p->block = p->D < LOSS_BLOCK ? p->D : LOSS_BLOCK;
    p->nblocks = (p->D + p->block - 1) / p->block;
    p->tasks = p->N * p->nblocks;
  } else {
    int64_t rows = LOSS_ROW_ELEMS / (p->C > 0 ? p->C : 1);
    p->block = rows < 1 ? 1 : rows > LOSS_BLOCK ? LOSS_BLOCK : rows;
    p->nblocks = 1;
    p->tasks = p->D == 0 ? 0 : (p->N + p->block - 1) / p->block;
  }
  return HX_OK;
}

static hx_status_t infer_loss(hc_graph* g, hc_node* n) {
  loss_plan p;
  HX_RETURN_IF_ERROR(loss_setup(n, &p));
  const hc_value *x = n->inputs[0], *t = n->inputs[1];
  if (p.red == RED_NONE)
    hc_set_output(n, 0, p.dt, t->rank, t->dims);
  else
    hc_set_output(n, 0, p.dt, 0, NULL);
  if (p.log_prob) hc_set_output(n, 1, p.dt, x->rank, x->dims);
  return HX_OK;
}

/* Partial sums (loss, weight) per task for the reductions. */
static uint64_t loss_workspace(const hc_node* n) {
  loss_plan p;
  hx_status_t st = loss_setup(n, &p);
  if (st) {
    hx_status_free(st);
    return 0;
  }
  if (p.red == RED_NONE) return 0;
  return (uint64_t)(p.tasks > 0 ? p.tasks : 1) * 2 * sizeof(double);
}

/* Address of element i of a stack buffer of type t. */
static LLVMValueRef buf_at(hc_kb* kb, LLVMTypeRef t, LLVMValueRef buf, LLVMValueRef i) {
  return LLVMBuildGEP2(kb->b, t, buf, &i, 1, "");
}

/* The per-position kernel: statistics (SoftmaxCrossEntropyLoss), log_prob,
 * and the loss elements or their partial sums. */
static void emit_positions(hc_kb* kb, const loss_plan* p, const hc_node* n) {
  LLVMBuilderRef b = kb->b;
  hx_dtype_t dt = p->dt;
  LLVMTypeRef ct = hc_kb_compute_type(kb, dt);
  LLVMValueRef X = hc_kb_ptr(kb, n->inputs[0]);
  LLVMValueRef T = hc_kb_ptr(kb, n->inputs[1]);
  LLVMValueRef W = p->has_weight ? hc_kb_ptr(kb, n->inputs[2]) : NULL;
  LLVMValueRef Y = p->red == RED_NONE ? hc_kb_ptr(kb, n->outputs[0]) : NULL;
  LLVMValueRef LP = p->log_prob ? hc_kb_ptr(kb, n->outputs[1]) : NULL;
  LLVMValueRef WS = p->red == RED_NONE ? NULL : hc_kb_workspace(kb);
  LLVMValueRef mx = NULL, ls = NULL;
  LLVMTypeRef bt = LLVMArrayType2(ct, (uint64_t)p->block);
  if (p->sce) {
    mx = hc_kb_alloca(kb, bt, "max");
    ls = hc_kb_alloca(kb, bt, "logsum");
  }
  LLVMValueRef lacc = hc_kb_alloca(kb, kb->t_f64, "lsum"), wacc = hc_kb_alloca(kb, kb->t_f64, "wsum");
  LLVMValueRef zero = hc_kb_i64(kb, 0);
  bool rows = p->D <= 1;

  hc_loop task, jl, cl;
  LLVMValueRef t = hc_kb_task_loop_begin(kb, &task);
  /* Positions [p0, p0 + cnt); x index of (position j, class c) is
   * xb + c * cs + j * js. */
  LLVMValueRef p0, cnt, xb;
  int64_t cs, js;
  if (rows) {
    p0 = hc_kb_imul(kb, t, hc_kb_i64(kb, p->block));
    cnt = hc_kb_imin(kb, hc_kb_i64(kb, p->block), LLVMBuildSub(b, hc_kb_i64(kb, p->N), p0, ""));
    xb = hc_kb_imul(kb, p0, hc_kb_i64(kb, p->C));
    cs = 1;
    js = p->C;
  } else {
    LLVMValueRef img = LLVMBuildUDiv(b, t, hc_kb_i64(kb, p->nblocks), "");
    LLVMValueRef d0 = hc_kb_imul(kb, LLVMBuildURem(b, t, hc_kb_i64(kb, p->nblocks), ""), hc_kb_i64(kb, p->block));
    p0 = hc_kb_iadd(kb, hc_kb_imul(kb, img, hc_kb_i64(kb, p->D)), d0);
    cnt = hc_kb_imin(kb, hc_kb_i64(kb, p->block), LLVMBuildSub(b, hc_kb_i64(kb, p->D), d0, ""));
    xb = hc_kb_iadd(kb, hc_kb_imul(kb, img, hc_kb_i64(kb, p->C * p->D)), d0);
    cs = p->D;
    js = 1;
  }
  LLVMValueRef nc = hc_kb_i64(kb, p->C);
#define XIDX(j, c) \
  hc_kb_iadd(kb, xb, hc_kb_iadd(kb, hc_kb_imul(kb, (c), hc_kb_i64(kb, cs)), hc_kb_imul(kb, (j), hc_kb_i64(kb, js))))

  if (p->sce) {
    if (rows) {
      /* One row of C contiguous classes per position. */
      LLVMValueRef acc = hc_kb_alloca(kb, ct, "acc");
      LLVMValueRef j = hc_loop_begin(kb, &jl, zero, cnt, "j");
      LLVMBuildStore(b, hc_kb_const(kb, dt, -INFINITY), acc);
      LLVMValueRef c = hc_loop_begin(kb, &cl, zero, nc, "c");
      LLVMValueRef v = hc_kb_load(kb, dt, X, XIDX(j, c));
      LLVMBuildStore(b, hc_kb_max(kb, dt, LLVMBuildLoad2(b, ct, acc, ""), v), acc);
      hc_loop_end(kb, &cl);
      LLVMValueRef m = LLVMBuildLoad2(b, ct, acc, "");
      LLVMBuildStore(b, m, buf_at(kb, ct, mx, j));
      LLVMBuildStore(b, hc_kb_const(kb, dt, 0), acc);
      c = hc_loop_begin(kb, &cl, zero, nc, "c");
      LLVMValueRef d = hc_kb_sub(kb, dt, hc_kb_load(kb, dt, X, XIDX(j, c)), m);
      LLVMValueRef e = hc_kb_math(kb, dt, "exp", &d, 1);
      LLVMBuildStore(b, hc_kb_reassoc(hc_kb_add(kb, dt, LLVMBuildLoad2(b, ct, acc, ""), e)), acc);
      hc_loop_end(kb, &cl);
      LLVMValueRef s = LLVMBuildLoad2(b, ct, acc, "");
      LLVMBuildStore(b, hc_kb_math(kb, dt, "log", &s, 1), buf_at(kb, ct, ls, j));
      hc_loop_end(kb, &jl);
    } else {
      /* Classes spaced D apart: per-position state in the buffers, the
       * inner loop over neighbouring positions. */
      LLVMValueRef j = hc_loop_begin(kb, &jl, zero, cnt, "j");
      LLVMBuildStore(b, hc_kb_const(kb, dt, -INFINITY), buf_at(kb, ct, mx, j));
      LLVMBuildStore(b, hc_kb_const(kb, dt, 0), buf_at(kb, ct, ls, j));
      hc_loop_end(kb, &jl);
      LLVMValueRef c = hc_loop_begin(kb, &cl, zero, nc, "c");
      j = hc_loop_begin(kb, &jl, zero, cnt, "j");
      LLVMValueRef mp = buf_at(kb, ct, mx, j);
      LLVMBuildStore(b, hc_kb_max(kb, dt, LLVMBuildLoad2(b, ct, mp, ""), hc_kb_load(kb, dt, X, XIDX(j, c))), mp);
      hc_loop_end(kb, &jl);
      hc_loop_end(kb, &cl);
      c = hc_loop_begin(kb, &cl, zero, nc, "c");
      j = hc_loop_begin(kb, &jl, zero, cnt, "j");
      LLVMValueRef d =
          hc_kb_sub(kb, dt, hc_kb_load(kb, dt, X, XIDX(j, c)), LLVMBuildLoad2(b, ct, buf_at(kb, ct, mx, j), ""));
      LLVMValueRef sp = buf_at(kb, ct, ls, j);
      LLVMBuildStore(b, hc_kb_add(kb, dt, LLVMBuildLoad2(b, ct, sp, ""), hc_kb_math(kb, dt, "exp", &d, 1)), sp);
      hc_loop_end(kb, &jl);
      hc_loop_end(kb, &cl);
      j = hc_loop_begin(kb, &jl, zero, cnt, "j");
      LLVMValueRef sp2 = buf_at(kb, ct, ls, j);
      LLVMValueRef s = LLVMBuildLoad2(b, ct, sp2, "");
      LLVMBuildStore(b, hc_kb_math(kb, dt, "log", &s, 1), sp2);
      hc_loop_end(kb, &jl);
    }
    if (LP) {
      /* log_prob = x - max - log(sum exp(x - max)), contiguous innermost. */
      LLVMValueRef c, j;
      if (rows) {
        j = hc_loop_begin(kb, &jl, zero, cnt, "j");
        c = hc_loop_begin(kb, &cl, zero, nc, "c");
      } else {
        c = hc_loop_begin(kb, &cl, zero, nc, "c");
        j = hc_loop_begin(kb, &jl, zero, cnt, "j");
      }
      LLVMValueRef xi = XIDX(j, c);
      LLVMValueRef v = hc_kb_sub(kb, dt, hc_kb_load(kb, dt, X, xi), LLVMBuildLoad2(b, ct, buf_at(kb, ct, mx, j), ""));
      v = hc_kb_sub(kb, dt, v, LLVMBuildLoad2(b, ct, buf_at(kb, ct, ls, j), ""));
      hc_kb_store(kb, dt, LP, xi, v);
      if (rows) {
        hc_loop_end(kb, &cl);
        hc_loop_end(kb, &jl);
      } else {
        hc_loop_end(kb, &jl);
        hc_loop_end(kb, &cl);
      }
    }
  }

  /* The loss of each position. */
  LLVMBuildStore(b, LLVMConstReal(kb->t_f64, 0.0), lacc);
  LLVMBuildStore(b, LLVMConstReal(kb->t_f64, 0.0), wacc);
  LLVMValueRef j = hc_loop_begin(kb, &jl, zero, cnt, "j");
  LLVMValueRef pos = hc_kb_iadd(kb, p0, j);
  LLVMValueRef tg = hc_kb_load(kb, p->tdt, T, pos);
  if (p->tdt != HX_DTYPE_INT64) tg = LLVMBuildSExt(b, tg, kb->t_i64, "");
  LLVMValueRef ign =
      p->has_ii ? LLVMBuildICmp(b, LLVMIntEQ, tg, hc_kb_i64(kb, p->ii), "") : LLVMConstInt(kb->t_i1, 0, 0);
  LLVMValueRef valid = LLVMBuildICmp(b, LLVMIntULT, tg, nc, "");
  LLVMValueRef safe = LLVMBuildSelect(b, valid, tg, zero, "");
  LLVMValueRef lp = hc_kb_const(kb, dt, NAN), w = hc_kb_const(kb, dt, 1.0);
  if (p->C > 0) {
    lp = hc_kb_load(kb, dt, X, XIDX(j, safe));
    if (p->sce) {
      lp = hc_kb_sub(kb, dt, lp, LLVMBuildLoad2(b, ct, buf_at(kb, ct, mx, j), ""));
      lp = hc_kb_sub(kb, dt, lp, LLVMBuildLoad2(b, ct, buf_at(kb, ct, ls, j), ""));
    }
    if (W) w = hc_kb_load(kb, dt, W, safe);
  }
#undef XIDX
  LLVMValueRef cz = hc_kb_const(kb, dt, 0.0);
  w = hc_kb_select(kb, ign, cz, w);
  LLVMValueRef l = hc_kb_mul(kb, dt, LLVMBuildFNeg(b, lp, ""), w);
  l = hc_kb_select(kb, ign, cz, l);
  l = hc_kb_select(kb, LLVMBuildOr(b, valid, ign, ""), l, hc_kb_const(kb, dt, NAN));
  if (Y) {
    hc_kb_store(kb, dt, Y, pos, l);
  } else {
    LLVMValueRef ld = hc_kb_convert(kb, l, dt, HX_DTYPE_FLOAT64), wd = hc_kb_convert(kb, w, dt, HX_DTYPE_FLOAT64);
    LLVMBuildStore(b, LLVMBuildFAdd(b, LLVMBuildLoad2(b, kb->t_f64, lacc, ""), ld, ""), lacc);
    LLVMBuildStore(b, LLVMBuildFAdd(b, LLVMBuildLoad2(b, kb->t_f64, wacc, ""), wd, ""), wacc);
  }
  hc_loop_end(kb, &jl);
  if (WS) {
    LLVMValueRef slot = hc_kb_imul(kb, t, hc_kb_i64(kb, 2));
    LLVMBuildStore(b, LLVMBuildLoad2(b, kb->t_f64, lacc, ""), buf_at(kb, kb->t_f64, WS, slot));
    LLVMBuildStore(b, LLVMBuildLoad2(b, kb->t_f64, wacc, ""),
                   buf_at(kb, kb->t_f64, WS, hc_kb_iadd(kb, slot, hc_kb_i64(kb, 1))));
  }
  hc_loop_end(kb, &task);
}

static hx_status_t lower_loss(hc_lower_ctx* lc, hc_node* n) {
  loss_plan p;
  HX_RETURN_IF_ERROR(loss_setup(n, &p));
  double xbytes = (double)hc_value_nbytes(n->inputs[0]);
  double positions = (double)p.N * (double)p.D;
  hc_kb kb;
  if (p.tasks > 0) {
    HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, p.tasks, &kb));
    emit_positions(&kb, &p, n);
    double flops = positions * 4.0 + (p.sce ? (double)hc_value_numel(n->inputs[0]) * 14.0 : 0.0);
    double bytes = (p.sce ? xbytes * (p.log_prob ? 4.0 : 2.0) : positions * (double)hx_dtype_size(p.dt)) +
                   (double)hc_value_nbytes(n->inputs[1]) + (double)hc_value_nbytes(n->outputs[0]);
    hc_kb_end(&kb, flops, bytes);
  }
  if (p.red == RED_NONE) return HX_OK;

  /* Adds the per-task partial sums in task order. */
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "reduce", 1, &kb));
  LLVMBuilderRef b = kb.b;
  LLVMValueRef WS = hc_kb_workspace(&kb), Y = hc_kb_ptr(&kb, n->outputs[0]);
  LLVMValueRef lacc = hc_kb_alloca(&kb, kb.t_f64, "lsum"), wacc = hc_kb_alloca(&kb, kb.t_f64, "wsum");
  hc_loop task, il;
  hc_kb_task_loop_begin(&kb, &task);
  LLVMBuildStore(b, LLVMConstReal(kb.t_f64, 0.0), lacc);
  LLVMBuildStore(b, LLVMConstReal(kb.t_f64, 0.0), wacc);
  LLVMValueRef i = hc_loop_begin(&kb, &il, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, p.tasks), "i");
  LLVMValueRef slot = hc_kb_imul(&kb, i, hc_kb_i64(&kb, 2));
  LLVMValueRef lv = LLVMBuildLoad2(b, kb.t_f64, buf_at(&kb, kb.t_f64, WS, slot), "");
  LLVMValueRef wv =
      LLVMBuildLoad2(b, kb.t_f64, buf_at(&kb, kb.t_f64, WS, hc_kb_iadd(&kb, slot, hc_kb_i64(&kb, 1))), "");
  LLVMBuildStore(b, LLVMBuildFAdd(b, LLVMBuildLoad2(b, kb.t_f64, lacc, ""), lv, ""), lacc);
  LLVMBuildStore(b, LLVMBuildFAdd(b, LLVMBuildLoad2(b, kb.t_f64, wacc, ""), wv, ""), wacc);
  hc_loop_end(&kb, &il);
  LLVMValueRef r = LLVMBuildLoad2(b, kb.t_f64, lacc, "");
  if (p.red == RED_MEAN) r = LLVMBuildFDiv(b, r, LLVMBuildLoad2(b, kb.t_f64, wacc, ""), "");
  hc_kb_store(&kb, p.dt, Y, hc_kb_i64(&kb, 0), hc_kb_convert(&kb, r, HX_DTYPE_FLOAT64, p.dt));
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, 2.0 * (double)p.tasks, 16.0 * (double)p.tasks);
  return HX_OK;
}

static const char* const k_loss_attrs[] = {"ignore_index", "reduction", NULL};

const hc_op_desc hc_op_negative_log_likelihood_loss = {
    "NegativeLogLikelihoodLoss", "", 12, 22, k_loss_attrs, 0, infer_loss, lower_loss, NULL, loss_workspace};
const hc_op_desc hc_op_softmax_cross_entropy_loss = {
    "SoftmaxCrossEntropyLoss", "", 12, 22, k_loss_attrs, 0, infer_loss, lower_loss, NULL, loss_workspace};
