/* The artifact writer: lowers a planned graph to one LLVM module (kernels,
 * ABI tables, manifest, weights), optimises it for the target and emits a
 * shared object, an object file, LLVM IR, assembly or the manifest alone. */
#ifndef HARNESS_BACKEND_ARTIFACT_H
#define HARNESS_BACKEND_ARTIFACT_H

#include "compiler/backend/manifest.h"
#include "compiler/backend/target.h"
#include "passes/pass.h"

typedef enum hc_emit_kind {
  HC_EMIT_LIB = 0,  /* self-contained shared object (default) */
  HC_EMIT_OBJ,      /* relocatable object with the same contents */
  HC_EMIT_LLVM_IR,  /* optimised LLVM IR text (weights declared, not inlined) */
  HC_EMIT_ASM,      /* target assembly (weights declared, not inlined) */
  HC_EMIT_MANIFEST, /* the scheduling manifest as JSON */
  HC_EMIT_MEMPLAN,  /* the memory plan as JSON, plus its SVG picture (memplan.h) */
  HC_EMIT_MEMPLAN_SVG, /* the memory plan's SVG picture only */
} hc_emit_kind;

typedef struct hc_emit_options {
  hc_emit_kind kind;
  const char* output_path; /* "-" = stdout for text kinds */
  int opt_level;           /* 0..3: LLVM pipeline and codegen level */
  const char* producer;    /* "harnessc X.Y.Z" */
} hc_emit_options;

hx_status_t hc_emit_artifact(hc_pass_ctx* pctx, hc_graph* g, const hc_target* t, const hc_emit_options* opts);

/* Emits several programs into one artifact (harnessc --batch): their kernels
 * side by side in one module, one weights blob shared by all (identical
 * constants stored once), and, with `batched`, the ABI's program table. The
 * header describes progs[0]. Fills each program's kernel range. */
hx_status_t hc_emit_programs(hc_program* progs, int num_programs, int batched, const hc_target* t,
                             const hc_emit_options* opts);

/* Emits a fat artifact: the same programs compiled for num_variants targets
 * (best first; the runtime picks the first one the CPU runs). progs is
 * variant-major: program p of targets[v] is progs[v * num_programs + p],
 * each planned by its own pass pipeline for its target. All kernels go into
 * one module, each function carrying its variant's target-cpu/-features and
 * a symbol prefixed "v<N>_"; constants whose bytes are equal across variants
 * share one place in the weights blob, different (re-packed) ones get their
 * own. The header's arena is the largest variant's. */
hx_status_t hc_emit_variants(hc_program* progs, int num_programs, int num_variants, int batched,
                             const hc_target* targets, const hc_emit_options* opts);

#endif /* HARNESS_BACKEND_ARTIFACT_H */
