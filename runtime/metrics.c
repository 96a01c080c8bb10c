/* Serving metrics: recording, snapshots, JSON and Prometheus text. */
#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hx_metrics_init(hx_metrics* m, int64_t window_ns, int64_t now_ns) {
  memset(m, 0, sizeof(*m));
  m->bucket_ns = window_ns / HX_WINDOW_BUCKETS > 0 ? window_ns / HX_WINDOW_BUCKETS : 1;
  hx_metrics_reset(m, now_ns);
}

void hx_metrics_reset(hx_metrics* m, int64_t now_ns) {
  int64_t bucket_ns = m->bucket_ns;
  memset(m, 0, sizeof(*m));
  m->bucket_ns = bucket_ns;
  m->epoch_ns = now_ns;
  for (int i = 0; i < HX_WINDOW_BUCKETS; ++i) m->bucket_id[i] = -1;
}

/* The window bucket for now_ns, cleared if it still holds an old period. */
static int window_slot(hx_metrics* m, int64_t now_ns) {
  int64_t id = now_ns / m->bucket_ns;
  int i = (int)(id % HX_WINDOW_BUCKETS);
  if (m->bucket_id[i] != id) {
    m->bucket_id[i] = id;
    m->window_done[i] = 0;
    m->window_busy_ns[i] = 0;
  }
  return i;
}

void hx_metrics_record_completion(hx_metrics* m, int priority, hx_status_code_t code, int64_t queue_ns,
                                  int64_t latency_ns, int had_deadline, int met, int64_t now_ns) {
  if (priority < 0 || priority >= HX_PRIORITY_CLASSES) priority = HX_PRIORITY_CLASSES - 1;
  switch (code) {
    case HX_STATUS_OK: m->completed++; break;
    case HX_STATUS_CANCELLED: m->cancelled++; break;
    case HX_STATUS_DEADLINE_EXCEEDED: m->dropped_deadline++; break;
    default: m->failed++; break;
  }
  if (had_deadline && code != HX_STATUS_CANCELLED) {
    m->deadline_total++;
    if (met) m->deadline_met++;
  }
  if (queue_ns >= 0) {
    hx_histogram_record(&m->queue[priority], queue_ns);
    hx_histogram_record(&m->queue[HX_PRIORITY_CLASSES], queue_ns);
  }
  if (code == HX_STATUS_OK) {
    hx_histogram_record(&m->latency[priority], latency_ns);
    hx_histogram_record(&m->latency[HX_PRIORITY_CLASSES], latency_ns);
    m->window_done[window_slot(m, now_ns)]++;
  }
}

void hx_metrics_record_batch(hx_metrics* m, int n, int64_t busy_ns, int64_t now_ns) {
  m->batches++;
  m->batch_requests += (uint64_t)n;
  m->batch_hist[n < 0 ? 0 : n > HX_METRICS_MAX_BATCH ? HX_METRICS_MAX_BATCH : n]++;
  m->window_busy_ns[window_slot(m, now_ns)] += busy_ns;
}

/* Sums the buckets inside the window ending at now_ns; *span_ns receives the
 * time they cover (shorter than the window right after a reset). */
static void window_sums(const hx_metrics* m, int64_t now_ns, uint64_t* done, int64_t* busy, int64_t* span_ns) {
  int64_t id = now_ns / m->bucket_ns;
  *done = 0;
  *busy = 0;
  for (int i = 0; i < HX_WINDOW_BUCKETS; ++i) {
    if (m->bucket_id[i] < 0 || m->bucket_id[i] <= id - HX_WINDOW_BUCKETS || m->bucket_id[i] > id) continue;
    *done += m->window_done[i];
    *busy += m->window_busy_ns[i];
  }
  /* Full past buckets plus the elapsed part of the current one. */
  int64_t span = (HX_WINDOW_BUCKETS - 1) * m->bucket_ns + (now_ns - id * m->bucket_ns);
  int64_t since = now_ns - m->epoch_ns;
  *span_ns = span < since ? span : since;
}

double hx_metrics_window_qps(const hx_metrics* m, int64_t now_ns) {
  uint64_t done;
  int64_t busy, span;
  window_sums(m, now_ns, &done, &busy, &span);
  return span > 0 ? (double)done * 1e9 / (double)span : 0;
}

double hx_metrics_window_load(const hx_metrics* m, int64_t now_ns) {
  uint64_t done;
  int64_t busy, span;
  window_sums(m, now_ns, &done, &busy, &span);
  if (span <= 0) return 0;
  double load = (double)busy / (double)span;
  return load > 1 ? 1 : load;
}

static void latency_stats(const hx_histogram* h, hx_latency_stats_t* out) {
  out->count = h->count;
  out->mean_ms = hx_histogram_mean(h) / 1e6;
  out->p50_ms = (double)hx_histogram_quantile(h, 0.50) / 1e6;
  out->p90_ms = (double)hx_histogram_quantile(h, 0.90) / 1e6;
  out->p99_ms = (double)hx_histogram_quantile(h, 0.99) / 1e6;
  out->p999_ms = (double)hx_histogram_quantile(h, 0.999) / 1e6;
  out->max_ms = (double)h->max / 1e6;
}

void hx_metrics_snapshot(const hx_metrics* m, int64_t now_ns, hx_server_metrics_t* s) {
  double elapsed = (double)(now_ns - m->epoch_ns) / 1e9;
  s->elapsed_s = elapsed;
  s->submitted = m->submitted;
  s->completed = m->completed;
  s->failed = m->failed;
  s->cancelled = m->cancelled;
  s->rejected_busy = m->rejected_busy;
  s->rejected_deadline = m->rejected_deadline;
  s->dropped_deadline = m->dropped_deadline;
  s->qps = elapsed > 0 ? (double)m->completed / elapsed : 0;
  s->window_qps = hx_metrics_window_qps(m, now_ns);
  s->load = hx_metrics_window_load(m, now_ns);
  latency_stats(&m->latency[HX_PRIORITY_CLASSES], &s->latency);
  latency_stats(&m->queue[HX_PRIORITY_CLASSES], &s->queue_wait);
  for (int c = 0; c < HX_PRIORITY_CLASSES; ++c) {
    latency_stats(&m->latency[c], &s->class_latency[c]);
    latency_stats(&m->queue[c], &s->class_queue_wait[c]);
  }
  s->deadline_total = m->deadline_total;
  s->deadline_met = m->deadline_met;
  s->deadline_met_ratio = m->deadline_total ? (double)m->deadline_met / (double)m->deadline_total : 1.0;
  s->batches = m->batches;
  s->mean_batch = m->batches ? (double)m->batch_requests / (double)m->batches : 0;
  memcpy(s->batch_hist, m->batch_hist, sizeof(s->batch_hist));
}

/* ---- rendering ------------------------------------------------------------ */

typedef struct text {
  char* buf;
  size_t len, cap;
  int failed;
} text;

static void put(text* t, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text* t, const char* fmt, ...) {
  if (t->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      t->failed = 1;
      return;
    }
    if (t->buf && t->len + (size_t)n < t->cap) {
      t->len += (size_t)n;
      return;
    }
    size_t cap = t->cap ? t->cap * 2 : 4096;
    while (cap < t->len + (size_t)n + 1) cap *= 2;
    char* nb = realloc(t->buf, cap);
    if (!nb) {
      t->failed = 1;
      return;
    }
    t->buf = nb;
    t->cap = cap;
  }
}

static char* finish(text* t) {
  if (t->failed) {
    free(t->buf);
    return NULL;
  }
  return t->buf;
}

static const char* const k_class_names[HX_PRIORITY_CLASSES] = {"high", "normal", "low"};
static const char* const k_stage_names[3] = {"pre", "infer", "post"};

static void json_latency(text* t, const char* key, const hx_latency_stats_t* l) {
  put(t, "\"%s\":{\"count\":%llu,\"mean\":%.4f,\"p50\":%.4f,\"p90\":%.4f,\"p99\":%.4f,\"p999\":%.4f,\"max\":%.4f}", key,
      (unsigned long long)l->count, l->mean_ms, l->p50_ms, l->p90_ms, l->p99_ms, l->p999_ms, l->max_ms);
}

char* hx_metrics_to_json(const hx_server_metrics_t* s) {
  text t = {0};
  put(&t, "{\"elapsed_s\":%.3f,\"qps\":%.3f,\"window_qps\":%.3f,\"load\":%.4f,", s->elapsed_s, s->qps, s->window_qps,
      s->load);
  put(&t, "\"submitted\":%llu,\"completed\":%llu,\"failed\":%llu,\"cancelled\":%llu,", (unsigned long long)s->submitted,
      (unsigned long long)s->completed, (unsigned long long)s->failed, (unsigned long long)s->cancelled);
  put(&t, "\"rejected_busy\":%llu,\"rejected_deadline\":%llu,\"dropped\":%llu,", (unsigned long long)s->rejected_busy,
      (unsigned long long)s->rejected_deadline, (unsigned long long)s->dropped_deadline);
  json_latency(&t, "latency_ms", &s->latency);
  put(&t, ",");
  json_latency(&t, "queue_wait_ms", &s->queue_wait);
  put(&t, ",\"classes\":{");
  for (int c = 0; c < HX_PRIORITY_CLASSES; ++c) {
    put(&t, "%s\"%s\":{", c ? "," : "", k_class_names[c]);
    json_latency(&t, "latency_ms", &s->class_latency[c]);
    put(&t, ",");
    json_latency(&t, "queue_wait_ms", &s->class_queue_wait[c]);
    put(&t, "}");
  }
  put(&t, "},\"deadline_total\":%llu,\"deadline_met\":%llu,\"deadline_met_ratio\":%.5f,",
      (unsigned long long)s->deadline_total, (unsigned long long)s->deadline_met, s->deadline_met_ratio);
  put(&t, "\"batches\":%llu,\"mean_batch\":%.3f,\"batch_hist\":{", (unsigned long long)s->batches, s->mean_batch);
  int first = 1;
  for (int n = 0; n <= HX_METRICS_MAX_BATCH; ++n) {
    if (!s->batch_hist[n]) continue;
    put(&t, "%s\"%d\":%llu", first ? "" : ",", n, (unsigned long long)s->batch_hist[n]);
    first = 0;
  }
  put(&t, "},\"stage_utilisation\":{\"pre\":%.4f,\"infer\":%.4f,\"post\":%.4f},", s->stage_utilisation[0],
      s->stage_utilisation[1], s->stage_utilisation[2]);
  put(&t, "\"workers\":[");
  for (int w = 0; w < s->num_workers; ++w)
    put(&t, "%s{\"stage\":\"%s\",\"index\":%d,\"cpu\":%d,\"utilisation\":%.4f}", w ? "," : "", s->workers[w].stage,
        s->workers[w].index, s->workers[w].cpu, s->workers[w].utilisation);
  put(&t, "],\"contention_s\":{\"lock_wait\":%.6f,\"submit_blocked\":%.6f,\"pre_wait\":%.6f,\"infer_wait\":%.6f,"
          "\"post_wait\":%.6f},\"est_batch_ms\":%.4f}",
      s->lock_wait_s, s->submit_blocked_s, s->stage_wait_s[0], s->stage_wait_s[1], s->stage_wait_s[2], s->est_batch_ms);
  return finish(&t);
}

static void prom_header(text* t, const char* name, const char* type, const char* help) {
  put(t, "# HELP harness_%s %s\n# TYPE harness_%s %s\n", name, help, name, type);
}

/* A latency summary in seconds, quantiles as labels (Prometheus summary). */
static void prom_summary(text* t, const char* name, const char* labels, const hx_latency_stats_t* l) {
  const double q[] = {0.5, 0.9, 0.99, 0.999};
  const double v[] = {l->p50_ms, l->p90_ms, l->p99_ms, l->p999_ms};
  for (int i = 0; i < 4; ++i)
    put(t, "harness_%s{%s%squantile=\"%g\"} %.9f\n", name, labels, labels[0] ? "," : "", q[i], v[i] / 1e3);
  const char* open = labels[0] ? "{" : "";
  const char* close = labels[0] ? "}" : "";
  put(t, "harness_%s_sum%s%s%s %.9f\n", name, open, labels, close, l->mean_ms * (double)l->count / 1e3);
  put(t, "harness_%s_count%s%s%s %llu\n", name, open, labels, close, (unsigned long long)l->count);
}

char* hx_metrics_to_prometheus(const hx_server_metrics_t* s) {
  text t = {0};
  prom_header(&t, "requests_total", "counter", "Requests by outcome since the last reset.");
  put(&t, "harness_requests_total{outcome=\"submitted\"} %llu\n", (unsigned long long)s->submitted);
  put(&t, "harness_requests_total{outcome=\"completed\"} %llu\n", (unsigned long long)s->completed);
  put(&t, "harness_requests_total{outcome=\"failed\"} %llu\n", (unsigned long long)s->failed);
  put(&t, "harness_requests_total{outcome=\"cancelled\"} %llu\n", (unsigned long long)s->cancelled);
  put(&t, "harness_requests_total{outcome=\"rejected_busy\"} %llu\n", (unsigned long long)s->rejected_busy);
  put(&t, "harness_requests_total{outcome=\"rejected_deadline\"} %llu\n", (unsigned long long)s->rejected_deadline);
  put(&t, "harness_requests_total{outcome=\"dropped_deadline\"} %llu\n", (unsigned long long)s->dropped_deadline);
  prom_header(&t, "qps", "gauge", "Successful completions per second since the last reset.");
  put(&t, "harness_qps %.3f\n", s->qps);
  prom_header(&t, "window_qps", "gauge", "Successful completions per second over the sliding window.");
  put(&t, "harness_window_qps %.3f\n", s->window_qps);
  prom_header(&t, "load", "gauge", "Inference stage busy fraction over the sliding window.");
  put(&t, "harness_load %.4f\n", s->load);
  prom_header(&t, "latency_seconds", "summary", "Submit-to-completion latency of successful requests.");
  prom_summary(&t, "latency_seconds", "", &s->latency);
  for (int c = 0; c < HX_PRIORITY_CLASSES; ++c) {
    char labels[32];
    snprintf(labels, sizeof labels, "class=\"%s\"", k_class_names[c]);
    prom_summary(&t, "latency_seconds", labels, &s->class_latency[c]);
  }
  prom_header(&t, "queue_wait_seconds", "summary", "Submit-to-dispatch wait of dispatched requests.");
  prom_summary(&t, "queue_wait_seconds", "", &s->queue_wait);
  for (int c = 0; c < HX_PRIORITY_CLASSES; ++c) {
    char labels[32];
    snprintf(labels, sizeof labels, "class=\"%s\"", k_class_names[c]);
    prom_summary(&t, "queue_wait_seconds", labels, &s->class_queue_wait[c]);
  }
  prom_header(&t, "deadline_met_ratio", "gauge", "Requests with a deadline that completed in time.");
  put(&t, "harness_deadline_met_ratio %.5f\n", s->deadline_met_ratio);
  prom_header(&t, "batches_total", "counter", "Inference runs by number of requests in the batch.");
  for (int n = 1; n <= HX_METRICS_MAX_BATCH; ++n)
    if (s->batch_hist[n]) put(&t, "harness_batches_total{requests=\"%d\"} %llu\n", n, (unsigned long long)s->batch_hist[n]);
  prom_header(&t, "mean_batch", "gauge", "Mean requests per inference run.");
  put(&t, "harness_mean_batch %.3f\n", s->mean_batch);
  prom_header(&t, "stage_utilisation", "gauge", "Busy fraction of each pipeline stage.");
  for (int i = 0; i < 3; ++i) put(&t, "harness_stage_utilisation{stage=\"%s\"} %.4f\n", k_stage_names[i], s->stage_utilisation[i]);
  prom_header(&t, "worker_utilisation", "gauge", "Busy fraction of each thread.");
  for (int w = 0; w < s->num_workers; ++w)
    put(&t, "harness_worker_utilisation{stage=\"%s\",index=\"%d\",cpu=\"%d\"} %.4f\n", s->workers[w].stage,
        s->workers[w].index, s->workers[w].cpu, s->workers[w].utilisation);
  prom_header(&t, "wait_seconds_total", "counter", "Time spent waiting for the server lock, for queue room, and by each stage for work.");
  put(&t, "harness_wait_seconds_total{on=\"lock\"} %.6f\n", s->lock_wait_s);
  put(&t, "harness_wait_seconds_total{on=\"submit\"} %.6f\n", s->submit_blocked_s);
  for (int i = 0; i < 3; ++i) put(&t, "harness_wait_seconds_total{on=\"%s\"} %.6f\n", k_stage_names[i], s->stage_wait_s[i]);
  prom_header(&t, "estimated_batch_seconds", "gauge", "Current cost estimate of a full batch.");
  put(&t, "harness_estimated_batch_seconds %.9f\n", s->est_batch_ms / 1e3);
  return finish(&t);
}
