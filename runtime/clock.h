/* The runtime's one clock: CLOCK_MONOTONIC in nanoseconds. */
#ifndef HARNESS_RUNTIME_CLOCK_H
#define HARNESS_RUNTIME_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t hx_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Absolute CLOCK_MONOTONIC time for pthread_cond_timedwait on a condition
 * variable created with that clock. */
static inline struct timespec hx_timespec_at(int64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  return ts;
}

#endif /* HARNESS_RUNTIME_CLOCK_H */
