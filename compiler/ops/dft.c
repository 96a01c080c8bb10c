/* DFT and STFT: discrete Fourier transforms along one axis.
 *
 * Both ops reduce to a set of independent 1-D transforms ("rows"): row r
 * reads m samples x[j] (real, or interleaved real/imaginary pairs) starting
 * at an input offset derived from r, zero-pads them to the transform length
 * n, and writes `bins` complex outputs
 *     y[k] = scale * sum_j x[j] * exp(sign * 2*pi*i * j*k / n)
 * (sign -1 and scale 1 forward, sign +1 and scale 1/n inverse). onesided
 * keeps bins = floor(n/2) + 1, which is also what the ONNX reference does
 * for complex and inverse transforms (it slices the full result).
 *
 *  - DFT (opset 17: axis attribute, default 1; opset 20: axis input,
 *    default -2): a row is one position of every dimension but the axis
 *    and the trailing complex dimension; dft_length truncates or pads.
 *  - STFT (opset 17): a row is one frame of one batch entry, multiplied by
 *    the optional window.
 *
 * Shapes are static, so the twiddle factors are computed at compile time
 * (in float64, stored as float64 for float64 data and float32 otherwise,
 * the type products and FFT butterflies are computed in) and emitted as
 * constant arrays in the module. Three kernel forms:
 *  - FFT: n a power of two >= FFT_MIN_N. Iterative radix-2 Cooley-Tukey in
 *    a per-task workspace buffer (split real/imaginary arrays, bit-reversed
 *    load), one loop nest per stage with contiguous inner loops.
 *  - direct, rows: O(n^2); a task is one row and a block of output bins,
 *    each bin a dot product over contiguous samples and a contiguous row of
 *    a precomputed twiddle matrix (or, when that matrix would exceed
 *    DFT_MATRIX_BUDGET, chunks of that row gathered from the n-entry table
 *    at indices j*k mod n).
 *  - direct, columns: DFT along an axis that has signal dimensions after
 *    it; rows that are neighbours in memory are transformed together, the
 *    inner loop running over them (contiguous) with one twiddle per (k, j).
 * The direct forms sum in float64 (see SUM_DT); the FFT's error grows with
 * log2(n) only and it stays in the product type.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/op.h"

#define DFT_PI 3.14159265358979323846
/* Bytes of a precomputed bins x m twiddle matrix (direct, rows form). */
#define DFT_MATRIX_BUDGET (4u << 20)
/* Multiply-adds per task of the direct rows form. */
#define DFT_MACS_PER_TASK 16384
/* Twiddles gathered per chunk when the rows form reads the n-entry table. */
#define DFT_TW_CHUNK 512
/* Neighbouring rows per task of the direct columns form. */
#define DFT_COL_BLOCK 256
/* Smallest power-of-two length transformed by FFT. */
#define FFT_MIN_N 16
/* FFT tasks (each with its own workspace buffer) and their total buffer bytes. */
#define FFT_MAX_TASKS 256
#define FFT_WS_BUDGET (64u << 20)
/* Longest transform (twiddle tables grow with n). */
#define DFT_MAX_N ((int64_t)1 << 22)

typedef enum { FORM_FFT, FORM_ROWS, FORM_COLUMNS } dft_form;

/* Everything the lowering needs, derived from the node alone. */
typedef struct dft_plan {
  hx_dtype_t dt; /* input and output element type */
  int comps;     /* input values per sample: 1 real, 2 complex */
  int64_t rows;  /* independent transforms, r = r1 * rows2 + r2 */
  int64_t rows2;
  int64_t in_s1, in_s2, in_sj;    /* input element offset: r1*in_s1 + r2*in_s2 + j*in_sj */
  int64_t out_s1, out_s2, out_sk; /* output element offset: r1*out_s1 + r2*out_s2 + k*out_sk (+1: imaginary) */
  int64_t m;                      /* samples read per row (<= n; the rest is zero padding) */
  int64_t n;                      /* transform length */
  int64_t bins;                   /* output bins per row */
  bool inverse;
  bool windowed; /* STFT window input multiplies the samples */
  bool columns;  /* DFT with signal dimensions after the axis (rows2 > 1, contiguous) */
  int out_rank;
  int64_t out_dims[HC_MAX_RANK];
} dft_plan;

/* Reads constant integer scalar input i (int32 or int64). */
static hx_status_t const_int_scalar(const hc_node* n, int i, const char* what, int64_t* out) {
  const hc_value* v = hc_input(n, i);
  if (!(HC_DT(v->dtype) & (HC_DT(HX_DTYPE_INT32) | HC_DT(HX_DTYPE_INT64))))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d (%s) must be int32 or int64, got %s", i, what,
                         hx_dtype_name(v->dtype));
  if (hc_value_numel(v) != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input %d (%s) must be a scalar, got %lld elements", i, what,
                         (long long)hc_value_numel(v));
  int count = 0;
  HX_RETURN_IF_ERROR(hc_const_ints(n, i, out, 1, &count));
  return HX_OK;
}

/* Reads a 0/1 attribute. */
static hx_status_t bool_attr(const hc_node* n, const char* name, int64_t dflt, bool* out) {
  int64_t v = hc_attr_int(n, name, dflt);
  if (v != 0 && v != 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute '%s' must be 0 or 1, got %lld", name, (long long)v);
  *out = v != 0;
  return HX_OK;
}

/* Checks a transform length: at least 1, at most DFT_MAX_N. */
static hx_status_t check_length(const hc_node* n, const char* what, int64_t len) {
  if (len < 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "%s must be >= 1, got %lld", what, (long long)len);
  if (len > DFT_MAX_N)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED, "%s %lld is too large (Harness supports up to %lld)", what,
                         (long long)len, (long long)DFT_MAX_N);
  return HX_OK;
}

/* DFT: validates the node and describes its rows (see dft_plan). */
static hx_status_t plan_dft(const hc_node* n, dft_plan* p) {
  bool axis_input = n->opset >= 20;
  HX_RETURN_IF_ERROR(hc_check_arity(n, 1, axis_input ? 3 : 2, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_FLOATS));
  const hc_value* x = n->inputs[0];
  int r = x->rank;
  if (r < 2)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "input must have rank >= 2 ([..., signal, 1] real or [..., signal, 2] complex), got rank %d",
                         r);
  int64_t comps = x->dims[r - 1];
  if (comps != 1 && comps != 2)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "the last input dimension must be 1 (real) or 2 (complex), got %lld", (long long)comps);
  int64_t axis;
  if (axis_input) {
    if (hc_node_attr(n, "axis"))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "axis is an input from opset 20 on, not an attribute");
    axis = -2;
    if (hc_input(n, 2)) HX_RETURN_IF_ERROR(const_int_scalar(n, 2, "axis", &axis));
  } else {
    axis = hc_attr_int(n, "axis", 1);
  }
  if (!((axis >= -r && axis <= -2) || (axis >= 0 && axis <= r - 2)))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "axis %lld is out of range for rank %d (accepted: [%d, -2] and [0, %d]; the last dimension "
                         "holds the real and imaginary parts)",
                         (long long)axis, r, -r, r - 2);
  if (axis < 0) axis += r;
  int64_t len = x->dims[axis];
  if (hc_input(n, 1)) {
    HX_RETURN_IF_ERROR(const_int_scalar(n, 1, "dft_length", &len));
    HX_RETURN_IF_ERROR(check_length(n, "dft_length", len));
  } else {
    HX_RETURN_IF_ERROR(check_length(n, "the length of the transformed axis", len));
  }
  bool onesided = false;
  HX_RETURN_IF_ERROR(bool_attr(n, "inverse", 0, &p->inverse));
  HX_RETURN_IF_ERROR(bool_attr(n, "onesided", 0, &onesided));

  int64_t outer = hc_shape_numel((int)axis, x->dims);
  int64_t inner = hc_shape_numel(r - 2 - (int)axis, x->dims + axis + 1);
  int64_t L = x->dims[axis];
  p->dt = x->dtype;
  p->comps = (int)comps;
  p->n = len;
  p->m = L < len ? L : len;
  p->bins = onesided ? len / 2 + 1 : len;
  p->rows = outer * inner;
  p->rows2 = inner;
  p->in_s1 = L * inner * comps;
  p->in_s2 = comps;
  p->in_sj = inner * comps;
  p->out_s1 = p->bins * inner * 2;
  p->out_s2 = 2;
  p->out_sk = inner * 2;
  p->windowed = false;
  p->columns = inner > 1;
  p->out_rank = r;
  memcpy(p->out_dims, x->dims, sizeof(int64_t) * (size_t)r);
  p->out_dims[axis] = p->bins;
  p->out_dims[r - 1] = 2;
  return HX_OK;
}

/* STFT: validates the node and describes its frames as rows. */
static hx_status_t plan_stft(const hc_node* n, dft_plan* p) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 4, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_FLOATS));
  const hc_value* x = n->inputs[0];
  if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "signal must be [batch, length, 1] (real) or [batch, length, 2] (complex), got rank %d",
                         x->rank);
  int64_t batch = x->dims[0], length = x->dims[1], comps = x->dims[2];
  int64_t step, frame = -1;
  HX_RETURN_IF_ERROR(const_int_scalar(n, 1, "frame_step", &step));
  if (step < 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "frame_step must be >= 1, got %lld", (long long)step);
  const hc_value* w = hc_input(n, 2);
  if (hc_input(n, 3)) HX_RETURN_IF_ERROR(const_int_scalar(n, 3, "frame_length", &frame));
  if (w) {
    HX_RETURN_IF_ERROR(hc_check_same_dtype(n, 0, 2));
    if (w->rank != 1) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "window must be 1-D, got rank %d", w->rank);
    if (frame >= 0 && frame != w->dims[0])
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "window length %lld differs from frame_length %lld",
                           (long long)w->dims[0], (long long)frame);
    frame = w->dims[0];
  }
  if (frame < 0) frame = length; /* neither given: one frame of the whole signal, as the reference */
  HX_RETURN_IF_ERROR(check_length(n, "frame_length", frame));
  if (frame > length)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "frame_length %lld exceeds the signal length %lld",
                         (long long)frame, (long long)length);
  bool onesided = false;
  HX_RETURN_IF_ERROR(bool_attr(n, "onesided", 1, &onesided));
  int64_t frames = (length - frame) / step + 1;
  p->dt = x->dtype;
  p->comps = (int)comps;
  p->n = p->m = frame;
  p->bins = onesided ? frame / 2 + 1 : frame;
  p->inverse = false;
  p->rows = batch * frames;
  p->rows2 = frames;
  p->in_s1 = length * comps;
  p->in_s2 = step * comps;
  p->in_sj = comps;
  p->out_s1 = frames * p->bins * 2;
  p->out_s2 = p->bins * 2;
  p->out_sk = 2;
  p->windowed = w != NULL;
  p->columns = false;
  p->out_rank = 4;
  int64_t dims[4] = {batch, frames, p->bins, 2};
  memcpy(p->out_dims, dims, sizeof dims);
  return HX_OK;
}

/* The plan of a DFT or STFT node; fails naming what is wrong with it. */
static hx_status_t plan_node(const hc_node* n, dft_plan* p) {
  memset(p, 0, sizeof *p);
  return strcmp(n->op_type, "STFT") == 0 ? plan_stft(n, p) : plan_dft(n, p);
}

/* True for 1, 2, 4, 8... */
static bool is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

/* FFT for power-of-two lengths, a direct form otherwise. */
static dft_form choose_form(const dft_plan* p) {
  if (is_pow2(p->n) && p->n >= FFT_MIN_N) return FORM_FFT;
  return p->columns ? FORM_COLUMNS : FORM_ROWS;
}

/* Type of twiddles, products and FFT arithmetic: float64 for float64
 * data, float32 otherwise. */
static hx_dtype_t acc_dtype(const dft_plan* p) {
  return p->dt == HX_DTYPE_FLOAT64 ? HX_DTYPE_FLOAT64 : HX_DTYPE_FLOAT32;
}

/* FFT task count and per-task buffer bytes (split real/imaginary arrays). */
static void fft_tasks(const dft_plan* p, int64_t* tasks, uint64_t* buf_bytes) {
  uint64_t buf = 2u * (uint64_t)p->n * hx_dtype_size(acc_dtype(p));
  int64_t t = p->rows < FFT_MAX_TASKS ? p->rows : FFT_MAX_TASKS;
  int64_t fit = (int64_t)(FFT_WS_BUDGET / buf);
  if (fit < 1) fit = 1;
  if (t > fit) t = fit;
  *tasks = t;
  *buf_bytes = buf;
}

/* Shared infer of DFT and STFT: the plan fixes the output. */
static hx_status_t infer_transform(hc_graph* g, hc_node* n) {
  (void)g;
  dft_plan p;
  HX_RETURN_IF_ERROR(plan_node(n, &p));
  hc_set_output(n, 0, p.dt, p.out_rank, p.out_dims);
  return HX_OK;
}

/* FFT buffers, one per task; the direct forms need none. */
static uint64_t transform_workspace(const hc_node* n) {
  dft_plan p;
  if (plan_node(n, &p) != HX_OK || choose_form(&p) != FORM_FFT || p.rows == 0) return 0;
  int64_t tasks;
  uint64_t buf;
  fft_tasks(&p, &tasks, &buf);
  return (uint64_t)tasks * buf;
}

/* ---- twiddle tables ------------------------------------------------------------- */

/* exp(sign * 2*pi*i * t / n) in float64, exact at the quarter turns. */
static void unit_root(int64_t t, int64_t n, int sign, double* c, double* s) {
  t %= n;
  if (t == 0) {
    *c = 1, *s = 0;
  } else if (4 * t == n) {
    *c = 0, *s = 1;
  } else if (2 * t == n) {
    *c = -1, *s = 0;
  } else if (4 * t == 3 * n) {
    *c = 0, *s = -1;
  } else {
    double a = 2.0 * DFT_PI * (double)t / (double)n;
    *c = cos(a), *s = sin(a);
  }
  *s *= sign;
}

/* A private constant array of `bytes` raw bytes in the module. */
static LLVMValueRef const_blob(hc_lower_ctx* lc, const void* data, size_t bytes, const char* name) {
  static const char zero[8];
  LLVMValueRef init = LLVMConstStringInContext2(lc->llctx, bytes ? (const char*)data : zero, bytes ? bytes : 1, 1);
  return hc_kb_const_table(lc, init, name, 64);
}

/* Cosine and sine tables of `count` entries, entry e = root(index(e)), in
 * the accumulation type. `index` maps an entry to an exponent mod n. */
typedef struct tw_tables {
  LLVMValueRef cos, sin;
} tw_tables;

typedef int64_t (*tw_index_fn)(const dft_plan* p, int64_t e);

static hx_status_t make_tables(hc_lower_ctx* lc, const dft_plan* p, int64_t count, tw_index_fn index, int64_t period,
                               tw_tables* out) {
  size_t esize = hx_dtype_size(acc_dtype(p));
  bool dbl = acc_dtype(p) == HX_DTYPE_FLOAT64;
  char* cbuf = malloc((size_t)count * esize + 1);
  char* sbuf = malloc((size_t)count * esize + 1);
  if (!cbuf || !sbuf) {
    free(cbuf);
    free(sbuf);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory building twiddle tables");
  }
  int sign = p->inverse ? 1 : -1;
  for (int64_t e = 0; e < count; ++e) {
    double c, s;
    unit_root(index(p, e), period, sign, &c, &s);
    if (dbl) {
      ((double*)cbuf)[e] = c;
      ((double*)sbuf)[e] = s;
    } else {
      ((float*)cbuf)[e] = (float)c;
      ((float*)sbuf)[e] = (float)s;
    }
  }
  out->cos = const_blob(lc, cbuf, (size_t)count * esize, "dft_cos");
  out->sin = const_blob(lc, sbuf, (size_t)count * esize, "dft_sin");
  free(cbuf);
  free(sbuf);
  return HX_OK;
}

/* Table entry e is exponent e (mod n). */
static int64_t index_identity(const dft_plan* p, int64_t e) {
  (void)p;
  return e;
}

/* Matrix entry e = k*m + j is exponent j*k (mod n). */
static int64_t index_matrix(const dft_plan* p, int64_t e) {
  int64_t k = e / p->m, j = e % p->m;
  return (int64_t)(((unsigned __int128)j * (unsigned __int128)k) % (unsigned __int128)p->n);
}

/* FFT stage tables, concatenated: stage with half-span h holds entries
 * [h-1, 2h-1), entry h-1+t being exponent t of a span of 2h, i.e.
 * exponent t * n/(2h) of n. */
static int64_t index_fft(const dft_plan* p, int64_t e) {
  int64_t h = 1;
  while (e >= 2 * h - 1) h *= 2;
  int64_t t = e - (h - 1);
  return t * (p->n / (2 * h));
}

/* ---- shared emission helpers -------------------------------------------------- */

/* Per-kernel values shared by the forms. */
typedef struct dft_emit {
  hc_kb* kb;
  const dft_plan* p;
  hx_dtype_t adt; /* products and FFT arithmetic */
  LLVMTypeRef at;
  LLVMValueRef px, pw, py;
} dft_emit;

/* Sums of the direct forms are float64 whatever the data: a float32 sum of
 * n terms loses about sqrt(n/lanes) ulps of the largest partial sum, which
 * for n in the thousands exceeds what small output bins tolerate. */
#define SUM_DT HX_DTYPE_FLOAT64

/* Input/output element offsets of row r. */
static void row_offsets(dft_emit* e, LLVMValueRef r, LLVMValueRef* in_base, LLVMValueRef* out_base) {
  hc_kb* kb = e->kb;
  const dft_plan* p = e->p;
  LLVMValueRef r1 = LLVMBuildUDiv(kb->b, r, hc_kb_i64(kb, p->rows2), "");
  LLVMValueRef r2 = LLVMBuildURem(kb->b, r, hc_kb_i64(kb, p->rows2), "");
  *in_base = hc_kb_iadd(kb, hc_kb_imul(kb, r1, hc_kb_i64(kb, p->in_s1)), hc_kb_imul(kb, r2, hc_kb_i64(kb, p->in_s2)));
  *out_base =
      hc_kb_iadd(kb, hc_kb_imul(kb, r1, hc_kb_i64(kb, p->out_s1)), hc_kb_imul(kb, r2, hc_kb_i64(kb, p->out_s2)));
}

/* Loads sample j of a row at element offset off: real part, and the
 * imaginary part (NULL for real input), windowed for STFT. */
static void load_sample(dft_emit* e, LLVMValueRef off, LLVMValueRef j, LLVMValueRef* re, LLVMValueRef* im) {
  hc_kb* kb = e->kb;
  *re = hc_kb_load(kb, e->p->dt, e->px, off);
  *im = e->p->comps == 2 ? hc_kb_load(kb, e->p->dt, e->px, hc_kb_iadd(kb, off, hc_kb_i64(kb, 1))) : NULL;
  if (e->p->windowed) {
    LLVMValueRef w = hc_kb_load(kb, e->p->dt, e->pw, j);
    *re = hc_kb_mul(kb, e->adt, *re, w);
    if (*im) *im = hc_kb_mul(kb, e->adt, *im, w);
  }
}

/* (xr + i xi) * (c + i s); xi may be NULL (real). */
static void cmul(dft_emit* e, LLVMValueRef xr, LLVMValueRef xi, LLVMValueRef c, LLVMValueRef s, LLVMValueRef* pr,
                 LLVMValueRef* pi) {
  hc_kb* kb = e->kb;
  hx_dtype_t a = e->adt;
  if (!xi) {
    *pr = hc_kb_mul(kb, a, xr, c);
    *pi = hc_kb_mul(kb, a, xr, s);
    return;
  }
  *pr = hc_kb_sub(kb, a, hc_kb_mul(kb, a, xr, c), hc_kb_mul(kb, a, xi, s));
  *pi = hc_kb_add(kb, a, hc_kb_mul(kb, a, xr, s), hc_kb_mul(kb, a, xi, c));
}

/* Stores output bin value (re, im), of dtype vdt (the sum or the
 * accumulation type), at element offset off, scaled. */
static void store_bin(dft_emit* e, LLVMValueRef off, LLVMValueRef re, LLVMValueRef im, hx_dtype_t vdt) {
  hc_kb* kb = e->kb;
  if (e->p->inverse) {
    LLVMValueRef scale = hc_kb_const(kb, vdt, 1.0 / (double)e->p->n);
    re = hc_kb_mul(kb, vdt, re, scale);
    im = hc_kb_mul(kb, vdt, im, scale);
  }
  re = hc_kb_convert(kb, re, vdt, e->adt);
  im = hc_kb_convert(kb, im, vdt, e->adt);
  hc_kb_store(kb, e->p->dt, e->py, off, re);
  hc_kb_store(kb, e->p->dt, e->py, hc_kb_iadd(kb, off, hc_kb_i64(kb, 1)), im);
}

/* Loads/stores element idx of a buffer of the product type. */
static LLVMValueRef ld(dft_emit* e, LLVMValueRef base, LLVMValueRef idx) {
  return LLVMBuildLoad2(e->kb->b, e->at, LLVMBuildGEP2(e->kb->b, e->at, base, &idx, 1, ""), "");
}

static void st(dft_emit* e, LLVMValueRef base, LLVMValueRef idx, LLVMValueRef v) {
  LLVMBuildStore(e->kb->b, v, LLVMBuildGEP2(e->kb->b, e->at, base, &idx, 1, ""));
}

/* ---- direct transform, rows form ---------------------------------------------------- */

/* Accumulates sum_j x[j] * w[j] into (re_slot, im_slot) for j in
 * [j0, j0 + cnt), the twiddle of j at cos/sin[tw0 + j - j0]. */
static void emit_dot(dft_emit* e, LLVMValueRef in_base, LLVMValueRef j0, LLVMValueRef cnt, LLVMValueRef cos,
                     LLVMValueRef sin, LLVMValueRef tw0, LLVMValueRef re_slot, LLVMValueRef im_slot) {
  hc_kb* kb = e->kb;
  hc_loop jl;
  LLVMValueRef u = hc_loop_begin(kb, &jl, hc_kb_i64(kb, 0), cnt, "j");
  LLVMValueRef j = hc_kb_iadd(kb, j0, u);
  LLVMValueRef xr, xi, pr, pi;
  load_sample(e, hc_kb_iadd(kb, in_base, hc_kb_imul(kb, j, hc_kb_i64(kb, e->p->in_sj))), j, &xr, &xi);
  LLVMValueRef idx = hc_kb_iadd(kb, tw0, u);
  cmul(e, xr, xi, ld(e, cos, idx), ld(e, sin, idx), &pr, &pi);
  pr = hc_kb_convert(kb, pr, e->adt, SUM_DT);
  pi = hc_kb_convert(kb, pi, e->adt, SUM_DT);
  LLVMBuildStore(kb->b, hc_kb_reassoc(hc_kb_add(kb, SUM_DT, LLVMBuildLoad2(kb->b, kb->t_f64, re_slot, ""), pr)),
                 re_slot);
  LLVMBuildStore(kb->b, hc_kb_reassoc(hc_kb_add(kb, SUM_DT, LLVMBuildLoad2(kb->b, kb->t_f64, im_slot, ""), pi)),
                 im_slot);
  hc_loop_end(kb, &jl);
}

/* Direct transform, a task being one row and a block of bins. */
static hx_status_t emit_rows(hc_lower_ctx* lc, hc_node* n, const dft_plan* p) {
  size_t esize = hx_dtype_size(acc_dtype(p));
  bool matrix = (double)p->bins * (double)p->m * 2.0 * (double)esize <= (double)DFT_MATRIX_BUDGET;
  tw_tables tw = {0};
  if (matrix)
    HX_RETURN_IF_ERROR(make_tables(lc, p, p->bins * p->m, index_matrix, p->n, &tw));
  else
    HX_RETURN_IF_ERROR(make_tables(lc, p, p->n, index_identity, p->n, &tw));

  int64_t m = p->m > 0 ? p->m : 1;
  int64_t kblk = DFT_MACS_PER_TASK / m;
  if (kblk < 1) kblk = 1;
  if (kblk > p->bins) kblk = p->bins;
  int64_t kblocks = (p->bins + kblk - 1) / kblk;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, p->rows * kblocks, &kb));
  dft_emit e = {&kb, p, acc_dtype(p), hc_kb_compute_type(&kb, acc_dtype(p)), NULL, NULL, NULL};
  e.px = hc_kb_ptr(&kb, n->inputs[0]);
  e.pw = p->windowed ? hc_kb_ptr(&kb, n->inputs[2]) : NULL;
  e.py = hc_kb_ptr(&kb, n->outputs[0]);
  LLVMValueRef re_slot = hc_kb_alloca(&kb, kb.t_f64, "re"), im_slot = hc_kb_alloca(&kb, kb.t_f64, "im");
  LLVMValueRef idx_slot = NULL, cbuf = NULL, sbuf = NULL;
  if (!matrix) {
    idx_slot = hc_kb_alloca(&kb, kb.t_i64, "tw_idx");
    cbuf = hc_kb_alloca(&kb, LLVMArrayType2(e.at, DFT_TW_CHUNK), "tw_cos");
    sbuf = hc_kb_alloca(&kb, LLVMArrayType2(e.at, DFT_TW_CHUNK), "tw_sin");
  }

  hc_loop task, kl;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef r = LLVMBuildUDiv(kb.b, t, hc_kb_i64(&kb, kblocks), "");
  LLVMValueRef k0 = hc_kb_imul(&kb, LLVMBuildURem(kb.b, t, hc_kb_i64(&kb, kblocks), ""), hc_kb_i64(&kb, kblk));
  LLVMValueRef k1 = hc_kb_imin(&kb, hc_kb_iadd(&kb, k0, hc_kb_i64(&kb, kblk)), hc_kb_i64(&kb, p->bins));
  LLVMValueRef in_base, out_base;
  row_offsets(&e, r, &in_base, &out_base);
  LLVMValueRef k = hc_loop_begin(&kb, &kl, k0, k1, "k");
  LLVMValueRef zero = hc_kb_const(&kb, SUM_DT, 0.0);
  LLVMBuildStore(kb.b, zero, re_slot);
  LLVMBuildStore(kb.b, zero, im_slot);
  if (matrix) {
    emit_dot(&e, in_base, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, p->m), tw.cos, tw.sin,
             hc_kb_imul(&kb, k, hc_kb_i64(&kb, p->m)), re_slot, im_slot);
  } else {
    /* Chunks of the twiddle row gathered from the table (index j*k mod n,
     * advanced by k), then a vectorisable dot product over the chunk. */
    hc_loop cl, ul;
    LLVMValueRef j0 = hc_loop_begin_step(&kb, &cl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, p->m), DFT_TW_CHUNK, "jc");
    LLVMValueRef cnt = hc_kb_imin(&kb, hc_kb_i64(&kb, DFT_TW_CHUNK), LLVMBuildSub(kb.b, hc_kb_i64(&kb, p->m), j0, ""));
    LLVMBuildStore(kb.b, LLVMBuildURem(kb.b, hc_kb_imul(&kb, j0, k), hc_kb_i64(&kb, p->n), ""), idx_slot);
    LLVMValueRef u = hc_loop_begin(&kb, &ul, hc_kb_i64(&kb, 0), cnt, "u");
    LLVMValueRef idx = LLVMBuildLoad2(kb.b, kb.t_i64, idx_slot, "");
    st(&e, cbuf, u, ld(&e, tw.cos, idx));
    st(&e, sbuf, u, ld(&e, tw.sin, idx));
    LLVMValueRef next = hc_kb_iadd(&kb, idx, k);
    LLVMValueRef wrap = LLVMBuildICmp(kb.b, LLVMIntSGE, next, hc_kb_i64(&kb, p->n), "");
    next = hc_kb_select(&kb, wrap, LLVMBuildSub(kb.b, next, hc_kb_i64(&kb, p->n), ""), next);
    LLVMBuildStore(kb.b, next, idx_slot);
    hc_loop_end(&kb, &ul);
    emit_dot(&e, in_base, j0, cnt, cbuf, sbuf, hc_kb_i64(&kb, 0), re_slot, im_slot);
    hc_loop_end(&kb, &cl);
  }
  store_bin(&e, hc_kb_iadd(&kb, out_base, hc_kb_imul(&kb, k, hc_kb_i64(&kb, p->out_sk))),
            LLVMBuildLoad2(kb.b, kb.t_f64, re_slot, ""), LLVMBuildLoad2(kb.b, kb.t_f64, im_slot, ""), SUM_DT);
  hc_loop_end(&kb, &kl);
  hc_loop_end(&kb, &task);
  double flops = (double)p->rows * (double)p->bins * (double)p->m * (p->comps == 2 ? 8.0 : 4.0);
  hc_kb_end(&kb, flops, (double)hc_value_nbytes(n->inputs[0]) + (double)hc_value_nbytes(n->outputs[0]));
  return HX_OK;
}

/* ---- direct transform, columns form --------------------------------------------------- */

/* Direct transform of DFT_COL_BLOCK neighbouring rows per task and bin. */
static hx_status_t emit_columns(hc_lower_ctx* lc, hc_node* n, const dft_plan* p) {
  tw_tables tw = {0};
  HX_RETURN_IF_ERROR(make_tables(lc, p, p->n, index_identity, p->n, &tw));
  int64_t cols = p->rows2, outer = p->rows / p->rows2;
  int64_t cblk = cols < DFT_COL_BLOCK ? cols : DFT_COL_BLOCK;
  int64_t cblocks = (cols + cblk - 1) / cblk;
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, outer * p->bins * cblocks, &kb));
  dft_emit e = {&kb, p, acc_dtype(p), hc_kb_compute_type(&kb, acc_dtype(p)), NULL, NULL, NULL};
  e.px = hc_kb_ptr(&kb, n->inputs[0]);
  e.py = hc_kb_ptr(&kb, n->outputs[0]);
  LLVMValueRef acc_re = hc_kb_alloca(&kb, LLVMArrayType2(kb.t_f64, (uint64_t)cblk), "acc_re");
  LLVMValueRef acc_im = hc_kb_alloca(&kb, LLVMArrayType2(kb.t_f64, (uint64_t)cblk), "acc_im");
  LLVMValueRef zero64 = hc_kb_i64(&kb, 0);

  hc_loop task, il, jl;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef q = LLVMBuildUDiv(kb.b, t, hc_kb_i64(&kb, cblocks), "");
  LLVMValueRef i0 = hc_kb_imul(&kb, LLVMBuildURem(kb.b, t, hc_kb_i64(&kb, cblocks), ""), hc_kb_i64(&kb, cblk));
  LLVMValueRef k = LLVMBuildURem(kb.b, q, hc_kb_i64(&kb, p->bins), "");
  LLVMValueRef r1 = LLVMBuildUDiv(kb.b, q, hc_kb_i64(&kb, p->bins), "");
  LLVMValueRef cnt = hc_kb_imin(&kb, hc_kb_i64(&kb, cblk), LLVMBuildSub(kb.b, hc_kb_i64(&kb, cols), i0, ""));
  LLVMValueRef zero = hc_kb_const(&kb, SUM_DT, 0.0);

  LLVMValueRef i = hc_loop_begin(&kb, &il, zero64, cnt, "i");
  hc_kb_store(&kb, SUM_DT, acc_re, i, zero);
  hc_kb_store(&kb, SUM_DT, acc_im, i, zero);
  hc_loop_end(&kb, &il);

  LLVMValueRef in_base =
      hc_kb_iadd(&kb, hc_kb_imul(&kb, r1, hc_kb_i64(&kb, p->in_s1)), hc_kb_imul(&kb, i0, hc_kb_i64(&kb, p->in_s2)));
  LLVMValueRef j = hc_loop_begin(&kb, &jl, zero64, hc_kb_i64(&kb, p->m), "j");
  LLVMValueRef idx = LLVMBuildURem(kb.b, hc_kb_imul(&kb, j, k), hc_kb_i64(&kb, p->n), "");
  LLVMValueRef c = ld(&e, tw.cos, idx), s = ld(&e, tw.sin, idx);
  LLVMValueRef row = hc_kb_iadd(&kb, in_base, hc_kb_imul(&kb, j, hc_kb_i64(&kb, p->in_sj)));
  i = hc_loop_begin(&kb, &il, zero64, cnt, "i");
  LLVMValueRef xr, xi, pr, pi;
  load_sample(&e, hc_kb_iadd(&kb, row, hc_kb_imul(&kb, i, hc_kb_i64(&kb, p->comps))), j, &xr, &xi);
  cmul(&e, xr, xi, c, s, &pr, &pi);
  pr = hc_kb_convert(&kb, pr, e.adt, SUM_DT);
  pi = hc_kb_convert(&kb, pi, e.adt, SUM_DT);
  hc_kb_store(&kb, SUM_DT, acc_re, i, hc_kb_add(&kb, SUM_DT, hc_kb_load(&kb, SUM_DT, acc_re, i), pr));
  hc_kb_store(&kb, SUM_DT, acc_im, i, hc_kb_add(&kb, SUM_DT, hc_kb_load(&kb, SUM_DT, acc_im, i), pi));
  hc_loop_end(&kb, &il);
  hc_loop_end(&kb, &jl);

  LLVMValueRef out_base =
      hc_kb_iadd(&kb, hc_kb_imul(&kb, r1, hc_kb_i64(&kb, p->out_s1)), hc_kb_imul(&kb, k, hc_kb_i64(&kb, p->out_sk)));
  out_base = hc_kb_iadd(&kb, out_base, hc_kb_imul(&kb, i0, hc_kb_i64(&kb, p->out_s2)));
  i = hc_loop_begin(&kb, &il, zero64, cnt, "i");
  store_bin(&e, hc_kb_iadd(&kb, out_base, hc_kb_imul(&kb, i, hc_kb_i64(&kb, p->out_s2))),
            hc_kb_load(&kb, SUM_DT, acc_re, i), hc_kb_load(&kb, SUM_DT, acc_im, i), SUM_DT);
  hc_loop_end(&kb, &il);
  hc_loop_end(&kb, &task);
  double flops = (double)p->rows * (double)p->bins * (double)p->m * (p->comps == 2 ? 8.0 : 4.0);
  hc_kb_end(&kb, flops,
            (double)hc_value_nbytes(n->inputs[0]) * (double)p->bins + (double)hc_value_nbytes(n->outputs[0]));
  return HX_OK;
}

/* ---- radix-2 FFT --------------------------------------------------------------------- */

/* One butterfly: (a, b) <- (a + w*b, a - w*b); w = (wr, wi), NULL wr means w = 1. */
static void butterfly(dft_emit* e, LLVMValueRef re, LLVMValueRef im, LLVMValueRef a, LLVMValueRef b, LLVMValueRef wr,
                      LLVMValueRef wi) {
  hc_kb* kb = e->kb;
  hx_dtype_t d = e->adt;
  LLVMValueRef ar = ld(e, re, a), ai = ld(e, im, a), br = ld(e, re, b), bi = ld(e, im, b);
  LLVMValueRef tr = br, ti = bi;
  if (wr) cmul(e, br, bi, wr, wi, &tr, &ti);
  st(e, re, a, hc_kb_add(kb, d, ar, tr));
  st(e, im, a, hc_kb_add(kb, d, ai, ti));
  st(e, re, b, hc_kb_sub(kb, d, ar, tr));
  st(e, im, b, hc_kb_sub(kb, d, ai, ti));
}

/* Radix-2 FFT, a task being a range of rows sharing one workspace buffer. */
static hx_status_t emit_fft(hc_lower_ctx* lc, hc_node* n, const dft_plan* p) {
  int logn = 0;
  while (((int64_t)1 << logn) < p->n) ++logn;
  tw_tables tw = {0};
  HX_RETURN_IF_ERROR(make_tables(lc, p, p->n - 1, index_fft, p->n, &tw));
  int32_t* rev = malloc(sizeof(int32_t) * (size_t)p->n);
  if (!rev) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory building the bit-reversal table");
  for (int64_t j = 0; j < p->n; ++j) {
    int64_t v = 0;
    for (int b = 0; b < logn; ++b) v |= ((j >> b) & 1) << (logn - 1 - b);
    rev[j] = (int32_t)v;
  }
  LLVMValueRef rev_tab = const_blob(lc, rev, sizeof(int32_t) * (size_t)p->n, "dft_bitrev");
  free(rev);

  int64_t tasks;
  uint64_t buf_bytes;
  fft_tasks(p, &tasks, &buf_bytes);
  size_t esize = hx_dtype_size(acc_dtype(p));
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, tasks, &kb));
  dft_emit e = {&kb, p, acc_dtype(p), hc_kb_compute_type(&kb, acc_dtype(p)), NULL, NULL, NULL};
  e.px = hc_kb_ptr(&kb, n->inputs[0]);
  e.pw = p->windowed ? hc_kb_ptr(&kb, n->inputs[2]) : NULL;
  e.py = hc_kb_ptr(&kb, n->outputs[0]);
  LLVMValueRef ws = hc_kb_workspace(&kb);
  LLVMValueRef zero64 = hc_kb_i64(&kb, 0);
  LLVMValueRef half_bytes = hc_kb_i64(&kb, (int64_t)((size_t)p->n * esize));

  hc_loop task, rl, l1, l2;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef re =
      LLVMBuildGEP2(kb.b, kb.t_i8, ws, (LLVMValueRef[]){hc_kb_imul(&kb, t, hc_kb_i64(&kb, (int64_t)buf_bytes))}, 1, "");
  LLVMValueRef im = LLVMBuildGEP2(kb.b, kb.t_i8, re, &half_bytes, 1, "");
  LLVMValueRef lo = LLVMBuildUDiv(kb.b, hc_kb_imul(&kb, t, hc_kb_i64(&kb, p->rows)), hc_kb_i64(&kb, tasks), "");
  LLVMValueRef hi = LLVMBuildUDiv(kb.b, hc_kb_imul(&kb, hc_kb_iadd(&kb, t, hc_kb_i64(&kb, 1)), hc_kb_i64(&kb, p->rows)),
                                  hc_kb_i64(&kb, tasks), "");
  LLVMValueRef r = hc_loop_begin(&kb, &rl, lo, hi, "row");
  LLVMValueRef in_base, out_base;
  row_offsets(&e, r, &in_base, &out_base);

  /* Bit-reversed load; zero padding and the imaginary part of real input. */
  if (p->m < p->n) hc_kb_memset(&kb, re, 0, half_bytes);
  if (p->m < p->n || p->comps == 1) hc_kb_memset(&kb, im, 0, half_bytes);
  LLVMValueRef j = hc_loop_begin(&kb, &l1, zero64, hc_kb_i64(&kb, p->m), "j");
  LLVMValueRef ridx = LLVMBuildGEP2(kb.b, kb.t_i32, rev_tab, &j, 1, "");
  LLVMValueRef d = LLVMBuildZExt(kb.b, LLVMBuildLoad2(kb.b, kb.t_i32, ridx, ""), kb.t_i64, "");
  LLVMValueRef xr, xi;
  load_sample(&e, hc_kb_iadd(&kb, in_base, hc_kb_imul(&kb, j, hc_kb_i64(&kb, p->in_sj))), j, &xr, &xi);
  st(&e, re, d, xr);
  if (xi) st(&e, im, d, xi);
  hc_loop_end(&kb, &l1);

  int sign = p->inverse ? 1 : -1;
  for (int s = 0; s < logn; ++s) {
    int64_t half = (int64_t)1 << s, span = half * 2, groups = p->n / span;
    if (half >= 8) {
      /* Long butterflies: contiguous inner loop over the twiddle index. */
      LLVMValueRef g = hc_loop_begin(&kb, &l1, zero64, hc_kb_i64(&kb, groups), "g");
      LLVMValueRef base = hc_kb_imul(&kb, g, hc_kb_i64(&kb, span));
      LLVMValueRef u = hc_loop_begin(&kb, &l2, zero64, hc_kb_i64(&kb, half), "u");
      LLVMValueRef a = hc_kb_iadd(&kb, base, u);
      LLVMValueRef b = hc_kb_iadd(&kb, a, hc_kb_i64(&kb, half));
      LLVMValueRef widx = hc_kb_iadd(&kb, u, hc_kb_i64(&kb, half - 1));
      butterfly(&e, re, im, a, b, ld(&e, tw.cos, widx), ld(&e, tw.sin, widx));
      hc_loop_end(&kb, &l2);
      hc_loop_end(&kb, &l1);
    } else {
      /* Short butterflies: one loop over groups, the few twiddles constant. */
      LLVMValueRef g = hc_loop_begin(&kb, &l1, zero64, hc_kb_i64(&kb, groups), "g");
      LLVMValueRef base = hc_kb_imul(&kb, g, hc_kb_i64(&kb, span));
      for (int64_t u = 0; u < half; ++u) {
        LLVMValueRef a = hc_kb_iadd(&kb, base, hc_kb_i64(&kb, u));
        LLVMValueRef b = hc_kb_iadd(&kb, a, hc_kb_i64(&kb, half));
        double c, sn;
        unit_root(u, span, sign, &c, &sn);
        if (u == 0)
          butterfly(&e, re, im, a, b, NULL, NULL);
        else
          butterfly(&e, re, im, a, b, hc_kb_const(&kb, e.adt, c), hc_kb_const(&kb, e.adt, sn));
      }
      hc_loop_end(&kb, &l1);
    }
  }

  LLVMValueRef k = hc_loop_begin(&kb, &l1, zero64, hc_kb_i64(&kb, p->bins), "k");
  store_bin(&e, hc_kb_iadd(&kb, out_base, hc_kb_imul(&kb, k, hc_kb_i64(&kb, p->out_sk))), ld(&e, re, k), ld(&e, im, k),
            e.adt);
  hc_loop_end(&kb, &l1);
  hc_loop_end(&kb, &rl);
  hc_loop_end(&kb, &task);
  double flops = (double)p->rows * 5.0 * (double)p->n * (double)logn;
  hc_kb_end(&kb, flops, (double)hc_value_nbytes(n->inputs[0]) + (double)hc_value_nbytes(n->outputs[0]));
  return HX_OK;
}

/* Shared lowering of DFT and STFT: one kernel of the chosen form. */
static hx_status_t lower_transform(hc_lower_ctx* lc, hc_node* n) {
  dft_plan p;
  HX_RETURN_IF_ERROR(plan_node(n, &p));
  if (hc_value_numel(n->outputs[0]) == 0) return HX_OK; /* nothing to write */
  switch (choose_form(&p)) {
    case FORM_FFT:
      return emit_fft(lc, n, &p);
    case FORM_COLUMNS:
      return emit_columns(lc, n, &p);
    case FORM_ROWS:
      return emit_rows(lc, n, &p);
  }
  return HX_OK;
}

static const char* const k_dft_attrs[] = {"axis", "inverse", "onesided", NULL};
static const char* const k_stft_attrs[] = {"onesided", NULL};

const hc_op_desc hc_op_dft = {
    "DFT", "", 17, 22, k_dft_attrs, 0, infer_transform, lower_transform, NULL, transform_workspace};
const hc_op_desc hc_op_stft = {
    "STFT", "", 17, 22, k_stft_attrs, 0, infer_transform, lower_transform, NULL, transform_workspace};
