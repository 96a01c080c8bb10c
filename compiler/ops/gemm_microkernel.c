/* Register-tiled micro-kernels (see gemm_microkernel.h). */
#include "compiler/ops/gemm_microkernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/backend/target.h"

unsigned hc_ukr_lanes(const hc_lower_ctx* lc, hx_dtype_t dt) {
  int bits = lc->target && lc->target->vector_bits >= 128 ? lc->target->vector_bits : 128;
  return (unsigned)(bits / 8 / (dt == HX_DTYPE_FLOAT64 ? 8 : 4));
}

int hc_ukr_registers(const hc_lower_ctx* lc) { return lc->target && lc->target->vector_bits >= 512 ? 32 : 16; }

bool hc_ukr_tile_fits(const hc_lower_ctx* lc, int mr, int nv) { return mr * nv + nv + 1 <= hc_ukr_registers(lc); }

int hc_ukr_l1d_bytes(const hc_lower_ctx* lc) { return lc->target && lc->target->l1d_bytes ? lc->target->l1d_bytes : 32768; }
int hc_ukr_l2_bytes(const hc_lower_ctx* lc) { return lc->target && lc->target->l2_bytes ? lc->target->l2_bytes : 512 << 10; }

/* Constant inputs of the graph's nodes, each counted once (a constant two
 * nodes read, or a node twice, is marked by its id). */
static uint64_t graph_weight_bytes(const hc_graph* g) {
  if (!g || g->num_values <= 0) return 0;
  bool* seen = calloc((size_t)g->num_values, sizeof(bool));
  if (!seen) return 0;
  uint64_t total = 0;
  for (int i = 0; i < g->num_nodes; ++i) {
    const hc_node* n = g->nodes[i];
    for (int j = 0; j < n->num_inputs; ++j) {
      const hc_value* v = n->inputs[j];
      if (!v || v->kind != HC_VALUE_CONST || v->id < 0 || v->id >= g->num_values || seen[v->id]) continue;
      seen[v->id] = true;
      total += hc_value_nbytes(v);
    }
  }
  free(seen);
  return total;
}

bool hc_ukr_weights_cold(hc_lower_ctx* lc, int64_t bytes) {
  int64_t l2 = hc_ukr_l2_bytes(lc);
  if (bytes > l2) return true;
  if (!lc->weight_bytes_known) {
    lc->weight_bytes = graph_weight_bytes(lc->graph);
    lc->weight_bytes_known = true;
  }
  return lc->weight_bytes > (uint64_t)l2;
}

LLVMTypeRef hc_ukr_vtype(hc_kb* kb, hx_dtype_t dt, unsigned lanes) {
  return LLVMVectorType(dt == HX_DTYPE_FLOAT64 ? kb->t_f64 : kb->t_f32, lanes);
}


LLVMValueRef hc_ukr_load(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef idx, unsigned lanes, unsigned valid) {
  LLVMTypeRef vt = hc_ukr_vtype(kb, dt, lanes);
  unsigned es = dt == HX_DTYPE_FLOAT64 ? 8 : 4;
  LLVMValueRef p = hc_kb_gep(kb, dt, ptr, idx);
  if (valid >= lanes) {
    LLVMValueRef v = LLVMBuildLoad2(kb->b, vt, p, "");
    LLVMSetAlignment(v, es);
    return v;
  }
  return hc_kb_masked_load(kb, vt, p, es, hc_kb_prefix_mask(kb, lanes, valid));
}

void hc_ukr_store(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef idx, LLVMValueRef v, unsigned lanes,
                  unsigned valid) {
  unsigned es = dt == HX_DTYPE_FLOAT64 ? 8 : 4;
  LLVMValueRef p = hc_kb_gep(kb, dt, ptr, idx);
  (void)lanes;
  hc_kb_prefix_store(kb, v, p, es, valid);
}

/* The LLVM element type st is stored as in memory (bfloat16 as i16 bits). */
static LLVMTypeRef st_elem_type(hc_kb* kb, hx_dtype_t st) {
  switch (st) {
    case HX_DTYPE_FLOAT16: return kb->t_f16;
    case HX_DTYPE_BFLOAT16: return kb->t_i16;
    case HX_DTYPE_INT8: return kb->t_i8;
    case HX_DTYPE_FLOAT64: return kb->t_f64;
    default: return kb->t_f32;
  }
}

LLVMValueRef hc_ukr_widen(hc_kb* kb, hx_dtype_t st, LLVMValueRef v) {
  LLVMTypeRef ty = LLVMTypeOf(v);
  bool vec = LLVMGetTypeKind(ty) == LLVMVectorTypeKind;
  unsigned n = vec ? LLVMGetVectorSize(ty) : 1;
  LLVMTypeRef f = vec ? LLVMVectorType(kb->t_f32, n) : kb->t_f32;
  switch (st) {
    case HX_DTYPE_FLOAT16: return LLVMBuildFPExt(kb->b, v, f, "");
    case HX_DTYPE_INT8: return LLVMBuildSIToFP(kb->b, v, f, "");
    case HX_DTYPE_BFLOAT16: {
      /* Exact: the bits become the high half of a float32. An fpext from
       * bfloat would let the optimiser narrow float32 arithmetic back to
       * bfloat (see gemm.c's load_elem). */
      LLVMTypeRef i = vec ? LLVMVectorType(kb->t_i32, n) : kb->t_i32;
      LLVMValueRef sh = LLVMConstInt(kb->t_i32, 16, 0);
      LLVMValueRef w = LLVMBuildShl(kb->b, LLVMBuildZExt(kb->b, v, i, ""), vec ? hc_kb_splat(kb, sh, n) : sh, "");
      return LLVMBuildBitCast(kb->b, w, f, "");
    }
    default: return v;
  }
}

hc_ukr_scales hc_ukr_scales_at(hc_kb* kb, const hc_q8_scales* s, LLVMValueRef weights) {
  hc_ukr_scales r = {NULL, s->elem, NULL};
  r.ptr = LLVMBuildGEP2(kb->b, kb->t_i8, weights, (LLVMValueRef[]){hc_kb_i64(kb, s->offset)}, 1, "scales");
  if (s->elem == HX_DTYPE_FLOAT16) {
    float f = ldexpf(1.0f, -s->exp); /* a normal float32 (precision.c keeps exp <= 120) */
    uint32_t bits;
    memcpy(&bits, &f, 4);
    LLVMValueRef p = LLVMBuildTrunc(kb->b, hc_kb_param(kb, (int64_t)bits), kb->t_i32, "");
    r.unshift = LLVMBuildBitCast(kb->b, p, kb->t_f32, "unshift");
  }
  return r;
}

LLVMValueRef hc_ukr_load_scales(hc_kb* kb, const hc_ukr_scales* s, LLVMValueRef idx, unsigned lanes, unsigned valid) {
  LLVMValueRef v = lanes == 1 ? hc_kb_load(kb, s->elem, s->ptr, idx) : hc_ukr_load_st(kb, s->elem, s->ptr, idx, lanes, valid);
  if (!s->unshift) return v;
  return LLVMBuildFMul(kb->b, v, lanes == 1 ? s->unshift : hc_kb_splat(kb, s->unshift, lanes), "");
}

LLVMValueRef hc_ukr_load_st(hc_kb* kb, hx_dtype_t st, LLVMValueRef ptr, LLVMValueRef idx, unsigned lanes,
                            unsigned valid) {
  if (st == HX_DTYPE_UNDEFINED || st == HX_DTYPE_FLOAT32 || st == HX_DTYPE_FLOAT64)
    return hc_ukr_load(kb, st == HX_DTYPE_FLOAT64 ? st : HX_DTYPE_FLOAT32, ptr, idx, lanes, valid);
  LLVMTypeRef et = st_elem_type(kb, st);
  LLVMTypeRef vt = LLVMVectorType(et, lanes);
  unsigned es = (unsigned)hx_dtype_size(st);
  LLVMValueRef p = LLVMBuildGEP2(kb->b, et, ptr, &idx, 1, "");
  LLVMValueRef v;
  if (valid >= lanes) {
    v = LLVMBuildLoad2(kb->b, vt, p, "");
    LLVMSetAlignment(v, es);
  } else {
    v = hc_kb_masked_load(kb, vt, p, es, hc_kb_prefix_mask(kb, lanes, valid));
  }
  return hc_ukr_widen(kb, st, v);
}

void hc_ukr_store_st(hc_kb* kb, hx_dtype_t st, LLVMValueRef ptr, LLVMValueRef idx, LLVMValueRef v, unsigned lanes,
                     unsigned valid) {
  if (st != HX_DTYPE_FLOAT16) {
    hc_ukr_store(kb, HX_DTYPE_FLOAT32, ptr, idx, v, lanes, valid);
    return;
  }
  LLVMValueRef h = LLVMBuildFPTrunc(kb->b, v, LLVMVectorType(kb->t_f16, lanes), "");
  LLVMValueRef p = hc_kb_gep(kb, HX_DTYPE_FLOAT16, ptr, idx);
  hc_kb_prefix_store(kb, h, p, 2, valid);
}

LLVMValueRef hc_ukr_broadcast_st(hc_kb* kb, hx_dtype_t st, LLVMValueRef ptr, LLVMValueRef idx, unsigned lanes) {
  LLVMTypeRef et = st_elem_type(kb, st);
  LLVMValueRef s = LLVMBuildLoad2(kb->b, et, LLVMBuildGEP2(kb->b, et, ptr, &idx, 1, ""), "");
  if (lanes == 1) return hc_ukr_widen(kb, st, s);
  /* float16 and int8 are splat before widening (one vcvtph2ps with an
   * embedded broadcast on AVX512-FP16, vpbroadcastw/b + one conversion
   * elsewhere); bfloat16 widens in a general register first. */
  if (st == HX_DTYPE_FLOAT16 || st == HX_DTYPE_INT8) return hc_ukr_widen(kb, st, hc_kb_splat(kb, s, lanes));
  return hc_kb_splat(kb, hc_ukr_widen(kb, st, s), lanes);
}

static int cmp_i64(const void* x, const void* y) {
  int64_t a = *(const int64_t*)x, b = *(const int64_t*)y;
  return (a > b) - (a < b);
}

/* Prefetches every cache line of A that step o + a_prefetch reads: per run
 * of consecutive offsets (a_term + a_row) its first element, one every line
 * after it and its last element (the alignment is not known here). */
static void emit_prefetch_a(hc_kb* kb, const hc_ukr* u, LLVMValueRef a_o) {
  int64_t off[HC_UKR_MAX_TERMS * HC_UKR_MAX_MR];
  int n = 0;
  for (int t = 0; t < u->nterms; ++t)
    for (int i = 0; i < u->mr; ++i) off[n++] = u->a_term[t] + u->a_row[i];
  qsort(off, (size_t)n, sizeof off[0], cmp_i64);
  hx_dtype_t st = u->a_st ? u->a_st : u->dt;
  int64_t line = 64 / (int64_t)hx_dtype_size(st);
  LLVMTypeRef et = st_elem_type(kb, st);
  LLVMValueRef base = hc_kb_iadd(kb, a_o, hc_kb_i64(kb, (int64_t)u->a_prefetch * u->a_outer));
  int64_t pf[HC_UKR_MAX_TERMS * HC_UKR_MAX_MR];
  int npf = 0;
  for (int j = 0; j < n;) {
    int e = j;
    while (e + 1 < n && off[e + 1] - off[e] <= 1) ++e;
    for (int64_t x = off[j]; x < off[e]; x += line) pf[npf++] = x;
    pf[npf++] = off[e];
    j = e + 1;
  }
  for (int k = 0; k < npf; ++k) {
    if (k > 0 && pf[k] == pf[k - 1]) continue;
    LLVMValueRef idx = hc_kb_iadd(kb, base, hc_kb_i64(kb, pf[k]));
    hc_kb_prefetch(kb, LLVMBuildGEP2(kb->b, et, u->a, &idx, 1, ""), u->a_prefetch_hint);
  }
}

/* Lines per step of each B panel in the next chunk (hc_ukr.pf_next), and
 * (per_line) elements per 64-byte line. */
static int64_t pf_lines_per_step(const hc_ukr* u, int64_t* per_line) {
  hx_dtype_t st = u->b_st ? u->b_st : u->dt;
  *per_line = 64 / (int64_t)hx_dtype_size(st);
  return (u->b_outer + *per_line - 1) / *per_line;
}

/* Whether vector v of a step starts a line no earlier vector is in (AVX2's
 * two 8-lane vectors of one 16-float panel share a line: one prefetch). */
static bool pf_vector_new_line(const hc_ukr* u, int v, int64_t per_line) {
  for (int w = 0; w < v; ++w)
    if (u->b_vec[w] / per_line == u->b_vec[v] / per_line) return false;
  return true;
}

/* Step o's share of the next B chunk (hc_ukr.pf_next): per panel, lpv
 * lines per step over pf_ntiles reductions of `outer` steps each, so k =
 * ceil(lpv / ntiles) lines from line ((ord*outer + o) * lpv) / ntiles of
 * the panel's chunk (its lines are contiguous). */
static void emit_prefetch_next(hc_kb* kb, const hc_ukr* u, LLVMValueRef o) {
  hx_dtype_t st = u->b_st ? u->b_st : u->dt;
  int64_t per_line;
  int64_t lpv = pf_lines_per_step(u, &per_line), n = u->pf_ntiles > 0 ? u->pf_ntiles : 1;
  int64_t k = (lpv + n - 1) / n;
  LLVMValueRef pos = hc_kb_iadd(kb, hc_kb_imul(kb, u->pf_ord, u->outer), o);
  LLVMValueRef m = LLVMBuildUDiv(kb->b, hc_kb_imul(kb, pos, hc_kb_i64(kb, lpv)), hc_kb_i64(kb, n), "");
  LLVMValueRef at0 = hc_kb_iadd(kb, u->pf_next, hc_kb_imul(kb, m, hc_kb_i64(kb, per_line)));
  for (int v = 0; v < u->nv; ++v) {
    if (!pf_vector_new_line(u, v, per_line)) continue;
    for (int64_t j = 0; j < k; ++j) {
      LLVMValueRef at = hc_kb_iadd(kb, at0, hc_kb_i64(kb, u->b_vec[v] + j * per_line));
      hc_kb_prefetch(kb, hc_kb_gep(kb, st, u->b, at), u->pf_locality);
    }
  }
}

/* The whole share at once, before the reduction: lines [ord*L/n,
 * (ord+1)*L/n) of each panel's L = outer*lpv. Per step, a share of a line
 * or less still cost every step its prefetch and the index arithmetic
 * (the step of a one-tap AVX2 tile is 10-12 FMAs in 5-6 cycles, and
 * Zen 3 dispatches 6 ops a cycle). */
static bool pf_share_upfront(const hc_ukr* u) {
  int64_t per_line;
  int64_t lpv = pf_lines_per_step(u, &per_line);
  return u->pf_ntiles >= 8 && u->pf_max_outer > 0 && (u->pf_max_outer * lpv + u->pf_ntiles - 1) / u->pf_ntiles <= 32;
}

static void emit_prefetch_share(hc_kb* kb, const hc_ukr* u) {
  hx_dtype_t st = u->b_st ? u->b_st : u->dt;
  int64_t per_line;
  int64_t lpv = pf_lines_per_step(u, &per_line);
  LLVMValueRef total = hc_kb_imul(kb, u->outer, hc_kb_i64(kb, lpv)), n = hc_kb_i64(kb, u->pf_ntiles);
  LLVMValueRef lo = LLVMBuildUDiv(kb->b, hc_kb_imul(kb, u->pf_ord, total), n, "");
  LLVMValueRef hi = LLVMBuildUDiv(kb->b, hc_kb_imul(kb, hc_kb_iadd(kb, u->pf_ord, hc_kb_i64(kb, 1)), total), n, "");
  hc_loop l;
  LLVMValueRef j = hc_loop_begin(kb, &l, lo, hi, "pf_share");
  LLVMValueRef at0 = hc_kb_iadd(kb, u->pf_next, hc_kb_imul(kb, j, hc_kb_i64(kb, per_line)));
  for (int v = 0; v < u->nv; ++v)
    if (pf_vector_new_line(u, v, per_line))
      hc_kb_prefetch(kb, hc_kb_gep(kb, st, u->b, hc_kb_iadd(kb, at0, hc_kb_i64(kb, u->b_vec[v]))), u->pf_locality);
  hc_loop_end(kb, &l);
}

/* One step of the reduction (outer index o): every term's B vectors, then
 * per row one broadcast and nv FMAs. */
static void emit_step(hc_kb* kb, const hc_ukr* u, LLVMValueRef a_o, LLVMValueRef b_o, LLVMValueRef* acc) {
  LLVMTypeRef st = u->dt == HX_DTYPE_FLOAT64 ? kb->t_f64 : kb->t_f32;
  LLVMTypeRef vt = hc_ukr_vtype(kb, u->dt, u->vl);
  if (u->a_prefetch > 0) emit_prefetch_a(kb, u, a_o);
  for (int t = 0; t < u->nterms; ++t) {
    LLVMValueRef bv[HC_UKR_MAX_NV];
    LLVMValueRef bt = hc_kb_iadd(kb, b_o, u->b_term_rt[t] ? u->b_term_rt[t] : hc_kb_i64(kb, u->b_term[t]));
    for (int v = 0; v < u->nv; ++v) {
      unsigned valid = v == u->nv - 1 ? u->last_lanes : u->vl;
      LLVMValueRef bi = hc_kb_iadd(kb, bt, hc_kb_i64(kb, u->b_vec[v]));
      bv[v] = u->b_st ? hc_ukr_load_st(kb, u->b_st, u->b, bi, u->vl, valid) : hc_ukr_load(kb, u->dt, u->b, bi, u->vl, valid);
    }
    LLVMValueRef at = hc_kb_iadd(kb, a_o, u->a_term_rt[t] ? u->a_term_rt[t] : hc_kb_i64(kb, u->a_term[t]));
    for (int i = 0; i < u->mr; ++i) {
      LLVMValueRef ai = hc_kb_iadd(kb, at, hc_kb_i64(kb, u->a_row[i]));
      LLVMValueRef sv;
      if (u->a_st) {
        sv = hc_ukr_broadcast_st(kb, u->a_st, u->a, ai, u->vl);
      } else {
        LLVMValueRef s = LLVMBuildLoad2(kb->b, st, hc_kb_gep(kb, u->dt, u->a, ai), "");
        sv = hc_kb_splat(kb, s, u->vl);
      }
      for (int v = 0; v < u->nv; ++v) {
        LLVMValueRef args[3] = {sv, bv[v], acc[i * u->nv + v]};
        acc[i * u->nv + v] = hc_kb_intrinsic(kb, "llvm.fma", vt, args, 3);
      }
    }
  }
}

void hc_ukr_emit(hc_kb* kb, const hc_ukr* u, LLVMValueRef* acc) {
  LLVMTypeRef vt = hc_ukr_vtype(kb, u->dt, u->vl);
  int n = u->mr * u->nv;
  for (int i = 0; i < n; ++i)
    if (!acc[i]) acc[i] = LLVMConstNull(vt);
  bool upfront = u->pf_next && pf_share_upfront(u);
  if (upfront) emit_prefetch_share(kb, u);
  /* Loop with the accumulators as phis (they stay in registers):
   *   if (outer > 0) do { step(o) } while (++o < outer); */
  LLVMContextRef c = kb->lc->llctx;
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(kb->b);
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c, kb->fn, "ukr");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c, kb->fn, "ukr_done");
  LLVMValueRef enter = LLVMBuildICmp(kb->b, LLVMIntSGT, u->outer, hc_kb_i64(kb, 0), "");
  LLVMBuildCondBr(kb->b, enter, body, done);
  LLVMPositionBuilderAtEnd(kb->b, body);
  LLVMValueRef o = LLVMBuildPhi(kb->b, kb->t_i64, "o");
  LLVMValueRef zero = hc_kb_i64(kb, 0);
  LLVMAddIncoming(o, &zero, &pre, 1);
  LLVMValueRef phis[HC_UKR_MAX_MR * HC_UKR_MAX_NV];
  LLVMValueRef cur[HC_UKR_MAX_MR * HC_UKR_MAX_NV];
  for (int i = 0; i < n; ++i) {
    phis[i] = LLVMBuildPhi(kb->b, vt, "acc");
    LLVMAddIncoming(phis[i], &acc[i], &pre, 1);
    cur[i] = phis[i];
  }
  LLVMValueRef a_o = hc_kb_iadd(kb, u->a_base, hc_kb_imul(kb, o, hc_kb_i64(kb, u->a_outer)));
  LLVMValueRef b_o = hc_kb_iadd(kb, u->b_base, hc_kb_imul(kb, o, hc_kb_i64(kb, u->b_outer)));
  if (u->pf_base) {
    LLVMValueRef pi = hc_kb_iadd(kb, u->pf_base, hc_kb_imul(kb, o, hc_kb_i64(kb, u->b_outer)));
    hc_kb_prefetch(kb, hc_kb_gep(kb, u->dt, u->b, pi), u->pf_locality);
  }
  if (u->pf_next && !upfront) emit_prefetch_next(kb, u, o);
  emit_step(kb, u, a_o, b_o, cur);
  LLVMValueRef next = LLVMBuildAdd(kb->b, o, hc_kb_i64(kb, 1), "");
  LLVMSetNSW(next, 1);
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(kb->b);
  LLVMAddIncoming(o, &next, &latch, 1);
  for (int i = 0; i < n; ++i) LLVMAddIncoming(phis[i], &cur[i], &latch, 1);
  LLVMBuildCondBr(kb->b, LLVMBuildICmp(kb->b, LLVMIntSLT, next, u->outer, ""), body, done);
  LLVMPositionBuilderAtEnd(kb->b, done);
  for (int i = 0; i < n; ++i) {
    LLVMValueRef r = LLVMBuildPhi(kb->b, vt, "sum");
    LLVMValueRef in[2] = {acc[i], cur[i]};
    LLVMBasicBlockRef from[2] = {pre, latch};
    LLVMAddIncoming(r, in, from, 2);
    acc[i] = r;
  }
}

void hc_ukr_prefer_full_width(hc_kb* kb) {
  if (hc_ukr_registers(kb->lc) < 32) return;
  LLVMAddTargetDependentFunctionAttr(kb->fn, "prefer-vector-width", "512");
}
