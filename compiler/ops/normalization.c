/* BatchNormalization (inference) and LayerNormalization.
 *
 * BatchNormalization normalises with the given running statistics:
 *   y = (x - mean[c]) * scale[c] / sqrt(var[c] + epsilon) + B[c]
 * per channel c = dim 1 (spatial=0, opsets < 9: per channel and position).
 * Training mode (batch statistics and running-stat outputs) is rejected.
 * A task is one (n, c) plane when planes are large, else one batch row.
 *
 * LayerNormalization normalises every row X[i, axis:] by its own mean and
 * variance (two passes, for accuracy) and applies Scale and B, which
 * broadcast to X. A task is one row. Statistics are computed in float32, or
 * in float64 when stash_type is double; Mean and InvStdDev are stored in the
 * stash type with the reduced dims kept as 1.
 */
#include "compiler/ops/op.h"

/* Spatial size from which BatchNormalization gives each plane its own task. */
#define BN_PLANE_MIN 32

/* Marks a floating-point instruction reassociable so that sums can be
 * split into vector lanes. */
static LLVMValueRef reassoc(LLVMValueRef v) {
  if (LLVMIsAInstruction(v) && LLVMCanValueUseFastMathFlags(v)) LLVMSetFastMathFlags(v, LLVMFastMathAllowReassoc);
  return v;
}

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

/* Loads element idx of v (dtype v->dtype) converted to the compute type of cdt. */
static LLVMValueRef load_as(hc_kb* kb, const hc_value* v, LLVMValueRef ptr, LLVMValueRef idx, hx_dtype_t cdt) {
  return hc_kb_convert(kb, load_elem(kb, v->dtype, ptr, idx), v->dtype, cdt);
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

static hx_status_t infer_batch_norm(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 5, 5, 1, n->opset >= 14 ? 3 : 5));
  HX_RETURN_IF_ERROR(bn_check_attrs(n));
  for (int i = 0; i < 5; ++i) HX_RETURN_IF_ERROR(hc_check_dtype(n, i, HC_DT_FLOATS));
  bool extra_outputs = false;
  for (int i = 1; i < n->num_outputs; ++i) extra_outputs |= n->outputs[i] != NULL;
  if (n->opset >= 14 && hc_attr_int(n, "training_mode", 0) != 0)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                         "training_mode=1 (normalising with batch statistics and updating running statistics) is not "
                         "supported; Harness compiles inference graphs (training_mode=0)");
  if (n->opset < 7 && hc_attr_int(n, "is_test", 0) == 0)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                         "is_test=0 selects training mode (batch statistics), which is not supported; Harness "
                         "compiles inference graphs (set is_test=1)");
  if (extra_outputs)
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

static hx_status_t lower_batch_norm(hc_lower_ctx* lc, hc_node* n) {
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
  store_elem(&kb, y->dtype, py, idx, hc_kb_convert(&kb, yv, cdt, y->dtype));
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
  hx_dtype_t stash, cdt;
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
  LLVMBuildStore(kb->b, reassoc(hc_kb_add(kb, cdt, LLVMBuildLoad2(kb->b, t, acc, ""), v)), acc);
  hc_loop_end(kb, &l);
  return LLVMBuildLoad2(kb->b, t, acc, "");
}

static hx_status_t lower_layer_norm(hc_lower_ctx* lc, hc_node* n) {
  const hc_value *x = n->inputs[0], *scale = n->inputs[1], *bias = hc_input(n, 2), *y = n->outputs[0];
  const hc_value* mean_out = n->num_outputs > 1 ? n->outputs[1] : NULL;
  const hc_value* inv_out = n->num_outputs > 2 ? n->outputs[2] : NULL;
  int64_t axis64;
  HX_RETURN_IF_ERROR(hc_norm_axis(n, hc_attr_int(n, "axis", -1), x->rank, &axis64));
  int axis = (int)axis64;
  hx_dtype_t stash, cdt;
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
  if (pmean) store_elem(&kb, stash, pmean, row, hc_kb_convert(&kb, mean, cdt, stash));
  if (pinv) store_elem(&kb, stash, pinv, row, hc_kb_convert(&kb, inv, cdt, stash));

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
  store_elem(&kb, y->dtype, py, xo, hc_kb_convert(&kb, v, cdt, y->dtype));
  for (int d = z.rank - 1; d >= 0; --d) hc_loop_end(&kb, &loops[d]);
  hc_loop_end(&kb, &task);

  double bytes = 2.0 * (double)hc_value_nbytes(x) + (double)hc_value_nbytes(y) + (double)hc_value_nbytes(scale) +
                 (bias ? (double)hc_value_nbytes(bias) : 0.0);
  hc_kb_end(&kb, 8.0 * (double)hc_value_numel(x), bytes);
  return HX_OK;
}

static const char* const k_bn_attrs[] = {"epsilon",         "momentum",      "spatial", "is_test",
                                         "consumed_inputs", "training_mode", NULL};
static const char* const k_ln_attrs[] = {"axis", "epsilon", "stash_type", NULL};

const hc_op_desc hc_op_batch_normalization = {"BatchNormalization", "", 1, 22, k_bn_attrs, 0,
                                              infer_batch_norm, lower_batch_norm, NULL};
const hc_op_desc hc_op_layer_normalization = {"LayerNormalization", "", 17, 22, k_ln_attrs, 0,
                                              infer_layer_norm, lower_layer_norm, NULL};
