/* Inference cost estimates per compiled batch size, corrected online.
 *
 * The prior comes from the manifest's per-kernel estimates (the flops and
 * bytes in the artifact's kernel table) through a simple roofline: a kernel
 * takes max(flops / peak_flops, bytes / peak_bandwidth) on the threads it
 * can use. Measured run times then replace the prior with an exponentially
 * weighted mean per batch size; sizes not yet measured are scaled by the
 * average measured/prior ratio of those that were, so one measurement
 * corrects every estimate. Not thread-safe: the owner serialises access. */
#ifndef HARNESS_RUNTIME_COST_MODEL_H
#define HARNESS_RUNTIME_COST_MODEL_H

#include <stdint.h>

#include "harness/artifact_abi.h"

#define HX_COST_MAX_PROGRAMS 16

typedef struct hx_cost_model {
  int num;
  int64_t batch[HX_COST_MAX_PROGRAMS];
  double prior_ns[HX_COST_MAX_PROGRAMS];
  double measured_ns[HX_COST_MAX_PROGRAMS]; /* EWMA; 0 = never measured */
  double ratio_sum;   /* sum of measured/prior over measured programs */
  int ratio_count;
} hx_cost_model;

/* Roofline prior of one kernel table on `threads` threads. */
double hx_cost_prior_ns(const hx_abi_kernel* kernels, uint32_t num_kernels, int threads);

void hx_cost_model_init(hx_cost_model* m);
/* Adds program i (in increasing batch order) with its prior. */
void hx_cost_model_add(hx_cost_model* m, int64_t batch, double prior_ns);
/* Records a measured run of program i. */
void hx_cost_model_observe(hx_cost_model* m, int program, int64_t ns);
/* Current estimate of one run of program i. */
double hx_cost_model_estimate_ns(const hx_cost_model* m, int program);

#endif /* HARNESS_RUNTIME_COST_MODEL_H */
