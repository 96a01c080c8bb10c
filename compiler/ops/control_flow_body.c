/* Subgraph bodies of If, Loop and Scan: inference, planning and lowering
 * inside the node that owns them (see control_flow.h). */
#include <stdlib.h>
#include <string.h>

#include "compiler/backend/target.h"
#include "compiler/ops/control_flow.h"
#include "harness/artifact_abi.h"
#include "ir/verify.h"
#include "passes/pass.h"

uint64_t cf_align(uint64_t x) { return (x + 63) / 64 * 64; }

const hc_value* cf_root(const hc_value* v) {
  while (v->alias_of) v = v->alias_of;
  return v;
}

void cf_bind_captures(const hc_node* owner, hc_graph* body) {
  for (int i = 0; i < body->num_captures; ++i) {
    hc_value* v = body->captures[i];
    const hc_value* o = owner->inputs[body->capture_slots[i]];
    hc_value_set_shape(v, o->dtype, o->rank, o->dims);
    v->producer = NULL;
    v->alias_of = NULL;
    v->kind = o->kind == HC_VALUE_CONST ? HC_VALUE_CONST : HC_VALUE_INPUT;
    v->data = o->kind == HC_VALUE_CONST ? o->data : NULL;
  }
}

/* Makes body constant v an implicit input of n: a constant of g sharing v's
 * data (the body lives as long as g), read by n, with v its capture. */
static hx_status_t hoist(hc_graph* g, hc_node* n, hc_graph* body, hc_value* v) {
  /* Copies of one body (a Loop compiled per iteration) share constant data:
   * one implicit input serves them all. */
  for (int i = n->num_inputs - n->num_captures; i < n->num_inputs; ++i) {
    const hc_value* o = n->inputs[i];
    if (o->kind == HC_VALUE_CONST && o->data == v->data && o->dtype == v->dtype && o->rank == v->rank &&
        !memcmp(o->dims, v->dims, sizeof(int64_t) * (size_t)v->rank))
      return hc_graph_add_capture(body, v, i);
  }
  hc_value* pv;
  HX_RETURN_IF_ERROR(hc_graph_add_value(g, v->name, v->dtype, v->rank, v->dims, &pv));
  pv->kind = HC_VALUE_CONST;
  pv->data = v->data;
  int slot;
  HX_RETURN_IF_ERROR(hc_node_add_capture(g, n, pv, &slot));
  return hc_graph_add_capture(body, v, slot);
}

/* Every constant the body reads (node inputs, outputs) that is not already
 * a capture is hoisted into g. */
static hx_status_t hoist_constants(hc_graph* g, hc_node* n, hc_graph* body) {
  for (int i = 0; i < body->num_nodes; ++i) {
    const hc_node* b = body->nodes[i];
    for (int j = 0; j < b->num_inputs; ++j) {
      hc_value* v = b->inputs[j];
      if (v && v->kind == HC_VALUE_CONST && hc_graph_capture_index(body, v) < 0) HX_RETURN_IF_ERROR(hoist(g, n, body, v));
    }
  }
  for (int i = 0; i < body->num_outputs; ++i) {
    hc_value* v = body->outputs[i];
    if (v->kind == HC_VALUE_CONST && hc_graph_capture_index(body, v) < 0) HX_RETURN_IF_ERROR(hoist(g, n, body, v));
  }
  return HX_OK;
}

/* The body pipeline of cf_infer_body, errors unannotated. */
static hx_status_t run_body(hc_graph* g, hc_node* n, hc_graph* body) {
  hc_target host;
  HX_RETURN_IF_ERROR(hc_target_host(&host));
  hc_pass_ctx ctx = {.target = &host, .host = &host, .opt_level = 1};
  cf_bind_captures(n, body);
  for (int i = 0; i < body->num_inputs; ++i) {
    const hc_value* v = body->inputs[i];
    if (v->rank < 0 || v->dtype == HX_DTYPE_UNDEFINED)
      return hx_status_make(HX_STATUS_INTERNAL, "formal input '%s' was not bound", v->name);
  }
  HX_RETURN_IF_ERROR(hc_pass_shape_inference.run(&ctx, body));
  HX_RETURN_IF_ERROR(hc_pass_canonicalize.run(&ctx, body));
  hc_remove_dead_nodes(body);
  for (int i = 0; i < body->num_values; ++i) {
    const hc_value* v = body->values[i];
    if (v->dynamic && v->producer && !v->producer->dead)
      return hc_node_error(v->producer, HX_STATUS_UNSUPPORTED,
                           "output '%s' has a value-dependent shape; Harness compiles control-flow bodies with static "
                           "shapes only",
                           v->name);
  }
  for (int i = 0; i < body->num_outputs; ++i) {
    const hc_value* v = body->outputs[i];
    if (v->rank < 0 || v->dtype == HX_DTYPE_UNDEFINED)
      return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "output '%s' has no type", v->name);
  }
  HX_RETURN_IF_ERROR(hoist_constants(g, n, body));
  HX_RETURN_IF_ERROR(hc_graph_sort(body));
  return hc_graph_verify(body, true);
}

hx_status_t cf_infer_body(hc_graph* g, hc_node* n, hc_graph* body, const char* attr) {
  hx_status_t st = run_body(g, n, body);
  if (st == HX_OK || hx_status_code(st) == HX_STATUS_OUT_OF_MEMORY) return st;
  return hx_status_annotate(st, "node \"%s\" (%s, opset %d), subgraph '%s'", n->name, n->op_type, n->opset, attr);
}

/* The end of a body during planning: reads every body output, so each stays
 * live (and is not overwritten in place) until the owning op has used it. */
static hx_status_t infer_yield(hc_graph* g, hc_node* n) {
  (void)g;
  return hc_node_error(n, HX_STATUS_INTERNAL, "CfYield exists only during memory planning");
}
static const hc_op_desc k_cf_yield = {
    .name = "CfYield", .domain = "ai.harness", .since_opset = 1, .max_opset = 1, .flags = HC_OP_NO_FOLD,
    .infer = infer_yield,
};

hx_status_t cf_plan_body(hc_graph* body, uint64_t* out_bytes) {
  *out_bytes = 0;
  hc_target host;
  HX_RETURN_IF_ERROR(hc_target_host(&host));
  hc_node* sink;
  HX_RETURN_IF_ERROR(hc_graph_add_node(body, "cf_yield", "CfYield", "ai.harness", body->num_outputs, 0, &sink));
  sink->op = &k_cf_yield;
  sink->opset = 1;
  for (int i = 0; i < body->num_outputs; ++i) sink->inputs[i] = body->outputs[i];
  /* Formal inputs and outputs are not the caller's buffers here. */
  int ni = body->num_inputs, no = body->num_outputs;
  body->num_inputs = body->num_outputs = 0;
  hc_pass_ctx ctx = {.target = &host, .host = &host, .opt_level = 1};
  hx_status_t st = hc_pass_memory_plan.run(&ctx, body);
  body->num_inputs = ni;
  body->num_outputs = no;
  sink->dead = true;
  hc_graph_compact(body);
  if (st != HX_OK) return hx_status_annotate(st, "body '%s'", body->name);
  *out_bytes = ctx.arena_bytes;
  return HX_OK;
}

/* Moves planned intermediates and nested workspaces by `delta` bytes. */
static void shift_body(hc_graph* body, int64_t delta) {
  for (int i = 0; i < body->num_values; ++i) {
    hc_value* v = body->values[i];
    if (v->kind == HC_VALUE_INTERMEDIATE && !v->alias_of && v->storage.base == HX_BASE_ARENA)
      v->storage.offset = (uint64_t)((int64_t)v->storage.offset + delta);
  }
  for (int i = 0; i < body->num_nodes; ++i) {
    hc_node* b = body->nodes[i];
    if (b->workspace_bytes) b->workspace_offset = (uint64_t)((int64_t)b->workspace_offset + delta);
  }
}

void cf_bind_body(const hc_node* n, hc_graph* body, uint64_t region_offset) {
  shift_body(body, (int64_t)(n->workspace_offset + region_offset));
  for (int i = 0; i < body->num_captures; ++i) body->captures[i]->alias_of = n->inputs[body->capture_slots[i]];
}

void cf_unbind_body(const hc_node* n, hc_graph* body, uint64_t region_offset) {
  for (int i = 0; i < body->num_captures; ++i) body->captures[i]->alias_of = NULL;
  shift_body(body, -(int64_t)(n->workspace_offset + region_offset));
}

void cf_bind_value(const hc_node* n, hc_value* v, uint64_t offset, const hc_value* same_as) {
  if (same_as) {
    v->alias_of = (hc_value*)same_as;
    return;
  }
  v->alias_of = NULL;
  v->storage.base = HX_BASE_ARENA;
  v->storage.offset = n->workspace_offset + offset;
}

hx_status_t cf_lower_body(hc_lower_ctx* lc, hc_graph* body, cf_kernels* out) {
  memset(out, 0, sizeof(*out));
  hc_lower_ctx sub = *lc;
  sub.graph = body;
  sub.kernels = NULL;
  sub.num_kernels = sub.cap_kernels = 0;
  hx_status_t st = HX_OK;
  for (int i = 0; i < body->num_nodes && st == HX_OK; ++i) st = hc_op_lower(&sub, body->nodes[i]);
  out->k = sub.kernels;
  out->n = sub.num_kernels;
  /* Everything else the lowering changed (symbol counter...) carries over;
   * the kernel table stays the enclosing one. */
  sub.graph = lc->graph;
  sub.kernels = lc->kernels;
  sub.num_kernels = lc->num_kernels;
  sub.cap_kernels = lc->cap_kernels;
  *lc = sub;
  for (int i = 0; i < out->n; ++i) {
    out->flops += out->k[i].flops;
    out->bytes += out->k[i].bytes;
  }
  return st;
}

void cf_call_kernels(hc_kb* kb, const cf_kernels* ks) {
  for (int i = 0; i < ks->n; ++i) {
    LLVMValueRef fn = ks->k[i].fn;
    LLVMValueRef args[3] = {kb->bases, hc_kb_i64(kb, 0), hc_kb_i64(kb, ks->k[i].tasks)};
    LLVMBuildCall2(kb->b, LLVMGlobalGetValueType(fn), fn, args, 3, "");
  }
}

void cf_kernels_free(cf_kernels* ks) {
  free(ks->k);
  memset(ks, 0, sizeof(*ks));
}

void cf_copy(hc_kb* kb, LLVMValueRef dst, LLVMValueRef src, uint64_t bytes) {
  if (bytes) hc_kb_memcpy(kb, dst, src, hc_kb_i64(kb, (int64_t)bytes));
}

LLVMValueRef cf_offset(hc_kb* kb, LLVMValueRef p, LLVMValueRef bytes) {
  return LLVMBuildGEP2(kb->b, kb->t_i8, p, &bytes, 1, "");
}

void cf_copy_slice(hc_kb* kb, LLVMValueRef whole, int rank, const int64_t* dims, int axis, size_t esize,
                   LLVMValueRef index, LLVMValueRef part, bool gather) {
  int64_t outer = 1, inner = (int64_t)esize;
  for (int d = 0; d < axis; ++d) outer *= dims[d];
  for (int d = axis + 1; d < rank; ++d) inner *= dims[d];
  int64_t len = dims[axis];
  if (outer == 0 || inner == 0) return;
  if (outer == 1) {
    LLVMValueRef w = cf_offset(kb, whole, hc_kb_imul(kb, index, hc_kb_i64(kb, inner)));
    if (gather)
      cf_copy(kb, part, w, (uint64_t)inner);
    else
      cf_copy(kb, w, part, (uint64_t)inner);
    return;
  }
  hc_loop lp;
  LLVMValueRef o = hc_loop_begin(kb, &lp, hc_kb_i64(kb, 0), hc_kb_i64(kb, outer), "outer");
  LLVMValueRef row = hc_kb_iadd(kb, hc_kb_imul(kb, o, hc_kb_i64(kb, len)), index);
  LLVMValueRef w = cf_offset(kb, whole, hc_kb_imul(kb, row, hc_kb_i64(kb, inner)));
  LLVMValueRef p = cf_offset(kb, part, hc_kb_imul(kb, o, hc_kb_i64(kb, inner)));
  if (gather)
    cf_copy(kb, p, w, (uint64_t)inner);
  else
    cf_copy(kb, w, p, (uint64_t)inner);
  hc_loop_end(kb, &lp);
}
