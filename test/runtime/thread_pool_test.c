/* Tests runtime/thread_pool.c: every iteration runs exactly once, on every
 * pool size, across many back-to-back loops (the spin/park hand-off), with
 * home ranges that do not divide evenly, and with uneven iterations that make
 * threads steal from each other's ranges. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "test/support/test_support.h"
#include "thread_pool.h"

typedef struct counts {
  atomic_int* hits;
  atomic_long total;
} counts;

static void body(void* ctx, int64_t b, int64_t e) {
  counts* c = ctx;
  for (int64_t i = b; i < e; ++i) {
    atomic_fetch_add(&c->hits[i], 1);
    atomic_fetch_add(&c->total, 1);
  }
}

/* Iterations in the first part of the loop take much longer, so the thread
 * whose home range that is falls behind and the others steal from it. */
static void uneven_body(void* ctx, int64_t b, int64_t e) {
  counts* c = ctx;
  for (int64_t i = b; i < e; ++i) {
    if (i < 8)
      for (volatile int spin = 0; spin < 20000; ++spin) {
      }
    atomic_fetch_add(&c->hits[i], 1);
    atomic_fetch_add(&c->total, 1);
  }
}

static void check_pool_with(int threads, int64_t n, int loops, hx_pool_body_fn fn) {
  hx_pool_t* pool;
  ts_assert_ok(hx_pool_create(threads, 0, &pool));
  assert_int_equal(hx_pool_thread_count(pool), threads);
  counts c;
  c.hits = calloc((size_t)n + 1, sizeof(atomic_int));
  for (int l = 0; l < loops; ++l) {
    atomic_init(&c.total, 0);
    for (int64_t i = 0; i < n; ++i) atomic_init(&c.hits[i], 0);
    hx_pool_parallel_for(pool, n, fn, &c);
    assert_int_equal(atomic_load(&c.total), n);
    for (int64_t i = 0; i < n; ++i) assert_int_equal(atomic_load(&c.hits[i]), 1);
  }
  free(c.hits);
  hx_pool_free(pool);
}

static void check_pool(int threads, int64_t n, int loops) { check_pool_with(threads, n, loops, body); }

static void single_thread(void** state) { check_pool(1, 1000, 3); }
static void two_threads_many_loops(void** state) { check_pool(2, 777, 500); }
static void more_threads_than_work(void** state) { check_pool(4, 3, 200); }
static void empty_and_unit_loops(void** state) {
  check_pool(3, 0, 10);
  check_pool(3, 1, 10);
}

/* Home ranges of 4 chunks per thread: counts that do not divide, more
 * chunks than the range words' bits could index as iterations. */
static void uneven_ranges(void** state) {
  check_pool(3, 41, 300);
  check_pool(5, 17, 300);
  check_pool(2, (1 << 23) + 7, 2);
}

static void stealing(void** state) {
  check_pool_with(2, 64, 200, uneven_body);
  check_pool_with(3, 29, 200, uneven_body);
}

static void rejects_zero_threads(void** state) {
  hx_pool_t* pool = (hx_pool_t*)1;
  ts_assert_error(hx_pool_create(0, 0, &pool), HX_STATUS_INVALID_ARGUMENT, "at least 1 thread");
  assert_null(pool);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(single_thread), cmocka_unit_test(two_threads_many_loops), cmocka_unit_test(more_threads_than_work),
      cmocka_unit_test(empty_and_unit_loops), cmocka_unit_test(uneven_ranges),     cmocka_unit_test(stealing),
      cmocka_unit_test(rejects_zero_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
