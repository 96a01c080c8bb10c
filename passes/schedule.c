/* Scheduling: the final kernel order and its parallel groups.
 *
 * Rejects cyclic graphs (Tarjan SCC, naming a node of each cycle), then
 * orders nodes topologically and marks independent branches for concurrent
 * execution:
 *
 *  1. Chains. A node continues its predecessor's chain when it has exactly
 *     one predecessor node and is that node's only consumer; otherwise it
 *     starts a chain. A chain is a straight run of dependent nodes (an
 *     Inception branch, one projection of an attention block...).
 *  2. Levels. A chain's level is one more than the highest level of the
 *     chains its head reads from. Chains on one level cannot reach each other
 *     (a path would raise the level), so they are independent.
 *  3. Groups. Nodes are ordered by (level, chain, position in chain). A level
 *     with two or more chains that emit code becomes one parallel group with
 *     one lane per chain; a level with a single chain stays plain sequential
 *     steps, so linear networks keep their memory plan and schedule.
 *
 * Memory planning (memory_plan.c) treats a whole group as one step for
 * liveness, so tensors of concurrently running lanes never share bytes. */
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/op.h"
#include "passes/pass.h"

/* Distinct live producer nodes of n's non-constant inputs. */
static int count_preds(const hc_node* n, int* out_single) {
  int count = 0, first = -1;
  for (int j = 0; j < n->num_inputs; ++j) {
    const hc_value* v = n->inputs[j];
    if (!v || v->kind == HC_VALUE_CONST || !v->producer || v->producer->dead) continue;
    int p = v->producer->id;
    if (count == 0) {
      first = p;
      count = 1;
    } else if (p != first) {
      /* Only "one" versus "more than one" matters. */
      count = 2;
      break;
    }
  }
  *out_single = first;
  return count;
}

/* Where a node goes in the final order: its chain's level, its chain, its
 * position in the chain. */
typedef struct sched_key {
  int level, chain, index;
  hc_node* node;
} sched_key;

static int cmp_keys(const void* a, const void* b) {
  const sched_key *x = a, *y = b;
  if (x->level != y->level) return x->level < y->level ? -1 : 1;
  if (x->chain != y->chain) return x->chain < y->chain ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static hx_status_t run_schedule(hc_pass_ctx* ctx, hc_graph* g) {
  HX_RETURN_IF_ERROR(hc_graph_check_acyclic(g));
  HX_RETURN_IF_ERROR(hc_graph_sort(g)); /* compacts; ids are positions */
  const int n = g->num_nodes;
  for (int i = 0; i < n; ++i) g->nodes[i]->group = g->nodes[i]->lane = 0;
  if (n < 2) return HX_OK;

  int* consumers = calloc((size_t)n, sizeof(int)); /* distinct consumer nodes, capped at 2 */
  int* last_consumer = malloc(sizeof(int) * (size_t)n);
  int* chain_of = malloc(sizeof(int) * (size_t)n);
  int* chain_level = malloc(sizeof(int) * (size_t)n);
  int* chain_code = calloc((size_t)n, sizeof(int)); /* chain has a node that emits code */
  sched_key* keys = malloc(sizeof(sched_key) * (size_t)n);
  if (!consumers || !last_consumer || !chain_of || !chain_level || !chain_code || !keys) {
    free(consumers);
    free(last_consumer);
    free(chain_of);
    free(chain_level);
    free(chain_code);
    free(keys);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory scheduling");
  }
  for (int i = 0; i < n; ++i) last_consumer[i] = -1;
  for (int i = 0; i < n; ++i) {
    const hc_node* c = g->nodes[i];
    for (int j = 0; j < c->num_inputs; ++j) {
      const hc_value* v = c->inputs[j];
      if (!v || v->kind == HC_VALUE_CONST || !v->producer || v->producer->dead) continue;
      int p = v->producer->id;
      if (last_consumer[p] == i) continue;
      last_consumer[p] = i;
      if (consumers[p] < 2) consumers[p]++;
    }
  }

  int num_chains = 0, max_level = 0;
  for (int i = 0; i < n; ++i) {
    const hc_node* nd = g->nodes[i];
    int single;
    int np = count_preds(nd, &single);
    if (np == 1 && consumers[single] == 1) {
      chain_of[i] = chain_of[single];
      keys[i].index = keys[single].index + 1;
    } else {
      int c = num_chains++;
      chain_of[i] = c;
      keys[i].index = 0;
      int level = 0;
      for (int j = 0; j < nd->num_inputs; ++j) {
        const hc_value* v = nd->inputs[j];
        if (!v || v->kind == HC_VALUE_CONST || !v->producer || v->producer->dead) continue;
        int l = chain_level[chain_of[v->producer->id]] + 1;
        if (l > level) level = l;
      }
      chain_level[c] = level;
      if (level > max_level) max_level = level;
    }
    if (!(nd->op && (nd->op->flags & HC_OP_VIEW))) chain_code[chain_of[i]] = 1;
  }
  for (int i = 0; i < n; ++i) {
    keys[i].chain = chain_of[i];
    keys[i].level = chain_level[chain_of[i]];
    keys[i].node = g->nodes[i];
  }

  /* Reorder by (level, chain, position): topological, since a chain's head
   * reads only lower levels and a chain's nodes follow each other. */
  qsort(keys, (size_t)n, sizeof(sched_key), cmp_keys);
  for (int i = 0; i < n; ++i) {
    g->nodes[i] = keys[i].node;
    g->nodes[i]->id = i;
  }

  /* A level with at least two code-emitting chains becomes a parallel group;
   * lanes are numbered by chain order within the level. */
  int group_id = 0;
  for (int s = 0; s < n;) {
    int e = s, code_chains = 0, prev_chain = -1;
    while (e < n && keys[e].level == keys[s].level) {
      if (keys[e].chain != prev_chain && chain_code[keys[e].chain]) code_chains++;
      prev_chain = keys[e].chain;
      ++e;
    }
    if (code_chains >= 2) {
      ++group_id;
      int lane = -1;
      prev_chain = -1;
      for (int k = s; k < e; ++k) {
        if (keys[k].chain != prev_chain) ++lane;
        prev_chain = keys[k].chain;
        g->nodes[k]->group = group_id;
        g->nodes[k]->lane = lane;
      }
    }
    s = e;
  }
  if (ctx->verbose && ctx->log)
    fprintf(ctx->log, "schedule: %d nodes, %d chains, %d levels, %d parallel groups\n", n, num_chains, max_level + 1,
            group_id);

  free(consumers);
  free(last_consumer);
  free(chain_of);
  free(chain_level);
  free(chain_code);
  free(keys);
  return hc_schedule_verify(g);
}

hx_status_t hc_schedule_verify(const hc_graph* g) {
  for (int i = 0; i < g->num_nodes; ++i) {
    const hc_node* c = g->nodes[i];
    if (c->id != i) return hx_status_make(HX_STATUS_INTERNAL, "schedule: node '%s' has id %d at step %d", c->name, c->id, i);
    if (c->group < 0 || c->lane < 0 || (c->group == 0 && c->lane != 0))
      return hx_status_make(HX_STATUS_INTERNAL, "schedule: node '%s' has group %d lane %d", c->name, c->group, c->lane);
    if (i > 0 && c->group && g->nodes[i - 1]->group > c->group)
      return hx_status_make(HX_STATUS_INTERNAL, "schedule: group ids decrease at node '%s'", c->name);
    for (int j = 0; j < c->num_inputs; ++j) {
      const hc_value* v = c->inputs[j];
      if (!v || v->kind == HC_VALUE_CONST || !v->producer || v->producer->dead) continue;
      const hc_node* p = v->producer;
      if (p->id >= i)
        return hx_status_make(HX_STATUS_INTERNAL, "schedule: node '%s' runs before its input '%s'", c->name, v->name);
      if (c->group && p->group == c->group && p->lane != c->lane)
        return hx_status_make(HX_STATUS_INTERNAL,
                              "schedule: node '%s' (lane %d) reads '%s' from lane %d of the same parallel group", c->name,
                              c->lane, v->name, p->lane);
    }
  }
  return HX_OK;
}

const hc_pass hc_pass_schedule = {"schedule", "order kernels topologically, mark parallel groups; reject cycles",
                                  run_schedule};
