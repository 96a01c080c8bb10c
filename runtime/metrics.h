/* Serving metrics: counters, latency histograms per priority class, the
 * batch-size histogram and a sliding window for load and recent QPS, plus the
 * JSON and Prometheus renderings of a snapshot (hx_server_metrics_t).
 *
 * Recording is O(1) and allocation-free; the server records under its lock
 * at the points where it already holds it (completion, batch end), so the
 * hot path pays a few additions. Not thread-safe by itself. */
#ifndef HARNESS_RUNTIME_METRICS_H
#define HARNESS_RUNTIME_METRICS_H

#include <stdint.h>

#include "harness/serving.h"
#include "histogram.h"

#define HX_WINDOW_BUCKETS 10

typedef struct hx_metrics {
  int64_t epoch_ns;
  uint64_t submitted, completed, failed, cancelled;
  uint64_t rejected_busy, rejected_deadline, dropped_deadline;
  uint64_t deadline_total, deadline_met;
  uint64_t batches, batch_requests;
  uint64_t batch_hist[HX_METRICS_MAX_BATCH + 1];
  hx_histogram latency[HX_PRIORITY_CLASSES + 1]; /* [HX_PRIORITY_CLASSES] = all classes */
  hx_histogram queue[HX_PRIORITY_CLASSES + 1];
  /* Sliding window: bucket i covers [id * bucket_ns, (id + 1) * bucket_ns). */
  int64_t bucket_ns;
  int64_t bucket_id[HX_WINDOW_BUCKETS];
  uint64_t window_done[HX_WINDOW_BUCKETS];
  int64_t window_busy_ns[HX_WINDOW_BUCKETS];
} hx_metrics;

void hx_metrics_init(hx_metrics* m, int64_t window_ns, int64_t now_ns);
/* Clears everything and starts a new period at now_ns. */
void hx_metrics_reset(hx_metrics* m, int64_t now_ns);

/* One request's end. queue_ns < 0 = never dispatched (not recorded as a
 * queue wait). Deadline stats count every outcome except cancellation. */
void hx_metrics_record_completion(hx_metrics* m, int priority, hx_status_code_t code, int64_t queue_ns,
                                  int64_t latency_ns, int had_deadline, int met, int64_t now_ns);
/* One inference run of n requests that kept the inference stage busy_ns. */
void hx_metrics_record_batch(hx_metrics* m, int n, int64_t busy_ns, int64_t now_ns);

/* Over the sliding window ending at now_ns: completions per second, and the
 * inference stage's busy fraction. */
double hx_metrics_window_qps(const hx_metrics* m, int64_t now_ns);
double hx_metrics_window_load(const hx_metrics* m, int64_t now_ns);

/* Fills the counter/latency/batch parts of a snapshot (the server adds the
 * per-thread parts). */
void hx_metrics_snapshot(const hx_metrics* m, int64_t now_ns, hx_server_metrics_t* out);

/* Renders a snapshot; the result is malloc'd (NULL on out of memory). */
char* hx_metrics_to_json(const hx_server_metrics_t* s);
char* hx_metrics_to_prometheus(const hx_server_metrics_t* s);

#endif /* HARNESS_RUNTIME_METRICS_H */
