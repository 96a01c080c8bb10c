/* Einsum (opset 12 on): sums of products of inputs over index labels,
 * described by an equation such as "bij,bjk->bik".
 *
 * The equation is parsed at compile time (numpy's rules, which the ONNX
 * reference uses):
 *  - a term is letters (a-z, A-Z) and at most one "..."; an input's
 *    ellipsis stands for its axes not named by letters, right-aligned and
 *    broadcast (size 1 against n) across inputs like numpy broadcasting;
 *  - a letter repeated within a term takes a diagonal (its strides add);
 *  - a label of size 1 in one input broadcasts against the others;
 *  - without "->" the output is "..." then the letters used exactly once,
 *    in ASCII order; with "->" the output lists its labels (each once),
 *    and must contain "..." when the inputs' ellipsis has axes;
 *  - labels absent from the output are summed over.
 *
 * Every label gets a size and, per input, an element stride (0 where the
 * input lacks it or broadcasts it). The kernel is a loop nest over all
 * labels: units are rows of the output (every output label but the last),
 * the last output label j runs in blocks, and the summed labels form the
 * reduction nest. Two shapes of nest, chosen per equation:
 *  - j inside the reduction (an accumulator row on the stack) when j walks
 *    every input contiguously or not at all: the inner loop is contiguous
 *    and vectorises (batched matmul "bij,bjk->bik", outer products...);
 *  - otherwise, when some summed label walks every input contiguously, the
 *    reduction runs inside j with that label innermost as a reassociable
 *    sum LLVM vectorises (dot products, "ij,kj->ik").
 * Sums accumulate in the compute type (float32 for float16/bfloat16,
 * wrapping integer arithmetic for integers), as numpy does per element.
 *
 * Two float32 inputs whose labels fall into the roles of a batched matrix
 * product (attention's "bhid,bhjd->bhij" and "bhij,bhjd->bhid") run on the
 * register-tiled GEMM of gemm.c instead (ein_product_desc): the loop nest
 * ran MaxViT's attention products at 6 GFLOP/s. */
#include <string.h>

#include "compiler/ops/gemm_internal.h"
#include "compiler/ops/movement.h"

static const char* const k_einsum_attrs[] = {"equation", NULL};

/* Labels: 52 letters, then ellipsis axes. */
#define EIN_LETTERS 52
#define EIN_MAX_LABELS (EIN_LETTERS + HC_MAX_RANK)
/* Output elements of the last label per accumulator row. */
#define EIN_BLOCK 256

typedef struct ein_plan {
  int nin;
  int nlabels;                        /* used labels, in loop order: output first, then summed */
  int nout;                           /* the first nout labels are the output's axes */
  int64_t size[EIN_MAX_LABELS];       /* per loop label */
  int64_t stride[16][EIN_MAX_LABELS]; /* per input, per loop label (elements) */
  int64_t out_stride[EIN_MAX_LABELS]; /* per output label */
  int64_t out_dims[HC_MAX_RANK];
} ein_plan;

/* Label id of a letter: a-z are 0-25, A-Z 26-51; -1 otherwise. */
static int letter_id(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + c - 'A';
  return -1;
}

/* Parses one term into label ids (ellipsis axes as EIN_LETTERS + k, k
 * counted from the left of the ellipsis part of width `ell`); *has_ell
 * tells whether it contains "...". Returns the count or -1 when malformed. */
static int parse_term(const char* s, size_t len, int* ids, int cap, bool* has_ell, int* letters) {
  int n = 0, nl = 0;
  *has_ell = false;
  for (size_t i = 0; i < len; ++i) {
    if (s[i] == ' ') continue;
    if (s[i] == '.') {
      if (*has_ell || i + 2 >= len + 0 || s[i + 1] != '.' || s[i + 2] != '.') return -1;
      *has_ell = true;
      if (n >= cap) return -1;
      ids[n++] = -2; /* placeholder, expanded later */
      i += 2;
      continue;
    }
    int id = letter_id(s[i]);
    if (id < 0 || n >= cap) return -1;
    ids[n++] = id;
    ++nl;
  }
  *letters = nl;
  return n;
}

/* Parses the equation and computes sizes and strides; fills p. */
static hx_status_t make_plan(const hc_node* n, ein_plan* p) {
  memset(p, 0, sizeof *p);
  const char* eq = hc_attr_string(n, "equation", NULL);
  if (!eq) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "the string attribute 'equation' is required");
  p->nin = n->num_inputs;
  if (p->nin < 1 || p->nin > 16)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED, "Einsum with %d inputs (1 to 16 supported)", p->nin);
  const char* arrow = strstr(eq, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);

  /* Input terms. */
  int ids[16][HC_MAX_RANK + 1], nids[16];
  bool ell[16];
  int ell_width = 0;
  int64_t ell_dims[HC_MAX_RANK];
  for (int k = 0; k < HC_MAX_RANK; ++k) ell_dims[k] = 1;
  const char* t = eq;
  for (int i = 0; i < p->nin; ++i) {
    const char* end = memchr(t, ',', lhs_len - (size_t)(t - eq));
    if (!end) end = eq + lhs_len;
    if (i == p->nin - 1 && end != eq + lhs_len)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "equation '%s' has more terms than the %d inputs", eq,
                           p->nin);
    if (i < p->nin - 1 && end == eq + lhs_len)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "equation '%s' has fewer terms than the %d inputs", eq,
                           p->nin);
    const hc_value* v = n->inputs[i];
    int letters;
    nids[i] = parse_term(t, (size_t)(end - t), ids[i], HC_MAX_RANK + 1, &ell[i], &letters);
    if (nids[i] < 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "term %d of equation '%s' is malformed", i, eq);
    int width = v->rank - letters;
    if (width < 0 || (!ell[i] && width != 0))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "term %d of equation '%s' names %d axes but input %d has rank %d", i, eq, letters, i,
                           v->rank);
    if (width > ell_width) ell_width = width;
    t = end + 1;
  }
  /* Ellipsis sizes: right-aligned broadcast over the inputs. */
  for (int i = 0; i < p->nin; ++i) {
    if (!ell[i]) continue;
    const hc_value* v = n->inputs[i];
    int letters = nids[i] - 1, width = v->rank - letters, pos = 0;
    while (ids[i][pos] != -2) ++pos;
    for (int k = 0; k < width; ++k) {
      int e = ell_width - width + k;
      int64_t dim = v->dims[pos + k];
      if (ell_dims[e] == 1) ell_dims[e] = dim;
      else if (dim != 1 && dim != ell_dims[e])
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                             "the ellipsis axes of the inputs do not broadcast (%lld vs %lld)", (long long)ell_dims[e],
                             (long long)dim);
    }
  }
  /* Label sizes over all inputs (size 1 broadcasts). */
  int64_t lsize[EIN_MAX_LABELS];
  int count[EIN_MAX_LABELS];
  for (int l = 0; l < EIN_MAX_LABELS; ++l) lsize[l] = -1, count[l] = 0;
  for (int e = 0; e < ell_width; ++e) lsize[EIN_LETTERS + e] = ell_dims[e];
  for (int i = 0; i < p->nin; ++i) {
    const hc_value* v = n->inputs[i];
    int axis = 0;
    for (int k = 0; k < nids[i]; ++k) {
      if (ids[i][k] == -2) {
        axis += v->rank - (nids[i] - 1);
        continue;
      }
      int l = ids[i][k];
      int64_t dim = v->dims[axis++];
      ++count[l];
      if (lsize[l] < 0 || lsize[l] == 1) lsize[l] = dim;
      else if (dim != 1 && dim != lsize[l])
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "label '%c' has sizes %lld and %lld",
                             l < 26 ? 'a' + l : 'A' + l - 26, (long long)lsize[l], (long long)dim);
    }
  }

  /* Output labels. */
  int out[EIN_MAX_LABELS], nout = 0;
  bool in_out[EIN_MAX_LABELS] = {0};
  if (arrow) {
    const char* o = arrow + 2;
    int oids[EIN_MAX_LABELS];
    bool oell;
    int letters;
    int c = parse_term(o, strlen(o), oids, EIN_MAX_LABELS, &oell, &letters);
    if (c < 0) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "the output term of equation '%s' is malformed", eq);
    if (!oell && ell_width > 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "equation '%s': the inputs' ellipsis has %d axes but the output has no '...'", eq,
                           ell_width);
    for (int k = 0; k < c; ++k) {
      if (oids[k] == -2) {
        for (int e = 0; e < ell_width; ++e) out[nout++] = EIN_LETTERS + e;
        continue;
      }
      int l = oids[k];
      if (count[l] == 0)
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "output label '%c' of equation '%s' is not in the inputs",
                             l < 26 ? 'a' + l : 'A' + l - 26, eq);
      if (in_out[l])
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "output label '%c' of equation '%s' appears twice",
                             l < 26 ? 'a' + l : 'A' + l - 26, eq);
      in_out[l] = true;
      out[nout++] = l;
    }
  } else {
    for (int e = 0; e < ell_width; ++e) out[nout++] = EIN_LETTERS + e;
    /* ASCII order: uppercase (ids 26..51) before lowercase (0..25). */
    for (int r = 0; r < EIN_LETTERS; ++r) {
      int l = r < 26 ? 26 + r : r - 26;
      if (count[l] == 1) out[nout++] = l;
    }
  }
  for (int k = 0; k < nout; ++k) in_out[out[k]] = true;
  if (nout > HC_MAX_RANK)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED, "output rank %d exceeds the maximum %d", nout, HC_MAX_RANK);

  /* Loop labels: output, then summed. */
  int loop_of[EIN_MAX_LABELS];
  for (int l = 0; l < EIN_MAX_LABELS; ++l) loop_of[l] = -1;
  for (int k = 0; k < nout; ++k) {
    loop_of[out[k]] = p->nlabels;
    p->size[p->nlabels++] = lsize[out[k]];
    p->out_dims[k] = lsize[out[k]];
  }
  p->nout = nout;
  for (int l = 0; l < EIN_MAX_LABELS; ++l)
    if (lsize[l] >= 0 && !in_out[l] && (l >= EIN_LETTERS || count[l] > 0)) {
      loop_of[l] = p->nlabels;
      p->size[p->nlabels++] = lsize[l];
    }
  int64_t os[HC_MAX_RANK];
  hc_strides(nout, p->out_dims, os);
  for (int k = 0; k < nout; ++k) p->out_stride[k] = os[k];
  /* Input strides per loop label (diagonals add; broadcast axes stay 0). */
  for (int i = 0; i < p->nin; ++i) {
    const hc_value* v = n->inputs[i];
    int64_t vs[HC_MAX_RANK];
    hc_strides(v->rank, v->dims, vs);
    int axis = 0;
    for (int k = 0; k < nids[i]; ++k) {
      if (ids[i][k] == -2) {
        int width = v->rank - (nids[i] - 1);
        for (int e = 0; e < width; ++e, ++axis)
          if (v->dims[axis] != 1) p->stride[i][loop_of[EIN_LETTERS + ell_width - width + e]] += vs[axis];
        continue;
      }
      if (v->dims[axis] != 1) p->stride[i][loop_of[ids[i][k]]] += vs[axis];
      ++axis;
    }
  }
  return HX_OK;
}

/* Checks that all inputs share one numeric dtype; output shape from the plan. */
static hx_status_t infer_einsum(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 16, 1, 1));
  for (int i = 0; i < n->num_inputs; ++i) {
    if (!n->inputs[i]) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d is missing", i);
    HX_RETURN_IF_ERROR(hc_check_dtype(n, i, HC_DT_NUMERIC));
    HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, i));
  }
  ein_plan p;
  HX_RETURN_IF_ERROR(make_plan(n, &p));
  hc_set_output(n, 0, n->inputs[0]->dtype, p.nout, p.out_dims);
  return HX_OK;
}

/* Emission state. */
typedef struct ein_emit {
  hc_kb* kb;
  const ein_plan* p;
  hx_dtype_t dt;
  LLVMValueRef ptr[16];
} ein_emit;

/* Product of the inputs at offsets off[i]. */
static LLVMValueRef product(ein_emit* e, LLVMValueRef* off) {
  LLVMValueRef r = NULL;
  for (int i = 0; i < e->p->nin; ++i) {
    LLVMValueRef v = hc_kb_load(e->kb, e->dt, e->ptr[i], off[i]);
    r = r ? hc_kb_mul(e->kb, e->dt, r, v) : v;
  }
  return r;
}

/* off[i] += iv * stride[i][label] for every input. */
static void advance(ein_emit* e, LLVMValueRef* off, int label, LLVMValueRef iv) {
  for (int i = 0; i < e->p->nin; ++i) {
    int64_t s = e->p->stride[i][label];
    if (s) off[i] = hc_kb_iadd(e->kb, off[i], s == 1 ? iv : hc_kb_imul(e->kb, iv, hc_kb_i64(e->kb, s)));
  }
}

/* Whether every input walks `label` contiguously or not at all. */
static bool unit_strides(const ein_plan* p, int label) {
  for (int i = 0; i < p->nin; ++i)
    if (p->stride[i][label] > 1) return false;
  return true;
}

/* ---- Einsum as a batched matrix product --------------------------------- */

/* Whether labels[0..count) (outer to inner) walk input `in` as one axis:
 * each label's stride is the next one's times its size. Gives the axis's
 * size and its innermost stride (1 and 0 for no labels). */
static bool merged_axis(const ein_plan* p, int in, const int* labels, int count, int64_t* size, int64_t* stride) {
  *size = 1;
  *stride = count > 0 ? p->stride[in][labels[count - 1]] : 0;
  for (int k = 0; k < count; ++k) {
    if (k + 1 < count && p->stride[in][labels[k]] != p->stride[in][labels[k + 1]] * p->size[labels[k + 1]]) return false;
    *size *= p->size[labels[k]];
  }
  return true;
}

/* The input that has output label l, or -1 for both (or neither). */
static int only_input(const ein_plan* p, int l) {
  bool in0 = p->stride[0][l] != 0, in1 = p->stride[1][l] != 0;
  return in0 == in1 ? -1 : in0 ? 0 : 1;
}

/* The product description of a two-input float32 Einsum whose labels (those
 * of size 1 play no part) sort into
 *  - columns: the output's trailing labels that only one input has (it
 *    becomes B), walking it as one axis;
 *  - rows: the labels before them that only the other input has (A), as
 *    many as walk it as one axis (none: one row);
 *  - batch: the output's labels before those, which either input may
 *    broadcast over;
 *  - summed labels, which both inputs have and walk as one axis in the same
 *    order.
 * False for anything else (a label summed in one input only, fewer than 8
 * columns, B's columns not contiguous with too few rows to pay for packing
 * B), which keeps the loop nest. */
static bool ein_product_desc(const hc_node* n, const ein_plan* p, hc_mm_desc* d) {
  if (p->nin != 2 || n->outputs[0]->dtype != HX_DTYPE_FLOAT32) return false;
  int lab[HC_MAX_RANK], nlab = 0;
  for (int l = 0; l < p->nout; ++l)
    if (p->size[l] > 1) lab[nlab++] = l;
  if (nlab == 0) return false;
  int ib = only_input(p, lab[nlab - 1]), ia = 1 - ib;
  if (ib < 0) return false;
  int c0 = nlab; /* columns: lab[c0..nlab) */
  while (c0 > 0 && only_input(p, lab[c0 - 1]) == ib) --c0;
  int r0 = c0; /* rows: lab[r0..c0) */
  while (r0 > 0 && only_input(p, lab[r0 - 1]) == ia) --r0;
  memset(d, 0, sizeof *d);
  if (!merged_axis(p, ib, lab + c0, nlab - c0, &d->N, &d->b_sn)) return false;
  while (!merged_axis(p, ia, lab + r0, c0 - r0, &d->M, &d->a_sm)) ++r0;
  /* Summed labels, in the order of A's strides (outer first). */
  int sum[EIN_MAX_LABELS], nsum = 0;
  for (int l = p->nout; l < p->nlabels; ++l) {
    if (p->size[l] == 1) continue;
    if (!p->stride[0][l] || !p->stride[1][l]) return false;
    int k = nsum++;
    while (k > 0 && p->stride[ia][sum[k - 1]] < p->stride[ia][l]) {
      sum[k] = sum[k - 1];
      --k;
    }
    sum[k] = l;
  }
  int64_t k_b;
  if (!merged_axis(p, ia, sum, nsum, &d->K, &d->a_sk) || !merged_axis(p, ib, sum, nsum, &k_b, &d->b_sk)) return false;
  if (d->N < 8) return false;
  /* Packing a B whose columns are apart costs about as much per element as
   * the product's multiply-adds over a few rows: a matrix-vector product
   * ("ij,j->i") stays a loop of contiguous dot products. */
  if (d->b_sn != 1 && d->M < 8) return false;
  d->dt = HX_DTYPE_FLOAT32;
  d->a = n->inputs[ia];
  d->b = n->inputs[ib];
  d->y = n->outputs[0];
  d->alpha = 1.0;
  d->out_rank = n->outputs[0]->rank;
  d->batch = 1;
  d->batch_rank = r0;
  for (int k = 0; k < r0; ++k) {
    d->batch_dims[k] = p->size[lab[k]];
    d->a_bs[k] = p->stride[ia][lab[k]];
    d->b_bs[k] = p->stride[ib][lab[k]];
    d->batch *= d->batch_dims[k];
  }
  return true;
}

static uint64_t einsum_workspace(const hc_node* n) {
  ein_plan p;
  hc_mm_desc d;
  if (make_plan(n, &p) != HX_OK || hc_value_numel(n->outputs[0]) == 0 || !ein_product_desc(n, &p, &d)) return 0;
  return hc_gemm_workspace(&d);
}

/* The row kernel of the file comment. */
static hx_status_t lower_einsum(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* y = n->outputs[0];
  ein_plan p;
  HX_RETURN_IF_ERROR(make_plan(n, &p));
  int64_t total = hc_value_numel(y);
  if (total == 0) return HX_OK;
  hc_mm_desc md;
  if (ein_product_desc(n, &p, &md)) return hc_gemm_emit(lc, n, &md);
  hx_dtype_t dt = y->dtype;
  /* The last output label (or a virtual one of size 1 for a scalar). */
  int jl = p.nout > 0 ? p.nout - 1 : -1;
  int64_t W = jl >= 0 ? p.size[jl] : 1;
  int nred = p.nlabels - p.nout;
  int64_t red = 1;
  for (int l = p.nout; l < p.nlabels; ++l) red *= p.size[l];
  /* Nest shape: j innermost (accumulator row) or a summed label innermost. */
  int inner_red = -1;
  if (nred > 0 && !(jl >= 0 && unit_strides(&p, jl))) {
    for (int l = p.nout; l < p.nlabels; ++l)
      if (unit_strides(&p, l) && p.size[l] > 1 && (inner_red < 0 || p.size[l] > p.size[inner_red])) inner_red = l;
  }
  bool row_acc = inner_red < 0;
  int64_t JB = row_acc ? (W < EIN_BLOCK ? W : EIN_BLOCK) : W;
  int64_t jblocks = (W + JB - 1) / JB;
  int64_t rows = total / W, units = rows * jblocks;
  double unit_work = (double)JB * (double)(red > 0 ? red : 1) * (double)p.nin * (double)hx_dtype_size(dt);
  int64_t upt = hc_mv_units_per_task(unit_work > 1e9 ? 1000000000 : (int64_t)unit_work);

  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "loops", hc_mv_tasks(units, upt), &kb));
  ein_emit e = {.kb = &kb, .p = &p, .dt = dt};
  for (int i = 0; i < p.nin; ++i) e.ptr[i] = hc_kb_ptr(&kb, n->inputs[i]);
  LLVMValueRef dst = hc_kb_ptr(&kb, y);
  LLVMTypeRef ct = hc_kb_compute_type(&kb, dt);
  LLVMValueRef zero = LLVMConstNull(ct);
  LLVMValueRef acc =
      row_acc ? hc_kb_alloca(&kb, LLVMArrayType2(ct, (uint64_t)JB), "acc") : hc_kb_alloca(&kb, ct, "acc");

  hc_loop ul, jloop, rl[EIN_MAX_LABELS];
  LLVMValueRef u = hc_mv_units_begin(&kb, &ul, units, upt);
  LLVMValueRef blk = jblocks == 1 ? hc_kb_i64(&kb, 0) : LLVMBuildURem(kb.b, u, hc_kb_i64(&kb, jblocks), "");
  LLVMValueRef row = jblocks == 1 ? u : LLVMBuildUDiv(kb.b, u, hc_kb_i64(&kb, jblocks), "");
  /* Row offsets: output labels but the last. */
  LLVMValueRef base[16], coords[HC_MAX_RANK];
  for (int i = 0; i < p.nin; ++i) base[i] = hc_kb_i64(&kb, 0);
  int nrow = jl >= 0 ? jl : 0;
  hc_mv_unflatten(&kb, row, nrow, p.size, coords);
  for (int l = 0; l < nrow; ++l) advance(&e, base, l, coords[l]);
  LLVMValueRef obase = hc_kb_imul(&kb, row, hc_kb_i64(&kb, W));
  LLVMValueRef jlo = hc_kb_imul(&kb, blk, hc_kb_i64(&kb, JB));
  LLVMValueRef jhi = hc_kb_imin(&kb, hc_kb_iadd(&kb, jlo, hc_kb_i64(&kb, JB)), hc_kb_i64(&kb, W));
  LLVMValueRef off[16];

  if (row_acc) {
    LLVMValueRef cnt = LLVMBuildSub(kb.b, jhi, jlo, "");
    if (nred > 0) {
      LLVMValueRef j = hc_loop_begin(&kb, &jloop, hc_kb_i64(&kb, 0), cnt, "z");
      LLVMBuildStore(kb.b, zero, LLVMBuildGEP2(kb.b, ct, acc, &j, 1, ""));
      hc_loop_end(&kb, &jloop);
    }
    memcpy(off, base, sizeof off);
    for (int l = p.nout; l < p.nlabels; ++l) {
      LLVMValueRef iv = hc_loop_begin(&kb, &rl[l], hc_kb_i64(&kb, 0), hc_kb_i64(&kb, p.size[l]), "r");
      advance(&e, off, l, iv);
    }
    LLVMValueRef j = hc_loop_begin(&kb, &jloop, hc_kb_i64(&kb, 0), cnt, "j");
    LLVMValueRef joff[16];
    memcpy(joff, off, sizeof joff);
    if (jl >= 0) advance(&e, joff, jl, hc_kb_iadd(&kb, jlo, j));
    LLVMValueRef v = product(&e, joff);
    if (nred > 0) {
      LLVMValueRef slot = LLVMBuildGEP2(kb.b, ct, acc, &j, 1, "");
      LLVMBuildStore(kb.b, hc_kb_add(&kb, dt, LLVMBuildLoad2(kb.b, ct, slot, ""), v), slot);
    } else {
      hc_kb_store(&kb, dt, dst, hc_kb_iadd(&kb, obase, hc_kb_iadd(&kb, jlo, j)), v);
    }
    hc_loop_end(&kb, &jloop);
    for (int l = p.nlabels - 1; l >= p.nout; --l) hc_loop_end(&kb, &rl[l]);
    if (nred > 0) {
      j = hc_loop_begin(&kb, &jloop, hc_kb_i64(&kb, 0), cnt, "s");
      LLVMValueRef s = LLVMBuildLoad2(kb.b, ct, LLVMBuildGEP2(kb.b, ct, acc, &j, 1, ""), "");
      hc_kb_store(&kb, dt, dst, hc_kb_iadd(&kb, obase, hc_kb_iadd(&kb, jlo, j)), s);
      hc_loop_end(&kb, &jloop);
    }
  } else {
    LLVMValueRef j = hc_loop_begin(&kb, &jloop, jlo, jhi, "j");
    memcpy(off, base, sizeof off);
    if (jl >= 0) advance(&e, off, jl, j);
    LLVMBuildStore(kb.b, zero, acc);
    for (int l = p.nout; l < p.nlabels; ++l) {
      if (l == inner_red) continue;
      LLVMValueRef iv = hc_loop_begin(&kb, &rl[l], hc_kb_i64(&kb, 0), hc_kb_i64(&kb, p.size[l]), "r");
      advance(&e, off, l, iv);
    }
    LLVMValueRef iv = hc_loop_begin(&kb, &rl[inner_red], hc_kb_i64(&kb, 0), hc_kb_i64(&kb, p.size[inner_red]), "k");
    LLVMValueRef ioff[16];
    memcpy(ioff, off, sizeof ioff);
    advance(&e, ioff, inner_red, iv);
    LLVMValueRef sum = hc_kb_add(&kb, dt, LLVMBuildLoad2(kb.b, ct, acc, ""), product(&e, ioff));
    LLVMBuildStore(kb.b, hc_kb_reassoc(sum), acc);
    hc_loop_end(&kb, &rl[inner_red]);
    for (int l = p.nlabels - 1; l >= p.nout; --l)
      if (l != inner_red) hc_loop_end(&kb, &rl[l]);
    hc_kb_store(&kb, dt, dst, hc_kb_iadd(&kb, obase, j), LLVMBuildLoad2(kb.b, ct, acc, ""));
    hc_loop_end(&kb, &jloop);
  }
  hc_loop_end(&kb, &ul);
  double bytes = (double)hc_value_nbytes(y);
  for (int i = 0; i < p.nin; ++i) bytes += (double)hc_value_nbytes(n->inputs[i]);
  hc_kb_end(&kb, (double)total * (double)(red > 0 ? red : 1) * (double)p.nin, bytes);
  return HX_OK;
}

const hc_op_desc hc_op_einsum = {"Einsum", "", 12, 22, k_einsum_attrs, 0, infer_einsum, lower_einsum, NULL,
                                 einsum_workspace};
