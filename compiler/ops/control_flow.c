/* If (opset 1 on), Loop (opset 1 on) and Scan (opset 8 on): subgraph bodies
 * compiled into real branches and loops.
 *
 * Each body is compiled with the ordinary pipeline and lowered to ordinary
 * kernels (control_flow.h); the node itself emits ONE kernel (one task) that
 * calls them:
 *   If:   if (cond) { then-kernels; outputs } else { else-kernels; outputs }
 *         A constant condition inlines the chosen branch into the enclosing
 *         graph at shape inference instead.
 *   Loop: for (i = 0; i < M && cond; ++i) { body kernels; scan-output slice
 *         i; cond = cond_out; loop-carried values move to the next
 *         iteration's inputs }.
 *   Scan: for (t = 0; t < T; ++t) { gather element t of each scan input
 *         (its axis and direction); body kernels; scatter each scan output
 *         slice; state variables move on }, per batch entry for opset 8.
 *
 * Storage. The node's workspace holds the body's planned region and small
 * slots: the iteration number and condition (Loop), the current element of
 * each scan input (Scan), states whose node output is omitted (and all
 * states of Scan-8, which are per batch entry), and staging copies for a
 * state that takes another state's incoming value (a swap). A loop-carried
 * value otherwise lives in the node's own output, which is its final value,
 * so an iteration costs one copy per state. If outputs produced by a branch
 * node are written by it directly into the If's output.
 *
 * Static shapes: loop-carried values and states must keep their shape; a
 * Loop scan output has one slice per iteration, so the trip count must be a
 * compile-time constant (M frozen with --constant, or a model-declared
 * output shape as the bound). When the loop may stop early (a condition
 * computed at run time), the scan outputs have a value-dependent shape
 * (compiler/ops/dynamic.h) whose upper bound is M. A body that needs the
 * iteration number as a compile-time constant (Slice starts computed from
 * it...) is compiled once per iteration when M is a small constant, and
 * the loop switches on i. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/control_flow.h"
#include "compiler/ops/dynamic.h"
#include "harness/artifact_abi.h"

/* Largest trip count for which a body is compiled once per iteration. */
#define CF_MAX_SPECIALISE 64
#define CF_NONE UINT64_MAX

enum { CF_IF = 0, CF_LOOP = 1, CF_SCAN = 2 };

/* What infer() decided and lower() emits; in n->op_state. */
typedef struct cf_state {
  int kind;
  int num_bodies;
  hc_graph** bodies; /* If: then, else; Loop: one, or one per iteration; Scan: one */
  hc_graph* pristine;/* Loop: the imported body, copied for each compilation */
  bool specialised;  /* Loop: bodies[i] runs iteration i */
  uint64_t region;   /* bytes of the largest body region */
  uint64_t region_offset, ws_bytes;
  int num_state;     /* Loop: loop-carried values; Scan: state variables */
  int num_scan_in, num_scan_out;
  uint64_t* state_off; /* per state: workspace slot, CF_NONE when the node output holds it */
  uint64_t* stage_off; /* per state: staging slot, CF_NONE when never needed */
  uint64_t* elem_off;  /* Scan: per scan input, the current element */
  uint64_t iter_off, cond_off; /* Loop */
  /* Loop trip count: M baked in when constant; scan outputs hold up to
   * bound[k] slices, exactly that many unless dynamic. */
  bool m_const;
  int64_t m;
  int64_t* bound;
  bool dynamic;
  double trips; /* for the cost estimate */
  /* Scan */
  int64_t batch, seq_len; /* batch: opset 8 only (else 0) */
  int* in_axis;
  int* in_dir;
  int* out_axis;
  int* out_dir;
} cf_state;

static hc_graph* body_attr(const hc_node* n, const char* name) {
  const hc_attr* a = hc_node_attr(n, name);
  return a && a->type == HC_ATTR_GRAPH ? a->g : NULL;
}

/* Points attribute `name` at the compiled body, so the printer and the
 * verifier show what is lowered. */
static void set_body_attr(hc_node* n, const char* name, hc_graph* body) {
  for (int a = 0; a < n->num_attrs; ++a)
    if (!strcmp(n->attrs[a].name, name) && n->attrs[a].type == HC_ATTR_GRAPH) n->attrs[a].g = body;
}

static hx_status_t missing_body(const hc_node* n, const char* name) {
  return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute '%s' (a graph) is required", name);
}

/* A one-element input of dtype dt (Loop's M, a condition), if present. */
static hx_status_t check_flag(const hc_node* n, int i, hx_dtype_t dt, const char* what) {
  const hc_value* v = hc_input(n, i);
  if (!v) return HX_OK;
  if (v->dtype != dt || hc_value_numel(v) != 1) {
    char shape[64];
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "%s ('%s') must be a single %s, got %s[%s]", what, v->name,
                         hx_dtype_name(dt), hx_dtype_name(v->dtype), hc_shape_str(v->rank, v->dims, shape, sizeof shape));
  }
  return HX_OK;
}

static bool same_shape(const hc_value* a, const hc_value* b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; ++d)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

static const char* shape_of(const hc_value* v, char* buf, size_t cap) { return hc_shape_str(v->rank, v->dims, buf, cap); }

/* Binds formal input v of body to dtype/shape, after checking the dtype the
 * body declares (if any). */
static hx_status_t bind_formal(const hc_node* n, const hc_graph* body, int index, hx_dtype_t dt, int rank,
                               const int64_t* dims) {
  hc_value* v = body->inputs[index];
  if (v->dtype != HX_DTYPE_UNDEFINED && v->dtype != dt)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "body '%s' input %d ('%s') is declared %s but receives %s",
                         body->name, index, v->name, hx_dtype_name(v->dtype), hx_dtype_name(dt));
  hc_value_set_shape(v, dt, rank, dims);
  v->kind = HC_VALUE_INPUT;
  v->data = NULL;
  v->alias_of = NULL;
  return HX_OK;
}

/* A scalar formal (iteration number, condition): rank 0, or [1] when the
 * body declares it so. */
static hx_status_t bind_scalar_formal(const hc_node* n, const hc_graph* body, int index, hx_dtype_t dt) {
  const hc_value* v = body->inputs[index];
  int64_t one = 1;
  bool vec = v->rank == 1 && (v->dims[0] == 1 || v->dims[0] < 0);
  return bind_formal(n, body, index, dt, vec ? 1 : 0, &one);
}

static cf_state* new_state(hc_graph* g, int kind, int num_bodies) {
  cf_state* st = hc_arena_alloc(&g->arena, sizeof(cf_state));
  if (!st) return NULL;
  memset(st, 0, sizeof(*st));
  st->kind = kind;
  st->num_bodies = num_bodies;
  st->bodies = hc_arena_alloc(&g->arena, sizeof(hc_graph*) * (size_t)(num_bodies ? num_bodies : 1));
  return st->bodies ? st : NULL;
}

static uint64_t* new_offsets(hc_graph* g, int count) {
  uint64_t* o = hc_arena_alloc(&g->arena, sizeof(uint64_t) * (size_t)(count ? count : 1));
  for (int i = 0; o && i < count; ++i) o[i] = CF_NONE;
  return o;
}

#define OOM() hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory compiling control flow")

/* Plans every body; st->region is the largest region. */
static hx_status_t plan_bodies(cf_state* st) {
  st->region = 0;
  for (int b = 0; b < st->num_bodies; ++b) {
    uint64_t bytes;
    HX_RETURN_IF_ERROR(cf_plan_body(st->bodies[b], &bytes));
    if (bytes > st->region) st->region = bytes;
  }
  return HX_OK;
}

/* For state k of body b (formal inputs first_formal.., outputs
 * first_out..): the state index whose incoming value the outgoing value is
 * (views followed), or -1 when it is anything else. */
static int state_source(const hc_graph* b, int first_formal, int first_out, int num_state, int k) {
  const hc_value* r = cf_root(b->outputs[first_out + k]);
  for (int j = 0; j < num_state; ++j)
    if (r == b->inputs[first_formal + j]) return j;
  return -1;
}

/* Slots for states without a node output (all of them when per_batch),
 * staging slots for states that take another state's incoming value, then
 * the body region. `next` is the first free byte. */
static hx_status_t layout_states(hc_graph* g, hc_node* n, cf_state* st, int first_formal, int first_out, bool per_batch,
                                 uint64_t next) {
  int ns = st->num_state;
  st->state_off = new_offsets(g, ns);
  st->stage_off = new_offsets(g, ns);
  if (!st->state_off || !st->stage_off) return OOM();
  const hc_graph* b0 = st->bodies[0];
  for (int k = 0; k < ns; ++k) {
    if (!per_batch && k < n->num_outputs && n->outputs[k]) continue;
    st->state_off[k] = next;
    next += cf_align(hc_value_nbytes(b0->inputs[first_formal + k]));
  }
  for (int k = 0; k < ns; ++k) {
    bool need = false;
    for (int b = 0; b < st->num_bodies; ++b) {
      int j = state_source(st->bodies[b], first_formal, first_out, ns, k);
      if (j >= 0 && j != k) need = true;
    }
    if (!need) continue;
    st->stage_off[k] = next;
    next += cf_align(hc_value_nbytes(b0->inputs[first_formal + k]));
  }
  st->region_offset = next;
  st->ws_bytes = next + st->region;
  return HX_OK;
}

/* After the body ran: stage the states that take another state's incoming
 * value, then move every outgoing value to its state (S[k]). */
static void move_states(hc_kb* kb, const cf_state* st, const hc_graph* b, const int* src, int first_out, LLVMValueRef ws,
                        LLVMValueRef const* S) {
  for (int k = 0; k < st->num_state; ++k) {
    if (src[k] < 0 || src[k] == k) continue;
    const hc_value* v = b->outputs[first_out + k];
    cf_copy(kb, cf_offset(kb, ws, hc_kb_i64(kb, (int64_t)st->stage_off[k])), hc_kb_ptr(kb, v), hc_value_nbytes(v));
  }
  for (int k = 0; k < st->num_state; ++k) {
    if (src[k] == k) continue;
    const hc_value* v = b->outputs[first_out + k];
    LLVMValueRef from = src[k] >= 0 ? cf_offset(kb, ws, hc_kb_i64(kb, (int64_t)st->stage_off[k])) : hc_kb_ptr(kb, v);
    cf_copy(kb, S[k], from, hc_value_nbytes(v));
  }
}

/* Workspace bytes: the body region and the slots around it. */
static uint64_t workspace_cf(const hc_node* n) {
  const cf_state* st = n->op_state;
  return st ? st->ws_bytes : 0;
}

/* ---- If ------------------------------------------------------------------------- */

/* Replaces If node n (constant condition) by the nodes of `body`, inserted
 * after it: the body's captures become the outer values they stand for and
 * the If's outputs the body's outputs. Shape inference continues with them. */
static hx_status_t inline_branch(hc_graph* g, hc_node* n, hc_graph* body) {
  for (int c = 0; c < body->num_captures; ++c) {
    hc_value* p = body->captures[c];
    hc_value* o = n->inputs[body->capture_slots[c]];
    for (int i = 0; i < body->num_nodes; ++i)
      for (int j = 0; j < body->nodes[i]->num_inputs; ++j)
        if (body->nodes[i]->inputs[j] == p) body->nodes[i]->inputs[j] = o;
    for (int i = 0; i < body->num_outputs; ++i)
      if (body->outputs[i] == p) body->outputs[i] = o;
  }
  /* The captures are unused now; only the branch's own values move. */
  int w = 0;
  for (int i = 0; i < body->num_values; ++i) {
    hc_value* v = body->values[i];
    if (hc_graph_capture_index(body, v) >= 0) continue;
    v->id = w;
    body->values[w++] = v;
  }
  body->num_values = w;
  int nout = body->num_outputs;
  hc_value** outs = malloc(sizeof(hc_value*) * (size_t)(nout ? nout : 1));
  if (!outs) return OOM();
  for (int i = 0; i < nout; ++i) {
    outs[i] = body->outputs[i];
    /* A branch value is no graph output of g (unless the If's was: below). */
    if (outs[i]->id < body->num_values && body->values[outs[i]->id] == outs[i]) outs[i]->is_output = false;
  }
  hx_status_t st = hc_graph_splice(g, n->id + 1, body);
  for (int i = 0; st == HX_OK && i < nout; ++i)
    if (n->outputs[i]) hc_graph_replace_uses(g, n->outputs[i], outs[i]);
  free(outs);
  n->dead = true;
  return st;
}

/* Collects into names[] (at most cap, deduplicated) the run-time inputs of g
 * (graph inputs, or values captured from an enclosing graph) that value v is
 * computed from. `seen` has g->num_values entries. */
static void runtime_sources(const hc_graph* g, const hc_value* v, bool* seen, const char** names, int* count, int cap) {
  if (!v || v->id < 0 || v->id >= g->num_values || g->values[v->id] != v || seen[v->id]) return;
  seen[v->id] = true;
  if (v->kind == HC_VALUE_INPUT) {
    if (*count < cap) names[(*count)++] = v->name;
    return;
  }
  if (v->kind == HC_VALUE_CONST || !v->producer) return;
  for (int i = 0; i < v->producer->num_inputs; ++i) runtime_sources(g, v->producer->inputs[i], seen, names, count, cap);
}

/* Adds to a failed branch's status what the user can do about it: the
 * condition is computed at run time, so both branches are compiled for the
 * compiled shapes, and a branch that is only valid for other shapes (Silero
 * VAD's 8 kHz branch for a 16 kHz chunk...) fails although it would never be
 * taken; freezing the inputs the condition comes from compiles only the
 * branch taken. The model is valid (a run-time engine never runs that
 * branch), so this is reported as unsupported, which harness-test takes as
 * its cue to freeze integer inputs. */
static hx_status_t if_branch_failed(const hc_graph* g, const hc_node* n, hx_status_t s) {
  if (hx_status_code(s) == HX_STATUS_OUT_OF_MEMORY) return s;
  enum { CAP = 4 };
  const char* names[CAP];
  int count = 0;
  bool* seen = calloc((size_t)(g->num_values ? g->num_values : 1), 1);
  if (seen) runtime_sources(g, n->inputs[0], seen, names, &count, CAP);
  free(seen);
  char list[256] = "";
  size_t len = 0;
  for (int i = 0; i < count && len < sizeof list; ++i)
    len += (size_t)snprintf(list + len, sizeof list - len, "%s'%s'", i ? ", " : "", names[i]);
  hx_status_t e;
  if (count)
    e = hx_status_make(HX_STATUS_UNSUPPORTED,
                       "%s; the If condition ('%s') is computed at run time from input%s %s, so Harness compiles both "
                       "branches for the compiled shapes: if this branch is never taken with them, freeze %s with "
                       "--constant %s=FILE.pb so only the branch taken is compiled",
                       hx_status_message(s), n->inputs[0]->name, count > 1 ? "s" : "", list,
                       count > 1 ? "those inputs" : "it", count > 1 ? "NAME" : names[0]);
  else
    e = hx_status_make(HX_STATUS_UNSUPPORTED,
                       "%s; the If condition ('%s') is computed at run time, so Harness compiles both branches for the "
                       "compiled shapes",
                       hx_status_message(s), n->inputs[0]->name);
  hx_status_free(s);
  return e;
}

static hx_status_t infer_if(hc_graph* g, hc_node* n) {
  if (n->num_inputs - n->num_captures != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "expected 1 input (cond), got %d", n->num_inputs - n->num_captures);
  if (!n->inputs[0]) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "required input 0 (cond) is missing");
  HX_RETURN_IF_ERROR(check_flag(n, 0, HX_DTYPE_BOOL, "cond"));
  hc_graph* br[2] = {body_attr(n, "then_branch"), body_attr(n, "else_branch")};
  const char* names[2] = {"then_branch", "else_branch"};
  for (int b = 0; b < 2; ++b) {
    if (!br[b]) return missing_body(n, names[b]);
    if (br[b]->num_inputs)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "%s has %d inputs; If branches take none", names[b], br[b]->num_inputs);
    if (br[b]->num_outputs != n->num_outputs)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "%s has %d outputs but the node has %d", names[b],
                           br[b]->num_outputs, n->num_outputs);
  }
  int64_t c;
  if (hc_value_const_i64(n->inputs[0], 0, &c)) return inline_branch(g, n, c ? br[0] : br[1]);

  cf_state* st = new_state(g, CF_IF, 2);
  if (!st) return OOM();
  for (int b = 0; b < 2; ++b) {
    hx_status_t s = cf_infer_body(g, n, br[b], names[b]);
    if (s != HX_OK) return if_branch_failed(g, n, s);
    st->bodies[b] = br[b];
  }
  for (int k = 0; k < n->num_outputs; ++k) {
    const hc_value *t = br[0]->outputs[k], *e = br[1]->outputs[k];
    char a[96], b[96];
    if (t->dtype != e->dtype)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "output %d is %s in then_branch but %s in else_branch", k,
                           hx_dtype_name(t->dtype), hx_dtype_name(e->dtype));
    if (!same_shape(t, e))
      return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                           "output %d has shape %s in then_branch but %s in else_branch; Harness needs both branches "
                           "to produce the same static shape (the condition is computed at run time)",
                           k, shape_of(t, a, sizeof a), shape_of(e, b, sizeof b));
    if (n->outputs[k]) hc_set_output(n, k, t->dtype, t->rank, t->dims);
  }
  HX_RETURN_IF_ERROR(plan_bodies(st));
  st->region_offset = 0;
  st->ws_bytes = st->region;
  n->op_state = st;
  return HX_OK;
}

/* Whether branch output k may be written straight into the If's output k:
 * produced by a branch node (not a view, a capture or a constant) and not
 * listed earlier. */
static bool if_output_direct(const hc_node* n, const hc_graph* body, int k) {
  const hc_value* v = body->outputs[k];
  if (!n->outputs[k] || n->outputs[k]->dynamic || v->kind != HC_VALUE_INTERMEDIATE || !v->producer || v->alias_of ||
      v->storage.base != HX_BASE_ARENA)
    return false;
  for (int j = 0; j < k; ++j)
    if (body->outputs[j] == v) return false;
  return true;
}

static hx_status_t lower_if(hc_lower_ctx* lc, hc_node* n) {
  cf_state* st = n->op_state;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, 1, &kb));
  LLVMValueRef cond = hc_kb_load(&kb, HX_DTYPE_BOOL, hc_kb_ptr(&kb, n->inputs[0]), hc_kb_i64(&kb, 0));
  LLVMBasicBlockRef bb[2], join = LLVMAppendBasicBlockInContext(lc->llctx, kb.fn, "endif");
  bb[0] = LLVMAppendBasicBlockInContext(lc->llctx, kb.fn, "then");
  bb[1] = LLVMAppendBasicBlockInContext(lc->llctx, kb.fn, "else");
  LLVMBuildCondBr(kb.b, cond, bb[0], bb[1]);
  double flops = 0, bytes = 0;
  hx_status_t s = HX_OK;
  for (int b = 0; b < 2 && s == HX_OK; ++b) {
    hc_graph* body = st->bodies[b];
    LLVMPositionBuilderAtEnd(kb.b, bb[b]);
    cf_bind_body(n, body, st->region_offset);
    bool* direct = calloc((size_t)n->num_outputs + 1, sizeof(bool));
    if (!direct) s = OOM();
    for (int k = 0; s == HX_OK && k < n->num_outputs; ++k) direct[k] = if_output_direct(n, body, k);
    for (int k = 0; s == HX_OK && k < n->num_outputs; ++k)
      if (direct[k]) body->outputs[k]->alias_of = n->outputs[k];
    cf_kernels ks = {0};
    if (s == HX_OK) s = cf_lower_body(lc, body, &ks);
    if (s == HX_OK) {
      cf_call_kernels(&kb, &ks);
      for (int k = 0; k < n->num_outputs; ++k)
        if (n->outputs[k] && !direct[k])
          cf_copy(&kb, hc_kb_ptr(&kb, n->outputs[k]), hc_kb_ptr(&kb, body->outputs[k]), hc_value_nbytes(n->outputs[k]));
      LLVMBuildBr(kb.b, join);
      if (ks.flops > flops) flops = ks.flops;
      if (ks.bytes > bytes) bytes = ks.bytes;
    }
    for (int k = 0; direct && k < n->num_outputs; ++k)
      if (direct[k]) body->outputs[k]->alias_of = NULL;
    free(direct);
    cf_kernels_free(&ks);
    cf_unbind_body(n, body, st->region_offset);
  }
  if (s != HX_OK) {
    /* Close the half-built kernel so the module stays well-formed. */
    LLVMPositionBuilderAtEnd(kb.b, join);
    hc_kb_end(&kb, 0, 0);
    return s;
  }
  LLVMPositionBuilderAtEnd(kb.b, join);
  hc_kb_end(&kb, flops, bytes);
  return HX_OK;
}

/* ---- Loop ------------------------------------------------------------------------- */

/* Binds the Loop body's formal inputs: iteration number (a constant when
 * iter >= 0), condition, loop-carried values as their initial values. */
static hx_status_t bind_loop_formals(hc_node* n, hc_graph* body, int num_state, int64_t iter) {
  HX_RETURN_IF_ERROR(bind_scalar_formal(n, body, 0, HX_DTYPE_INT64));
  HX_RETURN_IF_ERROR(bind_scalar_formal(n, body, 1, HX_DTYPE_BOOL));
  for (int k = 0; k < num_state; ++k) {
    const hc_value* init = n->inputs[2 + k];
    HX_RETURN_IF_ERROR(bind_formal(n, body, 2 + k, init->dtype, init->rank, init->dims));
  }
  if (iter >= 0) {
    hc_value* v = body->inputs[0];
    int64_t* d = hc_graph_alloc_data(body, sizeof(int64_t));
    if (!d) return OOM();
    *d = iter;
    v->kind = HC_VALUE_CONST;
    v->data = d;
  }
  return HX_OK;
}

/* Whether any node of g (or a subgraph capturing it) reads v. */
static bool is_read(const hc_graph* g, const hc_value* v) {
  if (hc_value_use_count(g, v) > 0) return true;
  for (int i = 0; i < g->num_outputs; ++i)
    if (g->outputs[i] == v) return true;
  return false;
}

/* What the body does with the condition: keeps the incoming one, sets a
 * constant, or computes it. */
enum { COND_COMPUTED = 0, COND_KEEP, COND_TRUE, COND_FALSE };
static int cond_kind(const hc_graph* b) {
  const hc_value* c = b->outputs[0];
  int64_t x;
  if (cf_root(c) == b->inputs[1]) return COND_KEEP;
  if (hc_value_const_i64(c, 0, &x)) return x ? COND_TRUE : COND_FALSE;
  return COND_COMPUTED;
}

/* Checks one compiled body against the node: condition, loop-carried
 * shapes, scan-output shapes (equal to body 0's). */
static hx_status_t check_loop_body(const hc_node* n, const cf_state* st, const hc_graph* b, int iteration) {
  int N = st->num_state, K = st->num_scan_out;
  char where[48] = "";
  if (iteration >= 0) snprintf(where, sizeof where, " (iteration %d)", iteration);
  const hc_value* c = b->outputs[0];
  if (c->dtype != HX_DTYPE_BOOL || hc_value_numel(c) != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "body output 0 ('%s', the condition) must be a single bool%s",
                         c->name, where);
  for (int k = 0; k < N; ++k) {
    const hc_value *in = b->inputs[2 + k], *out = b->outputs[1 + k];
    char a[96], s[96];
    if (in->dtype != out->dtype || !same_shape(in, out))
      return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                           "loop-carried value %d ('%s') enters the body as %s[%s] but leaves it as %s[%s] ('%s')%s; "
                           "Harness needs loop-carried values to keep their type and shape across iterations",
                           k, in->name, hx_dtype_name(in->dtype), shape_of(in, a, sizeof a), hx_dtype_name(out->dtype),
                           shape_of(out, s, sizeof s), out->name, where);
  }
  for (int k = 0; k < K; ++k) {
    const hc_value *o = b->outputs[1 + N + k], *o0 = st->bodies[0]->outputs[1 + N + k];
    char a[96], s[96];
    if (o->rank + 1 > HC_MAX_RANK)
      return hc_node_error(n, HX_STATUS_UNSUPPORTED, "scan output %d ('%s') would have rank %d; Harness supports up to %d",
                           k, o->name, o->rank + 1, HC_MAX_RANK);
    if (o->dtype != o0->dtype || !same_shape(o, o0))
      return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                           "scan output %d is %s[%s] at iteration 0 but %s[%s]%s; Harness needs scan outputs of one "
                           "shape in every iteration",
                           k, hx_dtype_name(o0->dtype), shape_of(o0, a, sizeof a), hx_dtype_name(o->dtype),
                           shape_of(o, s, sizeof s), where);
  }
  return HX_OK;
}

/* Trip count: st->m/m_const from M; exact iterations when the condition
 * allows knowing them; scan-output bounds and dynamic. */
static hx_status_t loop_trip_count(hc_graph* g, hc_node* n, cf_state* st) {
  const hc_value *M = hc_input(n, 0), *cond = hc_input(n, 1);
  int64_t x;
  int init = -1; /* initial condition: 1, 0, or -1 = run time */
  if (!cond) init = 1;
  else if (hc_value_const_i64(cond, 0, &x)) init = x != 0;
  bool exact = false;
  int64_t trips = 0;
  if (init == 0) {
    exact = true;
  } else if (st->m_const && init == 1) {
    if (st->specialised) {
      exact = true;
      bool c = true;
      for (int64_t i = 0; i < st->m && c; ++i) {
        int k = cond_kind(st->bodies[i]);
        if (k == COND_COMPUTED) exact = false;
        ++trips;
        if (k == COND_FALSE) c = false;
      }
    } else {
      int k = cond_kind(st->bodies[0]);
      exact = k != COND_COMPUTED;
      trips = k == COND_FALSE ? (st->m > 0) : st->m;
    }
  }
  int N = st->num_state, K = st->num_scan_out;
  st->bound = hc_arena_alloc(&g->arena, sizeof(int64_t) * (size_t)(K ? K : 1));
  if (!st->bound) return OOM();
  st->dynamic = false;
  st->trips = exact ? (double)trips : st->m_const ? (double)st->m : 1.0;
  for (int k = 0; k < K; ++k) {
    hc_value* out = n->outputs[N + k];
    const hc_value* so = st->bodies[0]->outputs[1 + N + k];
    if (exact) {
      st->bound[k] = trips;
      continue;
    }
    st->dynamic = true;
    if (st->m_const) {
      st->bound[k] = st->m;
      continue;
    }
    /* No constant trip count: a declared output shape bounds it. */
    int rank;
    int64_t dims[HC_MAX_RANK];
    bool ok = out && hc_declared_shape(out, &rank, dims) && rank == so->rank + 1;
    for (int d = 0; ok && d < so->rank; ++d) ok = dims[d + 1] == so->dims[d];
    if (ok) {
      st->bound[k] = dims[0];
      continue;
    }
    const char* oname = out ? out->name : "";
    if (M)
      return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                           "scan output %d ('%s') gets one slice per iteration, so the trip count must be known at "
                           "compile time, but M ('%s') is computed at run time and the model declares no static shape "
                           "for '%s' (freeze M with --constant %s=FILE.pb if it is a graph input)",
                           k, oname, M->name, oname, M->name);
    return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                         "scan output %d ('%s') gets one slice per iteration, but the loop has no trip count M and the "
                         "model declares no static shape for '%s'",
                         k, oname, oname);
  }
  return HX_OK;
}

static hx_status_t infer_loop(hc_graph* g, hc_node* n) {
  int nexp = n->num_inputs - n->num_captures;
  if (nexp < 2)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "expected at least 2 inputs (M, cond), got %d", nexp);
  int N = nexp - 2, K = n->num_outputs - N;
  if (K < 0)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "%d loop-carried values need at least %d outputs, got %d", N, N,
                         n->num_outputs);
  const cf_state* prev = n->op_state;
  hc_graph* pristine = prev ? prev->pristine : body_attr(n, "body");
  if (!pristine) return missing_body(n, "body");
  if (pristine->num_inputs != N + 2)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "body has %d inputs; expected %d (iteration number, condition, %d loop-carried values)",
                         pristine->num_inputs, N + 2, N);
  if (pristine->num_outputs != 1 + N + K)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "body has %d outputs; expected %d (condition, %d loop-carried values, %d scan outputs)",
                         pristine->num_outputs, 1 + N + K, N, K);
  HX_RETURN_IF_ERROR(check_flag(n, 0, HX_DTYPE_INT64, "M (trip count)"));
  HX_RETURN_IF_ERROR(check_flag(n, 1, HX_DTYPE_BOOL, "cond"));
  for (int k = 0; k < N; ++k)
    if (!n->inputs[2 + k])
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "loop-carried value %d (input %d) is missing", k, 2 + k);

  cf_state* st = new_state(g, CF_LOOP, 1);
  if (!st) return OOM();
  st->pristine = pristine;
  st->num_state = N;
  st->num_scan_out = K;
  const hc_value* M = hc_input(n, 0);
  int64_t m = 0;
  st->m_const = M && hc_value_const_i64(M, 0, &m);
  st->m = m < 0 ? 0 : m;

  /* The body once for every iteration; when it needs the iteration number
   * as a constant, once per iteration. */
  hc_graph* work;
  HX_RETURN_IF_ERROR(hc_graph_clone(g, pristine, &work));
  hx_status_t s = bind_loop_formals(n, work, N, -1);
  if (s == HX_OK) s = cf_infer_body(g, n, work, "body");
  st->bodies[0] = work;
  if (s != HX_OK) {
    bool reads_iter = is_read(pristine, pristine->inputs[0]);
    if (hx_status_code(s) != HX_STATUS_UNSUPPORTED || !reads_iter) return s;
    if (!st->m_const || st->m < 1 || st->m > CF_MAX_SPECIALISE) {
      char hint[512];
      if (!st->m_const)
        snprintf(hint, sizeof hint,
                 "the body needs this at compile time and it depends on the iteration number: Harness then compiles "
                 "the body once per iteration, which needs the trip count M%s%s%s to be a compile-time constant of at "
                 "most %d (freeze it with --constant %s=FILE.pb if it is a graph input)",
                 M ? " ('" : "", M ? M->name : "", M ? "')" : "", CF_MAX_SPECIALISE, M ? M->name : "M");
      else
        snprintf(hint, sizeof hint,
                 "the body needs this at compile time and it depends on the iteration number, but the trip count %lld "
                 "is too large to compile the body once per iteration (at most %d)",
                 (long long)st->m, CF_MAX_SPECIALISE);
      hx_status_t e = hx_status_make(HX_STATUS_UNSUPPORTED, "%s; %s", hx_status_message(s), hint);
      hx_status_free(s);
      return e;
    }
    hx_status_free(s);
    st->specialised = true;
    st->num_bodies = (int)st->m;
    st->bodies = hc_arena_alloc(&g->arena, sizeof(hc_graph*) * (size_t)st->m);
    if (!st->bodies) return OOM();
    for (int64_t i = 0; i < st->m; ++i) {
      HX_RETURN_IF_ERROR(hc_graph_clone(g, pristine, &st->bodies[i]));
      s = bind_loop_formals(n, st->bodies[i], N, i);
      if (s == HX_OK) s = cf_infer_body(g, n, st->bodies[i], "body");
      if (s != HX_OK) return hx_status_annotate(s, "compiled for iteration %lld", (long long)i);
    }
  }
  for (int b = 0; b < st->num_bodies; ++b)
    HX_RETURN_IF_ERROR(check_loop_body(n, st, st->bodies[b], st->specialised ? b : -1));
  HX_RETURN_IF_ERROR(loop_trip_count(g, n, st));
  if (!st->m_const && !M && !n->inputs[1] && cond_kind(st->bodies[0]) == COND_TRUE)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "the loop never ends: it has no trip count and its condition is always true");
  for (int k = 0; k < N; ++k) {
    const hc_value* f = st->bodies[0]->inputs[2 + k];
    if (n->outputs[k]) {
      hc_set_output(n, k, f->dtype, f->rank, f->dims);
      hc_dyn_set(n->outputs[k], false);
    }
  }
  for (int k = 0; k < K; ++k) {
    hc_value* out = n->outputs[N + k];
    if (!out) continue;
    const hc_value* so = st->bodies[0]->outputs[1 + N + k];
    int64_t dims[HC_MAX_RANK];
    dims[0] = st->bound[k];
    for (int d = 0; d < so->rank; ++d) dims[d + 1] = so->dims[d];
    hc_set_output(n, N + k, so->dtype, so->rank + 1, dims);
    hc_dyn_set(out, st->dynamic);
  }
  HX_RETURN_IF_ERROR(plan_bodies(st));
  st->iter_off = 0;
  st->cond_off = 64;
  HX_RETURN_IF_ERROR(layout_states(g, n, st, 2, 1, false, 128));
  set_body_attr(n, "body", st->bodies[0]);
  n->op_state = st;
  return HX_OK;
}

/* Binds one Loop body into the node's workspace, emits its kernels' calls
 * and the end of the iteration: scan-output slices, the next condition
 * (stored to cond_a) and the loop-carried values. */
static hx_status_t emit_loop_body(hc_lower_ctx* lc, hc_kb* kb, hc_node* n, cf_state* st, hc_graph* b, LLVMValueRef ws,
                                  LLVMValueRef const* S, LLVMValueRef i, LLVMValueRef cond_a, double* flops,
                                  double* bytes) {
  int N = st->num_state, K = st->num_scan_out;
  for (int k = 0; k < b->num_inputs; ++k)
    if (b->inputs[k]->kind != HC_VALUE_CONST) b->inputs[k]->alias_of = NULL;
  int* src = malloc(sizeof(int) * (size_t)(N ? N : 1));
  if (!src) return OOM();
  for (int k = 0; k < N; ++k) src[k] = state_source(b, 2, 1, N, k);
  cf_bind_body(n, b, st->region_offset);
  if (b->inputs[0]->kind != HC_VALUE_CONST) cf_bind_value(n, b->inputs[0], st->iter_off, NULL);
  cf_bind_value(n, b->inputs[1], st->cond_off, NULL);
  for (int k = 0; k < N; ++k)
    cf_bind_value(n, b->inputs[2 + k], st->state_off[k], st->state_off[k] == CF_NONE ? n->outputs[k] : NULL);
  cf_kernels ks;
  hx_status_t s = cf_lower_body(lc, b, &ks);
  if (s == HX_OK) {
    cf_call_kernels(kb, &ks);
    *flops += ks.flops;
    *bytes += ks.bytes;
    LLVMValueRef next = hc_kb_load(kb, HX_DTYPE_BOOL, hc_kb_ptr(kb, b->outputs[0]), hc_kb_i64(kb, 0));
    for (int k = 0; k < K; ++k) {
      const hc_value *so = b->outputs[1 + N + k], *out = n->outputs[N + k];
      if (!out) continue;
      uint64_t slice = hc_value_nbytes(so);
      hc_if guard;
      if (st->dynamic) hc_if_begin(kb, &guard, LLVMBuildICmp(kb->b, LLVMIntSLT, i, hc_kb_i64(kb, st->bound[k]), ""));
      LLVMValueRef dst = cf_offset(kb, hc_kb_ptr(kb, out), hc_kb_imul(kb, i, hc_kb_i64(kb, (int64_t)slice)));
      cf_copy(kb, dst, hc_kb_ptr(kb, so), slice);
      if (st->dynamic) hc_if_end(kb, &guard);
    }
    move_states(kb, st, b, src, 1, ws, S);
    LLVMBuildStore(kb->b, next, cond_a);
  }
  cf_kernels_free(&ks);
  cf_unbind_body(n, b, st->region_offset);
  for (int k = 0; k < b->num_inputs; ++k)
    if (b->inputs[k]->kind != HC_VALUE_CONST) b->inputs[k]->alias_of = NULL;
  free(src);
  return s;
}

static hx_status_t lower_loop(hc_lower_ctx* lc, hc_node* n) {
  cf_state* st = n->op_state;
  int N = st->num_state, K = st->num_scan_out;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, 1, &kb));
  LLVMValueRef ws = hc_kb_workspace(&kb);
  LLVMValueRef* S = malloc(sizeof(LLVMValueRef) * (size_t)(N ? N : 1));
  if (!S) return OOM();
  for (int k = 0; k < N; ++k) {
    S[k] = st->state_off[k] == CF_NONE ? hc_kb_ptr(&kb, n->outputs[k])
                                       : cf_offset(&kb, ws, hc_kb_i64(&kb, (int64_t)st->state_off[k]));
    cf_copy(&kb, S[k], hc_kb_ptr(&kb, n->inputs[2 + k]), hc_value_nbytes(n->inputs[2 + k]));
  }
  const hc_value *M = hc_input(n, 0), *cond = hc_input(n, 1);
  LLVMValueRef m = st->m_const ? hc_kb_i64(&kb, st->m)
                   : M         ? LLVMBuildLoad2(kb.b, kb.t_i64, hc_kb_ptr(&kb, M), "M")
                               : hc_kb_i64(&kb, INT64_MAX);
  LLVMValueRef c0 = cond ? hc_kb_load(&kb, HX_DTYPE_BOOL, hc_kb_ptr(&kb, cond), hc_kb_i64(&kb, 0)) : LLVMConstInt(kb.t_i1, 1, 0);
  LLVMValueRef i_a = hc_kb_alloca(&kb, kb.t_i64, "i"), cond_a = hc_kb_alloca(&kb, kb.t_i1, "cond");
  LLVMBuildStore(kb.b, hc_kb_i64(&kb, 0), i_a);
  LLVMBuildStore(kb.b, c0, cond_a);
  LLVMContextRef c = lc->llctx;
  LLVMBasicBlockRef header = LLVMAppendBasicBlockInContext(c, kb.fn, "loop"), body = LLVMAppendBasicBlockInContext(c, kb.fn, "body"),
                    latch = LLVMAppendBasicBlockInContext(c, kb.fn, "latch"), exit = LLVMAppendBasicBlockInContext(c, kb.fn, "done");
  LLVMBuildBr(kb.b, header);
  LLVMPositionBuilderAtEnd(kb.b, header);
  LLVMValueRef i = LLVMBuildLoad2(kb.b, kb.t_i64, i_a, "i");
  LLVMValueRef go = LLVMBuildAnd(kb.b, LLVMBuildICmp(kb.b, LLVMIntSLT, i, m, ""), LLVMBuildLoad2(kb.b, kb.t_i1, cond_a, ""), "");
  LLVMBuildCondBr(kb.b, go, body, exit);
  LLVMPositionBuilderAtEnd(kb.b, body);
  LLVMBuildStore(kb.b, i, cf_offset(&kb, ws, hc_kb_i64(&kb, (int64_t)st->iter_off)));
  LLVMBuildStore(kb.b, LLVMBuildZExt(kb.b, LLVMBuildLoad2(kb.b, kb.t_i1, cond_a, ""), kb.t_i8, ""),
                 cf_offset(&kb, ws, hc_kb_i64(&kb, (int64_t)st->cond_off)));
  double flops = 0, bytes = 0;
  hx_status_t s = HX_OK;
  if (!st->specialised) {
    s = emit_loop_body(lc, &kb, n, st, st->bodies[0], ws, S, i, cond_a, &flops, &bytes);
    LLVMBuildBr(kb.b, latch);
  } else {
    LLVMValueRef sw = LLVMBuildSwitch(kb.b, i, latch, (unsigned)st->num_bodies);
    for (int b = 0; b < st->num_bodies && s == HX_OK; ++b) {
      LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(c, kb.fn, "iteration");
      LLVMAddCase(sw, hc_kb_i64(&kb, b), bb);
      LLVMPositionBuilderAtEnd(kb.b, bb);
      double f = 0, y = 0;
      s = emit_loop_body(lc, &kb, n, st, st->bodies[b], ws, S, i, cond_a, &f, &y);
      flops += f / st->num_bodies;
      bytes += y / st->num_bodies;
      LLVMBuildBr(kb.b, latch);
    }
  }
  LLVMPositionBuilderAtEnd(kb.b, latch);
  LLVMValueRef inext = LLVMBuildAdd(kb.b, i, hc_kb_i64(&kb, 1), "");
  LLVMBuildStore(kb.b, inext, i_a);
  LLVMBuildBr(kb.b, header);
  LLVMPositionBuilderAtEnd(kb.b, exit);
  if (st->dynamic) {
    LLVMValueRef iters = LLVMBuildLoad2(kb.b, kb.t_i64, i_a, "");
    for (int k = 0; k < K; ++k) {
      const hc_value* out = n->outputs[N + k];
      if (!out) continue;
      LLVMValueRef dims[HC_MAX_RANK];
      dims[0] = hc_kb_imin(&kb, iters, hc_kb_i64(&kb, st->bound[k]));
      for (int d = 1; d < out->rank; ++d) dims[d] = hc_kb_i64(&kb, out->dims[d]);
      hc_dyn_store_dims(&kb, out, dims);
    }
  }
  free(S);
  hc_kb_end(&kb, flops * st->trips, bytes * st->trips);
  return s;
}

/* ---- Scan ------------------------------------------------------------------------- */

/* Reads an INTS attribute of `count` entries (default fill when absent). */
static hx_status_t scan_ints(const hc_node* n, const char* name, int count, int dflt, int* out) {
  int64_t v[64];
  int got = hc_attr_ints(n, name, v, 64);
  if (got == -2 || (got >= 0 && got != count))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute '%s' must have %d entries", name, count);
  for (int i = 0; i < count; ++i) out[i] = got < 0 ? dflt : (int)v[i];
  return HX_OK;
}

static hx_status_t infer_scan(hc_graph* g, hc_node* n) {
  bool v8 = n->opset < 9;
  int nexp = n->num_inputs - n->num_captures;
  const hc_attr* msi = hc_node_attr(n, "num_scan_inputs");
  if (!msi || msi->type != HC_ATTR_INT || msi->i < 1 || msi->i > 64)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute 'num_scan_inputs' must be an integer in [1, 64]");
  int M = (int)msi->i, first = v8 ? 1 : 0, N = nexp - first - M;
  if (N < 0)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "%d scan inputs need at least %d inputs, got %d", M, first + M, nexp);
  hc_graph* body = body_attr(n, "body");
  if (!body) return missing_body(n, "body");
  if (body->num_inputs != N + M)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "body has %d inputs; expected %d (%d states, %d scan inputs)",
                         body->num_inputs, N + M, N, M);
  int K = body->num_outputs - N;
  if (K < 0 || n->num_outputs != N + K)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "body has %d outputs and the node %d; expected %d states first",
                         body->num_outputs, n->num_outputs, N);
  for (int i = first; i < nexp; ++i)
    if (!n->inputs[i]) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d is missing", i);
  const char* v9attrs[] = {"scan_input_axes", "scan_input_directions", "scan_output_axes", "scan_output_directions"};
  if (v8) {
    for (int a = 0; a < 4; ++a)
      if (hc_node_attr(n, v9attrs[a]))
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute '%s' exists from opset 9 on", v9attrs[a]);
  } else if (hc_node_attr(n, "directions")) {
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute 'directions' was replaced by 'scan_input_directions' in opset 9");
  }
  cf_state* st = new_state(g, CF_SCAN, 1);
  if (!st) return OOM();
  st->num_state = N;
  st->num_scan_in = M;
  st->num_scan_out = K;
  st->bodies[0] = body;
  st->in_axis = hc_arena_alloc(&g->arena, sizeof(int) * (size_t)M);
  st->in_dir = hc_arena_alloc(&g->arena, sizeof(int) * (size_t)M);
  st->out_axis = hc_arena_alloc(&g->arena, sizeof(int) * (size_t)(K ? K : 1));
  st->out_dir = hc_arena_alloc(&g->arena, sizeof(int) * (size_t)(K ? K : 1));
  if (!st->in_axis || !st->in_dir || !st->out_axis || !st->out_dir) return OOM();
  HX_RETURN_IF_ERROR(scan_ints(n, v8 ? "directions" : "scan_input_directions", M, 0, st->in_dir));
  HX_RETURN_IF_ERROR(scan_ints(n, "scan_input_axes", M, 0, st->in_axis));
  HX_RETURN_IF_ERROR(scan_ints(n, "scan_output_axes", K, 0, st->out_axis));
  HX_RETURN_IF_ERROR(scan_ints(n, "scan_output_directions", K, 0, st->out_dir));
  for (int j = 0; j < M; ++j)
    if (st->in_dir[j] != 0 && st->in_dir[j] != 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "scan input %d has direction %d (0 forward, 1 reverse)", j, st->in_dir[j]);
  for (int k = 0; k < K; ++k)
    if (st->out_dir[k] != 0 && st->out_dir[k] != 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "scan output %d has direction %d (0 forward, 1 reverse)", k, st->out_dir[k]);

  /* Sequence length (and batch for opset 8), then the body's formal inputs. */
  for (int j = 0; j < M; ++j) {
    const hc_value* x = n->inputs[first + N + j];
    char shape[96];
    if (v8) {
      if (x->rank < 2)
        return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "scan input %d ('%s') must be [batch, sequence, ...], got %s", j,
                             x->name, shape_of(x, shape, sizeof shape));
      st->in_axis[j] = 1;
    } else {
      int64_t ax;
      if (x->rank < 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "scan input %d ('%s') is a scalar", j, x->name);
      HX_RETURN_IF_ERROR(hc_norm_axis(n, st->in_axis[j], x->rank, &ax));
      st->in_axis[j] = (int)ax;
    }
    int64_t T = x->dims[st->in_axis[j]], B = v8 ? x->dims[0] : 0;
    if (j == 0) {
      st->seq_len = T;
      st->batch = B;
    } else if (T != st->seq_len || B != st->batch) {
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "scan inputs 0 and %d ('%s') have different %s lengths", j, x->name,
                           B != st->batch ? "batch" : "sequence");
    }
    int64_t dims[HC_MAX_RANK];
    int r = 0;
    for (int d = v8 ? 1 : 0; d < x->rank; ++d)
      if (d != st->in_axis[j]) dims[r++] = x->dims[d];
    HX_RETURN_IF_ERROR(bind_formal(n, body, N + j, x->dtype, r, dims));
  }
  if (v8) {
    const hc_value* sl = hc_input(n, 0);
    if (sl && (!(sl->dtype == HX_DTYPE_INT64 || sl->dtype == HX_DTYPE_INT32) || sl->rank != 1 || sl->dims[0] != st->batch))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "sequence_lens ('%s') must be an int64 tensor of shape [%lld]",
                           sl->name, (long long)st->batch);
  }
  for (int k = 0; k < N; ++k) {
    const hc_value* s0 = n->inputs[first + k];
    if (v8 && (s0->rank < 1 || s0->dims[0] != st->batch))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "initial state %d ('%s') must lead with the batch size %lld", k,
                           s0->name, (long long)st->batch);
    HX_RETURN_IF_ERROR(bind_formal(n, body, k, s0->dtype, v8 ? s0->rank - 1 : s0->rank, v8 ? s0->dims + 1 : s0->dims));
  }
  HX_RETURN_IF_ERROR(cf_infer_body(g, n, body, "body"));

  for (int k = 0; k < N; ++k) {
    const hc_value *in = body->inputs[k], *out = body->outputs[k];
    char a[96], s[96];
    if (in->dtype != out->dtype || !same_shape(in, out))
      return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                           "state %d ('%s') enters the body as %s[%s] but leaves it as %s[%s]; Harness needs states to "
                           "keep their type and shape across iterations",
                           k, in->name, hx_dtype_name(in->dtype), shape_of(in, a, sizeof a), hx_dtype_name(out->dtype),
                           shape_of(out, s, sizeof s));
    if (!n->outputs[k]) continue;
    int64_t dims[HC_MAX_RANK];
    int r = 0;
    if (v8) dims[r++] = st->batch;
    for (int d = 0; d < in->rank; ++d) dims[r++] = in->dims[d];
    hc_set_output(n, k, in->dtype, r, dims);
  }
  for (int k = 0; k < K; ++k) {
    const hc_value* so = body->outputs[N + k];
    int extra = v8 ? 2 : 1;
    if (so->rank + extra > HC_MAX_RANK)
      return hc_node_error(n, HX_STATUS_UNSUPPORTED, "scan output %d ('%s') would have rank %d; Harness supports up to %d", k,
                           so->name, so->rank + extra, HC_MAX_RANK);
    int64_t ax = 0;
    if (!v8) HX_RETURN_IF_ERROR(hc_norm_axis(n, st->out_axis[k], so->rank + 1, &ax));
    st->out_axis[k] = v8 ? 1 : (int)ax;
    int64_t dims[HC_MAX_RANK];
    int r = 0;
    if (v8) dims[r++] = st->batch;
    for (int d = 0; d <= so->rank; ++d) {
      int src = d;
      if (d == (v8 ? 0 : st->out_axis[k])) {
        dims[r++] = st->seq_len;
        continue;
      }
      if (d > (v8 ? 0 : st->out_axis[k])) src = d - 1;
      dims[r++] = so->dims[src];
    }
    if (n->outputs[N + k]) hc_set_output(n, N + k, so->dtype, r, dims);
  }
  HX_RETURN_IF_ERROR(plan_bodies(st));
  st->elem_off = new_offsets(g, M);
  if (!st->elem_off) return OOM();
  uint64_t next = 0;
  for (int j = 0; j < M; ++j) {
    st->elem_off[j] = next;
    next += cf_align(hc_value_nbytes(body->inputs[N + j]));
  }
  HX_RETURN_IF_ERROR(layout_states(g, n, st, 0, 0, v8, next));
  st->trips = (double)st->seq_len * (double)(v8 ? st->batch : 1);
  n->op_state = st;
  return HX_OK;
}

static hx_status_t lower_scan(hc_lower_ctx* lc, hc_node* n) {
  cf_state* st = n->op_state;
  hc_graph* b = st->bodies[0];
  bool v8 = n->opset < 9;
  int N = st->num_state, M = st->num_scan_in, K = st->num_scan_out, first = v8 ? 1 : 0;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, 1, &kb));
  LLVMValueRef ws = hc_kb_workspace(&kb);
  int* src = malloc(sizeof(int) * (size_t)(N ? N : 1));
  LLVMValueRef* S = malloc(sizeof(LLVMValueRef) * (size_t)(N ? N : 1));
  if (!src || !S) {
    free(src);
    free(S);
    return OOM();
  }
  for (int k = 0; k < b->num_inputs; ++k) b->inputs[k]->alias_of = NULL;
  for (int k = 0; k < N; ++k) src[k] = state_source(b, 0, 0, N, k);
  cf_bind_body(n, b, st->region_offset);
  for (int k = 0; k < N; ++k)
    cf_bind_value(n, b->inputs[k], st->state_off[k], st->state_off[k] == CF_NONE ? n->outputs[k] : NULL);
  for (int j = 0; j < M; ++j) cf_bind_value(n, b->inputs[N + j], st->elem_off[j], NULL);
  cf_kernels ks;
  hx_status_t s = cf_lower_body(lc, b, &ks);
  if (s == HX_OK) {
    for (int k = 0; k < N; ++k)
      S[k] = st->state_off[k] == CF_NONE ? hc_kb_ptr(&kb, n->outputs[k])
                                         : cf_offset(&kb, ws, hc_kb_i64(&kb, (int64_t)st->state_off[k]));
    int64_t T = st->seq_len;
    hc_loop bl;
    LLVMValueRef bi = v8 ? hc_loop_begin(&kb, &bl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, st->batch), "batch") : NULL;
    /* Initial states (of batch entry bi). */
    for (int k = 0; k < N; ++k) {
      const hc_value* init = n->inputs[first + k];
      uint64_t sb = hc_value_nbytes(b->inputs[k]);
      LLVMValueRef from = hc_kb_ptr(&kb, init);
      if (v8) from = cf_offset(&kb, from, hc_kb_imul(&kb, bi, hc_kb_i64(&kb, (int64_t)sb)));
      cf_copy(&kb, S[k], from, sb);
    }
    LLVMValueRef len = hc_kb_i64(&kb, T);
    const hc_value* sl = v8 ? hc_input(n, 0) : NULL;
    if (sl) {
      LLVMValueRef x = hc_kb_load(&kb, sl->dtype, hc_kb_ptr(&kb, sl), bi);
      if (sl->dtype != HX_DTYPE_INT64) x = LLVMBuildSExt(kb.b, x, kb.t_i64, "");
      len = hc_kb_imin(&kb, hc_kb_imax(&kb, x, hc_kb_i64(&kb, 0)), hc_kb_i64(&kb, T));
    }
    hc_loop tl;
    LLVMValueRef t = hc_loop_begin(&kb, &tl, hc_kb_i64(&kb, 0), len, "t");
    LLVMValueRef last = hc_kb_iadd(&kb, len, hc_kb_i64(&kb, -1));
    for (int j = 0; j < M; ++j) {
      const hc_value* x = n->inputs[first + N + j];
      LLVMValueRef idx = st->in_dir[j] ? LLVMBuildSub(kb.b, last, t, "") : t;
      LLVMValueRef whole = hc_kb_ptr(&kb, x);
      const int64_t* dims = x->dims;
      int rank = x->rank, axis = st->in_axis[j];
      if (v8) {
        uint64_t per = hc_value_nbytes(x) / (uint64_t)(st->batch ? st->batch : 1);
        whole = cf_offset(&kb, whole, hc_kb_imul(&kb, bi, hc_kb_i64(&kb, (int64_t)per)));
        dims = x->dims + 1;
        rank = x->rank - 1;
        axis = 0;
      }
      cf_copy_slice(&kb, whole, rank, dims, axis, hx_dtype_size(x->dtype), idx,
                    cf_offset(&kb, ws, hc_kb_i64(&kb, (int64_t)st->elem_off[j])), true);
    }
    cf_call_kernels(&kb, &ks);
    for (int k = 0; k < K; ++k) {
      const hc_value *so = b->outputs[N + k], *out = n->outputs[N + k];
      if (!out) continue;
      LLVMValueRef idx = st->out_dir[k] ? LLVMBuildSub(kb.b, hc_kb_i64(&kb, T - 1), t, "") : t;
      LLVMValueRef whole = hc_kb_ptr(&kb, out);
      const int64_t* dims = out->dims;
      int rank = out->rank, axis = st->out_axis[k];
      if (v8) {
        uint64_t per = hc_value_nbytes(out) / (uint64_t)(st->batch ? st->batch : 1);
        whole = cf_offset(&kb, whole, hc_kb_imul(&kb, bi, hc_kb_i64(&kb, (int64_t)per)));
        dims = out->dims + 1;
        rank = out->rank - 1;
        axis = 0;
      }
      cf_copy_slice(&kb, whole, rank, dims, axis, hx_dtype_size(out->dtype), idx, hc_kb_ptr(&kb, so), false);
    }
    move_states(&kb, st, b, src, 0, ws, S);
    hc_loop_end(&kb, &tl);
    if (v8) {
      /* Scan outputs past a shorter sequence are zero; final states go to
       * their batch entry. */
      for (int k = 0; sl && k < K; ++k) {
        const hc_value* out = n->outputs[N + k];
        if (!out) continue;
        uint64_t per = hc_value_nbytes(out) / (uint64_t)(st->batch ? st->batch : 1), slice = T ? per / (uint64_t)T : 0;
        LLVMValueRef base = cf_offset(&kb, hc_kb_ptr(&kb, out), hc_kb_imul(&kb, bi, hc_kb_i64(&kb, (int64_t)per)));
        LLVMValueRef from = hc_kb_imul(&kb, len, hc_kb_i64(&kb, (int64_t)slice));
        hc_kb_memset(&kb, cf_offset(&kb, base, from), 0, LLVMBuildSub(kb.b, hc_kb_i64(&kb, (int64_t)per), from, ""));
      }
      for (int k = 0; k < N; ++k) {
        if (!n->outputs[k]) continue;
        uint64_t sb = hc_value_nbytes(b->inputs[k]);
        cf_copy(&kb, cf_offset(&kb, hc_kb_ptr(&kb, n->outputs[k]), hc_kb_imul(&kb, bi, hc_kb_i64(&kb, (int64_t)sb))), S[k], sb);
      }
      hc_loop_end(&kb, &bl);
    }
  }
  double flops = ks.flops * st->trips, bytes = ks.bytes * st->trips;
  cf_kernels_free(&ks);
  cf_unbind_body(n, b, st->region_offset);
  for (int k = 0; k < b->num_inputs; ++k) b->inputs[k]->alias_of = NULL;
  free(src);
  free(S);
  hc_kb_end(&kb, flops, bytes);
  return s;
}

/* ---- descriptors ----------------------------------------------------------------- */

static const char* const k_if_attrs[] = {"then_branch", "else_branch", NULL};
static const char* const k_loop_attrs[] = {"body", NULL};
static const char* const k_scan_attrs[] = {"body",
                                           "num_scan_inputs",
                                           "directions",
                                           "scan_input_axes",
                                           "scan_input_directions",
                                           "scan_output_axes",
                                           "scan_output_directions",
                                           NULL};

const hc_op_desc hc_op_if = {"If", "", 1, 22, k_if_attrs, 0, infer_if, lower_if, NULL, workspace_cf};
const hc_op_desc hc_op_loop = {"Loop", "", 1, 22, k_loop_attrs, 0, infer_loop, lower_loop, NULL, workspace_cf};
const hc_op_desc hc_op_scan = {"Scan", "", 8, 22, k_scan_attrs, 0, infer_scan, lower_scan, NULL, workspace_cf};
