/* Per-sample cost of each compiled batch size of a `harnessc --batch`
 * artifact, measured directly on sessions (no pipeline): what batching can
 * gain at most, before scheduling. Sizes are interleaved round by round so
 * that drifting machine load affects them alike; medians are reported.
 *
 *   harness-batch-bench MODEL.so [--threads N] [--rounds R] [--seconds S]
 *
 * Each round runs every size for about S seconds (at least one run). Inputs
 * are zeros (valid token ids for integer inputs) or a fixed pseudo-random
 * pattern for float inputs. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/harness.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  int threads = 0, rounds = 5;
  double seconds = 1.0;
  static const struct option opts[] = {{"threads", required_argument, NULL, 't'}, {"rounds", required_argument, NULL, 'r'},
                                       {"seconds", required_argument, NULL, 's'}, {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (c == 't') threads = atoi(optarg);
    else if (c == 'r') rounds = atoi(optarg);
    else if (c == 's') seconds = atof(optarg);
    else return 2;
  }
  if (optind != argc - 1 || rounds < 1) {
    fprintf(stderr, "usage: harness-batch-bench MODEL.so [--threads N] [--rounds R] [--seconds S]\n");
    return 2;
  }
  hx_model_t* m;
  hx_status_t st = hx_model_load(argv[optind], &m);
  if (st != HX_OK) {
    fprintf(stderr, "error: %s\n", hx_status_message(st));
    return 1;
  }
  size_t nb = hx_model_batch_count(m);
  if (nb == 0) {
    fprintf(stderr, "error: %s was compiled without --batch\n", argv[optind]);
    return 1;
  }
  hx_session_t** sessions = calloc(nb, sizeof(*sessions));
  double* times = calloc(nb * (size_t)rounds, sizeof(double));
  size_t nin = hx_model_input_count(m), nout = hx_model_output_count(m);
  hx_session_options_t so = {.threads = threads};
  for (size_t b = 0; b < nb; ++b) {
    st = hx_session_create_for_batch(m, hx_model_batch_size(m, b), &so, &sessions[b]);
    for (size_t i = 0; st == HX_OK && i < nin; ++i) {
      hx_tensor_info_t info;
      hx_session_input_info(sessions[b], i, &info);
      unsigned char* p = aligned_alloc(64, (info.bytes + 63) / 64 * 64);
      memset(p, 0, info.bytes);
      if (info.dtype == HX_DTYPE_FLOAT32)
        for (size_t k = 0; k < info.bytes / 4; ++k) ((float*)p)[k] = (float)((k * 2654435761u) % 1000) / 500.0f - 1;
      st = hx_session_bind_input(sessions[b], i, p, info.bytes);
    }
    for (size_t i = 0; st == HX_OK && i < nout; ++i) {
      hx_tensor_info_t info;
      hx_session_output_info(sessions[b], i, &info);
      void* p = aligned_alloc(64, (info.bytes + 63) / 64 * 64);
      st = hx_session_bind_output(sessions[b], i, p, info.bytes);
    }
    if (st == HX_OK) st = hx_session_run(sessions[b]); /* warm-up */
    if (st != HX_OK) {
      fprintf(stderr, "error: %s\n", hx_status_message(st));
      return 1;
    }
  }
  for (int r = 0; r < rounds; ++r) {
    for (size_t b = 0; b < nb; ++b) {
      int runs = 0;
      double t0 = now_s(), t;
      do {
        hx_status_free(hx_session_run(sessions[b]));
        ++runs;
        t = now_s() - t0;
      } while (t < seconds);
      times[b * (size_t)rounds + (size_t)r] = t / runs;
    }
  }
  printf("%s: %zu batch sizes, %d threads, %d rounds (median per run)\n", argv[optind], nb,
         hx_session_thread_count(sessions[0]), rounds);
  double base = 0;
  for (size_t b = 0; b < nb; ++b) {
    qsort(times + b * (size_t)rounds, (size_t)rounds, sizeof(double), cmp);
    double med = times[b * (size_t)rounds + (size_t)rounds / 2];
    int64_t size = hx_model_batch_size(m, b);
    double per_sample = med / (double)size;
    if (b == 0) base = per_sample;
    printf("  batch %2lld: %9.3f ms/run  %8.3f ms/sample  %8.2f samples/s  x%.2f per sample vs batch %lld\n",
           (long long)size, med * 1e3, per_sample * 1e3, 1.0 / per_sample, base / per_sample,
           (long long)hx_model_batch_size(m, 0));
  }
  for (size_t b = 0; b < nb; ++b) hx_session_free(sessions[b]);
  hx_model_free(m);
  return 0;
}
