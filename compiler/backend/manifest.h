/* The scheduling manifest: kernels in order with their costs, stage and
 * device, and every tensor's place. Embedded in each artifact and written by
 * `harnessc --emit manifest`. */
#ifndef HARNESS_BACKEND_MANIFEST_H
#define HARNESS_BACKEND_MANIFEST_H

#include "compiler/codegen/kernel_builder.h"
#include "passes/pass.h"

/* Returns malloc'd JSON text (free with free()); NULL on out-of-memory. */
char* hc_manifest_json(const hc_graph* g, const hc_pass_ctx* pctx, const struct hc_target* t, const hc_lower_ctx* lc,
                       const char* producer);

#endif /* HARNESS_BACKEND_MANIFEST_H */
