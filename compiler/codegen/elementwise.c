/* Element-wise kernels with numpy broadcasting (see elementwise.h). */
#include "compiler/codegen/elementwise.h"

#include <stdlib.h>
#include <string.h>

/* Elements per task when the whole iteration space is one flat loop:
 * large enough to amortise the task call, small enough to balance threads. */
#define HC_FLAT_BLOCK 8192

#define MAX_OPERANDS 16

typedef struct collapsed {
  int rank;
  int64_t dims[HC_MAX_RANK];
  int64_t strides[MAX_OPERANDS][HC_MAX_RANK]; /* element strides per operand, 0 = broadcast */
} collapsed;

/* Aligns every operand to the output rank, drops size-1 dims and merges
 * neighbours that every operand walks contiguously (or not at all). */
static void collapse(const hc_elementwise_spec* s, collapsed* c) {
  const hc_value* out = s->out;
  int R = out->rank;
  int64_t st[MAX_OPERANDS][HC_MAX_RANK];
  for (int k = 0; k < s->num_operands; ++k) {
    const hc_value* v = s->operands[k];
    if (!v) continue;
    int64_t vs[HC_MAX_RANK];
    hc_strides(v->rank, v->dims, vs);
    for (int d = 0; d < R; ++d) {
      int vd = d - (R - v->rank);
      st[k][d] = (vd < 0 || v->dims[vd] == 1) ? 0 : vs[vd];
    }
  }
  c->rank = 0;
  for (int d = 0; d < R; ++d) {
    if (out->dims[d] == 1) continue;
    if (c->rank > 0) {
      int p = c->rank - 1;
      bool mergeable = true;
      for (int k = 0; k < s->num_operands && mergeable; ++k) {
        if (!s->operands[k]) continue;
        int64_t prev = c->strides[k][p], cur = st[k][d];
        if (!(prev == cur * out->dims[d] && (cur != 0 || prev == 0))) mergeable = false;
      }
      if (mergeable) {
        c->dims[p] *= out->dims[d];
        for (int k = 0; k < s->num_operands; ++k)
          if (s->operands[k]) c->strides[k][p] = st[k][d];
        continue;
      }
    }
    c->dims[c->rank] = out->dims[d];
    for (int k = 0; k < s->num_operands; ++k)
      if (s->operands[k]) c->strides[k][c->rank] = st[k][d];
    ++c->rank;
  }
}

hx_status_t hc_emit_elementwise(hc_lower_ctx* lc, const hc_elementwise_spec* s) {
  if (s->num_operands > MAX_OPERANDS)
    return hc_node_error(s->node, HX_STATUS_UNSUPPORTED, "element-wise kernel with %d operands (max %d)",
                         s->num_operands, MAX_OPERANDS);
  collapsed c;
  memset(&c, 0, sizeof c);
  collapse(s, &c);
  int64_t total = hc_value_numel(s->out);
  if (c.rank == 0) { /* a single element */
    c.rank = 1;
    c.dims[0] = total; /* 1 or 0 */
  }
  int64_t inner = c.dims[c.rank - 1];
  int64_t outer = 1;
  for (int d = 0; d < c.rank - 1; ++d) outer *= c.dims[d];
  bool flat = c.rank == 1;
  int64_t tasks = flat ? (total + HC_FLAT_BLOCK - 1) / HC_FLAT_BLOCK : outer;
  if (total == 0) tasks = 0;

  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, s->node, s->suffix, tasks, &kb));
  LLVMValueRef ptrs[MAX_OPERANDS] = {0};
  for (int k = 0; k < s->num_operands; ++k)
    if (s->operands[k]) ptrs[k] = hc_kb_ptr(&kb, s->operands[k]);
  LLVMValueRef out_ptr = hc_kb_ptr(&kb, s->out);

  LLVMValueRef lo, hi;
  LLVMValueRef base_off[MAX_OPERANDS] = {0};
  LLVMValueRef out_base;
  hc_loop task;
  bool task_loop = !flat;
  if (flat) {
    /* One long loop over the task range's elements: best for the vectoriser. */
    lo = hc_kb_imul(&kb, kb.begin, hc_kb_i64(&kb, HC_FLAT_BLOCK));
    hi = hc_kb_imin(&kb, hc_kb_imul(&kb, kb.end, hc_kb_i64(&kb, HC_FLAT_BLOCK)), hc_kb_i64(&kb, total));
    for (int k = 0; k < s->num_operands; ++k) base_off[k] = hc_kb_i64(&kb, 0);
    out_base = hc_kb_i64(&kb, 0);
  } else {
    LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
    /* Decompose the outer index into the collapsed outer dims. */
    LLVMValueRef rem = t;
    for (int k = 0; k < s->num_operands; ++k) base_off[k] = hc_kb_i64(&kb, 0);
    for (int d = c.rank - 2; d >= 0; --d) {
      LLVMValueRef idx = d > 0 ? LLVMBuildURem(kb.b, rem, hc_kb_i64(&kb, c.dims[d]), "") : rem;
      if (d > 0) rem = LLVMBuildUDiv(kb.b, rem, hc_kb_i64(&kb, c.dims[d]), "");
      for (int k = 0; k < s->num_operands; ++k) {
        if (!s->operands[k] || c.strides[k][d] == 0) continue;
        base_off[k] = hc_kb_iadd(&kb, base_off[k], hc_kb_imul(&kb, idx, hc_kb_i64(&kb, c.strides[k][d])));
      }
    }
    out_base = hc_kb_imul(&kb, t, hc_kb_i64(&kb, inner));
    lo = hc_kb_i64(&kb, 0);
    hi = hc_kb_i64(&kb, inner);
  }

  /* Operands the inner loop does not walk (a per-channel scale, a scalar)
   * are loaded once before it: the output may share its buffer with an
   * input (in-place), so LLVM cannot prove that a store leaves them
   * unchanged and would reload them per element, unvectorised. No
   * operand of fewer elements than the output shares the output's memory,
   * so the hoisted value is the one every iteration would read. */
  LLVMValueRef vals[MAX_OPERANDS] = {0};
  int last = c.rank - 1;
  for (int k = 0; k < s->num_operands; ++k)
    if (s->operands[k] && c.strides[k][last] == 0)
      vals[k] = hc_kb_load(&kb, s->operands[k]->dtype, ptrs[k], base_off[k]);
  hc_loop loop;
  LLVMValueRef i = hc_loop_begin(&kb, &loop, lo, hi, "i");
  for (int k = 0; k < s->num_operands; ++k) {
    if (!s->operands[k] || c.strides[k][last] == 0) continue;
    int64_t stride = c.strides[k][last];
    LLVMValueRef idx = hc_kb_iadd(&kb, base_off[k], stride == 1 ? i : hc_kb_imul(&kb, i, hc_kb_i64(&kb, stride)));
    vals[k] = hc_kb_load(&kb, s->operands[k]->dtype, ptrs[k], idx);
  }
  LLVMValueRef r = s->fn(&kb, s->ctx, vals);
  hc_kb_store(&kb, s->out->dtype, out_ptr, hc_kb_iadd(&kb, out_base, i), r);
  /* A short row of a task per outer index (a 7x7 plane times its
   * channel's scale) stays a loop for the vectoriser: fully unrolled first,
   * it is scalar, all the more as the output may overwrite an input, which
   * only the vectoriser's run-time check rules out. bench/kernels/row_ops.py
   * (a per-row scale over 131072 elements): rows of 16-49 1.8-3.3x faster
   * so, no gain measured from 64 on; rows below 16 and from 96 on keep
   * LLVM's default. */
  if (!flat && inner >= 16 && inner < 96)
    hc_loop_end_rolled(&kb, &loop);
  else
    hc_loop_end(&kb, &loop);
  if (task_loop) hc_loop_end(&kb, &task);

  double bytes = (double)hc_value_nbytes(s->out);
  for (int k = 0; k < s->num_operands; ++k)
    if (s->operands[k]) bytes += (double)hc_value_nbytes(s->operands[k]);
  hc_kb_end(&kb, s->flops_per_element * (double)total, bytes);
  return HX_OK;
}

hx_status_t hc_emit_map(hc_lower_ctx* lc, const hc_node* node, hc_elementwise_fn fn, void* ctx,
                        double flops_per_element) {
  const hc_value* operands[1] = {node->inputs[0]};
  hc_elementwise_spec spec = {
      .node = node,
      .num_operands = 1,
      .operands = operands,
      .out = node->outputs[0],
      .fn = fn,
      .ctx = ctx,
      .flops_per_element = flops_per_element,
  };
  return hc_emit_elementwise(lc, &spec);
}
