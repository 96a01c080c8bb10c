/* The scheduling manifest: kernels in order with their costs, stage and
 * device, and every tensor's place. Embedded in each artifact and written by
 * `harnessc --emit manifest`. */
#ifndef HARNESS_BACKEND_MANIFEST_H
#define HARNESS_BACKEND_MANIFEST_H

#include "compiler/codegen/kernel_builder.h"
#include "passes/pass.h"

/* One program of an artifact: a planned graph compiled for one batch size
 * (harnessc --batch), or the only program of an ordinary artifact. */
typedef struct hc_program {
  hc_graph* g;
  hc_pass_ctx* pctx;
  int64_t batch;      /* leading dimension of every input and output; 0 = not a batch program */
  int first_kernel;   /* its kernels in the lowering context: [first_kernel, first_kernel + num_kernels) */
  int num_kernels;
} hc_program;

/* Returns malloc'd JSON text (free with free()); NULL on out-of-memory.
 * progs holds num_variants x num_programs entries, variant-major (the
 * programs of targets[0], then those of targets[1]...; one variant unless
 * the artifact is fat). The top level describes progs[0]; with `batched`, a
 * "programs" list describes every program of the first variant; with several
 * variants, a "variants" list describes each (target, arena, kernels).
 * weights_bytes is the size of the (shared) weights blob.
 * `compact` leaves out the whitespace (the copy embedded in an artifact, where
 * it is bytes on disk and in memory); otherwise it is indented for people
 * (--emit manifest). */
char* hc_manifest_json(const hc_program* progs, int num_programs, int num_variants, int batched, uint64_t weights_bytes,
                       const struct hc_target* targets, const hc_lower_ctx* lc, const char* producer, int compact);

#endif /* HARNESS_BACKEND_MANIFEST_H */
