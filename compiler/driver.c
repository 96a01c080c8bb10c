/* The compile driver: options -> import -> pass pipeline -> artifact. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler/backend/artifact.h"
#include "compiler/backend/target.h"
#include "compiler/frontend/onnx_import.h"
#include "harness/compiler.h"
#include "ir/verify.h"
#include "passes/pass.h"

#ifndef HARNESS_VERSION
#define HARNESS_VERSION "0.0.0"
#endif

const char* hc_version_string(void) { return "harnessc " HARNESS_VERSION; }

void hc_compile_options_init(hc_compile_options* o) {
  memset(o, 0, sizeof(*o));
  o->target = "native";
  o->opt_level = 3;
  o->emit = "lib";
  o->log = stderr;
}

static hx_status_t parse_emit(const char* s, hc_emit_kind* out) {
  static const struct {
    const char* name;
    hc_emit_kind kind;
  } kinds[] = {{"lib", HC_EMIT_LIB}, {"obj", HC_EMIT_OBJ}, {"llvm-ir", HC_EMIT_LLVM_IR}, {"asm", HC_EMIT_ASM}, {"manifest", HC_EMIT_MANIFEST}};
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); ++i) {
    if (!strcmp(kinds[i].name, s)) {
      *out = kinds[i].kind;
      return HX_OK;
    }
  }
  return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "unknown --emit '%s' (expected lib, obj, llvm-ir, asm or manifest)", s);
}

/* Splits "NAME=VALUE" at the last '=' (names may contain '='? ONNX names
 * rarely do; values never do). */
static hx_status_t split_assignment(const char* flag, const char* text, char** name, const char** value) {
  const char* eq = strrchr(text, '=');
  if (!eq || eq == text || !eq[1])
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "%s expects NAME=VALUE, got '%s'", flag, text);
  *name = strndup(text, (size_t)(eq - text));
  *value = eq + 1;
  return *name ? HX_OK : hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
}

typedef struct parsed_overrides {
  hc_shape_override shapes[HC_MAX_OVERRIDES];
  hc_constant_override constants[HC_MAX_OVERRIDES];
  int num_shapes, num_constants;
} parsed_overrides;

static void free_overrides(parsed_overrides* p) {
  for (int i = 0; i < p->num_shapes; ++i) free((char*)p->shapes[i].name);
  for (int i = 0; i < p->num_constants; ++i) free((char*)p->constants[i].name);
}

static hx_status_t parse_overrides(const hc_compile_options* o, parsed_overrides* p) {
  memset(p, 0, sizeof(*p));
  for (int i = 0; i < o->num_shapes; ++i) {
    char* name;
    const char* value;
    HX_RETURN_IF_ERROR(split_assignment("--shape", o->shapes[i], &name, &value));
    hc_shape_override* s = &p->shapes[p->num_shapes++];
    s->name = name;
    hx_status_t st = hc_parse_dims(value, s->dims, &s->rank);
    if (st != HX_OK) return hx_status_annotate(st, "--shape %s", o->shapes[i]);
  }
  for (int i = 0; i < o->num_constants; ++i) {
    char* name;
    const char* value;
    HX_RETURN_IF_ERROR(split_assignment("--constant", o->constants[i], &name, &value));
    p->constants[p->num_constants].name = name;
    p->constants[p->num_constants++].path = value;
  }
  return HX_OK;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

hx_status_t hc_compile(const hc_compile_options* o) {
  FILE* log = o->log ? o->log : stderr;
  if (!o->input_path) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "no input model given");
  if (!o->output_path) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "no output path given (use -o FILE)");
  if (o->opt_level < 0 || o->opt_level > 3)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "optimisation level must be 0..3, got %d", o->opt_level);
  hc_emit_kind kind = HC_EMIT_LIB;
  HX_RETURN_IF_ERROR(parse_emit(o->emit ? o->emit : "lib", &kind));
  if (o->print_after && strcmp(o->print_after, "all") != 0 && !hc_pass_find(o->print_after))
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "--print-after: unknown pass '%s'", o->print_after);

  hc_target target, host;
  HX_RETURN_IF_ERROR(hc_target_init(&target, o->target, o->mcpu));
  HX_RETURN_IF_ERROR(hc_target_host(&host));

  parsed_overrides ov;
  hx_status_t st = parse_overrides(o, &ov);
  hc_graph* g = NULL;
  double t0 = now_ms();
  if (st == HX_OK) {
    hc_import_options io = {ov.shapes, ov.num_shapes, ov.constants, ov.num_constants, false};
    st = hc_import_onnx_file(o->input_path, &io, &g);
  }
  double t1 = now_ms();
  if (st == HX_OK && o->time_passes) fprintf(log, "time: %-20s %9.3f ms  (%d nodes)\n", "import", t1 - t0, g->num_nodes);
  if (st == HX_OK && o->print_after && !strcmp(o->print_after, "all")) {
    fprintf(stderr, "// ----- IR after import -----\n");
    hc_graph_print(g, stderr);
  }
  hc_pass_ctx pctx = {.target = &target, .host = &host, .opt_level = o->opt_level, .verbose = o->verbose, .log = log};
  if (st == HX_OK) {
    hc_pipeline_options po = {.print_after = o->print_after, .print_out = stderr, .time_passes = o->time_passes};
    st = hc_run_pipeline(&pctx, g, hc_pipeline_for_level(o->opt_level), &po);
  }
  if (st == HX_OK) {
    hc_emit_options eo = {.kind = kind, .output_path = o->output_path, .opt_level = o->opt_level, .producer = hc_version_string()};
    double t2 = now_ms();
    st = hc_emit_artifact(&pctx, g, &target, &eo);
    if (st == HX_OK && o->time_passes) fprintf(log, "time: %-20s %9.3f ms\n", "codegen+emit", now_ms() - t2);
  }
  if (st == HX_OK && o->verbose)
    fprintf(log, "harnessc: %s -> %s (%s, %d kernels' nodes, arena %llu bytes, weights %llu bytes)\n", o->input_path,
            o->output_path, target.name, g->num_nodes, (unsigned long long)pctx.arena_bytes,
            (unsigned long long)pctx.weights_bytes);
  hc_graph_free(g);
  free_overrides(&ov);
  return st;
}

hx_status_t hc_check(const hc_compile_options* o, FILE* out) {
  if (!o->input_path) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "no input model given");
  parsed_overrides ov;
  hx_status_t st = parse_overrides(o, &ov);
  hc_graph* g = NULL;
  if (st == HX_OK) {
    hc_import_options io = {ov.shapes, ov.num_shapes, ov.constants, ov.num_constants, true};
    st = hc_import_onnx_file(o->input_path, &io, &g);
  }
  if (st == HX_OK) {
    hc_target host;
    st = hc_target_host(&host);
    hc_pass_ctx pctx = {.target = &host, .host = &host, .opt_level = 1, .log = o->log ? o->log : stderr};
    if (st == HX_OK) st = hc_run_pipeline(&pctx, g, hc_pipeline_for_level(1), NULL);
  }
  if (st == HX_OK) fprintf(out, "%s: OK (%d nodes after optimisation)\n", o->input_path, g->num_nodes);
  hc_graph_free(g);
  free_overrides(&ov);
  return st;
}
