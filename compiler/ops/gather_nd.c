/* GatherND (opset 11 on; batch_dims from 12): slices of data addressed by
 * index tuples.
 *
 * With data of rank r, indices of rank q whose last axis holds tuples of m
 * components and b batch dims, the output is indices.dims[:q-1] ++
 * data.dims[b+m:]: tuple g (in batch g / T, T tuples per batch) selects
 * the slice data[batch, t_0, ..., t_{m-1}, ...] of Q = prod(data.dims[b+m:])
 * contiguous elements. The kernel computes each tuple's source offset from
 * its m components (unrolled) and
 *  - Q > 1: copies the slice with one memcpy per tuple;
 *  - Q == 1: loads one element per tuple in a loop over a block of tuples.
 *
 * Index semantics (as gather.c): negative components count from the end
 * of their axis; a tuple with a component still out of range is invalid
 * input (ONNX calls it an error but cannot check it before run time) and
 * produces a zero slice (all bytes 0), never an out-of-bounds read. */
#include "compiler/ops/movement.h"

static const char* const k_gather_nd_attrs[] = {"batch_dims", NULL};

/* Shape facts of one node. */
typedef struct gnd_plan {
  int64_t b, m;    /* batch dims, tuple length */
  int64_t G, T, Q; /* tuples, tuples per batch, elements per slice */
  int64_t S;       /* data elements per batch */
} gnd_plan;

/* Checks ranks, batch dims and tuple length; fills p and the output dims. */
static hx_status_t make_plan(const hc_node* n, gnd_plan* p, int* out_rank, int64_t* out_dims) {
  const hc_value* x = n->inputs[0];
  const hc_value* idx = n->inputs[1];
  int r = x->rank, q = idx->rank;
  if (n->opset < 12 && hc_node_attr(n, "batch_dims"))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute 'batch_dims' exists from opset 12 on");
  p->b = hc_attr_int(n, "batch_dims", 0);
  if (r < 1 || q < 1)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "data and indices must have rank >= 1 (got %d and %d)", r, q);
  if (p->b < 0 || p->b >= (r < q ? r : q))
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "batch_dims = %lld must be in [0, min(%d, %d))",
                         (long long)p->b, r, q);
  for (int d = 0; d < p->b; ++d)
    if (x->dims[d] != idx->dims[d])
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "batch dimension %d differs: data %lld, indices %lld", d,
                           (long long)x->dims[d], (long long)idx->dims[d]);
  p->m = idx->dims[q - 1];
  if (p->m < 1 || p->m > r - p->b)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "indices.shape[-1] = %lld must be in [1, %lld]",
                         (long long)p->m, (long long)(r - p->b));
  int rank = 0;
  for (int d = 0; d < q - 1; ++d) out_dims[rank++] = idx->dims[d];
  for (int d = (int)(p->b + p->m); d < r; ++d) out_dims[rank++] = x->dims[d];
  if (rank > HC_MAX_RANK)
    return hc_node_error(n, HX_STATUS_UNSUPPORTED, "output rank %d exceeds the maximum %d", rank, HC_MAX_RANK);
  *out_rank = rank;
  p->G = hc_shape_numel(q - 1, idx->dims);
  int64_t batches = hc_shape_numel((int)p->b, idx->dims);
  p->T = batches ? p->G / batches : 0;
  p->Q = hc_shape_numel(r - (int)(p->b + p->m), x->dims + p->b + p->m);
  p->S = hc_shape_numel(r - (int)p->b, x->dims + p->b);
  return HX_OK;
}

/* Checks dtypes and the plan; output indices.dims[:-1] ++ data.dims[b+m:]. */
static hx_status_t infer_gather_nd(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 2, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, HC_DT(HX_DTYPE_INT64)));
  gnd_plan p;
  int rank;
  int64_t dims[2 * HC_MAX_RANK];
  HX_RETURN_IF_ERROR(make_plan(n, &p, &rank, dims));
  hc_set_output(n, 0, n->inputs[0]->dtype, rank, dims);
  return HX_OK;
}

/* Source element offset of tuple g and whether all its components are in
 * range (component loads unrolled). */
static LLVMValueRef tuple_offset(hc_kb* kb, const hc_value* x, const gnd_plan* p, LLVMValueRef ip, LLVMValueRef g,
                                 LLVMValueRef* valid) {
  int64_t xs[HC_MAX_RANK];
  hc_strides(x->rank, x->dims, xs);
  LLVMValueRef batch = p->b == 0 ? hc_kb_i64(kb, 0) : LLVMBuildUDiv(kb->b, g, hc_kb_i64(kb, p->T), "");
  LLVMValueRef off = hc_kb_imul(kb, batch, hc_kb_i64(kb, p->S));
  LLVMValueRef first = hc_kb_imul(kb, g, hc_kb_i64(kb, p->m));
  LLVMValueRef ok = LLVMConstInt(kb->t_i1, 1, 0);
  for (int64_t k = 0; k < p->m; ++k) {
    LLVMValueRef in_range;
    LLVMValueRef c = hc_mv_load_index(kb, HX_DTYPE_INT64, ip, hc_kb_iadd(kb, first, hc_kb_i64(kb, k)),
                                      x->dims[p->b + k], &in_range);
    ok = LLVMBuildAnd(kb->b, ok, in_range, "");
    off = hc_kb_iadd(kb, off, hc_kb_imul(kb, c, hc_kb_i64(kb, xs[p->b + k])));
  }
  *valid = ok;
  return off;
}

/* The slice-copy (Q > 1) or element-gather (Q == 1) kernel. */
static hx_status_t lower_gather_nd(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* x = n->inputs[0];
  const hc_value* iv = n->inputs[1];
  const hc_value* y = n->outputs[0];
  gnd_plan p;
  int rank;
  int64_t dims[2 * HC_MAX_RANK];
  HX_RETURN_IF_ERROR(make_plan(n, &p, &rank, dims));
  if (p.G * p.Q == 0) return HX_OK;
  size_t esize = hx_dtype_size(x->dtype);
  double bytes = 2.0 * (double)hc_value_nbytes(y) + (double)hc_value_nbytes(iv);
  hc_kb kb;
  if (p.Q > 1) {
    int64_t upt = hc_mv_units_per_task(p.Q * (int64_t)esize);
    HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, hc_mv_tasks(p.G, upt), &kb));
    LLVMTypeRef et = hc_mv_elem_type(&kb, esize);
    LLVMValueRef src = hc_kb_ptr(&kb, x), dst = hc_kb_ptr(&kb, y), ip = hc_kb_ptr(&kb, iv);
    hc_loop ul;
    LLVMValueRef g = hc_mv_units_begin(&kb, &ul, p.G, upt);
    LLVMValueRef valid;
    LLVMValueRef soff = tuple_offset(&kb, x, &p, ip, g, &valid);
    LLVMValueRef doff = hc_kb_imul(&kb, g, hc_kb_i64(&kb, p.Q));
    hc_if s;
    hc_if_begin(&kb, &s, valid);
    hc_mv_copy_run(&kb, esize, dst, doff, src, soff, hc_kb_i64(&kb, p.Q));
    hc_if_end(&kb, &s);
    hc_if_begin(&kb, &s, LLVMBuildNot(kb.b, valid, ""));
    hc_kb_memset(&kb, hc_mv_gep(&kb, et, dst, doff), 0, hc_kb_i64(&kb, p.Q * (int64_t)esize));
    hc_if_end(&kb, &s);
    hc_loop_end(&kb, &ul);
  } else {
    int64_t per = hc_mv_units_per_task((int64_t)esize * (p.m + 1));
    int64_t GB = p.G < per ? p.G : per, blocks = (p.G + GB - 1) / GB;
    HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, NULL, blocks, &kb));
    LLVMTypeRef et = hc_mv_elem_type(&kb, esize);
    LLVMValueRef src = hc_kb_ptr(&kb, x), dst = hc_kb_ptr(&kb, y), ip = hc_kb_ptr(&kb, iv);
    hc_loop tl, gl;
    LLVMValueRef t = hc_kb_task_loop_begin(&kb, &tl);
    LLVMValueRef glo = hc_kb_imul(&kb, t, hc_kb_i64(&kb, GB));
    LLVMValueRef ghi = hc_kb_imin(&kb, hc_kb_iadd(&kb, glo, hc_kb_i64(&kb, GB)), hc_kb_i64(&kb, p.G));
    LLVMValueRef g = hc_loop_begin(&kb, &gl, glo, ghi, "g");
    LLVMValueRef valid;
    LLVMValueRef soff = tuple_offset(&kb, x, &p, ip, g, &valid);
    LLVMValueRef v = LLVMConstInt(et, 0, 0);
    if (hc_value_numel(x) > 0) { /* empty data: every tuple is invalid, nothing to read */
      LLVMValueRef safe = LLVMBuildSelect(kb.b, valid, soff, hc_kb_i64(&kb, 0), "");
      v = LLVMBuildSelect(kb.b, valid, hc_mv_load_in(&kb, et, src, safe), v, "");
    }
    hc_mv_store_out(&kb, et, dst, g, v);
    hc_loop_end(&kb, &gl);
    hc_loop_end(&kb, &tl);
  }
  hc_kb_end(&kb, 0, bytes);
  return HX_OK;
}

const hc_op_desc hc_op_gather_nd = {"GatherND",      "",  11, 22, k_gather_nd_attrs, 0, infer_gather_nd,
                                    lower_gather_nd, NULL};
