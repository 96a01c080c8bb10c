/* QDQ to integer kernels (-O1 and above; docs/precision.md).
 *
 * A model quantized in the "QDQ" format (what onnxruntime.quantization
 * writes, and bench/precision/make_qdq.py) keeps float Conv/MatMul/Gemm
 * nodes between DequantizeLinear and QuantizeLinear nodes:
 *
 *   xq -DQ(sx, zx)-> x --+
 *   wq -DQ(sw, zw)-> w --+-- Conv --> y [--> Relu] --Q(sy, zy)--> yq
 *   bq -DQ(sx*sw)--> b --+
 *
 * Executed as written that is float arithmetic on dequantized copies. This
 * pass rewrites each such group into one integer operator whose kernels
 * multiply 8-bit values with vpmaddwd / AVX512-VNNI and requantize once
 * (compiler/ops/integer_ops.c):
 *
 *   Conv   -> QLinearConv(xq, sx, zx, wq, sw, zw, sy, zy, bq)
 *   MatMul -> QLinearMatMul(aq, sa, za, bq, sb, zb, sy, zy)
 *   Gemm   -> Reshape(aq, [0, K, 1, 1]) -> QLinearConv (1x1, W as [N, K, 1, 1],
 *             transposed at compile time when transB = 0) -> Reshape [0, -1]
 *
 * and DQ -> MaxPool [-> Relu] -> Q with the same parameters on both sides
 * into a MaxPool of the 8-bit tensor (rewrite_maxpool).
 *
 * Exactness. QDQ semantics is yq = sat(rne(conv(x, w) + b) / sy) + zy) with
 * x = (xq - zx) * sx and so on; the integer form computes
 * sat(rne((sum (xq - zx)(wq - zw) + bq) * sx*sw/sy) + zy), the same real
 * number before the one rounding (padding reads zx, i.e. x = 0, in both).
 * The two differ only where float32 rounding of the float form moves a
 * value across a rounding boundary (a tie), which is the float form's own
 * error. So the pass only rewrites when nothing else differs:
 *  - every scale and zero point is a float32 / 8-bit constant; x, y (and a
 *    MatMul's A) per tensor; weights per tensor or per output channel (DQ
 *    axis 0 for Conv and transB Gemm weights, the last axis for a MatMul B
 *    or a Gemm B without transB);
 *  - the bias is DequantizeLinear of an int32 constant with zero point 0
 *    and scale sx * sw[m] (float32 product, relative difference <= 1e-6,
 *    the rounding of how a tool computed it): a float bias cannot be folded
 *    into the integer sum exactly, so such a node stays float;
 *  - y feeds only the QuantizeLinear (or only a Relu that feeds only it, and
 *    then zy must be the quantized type's minimum, so that saturation is the
 *    Relu: Q(relu(y)) = max(Q(y), zy) = Q(y));
 *  - Gemm: alpha = beta = 1, transA = 0, C one value per column.
 * Anything else is left as it is (and still computes the right thing, in
 * float). The DequantizeLinear nodes of weights and biases become dead and
 * DCE removes them.
 *
 * The pass runs first, before shape inference: shape inference evaluates
 * nodes whose inputs are constants, which would turn DequantizeLinear(wq)
 * into float weights and hide the pattern. It needs no shapes: everything
 * it checks is a constant (initializers carry their shapes); the values it
 * creates get theirs from shape inference.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/op.h"
#include "passes/pass.h"

static bool is_op(const hc_node* n, const char* type) {
  return n && !n->dead && !n->domain[0] && !strcmp(n->op_type, type);
}

/* The node producing v, when it is `type`. */
static hc_node* producer_is(const hc_value* v, const char* type) {
  return v && v->kind == HC_VALUE_INTERMEDIATE && is_op(v->producer, type) ? v->producer : NULL;
}

static bool is_q8(hx_dtype_t t) { return t == HX_DTYPE_UINT8 || t == HX_DTYPE_INT8; }

/* A constant with data. */
static bool is_const(const hc_value* v) { return v && v->kind == HC_VALUE_CONST && v->data; }

/* One value, scalar or 1-D. */
static bool single(const hc_value* v) { return v->rank <= 1 && hc_value_numel(v) == 1; }

/* The quantization of a DequantizeLinear or QuantizeLinear node: scale and
 * zero point (NULL when omitted: 0 of the quantized type), per tensor or
 * along `axis` (normalised against `rank`, the quantized tensor's rank when
 * known, -1 otherwise). */
typedef struct qparams {
  hc_value *scale, *zp;
  hx_dtype_t qt; /* the 8-bit type */
  bool per_tensor;
  int64_t axis;
  int64_t count; /* values of a per-axis scale */
} qparams;

/* Reads a Q/DQ node's parameters; false when they are not constants of the
 * types the integer operators take (float32 scales, 8-bit zero points;
 * int32 for a bias dequantization when allow_i32), or blocked. */
static bool read_qparams(const hc_node* n, hx_dtype_t qt, int rank, bool allow_i32, qparams* q) {
  memset(q, 0, sizeof *q);
  if (n->num_inputs < 2 || hc_attr_int(n, "block_size", 0) != 0) return false;
  q->scale = n->inputs[1];
  q->zp = hc_input(n, 2);
  q->qt = qt;
  if (!is_const(q->scale) || q->scale->dtype != HX_DTYPE_FLOAT32) return false;
  if (!(is_q8(qt) || (allow_i32 && qt == HX_DTYPE_INT32))) return false;
  if (q->zp && (!is_const(q->zp) || q->zp->dtype != qt)) return false;
  q->per_tensor = single(q->scale);
  if (q->zp && (single(q->zp) != q->per_tensor || hc_value_numel(q->zp) != hc_value_numel(q->scale))) return false;
  if (!q->per_tensor) {
    if (q->scale->rank != 1 || rank < 1) return false;
    int64_t axis = hc_attr_int(n, "axis", 1);
    if (axis < -rank || axis >= rank) return false;
    q->axis = axis < 0 ? axis + rank : axis;
    q->count = q->scale->dims[0];
  }
  return true;
}

/* Zero point value i (0 when omitted). */
static int64_t zp_at(const qparams* q, int64_t i) {
  int64_t z = 0;
  if (q->zp) hc_value_const_i64(q->zp, q->per_tensor ? 0 : i, &z);
  return z;
}

/* Scale value i. */
static double scale_at(const qparams* q, int64_t i) {
  double s = 0;
  hc_value_const_f64(q->scale, q->per_tensor ? 0 : i, &s);
  return s;
}

/* The element type of a DequantizeLinear's input before shape inference:
 * its zero point's, the constant's own, or what the QuantizeLinear
 * producing it makes (uint8 by default). */
static hx_dtype_t dq_input_type(const hc_node* dq) {
  const hc_value* x = dq->inputs[0];
  const hc_value* zp = hc_input(dq, 2);
  if (zp) return zp->dtype;
  if (x->dtype != HX_DTYPE_UNDEFINED) return x->dtype;
  hc_node* q = producer_is(x, "QuantizeLinear");
  if (!q) return HX_DTYPE_UNDEFINED;
  if (hc_input(q, 2)) return q->inputs[2]->dtype;
  return hc_attr_int(q, "output_dtype", 0) ? HX_DTYPE_UNDEFINED : HX_DTYPE_UINT8;
}

/* A DequantizeLinear producing v with parameters the integer operators
 * take; `rank` is the quantized tensor's rank when it is a constant. */
static hc_node* dq_of(const hc_value* v, bool allow_i32, qparams* q) {
  hc_node* dq = producer_is(v, "DequantizeLinear");
  if (!dq || dq->num_outputs != 1) return NULL;
  const hc_value* x = dq->inputs[0];
  int rank = is_const(x) ? x->rank : -1;
  hx_dtype_t t = dq_input_type(dq);
  if (t == HX_DTYPE_UNDEFINED || (x->dtype != HX_DTYPE_UNDEFINED && x->dtype != t) ||
      !read_qparams(dq, t, rank, allow_i32, q))
    return NULL;
  return dq;
}

/* The zero point as a value: q->zp, or a new 0 of its type. */
static hx_status_t zp_value(hc_graph* g, const qparams* q, const char* name, hc_value** out) {
  if (q->zp) {
    *out = q->zp;
    return HX_OK;
  }
  hc_value* v;
  HX_RETURN_IF_ERROR(hc_graph_add_value(g, name, q->qt, 0, NULL, &v));
  void* d = hc_graph_alloc_data(g, 8);
  if (!d) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory in qdq");
  v->kind = HC_VALUE_CONST;
  v->data = d;
  *out = v;
  return HX_OK;
}

/* The QuantizeLinear consuming y (through a Relu when the saturation makes
 * it redundant), y used by nothing else and not a graph output; writes the
 * nodes to retire. NULL when the pattern does not hold. */
static hc_node* q_after(hc_graph* g, hc_value* y, qparams* q, hc_node** relu) {
  *relu = NULL;
  if (y->is_output || hc_value_use_count(g, y) != 1) return NULL;
  hc_node* user = NULL;
  for (int i = 0; i < g->num_nodes && !user; ++i) {
    hc_node* n = g->nodes[i];
    for (int j = 0; !n->dead && j < n->num_inputs && !user; ++j)
      if (n->inputs[j] == y) user = n;
  }
  if (is_op(user, "Relu") && user->num_outputs == 1) {
    *relu = user;
    hc_value* r = user->outputs[0];
    if (r->is_output || hc_value_use_count(g, r) != 1) return NULL;
    hc_node* next = NULL;
    for (int i = 0; i < g->num_nodes && !next; ++i) {
      hc_node* n = g->nodes[i];
      for (int j = 0; !n->dead && j < n->num_inputs && !next; ++j)
        if (n->inputs[j] == r) next = n;
    }
    user = next;
  }
  if (!is_op(user, "QuantizeLinear") || user->num_outputs != 1 || user->inputs[0] != (*relu ? (*relu)->outputs[0] : y))
    return NULL;
  hc_value* zp = hc_input(user, 2);
  if (hc_attr_int(user, "output_dtype", 0) != 0 && !zp) return NULL;
  hx_dtype_t qt = zp ? zp->dtype : HX_DTYPE_UINT8;
  if (!read_qparams(user, qt, -1, false, q) || !q->per_tensor) return NULL;
  if (*relu && zp_at(q, 0) != (qt == HX_DTYPE_INT8 ? -128 : 0)) return NULL;
  return user;
}

/* Whether bias DequantizeLinear parameters match sx * sw[m] for M channels
 * (zero point 0). */
static bool bias_scales_match(const qparams* b, const qparams* x, const qparams* w, int64_t M) {
  if (b->qt != HX_DTYPE_INT32 || (!b->per_tensor && b->count != M)) return false;
  for (int64_t m = 0; m < M; ++m) {
    if (zp_at(b, m) != 0) return false;
    float want = (float)scale_at(x, 0) * (float)scale_at(w, m);
    double got = scale_at(b, m);
    if (!(fabs(got - (double)want) <= 1e-6 * fabs((double)want))) return false;
  }
  return true;
}

/* Makes `yq` (the QuantizeLinear's output) the output of n, retiring the
 * float op, the optional Relu and the QuantizeLinear. */
static void take_output(hc_node* n, hc_value* yq, hc_node* op, hc_node* relu, hc_node* q) {
  n->outputs[0] = yq;
  yq->producer = n;
  op->dead = true;
  if (relu) relu->dead = true;
  q->dead = true;
}

/* Conv -> QLinearConv. */
static hx_status_t rewrite_conv(hc_graph* g, hc_node* conv, bool* done) {
  *done = false;
  qparams qx, qw, qb, qy;
  hc_node *dx, *dw, *db = NULL, *relu, *q;
  if (conv->num_inputs < 2 || conv->num_outputs != 1) return HX_OK;
  if (!(dx = dq_of(conv->inputs[0], false, &qx)) || !qx.per_tensor) return HX_OK;
  if (!(dw = dq_of(conv->inputs[1], false, &qw)) || !is_const(dw->inputs[0])) return HX_OK;
  int64_t M = dw->inputs[0]->dims[0];
  if (!qw.per_tensor && (qw.axis != 0 || qw.count != M)) return HX_OK;
  hc_value* b = hc_input(conv, 2);
  if (b && (!(db = dq_of(b, true, &qb)) || !is_const(db->inputs[0]) || !bias_scales_match(&qb, &qx, &qw, M)))
    return HX_OK;
  if (!(q = q_after(g, conv->outputs[0], &qy, &relu))) return HX_OK;
  hc_node* n;
  HX_RETURN_IF_ERROR(hc_pass_new_node(g, conv, "QLinearConv", ":qlinear", b ? 9 : 8, &n));
  hc_value *zx = NULL, *zw = NULL, *zy = NULL;
  char name[512];
  snprintf(name, sizeof name, "%s:zx", conv->name);
  HX_RETURN_IF_ERROR(zp_value(g, &qx, name, &zx));
  snprintf(name, sizeof name, "%s:zw", conv->name);
  HX_RETURN_IF_ERROR(zp_value(g, &qw, name, &zw));
  snprintf(name, sizeof name, "%s:zy", conv->name);
  HX_RETURN_IF_ERROR(zp_value(g, &qy, name, &zy));
  hc_value* ins[9] = {dx->inputs[0], qx.scale, zx, dw->inputs[0], qw.scale, zw, qy.scale, zy, db ? db->inputs[0] : NULL};
  for (int i = 0; i < n->num_inputs; ++i) n->inputs[i] = ins[i];
  n->num_attrs = conv->num_attrs;
  n->attrs = conv->attrs;
  take_output(n, q->outputs[0], conv, relu, q);
  *done = true;
  return HX_OK;
}

/* MatMul -> QLinearMatMul. */
static hx_status_t rewrite_matmul(hc_graph* g, hc_node* mm, bool* done) {
  *done = false;
  qparams qa, qb, qy;
  hc_node *da, *dbq, *relu, *q;
  if (mm->num_inputs != 2 || mm->num_outputs != 1) return HX_OK;
  if (!(da = dq_of(mm->inputs[0], false, &qa)) || !qa.per_tensor) return HX_OK;
  if (!(dbq = dq_of(mm->inputs[1], false, &qb))) return HX_OK;
  if (!qb.per_tensor) {
    /* Per column: the last axis of a constant B. */
    const hc_value* bq = dbq->inputs[0];
    if (!is_const(bq) || bq->rank < 2 || qb.axis != bq->rank - 1 || qb.count != bq->dims[bq->rank - 1]) return HX_OK;
  }
  if (!(q = q_after(g, mm->outputs[0], &qy, &relu))) return HX_OK;
  hc_node* n;
  HX_RETURN_IF_ERROR(hc_pass_new_node(g, mm, "QLinearMatMul", ":qlinear", 8, &n));
  hc_value *za = NULL, *zb = NULL, *zy = NULL;
  char name[512];
  snprintf(name, sizeof name, "%s:za", mm->name);
  HX_RETURN_IF_ERROR(zp_value(g, &qa, name, &za));
  snprintf(name, sizeof name, "%s:zb", mm->name);
  HX_RETURN_IF_ERROR(zp_value(g, &qb, name, &zb));
  snprintf(name, sizeof name, "%s:zy", mm->name);
  HX_RETURN_IF_ERROR(zp_value(g, &qy, name, &zy));
  hc_value* ins[8] = {da->inputs[0], qa.scale, za, dbq->inputs[0], qb.scale, zb, qy.scale, zy};
  for (int i = 0; i < 8; ++i) n->inputs[i] = ins[i];
  take_output(n, q->outputs[0], mm, relu, q);
  *done = true;
  return HX_OK;
}

/* An int64 1-D constant. */
static hx_status_t i64_const(hc_graph* g, const char* name, const int64_t* vals, int count, hc_value** out) {
  int64_t dims[1] = {count};
  return hc_pass_new_const(g, name, HX_DTYPE_INT64, 1, dims, vals, out);
}

/* Gemm -> Reshape, 1x1 QLinearConv, Reshape. */
static hx_status_t rewrite_gemm(hc_graph* g, hc_node* gemm, bool* done) {
  *done = false;
  qparams qa, qw, qc, qy;
  hc_node *da, *dw, *dc = NULL, *relu, *q;
  if (gemm->num_inputs < 2 || gemm->num_outputs != 1) return HX_OK;
  if (hc_attr_float(gemm, "alpha", 1.0f) != 1.0f || hc_attr_float(gemm, "beta", 1.0f) != 1.0f ||
      hc_attr_int(gemm, "transA", 0) != 0 || gemm->opset < 7)
    return HX_OK;
  bool tb = hc_attr_int(gemm, "transB", 0) != 0;
  if (!(da = dq_of(gemm->inputs[0], false, &qa)) || !qa.per_tensor) return HX_OK;
  if (!(dw = dq_of(gemm->inputs[1], false, &qw))) return HX_OK;
  const hc_value* wq = dw->inputs[0];
  if (!is_const(wq) || wq->rank != 2) return HX_OK;
  int64_t N = tb ? wq->dims[0] : wq->dims[1], K = tb ? wq->dims[1] : wq->dims[0];
  if (!qw.per_tensor && (qw.axis != (tb ? 0 : 1) || qw.count != N)) return HX_OK;
  hc_value* c = hc_input(gemm, 2);
  if (c) {
    if (!(dc = dq_of(c, true, &qc)) || !is_const(dc->inputs[0])) return HX_OK;
    const hc_value* cq = dc->inputs[0];
    if (!(cq->rank == 1 && cq->dims[0] == N) && !(cq->rank == 2 && cq->dims[0] == 1 && cq->dims[1] == N)) return HX_OK;
    if (!qc.per_tensor && !(qc.count == N && qc.axis == cq->rank - 1)) return HX_OK;
    if (!bias_scales_match(&qc, &qa, &qw, N)) return HX_OK;
  }
  if (!(q = q_after(g, gemm->outputs[0], &qy, &relu))) return HX_OK;

  char name[512];
  /* W as [N, K, 1, 1] (transposed when transB = 0), bias as [N]. */
  int64_t wdims[4] = {N, K, 1, 1};
  hc_value* w4;
  snprintf(name, sizeof name, "%s:w_nk11", gemm->name);
  HX_RETURN_IF_ERROR(hc_graph_add_value(g, name, wq->dtype, 4, wdims, &w4));
  uint8_t* wd = hc_graph_alloc_data(g, (size_t)(N * K));
  if (!wd) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory in qdq");
  const uint8_t* src = wq->data;
  for (int64_t nn = 0; nn < N; ++nn)
    for (int64_t k = 0; k < K; ++k) wd[nn * K + k] = tb ? src[nn * K + k] : src[k * N + nn];
  w4->kind = HC_VALUE_CONST;
  w4->data = wd;
  hc_value* bias = NULL;
  if (dc) {
    int64_t bdims[1] = {N};
    snprintf(name, sizeof name, "%s:bias_n", gemm->name);
    HX_RETURN_IF_ERROR(hc_graph_add_value(g, name, HX_DTYPE_INT32, 1, bdims, &bias));
    bias->kind = HC_VALUE_CONST;
    bias->data = dc->inputs[0]->data; /* the same N int32 values */
  }
  hc_value *za = NULL, *zw = NULL, *zy = NULL, *shape_in = NULL, *shape_out = NULL, *a4 = NULL, *y4 = NULL;
  snprintf(name, sizeof name, "%s:za", gemm->name);
  HX_RETURN_IF_ERROR(zp_value(g, &qa, name, &za));
  snprintf(name, sizeof name, "%s:zw", gemm->name);
  HX_RETURN_IF_ERROR(zp_value(g, &qw, name, &zw));
  snprintf(name, sizeof name, "%s:zy", gemm->name);
  HX_RETURN_IF_ERROR(zp_value(g, &qy, name, &zy));
  const int64_t sin[4] = {0, K, 1, 1}, sout[2] = {0, N};
  snprintf(name, sizeof name, "%s:shape_in", gemm->name);
  HX_RETURN_IF_ERROR(i64_const(g, name, sin, 4, &shape_in));
  snprintf(name, sizeof name, "%s:shape_out", gemm->name);
  HX_RETURN_IF_ERROR(i64_const(g, name, sout, 2, &shape_out));
  snprintf(name, sizeof name, "%s:a_nk11", gemm->name);
  HX_RETURN_IF_ERROR(hc_graph_add_value(g, name, qa.qt, -1, NULL, &a4));
  snprintf(name, sizeof name, "%s:y_nm11", gemm->name);
  HX_RETURN_IF_ERROR(hc_graph_add_value(g, name, qy.qt, -1, NULL, &y4));

  hc_node *r1, *cv, *r2;
  HX_RETURN_IF_ERROR(hc_pass_new_node(g, gemm, "Reshape", ":qlinear_in", 2, &r1));
  r1->inputs[0] = da->inputs[0];
  r1->inputs[1] = shape_in;
  r1->outputs[0] = a4;
  a4->producer = r1;
  HX_RETURN_IF_ERROR(hc_pass_new_node(g, gemm, "QLinearConv", ":qlinear", bias ? 9 : 8, &cv));
  hc_value* ins[9] = {a4, qa.scale, za, w4, qw.scale, zw, qy.scale, zy, bias};
  for (int i = 0; i < cv->num_inputs; ++i) cv->inputs[i] = ins[i];
  cv->outputs[0] = y4;
  y4->producer = cv;
  HX_RETURN_IF_ERROR(hc_pass_new_node(g, gemm, "Reshape", ":qlinear_out", 2, &r2));
  r2->inputs[0] = y4;
  r2->inputs[1] = shape_out;
  take_output(r2, q->outputs[0], gemm, relu, q);
  *done = true;
  return HX_OK;
}

/* ---- exporters' spellings of constants ------------------------------------
 * The pass runs before shape inference, which is what turns Constant nodes
 * and constant subgraphs into constants. PyTorch's exporter (quantized
 * torchvision models through torch.onnx) writes every scale, zero point and
 * weight as a Constant node, a bias's zero point as
 * Cast(ConstantOfShape([n], value = 0), to = int32), and a Cast back to the
 * 8-bit type it already has between each QuantizeLinear and the
 * DequantizeLinear after it:
 *
 *   Q(x, s, z) -> Cast(to = uint8) -> DQ(., s, z)
 *
 * prepare() evaluates the inputs of every QuantizeLinear and
 * DequantizeLinear that are small constant subgraphs (as shape inference
 * would, through the same folding) and lets a DequantizeLinear read a
 * QuantizeLinear's output past such a no-op Cast; the Cast, if nothing else
 * reads it, is left to DCE. */

/* DequantizeLinear -> MaxPool -> QuantizeLinear with the same per-tensor
 * parameters -> MaxPool on the 8-bit tensor: dequantization is increasing
 * (scale > 0), so the maximum commutes with it, and requantizing a
 * dequantized value with the same parameters gives it back exactly
 * ((q - z) * s / s is within float rounding of the integer q - z, and
 * rounding restores it); padding never takes part in a MaxPool. A Relu
 * between MaxPool and QuantizeLinear is the saturation when the zero point
 * is the type's minimum (q_after). The 8-bit MaxPool reads a quarter of
 * the bytes and skips both conversions (a quantized ResNet's stem). */
static hx_status_t rewrite_maxpool(hc_graph* g, hc_node* mp, bool* done) {
  *done = false;
  qparams qx, qy;
  hc_node *dx, *relu, *q;
  if (mp->num_inputs != 1 || (mp->num_outputs > 1 && mp->outputs[1]) || !(dx = dq_of(mp->inputs[0], false, &qx)) ||
      !qx.per_tensor)
    return HX_OK;
  if (!(q = q_after(g, mp->outputs[0], &qy, &relu)) || qy.qt != qx.qt) return HX_OK;
  float sx = 0, sy = 0;
  memcpy(&sx, qx.scale->data, sizeof sx);
  memcpy(&sy, qy.scale->data, sizeof sy);
  if (!(sx > 0) || memcmp(&sx, &sy, sizeof sx) != 0 || zp_at(&qx, 0) != zp_at(&qy, 0)) return HX_OK;
  hc_value* yq = q->outputs[0];
  mp->inputs[0] = dx->inputs[0];
  mp->outputs[0] = yq;
  yq->producer = mp;
  if (mp->opset < 12) mp->opset = 12; /* 8-bit inputs since MaxPool-12; the semantics are the same */
  if (relu) relu->dead = true;
  q->dead = true;
  *done = true;
  return HX_OK;
}

/* Evaluates v when it is computed from constants only, at most `depth`
 * nodes deep; true when v is then a constant. A node that cannot be
 * evaluated here is left untouched for shape inference (and its error). */
static bool fold_to_const(hc_pass_ctx* ctx, hc_graph* g, hc_value* v, int depth) {
  if (v->kind == HC_VALUE_CONST) return true;
  hc_node* p = v->producer;
  if (v->kind != HC_VALUE_INTERMEDIATE || !p || p->dead || !p->op || p->domain[0] || depth <= 0 ||
      (p->op->flags & HC_OP_NO_FOLD) || !strcmp(p->op_type, "If") || !strcmp(p->op_type, "Loop") ||
      !strcmp(p->op_type, "Scan"))
    return false;
  for (int i = 0; i < p->num_inputs; ++i)
    if (p->inputs[i] && !fold_to_const(ctx, g, p->inputs[i], depth - 1)) return false;
  hx_status_t st = p->op->infer(g, p);
  if (st != HX_OK) {
    hx_status_free(st);
    return false;
  }
  bool all_const = true; /* Constant, Shape: infer made the outputs constants */
  for (int j = 0; j < p->num_outputs; ++j)
    if (p->outputs[j] && p->outputs[j]->kind != HC_VALUE_CONST) all_const = false;
  if (all_const) {
    p->dead = true;
    return true;
  }
  bool folded = false;
  st = hc_try_fold_node(ctx, g, p, &folded);
  if (st != HX_OK) {
    hx_status_free(st);
    return false;
  }
  return folded && v->kind == HC_VALUE_CONST;
}

/* The element type a QuantizeLinear produces: its zero point's, else
 * output_dtype (opset 21+), else uint8. */
static hx_dtype_t q_output_type(const hc_node* q) {
  const hc_value* zp = hc_input(q, 2);
  if (zp && zp->dtype != HX_DTYPE_UNDEFINED) return zp->dtype;
  int64_t od = hc_attr_int(q, "output_dtype", 0);
  return od ? (hx_dtype_t)od : HX_DTYPE_UINT8;
}

static void prepare(hc_pass_ctx* ctx, hc_graph* g) {
  int count = g->num_nodes;
  for (int i = 0; i < count; ++i) {
    hc_node* n = g->nodes[i];
    bool dq = is_op(n, "DequantizeLinear");
    if (!dq && !is_op(n, "QuantizeLinear")) continue;
    for (int j = dq ? 0 : 1; j < n->num_inputs; ++j)
      if (n->inputs[j]) fold_to_const(ctx, g, n->inputs[j], 6);
  }
  for (int i = 0; i < count; ++i) {
    hc_node* n = g->nodes[i];
    if (!is_op(n, "DequantizeLinear") || n->num_inputs < 1) continue;
    hc_node* cast = producer_is(n->inputs[0], "Cast");
    hc_node* q = cast && cast->num_inputs == 1 ? producer_is(cast->inputs[0], "QuantizeLinear") : NULL;
    if (q && hc_attr_int(cast, "to", 0) == (int64_t)q_output_type(q)) n->inputs[0] = cast->inputs[0];
  }
}

static hx_status_t run_qdq(hc_pass_ctx* ctx, hc_graph* g) {
  int convs = 0, matmuls = 0, gemms = 0, pools = 0, seen = 0;
  prepare(ctx, g);
  int count = g->num_nodes; /* nodes added here are not candidates */
  for (int i = 0; i < count; ++i) {
    hc_node* n = g->nodes[i];
    bool done = false;
    if (n->dead) continue;
    if (is_op(n, "Conv")) {
      ++seen;
      HX_RETURN_IF_ERROR(rewrite_conv(g, n, &done));
      convs += done;
    } else if (is_op(n, "MatMul")) {
      ++seen;
      HX_RETURN_IF_ERROR(rewrite_matmul(g, n, &done));
      matmuls += done;
    } else if (is_op(n, "Gemm")) {
      ++seen;
      HX_RETURN_IF_ERROR(rewrite_gemm(g, n, &done));
      gemms += done;
    } else if (is_op(n, "MaxPool")) {
      HX_RETURN_IF_ERROR(rewrite_maxpool(g, n, &done));
      pools += done;
    }
  }
  hc_graph_compact(g); /* the nodes prepare() evaluated, and the rewritten ones */
  if (convs + matmuls + gemms + pools == 0) return HX_OK;
  HX_RETURN_IF_ERROR(hc_graph_sort(g));
  if (ctx->verbose && ctx->log)
    fprintf(ctx->log,
            "qdq: %d Conv -> QLinearConv, %d MatMul -> QLinearMatMul, %d Gemm -> QLinearConv (%d left float), "
            "%d MaxPool on 8-bit values\n",
            convs, matmuls, gemms, seen - convs - matmuls - gemms, pools);
  return HX_OK;
}

const hc_pass hc_pass_qdq = {"qdq", "rewrite DequantizeLinear -> Conv/MatMul/Gemm -> QuantizeLinear as integer operators",
                             run_qdq};
