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
 *  3. Order. Nodes are ordered by (level, chain, position in chain), the
 *     chains of a level (up to five) in the order that keeps the fewest
 *     bytes live when they run one after another (order_level_chains).
 *  4. Groups. A level with two or more chains that emit code is a
 *     candidate parallel group with one lane per chain (unless they are
 *     channel blocks, hc_node.channel_block, which run in order); a level with a
 *     single chain stays plain sequential steps, so linear networks keep
 *     their memory plan and schedule.
 *  5. Memory-aware choice. A candidate becomes a group unless it costs more
 *     memory than it saves time (see decide_group): running lanes at the same
 *     time keeps every lane's tensors live together, which can raise the
 *     arena's peak, while on few threads lanes of well-parallelised kernels
 *     gain almost nothing over running them one after another. The order
 *     is the same either way; only the group and lane marks change.
 *
 * Memory planning (memory_plan.c) then lets tensors of one lane share bytes
 * in step order and keeps tensors of different lanes apart. */
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

/* ---- memory-aware grouping ---------------------------------------------- */

/* The cost model behind decide_group. Kernel time on one thread is the
 * larger of its arithmetic and its memory traffic at these rates; a kernel
 * splits into about one task per HC_SCHED_GRAIN output elements, so it uses
 * min(threads, tasks) threads; each kernel launch costs a fixed overhead
 * (publishing it to the pool and the barrier after it). Only ratios matter,
 * except against the overhead. */
#define HC_SCHED_FLOPS_PER_NS 16.0 /* per thread: about half an AVX2 core's FMA peak */
#define HC_SCHED_BYTES_PER_NS 8.0  /* per thread, from cache and memory */
#define HC_SCHED_LAUNCH_NS 1500.0  /* fork-join of one kernel on the pool */
#define HC_SCHED_GRAIN 4096        /* output elements per task, roughly */
/* A group that raises the estimated peak by at most this fraction of the
 * serial peak is free. */
#define HC_SCHED_FREE_MEMORY 0.01

/* The value whose bytes v's bytes are: views (Reshape...) alias their input. */
static const hc_value* storage_root(const hc_value* v) {
  while (v->producer && !v->producer->dead && v->producer->op && (v->producer->op->flags & HC_OP_VIEW) &&
         v->producer->num_inputs > 0 && v->producer->inputs[0])
    v = v->producer->inputs[0];
  return v;
}

/* Input i's shape-defining value: the unpacked original of a pre-packed
 * weight (its shape is the op's geometry). */
static const hc_value* shape_input(const hc_node* n, int i) {
  if (n->packed && n->packed->input == i && n->packed->original) return n->packed->original;
  return i < n->num_inputs ? n->inputs[i] : NULL;
}

/* Arithmetic of one node, from shapes: 2 flops per multiply-add of Conv,
 * ConvTranspose, Gemm and MatMul; one per output element (and per fused
 * op) for everything else. */
static double node_flops(const hc_node* n) {
  const hc_value* out = n->num_outputs ? n->outputs[0] : NULL;
  if (!out || out->rank < 0) return 0;
  double numel = (double)hc_value_numel(out);
  const hc_value* x = shape_input(n, 0);
  const hc_value* w = shape_input(n, 1);
  bool onnx = !n->domain || !n->domain[0];
  if (onnx && w && w->rank >= 3 && w->dims[0] > 0 && !strcmp(n->op_type, "Conv"))
    return 2 * numel * ((double)hc_value_numel(w) / (double)w->dims[0]);
  if (onnx && x && w && x->rank >= 0 && w->rank >= 3 && w->dims[0] > 0 && !strcmp(n->op_type, "ConvTranspose"))
    return 2 * (double)hc_value_numel(x) * ((double)hc_value_numel(w) / (double)w->dims[0]);
  if (onnx && x && x->rank >= 1 && (!strcmp(n->op_type, "MatMul") || !strcmp(n->op_type, "Gemm"))) {
    bool ta = !strcmp(n->op_type, "Gemm") && x->rank == 2 && hc_attr_int(n, "transA", 0);
    return 2 * numel * (double)(ta ? x->dims[0] : x->dims[x->rank - 1]);
  }
  return numel * (1 + n->num_fused);
}

/* Estimated time (ns) of node n on one thread, and how many threads its
 * kernel can use. Views emit no kernel: zero. */
static double node_time(const hc_node* n, double* out_tasks) {
  *out_tasks = 1;
  if (n->op && (n->op->flags & HC_OP_VIEW)) return 0;
  double bytes = 0;
  for (int j = 0; j < n->num_inputs; ++j)
    if (n->inputs[j] && n->inputs[j]->rank >= 0) bytes += (double)hc_value_nbytes(n->inputs[j]);
  for (int j = 0; j < n->num_outputs; ++j)
    if (n->outputs[j] && n->outputs[j]->rank >= 0) bytes += (double)hc_value_nbytes(n->outputs[j]);
  const hc_value* out = n->num_outputs ? n->outputs[0] : NULL;
  double numel = out && out->rank >= 0 ? (double)hc_value_numel(out) : 1;
  *out_tasks = numel / HC_SCHED_GRAIN > 1 ? numel / HC_SCHED_GRAIN : 1;
  double t_flops = node_flops(n) / HC_SCHED_FLOPS_PER_NS, t_bytes = bytes / HC_SCHED_BYTES_PER_NS;
  return t_flops > t_bytes ? t_flops : t_bytes;
}

/* What decide_group needs, per step of the final order (ids are steps). */
typedef struct sched_est {
  int n, threads;
  const int* chain; /* chain of each step */
  const int* level; /* level of each step */
  double* time;     /* ns on `threads` threads, launch included; 0 for views */
  double* solo;     /* ns on one thread, no launch; 0 for views */
  double* par;      /* threads the kernel can use: min(threads, tasks) */
  double total;     /* the whole schedule, serially */
  /* Storage roots that get arena bytes: size (64-byte aligned), producer
   * and last reader steps, and whether the readers at the last reader's
   * level sit in several chains. Workspaces by step. */
  int num_roots;
  uint64_t* size;
  int *first, *last;
  unsigned char* multi;
  uint64_t* workspace;
  uint64_t serial_peak; /* most bytes live at one step with no groups */
  uint64_t* acc;        /* scratch: per-step bytes of a candidate's lanes */
} sched_est;

static void est_free(sched_est* e) {
  free(e->time);
  free(e->solo);
  free(e->par);
  free(e->size);
  free(e->first);
  free(e->last);
  free(e->multi);
  free(e->workspace);
  free(e->acc);
}

static uint64_t align64(uint64_t x) { return (x + 63) / 64 * 64; }

/* Fills the estimates for graph g in its final order. */
static hx_status_t est_init(const hc_graph* g, int threads, const int* chain, const int* level, sched_est* e) {
  int n = g->num_nodes, nv = g->num_values;
  memset(e, 0, sizeof(*e));
  e->n = n;
  e->threads = threads;
  e->chain = chain;
  e->level = level;
  e->time = calloc((size_t)n, sizeof(double));
  e->solo = calloc((size_t)n, sizeof(double));
  e->par = calloc((size_t)n, sizeof(double));
  e->size = calloc((size_t)nv + 1, sizeof(uint64_t));
  e->first = malloc(sizeof(int) * ((size_t)nv + 1));
  e->last = malloc(sizeof(int) * ((size_t)nv + 1));
  e->multi = calloc((size_t)nv + 1, 1);
  e->workspace = calloc((size_t)n, sizeof(uint64_t));
  e->acc = calloc((size_t)n + 1, sizeof(uint64_t));
  int64_t* delta = calloc((size_t)n + 1, sizeof(int64_t));
  unsigned char* is_output = calloc((size_t)nv + 1, 1);
  if (!e->time || !e->solo || !e->par || !e->size || !e->first || !e->last || !e->multi || !e->workspace || !e->acc ||
      !delta || !is_output) {
    free(delta);
    free(is_output);
    est_free(e);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory scheduling");
  }
  for (int i = 0; i < g->num_outputs; ++i) is_output[g->outputs[i]->id] = 1;
  for (int i = 0; i < nv; ++i) e->first[i] = e->last[i] = -1;
  for (int s = 0; s < n; ++s) {
    const hc_node* nd = g->nodes[s];
    double tasks;
    e->solo[s] = node_time(nd, &tasks);
    e->par[s] = tasks < threads ? tasks : threads;
    bool code = !(nd->op && (nd->op->flags & HC_OP_VIEW));
    e->time[s] = code ? e->solo[s] / e->par[s] + HC_SCHED_LAUNCH_NS : 0;
    e->total += e->time[s];
    e->workspace[s] = nd->op && nd->op->workspace ? align64(nd->op->workspace(nd)) : 0;
    for (int j = 0; j < nd->num_outputs; ++j) {
      const hc_value* v = nd->outputs[j];
      if (!v || v->kind != HC_VALUE_INTERMEDIATE || is_output[v->id] || storage_root(v) != v) continue;
      e->first[v->id] = e->last[v->id] = s;
      e->size[v->id] = align64(hc_value_nbytes(v));
    }
    for (int j = 0; j < nd->num_inputs; ++j) {
      if (!nd->inputs[j]) continue;
      int r = storage_root(nd->inputs[j])->id;
      if (e->first[r] < 0) continue;
      if (e->last[r] < s && level[e->last[r]] == level[s] && chain[e->last[r]] != chain[s]) e->multi[r] = 1;
      else if (level[e->last[r]] != level[s]) e->multi[r] = 0;
      e->last[r] = s;
    }
  }
  e->num_roots = nv;
  for (int i = 0; i < nv; ++i) {
    if (e->first[i] < 0) continue;
    delta[e->first[i]] += (int64_t)e->size[i];
    delta[e->last[i] + 1] -= (int64_t)e->size[i];
  }
  int64_t live = 0;
  for (int s = 0; s < n; ++s) {
    live += delta[s];
    uint64_t here = (uint64_t)live + e->workspace[s];
    if (here > e->serial_peak) e->serial_peak = here;
  }
  free(delta);
  free(is_output);
  return HX_OK;
}

/* Decides whether steps [s, e) (one level, lanes = its chains, each a run
 * of consecutive steps) become a parallel group. Estimates, from the cost
 * model above and the same liveness rules memory planning uses:
 *   gain = (serial time - grouped time) / the whole schedule's time, where
 *          serial time = sum of the kernels' times (each on min(threads,
 *          tasks) threads, plus a launch) and grouped time = max(total work
 *          / threads, the slowest lane) + a launch per kernel of the
 *          longest lane; 0 on one thread (the executor then runs groups in
 *          order);
 *   cost = how far the group's peak (tensors live across the whole level,
 *          plus, for each lane, its busiest step) exceeds the serial peak of
 *          the whole schedule, as a fraction of that peak.
 * The group is formed when cost <= HC_SCHED_FREE_MEMORY (it does not raise
 * the peak) or gain >= cost (a fraction of latency saved is worth the same
 * fraction of memory); otherwise its steps stay sequential. */
static bool decide_group(const sched_est* e, int s, int end, double* out_gain, double* out_cost) {
  double work = 0, serial = 0, slowest = 0, lane_time = 0;
  int longest = 0, lane_kernels = 0;
  for (int t = s; t < end; ++t) {
    if (t > s && e->chain[t] != e->chain[t - 1]) lane_time = 0, lane_kernels = 0;
    if (e->time[t] > 0) {
      work += e->solo[t];
      serial += e->time[t];
      lane_time += e->solo[t] / e->par[t];
      lane_kernels++;
    }
    if (lane_time > slowest) slowest = lane_time;
    if (lane_kernels > longest) longest = lane_kernels;
  }
  double grouped = (work / e->threads > slowest ? work / e->threads : slowest) + HC_SCHED_LAUNCH_NS * longest;
  double gain = e->threads > 1 && serial > grouped && e->total > 0 ? (serial - grouped) / e->total : 0;

  /* The group's peak: tensors live across the level, plus the lanes. A
   * tensor read in several lanes of this level stays live to its end. */
  uint64_t through = 0;
  for (int t = s; t <= end; ++t) e->acc[t] = 0;
  for (int t = s; t < end; ++t) {
    e->acc[t] += e->workspace[t];
    e->acc[t + 1] -= e->workspace[t];
  }
  for (int r = 0; r < e->num_roots; ++r) {
    int f = e->first[r], l = e->last[r];
    if (f < 0 || l < s || f >= end) continue;
    if (f < s && (l >= end || e->multi[r])) {
      through += e->size[r];
      continue;
    }
    /* A lane's interval: from the producer (or the lane's first step) to
     * the last reader (or the lane's last step). */
    int anchor = f >= s ? f : l, lo = anchor, hi = anchor;
    while (lo > s && e->chain[lo - 1] == e->chain[anchor]) --lo;
    while (hi + 1 < end && e->chain[hi + 1] == e->chain[anchor]) ++hi;
    if (f >= s) lo = f;
    if (l < end) hi = l;
    e->acc[lo] += e->size[r];
    e->acc[hi + 1] -= e->size[r];
  }
  uint64_t peak = through, live = 0, busiest = 0;
  for (int t = s; t < end; ++t) {
    if (t > s && e->chain[t] != e->chain[t - 1]) peak += busiest, busiest = 0;
    live += e->acc[t];
    if (live > busiest) busiest = live;
  }
  peak += busiest;
  double cost = peak > e->serial_peak && e->serial_peak ? (double)(peak - e->serial_peak) / (double)e->serial_peak : 0;
  *out_gain = gain;
  *out_cost = cost;
  return cost <= HC_SCHED_FREE_MEMORY || gain >= cost;
}

/* ---- memory-aware order of the chains of a level ------------------------- */

/* Scratch for order_level_chains, indexed by node id (positions in the graph
 * before reordering) or by value id. */
typedef struct chain_order {
  const hc_graph* g;
  sched_key* keys;
  int* kpos;          /* node id -> position in the sorted order */
  int* wpos;          /* node id -> position in the candidate order of the window */
  int* root;          /* value id -> storage root id */
  uint64_t* size;     /* value id -> arena bytes of a root (0: not an arena tensor) */
  int* maxpos;        /* root id -> last reader's position in the sorted order */
  uint64_t* ws;       /* node id -> workspace bytes */
  int *last, *stamp;  /* root id -> last reader in the window; evaluation stamp */
  int cur;
  int64_t* delta;     /* window steps + 1 */
  sched_key* tmp;     /* window keys */
} chain_order;

/* Most bytes live at one step of window [s, e) run serially with its chains
 * (spans start[c], len[c] of keys) in order perm: tensors the window's nodes
 * produce or read, from their producer (or the window's start) to their last
 * reader in the window (or its end when read later), plus each step's
 * workspace. Tensors that only cross the window add the same to every order
 * and are left out. */
static uint64_t window_peak(chain_order* o, int s, int e, const int* start, const int* len, const int* perm, int k) {
  int t = s;
  for (int c = 0; c < k; ++c)
    for (int i = 0; i < len[perm[c]]; ++i) o->wpos[o->keys[start[perm[c]] + i].node->id] = t++;
  int stamp = ++o->cur;
  for (int i = s; i < e; ++i) {
    const hc_node* nd = o->keys[i].node;
    for (int j = 0; j < nd->num_inputs; ++j) {
      if (!nd->inputs[j]) continue;
      int r = o->root[nd->inputs[j]->id];
      if (!o->size[r]) continue;
      if (o->stamp[r] != stamp) o->stamp[r] = stamp, o->last[r] = -1;
      if (o->wpos[nd->id] > o->last[r]) o->last[r] = o->wpos[nd->id];
    }
  }
  memset(o->delta, 0, sizeof(int64_t) * (size_t)(e - s + 1));
  stamp = ++o->cur;
  for (int i = s; i < e; ++i) {
    const hc_node* nd = o->keys[i].node;
    o->delta[o->wpos[nd->id] - s] += (int64_t)o->ws[nd->id];
    o->delta[o->wpos[nd->id] - s + 1] -= (int64_t)o->ws[nd->id];
    for (int io = 0; io < nd->num_inputs + nd->num_outputs; ++io) {
      const hc_value* v = io < nd->num_inputs ? nd->inputs[io] : nd->outputs[io - nd->num_inputs];
      if (!v) continue;
      int r = o->root[v->id];
      if (!o->size[r] || o->stamp[r] == stamp) continue;
      const hc_node* p = o->g->values[r]->producer;
      bool inside = p && o->kpos[p->id] >= s && o->kpos[p->id] < e;
      if (io >= nd->num_inputs && !inside) continue; /* a view's output: its root is an input */
      int f = inside ? o->wpos[p->id] : s;
      int l = o->maxpos[r] >= e ? e - 1 : (o->stamp[r] == stamp - 1 && o->last[r] >= f ? o->last[r] : f);
      o->stamp[r] = stamp;
      o->delta[f - s] += (int64_t)o->size[r];
      o->delta[l - s + 1] -= (int64_t)o->size[r];
    }
  }
  int64_t live = 0;
  uint64_t peak = 0;
  for (int i = 0; i < e - s; ++i) {
    live += o->delta[i];
    if ((uint64_t)live > peak) peak = (uint64_t)live;
  }
  return peak;
}

/* Next permutation of p[0..k) in lexicographic order; false after the last. */
static bool next_perm(int* p, int k) {
  int i = k - 2;
  while (i >= 0 && p[i] >= p[i + 1]) --i;
  if (i < 0) return false;
  int j = k - 1;
  while (p[j] <= p[i]) --j;
  int x = p[i];
  p[i] = p[j];
  p[j] = x;
  for (int a = i + 1, b = k - 1; a < b; ++a, --b) x = p[a], p[a] = p[b], p[b] = x;
  return true;
}

#define HC_SCHED_MAX_PERMUTED_CHAINS 5

/* Within each level of several chains (at most HC_SCHED_MAX_PERMUTED_CHAINS),
 * puts the chains in the order whose serial run keeps the fewest bytes live
 * at its busiest step (ties keep the graph's order). A ResNet downsample
 * block is the case in point: its shortcut convolution and the main branch
 * both read the block's input; running the shortcut first lets the input die
 * at the main branch's first convolution instead of staying live through
 * it. Chains stay contiguous, so levels and lanes are unchanged; a group's
 * lanes run concurrently whatever their order. */
static hx_status_t order_level_chains(const hc_graph* g, sched_key* keys, int n) {
  int nv = g->num_values;
  chain_order o = {.g = g, .keys = keys};
  o.kpos = malloc(sizeof(int) * (size_t)n);
  o.wpos = malloc(sizeof(int) * (size_t)n);
  o.root = malloc(sizeof(int) * ((size_t)nv + 1));
  o.size = calloc((size_t)nv + 1, sizeof(uint64_t));
  o.maxpos = malloc(sizeof(int) * ((size_t)nv + 1));
  o.ws = calloc((size_t)n, sizeof(uint64_t));
  o.last = malloc(sizeof(int) * ((size_t)nv + 1));
  o.stamp = calloc((size_t)nv + 1, sizeof(int));
  o.delta = malloc(sizeof(int64_t) * ((size_t)n + 1));
  o.tmp = malloc(sizeof(sched_key) * (size_t)n);
  unsigned char* is_output = calloc((size_t)nv + 1, 1);
  hx_status_t st = HX_OK;
  if (!o.kpos || !o.wpos || !o.root || !o.size || !o.maxpos || !o.ws || !o.last || !o.stamp || !o.delta || !o.tmp ||
      !is_output) {
    st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory scheduling");
    goto done;
  }
  for (int i = 0; i < g->num_outputs; ++i) is_output[g->outputs[i]->id] = 1;
  for (int i = 0; i < n; ++i) {
    o.kpos[keys[i].node->id] = i;
    const hc_node* nd = keys[i].node;
    o.ws[nd->id] = nd->op && nd->op->workspace ? align64(nd->op->workspace(nd)) : 0;
  }
  for (int i = 0; i < nv; ++i) {
    const hc_value* v = g->values[i];
    o.root[i] = storage_root(v)->id;
    o.maxpos[i] = -1;
    if (v->kind == HC_VALUE_INTERMEDIATE && storage_root(v) == v && !is_output[i] && v->producer && !v->producer->dead)
      o.size[i] = align64(hc_value_nbytes(v));
  }
  for (int i = 0; i < nv; ++i) /* a view of a graph output is the caller's too */
    if (is_output[i]) o.size[o.root[i]] = 0;
  for (int i = 0; i < n; ++i) {
    const hc_node* nd = keys[i].node;
    for (int j = 0; j < nd->num_inputs; ++j)
      if (nd->inputs[j] && i > o.maxpos[o.root[nd->inputs[j]->id]]) o.maxpos[o.root[nd->inputs[j]->id]] = i;
  }
  for (int s = 0; s < n;) {
    int e = s, k = 0;
    int start[HC_SCHED_MAX_PERMUTED_CHAINS + 1], len[HC_SCHED_MAX_PERMUTED_CHAINS + 1];
    while (e < n && keys[e].level == keys[s].level) {
      if (e == s || keys[e].chain != keys[e - 1].chain) {
        if (k <= HC_SCHED_MAX_PERMUTED_CHAINS) start[k] = e, len[k] = 0;
        ++k;
      }
      if (k <= HC_SCHED_MAX_PERMUTED_CHAINS) len[k - 1]++;
      ++e;
    }
    if (k >= 2 && k <= HC_SCHED_MAX_PERMUTED_CHAINS) {
      int perm[HC_SCHED_MAX_PERMUTED_CHAINS], best[HC_SCHED_MAX_PERMUTED_CHAINS];
      for (int c = 0; c < k; ++c) perm[c] = best[c] = c;
      uint64_t best_peak = window_peak(&o, s, e, start, len, perm, k);
      while (next_perm(perm, k)) {
        uint64_t peak = window_peak(&o, s, e, start, len, perm, k);
        if (peak < best_peak) {
          best_peak = peak;
          memcpy(best, perm, sizeof(int) * (size_t)k);
        }
      }
      int t = 0;
      for (int c = 0; c < k; ++c)
        for (int i = 0; i < len[best[c]]; ++i) o.tmp[t++] = keys[start[best[c]] + i];
      memcpy(keys + s, o.tmp, sizeof(sched_key) * (size_t)(e - s));
    }
    s = e;
  }
done:
  free(o.kpos);
  free(o.wpos);
  free(o.root);
  free(o.size);
  free(o.maxpos);
  free(o.ws);
  free(o.last);
  free(o.stamp);
  free(o.delta);
  free(o.tmp);
  free(is_output);
  return st;
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
  hx_status_t st = HX_OK;
  if (!consumers || !last_consumer || !chain_of || !chain_level || !chain_code || !keys) {
    st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory scheduling");
    goto done;
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
  st = order_level_chains(g, keys, n);
  if (st != HX_OK) goto done;
  for (int i = 0; i < n; ++i) {
    g->nodes[i] = keys[i].node;
    g->nodes[i]->id = i;
  }

  /* A level with at least two code-emitting chains is a candidate parallel
   * group (lanes numbered by chain order within the level); decide_group
   * keeps it when it is worth its memory. */
  int threads = ctx->schedule_threads > 0 ? ctx->schedule_threads : HC_SCHEDULE_DEFAULT_THREADS;
  sched_est est;
  bool have_est = false;
  int group_id = 0, declined = 0;
  for (int s = 0; s < n;) {
    int e = s, code_chains = 0, prev_chain = -1;
    bool blocks = false;
    while (e < n && keys[e].level == keys[s].level) {
      if (keys[e].chain != prev_chain && chain_code[keys[e].chain]) code_chains++;
      prev_chain = keys[e].chain;
      blocks |= keys[e].node->channel_block;
      ++e;
    }
    /* Channel blocks run one after another (hc_node.channel_block). */
    bool candidate = code_chains >= 2 && !blocks && ctx->parallel_groups != HC_GROUPS_NONE;
    if (candidate && ctx->parallel_groups == HC_GROUPS_AUTO && !have_est) {
      /* Per-step chain and level, for the estimates. */
      for (int i = 0; i < n; ++i) {
        chain_of[i] = keys[i].chain;
        last_consumer[i] = keys[i].level;
      }
      st = est_init(g, threads, chain_of, last_consumer, &est);
      if (st != HX_OK) goto done;
      have_est = true;
    }
    double gain = 0, cost = 0;
    bool form = candidate && (ctx->parallel_groups == HC_GROUPS_ALL || decide_group(&est, s, e, &gain, &cost));
    if (candidate && ctx->parallel_groups == HC_GROUPS_AUTO && ctx->verbose && ctx->log)
      fprintf(ctx->log, "schedule: %s %d lanes at '%s' (est. latency -%.2f%%, peak +%.2f%%)\n",
              form ? "group of" : "no group for", code_chains, g->nodes[s]->name, 100 * gain, 100 * cost);
    if (candidate && !form) ++declined;
    if (form) {
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
  if (have_est) est_free(&est);
  ctx->schedule_groups = group_id;
  ctx->schedule_groups_declined = declined;
  if (ctx->verbose && ctx->log)
    fprintf(ctx->log, "schedule: %d nodes, %d chains, %d levels, %d parallel groups (%d declined for memory%s)\n", n,
            num_chains, max_level + 1, group_id, declined,
            ctx->parallel_groups == HC_GROUPS_NONE  ? "; groups off"
            : ctx->parallel_groups == HC_GROUPS_ALL ? "; every candidate grouped"
                                                    : "");
  st = hc_schedule_verify(g);

done:
  free(consumers);
  free(last_consumer);
  free(chain_of);
  free(chain_level);
  free(chain_code);
  free(keys);
  return st;
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
