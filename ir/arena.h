/* A bump allocator for objects that live as long as their graph.
 *
 * Graph-lifetime data (names, attribute lists, node arrays) is allocated here
 * and released all at once with the graph, which keeps IR code free of
 * per-object frees and makes leaks impossible by construction. */
#ifndef HARNESS_IR_ARENA_H
#define HARNESS_IR_ARENA_H

#include <stddef.h>

typedef struct hc_arena_block hc_arena_block;

typedef struct hc_arena {
  hc_arena_block* head;
} hc_arena;

void hc_arena_init(hc_arena* a);
void hc_arena_release(hc_arena* a);
/* Zeroed, 16-byte aligned memory; NULL on out-of-memory. */
void* hc_arena_alloc(hc_arena* a, size_t bytes);
/* Copies a NUL-terminated string (NULL stays NULL). */
char* hc_arena_strdup(hc_arena* a, const char* s);
/* Copies `bytes` bytes. */
void* hc_arena_memdup(hc_arena* a, const void* src, size_t bytes);

#endif /* HARNESS_IR_ARENA_H */
