/* Static memory planning.
 *
 * Every tensor gets a fixed place before run time:
 *  - graph inputs and outputs live in the caller's buffers (bases 2..);
 *  - weights are packed into one 64-byte-aligned blob in first-use order;
 *  - views (Reshape...) alias the tensor they view and cost zero bytes;
 *  - every other intermediate, and every node's workspace, gets an offset in
 *    one 64-byte-aligned arena.
 *
 * Liveness. Tensor t occupies its bytes from the step of its producer to the
 * step of its last reader (readers of its views included). The kernels of a
 * parallel group (schedule.c) may run at the same time, so every step of a
 * group counts as the whole group's span [first step, last step].
 *
 * In place. A node whose kernel allows it (hc_memory_plan_inplace_ok:
 * element-wise ops of the shared generator, ops flagged HC_OP_INPLACE_OK)
 * writes its output over an input of the same size when that input is an
 * arena tensor it reads last and that no concurrently running lane reads.
 * Such outputs join their input's chain, and a chain is placed as one block
 * whose lifetime is the union of its members'.
 *
 * Packing. Several heuristics (an ordering of the blocks times a placement
 * rule) each pack every block; the smallest arena wins, ties going to the
 * first heuristic in the list, so the plan is deterministic:
 *  orders:     size (largest first), first-use (earliest first, longer
 *              lifetimes first), lifetime (longest first), breadth (blocks
 *              of the most crowded steps first, largest first within a step;
 *              Pisarchyk & Lee, "Efficient memory management for deep neural
 *              net inference", 2020), conflict (largest sum of the sizes of
 *              the blocks live together with it first);
 *  placements: first-fit (the lowest offset free for the block's lifetime)
 *              and best-fit (the smallest free gap that holds it, else the
 *              top), both over the conflict graph (blocks live together).
 * When the best of them is above the lower bound, promotion (see promote)
 * tries to close the gap from the winner's ordering.
 *
 * The lower bound, the largest sum of simultaneously live block bytes at any
 * step, is recorded with the result; no packing can beat it. The plan is
 * checked by hc_memory_plan_verify, which derives liveness from the graph on
 * its own. */
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/op.h"
#include "harness/artifact_abi.h"
#include "passes/pass.h"

#define HC_ALIGN 64u

static uint64_t align_up(uint64_t x) { return (x + HC_ALIGN - 1) / HC_ALIGN * HC_ALIGN; }

static hc_value* root_of(hc_value* v) {
  while (v->alias_of) v = v->alias_of;
  return v;
}

static const hc_value* croot_of(const hc_value* v) {
  while (v->alias_of) v = v->alias_of;
  return v;
}

/* span[2*s], span[2*s+1]: first and last step of the parallel group step s
 * belongs to (s itself outside groups). Caller frees. */
static int* group_spans(const hc_graph* g) {
  int n = g->num_nodes;
  int* span = malloc(sizeof(int) * 2 * (size_t)(n ? n : 1));
  if (!span) return NULL;
  for (int s = 0; s < n; ++s) {
    bool same = s > 0 && g->nodes[s]->group && g->nodes[s]->group == g->nodes[s - 1]->group;
    span[2 * s] = same ? span[2 * (s - 1)] : s;
  }
  for (int s = n - 1; s >= 0; --s) {
    bool same = s + 1 < n && g->nodes[s]->group && g->nodes[s]->group == g->nodes[s + 1]->group;
    span[2 * s + 1] = same ? span[2 * (s + 1) + 1] : s;
  }
  return span;
}

/* ---- liveness ----------------------------------------------------------- */

/* What the planner and the verifier both derive from the graph, indexed by
 * value id and meaningful for storage roots (values that are not views). */
typedef struct liveness {
  int* span;      /* group_spans */
  int* first;     /* first step, widened to groups; -1 = never live */
  int* last;      /* last step, widened to groups */
  int* last_read; /* step of the last node reading it or one of its views; -1 = none */
  /* A node in the last reader's parallel group but another lane reads it
   * too: the two may run at the same time. */
  unsigned char* shared_read;
} liveness;

static void liveness_free(liveness* L) {
  free(L->span);
  free(L->first);
  free(L->last);
  free(L->last_read);
  free(L->shared_read);
}

static hx_status_t liveness_compute(const hc_graph* g, liveness* L) {
  size_t nv = (size_t)g->num_values + 1;
  memset(L, 0, sizeof(*L));
  L->span = group_spans(g);
  L->first = malloc(sizeof(int) * nv);
  L->last = malloc(sizeof(int) * nv);
  L->last_read = malloc(sizeof(int) * nv);
  L->shared_read = calloc(nv, 1);
  if (!L->span || !L->first || !L->last || !L->last_read || !L->shared_read) {
    liveness_free(L);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory computing liveness");
  }
  for (int i = 0; i < g->num_values; ++i) L->first[i] = L->last[i] = L->last_read[i] = -1;
  const int* span = L->span;
  for (int s = 0; s < g->num_nodes; ++s) {
    const hc_node* n = g->nodes[s];
    for (int j = 0; j < n->num_outputs; ++j) {
      const hc_value* v = n->outputs[j];
      if (!v || v->kind == HC_VALUE_CONST) continue;
      const hc_value* r = croot_of(v);
      if (L->first[r->id] < 0) L->first[r->id] = span[2 * s];
      if (L->last[r->id] < span[2 * s + 1]) L->last[r->id] = span[2 * s + 1];
    }
    for (int j = 0; j < n->num_inputs; ++j) {
      const hc_value* v = n->inputs[j];
      if (!v || v->kind == HC_VALUE_CONST) continue;
      const hc_value* r = croot_of(v);
      if (L->last[r->id] < span[2 * s + 1]) L->last[r->id] = span[2 * s + 1];
      L->last_read[r->id] = s;
    }
  }
  /* Readers that may run concurrently with the last one. */
  for (int s = 0; s < g->num_nodes; ++s) {
    const hc_node* n = g->nodes[s];
    if (!n->group) continue;
    for (int j = 0; j < n->num_inputs; ++j) {
      const hc_value* v = n->inputs[j];
      if (!v || v->kind == HC_VALUE_CONST) continue;
      const hc_value* r = croot_of(v);
      const hc_node* lr = g->nodes[L->last_read[r->id]];
      if (lr != n && lr->group == n->group && lr->lane != n->lane) L->shared_read[r->id] = 1;
    }
  }
  return HX_OK;
}

/* ---- in place ----------------------------------------------------------- */

bool hc_memory_plan_inplace_ok(const hc_node* n, int input) {
  const hc_op_desc* op = n->op;
  if (!op || input < 0 || input >= n->num_inputs || n->num_outputs < 1 || (op->flags & HC_OP_VIEW)) return false;
  /* The shared generator computes out[i] from operand elements at index i
   * (broadcast ones excepted) and stores it after loading them. */
  bool generator = (op->flags & HC_OP_ELEMENTWISE) && op->scalar && !op->lower && n->num_fused == 0;
  if (!generator && !(op->flags & HC_OP_INPLACE_OK)) return false;
  for (int j = 1; j < n->num_outputs; ++j)
    if (n->outputs[j]) return false;
  const hc_value* out = n->outputs[0];
  const hc_value* in = n->inputs[input];
  if (!out || !in || out->rank < 0 || in->rank < 0) return false;
  int64_t numel = hc_value_numel(out);
  if (numel <= 0 || hc_value_numel(in) != numel || hx_dtype_size(in->dtype) != hx_dtype_size(out->dtype)) return false;
  /* Another operand reading the same bytes must walk them in the same order
   * (a broadcast view would read elements already overwritten). */
  const hc_value* r = croot_of(in);
  for (int j = 0; j < n->num_inputs; ++j) {
    const hc_value* o = n->inputs[j];
    if (j != input && o && croot_of(o) == r && hc_value_numel(o) != numel) return false;
  }
  return true;
}

/* Whether node n at step s may write its output over input k as far as
 * liveness goes: the input's root is an intermediate read last by n, and no
 * node that may run at the same time as n reads it. */
static bool inplace_legal(const liveness* L, const hc_node* n, int s, int k) {
  if (!n->inputs[k] || !hc_memory_plan_inplace_ok(n, k)) return false;
  const hc_value* r = croot_of(n->inputs[k]);
  if (r->kind != HC_VALUE_INTERMEDIATE || !r->producer || r->producer->dead) return false;
  return L->last_read[r->id] == s && !L->shared_read[r->id];
}

const hc_value* hc_memory_plan_inplace_source(const hc_value* v) {
  if (!v || v->alias_of || v->storage.base != HX_BASE_ARENA || !v->producer) return NULL;
  const hc_node* n = v->producer;
  if (n->num_outputs < 1 || n->outputs[0] != v) return NULL;
  for (int k = 0; k < n->num_inputs; ++k) {
    if (!n->inputs[k]) continue;
    const hc_value* r = croot_of(n->inputs[k]);
    if (r != v && r->storage.base == HX_BASE_ARENA && r->storage.offset == v->storage.offset &&
        hc_memory_plan_inplace_ok(n, k))
      return r;
  }
  return NULL;
}

/* ---- packing ------------------------------------------------------------ */

/* Whether v owns a dims slot: the run-time shape (int64[rank]) of a value
 * whose shape depends on data (compiler/ops/dynamic.h), written by its
 * producer and read by the runtime after the run. */
static bool dims_slot_owner(const hc_value* v) {
  return v->dynamic && !v->dyn_source && v->producer && !v->producer->dead;
}

static uint64_t dims_slot_bytes(const hc_value* v) {
  return align_up(sizeof(int64_t) * (uint64_t)(v->rank > 0 ? v->rank : 1));
}

/* A block to place in the arena: a chain of tensors sharing bytes (one
 * tensor unless outputs were written in place), a node workspace or a dims
 * slot. */
typedef struct block {
  hc_value* value;   /* chain head; NULL for a workspace or dims slot */
  hc_node* node;     /* owner of a workspace */
  hc_value* dims_of; /* owner of a dims slot */
  uint64_t size;
  int first, last;
  int ident; /* deterministic tie-break: chain head id; workspaces and dims slots after all values */
} block;

/* Blocks live at the same step as each block (compressed rows). */
typedef struct conflicts {
  int* start; /* nb + 1 */
  int* list;
} conflicts;

typedef struct sort_key {
  int64_t k1, k2, k3;
  int idx;
} sort_key;

static int cmp_keys(const void* a, const void* b) {
  const sort_key *x = a, *y = b;
  if (x->k1 != y->k1) return x->k1 < y->k1 ? -1 : 1;
  if (x->k2 != y->k2) return x->k2 < y->k2 ? -1 : 1;
  if (x->k3 != y->k3) return x->k3 < y->k3 ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static bool live_together(const block* a, const block* b) { return !(a->last < b->first || b->last < a->first); }

static hx_status_t conflicts_build(const block* b, int nb, conflicts* c) {
  c->start = calloc((size_t)nb + 1, sizeof(int));
  sort_key* k = malloc(sizeof(sort_key) * (size_t)(nb ? nb : 1));
  c->list = NULL;
  if (!c->start || !k) {
    free(k);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory building the conflict graph");
  }
  /* Sweep in order of first step: j conflicts with i (first_j >= first_i)
   * iff first_j <= last_i. Two rounds: count, then fill. */
  for (int i = 0; i < nb; ++i) k[i] = (sort_key){b[i].first, 0, 0, i};
  qsort(k, (size_t)nb, sizeof(sort_key), cmp_keys);
  for (int round = 0; round < 2; ++round) {
    int* fill = NULL;
    if (round == 1) {
      for (int i = 0; i < nb; ++i) c->start[i + 1] += c->start[i];
      c->list = malloc(sizeof(int) * (size_t)(c->start[nb] ? c->start[nb] : 1));
      fill = malloc(sizeof(int) * (size_t)(nb ? nb : 1));
      if (!c->list || !fill) {
        free(fill);
        free(k);
        return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory building the conflict graph");
      }
      memcpy(fill, c->start, sizeof(int) * (size_t)nb);
    }
    for (int a = 0; a < nb; ++a) {
      int i = k[a].idx;
      for (int z = a + 1; z < nb && b[k[z].idx].first <= b[i].last; ++z) {
        int j = k[z].idx;
        if (round == 0) {
          c->start[i + 1]++;
          c->start[j + 1]++;
        } else {
          c->list[fill[i]++] = j;
          c->list[fill[j]++] = i;
        }
      }
    }
    free(fill);
  }
  free(k);
  return HX_OK;
}

typedef struct extent {
  uint64_t begin, end;
} extent;

static int cmp_extents(const void* a, const void* b) {
  const extent *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

/* Places the blocks in `order`, each against the already placed blocks it
 * conflicts with: first-fit takes the lowest free offset, best-fit the
 * smallest free gap that holds it (the top when none does). Returns the
 * arena size; offsets go to `offset`. `scratch` holds nb extents. */
static uint64_t pack(const block* b, int nb, const conflicts* c, const int* order, bool best_fit, uint64_t* offset,
                     unsigned char* placed, extent* scratch) {
  uint64_t arena = 0;
  memset(placed, 0, (size_t)nb);
  for (int o = 0; o < nb; ++o) {
    int i = order[o];
    int ne = 0;
    for (int e = c->start[i]; e < c->start[i + 1]; ++e) {
      int j = c->list[e];
      if (placed[j] && b[j].size) scratch[ne++] = (extent){offset[j], offset[j] + b[j].size};
    }
    qsort(scratch, (size_t)ne, sizeof(extent), cmp_extents);
    uint64_t cursor = 0, off = 0, best_gap = UINT64_MAX;
    bool found = false;
    for (int e = 0; e < ne; ++e) {
      if (scratch[e].begin > cursor) {
        uint64_t gap = scratch[e].begin - cursor;
        if (gap >= b[i].size && (!found || (best_fit && gap < best_gap))) {
          off = cursor;
          best_gap = gap;
          found = true;
          if (!best_fit) break;
        }
      }
      if (scratch[e].end > cursor) cursor = scratch[e].end;
    }
    if (!found) off = cursor;
    offset[i] = off;
    placed[i] = 1;
    if (off + b[i].size > arena) arena = off + b[i].size;
  }
  return arena;
}

enum { ORDER_SIZE, ORDER_FIRST_USE, ORDER_LIFETIME, ORDER_BREADTH, ORDER_CONFLICT, NUM_ORDERS };

/* The heuristics in the order ties are broken: (ordering, best-fit). */
static const struct {
  int order;
  bool best_fit;
  const char* name;
} k_heuristics[] = {
    {ORDER_SIZE, false, "size/first-fit"},          {ORDER_SIZE, true, "size/best-fit"},
    {ORDER_FIRST_USE, false, "first-use/first-fit"}, {ORDER_FIRST_USE, true, "first-use/best-fit"},
    {ORDER_LIFETIME, false, "lifetime/first-fit"},   {ORDER_LIFETIME, true, "lifetime/best-fit"},
    {ORDER_BREADTH, false, "breadth/first-fit"},     {ORDER_BREADTH, true, "breadth/best-fit"},
    {ORDER_CONFLICT, false, "conflict/first-fit"},   {ORDER_CONFLICT, true, "conflict/best-fit"},
};
#define NUM_HEURISTICS ((int)(sizeof(k_heuristics) / sizeof(k_heuristics[0])))
_Static_assert(NUM_HEURISTICS + 1 <= HC_MEMPLAN_MAX_HEURISTICS, "raise HC_MEMPLAN_MAX_HEURISTICS");
/* The winner improved by promotion (see promote), by placement rule. */
static const char* const k_promoted_names[2] = {"best+promote/first-fit", "best+promote/best-fit"};
#define PROMOTE_ROUNDS 200

/* Fills order[] with the block indices in the given ordering. */
static hx_status_t make_order(const block* b, int nb, int num_steps, const conflicts* c, int which, int* order) {
  sort_key* k = malloc(sizeof(sort_key) * (size_t)(nb ? nb : 1));
  if (!k) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory ordering blocks");
  for (int i = 0; i < nb; ++i) {
    int64_t size = (int64_t)b[i].size, len = b[i].last - b[i].first;
    switch (which) {
      case ORDER_SIZE: k[i] = (sort_key){-size, b[i].first, b[i].ident, i}; break;
      case ORDER_FIRST_USE: k[i] = (sort_key){b[i].first, -len, -size, i}; break;
      case ORDER_LIFETIME: k[i] = (sort_key){-len, -size, b[i].ident, i}; break;
      case ORDER_CONFLICT: {
        int64_t w = size;
        for (int e = c->start[i]; e < c->start[i + 1]; ++e) w += (int64_t)b[c->list[e]].size;
        k[i] = (sort_key){-w, -size, b[i].ident, i};
        break;
      }
      default: k[i] = (sort_key){-size, b[i].ident, 0, i}; break; /* breadth: within a step */
    }
  }
  qsort(k, (size_t)nb, sizeof(sort_key), cmp_keys);
  if (which != ORDER_BREADTH) {
    for (int i = 0; i < nb; ++i) order[i] = k[i].idx;
    free(k);
    return HX_OK;
  }
  /* Breadth: steps by live bytes (most first); each step's unplaced blocks
   * in size order. */
  int steps = num_steps > 0 ? num_steps : 1;
  sort_key* sk = calloc((size_t)steps, sizeof(sort_key));
  unsigned char* taken = calloc((size_t)nb + 1, 1);
  if (!sk || !taken) {
    free(k);
    free(sk);
    free(taken);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory ordering blocks");
  }
  for (int s = 0; s < steps; ++s) sk[s].idx = s;
  for (int i = 0; i < nb; ++i)
    for (int s = b[i].first; s <= b[i].last && s < steps; ++s) sk[s].k1 -= (int64_t)b[i].size;
  qsort(sk, (size_t)steps, sizeof(sort_key), cmp_keys);
  int no = 0;
  for (int t = 0; t < steps; ++t) {
    int s = sk[t].idx;
    for (int a = 0; a < nb; ++a) {
      int i = k[a].idx;
      if (!taken[i] && b[i].first <= s && s <= b[i].last) {
        taken[i] = 1;
        order[no++] = i;
      }
    }
  }
  for (int a = 0; a < nb; ++a)
    if (!taken[k[a].idx]) order[no++] = k[a].idx;
  free(sk);
  free(taken);
  free(k);
  return HX_OK;
}

/* Largest sum of block sizes live at one step. */
static uint64_t lower_bound(const block* b, int nb, int num_steps, int64_t* delta) {
  memset(delta, 0, sizeof(int64_t) * ((size_t)num_steps + 2));
  for (int i = 0; i < nb; ++i) {
    delta[b[i].first] += (int64_t)b[i].size;
    delta[b[i].last + 1] -= (int64_t)b[i].size;
  }
  int64_t live = 0;
  uint64_t best = 0;
  for (int s = 0; s <= num_steps; ++s) {
    live += delta[s];
    if ((uint64_t)live > best) best = (uint64_t)live;
  }
  return best;
}

/* Squeaky wheel: the first block (in `order`) that reaches the top of the
 * arena moves to the front of the order and everything is packed again, up
 * to `rounds` times or until the lower bound is met; the best packing seen
 * is kept in best_offset. A block at the top is one that found no room
 * below: placing it earlier gives it the pick of the gaps. Deterministic. */
static uint64_t promote(const block* b, int nb, const conflicts* c, int* order, bool best_fit, uint64_t arena,
                        uint64_t lower, int rounds, uint64_t* offset, uint64_t* best_offset, unsigned char* placed,
                        extent* scratch) {
  uint64_t best = arena;
  for (int r = 0; r < rounds && best > lower; ++r) {
    int at = -1;
    for (int o = 0; o < nb && at < 0; ++o)
      if (offset[order[o]] + b[order[o]].size == arena) at = o;
    if (at <= 0) break; /* the top block already goes first */
    int top = order[at];
    memmove(order + 1, order, sizeof(int) * (size_t)at);
    order[0] = top;
    arena = pack(b, nb, c, order, best_fit, offset, placed, scratch);
    if (arena < best) {
      best = arena;
      memcpy(best_offset, offset, sizeof(uint64_t) * (size_t)nb);
    }
  }
  return best;
}

/* Runs the heuristics (all, or only ctx->memplan_only - 1) and leaves the
 * winner's offsets in best_offset. When all run and the best is above the
 * lower bound, the best one is improved by promotion (see promote). */
static hx_status_t choose_packing(hc_pass_ctx* ctx, const block* b, int nb, int num_steps, uint64_t lower,
                                  uint64_t* best_offset, uint64_t* out_arena) {
  conflicts c = {0};
  int* order = malloc(sizeof(int) * (size_t)(nb ? nb : 1));
  int* best_order = malloc(sizeof(int) * (size_t)(nb ? nb : 1));
  uint64_t* offset = malloc(sizeof(uint64_t) * (size_t)(nb ? nb : 1));
  unsigned char* placed = malloc((size_t)nb + 1);
  extent* scratch = malloc(sizeof(extent) * (size_t)(nb ? nb : 1));
  hx_status_t st = HX_OK;
  if (!order || !best_order || !offset || !placed || !scratch)
    st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory packing");
  if (st == HX_OK) st = conflicts_build(b, nb, &c);
  int only = ctx->memplan_only - 1;
  if (st == HX_OK && only >= NUM_HEURISTICS)
    st = hx_status_make(HX_STATUS_INVALID_ARGUMENT, "memory plan: no packing heuristic %d (there are %d)", only + 1,
                        NUM_HEURISTICS);
  hc_memplan_stats* ms = &ctx->memplan;
  ms->num_heuristics = 0;
  ms->chosen = -1;
  uint64_t best = 0;
  int best_h = 0;
  int current = -1; /* ordering now in order[]: heuristics come grouped by ordering */
  for (int h = 0; st == HX_OK && h < NUM_HEURISTICS; ++h) {
    if (only >= 0 && h != only) continue;
    if (k_heuristics[h].order != current) {
      st = make_order(b, nb, num_steps, &c, k_heuristics[h].order, order);
      if (st != HX_OK) break;
      current = k_heuristics[h].order;
    }
    uint64_t arena = pack(b, nb, &c, order, k_heuristics[h].best_fit, offset, placed, scratch);
    int slot = ms->num_heuristics++;
    ms->heuristic[slot] = k_heuristics[h].name;
    ms->arena[slot] = arena;
    if (ms->chosen < 0 || arena < best) {
      best = arena;
      ms->chosen = slot;
      memcpy(best_offset, offset, sizeof(uint64_t) * (size_t)nb);
      memcpy(best_order, order, sizeof(int) * (size_t)nb);
      best_h = h;
    }
  }
  if (st == HX_OK && only < 0 && best > lower && nb > 1) {
    bool best_fit = k_heuristics[best_h].best_fit;
    /* promote() starts from the winner's packing. */
    memcpy(offset, best_offset, sizeof(uint64_t) * (size_t)nb);
    uint64_t arena = promote(b, nb, &c, best_order, best_fit, best, lower, PROMOTE_ROUNDS, offset, best_offset, placed,
                             scratch);
    int slot = ms->num_heuristics++;
    ms->heuristic[slot] = best_fit ? k_promoted_names[1] : k_promoted_names[0];
    ms->arena[slot] = arena;
    if (arena < best) {
      best = arena;
      ms->chosen = slot;
    }
  }
  *out_arena = best;
  free(c.start);
  free(c.list);
  free(order);
  free(best_order);
  free(offset);
  free(placed);
  free(scratch);
  return st;
}

/* Whether v gets bytes in the arena: an intermediate (not a view, not in a
 * caller's buffer) that a live node produces. */
static bool arena_candidate(const hc_value* v, const liveness* L) {
  return v->kind == HC_VALUE_INTERMEDIATE && !v->alias_of && v->storage.base < 0 && v->producer &&
         !v->producer->dead && L->first[v->id] >= 0;
}

static hx_status_t run_memory_plan(hc_pass_ctx* ctx, hc_graph* g) {
  /* Reset: passes may have run before. */
  for (int i = 0; i < g->num_values; ++i) {
    hc_value* v = g->values[i];
    v->storage.base = -1;
    v->storage.offset = 0;
    v->alias_of = NULL;
    v->live_first = v->live_last = -1;
  }
  for (int i = 0; i < g->num_inputs; ++i) g->inputs[i]->storage.base = HX_BASE_FIRST_IO + i;
  for (int i = 0; i < g->num_outputs; ++i) g->outputs[i]->storage.base = HX_BASE_FIRST_IO + g->num_inputs + i;

  /* Views alias their input; weights are laid out in first-use order. */
  uint64_t wbytes = 0;
  for (int s = 0; s < g->num_nodes; ++s) {
    hc_node* n = g->nodes[s];
    if ((n->op->flags & HC_OP_VIEW) && n->outputs[0] && n->outputs[0]->kind != HC_VALUE_CONST)
      n->outputs[0]->alias_of = n->inputs[0];
    for (int j = 0; j < n->num_inputs; ++j) {
      hc_value* v = n->inputs[j];
      if (!v || v->kind != HC_VALUE_CONST || v->storage.base >= 0) continue;
      v->storage.base = HX_BASE_WEIGHTS;
      v->storage.offset = wbytes;
      wbytes += align_up(hc_value_nbytes(v));
    }
  }
  ctx->weights_bytes = wbytes;

  liveness L;
  HX_RETURN_IF_ERROR(liveness_compute(g, &L));
  const int nv = g->num_values, steps = g->num_nodes;
  int* head = malloc(sizeof(int) * ((size_t)nv + 1));     /* in-place chain head of each value */
  int* block_of = malloc(sizeof(int) * ((size_t)nv + 1)); /* block of each chain head */
  block* blocks = calloc(2 * (size_t)nv + (size_t)steps + 1, sizeof(block));
  uint64_t* offset = malloc(sizeof(uint64_t) * (2 * (size_t)nv + (size_t)steps + 1));
  int64_t* delta = malloc(sizeof(int64_t) * ((size_t)steps + 2));
  hx_status_t st = HX_OK;
  if (!head || !block_of || !blocks || !offset || !delta) {
    st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory planning memory");
    goto done;
  }
  for (int i = 0; i < nv; ++i) head[i] = i, block_of[i] = -1;

  /* In place, in schedule order so chains grow at their tail. */
  int inplace = 0;
  for (int s = 0; s < steps && !ctx->memplan_no_inplace; ++s) {
    hc_node* n = g->nodes[s];
    hc_value* out = n->num_outputs ? n->outputs[0] : NULL;
    if (!out || !arena_candidate(out, &L)) continue;
    for (int k = 0; k < n->num_inputs; ++k) {
      if (!n->inputs[k]) continue;
      hc_value* r = root_of(n->inputs[k]);
      if (!arena_candidate(r, &L) || !inplace_legal(&L, n, s, k)) continue;
      head[out->id] = head[r->id];
      ++inplace;
      break;
    }
  }

  /* Blocks: one per chain, then workspaces. The bound without in place
   * counts every tensor on its own. */
  int nb = 0;
  uint64_t bound_no_inplace = 0;
  memset(delta, 0, sizeof(int64_t) * ((size_t)steps + 2));
  for (int i = 0; i < nv; ++i) {
    hc_value* v = g->values[i];
    if (!arena_candidate(v, &L)) continue;
    uint64_t size = align_up(hc_value_nbytes(v));
    delta[L.first[i]] += (int64_t)size;
    delta[L.last[i] + 1] -= (int64_t)size;
    int h = head[i];
    if (block_of[h] < 0) {
      block_of[h] = nb;
      blocks[nb++] = (block){.value = g->values[h], .size = size, .first = L.first[i], .last = L.last[i], .ident = h};
    } else {
      block* b = &blocks[block_of[h]];
      if (L.first[i] < b->first) b->first = L.first[i];
      if (L.last[i] > b->last) b->last = L.last[i];
    }
  }
  for (int s = 0; s < steps; ++s) {
    hc_node* n = g->nodes[s];
    n->workspace_bytes = n->op->workspace ? n->op->workspace(n) : 0;
    n->workspace_offset = 0;
    if (!n->workspace_bytes) continue;
    uint64_t size = align_up(n->workspace_bytes);
    blocks[nb++] = (block){.node = n, .size = size, .first = L.span[2 * s], .last = L.span[2 * s + 1], .ident = nv + s};
    delta[L.span[2 * s]] += (int64_t)size;
    delta[L.span[2 * s + 1] + 1] -= (int64_t)size;
  }
  /* Dims slots of value-dependent shapes (compiler/ops/dynamic.h): written
   * by the producing kernel and read by the runtime after the run, so each
   * is live for the whole run. */
  for (int i = 0; i < nv; ++i) {
    hc_value* v = g->values[i];
    if (!dims_slot_owner(v) || steps == 0) continue;
    uint64_t size = dims_slot_bytes(v);
    blocks[nb++] = (block){.dims_of = v, .size = size, .first = 0, .last = steps - 1, .ident = nv + steps + i};
    delta[0] += (int64_t)size;
    delta[steps] -= (int64_t)size;
  }
  {
    int64_t live = 0;
    for (int s = 0; s <= steps; ++s) {
      live += delta[s];
      if ((uint64_t)live > bound_no_inplace) bound_no_inplace = (uint64_t)live;
    }
  }
  uint64_t lower = lower_bound(blocks, nb, steps, delta);

  /* What the parallel groups cost: the bound of the same blocks with every
   * node a step of its own (lifetimes not widened to groups). */
  uint64_t bound_sequential = 0;
  {
    block* seq = calloc((size_t)nb + 1, sizeof(block));
    if (!seq) {
      st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory planning memory");
      goto done;
    }
    memcpy(seq, blocks, sizeof(block) * (size_t)nb);
    for (int b = 0; b < nb; ++b) {
      if (seq[b].value) seq[b].first = steps, seq[b].last = -1;
      if (seq[b].node) seq[b].first = seq[b].last = seq[b].node->id;
    }
    for (int i = 0; i < nv; ++i) {
      hc_value* v = g->values[i];
      if (!arena_candidate(v, &L)) continue;
      block* b = &seq[block_of[head[i]]];
      int first = v->producer->id, last = L.last_read[i] > first ? L.last_read[i] : first;
      if (first < b->first) b->first = first;
      if (last > b->last) b->last = last;
    }
    bound_sequential = lower_bound(seq, nb, steps, delta);
    free(seq);
  }

  uint64_t arena = 0;
  st = choose_packing(ctx, blocks, nb, steps, lower, offset, &arena);
  if (st != HX_OK) goto done;

  for (int i = 0; i < nv; ++i) {
    hc_value* v = g->values[i];
    if (!arena_candidate(v, &L)) continue;
    v->storage.base = HX_BASE_ARENA;
    v->storage.offset = offset[block_of[head[i]]];
    v->live_first = L.first[i];
    v->live_last = L.last[i];
  }
  for (int b = 0; b < nb; ++b) {
    if (blocks[b].node) blocks[b].node->workspace_offset = offset[b];
    if (blocks[b].dims_of) blocks[b].dims_of->dyn_dims_offset = offset[b];
  }
  /* Values in callers' buffers still get liveness, for the manifest. */
  for (int i = 0; i < nv; ++i) {
    hc_value* v = g->values[i];
    if (v->live_first < 0 && L.first[i] >= 0) {
      v->live_first = L.first[i];
      v->live_last = L.last[i];
    }
  }
  ctx->arena_bytes = arena;
  ctx->arena_lower_bound = lower;
  ctx->memplan.inplace = inplace;
  ctx->memplan.lower_bound_no_inplace = bound_no_inplace;
  ctx->memplan.lower_bound_sequential = bound_sequential;
  st = hc_memory_plan_verify(g, arena);
  if (ctx->verbose && ctx->log) {
    double over = lower ? 100.0 * ((double)arena - (double)lower) / (double)lower : 0;
    fprintf(ctx->log,
            "memory-plan: arena %llu bytes (lower bound %llu, +%.2f%%; %s of %d heuristics), %d outputs in place "
            "(bound without: %llu), bound without parallel groups %llu, weights %llu bytes\n",
            (unsigned long long)arena, (unsigned long long)lower, over, ctx->memplan.heuristic[ctx->memplan.chosen],
            ctx->memplan.num_heuristics, inplace, (unsigned long long)bound_no_inplace,
            (unsigned long long)bound_sequential, (unsigned long long)wbytes);
  }

done:
  liveness_free(&L);
  free(head);
  free(block_of);
  free(blocks);
  free(offset);
  free(delta);
  return st;
}

/* ---- verifier ----------------------------------------------------------- */

static const char* block_name(const block* b) {
  return b->value ? b->value->name : b->node ? b->node->name : b->dims_of->name;
}

static int uf_find(int* parent, int i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

hx_status_t hc_memory_plan_verify(const hc_graph* g, uint64_t arena_bytes) {
  /* Liveness is derived from the graph here, not taken from the planner, so
   * a planner that forgot a reader, a view or a parallel group is caught. */
  liveness L;
  HX_RETURN_IF_ERROR(liveness_compute(g, &L));
  int n = 0;
  size_t cap = 2 * (size_t)g->num_values + (size_t)g->num_nodes + 1;
  block* b = calloc(cap, sizeof(block));
  uint64_t* off = malloc(sizeof(uint64_t) * cap);
  int* parent = malloc(sizeof(int) * cap);
  int* index_of = malloc(sizeof(int) * ((size_t)g->num_values + 1));
  hx_status_t st = HX_OK;
  if (!b || !off || !parent || !index_of) {
    st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory verifying the memory plan");
    goto done;
  }
  for (int i = 0; i < g->num_values; ++i) {
    const hc_value* v = g->values[i];
    index_of[i] = -1;
    if (v->alias_of || v->storage.base != HX_BASE_ARENA) continue;
    if (L.first[i] < 0) {
      st = hx_status_make(HX_STATUS_INTERNAL, "memory plan: '%s' is in the arena but no node produces it", v->name);
      goto done;
    }
    if (v->live_first > L.first[i] || v->live_last < L.last[i]) {
      st = hx_status_make(HX_STATUS_INTERNAL,
                          "memory plan: '%s' is recorded live over steps %d..%d but is live over %d..%d", v->name,
                          v->live_first, v->live_last, L.first[i], L.last[i]);
      goto done;
    }
    index_of[i] = n;
    off[n] = v->storage.offset;
    b[n++] = (block){.value = (hc_value*)v, .size = hc_value_nbytes(v), .first = L.first[i], .last = L.last[i]};
  }
  for (int s = 0; s < g->num_nodes; ++s) {
    const hc_node* nd = g->nodes[s];
    if (!nd->workspace_bytes) continue;
    off[n] = nd->workspace_offset;
    b[n++] =
        (block){.node = (hc_node*)nd, .size = nd->workspace_bytes, .first = L.span[2 * s], .last = L.span[2 * s + 1]};
  }
  for (int i = 0; i < g->num_values && g->num_nodes > 0; ++i) {
    const hc_value* v = g->values[i];
    if (!dims_slot_owner(v)) continue;
    off[n] = v->dyn_dims_offset;
    b[n++] = (block){.dims_of = (hc_value*)v, .size = dims_slot_bytes(v), .first = 0, .last = g->num_nodes - 1};
  }
  /* In-place pairs: an output on its input's bytes, the input dead after
   * this node and read by no concurrently running lane. Such pairs (and
   * chains of them) may share bytes while live together. */
  for (int i = 0; i < n; ++i) parent[i] = i;
  for (int s = 0; s < g->num_nodes; ++s) {
    const hc_node* nd = g->nodes[s];
    const hc_value* out = nd->num_outputs ? nd->outputs[0] : NULL;
    if (!out || index_of[out->id] < 0) continue;
    for (int k = 0; k < nd->num_inputs; ++k) {
      if (!nd->inputs[k]) continue;
      const hc_value* r = croot_of(nd->inputs[k]);
      int ri = index_of[r->id], oi = index_of[out->id];
      if (ri < 0 || ri == oi || off[ri] != off[oi] || b[ri].size != b[oi].size || !inplace_legal(&L, nd, s, k))
        continue;
      parent[uf_find(parent, oi)] = uf_find(parent, ri);
    }
  }
  for (int i = 0; i < n && st == HX_OK; ++i) {
    const char* name = block_name(&b[i]);
    if (off[i] % HC_ALIGN != 0 || off[i] + b[i].size > arena_bytes)
      st = hx_status_make(HX_STATUS_INTERNAL, "memory plan: '%s' is misplaced (offset %llu, size %llu, arena %llu)",
                          name, (unsigned long long)off[i], (unsigned long long)b[i].size,
                          (unsigned long long)arena_bytes);
    for (int j = i + 1; j < n && st == HX_OK; ++j) {
      if (!b[i].size || !b[j].size || !live_together(&b[i], &b[j])) continue;
      if (!(off[i] < off[j] + b[j].size && off[j] < off[i] + b[i].size)) continue;
      if (uf_find(parent, i) == uf_find(parent, j)) continue;
      st = hx_status_make(HX_STATUS_INTERNAL, "memory plan: '%s' and '%s' are live together but overlap", name,
                          block_name(&b[j]));
    }
  }

done:
  liveness_free(&L);
  free(b);
  free(off);
  free(parent);
  free(index_of);
  return st;
}

const hc_pass hc_pass_memory_plan = {"memory-plan", "assign every tensor a static place (arena, weights, I/O)",
                                     run_memory_plan};
