/* Checks shared by the pooling ops of pool.c (MaxPool, AveragePool,
 * GlobalAveragePool) and pool_extra.c (the other pools), implemented in
 * pool_extra.c. */
#ifndef HARNESS_OPS_POOL_COMMON_H
#define HARNESS_OPS_POOL_COMMON_H

#include "compiler/ops/op.h"

/* Shape inference of the global pools: one input of a dtype in `allowed`
 * and rank >= 2 (N, C, D1, ...); output 0 keeps its dtype and rank with
 * every spatial dim 1. */
hx_status_t hc_pool_infer_global(hc_node* n, uint64_t allowed);
/* Reads the 0/1 attribute `name` (default 0) into *out; other values are an
 * error naming the attribute. */
hx_status_t hc_pool_read_flag(const hc_node* n, const char* name, bool* out);

#endif /* HARNESS_OPS_POOL_COMMON_H */
