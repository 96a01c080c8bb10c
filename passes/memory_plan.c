/* Static memory planning.
 *
 * Every tensor gets a fixed place before run time:
 *  - graph inputs and outputs live in the caller's buffers (bases 2..);
 *  - weights are packed into one blob (passes/weights_layout.c);
 *  - views (Reshape...) alias the tensor they view and cost zero bytes;
 *  - every other intermediate, and every node's workspace, gets an offset in
 *    one 64-byte-aligned arena.
 *
 * Liveness follows what the executor (runtime/executor.c) may do. The
 * schedule is a sequence of super-steps, run one after another: a single
 * step outside parallel groups, or a whole parallel group (schedule.c). In a
 * group the kernels of one lane run in step order, kernels of different
 * lanes at any relative time (threads help each other's lanes). A tensor is
 * live from the moment its producer starts until its last reader (readers
 * of its views included) has finished. Two blocks may share bytes iff no
 * execution has them live at the same moment, which comes down to: their
 * super-step ranges are disjoint, or they share exactly one super-step G,
 * one of them ends in G and the other starts in G, at a later step of the
 * same lane. Lifetimes are recorded as steps [first, last]: first is the
 * producer's step, last the last reader's; when the readers in the group of
 * `last` are in several lanes, last becomes the group's last step (so the
 * tensor conflicts with everything that starts in the group), and when
 * another lane of the producer's group reads it (never in a verified
 * schedule), first becomes the group's first step.
 *
 * In place. A node whose kernel allows it (hc_memory_plan_inplace_ok:
 * element-wise ops of the shared generator, ops flagged HC_OP_INPLACE_OK,
 * and Conv/Gemm/MatMul over a residual operand of their fused epilogue
 * where hc_op_desc.inplace_input says their kernel plan for the target
 * allows it, recorded in hc_node.inplace_inputs) writes its output over an input of the same size when that input is an
 * arena tensor it reads last and that no concurrently running lane reads.
 * Such outputs join their input's chain, and a chain is placed as one block
 * whose lifetime is the union of its members'.
 *
 * Concat in place (-O2 and up, concat_in_place). A Concat whose inputs are
 * contiguous blocks of its output (every dimension before the axis is 1)
 * has them written there by their producers: each input becomes a part,
 * aliasing the output at its byte offset, and the Concat copies nothing.
 * The output's lifetime then starts at the first part's producer, so the
 * parts are taken only where an estimate says the peak does not rise (see
 * concat_in_place) and the arena planned with them is not larger than the
 * one planned without (run_memory_plan); nothing is written in place over a
 * part.
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
 * The lower bound is the largest total size of blocks that are pairwise
 * live together (a largest clique of the conflict graph), which no packing
 * can beat. By the rule above every such set is live at one moment of one
 * super-step G: the blocks live across all of G, plus, for each lane of G,
 * the blocks of that lane live at one of its steps (a lane's blocks are
 * intervals of its steps: those that start in G from their producer, those
 * that end in G up to their last reader). So the bound is, over all G,
 * through(G) + the sum over G's lanes of the lane's busiest step; outside
 * groups that is the plain largest sum of blocks live at one step. It is
 * recorded with the result. The plan is checked by hc_memory_plan_verify,
 * which derives liveness from the graph on its own, with its own model of
 * the executor (moments of lanes). */
#include <limits.h>
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

/* ---- super-steps -------------------------------------------------------- */

/* The schedule as the executor runs it: super-steps one after another, each
 * a single step outside parallel groups or a whole group, in which steps of
 * one lane run in order and steps of different lanes may overlap. */
typedef struct exec_steps {
  int n;      /* schedule steps */
  int num_sg; /* super-steps */
  int* sg;    /* super-step of each step (non-decreasing) */
  int* lane;  /* lane of each step within its group (0 outside groups) */
  int* start; /* first step of each step's super-step */
  int* end;   /* last step of each step's super-step */
} exec_steps;

static void steps_free(exec_steps* S) {
  free(S->sg);
  free(S->lane);
  free(S->start);
  free(S->end);
  memset(S, 0, sizeof(*S));
}

/* The super-steps of g's schedule; with grouped false, every step is one of
 * its own (the same order run serially, for the bound without groups). */
static hx_status_t steps_init(const hc_graph* g, bool grouped, exec_steps* S) {
  int n = g->num_nodes;
  size_t cap = (size_t)(n ? n : 1);
  memset(S, 0, sizeof(*S));
  S->n = n;
  S->sg = malloc(sizeof(int) * cap);
  S->lane = malloc(sizeof(int) * cap);
  S->start = malloc(sizeof(int) * cap);
  S->end = malloc(sizeof(int) * cap);
  if (!S->sg || !S->lane || !S->start || !S->end) {
    steps_free(S);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory computing liveness");
  }
  for (int s = 0; s < n; ++s) {
    const hc_node* nd = g->nodes[s];
    bool same = grouped && s > 0 && nd->group && nd->group == g->nodes[s - 1]->group;
    S->sg[s] = same ? S->sg[s - 1] : S->num_sg++;
    S->start[s] = same ? S->start[s - 1] : s;
    S->lane[s] = grouped && nd->group ? nd->lane : 0;
  }
  for (int s = n - 1; s >= 0; --s) {
    bool same = s + 1 < n && S->sg[s + 1] == S->sg[s];
    S->end[s] = same ? S->end[s + 1] : s;
  }
  return HX_OK;
}

/* ---- liveness ----------------------------------------------------------- */

/* What the planner derives from the graph, indexed by value id and
 * meaningful for storage roots (values that are not views). */
typedef struct liveness {
  exec_steps S;
  int* first;     /* producer step (see the file comment for widening); -1 = never live */
  int* written;   /* the first step writing its bytes (an in-place Concat part's producer), never widened */
  int* last;      /* last reader step, widened where lanes of its group meet */
  int* last_read; /* step of the last node reading it or one of its views; -1 = none */
  /* A node in the last reader's parallel group but another lane reads it
   * too: the two may run at the same time. */
  unsigned char* shared_read;
} liveness;

static void liveness_free(liveness* L) {
  steps_free(&L->S);
  free(L->first);
  free(L->written);
  free(L->last);
  free(L->last_read);
  free(L->shared_read);
}

static hx_status_t liveness_compute(const hc_graph* g, liveness* L) {
  size_t nv = (size_t)g->num_values + 1;
  memset(L, 0, sizeof(*L));
  HX_RETURN_IF_ERROR(steps_init(g, true, &L->S));
  L->first = malloc(sizeof(int) * nv);
  L->written = malloc(sizeof(int) * nv);
  L->last = malloc(sizeof(int) * nv);
  L->last_read = malloc(sizeof(int) * nv);
  L->shared_read = calloc(nv, 3); /* [0, nv): shared_read; then the widening marks */
  if (!L->first || !L->written || !L->last || !L->last_read || !L->shared_read) {
    liveness_free(L);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory computing liveness");
  }
  unsigned char* wide_first = L->shared_read + nv;
  unsigned char* wide_last = L->shared_read + 2 * nv;
  const exec_steps* S = &L->S;
  for (int i = 0; i < g->num_values; ++i) L->first[i] = L->written[i] = L->last[i] = L->last_read[i] = -1;
  for (int s = 0; s < g->num_nodes; ++s) {
    const hc_node* n = g->nodes[s];
    for (int j = 0; j < n->num_outputs; ++j) {
      const hc_value* v = n->outputs[j];
      if (!v || v->kind == HC_VALUE_CONST) continue;
      const hc_value* r = croot_of(v);
      int f = L->first[r->id];
      if (f < 0) L->first[r->id] = L->written[r->id] = s;
      /* In-place Concat parts written in several lanes of one group: live
       * from the group's start. */
      else if (S->sg[f] == S->sg[s] && S->lane[f] != S->lane[s]) wide_first[r->id] = 1;
      if (L->last[r->id] < s) L->last[r->id] = s;
    }
    for (int j = 0; j < n->num_inputs; ++j) {
      const hc_value* v = n->inputs[j];
      if (!v || v->kind == HC_VALUE_CONST) continue;
      const hc_value* r = croot_of(v);
      if (L->last[r->id] < s) L->last[r->id] = s;
      L->last_read[r->id] = s;
    }
  }
  /* Where lanes meet: a reader in another lane of the producer's group, or
   * readers of the last group in several lanes (the producer counts as one
   * of them when it is in that group too). */
  for (int s = 0; s < g->num_nodes; ++s) {
    const hc_node* n = g->nodes[s];
    for (int j = 0; j < n->num_inputs; ++j) {
      const hc_value* v = n->inputs[j];
      if (!v || v->kind == HC_VALUE_CONST) continue;
      int r = croot_of(v)->id, f = L->first[r], l = L->last[r];
      if (f >= 0 && S->sg[f] == S->sg[s] && S->lane[f] != S->lane[s]) wide_first[r] = wide_last[r] = 1;
      if (S->sg[l] == S->sg[s] && S->lane[l] != S->lane[s]) wide_last[r] = 1;
    }
  }
  for (int i = 0; i < g->num_values; ++i) {
    int f = L->first[i], l = L->last[i];
    if (f < 0) continue;
    if (S->sg[f] == S->sg[l] && S->lane[f] != S->lane[l]) wide_last[i] = 1;
    if (wide_first[i]) L->first[i] = S->start[f];
    if (wide_last[i]) L->last[i] = S->end[l];
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

/* Whether v's bytes are (in) an in-place Concat part. */
static bool in_concat_part(const hc_value* v) {
  for (; v->alias_of; v = v->alias_of)
    if (v->alias_part) return true;
  return false;
}

bool hc_memory_plan_inplace_ok(const hc_node* n, int input) {
  const hc_op_desc* op = n->op;
  if (!op || input < 0 || input >= n->num_inputs || n->num_outputs < 1 || (op->flags & HC_OP_VIEW)) return false;
  /* A part's bytes are a slice of a larger root: an output over them would
   * be placed at the root's offset (and the verifier pairs equal blocks). */
  if (n->inputs[input] && in_concat_part(n->inputs[input])) return false;
  /* The shared generator computes out[i] from operand elements at index i
   * (broadcast ones excepted) and stores it after loading them. */
  bool generator = (op->flags & HC_OP_ELEMENTWISE) && op->scalar && !op->lower && n->num_fused == 0;
  /* A kernel with its own plan said so for this input and target
   * (hc_op_desc.inplace_input, recorded when planning). */
  bool kernel = op->inplace_input && input < 32 && (n->inplace_inputs & (1u << input));
  if (!generator && !kernel && !(op->flags & HC_OP_INPLACE_OK)) return false;
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
  int first, last; /* steps, as in the file comment */
  int ident; /* deterministic tie-break: chain head id; workspaces and dims slots after all values */
} block;

/* Blocks that may be live together with each block (compressed rows). */
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

/* Whether a has ended before b starts in every execution: a's last step
 * comes before b's first step in one lane of one super-step. */
static bool ends_before(const block* a, const block* b, const exec_steps* S) {
  return S->sg[a->last] == S->sg[b->first] && S->lane[a->last] == S->lane[b->first] && a->last < b->first;
}

/* Whether two blocks may be live at the same moment (see the file comment). */
static bool live_together(const block* a, const block* b, const exec_steps* S) {
  if (S->sg[a->last] < S->sg[b->first] || S->sg[b->last] < S->sg[a->first]) return false;
  return !ends_before(a, b, S) && !ends_before(b, a, S);
}

static hx_status_t conflicts_build(const block* b, int nb, const exec_steps* S, conflicts* c) {
  c->start = calloc((size_t)nb + 1, sizeof(int));
  sort_key* k = malloc(sizeof(sort_key) * (size_t)(nb ? nb : 1));
  c->list = NULL;
  if (!c->start || !k) {
    free(k);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory building the conflict graph");
  }
  /* Sweep in order of first super-step: only j with first_sg_j <= last_sg_i
   * can meet i (first_sg_j >= first_sg_i); live_together decides. Two
   * rounds: count, then fill. */
  for (int i = 0; i < nb; ++i) k[i] = (sort_key){S->sg[b[i].first], 0, 0, i};
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
      for (int z = a + 1; z < nb && S->sg[b[k[z].idx].first] <= S->sg[b[i].last]; ++z) {
        int j = k[z].idx;
        if (!live_together(&b[i], &b[j], S)) continue;
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

/* The lower bound (see the file comment): over all super-steps G, the
 * blocks live across all of G plus, for each lane of G, the most bytes of
 * that lane's blocks live at one of its steps. A block contributes to the
 * super-steps strictly inside its range as "through", and to its first and
 * last super-steps as an interval of one lane: from its first step (or the
 * start of G) to its last step (or the end of G, also when its last step is
 * in another lane of G, i.e. it was widened to the group's end). */
static hx_status_t lower_bound(const block* b, int nb, const exec_steps* S, uint64_t* out) {
  *out = 0;
  if (S->num_sg == 0 || nb == 0) return HX_OK;
  int64_t* through = calloc((size_t)S->num_sg + 1, sizeof(int64_t));
  int64_t* lanes = calloc((size_t)S->num_sg, sizeof(int64_t)); /* sum of the lanes' busiest steps */
  sort_key* ev = malloc(sizeof(sort_key) * 4 * (size_t)nb);
  int64_t* delta = malloc(sizeof(int64_t) * 4 * (size_t)nb);
  if (!through || !lanes || !ev || !delta) {
    free(through);
    free(lanes);
    free(ev);
    free(delta);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory computing the lower bound");
  }
  int ne = 0;
  /* An interval [lo, hi] of lane `lane` in super-step g: +size at lo, -size
   * after hi (removals sort before additions at the same step). */
#define LANE_INTERVAL(g, lane, lo, hi, size)                            \
  do {                                                                  \
    ev[ne] = (sort_key){(g), (lane), 2 * (int64_t)(lo) + 1, ne};        \
    delta[ne++] = (int64_t)(size);                                      \
    ev[ne] = (sort_key){(g), (lane), 2 * ((int64_t)(hi) + 1), ne};      \
    delta[ne++] = -(int64_t)(size);                                     \
  } while (0)
  for (int i = 0; i < nb; ++i) {
    if (!b[i].size) continue;
    int f = b[i].first, l = b[i].last, gf = S->sg[f], gl = S->sg[l];
    if (gl - gf >= 2) {
      through[gf + 1] += (int64_t)b[i].size;
      through[gl] -= (int64_t)b[i].size;
    }
    if (gf == gl) {
      LANE_INTERVAL(gf, S->lane[f], f, S->lane[l] == S->lane[f] ? l : S->end[f], b[i].size);
    } else {
      LANE_INTERVAL(gf, S->lane[f], f, S->end[f], b[i].size);
      LANE_INTERVAL(gl, S->lane[l], S->start[l], l, b[i].size);
    }
  }
#undef LANE_INTERVAL
  qsort(ev, (size_t)ne, sizeof(sort_key), cmp_keys);
  int64_t live = 0, busiest = 0;
  for (int e = 0; e < ne; ++e) {
    bool new_lane = e == 0 || ev[e].k1 != ev[e - 1].k1 || ev[e].k2 != ev[e - 1].k2;
    if (new_lane && e > 0) lanes[ev[e - 1].k1] += busiest;
    if (new_lane) live = busiest = 0;
    live += delta[ev[e].idx];
    if (live > busiest) busiest = live;
  }
  if (ne > 0) lanes[ev[ne - 1].k1] += busiest;
  int64_t thr = 0;
  uint64_t best = 0;
  for (int g = 0; g < S->num_sg; ++g) {
    thr += through[g];
    if ((uint64_t)(thr + lanes[g]) > best) best = (uint64_t)(thr + lanes[g]);
  }
  free(through);
  free(lanes);
  free(ev);
  free(delta);
  *out = best;
  return HX_OK;
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
static hx_status_t choose_packing(hc_pass_ctx* ctx, const block* b, int nb, const exec_steps* S, uint64_t lower,
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
  if (st == HX_OK) st = conflicts_build(b, nb, S, &c);
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
      st = make_order(b, nb, S->n, &c, k_heuristics[h].order, order);
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

/* Bytes live at each step in the order run serially, for concat_in_place:
 * every arena tensor (storage roots; graph outputs are the caller's) from
 * its first writer to its last reader, and each node's workspace while it
 * runs; no in-place chains, no groups. */
typedef struct live_profile {
  int steps;
  int* first; /* by value id: first step writing its bytes, or -1 */
  int* last;  /* by value id: last step reading or writing them */
  int64_t* live;
} live_profile;

static bool profile_root(const hc_value* v) {
  return v->kind == HC_VALUE_INTERMEDIATE && !v->alias_of && !v->is_output && v->producer && !v->producer->dead;
}

static void profile_add(live_profile* P, int f, int l, int64_t bytes) {
  for (int t = f < 0 ? 0 : f; t <= l && t < P->steps; ++t) P->live[t] += bytes;
}

static hx_status_t profile_init(const hc_graph* g, live_profile* P) {
  P->steps = g->num_nodes;
  P->first = malloc(sizeof(int) * ((size_t)g->num_values + 1));
  P->last = malloc(sizeof(int) * ((size_t)g->num_values + 1));
  P->live = calloc((size_t)g->num_nodes + 1, sizeof(int64_t));
  if (!P->first || !P->last || !P->live) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory planning memory");
  for (int i = 0; i < g->num_values; ++i) P->first[i] = P->last[i] = -1;
  for (int s = 0; s < g->num_nodes; ++s) {
    const hc_node* n = g->nodes[s];
    for (int pass = 0; pass < 2; ++pass)
      for (int j = 0; j < (pass ? n->num_inputs : n->num_outputs); ++j) {
        const hc_value* v = pass ? n->inputs[j] : n->outputs[j];
        if (!v || v->kind == HC_VALUE_CONST) continue;
        int r = croot_of(v)->id;
        if (!pass && P->first[r] < 0) P->first[r] = s;
        if (P->last[r] < s) P->last[r] = s;
      }
  }
  for (int i = 0; i < g->num_values; ++i)
    if (profile_root(g->values[i]) && P->first[i] >= 0)
      profile_add(P, P->first[i], P->last[i], (int64_t)hc_value_nbytes(g->values[i]));
  for (int s = 0; s < g->num_nodes; ++s)
    if (g->nodes[s]->op->workspace) profile_add(P, s, s, (int64_t)g->nodes[s]->op->workspace(g->nodes[s]));
  return HX_OK;
}

static int64_t profile_peak(const live_profile* P) {
  int64_t peak = 0;
  for (int t = 0; t < P->steps; ++t)
    if (P->live[t] > peak) peak = P->live[t];
  return peak;
}

/* Concat node n's inputs as parts of its output y in the profile (sign +1),
 * or undone (-1): each input's own interval goes, y's grows to cover them. */
static void profile_apply(live_profile* P, const hc_node* n, int sign) {
  const hc_value* y = n->outputs[0];
  int f = P->first[y->id], l = P->last[y->id];
  int64_t ys = profile_root(y) ? (int64_t)hc_value_nbytes(y) : 0;
  for (int i = 0; i < n->num_inputs; ++i) {
    const hc_value* x = n->inputs[i];
    profile_add(P, P->first[x->id], P->last[x->id], -sign * (int64_t)hc_value_nbytes(x));
    if (P->first[x->id] < f) f = P->first[x->id];
    if (P->last[x->id] > l) l = P->last[x->id];
  }
  profile_add(P, P->first[y->id], P->last[y->id], -sign * ys);
  profile_add(P, f, l, sign * ys);
}

/* Concat in place (file comment). The inputs of a Concat node n become parts
 * of its output when:
 *  - every dimension of the output before the axis is 1 (each input is one
 *    contiguous block of it), and each part starts 64-byte aligned;
 *  - the output is an intermediate of a static shape (a graph output too:
 *    the parts are then written into the caller's buffer), and each input an
 *    intermediate of a static shape produced by a live node that is not a
 *    graph output, not a view or another Concat's part already, and appears
 *    once among n's inputs;
 *  - n is not in a parallel group; the parts' producers may be, in any
 *    lanes (the output is then live from the start of that group);
 *  - it does not raise the peak: the output is live from the first part's
 *    producer on, so a part produced later holds its bytes early. The bytes
 *    live at each step, run serially (live_profile), must stay within the
 *    peak they had with the copy. A UNet skip connection whose decoder half
 *    would be held through the memory-heavy middle keeps its copy; where the
 *    Concat itself is the peak (its inputs and output live together), in
 *    place lowers it.
 * Parts are chosen in schedule order, so a Concat's output can itself be a
 * part of a later Concat (offsets add up). */
static hx_status_t concat_in_place(hc_graph* g, int* out_parts) {
  int parts = 0;
  live_profile P = {0};
  hx_status_t st = profile_init(g, &P);
  for (int s = 0; st == HX_OK && s < g->num_nodes; ++s) {
    hc_node* n = g->nodes[s];
    if (n->dead || !n->op || strcmp(n->op->name, "Concat") || n->op->domain[0] || n->num_outputs != 1 || n->group)
      continue;
    hc_value* y = n->outputs[0];
    if (!y || y->kind != HC_VALUE_INTERMEDIATE || y->dynamic || y->alias_of || y->rank < 1) continue;
    int64_t axis = hc_attr_int(n, "axis", 0);
    if (axis < 0) axis += y->rank;
    if (axis < 0 || axis >= y->rank) continue;
    bool ok = true;
    for (int d = 0; d < axis; ++d)
      if (y->dims[d] != 1) ok = false;
    uint64_t offset = 0;
    for (int i = 0; ok && i < n->num_inputs; ++i) {
      const hc_value* x = n->inputs[i];
      if (!x || x->kind != HC_VALUE_INTERMEDIATE || x->is_output || x->dynamic || x->alias_of || !x->producer ||
          x->producer->dead || offset % HC_ALIGN != 0) {
        ok = false;
        break;
      }
      for (int j = 0; j < i; ++j)
        if (n->inputs[j] == x) ok = false;
      offset += hc_value_nbytes(x);
    }
    if (!ok || n->num_inputs < 1 || offset != hc_value_nbytes(y)) continue;
    int64_t peak = profile_peak(&P);
    profile_apply(&P, n, +1);
    if (profile_peak(&P) > peak) {
      profile_apply(&P, n, -1);
      continue;
    }
    for (int i = 0; i < n->num_inputs; ++i) {
      if (P.first[n->inputs[i]->id] < P.first[y->id]) P.first[y->id] = P.first[n->inputs[i]->id];
      if (P.last[n->inputs[i]->id] > P.last[y->id]) P.last[y->id] = P.last[n->inputs[i]->id];
    }
    offset = 0;
    for (int i = 0; i < n->num_inputs; ++i) {
      hc_value* x = n->inputs[i];
      x->alias_of = y;
      x->alias_offset = offset;
      x->alias_part = true;
      offset += hc_value_nbytes(x);
      ++parts;
    }
  }
  free(P.first);
  free(P.last);
  free(P.live);
  *out_parts = parts;
  return st;
}

/* One plan of g, with Concat inputs in place (concat_in_place) or not. */
static hx_status_t plan_memory(hc_pass_ctx* ctx, hc_graph* g, bool concat) {
  /* Reset: passes may have run before. */
  for (int i = 0; i < g->num_values; ++i) {
    hc_value* v = g->values[i];
    v->storage.base = -1;
    v->storage.offset = 0;
    v->alias_of = NULL;
    v->alias_offset = 0;
    v->alias_part = false;
    v->live_first = v->live_last = -1;
  }
  for (int i = 0; i < g->num_inputs; ++i) g->inputs[i]->storage.base = HX_BASE_FIRST_IO + i;
  for (int i = 0; i < g->num_outputs; ++i) g->outputs[i]->storage.base = HX_BASE_FIRST_IO + g->num_inputs + i;

  /* Views alias their input; every constant a node reads lives in the
   * weights blob (passes/weights_layout.c). */
  for (int s = 0; s < g->num_nodes; ++s) {
    hc_node* n = g->nodes[s];
    if ((n->op->flags & HC_OP_VIEW) && n->outputs[0] && n->outputs[0]->kind != HC_VALUE_CONST)
      n->outputs[0]->alias_of = n->inputs[0];
    for (int j = 0; j < n->num_inputs; ++j) {
      hc_value* v = n->inputs[j];
      if (v && v->kind == HC_VALUE_CONST && v->storage.base < 0) v->storage.base = HX_BASE_WEIGHTS;
    }
  }
  HX_RETURN_IF_ERROR(hc_weights_layout(&g, 1, &ctx->weights_bytes));
  ctx->memplan.concat_parts = 0;
  if (concat) HX_RETURN_IF_ERROR(concat_in_place(g, &ctx->memplan.concat_parts));
  /* Which epilogue operands each kernel, as lowered for this target, may
   * overwrite (views are known now: the op compares storage roots). */
  for (int s = 0; s < g->num_nodes; ++s) {
    hc_node* n = g->nodes[s];
    n->inplace_inputs = 0;
    if (!n->op->inplace_input || ctx->memplan_no_inplace) continue;
    for (int k = 0; k < n->num_inputs && k < 32; ++k)
      if (n->inputs[k] && n->op->inplace_input(ctx->target, n, k)) n->inplace_inputs |= 1u << k;
  }

  liveness L;
  HX_RETURN_IF_ERROR(liveness_compute(g, &L));
  const int nv = g->num_values, steps = g->num_nodes;
  int* head = malloc(sizeof(int) * ((size_t)nv + 1));     /* in-place chain head of each value */
  int* block_of = malloc(sizeof(int) * ((size_t)nv + 1)); /* block of each chain head */
  block* blocks = calloc(2 * (size_t)nv + (size_t)steps + 1, sizeof(block));
  block* single = calloc(2 * (size_t)nv + (size_t)steps + 1, sizeof(block));
  uint64_t* offset = malloc(sizeof(uint64_t) * (2 * (size_t)nv + (size_t)steps + 1));
  hx_status_t st = HX_OK;
  if (!head || !block_of || !blocks || !single || !offset) {
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

  /* Blocks: one per chain, then workspaces and dims slots. `single` holds
   * the same blocks with every tensor on its own, for the bound without in
   * place. */
  int nb = 0, ns = 0;
  for (int i = 0; i < nv; ++i) {
    hc_value* v = g->values[i];
    if (!arena_candidate(v, &L)) continue;
    uint64_t size = align_up(hc_value_nbytes(v));
    single[ns++] = (block){.value = v, .size = size, .first = L.first[i], .last = L.last[i], .ident = i};
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
  /* A workspace is live while its node runs. */
  for (int s = 0; s < steps; ++s) {
    hc_node* n = g->nodes[s];
    n->workspace_bytes = n->op->workspace ? n->op->workspace(n) : 0;
    n->workspace_offset = 0;
    if (!n->workspace_bytes) continue;
    uint64_t size = align_up(n->workspace_bytes);
    blocks[nb++] = single[ns++] = (block){.node = n, .size = size, .first = s, .last = s, .ident = nv + s};
  }
  /* Dims slots of value-dependent shapes (compiler/ops/dynamic.h): written
   * by the producing kernel and read by the runtime after the run, so each
   * is live for the whole run. */
  for (int i = 0; i < nv; ++i) {
    hc_value* v = g->values[i];
    if (!dims_slot_owner(v) || steps == 0) continue;
    uint64_t size = dims_slot_bytes(v);
    blocks[nb++] = single[ns++] =
        (block){.dims_of = v, .size = size, .first = 0, .last = steps - 1, .ident = nv + steps + i};
  }
  uint64_t lower = 0, bound_no_inplace = 0, bound_sequential = 0;
  st = lower_bound(blocks, nb, &L.S, &lower);
  if (st == HX_OK) st = lower_bound(single, ns, &L.S, &bound_no_inplace);
  if (st != HX_OK) goto done;

  /* What the parallel groups cost: the bound of the same blocks with every
   * node a super-step of its own (first = producer, last = last reader, not
   * widened). */
  {
    memcpy(single, blocks, sizeof(block) * (size_t)nb);
    for (int b = 0; b < nb; ++b)
      if (single[b].value) single[b].first = steps, single[b].last = -1;
    for (int i = 0; i < nv; ++i) {
      hc_value* v = g->values[i];
      if (!arena_candidate(v, &L)) continue;
      block* b = &single[block_of[head[i]]];
      int first = L.written[i];
      int last = L.last_read[i] > first ? L.last_read[i] : first;
      if (first < b->first) b->first = first;
      if (last > b->last) b->last = last;
    }
    exec_steps serial;
    st = steps_init(g, false, &serial);
    if (st == HX_OK) st = lower_bound(single, nb, &serial, &bound_sequential);
    steps_free(&serial);
    if (st != HX_OK) goto done;
  }

  uint64_t arena = 0;
  st = choose_packing(ctx, blocks, nb, &L.S, lower, offset, &arena);
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

done:
  liveness_free(&L);
  free(head);
  free(block_of);
  free(blocks);
  free(single);
  free(offset);
  return st;
}

/* The plan: at -O2 and up with Concat inputs in place where that does not
 * make the arena larger than the plan that copies them (concat_in_place
 * judges by an estimate; the packed arena decides), else without. */
static hx_status_t run_memory_plan(hc_pass_ctx* ctx, hc_graph* g) {
  bool concat = ctx->opt_level >= 2;
  HX_RETURN_IF_ERROR(plan_memory(ctx, g, concat));
  if (concat && ctx->memplan.concat_parts) {
    uint64_t with = ctx->arena_bytes;
    HX_RETURN_IF_ERROR(plan_memory(ctx, g, false));
    if (with <= ctx->arena_bytes) HX_RETURN_IF_ERROR(plan_memory(ctx, g, true));
  }
  if (ctx->verbose && ctx->log) {
    uint64_t arena = ctx->arena_bytes, lower = ctx->arena_lower_bound;
    double over = lower ? 100.0 * ((double)arena - (double)lower) / (double)lower : 0;
    fprintf(ctx->log,
            "memory-plan: arena %llu bytes (lower bound %llu, +%.2f%%; %s of %d heuristics), %d outputs in place "
            "(bound without: %llu), bound without parallel groups %llu, %d Concat inputs written in place, "
            "weights %llu bytes\n",
            (unsigned long long)arena, (unsigned long long)lower, over, ctx->memplan.heuristic[ctx->memplan.chosen],
            ctx->memplan.num_heuristics, ctx->memplan.inplace,
            (unsigned long long)ctx->memplan.lower_bound_no_inplace,
            (unsigned long long)ctx->memplan.lower_bound_sequential, ctx->memplan.concat_parts,
            (unsigned long long)ctx->weights_bytes);
  }
  return HX_OK;
}

/* ---- verifier ----------------------------------------------------------- */

/* The verifier's model, derived from the graph and the executor's rules
 * (runtime/executor.c) without the planner's lifetimes: super-steps run one
 * after another; within a group, each lane runs its steps in order and the
 * lanes are independent. A moment of super-step G is, for each lane of G,
 * the step it is running (or none yet, or all done). An arena item is live
 * from when its start step starts until every one of its reader steps has
 * finished. Two items may share bytes only if no moment has both live, or
 * they belong to one legal in-place chain. */
typedef struct vitem {
  const hc_value* value;
  const hc_node* node;     /* workspace owner */
  const hc_value* dims_of; /* dims slot owner */
  uint64_t offset, size;
  int start;            /* producer (or workspace owner) step; -1 = live before the first step */
  bool wide_start;      /* also written in another lane of start's group: live from the group's start */
  int end_sg;           /* super-step of its last reader; INT_MAX = live after the last step */
  int rd_begin, rd_end; /* its reader steps (the producer's included) in the reader list */
} vitem;

static const char* vitem_name(const vitem* x) {
  return x->value ? x->value->name : x->node ? x->node->name : x->dims_of->name;
}

/* Whether, at some moment of super-step G, a lane position satisfies every
 * start (running or done: lane position >= step) and end (not finished:
 * position <= step) constraint given; steps < 0 are absent. */
static bool v_feasible(const exec_steps* S, int G, int sa, int ea, int sb, int eb) {
  int lo[2] = {sa >= 0 && S->sg[sa] == G ? sa : -1, sb >= 0 && S->sg[sb] == G ? sb : -1};
  int hi[2] = {ea, eb};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      if (lo[i] >= 0 && hi[j] >= 0 && S->lane[lo[i]] == S->lane[hi[j]] && lo[i] > hi[j]) return false;
  return true;
}

/* Whether a and b are both live at some moment of super-step G (both have
 * started by G and neither ended before it): an item that has a reader
 * after G is live to the end of G; otherwise one of its readers in G must
 * not have finished. */
static bool v_moment(const exec_steps* S, int G, const vitem* a, const vitem* b, const int* rd) {
  bool a_open = a->end_sg > G, b_open = b->end_sg > G;
  for (int x = a_open ? -1 : a->rd_begin; x < (a_open ? 0 : a->rd_end); ++x) {
    int ea = x < 0 ? -1 : rd[x];
    if (ea >= 0 && S->sg[ea] != G) continue;
    for (int y = b_open ? -1 : b->rd_begin; y < (b_open ? 0 : b->rd_end); ++y) {
      int eb = y < 0 ? -1 : rd[y];
      if (eb >= 0 && S->sg[eb] != G) continue;
      int sa = a->wide_start && S->sg[a->start] == G ? -1 : a->start;
      int sb = b->wide_start && S->sg[b->start] == G ? -1 : b->start;
      if (v_feasible(S, G, sa, ea, sb, eb)) return true;
    }
  }
  return false;
}

static bool v_live_together(const exec_steps* S, const vitem* a, const vitem* b, const int* rd) {
  long long ga = a->start < 0 ? -1 : S->sg[a->start], gb = b->start < 0 ? -1 : S->sg[b->start];
  long long g0 = ga > gb ? ga : gb, g1 = a->end_sg < b->end_sg ? a->end_sg : b->end_sg;
  if (g0 < 0) g0 = 0;
  if (g1 >= S->num_sg) g1 = S->num_sg - 1;
  if (g0 > g1) return false;
  /* A super-step after both starts and before both ends: live throughout. */
  if (g1 - g0 >= 2) return true;
  for (long long G = g0; G <= g1; ++G)
    if (v_moment(S, (int)G, a, b, rd)) return true;
  return false;
}

/* Whether node nd at step s may have written its output over input k's
 * storage root r (item ri): the op allows it, and every other reader of r
 * finishes before nd starts in every execution (an earlier super-step, or
 * earlier in nd's lane). */
static bool v_inplace_legal(const exec_steps* S, const hc_node* nd, int s, int k, const vitem* ri, const int* rd) {
  if (!hc_memory_plan_inplace_ok(nd, k)) return false;
  const hc_value* r = ri->value;
  if (!r || r->kind != HC_VALUE_INTERMEDIATE || !r->producer || r->producer->dead) return false;
  for (int x = ri->rd_begin; x < ri->rd_end; ++x) {
    int e = rd[x];
    if (e == s) continue;
    bool before = S->sg[e] < S->sg[s] || (S->sg[e] == S->sg[s] && S->lane[e] == S->lane[s] && e < s);
    if (!before) return false;
  }
  return true;
}

static int uf_find(int* parent, int i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

hx_status_t hc_memory_plan_verify(const hc_graph* g, uint64_t arena_bytes) {
  /* Liveness is derived from the graph here, not taken from the planner, so
   * a planner that forgot a reader, a view, a lane or a group is caught. */
  exec_steps S;
  HX_RETURN_IF_ERROR(steps_init(g, true, &S));
  size_t cap = 2 * (size_t)g->num_values + (size_t)g->num_nodes + 1;
  vitem* it = calloc(cap, sizeof(vitem));
  int* parent = malloc(sizeof(int) * cap);
  int* index_of = malloc(sizeof(int) * ((size_t)g->num_values + 1));
  int* count = calloc(cap + 1, sizeof(int));
  int* rd = NULL;
  int n = 0;
  hx_status_t st = HX_OK;
  if (!it || !parent || !index_of || !count) {
    st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory verifying the memory plan");
    goto done;
  }
  /* Items: arena tensors (storage roots), workspaces, dims slots. */
  for (int i = 0; i < g->num_values; ++i) {
    const hc_value* v = g->values[i];
    index_of[i] = -1;
    if (v->alias_of || v->storage.base != HX_BASE_ARENA) continue;
    index_of[i] = n;
    it[n++] = (vitem){.value = v, .offset = v->storage.offset, .size = hc_value_nbytes(v), .start = -2};
  }
  for (int s = 0; s < g->num_nodes; ++s) {
    const hc_node* nd = g->nodes[s];
    for (int j = 0; j < nd->num_outputs; ++j) {
      /* The first node writing its bytes: its producer, or the producer of
       * an in-place Concat part (a view's producer writes nothing). */
      const hc_value* v = nd->outputs[j];
      if (!v || v->kind == HC_VALUE_CONST || (v->alias_of && !in_concat_part(v))) continue;
      int x = index_of[croot_of(v)->id];
      if (x >= 0 && it[x].start == -2) it[x].start = s;
      else if (x >= 0 && S.sg[it[x].start] == S.sg[s] && S.lane[it[x].start] != S.lane[s]) it[x].wide_start = true;
    }
  }
  for (int i = 0; i < n; ++i)
    if (it[i].start < 0) {
      st = hx_status_make(HX_STATUS_INTERNAL, "memory plan: '%s' is in the arena but no node produces it",
                          it[i].value->name);
      goto done;
    }
  int nvals = n;
  for (int s = 0; s < g->num_nodes; ++s) {
    const hc_node* nd = g->nodes[s];
    if (!nd->workspace_bytes) continue;
    it[n++] = (vitem){.node = nd, .offset = nd->workspace_offset, .size = nd->workspace_bytes, .start = s};
  }
  for (int i = 0; i < g->num_values && g->num_nodes > 0; ++i) {
    const hc_value* v = g->values[i];
    if (!dims_slot_owner(v)) continue;
    it[n++] = (vitem){.dims_of = v, .offset = v->dyn_dims_offset, .size = dims_slot_bytes(v), .start = -1};
  }
  /* Reader steps of each item: the producer, every node reading the tensor
   * or a view of it; a workspace's node. Two rounds: count, then fill. */
  for (int round = 0; round < 2; ++round) {
    if (round == 1) {
      for (int i = 0; i < n; ++i) count[i + 1] += count[i];
      rd = malloc(sizeof(int) * (size_t)(count[n] ? count[n] : 1));
      if (!rd) {
        st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory verifying the memory plan");
        goto done;
      }
      for (int i = 0; i < n; ++i) it[i].rd_begin = it[i].rd_end = count[i];
    }
    for (int i = 0; i < n; ++i) {
      if (it[i].start < 0) continue;
      if (round == 0) count[i + 1]++;
      else rd[it[i].rd_end++] = it[i].start;
    }
    for (int s = 0; s < g->num_nodes; ++s) {
      const hc_node* nd = g->nodes[s];
      for (int j = 0; j < nd->num_inputs; ++j) {
        if (!nd->inputs[j]) continue;
        int x = index_of[croot_of(nd->inputs[j])->id];
        if (x < 0) continue;
        if (round == 0) count[x + 1]++;
        else rd[it[x].rd_end++] = s;
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    it[i].end_sg = it[i].dims_of ? INT_MAX : -1;
    for (int x = it[i].rd_begin; x < it[i].rd_end; ++x)
      if (S.sg[rd[x]] > it[i].end_sg) it[i].end_sg = S.sg[rd[x]];
  }
  /* Recorded lifetimes (the manifest's first/last) must cover the real
   * ones under the documented rule: first at or before the producer, last at
   * or after the last reader, the group's last step when the readers of that
   * group are in several lanes, and never in another lane of the same group
   * (a reader of the JSON compares lanes there). */
  for (int i = 0; i < nvals && st == HX_OK; ++i) {
    const vitem* x = &it[i];
    int last = x->start, multi = 0;
    for (int k = x->rd_begin; k < x->rd_end; ++k)
      if (rd[k] > last) last = rd[k];
    for (int k = x->rd_begin; k < x->rd_end; ++k)
      if (S.sg[rd[k]] == S.sg[last] && S.lane[rd[k]] != S.lane[last]) multi = 1;
    if (multi) last = S.end[last];
    int rf = x->value->live_first, rl = x->value->live_last;
    bool ok = rf >= 0 && rf <= x->start && rl >= last && rl < g->num_nodes;
    if (ok && S.sg[rl] == S.sg[last] && rl != S.end[rl] && S.lane[rl] != S.lane[last]) ok = false;
    if (ok && S.sg[rf] == S.sg[x->start] && rf != S.start[rf] && S.lane[rf] != S.lane[x->start]) ok = false;
    if (!ok)
      st = hx_status_make(HX_STATUS_INTERNAL,
                          "memory plan: '%s' is recorded live over steps %d..%d but is live over %d..%d%s",
                          x->value->name, rf, rl, x->start, last, multi ? " (read by several lanes of a group)" : "");
  }
  if (st != HX_OK) goto done;
  /* In-place pairs: an output on its input's bytes, legal by the op and by
   * the model above. Such pairs (and chains of them) may share bytes while
   * live together. */
  for (int i = 0; i < n; ++i) parent[i] = i;
  for (int s = 0; s < g->num_nodes; ++s) {
    const hc_node* nd = g->nodes[s];
    const hc_value* out = nd->num_outputs ? nd->outputs[0] : NULL;
    if (!out || out->alias_of || index_of[out->id] < 0) continue;
    int oi = index_of[out->id];
    for (int k = 0; k < nd->num_inputs; ++k) {
      if (!nd->inputs[k]) continue;
      int ri = index_of[croot_of(nd->inputs[k])->id];
      if (ri < 0 || ri == oi || it[ri].offset != it[oi].offset || it[ri].size != it[oi].size ||
          !v_inplace_legal(&S, nd, s, k, &it[ri], rd))
        continue;
      parent[uf_find(parent, oi)] = uf_find(parent, ri);
    }
  }
  for (int i = 0; i < n && st == HX_OK; ++i) {
    if (it[i].offset % HC_ALIGN != 0 || it[i].offset + it[i].size > arena_bytes)
      st = hx_status_make(HX_STATUS_INTERNAL, "memory plan: '%s' is misplaced (offset %llu, size %llu, arena %llu)",
                          vitem_name(&it[i]), (unsigned long long)it[i].offset, (unsigned long long)it[i].size,
                          (unsigned long long)arena_bytes);
    for (int j = i + 1; j < n && st == HX_OK; ++j) {
      if (!it[i].size || !it[j].size) continue;
      if (!(it[i].offset < it[j].offset + it[j].size && it[j].offset < it[i].offset + it[i].size)) continue;
      if (uf_find(parent, i) == uf_find(parent, j) || !v_live_together(&S, &it[i], &it[j], rd)) continue;
      st = hx_status_make(HX_STATUS_INTERNAL, "memory plan: '%s' and '%s' are live together but overlap",
                          vitem_name(&it[i]), vitem_name(&it[j]));
    }
  }

done:
  steps_free(&S);
  free(it);
  free(parent);
  free(index_of);
  free(count);
  free(rd);
  return st;
}

const hc_pass hc_pass_memory_plan = {"memory-plan", "assign every tensor a static place (arena, weights, I/O)",
                                     run_memory_plan};
