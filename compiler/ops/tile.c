/* Tile: out[i_0, ..., i_{r-1}] = in[i_0 mod d_0, ..., i_{r-1} mod d_{r-1}],
 * the input repeated repeats[a] times along each axis a (opset 6 on; the
 * experimental opset-1 form with 'tiles'/'axis' inputs is not supported).
 *
 * repeats determines the output shape, so it must be a compile-time
 * constant. Every output axis a of size r_a * d_a is split into a repeat
 * loop (source stride 0) and an element loop (source stride = the input
 * stride), and the whole tile is one strided copy (movement.c), which
 * merges what it can and copies the contiguous runs with memcpy.
 *
 * The strided copy handles up to HC_MAX_RANK + 4 loops after collapsing;
 * a rank 7-8 tile repeating almost every axis can need more. Then the
 * input is first copied into the first tile of the output, and each axis,
 * last to first, replicates the part already written r_a - 1 times (copies
 * inside the output between regions that never overlap). */
#include "compiler/ops/movement.h"

/* Loops the single-copy form may have; matches movement.c's nest capacity. */
#define TILE_MAX_LOOPS (HC_MAX_RANK + 4)

/* Reads repeats (one non-negative entry per input axis). */
static hx_status_t read_repeats(const hc_node* n, int64_t* reps) {
  const hc_value* x = n->inputs[0];
  int count = 0;
  HX_RETURN_IF_ERROR(hc_const_ints(n, 1, reps, HC_MAX_RANK, &count));
  if (count != x->rank)
    return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "repeats has %d entries, expected the input rank %d", count,
                         x->rank);
  for (int d = 0; d < count; ++d)
    if (reps[d] < 0)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "repeats[%d] = %lld is negative", d, (long long)reps[d]);
  return HX_OK;
}

/* Output dims are dims * repeats. */
static hx_status_t infer_tile(hc_graph* g, hc_node* n) {
  HX_RETURN_IF_ERROR(hc_check_arity(n, 2, 2, 1, 1));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 0, HC_DT_ALL));
  HX_RETURN_IF_ERROR(hc_check_dtype(n, 1, HC_DT(HX_DTYPE_INT64) | HC_DT(HX_DTYPE_INT32)));
  const hc_value* x = n->inputs[0];
  int64_t reps[HC_MAX_RANK], dims[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(read_repeats(n, reps));
  for (int d = 0; d < x->rank; ++d) {
    if (reps[d] > 0 && x->dims[d] > INT64_MAX / 4 / reps[d])
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "repeats[%d] = %lld makes axis %d huge", d,
                           (long long)reps[d], d);
    dims[d] = x->dims[d] * reps[d];
  }
  hc_set_output(n, 0, x->dtype, x->rank, dims);
  return HX_OK;
}

/* One strided copy over (repeat, element) loop pairs, or the fallback of
 * the file comment when that nest is too deep. */
static hx_status_t lower_tile(hc_lower_ctx* lc, hc_node* n) {
  const hc_value* x = n->inputs[0];
  const hc_value* y = n->outputs[0];
  int rank = x->rank;
  int64_t reps[HC_MAX_RANK], is[HC_MAX_RANK], os[HC_MAX_RANK];
  HX_RETURN_IF_ERROR(read_repeats(n, reps));
  if (hc_value_numel(y) == 0) return HX_OK;
  if (rank == 0) {
    int64_t one = 1;
    return hc_mv_strided_copy(lc, n, NULL, x, 0, &one, y, 0, &one, 1, &one, false);
  }
  hc_strides(rank, x->dims, is);
  hc_strides(rank, y->dims, os);

  int64_t dims[2 * HC_MAX_RANK], ss[2 * HC_MAX_RANK], ds[2 * HC_MAX_RANK];
  int m = 0, loops = 0;
  for (int d = 0; d < rank; ++d) {
    dims[m] = reps[d], ss[m] = 0, ds[m] = x->dims[d] * os[d], ++m;
    dims[m] = x->dims[d], ss[m] = is[d], ds[m] = os[d], ++m;
    loops += (reps[d] > 1) + (x->dims[d] > 1);
  }
  if (loops <= TILE_MAX_LOOPS) return hc_mv_strided_copy(lc, n, NULL, x, 0, ss, y, 0, ds, m, dims, false);

  /* Fallback: the input into the first tile, then replicate axis by axis. */
  HX_RETURN_IF_ERROR(hc_mv_strided_copy(lc, n, "first", x, 0, is, y, 0, os, rank, x->dims, false));
  for (int a = rank - 1; a >= 0; --a) {
    if (reps[a] <= 1) continue;
    int k = 0;
    for (int b = 0; b < a; ++b) {
      dims[k] = x->dims[b], ss[k] = os[b], ds[k] = os[b], ++k;
    }
    int64_t block = x->dims[a] * os[a]; /* one tile of axis a with everything after it */
    dims[k] = reps[a] - 1, ss[k] = 0, ds[k] = block, ++k;
    dims[k] = block, ss[k] = 1, ds[k] = 1, ++k;
    HX_RETURN_IF_ERROR(hc_mv_strided_copy(lc, n, "rep", y, 0, ss, y, block, ds, k, dims, false));
  }
  return HX_OK;
}

const hc_op_desc hc_op_tile = {"Tile", "", 6, 22, NULL, 0, infer_tile, lower_tile, NULL};
