/* Pipeline throughput against its bound: with every stage busy, the
 * three-stage pipeline should complete one request per slowest-stage time.
 *
 *   harness-pipeline-bench SYNTHETIC.so [--pre-us P] [--infer-us I] [--post-us Q]
 *                          [--mode sleep|spin] [--requests N] [--json]
 *
 * Runs the synthetic artifact (bench/synthetic_artifact.c; inference costs
 * I us per run) behind pre/post callbacks that cost P and Q us per request,
 * one request per batch, with the queue kept full (closed loop). Reports the
 * throughput, each stage's measured mean time per batch, the bound
 * 1 / max(stage times) from those measurements and from the nominal costs,
 * and for contrast the serial (no overlap) rate 1 / (P + I + Q).
 *
 * "sleep" stages wait without using a CPU (I/O, an accelerator); "spin"
 * stages burn CPU, so on a small machine they also compete for cores. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "harness/serving.h"

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int g_sleep;
static long g_pre_us, g_post_us;

static void spend(long us) {
  int64_t until = now_ns() + (int64_t)us * 1000;
  if (g_sleep) {
    struct timespec ts = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
    }
    return;
  }
  while (now_ns() < until) {
  }
}

static hx_status_t pre(void* ctx, const hx_request_info_t* req, void* const* in) {
  spend(g_pre_us);
  memset(in[0], 0, 64);
  return HX_OK;
}

static hx_status_t post(void* ctx, const hx_request_info_t* req, const void* const* out) {
  spend(g_post_us);
  return HX_OK;
}

int main(int argc, char** argv) {
  long infer_us = 3000, requests = 400;
  int json = 0;
  g_pre_us = 2000;
  g_post_us = 1500;
  g_sleep = 1;
  static const struct option opts[] = {{"pre-us", required_argument, NULL, 'p'}, {"infer-us", required_argument, NULL, 'i'},
                                       {"post-us", required_argument, NULL, 'q'}, {"mode", required_argument, NULL, 'm'},
                                       {"requests", required_argument, NULL, 'n'}, {"json", no_argument, NULL, 'j'},
                                       {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
      case 'p': g_pre_us = atol(optarg); break;
      case 'i': infer_us = atol(optarg); break;
      case 'q': g_post_us = atol(optarg); break;
      case 'm': g_sleep = strcmp(optarg, "spin") != 0; break;
      case 'n': requests = atol(optarg); break;
      case 'j': json = 1; break;
      default: fprintf(stderr, "see the comment at the top of bench/pipeline_bench.c\n"); return 2;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "usage: harness-pipeline-bench SYNTHETIC.so [--pre-us P] [--infer-us I] [--post-us Q] "
                    "[--mode sleep|spin] [--requests N] [--json]\n");
    return 2;
  }
  /* Sleeping stages should wake on time: the default 50 us timer slack
   * would lengthen every stage. Threads the server starts inherit this. */
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  hx_model_t* m;
  hx_status_t st = hx_model_load(argv[optind], &m);
  if (st != HX_OK) {
    fprintf(stderr, "error: %s\n", hx_status_message(st));
    return 1;
  }
  void* h = dlopen(argv[optind], RTLD_NOW | RTLD_NOLOAD);
  void (*configure)(long, long, int) = h ? (void (*)(long, long, int))dlsym(h, "harness_synthetic_configure") : NULL;
  if (!configure) {
    fprintf(stderr, "error: %s is not the synthetic artifact\n", argv[optind]);
    return 1;
  }
  configure(infer_us, 0, g_sleep ? 2 : 1);

  hx_server_options_t o;
  hx_server_options_init(&o);
  o.threads = 1; /* the synthetic kernel is one task */
  o.max_batch = 1;
  o.queue_capacity = 64;
  o.pre = pre;
  o.post = post;
  hx_server_t* s;
  st = hx_server_create(m, &o, &s);
  if (st != HX_OK) {
    fprintf(stderr, "error: %s\n", hx_status_message(st));
    return 1;
  }
  hx_completion_t done;
  /* Warm up, then measure with the queue always full. */
  for (int i = 0; i < 20; ++i) {
    hx_submit_t q = {NULL, NULL, 1, 0, NULL};
    hx_server_submit(s, &q, NULL);
  }
  for (int i = 0; i < 20; ++i) hx_server_wait(s, -1, &done);
  hx_server_metrics_reset(s);
  int64_t t0 = now_ns();
  long submitted = 0, completed = 0;
  while (completed < requests) {
    while (submitted < requests && submitted - completed < 48) {
      hx_submit_t q = {NULL, NULL, 1, 0, NULL};
      hx_status_free(hx_server_submit(s, &q, NULL));
      submitted++;
    }
    hx_server_wait(s, -1, &done);
    completed++;
  }
  double secs = (double)(now_ns() - t0) / 1e9;
  hx_server_metrics_t mm;
  hx_server_metrics(s, &mm);
  double per_batch[3];
  for (int k = 0; k < 3; ++k) per_batch[k] = mm.stage_utilisation[k] * mm.elapsed_s / (double)mm.batches * 1e6;
  double slowest = per_batch[0] > per_batch[1] ? per_batch[0] : per_batch[1];
  if (per_batch[2] > slowest) slowest = per_batch[2];
  long nominal = g_pre_us > infer_us ? g_pre_us : infer_us;
  if (g_post_us > nominal) nominal = g_post_us;
  double qps = (double)requests / secs;
  double bound = 1e6 / slowest, nominal_bound = 1e6 / (double)nominal;
  double serial = 1e6 / (double)(g_pre_us + infer_us + g_post_us);
  if (json) {
    printf("{\"mode\":\"%s\",\"pre_us\":%ld,\"infer_us\":%ld,\"post_us\":%ld,\"requests\":%ld,\"qps\":%.2f,"
           "\"stage_us\":{\"pre\":%.1f,\"infer\":%.1f,\"post\":%.1f},\"bound_qps\":%.2f,\"ratio\":%.4f,"
           "\"nominal_bound_qps\":%.2f,\"nominal_ratio\":%.4f,\"serial_qps\":%.2f}\n",
           g_sleep ? "sleep" : "spin", g_pre_us, infer_us, g_post_us, requests, qps, per_batch[0], per_batch[1],
           per_batch[2], bound, qps / bound, nominal_bound, qps / nominal_bound, serial);
  } else {
    printf("pipeline (%s stages): pre %ld us, infer %ld us, post %ld us; %ld requests\n", g_sleep ? "sleep" : "spin",
           g_pre_us, infer_us, g_post_us, requests);
    printf("  measured stage time per batch: pre %.1f us, infer %.1f us, post %.1f us\n", per_batch[0], per_batch[1],
           per_batch[2]);
    printf("  throughput %.2f/s = %.1f%% of 1/slowest measured stage (%.2f/s), %.1f%% of nominal (%.2f/s); "
           "serial would be %.2f/s\n",
           qps, 100 * qps / bound, bound, 100 * qps / nominal_bound, nominal_bound, serial);
  }
  hx_server_free(s);
  dlclose(h);
  hx_model_free(m);
  return 0;
}
