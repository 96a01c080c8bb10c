/* Graph construction, mutation and queries. */
#include "ir/graph.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define OOM() hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory building the graph")

/* Grows a pointer array to hold at least need entries. */
static bool grow(void*** arr, int* cap, int need) {
  if (need <= *cap) return true;
  int ncap = *cap ? *cap * 2 : 64;
  while (ncap < need) ncap *= 2;
  void** n = realloc(*arr, (size_t)ncap * sizeof(void*));
  if (!n) return false;
  *arr = n;
  *cap = ncap;
  return true;
}

hx_status_t hc_graph_create(const char* name, hc_graph** out_graph) {
  hc_graph* g = calloc(1, sizeof(*g));
  if (!g) return OOM();
  hc_arena_init(&g->arena);
  g->name = hc_arena_strdup(&g->arena, name ? name : "model");
  g->default_opset = 0;
  *out_graph = g;
  return HX_OK;
}

void hc_graph_free(hc_graph* g) {
  if (!g) return;
  for (int i = 0; i < g->num_owned; ++i) free(g->owned[i]);
  /* Subgraphs (node attributes and their copies) are owned by their parent
   * graph; nodes removed from the list still reference theirs until now. */
  for (int i = 0; i < g->num_children; ++i) hc_graph_free(g->children[i]);
  free(g->children);
  free(g->captures);
  free(g->capture_slots);
  free(g->owned);
  free(g->values);
  free(g->nodes);
  free(g->inputs);
  free(g->outputs);
  free(g->output_names);
  hc_arena_release(&g->arena);
  free(g);
}

void hc_value_set_shape(hc_value* v, hx_dtype_t dtype, int rank, const int64_t* dims) {
  v->dtype = dtype;
  v->rank = rank;
  for (int i = 0; i < HC_MAX_RANK; ++i) v->dims[i] = (i < rank && dims) ? dims[i] : 0;
}

hx_status_t hc_graph_add_value(hc_graph* g, const char* name, hx_dtype_t dtype, int rank, const int64_t* dims,
                               hc_value** out_value) {
  if (rank > HC_MAX_RANK)
    return hx_status_make(HX_STATUS_UNSUPPORTED, "tensor '%s' has rank %d; Harness supports up to rank %d",
                          name ? name : "", rank, HC_MAX_RANK);
  if (!grow((void***)&g->values, &g->cap_values, g->num_values + 1)) return OOM();
  hc_value* v = hc_arena_alloc(&g->arena, sizeof(*v));
  if (!v) return OOM();
  v->id = g->num_values;
  v->name = hc_arena_strdup(&g->arena, name ? name : "");
  hc_value_set_shape(v, dtype, rank, dims);
  v->storage.base = -1;
  g->values[g->num_values++] = v;
  *out_value = v;
  return HX_OK;
}

hc_value* hc_graph_find_value(const hc_graph* g, const char* name) {
  for (int i = 0; i < g->num_values; ++i)
    if (strcmp(g->values[i]->name, name) == 0) return g->values[i];
  return NULL;
}

hx_status_t hc_graph_add_node(hc_graph* g, const char* name, const char* op_type, const char* domain,
                              int num_inputs, int num_outputs, hc_node** out_node) {
  if (!grow((void***)&g->nodes, &g->cap_nodes, g->num_nodes + 1)) return OOM();
  hc_node* n = hc_arena_alloc(&g->arena, sizeof(*n));
  if (!n) return OOM();
  n->id = g->num_nodes;
  n->name = hc_arena_strdup(&g->arena, name ? name : "");
  n->op_type = hc_arena_strdup(&g->arena, op_type);
  n->domain = hc_arena_strdup(&g->arena, domain ? domain : "");
  n->opset = g->default_opset;
  n->num_inputs = num_inputs;
  n->num_outputs = num_outputs;
  n->inputs = hc_arena_alloc(&g->arena, sizeof(hc_value*) * (size_t)(num_inputs ? num_inputs : 1));
  n->outputs = hc_arena_alloc(&g->arena, sizeof(hc_value*) * (size_t)(num_outputs ? num_outputs : 1));
  if (!n->inputs || !n->outputs || !n->name || !n->op_type || !n->domain) return OOM();
  g->nodes[g->num_nodes++] = n;
  *out_node = n;
  return HX_OK;
}

void hc_node_set_input(hc_node* n, int i, hc_value* v) { n->inputs[i] = v; }

void* hc_graph_alloc_data(hc_graph* g, size_t nbytes) {
  void* p = aligned_alloc(64, (nbytes + 63) / 64 * 64 + 64);
  if (!p) return NULL;
  memset(p, 0, (nbytes + 63) / 64 * 64 + 64);
  if (hc_graph_own(g, p) != HX_OK) {
    free(p);
    return NULL;
  }
  return p;
}

hx_status_t hc_graph_own(hc_graph* g, void* data) {
  if (!grow(&g->owned, &g->cap_owned, g->num_owned + 1)) return OOM();
  g->owned[g->num_owned++] = data;
  return HX_OK;
}

hx_status_t hc_value_set_const(hc_graph* g, hc_value* v, void* data, size_t nbytes) {
  if (nbytes != hc_value_nbytes(v))
    return hx_status_make(HX_STATUS_INTERNAL, "constant '%s' has %zu bytes, shape needs %zu", v->name, nbytes,
                          hc_value_nbytes(v));
  if (data) HX_RETURN_IF_ERROR(hc_graph_own(g, data));
  v->kind = HC_VALUE_CONST;
  v->data = data;
  v->producer = NULL;
  return HX_OK;
}

hx_status_t hc_graph_add_output(hc_graph* g, hc_value* v) {
  int cap = g->cap_outputs;
  if (!grow((void***)&g->outputs, &g->cap_outputs, g->num_outputs + 1)) return OOM();
  if (!grow((void***)&g->output_names, &cap, g->num_outputs + 1)) return OOM();
  g->output_names[g->num_outputs] = v->name;
  g->outputs[g->num_outputs++] = v;
  v->is_output = true;
  return HX_OK;
}

void hc_graph_replace_uses(hc_graph* g, hc_value* from, hc_value* to) {
  for (int i = 0; i < g->num_nodes; ++i) {
    hc_node* n = g->nodes[i];
    if (n->dead) continue;
    for (int j = 0; j < n->num_inputs; ++j)
      if (n->inputs[j] == from) n->inputs[j] = to;
  }
  for (int i = 0; i < g->num_outputs; ++i) {
    if (g->outputs[i] == from) {
      g->outputs[i] = to;
      to->is_output = true;
    }
  }
  from->is_output = false;
  for (int i = 0; i < g->num_outputs; ++i)
    if (g->outputs[i] == from) from->is_output = true;
}

int hc_value_use_count(const hc_graph* g, const hc_value* v) {
  int uses = 0;
  for (int i = 0; i < g->num_nodes; ++i) {
    const hc_node* n = g->nodes[i];
    if (n->dead) continue;
    for (int j = 0; j < n->num_inputs; ++j)
      if (n->inputs[j] == v) ++uses;
  }
  return uses;
}

void hc_graph_compact(hc_graph* g) {
  int w = 0;
  for (int i = 0; i < g->num_nodes; ++i) {
    if (g->nodes[i]->dead) continue;
    g->nodes[w] = g->nodes[i];
    g->nodes[w]->id = w;
    ++w;
  }
  g->num_nodes = w;
}

/* Producer -> consumer edges of the live nodes in compressed form. */
typedef struct node_edges {
  int* start; /* n + 1 offsets into succ */
  int* succ;
  int* indeg;
} node_edges;

static void edges_free(node_edges* e) {
  free(e->start);
  free(e->succ);
  free(e->indeg);
}

/* Builds edges p -> c for every input of c produced by live node p (one edge
 * per input slot; duplicates are harmless for both Kahn and Tarjan). */
static hx_status_t edges_build(const hc_graph* g, node_edges* e) {
  int n = g->num_nodes;
  int m = 0;
  for (int i = 0; i < n; ++i) m += g->nodes[i]->num_inputs;
  e->start = calloc((size_t)n + 1, sizeof(int));
  e->succ = malloc(sizeof(int) * (size_t)(m ? m : 1));
  e->indeg = calloc((size_t)n + 1, sizeof(int));
  if (!e->start || !e->succ || !e->indeg) {
    edges_free(e);
    return OOM();
  }
  for (int i = 0; i < n; ++i) {
    const hc_node* c = g->nodes[i];
    for (int j = 0; j < c->num_inputs; ++j) {
      const hc_value* v = c->inputs[j];
      if (v && v->producer && !v->producer->dead && v->kind != HC_VALUE_CONST) {
        e->start[v->producer->id + 1]++;
        e->indeg[i]++;
      }
    }
  }
  for (int i = 0; i < n; ++i) e->start[i + 1] += e->start[i];
  int* fill = calloc((size_t)n + 1, sizeof(int));
  if (!fill) {
    edges_free(e);
    return OOM();
  }
  for (int i = 0; i < n; ++i) {
    const hc_node* c = g->nodes[i];
    for (int j = 0; j < c->num_inputs; ++j) {
      const hc_value* v = c->inputs[j];
      if (v && v->producer && !v->producer->dead && v->kind != HC_VALUE_CONST) {
        int p = v->producer->id;
        e->succ[e->start[p] + fill[p]++] = i;
      }
    }
  }
  free(fill);
  return HX_OK;
}

/* Min-heap of node indices: Kahn's algorithm takes the ready node that came
 * first in the model, so the order is deterministic and close to the file's. */
static void heap_push(int* h, int* size, int x) {
  int i = (*size)++;
  h[i] = x;
  while (i > 0 && h[(i - 1) / 2] > h[i]) {
    int p = (i - 1) / 2, t = h[p];
    h[p] = h[i];
    h[i] = t;
    i = p;
  }
}

static int heap_pop(int* h, int* size) {
  int top = h[0];
  h[0] = h[--(*size)];
  for (int i = 0;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < *size && h[l] < h[m]) m = l;
    if (r < *size && h[r] < h[m]) m = r;
    if (m == i) break;
    int t = h[m];
    h[m] = h[i];
    h[i] = t;
    i = m;
  }
  return top;
}

/* Tarjan's strongly connected components, iterative (graphs can be deep).
 * Every component with more than one node, or a node feeding itself, is a
 * cycle; the error names one node of each. */
hx_status_t hc_graph_check_acyclic(const hc_graph* g) {
  int n = g->num_nodes;
  if (n == 0) return HX_OK;
  node_edges e = {0};
  HX_RETURN_IF_ERROR(edges_build(g, &e));
  int* index = malloc(sizeof(int) * (size_t)n);
  int* low = malloc(sizeof(int) * (size_t)n);
  int* stack = malloc(sizeof(int) * (size_t)n);
  bool* on_stack = calloc((size_t)n, sizeof(bool));
  int* call = malloc(sizeof(int) * (size_t)n); /* DFS stack of nodes */
  int* next_edge = malloc(sizeof(int) * (size_t)n);
  char* msg = NULL;
  size_t msg_len = 0;
  int cycles = 0;
  hx_status_t st = HX_OK;
  if (!index || !low || !stack || !on_stack || !call || !next_edge) {
    st = OOM();
    goto done;
  }
  for (int i = 0; i < n; ++i) index[i] = -1;
  int counter = 0, sp = 0;
  for (int root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    int depth = 0;
    call[depth++] = root;
    index[root] = low[root] = counter++;
    stack[sp++] = root;
    on_stack[root] = true;
    next_edge[root] = e.start[root];
    while (depth > 0) {
      int v = call[depth - 1];
      if (next_edge[v] < e.start[v + 1]) {
        int w = e.succ[next_edge[v]++];
        if (index[w] < 0) {
          index[w] = low[w] = counter++;
          stack[sp++] = w;
          on_stack[w] = true;
          next_edge[w] = e.start[w];
          call[depth++] = w;
        } else if (on_stack[w] && index[w] < low[v]) {
          low[v] = index[w];
        }
        continue;
      }
      if (low[v] == index[v]) {
        int size = 0, w, self = 0;
        do {
          w = stack[--sp];
          on_stack[w] = false;
          ++size;
        } while (w != v);
        for (int k = e.start[v]; k < e.start[v + 1]; ++k) self |= e.succ[k] == v;
        if (size > 1 || self) {
          const hc_node* nd = g->nodes[v];
          size_t add = strlen(nd->name) + strlen(nd->op_type) + 64;
          char* nm = realloc(msg, msg_len + add);
          if (nm) {
            msg = nm;
            msg_len += (size_t)snprintf(msg + msg_len, add, "%snode \"%s\" (%s) is on a cycle of %d node%s",
                                        cycles ? "; " : "", nd->name, nd->op_type, size, size == 1 ? "" : "s");
          }
          ++cycles;
        }
      }
      --depth;
      if (depth > 0) {
        int parent = call[depth - 1];
        if (low[v] < low[parent]) low[parent] = low[v];
      }
    }
  }
  if (cycles) st = hx_status_make(HX_STATUS_INVALID_ARGUMENT, "the graph has %d cycle%s: %s", cycles, cycles == 1 ? "" : "s",
                                  msg ? msg : "");
done:
  free(index);
  free(low);
  free(stack);
  free(on_stack);
  free(call);
  free(next_edge);
  free(msg);
  edges_free(&e);
  return st;
}

hx_status_t hc_graph_sort(hc_graph* g) {
  hc_graph_compact(g);
  int n = g->num_nodes;
  if (n == 0) return HX_OK;
  node_edges e = {0};
  HX_RETURN_IF_ERROR(edges_build(g, &e));
  int* heap = malloc(sizeof(int) * (size_t)n);
  hc_node** order = malloc(sizeof(hc_node*) * (size_t)n);
  if (!heap || !order) {
    free(heap);
    free(order);
    edges_free(&e);
    return OOM();
  }
  int hs = 0, emitted = 0;
  for (int i = 0; i < n; ++i)
    if (e.indeg[i] == 0) heap_push(heap, &hs, i);
  while (hs > 0) {
    int v = heap_pop(heap, &hs);
    order[emitted++] = g->nodes[v];
    for (int k = e.start[v]; k < e.start[v + 1]; ++k)
      if (--e.indeg[e.succ[k]] == 0) heap_push(heap, &hs, e.succ[k]);
  }
  hx_status_t st = HX_OK;
  if (emitted < n) {
    st = hc_graph_check_acyclic(g);
    if (st == HX_OK) st = hx_status_make(HX_STATUS_INTERNAL, "topological sort failed without a cycle");
  } else {
    for (int i = 0; i < n; ++i) {
      g->nodes[i] = order[i];
      g->nodes[i]->id = i;
    }
  }
  free(heap);
  free(order);
  edges_free(&e);
  return st;
}

int64_t hc_shape_numel(int rank, const int64_t* dims) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

int64_t hc_value_numel(const hc_value* v) { return v->rank < 0 ? 0 : hc_shape_numel(v->rank, v->dims); }

size_t hc_value_nbytes(const hc_value* v) { return (size_t)hc_value_numel(v) * hx_dtype_size(v->dtype); }

const hc_value* hc_value_storage_root(const hc_value* v, uint64_t* offset_in_root) {
  uint64_t off = 0;
  for (; v->alias_of; v = v->alias_of) off += v->alias_offset;
  if (offset_in_root) *offset_in_root = off;
  return v;
}

const char* hc_shape_str(int rank, const int64_t* dims, char* buf, size_t cap) {
  if (rank == 0) {
    snprintf(buf, cap, "scalar");
    return buf;
  }
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < rank && used < cap; ++i) {
    int w = snprintf(buf + used, cap - used, "%s%lld", i ? "x" : "", (long long)dims[i]);
    if (w < 0) break;
    used += (size_t)w;
  }
  return buf;
}

const hc_attr* hc_node_attr(const hc_node* n, const char* name) {
  for (int i = 0; i < n->num_attrs; ++i)
    if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
  return NULL;
}

bool hc_value_const_i64(const hc_value* v, int64_t idx, int64_t* out) {
  if (!v || v->kind != HC_VALUE_CONST || idx < 0 || idx >= hc_value_numel(v) || !v->data) return false;
  const void* d = v->data;
  switch (v->dtype) {
    case HX_DTYPE_INT64: *out = ((const int64_t*)d)[idx]; return true;
    case HX_DTYPE_INT32: *out = ((const int32_t*)d)[idx]; return true;
    case HX_DTYPE_INT16: *out = ((const int16_t*)d)[idx]; return true;
    case HX_DTYPE_INT8: *out = ((const int8_t*)d)[idx]; return true;
    case HX_DTYPE_UINT8: *out = ((const uint8_t*)d)[idx]; return true;
    case HX_DTYPE_BOOL: *out = ((const uint8_t*)d)[idx] != 0; return true;
    case HX_DTYPE_UINT16: *out = ((const uint16_t*)d)[idx]; return true;
    case HX_DTYPE_UINT32: *out = ((const uint32_t*)d)[idx]; return true;
    case HX_DTYPE_UINT64: *out = (int64_t)((const uint64_t*)d)[idx]; return true;
    case HX_DTYPE_FLOAT32: *out = (int64_t)((const float*)d)[idx]; return true;
    case HX_DTYPE_FLOAT64: *out = (int64_t)((const double*)d)[idx]; return true;
    default: return false;
  }
}

/* IEEE half / bfloat16 to float, for reading small constants on the host. */
static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { /* subnormal: renormalise */
      exp = 127 - 15 + 1;
      while (!(man & 0x400)) {
        man <<= 1;
        --exp;
      }
      man &= 0x3ff;
      bits = sign | (exp << 23) | (man << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

bool hc_value_const_f64(const hc_value* v, int64_t idx, double* out) {
  if (!v || v->kind != HC_VALUE_CONST || idx < 0 || idx >= hc_value_numel(v) || !v->data) return false;
  const void* d = v->data;
  switch (v->dtype) {
    case HX_DTYPE_FLOAT32: *out = ((const float*)d)[idx]; return true;
    case HX_DTYPE_FLOAT64: *out = ((const double*)d)[idx]; return true;
    case HX_DTYPE_FLOAT16: *out = half_to_float(((const uint16_t*)d)[idx]); return true;
    case HX_DTYPE_BFLOAT16: {
      uint32_t bits = (uint32_t)((const uint16_t*)d)[idx] << 16;
      float f;
      memcpy(&f, &bits, 4);
      *out = f;
      return true;
    }
    default: {
      int64_t i;
      if (!hc_value_const_i64(v, idx, &i)) return false;
      *out = (v->dtype == HX_DTYPE_UINT64) ? (double)(uint64_t)i : (double)i;
      return true;
    }
  }
}

hx_status_t hc_node_error(const hc_node* n, hx_status_code_t code, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n->domain && n->domain[0])
    return hx_status_make(code, "node \"%s\" (%s:%s, opset %d): %s", n->name, n->domain, n->op_type, n->opset, msg);
  return hx_status_make(code, "node \"%s\" (%s, opset %d): %s", n->name, n->op_type, n->opset, msg);
}

/* ---- subgraphs ------------------------------------------------------------ */

hx_status_t hc_graph_add_child(hc_graph* g, hc_graph* child) {
  if (!grow((void***)&g->children, &g->cap_children, g->num_children + 1)) return OOM();
  g->children[g->num_children++] = child;
  return HX_OK;
}

hx_status_t hc_node_add_capture(hc_graph* g, hc_node* n, hc_value* v, int* out_slot) {
  for (int i = n->num_inputs - n->num_captures; i < n->num_inputs; ++i) {
    if (n->inputs[i] == v) {
      *out_slot = i;
      return HX_OK;
    }
  }
  /* Input arrays live in the arena: grow by copying. */
  hc_value** in = hc_arena_alloc(&g->arena, sizeof(hc_value*) * (size_t)(n->num_inputs + 1));
  if (!in) return OOM();
  for (int i = 0; i < n->num_inputs; ++i) in[i] = n->inputs[i];
  in[n->num_inputs] = v;
  n->inputs = in;
  *out_slot = n->num_inputs++;
  n->num_captures++;
  return HX_OK;
}

hx_status_t hc_graph_add_capture(hc_graph* sub, hc_value* v, int slot) {
  if (sub->num_captures == sub->cap_captures) {
    int ncap = sub->cap_captures ? sub->cap_captures * 2 : 8;
    hc_value** c = realloc(sub->captures, sizeof(hc_value*) * (size_t)ncap);
    if (!c) return OOM();
    sub->captures = c;
    int* s = realloc(sub->capture_slots, sizeof(int) * (size_t)ncap);
    if (!s) return OOM();
    sub->capture_slots = s;
    sub->cap_captures = ncap;
  }
  sub->captures[sub->num_captures] = v;
  sub->capture_slots[sub->num_captures++] = slot;
  return HX_OK;
}

int hc_graph_capture_index(const hc_graph* sub, const hc_value* v) {
  for (int i = 0; i < sub->num_captures; ++i)
    if (sub->captures[i] == v) return i;
  return -1;
}

/* Maps a value of the clone's source to its copy (NULL stays NULL). */
static hc_value* clone_map(hc_value* const* map, const hc_graph* src, const hc_value* v) {
  if (!v) return NULL;
  if (v->id < 0 || v->id >= src->num_values || src->values[v->id] != v) return NULL;
  return map[v->id];
}

hx_status_t hc_graph_clone(hc_graph* owner, const hc_graph* src, hc_graph** out) {
  *out = NULL;
  hc_graph* g;
  HX_RETURN_IF_ERROR(hc_graph_create(src->name, &g));
  hx_status_t st = hc_graph_add_child(owner, g);
  if (st != HX_OK) {
    hc_graph_free(g);
    return st;
  }
  g->default_opset = src->default_opset;
  hc_value** map = calloc((size_t)src->num_values + 1, sizeof(hc_value*));
  hc_node** nmap = calloc((size_t)src->num_nodes + 1, sizeof(hc_node*));
  if (!map || !nmap) {
    free(map);
    free(nmap);
    return OOM();
  }
  for (int i = 0; st == HX_OK && i < src->num_values; ++i) {
    const hc_value* sv = src->values[i];
    hc_value* v;
    st = hc_graph_add_value(g, NULL, sv->dtype, 0, NULL, &v);
    if (st != HX_OK) break;
    int id = v->id;
    *v = *sv;
    v->id = id;
    v->storage.base = -1;
    v->storage.offset = 0;
    map[i] = v;
  }
  for (int i = 0; st == HX_OK && i < src->num_nodes; ++i) {
    const hc_node* sn = src->nodes[i];
    hc_node* n;
    st = hc_graph_add_node(g, sn->name, sn->op_type, sn->domain, sn->num_inputs, sn->num_outputs, &n);
    if (st != HX_OK) break;
    int id = n->id;
    hc_value** in = n->inputs;
    hc_value** outs = n->outputs;
    *n = *sn;
    n->id = id;
    n->inputs = in;
    n->outputs = outs;
    n->op_state = NULL;
    n->workspace_bytes = n->workspace_offset = 0;
    n->group = n->lane = 0;
    n->num_fused = 0;
    n->fused = NULL;
    n->packed = NULL;
    for (int j = 0; j < sn->num_inputs; ++j) n->inputs[j] = clone_map(map, src, sn->inputs[j]);
    for (int j = 0; j < sn->num_outputs; ++j) n->outputs[j] = clone_map(map, src, sn->outputs[j]);
    n->attrs = hc_arena_alloc(&g->arena, sizeof(hc_attr) * (size_t)(sn->num_attrs ? sn->num_attrs : 1));
    if (!n->attrs) {
      st = OOM();
      break;
    }
    for (int a = 0; a < sn->num_attrs; ++a) {
      n->attrs[a] = sn->attrs[a];
      if (sn->attrs[a].type == HC_ATTR_GRAPH && sn->attrs[a].g) st = hc_graph_clone(g, sn->attrs[a].g, &n->attrs[a].g);
    }
    nmap[i] = n;
  }
  for (int i = 0; st == HX_OK && i < src->num_values; ++i) {
    hc_value* v = map[i];
    v->alias_of = clone_map(map, src, src->values[i]->alias_of);
    v->dyn_source = clone_map(map, src, src->values[i]->dyn_source);
    const hc_node* p = src->values[i]->producer;
    v->producer = p && p->id >= 0 && p->id < src->num_nodes && src->nodes[p->id] == p ? nmap[p->id] : NULL;
  }
  if (st == HX_OK && src->num_inputs) {
    g->inputs = calloc((size_t)src->num_inputs, sizeof(hc_value*));
    if (!g->inputs) st = OOM();
    for (int i = 0; st == HX_OK && i < src->num_inputs; ++i) g->inputs[i] = clone_map(map, src, src->inputs[i]);
    g->num_inputs = src->num_inputs;
  }
  for (int i = 0; st == HX_OK && i < src->num_outputs; ++i) {
    st = hc_graph_add_output(g, clone_map(map, src, src->outputs[i]));
    if (st == HX_OK) g->output_names[i] = src->output_names[i];
  }
  for (int i = 0; st == HX_OK && i < src->num_captures; ++i)
    st = hc_graph_add_capture(g, clone_map(map, src, src->captures[i]), src->capture_slots[i]);
  free(map);
  free(nmap);
  if (st == HX_OK) *out = g;
  return st;
}

hx_status_t hc_graph_splice(hc_graph* g, int pos, hc_graph* sub) {
  if (pos < 0 || pos > g->num_nodes) pos = g->num_nodes;
  if (!grow((void***)&g->values, &g->cap_values, g->num_values + sub->num_values)) return OOM();
  if (!grow((void***)&g->nodes, &g->cap_nodes, g->num_nodes + sub->num_nodes)) return OOM();
  for (int i = 0; i < sub->num_values; ++i) {
    hc_value* v = sub->values[i];
    v->id = g->num_values;
    g->values[g->num_values++] = v;
  }
  int k = sub->num_nodes;
  memmove(g->nodes + pos + k, g->nodes + pos, sizeof(hc_node*) * (size_t)(g->num_nodes - pos));
  for (int i = 0; i < k; ++i) g->nodes[pos + i] = sub->nodes[i];
  g->num_nodes += k;
  for (int i = 0; i < g->num_nodes; ++i) g->nodes[i]->id = i;
  /* The subgraph's own subgraphs stay owned by it, and it by its owner. */
  sub->num_values = 0;
  sub->num_nodes = 0;
  sub->num_inputs = 0;
  sub->num_outputs = 0;
  sub->num_captures = 0;
  return HX_OK;
}
