/* Tests runtime/server.c end to end on the synthetic artifact (y = 2x + 1,
 * batch sizes 1, 2, 4, 8): batching (grouping, padding, splitting), the
 * pipeline (order, backpressure, shutdown with requests in flight: none lost,
 * each completion delivered exactly once), priorities, deadlines, callbacks
 * and metrics. Where a test needs requests to pile up, a pre-process "gate"
 * holds the pipeline still instead of relying on timing. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "harness/serving.h"
#include "test/runtime/rt_support.h"

#define MAX_REQ 256

/* ---- shared fixtures ---------------------------------------------------------- */

typedef struct harness {
  hx_model_t* model;
  hx_server_t* server;
  /* Gate: while closed, the pre callback blocks (holding up its batch). */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int gate_closed;
  int gate_waiting; /* pre callbacks blocked on the gate */
  /* Completions seen through the callback. */
  atomic_int delivered[MAX_REQ + 1]; /* per id */
  hx_completion_t log[MAX_REQ];
  atomic_int log_len;
  float in[MAX_REQ][16], out[MAX_REQ][16];
} harness;

static harness* h_new(void) {
  harness* h = calloc(1, sizeof(*h));
  pthread_mutex_init(&h->mu, NULL);
  pthread_cond_init(&h->cv, NULL);
  rt_assert_ok(hx_model_load(rt_synthetic_path(), &h->model));
  rt_synthetic_configure(0, 0, RT_COST_NONE);
  for (int r = 0; r < MAX_REQ; ++r)
    for (int j = 0; j < 16; ++j) h->in[r][j] = (float)(r * 16 + j);
  return h;
}

static void h_free(harness* h) {
  hx_server_free(h->server);
  hx_model_free(h->model);
  pthread_mutex_destroy(&h->mu);
  pthread_cond_destroy(&h->cv);
  free(h);
}

static void gate_set(harness* h, int closed) {
  pthread_mutex_lock(&h->mu);
  h->gate_closed = closed;
  pthread_cond_broadcast(&h->cv);
  pthread_mutex_unlock(&h->mu);
}

/* Waits until a pre callback is blocked on the gate. */
static void gate_wait_for_blocked(harness* h) {
  pthread_mutex_lock(&h->mu);
  while (h->gate_waiting == 0) pthread_cond_wait(&h->cv, &h->mu);
  pthread_mutex_unlock(&h->mu);
}

/* Pre: waits at the gate, then copies the request's input (like no callback). */
static hx_status_t gated_pre(void* ctx, const hx_request_info_t* req, void* const* model_inputs) {
  harness* h = ctx;
  pthread_mutex_lock(&h->mu);
  h->gate_waiting++;
  pthread_cond_broadcast(&h->cv);
  while (h->gate_closed) pthread_cond_wait(&h->cv, &h->mu);
  h->gate_waiting--;
  pthread_mutex_unlock(&h->mu);
  if ((intptr_t)req->user_data == -1) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "refused by the test");
  memcpy(model_inputs[0], req->inputs[0], 16 * sizeof(float));
  return HX_OK;
}

static void on_complete(void* ctx, const hx_completion_t* c) {
  harness* h = ctx;
  assert_true(c->id >= 1 && c->id <= MAX_REQ);
  atomic_fetch_add(&h->delivered[c->id], 1);
  int i = atomic_fetch_add(&h->log_len, 1);
  h->log[i] = *c;
}

static hx_server_options_t base_options(harness* h) {
  hx_server_options_t o;
  hx_server_options_init(&o);
  o.threads = 2;
  o.callback_ctx = h;
  o.on_complete = on_complete;
  return o;
}

/* Submits request r (input row r, output row r); returns its id. */
static uint64_t submit(harness* h, int r, int priority, int64_t deadline_us) {
  const void* in[1] = {h->in[r]};
  void* out[1] = {h->out[r]};
  hx_submit_t q = {in, out, priority, deadline_us, (void*)(intptr_t)r};
  uint64_t id = 0;
  rt_assert_ok(hx_server_submit(h->server, &q, &id));
  return id;
}

static void assert_output(harness* h, int r) {
  for (int j = 0; j < 16; ++j) assert_float_equal(h->out[r][j], 2 * h->in[r][j] + 1, 0);
}

/* ---- batching ------------------------------------------------------------------ */

/* Three requests with max_batch 3 and a long batching window: one batch of
 * three on the batch-4 program (one zero row of padding), each request
 * getting its own row back. */
static void groups_pads_and_splits(void** state) {
  harness* h = h_new();
  hx_server_options_t o = base_options(h);
  o.max_batch = 3;
  o.max_delay_us = 10 * 1000 * 1000; /* the batch forms when full, long before */
  rt_assert_ok(hx_server_create(h->model, &o, &h->server));
  assert_int_equal(hx_server_input_bytes(h->server, 0), 64);
  long runs0 = rt_synthetic_runs();
  for (int r = 0; r < 3; ++r) submit(h, r, HX_PRIORITY_NORMAL, 0);
  rt_assert_ok(hx_server_shutdown(h->server, 1));
  assert_int_equal(atomic_load(&h->log_len), 3);
  for (int i = 0; i < 3; ++i) {
    assert_int_equal(h->log[i].code, HX_STATUS_OK);
    assert_int_equal(h->log[i].batch_requests, 3);
    assert_int_equal(h->log[i].batch_size, 4);
    assert_output(h, i);
  }
  assert_int_equal(rt_synthetic_runs() - runs0, 1);
  hx_server_metrics_t m;
  rt_assert_ok(hx_server_metrics(h->server, &m));
  assert_int_equal(m.batches, 1);
  assert_int_equal(m.batch_hist[3], 1);
  assert_float_equal(m.mean_batch, 3.0, 1e-9);
  h_free(h);
}

/* While inference is held up, queued requests group into full batches of
 * the largest size; the leftover runs on the smallest size that holds it. */
static void groups_up_to_the_largest_size(void** state) {
  harness* h = h_new();
  hx_server_options_t o = base_options(h);
  o.pre = gated_pre;
  o.max_batch = 8;
  rt_assert_ok(hx_server_create(h->model, &o, &h->server));
  gate_set(h, 1);
  submit(h, 0, HX_PRIORITY_NORMAL, 0); /* the batch held at the gate */
  gate_wait_for_blocked(h);
  for (int r = 1; r <= 19; ++r) submit(h, r, HX_PRIORITY_NORMAL, 0); /* queued meanwhile */
  gate_set(h, 0);
  rt_assert_ok(hx_server_shutdown(h->server, 1));
  assert_int_equal(atomic_load(&h->log_len), 20);
  int sizes[3] = {0}; /* requests served in batches of 8 / 3 / 1 */
  for (int i = 0; i < 20; ++i) {
    const hx_completion_t* c = &h->log[i];
    assert_int_equal(c->code, HX_STATUS_OK);
    assert_output(h, (int)(intptr_t)c->user_data);
    if (c->batch_requests == 8) sizes[0]++;
    if (c->batch_requests == 3) {
      sizes[1]++;
      assert_int_equal(c->batch_size, 4);
    }
    if (c->batch_requests == 1) sizes[2]++;
  }
  /* 1 held + 19 queued: 8 + 8 + 3. */
  assert_int_equal(sizes[0], 16);
  assert_int_equal(sizes[1], 3);
  assert_int_equal(sizes[2], 1);
  h_free(h);
}

/* A lone request still runs after the batching window. */
static void max_delay_releases_a_partial_batch(void** state) {
  harness* h = h_new();
  hx_server_options_t o = base_options(h);
  o.max_delay_us = 2000;
  rt_assert_ok(hx_server_create(h->model, &o, &h->server));
  submit(h, 5, HX_PRIORITY_NORMAL, 0);
  rt_assert_ok(hx_server_shutdown(h->server, 1));
  assert_int_equal(atomic_load(&h->log_len), 1);
  assert_int_equal(h->log[0].batch_requests, 1);
  assert_int_equal(h->log[0].batch_size, 1);
  assert_output(h, 5);
  h_free(h);
}

/* ---- pipeline ------------------------------------------------------------------ */

static void fifo_completes_in_submission_order(void** state) {
  harness* h = h_new();
  hx_server_options_t o = base_options(h);
  rt_assert_ok(hx_server_create(h->model, &o, &h->server));
  for (int r = 0; r < 200; ++r) submit(h, r, r % 3, 0);
  rt_assert_ok(hx_server_shutdown(h->server, 1));
  assert_int_equal(atomic_load(&h->log_len), 200);
  for (int i = 0; i < 200; ++i) {
    assert_int_equal(h->log[i].id, (uint64_t)i + 1);
    assert_output(h, i);
  }
  h_free(h);
}

static void* shutdown_thread(void* arg) {
  harness* h = arg;
  hx_status_free(hx_server_shutdown(h->server, 0));
  return NULL;
}

/* Shutdown without drain while a batch is held in pre and more are queued:
 * the held batch completes OK, the queued requests complete as CANCELLED,
 * nobody is lost or completed twice, and later submits are refused. */
static void shutdown_cancels_and_delivers_each_once(void** state) {
  harness* h = h_new();
  hx_server_options_t o = base_options(h);
  o.pre = gated_pre;
  rt_assert_ok(hx_server_create(h->model, &o, &h->server));
  gate_set(h, 1);
  submit(h, 0, HX_PRIORITY_NORMAL, 0);
  gate_wait_for_blocked(h);
  for (int r = 1; r < 50; ++r) submit(h, r, HX_PRIORITY_NORMAL, 0);
  pthread_t t;
  pthread_create(&t, NULL, shutdown_thread, h);
  /* Once shutdown has begun, submits are refused: then open the gate. Probes
   * accepted before that are ordinary queued requests and get cancelled too. */
  int extra = 0;
  for (;;) {
    const void* in[1] = {h->in[60]};
    void* out[1] = {h->out[60]};
    hx_submit_t q = {in, out, 0, 0, (void*)(intptr_t)60};
    hx_status_t st = hx_server_submit(h->server, &q, NULL);
    if (st != HX_OK) {
      rt_assert_error(st, HX_STATUS_FAILED_PRECONDITION, "shutting down");
      break;
    }
    assert_true(++extra < 100);
    usleep(1000);
  }
  gate_set(h, 0);
  pthread_join(t, NULL);
  const int total = 50 + extra;
  int ok = 0, cancelled = 0;
  for (int id = 1; id <= total; ++id) assert_int_equal(atomic_load(&h->delivered[id]), 1);
  assert_int_equal(atomic_load(&h->log_len), total);
  for (int i = 0; i < total; ++i) {
    if (h->log[i].code == HX_STATUS_OK) {
      ok++;
      assert_output(h, (int)(intptr_t)h->log[i].user_data);
    } else {
      assert_int_equal(h->log[i].code, HX_STATUS_CANCELLED);
      assert_non_null(strstr(h->log[i].message, "cancelled"));
      cancelled++;
    }
  }
  assert_int_equal(ok, 1); /* only the held batch had left the queue */
  assert_int_equal(cancelled, total - 1);
  hx_server_metrics_t m;
  rt_assert_ok(hx_server_metrics(h->server, &m));
  assert_int_equal(m.cancelled, total - 1);
  assert_int_equal(m.completed, 1);
  h_free(h);
}

static void shutdown_with_drain_runs_everything(void** state) {
  harness* h = h_new();
  hx_server_options_t o = base_options(h);
  o.pre = gated_pre;
  o.pre_threads = 2;
  o.post_threads = 2;
  rt_assert_ok(hx_server_create(h->model, &o, &h->server));
  gate_set(h, 1);
  submit(h, 0, HX_PRIORITY_NORMAL, 0);
  gate_wait_for_blocked(h);
  for (int r = 1; r < 100; ++r) submit(h, r, r % 3, 0);
  gate_set(h, 0);
  rt_assert_ok(hx_server_shutdown(h->server, 1));
  rt_assert_ok(hx_server_shutdown(h->server, 1)); /* idempotent */
  for (int id = 1; id <= 100; ++id) assert_int_equal(atomic_load(&h->delivered[id]), 1);
  for (int r = 0; r < 100; ++r) assert_output(h, r);
  h_free(h);
}

/* Freeing a busy server is a cancelling shutdown: still one completion each. */
static void free_with_requests_in_flight(void** state) {
  harness* h = h_new();
  hx_server_options_t o = base_options(h);
  rt_synthetic_configure(200, 0, RT_COST_SLEEP);
  rt_assert_ok(hx_server_create(h->model, &o, &h->server));
  for (int r = 0; r < 100; ++r) submit(h, r, HX_PRIORITY_NORMAL, 0);
  hx_server_free(h->server);
  h->server = NULL;
  for (int id = 1; id <= 100; ++id) assert_int_equal(atomic_load(&h->delivered[id]), 1);
  rt_synthetic_configure(0, 0, RT_COST_NONE);
  h_free(h);
}

static void backpressure_busy(void** state) {
  harness* h = h_new();
  hx_server_options_t o = base_options(h);
  o.pre = gated_pre;
  o.queue_capacity = 4;
  o.backpressure = HX_BACKPRESSURE_BUSY;
  rt_assert_ok(hx_server_create(h->model, &o, &h->server));
  gate_set(h, 1);
  for (int r = 0; r < 4; ++r) submit(h, r, HX_PRIORITY_NORMAL, 0);
  const void* in[1] = {h->in[9]};
  void* out[1] = {h->out[9]};
  hx_submit_t q = {in, out, 0, 0, NULL};
  rt_assert_error(hx_server_submit(h->server, &q, NULL), HX_STATUS_UNAVAILABLE, "full");
  gate_set(h, 0);
  rt_assert_ok(hx_server_shutdown(h->server, 1));
  assert_int_equal(atomic_load(&h->log_len), 4);
  hx_server_metrics_t m;
  rt_assert_ok(hx_server_metrics(h->server, &m));
  assert_int_equal(m.rejected_busy, 1);
  assert_int_equal(m.submitted, 4);
  h_free(h);
}

typedef struct blocked_submit {
  harness* h;
  atomic_int returned;
} blocked_submit;

static void* submit_thread(void* arg) {
  blocked_submit* b = arg;
  submit(b->h, 10, HX_PRIORITY_NORMAL, 0);
  atomic_store(&b->returned, 1);
  return NULL;
}

static void backpressure_blocks(void** state) {
  harness* h = h_new();
  hx_server_options_t o = base_options(h);
  o.pre = gated_pre;
  o.queue_capacity = 4;
  rt_assert_ok(hx_server_create(h->model, &o, &h->server));
  gate_set(h, 1);
  for (int r = 0; r < 4; ++r) submit(h, r, HX_PRIORITY_NORMAL, 0);
  blocked_submit b = {h, 0};
  pthread_t t;
  pthread_create(&t, NULL, submit_thread, &b);
  usleep(50000);
  /* Nothing can have completed with the gate closed, so it must still wait. */
  assert_int_equal(atomic_load(&b.returned), 0);
  gate_set(h, 0);
  pthread_join(t, NULL);
  assert_int_equal(atomic_load(&b.returned), 1);
  rt_assert_ok(hx_server_shutdown(h->server, 1));
  assert_int_equal(atomic_load(&h->log_len), 5);
  hx_server_metrics_t m;
  rt_assert_ok(hx_server_metrics(h->server, &m));
  assert_true(m.submit_blocked_s > 0);
  h_free(h);
}

/* Poll form: completions wait in a queue for hx_server_wait. */
static void poll_and_wait(void** state) {
  harness* h = h_new();
  hx_server_options_t o;
  hx_server_options_init(&o);
  o.threads = 1;
  rt_assert_ok(hx_server_create(h->model, &o, &h->server));
  uint64_t ids[5];
  for (int r = 0; r < 5; ++r) ids[r] = submit(h, r, HX_PRIORITY_NORMAL, 0);
  for (int r = 0; r < 5; ++r) {
    hx_completion_t c;
    rt_assert_ok(hx_server_wait(h->server, -1, &c));
    assert_int_equal(c.id, ids[r]);
    assert_int_equal(c.code, HX_STATUS_OK);
    assert_true(c.latency_ns >= c.queue_ns);
    assert_output(h, r);
  }
  hx_completion_t c;
  rt_assert_error(hx_server_wait(h->server, 0, &c), HX_STATUS_UNAVAILABLE, "no completion");
  rt_assert_error(hx_server_wait(h->server, 1000, &c), HX_STATUS_UNAVAILABLE, "no completion");
  submit(h, 7, HX_PRIORITY_NORMAL, 0);
  rt_assert_ok(hx_server_shutdown(h->server, 1));
  rt_assert_ok(hx_server_wait(h->server, -1, &c)); /* still there after shutdown */
  rt_assert_error(hx_server_wait(h->server, -1, &c), HX_STATUS_FAILED_PRECONDITION, "shut down");
  h_free(h);
}

/* ---- scheduling ---------------------------------------------------------------- */

/* With the pipeline held, five normal and one high request queue up: the
 * high one is served first once it moves (FIFO would serve it last). */
static void high_priority_overtakes_the_queue(void** state) {
  for (int policy = HX_SCHED_FIFO; policy <= HX_SCHED_PRIORITY; ++policy) {
    harness* h = h_new();
    hx_server_options_t o = base_options(h);
    o.pre = gated_pre;
    o.policy = policy;
    o.max_batch = 1;
    rt_assert_ok(hx_server_create(h->model, &o, &h->server));
    gate_set(h, 1);
    submit(h, 0, HX_PRIORITY_NORMAL, 0);
    gate_wait_for_blocked(h);
    for (int r = 1; r <= 5; ++r) submit(h, r, HX_PRIORITY_NORMAL, 0);
    uint64_t high = submit(h, 6, HX_PRIORITY_HIGH, 0);
    gate_set(h, 0);
    rt_assert_ok(hx_server_shutdown(h->server, 1));
    assert_int_equal(atomic_load(&h->log_len), 7);
    assert_int_equal(h->log[0].id, 1);
    if (policy == HX_SCHED_PRIORITY) assert_int_equal(h->log[1].id, high);
    else assert_int_equal(h->log[6].id, high);
    h_free(h);
  }
}

/* DROP: a request whose deadline passes while the pipeline is held is
 * dropped at dispatch, completed as DEADLINE_EXCEEDED and counted. */
static void deadline_drop(void** state) {
  harness* h = h_new();
  hx_server_options_t o = base_options(h);
  o.pre = gated_pre;
  o.deadline_policy = HX_DEADLINE_DROP;
  o.max_batch = 1;
  rt_assert_ok(hx_server_create(h->model, &o, &h->server));
  gate_set(h, 1);
  submit(h, 0, HX_PRIORITY_NORMAL, 0);
  gate_wait_for_blocked(h);
  submit(h, 1, HX_PRIORITY_NORMAL, 1000);    /* 1 ms: hopeless after the sleep below */
  submit(h, 2, HX_PRIORITY_NORMAL, 60000000); /* 60 s: fine */
  usleep(5000);
  gate_set(h, 0);
  rt_assert_ok(hx_server_shutdown(h->server, 1));
  assert_int_equal(atomic_load(&h->log_len), 3);
  int dropped = 0;
  for (int i = 0; i < 3; ++i) {
    if ((intptr_t)h->log[i].user_data == 1) {
      assert_int_equal(h->log[i].code, HX_STATUS_DEADLINE_EXCEEDED);
      assert_int_equal(h->log[i].deadline_met, 0);
      dropped++;
    } else {
      assert_int_equal(h->log[i].code, HX_STATUS_OK);
    }
  }
  assert_int_equal(dropped, 1);
  hx_server_metrics_t m;
  rt_assert_ok(hx_server_metrics(h->server, &m));
  assert_int_equal(m.dropped_deadline, 1);
  assert_int_equal(m.deadline_total, 2);
  assert_int_equal(m.deadline_met, 1);
  assert_float_equal(m.deadline_met_ratio, 0.5, 1e-9);
  h_free(h);
}

/* REJECT: once the cost model knows a run takes ~10 ms, a request with a
 * 1 ms deadline is refused at submit (and gets no completion). */
static void deadline_reject_at_submit(void** state) {
  harness* h = h_new();
  hx_server_options_t o = base_options(h);
  o.deadline_policy = HX_DEADLINE_REJECT;
  rt_synthetic_configure(10000, 0, RT_COST_SLEEP);
  rt_assert_ok(hx_server_create(h->model, &o, &h->server));
  for (int r = 0; r < 3; ++r) submit(h, r, HX_PRIORITY_NORMAL, 0);
  /* Let the three runs be measured (no timing is asserted: it only waits). */
  while (atomic_load(&h->log_len) < 3) usleep(1000);
  const void* in[1] = {h->in[1]};
  void* out[1] = {h->out[1]};
  hx_submit_t q = {in, out, HX_PRIORITY_HIGH, 1000, NULL};
  rt_assert_error(hx_server_submit(h->server, &q, NULL), HX_STATUS_DEADLINE_EXCEEDED, "rejected");
  hx_server_metrics_t m;
  rt_assert_ok(hx_server_metrics(h->server, &m));
  assert_int_equal(m.rejected_deadline, 1);
  assert_true(m.est_batch_ms > 1.0);
  rt_synthetic_configure(0, 0, RT_COST_NONE);
  h_free(h);
}

/* ---- callbacks and metrics ----------------------------------------------------- */

static hx_status_t post_cb(void* ctx, const hx_request_info_t* req, const void* const* model_outputs) {
  harness* h = ctx;
  intptr_t r = (intptr_t)req->user_data;
  if (r == 3) return hx_status_make(HX_STATUS_IO, "sink is full");
  memcpy(h->out[r], model_outputs[0], 16 * sizeof(float));
  return HX_OK;
}

static void callbacks_and_their_errors(void** state) {
  harness* h = h_new();
  hx_server_options_t o = base_options(h);
  o.pre = gated_pre;
  o.post = post_cb;
  o.max_batch = 4;
  rt_assert_ok(hx_server_create(h->model, &o, &h->server));
  for (int r = 0; r < 6; ++r) {
    const void* in[1] = {h->in[r]};
    hx_submit_t q = {in, NULL, 0, 0, (void*)(intptr_t)(r == 2 ? -1 : r)};
    rt_assert_ok(hx_server_submit(h->server, &q, NULL));
  }
  rt_assert_ok(hx_server_shutdown(h->server, 1));
  assert_int_equal(atomic_load(&h->log_len), 6);
  for (int i = 0; i < 6; ++i) {
    const hx_completion_t* c = &h->log[i];
    intptr_t r = (intptr_t)c->user_data;
    if (r == -1) {
      assert_int_equal(c->code, HX_STATUS_INVALID_ARGUMENT);
      assert_non_null(strstr(c->message, "pre-process: refused by the test"));
    } else if (r == 3) {
      assert_int_equal(c->code, HX_STATUS_IO);
      assert_non_null(strstr(c->message, "post-process: sink is full"));
    } else {
      assert_int_equal(c->code, HX_STATUS_OK);
      assert_output(h, (int)r);
    }
  }
  hx_server_metrics_t m;
  rt_assert_ok(hx_server_metrics(h->server, &m));
  assert_int_equal(m.failed, 2);
  assert_int_equal(m.completed, 4);
  h_free(h);
}

static void metrics_render(void** state) {
  harness* h = h_new();
  hx_server_options_t o = base_options(h);
  rt_assert_ok(hx_server_create(h->model, &o, &h->server));
  for (int r = 0; r < 30; ++r) submit(h, r, r % 3, 50000000);
  rt_assert_ok(hx_server_shutdown(h->server, 1));
  hx_server_metrics_t m;
  rt_assert_ok(hx_server_metrics(h->server, &m));
  assert_int_equal(m.submitted, 30);
  assert_int_equal(m.completed, 30);
  assert_int_equal(m.latency.count, 30);
  assert_int_equal(m.class_latency[0].count + m.class_latency[1].count + m.class_latency[2].count, 30);
  assert_true(m.latency.p50_ms <= m.latency.p99_ms && m.latency.p99_ms <= m.latency.max_ms);
  assert_int_equal(m.deadline_total, 30);
  assert_true(m.num_workers >= 3 + 2);
  char* json = NULL;
  rt_assert_ok(hx_server_metrics_json(h->server, &json));
  const char* keys[] = {"\"qps\":", "\"latency_ms\":{", "\"p999\":", "\"queue_wait_ms\":", "\"deadline_met_ratio\":",
                        "\"dropped\":", "\"mean_batch\":", "\"batch_hist\":", "\"stage_utilisation\":", "\"workers\":[",
                        "\"contention_s\":", "\"high\":"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; ++i) {
    if (!strstr(json, keys[i])) print_error("missing %s in %s\n", keys[i], json);
    assert_non_null(strstr(json, keys[i]));
  }
  free(json);
  char* prom = NULL;
  rt_assert_ok(hx_server_metrics_prometheus(h->server, &prom));
  assert_non_null(strstr(prom, "# TYPE harness_latency_seconds summary"));
  assert_non_null(strstr(prom, "harness_requests_total{outcome=\"completed\"} 30\n"));
  assert_non_null(strstr(prom, "harness_latency_seconds{class=\"high\",quantile=\"0.99\"}"));
  assert_non_null(strstr(prom, "harness_worker_utilisation{stage=\"infer\""));
  free(prom);
  hx_server_metrics_reset(h->server);
  rt_assert_ok(hx_server_metrics(h->server, &m));
  assert_int_equal(m.completed, 0);
  assert_int_equal(m.latency.count, 0);
  h_free(h);
}

static void bad_arguments(void** state) {
  harness* h = h_new();
  hx_server_options_t o = base_options(h);
  o.queue_capacity = 0;
  rt_assert_error(hx_server_create(h->model, &o, &h->server), HX_STATUS_INVALID_ARGUMENT, "queue_capacity");
  o = base_options(h);
  o.buffers = 0;
  rt_assert_error(hx_server_create(h->model, &o, &h->server), HX_STATUS_INVALID_ARGUMENT, "buffers");
  o = base_options(h);
  rt_assert_ok(hx_server_create(h->model, &o, &h->server));
  hx_submit_t q = {NULL, NULL, 0, 0, NULL};
  rt_assert_error(hx_server_submit(h->server, &q, NULL), HX_STATUS_INVALID_ARGUMENT, "no inputs");
  const void* in[1] = {h->in[0]};
  hx_submit_t p = {in, NULL, 5, 0, NULL};
  rt_assert_error(hx_server_submit(h->server, &p, NULL), HX_STATUS_INVALID_ARGUMENT, "priority");
  hx_completion_t c;
  rt_assert_error(hx_server_wait(h->server, 0, &c), HX_STATUS_FAILED_PRECONDITION, "on_complete");
  h_free(h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(groups_pads_and_splits),
      cmocka_unit_test(groups_up_to_the_largest_size),
      cmocka_unit_test(max_delay_releases_a_partial_batch),
      cmocka_unit_test(fifo_completes_in_submission_order),
      cmocka_unit_test(shutdown_cancels_and_delivers_each_once),
      cmocka_unit_test(shutdown_with_drain_runs_everything),
      cmocka_unit_test(free_with_requests_in_flight),
      cmocka_unit_test(backpressure_busy),
      cmocka_unit_test(backpressure_blocks),
      cmocka_unit_test(poll_and_wait),
      cmocka_unit_test(high_priority_overtakes_the_queue),
      cmocka_unit_test(deadline_drop),
      cmocka_unit_test(deadline_reject_at_submit),
      cmocka_unit_test(callbacks_and_their_errors),
      cmocka_unit_test(metrics_render),
      cmocka_unit_test(bad_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
