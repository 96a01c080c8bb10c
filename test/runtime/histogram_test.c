/* Tests runtime/histogram.c (percentile accuracy), runtime/cost_model.c
 * (prior and online correction) and runtime/metrics.c (window, JSON and
 * Prometheus rendering of a snapshot). */
#include <math.h>

#include "cost_model.h"
#include "histogram.h"
#include "metrics.h"
#include "test/runtime/rt_support.h"

static void quantiles_are_within_two_percent(void** state) {
  hx_histogram* h = malloc(sizeof(*h));
  hx_histogram_clear(h);
  assert_int_equal(hx_histogram_quantile(h, 0.5), 0);
  /* 1..100000 us in ns: the q-quantile is q * 100000 us. */
  for (int64_t v = 1; v <= 100000; ++v) hx_histogram_record(h, v * 1000);
  const double qs[] = {0.5, 0.9, 0.99, 0.999};
  for (int i = 0; i < 4; ++i) {
    double want = qs[i] * 100000 * 1000;
    double got = (double)hx_histogram_quantile(h, qs[i]);
    assert_true(fabs(got - want) / want < 0.02);
  }
  assert_int_equal(hx_histogram_quantile(h, 1.0), 100000 * 1000);
  assert_float_equal(hx_histogram_mean(h), 50000.5 * 1000, 1.0);
  /* Small values are exact. */
  hx_histogram_clear(h);
  for (int v = 0; v < 10; ++v) hx_histogram_record(h, v);
  assert_int_equal(hx_histogram_quantile(h, 0.5), 4);
  assert_int_equal(hx_histogram_quantile(h, 0.0), 0);
  /* Huge values land in the last bucket without overflow. */
  hx_histogram_record(h, INT64_MAX / 2);
  assert_int_equal(hx_histogram_quantile(h, 1.0), INT64_MAX / 2);
  free(h);
}

static void cost_model_corrects_online(void** state) {
  hx_abi_kernel k[2] = {{"a", NULL, 8, 1e6, 1e3, 1, 0, 0, 0}, {"b", NULL, 1, 0, 1e6, 1, 0, 1, 0}};
  double prior = hx_cost_prior_ns(k, 2, 2);
  /* a: compute-bound on 2 threads (1e6 / 100 per ns); b: 1 task, memory-bound. */
  assert_float_equal(prior, 1e6 / 100.0 + 1e6 / 10.0, 1e-6);
  hx_cost_model m;
  hx_cost_model_init(&m);
  hx_cost_model_add(&m, 1, 1000);
  hx_cost_model_add(&m, 8, 4000);
  assert_float_equal(hx_cost_model_estimate_ns(&m, 1), 4000, 1e-9);
  /* Batch 1 measures 3x its prior: batch 8 is scaled the same way. */
  hx_cost_model_observe(&m, 0, 3000);
  assert_float_equal(hx_cost_model_estimate_ns(&m, 0), 3000, 1e-9);
  assert_float_equal(hx_cost_model_estimate_ns(&m, 1), 12000, 1e-9);
  /* Later measurements move the average part of the way. */
  hx_cost_model_observe(&m, 0, 4000);
  assert_float_equal(hx_cost_model_estimate_ns(&m, 0), 3200, 1e-9);
  hx_cost_model_observe(&m, 1, 8000);
  assert_float_equal(hx_cost_model_estimate_ns(&m, 1), 8000, 1e-9);
}

static void metrics_window_and_rendering(void** state) {
  hx_metrics* m = malloc(sizeof(*m));
  const int64_t s = 1000000000;
  hx_metrics_init(m, s, 0);
  /* 100 completions and 0.5 s of inference in the first second. */
  for (int i = 0; i < 100; ++i)
    hx_metrics_record_completion(m, i % 3, HX_STATUS_OK, 1000000, 2000000 + i * 10000, i % 2, 1, s / 2);
  hx_metrics_record_completion(m, 0, HX_STATUS_DEADLINE_EXCEEDED, -1, 5000000, 1, 0, s / 2);
  hx_metrics_record_completion(m, 1, HX_STATUS_CANCELLED, -1, 5000000, 1, 0, s / 2);
  hx_metrics_record_batch(m, 4, s / 2, s / 2);
  /* At 0.95 s the window (1 s) reaches back to the start: 0.95 s of data. */
  assert_float_equal(hx_metrics_window_qps(m, s - s / 20), 100.0 / 0.95, 1e-6);
  assert_float_equal(hx_metrics_window_load(m, s - s / 20), 0.5 / 0.95, 1e-6);
  /* Two seconds later the window has moved past them. */
  assert_float_equal(hx_metrics_window_qps(m, 3 * s), 0, 1e-9);
  hx_server_metrics_t* snap = calloc(1, sizeof(*snap));
  hx_metrics_snapshot(m, s, snap);
  assert_int_equal(snap->completed, 100);
  assert_int_equal(snap->dropped_deadline, 1);
  assert_int_equal(snap->cancelled, 1);
  assert_int_equal(snap->deadline_total, 51); /* 50 served with deadlines + the dropped one */
  assert_int_equal(snap->deadline_met, 50);
  assert_int_equal(snap->batch_hist[4], 1);
  assert_float_equal(snap->qps, 100.0, 1e-6);
  assert_true(fabs(snap->latency.p50_ms - 2.5) < 0.05);
  snap->num_workers = 1;
  snap->workers[0] = (hx_worker_stats_t){"infer", 0, -1, 0.5};
  char* json = hx_metrics_to_json(snap);
  assert_non_null(json);
  assert_non_null(strstr(json, "\"completed\":100,"));
  assert_non_null(strstr(json, "\"dropped\":1,"));
  assert_non_null(strstr(json, "\"batch_hist\":{\"4\":1}"));
  assert_non_null(strstr(json, "{\"stage\":\"infer\",\"index\":0,\"cpu\":-1,\"utilisation\":0.5000}"));
  free(json);
  char* prom = hx_metrics_to_prometheus(snap);
  assert_non_null(prom);
  assert_non_null(strstr(prom, "harness_requests_total{outcome=\"dropped_deadline\"} 1\n"));
  assert_non_null(strstr(prom, "harness_latency_seconds_count 100\n"));
  assert_non_null(strstr(prom, "harness_batches_total{requests=\"4\"} 1\n"));
  /* Every sample line is "name{labels} value" or "name value". */
  for (char* line = strtok(prom, "\n"); line; line = strtok(NULL, "\n")) {
    if (line[0] == '#') continue;
    assert_int_equal(strncmp(line, "harness_", 8), 0);
    assert_non_null(strrchr(line, ' '));
  }
  free(prom);
  free(snap);
  free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(quantiles_are_within_two_percent),
      cmocka_unit_test(cost_model_corrects_online),
      cmocka_unit_test(metrics_window_and_rendering),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
