/* Fused element-wise epilogues (see epilogue.h). */
#include "compiler/codegen/epilogue.h"

#include <string.h>

#include "compiler/codegen/fast_math.h"
#include "compiler/ops/op.h"
#include "harness/artifact_abi.h"

bool hc_epilogue_coefs(const hc_value* out, const hc_value* v, const int split[2], int64_t coef[3]) {
  int R = out->rank;
  if (v->rank > R) return false;
  int64_t vs[HC_MAX_RANK];
  hc_strides(v->rank, v->dims, vs);
  int lo[3] = {0, split[0], split[1]}, hi[3] = {split[0], split[1], R};
  for (int g = 0; g < 3; ++g) {
    bool full = true, bcast = true;
    int64_t inner = 0;
    for (int d = lo[g]; d < hi[g]; ++d) {
      int vd = d - (R - v->rank);
      int64_t vdim = vd < 0 ? 1 : v->dims[vd];
      if (vdim != out->dims[d] && vdim != 1) return false;
      if (out->dims[d] == 1) continue; /* both complete and broadcast */
      if (vdim == 1)
        full = false;
      else
        bcast = false;
      inner = vs[vd];
    }
    if (!full && !bcast) return false;
    /* A complete group is contiguous in the operand (its dims equal the
     * output's): the group's flat index steps the operand by the stride of
     * its last non-unit dim. */
    coef[g] = bcast ? 0 : inner;
  }
  return true;
}

hx_status_t hc_epilogue_begin(hc_kb* kb, const hc_node* n, const int split[2], hc_epilogue* e) {
  memset(e, 0, sizeof *e);
  e->node = n;
  e->count = n->num_fused;
  if (!n->num_fused) return HX_OK;
  if (n->num_inputs - n->fused_input_base > HC_EPILOGUE_MAX_INPUTS)
    return hc_node_error(n, HX_STATUS_INTERNAL, "too many fused operands");
  for (int i = n->fused_input_base; i < n->num_inputs; ++i) {
    const hc_value* v = n->inputs[i];
    int k = i - n->fused_input_base;
    if (!v) continue;
    if (!hc_epilogue_coefs(n->outputs[0], v, split, e->coef[k]))
      return hc_node_error(n, HX_STATUS_INTERNAL, "fused operand '%s' does not broadcast by dimension groups", v->name);
    e->ptr[k] = hc_kb_ptr(kb, v);
  }
  return HX_OK;
}

/* Fused op j is a Sigmoid whose only reader is op j + 1, Mul(its input,
 * it) in either order: SiLU. */
static bool silu_at(const hc_node* n, int j) {
  const hc_fused_op* s = &n->fused[j];
  if (j + 1 >= n->num_fused || strcmp(s->node->op_type, "Sigmoid") || strcmp(n->fused[j + 1].node->op_type, "Mul"))
    return false;
  const int* m = n->fused[j + 1].args;
  int me = -2 - j, x = s->args[0];
  if (!((m[0] == x && m[1] == me) || (m[0] == me && m[1] == x))) return false;
  for (int k = j + 2; k < n->num_fused; ++k)
    for (int i = 0; i < n->fused[k].node->num_inputs; ++i)
      if (n->fused[k].args[i] == me) return false;
  return true;
}

LLVMValueRef hc_fused_eval(hc_kb* kb, const hc_node* n, LLVMValueRef result, LLVMValueRef* inputs) {
  LLVMValueRef vals[64];
  LLVMValueRef r = result;
  for (int j = 0; j < n->num_fused && j < 64; ++j) {
    const hc_fused_op* f = &n->fused[j];
    LLVMValueRef in[HC_EPILOGUE_MAX_INPUTS + 8];
    for (int i = 0; i < f->node->num_inputs; ++i) {
      int a = f->args[i];
      in[i] = a >= 0 ? inputs[a] : a == -1 ? result : vals[-2 - a];
    }
    /* SiLU as one op where the sigmoid is the epilogues' fast one. */
    if (j + 1 < 64 && silu_at(n, j) && hc_sigmoid_fast_in(kb->node, f->node)) {
      vals[j] = NULL;
      vals[++j] = r = hc_ew_silu_fast(kb, HX_DTYPE_FLOAT32, in[0]);
      continue;
    }
    vals[j] = f->node->op->scalar(kb, f->node, in);
    r = vals[j];
  }
  return r;
}

/* Element index of extra operand k at output coordinates coord[0..2]. */
static LLVMValueRef operand_index(hc_kb* kb, const hc_epilogue* e, int k, LLVMValueRef* coord) {
  LLVMValueRef idx = hc_kb_i64(kb, 0);
  for (int d = 0; d < 3; ++d)
    if (e->coef[k][d])
      idx = hc_kb_iadd(kb, idx, e->coef[k][d] == 1 ? coord[d] : hc_kb_imul(kb, coord[d], hc_kb_i64(kb, e->coef[k][d])));
  return idx;
}

bool hc_epilogue_output_over_operand(const hc_node* n, int k) {
  if (k >= 32 || !(n->inplace_inputs & (1u << k)) || !n->inputs[k]) return false;
  uint64_t ro, yo;
  const hc_value* r = hc_value_storage_root(n->inputs[k], &ro);
  const hc_value* y = hc_value_storage_root(n->outputs[0], &yo);
  return r->storage.base == HX_BASE_ARENA && y->storage.base == HX_BASE_ARENA &&
         r->storage.offset + ro == y->storage.offset + yo;
}

bool hc_epilogue_output_over_any_operand(const hc_node* n) {
  for (int k = n->fused_input_base; k < n->num_inputs; ++k)
    if (k > 0 && hc_epilogue_output_over_operand(n, k)) return true;
  return false;
}

void hc_epilogue_prefetch(hc_kb* kb, const hc_epilogue* e, LLVMValueRef* coord, int g, int locality) {
  if (!e->count) return;
  const hc_node* n = e->node;
  for (int i = n->fused_input_base; i < n->num_inputs; ++i) {
    int k = i - n->fused_input_base;
    const hc_value* v = n->inputs[i];
    if (!v || !e->coef[k][g]) continue;
    hc_kb_prefetch(kb, hc_kb_gep(kb, v->dtype, e->ptr[k], operand_index(kb, e, k, coord)), locality);
  }
}

LLVMValueRef hc_epilogue_apply(hc_kb* kb, const hc_epilogue* e, LLVMValueRef value, LLVMValueRef* coord) {
  if (!e->count) return value;
  const hc_node* n = e->node;
  LLVMValueRef inputs[HC_EPILOGUE_MAX_INPUTS + 8] = {0};
  /* Load each extra operand once (a value may feed several fused ops). */
  for (int i = n->fused_input_base; i < n->num_inputs; ++i) {
    int k = i - n->fused_input_base;
    const hc_value* v = n->inputs[i];
    if (!v) continue;
    inputs[i] = hc_kb_load(kb, v->dtype, e->ptr[k], operand_index(kb, e, k, coord));
  }
  return hc_fused_eval(kb, n, value, inputs);
}

/* Ops whose scalar lowering is built only from hc_kb arithmetic, compares,
 * selects, min/max and hc_kb_const, so that it is valid on vectors too. */
static bool vector_safe_op(const hc_node* owner, const hc_node* op) {
  static const char* const ok[] = {"Relu", "Clip", "Add", "Sub", "Mul", "Div", "LeakyRelu", "HardSigmoid", "HardSwish",
                                   NULL};
  for (int k = 0; ok[k]; ++k)
    if (!strcmp(op->op_type, ok[k])) return true;
  return !strcmp(op->op_type, "Sigmoid") && hc_sigmoid_fast_in(owner, op);
}

/* The fused ops evaluated on whole float32 vectors: operands that do not
 * vary along group g are splat, operands contiguous along g (coefficient 1)
 * are vector loads of the `lanes` valid lanes. NULL when the epilogue does
 * not qualify (other ops or types, strided operands). */
bool hc_epilogue_whole_vectors(const hc_epilogue* e, int g) {
  const hc_node* n = e->node;
  if (!e->count || n->outputs[0]->dtype != HX_DTYPE_FLOAT32) return false;
  for (int j = 0; j < n->num_fused; ++j)
    if (!vector_safe_op(n, n->fused[j].node) || n->fused[j].node->outputs[0]->dtype != HX_DTYPE_FLOAT32) return false;
  for (int i = n->fused_input_base; i < n->num_inputs; ++i) {
    const hc_value* v = n->inputs[i];
    int k = i - n->fused_input_base;
    if (v && (v->dtype != HX_DTYPE_FLOAT32 || (e->coef[k][g] != 0 && e->coef[k][g] != 1))) return false;
  }
  return true;
}

static LLVMValueRef apply_whole_vector(hc_kb* kb, const hc_epilogue* e, LLVMValueRef value, LLVMValueRef* coord, int g,
                                       unsigned lanes) {
  const hc_node* n = e->node;
  LLVMTypeRef vt = LLVMTypeOf(value);
  if (LLVMGetTypeKind(vt) != LLVMVectorTypeKind || LLVMGetElementType(vt) != kb->t_f32) return NULL;
  if (!hc_epilogue_whole_vectors(e, g)) return NULL;
  unsigned vl = LLVMGetVectorSize(vt);
  LLVMValueRef inputs[HC_EPILOGUE_MAX_INPUTS + 8] = {0};
  for (int i = n->fused_input_base; i < n->num_inputs; ++i) {
    int k = i - n->fused_input_base;
    const hc_value* v = n->inputs[i];
    if (!v) continue;
    LLVMValueRef idx = operand_index(kb, e, k, coord);
    if (e->coef[k][g] == 0) {
      inputs[i] = hc_kb_splat(kb, hc_kb_load(kb, v->dtype, e->ptr[k], idx), vl);
    } else if (lanes >= vl) {
      LLVMValueRef ld = LLVMBuildLoad2(kb->b, vt, hc_kb_gep(kb, v->dtype, e->ptr[k], idx), "");
      LLVMSetAlignment(ld, 4);
      inputs[i] = ld;
    } else {
      /* Masked: lanes past the valid ones may lie outside the operand. */
      inputs[i] = hc_kb_masked_load(kb, vt, hc_kb_gep(kb, v->dtype, e->ptr[k], idx), 4, hc_kb_prefix_mask(kb, vl, lanes));
    }
  }
  unsigned saved = kb->const_lanes;
  kb->const_lanes = vl;
  LLVMValueRef r = hc_fused_eval(kb, n, value, inputs);
  kb->const_lanes = saved;
  return r;
}

LLVMValueRef hc_epilogue_apply_vec(hc_kb* kb, const hc_epilogue* e, LLVMValueRef value, LLVMValueRef* coord, int g,
                                   unsigned lanes) {
  if (!e->count) return value;
  LLVMValueRef whole = apply_whole_vector(kb, e, value, coord, g, lanes);
  if (whole) return whole;
  LLVMValueRef out = value;
  for (unsigned j = 0; j < lanes; ++j) {
    LLVMValueRef c[3] = {coord[0], coord[1], coord[2]};
    c[g] = hc_kb_iadd(kb, c[g], hc_kb_i64(kb, (int64_t)j));
    LLVMValueRef lane = LLVMConstInt(kb->t_i32, j, 0);
    LLVMValueRef x = LLVMBuildExtractElement(kb->b, value, lane, "");
    x = hc_epilogue_apply(kb, e, x, c);
    out = LLVMBuildInsertElement(kb->b, out, x, lane, "");
  }
  return out;
}

static const hc_value* storage_root(const hc_value* v) {
  while (v->alias_of) v = v->alias_of;
  return v;
}

bool hc_epilogue_operand_overwritable(const hc_node* n, int input) {
  if (n->num_fused <= 0 || n->num_outputs < 1 || !n->outputs[0]) return false;
  if (input < n->fused_input_base || input >= n->num_inputs - n->num_captures || !n->inputs[input]) return false;
  const hc_value *out = n->outputs[0], *in = n->inputs[input];
  if (in->dtype != out->dtype || in->rank != out->rank || in->rank < 0) return false;
  for (int i = 0; i < in->rank; ++i)
    if (in->dims[i] != out->dims[i]) return false;
  const hc_value* r = storage_root(in);
  for (int j = 0; j < n->num_inputs; ++j) {
    const hc_value* o = n->inputs[j];
    if (j == input || !o || storage_root(o) != r) continue;
    /* Only another epilogue operand read at the same index may share them. */
    if (j < n->fused_input_base || o->rank != in->rank) return false;
    for (int i = 0; i < in->rank; ++i)
      if (o->dims[i] != in->dims[i]) return false;
  }
  return true;
}

bool hc_epilogue_light(const hc_node* n) {
  static const char* const light[] = {"Relu", "Clip", "Add", "Sub", "Mul", "Div", "LeakyRelu", "HardSigmoid",
                                      "HardSwish", "Max", "Min", "Neg", "Abs", "PRelu", "ThresholdedRelu", NULL};
  for (int j = 0; j < n->num_fused; ++j) {
    bool ok = false;
    for (int k = 0; light[k] && !ok; ++k) ok = !strcmp(n->fused[j].node->op_type, light[k]);
    if (!ok) return false;
  }
  return true;
}

bool hc_epilogue_heavy_with_operands(const hc_node* n) {
  if (!n->num_fused || hc_epilogue_light(n)) return false;
  for (int i = n->fused_input_base; i < n->num_inputs; ++i)
    if (n->inputs[i]) return true;
  return false;
}

double hc_epilogue_bytes(const hc_node* n) {
  double b = 0;
  for (int i = n->fused_input_base; n->num_fused && i < n->num_inputs; ++i)
    if (n->inputs[i]) b += (double)hc_value_nbytes(n->inputs[i]);
  return b;
}

double hc_epilogue_flops_per_element(const hc_node* n) { return (double)n->num_fused; }
