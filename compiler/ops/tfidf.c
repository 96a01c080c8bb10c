/* TfIdfVectorizer (opsets 9-22) for integer inputs: counts the pool's
 * n-grams in each row of X ([C] or [N, C], int32 or int64) into Y ([O] or
 * [N, O] float32, O = max(ngram_indexes) + 1).
 *
 * An n-gram of size k found at positions s, s + d, ..., s + (k-1) d of a
 * row, for every skip distance d = 1 ... max_skip_count + 1 (unigrams only
 * once, at d = 1), counts if min_gram_length <= k <= max_gram_length; pool
 * n-gram i adds to Y[ngram_indexes[i]]. This is ONNX Runtime's scan: with
 * a start position and a distance, a walk down a trie of the pool extends
 * the n-gram one item at a time and stops at the first item not in the
 * trie. Mode TF writes the counts, TFIDF the counts times weights[i], IDF
 * weights[i] where the count is non-zero (weights default to 1). An n-gram
 * listed twice in the pool counts for its first entry only.
 *
 * The pool is a compile-time attribute: the trie is built here as tables
 * (nodes in (depth, value) order so that each node's children are one
 * sorted run, found by binary search). A task is one row. String inputs
 * and pool_strings are not supported (Harness has no string tensors).
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/movement.h"

/* One prefix of a pool n-gram: its first `len` items, from pool[start]. */
typedef struct tf_prefix {
  int64_t start;
  int32_t len;
  int32_t full; /* the whole n-gram (not just a prefix) */
  int64_t gram; /* n-gram number */
} tf_prefix;

/* The trie as tables: node 0 is the root; node u's children are the nodes
 * [first[u], last[u]), whose items val[] increase; out[u] is the output
 * index counted when the walk reaches u (-1 when u is only a prefix). */
typedef struct tf_trie {
  int64_t nodes;
  int64_t *val, *first, *last, *out;
  int64_t max_children;
} tf_trie;

/* The node's attributes, checked. */
typedef struct tf_plan {
  int mode; /* 0 TF, 1 IDF, 2 TFIDF */
  int64_t min_g, max_g, skip;
  const int64_t *counts, *indexes, *pool;
  const float* weights;
  int ncounts, nindexes, npool, nweights;
  int64_t O, N, C;
} tf_plan;

static hx_status_t tf_setup(const hc_node* n, tf_plan* p) {
  memset(p, 0, sizeof *p);
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, 1, 1, 1));
  if (hc_node_attr(n, "pool_strings"))
    return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                         "string n-grams ('pool_strings') are not supported: Harness has no string tensors; use "
                         "integer token ids with 'pool_int64s'");
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT(HX_DTYPE_INT32) | HC_DT(HX_DTYPE_INT64)));
  const hc_value* x = n->inputs[0];
  char s1[128];
  if (x->rank != 1 && x->rank != 2)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "X ('%s') has shape %s; expected [C] or [N, C]", x->name,
                         hc_shape_str(x->rank, x->dims, s1, sizeof s1));
  const char* mode = hc_attr_string(n, "mode", "");
  if (!strcmp(mode, "TF"))
    p->mode = 0;
  else if (!strcmp(mode, "IDF"))
    p->mode = 1;
  else if (!strcmp(mode, "TFIDF"))
    p->mode = 2;
  else
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "mode '%s' is not one of TF, IDF, TFIDF", mode);
  const hc_attr *amin = hc_node_attr(n, "min_gram_length"), *amax = hc_node_attr(n, "max_gram_length"),
                *askip = hc_node_attr(n, "max_skip_count");
  if (!amin || !amax || !askip)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "'min_gram_length', 'max_gram_length' and 'max_skip_count' are required");
  p->min_g = hc_attr_int(n, "min_gram_length", 1);
  p->max_g = hc_attr_int(n, "max_gram_length", 1);
  p->skip = hc_attr_int(n, "max_skip_count", 0);
  if (p->min_g < 1 || p->max_g < p->min_g || p->skip < 0)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "need 1 <= min_gram_length (%lld) <= max_gram_length (%lld) and max_skip_count (%lld) >= 0",
                         (long long)p->min_g, (long long)p->max_g, (long long)p->skip);
  const hc_attr *ac = hc_node_attr(n, "ngram_counts"), *ai = hc_node_attr(n, "ngram_indexes"),
                *ap = hc_node_attr(n, "pool_int64s"), *aw = hc_node_attr(n, "weights");
  if (!ac || !ai || !ap || ac->type != HC_ATTR_INTS || ai->type != HC_ATTR_INTS || ap->type != HC_ATTR_INTS)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "'ngram_counts', 'ngram_indexes' and 'pool_int64s' (lists of ints) are required");
  p->counts = ac->ints;
  p->ncounts = ac->n;
  p->indexes = ai->ints;
  p->nindexes = ai->n;
  p->pool = ap->ints;
  p->npool = ap->n;
  if (aw) {
    if (aw->type != HC_ATTR_FLOATS || aw->n != ai->n)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'weights' must be %d floats (one per n-gram), got %d", ai->n,
                           aw->n);
    p->weights = aw->floats;
    p->nweights = aw->n;
  }
  int64_t grams = 0;
  for (int j = 0; j < p->ncounts; ++j) {
    int64_t b = p->counts[j], e = j + 1 < p->ncounts ? p->counts[j + 1] : p->npool;
    if (b < 0 || e < b || e > p->npool || (e - b) % (j + 1) != 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "'ngram_counts'[%d] = %lld: the %d-grams must span a multiple of %d pool entries within "
                           "the %d of 'pool_int64s'",
                           j, (long long)b, j + 1, j + 1, p->npool);
    grams += (e - b) / (j + 1);
  }
  if (p->ncounts > 0 && p->counts[0] != 0)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'ngram_counts'[0] must be 0, got %lld",
                         (long long)p->counts[0]);
  if (grams != p->nindexes)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "the pool holds %lld n-grams but 'ngram_indexes' has %d entries", (long long)grams,
                         p->nindexes);
  p->O = 0;
  for (int i = 0; i < p->nindexes; ++i) {
    if (p->indexes[i] < 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "'ngram_indexes'[%d] = %lld; must be >= 0", i,
                           (long long)p->indexes[i]);
    if (p->indexes[i] + 1 > p->O) p->O = p->indexes[i] + 1;
  }
  p->N = x->rank == 2 ? x->dims[0] : 1;
  p->C = x->dims[x->rank - 1];
  return HX_OK;
}

static hx_status_t infer_tfidf(hc_graph* g, hc_node* n) {
  tf_plan p;
  HX_RETURN_IF_ERROR(tf_setup(n, &p));
  int64_t dims[2] = {p.N, p.O};
  if (n->inputs[0]->rank == 2)
    hc_set_output(n, 0, HX_DTYPE_FLOAT32, 2, dims);
  else
    hc_set_output(n, 0, HX_DTYPE_FLOAT32, 1, dims + 1);
  return HX_OK;
}

/* Orders prefixes by length, then items, then full n-grams before bare
 * prefixes, then n-gram number: equal prefixes become neighbours, the one
 * that owns the node first. `same` is set when the items are equal. */
static int tf_cmp(const int64_t* pool, const tf_prefix* a, const tf_prefix* b, bool* same) {
  *same = false;
  if (a->len != b->len) return a->len < b->len ? -1 : 1;
  for (int32_t i = 0; i < a->len; ++i) {
    int64_t x = pool[a->start + i], y = pool[b->start + i];
    if (x != y) return x < y ? -1 : 1;
  }
  *same = true;
  if (a->full != b->full) return a->full ? -1 : 1;
  if (a->gram != b->gram) return a->gram < b->gram ? -1 : 1;
  return 0;
}

/* Stable merge sort of the prefixes (the comparison needs the pool). */
static void tf_sort(const int64_t* pool, tf_prefix* v, tf_prefix* tmp, int64_t count) {
  for (int64_t width = 1; width < count; width *= 2) {
    for (int64_t lo = 0; lo < count; lo += 2 * width) {
      int64_t mid = lo + width < count ? lo + width : count, hi = lo + 2 * width < count ? lo + 2 * width : count;
      int64_t i = lo, j = mid, k = lo;
      bool same;
      while (i < mid && j < hi) tmp[k++] = tf_cmp(pool, &v[j], &v[i], &same) < 0 ? v[j++] : v[i++];
      while (i < mid) tmp[k++] = v[i++];
      while (j < hi) tmp[k++] = v[j++];
    }
    memcpy(v, tmp, sizeof(*v) * (size_t)count);
  }
}

/* Are the first `len` items of prefixes a and b equal? */
static bool tf_prefix_eq(const int64_t* pool, const tf_prefix* a, const tf_prefix* b, int32_t len) {
  for (int32_t i = 0; i < len; ++i)
    if (pool[a->start + i] != pool[b->start + i]) return false;
  return true;
}

static void tf_trie_free(tf_trie* t) {
  free(t->val);
  free(t->first);
  free(t->last);
  free(t->out);
}

/* Builds the trie tables of the pool; false when out of memory. */
static bool tf_build(const tf_plan* p, tf_trie* t) {
  memset(t, 0, sizeof *t);
  int64_t total = 0;
  for (int j = 0; j < p->ncounts; ++j) {
    int64_t b = p->counts[j], e = j + 1 < p->ncounts ? p->counts[j + 1] : p->npool;
    total += (e - b) / (j + 1) * (j + 1);
  }
  tf_prefix* pre = malloc(sizeof(tf_prefix) * (size_t)(total + 1));
  tf_prefix* tmp = malloc(sizeof(tf_prefix) * (size_t)(total + 1));
  bool ok = pre && tmp;
  int64_t np = 0, gram = 0;
  for (int j = 0; ok && j < p->ncounts; ++j) {
    int64_t b = p->counts[j], e = j + 1 < p->ncounts ? p->counts[j + 1] : p->npool;
    for (int64_t s = b; s < e; s += j + 1, ++gram)
      for (int32_t len = 1; len <= j + 1; ++len) pre[np++] = (tf_prefix){s, len, len == j + 1, gram};
  }
  if (ok) tf_sort(p->pool, pre, tmp, np);
  /* Distinct prefixes become nodes 1..; tmp[u] keeps node u's prefix. */
  int64_t nodes = 1;
  if (ok) tmp[0] = (tf_prefix){0, 0, 0, -1};
  for (int64_t i = 0; ok && i < np; ++i) {
    bool same = false;
    if (i > 0) tf_cmp(p->pool, &pre[i - 1], &pre[i], &same);
    if (i == 0 || !same) tmp[nodes++] = pre[i];
  }
  t->nodes = nodes;
  if (ok) {
    t->val = calloc((size_t)nodes, sizeof(int64_t));
    t->first = calloc((size_t)nodes, sizeof(int64_t));
    t->last = calloc((size_t)nodes, sizeof(int64_t));
    t->out = malloc(sizeof(int64_t) * (size_t)nodes);
    ok = t->val && t->first && t->last && t->out;
  }
  for (int64_t u = 0; ok && u < nodes; ++u) {
    t->out[u] = -1;
    if (u == 0) continue;
    t->val[u] = p->pool[tmp[u].start + tmp[u].len - 1];
    if (tmp[u].full) t->out[u] = p->indexes[tmp[u].gram];
  }
  /* Children: the nodes one deeper whose first items are the parent's.
   * Both depths are sorted, so parents advance monotonically. */
  int64_t parent = 0;
  int32_t depth = 0;
  for (int64_t v = 1; ok && v < nodes; ++v) {
    int32_t d = tmp[v].len - 1;
    if (d != depth) {
      depth = d;
      parent = 0;
      if (d > 0)
        while (tmp[parent].len != d) ++parent;
    }
    if (d > 0)
      while (!tf_prefix_eq(p->pool, &tmp[parent], &tmp[v], d)) ++parent;
    if (t->last[parent] == 0) t->first[parent] = v;
    t->last[parent] = v + 1;
  }
  for (int64_t u = 0; ok && u < nodes; ++u)
    if (t->last[u] - t->first[u] > t->max_children) t->max_children = t->last[u] - t->first[u];
  free(pre);
  free(tmp);
  if (!ok) tf_trie_free(t);
  return ok;
}

/* One scan of a row with skip distances [dlo, dhi): n-grams of size >=
 * start_size count. */
static void tf_scan(hc_kb* kb, const tf_plan* p, const tf_trie* tr, hc_mv_table tval, hc_mv_table tfirst,
                    hc_mv_table tlast, hc_mv_table tout, LLVMValueRef X, hx_dtype_t xdt, LLVMValueRef Y,
                    LLVMValueRef row, int64_t dlo, int64_t dhi, int64_t start_size, LLVMValueRef node_slot,
                    LLVMValueRef alive_slot) {
  LLVMBuilderRef b = kb->b;
  int steps = 1;
  while (((int64_t)1 << (steps - 1)) <= tr->max_children) ++steps;
  LLVMValueRef zero = hc_kb_i64(kb, 0), C = hc_kb_i64(kb, p->C);
  LLVMValueRef xrow = hc_kb_imul(kb, row, C), yrow = hc_kb_imul(kb, row, hc_kb_i64(kb, p->O));
  LLVMValueRef last_node = hc_kb_i64(kb, tr->nodes - 1);
  hc_loop dl, sl, kl;
  LLVMValueRef d = hc_loop_begin(kb, &dl, hc_kb_i64(kb, dlo), hc_kb_i64(kb, dhi), "dist");
  LLVMValueRef s = hc_loop_begin(kb, &sl, zero, C, "start");
  LLVMBuildStore(b, zero, node_slot);
  LLVMBuildStore(b, LLVMConstInt(kb->t_i1, 1, 0), alive_slot);
  LLVMValueRef k = hc_loop_begin(kb, &kl, zero, hc_kb_i64(kb, p->max_g), "size");
  LLVMValueRef pos = hc_kb_iadd(kb, s, hc_kb_imul(kb, k, d));
  LLVMValueRef go =
      LLVMBuildAnd(b, LLVMBuildLoad2(b, kb->t_i1, alive_slot, ""), LLVMBuildICmp(b, LLVMIntSLT, pos, C, ""), "");
  LLVMBuildStore(b, go, alive_slot);
  hc_if walk;
  hc_if_begin(kb, &walk, go);
  LLVMValueRef v = hc_kb_load(kb, xdt, X, hc_kb_iadd(kb, xrow, pos));
  if (xdt != HX_DTYPE_INT64) v = LLVMBuildSExt(b, v, kb->t_i64, "");
  LLVMValueRef node = LLVMBuildLoad2(b, kb->t_i64, node_slot, "");
  LLVMValueRef end = hc_mv_table_get(kb, tlast, node);
  LLVMValueRef lo = hc_mv_table_get(kb, tfirst, node), hi = end;
  /* Binary search for v among the children (lower bound). */
  for (int it = 0; it < steps; ++it) {
    LLVMValueRef active = LLVMBuildICmp(b, LLVMIntSLT, lo, hi, "");
    LLVMValueRef mid = LLVMBuildLShr(b, hc_kb_iadd(kb, lo, hi), hc_kb_i64(kb, 1), "");
    LLVMValueRef vm = hc_mv_table_get(kb, tval, hc_kb_imin(kb, mid, last_node));
    LLVMValueRef less = LLVMBuildICmp(b, LLVMIntSLT, vm, v, "");
    lo = LLVMBuildSelect(b, LLVMBuildAnd(b, active, less, ""), hc_kb_iadd(kb, mid, hc_kb_i64(kb, 1)), lo, "");
    hi = LLVMBuildSelect(b, LLVMBuildAnd(b, active, LLVMBuildNot(b, less, ""), ""), mid, hi, "");
  }
  LLVMValueRef safe = hc_kb_imin(kb, lo, last_node);
  LLVMValueRef found = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSLT, lo, end, ""),
                                    LLVMBuildICmp(b, LLVMIntEQ, hc_mv_table_get(kb, tval, safe), v, ""), "");
  LLVMBuildStore(b, found, alive_slot);
  LLVMBuildStore(b, safe, node_slot);
  LLVMValueRef oi = hc_mv_table_get(kb, tout, safe);
  LLVMValueRef counts = LLVMBuildAnd(b, found, LLVMBuildICmp(b, LLVMIntSGE, oi, zero, ""), "");
  if (start_size > 1)
    counts = LLVMBuildAnd(b, counts, LLVMBuildICmp(b, LLVMIntSGE, k, hc_kb_i64(kb, start_size - 1), ""), "");
  hc_if hit;
  hc_if_begin(kb, &hit, counts);
  LLVMValueRef yp = LLVMBuildGEP2(b, kb->t_f32, Y, (LLVMValueRef[]){hc_kb_iadd(kb, yrow, oi)}, 1, "");
  LLVMBuildStore(b, LLVMBuildFAdd(b, LLVMBuildLoad2(b, kb->t_f32, yp, ""), LLVMConstReal(kb->t_f32, 1.0), ""), yp);
  hc_if_end(kb, &hit);
  hc_if_end(kb, &walk);
  hc_loop_end(kb, &kl);
  hc_loop_end(kb, &sl);
  hc_loop_end(kb, &dl);
}

static hx_status_t lower_tfidf(hc_lower_ctx* lc, hc_node* n) {
  tf_plan p;
  HX_RETURN_IF_ERROR(tf_setup(n, &p));
  const hc_value *x = n->inputs[0], *y = n->outputs[0];
  if (p.N == 0 || p.O == 0) return HX_OK;
  tf_trie tr;
  if (!tf_build(&p, &tr)) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory lowering %s", n->name);
  /* Output weights per output index (the last n-gram mapped there wins). */
  double* wout = malloc(sizeof(double) * (size_t)p.O);
  if (!wout) {
    tf_trie_free(&tr);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory lowering %s", n->name);
  }
  for (int64_t o = 0; o < p.O; ++o) wout[o] = 1.0;
  for (int i = 0; i < p.nweights; ++i) wout[p.indexes[i]] = p.weights[i];

  hc_kb kb;
  hx_status_t st = hc_kb_begin(lc, n, NULL, p.N, &kb);
  if (st) {
    free(wout);
    tf_trie_free(&tr);
    return st;
  }
  LLVMBuilderRef b = kb.b;
  hc_mv_table tval = hc_mv_int_table(&kb, tr.val, tr.nodes, "tfidf_val");
  hc_mv_table tfirst = hc_mv_int_table(&kb, tr.first, tr.nodes, "tfidf_first");
  hc_mv_table tlast = hc_mv_int_table(&kb, tr.last, tr.nodes, "tfidf_last");
  hc_mv_table tout = hc_mv_int_table(&kb, tr.out, tr.nodes, "tfidf_out");
  LLVMValueRef wtab = p.mode != 0 ? hc_mv_real_table(&kb, kb.t_f32, wout, p.O, "tfidf_w") : NULL;
  bool oom = !tval.ptr || !tfirst.ptr || !tlast.ptr || !tout.ptr || (p.mode != 0 && !wtab);
  if (oom) {
    free(wout);
    tf_trie_free(&tr);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory lowering %s", n->name);
  }
  LLVMValueRef X = hc_kb_ptr(&kb, x), Y = hc_kb_ptr(&kb, y);
  LLVMValueRef node_slot = hc_kb_alloca(&kb, kb.t_i64, "node"), alive_slot = hc_kb_alloca(&kb, kb.t_i1, "alive");
  hc_loop task, ol;
  LLVMValueRef row = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef yrow = hc_kb_imul(&kb, row, hc_kb_i64(&kb, p.O));
  hc_kb_memset(&kb, LLVMBuildGEP2(b, kb.t_f32, Y, &yrow, 1, ""), 0, hc_kb_i64(&kb, p.O * 4));
  /* Unigrams count at distance 1 only; larger n-grams at every distance. */
  tf_scan(&kb, &p, &tr, tval, tfirst, tlast, tout, X, x->dtype, Y, row, 1, 2, p.min_g, node_slot, alive_slot);
  int64_t later = p.min_g > 2 ? p.min_g : 2;
  if (p.skip > 0 && later <= p.max_g)
    tf_scan(&kb, &p, &tr, tval, tfirst, tlast, tout, X, x->dtype, Y, row, 2, p.skip + 2, later, node_slot, alive_slot);
  if (p.mode != 0) {
    LLVMValueRef o = hc_loop_begin(&kb, &ol, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, p.O), "o");
    LLVMValueRef yp = LLVMBuildGEP2(b, kb.t_f32, Y, (LLVMValueRef[]){hc_kb_iadd(&kb, yrow, o)}, 1, "");
    LLVMValueRef cnt = LLVMBuildLoad2(b, kb.t_f32, yp, "");
    LLVMValueRef w = LLVMBuildLoad2(b, kb.t_f32, LLVMBuildGEP2(b, kb.t_f32, wtab, &o, 1, ""), "");
    LLVMValueRef r;
    if (p.mode == 1)
      r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, cnt, LLVMConstReal(kb.t_f32, 0.0), ""), w,
                          LLVMConstReal(kb.t_f32, 0.0), "");
    else
      r = LLVMBuildFMul(b, cnt, w, "");
    LLVMBuildStore(b, r, yp);
    hc_loop_end(&kb, &ol);
  }
  hc_loop_end(&kb, &task);
  double walks = (double)p.N * (double)p.C * (double)(p.skip + 1) * (double)p.max_g;
  hc_kb_end(&kb, walks * 8.0, (double)hc_value_nbytes(x) * (double)(p.skip + 1) + (double)hc_value_nbytes(y));
  free(wout);
  tf_trie_free(&tr);
  return HX_OK;
}

static const char* const k_tfidf_attrs[] = {
    "max_gram_length", "max_skip_count", "min_gram_length", "mode",    "ngram_counts",
    "ngram_indexes",   "pool_int64s",    "pool_strings",    "weights", NULL};

const hc_op_desc hc_op_tfidf_vectorizer = {
    "TfIdfVectorizer", "", 9, 22, k_tfidf_attrs, 0, infer_tfidf, lower_tfidf, NULL};
