/* BatchNormalization, LayerNormalization, InstanceNormalization,
 * GroupNormalization and LRN (MeanVarianceNormalization and
 * LpNormalization are reductions: see reduce.c).
 *
 * BatchNormalization normalises with the given running statistics:
 *   y = (x - mean[c]) * scale[c] / sqrt(var[c] + epsilon) + B[c]
 * per channel c = dim 1 (spatial=0, opsets < 9: per channel and position).
 * A task is one (n, c) plane when planes are large, else one batch row.
 * Training mode (opset 14+, training_mode=1) normalises with the batch
 * statistics of each channel and outputs the updated running statistics;
 * a task is one channel.
 *
 * LayerNormalization normalises every row X[i, axis:] by its own mean and
 * variance (two passes, for accuracy) and applies Scale and B, which
 * broadcast to X. A task is one row. Statistics are computed in float32, or
 * in float64 when stash_type is double; Mean and InvStdDev are stored in the
 * stash type with the reduced dims kept as 1.
 *
 * InstanceNormalization and GroupNormalization normalise contiguous blocks
 * of channels the same way (one task per block), and LRN divides by a
 * power of the squared sum over neighbouring channels (see each section).
 */
#include <string.h>

#include "compiler/ops/gemm_microkernel.h"
#include "compiler/ops/op.h"

/* Spatial size from which BatchNormalization gives each plane its own task. */
#define BN_PLANE_MIN 32

/* Loads element idx of v (dtype v->dtype) converted to the compute type of cdt. */
static LLVMValueRef load_as(hc_kb* kb, const hc_value* v, LLVMValueRef ptr, LLVMValueRef idx, hx_dtype_t cdt) {
  return hc_kb_convert(kb, hc_kb_load(kb, v->dtype, ptr, idx), v->dtype, cdt);
}

/* Sum over a contiguous run of n elements of x (converted to cdt), minus
 * `center` and squared when center is given. */
static LLVMValueRef ln_row_sum(hc_kb* kb, const hc_value* x, LLVMValueRef px, LLVMValueRef base, int64_t len,
                               hx_dtype_t cdt, LLVMValueRef acc, LLVMValueRef center) {
  LLVMTypeRef t = hc_kb_compute_type(kb, cdt);
  LLVMBuildStore(kb->b, hc_kb_const(kb, cdt, 0), acc);
  hc_loop l;
  LLVMValueRef j = hc_loop_begin(kb, &l, hc_kb_i64(kb, 0), hc_kb_i64(kb, len), "j");
  LLVMValueRef v = load_as(kb, x, px, hc_kb_iadd(kb, base, j), cdt);
  if (center) {
    v = hc_kb_sub(kb, cdt, v, center);
    v = hc_kb_mul(kb, cdt, v, v);
  }
  LLVMBuildStore(kb->b, hc_kb_reassoc(hc_kb_add(kb, cdt, LLVMBuildLoad2(kb->b, t, acc, ""), v)), acc);
  hc_loop_end_row(kb, &l, len);
  return LLVMBuildLoad2(kb->b, t, acc, "");
}

/* ---- BatchNormalization ---------------------------------------------------- */

static const char* const k_bn_param_names[4] = {"scale", "B", "mean", "var"};

/* Rejects attributes outside the opsets that define them. */
static hx_status_t bn_check_attrs(const hc_node* n) {
  static const struct {
    const char* name;
    int since, until; /* defined for since <= opset < until */
  } k_ranges[] = {{"consumed_inputs", 1, 6}, {"is_test", 1, 7}, {"spatial", 1, 9}, {"training_mode", 14, 1000}};
  for (size_t i = 0; i < sizeof k_ranges / sizeof k_ranges[0]; ++i)
    if (hc_node_attr(n, k_ranges[i].name) && (n->opset < k_ranges[i].since || n->opset >= k_ranges[i].until))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute '%s' does not exist in opset %d", k_ranges[i].name,
                           n->opset);
  return HX_OK;
}

static bool bn_spatial(const hc_node* n) { return n->opset >= 9 || hc_attr_int(n, "spatial", 1) != 0; }

static bool bn_training(const hc_node* n) { return n->opset >= 14 && hc_attr_int(n, "training_mode", 0) != 0; }

/* Is X produced by a Conv (possibly through Identity/Dropout, which
 * canonicalisation removes)? The folding pass would then merge the node into
 * the Conv with its running statistics. */
static bool bn_after_conv(const hc_node* n) {
  const hc_node* p = n->inputs[0]->producer;
  while (p && (strcmp(p->op_type, "Identity") == 0 || strcmp(p->op_type, "Dropout") == 0) && p->num_inputs > 0 &&
         p->inputs[0])
    p = p->inputs[0]->producer;
  return p && strcmp(p->op_type, "Conv") == 0;
}

static hx_status_t infer_batch_norm(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 5, 5, 1, n->opset >= 14 ? 3 : 5));
  HX_RETURN_IF_ERROR(bn_check_attrs(n));
  for (int i = 0; i < 5; ++i) HX_RETURN_IF_ERROR(hc_check_dtype(n, i, HC_DT_FLOATS));
  bool extra_outputs = false;
  for (int i = 1; i < n->num_outputs; ++i) extra_outputs |= n->outputs[i] != NULL;
  bool training = bn_training(n);
  if (training && !extra_outputs && bn_after_conv(n))
    return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                         "training_mode=1 with output Y only, on the output of a Conv, is not supported: the "
                         "Conv+BatchNormalization folding pass would apply the running statistics (request "
                         "running_mean or running_var too, or use training_mode=0)");
  if (n->opset < 7 && hc_attr_int(n, "is_test", 0) == 0)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                         "is_test=0 selects training mode (batch statistics), which is not supported; Harness "
                         "compiles inference graphs (set is_test=1)");
  if (extra_outputs && !training)
    return hc_node_error(n, n->opset >= 7 && n->opset < 14 ? HX_STATUS_UNSUPPORTED : HX_STATUS_INVALID_ARGUMENT,
                         "the mean/variance outputs exist only in training mode, which is not supported; Harness "
                         "compiles inference graphs (use output Y only)");

  const hc_value* x = n->inputs[0];
  char s1[128], s2[128];
  if (x->rank < 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "X must have rank >= 1, got a scalar");
  int64_t C = x->rank >= 2 ? x->dims[1] : 1;
  bool spatial = bn_spatial(n);
  int64_t per = spatial ? C : C * hc_shape_numel(x->rank > 2 ? x->rank - 2 : 0, x->dims + 2);
  for (int i = 1; i < 5; ++i) {
    const hc_value* p = n->inputs[i];
    bool ok = spatial ? (p->rank <= 1 && hc_value_numel(p) == C) : hc_value_numel(p) == per;
    if (!ok)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "input %d (%s, '%s') has shape %s; expected %s for X of shape %s", i,
                           k_bn_param_names[i - 1], p->name, hc_shape_str(p->rank, p->dims, s1, sizeof s1),
                           spatial ? "[C] (C = dim 1 of X)" : "(C x D1 x ... x Dn) elements (spatial=0)",
                           hc_shape_str(x->rank, x->dims, s2, sizeof s2));
  }
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  if (training) {
    int64_t cdims[1] = {C};
    hc_set_output(n, 1, n->inputs[3]->dtype, 1, cdims);
    hc_set_output(n, 2, n->inputs[4]->dtype, 1, cdims);
  }
  return HX_OK;
}

/* The affine form of one normalisation: y = (x - mean) * k + bias. */
typedef struct bn_coeffs {
  LLVMValueRef mean, k, bias;
} bn_coeffs;

static void bn_load_coeffs(hc_kb* kb, const hc_node* n, const LLVMValueRef* pp, LLVMValueRef idx, hx_dtype_t cdt,
                           LLVMValueRef eps, bn_coeffs* co) {
  LLVMValueRef scale = load_as(kb, n->inputs[1], pp[0], idx, cdt);
  co->bias = load_as(kb, n->inputs[2], pp[1], idx, cdt);
  co->mean = load_as(kb, n->inputs[3], pp[2], idx, cdt);
  LLVMValueRef ve = hc_kb_add(kb, cdt, load_as(kb, n->inputs[4], pp[3], idx, cdt), eps);
  co->k = hc_kb_div(kb, cdt, scale, hc_kb_math(kb, cdt, "sqrt", &ve, 1));
}

/* Training mode: per channel c (one task), the batch mean and variance
 * over N and the spatial dims, Y normalised with them, and the running
 * statistics input * momentum + batch * (1 - momentum). */
static hx_status_t lower_batch_norm_training(hc_lower_ctx* lc, hc_node* n) {
  const hc_value *x = n->inputs[0], *y = n->outputs[0];
  const hc_value* rm = n->num_outputs > 1 ? n->outputs[1] : NULL;
  const hc_value* rv = n->num_outputs > 2 ? n->outputs[2] : NULL;
  hx_dtype_t cdt = x->dtype == HX_DTYPE_FLOAT64 ? HX_DTYPE_FLOAT64 : HX_DTYPE_FLOAT32;
  int64_t N = x->dims[0], C = x->rank >= 2 ? x->dims[1] : 1;
  int64_t S = hc_shape_numel(x->rank > 2 ? x->rank - 2 : 0, x->dims + 2);
  if (C == 0) return HX_OK; /* nothing to write */
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, C, &kb));
  LLVMTypeRef t = hc_kb_compute_type(&kb, cdt);
  LLVMValueRef px = hc_kb_ptr(&kb, x), py = hc_kb_ptr(&kb, y), pp[4];
  for (int i = 0; i < 4; ++i) pp[i] = hc_kb_ptr(&kb, n->inputs[i + 1]);
  LLVMValueRef acc = hc_kb_alloca(&kb, t, "acc"), part_slot = hc_kb_alloca(&kb, t, "part");
  LLVMValueRef zero = hc_kb_i64(&kb, 0), count = hc_kb_const(&kb, cdt, (double)(N * S));
  LLVMValueRef mom = hc_kb_const(&kb, cdt, hc_attr_float(n, "momentum", 0.9f));
  LLVMValueRef one_m = hc_kb_const(&kb, cdt, 1.0 - (double)hc_attr_float(n, "momentum", 0.9f));

  hc_loop task, nl;
  LLVMValueRef c = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef mean = NULL;
  for (int pass = 0; pass < 2; ++pass) {
    LLVMBuildStore(kb.b, hc_kb_const(&kb, cdt, 0), acc);
    LLVMValueRef b = hc_loop_begin(&kb, &nl, zero, hc_kb_i64(&kb, N), "n");
    LLVMValueRef base = hc_kb_imul(&kb, hc_kb_iadd(&kb, hc_kb_imul(&kb, b, hc_kb_i64(&kb, C)), c), hc_kb_i64(&kb, S));
    LLVMValueRef part = ln_row_sum(&kb, x, px, base, S, cdt, part_slot, mean);
    LLVMBuildStore(kb.b, hc_kb_add(&kb, cdt, LLVMBuildLoad2(kb.b, t, acc, ""), part), acc);
    hc_loop_end(&kb, &nl);
    LLVMValueRef r = hc_kb_div(&kb, cdt, LLVMBuildLoad2(kb.b, t, acc, ""), count);
    if (pass == 0) mean = r;
    const hc_value* ov = pass == 0 ? rm : rv;
    if (ov) {
      LLVMValueRef out = hc_kb_ptr(&kb, ov);
      LLVMValueRef run = load_as(&kb, n->inputs[3 + pass], pp[2 + pass], c, cdt);
      LLVMValueRef v = hc_kb_fma(&kb, cdt, run, mom, hc_kb_mul(&kb, cdt, r, one_m));
      hc_kb_store(&kb, ov->dtype, out, c, hc_kb_convert(&kb, v, cdt, ov->dtype));
    }
    if (pass == 1) {
      LLVMValueRef ve = hc_kb_add(&kb, cdt, r, hc_kb_const(&kb, cdt, hc_attr_float(n, "epsilon", 1e-5f)));
      LLVMValueRef sd = hc_kb_math(&kb, cdt, "sqrt", &ve, 1);
      LLVMValueRef k = hc_kb_div(&kb, cdt, load_as(&kb, n->inputs[1], pp[0], c, cdt), sd);
      LLVMValueRef bias = load_as(&kb, n->inputs[2], pp[1], c, cdt);
      hc_loop sl;
      b = hc_loop_begin(&kb, &nl, zero, hc_kb_i64(&kb, N), "n");
      base = hc_kb_imul(&kb, hc_kb_iadd(&kb, hc_kb_imul(&kb, b, hc_kb_i64(&kb, C)), c), hc_kb_i64(&kb, S));
      LLVMValueRef sp = hc_loop_begin(&kb, &sl, zero, hc_kb_i64(&kb, S), "s");
      LLVMValueRef idx = hc_kb_iadd(&kb, base, sp);
      LLVMValueRef v = hc_kb_fma(&kb, cdt, hc_kb_sub(&kb, cdt, load_as(&kb, x, px, idx, cdt), mean), k, bias);
      hc_kb_store(&kb, y->dtype, py, idx, hc_kb_convert(&kb, v, cdt, y->dtype));
      hc_loop_end(&kb, &sl);
      hc_loop_end(&kb, &nl);
    }
  }
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, 6.0 * (double)hc_value_numel(x), 3.0 * (double)hc_value_nbytes(x) + (double)hc_value_nbytes(y));
  return HX_OK;
}

static hx_status_t lower_batch_norm(hc_lower_ctx* lc, hc_node* n) {
  if (bn_training(n)) return lower_batch_norm_training(lc, n);
  const hc_value *x = n->inputs[0], *y = n->outputs[0];
  /* Arithmetic in float64 for float64 X, float32 otherwise. */
  hx_dtype_t cdt = x->dtype == HX_DTYPE_FLOAT64 ? HX_DTYPE_FLOAT64 : HX_DTYPE_FLOAT32;
  int64_t N = x->dims[0];
  int64_t C = x->rank >= 2 ? x->dims[1] : 1;
  int64_t S = hc_shape_numel(x->rank > 2 ? x->rank - 2 : 0, x->dims + 2);
  bool spatial = bn_spatial(n);
  bool per_plane = S >= BN_PLANE_MIN;
  if (hc_value_numel(x) == 0) return HX_OK; /* nothing to write */
  int64_t tasks = per_plane ? N * C : N;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, tasks, &kb));
  LLVMValueRef px = hc_kb_ptr(&kb, x), py = hc_kb_ptr(&kb, y), pp[4];
  for (int i = 0; i < 4; ++i) pp[i] = hc_kb_ptr(&kb, n->inputs[i + 1]);
  LLVMValueRef eps = hc_kb_const(&kb, cdt, hc_attr_float(n, "epsilon", 1e-5f));
  LLVMValueRef zero = hc_kb_i64(&kb, 0);

  hc_loop task, cl, sl;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef c, plane;
  if (per_plane) {
    c = LLVMBuildURem(kb.b, t, hc_kb_i64(&kb, C), "");
    plane = t;
  } else {
    c = hc_loop_begin(&kb, &cl, zero, hc_kb_i64(&kb, C), "c");
    plane = hc_kb_iadd(&kb, hc_kb_imul(&kb, t, hc_kb_i64(&kb, C)), c);
  }
  /* Coefficients are loaded once per plane (spatial) or per element
   * (spatial=0: the statistics vary with the position too). */
  bn_coeffs co;
  if (spatial) bn_load_coeffs(&kb, n, pp, c, cdt, eps, &co);
  LLVMValueRef s = hc_loop_begin(&kb, &sl, zero, hc_kb_i64(&kb, S), "s");
  if (!spatial) bn_load_coeffs(&kb, n, pp, hc_kb_iadd(&kb, hc_kb_imul(&kb, c, hc_kb_i64(&kb, S)), s), cdt, eps, &co);
  LLVMValueRef idx = hc_kb_iadd(&kb, hc_kb_imul(&kb, plane, hc_kb_i64(&kb, S)), s);
  LLVMValueRef xv = load_as(&kb, x, px, idx, cdt);
  LLVMValueRef yv = hc_kb_fma(&kb, cdt, hc_kb_sub(&kb, cdt, xv, co.mean), co.k, co.bias);
  hc_kb_store(&kb, y->dtype, py, idx, hc_kb_convert(&kb, yv, cdt, y->dtype));
  hc_loop_end(&kb, &sl);
  if (!per_plane) hc_loop_end(&kb, &cl);
  hc_loop_end(&kb, &task);

  double bytes = (double)hc_value_nbytes(x) + (double)hc_value_nbytes(y);
  for (int i = 1; i < 5; ++i) bytes += (double)hc_value_nbytes(n->inputs[i]);
  hc_kb_end(&kb, 2.0 * (double)hc_value_numel(x), bytes);
  return HX_OK;
}

/* ---- LayerNormalization --------------------------------------------------- */

/* dtype of Mean/InvStdDev and of the statistics' arithmetic. */
static hx_status_t ln_stash(const hc_node* n, hx_dtype_t* stash, hx_dtype_t* cdt) {
  int64_t s = hc_attr_int(n, "stash_type", 1);
  switch (s) {
    case HX_DTYPE_FLOAT32:
    case HX_DTYPE_FLOAT16:
    case HX_DTYPE_BFLOAT16: *cdt = HX_DTYPE_FLOAT32; break;
    case HX_DTYPE_FLOAT64: *cdt = HX_DTYPE_FLOAT64; break;
    default:
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "stash_type %lld is not a floating-point type (expected 1 = float, 11 = double, "
                           "10 = float16 or 16 = bfloat16)",
                           (long long)s);
  }
  *stash = (hx_dtype_t)s;
  return HX_OK;
}

/* Element strides of v broadcast (right-aligned) against x's dims; 0 where v
 * has no dim or a dim of 1. Fails when v does not broadcast to x. */
static hx_status_t ln_bcast_strides(const hc_node* n, int input, const char* what, int64_t* strides) {
  const hc_value *x = n->inputs[0], *v = n->inputs[input];
  int off = x->rank - v->rank;
  bool ok = off >= 0;
  for (int d = 0; ok && d < v->rank; ++d) ok = v->dims[d] == 1 || v->dims[d] == x->dims[d + off];
  if (!ok) {
    char s1[128], s2[128];
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "%s ('%s') has shape %s, which does not broadcast to X's shape %s",
                         what, v->name, hc_shape_str(v->rank, v->dims, s1, sizeof s1),
                         hc_shape_str(x->rank, x->dims, s2, sizeof s2));
  }
  int64_t vs[HC_MAX_RANK];
  hc_strides(v->rank, v->dims, vs);
  for (int d = 0; d < x->rank; ++d) {
    int vd = d - off;
    strides[d] = (vd < 0 || v->dims[vd] == 1) ? 0 : vs[vd];
  }
  return HX_OK;
}

static hx_status_t infer_layer_norm(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 3, 1, 3));
  for (int i = 0; i < 3; ++i) HX_RETURN_IF_ERROR(hc_check_dtype(n, i, HC_DT_FLOATS));
  const hc_value* x = n->inputs[0];
  int64_t axis;
  HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", -1), x->rank, &axis));
  hx_dtype_t stash = HX_DTYPE_UNDEFINED, cdt = HX_DTYPE_UNDEFINED;
  HX_RETURN_IF_ERROR(ln_stash(n, &stash, &cdt));
  int64_t strides[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(ln_bcast_strides(n, 1, "Scale", strides));
  if (hc_input(n, 2)) HX_RETURN_IF_ERROR(ln_bcast_strides(n, 2, "B", strides));
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  int64_t sdims[HC_MAX_RANK];
  for (int d = 0; d < x->rank; ++d) sdims[d] = d < axis ? x->dims[d] : 1;
  hc_set_output(n, 1, stash, x->rank, sdims);
  hc_set_output(n, 2, stash, x->rank, sdims);
  return HX_OK;
}

/* The normalised dims collapsed for the final pass: X contiguous, Scale and
 * B with broadcast strides. */
typedef struct ln_nest {
  int rank;
  int64_t dims[HC_MAX_RANK];
  int64_t xs[HC_MAX_RANK], ss[HC_MAX_RANK], bs[HC_MAX_RANK];
} ln_nest;

static void ln_collapse(const hc_value* x, int axis, const int64_t* ss, const int64_t* bs, ln_nest* z) {
  int64_t xs[HC_MAX_RANK];
  hc_strides(x->rank, x->dims, xs);
  z->rank = 0;
  for (int d = axis; d < x->rank; ++d) {
    if (x->dims[d] == 1) continue;
    if (z->rank > 0) {
      int p = z->rank - 1;
      bool merge = z->ss[p] == ss[d] * x->dims[d] && z->bs[p] == bs[d] * x->dims[d] && (ss[d] != 0 || z->ss[p] == 0) &&
                   (bs[d] != 0 || z->bs[p] == 0);
      if (merge) {
        z->dims[p] *= x->dims[d];
        z->xs[p] = xs[d];
        z->ss[p] = ss[d];
        z->bs[p] = bs[d];
        continue;
      }
    }
    z->dims[z->rank] = x->dims[d];
    z->xs[z->rank] = xs[d];
    z->ss[z->rank] = ss[d];
    z->bs[z->rank] = bs[d];
    ++z->rank;
  }
  if (z->rank == 0) {
    z->rank = 1;
    z->dims[0] = 1;
    z->xs[0] = z->ss[0] = z->bs[0] = 0;
  }
}

/* Offset of a row's broadcast operand (Scale or B) from the row index:
 * nonzero only when the operand varies along the leading dims. */
static LLVMValueRef ln_row_offset(hc_kb* kb, const hc_value* x, int axis, const int64_t* strides, LLVMValueRef row) {
  LLVMValueRef off = hc_kb_i64(kb, 0);
  for (int d = axis - 1; d >= 0; --d) {
    LLVMValueRef q = d > 0 ? LLVMBuildURem(kb->b, row, hc_kb_i64(kb, x->dims[d]), "") : row;
    if (d > 0) row = LLVMBuildUDiv(kb->b, row, hc_kb_i64(kb, x->dims[d]), "");
    if (strides[d]) off = hc_kb_iadd(kb, off, hc_kb_imul(kb, q, hc_kb_i64(kb, strides[d])));
  }
  return off;
}

static hx_status_t lower_layer_norm(hc_lower_ctx* lc, hc_node* n) {
  const hc_value *x = n->inputs[0], *scale = n->inputs[1], *bias = hc_input(n, 2), *y = n->outputs[0];
  const hc_value* mean_out = n->num_outputs > 1 ? n->outputs[1] : NULL;
  const hc_value* inv_out = n->num_outputs > 2 ? n->outputs[2] : NULL;
  int64_t axis64;
  HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", -1), x->rank, &axis64));
  int axis = (int)axis64;
  hx_dtype_t stash = HX_DTYPE_UNDEFINED, cdt = HX_DTYPE_UNDEFINED;
  HX_RETURN_IF_ERROR(ln_stash(n, &stash, &cdt));
  int64_t ss[HC_MAX_RANK], bs[HC_MAX_RANK] = {0};
  HX_RETURN_IF_ERROR(ln_bcast_strides(n, 1, "Scale", ss));
  if (bias) HX_RETURN_IF_ERROR(ln_bcast_strides(n, 2, "B", bs));
  int64_t rows = hc_shape_numel(axis, x->dims);
  int64_t len = hc_shape_numel(x->rank - axis, x->dims + axis);
  bool row_varying = false;
  for (int d = 0; d < axis; ++d) row_varying |= ss[d] != 0 || bs[d] != 0;
  ln_nest z;
  ln_collapse(x, axis, ss, bs, &z);

  /* Rows whose normalised block is empty still get (NaN) statistics, so
   * only a graph without rows needs no kernel. */
  if (rows == 0) return HX_OK;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, rows, &kb));
  hc_ukr_prefer_full_width(&kb); /* rows of d_model elements: zmm halves the loop trips */
  LLVMTypeRef t = hc_kb_compute_type(&kb, cdt);
  LLVMValueRef px = hc_kb_ptr(&kb, x), py = hc_kb_ptr(&kb, y), ps = hc_kb_ptr(&kb, scale);
  LLVMValueRef pb = bias ? hc_kb_ptr(&kb, bias) : NULL;
  LLVMValueRef pmean = mean_out ? hc_kb_ptr(&kb, mean_out) : NULL;
  LLVMValueRef pinv = inv_out ? hc_kb_ptr(&kb, inv_out) : NULL;
  LLVMValueRef acc = hc_kb_alloca(&kb, t, "acc");
  LLVMValueRef count = hc_kb_const(&kb, cdt, (double)len);

  hc_loop task;
  LLVMValueRef row = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef base = hc_kb_imul(&kb, row, hc_kb_i64(&kb, len));
  LLVMValueRef mean = hc_kb_div(&kb, cdt, ln_row_sum(&kb, x, px, base, len, cdt, acc, NULL), count);
  LLVMValueRef var = hc_kb_div(&kb, cdt, ln_row_sum(&kb, x, px, base, len, cdt, acc, mean), count);
  LLVMValueRef ve = hc_kb_add(&kb, cdt, var, hc_kb_const(&kb, cdt, hc_attr_float(n, "epsilon", 1e-5f)));
  LLVMValueRef inv = hc_kb_div(&kb, cdt, hc_kb_const(&kb, cdt, 1.0), hc_kb_math(&kb, cdt, "sqrt", &ve, 1));
  if (pmean) hc_kb_store(&kb, stash, pmean, row, hc_kb_convert(&kb, mean, cdt, stash));
  if (pinv) hc_kb_store(&kb, stash, pinv, row, hc_kb_convert(&kb, inv, cdt, stash));

  /* y = (x - mean) * inv * scale + B over the collapsed normalised dims. */
  LLVMValueRef xo = base;
  LLVMValueRef so = row_varying ? ln_row_offset(&kb, x, axis, ss, row) : hc_kb_i64(&kb, 0);
  LLVMValueRef bo = row_varying && bias ? ln_row_offset(&kb, x, axis, bs, row) : hc_kb_i64(&kb, 0);
  hc_loop loops[HC_MAX_RANK];
  for (int d = 0; d < z.rank; ++d) {
    LLVMValueRef iv = hc_loop_begin(&kb, &loops[d], hc_kb_i64(&kb, 0), hc_kb_i64(&kb, z.dims[d]), "i");
    xo = hc_kb_iadd(&kb, xo, z.xs[d] == 1 ? iv : hc_kb_imul(&kb, iv, hc_kb_i64(&kb, z.xs[d])));
    if (z.ss[d]) so = hc_kb_iadd(&kb, so, z.ss[d] == 1 ? iv : hc_kb_imul(&kb, iv, hc_kb_i64(&kb, z.ss[d])));
    if (z.bs[d]) bo = hc_kb_iadd(&kb, bo, z.bs[d] == 1 ? iv : hc_kb_imul(&kb, iv, hc_kb_i64(&kb, z.bs[d])));
  }
  LLVMValueRef v = hc_kb_mul(&kb, cdt, hc_kb_sub(&kb, cdt, load_as(&kb, x, px, xo, cdt), mean), inv);
  v = hc_kb_mul(&kb, cdt, v, load_as(&kb, scale, ps, so, cdt));
  if (bias) v = hc_kb_add(&kb, cdt, v, load_as(&kb, bias, pb, bo, cdt));
  hc_kb_store(&kb, y->dtype, py, xo, hc_kb_convert(&kb, v, cdt, y->dtype));
  for (int d = z.rank - 1; d >= 0; --d) hc_loop_end_row(&kb, &loops[d], z.dims[d]);
  hc_loop_end(&kb, &task);

  double bytes = 2.0 * (double)hc_value_nbytes(x) + (double)hc_value_nbytes(y) + (double)hc_value_nbytes(scale) +
                 (bias ? (double)hc_value_nbytes(bias) : 0.0);
  hc_kb_end(&kb, 8.0 * (double)hc_value_numel(x), bytes);
  return HX_OK;
}

/* ---- InstanceNormalization and GroupNormalization ------------------------- */

/* X is N x C x D1 x ... x Dk; both ops normalise contiguous blocks of it:
 * one (n, c) plane (InstanceNormalization) or C/G consecutive planes
 * (GroupNormalization), then y = (x - mean) * inv * scale + B with scale
 * and B per channel (InstanceNormalization, GroupNormalization-21) or per
 * group (GroupNormalization-18). A task is one block. */
typedef struct gn_shape {
  int64_t N, C, S, G;
  bool per_channel; /* scale and B are indexed by channel, else by group */
  hx_dtype_t cdt;   /* statistics and arithmetic */
} gn_shape;

static bool gn_is_group(const hc_node* n) { return n->op_type[0] == 'G'; }

static hx_status_t gn_plan(const hc_node* n, gn_shape* s) {
  const hc_value* x = n->inputs[0];
  if (x->rank < 2)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input must have rank >= 2 (N x C x D1 x ...), got rank %d",
                         x->rank);
  s->N = x->dims[0];
  s->C = x->dims[1];
  s->S = hc_shape_numel(x->rank - 2, x->dims + 2);
  s->cdt = x->dtype == HX_DTYPE_FLOAT64 ? HX_DTYPE_FLOAT64 : HX_DTYPE_FLOAT32;
  s->G = s->C;
  s->per_channel = true;
  if (gn_is_group(n)) {
    if (!hc_node_attr(n, "num_groups"))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "required attribute 'num_groups' is missing");
    s->G = hc_attr_int(n, "num_groups", 1);
    if (s->G <= 0 || s->C % s->G != 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "num_groups = %lld must be positive and divide C = %lld",
                           (long long)s->G, (long long)s->C);
    s->per_channel = n->opset >= 21;
    if (n->opset < 21 && hc_node_attr(n, "stash_type"))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute 'stash_type' exists from opset 21 on");
    int64_t stash = hc_attr_int(n, "stash_type", 1);
    if (stash != HX_DTYPE_FLOAT32 && stash != HX_DTYPE_FLOAT64 && stash != HX_DTYPE_FLOAT16 &&
        stash != HX_DTYPE_BFLOAT16)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "stash_type %lld is not a floating-point type (expected 1 = float, 11 = double, "
                           "10 = float16 or 16 = bfloat16)",
                           (long long)stash);
    if (stash == HX_DTYPE_FLOAT64) s->cdt = HX_DTYPE_FLOAT64;
  }
  int64_t want = s->per_channel ? s->C : s->G;
  static const char* const names[2] = {"scale", "B"};
  for (int i = 1; i <= 2; ++i) {
    const hc_value* p = n->inputs[i];
    if (p->rank != 1 || p->dims[0] != want) {
      char s1[128];
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d (%s, '%s') has shape %s; expected [%lld] (%s)", i,
                           names[i - 1], p->name, hc_shape_str(p->rank, p->dims, s1, sizeof s1), (long long)want,
                           s->per_channel ? "one value per channel" : "one value per group");
    }
  }
  return HX_OK;
}

static hx_status_t infer_group_norm(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 3, 3, 1, 1));
  uint64_t m = HC_DT(HX_DTYPE_FLOAT32) | HC_DT(HX_DTYPE_FLOAT64) | HC_DT(HX_DTYPE_FLOAT16);
  if (gn_is_group(n) || n->opset >= 22) m |= HC_DT(HX_DTYPE_BFLOAT16);
  for (int i = 0; i < 3; ++i) HX_RETURN_IF_ERROR(hc_check_dtype(n, i, m));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 1));
  HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 2));
  if (n->opset >= 6 && hc_node_attr(n, "consumed_inputs"))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute 'consumed_inputs' exists only before opset 6");
  gn_shape s = {0};
  HX_RETURN_IF_ERROR(gn_plan(n, &s));
  const hc_value* x = n->inputs[0];
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  return HX_OK;
}

static hx_status_t lower_group_norm(hc_lower_ctx* lc, hc_node* n) {
  const hc_value *x = n->inputs[0], *scale = n->inputs[1], *bias = n->inputs[2], *y = n->outputs[0];
  gn_shape s = {0};
  HX_RETURN_IF_ERROR(gn_plan(n, &s));
  if (hc_value_numel(x) == 0) return HX_OK; /* nothing to write */
  hx_dtype_t cdt = s.cdt;
  int64_t cpg = s.C / s.G, len = cpg * s.S;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, s.N * s.G, &kb));
  LLVMTypeRef t = hc_kb_compute_type(&kb, cdt);
  LLVMValueRef px = hc_kb_ptr(&kb, x), py = hc_kb_ptr(&kb, y), ps = hc_kb_ptr(&kb, scale), pb = hc_kb_ptr(&kb, bias);
  LLVMValueRef acc = hc_kb_alloca(&kb, t, "acc");
  LLVMValueRef count = hc_kb_const(&kb, cdt, (double)len);
  LLVMValueRef zero = hc_kb_i64(&kb, 0);

  hc_loop task, cl, sl;
  LLVMValueRef blk = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef g = LLVMBuildURem(kb.b, blk, hc_kb_i64(&kb, s.G), "");
  LLVMValueRef base = hc_kb_imul(&kb, blk, hc_kb_i64(&kb, len));
  LLVMValueRef mean = hc_kb_div(&kb, cdt, ln_row_sum(&kb, x, px, base, len, cdt, acc, NULL), count);
  LLVMValueRef var = hc_kb_div(&kb, cdt, ln_row_sum(&kb, x, px, base, len, cdt, acc, mean), count);
  LLVMValueRef ve = hc_kb_add(&kb, cdt, var, hc_kb_const(&kb, cdt, hc_attr_float(n, "epsilon", 1e-5f)));
  LLVMValueRef inv = hc_kb_div(&kb, cdt, hc_kb_const(&kb, cdt, 1.0), hc_kb_math(&kb, cdt, "sqrt", &ve, 1));

  LLVMValueRef cc = hc_loop_begin(&kb, &cl, zero, hc_kb_i64(&kb, cpg), "c");
  LLVMValueRef pidx = s.per_channel ? hc_kb_iadd(&kb, hc_kb_imul(&kb, g, hc_kb_i64(&kb, cpg)), cc) : g;
  LLVMValueRef k = hc_kb_mul(&kb, cdt, inv, load_as(&kb, scale, ps, pidx, cdt));
  LLVMValueRef b = load_as(&kb, bias, pb, pidx, cdt);
  LLVMValueRef pbase = hc_kb_iadd(&kb, base, hc_kb_imul(&kb, cc, hc_kb_i64(&kb, s.S)));
  LLVMValueRef sp = hc_loop_begin(&kb, &sl, zero, hc_kb_i64(&kb, s.S), "s");
  LLVMValueRef idx = hc_kb_iadd(&kb, pbase, sp);
  LLVMValueRef v = hc_kb_fma(&kb, cdt, hc_kb_sub(&kb, cdt, load_as(&kb, x, px, idx, cdt), mean), k, b);
  hc_kb_store(&kb, y->dtype, py, idx, hc_kb_convert(&kb, v, cdt, y->dtype));
  hc_loop_end(&kb, &sl);
  hc_loop_end(&kb, &cl);
  hc_loop_end(&kb, &task);

  double bytes = 3.0 * (double)hc_value_nbytes(x) + (double)hc_value_nbytes(y) + (double)hc_value_nbytes(scale) +
                 (double)hc_value_nbytes(bias);
  hc_kb_end(&kb, 7.0 * (double)hc_value_numel(x), bytes);
  return HX_OK;
}

/* ---- LRN -------------------------------------------------------------------- */

/* Spatial positions per LRN task. */
#define LRN_BLOCK 512

/* y = x / (bias + alpha / size * sum(x[c'] ^ 2)) ^ beta, c' over the
 * channels c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2) that
 * exist. A task is one (n, c) plane, or a block of LRN_BLOCK positions of
 * it; the squared sums of the block live in a stack buffer so that every
 * inner loop walks contiguous memory. */
static hx_status_t infer_lrn(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  uint64_t m = HC_DT(HX_DTYPE_FLOAT32) | HC_DT(HX_DTYPE_FLOAT64) | HC_DT(HX_DTYPE_FLOAT16);
  if (n->opset >= 13) m |= HC_DT(HX_DTYPE_BFLOAT16);
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, m));
  const hc_value* x = n->inputs[0];
  if (x->rank < 2)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input must have rank >= 2 (N x C x D1 x ...), got rank %d",
                         x->rank);
  if (!hc_node_attr(n, "size"))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "required attribute 'size' is missing");
  if (hc_attr_int(n, "size", 1) < 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "size = %lld must be positive",
                         (long long)hc_attr_int(n, "size", 1));
  hc_set_output(n, 0, x->dtype, x->rank, x->dims);
  return HX_OK;
}

static hx_status_t lower_lrn(hc_lower_ctx* lc, hc_node* n) {
  const hc_value *x = n->inputs[0], *y = n->outputs[0];
  if (hc_value_numel(x) == 0) return HX_OK; /* nothing to write */
  hx_dtype_t cdt = x->dtype == HX_DTYPE_FLOAT64 ? HX_DTYPE_FLOAT64 : HX_DTYPE_FLOAT32;
  int64_t C = x->dims[1], S = hc_shape_numel(x->rank - 2, x->dims + 2);
  int64_t size = hc_attr_int(n, "size", 1);
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  int64_t blocks = (S + LRN_BLOCK - 1) / LRN_BLOCK;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, x->dims[0] * C * blocks, &kb));
  LLVMTypeRef t = hc_kb_compute_type(&kb, cdt);
  LLVMValueRef px = hc_kb_ptr(&kb, x), py = hc_kb_ptr(&kb, y);
  LLVMValueRef buf = hc_kb_alloca(&kb, LLVMArrayType2(t, LRN_BLOCK), "sq");
  LLVMValueRef zero = hc_kb_i64(&kb, 0);
  LLVMValueRef bias = hc_kb_const(&kb, cdt, hc_attr_float(n, "bias", 1.0f));
  LLVMValueRef coef = hc_kb_const(&kb, cdt, (double)hc_attr_float(n, "alpha", 1e-4f) / (double)size);
  LLVMValueRef beta = hc_kb_const(&kb, cdt, hc_attr_float(n, "beta", 0.75f));

  hc_loop task, il, cl;
  LLVMValueRef tk = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef plane = LLVMBuildUDiv(kb.b, tk, hc_kb_i64(&kb, blocks), "");
  LLVMValueRef s0 = hc_kb_imul(&kb, LLVMBuildURem(kb.b, tk, hc_kb_i64(&kb, blocks), ""), hc_kb_i64(&kb, LRN_BLOCK));
  LLVMValueRef cnt = hc_kb_imin(&kb, hc_kb_i64(&kb, LRN_BLOCK), LLVMBuildSub(kb.b, hc_kb_i64(&kb, S), s0, ""));
  LLVMValueRef c = LLVMBuildURem(kb.b, plane, hc_kb_i64(&kb, C), "");
  LLVMValueRef nbase = LLVMBuildSub(kb.b, plane, c, ""); /* plane index of channel 0 */
  LLVMValueRef lo = hc_kb_imax(&kb, zero, LLVMBuildSub(kb.b, c, hc_kb_i64(&kb, before), ""));
  LLVMValueRef hi = hc_kb_imin(&kb, hc_kb_i64(&kb, C), hc_kb_iadd(&kb, c, hc_kb_i64(&kb, after + 1)));

  LLVMValueRef i = hc_loop_begin(&kb, &il, zero, cnt, "i");
  LLVMBuildStore(kb.b, hc_kb_const(&kb, cdt, 0), LLVMBuildGEP2(kb.b, t, buf, &i, 1, ""));
  hc_loop_end(&kb, &il);

  LLVMValueRef cc = hc_loop_begin(&kb, &cl, lo, hi, "c");
  LLVMValueRef row = hc_kb_iadd(&kb, hc_kb_imul(&kb, hc_kb_iadd(&kb, nbase, cc), hc_kb_i64(&kb, S)), s0);
  i = hc_loop_begin(&kb, &il, zero, cnt, "i");
  LLVMValueRef p = LLVMBuildGEP2(kb.b, t, buf, &i, 1, "");
  LLVMValueRef v = load_as(&kb, x, px, hc_kb_iadd(&kb, row, i), cdt);
  LLVMBuildStore(kb.b, hc_kb_fma(&kb, cdt, v, v, LLVMBuildLoad2(kb.b, t, p, "")), p);
  hc_loop_end(&kb, &il);
  hc_loop_end(&kb, &cl);

  LLVMValueRef out0 = hc_kb_iadd(&kb, hc_kb_imul(&kb, plane, hc_kb_i64(&kb, S)), s0);
  i = hc_loop_begin(&kb, &il, zero, cnt, "i");
  LLVMValueRef idx = hc_kb_iadd(&kb, out0, i);
  LLVMValueRef sq = LLVMBuildLoad2(kb.b, t, LLVMBuildGEP2(kb.b, t, buf, &i, 1, ""), "");
  LLVMValueRef args[2] = {hc_kb_fma(&kb, cdt, coef, sq, bias), beta};
  LLVMValueRef den = hc_kb_math(&kb, cdt, "pow", args, 2);
  LLVMValueRef r = hc_kb_div(&kb, cdt, load_as(&kb, x, px, idx, cdt), den);
  hc_kb_store(&kb, y->dtype, py, idx, hc_kb_convert(&kb, r, cdt, y->dtype));
  hc_loop_end(&kb, &il);
  hc_loop_end(&kb, &task);

  hc_kb_end(&kb, (2.0 * (double)size + 12.0) * (double)hc_value_numel(x),
            (double)(size + 1) * (double)hc_value_nbytes(x) + (double)hc_value_nbytes(y));
  return HX_OK;
}

static const char* const k_bn_attrs[] = {"epsilon",         "momentum",      "spatial", "is_test",
                                         "consumed_inputs", "training_mode", NULL};
static const char* const k_ln_attrs[] = {"axis", "epsilon", "stash_type", NULL};
static const char* const k_in_attrs[] = {"epsilon", "consumed_inputs", NULL};
static const char* const k_gn_attrs[] = {"epsilon", "num_groups", "stash_type", NULL};
static const char* const k_lrn_attrs[] = {"alpha", "beta", "bias", "size", NULL};

const hc_op_desc hc_op_batch_normalization = {"BatchNormalization", "", 1, 22, k_bn_attrs, 0,
                                              infer_batch_norm, lower_batch_norm, NULL};
const hc_op_desc hc_op_layer_normalization = {"LayerNormalization", "", 17, 22, k_ln_attrs, 0,
                                              infer_layer_norm, lower_layer_norm, NULL};
const hc_op_desc hc_op_instance_normalization = {"InstanceNormalization", "", 1, 22, k_in_attrs, 0,
                                                 infer_group_norm, lower_group_norm, NULL};
const hc_op_desc hc_op_group_normalization = {"GroupNormalization", "", 18, 22, k_gn_attrs, 0, infer_group_norm,
                                              lower_group_norm, NULL};
const hc_op_desc hc_op_lrn = {"LRN", "", 1, 22, k_lrn_attrs, 0, infer_lrn, lower_lrn, NULL};
