/* Static memory planning.
 *
 * Every tensor gets a fixed place before run time:
 *  - graph inputs and outputs live in the caller's buffers (bases 2..);
 *  - weights are packed into one 64-byte-aligned blob in first-use order;
 *  - views (Reshape...) alias the tensor they view;
 *  - every other intermediate gets an offset in one 64-byte-aligned arena.
 * Arena offsets come from liveness over the schedule: tensor t occupies
 * [offset, offset+size) from the step of its producer to the step of its
 * last reader (readers of its views included). The kernels of a parallel
 * group (see schedule.c) may run at the same time, so every step of a group
 * counts as the whole group's span [first step, last step]. Tensors whose
 * lifetimes do not overlap may share bytes. Offsets are assigned greedily by decreasing
 * size, each at the lowest aligned address that does not collide with an
 * already placed, simultaneously live tensor. The lower bound (largest sum of
 * simultaneously live bytes) is recorded next to the result. */
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/op.h"
#include "harness/artifact_abi.h"
#include "passes/pass.h"

#define HC_ALIGN 64u

static uint64_t align_up(uint64_t x) { return (x + HC_ALIGN - 1) / HC_ALIGN * HC_ALIGN; }

/* A block to place in the arena: an intermediate tensor or a node workspace. */
typedef struct block {
  hc_value* value; /* NULL for a workspace */
  hc_node* node;   /* owner of a workspace */
  uint64_t size;
  int first, last;
  uint64_t offset;
} block;

static int cmp_blocks(const void* a, const void* b) {
  const block *x = a, *y = b;
  if (x->size != y->size) return x->size > y->size ? -1 : 1;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  int ix = x->value ? x->value->id : -1 - x->node->id, iy = y->value ? y->value->id : -1 - y->node->id;
  return ix < iy ? -1 : ix > iy;
}

static hc_value* root_of(hc_value* v) {
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

static hx_status_t run_memory_plan(hc_pass_ctx* ctx, hc_graph* g) {
  /* Reset: passes may have run before. */
  for (int i = 0; i < g->num_values; ++i) {
    hc_value* v = g->values[i];
    v->storage.base = -1;
    v->storage.offset = 0;
    v->alias_of = NULL;
    v->live_first = v->live_last = -1;
  }
  for (int i = 0; i < g->num_inputs; ++i) {
    g->inputs[i]->storage.base = HX_BASE_FIRST_IO + i;
  }
  for (int i = 0; i < g->num_outputs; ++i) {
    g->outputs[i]->storage.base = HX_BASE_FIRST_IO + g->num_inputs + i;
  }

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

  /* Liveness of arena tensors (roots of view chains). */
  block* blocks = calloc((size_t)g->num_values + (size_t)g->num_nodes + 1, sizeof(block));
  int* first_of = malloc(sizeof(int) * ((size_t)g->num_values + 1));
  int* last_of = malloc(sizeof(int) * ((size_t)g->num_values + 1));
  int* span = group_spans(g);
  if (!blocks || !first_of || !last_of || !span) {
    free(blocks);
    free(first_of);
    free(last_of);
    free(span);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory planning memory");
  }
  for (int i = 0; i < g->num_values; ++i) first_of[i] = last_of[i] = -1;
  for (int s = 0; s < g->num_nodes; ++s) {
    hc_node* n = g->nodes[s];
    for (int j = 0; j < n->num_outputs; ++j) {
      hc_value* v = n->outputs[j];
      if (!v || v->kind == HC_VALUE_CONST) continue;
      hc_value* r = root_of(v);
      if (first_of[r->id] < 0) first_of[r->id] = span[2 * s];
      if (last_of[r->id] < span[2 * s + 1]) last_of[r->id] = span[2 * s + 1];
    }
    for (int j = 0; j < n->num_inputs; ++j) {
      hc_value* v = n->inputs[j];
      if (!v || v->kind == HC_VALUE_CONST) continue;
      hc_value* r = root_of(v);
      if (last_of[r->id] < span[2 * s + 1]) last_of[r->id] = span[2 * s + 1];
    }
  }
  int nb = 0;
  for (int i = 0; i < g->num_values; ++i) {
    hc_value* v = g->values[i];
    if (v->kind != HC_VALUE_INTERMEDIATE || v->alias_of || v->storage.base >= 0 || first_of[i] < 0) continue;
    if (!v->producer || v->producer->dead) continue;
    blocks[nb].value = v;
    blocks[nb].size = align_up(hc_value_nbytes(v));
    blocks[nb].first = first_of[i];
    blocks[nb].last = last_of[i];
    ++nb;
  }
  for (int s = 0; s < g->num_nodes; ++s) {
    hc_node* n = g->nodes[s];
    n->workspace_bytes = n->op->workspace ? n->op->workspace(n) : 0;
    n->workspace_offset = 0;
    if (!n->workspace_bytes) continue;
    blocks[nb].node = n;
    blocks[nb].size = align_up(n->workspace_bytes);
    blocks[nb].first = span[2 * s];
    blocks[nb].last = span[2 * s + 1];
    ++nb;
  }

  /* Lower bound: the most bytes simultaneously live at any step. */
  uint64_t lower = 0;
  {
    int64_t* delta = calloc((size_t)g->num_nodes + 2, sizeof(int64_t));
    if (!delta) {
      free(blocks);
      free(first_of);
      free(last_of);
      free(span);
      return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory planning memory");
    }
    for (int b = 0; b < nb; ++b) {
      delta[blocks[b].first] += (int64_t)blocks[b].size;
      delta[blocks[b].last + 1] -= (int64_t)blocks[b].size;
    }
    int64_t live = 0;
    for (int s = 0; s <= g->num_nodes; ++s) {
      live += delta[s];
      if ((uint64_t)live > lower) lower = (uint64_t)live;
    }
    free(delta);
  }

  /* Greedy by size: each block at the lowest offset free during its life. */
  qsort(blocks, (size_t)nb, sizeof(block), cmp_blocks);
  uint64_t arena = 0;
  int* placed = malloc(sizeof(int) * (size_t)(nb ? nb : 1));
  block* overl = malloc(sizeof(block) * (size_t)(nb ? nb : 1));
  int np = 0;
  hx_status_t st = HX_OK;
  if (!placed || !overl) st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory planning memory");
  for (int b = 0; st == HX_OK && b < nb; ++b) {
    block* cur = &blocks[b];
    /* Collect placed blocks whose lifetimes overlap, sorted by offset. */
    int no = 0;
    for (int k = 0; k < np; ++k) {
      block* o = &blocks[placed[k]];
      if (o->last < cur->first || o->first > cur->last) continue;
      int pos = no++;
      while (pos > 0 && overl[pos - 1].offset > o->offset) {
        overl[pos] = overl[pos - 1];
        --pos;
      }
      overl[pos] = *o;
    }
    uint64_t off = 0;
    for (int k = 0; k < no; ++k) {
      if (off + cur->size <= overl[k].offset) break;
      if (overl[k].offset + overl[k].size > off) off = overl[k].offset + overl[k].size;
    }
    cur->offset = off;
    if (off + cur->size > arena) arena = off + cur->size;
    placed[np++] = b;
  }
  for (int b = 0; st == HX_OK && b < nb; ++b) {
    block* cur = &blocks[b];
    if (cur->value) {
      cur->value->storage.base = HX_BASE_ARENA;
      cur->value->storage.offset = cur->offset;
      cur->value->live_first = cur->first;
      cur->value->live_last = cur->last;
    } else {
      cur->node->workspace_offset = cur->offset;
    }
  }
  /* Values in callers' buffers still get liveness, for the manifest. */
  for (int i = 0; i < g->num_values; ++i) {
    hc_value* v = g->values[i];
    if (v->live_first < 0 && first_of[i] >= 0) {
      v->live_first = first_of[i];
      v->live_last = last_of[i];
    }
  }
  ctx->arena_bytes = arena;
  ctx->arena_lower_bound = lower;
  if (st == HX_OK) st = hc_memory_plan_verify(g, arena);
  if (ctx->verbose && ctx->log)
    fprintf(ctx->log, "memory-plan: arena %llu bytes (lower bound %llu), weights %llu bytes\n",
            (unsigned long long)arena, (unsigned long long)lower, (unsigned long long)wbytes);
  free(placed);
  free(overl);
  free(blocks);
  free(first_of);
  free(last_of);
  free(span);
  return st;
}

hx_status_t hc_memory_plan_verify(const hc_graph* g, uint64_t arena_bytes) {
  /* Gather arena blocks: tensors (roots only) and workspaces. */
  int n = 0;
  block* b = calloc((size_t)g->num_values + (size_t)g->num_nodes + 1, sizeof(block));
  int* span = group_spans(g);
  if (!b || !span) {
    free(b);
    free(span);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory verifying the memory plan");
  }
  for (int i = 0; i < g->num_values; ++i) {
    hc_value* v = g->values[i];
    if (v->alias_of || v->storage.base != HX_BASE_ARENA) continue;
    b[n++] = (block){.value = v, .size = hc_value_nbytes(v), .first = v->live_first, .last = v->live_last,
                     .offset = v->storage.offset};
  }
  for (int s = 0; s < g->num_nodes; ++s) {
    hc_node* nd = g->nodes[s];
    if (!nd->workspace_bytes) continue;
    b[n++] = (block){.node = nd, .size = nd->workspace_bytes, .first = s, .last = s, .offset = nd->workspace_offset};
  }
  /* Widen every lifetime to whole parallel groups, independently of what the
   * planner recorded, so that a planner that forgot a group is caught. */
  for (int i = 0; i < n; ++i) {
    if (b[i].first < 0 || b[i].first >= g->num_nodes || b[i].last < b[i].first || b[i].last >= g->num_nodes) continue;
    b[i].first = span[2 * b[i].first];
    b[i].last = span[2 * b[i].last + 1];
  }
  hx_status_t st = HX_OK;
  for (int i = 0; i < n && st == HX_OK; ++i) {
    const char* name = b[i].value ? b[i].value->name : b[i].node->name;
    if (b[i].offset % HC_ALIGN != 0 || b[i].offset + b[i].size > arena_bytes || b[i].first < 0 || b[i].last < b[i].first)
      st = hx_status_make(HX_STATUS_INTERNAL, "memory plan: '%s' is misplaced (offset %llu, size %llu, arena %llu)", name,
                          (unsigned long long)b[i].offset, (unsigned long long)b[i].size, (unsigned long long)arena_bytes);
    for (int j = i + 1; j < n && st == HX_OK; ++j) {
      bool live_together = !(b[i].last < b[j].first || b[j].last < b[i].first);
      bool overlap = b[i].offset < b[j].offset + b[j].size && b[j].offset < b[i].offset + b[i].size;
      if (live_together && overlap && b[i].size && b[j].size)
        st = hx_status_make(HX_STATUS_INTERNAL, "memory plan: '%s' and '%s' are live together but overlap", name,
                            b[j].value ? b[j].value->name : b[j].node->name);
    }
  }
  free(b);
  free(span);
  return st;
}

const hc_pass hc_pass_memory_plan = {"memory-plan", "assign every tensor a static place (arena, weights, I/O)",
                                     run_memory_plan};
