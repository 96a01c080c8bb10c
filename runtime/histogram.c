/* Log-linear latency histogram (see histogram.h). */
#include "histogram.h"

#include <string.h>

void hx_histogram_clear(hx_histogram* h) { memset(h, 0, sizeof(*h)); }

/* Bucket of v: exact below HX_HIST_SUB; else (exponent, top sub-bits). */
static int bucket_of(int64_t v) {
  if (v < HX_HIST_SUB) return v < 0 ? 0 : (int)v;
  int e = 63 - __builtin_clzll((unsigned long long)v); /* >= HX_HIST_SUB_BITS */
  if (e > HX_HIST_MAX_EXP) return HX_HIST_BUCKETS - 1;
  int sub = (int)((v >> (e - HX_HIST_SUB_BITS)) & (HX_HIST_SUB - 1));
  return (e - HX_HIST_SUB_BITS + 1) * HX_HIST_SUB + sub;
}

/* Lowest value and width of bucket b. */
static void bucket_range(int b, int64_t* lo, int64_t* width) {
  if (b < HX_HIST_SUB) {
    *lo = b;
    *width = 1;
    return;
  }
  int e = b / HX_HIST_SUB + HX_HIST_SUB_BITS - 1;
  int sub = b % HX_HIST_SUB;
  *width = (int64_t)1 << (e - HX_HIST_SUB_BITS);
  *lo = ((int64_t)1 << e) + (int64_t)sub * *width;
}

void hx_histogram_record(hx_histogram* h, int64_t value) {
  if (value < 0) value = 0;
  h->buckets[bucket_of(value)]++;
  h->count++;
  h->sum += (double)value;
  if (value > h->max) h->max = value;
}

int64_t hx_histogram_quantile(const hx_histogram* h, double q) {
  if (h->count == 0) return 0;
  if (q < 0) q = 0;
  if (q > 1) q = 1;
  /* The rank-th smallest value, 1-based, nearest-rank definition. */
  uint64_t rank = (uint64_t)(q * (double)h->count + 0.999999);
  if (rank < 1) rank = 1;
  if (rank > h->count) rank = h->count;
  uint64_t seen = 0;
  for (int b = 0; b < HX_HIST_BUCKETS; ++b) {
    seen += h->buckets[b];
    if (seen >= rank) {
      if (b == HX_HIST_BUCKETS - 1) return h->max; /* the catch-all bucket */
      int64_t lo, width;
      bucket_range(b, &lo, &width);
      int64_t mid = lo + width / 2;
      return mid > h->max ? h->max : mid;
    }
  }
  return h->max;
}

double hx_histogram_mean(const hx_histogram* h) { return h->count ? h->sum / (double)h->count : 0; }
