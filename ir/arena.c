/* Bump allocator: a list of blocks, the newest first. */
#include "ir/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HC_ARENA_BLOCK 65536

struct hc_arena_block {
  hc_arena_block* next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
};

void hc_arena_init(hc_arena* a) { a->head = NULL; }

void hc_arena_release(hc_arena* a) {
  hc_arena_block* b = a->head;
  while (b) {
    hc_arena_block* next = b->next;
    free(b);
    b = next;
  }
  a->head = NULL;
}

void* hc_arena_alloc(hc_arena* a, size_t bytes) {
  bytes = (bytes + 15) & ~(size_t)15;
  if (bytes == 0) bytes = 16;
  hc_arena_block* b = a->head;
  if (!b || b->cap - b->used < bytes) {
    size_t cap = bytes > HC_ARENA_BLOCK / 2 ? bytes : HC_ARENA_BLOCK;
    hc_arena_block* nb = malloc(sizeof(hc_arena_block) + cap);
    if (!nb) return NULL;
    nb->used = 0;
    nb->cap = cap;
    /* Oversized blocks go behind the current one so its free tail stays usable. */
    if (b && cap != HC_ARENA_BLOCK) {
      nb->next = b->next;
      b->next = nb;
    } else {
      nb->next = b;
      a->head = nb;
    }
    b = nb;
  }
  void* p = b->data + b->used;
  b->used += bytes;
  memset(p, 0, bytes);
  return p;
}

char* hc_arena_strdup(hc_arena* a, const char* s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char* d = hc_arena_alloc(a, n);
  if (d) memcpy(d, s, n);
  return d;
}

void* hc_arena_memdup(hc_arena* a, const void* src, size_t bytes) {
  void* d = hc_arena_alloc(a, bytes);
  if (d && bytes) memcpy(d, src, bytes);
  return d;
}
