/* Memory for the planned arena of a session. */
#ifndef HARNESS_RUNTIME_ARENA_MEMORY_H
#define HARNESS_RUNTIME_ARENA_MEMORY_H

#include <stddef.h>

/* Allocates `bytes` aligned to `align` (a power of two, at most 2 MiB).
 * Arenas of 2 MiB or more are anonymous mappings aligned to 2 MiB and
 * advised for transparent huge pages (MADV_HUGEPAGE; the kernel's default
 * THP mode on most distributions is "madvise"), because the kernels stream
 * activations with strides of whole planes, which on 4 KiB pages costs a
 * TLB miss per row: ResNet-50 runs 3-4% faster. HX_HUGEPAGES=0 in the
 * environment turns this off. *out_mapped says which kind was made; the
 * caller frees with hx_arena_memory_free and the same `bytes` and
 * `mapped`. Returns NULL when out of memory. */
void* hx_arena_memory_alloc(size_t bytes, size_t align, int* out_mapped);
void hx_arena_memory_free(void* p, size_t bytes, int mapped);
/* Whether the kernel gives transparent huge pages to a mapping that asks
 * for them (THP mode "always" or "madvise"). */
int hx_thp_available(void);

#endif /* HARNESS_RUNTIME_ARENA_MEMORY_H */
