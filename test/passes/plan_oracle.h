/* A memory-plan oracle that replays what the executor (runtime/executor.c)
 * may do, written from its rules and not from the planner's: super-steps (a
 * step outside parallel groups, or a whole group) run one after another; in a
 * group each lane runs its steps in order and lanes are independent, so at
 * any moment each lane is before its first step, running one of its steps
 * (the earlier ones done) or done. A tensor is live from when its producer
 * starts until every reader (of it or of a view of it) is done; a workspace
 * while its node runs; a dims slot always. At every moment, live items must
 * not share a byte, except an output its running producer writes over an
 * input that no other unfinished kernel still reads.
 *
 * Every pair of items conflicts through the positions of at most two lanes
 * (the lanes of the two starts and two ends), and a lane that has not started
 * keeps everything it reads live and starts nothing, so enumerating each lane
 * alone and each pair of lanes at every position (the other lanes not
 * started) visits every moment that can reveal an overlap.
 *
 * Header-only (static functions) so memory_plan_test.c and schedule_test.c
 * share it; include after cmocka and the compiler headers. */
#ifndef HARNESS_TEST_PLAN_ORACLE_H
#define HARNESS_TEST_PLAN_ORACLE_H

#include <stdlib.h>
#include <string.h>

#include "compiler/ops/op.h"
#include "harness/artifact_abi.h"
#include "passes/pass.h"

static const hc_value* po_root(const hc_value* v) {
  while (v->alias_of) v = v->alias_of;
  return v;
}

/* Whether node n may legitimately have written its output w over r (an
 * input's root): its kernel computes each element from the same index,
 * sizes agree, and w sits exactly on r. Written from the op's contract, not
 * from the planner's code. */
static bool po_inplace_ok(const hc_node* n, const hc_value* r, const hc_value* w) {
  const hc_op_desc* op = n->op;
  bool generator = (op->flags & HC_OP_ELEMENTWISE) && op->scalar && !op->lower && n->num_fused == 0;
  /* Kernels with their own plan (Conv/Gemm/MatMul over a fused residual)
   * answered for each input that reads r, for the target they were planned
   * for (hc_op_desc.inplace_input, recorded in inplace_inputs). */
  bool kernel = op->inplace_input != NULL;
  for (int k = 0; kernel && k < n->num_inputs; ++k)
    if (n->inputs[k] && po_root(n->inputs[k]) == r && (k >= 32 || !(n->inplace_inputs & (1u << k)))) kernel = false;
  if (!generator && !kernel && !(op->flags & HC_OP_INPLACE_OK)) return false;
  if (n->num_outputs < 1 || n->outputs[0] != w || w->storage.offset != r->storage.offset ||
      hc_value_nbytes(w) != hc_value_nbytes(r))
    return false;
  bool reads = false;
  for (int k = 0; k < n->num_inputs; ++k) {
    const hc_value* v = n->inputs[k];
    if (!v || po_root(v) != r) continue;
    if (hc_value_numel(v) != hc_value_numel(w) || hx_dtype_size(v->dtype) != hx_dtype_size(w->dtype)) return false;
    reads = true;
  }
  return reads;
}

typedef struct po_item {
  const hc_value* value;   /* arena tensor (storage root) */
  const hc_node* node;     /* workspace owner */
  const hc_value* dims_of; /* dims slot owner */
  uint64_t lo, hi;         /* bytes [lo, hi) */
  int start;               /* producer / workspace step; -1 = always live */
  int* readers;            /* steps that must finish before it dies (producer included) */
  int num_readers;
} po_item;

typedef struct po_state {
  const hc_graph* g;
  int* sg;    /* super-step of each step */
  int* idx;   /* position of each step in its lane */
  int* lanei; /* lane index (0..) of each step within its super-step */
  int* pos;   /* per lane of the current super-step: -1 not started, i running, len done */
} po_state;

static const char* po_name(const po_item* x) {
  return x->value ? x->value->name : x->node ? x->node->name : x->dims_of->name;
}

/* Whether step t has started / is done at the current moment of super-step G. */
static bool po_started(const po_state* P, int G, int t) {
  return P->sg[t] < G || (P->sg[t] == G && P->pos[P->lanei[t]] >= P->idx[t]);
}
static bool po_done(const po_state* P, int G, int t) {
  return P->sg[t] < G || (P->sg[t] == G && P->pos[P->lanei[t]] > P->idx[t]);
}

static bool po_live(const po_state* P, int G, const po_item* x) {
  if (x->start < 0) return true;
  if (!po_started(P, G, x->start)) return false;
  for (int k = 0; k < x->num_readers; ++k)
    if (!po_done(P, G, x->readers[k])) return true;
  return false;
}

/* Whether w (written by its running producer) may overlap r at this moment:
 * a legal in-place pair whose every other reader of r is done. */
static bool po_inplace_now(const po_state* P, int G, const po_item* w, const po_item* r) {
  if (!w->value || !r->value || w->start < 0) return false;
  const hc_node* n = P->g->nodes[w->start];
  if (!po_started(P, G, w->start) || po_done(P, G, w->start) || !po_inplace_ok(n, r->value, w->value)) return false;
  for (int k = 0; k < r->num_readers; ++k)
    if (r->readers[k] != w->start && !po_done(P, G, r->readers[k])) return false;
  return true;
}

/* Checks the moment described by P->pos in super-step G. */
static void po_check_moment(const po_state* P, int G, const po_item* it, int n, const char* what) {
  for (int i = 0; i < n; ++i) {
    if (it[i].lo == it[i].hi || !po_live(P, G, &it[i])) continue;
    for (int j = i + 1; j < n; ++j) {
      if (it[j].lo == it[j].hi || it[i].hi <= it[j].lo || it[j].hi <= it[i].lo || !po_live(P, G, &it[j])) continue;
      if (po_inplace_now(P, G, &it[i], &it[j]) || po_inplace_now(P, G, &it[j], &it[i])) continue;
      fail_msg("%s: '%s' and '%s' share bytes while both live (super-step %d)", what, po_name(&it[i]),
               po_name(&it[j]), G);
    }
  }
}

/* The oracle: fails the test at the first overlap any moment reveals, and
 * returns how many moments it checked. */
static long oracle_moments(const hc_graph* g, uint64_t arena, const char* what) {
  int ns = g->num_nodes, nv = g->num_values;
  po_item* it = calloc(2 * (size_t)nv + (size_t)ns + 1, sizeof(po_item));
  int* index_of = malloc(sizeof(int) * ((size_t)nv + 1));
  po_state P = {g, calloc((size_t)ns + 1, sizeof(int)), calloc((size_t)ns + 1, sizeof(int)),
                calloc((size_t)ns + 1, sizeof(int)), calloc((size_t)ns + 2, sizeof(int))};
  int* lane_id = calloc((size_t)ns + 2, sizeof(int));
  int n = 0;
  for (int i = 0; i < nv; ++i) {
    const hc_value* v = g->values[i];
    index_of[i] = -1;
    if (v->alias_of || v->storage.base != HX_BASE_ARENA) continue;
    if (v->storage.offset + hc_value_nbytes(v) > arena) fail_msg("%s: '%s' ends past the arena", what, v->name);
    index_of[i] = n;
    it[n++] = (po_item){.value = v, .lo = v->storage.offset, .hi = v->storage.offset + hc_value_nbytes(v), .start = -2};
  }
  int nvals = n;
  for (int s = 0; s < ns; ++s) {
    const hc_node* nd = g->nodes[s];
    if (!nd->workspace_bytes) continue;
    if (nd->workspace_offset + nd->workspace_bytes > arena) fail_msg("%s: workspace of '%s' past the arena", what, nd->name);
    it[n] = (po_item){.node = nd, .lo = nd->workspace_offset, .hi = nd->workspace_offset + nd->workspace_bytes,
                      .start = s, .readers = malloc(sizeof(int)), .num_readers = 1};
    it[n++].readers[0] = s;
  }
  for (int i = 0; i < nv && ns > 0; ++i) {
    const hc_value* d = g->values[i];
    if (!d->dynamic || d->dyn_source || !d->producer || d->producer->dead) continue;
    uint64_t bytes = 8 * (uint64_t)(d->rank > 0 ? d->rank : 1);
    if (d->dyn_dims_offset + bytes > arena) fail_msg("%s: dims slot of '%s' past the arena", what, d->name);
    it[n++] = (po_item){.dims_of = d, .lo = d->dyn_dims_offset, .hi = d->dyn_dims_offset + bytes, .start = -1};
  }
  /* Producers and readers of the tensors. */
  for (int s = 0; s < ns; ++s) {
    const hc_node* nd = g->nodes[s];
    for (int j = 0; j < nd->num_outputs; ++j) {
      const hc_value* v = nd->outputs[j];
      if (!v || v->alias_of || index_of[v->id] < 0) continue;
      po_item* x = &it[index_of[v->id]];
      if (x->start == -2) x->start = s;
      x->readers = realloc(x->readers, sizeof(int) * (size_t)(x->num_readers + 1));
      x->readers[x->num_readers++] = s;
    }
    for (int j = 0; j < nd->num_inputs; ++j) {
      if (!nd->inputs[j]) continue;
      int x = index_of[po_root(nd->inputs[j])->id];
      if (x < 0) continue;
      it[x].readers = realloc(it[x].readers, sizeof(int) * (size_t)(it[x].num_readers + 1));
      it[x].readers[it[x].num_readers++] = s;
    }
  }
  for (int i = 0; i < nvals; ++i)
    if (it[i].start < 0) fail_msg("%s: '%s' is in the arena but nothing produces it", what, it[i].value->name);

  /* Super-steps and lanes (lanes numbered in order of first appearance),
   * for every step first: liveness looks at steps of later super-steps. */
  int* group_nl = calloc((size_t)ns + 1, sizeof(int));
  int* group_len = calloc((size_t)ns + 1, sizeof(int)); /* lane lengths, at the group's first step */
  for (int s = 0, G = 0; s < ns; ++G) {
    int e = s + 1;
    while (g->nodes[s]->group && e < ns && g->nodes[e]->group == g->nodes[s]->group) ++e;
    int nl = 0;
    for (int t = s; t < e; ++t) {
      int lane = g->nodes[s]->group ? g->nodes[t]->lane : 0, l = 0;
      while (l < nl && lane_id[l] != lane) ++l;
      if (l == nl) lane_id[nl] = lane, group_len[s + nl++] = 0;
      P.sg[t] = G;
      P.lanei[t] = l;
      P.idx[t] = group_len[s + l]++;
    }
    group_nl[s] = nl;
    s = e;
  }
  /* Each lane alone, then each pair of lanes, at every position. */
  long moments = 0;
  for (int s = 0; s < ns;) {
    int G = P.sg[s], nl = group_nl[s];
    const int* len = group_len + s;
    for (int a = 0; a < nl; ++a) {
      for (int b = a; b < nl; ++b) {
        for (int pa = -1; pa <= len[a]; ++pa) {
          for (int pb = -1; pb <= (b == a ? -1 : len[b]); ++pb) {
            for (int l = 0; l < nl; ++l) P.pos[l] = -1;
            P.pos[a] = pa;
            if (b != a) P.pos[b] = pb;
            po_check_moment(&P, G, it, n, what);
            ++moments;
          }
        }
      }
    }
    int e = s + 1;
    while (e < ns && P.sg[e] == G) ++e;
    s = e;
  }
  free(group_nl);
  free(group_len);
  for (int i = 0; i < n; ++i) free(it[i].readers);
  free(it);
  free(index_of);
  free(P.sg);
  free(P.idx);
  free(P.lanei);
  free(P.pos);
  free(lane_id);
  return moments;
}

#endif /* HARNESS_TEST_PLAN_ORACLE_H */
