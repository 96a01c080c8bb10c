/* Operator fusion and compile-time weight packing (-O2 and above).
 *
 * fusion: grows groups of nodes that one kernel computes, and records them
 * in the IR (hc_node.fused, see ir/graph.h):
 *  - epilogues: a Conv, Gemm or MatMul that the register-tiled kernels
 *    lower (hc_conv_fast / hc_matmul_fast) absorbs the element-wise ops that
 *    consume its float32 result (bias Add, residual Add, Relu, Clip,
 *    LeakyRelu, HardSigmoid, HardSwish, Sigmoid and the Mul of SiLU, Tanh,
 *    the Erf chain of GELU...), applied as each tile is stored;
 *  - chains: element-wise ops of equal output shape become one
 *    FusedElementwise kernel (compiler/ops/fused.c).
 * A group starts at a head node and takes, in node order, element-wise
 * consumers of its values whose output has the head's shape (and, for an
 * epilogue, dtype float32 and extra operands that hc_epilogue_coefs can
 * address) and whose other inputs do not depend on the group. It is then cut
 * to the longest prefix in which every value but the last is used only
 * inside the group and is not a graph output; only the last value is
 * stored. Fused nodes leave the node list; their intermediate values lose
 * their producer and get no storage.
 *
 * pack-weights: replaces the constant weight of a fast Gemm/MatMul/Conv by
 * a copy in the panel layout its kernel reads (HC_PACK_PANELS), so the
 * artifact holds only packed weights and nothing is repacked at run time.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/codegen/epilogue.h"
#include "compiler/ops/op.h"
#include "compiler/ops/prepack.h"
#include "passes/pass.h"

#define FUSE_MAX_OPS 32

extern const hc_op_desc hc_op_conv, hc_op_conv_transpose, hc_op_gemm, hc_op_matmul, hc_op_fused_elementwise,
    hc_op_matmul_integer, hc_op_qlinear_matmul, hc_op_conv_integer, hc_op_qlinear_conv;

/* Consumers of every value (live nodes, one entry per input slot). */
typedef struct uses {
  int* start; /* num_values + 1 offsets */
  hc_node** node;
} uses;

static hx_status_t uses_build(const hc_graph* g, uses* u) {
  u->start = calloc((size_t)g->num_values + 2, sizeof(int));
  int total = 0;
  for (int i = 0; i < g->num_nodes; ++i) total += g->nodes[i]->num_inputs;
  u->node = malloc(sizeof(hc_node*) * (size_t)(total + 1));
  if (!u->start || !u->node) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory in fusion");
  for (int i = 0; i < g->num_nodes; ++i) {
    const hc_node* n = g->nodes[i];
    if (n->dead) continue;
    for (int j = 0; j < n->num_inputs; ++j)
      if (n->inputs[j]) u->start[n->inputs[j]->id + 1]++;
  }
  for (int v = 0; v < g->num_values; ++v) u->start[v + 1] += u->start[v];
  int* fill = calloc((size_t)g->num_values + 1, sizeof(int));
  if (!fill) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory in fusion");
  for (int i = 0; i < g->num_nodes; ++i) {
    hc_node* n = g->nodes[i];
    if (n->dead) continue;
    for (int j = 0; j < n->num_inputs; ++j) {
      const hc_value* v = n->inputs[j];
      if (v) u->node[u->start[v->id] + fill[v->id]++] = n;
    }
  }
  free(fill);
  return HX_OK;
}

static void uses_free(uses* u) {
  free(u->start);
  free(u->node);
  u->start = NULL;
  u->node = NULL;
}

/* A group being grown. */
typedef struct group {
  hc_node* head;
  bool anchor;           /* head is a Conv/Gemm/MatMul; members are its epilogue */
  int split[2];          /* epilogue dimension groups (anchor only) */
  hc_node* member[FUSE_MAX_OPS + 1];
  int count;             /* members including the head */
  const hc_value* ext[HC_EPILOGUE_MAX_INPUTS];
  int next;              /* distinct external operands */
} group;

static int member_of(const group* gr, const hc_node* n) {
  for (int i = 0; i < gr->count; ++i)
    if (gr->member[i] == n) return i;
  return -1;
}

static int produced_in(const group* gr, const hc_value* v) {
  return v && v->producer ? member_of(gr, v->producer) : -1;
}

static bool same_shape(const hc_value* a, const hc_value* b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; ++d)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

static bool fusable_elementwise(const hc_node* n) {
  if (n->dead || !n->op || !n->op->scalar || (n->op->flags & HC_OP_NO_FOLD) || n->num_outputs != 1 || !n->outputs[0] ||
      n->num_fused || n->packed)
    return false;
  return (n->op->flags & HC_OP_ELEMENTWISE) || (n->op->elementwise_node && n->op->elementwise_node(n));
}

/* True when v's value depends on a group member (walking producers back to
 * nodes older than the head, which cannot). */
static bool depends_on_group(const group* gr, const hc_value* v, char* seen) {
  if (!v || !v->producer || v->kind != HC_VALUE_INTERMEDIATE) return false;
  const hc_node* p = v->producer;
  if (member_of(gr, p) >= 0) return true;
  if (p->id < gr->head->id || seen[p->id]) return false;
  seen[p->id] = 1;
  for (int j = 0; j < p->num_inputs; ++j)
    if (depends_on_group(gr, p->inputs[j], seen)) return true;
  return false;
}

/* Can c join the group? Checks shape, dtype, operand addressing and that no
 * outside input of c depends on the group (which would make a cycle). */
static bool can_join(const hc_graph* g, const group* gr, const hc_node* c, char* seen) {
  if (!fusable_elementwise(c) || member_of(gr, c) >= 0 || gr->count > FUSE_MAX_OPS) return false;
  const hc_value* ref = gr->head->outputs[0];
  const hc_value* out = c->outputs[0];
  if (!same_shape(out, ref)) return false;
  if (gr->anchor && out->dtype != HX_DTYPE_FLOAT32) return false;
  int next = gr->next;
  const hc_value* ext[HC_EPILOGUE_MAX_INPUTS];
  memcpy(ext, gr->ext, sizeof ext);
  for (int j = 0; j < c->num_inputs; ++j) {
    const hc_value* v = c->inputs[j];
    if (!v) return false;
    if (produced_in(gr, v) >= 0) continue;
    if (gr->anchor) {
      int64_t coef[3];
      if (!hc_epilogue_coefs(ref, v, gr->split, coef)) return false;
    }
    memset(seen, 0, (size_t)g->num_nodes + 1);
    if (depends_on_group(gr, v, seen)) return false;
    bool known = false;
    for (int k = 0; k < next; ++k) known |= ext[k] == v;
    if (!known) {
      if (next == HC_EPILOGUE_MAX_INPUTS) return false;
      ext[next++] = v;
    }
  }
  return true;
}

static void add_member(group* gr, hc_node* c) {
  gr->member[gr->count++] = c;
  for (int j = 0; j < c->num_inputs; ++j) {
    const hc_value* v = c->inputs[j];
    if (produced_in(gr, v) >= 0) continue;
    bool known = false;
    for (int k = 0; k < gr->next; ++k) known |= gr->ext[k] == v;
    if (!known) gr->ext[gr->next++] = v;
  }
}

/* Recounts the group's distinct external operands. */
static void rebuild_ext(group* gr) {
  gr->next = 0;
  for (int i = 0; i < gr->count; ++i) {
    const hc_node* c = gr->member[i];
    for (int j = 0; j < c->num_inputs; ++j) {
      const hc_value* v = c->inputs[j];
      if (produced_in(gr, v) >= 0) continue;
      bool known = false;
      for (int k = 0; k < gr->next; ++k) known |= gr->ext[k] == v;
      if (!known && gr->next < HC_EPILOGUE_MAX_INPUTS) gr->ext[gr->next++] = v;
    }
  }
}

/* A chain (not an epilogue) also takes the element-wise producer of an
 * operand of its last member c when c is that value's only user: e.g. the
 * second DequantizeLinear of a QDQ model's residual Add, so that both
 * operands are read as 8-bit values instead of one through a float32
 * tensor. The producer goes just before c (the chain evaluates members in
 * order) and must not depend on the group. */
static void take_producers(const hc_graph* g, group* gr, const uses* u, char* seen) {
  hc_node* c = gr->member[gr->count - 1];
  const hc_value* ref = gr->head->outputs[0];
  for (int j = 0; j < c->num_inputs; ++j) {
    const hc_value* v = c->inputs[j];
    if (!v || !v->producer || v->is_output || v->kind != HC_VALUE_INTERMEDIATE || produced_in(gr, v) >= 0) continue;
    hc_node* p = v->producer;
    if (!fusable_elementwise(p) || !same_shape(v, ref) || gr->count > FUSE_MAX_OPS) continue;
    if (u->start[v->id + 1] - u->start[v->id] != 1) continue;
    bool dep = false;
    for (int k = 0; k < p->num_inputs && !dep; ++k) {
      memset(seen, 0, (size_t)g->num_nodes + 1);
      dep = !p->inputs[k] || depends_on_group(gr, p->inputs[k], seen);
    }
    if (dep) continue;
    group t = *gr;
    t.member[t.count - 1] = p;
    t.member[t.count++] = c;
    rebuild_ext(&t);
    /* rebuild_ext stops at the operand limit: every operand must be in */
    bool all = true;
    for (int i = 0; i < t.count && all; ++i)
      for (int k = 0; k < t.member[i]->num_inputs && all; ++k) {
        const hc_value* w = t.member[i]->inputs[k];
        if (produced_in(&t, w) >= 0) continue;
        bool known = false;
        for (int q = 0; q < t.next; ++q) known |= t.ext[q] == w;
        all = known;
      }
    if (!all) continue;
    *gr = t;
    c = gr->member[gr->count - 1];
  }
}

/* Longest prefix of the members whose values, except the last one's, are
 * used only inside the prefix and are not graph outputs. */
static int valid_prefix(const group* gr, const uses* u) {
  for (int k = gr->count; k >= 2; --k) {
    bool ok = true;
    for (int i = 0; i < k - 1 && ok; ++i) {
      const hc_value* v = gr->member[i]->outputs[0];
      if (v->is_output) ok = false;
      for (int q = u->start[v->id]; ok && q < u->start[v->id + 1]; ++q) {
        int at = member_of(gr, u->node[q]);
        if (at < 0 || at >= k) ok = false;
      }
    }
    if (ok) return k;
  }
  return 1;
}

/* "Op(%a, %b)" for the printer's view of a fused op. */
static const char* describe(hc_graph* g, const hc_node* c) {
  char buf[512];
  int at = snprintf(buf, sizeof buf, "%s(", c->op_type);
  for (int j = 0; j < c->num_inputs && at < (int)sizeof buf; ++j)
    at += snprintf(buf + at, sizeof buf - (size_t)at, "%s%%%s", j ? ", " : "", c->inputs[j] ? c->inputs[j]->name : "_");
  if (at < (int)sizeof buf) snprintf(buf + at, sizeof buf - (size_t)at, ")");
  return hc_arena_strdup(&g->arena, buf);
}

/* Rewrites the graph for a group of k members (see the file comment). */
static hx_status_t apply_group(hc_graph* g, group* gr, int k) {
  hc_node* owner = gr->anchor ? gr->head : gr->member[k - 1];
  int first_op = gr->anchor ? 1 : 0;
  int nops = k - first_op;
  /* Externals of the kept members, in first-use order. */
  const hc_value* ext[HC_EPILOGUE_MAX_INPUTS];
  int next = 0;
  hc_node* ops[FUSE_MAX_OPS + 1];
  for (int i = first_op; i < k; ++i) {
    hc_node* c = gr->member[i];
    if (c == owner) {
      /* The owner's op changes: the fused op is a copy of its old self. */
      hc_node* copy = hc_arena_alloc(&g->arena, sizeof *copy);
      if (!copy) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory in fusion");
      *copy = *c;
      copy->dead = true;
      c = copy;
    }
    ops[i - first_op] = c;
    for (int j = 0; j < c->num_inputs; ++j) {
      const hc_value* v = c->inputs[j];
      int pm = produced_in(gr, v);
      if (pm >= 0 && pm < k) continue;
      bool known = false;
      for (int q = 0; q < next; ++q) known |= ext[q] == v;
      if (!known) ext[next++] = v;
    }
  }
  int base = 0;
  if (gr->anchor) base = owner->op == &hc_op_matmul ? 2 : 3;
  int nin = base + next;
  hc_value** inputs = hc_arena_alloc(&g->arena, sizeof(hc_value*) * (size_t)(nin ? nin : 1));
  hc_fused_op* fused = hc_arena_alloc(&g->arena, sizeof(hc_fused_op) * (size_t)nops);
  const char** text = hc_arena_alloc(&g->arena, sizeof(char*) * (size_t)nops);
  hc_attr* attrs = hc_arena_alloc(&g->arena, sizeof(hc_attr) * (size_t)(owner->num_attrs + 1));
  if (!inputs || !fused || !text || !attrs) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory in fusion");
  for (int j = 0; j < base && j < owner->num_inputs; ++j) inputs[j] = owner->inputs[j];
  for (int q = 0; q < next; ++q) inputs[base + q] = (hc_value*)ext[q];
  for (int i = 0; i < nops; ++i) {
    hc_node* c = ops[i];
    fused[i].node = c;
    fused[i].args = hc_arena_alloc(&g->arena, sizeof(int) * (size_t)(c->num_inputs ? c->num_inputs : 1));
    if (!fused[i].args) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory in fusion");
    for (int j = 0; j < c->num_inputs; ++j) {
      const hc_value* v = c->inputs[j];
      int pm = produced_in(gr, v);
      if (pm >= 0 && pm < k) {
        fused[i].args[j] = gr->anchor && pm == 0 ? -1 : -2 - (pm - first_op);
      } else {
        int q = 0;
        while (ext[q] != v) ++q;
        fused[i].args[j] = base + q;
      }
    }
    text[i] = describe(g, c);
  }
  /* Members leave the graph; their values lose their producer. */
  hc_value* result = gr->member[k - 1]->outputs[0];
  for (int i = 0; i < k - 1; ++i) {
    hc_node* c = gr->member[i];
    c->outputs[0]->producer = NULL;
    if (c != owner) c->dead = true;
  }
  if (gr->anchor) gr->member[k - 1]->dead = true;
  owner->outputs[0] = result;
  result->producer = owner;
  owner->inputs = inputs;
  owner->num_inputs = nin;
  owner->fused = fused;
  owner->num_fused = nops;
  owner->fused_input_base = base;
  if (!gr->anchor) {
    owner->op = &hc_op_fused_elementwise;
    owner->op_type = "FusedElementwise";
    owner->domain = "ai.harness";
    owner->num_attrs = 0;
  }
  memcpy(attrs, owner->attrs, sizeof(hc_attr) * (size_t)owner->num_attrs);
  attrs[owner->num_attrs] = (hc_attr){.name = "fused", .type = HC_ATTR_STRINGS, .n = nops, .strings = text};
  owner->attrs = attrs;
  owner->num_attrs++;
  return HX_OK;
}

static bool is_anchor(const hc_node* n, int* split) {
  if (n->dead || n->num_fused || n->num_outputs != 1 || !n->outputs[0]) return false;
  const hc_value* y = n->outputs[0];
  if (y->dtype != HX_DTYPE_FLOAT32) return false;
  if (n->op == &hc_op_conv && hc_conv_fast(n)) {
    split[0] = 1;
    split[1] = 2;
    return true;
  }
  if ((n->op == &hc_op_gemm || n->op == &hc_op_matmul) && hc_matmul_fast(n)) {
    split[0] = y->rank - 2;
    split[1] = y->rank - 1;
    return true;
  }
  return false;
}

/* Grows the group of head and applies it when it has at least one fused op;
 * *out_fused is the number of nodes it absorbed. */
static hx_status_t grow(hc_graph* g, const uses* u, hc_node* head, bool anchor, const int* split, char* seen,
                        int* out_fused) {
  group gr;
  memset(&gr, 0, sizeof gr);
  gr.head = head;
  gr.anchor = anchor;
  if (anchor) {
    gr.split[0] = split[0];
    gr.split[1] = split[1];
    gr.member[gr.count++] = head;
  } else {
    add_member(&gr, head);
  }
  for (;;) {
    hc_node* best = NULL;
    for (int i = 0; i < gr.count; ++i) {
      const hc_value* v = gr.member[i]->outputs[0];
      for (int q = u->start[v->id]; q < u->start[v->id + 1]; ++q) {
        hc_node* c = u->node[q];
        if (best && c->id >= best->id) continue;
        if (can_join(g, &gr, c, seen)) best = c;
      }
    }
    if (!best) break;
    add_member(&gr, best);
    if (!anchor) take_producers(g, &gr, u, seen);
  }
  *out_fused = 0;
  if (gr.count < 2) return HX_OK;
  int k = valid_prefix(&gr, u);
  if (k < 2) return HX_OK;
  *out_fused = k - 1;
  return apply_group(g, &gr, k);
}

static hx_status_t run_fusion(hc_pass_ctx* ctx, hc_graph* g) {
  uses u = {0};
  char* seen = calloc((size_t)g->num_nodes + 1, 1);
  hx_status_t st = seen ? uses_build(g, &u) : hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory in fusion");
  int epilogues = 0, chains = 0, absorbed = 0;
  /* Epilogues first, so that chains do not take the ops a kernel could
   * apply for free. */
  for (int i = 0; st == HX_OK && i < g->num_nodes; ++i) {
    hc_node* n = g->nodes[i];
    int split[2], f = 0;
    if (!is_anchor(n, split)) continue;
    st = grow(g, &u, n, true, split, seen, &f);
    if (f) {
      ++epilogues;
      absorbed += f;
      uses_free(&u);
      if (st == HX_OK) st = uses_build(g, &u);
    }
  }
  for (int i = 0; st == HX_OK && i < g->num_nodes; ++i) {
    hc_node* n = g->nodes[i];
    int f = 0;
    if (!fusable_elementwise(n)) continue;
    st = grow(g, &u, n, false, NULL, seen, &f);
    if (f) {
      ++chains;
      absorbed += f;
      uses_free(&u);
      if (st == HX_OK) st = uses_build(g, &u);
    }
  }
  uses_free(&u);
  free(seen);
  if (st != HX_OK) return st;
  hc_graph_compact(g);
  /* An epilogue's operands (a residual) may come from nodes that were after
   * the anchor. */
  HX_RETURN_IF_ERROR(hc_graph_sort(g));
  if (ctx->verbose && ctx->log)
    fprintf(ctx->log, "fusion: %d epilogues, %d element-wise chains, %d nodes absorbed\n", epilogues, chains, absorbed);
  return HX_OK;
}

static hx_status_t run_pack_weights(hc_pass_ctx* ctx, hc_graph* g) {
  int packed = 0;
  for (int i = 0; i < g->num_nodes; ++i) {
    hc_node* n = g->nodes[i];
    bool done = false;
    if (n->op == &hc_op_gemm || n->op == &hc_op_matmul)
      HX_RETURN_IF_ERROR(hc_matmul_prepack(g, n, &done));
    else if (n->op == &hc_op_conv || n->op == &hc_op_conv_transpose)
      HX_RETURN_IF_ERROR(hc_conv_prepack(g, n, ctx->target, &done));
    else if (n->op == &hc_op_matmul_integer || n->op == &hc_op_qlinear_matmul)
      HX_RETURN_IF_ERROR(hc_mmi_prepack(g, n, ctx->target, &done));
    else if (n->op == &hc_op_conv_integer || n->op == &hc_op_qlinear_conv)
      HX_RETURN_IF_ERROR(hc_ci_prepack(g, n, ctx->target, &done));
    packed += done;
  }
  if (ctx->verbose && ctx->log) fprintf(ctx->log, "pack-weights: packed %d weights\n", packed);
  return HX_OK;
}

const hc_pass hc_pass_fusion = {"fusion", "fuse element-wise epilogues into Conv/Gemm/MatMul and element-wise chains",
                                run_fusion};
const hc_pass hc_pass_pack_weights = {"pack-weights", "store constant weights in the layout their kernels read",
                                      run_pack_weights};
