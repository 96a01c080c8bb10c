/* Cost estimates: roofline prior from the manifest, EWMA correction. */
#include "cost_model.h"

#include <string.h>

/* Deliberately round numbers for one core of a current x86 server: 16 fp32
 * FMA lanes at ~3 GHz (~100 GFLOP/s peak, ~50 achieved) and ~10 GB/s of
 * memory bandwidth. They only need to be right in ratio between batch sizes;
 * the online correction fixes the scale. */
#define HX_COST_FLOPS_PER_NS_PER_THREAD 50.0
#define HX_COST_BYTES_PER_NS_PER_THREAD 10.0
/* Weight of a new measurement in the moving average. */
#define HX_COST_EWMA 0.2

double hx_cost_prior_ns(const hx_abi_kernel* kernels, uint32_t num_kernels, int threads) {
  double total = 0;
  for (uint32_t k = 0; k < num_kernels; ++k) {
    int t = kernels[k].tasks < threads ? (int)(kernels[k].tasks > 0 ? kernels[k].tasks : 1) : threads;
    double compute = kernels[k].flops / (HX_COST_FLOPS_PER_NS_PER_THREAD * t);
    double memory = kernels[k].bytes / (HX_COST_BYTES_PER_NS_PER_THREAD * t);
    total += compute > memory ? compute : memory;
  }
  /* A floor so that an artifact without estimates still orders sizes. */
  return total > 1000.0 ? total : 1000.0;
}

void hx_cost_model_init(hx_cost_model* m) { memset(m, 0, sizeof(*m)); }

void hx_cost_model_add(hx_cost_model* m, int64_t batch, double prior_ns) {
  if (m->num == HX_COST_MAX_PROGRAMS) return;
  m->batch[m->num] = batch;
  m->prior_ns[m->num] = prior_ns > 1 ? prior_ns : 1;
  m->measured_ns[m->num] = 0;
  m->num++;
}

void hx_cost_model_observe(hx_cost_model* m, int i, int64_t ns) {
  if (i < 0 || i >= m->num || ns <= 0) return;
  double old_ratio = m->measured_ns[i] > 0 ? m->measured_ns[i] / m->prior_ns[i] : 0;
  if (m->measured_ns[i] == 0) {
    m->measured_ns[i] = (double)ns;
    m->ratio_count++;
  } else {
    m->measured_ns[i] += HX_COST_EWMA * ((double)ns - m->measured_ns[i]);
  }
  m->ratio_sum += m->measured_ns[i] / m->prior_ns[i] - old_ratio;
}

double hx_cost_model_estimate_ns(const hx_cost_model* m, int i) {
  if (i < 0 || i >= m->num) return 0;
  if (m->measured_ns[i] > 0) return m->measured_ns[i];
  double scale = m->ratio_count ? m->ratio_sum / m->ratio_count : 1.0;
  return m->prior_ns[i] * scale;
}
