/* Col2Im (opset 18 on): the inverse of im2col, summing sliding blocks back
 * into an image.
 *
 * input is [N, C * prod(block_shape), L] where L = prod(L_d) counts the
 * block positions of an image of image_shape with pads (begins then ends),
 * dilations and strides: L_d = (img_d + pb_d + pe_d - dil_d * (blk_d - 1)
 * - 1) / str_d + 1. Column (c, k) at block position l adds its value to the
 * output pixel p_d = l_d * str_d + k_d * dil_d - pb_d when that lies in the
 * image. image_shape and block_shape give the output shape and must be
 * compile-time constants.
 *
 * A task is one (n, c) plane; it clears the plane, then for every kernel
 * offset k walks the block positions whose pixels land inside the image
 * (ranges from compile-time tables per axis), accumulating in order, so
 * planes never share outputs. The innermost loop runs over the last block
 * axis: contiguous in the input, stride str in the output. float16 and
 * bfloat16 accumulate in a float32 workspace plane and round once. */
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/movement.h"

static const char* const k_col2im_attrs[] = {"dilations", "pads", "strides", NULL};

#define C2I_MAX_SPATIAL (HC_MAX_RANK - 2)

typedef struct c2i_plan {
  int S;
  int64_t N, C, K, L;
  int64_t img[C2I_MAX_SPATIAL], blk[C2I_MAX_SPATIAL], dil[C2I_MAX_SPATIAL], str[C2I_MAX_SPATIAL];
  int64_t pb[C2I_MAX_SPATIAL], pe[C2I_MAX_SPATIAL], Ld[C2I_MAX_SPATIAL];
} c2i_plan;

/* Reads an INTS attribute of S entries (or 2S for pads) with a default. */
static hx_status_t read_ints(const hc_node* n, const char* name, int want, int64_t dflt, int64_t* out) {
  int c = hc_attr_ints(n, name, out, 2 * C2I_MAX_SPATIAL);
  if (c == -1) {
    for (int i = 0; i < want; ++i) out[i] = dflt;
    return HX_OK;
  }
  if (c != want)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "%s has %d entries, expected %d", name, c < 0 ? 0 : c, want);
  return HX_OK;
}

/* Checks shapes and attributes; fills p. */
static hx_status_t make_plan(const hc_node* n, c2i_plan* p) {
  const hc_value* x = n->inputs[0];
  memset(p, 0, sizeof *p);
  if (x->rank != 3)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input must be 3-D [N, C * prod(block_shape), L], got rank %d",
                         x->rank);
  int ni = 0, nb = 0;
  HX_RETURN_IF_ERROR(hc_const_ints(n, 1, p->img, C2I_MAX_SPATIAL, &ni));
  HX_RETURN_IF_ERROR(hc_const_ints(n, 2, p->blk, C2I_MAX_SPATIAL, &nb));
  if (ni != nb || ni < 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "image_shape and block_shape must have the same, non-zero length (got %d and %d)", ni, nb);
  int S = p->S = ni;
  int64_t pads[2 * C2I_MAX_SPATIAL];
  HX_RETURN_IF_ERROR(read_ints(n, "dilations", S, 1, p->dil));
  HX_RETURN_IF_ERROR(read_ints(n, "strides", S, 1, p->str));
  HX_RETURN_IF_ERROR(read_ints(n, "pads", 2 * S, 0, pads));
  p->K = 1;
  p->L = 1;
  for (int d = 0; d < S; ++d) {
    p->pb[d] = pads[d];
    p->pe[d] = pads[S + d];
    if (p->img[d] < 1 || p->blk[d] < 1 || p->dil[d] < 1 || p->str[d] < 1 || p->pb[d] < 0 || p->pe[d] < 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "axis %d: image %lld, block %lld, dilation %lld and stride %lld must be positive and pads "
                           "(%lld, %lld) non-negative",
                           d, (long long)p->img[d], (long long)p->blk[d], (long long)p->dil[d], (long long)p->str[d],
                           (long long)p->pb[d], (long long)p->pe[d]);
    int64_t span = p->dil[d] * (p->blk[d] - 1) + 1, room = p->img[d] + p->pb[d] + p->pe[d];
    if (span > room)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "axis %d: the dilated block (%lld) exceeds the padded image (%lld)", d, (long long)span,
                           (long long)room);
    p->Ld[d] = (room - span) / p->str[d] + 1;
    p->K *= p->blk[d];
    p->L *= p->Ld[d];
  }
  p->N = x->dims[0];
  if (x->dims[1] % p->K)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                         "input dimension 1 (%lld) is not a multiple of prod(block_shape) = %lld",
                         (long long)x->dims[1], (long long)p->K);
  p->C = x->dims[1] / p->K;
  if (x->dims[2] != p->L)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "input dimension 2 is %lld but the blocks cover %lld positions",
                         (long long)x->dims[2], (long long)p->L);
  return HX_OK;
}

/* Checks the plan; the output is [N, C, *image_shape]. */
static hx_status_t infer_col2im(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 3, 3, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_NUMERIC));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, HC_DT(HX_DTYPE_INT64)));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 2, HC_DT(HX_DTYPE_INT64)));
  c2i_plan p;
  HX_RETURN_IF_ERROR(make_plan(n, &p));
  int64_t dims[HC_MAX_RANK] = {p.N, p.C};
  for (int d = 0; d < p.S; ++d) dims[2 + d] = p.img[d];
  hc_set_output(n, 0, n->inputs[0]->dtype, 2 + p.S, dims);
  return HX_OK;
}

/* float16 and bfloat16 accumulate in a float32 workspace. */
static bool narrow_float(hx_dtype_t dt) { return dt == HX_DTYPE_FLOAT16 || dt == HX_DTYPE_BFLOAT16; }

/* float32 accumulation planes for float16/bfloat16. */
static uint64_t workspace_col2im(const hc_node* n) {
  const hc_value* y = n->outputs[0];
  return narrow_float(y->dtype) ? (uint64_t)hc_value_numel(y) * 4u : 0u;
}

/* Opens nested loops over the block positions valid for kernel offsets kc
 * (ranges from tables lo/hi per axis) down to axis S-2; the caller emits the
 * innermost axis. Returns input and output offsets through *in / *out. */
static void open_positions(hc_kb* kb, const c2i_plan* p, hc_mv_table* lo, hc_mv_table* hi, LLVMValueRef* kc,
                           hc_loop* loops, int d, LLVMValueRef* in, LLVMValueRef* out, const int64_t* lstr,
                           const int64_t* istr) {
  for (; d < p->S - 1; ++d) {
    LLVMValueRef l =
        hc_loop_begin(kb, &loops[d], hc_mv_table_get(kb, lo[d], kc[d]), hc_mv_table_get(kb, hi[d], kc[d]), "l");
    *in = hc_kb_iadd(kb, *in, hc_kb_imul(kb, l, hc_kb_i64(kb, lstr[d])));
    *out = hc_kb_iadd(kb, *out, hc_kb_imul(kb, l, hc_kb_i64(kb, p->str[d] * istr[d])));
  }
}

/* The plane kernel of the file comment. */
static hx_status_t lower_col2im(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* x = n->inputs[0];
  const hc_value* y = n->outputs[0];
  c2i_plan p;
  HX_RETURN_IF_ERROR(make_plan(n, &p));
  int S = p.S;
  int64_t planes = p.N * p.C, plane = hc_shape_numel(S, p.img);
  if (planes * plane == 0) return HX_OK;
  hx_dtype_t dt = y->dtype, at = narrow_float(dt) ? HX_DTYPE_FLOAT32 : dt;
  int64_t istr[C2I_MAX_SPATIAL], lstr[C2I_MAX_SPATIAL], kstr[C2I_MAX_SPATIAL];
  hc_strides(S, p.img, istr);
  hc_strides(S, p.Ld, lstr);
  hc_strides(S, p.blk, kstr);
  /* Per axis and kernel offset k_d: valid block positions [lo, hi) and the
   * pixel offset (k_d * dil - pb) * image stride, as three tables. */
  int64_t total_k = 0;
  for (int d = 0; d < S; ++d) total_k += p.blk[d];
  int64_t* vals = malloc(sizeof(int64_t) * 3 * (size_t)total_k);
  if (!vals) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  int64_t *lo_v[C2I_MAX_SPATIAL], *hi_v[C2I_MAX_SPATIAL], *off_v[C2I_MAX_SPATIAL], *at_v = vals;
  for (int d = 0; d < S; ++d) {
    lo_v[d] = at_v;
    hi_v[d] = at_v + p.blk[d];
    off_v[d] = at_v + 2 * p.blk[d];
    at_v += 3 * p.blk[d];
    for (int64_t k = 0; k < p.blk[d]; ++k) {
      int64_t o = k * p.dil[d] - p.pb[d], a = 0, b = p.Ld[d];
      /* first l with l * str + o >= 0; one past the last with < img */
      if (o < 0) a = (-o + p.str[d] - 1) / p.str[d];
      if (p.img[d] - o <= 0) b = 0;
      else if ((p.img[d] - o + p.str[d] - 1) / p.str[d] < b) b = (p.img[d] - o + p.str[d] - 1) / p.str[d];
      lo_v[d][k] = a;
      hi_v[d][k] = b > a ? b : a;
      off_v[d][k] = o * istr[d];
    }
  }

  hc_kb kb;
  hx_status_t st = hc_kb_begin(lc, n, NULL, planes, &kb);
  hc_mv_table lo[C2I_MAX_SPATIAL], hi[C2I_MAX_SPATIAL], off[C2I_MAX_SPATIAL];
  for (int d = 0; d < S && st == HX_OK; ++d) {
    lo[d] = hc_mv_int_table(&kb, lo_v[d], p.blk[d], "col2im_lo");
    hi[d] = hc_mv_int_table(&kb, hi_v[d], p.blk[d], "col2im_hi");
    off[d] = hc_mv_int_table(&kb, off_v[d], p.blk[d], "col2im_off");
    if (!lo[d].ptr || !hi[d].ptr || !off[d].ptr) st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  free(vals);
  if (st != HX_OK) return st;
  LLVMValueRef src = hc_kb_ptr(&kb, x), dst = hc_kb_ptr(&kb, y);
  LLVMValueRef acc = narrow_float(dt) ? hc_kb_workspace(&kb) : dst;
  LLVMTypeRef ct = hc_kb_compute_type(&kb, at);
  hc_loop tl, zl, kl[C2I_MAX_SPATIAL], ll[C2I_MAX_SPATIAL], il;
  LLVMValueRef t = hc_kb_task_loop_begin(&kb, &tl);
  LLVMValueRef pbase = hc_kb_imul(&kb, t, hc_kb_i64(&kb, plane));
  LLVMValueRef z = hc_loop_begin(&kb, &zl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, plane), "z");
  hc_kb_store(&kb, at, acc, hc_kb_iadd(&kb, pbase, z), LLVMConstNull(ct));
  hc_loop_end(&kb, &zl);
  /* Kernel offsets: one loop per axis. */
  LLVMValueRef kc[C2I_MAX_SPATIAL], kflat = hc_kb_i64(&kb, 0), koff = pbase;
  for (int d = 0; d < S; ++d) {
    kc[d] = hc_loop_begin(&kb, &kl[d], hc_kb_i64(&kb, 0), hc_kb_i64(&kb, p.blk[d]), "k");
    kflat = hc_kb_iadd(&kb, kflat, hc_kb_imul(&kb, kc[d], hc_kb_i64(&kb, kstr[d])));
    koff = hc_kb_iadd(&kb, koff, hc_mv_table_get(&kb, off[d], kc[d]));
  }
  LLVMValueRef in =
      hc_kb_imul(&kb, hc_kb_iadd(&kb, hc_kb_imul(&kb, t, hc_kb_i64(&kb, p.K)), kflat), hc_kb_i64(&kb, p.L));
  LLVMValueRef out = koff;
  open_positions(&kb, &p, lo, hi, kc, ll, 0, &in, &out, lstr, istr);
  int last = S - 1;
  LLVMValueRef l =
      hc_loop_begin(&kb, &il, hc_mv_table_get(&kb, lo[last], kc[last]), hc_mv_table_get(&kb, hi[last], kc[last]), "l");
  LLVMValueRef o = hc_kb_iadd(&kb, out, hc_kb_imul(&kb, l, hc_kb_i64(&kb, p.str[last])));
  LLVMValueRef v = hc_kb_load(&kb, dt, src, hc_kb_iadd(&kb, in, l));
  hc_kb_store(&kb, at, acc, o, hc_kb_add(&kb, at, hc_kb_load(&kb, at, acc, o), v));
  hc_loop_end(&kb, &il);
  for (int d = S - 2; d >= 0; --d) hc_loop_end(&kb, &ll[d]);
  for (int d = S - 1; d >= 0; --d) hc_loop_end(&kb, &kl[d]);
  if (narrow_float(dt)) {
    z = hc_loop_begin(&kb, &zl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, plane), "z");
    LLVMValueRef i = hc_kb_iadd(&kb, pbase, z);
    hc_kb_store(&kb, dt, dst, i, hc_kb_load(&kb, at, acc, i));
    hc_loop_end(&kb, &zl);
  }
  hc_loop_end(&kb, &tl);
  hc_kb_end(&kb, (double)hc_value_numel(x), (double)hc_value_nbytes(x) + 2.0 * (double)hc_value_nbytes(y));
  return HX_OK;
}

const hc_op_desc hc_op_col2im = {"Col2Im", "",           18,           22,   k_col2im_attrs,
                                 0,        infer_col2im, lower_col2im, NULL, workspace_col2im};
