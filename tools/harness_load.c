/* harness-load: an open-loop load generator for the serving layer.
 *
 * Generates a request trace up front from a seed (Poisson arrivals at --rate,
 * optionally bursting to --burst times the rate for --burst-ms of every
 * --burst-period-ms; a priority class and deadline per request), then replays
 * it against a server on the model in real time, never waiting for the server
 * (a full queue is a rejection, as for a real front end). The same seed gives
 * the same trace, so policies are compared on identical load. --rate 0
 * instead submits as fast as the server accepts (closed loop) to measure
 * capacity. Pre/post stages are synthetic (--pre-us/--post-us of spinning or
 * sleeping per request); the synthetic artifact's inference cost can be set
 * with --synthetic.
 *
 * Prints the server's metrics (QPS, latency and queue-wait percentiles per
 * class, batch sizes, utilisation, contention, deadlines, drops), or with
 * --json one JSON object. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/harness.h"
#include "harness/serving.h"
#include "tools/common/artifact_dlopen.h"

static void usage(FILE* out) {
  fprintf(out,
          "usage: harness-load MODEL.so --rate QPS --duration SECONDS [options]\n"
          "\n"
          "Replays an open-loop request trace (Poisson arrivals, optional bursts, mixed\n"
          "priorities and deadlines) against the serving runtime and prints its metrics.\n"
          "\n"
          "load:\n"
          "  --rate QPS            mean arrival rate; 0 = closed loop, as fast as accepted\n"
          "  --duration SECONDS    length of the trace\n"
          "  --burst FACTOR        during bursts the rate is FACTOR x QPS (default 1: none)\n"
          "  --burst-ms MS         burst length (default 200)\n"
          "  --burst-period-ms MS  one burst at the start of every period (default 1000)\n"
          "  --high-share F        fraction of high-priority requests (default 0.1)\n"
          "  --low-share F         fraction of low-priority requests (default 0)\n"
          "  --deadline-ms MS      deadline of every request (default 0: none)\n"
          "  --high-deadline-ms MS deadline of high-priority requests (default: --deadline-ms)\n"
          "  --seed N              trace seed (default 1)\n"
          "  --warmup SECONDS      run the rate this long before measuring (default 0.5)\n"
          "server:\n"
          "  --policy fifo|priority          scheduling (default fifo)\n"
          "  --deadline-policy keep|drop|reject  (default: drop for priority, keep for fifo)\n"
          "  --batch-max N         most requests per batch (default: largest compiled size)\n"
          "  --max-delay-us US     batching window (default 0)\n"
          "  --pre-us US           synthetic pre-process cost per request (default 0: copy)\n"
          "  --post-us US          synthetic post-process cost per request (default 0)\n"
          "  --stage-cost spin|sleep  how --pre-us/--post-us are spent (default spin)\n"
          "  --pre-threads N, --post-threads N  stage threads (default 1 each)\n"
          "  --threads N           inference threads (default: all CPUs)\n"
          "  --pin                 pin inference threads (NUMA-aware)\n"
          "  --queue N             queue capacity (default 4096)\n"
          "  --synthetic B,S,MODE  synthetic artifact's inference cost: B us per batch + S us\n"
          "                        per sample, MODE spin or sleep (bench/synthetic_artifact.c)\n"
          "output:\n"
          "  --json                one JSON object\n"
          "  --prometheus          the server's metrics in Prometheus text format\n"
          "  -h, --help            this help\n");
}

typedef struct trace_item {
  int64_t at_ns; /* offset from the start */
  int32_t priority;
  int64_t deadline_us;
} trace_item;

typedef struct config {
  const char* model;
  double rate, duration, burst, burst_ms, burst_period_ms, high_share, low_share, warmup;
  double deadline_ms, high_deadline_ms;
  unsigned long long seed;
  int policy, deadline_policy, batch_max, pre_threads, post_threads, threads, pin, queue, json, prometheus;
  int64_t max_delay_us, pre_us, post_us;
  int stage_sleep;
  const char* synthetic;
} config;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(int64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
  }
}

/* Spends us microseconds spinning (CPU work) or sleeping. */
static void spend(int64_t us, int sleep) {
  if (us <= 0) return;
  int64_t until = now_ns() + us * 1000;
  if (sleep) {
    sleep_until(until);
    return;
  }
  while (now_ns() < until) {
  }
}

/* xorshift64*: small, seedable, good enough for arrival times. */
static double uniform(unsigned long long* s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return (double)((*s * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static int in_burst(const config* c, double t_ms) {
  return c->burst > 1 && fmod(t_ms, c->burst_period_ms) < c->burst_ms;
}

/* The whole trace (warm-up included), Poisson with a piecewise rate: the next
 * gap is drawn at the rate in force, which is exact within a phase. */
static trace_item* make_trace(const config* c, size_t* out_n) {
  size_t cap = 1024, n = 0;
  trace_item* t = malloc(cap * sizeof(*t));
  unsigned long long s = c->seed * 0x9E3779B97F4A7C15ull + 1;
  double total_ms = (c->warmup + c->duration) * 1e3, at_ms = 0;
  for (;;) {
    double rate = c->rate * (in_burst(c, at_ms) ? c->burst : 1.0);
    at_ms += -log(1.0 - uniform(&s)) / rate * 1e3;
    if (at_ms >= total_ms) break;
    if (n == cap) {
      cap *= 2;
      trace_item* nt = realloc(t, cap * sizeof(*t));
      if (!nt) break;
      t = nt;
    }
    double u = uniform(&s);
    int prio = u < c->high_share ? HX_PRIORITY_HIGH : u < c->high_share + c->low_share ? HX_PRIORITY_LOW : HX_PRIORITY_NORMAL;
    double dl = prio == HX_PRIORITY_HIGH && c->high_deadline_ms > 0 ? c->high_deadline_ms : c->deadline_ms;
    t[n++] = (trace_item){(int64_t)(at_ms * 1e6), prio, (int64_t)(dl * 1e3)};
  }
  *out_n = n;
  return t;
}

/* ---- stages and completions ------------------------------------------------- */

typedef struct app {
  config cfg;
  hx_server_t* server;
  size_t num_inputs;
  size_t* in_bytes;
  void** samples; /* one random sample per input, shared by every request */
  atomic_llong ok, met; /* successful completions; deadlines met by measured requests */
  atomic_llong checksum_bits; /* keeps the post stage's reads of the results alive */
} app;

static hx_status_t pre_cb(void* ctx, const hx_request_info_t* req, void* const* model_inputs) {
  app* a = ctx;
  spend(a->cfg.pre_us, a->cfg.stage_sleep);
  for (size_t i = 0; i < a->num_inputs; ++i) memcpy(model_inputs[i], a->samples[i], a->in_bytes[i]);
  return HX_OK;
}

static hx_status_t post_cb(void* ctx, const hx_request_info_t* req, const void* const* model_outputs) {
  app* a = ctx;
  spend(a->cfg.post_us, a->cfg.stage_sleep);
  /* Touch the result as a consumer would. */
  unsigned char b = *(const unsigned char*)model_outputs[0];
  atomic_fetch_add_explicit(&a->checksum_bits, b, memory_order_relaxed);
  return HX_OK;
}

/* user_data marks requests submitted in the measured period (not warm-up),
 * so that deadline attainment compares like with like. */
static void on_complete(void* ctx, const hx_completion_t* c) {
  app* a = ctx;
  if (c->code == HX_STATUS_OK) atomic_fetch_add_explicit(&a->ok, 1, memory_order_relaxed);
  if (c->deadline_met && c->user_data) atomic_fetch_add_explicit(&a->met, 1, memory_order_relaxed);
}

/* ---- main ---------------------------------------------------------------------- */

static int parse_policy(const char* s, int* out) {
  if (!strcmp(s, "fifo")) *out = HX_SCHED_FIFO;
  else if (!strcmp(s, "priority")) *out = HX_SCHED_PRIORITY;
  else return 0;
  return 1;
}

static int parse_deadline_policy(const char* s, int* out) {
  if (!strcmp(s, "keep")) *out = HX_DEADLINE_KEEP;
  else if (!strcmp(s, "drop")) *out = HX_DEADLINE_DROP;
  else if (!strcmp(s, "reject")) *out = HX_DEADLINE_REJECT;
  else return 0;
  return 1;
}

static int fail(hx_status_t st, const char* what) {
  fprintf(stderr, "error: %s: %s\n", what, hx_status_message(st));
  hx_status_free(st);
  return 1;
}

/* Sets the synthetic artifact's cost ("B,S,spin|sleep") through its own
 * symbol; the model keeps the library loaded, so the handle is shared. */
static int configure_synthetic(const char* model_path, const char* spec) {
  long base = 0, per = 0;
  char mode[16] = "spin";
  if (sscanf(spec, "%ld,%ld,%15s", &base, &per, mode) < 2) {
    fprintf(stderr, "error: --synthetic expects BASE_US,PER_SAMPLE_US[,spin|sleep], got '%s'\n", spec);
    return 2;
  }
  void* h = hx_tool_dlopen(model_path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  void (*fn)(long, long, int) = h ? (void (*)(long, long, int))dlsym(h, "harness_synthetic_configure") : NULL;
  if (!fn) {
    fprintf(stderr, "error: --synthetic: '%s' is not the synthetic artifact\n", model_path);
    if (h) dlclose(h);
    return 2;
  }
  fn(base, per, !strcmp(mode, "sleep") ? 2 : 1);
  dlclose(h);
  return 0;
}

static void print_class(FILE* f, const char* name, const hx_latency_stats_t* q, const hx_latency_stats_t* l) {
  if (!q->count && !l->count) return;
  fprintf(f, "  %-7s queue wait p50 %8.3f  p99 %8.3f ms | latency p50 %8.3f  p99 %8.3f ms  (%llu served)\n", name,
          q->p50_ms, q->p99_ms, l->p50_ms, l->p99_ms, (unsigned long long)l->count);
}

int main(int argc, char** argv) {
  config c = {.burst = 1, .burst_ms = 200, .burst_period_ms = 1000, .high_share = 0.1, .seed = 1, .warmup = 0.5,
              .policy = HX_SCHED_FIFO, .deadline_policy = -1, .pre_threads = 1, .post_threads = 1, .queue = 4096,
              .rate = -1, .duration = -1};
  enum {
    O_RATE = 1000, O_DURATION, O_BURST, O_BURST_MS, O_BURST_PERIOD, O_HIGH, O_LOW, O_DEADLINE, O_HIGH_DEADLINE, O_SEED,
    O_WARMUP, O_POLICY, O_DPOLICY, O_BATCH_MAX, O_MAX_DELAY, O_PRE_US, O_POST_US, O_STAGE_COST, O_PRE_THREADS,
    O_POST_THREADS, O_THREADS, O_PIN, O_QUEUE, O_SYNTHETIC, O_JSON, O_PROM,
  };
  static const struct option longopts[] = {
      {"rate", required_argument, NULL, O_RATE}, {"duration", required_argument, NULL, O_DURATION},
      {"burst", required_argument, NULL, O_BURST}, {"burst-ms", required_argument, NULL, O_BURST_MS},
      {"burst-period-ms", required_argument, NULL, O_BURST_PERIOD}, {"high-share", required_argument, NULL, O_HIGH},
      {"low-share", required_argument, NULL, O_LOW}, {"deadline-ms", required_argument, NULL, O_DEADLINE},
      {"high-deadline-ms", required_argument, NULL, O_HIGH_DEADLINE}, {"seed", required_argument, NULL, O_SEED},
      {"warmup", required_argument, NULL, O_WARMUP}, {"policy", required_argument, NULL, O_POLICY},
      {"deadline-policy", required_argument, NULL, O_DPOLICY}, {"batch-max", required_argument, NULL, O_BATCH_MAX},
      {"max-delay-us", required_argument, NULL, O_MAX_DELAY}, {"pre-us", required_argument, NULL, O_PRE_US},
      {"post-us", required_argument, NULL, O_POST_US}, {"stage-cost", required_argument, NULL, O_STAGE_COST},
      {"pre-threads", required_argument, NULL, O_PRE_THREADS}, {"post-threads", required_argument, NULL, O_POST_THREADS},
      {"threads", required_argument, NULL, O_THREADS}, {"pin", no_argument, NULL, O_PIN},
      {"queue", required_argument, NULL, O_QUEUE}, {"synthetic", required_argument, NULL, O_SYNTHETIC},
      {"json", no_argument, NULL, O_JSON}, {"prometheus", no_argument, NULL, O_PROM},
      {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
  };
  int opt;
  while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (opt) {
      case O_RATE: c.rate = atof(optarg); break;
      case O_DURATION: c.duration = atof(optarg); break;
      case O_BURST: c.burst = atof(optarg); break;
      case O_BURST_MS: c.burst_ms = atof(optarg); break;
      case O_BURST_PERIOD: c.burst_period_ms = atof(optarg); break;
      case O_HIGH: c.high_share = atof(optarg); break;
      case O_LOW: c.low_share = atof(optarg); break;
      case O_DEADLINE: c.deadline_ms = atof(optarg); break;
      case O_HIGH_DEADLINE: c.high_deadline_ms = atof(optarg); break;
      case O_SEED: c.seed = strtoull(optarg, NULL, 10); break;
      case O_WARMUP: c.warmup = atof(optarg); break;
      case O_POLICY:
        if (!parse_policy(optarg, &c.policy)) {
          fprintf(stderr, "error: --policy expects fifo or priority, got '%s'\n", optarg);
          return 2;
        }
        break;
      case O_DPOLICY:
        if (!parse_deadline_policy(optarg, &c.deadline_policy)) {
          fprintf(stderr, "error: --deadline-policy expects keep, drop or reject, got '%s'\n", optarg);
          return 2;
        }
        break;
      case O_BATCH_MAX: c.batch_max = atoi(optarg); break;
      case O_MAX_DELAY: c.max_delay_us = atoll(optarg); break;
      case O_PRE_US: c.pre_us = atoll(optarg); break;
      case O_POST_US: c.post_us = atoll(optarg); break;
      case O_STAGE_COST:
        if (strcmp(optarg, "spin") && strcmp(optarg, "sleep")) {
          fprintf(stderr, "error: --stage-cost expects spin or sleep, got '%s'\n", optarg);
          return 2;
        }
        c.stage_sleep = !strcmp(optarg, "sleep");
        break;
      case O_PRE_THREADS: c.pre_threads = atoi(optarg); break;
      case O_POST_THREADS: c.post_threads = atoi(optarg); break;
      case O_THREADS: c.threads = atoi(optarg); break;
      case O_PIN: c.pin = 1; break;
      case O_QUEUE: c.queue = atoi(optarg); break;
      case O_SYNTHETIC: c.synthetic = optarg; break;
      case O_JSON: c.json = 1; break;
      case O_PROM: c.prometheus = 1; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (optind != argc - 1 || c.rate < 0 || c.duration <= 0) {
    fprintf(stderr, "error: expected MODEL.so, --rate QPS and --duration SECONDS (see --help)\n");
    return 2;
  }
  if (c.burst < 1 || c.burst_ms < 0 || c.burst_period_ms <= 0 || c.high_share < 0 || c.low_share < 0 ||
      c.high_share + c.low_share > 1 || c.warmup < 0) {
    fprintf(stderr, "error: invalid burst, share or warm-up values (see --help)\n");
    return 2;
  }
  c.model = argv[optind];
  if (c.deadline_policy < 0) c.deadline_policy = c.policy == HX_SCHED_PRIORITY ? HX_DEADLINE_DROP : HX_DEADLINE_KEEP;

  hx_model_t* model;
  hx_status_t st = hx_model_load(c.model, &model);
  if (st != HX_OK) return fail(st, "loading the model");
  if (c.synthetic) {
    int rc = configure_synthetic(c.model, c.synthetic);
    if (rc) {
      hx_model_free(model);
      return rc;
    }
  }

  app* a = calloc(1, sizeof(*a));
  a->cfg = c;
  a->num_inputs = hx_model_input_count(model);
  a->in_bytes = calloc(a->num_inputs + 1, sizeof(size_t));
  a->samples = calloc(a->num_inputs + 1, sizeof(void*));

  hx_server_options_t o;
  hx_server_options_init(&o);
  o.threads = c.threads;
  o.pin_threads = c.pin;
  o.pre_threads = c.pre_threads;
  o.post_threads = c.post_threads;
  o.queue_capacity = c.queue;
  o.backpressure = c.rate == 0 ? HX_BACKPRESSURE_BLOCK : HX_BACKPRESSURE_BUSY;
  o.policy = c.policy;
  o.deadline_policy = c.deadline_policy;
  o.max_batch = c.batch_max;
  o.max_delay_us = c.max_delay_us;
  o.pre = pre_cb; /* pre copies the shared sample (plus --pre-us of work) */
  o.post = post_cb;
  o.on_complete = on_complete;
  o.callback_ctx = a;
  st = hx_server_create(model, &o, &a->server);
  if (st != HX_OK) return fail(st, "starting the server");
  unsigned long long fill = c.seed;
  for (size_t i = 0; i < a->num_inputs; ++i) {
    a->in_bytes[i] = hx_server_input_bytes(a->server, i);
    unsigned char* p = malloc(a->in_bytes[i] + 1);
    hx_tensor_info_t info;
    hx_model_input_info(model, i, &info);
    for (size_t k = 0; k < a->in_bytes[i]; ++k) p[k] = 0;
    if (info.dtype == HX_DTYPE_FLOAT32)
      for (size_t k = 0; k < a->in_bytes[i] / 4; ++k) ((float*)p)[k] = (float)(uniform(&fill) * 2 - 1);
    a->samples[i] = p;
  }

  /* Replay. Submits never block in open loop: a full queue is a rejection. */
  size_t n = 0;
  trace_item* trace = NULL;
  if (c.rate > 0) trace = make_trace(&c, &n);
  uint64_t offered = 0, rejected_busy = 0, rejected_deadline = 0, offered_deadline = 0;
  int64_t start = now_ns(), measure_from = start + (int64_t)(c.warmup * 1e9);
  int64_t end = measure_from + (int64_t)(c.duration * 1e9);
  int reset_done = c.warmup == 0;
  if (reset_done) hx_server_metrics_reset(a->server);
  long long ok_at_reset = 0;
  for (size_t i = 0;; ++i) {
    int64_t at;
    trace_item it;
    if (trace) {
      if (i >= n) break;
      it = trace[i];
      at = start + it.at_ns;
      sleep_until(at);
    } else {
      at = now_ns();
      if (at >= end) break;
      double u = uniform(&fill);
      int prio = u < c.high_share ? HX_PRIORITY_HIGH : u < c.high_share + c.low_share ? HX_PRIORITY_LOW : HX_PRIORITY_NORMAL;
      double dl = prio == HX_PRIORITY_HIGH && c.high_deadline_ms > 0 ? c.high_deadline_ms : c.deadline_ms;
      it = (trace_item){0, prio, (int64_t)(dl * 1e3)};
    }
    if (!reset_done && at >= measure_from) {
      hx_server_metrics_reset(a->server);
      ok_at_reset = atomic_load(&a->ok);
      reset_done = 1;
    }
    int measured = reset_done;
    hx_submit_t q = {NULL, NULL, it.priority, it.deadline_us, measured ? (void*)1 : NULL};
    st = hx_server_submit(a->server, &q, NULL);
    if (measured) {
      offered++;
      if (it.deadline_us > 0) offered_deadline++;
    }
    if (st != HX_OK) {
      if (measured && hx_status_code(st) == HX_STATUS_UNAVAILABLE) rejected_busy++;
      else if (measured && hx_status_code(st) == HX_STATUS_DEADLINE_EXCEEDED) rejected_deadline++;
      else if (hx_status_code(st) != HX_STATUS_UNAVAILABLE && hx_status_code(st) != HX_STATUS_DEADLINE_EXCEEDED)
        return fail(st, "submitting");
      hx_status_free(st);
    }
  }
  /* Throughput counts what finished inside the measured period; the queue
   * is then drained so that every admitted request's latency is recorded. */
  if (trace) sleep_until(end);
  double qps = (double)(atomic_load(&a->ok) - ok_at_reset) / c.duration;
  hx_status_free(hx_server_shutdown(a->server, 1));
  hx_server_metrics_t m;
  hx_server_metrics(a->server, &m);
  uint64_t dropped = m.dropped_deadline + rejected_busy + rejected_deadline;
  /* Strict SLA attainment: every offered request with a deadline counts,
   * including those refused or dropped. */
  double sla = offered_deadline ? (double)atomic_load(&a->met) / (double)offered_deadline : 1.0;

  if (c.json) {
    char* server_json = NULL;
    hx_status_free(hx_server_metrics_json(a->server, &server_json));
    printf("{\"model\":\"%s\",\"policy\":\"%s\",\"rate\":%.3f,\"duration_s\":%.3f,\"burst\":%.3f,\"offered\":%llu,"
           "\"qps\":%.3f,\"latency_ms\":{\"p50\":%.4f,\"p90\":%.4f,\"p99\":%.4f,\"p999\":%.4f},"
           "\"queue_wait_ms\":{\"high\":{\"p50\":%.4f,\"p99\":%.4f},\"normal\":{\"p50\":%.4f,\"p99\":%.4f},"
           "\"low\":{\"p50\":%.4f,\"p99\":%.4f},\"all\":{\"p50\":%.4f,\"p99\":%.4f}},"
           "\"deadline_met_ratio\":%.5f,\"server_deadline_met_ratio\":%.5f,\"dropped\":%llu,"
           "\"dropped_deadline\":%llu,\"rejected_busy\":%llu,\"rejected_deadline\":%llu,\"mean_batch\":%.3f,"
           "\"server\":%s}\n",
           c.model, c.policy == HX_SCHED_PRIORITY ? "priority" : "fifo", c.rate, c.duration, c.burst,
           (unsigned long long)offered, qps, m.latency.p50_ms, m.latency.p90_ms, m.latency.p99_ms, m.latency.p999_ms,
           m.class_queue_wait[0].p50_ms, m.class_queue_wait[0].p99_ms, m.class_queue_wait[1].p50_ms,
           m.class_queue_wait[1].p99_ms, m.class_queue_wait[2].p50_ms, m.class_queue_wait[2].p99_ms,
           m.queue_wait.p50_ms, m.queue_wait.p99_ms, sla, m.deadline_met_ratio, (unsigned long long)dropped,
           (unsigned long long)m.dropped_deadline, (unsigned long long)rejected_busy,
           (unsigned long long)rejected_deadline, m.mean_batch, server_json ? server_json : "null");
    free(server_json);
  } else {
    printf("harness-load: %s, %s, %.0f QPS offered%s for %.1f s (%llu requests)\n", c.model,
           c.policy == HX_SCHED_PRIORITY ? "priority" : "fifo", c.rate, c.burst > 1 ? " with bursts" : "", c.duration,
           (unsigned long long)offered);
    printf("  served  %.1f QPS in the measured %.1f s (%llu ok in all, the drain after it included; %llu failed)\n", qps,
           c.duration, (unsigned long long)m.completed, (unsigned long long)m.failed);
    printf("  latency p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f ms\n", m.latency.p50_ms, m.latency.p90_ms,
           m.latency.p99_ms, m.latency.p999_ms, m.latency.max_ms);
    print_class(stdout, "high", &m.class_queue_wait[0], &m.class_latency[0]);
    print_class(stdout, "normal", &m.class_queue_wait[1], &m.class_latency[1]);
    print_class(stdout, "low", &m.class_queue_wait[2], &m.class_latency[2]);
    printf("  deadlines met %.4f (of offered; %.4f of admitted), dropped %llu (deadline %llu, queue full %llu, "
           "refused %llu)\n",
           sla, m.deadline_met_ratio, (unsigned long long)dropped, (unsigned long long)m.dropped_deadline,
           (unsigned long long)rejected_busy, (unsigned long long)rejected_deadline);
    printf("  batches %llu, mean %.2f requests:", (unsigned long long)m.batches, m.mean_batch);
    for (int b = 1; b <= HX_METRICS_MAX_BATCH; ++b)
      if (m.batch_hist[b]) printf(" %dx%llu", b, (unsigned long long)m.batch_hist[b]);
    printf("\n  utilisation pre %.2f infer %.2f post %.2f; workers:", m.stage_utilisation[0], m.stage_utilisation[1],
           m.stage_utilisation[2]);
    for (int w = 0; w < m.num_workers; ++w)
      printf(" %s%d%s %.2f", m.workers[w].stage, m.workers[w].index, m.workers[w].cpu >= 0 ? "@cpu" : "",
             m.workers[w].utilisation);
    printf("\n  waiting: lock %.4f s, submit %.4f s, pre %.3f s, infer %.3f s, post %.3f s; est. batch %.3f ms\n",
           m.lock_wait_s, m.submit_blocked_s, m.stage_wait_s[0], m.stage_wait_s[1], m.stage_wait_s[2], m.est_batch_ms);
  }
  if (c.prometheus) {
    char* text = NULL;
    hx_status_free(hx_server_metrics_prometheus(a->server, &text));
    if (text) fputs(text, stdout);
    free(text);
  }
  hx_server_free(a->server);
  for (size_t i = 0; i < a->num_inputs; ++i) free(a->samples[i]);
  free(a->samples);
  free(a->in_bytes);
  free(a);
  free(trace);
  hx_model_free(model);
  return 0;
}
