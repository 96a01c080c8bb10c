/* Latency histogram: fixed memory, O(1) record, percentiles within ~1.6%.
 *
 * Log-linear buckets (as HdrHistogram): values below 64 ns are exact; above,
 * each power of two is split into 64 equal sub-buckets, so a bucket is never
 * wider than 1/64 of its values. Covers up to 2^42 ns (about 73 minutes);
 * larger values land in the last bucket. Not thread-safe: the owner
 * serialises access. */
#ifndef HARNESS_RUNTIME_HISTOGRAM_H
#define HARNESS_RUNTIME_HISTOGRAM_H

#include <stdint.h>

#define HX_HIST_SUB_BITS 6
#define HX_HIST_SUB (1 << HX_HIST_SUB_BITS)
#define HX_HIST_MAX_EXP 42
#define HX_HIST_BUCKETS ((HX_HIST_MAX_EXP - HX_HIST_SUB_BITS + 2) * HX_HIST_SUB)

typedef struct hx_histogram {
  uint64_t count;
  double sum;
  int64_t max;
  uint64_t buckets[HX_HIST_BUCKETS];
} hx_histogram;

void hx_histogram_clear(hx_histogram* h);
void hx_histogram_record(hx_histogram* h, int64_t value);
/* Value at quantile q in [0, 1] (the midpoint of its bucket, capped at the
 * maximum seen); 0 for an empty histogram. */
int64_t hx_histogram_quantile(const hx_histogram* h, double q);
double hx_histogram_mean(const hx_histogram* h);

#endif /* HARNESS_RUNTIME_HISTOGRAM_H */
