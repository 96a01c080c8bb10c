/* Recurrent layers: RNN, GRU and LSTM (opsets 7..22; `layout` from 14,
 * bfloat16 from 22).
 *
 * The three ops share one plan (rnn_plan: shapes, direction, activations,
 * clip, optional inputs and outputs) and one lowering of two kernels:
 *
 *  - "xw", the input projection for every direction and time step before
 *    the recurrence: XW[d][t][b][r] = X[t][b] . W[d][r] + Wb[d][r] + Rb[d][r]
 *    (GRU with linear_before_reset keeps Rbh for the recurrence, where the
 *    reset gate scales it). In float32 with at least 8 rows of X it is a
 *    register-tiled product (rnn_tiled_projection: kernel "xt" transposes
 *    X into the workspace, "xw" broadcasts W's rows against XT's, tasks of
 *    a direction and 8 row tiles) stored by gate row, XW[d][r][q]; else dot
 *    products, a task per (direction, time step).
 *  - "rec", the recurrence. A task is one direction and a block of up to
 *    RNN_BATCH_BLOCK batch entries: it walks the time steps in order
 *    (backwards for the reverse direction); each step adds H[t-1] . R[d][r]
 *    to the projection for every row r and entry of the block (rows outer,
 *    so a row of R is reused from cache by the block), then applies the
 *    gate equations element-wise.
 *
 * Every dot product runs over a contiguous dimension (input_size of X and
 * W, hidden_size of H and R) for RNN_DOT_ROWS rows of W or R at once, so
 * one load of the shared vector feeds several multiply-adds and the loop
 * vectorises with reassociable sums. In float32 the default activations
 * (Sigmoid, Tanh) are inline, without libm calls, so the gate loops
 * vectorise too.
 *
 * Both kernels keep compute-type values (float32 for float16/bfloat16/
 * float32, float64 for float64) in the node's workspace: the projection
 * first, then one slice per (direction, batch entry) for its hidden
 * state, cell state, gate pre-activations and the GRU's r (.) H[t-1].
 * Tasks never share a slice, so the runtime may run them on any threads.
 *
 * sequence_lens (int32, read at run time, clamped to [0, seq_length]):
 * a step t >= len leaves the state unchanged and writes zeros to Y; the
 * reverse direction therefore starts at t = len - 1, and Y_h/Y_c hold the
 * state after the last valid step (initial_h/initial_c when len is 0, as
 * the ONNX reference evaluator does; ONNX Runtime writes zeros there).
 *
 * Conventions where the specification is loose, following ONNX Runtime:
 * activation names are case-insensitive; activation_alpha/activation_beta
 * are consumed in order by the activations that take the parameter
 * (Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu), the
 * others skip them; a bidirectional node may list one direction's
 * activations for both; `clip` bounds the pre-activations of the gates
 * (not Ct before h); ThresholdedRelu is x > alpha, as the operator of that
 * name. Missing alpha/beta take the defaults of the corresponding ONNX
 * operators (Affine 1/0, LeakyRelu 0.01, ThresholdedRelu 1, ScaledTanh
 * 1/1, HardSigmoid 0.2/0.5, Elu 1).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "compiler/ops/gemm_microkernel.h"
#include "compiler/ops/op.h"

/* Batch entries per recurrence task: a row of R is read once per step for
 * the whole block, so larger blocks reuse it more and give fewer tasks. */
#define RNN_BATCH_BLOCK 8
/* Rows of W or R per pass of a dot-product loop (see emit_dots). */
#define RNN_DOT_ROWS 4

typedef enum { RNN_SIMPLE, RNN_GRU, RNN_LSTM } rnn_kind;

typedef enum {
  ACT_RELU,
  ACT_TANH,
  ACT_SIGMOID,
  ACT_AFFINE,
  ACT_LEAKY_RELU,
  ACT_THRESHOLDED_RELU,
  ACT_SCALED_TANH,
  ACT_HARD_SIGMOID,
  ACT_ELU,
  ACT_SOFTSIGN,
  ACT_SOFTPLUS,
} rnn_act_kind;

/* An activation function with its parameters. */
typedef struct rnn_act {
  rnn_act_kind kind;
  double alpha, beta;
} rnn_act;

/* The activation functions the specification lists: which take alpha and
 * beta, and their defaults. */
static const struct {
  const char* name;
  rnn_act_kind kind;
  bool uses_alpha, uses_beta;
  double alpha, beta;
} k_act_table[] = {
    {"Relu", ACT_RELU, false, false, 0.0, 0.0},
    {"Tanh", ACT_TANH, false, false, 0.0, 0.0},
    {"Sigmoid", ACT_SIGMOID, false, false, 0.0, 0.0},
    {"Affine", ACT_AFFINE, true, true, 1.0, 0.0},
    {"LeakyRelu", ACT_LEAKY_RELU, true, false, 0.01, 0.0},
    {"ThresholdedRelu", ACT_THRESHOLDED_RELU, true, false, 1.0, 0.0},
    {"ScaledTanh", ACT_SCALED_TANH, true, true, 1.0, 1.0},
    {"HardSigmoid", ACT_HARD_SIGMOID, true, true, 0.2, 0.5},
    {"Elu", ACT_ELU, true, false, 1.0, 0.0},
    {"Softsign", ACT_SOFTSIGN, false, false, 0.0, 0.0},
    {"Softplus", ACT_SOFTPLUS, false, false, 0.0, 0.0},
};
#define RNN_NUM_ACTS ((int)(sizeof k_act_table / sizeof k_act_table[0]))

/* Everything the lowering needs to know about one node. */
typedef struct rnn_plan {
  rnn_kind kind;
  int G;                 /* gates: 1 (RNN), 3 (GRU: z r h), 4 (LSTM: i o f c) */
  int nact;              /* activations per direction: f / f g / f g h */
  hx_dtype_t dt;         /* element type of X, W, R, B, initial_h/c, P, outputs */
  hx_dtype_t wdt;        /* workspace and arithmetic type: FLOAT32 or FLOAT64 */
  int64_t S, B, I, H, D; /* seq_length, batch, input_size, hidden_size, directions */
  int layout;            /* 0: [seq, batch, ...], 1: [batch, seq, ...] */
  bool reverse;          /* direction == "reverse" */
  bool has_clip;
  double clip;
  bool lbr;          /* GRU linear_before_reset */
  bool input_forget; /* LSTM: f = 1 - i */
  rnn_act act[2][3]; /* per direction: f, g, h */
  const hc_value *x, *w, *r, *b, *seq, *h0, *c0, *p;
  const hc_value *y, *yh, *yc;
} rnn_plan;

static const char* const k_input_names[] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};

/* Requires v to have exactly the given shape; `meaning` names the dims. */
static hx_status_t expect_shape(const hc_node* n, int input, const hc_value* v, int rank, const int64_t* dims,
                                const char* meaning) {
  bool ok = v->rank == rank;
  for (int i = 0; ok && i < rank; ++i) ok = v->dims[i] == dims[i];
  if (ok) return HX_OK;
  char want[128], got[128];
  return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %s ('%s') must have shape %s (%s), got %s",
                       k_input_names[input], v->name, hc_shape_str(rank, dims, want, sizeof want), meaning,
                       v->rank < 0 ? "unknown" : hc_shape_str(v->rank, v->dims, got, sizeof got));
}

/* Parses `activations`, `activation_alpha` and `activation_beta`. */
static hx_status_t parse_activations(const hc_node* n, rnn_plan* p) {
  static const char* const k_defaults[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
  const hc_attr* names = hc_node_attr(n, "activations");
  const hc_attr* alphas = hc_node_attr(n, "activation_alpha");
  const hc_attr* betas = hc_node_attr(n, "activation_beta");
  if (names && names->type != HC_ATTR_STRINGS)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute 'activations' must be a list of strings");
  if ((alphas && alphas->type != HC_ATTR_FLOATS) || (betas && betas->type != HC_ATTR_FLOATS))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "attributes 'activation_alpha' and 'activation_beta' must be lists of floats");
  int count = names ? names->n : 0;
  int per_dir = p->nact;
  bool shared = false; /* one direction's list used for both */
  if (count != 0 && count != per_dir * p->D) {
    if (p->D == 2 && count == per_dir)
      shared = true;
    else
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "attribute 'activations' must list %d function%s (%d per direction), got %d",
                           per_dir * (int)p->D, per_dir * p->D > 1 ? "s" : "", per_dir, count);
  }
  int ai = 0, bi = 0;
  int na = alphas ? alphas->n : 0, nb = betas ? betas->n : 0;
  for (int d = 0; d < p->D; ++d) {
    for (int k = 0; k < per_dir; ++k) {
      if (shared && d == 1) {
        p->act[1][k] = p->act[0][k];
        continue;
      }
      const char* name = count ? names->strings[d * per_dir + k] : k_defaults[p->nact - 1][k];
      int found = -1;
      for (int a = 0; a < RNN_NUM_ACTS; ++a)
        if (name && strcasecmp(name, k_act_table[a].name) == 0) found = a;
      if (found < 0)
        return hc_node_error(
            n, HX_STATUS_INVALID_ARGUMENT,
            "unknown activation function '%s' (expected one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
            "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)",
            name ? name : "");
      rnn_act* act = &p->act[d][k];
      act->kind = k_act_table[found].kind;
      act->alpha = k_act_table[found].alpha;
      act->beta = k_act_table[found].beta;
      if (k_act_table[found].uses_alpha && ai < na) act->alpha = alphas->floats[ai++];
      if (k_act_table[found].uses_beta && bi < nb) act->beta = betas->floats[bi++];
    }
  }
  return HX_OK;
}

/* Validates the node and fills the plan; shared by infer, lower and
 * workspace so that the three always agree. */
static hx_status_t rnn_setup(const hc_node* n, rnn_kind kind, rnn_plan* p) {
  memset(p, 0, sizeof *p);
  p->kind = kind;
  p->G = kind == RNN_LSTM ? 4 : kind == RNN_GRU ? 3 : 1;
  p->nact = kind == RNN_LSTM ? 3 : kind == RNN_GRU ? 2 : 1;
  int max_in = kind == RNN_LSTM ? 8 : 6, max_out = kind == RNN_LSTM ? 3 : 2;
  if (n->num_inputs < 3 || n->num_inputs > max_in)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "expected 3 to %d inputs, got %d", max_in, n->num_inputs);
  for (int i = 0; i < 3; ++i)
    if (!n->inputs[i])
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "required input %d (%s) is missing", i, k_input_names[i]);
  if (n->num_outputs > max_out)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "expected at most %d outputs, got %d", max_out, n->num_outputs);
  p->x = n->inputs[0];
  p->w = n->inputs[1];
  p->r = n->inputs[2];
  p->b = hc_input(n, 3);
  p->seq = hc_input(n, 4);
  p->h0 = hc_input(n, 5);
  p->c0 = hc_input(n, 6);
  p->p = hc_input(n, 7);
  p->y = n->num_outputs > 0 ? n->outputs[0] : NULL;
  p->yh = n->num_outputs > 1 ? n->outputs[1] : NULL;
  p->yc = n->num_outputs > 2 ? n->outputs[2] : NULL;

  /* Element types: T for everything but sequence_lens (int32). */
  hx_dtype_t xdt = p->x->dtype;
  if (xdt == HX_DTYPE_BFLOAT16 && n->opset < 22)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input X ('%s') is bfloat16, which %s accepts from opset 22 on",
                         p->x->name, n->op_type);
  if (xdt != HX_DTYPE_FLOAT16 && xdt != HX_DTYPE_FLOAT32 && xdt != HX_DTYPE_FLOAT64 && xdt != HX_DTYPE_BFLOAT16)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "input X ('%s') must be float16, float32 or float64 (bfloat16 from opset 22), got %s",
                         p->x->name, hx_dtype_name(xdt));
  for (int i = 1; i < n->num_inputs; ++i) {
    if (i == 4 || !n->inputs[i]) continue;
    if (n->inputs[i]->dtype != p->x->dtype)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %s ('%s') must have X's element type %s, got %s",
                           k_input_names[i], n->inputs[i]->name, hx_dtype_name(p->x->dtype),
                           hx_dtype_name(n->inputs[i]->dtype));
  }
  if (p->seq && p->seq->dtype != HX_DTYPE_INT32)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input sequence_lens ('%s') must be int32, got %s",
                         p->seq->name, hx_dtype_name(p->seq->dtype));
  p->dt = p->x->dtype;
  p->wdt = p->dt == HX_DTYPE_FLOAT64 ? HX_DTYPE_FLOAT64 : HX_DTYPE_FLOAT32;

  /* Attributes. */
  const hc_attr* la = hc_node_attr(n, "layout");
  if (la && n->opset < 14)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute 'layout' exists only from opset 14");
  int64_t layout = hc_attr_int(n, "layout", 0);
  if (layout != 0 && layout != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute 'layout' must be 0 or 1, got %lld",
                         (long long)layout);
  p->layout = (int)layout;
  const char* dir = hc_attr_string(n, "direction", "forward");
  if (strcmp(dir, "forward") == 0) {
    p->D = 1;
  } else if (strcmp(dir, "reverse") == 0) {
    p->D = 1;
    p->reverse = true;
  } else if (strcmp(dir, "bidirectional") == 0) {
    p->D = 2;
  } else {
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "attribute 'direction' must be forward, reverse or bidirectional, got '%s'", dir);
  }
  if (hc_node_attr(n, "clip")) {
    p->has_clip = true;
    p->clip = hc_attr_float(n, "clip", 0.0f);
    if (!(p->clip > 0.0))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute 'clip' must be positive, got %g", p->clip);
  }
  p->lbr = kind == RNN_GRU && hc_attr_int(n, "linear_before_reset", 0) != 0;
  if (kind == RNN_LSTM) {
    int64_t inf = hc_attr_int(n, "input_forget", 0);
    if (inf != 0 && inf != 1)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute 'input_forget' must be 0 or 1, got %lld",
                           (long long)inf);
    p->input_forget = inf == 1;
  }

  /* Shapes. */
  if (p->x->rank != 3)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input X ('%s') must have rank 3 (%s), got rank %d", p->x->name,
                         p->layout ? "batch_size, seq_length, input_size" : "seq_length, batch_size, input_size",
                         p->x->rank);
  if (p->r->rank != 3)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "input R ('%s') must have rank 3 (num_directions, %d*hidden_size, hidden_size), got rank %d",
                         p->r->name, p->G, p->r->rank);
  p->S = p->x->dims[p->layout ? 1 : 0];
  p->B = p->x->dims[p->layout ? 0 : 1];
  p->I = p->x->dims[2];
  p->H = p->r->dims[2];
  const hc_attr* hs = hc_node_attr(n, "hidden_size");
  if (hs) {
    int64_t h = hc_attr_int(n, "hidden_size", 0);
    if (h <= 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute 'hidden_size' must be positive, got %lld",
                           (long long)h);
    p->H = h;
  }
  int64_t GH = p->G * p->H;
  char meaning[96];
  snprintf(meaning, sizeof meaning, "num_directions, %d*hidden_size, input_size", p->G);
  HX_RETURN_IF_ERROR(expect_shape(n, 1, p->w, 3, (int64_t[]){p->D, GH, p->I}, meaning));
  snprintf(meaning, sizeof meaning, "num_directions, %d*hidden_size, hidden_size", p->G);
  HX_RETURN_IF_ERROR(expect_shape(n, 2, p->r, 3, (int64_t[]){p->D, GH, p->H}, meaning));
  if (p->b) {
    snprintf(meaning, sizeof meaning, "num_directions, %d*hidden_size", 2 * p->G);
    HX_RETURN_IF_ERROR(expect_shape(n, 3, p->b, 2, (int64_t[]){p->D, 2 * GH}, meaning));
  }
  if (p->seq) HX_RETURN_IF_ERROR(expect_shape(n, 4, p->seq, 1, (int64_t[]){p->B}, "batch_size"));
  const int64_t state_dims[3] = {p->layout ? p->B : p->D, p->layout ? p->D : p->B, p->H};
  const char* state_meaning =
      p->layout ? "batch_size, num_directions, hidden_size" : "num_directions, batch_size, hidden_size";
  if (p->h0) HX_RETURN_IF_ERROR(expect_shape(n, 5, p->h0, 3, state_dims, state_meaning));
  if (p->c0) HX_RETURN_IF_ERROR(expect_shape(n, 6, p->c0, 3, state_dims, state_meaning));
  if (p->p)
    HX_RETURN_IF_ERROR(expect_shape(n, 7, p->p, 2, (int64_t[]){p->D, 3 * p->H}, "num_directions, 3*hidden_size"));
  return parse_activations(n, p);
}

/* ---- workspace ----------------------------------------------------------- */

/* Elements (of the workspace type) of the projection and of one recurrence
 * task's slice: h, c, gates, r (.) h; both rounded to 64 bytes. */
static int64_t round16(int64_t x) { return (x + 15) / 16 * 16; }
static int64_t proj_elems(const rnn_plan* p) { return round16(p->D * p->S * p->B * p->G * p->H); }
static int64_t slot_elems(const rnn_plan* p) { return round16(3 * p->H + p->G * p->H); }

/* Whether the projection is the register-tiled product (emit_projection_tiled)
 * instead of dot products: float32, and at least 8 rows of X (time steps
 * times batch entries), the vectors it runs along. Its projection is stored
 * by gate row, XW[d][r][q] for X's row q, and it reads X transposed from the
 * end of the workspace. */
static bool rnn_tiled_projection(const rnn_plan* p) { return p->dt == HX_DTYPE_FLOAT32 && p->S * p->B >= 8; }
static int64_t xt_elems(const rnn_plan* p) { return rnn_tiled_projection(p) ? round16(p->S * p->B * p->I) : 0; }
static int64_t xt_offset(const rnn_plan* p) { return proj_elems(p) + p->D * p->B * slot_elems(p); }

static uint64_t rnn_workspace_bytes(const hc_node* n, rnn_kind kind) {
  rnn_plan p;
  hx_status_t st = rnn_setup(n, kind, &p);
  if (st != HX_OK) {
    hx_status_free(st); /* infer reports the problem */
    return 0;
  }
  return (uint64_t)(xt_offset(&p) + xt_elems(&p)) * hx_dtype_size(p.wdt);
}

/* ---- inference ----------------------------------------------------------- */

static hx_status_t rnn_infer(hc_node* n, rnn_kind kind) {
  rnn_plan p;
  HX_RETURN_IF_ERROR(rnn_setup(n, kind, &p));
  int64_t ydims[4];
  if (p.layout) {
    ydims[0] = p.B, ydims[1] = p.S, ydims[2] = p.D, ydims[3] = p.H;
  } else {
    ydims[0] = p.S, ydims[1] = p.D, ydims[2] = p.B, ydims[3] = p.H;
  }
  int64_t sdims[3] = {p.layout ? p.B : p.D, p.layout ? p.D : p.B, p.H};
  hc_set_output(n, 0, p.dt, 4, ydims);
  hc_set_output(n, 1, p.dt, 3, sdims);
  hc_set_output(n, 2, p.dt, 3, sdims);
  return HX_OK;
}

static hx_status_t infer_rnn(hc_graph* g, hc_node* n) { return rnn_infer(n, RNN_SIMPLE); }
static hx_status_t infer_gru(hc_graph* g, hc_node* n) { return rnn_infer(n, RNN_GRU); }
static hx_status_t infer_lstm(hc_graph* g, hc_node* n) { return rnn_infer(n, RNN_LSTM); }

/* ---- code generation ----------------------------------------------------- */

/* Kernel-time state shared by the emitters of one kernel. */
typedef struct rnn_emit {
  hc_kb* kb;
  const rnn_plan* p;
  hx_dtype_t dt, wdt;
  LLVMTypeRef t;                  /* compute type */
  LLVMValueRef acc[RNN_DOT_ROWS]; /* stack slots of dot-product accumulators */
  LLVMValueRef px, pw, pr, pb, pseq, ph0, pc0, pp, py, pyh, pyc;
  LLVMValueRef proj;   /* workspace: projection */
  LLVMValueRef slots;  /* workspace: per (direction, batch entry) state slices */
  LLVMValueRef b0, nb; /* recurrence task: first batch entry and count */
} rnn_emit;

static LLVMValueRef ci(rnn_emit* e, int64_t x) { return hc_kb_i64(e->kb, x); }
static LLVMValueRef cf(rnn_emit* e, double x) { return hc_kb_const(e->kb, e->wdt, x); }
static LLVMValueRef iadd(rnn_emit* e, LLVMValueRef a, LLVMValueRef b) { return hc_kb_iadd(e->kb, a, b); }
static LLVMValueRef imulc(rnn_emit* e, LLVMValueRef a, int64_t c) {
  return c == 1 ? a : hc_kb_imul(e->kb, a, ci(e, c));
}
static LLVMValueRef fadd(rnn_emit* e, LLVMValueRef a, LLVMValueRef b) { return hc_kb_add(e->kb, e->wdt, a, b); }
static LLVMValueRef fsub(rnn_emit* e, LLVMValueRef a, LLVMValueRef b) { return hc_kb_sub(e->kb, e->wdt, a, b); }
static LLVMValueRef fmul(rnn_emit* e, LLVMValueRef a, LLVMValueRef b) { return hc_kb_mul(e->kb, e->wdt, a, b); }

/* Element i of a tensor input (its dtype) or of the workspace (wdt), both
 * as the compute type. */
static LLVMValueRef ld_t(rnn_emit* e, LLVMValueRef ptr, LLVMValueRef i) { return hc_kb_load(e->kb, e->dt, ptr, i); }
static LLVMValueRef ld_w(rnn_emit* e, LLVMValueRef ptr, LLVMValueRef i) { return hc_kb_load(e->kb, e->wdt, ptr, i); }
static void st_w(rnn_emit* e, LLVMValueRef ptr, LLVMValueRef i, LLVMValueRef v) {
  hc_kb_store(e->kb, e->wdt, ptr, i, v);
}

/* Allows LLVM to reorder (and contract) a float operation so that a
 * reduction splits into vector lanes. */
static LLVMValueRef fast(LLVMValueRef v) {
  if (LLVMIsAInstruction(v) && LLVMCanValueUseFastMathFlags(v))
    LLVMSetFastMathFlags(v, LLVMFastMathAllowReassoc | LLVMFastMathAllowContract);
  return v;
}

/* out[q] = init[q] + sum_k a[a0 + k] * b[b0 + q*b_stride + k], k < len,
 * for q < rows: `rows` dot products sharing the vector a, so that each
 * load of a feeds several multiply-adds. a is a workspace vector (a_ws) or
 * of the tensor dtype; the b rows are of the tensor dtype. The loop walks
 * contiguous memory in every operand and vectorises; the sums are
 * reassociable so they split into vector lanes. */
static void emit_dots(rnn_emit* e, int rows, const LLVMValueRef* init, bool a_ws, LLVMValueRef pa, LLVMValueRef a0,
                      LLVMValueRef pb, LLVMValueRef b0, int64_t b_stride, int64_t len, LLVMValueRef* out) {
  hc_kb* kb = e->kb;
  if (len == 0) {
    for (int q = 0; q < rows; ++q) out[q] = init[q];
    return;
  }
  for (int q = 0; q < rows; ++q) LLVMBuildStore(kb->b, cf(e, 0.0), e->acc[q]);
  hc_loop l;
  LLVMValueRef k = hc_loop_begin(kb, &l, ci(e, 0), ci(e, len), "k");
  LLVMValueRef a = a_ws ? ld_w(e, pa, iadd(e, a0, k)) : ld_t(e, pa, iadd(e, a0, k));
  LLVMValueRef bk = iadd(e, b0, k);
  for (int q = 0; q < rows; ++q) {
    LLVMValueRef b = ld_t(e, pb, q ? iadd(e, bk, ci(e, q * b_stride)) : bk);
    LLVMValueRef prod = fast(LLVMBuildFMul(kb->b, a, b, ""));
    LLVMValueRef sum = fast(LLVMBuildFAdd(kb->b, LLVMBuildLoad2(kb->b, e->t, e->acc[q], ""), prod, ""));
    LLVMBuildStore(kb->b, sum, e->acc[q]);
  }
  hc_loop_end(kb, &l);
  for (int q = 0; q < rows; ++q) out[q] = fadd(e, init[q], LLVMBuildLoad2(kb->b, e->t, e->acc[q], ""));
}

/* Bounds a pre-activation to [-clip, clip] when the node has `clip`. */
static LLVMValueRef emit_clip(rnn_emit* e, LLVMValueRef x) {
  if (!e->p->has_clip) return x;
  x = hc_kb_max(e->kb, e->wdt, x, cf(e, -e->p->clip));
  return hc_kb_min(e->kb, e->wdt, x, cf(e, e->p->clip));
}

/* tanh(x). float32 inline, so that the gate loops vectorise: an odd
 * Taylor polynomial to x^9 below |x| = 0.3 (truncation < 1e-9), else
 * 1 - 2 / (e^{2|x|} + 1) (a few ulp), with x's sign; NaN passes through.
 * float64 calls libm. */
static LLVMValueRef emit_tanh(rnn_emit* e, LLVMValueRef x) {
  hc_kb* kb = e->kb;
  if (e->wdt != HX_DTYPE_FLOAT32) return hc_kb_math(kb, e->wdt, "tanh", &x, 1);
  static const double k_taylor[] = {62.0 / 2835.0, -17.0 / 315.0, 2.0 / 15.0, -1.0 / 3.0, 1.0};
  LLVMValueRef ax = hc_kb_math(kb, e->wdt, "fabs", &x, 1);
  LLVMValueRef ex = hc_kb_exp_f32(kb, fadd(e, ax, ax));
  LLVMValueRef big = fsub(e, cf(e, 1.0), hc_kb_div(kb, e->wdt, cf(e, 2.0), fadd(e, ex, cf(e, 1.0))));
  LLVMValueRef x2 = fmul(e, x, x);
  LLVMValueRef poly = cf(e, k_taylor[0]);
  for (size_t i = 1; i < sizeof k_taylor / sizeof k_taylor[0]; ++i)
    poly = hc_kb_fma(kb, e->wdt, poly, x2, cf(e, k_taylor[i]));
  LLVMValueRef small = fmul(e, ax, poly);
  LLVMValueRef mag = hc_kb_select(kb, hc_kb_cmp(kb, e->wdt, "lt", ax, cf(e, 0.3)), small, big);
  LLVMValueRef args[2] = {mag, x};
  return hc_kb_math(kb, e->wdt, "copysign", args, 2);
}

/* One activation function of the specification's list. */
static LLVMValueRef emit_act(rnn_emit* e, const rnn_act* a, LLVMValueRef x) {
  hc_kb* kb = e->kb;
  hx_dtype_t dt = e->wdt;
  LLVMValueRef zero = cf(e, 0.0), one = cf(e, 1.0);
  LLVMValueRef alpha = cf(e, a->alpha), beta = cf(e, a->beta);
  switch (a->kind) {
    case ACT_RELU: return hc_kb_select(kb, hc_kb_cmp(kb, dt, "lt", x, zero), zero, x);
    case ACT_TANH: return emit_tanh(e, x);
    case ACT_SIGMOID: {
      LLVMValueRef neg = LLVMBuildFNeg(kb->b, x, "");
      LLVMValueRef ex = hc_kb_math(kb, dt, "exp", &neg, 1);
      return hc_kb_div(kb, dt, one, fadd(e, one, ex));
    }
    case ACT_AFFINE: return fadd(e, fmul(e, alpha, x), beta);
    case ACT_LEAKY_RELU: return hc_kb_select(kb, hc_kb_cmp(kb, dt, "lt", x, zero), fmul(e, alpha, x), x);
    case ACT_THRESHOLDED_RELU: return hc_kb_select(kb, hc_kb_cmp(kb, dt, "gt", x, alpha), x, zero);
    case ACT_SCALED_TANH: {
      LLVMValueRef bx = fmul(e, beta, x);
      return fmul(e, alpha, emit_tanh(e, bx));
    }
    case ACT_HARD_SIGMOID: {
      LLVMValueRef v = fadd(e, fmul(e, alpha, x), beta);
      return hc_kb_min(kb, dt, hc_kb_max(kb, dt, v, zero), one);
    }
    case ACT_ELU: {
      LLVMValueRef em1 = fsub(e, hc_kb_math(kb, dt, "exp", &x, 1), one);
      return hc_kb_select(kb, hc_kb_cmp(kb, dt, "lt", x, zero), fmul(e, alpha, em1), x);
    }
    case ACT_SOFTSIGN: return hc_kb_div(kb, dt, x, fadd(e, one, hc_kb_math(kb, dt, "fabs", &x, 1)));
    case ACT_SOFTPLUS: {
      /* log(1 + e^x) = max(x, 0) + log1p(e^-|x|), without overflow. */
      LLVMValueRef nabs = LLVMBuildFNeg(kb->b, hc_kb_math(kb, dt, "fabs", &x, 1), "");
      LLVMValueRef ex = hc_kb_math(kb, dt, "exp", &nabs, 1);
      LLVMValueRef lp = hc_kb_math(kb, dt, "log1p", &ex, 1);
      return fadd(e, hc_kb_max(kb, dt, x, zero), lp);
    }
  }
  return x;
}

/* act(clip(x)). */
static LLVMValueRef emit_gate(rnn_emit* e, const rnn_act* a, LLVMValueRef x) { return emit_act(e, a, emit_clip(e, x)); }

/* ---- kernel 1: input projection ------------------------------------------ */

/* Rows [r0, r1) of the projection of task (d, t), `rows` at a time;
 * with_rb adds Rb too. */
static void emit_proj_rows(rnn_emit* e, LLVMValueRef d, LLVMValueRef t, int64_t r0, int64_t r1, int rows,
                           bool with_rb) {
  if (r0 >= r1) return;
  hc_kb* kb = e->kb;
  const rnn_plan* p = e->p;
  int64_t GH = p->G * p->H;
  hc_loop lr, lb;
  LLVMValueRef r = hc_loop_begin_step(kb, &lr, ci(e, r0), ci(e, r1), rows, "r");
  LLVMValueRef bias[RNN_DOT_ROWS], v[RNN_DOT_ROWS];
  for (int q = 0; q < rows; ++q) {
    bias[q] = cf(e, 0.0);
    if (!p->b) continue;
    LLVMValueRef bi = iadd(e, imulc(e, d, 2 * GH), iadd(e, r, ci(e, q)));
    bias[q] = ld_t(e, e->pb, bi);
    if (with_rb) bias[q] = fadd(e, bias[q], ld_t(e, e->pb, iadd(e, bi, ci(e, GH))));
  }
  LLVMValueRef w0 = imulc(e, iadd(e, imulc(e, d, GH), r), p->I);
  LLVMValueRef bb = hc_loop_begin(kb, &lb, ci(e, 0), ci(e, p->B), "b");
  LLVMValueRef xrow = p->layout ? iadd(e, imulc(e, bb, p->S), t) : iadd(e, imulc(e, t, p->B), bb);
  emit_dots(e, rows, bias, false, e->px, imulc(e, xrow, p->I), e->pw, w0, p->I, p->I, v);
  LLVMValueRef out = iadd(e, imulc(e, iadd(e, imulc(e, iadd(e, imulc(e, d, p->S), t), p->B), bb), GH), r);
  for (int q = 0; q < rows; ++q) st_w(e, e->proj, q ? iadd(e, out, ci(e, q)) : out, v[q]);
  hc_loop_end(kb, &lb);
  hc_loop_end(kb, &lr);
}

/* Rows [r0, r1): RNN_DOT_ROWS at a time, then the remainder one by one. */
static void emit_proj_range(rnn_emit* e, LLVMValueRef d, LLVMValueRef t, int64_t r0, int64_t r1, bool with_rb) {
  int64_t mid = r0 + (r1 - r0) / RNN_DOT_ROWS * RNN_DOT_ROWS;
  emit_proj_rows(e, d, t, r0, mid, RNN_DOT_ROWS, with_rb);
  emit_proj_rows(e, d, t, mid, r1, 1, with_rb);
}

static hx_status_t emit_projection(hc_lower_ctx* lc, const hc_node* n, const rnn_plan* p) {
  int64_t GH = p->G * p->H;
  if (p->D * p->S * p->B * GH == 0) return HX_OK;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "xw", p->D * p->S, &kb));
  hc_ukr_prefer_full_width(&kb);
  rnn_emit e = {.kb = &kb, .p = p, .dt = p->dt, .wdt = p->wdt};
  e.t = hc_kb_compute_type(&kb, p->wdt);
  for (int q = 0; q < RNN_DOT_ROWS; ++q) e.acc[q] = hc_kb_alloca(&kb, e.t, "acc");
  e.px = hc_kb_ptr(&kb, p->x);
  e.pw = hc_kb_ptr(&kb, p->w);
  if (p->b) e.pb = hc_kb_ptr(&kb, p->b);
  e.proj = hc_kb_workspace(&kb);
  hc_loop task;
  LLVMValueRef k = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef d = LLVMBuildUDiv(kb.b, k, ci(&e, p->S), "");
  LLVMValueRef t = LLVMBuildURem(kb.b, k, ci(&e, p->S), "");
  /* GRU with linear_before_reset: Rbh is scaled by r in the recurrence. */
  int64_t rb_rows = p->lbr ? 2 * p->H : GH;
  emit_proj_range(&e, d, t, 0, rb_rows, true);
  emit_proj_range(&e, d, t, rb_rows, GH, false);
  hc_loop_end(&kb, &task);
  double flops = 2.0 * (double)(p->D * p->S * p->B * GH) * (double)p->I;
  double bytes = (double)hc_value_nbytes(p->x) + (double)hc_value_nbytes(p->w) +
                 (double)(p->D * p->S * p->B * GH) * (double)hx_dtype_size(p->wdt);
  hc_kb_end(&kb, flops, bytes);
  return HX_OK;
}

/* X's rows as the columns of XT[I][S*B] at the end of the workspace, for
 * the tiled projection (X is [S][B][I] or [B][S][I]: S*B rows of I). */
static hx_status_t emit_transpose_x(hc_lower_ctx* lc, const hc_node* n, const rnn_plan* p) {
  int64_t Q = p->S * p->B;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "xt", 1, &kb));
  rnn_emit e = {.kb = &kb, .p = p, .dt = p->dt, .wdt = p->wdt};
  LLVMValueRef px = hc_kb_ptr(&kb, p->x);
  LLVMValueRef xt = hc_kb_gep(&kb, p->wdt, hc_kb_workspace(&kb), ci(&e, xt_offset(p)));
  hc_loop task, lk, lq;
  hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef k = hc_loop_begin(&kb, &lk, ci(&e, 0), ci(&e, p->I), "k");
  LLVMValueRef q = hc_loop_begin(&kb, &lq, ci(&e, 0), ci(&e, Q), "q");
  st_w(&e, xt, iadd(&e, imulc(&e, k, Q), q), ld_t(&e, px, iadd(&e, imulc(&e, q, p->I), k)));
  hc_loop_end(&kb, &lq);
  hc_loop_end(&kb, &lk);
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, 0, 2.0 * (double)(Q * p->I) * (double)hx_dtype_size(p->wdt));
  return HX_OK;
}

/* One register tile of the tiled projection: gate rows [r, r + rows) of
 * direction d by columns [c, c + nv*vl) of XT (the last vector `lanes`
 * wide), W's rows broadcast and XT's rows the vectors, over all I:
 * XW[d][r][q] = Wb[d][r] (+ Rb[d][r]) + sum_k W[d][r][k] XT[k][q]. */
static void emit_xw_tile(rnn_emit* e, LLVMValueRef d, int rows, LLVMValueRef r, LLVMValueRef c, int nv, unsigned lanes,
                         unsigned vl, LLVMValueRef xt) {
  hc_kb* kb = e->kb;
  const rnn_plan* p = e->p;
  int64_t GH = p->G * p->H, Q = p->S * p->B;
  /* GRU with linear_before_reset: Rbh is scaled by r in the recurrence. */
  int64_t rb_rows = p->lbr ? 2 * p->H : GH;
  LLVMValueRef wrow = iadd(e, imulc(e, d, GH), r);
  /* A: W's rows, a step along I; B: XT's rows, Q apart. */
  hc_ukr u = {.dt = HX_DTYPE_FLOAT32, .mr = rows, .nv = nv, .vl = vl, .last_lanes = lanes, .a = e->pw, .b = xt,
              .a_base = imulc(e, wrow, p->I), .a_outer = 1, .b_base = c, .b_outer = Q, .outer = ci(e, p->I),
              .nterms = 1};
  for (int i = 0; i < rows; ++i) u.a_row[i] = (int64_t)i * p->I;
  for (int v = 0; v < nv; ++v) u.b_vec[v] = (int64_t)v * vl;
  LLVMValueRef acc[HC_UKR_MAX_MR * HC_UKR_MAX_NV] = {0};
  for (int i = 0; i < rows && p->b; ++i) {
    LLVMValueRef ri = iadd(e, r, ci(e, i));
    LLVMValueRef bi = iadd(e, imulc(e, d, 2 * GH), ri);
    LLVMValueRef rb = ld_t(e, e->pb, iadd(e, bi, ci(e, GH)));
    if (rb_rows < GH) rb = hc_kb_select(kb, LLVMBuildICmp(kb->b, LLVMIntSLT, ri, ci(e, rb_rows), ""), rb, cf(e, 0.0));
    LLVMValueRef bias = hc_kb_splat(kb, fadd(e, ld_t(e, e->pb, bi), rb), vl);
    for (int v = 0; v < nv; ++v) acc[i * nv + v] = bias;
  }
  hc_ukr_emit(kb, &u, acc);
  for (int i = 0; i < rows; ++i) {
    LLVMValueRef row = imulc(e, iadd(e, wrow, ci(e, i)), Q);
    for (int v = 0; v < nv; ++v)
      hc_ukr_store(kb, HX_DTYPE_FLOAT32, e->proj, iadd(e, row, iadd(e, c, ci(e, (int64_t)v * vl))), acc[i * nv + v], vl,
                   v == nv - 1 ? lanes : vl);
  }
}

/* Gate rows [r, r + rows) by all S*B columns: chunks of nv vectors, then
 * the ragged rest. */
static void emit_xw_rows(rnn_emit* e, LLVMValueRef d, int rows, LLVMValueRef r, int nv, unsigned vl, LLVMValueRef xt) {
  int64_t Q = e->p->S * e->p->B, cw = (int64_t)nv * vl, full = Q / cw * cw, tail = Q - full;
  if (full > 0) {
    hc_loop lc;
    LLVMValueRef c = hc_loop_begin_step(e->kb, &lc, ci(e, 0), ci(e, full), cw, "c");
    emit_xw_tile(e, d, rows, r, c, nv, vl, vl, xt);
    hc_loop_end(e->kb, &lc);
  }
  if (tail > 0) {
    int nvt = (int)((tail + vl - 1) / vl);
    emit_xw_tile(e, d, rows, r, ci(e, full), nvt, (unsigned)(tail - (int64_t)(nvt - 1) * vl), vl, xt);
  }
}

/* The projection as a register-tiled product (rnn_tiled_projection): the
 * dot products of emit_projection reduce every output across a vector's
 * lanes at the end, which for input sizes of a few hundred cost as much as
 * the multiply-adds (an LSTM layer with 192 inputs and 384 gate rows at
 * 55 GFLOP/s). Here each step of the reduction over I broadcasts W[d][r][k]
 * for a tile's gate rows against a vector of XT's row k, as in a GEMM. A
 * task is a direction and a block of 8 row tiles. */
static hx_status_t emit_projection_tiled(hc_lower_ctx* lc, const hc_node* n, const rnn_plan* p) {
  int64_t GH = p->G * p->H, Q = p->S * p->B;
  if (p->D * Q * GH == 0) return HX_OK;
  HX_RETURN_IF_ERROR(emit_transpose_x(lc, n, p));
  unsigned vl = hc_ukr_lanes(lc, HX_DTYPE_FLOAT32);
  int wide = hc_ukr_registers(lc) == 32 ? 4 : 2;
  int64_t nvec = (Q + vl - 1) / vl;
  int nv = nvec < wide ? (int)nvec : wide;
  int mr = (wide == 4 ? 24 : 12) / nv;
  if (mr > 12) mr = 12;
  while (mr > 1 && !hc_ukr_tile_fits(lc, mr, nv)) --mr;
  if (mr > GH) mr = (int)GH;
  int64_t blk = 8 * (int64_t)mr, nblk = (GH + blk - 1) / blk, last_rows = GH - (nblk - 1) * blk;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "xw", p->D * nblk, &kb));
  hc_ukr_prefer_full_width(&kb);
  rnn_emit e = {.kb = &kb, .p = p, .dt = p->dt, .wdt = p->wdt};
  e.t = hc_kb_compute_type(&kb, p->wdt);
  e.pw = hc_kb_ptr(&kb, p->w);
  if (p->b) e.pb = hc_kb_ptr(&kb, p->b);
  e.proj = hc_kb_workspace(&kb);
  LLVMValueRef xt = hc_kb_gep(&kb, p->wdt, e.proj, ci(&e, xt_offset(p)));
  hc_loop task, tl;
  LLVMValueRef k = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef d = LLVMBuildUDiv(kb.b, k, ci(&e, nblk), "");
  LLVMValueRef b = LLVMBuildURem(kb.b, k, ci(&e, nblk), "");
  LLVMValueRef r0 = imulc(&e, b, blk);
  LLVMValueRef is_last = LLVMBuildICmp(kb.b, LLVMIntEQ, b, ci(&e, nblk - 1), "");
  LLVMValueRef ntiles = hc_kb_select(&kb, is_last, ci(&e, last_rows / mr), ci(&e, blk / mr));
  LLVMValueRef ti = hc_loop_begin(&kb, &tl, ci(&e, 0), ntiles, "tile");
  emit_xw_rows(&e, d, mr, iadd(&e, r0, imulc(&e, ti, mr)), nv, vl, xt);
  hc_loop_end(&kb, &tl);
  int rem = (int)(last_rows % mr);
  if (rem) {
    hc_if g;
    hc_if_begin(&kb, &g, is_last);
    emit_xw_rows(&e, d, rem, iadd(&e, r0, ci(&e, last_rows - rem)), nv, vl, xt);
    hc_if_end(&kb, &g);
  }
  hc_loop_end(&kb, &task);
  double flops = 2.0 * (double)(p->D * Q * GH) * (double)p->I;
  double bytes = (double)hc_value_nbytes(p->w) + (double)(p->D * nblk * Q * p->I) * 4.0 + (double)(p->D * Q * GH) * 4.0;
  hc_kb_end(&kb, flops, bytes);
  return HX_OK;
}

/* ---- kernel 2: recurrence ------------------------------------------------ */

/* One batch entry of the task's block inside a loop over the block: its
 * index, state slice, projection row at step t and whether t is within
 * its sequence length. */
typedef struct rnn_entry {
  hc_loop loop;
  hc_if live;
  bool guarded;
  LLVMValueRef b, slot, proj_row, valid;
} rnn_entry;

/* Opens the loop over the block's batch entries; with only_valid, the body
 * runs only for entries whose sequence covers step t (t may be NULL
 * outside the time loop). */
static void entry_begin(rnn_emit* e, int d, LLVMValueRef t, bool only_valid, rnn_entry* en) {
  hc_kb* kb = e->kb;
  const rnn_plan* p = e->p;
  LLVMValueRef bb = hc_loop_begin(kb, &en->loop, ci(e, 0), e->nb, "bb");
  en->b = iadd(e, e->b0, bb);
  en->slot = hc_kb_gep(kb, e->wdt, e->slots, imulc(e, iadd(e, en->b, ci(e, d * p->B)), slot_elems(p)));
  en->valid = NULL;
  en->proj_row = NULL;
  if (t) {
    /* X's row of (t, b); the dot-product projection's row of (d, t, b). */
    LLVMValueRef q = p->layout ? iadd(e, imulc(e, en->b, p->S), t) : iadd(e, imulc(e, t, p->B), en->b);
    en->proj_row = rnn_tiled_projection(p) ? q : imulc(e, iadd(e, ci(e, d * p->S * p->B), q), p->G * p->H);
    if (p->seq) {
      LLVMValueRef l = LLVMBuildSExt(kb->b, hc_kb_load(kb, HX_DTYPE_INT32, e->pseq, en->b), kb->t_i64, "");
      LLVMValueRef len = hc_kb_imin(kb, hc_kb_imax(kb, l, ci(e, 0)), ci(e, p->S));
      en->valid = LLVMBuildICmp(kb->b, LLVMIntSLT, t, len, "");
    }
  }
  en->guarded = only_valid && en->valid;
  if (en->guarded) hc_if_begin(kb, &en->live, en->valid);
}

static void entry_end(rnn_emit* e, rnn_entry* en) {
  if (en->guarded) hc_if_end(e->kb, &en->live);
  hc_loop_end(e->kb, &en->loop);
}

/* Index in the projection of gate row r for the entry's step (entry_begin
 * with a time step): XW[d][t][b][r], or XW[d][r][q] from the tiled
 * projection. */
static LLVMValueRef proj_at(rnn_emit* e, int d, const rnn_entry* en, LLVMValueRef r) {
  const rnn_plan* p = e->p;
  if (!rnn_tiled_projection(p)) return iadd(e, en->proj_row, r);
  return iadd(e, imulc(e, iadd(e, ci(e, d * p->G * p->H), r), p->S * p->B), en->proj_row);
}

/* Element off of a state slice. */
static LLVMValueRef at(rnn_emit* e, LLVMValueRef slot, int64_t off) {
  return off ? hc_kb_gep(e->kb, e->wdt, slot, ci(e, off)) : slot;
}

/* gates[r] = init + src . R[d][r] for rows [r0, r1), `rows` at a time,
 * and every live entry of the block, where src is the slice's vector at
 * src_off and init the step's projection row (use_proj) and/or Rb[d][r]
 * (with_rb). Rows are the outer loop so that rows of R are reused from
 * cache by the whole block. */
static void emit_matvec_rows(rnn_emit* e, int d, LLVMValueRef t, int64_t src_off, int64_t r0, int64_t r1, int rows,
                             bool use_proj, bool with_rb) {
  if (r0 >= r1) return;
  hc_kb* kb = e->kb;
  const rnn_plan* p = e->p;
  int64_t GH = p->G * p->H;
  hc_loop lr;
  LLVMValueRef r = hc_loop_begin_step(kb, &lr, ci(e, r0), ci(e, r1), rows, "r");
  LLVMValueRef rrow = imulc(e, iadd(e, r, ci(e, d * GH)), p->H);
  LLVMValueRef rb[RNN_DOT_ROWS], init[RNN_DOT_ROWS], v[RNN_DOT_ROWS];
  for (int q = 0; q < rows; ++q)
    rb[q] = with_rb && p->b ? ld_t(e, e->pb, iadd(e, r, ci(e, d * 2 * GH + GH + q))) : NULL;
  rnn_entry en;
  entry_begin(e, d, t, true, &en);
  for (int q = 0; q < rows; ++q) {
    init[q] = use_proj ? ld_w(e, e->proj, proj_at(e, d, &en, iadd(e, r, ci(e, q)))) : cf(e, 0.0);
    if (rb[q]) init[q] = fadd(e, init[q], rb[q]);
  }
  emit_dots(e, rows, init, true, en.slot, ci(e, src_off), e->pr, rrow, p->H, p->H, v);
  LLVMValueRef g = at(e, en.slot, 2 * p->H);
  for (int q = 0; q < rows; ++q) st_w(e, g, q ? iadd(e, r, ci(e, q)) : r, v[q]);
  entry_end(e, &en);
  hc_loop_end(kb, &lr);
}

static void emit_matvec(rnn_emit* e, int d, LLVMValueRef t, int64_t src_off, int64_t r0, int64_t r1, bool use_proj,
                        bool with_rb) {
  int64_t mid = r0 + (r1 - r0) / RNN_DOT_ROWS * RNN_DOT_ROWS;
  emit_matvec_rows(e, d, t, src_off, r0, mid, RNN_DOT_ROWS, use_proj, with_rb);
  emit_matvec_rows(e, d, t, src_off, mid, r1, 1, use_proj, with_rb);
}

/* One time step t of direction d for the block's live entries; each
 * slice holds h [H], c [H], gates [G*H] and r (.) h [H]. */
static void emit_step(rnn_emit* e, int d, LLVMValueRef t) {
  hc_kb* kb = e->kb;
  const rnn_plan* p = e->p;
  int64_t H = p->H, GH = p->G * p->H;
  const rnn_act* act = p->act[d];
  rnn_entry en;
  hc_loop lj;
  LLVMValueRef j, h, c, g;
  if (p->kind == RNN_SIMPLE) {
    emit_matvec(e, d, t, 0, 0, H, true, false);
    entry_begin(e, d, t, true, &en);
    h = en.slot, g = at(e, en.slot, 2 * H);
    j = hc_loop_begin(kb, &lj, ci(e, 0), ci(e, H), "j");
    st_w(e, h, j, emit_gate(e, &act[0], ld_w(e, g, j)));
    hc_loop_end(kb, &lj);
    entry_end(e, &en);
    return;
  }
  if (p->kind == RNN_GRU) {
    emit_matvec(e, d, t, 0, 0, 2 * H, true, false);
    if (p->lbr) emit_matvec(e, d, t, 0, 2 * H, 3 * H, false, true);
    /* z and r in place; r (.) H[t-1] for the default hidden gate. */
    entry_begin(e, d, t, true, &en);
    h = en.slot, g = at(e, en.slot, 2 * H);
    LLVMValueRef tmp = at(e, en.slot, 2 * H + GH);
    j = hc_loop_begin(kb, &lj, ci(e, 0), ci(e, H), "j");
    LLVMValueRef jr = iadd(e, j, ci(e, H));
    st_w(e, g, j, emit_gate(e, &act[0], ld_w(e, g, j)));
    LLVMValueRef rg = emit_gate(e, &act[0], ld_w(e, g, jr));
    st_w(e, g, jr, rg);
    if (!p->lbr) st_w(e, tmp, j, fmul(e, rg, ld_w(e, h, j)));
    hc_loop_end(kb, &lj);
    entry_end(e, &en);
    if (!p->lbr) emit_matvec(e, d, t, 2 * H + GH, 2 * H, 3 * H, true, false);
    if (p->lbr && rnn_tiled_projection(p)) {
      /* The hidden gate's projection into the r (.) h slice (unused with
       * linear_before_reset): the tiled projection's rows are a stride
       * apart, and read in place they kept the loop below scalar. */
      entry_begin(e, d, t, true, &en);
      LLVMValueRef tmp = at(e, en.slot, 2 * H + GH);
      j = hc_loop_begin(kb, &lj, ci(e, 0), ci(e, H), "j");
      st_w(e, tmp, j, ld_w(e, e->proj, proj_at(e, d, &en, iadd(e, j, ci(e, 2 * H)))));
      hc_loop_end(kb, &lj);
      entry_end(e, &en);
    }
    entry_begin(e, d, t, true, &en);
    h = en.slot, g = at(e, en.slot, 2 * H);
    j = hc_loop_begin(kb, &lj, ci(e, 0), ci(e, H), "j");
    LLVMValueRef jh = iadd(e, j, ci(e, 2 * H));
    LLVMValueRef pre = ld_w(e, g, jh);
    if (p->lbr) {
      LLVMValueRef xh = rnn_tiled_projection(p) ? ld_w(e, at(e, en.slot, 2 * H + GH), j)
                                                : ld_w(e, e->proj, proj_at(e, d, &en, jh));
      pre = fadd(e, xh, fmul(e, ld_w(e, g, iadd(e, j, ci(e, H))), pre));
    }
    LLVMValueRef hh = emit_gate(e, &act[1], pre);
    LLVMValueRef z = ld_w(e, g, j);
    st_w(e, h, j, fadd(e, fmul(e, fsub(e, cf(e, 1.0), z), hh), fmul(e, z, ld_w(e, h, j))));
    hc_loop_end(kb, &lj);
    entry_end(e, &en);
    return;
  }
  /* LSTM: gates i, o, f, c; peepholes i, o, f. */
  emit_matvec(e, d, t, 0, 0, 4 * H, true, false);
  entry_begin(e, d, t, true, &en);
  h = en.slot, c = at(e, en.slot, H), g = at(e, en.slot, 2 * H);
  j = hc_loop_begin(kb, &lj, ci(e, 0), ci(e, H), "j");
  LLVMValueRef pbase = ci(e, d * 3 * H);
  LLVMValueRef cp = ld_w(e, c, j);
  LLVMValueRef gi = ld_w(e, g, j);
  if (p->p) gi = fadd(e, gi, fmul(e, ld_t(e, e->pp, iadd(e, pbase, j)), cp));
  LLVMValueRef i = emit_gate(e, &act[0], gi);
  LLVMValueRef f;
  if (p->input_forget) {
    f = fsub(e, cf(e, 1.0), i);
  } else {
    LLVMValueRef gf = ld_w(e, g, iadd(e, j, ci(e, 2 * H)));
    if (p->p) gf = fadd(e, gf, fmul(e, ld_t(e, e->pp, iadd(e, pbase, iadd(e, j, ci(e, 2 * H)))), cp));
    f = emit_gate(e, &act[0], gf);
  }
  LLVMValueRef cc = emit_gate(e, &act[1], ld_w(e, g, iadd(e, j, ci(e, 3 * H))));
  LLVMValueRef C = fadd(e, fmul(e, f, cp), fmul(e, i, cc));
  LLVMValueRef go = ld_w(e, g, iadd(e, j, ci(e, H)));
  if (p->p) go = fadd(e, go, fmul(e, ld_t(e, e->pp, iadd(e, pbase, iadd(e, j, ci(e, H)))), C));
  LLVMValueRef o = emit_gate(e, &act[0], go);
  st_w(e, h, j, fmul(e, o, emit_act(e, &act[2], C)));
  st_w(e, c, j, C);
  hc_loop_end(kb, &lj);
  entry_end(e, &en);
}

/* Copies H state values (or zeros when src is NULL) to an output at off. */
static void emit_store_row(rnn_emit* e, LLVMValueRef out, LLVMValueRef off, LLVMValueRef src) {
  hc_loop lj;
  LLVMValueRef j = hc_loop_begin(e->kb, &lj, ci(e, 0), ci(e, e->p->H), "j");
  LLVMValueRef v = src ? ld_w(e, src, j) : cf(e, 0.0);
  hc_kb_store(e->kb, e->dt, out, iadd(e, off, j), v);
  hc_loop_end(e->kb, &lj);
}

/* Offset of (direction d, batch entry b) in initial_h/initial_c/Y_h/Y_c. */
static LLVMValueRef state_off(rnn_emit* e, int d, LLVMValueRef b) {
  const rnn_plan* p = e->p;
  return p->layout ? imulc(e, iadd(e, imulc(e, b, p->D), ci(e, d)), p->H) : imulc(e, iadd(e, b, ci(e, d * p->B)), p->H);
}

/* The whole sequence of direction d (a compile-time constant) for the
 * task's block of batch entries. */
static void emit_direction(rnn_emit* e, int d) {
  hc_kb* kb = e->kb;
  const rnn_plan* p = e->p;
  int64_t H = p->H;
  rnn_entry en;
  hc_loop lj;
  entry_begin(e, d, NULL, false, &en);
  LLVMValueRef soff = state_off(e, d, en.b);
  LLVMValueRef j = hc_loop_begin(kb, &lj, ci(e, 0), ci(e, H), "j");
  st_w(e, en.slot, j, p->h0 ? ld_t(e, e->ph0, iadd(e, soff, j)) : cf(e, 0.0));
  if (p->kind == RNN_LSTM) st_w(e, at(e, en.slot, H), j, p->c0 ? ld_t(e, e->pc0, iadd(e, soff, j)) : cf(e, 0.0));
  hc_loop_end(kb, &lj);
  entry_end(e, &en);

  bool rev = p->reverse || d == 1;
  hc_loop ls;
  LLVMValueRef s = hc_loop_begin(kb, &ls, ci(e, 0), ci(e, p->S), "s");
  LLVMValueRef t = rev ? LLVMBuildSub(kb->b, ci(e, p->S - 1), s, "") : s;
  emit_step(e, d, t);
  if (p->y) {
    /* Y[t][d][b] (layout 0) or Y[b][t][d] (layout 1): h, or zeros past the
     * entry's length. */
    entry_begin(e, d, t, false, &en);
    LLVMValueRef yoff = p->layout ? imulc(e, iadd(e, imulc(e, iadd(e, imulc(e, en.b, p->S), t), p->D), ci(e, d)), H)
                                  : imulc(e, iadd(e, imulc(e, iadd(e, imulc(e, t, p->D), ci(e, d)), p->B), en.b), H);
    if (en.valid) {
      hc_if live, dead;
      hc_if_begin(kb, &live, en.valid);
      emit_store_row(e, e->py, yoff, en.slot);
      hc_if_end(kb, &live);
      hc_if_begin(kb, &dead, LLVMBuildNot(kb->b, en.valid, ""));
      emit_store_row(e, e->py, yoff, NULL);
      hc_if_end(kb, &dead);
    } else {
      emit_store_row(e, e->py, yoff, en.slot);
    }
    entry_end(e, &en);
  }
  hc_loop_end(kb, &ls);

  if (p->yh || p->yc) {
    entry_begin(e, d, NULL, false, &en);
    soff = state_off(e, d, en.b);
    if (p->yh) emit_store_row(e, e->pyh, soff, en.slot);
    if (p->yc) emit_store_row(e, e->pyc, soff, at(e, en.slot, H));
    entry_end(e, &en);
  }
}

static hx_status_t emit_recurrence(hc_lower_ctx* lc, const hc_node* n, const rnn_plan* p) {
  if (p->D * p->B == 0) return HX_OK;
  int64_t nblk = (p->B + RNN_BATCH_BLOCK - 1) / RNN_BATCH_BLOCK;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "rec", p->D * nblk, &kb));
  hc_ukr_prefer_full_width(&kb);
  rnn_emit e = {.kb = &kb, .p = p, .dt = p->dt, .wdt = p->wdt};
  e.t = hc_kb_compute_type(&kb, p->wdt);
  for (int q = 0; q < RNN_DOT_ROWS; ++q) e.acc[q] = hc_kb_alloca(&kb, e.t, "acc");
  e.pr = hc_kb_ptr(&kb, p->r);
  if (p->b) e.pb = hc_kb_ptr(&kb, p->b);
  if (p->seq) e.pseq = hc_kb_ptr(&kb, p->seq);
  if (p->h0) e.ph0 = hc_kb_ptr(&kb, p->h0);
  if (p->c0 && p->kind == RNN_LSTM) e.pc0 = hc_kb_ptr(&kb, p->c0);
  if (p->p && p->kind == RNN_LSTM) e.pp = hc_kb_ptr(&kb, p->p);
  if (p->y) e.py = hc_kb_ptr(&kb, p->y);
  if (p->yh) e.pyh = hc_kb_ptr(&kb, p->yh);
  if (p->yc && p->kind == RNN_LSTM) e.pyc = hc_kb_ptr(&kb, p->yc);
  e.proj = hc_kb_workspace(&kb);
  e.slots = hc_kb_gep(&kb, p->wdt, e.proj, ci(&e, proj_elems(p)));

  hc_loop task;
  LLVMValueRef k = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef d = LLVMBuildUDiv(kb.b, k, ci(&e, nblk), "");
  e.b0 = imulc(&e, LLVMBuildURem(kb.b, k, ci(&e, nblk), ""), RNN_BATCH_BLOCK);
  e.nb = hc_kb_imin(&kb, ci(&e, RNN_BATCH_BLOCK), LLVMBuildSub(kb.b, ci(&e, p->B), e.b0, ""));
  if (p->D == 1) {
    emit_direction(&e, 0);
  } else {
    for (int dd = 0; dd < 2; ++dd) {
      hc_if br;
      hc_if_begin(&kb, &br, LLVMBuildICmp(kb.b, LLVMIntEQ, d, ci(&e, dd), ""));
      emit_direction(&e, dd);
      hc_if_end(&kb, &br);
    }
  }
  hc_loop_end(&kb, &task);

  double steps = (double)(p->D * p->S * p->B);
  double flops = steps * (2.0 * (double)(p->G * p->H) * (double)p->H + 30.0 * (double)p->H);
  double bytes = (double)hc_value_nbytes(p->r) * (double)(p->S * nblk) +
                 steps * (double)(p->G * p->H) * (double)hx_dtype_size(p->wdt);
  if (p->y) bytes += (double)hc_value_nbytes(p->y);
  hc_kb_end(&kb, flops, bytes);
  return HX_OK;
}

static hx_status_t rnn_lower(hc_lower_ctx* lc, hc_node* n, rnn_kind kind) {
  rnn_plan p;
  HX_RETURN_IF_ERROR(rnn_setup(n, kind, &p));
  HX_RETURN_IF_ERROR(rnn_tiled_projection(&p) ? emit_projection_tiled(lc, n, &p) : emit_projection(lc, n, &p));
  return emit_recurrence(lc, n, &p);
}

static hx_status_t lower_rnn(hc_lower_ctx* lc, hc_node* n) { return rnn_lower(lc, n, RNN_SIMPLE); }
static hx_status_t lower_gru(hc_lower_ctx* lc, hc_node* n) { return rnn_lower(lc, n, RNN_GRU); }
static hx_status_t lower_lstm(hc_lower_ctx* lc, hc_node* n) { return rnn_lower(lc, n, RNN_LSTM); }

static uint64_t workspace_rnn(const hc_node* n) { return rnn_workspace_bytes(n, RNN_SIMPLE); }
static uint64_t workspace_gru(const hc_node* n) { return rnn_workspace_bytes(n, RNN_GRU); }
static uint64_t workspace_lstm(const hc_node* n) { return rnn_workspace_bytes(n, RNN_LSTM); }

static const char* const k_rnn_attrs[] = {"activation_alpha", "activation_beta", "activations", "clip",
                                          "direction",        "hidden_size",     "layout",      NULL};
static const char* const k_gru_attrs[] = {
    "activation_alpha", "activation_beta", "activations",         "clip", "direction",
    "hidden_size",      "layout",          "linear_before_reset", NULL};
static const char* const k_lstm_attrs[] = {"activation_alpha", "activation_beta", "activations", "clip", "direction",
                                           "hidden_size",      "input_forget",    "layout",      NULL};

const hc_op_desc hc_op_rnn = {"RNN", "", 7, 22, k_rnn_attrs, 0, infer_rnn, lower_rnn, NULL, workspace_rnn};
const hc_op_desc hc_op_gru = {"GRU", "", 7, 22, k_gru_attrs, 0, infer_gru, lower_gru, NULL, workspace_gru};
const hc_op_desc hc_op_lstm = {"LSTM", "", 7, 22, k_lstm_attrs, 0, infer_lstm, lower_lstm, NULL, workspace_lstm};
