/* The artifact's embedded scheduling manifest: since ABI 1.3 stored as one
 * zlib stream, inflated once when the artifact is loaded. */
#ifndef HARNESS_RUNTIME_MANIFEST_H
#define HARNESS_RUNTIME_MANIFEST_H

#include <stdint.h>

#include "harness/status.h"

/* Inflates the zlib stream z (z_bytes bytes) that must hold exactly
 * text_bytes bytes of text, without NUL bytes. On success *out_text is a
 * malloc'd, NUL-terminated copy of the text, owned by the caller (free()).
 * A stream that is corrupt, truncated, followed by extra bytes, or that
 * inflates to another size than declared is an HX_STATUS_INCOMPATIBLE error
 * naming `path` (the artifact) and what was wrong; *out_text is then NULL. */
hx_status_t hx_manifest_inflate(const void* z, uint64_t z_bytes, uint64_t text_bytes, const char* path,
                                char** out_text);

#endif /* HARNESS_RUNTIME_MANIFEST_H */
