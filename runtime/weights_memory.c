/* Weights in huge pages (see weights_memory.h). Measured on ResNet-50 (118
 * MB of weights; bench/compare/ab_rounds.py, the same artifacts under the
 * runtime before and after): docs/performance.md, "Weights in huge pages
 * and F(4,3) from 25 tiles". */
#define _GNU_SOURCE
#include "weights_memory.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arena_memory.h"

#define HX_HUGE_PAGE ((size_t)2 << 20)
/* Copied, then released from the file mapping, this much at a time. */
#define HX_WEIGHTS_COPY_STEP ((size_t)4 << 20)

/* The page-aligned address at or after (up) or before (!up) p. */
static uintptr_t page_align(const char* p, int up) {
  long ps = sysconf(_SC_PAGESIZE);
  uintptr_t m = (uintptr_t)(ps > 0 ? ps : 4096) - 1;
  return up ? ((uintptr_t)p + m) & ~m : (uintptr_t)p & ~m;
}

void* hx_weights_memory_place(const void* blob, size_t bytes) {
  if (!blob || bytes < HX_HUGE_PAGE || !hx_thp_available()) return NULL;
  int mapped = 0;
  char* copy = hx_arena_memory_alloc(bytes, 64, &mapped);
  if (!copy) return NULL;
  if (!mapped) { /* HX_HUGEPAGES=0: no huge pages, so nothing to gain */
    hx_arena_memory_free(copy, bytes, mapped);
    return NULL;
  }
  /* The file's whole pages inside the blob are dropped from this process
   * once copied: they would otherwise count twice in its resident size
   * (they stay in the page cache, and come back if anything reads them). */
  const char* src = blob;
  uintptr_t released = page_align(src, 1);
  for (size_t off = 0; off < bytes; off += HX_WEIGHTS_COPY_STEP) {
    size_t n = bytes - off < HX_WEIGHTS_COPY_STEP ? bytes - off : HX_WEIGHTS_COPY_STEP;
    memcpy(copy + off, src + off, n);
    uintptr_t end = page_align(src + off + n, 0);
    if (end > released) {
      madvise((void*)released, (size_t)(end - released), MADV_DONTNEED);
      released = end;
    }
  }
  return copy;
}

/* A copy is always a mapping: one that was not is never returned. */
void hx_weights_memory_free(void* copy, size_t bytes) {
  if (copy) hx_arena_memory_free(copy, bytes, 1);
}
