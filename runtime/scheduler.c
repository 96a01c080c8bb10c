/* Request queue: a binary min-heap on (key, seq); see scheduler.h. */
#include "scheduler.h"

#include <stdlib.h>
#include <string.h>

hx_status_t hx_sched_init(hx_sched* s, const hx_sched_config* cfg, int capacity) {
  memset(s, 0, sizeof(*s));
  if (capacity < 1) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "queue capacity must be >= 1, got %d", capacity);
  if (cfg->policy != HX_SCHED_FIFO && cfg->policy != HX_SCHED_PRIORITY)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "unknown scheduling policy %d", cfg->policy);
  if (cfg->deadline_policy < HX_DEADLINE_KEEP || cfg->deadline_policy > HX_DEADLINE_REJECT)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "unknown deadline policy %d", cfg->deadline_policy);
  for (int c = 0; c < HX_PRIORITY_CLASSES; ++c)
    if (cfg->age_ns[c] < 0) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "age of class %d is negative", c);
  s->heap = malloc(sizeof(hx_sched_entry) * (size_t)capacity);
  if (!s->heap) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory creating the request queue");
  s->cfg = *cfg;
  s->cap = capacity;
  return HX_OK;
}

void hx_sched_release(hx_sched* s) {
  free(s->heap);
  memset(s, 0, sizeof(*s));
}

int64_t hx_sched_key(const hx_sched_config* cfg, int priority, int64_t submit_ns, int64_t deadline_ns, int64_t margin_ns) {
  if (cfg->policy == HX_SCHED_FIFO) return submit_ns;
  if (priority < 0) priority = 0;
  if (priority >= HX_PRIORITY_CLASSES) priority = HX_PRIORITY_CLASSES - 1;
  int64_t key = submit_ns + cfg->age_ns[priority];
  if (deadline_ns > 0 && deadline_ns - margin_ns < key) key = deadline_ns - margin_ns;
  return key;
}

static int before(const hx_sched_entry* a, const hx_sched_entry* b) {
  return a->key != b->key ? a->key < b->key : a->seq < b->seq;
}

static void sift_up(hx_sched_entry* h, int i) {
  hx_sched_entry e = h[i];
  while (i > 0) {
    int p = (i - 1) / 2;
    if (!before(&e, &h[p])) break;
    h[i] = h[p];
    i = p;
  }
  h[i] = e;
}

static void sift_down(hx_sched_entry* h, int n, int i) {
  hx_sched_entry e = h[i];
  for (;;) {
    int c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && before(&h[c + 1], &h[c])) ++c;
    if (!before(&h[c], &e)) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = e;
}

int hx_sched_push(hx_sched* s, int priority, int64_t submit_ns, int64_t deadline_ns, int64_t margin_ns, void* item) {
  if (s->size == s->cap) return 0;
  hx_sched_entry* e = &s->heap[s->size];
  e->key = hx_sched_key(&s->cfg, priority, submit_ns, deadline_ns, margin_ns);
  e->seq = s->next_seq++;
  e->submit_ns = submit_ns;
  e->deadline_ns = deadline_ns;
  e->priority = priority;
  e->item = item;
  sift_up(s->heap, s->size++);
  return 1;
}

const hx_sched_entry* hx_sched_peek(const hx_sched* s) { return s->size ? &s->heap[0] : NULL; }

int hx_sched_pop(hx_sched* s, hx_sched_entry* out) {
  if (!s->size) return 0;
  *out = s->heap[0];
  s->heap[0] = s->heap[--s->size];
  if (s->size) sift_down(s->heap, s->size, 0);
  return 1;
}

int hx_sched_take(hx_sched* s, int64_t now_ns, int64_t finish_ns, int max_take, hx_sched_entry* out,
                  hx_sched_entry* dropped, int max_drop, int* out_dropped) {
  int taken = 0, nd = 0;
  const int dropping = s->cfg.deadline_policy != HX_DEADLINE_KEEP;
  while (taken < max_take && s->size) {
    const hx_sched_entry* top = &s->heap[0];
    if (dropping && top->deadline_ns > 0 && top->deadline_ns < now_ns + finish_ns) {
      if (nd == max_drop) break;
      hx_sched_pop(s, &dropped[nd++]);
      continue;
    }
    hx_sched_pop(s, &out[taken++]);
  }
  *out_dropped = nd;
  return taken;
}
