/* libharness serving: an asynchronous three-stage pipeline with dynamic
 * batching, deadline-aware priority scheduling and metrics, layered on the
 * core model/session API of harness.h.
 *
 *   hx_server_options_t o;
 *   hx_server_options_init(&o);
 *   o.policy = HX_SCHED_PRIORITY;
 *   hx_server_t* srv;
 *   hx_server_create(model, &o, &srv);
 *   hx_submit_t req = {.inputs = in, .outputs = out, .priority = HX_PRIORITY_HIGH, .deadline_us = 20000};
 *   hx_server_submit(srv, &req, &id);
 *   hx_completion_t c;
 *   hx_server_wait(srv, -1, &c);          // or a completion callback
 *   hx_server_free(srv);
 *
 * Requests flow through three stages, each on its own threads, so that batch
 * n+1's pre-processing, batch n's inference and batch n-1's post-processing
 * overlap:
 *   1. pre:   the scheduler picks the next requests (FIFO, or by dynamic
 *             priority), they form a batch, and the pre-process callback (or
 *             a copy of the submitted input) fills each request's rows of a
 *             batch input buffer;
 *   2. infer: the smallest compiled batch size that holds the batch runs on
 *             the server's thread pool (padding rows are zero);
 *   3. post:  the post-process callback reads each request's rows of the
 *             batch output buffer (or they are copied to the submitted output
 *             buffers), then the request completes.
 * Batch buffers are handed between stages by pointer; input and output
 * buffers are double-buffered by default. A batch of one request on a batch-1
 * program without callbacks runs directly on the caller's buffers.
 *
 * Every admitted request gets exactly one completion: served, dropped for its
 * deadline, failed in a callback, or cancelled by shutdown.
 *
 * Threads: submit, wait, metrics and shutdown may be called from any thread.
 * Callbacks run on the server's threads (pre on pre-stage threads, post on
 * post-stage threads, completions on whichever stage finished the request)
 * and must not call back into the same server except hx_server_metrics*.
 */
#ifndef HARNESS_SERVING_H
#define HARNESS_SERVING_H

#include <stddef.h>
#include <stdint.h>

#include "harness/harness.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Priority classes; lower is more important. */
enum {
  HX_PRIORITY_HIGH = 0,
  HX_PRIORITY_NORMAL = 1,
  HX_PRIORITY_LOW = 2,
  HX_PRIORITY_CLASSES = 3,
};

typedef enum hx_sched_policy {
  HX_SCHED_FIFO = 0,     /* submission order */
  HX_SCHED_PRIORITY = 1, /* dynamic priority: class with ageing, deadline urgency, cost and load */
} hx_sched_policy_t;

typedef enum hx_deadline_policy {
  HX_DEADLINE_KEEP = 0,   /* run every request; deadlines are only measured */
  HX_DEADLINE_DROP = 1,   /* at dispatch, drop requests that can no longer meet their deadline */
  HX_DEADLINE_REJECT = 2, /* DROP, and refuse at submit requests the queue makes hopeless */
} hx_deadline_policy_t;

typedef enum hx_backpressure {
  HX_BACKPRESSURE_BLOCK = 0, /* submit waits for room */
  HX_BACKPRESSURE_BUSY = 1,  /* submit returns HX_STATUS_UNAVAILABLE when full */
} hx_backpressure_t;

/* What pre/post callbacks see of a request. Lent for the callback's duration. */
typedef struct hx_request_info {
  uint64_t id;
  int32_t priority;
  void* user_data;
  const void* const* inputs; /* as submitted (may be NULL) */
  void* const* outputs;      /* as submitted (may be NULL) */
} hx_request_info_t;

/* Pre-process: writes one sample of every model input, model_inputs[i]
 * receiving hx_server_input_bytes(server, i) bytes (the request's rows of the
 * batch buffer). A failure completes the request with that status. */
typedef hx_status_t (*hx_pre_fn)(void* ctx, const hx_request_info_t* req, void* const* model_inputs);
/* Post-process: reads the request's sample of every output (lent). */
typedef hx_status_t (*hx_post_fn)(void* ctx, const hx_request_info_t* req, const void* const* model_outputs);

/* One finished request. */
typedef struct hx_completion {
  uint64_t id;
  void* user_data;
  int32_t priority;
  hx_status_code_t code; /* OK, DEADLINE_EXCEEDED (dropped), CANCELLED (shutdown), or a callback's code */
  int32_t batch_requests;/* requests in the batch that served it (0 if it never ran) */
  int32_t batch_size;    /* compiled batch size that ran it */
  int32_t deadline_met;  /* 1 if it had a deadline and completed OK in time */
  int64_t queue_ns;      /* submit -> dispatch (batch formed) */
  int64_t latency_ns;    /* submit -> completion */
  char message[160];     /* the failure, "" when OK */
} hx_completion_t;

typedef void (*hx_complete_fn)(void* ctx, const hx_completion_t* completion);

typedef struct hx_server_options {
  int32_t threads;       /* inference threads, the pool's caller included (0 = online CPUs) */
  int32_t pin_threads;   /* pin inference threads, NUMA node by node */
  int32_t pre_threads;   /* stage 1 threads (default 1) */
  int32_t post_threads;  /* stage 3 threads (default 1) */
  int32_t queue_capacity;/* requests admitted and not yet completed (default 1024) */
  int32_t backpressure;  /* hx_backpressure_t */
  int32_t policy;        /* hx_sched_policy_t */
  int32_t deadline_policy; /* hx_deadline_policy_t */
  int32_t max_batch;     /* most requests per batch; 0 = largest compiled size */
  int64_t max_delay_us;  /* a queued request may wait this long for a fuller batch (0 = never wait) */
  int32_t buffers;       /* batch buffers per direction (default 2: double buffering) */
  /* Ageing: a class-c request yields to more important ones for at most
   * age_us[c] (defaults 0, 200 ms, 1 s); after that it is served in
   * submission order with them, so no class starves. */
  int64_t age_us[HX_PRIORITY_CLASSES];
  int64_t window_ms;     /* sliding window for load and windowed QPS (default 1000) */
  hx_pre_fn pre;         /* NULL: copy each submitted input */
  hx_post_fn post;       /* NULL: copy into each submitted output */
  hx_complete_fn on_complete; /* NULL: completions are queued for hx_server_wait */
  void* callback_ctx;
} hx_server_options_t;

/* Fills the defaults described above. */
void hx_server_options_init(hx_server_options_t* opts);

typedef struct hx_server hx_server_t;

/* Starts a server for `model` (which must outlive it): the pool, the batch
 * buffers, the request slots and the stage threads are created here, once. */
hx_status_t hx_server_create(const hx_model_t* model, const hx_server_options_t* opts, hx_server_t** out_server);

/* Bytes of one request's sample of input/output i (one batch row). */
size_t hx_server_input_bytes(const hx_server_t* server, size_t index);
size_t hx_server_output_bytes(const hx_server_t* server, size_t index);

typedef struct hx_submit {
  const void* const* inputs; /* one sample per model input; may be NULL with a pre callback */
  void* const* outputs;      /* one sample per model output; may be NULL with a post callback */
  int32_t priority;          /* HX_PRIORITY_* */
  int64_t deadline_us;       /* relative to submission; 0 = none */
  void* user_data;
} hx_submit_t;

/* Queues a request. Buffers must stay valid until its completion. Fails with
 * UNAVAILABLE when full (HX_BACKPRESSURE_BUSY), DEADLINE_EXCEEDED when the
 * REJECT policy predicts a miss, FAILED_PRECONDITION after shutdown began;
 * those requests get no completion. *out_id may be NULL. */
hx_status_t hx_server_submit(hx_server_t* server, const hx_submit_t* request, uint64_t* out_id);

/* Takes the next completion (when no on_complete callback is set): waits up
 * to timeout_us (< 0 = forever, 0 = poll). UNAVAILABLE on timeout,
 * FAILED_PRECONDITION with callbacks configured or when the server is shut
 * down and every completion has been taken. */
hx_status_t hx_server_wait(hx_server_t* server, int64_t timeout_us, hx_completion_t* out_completion);

/* Stops accepting requests and waits until every admitted request has its
 * completion (delivered, or queued for hx_server_wait). With drain, queued
 * requests still run; without, they complete as CANCELLED. Batches already
 * past the scheduler always finish. Idempotent. */
hx_status_t hx_server_shutdown(hx_server_t* server, int drain);

/* Shuts down (cancelling queued requests) if needed, joins the threads and
 * frees everything; completions not taken with hx_server_wait are discarded. */
void hx_server_free(hx_server_t* server);

/* ---- metrics ------------------------------------------------------------- */

#define HX_METRICS_MAX_BATCH 64
#define HX_METRICS_MAX_WORKERS 64

typedef struct hx_latency_stats {
  uint64_t count;
  double mean_ms, p50_ms, p90_ms, p99_ms, p999_ms, max_ms;
} hx_latency_stats_t;

typedef struct hx_worker_stats {
  const char* stage;  /* "pre", "infer", "post" or "pool" */
  int32_t index;      /* within its stage */
  int32_t cpu;        /* pinned CPU, -1 if not pinned */
  double utilisation; /* busy fraction since the last reset */
} hx_worker_stats_t;

/* Everything since creation or the last hx_server_metrics_reset. */
typedef struct hx_server_metrics {
  double elapsed_s;
  uint64_t submitted, completed, failed, cancelled;
  uint64_t rejected_busy;     /* refused: queue full */
  uint64_t rejected_deadline; /* refused at submit by the REJECT policy */
  uint64_t dropped_deadline;  /* dropped at dispatch */
  double qps;                 /* successful completions per second */
  double window_qps;          /* the same over the sliding window */
  double load;                /* inference busy fraction over the sliding window */
  hx_latency_stats_t latency, queue_wait;
  hx_latency_stats_t class_latency[HX_PRIORITY_CLASSES], class_queue_wait[HX_PRIORITY_CLASSES];
  uint64_t deadline_total;    /* requests that had a deadline and were admitted */
  uint64_t deadline_met;
  double deadline_met_ratio;  /* met / total (1 when no request had one) */
  uint64_t batches;
  double mean_batch;          /* requests per batch */
  uint64_t batch_hist[HX_METRICS_MAX_BATCH + 1]; /* [n] = batches of n requests */
  double stage_utilisation[3];/* pre, infer, post: busy / (elapsed * threads) */
  int32_t num_workers;
  hx_worker_stats_t workers[HX_METRICS_MAX_WORKERS];
  /* Contention: time threads spent waiting for the server's lock, submitters
   * blocked on a full queue, and each stage waiting for work or buffers. */
  double lock_wait_s, submit_blocked_s, stage_wait_s[3];
  double est_batch_ms;        /* current cost estimate of a full batch */
} hx_server_metrics_t;

hx_status_t hx_server_metrics(hx_server_t* server, hx_server_metrics_t* out_metrics);
/* The metrics as one JSON object / as Prometheus text exposition format.
 * *out_text is malloc'd; release it with free(). */
hx_status_t hx_server_metrics_json(hx_server_t* server, char** out_text);
hx_status_t hx_server_metrics_prometheus(hx_server_t* server, char** out_text);
/* Starts a new measurement period (e.g. after warm-up). */
void hx_server_metrics_reset(hx_server_t* server);

#ifdef __cplusplus
}
#endif
#endif /* HARNESS_SERVING_H */
