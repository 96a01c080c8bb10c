/* Arena memory: 2 MiB-aligned anonymous mappings advised for transparent
 * huge pages for large arenas, aligned_alloc for small ones. */
#define _GNU_SOURCE
#include "arena_memory.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HX_HUGE_PAGE ((size_t)2 << 20)

static int use_huge(size_t bytes) {
  if (bytes < HX_HUGE_PAGE) return 0;
  const char* e = getenv("HX_HUGEPAGES");
  return !(e && strcmp(e, "0") == 0);
}

static size_t huge_len(size_t bytes) { return (bytes + HX_HUGE_PAGE - 1) / HX_HUGE_PAGE * HX_HUGE_PAGE; }

void* hx_arena_memory_alloc(size_t bytes, size_t align, int* out_mapped) {
  *out_mapped = use_huge(bytes);
  if (!*out_mapped) return aligned_alloc(align, (bytes + align - 1) / align * align);
  size_t len = huge_len(bytes);
  /* Over-map by one huge page and trim to a 2 MiB boundary. */
  char* raw = mmap(NULL, len + HX_HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return NULL;
  char* p = (char*)(((uintptr_t)raw + HX_HUGE_PAGE - 1) & ~(uintptr_t)(HX_HUGE_PAGE - 1));
  if (p > raw) munmap(raw, (size_t)(p - raw));
  size_t tail = (size_t)((raw + len + HX_HUGE_PAGE) - (p + len));
  if (tail) munmap(p + len, tail);
#ifdef MADV_HUGEPAGE
  madvise(p, len, MADV_HUGEPAGE);
#endif
  return p;
}

void hx_arena_memory_free(void* p, size_t bytes, int mapped) {
  if (!p) return;
  if (!mapped) {
    free(p);
    return;
  }
  munmap(p, huge_len(bytes));
}
