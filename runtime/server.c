/* The serving pipeline (harness/serving.h): admission and backpressure,
 * the three stage threads, batch buffers, completions and shutdown.
 *
 * Concurrency design. One mutex guards the queue, the request slots, the
 * batch descriptors and the buffer free lists; every critical section is a
 * few pointer moves, while the work (pre/post callbacks, copies, inference)
 * runs outside it. Each stage waits on its own condition variable (clock
 * CLOCK_MONOTONIC), so an idle server sleeps and burns no CPU.
 *
 * Everything is allocated at creation: request slots (queue_capacity), batch
 * descriptors (one per buffer), `buffers` input and `buffers` output batch
 * buffers sized for the largest batch, the arena and the bases table. A batch
 * moves FREE -> PRE (pre stage fills its input buffer) -> READY -> RUNNING
 * (inference) -> INFERRED -> POST (post stage reads its output buffer) ->
 * FREE, handed on by state changes under the lock, never copied. Inference
 * takes READY batches in the order they were formed, so the scheduler's order
 * holds even with several pre threads.
 *
 * A request is completed exactly once, by finish_requests: after post, when
 * dropped at dispatch, when its pre/post callback failed (after post), or
 * when cancelled by shutdown. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batcher.h"
#include "clock.h"
#include "cost_model.h"
#include "executor.h"
#include "harness/serving.h"
#include "metrics.h"
#include "model.h"
#include "scheduler.h"
#include "thread_pool.h"

#define HX_CACHE_LINE 64
/* Weight of a new measurement in the pre/post stage cost averages. */
#define HX_STAGE_EWMA 0.2

enum { STAGE_PRE = 0, STAGE_INFER = 1, STAGE_POST = 2 };
enum { REQ_FREE = 0, REQ_QUEUED, REQ_BATCHED, REQ_DONE };
enum { BATCH_FREE = 0, BATCH_PRE, BATCH_READY, BATCH_RUNNING, BATCH_INFERRED, BATCH_POST };

typedef struct hx_req {
  uint64_t id;
  int32_t priority;
  int state;
  void* user_data;
  int64_t submit_ns, deadline_ns, dispatch_ns;
  const void** inputs; /* num_inputs pointers, as submitted */
  void** outputs;      /* num_outputs */
  int has_inputs, has_outputs;
  hx_status_code_t fail_code; /* a pre/post callback failed */
  hx_completion_t done;
  struct hx_req* next; /* free list, or the completion queue */
} hx_req;

typedef struct hx_batch {
  int state;
  uint64_t seq;
  int n;
  hx_req** reqs;     /* max_requests entries */
  int prog;          /* index into the batcher's sizes */
  int in_buf, out_buf; /* -1 = none */
  int zero_copy_in, zero_copy_out;
} hx_batch;

typedef struct hx_worker {
  _Alignas(HX_CACHE_LINE) atomic_int_fast64_t busy_ns;
  atomic_int_fast64_t wait_ns;
  int64_t busy_base, wait_base; /* at the last metrics reset (under the lock) */
  struct hx_server* server;
  struct hx_req** dropped; /* pre workers: requests dropped at dispatch (queue_capacity) */
  void** rows;             /* one request's row pointers, one per input/output */
  pthread_t thread;
  int stage, index, started;
} hx_worker;

struct hx_server {
  const hx_model_t* model;
  hx_server_options_t opts;
  hx_batcher batcher;
  hx_sched sched;
  hx_cost_model cost;
  hx_metrics metrics;
  double est_pre_ns, est_post_ns; /* measured per batch */

  hx_pool_t* pool;
  hx_exec_scratch* scratch;
  void* arena;
  void** bases;

  int nbuf;
  void** in_mem;  /* nbuf * num_inputs buffers */
  void** out_mem; /* nbuf * num_outputs */
  int* in_free;   /* stack of free input buffer indices */
  int* out_free;
  int n_in_free, n_out_free;
  hx_batch* batches;
  int num_batches;
  uint64_t next_batch_seq, next_infer_seq;
  int in_flight; /* batches in PRE, READY or RUNNING */

  hx_req* reqs;
  hx_req* free_list;
  hx_req *done_head, *done_tail;
  int outstanding; /* admitted and not yet completed */
  uint64_t next_id;
  hx_sched_entry* take_buf;
  hx_sched_entry* drop_buf;

  int stopping, exiting, joined;
  pthread_mutex_t mu;
  pthread_cond_t cv_space, cv_pre, cv_infer, cv_post, cv_done;
  hx_worker* workers; /* pre..., infer, post... */
  int num_workers;
  uint64_t* pool_busy_base;
  atomic_int_fast64_t lock_wait_ns, submit_block_ns;
  int64_t lock_wait_base, submit_block_base;
};

/* ---- small helpers --------------------------------------------------------- */

/* Locks, counting the time spent waiting when the lock was contended. */
static void lock(hx_server_t* s) {
  if (pthread_mutex_trylock(&s->mu) == 0) return;
  int64_t t0 = hx_now_ns();
  pthread_mutex_lock(&s->mu);
  atomic_fetch_add_explicit(&s->lock_wait_ns, hx_now_ns() - t0, memory_order_relaxed);
}

static void unlock(hx_server_t* s) { pthread_mutex_unlock(&s->mu); }

/* Waits on cv (until abs_ns if > 0), adding the time to *acc. */
static void wait_on(hx_server_t* s, pthread_cond_t* cv, int64_t abs_ns, atomic_int_fast64_t* acc) {
  int64_t t0 = hx_now_ns();
  if (abs_ns > 0) {
    struct timespec ts = hx_timespec_at(abs_ns);
    pthread_cond_timedwait(cv, &s->mu, &ts);
  } else {
    pthread_cond_wait(cv, &s->mu);
  }
  if (acc) atomic_fetch_add_explicit(acc, hx_now_ns() - t0, memory_order_relaxed);
}

static void** in_bufs(hx_server_t* s, int b) { return &s->in_mem[(size_t)b * (size_t)s->batcher.num_inputs]; }
static void** out_bufs(hx_server_t* s, int b) { return &s->out_mem[(size_t)b * (size_t)s->batcher.num_outputs]; }

static void ewma(double* avg, double x) { *avg = *avg == 0 ? x : *avg + HX_STAGE_EWMA * (x - *avg); }

/* Estimated inference time of the batch size that would run n requests. */
static double est_infer_ns(const hx_server_t* s, int n) {
  return hx_cost_model_estimate_ns(&s->cost, hx_batcher_choose(&s->batcher, n));
}

/* What a batch needs once formed: its stages, inflated by the load (under
 * load it also waits for the batch in flight). The scheduler's margin. */
static int64_t margin_ns(const hx_server_t* s, int64_t now) {
  double one = s->est_pre_ns + est_infer_ns(s, s->batcher.max_requests) + s->est_post_ns;
  return (int64_t)(one * (1.0 + hx_metrics_window_load(&s->metrics, now)));
}

/* Predicted time from now until a batch of n requests formed now completes:
 * the batches already formed go first. */
static int64_t finish_ns(const hx_server_t* s, int n) {
  double full = est_infer_ns(s, s->batcher.max_requests);
  return (int64_t)(s->in_flight * full + s->est_pre_ns + est_infer_ns(s, n) + s->est_post_ns);
}

static hx_request_info_t request_info(const hx_req* r) {
  hx_request_info_t info = {r->id, r->priority, r->user_data, r->has_inputs ? r->inputs : NULL,
                            r->has_outputs ? (void* const*)r->outputs : NULL};
  return info;
}

/* ---- completion ------------------------------------------------------------ */

/* Completes n requests: fills their completions, runs the callback (outside
 * the lock), then under the lock records metrics and frees or queues the
 * slots. `batch` may be NULL (dropped/cancelled requests), and so may
 * `release`, a batch whose resources are returned in the same section. */
static void finish_requests(hx_server_t* s, hx_req** reqs, int n, hx_status_code_t code, const char* why,
                            const hx_batch* batch, hx_batch* release) {
  int64_t now = hx_now_ns();
  for (int i = 0; i < n; ++i) {
    hx_req* r = reqs[i];
    hx_completion_t* c = &r->done;
    hx_status_code_t rc = r->fail_code != HX_STATUS_OK ? r->fail_code : code;
    c->id = r->id;
    c->user_data = r->user_data;
    c->priority = r->priority;
    c->code = rc;
    c->batch_requests = batch ? batch->n : 0;
    c->batch_size = batch ? (int32_t)s->batcher.sizes[batch->prog] : 0;
    c->queue_ns = r->dispatch_ns ? r->dispatch_ns - r->submit_ns : -1;
    c->latency_ns = now - r->submit_ns;
    c->deadline_met = r->deadline_ns > 0 && rc == HX_STATUS_OK && now <= r->deadline_ns;
    if (r->fail_code == HX_STATUS_OK) snprintf(c->message, sizeof c->message, "%s", why ? why : "");
  }
  if (s->opts.on_complete)
    for (int i = 0; i < n; ++i) s->opts.on_complete(s->opts.callback_ctx, &reqs[i]->done);
  lock(s);
  for (int i = 0; i < n; ++i) {
    hx_req* r = reqs[i];
    hx_metrics_record_completion(&s->metrics, r->priority, r->done.code, r->done.queue_ns, r->done.latency_ns,
                                 r->deadline_ns > 0, r->done.deadline_met, now);
    r->next = NULL;
    if (s->opts.on_complete) {
      r->state = REQ_FREE;
      r->next = s->free_list;
      s->free_list = r;
    } else {
      r->state = REQ_DONE;
      if (s->done_tail) s->done_tail->next = r;
      else s->done_head = r;
      s->done_tail = r;
    }
  }
  s->outstanding -= n;
  if (release) {
    if (release->out_buf >= 0) s->out_free[s->n_out_free++] = release->out_buf;
    if (release->in_buf >= 0) s->in_free[s->n_in_free++] = release->in_buf;
    release->in_buf = release->out_buf = -1;
    release->state = BATCH_FREE;
    pthread_cond_signal(&s->cv_infer); /* an output buffer is free */
    pthread_cond_broadcast(&s->cv_pre); /* a descriptor is free */
  }
  if (s->opts.on_complete) pthread_cond_broadcast(&s->cv_space);
  pthread_cond_broadcast(&s->cv_done);
  unlock(s);
}

/* ---- stage 1: scheduling, batch formation, pre-processing ----------------- */

static hx_batch* free_batch(hx_server_t* s) {
  for (int i = 0; i < s->num_batches; ++i)
    if (s->batches[i].state == BATCH_FREE) return &s->batches[i];
  return NULL;
}

/* Fills each request's rows of the batch's input buffer: the pre callback
 * writes them, or the submitted samples are copied; padding rows are zeroed.
 * `row` is the calling worker's scratch array. */
static void run_pre(hx_server_t* s, hx_batch* b, void** row) {
  if (b->zero_copy_in) return;
  void** bufs = in_bufs(s, b->in_buf);
  for (int r = 0; r < b->n; ++r) {
    hx_req* q = b->reqs[r];
    if (!s->opts.pre) {
      hx_batcher_gather(&s->batcher, bufs, r, q->inputs);
      continue;
    }
    hx_batcher_rows(&s->batcher, 0, bufs, r, row);
    hx_request_info_t info = request_info(q);
    hx_status_t st = s->opts.pre(s->opts.callback_ctx, &info, row);
    if (st != HX_OK) {
      q->fail_code = hx_status_code(st);
      snprintf(q->done.message, sizeof q->done.message, "pre-process: %s", hx_status_message(st));
      hx_status_free(st);
    }
  }
  hx_batcher_pad(&s->batcher, bufs, b->n, (int)s->batcher.sizes[b->prog]);
}

static void* pre_main(void* arg) {
  hx_worker* w = arg;
  hx_server_t* s = w->server;
  const int max_req = s->batcher.max_requests;
  hx_req** dropped = w->dropped;
  lock(s);
  for (;;) {
    if (s->exiting) break;
    int queued = hx_sched_size(&s->sched);
    hx_batch* b = queued && s->n_in_free ? free_batch(s) : NULL;
    if (!b) {
      wait_on(s, &s->cv_pre, 0, &w->wait_ns);
      continue;
    }
    int64_t now = hx_now_ns();
    /* Dynamic batching window: wait for a fuller batch, but never keep the
     * request at the head of the queue more than max_delay_us. */
    if (s->opts.max_delay_us > 0 && queued < max_req && !s->stopping) {
      int64_t until = hx_sched_peek(&s->sched)->submit_ns + s->opts.max_delay_us * 1000;
      if (now < until) {
        wait_on(s, &s->cv_pre, until, &w->wait_ns);
        continue;
      }
    }
    int nd = 0;
    int taken = hx_sched_take(&s->sched, now, finish_ns(s, queued < max_req ? queued : max_req), max_req, s->take_buf,
                              s->drop_buf, s->opts.queue_capacity, &nd);
    for (int i = 0; i < nd; ++i) {
      dropped[i] = s->drop_buf[i].item;
      dropped[i]->state = REQ_BATCHED;
    }
    if (taken > 0) {
      b->state = BATCH_PRE;
      b->seq = s->next_batch_seq++;
      b->n = taken;
      b->prog = hx_batcher_choose(&s->batcher, taken);
      b->in_buf = s->in_free[--s->n_in_free];
      b->out_buf = -1;
      int single = taken == 1 && s->batcher.sizes[b->prog] == 1;
      for (int i = 0; i < taken; ++i) {
        hx_req* q = s->take_buf[i].item;
        q->state = REQ_BATCHED;
        q->dispatch_ns = now;
        b->reqs[i] = q;
      }
      /* A lone request on a batch-1 program runs on the caller's buffers. */
      b->zero_copy_in = single && !s->opts.pre;
      b->zero_copy_out = single && !s->opts.post && b->reqs[0]->has_outputs;
      if (b->zero_copy_out)
        for (int i = 0; i < s->batcher.num_outputs; ++i)
          if (!b->reqs[0]->outputs[i]) b->zero_copy_out = 0;
      s->in_flight++;
    }
    unlock(s);
    if (nd) finish_requests(s, dropped, nd, HX_STATUS_DEADLINE_EXCEEDED, "dropped: its deadline could not be met", NULL, NULL);
    if (taken > 0) {
      int64_t t0 = hx_now_ns();
      run_pre(s, b, w->rows);
      int64_t t1 = hx_now_ns();
      atomic_fetch_add_explicit(&w->busy_ns, t1 - t0, memory_order_relaxed);
      lock(s);
      ewma(&s->est_pre_ns, (double)(t1 - t0));
      b->state = BATCH_READY;
      pthread_cond_signal(&s->cv_infer);
    } else {
      lock(s);
    }
  }
  unlock(s);
  return NULL;
}

/* ---- stage 2: inference ------------------------------------------------------ */

static hx_batch* next_ready(hx_server_t* s) {
  for (int i = 0; i < s->num_batches; ++i)
    if (s->batches[i].state == BATCH_READY && s->batches[i].seq == s->next_infer_seq) return &s->batches[i];
  return NULL;
}

static void* infer_main(void* arg) {
  hx_worker* w = arg;
  hx_server_t* s = w->server;
  const hx_model_t* m = s->model;
  const int nin = s->batcher.num_inputs, nout = s->batcher.num_outputs;
  hx_pool_pin_caller(s->pool);
  lock(s);
  for (;;) {
    hx_batch* b = next_ready(s);
    if (!b || (!b->zero_copy_out && s->n_out_free == 0)) {
      if (s->exiting) break;
      wait_on(s, &s->cv_infer, 0, &w->wait_ns);
      continue;
    }
    b->state = BATCH_RUNNING;
    s->next_infer_seq++;
    if (!b->zero_copy_out) b->out_buf = s->out_free[--s->n_out_free];
    unlock(s);

    const hx_program* p = &m->programs[s->batcher.program_index[b->prog]];
    for (int i = 0; i < nin; ++i)
      s->bases[HX_BASE_FIRST_IO + i] = b->zero_copy_in ? (void*)b->reqs[0]->inputs[i] : in_bufs(s, b->in_buf)[i];
    for (int i = 0; i < nout; ++i)
      s->bases[HX_BASE_FIRST_IO + nin + i] = b->zero_copy_out ? b->reqs[0]->outputs[i] : out_bufs(s, b->out_buf)[i];
    int64_t t0 = hx_now_ns();
    hx_exec_run(&p->plan, s->pool, s->scratch, s->bases);
    int64_t t1 = hx_now_ns();
    atomic_fetch_add_explicit(&w->busy_ns, t1 - t0, memory_order_relaxed);

    lock(s);
    hx_cost_model_observe(&s->cost, b->prog, t1 - t0);
    hx_metrics_record_batch(&s->metrics, b->n, t1 - t0, t1);
    s->in_free[s->n_in_free++] = b->in_buf;
    b->in_buf = -1;
    s->in_flight--;
    b->state = BATCH_INFERRED;
    pthread_cond_broadcast(&s->cv_pre);
    pthread_cond_signal(&s->cv_post);
  }
  unlock(s);
  return NULL;
}

/* ---- stage 3: post-processing and completion -------------------------------- */

static hx_batch* next_inferred(hx_server_t* s) {
  hx_batch* best = NULL;
  for (int i = 0; i < s->num_batches; ++i)
    if (s->batches[i].state == BATCH_INFERRED && (!best || s->batches[i].seq < best->seq)) best = &s->batches[i];
  return best;
}

/* Hands each request its rows of the batch's output buffer: the post
 * callback reads them in place, or they are copied to the submitted output
 * buffers. `row` is the calling worker's scratch array. */
static void run_post(hx_server_t* s, hx_batch* b, void** row) {
  if (b->zero_copy_out) return;
  void** bufs = out_bufs(s, b->out_buf);
  for (int r = 0; r < b->n; ++r) {
    hx_req* q = b->reqs[r];
    if (q->fail_code != HX_STATUS_OK) continue;
    if (!s->opts.post) {
      if (q->has_outputs) hx_batcher_split(&s->batcher, bufs, r, q->outputs);
      continue;
    }
    hx_batcher_rows(&s->batcher, 1, bufs, r, row);
    hx_request_info_t info = request_info(q);
    hx_status_t st = s->opts.post(s->opts.callback_ctx, &info, (const void* const*)row);
    if (st != HX_OK) {
      q->fail_code = hx_status_code(st);
      snprintf(q->done.message, sizeof q->done.message, "post-process: %s", hx_status_message(st));
      hx_status_free(st);
    }
  }
}

static void* post_main(void* arg) {
  hx_worker* w = arg;
  hx_server_t* s = w->server;
  lock(s);
  for (;;) {
    hx_batch* b = next_inferred(s);
    if (!b) {
      if (s->exiting) break;
      wait_on(s, &s->cv_post, 0, &w->wait_ns);
      continue;
    }
    b->state = BATCH_POST;
    unlock(s);
    int64_t t0 = hx_now_ns();
    run_post(s, b, w->rows);
    int64_t t1 = hx_now_ns();
    atomic_fetch_add_explicit(&w->busy_ns, t1 - t0, memory_order_relaxed);
    lock(s);
    ewma(&s->est_post_ns, (double)(t1 - t0));
    unlock(s);
    finish_requests(s, b->reqs, b->n, HX_STATUS_OK, "", b, b);
    lock(s);
  }
  unlock(s);
  return NULL;
}

/* ---- creation and teardown ---------------------------------------------------- */

void hx_server_options_init(hx_server_options_t* o) {
  memset(o, 0, sizeof(*o));
  o->pre_threads = 1;
  o->post_threads = 1;
  o->queue_capacity = 1024;
  o->backpressure = HX_BACKPRESSURE_BLOCK;
  o->policy = HX_SCHED_FIFO;
  o->deadline_policy = HX_DEADLINE_KEEP;
  o->buffers = 2;
  o->age_us[HX_PRIORITY_HIGH] = 0;
  o->age_us[HX_PRIORITY_NORMAL] = 200000;
  o->age_us[HX_PRIORITY_LOW] = 1000000;
  o->window_ms = 1000;
}

static hx_status_t check_options(const hx_server_options_t* o) {
  if (o->threads < 0) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "threads must be >= 0, got %d", o->threads);
  if (o->pre_threads < 1 || o->post_threads < 1 || o->pre_threads > 16 || o->post_threads > 16)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "pre_threads and post_threads must be 1..16, got %d and %d",
                          o->pre_threads, o->post_threads);
  if (o->queue_capacity < 1)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "queue_capacity must be >= 1, got %d", o->queue_capacity);
  if (o->backpressure != HX_BACKPRESSURE_BLOCK && o->backpressure != HX_BACKPRESSURE_BUSY)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "unknown backpressure mode %d", o->backpressure);
  if (o->max_batch < 0 || o->max_batch > HX_METRICS_MAX_BATCH)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "max_batch must be 0..%d, got %d", HX_METRICS_MAX_BATCH, o->max_batch);
  if (o->max_delay_us < 0) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "max_delay_us must be >= 0");
  if (o->buffers < 1 || o->buffers > 16)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "buffers must be 1..16, got %d", o->buffers);
  if (o->window_ms < 1) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "window_ms must be >= 1");
  return HX_OK;
}

static void* zalloc_aligned(size_t bytes) {
  bytes = (bytes + HX_CACHE_LINE - 1) / HX_CACHE_LINE * HX_CACHE_LINE;
  void* p = aligned_alloc(HX_CACHE_LINE, bytes ? bytes : HX_CACHE_LINE);
  if (p) memset(p, 0, bytes ? bytes : HX_CACHE_LINE);
  return p;
}

static hx_status_t oom(void) { return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory creating the server"); }

/* Allocates everything except threads; the caller frees on failure. */
static hx_status_t allocate(hx_server_t* s) {
  const hx_model_t* m = s->model;
  const hx_server_options_t* o = &s->opts;
  const int nin = s->batcher.num_inputs, nout = s->batcher.num_outputs;
  const int cap = o->queue_capacity;

  int threads = o->threads;
  if (threads == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    threads = n > 0 ? (int)n : 1;
  }
  HX_RETURN_IF_ERROR(hx_pool_create(threads, o->pin_threads ? HX_POOL_PIN_WORKERS : HX_POOL_PIN_NONE, &s->pool));
  hx_pool_set_accounting(s->pool, 1);
  HX_RETURN_IF_ERROR(hx_exec_scratch_create(m->max_lanes, &s->scratch));
  if (m->max_arena_bytes && !(s->arena = zalloc_aligned((size_t)m->max_arena_bytes))) return oom();
  if (!(s->bases = calloc(m->header->num_bases, sizeof(void*)))) return oom();
  s->bases[HX_BASE_ARENA] = s->arena;
  s->bases[HX_BASE_WEIGHTS] = (void*)m->weights;

  /* Batch buffers: `buffers` per direction, each row-major for max_rows. */
  s->nbuf = o->buffers;
  s->in_mem = calloc((size_t)s->nbuf * (size_t)(nin ? nin : 1), sizeof(void*));
  s->out_mem = calloc((size_t)s->nbuf * (size_t)(nout ? nout : 1), sizeof(void*));
  s->in_free = calloc((size_t)s->nbuf, sizeof(int));
  s->out_free = calloc((size_t)s->nbuf, sizeof(int));
  if (!s->in_mem || !s->out_mem || !s->in_free || !s->out_free) return oom();
  for (int b = 0; b < s->nbuf; ++b) {
    for (int i = 0; i < nin; ++i)
      if (!(in_bufs(s, b)[i] = zalloc_aligned(s->batcher.in_row[i] * (size_t)s->batcher.max_rows))) return oom();
    for (int i = 0; i < nout; ++i)
      if (!(out_bufs(s, b)[i] = zalloc_aligned(s->batcher.out_row[i] * (size_t)s->batcher.max_rows))) return oom();
    s->in_free[s->n_in_free++] = b;
    s->out_free[s->n_out_free++] = b;
  }
  s->num_batches = 2 * s->nbuf;
  if (!(s->batches = calloc((size_t)s->num_batches, sizeof(hx_batch)))) return oom();
  for (int i = 0; i < s->num_batches; ++i) {
    s->batches[i].in_buf = s->batches[i].out_buf = -1;
    if (!(s->batches[i].reqs = calloc((size_t)s->batcher.max_requests, sizeof(hx_req*)))) return oom();
  }

  /* Request slots with their pointer arrays, all on the free list. */
  if (!(s->reqs = calloc((size_t)cap, sizeof(hx_req)))) return oom();
  for (int i = cap - 1; i >= 0; --i) {
    hx_req* r = &s->reqs[i];
    r->inputs = calloc((size_t)nin + 1, sizeof(void*));
    r->outputs = calloc((size_t)nout + 1, sizeof(void*));
    if (!r->inputs || !r->outputs) return oom();
    r->next = s->free_list;
    s->free_list = r;
  }
  s->take_buf = calloc((size_t)s->batcher.max_requests, sizeof(hx_sched_entry));
  s->drop_buf = calloc((size_t)cap, sizeof(hx_sched_entry));
  if (!s->take_buf || !s->drop_buf) return oom();

  hx_sched_config sc = {.policy = o->policy, .deadline_policy = o->deadline_policy};
  for (int c = 0; c < HX_PRIORITY_CLASSES; ++c) sc.age_ns[c] = o->age_us[c] * 1000;
  HX_RETURN_IF_ERROR(hx_sched_init(&s->sched, &sc, cap));

  hx_cost_model_init(&s->cost);
  for (int i = 0; i < s->batcher.num_programs; ++i) {
    const hx_program* p = &m->programs[s->batcher.program_index[i]];
    hx_cost_model_add(&s->cost, s->batcher.sizes[i], hx_cost_prior_ns(p->variant->kernels, p->variant->num_kernels, threads));
  }
  hx_metrics_init(&s->metrics, o->window_ms * 1000000, hx_now_ns());

  s->num_workers = o->pre_threads + 1 + o->post_threads;
  s->workers = aligned_alloc(HX_CACHE_LINE, sizeof(hx_worker) * (size_t)s->num_workers);
  s->pool_busy_base = calloc((size_t)threads, sizeof(uint64_t));
  if (!s->workers || !s->pool_busy_base) return oom();
  memset(s->workers, 0, sizeof(hx_worker) * (size_t)s->num_workers);
  for (int i = 0; i < s->num_workers; ++i) {
    hx_worker* w = &s->workers[i];
    atomic_init(&w->busy_ns, 0);
    atomic_init(&w->wait_ns, 0);
    w->server = s;
    w->stage = i < o->pre_threads ? STAGE_PRE : i == o->pre_threads ? STAGE_INFER : STAGE_POST;
    w->index = w->stage == STAGE_PRE ? i : w->stage == STAGE_INFER ? 0 : i - o->pre_threads - 1;
    if (w->stage == STAGE_PRE && !(w->dropped = calloc((size_t)cap, sizeof(hx_req*)))) return oom();
    if (!(w->rows = calloc((size_t)(nin > nout ? nin : nout) + 1, sizeof(void*)))) return oom();
  }
  return HX_OK;
}

static void join_workers(hx_server_t* s) {
  if (s->joined) return;
  for (int i = 0; s->workers && i < s->num_workers; ++i)
    if (s->workers[i].started) pthread_join(s->workers[i].thread, NULL);
  s->joined = 1;
}

static void release(hx_server_t* s) {
  hx_pool_free(s->pool);
  hx_exec_scratch_free(s->scratch);
  free(s->arena);
  free(s->bases);
  for (int i = 0; s->in_mem && i < s->nbuf * s->batcher.num_inputs; ++i) free(s->in_mem[i]);
  for (int i = 0; s->out_mem && i < s->nbuf * s->batcher.num_outputs; ++i) free(s->out_mem[i]);
  free(s->in_mem);
  free(s->out_mem);
  free(s->in_free);
  free(s->out_free);
  for (int i = 0; s->batches && i < s->num_batches; ++i) free(s->batches[i].reqs);
  free(s->batches);
  for (int i = 0; s->reqs && i < s->opts.queue_capacity; ++i) {
    free(s->reqs[i].inputs);
    free(s->reqs[i].outputs);
  }
  free(s->reqs);
  free(s->take_buf);
  free(s->drop_buf);
  for (int i = 0; s->workers && i < s->num_workers; ++i) {
    free(s->workers[i].dropped);
    free(s->workers[i].rows);
  }
  free(s->workers);
  free(s->pool_busy_base);
  hx_sched_release(&s->sched);
  hx_batcher_release(&s->batcher);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv_space);
  pthread_cond_destroy(&s->cv_pre);
  pthread_cond_destroy(&s->cv_infer);
  pthread_cond_destroy(&s->cv_post);
  pthread_cond_destroy(&s->cv_done);
  free(s);
}

hx_status_t hx_server_create(const hx_model_t* model, const hx_server_options_t* opts, hx_server_t** out_server) {
  if (!out_server) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "out_server is NULL");
  *out_server = NULL;
  if (!model) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "model is NULL");
  hx_server_options_t defaults;
  hx_server_options_init(&defaults);
  if (!opts) opts = &defaults;
  HX_RETURN_IF_ERROR(check_options(opts));
  /* Requests see only their output buffers, not the shape of a run: refuse
   * value-dependent output shapes rather than hand out upper bounds. */
  for (size_t i = 0; i < hx_model_output_count(model); ++i)
    if (hx_model_output_is_dynamic(model, i)) {
      hx_tensor_info_t info;
      hx_model_output_info(model, i, &info);
      return hx_status_make(HX_STATUS_UNSUPPORTED,
                            "output %zu ('%s') has a value-dependent shape; the serving layer does not report "
                            "per-request shapes yet: run such models with a session (hx_session_output_shape)",
                            i, info.name);
    }

  hx_server_t* s = calloc(1, sizeof(*s));
  if (!s) return oom();
  s->model = model;
  s->opts = *opts;
  atomic_init(&s->lock_wait_ns, 0);
  atomic_init(&s->submit_block_ns, 0);
  pthread_mutex_init(&s->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cv_space, &ca);
  pthread_cond_init(&s->cv_pre, &ca);
  pthread_cond_init(&s->cv_infer, &ca);
  pthread_cond_init(&s->cv_post, &ca);
  pthread_cond_init(&s->cv_done, &ca);
  pthread_condattr_destroy(&ca);

  hx_status_t st = hx_batcher_init(&s->batcher, model, opts->max_batch);
  if (st == HX_OK) st = allocate(s);
  for (int i = 0; st == HX_OK && i < s->num_workers; ++i) {
    hx_worker* w = &s->workers[i];
    void* (*fn)(void*) = w->stage == STAGE_PRE ? pre_main : w->stage == STAGE_INFER ? infer_main : post_main;
    int rc = pthread_create(&w->thread, NULL, fn, w);
    if (rc != 0) st = hx_status_make(HX_STATUS_UNAVAILABLE, "cannot start a server thread: %s", strerror(rc));
    else w->started = 1;
  }
  if (st != HX_OK) {
    lock(s);
    s->stopping = s->exiting = 1;
    pthread_cond_broadcast(&s->cv_pre);
    pthread_cond_broadcast(&s->cv_infer);
    pthread_cond_broadcast(&s->cv_post);
    unlock(s);
    join_workers(s);
    release(s);
    return st;
  }
  *out_server = s;
  return HX_OK;
}

size_t hx_server_input_bytes(const hx_server_t* s, size_t i) {
  return i < (size_t)s->batcher.num_inputs ? s->batcher.in_row[i] : 0;
}

size_t hx_server_output_bytes(const hx_server_t* s, size_t i) {
  return i < (size_t)s->batcher.num_outputs ? s->batcher.out_row[i] : 0;
}

/* ---- the public request API ---------------------------------------------------- */

hx_status_t hx_server_submit(hx_server_t* s, const hx_submit_t* q, uint64_t* out_id) {
  if (!s || !q) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "server or request is NULL");
  if (!q->inputs && !s->opts.pre)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "request has no inputs and the server has no pre-process callback");
  if (q->priority < 0 || q->priority >= HX_PRIORITY_CLASSES)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "priority must be 0..%d, got %d", HX_PRIORITY_CLASSES - 1,
                          q->priority);
  if (q->deadline_us < 0) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "deadline_us must be >= 0");
  for (int i = 0; q->inputs && i < s->batcher.num_inputs; ++i)
    if (!q->inputs[i] && s->batcher.in_row[i])
      return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "input %d of the request is NULL", i);
  int64_t now = hx_now_ns();
  lock(s);
  while (!s->free_list && !s->stopping) {
    if (s->opts.backpressure == HX_BACKPRESSURE_BUSY) {
      s->metrics.rejected_busy++;
      unlock(s);
      return hx_status_make(HX_STATUS_UNAVAILABLE, "the server's queue is full (%d requests)", s->opts.queue_capacity);
    }
    wait_on(s, &s->cv_space, 0, &s->submit_block_ns);
  }
  if (s->stopping) {
    unlock(s);
    return hx_status_make(HX_STATUS_FAILED_PRECONDITION, "the server is shutting down");
  }
  now = hx_now_ns();
  int64_t deadline = q->deadline_us > 0 ? now + q->deadline_us * 1000 : 0;
  if (deadline && s->opts.deadline_policy == HX_DEADLINE_REJECT) {
    /* Queued batches ahead, then the one this request would join. */
    int queued = hx_sched_size(&s->sched);
    int batches_ahead = queued / s->batcher.max_requests;
    int64_t predicted = now + finish_ns(s, queued % s->batcher.max_requests + 1) +
                        (int64_t)(batches_ahead * est_infer_ns(s, s->batcher.max_requests));
    if (predicted > deadline) {
      s->metrics.rejected_deadline++;
      unlock(s);
      return hx_status_make(HX_STATUS_DEADLINE_EXCEEDED,
                            "rejected: the queue ahead needs about %.3f ms, the deadline is %.3f ms away",
                            (double)(predicted - now) / 1e6, (double)q->deadline_us / 1e3);
    }
  }
  hx_req* r = s->free_list;
  s->free_list = r->next;
  r->next = NULL;
  r->id = ++s->next_id;
  r->priority = q->priority;
  r->user_data = q->user_data;
  r->submit_ns = now;
  r->deadline_ns = deadline;
  r->dispatch_ns = 0;
  r->fail_code = HX_STATUS_OK;
  r->done.message[0] = '\0';
  r->has_inputs = q->inputs != NULL;
  r->has_outputs = q->outputs != NULL;
  for (int i = 0; i < s->batcher.num_inputs; ++i) r->inputs[i] = q->inputs ? q->inputs[i] : NULL;
  for (int i = 0; i < s->batcher.num_outputs; ++i) r->outputs[i] = q->outputs ? q->outputs[i] : NULL;
  r->state = REQ_QUEUED;
  hx_sched_push(&s->sched, r->priority, now, deadline, margin_ns(s, now), r); /* capacity = slots: cannot fail */
  s->outstanding++;
  s->metrics.submitted++;
  if (out_id) *out_id = r->id;
  pthread_cond_signal(&s->cv_pre);
  unlock(s);
  return HX_OK;
}

hx_status_t hx_server_wait(hx_server_t* s, int64_t timeout_us, hx_completion_t* out) {
  if (!s || !out) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "server or completion is NULL");
  if (s->opts.on_complete)
    return hx_status_make(HX_STATUS_FAILED_PRECONDITION, "completions go to the on_complete callback; nothing to wait for");
  int64_t until = timeout_us > 0 ? hx_now_ns() + timeout_us * 1000 : 0;
  lock(s);
  while (!s->done_head) {
    if (s->stopping && s->outstanding == 0) {
      unlock(s);
      return hx_status_make(HX_STATUS_FAILED_PRECONDITION, "the server is shut down and every completion was taken");
    }
    if (timeout_us == 0 || (until && hx_now_ns() >= until)) {
      unlock(s);
      return hx_status_make(HX_STATUS_UNAVAILABLE, "no completion within %lld us", (long long)timeout_us);
    }
    wait_on(s, &s->cv_done, until, NULL);
  }
  hx_req* r = s->done_head;
  s->done_head = r->next;
  if (!s->done_head) s->done_tail = NULL;
  *out = r->done;
  r->state = REQ_FREE;
  r->next = s->free_list;
  s->free_list = r;
  pthread_cond_signal(&s->cv_space);
  unlock(s);
  return HX_OK;
}

hx_status_t hx_server_shutdown(hx_server_t* s, int drain) {
  if (!s) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "server is NULL");
  hx_req** cancelled = malloc(sizeof(hx_req*) * (size_t)s->opts.queue_capacity);
  if (!cancelled) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory shutting down");
  int nc = 0;
  lock(s);
  s->stopping = 1;
  pthread_cond_broadcast(&s->cv_space);
  pthread_cond_broadcast(&s->cv_pre);
  if (!drain) {
    hx_sched_entry e;
    while (hx_sched_pop(&s->sched, &e)) {
      hx_req* r = e.item;
      r->state = REQ_BATCHED;
      cancelled[nc++] = r;
    }
  }
  unlock(s);
  if (nc) finish_requests(s, cancelled, nc, HX_STATUS_CANCELLED, "cancelled: the server shut down", NULL, NULL);
  free(cancelled);
  lock(s);
  while (s->outstanding > 0) wait_on(s, &s->cv_done, 0, NULL);
  s->exiting = 1;
  pthread_cond_broadcast(&s->cv_pre);
  pthread_cond_broadcast(&s->cv_infer);
  pthread_cond_broadcast(&s->cv_post);
  pthread_cond_broadcast(&s->cv_done);
  unlock(s);
  join_workers(s);
  return HX_OK;
}

void hx_server_free(hx_server_t* s) {
  if (!s) return;
  hx_status_free(hx_server_shutdown(s, 0));
  join_workers(s);
  release(s);
}

/* ---- metrics -------------------------------------------------------------------- */

static const char* const k_stage_names[3] = {"pre", "infer", "post"};

hx_status_t hx_server_metrics(hx_server_t* s, hx_server_metrics_t* out) {
  if (!s || !out) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "server or metrics is NULL");
  memset(out, 0, sizeof(*out));
  int threads = hx_pool_thread_count(s->pool);
  uint64_t pool_busy[HX_METRICS_MAX_WORKERS];
  hx_pool_busy_ns(s->pool, pool_busy, HX_METRICS_MAX_WORKERS);
  lock(s);
  int64_t now = hx_now_ns();
  hx_metrics_snapshot(&s->metrics, now, out);
  out->est_batch_ms = est_infer_ns(s, s->batcher.max_requests) / 1e6;
  double elapsed_ns = (double)(now - s->metrics.epoch_ns);
  double stage_busy[3] = {0}, stage_wait[3] = {0};
  int stage_threads[3] = {0};
  for (int i = 0; i < s->num_workers; ++i) {
    hx_worker* w = &s->workers[i];
    double busy = (double)(atomic_load_explicit(&w->busy_ns, memory_order_relaxed) - w->busy_base);
    double wait = (double)(atomic_load_explicit(&w->wait_ns, memory_order_relaxed) - w->wait_base);
    stage_busy[w->stage] += busy;
    stage_wait[w->stage] += wait;
    stage_threads[w->stage]++;
    if (out->num_workers < HX_METRICS_MAX_WORKERS)
      out->workers[out->num_workers++] =
          (hx_worker_stats_t){k_stage_names[w->stage], w->index, -1, elapsed_ns > 0 ? busy / elapsed_ns : 0};
  }
  for (int i = 0; i < threads && i < HX_METRICS_MAX_WORKERS && out->num_workers < HX_METRICS_MAX_WORKERS; ++i)
    out->workers[out->num_workers++] = (hx_worker_stats_t){
        "pool", i, hx_pool_thread_cpu(s->pool, i),
        elapsed_ns > 0 ? (double)(pool_busy[i] - s->pool_busy_base[i]) / elapsed_ns : 0};
  for (int k = 0; k < 3; ++k) {
    out->stage_utilisation[k] = elapsed_ns > 0 && stage_threads[k] ? stage_busy[k] / (elapsed_ns * stage_threads[k]) : 0;
    out->stage_wait_s[k] = stage_wait[k] / 1e9;
  }
  out->lock_wait_s = (double)(atomic_load_explicit(&s->lock_wait_ns, memory_order_relaxed) - s->lock_wait_base) / 1e9;
  out->submit_blocked_s =
      (double)(atomic_load_explicit(&s->submit_block_ns, memory_order_relaxed) - s->submit_block_base) / 1e9;
  unlock(s);
  return HX_OK;
}

hx_status_t hx_server_metrics_json(hx_server_t* s, char** out_text) {
  if (!out_text) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "out_text is NULL");
  *out_text = NULL;
  hx_server_metrics_t* m = malloc(sizeof(*m));
  if (!m) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory rendering metrics");
  hx_status_t st = hx_server_metrics(s, m);
  if (st == HX_OK && !(*out_text = hx_metrics_to_json(m)))
    st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory rendering metrics");
  free(m);
  return st;
}

hx_status_t hx_server_metrics_prometheus(hx_server_t* s, char** out_text) {
  if (!out_text) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "out_text is NULL");
  *out_text = NULL;
  hx_server_metrics_t* m = malloc(sizeof(*m));
  if (!m) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory rendering metrics");
  hx_status_t st = hx_server_metrics(s, m);
  if (st == HX_OK && !(*out_text = hx_metrics_to_prometheus(m)))
    st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory rendering metrics");
  free(m);
  return st;
}

void hx_server_metrics_reset(hx_server_t* s) {
  if (!s) return;
  int threads = hx_pool_thread_count(s->pool);
  lock(s);
  hx_metrics_reset(&s->metrics, hx_now_ns());
  for (int i = 0; i < s->num_workers; ++i) {
    s->workers[i].busy_base = atomic_load_explicit(&s->workers[i].busy_ns, memory_order_relaxed);
    s->workers[i].wait_base = atomic_load_explicit(&s->workers[i].wait_ns, memory_order_relaxed);
  }
  hx_pool_busy_ns(s->pool, s->pool_busy_base, threads);
  s->lock_wait_base = atomic_load_explicit(&s->lock_wait_ns, memory_order_relaxed);
  s->submit_block_base = atomic_load_explicit(&s->submit_block_ns, memory_order_relaxed);
  unlock(s);
}
