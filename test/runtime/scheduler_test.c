/* Tests runtime/scheduler.c: FIFO order, priority order with ageing (no
 * starvation), deadline urgency, and dropping requests whose deadline cannot
 * be met. Times are passed in, so nothing here depends on a clock. */
#include "scheduler.h"
#include "test/runtime/rt_support.h"

#define MS 1000000LL

static hx_sched_config config(int policy, int deadline_policy) {
  hx_sched_config c = {.policy = policy, .deadline_policy = deadline_policy};
  c.age_ns[HX_PRIORITY_HIGH] = 0;
  c.age_ns[HX_PRIORITY_NORMAL] = 100 * MS;
  c.age_ns[HX_PRIORITY_LOW] = 500 * MS;
  return c;
}

/* Pops everything, returning the items (cast to ints) in order. */
static int drain(hx_sched* s, intptr_t* out, int cap) {
  int n = 0;
  hx_sched_entry e;
  while (n < cap && hx_sched_pop(s, &e)) out[n++] = (intptr_t)e.item;
  return n;
}

static void fifo_keeps_submission_order(void** state) {
  hx_sched_config c = config(HX_SCHED_FIFO, HX_DEADLINE_KEEP);
  hx_sched s;
  rt_assert_ok(hx_sched_init(&s, &c, 16));
  /* Priorities and deadlines do not matter to FIFO; equal times keep order. */
  hx_sched_push(&s, HX_PRIORITY_LOW, 10, 0, 0, (void*)1);
  hx_sched_push(&s, HX_PRIORITY_HIGH, 20, 25, 0, (void*)2);
  hx_sched_push(&s, HX_PRIORITY_NORMAL, 20, 0, 0, (void*)3);
  hx_sched_push(&s, HX_PRIORITY_HIGH, 30, 0, 0, (void*)4);
  intptr_t got[8];
  assert_int_equal(drain(&s, got, 8), 4);
  for (int i = 0; i < 4; ++i) assert_int_equal(got[i], i + 1);
  hx_sched_release(&s);
}

static void priority_classes_go_first(void** state) {
  hx_sched_config c = config(HX_SCHED_PRIORITY, HX_DEADLINE_KEEP);
  hx_sched s;
  rt_assert_ok(hx_sched_init(&s, &c, 16));
  hx_sched_push(&s, HX_PRIORITY_LOW, 0, 0, 0, (void*)30);
  hx_sched_push(&s, HX_PRIORITY_NORMAL, 1 * MS, 0, 0, (void*)20);
  hx_sched_push(&s, HX_PRIORITY_HIGH, 2 * MS, 0, 0, (void*)10);
  hx_sched_push(&s, HX_PRIORITY_NORMAL, 3 * MS, 0, 0, (void*)21);
  hx_sched_push(&s, HX_PRIORITY_HIGH, 4 * MS, 0, 0, (void*)11);
  intptr_t got[8];
  assert_int_equal(drain(&s, got, 8), 5);
  const intptr_t want[] = {10, 11, 20, 21, 30};
  for (int i = 0; i < 5; ++i) assert_int_equal(got[i], want[i]);
  hx_sched_release(&s);
}

/* A low request competes with a steady stream of high ones, one per ms: it
 * must be served once it is age(low) older than the newest traffic, not
 * after the stream ends. */
static void ageing_prevents_starvation(void** state) {
  hx_sched_config c = config(HX_SCHED_PRIORITY, HX_DEADLINE_KEEP);
  hx_sched s;
  rt_assert_ok(hx_sched_init(&s, &c, 4096));
  hx_sched_push(&s, HX_PRIORITY_LOW, 0, 0, 0, (void*)-1);
  int64_t t = 0, low_served_at = -1;
  /* Each ms: a high request arrives, the server serves one request. */
  for (int step = 0; step < 2000 && low_served_at < 0; ++step) {
    t = (int64_t)(step + 1) * MS;
    hx_sched_push(&s, HX_PRIORITY_HIGH, t, 0, 0, (void*)(intptr_t)step);
    hx_sched_entry e;
    assert_true(hx_sched_pop(&s, &e));
    if ((intptr_t)e.item == -1) low_served_at = t;
  }
  /* Served once the high requests arriving are younger than 500 ms + its submit. */
  assert_true(low_served_at > 0);
  assert_true(low_served_at >= 500 * MS);
  assert_true(low_served_at <= 501 * MS);
  hx_sched_release(&s);
}

/* An approaching deadline lifts a request above more important classes. */
static void urgency_moves_requests_up(void** state) {
  hx_sched_config c = config(HX_SCHED_PRIORITY, HX_DEADLINE_KEEP);
  hx_sched s;
  rt_assert_ok(hx_sched_init(&s, &c, 16));
  /* Normal request with a 30 ms deadline and 10 ms margin: key = 20 ms, ahead
   * of a high request submitted at 25 ms, behind one at 15 ms. */
  hx_sched_push(&s, HX_PRIORITY_NORMAL, 0, 30 * MS, 10 * MS, (void*)2);
  hx_sched_push(&s, HX_PRIORITY_HIGH, 25 * MS, 0, 10 * MS, (void*)3);
  hx_sched_push(&s, HX_PRIORITY_HIGH, 15 * MS, 0, 10 * MS, (void*)1);
  assert_int_equal(hx_sched_key(&c, HX_PRIORITY_NORMAL, 0, 30 * MS, 10 * MS), 20 * MS);
  assert_int_equal(hx_sched_key(&c, HX_PRIORITY_NORMAL, 0, 0, 10 * MS), 100 * MS);
  intptr_t got[4];
  assert_int_equal(drain(&s, got, 4), 3);
  assert_int_equal(got[0], 1);
  assert_int_equal(got[1], 2);
  assert_int_equal(got[2], 3);
  hx_sched_release(&s);
}

static void take_drops_hopeless_requests(void** state) {
  hx_sched_config c = config(HX_SCHED_FIFO, HX_DEADLINE_DROP);
  hx_sched s;
  rt_assert_ok(hx_sched_init(&s, &c, 16));
  /* At now = 100 ms with 10 ms to finish a batch: deadlines 105 and 109 ms
   * are hopeless, 110 and none are fine. */
  hx_sched_push(&s, HX_PRIORITY_NORMAL, 1 * MS, 105 * MS, 0, (void*)1);
  hx_sched_push(&s, HX_PRIORITY_NORMAL, 2 * MS, 0, 0, (void*)2);
  hx_sched_push(&s, HX_PRIORITY_NORMAL, 3 * MS, 109 * MS, 0, (void*)3);
  hx_sched_push(&s, HX_PRIORITY_NORMAL, 4 * MS, 110 * MS, 0, (void*)4);
  hx_sched_push(&s, HX_PRIORITY_NORMAL, 5 * MS, 0, 0, (void*)5);
  hx_sched_entry out[4], dropped[4];
  int nd = -1;
  int n = hx_sched_take(&s, 100 * MS, 10 * MS, 2, out, dropped, 4, &nd);
  assert_int_equal(n, 2);
  assert_int_equal(nd, 2);
  assert_int_equal((intptr_t)out[0].item, 2);
  assert_int_equal((intptr_t)out[1].item, 4);
  assert_int_equal((intptr_t)dropped[0].item, 1);
  assert_int_equal((intptr_t)dropped[1].item, 3);
  assert_int_equal(hx_sched_size(&s), 1);
  /* KEEP never drops. */
  hx_sched_release(&s);
  c.deadline_policy = HX_DEADLINE_KEEP;
  rt_assert_ok(hx_sched_init(&s, &c, 4));
  hx_sched_push(&s, HX_PRIORITY_NORMAL, 1 * MS, 2 * MS, 0, (void*)7);
  n = hx_sched_take(&s, 100 * MS, 10 * MS, 4, out, dropped, 4, &nd);
  assert_int_equal(n, 1);
  assert_int_equal(nd, 0);
  hx_sched_release(&s);
}

static void capacity_and_bad_config(void** state) {
  hx_sched_config c = config(HX_SCHED_FIFO, HX_DEADLINE_KEEP);
  hx_sched s;
  rt_assert_ok(hx_sched_init(&s, &c, 2));
  assert_true(hx_sched_push(&s, 0, 1, 0, 0, (void*)1));
  assert_true(hx_sched_push(&s, 0, 2, 0, 0, (void*)2));
  assert_false(hx_sched_push(&s, 0, 3, 0, 0, (void*)3));
  assert_int_equal((intptr_t)hx_sched_peek(&s)->item, 1);
  hx_sched_release(&s);
  rt_assert_error(hx_sched_init(&s, &c, 0), HX_STATUS_INVALID_ARGUMENT, "capacity");
  c.policy = 7;
  rt_assert_error(hx_sched_init(&s, &c, 4), HX_STATUS_INVALID_ARGUMENT, "policy");
}

/* Many random pushes and pops against a sorted reference. */
static void heap_matches_a_sorted_reference(void** state) {
  hx_sched_config c = config(HX_SCHED_PRIORITY, HX_DEADLINE_KEEP);
  hx_sched s;
  rt_assert_ok(hx_sched_init(&s, &c, 512));
  unsigned seed = 12345;
  int64_t last_key = INT64_MIN;
  uint64_t last_seq = 0;
  for (int i = 0; i < 500; ++i) {
    seed = seed * 1103515245u + 12345u;
    int prio = (int)(seed >> 16) % 3;
    int64_t submit = (int64_t)((seed >> 8) % 1000) * MS;
    int64_t deadline = (seed & 1) ? submit + (int64_t)((seed >> 4) % 300) * MS : 0;
    hx_sched_push(&s, prio, submit, deadline, 5 * MS, NULL);
  }
  hx_sched_entry e;
  int n = 0;
  while (hx_sched_pop(&s, &e)) {
    assert_true(e.key > last_key || (e.key == last_key && e.seq > last_seq));
    last_key = e.key;
    last_seq = e.seq;
    ++n;
  }
  assert_int_equal(n, 500);
  hx_sched_release(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fifo_keeps_submission_order),
      cmocka_unit_test(priority_classes_go_first),
      cmocka_unit_test(ageing_prevents_starvation),
      cmocka_unit_test(urgency_moves_requests_up),
      cmocka_unit_test(take_drops_hopeless_requests),
      cmocka_unit_test(capacity_and_bad_config),
      cmocka_unit_test(heap_matches_a_sorted_reference),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
