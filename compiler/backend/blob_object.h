/* A relocatable ELF object that holds one read-only data symbol (the
 * artifact's weights), written by the compiler itself so that the bytes go
 * from the graph to the file without another copy in memory: an LLVM
 * constant would hold one copy and the object emitter a second, which made
 * a model's compile peak at about four times its weights. */
#ifndef HARNESS_BACKEND_BLOB_OBJECT_H
#define HARNESS_BACKEND_BLOB_OBJECT_H

#include <stdint.h>

#include "harness/status.h"

/* Writes `size` bytes of the blob at `offset` (relative to the blob's start). */
typedef hx_status_t (*hc_blob_write_fn)(void* sink, uint64_t offset, const void* data, uint64_t size);

/* Fills the blob through `write`; bytes never written are zero. */
typedef hx_status_t (*hc_blob_fill_fn)(void* ctx, hc_blob_write_fn write, void* sink);

/* Creates `path`, an x86-64 ELF relocatable object with one section
 * (.rodata.<symbol>, `align`-byte aligned) of `size` bytes that `fill`
 * writes, a global hidden object symbol `symbol` at its start, and an empty
 * .note.GNU-stack (no executable stack). The output depends only on the
 * arguments and the bytes written. */
hx_status_t hc_write_blob_object(const char* path, const char* symbol, uint64_t size, uint64_t align,
                                 hc_blob_fill_fn fill, void* ctx);

#endif /* HARNESS_BACKEND_BLOB_OBJECT_H */
