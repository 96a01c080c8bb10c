/* Where a loaded model's weights live while it runs. */
#ifndef HARNESS_RUNTIME_WEIGHTS_MEMORY_H
#define HARNESS_RUNTIME_WEIGHTS_MEMORY_H

#include <stddef.h>

/* The weights blob of an artifact is part of its file mapping, in 4 KiB
 * pages: kernels that stream megabytes of weights per run (a batch-1 CNN
 * reads every weight once) then take a TLB miss every 4 KiB. When the blob
 * is at least one 2 MiB huge page and transparent huge pages can be had
 * (HX_HUGEPAGES is not "0" and the kernel's THP mode is not "never"), this
 * copies it into anonymous memory advised for huge pages
 * (hx_arena_memory_alloc) and returns the copy; the file's pages are
 * released from the process as they are copied, so the resident size stays
 * about one blob. Returns NULL (use the blob in place) otherwise or when
 * memory is short. */
void* hx_weights_memory_place(const void* blob, size_t bytes);
/* Frees a copy hx_weights_memory_place made of `bytes` (NULL: nothing). */
void hx_weights_memory_free(void* copy, size_t bytes);

#endif /* HARNESS_RUNTIME_WEIGHTS_MEMORY_H */
