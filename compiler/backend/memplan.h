/* The memory plan as a document: `harnessc --emit memplan` (JSON, plus an
 * SVG picture next to it) and `--emit memplan-svg`. Schema: docs/memory.md.
 * Both are made from the planned graph alone (no code generation). */
#ifndef HARNESS_BACKEND_MEMPLAN_H
#define HARNESS_BACKEND_MEMPLAN_H

#include "compiler/backend/manifest.h"

/* The plan as malloc'd JSON text (free with free()); NULL on out-of-memory.
 * The top level describes progs[0]; with `batched`, a "programs" list has
 * one plan per batch size. */
char* hc_memplan_json(const hc_program* progs, int num_programs, int batched);

/* The plan of one program as a malloc'd SVG document: time (schedule steps)
 * on x, arena address on y, one rectangle per tensor or workspace whose
 * <title> names it; the live bytes per step and the lower bound are drawn
 * over it. NULL on out-of-memory. */
char* hc_memplan_svg(const hc_program* prog);

/* Writes the plan: with svg_only, the SVG to `path`; otherwise the JSON to
 * `path` ('-' = stdout) and, for a file, the SVG next to it (FILE.json ->
 * FILE.svg, any other name gets ".svg" appended). */
hx_status_t hc_memplan_write(const hc_program* progs, int num_programs, int batched, int svg_only, const char* path);

#endif /* HARNESS_BACKEND_MEMPLAN_H */
