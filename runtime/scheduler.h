/* The request queue of the serving layer: which queued request runs next.
 *
 * FIFO orders by submission. PRIORITY orders by a dynamic priority key, a
 * point in time (lower runs first):
 *
 *     key = submit + age[class]                      (class with ageing)
 *     key = min(key, deadline - margin)              (urgency, if a deadline)
 *
 * where age[class] is how long a class yields to more important ones (0 for
 * the highest), and margin is the time a request needs once dispatched: the
 * estimated cost of a batch (manifest estimate corrected by measurements)
 * inflated by the current load (the sliding-window busy fraction of the
 * inference stage), since under load a dispatched batch also waits for the
 * one in flight. A request of class c is overtaken by a more important one
 * only if that one arrived less than age[c] after it, so every class is
 * served within its age of the newer traffic (no starvation), and a request
 * whose deadline approaches moves up on its own. The key is fixed at submit,
 * so the queue is a binary heap: O(log n) per request, no periodic rescoring.
 *
 * With the DROP or REJECT deadline policy, hx_sched_take removes requests
 * whose deadline falls before the predicted completion instead of returning
 * them for dispatch.
 *
 * Pure data structure: times are passed in, nothing blocks or locks; the
 * server serialises access. */
#ifndef HARNESS_RUNTIME_SCHEDULER_H
#define HARNESS_RUNTIME_SCHEDULER_H

#include <stdint.h>

#include "harness/serving.h"

typedef struct hx_sched_config {
  int policy;          /* hx_sched_policy_t */
  int deadline_policy; /* hx_deadline_policy_t */
  int64_t age_ns[HX_PRIORITY_CLASSES];
} hx_sched_config;

typedef struct hx_sched_entry {
  int64_t key;
  uint64_t seq;        /* submission order, breaks ties */
  int64_t submit_ns;
  int64_t deadline_ns; /* absolute; 0 = none */
  int32_t priority;
  void* item;          /* the caller's request */
} hx_sched_entry;

typedef struct hx_sched {
  hx_sched_config cfg;
  hx_sched_entry* heap;
  int size, cap;
  uint64_t next_seq;
} hx_sched;

hx_status_t hx_sched_init(hx_sched* s, const hx_sched_config* cfg, int capacity);
void hx_sched_release(hx_sched* s);

/* The key a request gets under cfg (see above). */
int64_t hx_sched_key(const hx_sched_config* cfg, int priority, int64_t submit_ns, int64_t deadline_ns, int64_t margin_ns);

/* Queues a request; returns 0 if the queue is full. */
int hx_sched_push(hx_sched* s, int priority, int64_t submit_ns, int64_t deadline_ns, int64_t margin_ns, void* item);
/* The next request, or NULL. */
const hx_sched_entry* hx_sched_peek(const hx_sched* s);
/* Removes the next request into *out; returns 0 if empty. */
int hx_sched_pop(hx_sched* s, hx_sched_entry* out);
static inline int hx_sched_size(const hx_sched* s) { return s->size; }

/* Takes up to max_take requests in order into out[]. Under DROP/REJECT, a
 * request whose deadline is before now + finish_ns (its predicted completion
 * if dispatched now) goes to dropped[] instead, up to max_drop of them, and
 * does not count against max_take. Returns the number taken; *out_dropped
 * receives the number dropped. */
int hx_sched_take(hx_sched* s, int64_t now_ns, int64_t finish_ns, int max_take, hx_sched_entry* out,
                  hx_sched_entry* dropped, int max_drop, int* out_dropped);

#endif /* HARNESS_RUNTIME_SCHEDULER_H */
