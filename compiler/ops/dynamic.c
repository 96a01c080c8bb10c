/* Value-dependent output shapes and declared shapes: the compiler side shared
 * by NonZero, Unique, Compress, NonMaxSuppression, TopK and the ops that
 * take a model-declared output shape (see dynamic.h). */
#include "compiler/ops/dynamic.h"

#include <stdio.h>
#include <string.h>

#include "harness/artifact_abi.h"

void hc_dyn_set(hc_value* v, bool dynamic) {
  if (!v) return;
  v->dynamic = dynamic;
  v->dyn_source = NULL;
}

const hc_value* hc_dyn_owner(const hc_value* v) { return v->dyn_source ? v->dyn_source : v; }

bool hc_declared_shape(const hc_value* v, int* rank, int64_t* dims) {
  if (!v || !v->has_declared_shape) return false;
  *rank = v->declared_rank;
  for (int d = 0; d < v->declared_rank; ++d) dims[d] = v->declared_dims[d];
  return true;
}

hx_status_t hc_dyn_need_declared(const hc_node* n, int input, const char* what) {
  const hc_value* v = hc_input(n, input);
  const char* name = v ? v->name : "";
  const char* out = n->num_outputs > 0 && n->outputs[0] ? n->outputs[0]->name : "";
  return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                       "input %d ('%s', %s) determines the output shape and is computed at run time here, and the "
                       "model declares no static shape for output '%s'; declare one (graph output or value_info), "
                       "or freeze the input with --constant %s=FILE.pb if it is a graph input",
                       input, name, what, out, name);
}

/* Describes the producer of a dynamic value for error messages. */
static void describe_source(const hc_value* v, char* buf, size_t cap) {
  const hc_value* o = hc_dyn_owner(v);
  char shape[96];
  hc_shape_str(v->rank, v->dims, shape, sizeof shape);
  if (o->producer)
    snprintf(buf, cap, "upper bound %s, from %s node \"%s\"", shape, o->producer->op_type, o->producer->name);
  else
    snprintf(buf, cap, "upper bound %s", shape);
}

static bool same_shape(const hc_value* a, const hc_value* b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; ++d)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

/* Accepts Identity/Dropout and element-wise ops whose other operands are
 * single elements (see dynamic.h); everything else fails. */
hx_status_t hc_dyn_check_node(hc_node* n) {
  const hc_value* dyn = NULL;
  int dyn_input = -1;
  for (int i = 0; i < n->num_inputs; ++i) {
    const hc_value* v = n->inputs[i];
    if (!v || !v->dynamic) continue;
    if (!dyn) {
      dyn = v;
      dyn_input = i;
    } else if (hc_dyn_owner(v) != hc_dyn_owner(dyn) || !same_shape(v, dyn)) {
      return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                           "inputs %d ('%s') and %d ('%s') both have value-dependent shapes that may differ at run "
                           "time; Harness cannot combine them",
                           dyn_input, dyn->name, i, v->name);
    }
  }
  if (!dyn) return HX_OK;
  char src[256];
  describe_source(dyn, src, sizeof src);
  bool forwarding = !strcmp(n->domain, "") && (!strcmp(n->op_type, "Identity") || !strcmp(n->op_type, "Dropout"));
  bool elementwise = (n->op->flags & HC_OP_ELEMENTWISE) != 0;
  if (!forwarding && !elementwise)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                         "input %d ('%s') has a value-dependent shape (%s); Harness supports such a tensor only as a "
                         "graph output or as the input of Identity and element-wise ops (Cast, Relu, Add with a "
                         "one-element operand...), not of %s",
                         dyn_input, dyn->name, src, n->op_type);
  for (int i = 0; elementwise && i < n->num_inputs; ++i) {
    const hc_value* v = n->inputs[i];
    if (!v || v->dynamic || hc_value_numel(v) == 1) continue;
    char shape[96];
    return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                         "input %d ('%s') has a value-dependent shape (%s) and input %d ('%s') has shape %s; only "
                         "one-element operands can be combined with a value-dependent shape",
                         dyn_input, dyn->name, src, i, v->name, hc_shape_str(v->rank, v->dims, shape, sizeof shape));
  }
  for (int j = 0; j < n->num_outputs; ++j) {
    hc_value* out = n->outputs[j];
    if (!out) continue;
    if (!same_shape(out, dyn)) {
      char shape[96];
      return hc_node_error(n, HX_STATUS_UNSUPPORTED,
                           "output '%s' would have shape %s, not the shape of its input '%s' whose shape is "
                           "value-dependent (%s); broadcasting that changes the rank is not supported",
                           out->name, hc_shape_str(out->rank, out->dims, shape, sizeof shape), dyn->name, src);
    }
    out->dynamic = true;
    out->dyn_source = (hc_value*)hc_dyn_owner(dyn);
  }
  return HX_OK;
}

/* ---- kernel helpers --------------------------------------------------------- */

void hc_dyn_first_begin(hc_kb* kb, hc_if* s) {
  hc_if_begin(kb, s, LLVMBuildICmp(kb->b, LLVMIntEQ, kb->begin, hc_kb_i64(kb, 0), ""));
}

LLVMValueRef hc_dyn_i64_load(hc_kb* kb, LLVMValueRef p, LLVMValueRef i) {
  return LLVMBuildLoad2(kb->b, kb->t_i64, LLVMBuildGEP2(kb->b, kb->t_i64, p, &i, 1, ""), "");
}

void hc_dyn_i64_store(hc_kb* kb, LLVMValueRef p, LLVMValueRef i, LLVMValueRef v) {
  LLVMBuildStore(kb->b, v, LLVMBuildGEP2(kb->b, kb->t_i64, p, &i, 1, ""));
}

/* Arena base + offset. */
static LLVMValueRef arena_at(hc_kb* kb, uint64_t offset) {
  LLVMValueRef slot = LLVMBuildGEP2(kb->b, kb->t_ptr, kb->bases, (LLVMValueRef[]){hc_kb_i64(kb, HX_BASE_ARENA)}, 1, "");
  LLVMValueRef arena = LLVMBuildLoad2(kb->b, kb->t_ptr, slot, "");
  return LLVMBuildGEP2(kb->b, kb->t_i8, arena, (LLVMValueRef[]){hc_kb_i64(kb, (int64_t)offset)}, 1, "");
}

LLVMValueRef hc_dyn_workspace_at(hc_kb* kb, int64_t byte_offset) {
  LLVMValueRef w = hc_kb_workspace(kb);
  return byte_offset ? LLVMBuildGEP2(kb->b, kb->t_i8, w, (LLVMValueRef[]){hc_kb_i64(kb, byte_offset)}, 1, "") : w;
}

void hc_dyn_store_dims(hc_kb* kb, const hc_value* v, LLVMValueRef const* dims) {
  if (!v || !v->dynamic) return;
  LLVMValueRef p = arena_at(kb, hc_dyn_owner(v)->dyn_dims_offset);
  for (int d = 0; d < v->rank; ++d) hc_dyn_i64_store(kb, p, hc_kb_i64(kb, d), dims[d]);
}

/* Bottom-up merge sort: passes of width 1, 2, 4... (at most 63), each
 * merging neighbouring runs from one buffer into the other; the result is
 * copied back into perm if it ends in tmp. */
void hc_dyn_sort(hc_kb* kb, LLVMValueRef perm, LLVMValueRef tmp, LLVMValueRef n, hc_dyn_less_fn less, void* ctx) {
  LLVMBuilderRef b = kb->b;
  LLVMValueRef src_slot = hc_kb_alloca(kb, kb->t_ptr, "sort_src");
  LLVMValueRef dst_slot = hc_kb_alloca(kb, kb->t_ptr, "sort_dst");
  LLVMValueRef i_slot = hc_kb_alloca(kb, kb->t_i64, "sort_i");
  LLVMValueRef j_slot = hc_kb_alloca(kb, kb->t_i64, "sort_j");
  LLVMBuildStore(b, perm, src_slot);
  LLVMBuildStore(b, tmp, dst_slot);
  LLVMValueRef one = hc_kb_i64(kb, 1);
  hc_loop pl, bl, kl;
  LLVMValueRef pass = hc_loop_begin(kb, &pl, hc_kb_i64(kb, 0), hc_kb_i64(kb, 63), "pass");
  LLVMValueRef w = LLVMBuildShl(b, one, pass, "");
  hc_if more;
  hc_if_begin(kb, &more, LLVMBuildICmp(b, LLVMIntSLT, w, n, ""));
  LLVMValueRef src = LLVMBuildLoad2(b, kb->t_ptr, src_slot, "");
  LLVMValueRef dst = LLVMBuildLoad2(b, kb->t_ptr, dst_slot, "");
  LLVMValueRef w2 = LLVMBuildShl(b, w, one, "");
  LLVMValueRef nblocks = LLVMBuildSDiv(b, hc_kb_iadd(kb, n, LLVMBuildSub(b, w2, one, "")), w2, "");
  LLVMValueRef nm1 = LLVMBuildSub(b, n, one, "");
  LLVMValueRef blk = hc_loop_begin(kb, &bl, hc_kb_i64(kb, 0), nblocks, "blk");
  LLVMValueRef lo = hc_kb_imul(kb, blk, w2);
  LLVMValueRef mid = hc_kb_imin(kb, hc_kb_iadd(kb, lo, w), n);
  LLVMValueRef hi = hc_kb_imin(kb, hc_kb_iadd(kb, lo, w2), n);
  LLVMBuildStore(b, lo, i_slot);
  LLVMBuildStore(b, mid, j_slot);
  LLVMValueRef k = hc_loop_begin(kb, &kl, lo, hi, "k");
  LLVMValueRef i = LLVMBuildLoad2(b, kb->t_i64, i_slot, "");
  LLVMValueRef j = LLVMBuildLoad2(b, kb->t_i64, j_slot, "");
  LLVMValueRef vi = hc_dyn_i64_load(kb, src, hc_kb_imin(kb, i, nm1));
  LLVMValueRef vj = hc_dyn_i64_load(kb, src, hc_kb_imin(kb, j, nm1));
  LLVMValueRef right_first = less(kb, ctx, vj, vi);
  LLVMValueRef left_open = LLVMBuildICmp(b, LLVMIntSLT, i, mid, "");
  LLVMValueRef right_done = LLVMBuildICmp(b, LLVMIntSGE, j, hi, "");
  LLVMValueRef take_left =
      LLVMBuildAnd(b, left_open, LLVMBuildOr(b, right_done, LLVMBuildNot(b, right_first, ""), ""), "");
  hc_dyn_i64_store(kb, dst, k, LLVMBuildSelect(b, take_left, vi, vj, ""));
  LLVMValueRef step_l = LLVMBuildZExt(b, take_left, kb->t_i64, "");
  LLVMBuildStore(b, hc_kb_iadd(kb, i, step_l), i_slot);
  LLVMBuildStore(b, hc_kb_iadd(kb, j, LLVMBuildSub(b, one, step_l, "")), j_slot);
  hc_loop_end(kb, &kl);
  hc_loop_end(kb, &bl);
  LLVMBuildStore(b, dst, src_slot);
  LLVMBuildStore(b, src, dst_slot);
  hc_if_end(kb, &more);
  hc_loop_end(kb, &pl);
  LLVMValueRef final = LLVMBuildLoad2(b, kb->t_ptr, src_slot, "");
  hc_if back;
  hc_if_begin(kb, &back, LLVMBuildICmp(b, LLVMIntNE, final, perm, ""));
  hc_kb_memcpy(kb, perm, final, hc_kb_imul(kb, n, hc_kb_i64(kb, 8)));
  hc_if_end(kb, &back);
}
