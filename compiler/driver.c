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
  } kinds[] = {{"lib", HC_EMIT_LIB},         {"obj", HC_EMIT_OBJ},           {"llvm-ir", HC_EMIT_LLVM_IR},
               {"asm", HC_EMIT_ASM},         {"manifest", HC_EMIT_MANIFEST}, {"memplan", HC_EMIT_MEMPLAN},
               {"memplan-svg", HC_EMIT_MEMPLAN_SVG}};
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); ++i) {
    if (!strcmp(kinds[i].name, s)) {
      *out = kinds[i].kind;
      return HX_OK;
    }
  }
  return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "unknown --emit '%s' (expected lib, obj, llvm-ir, asm, manifest, memplan or memplan-svg)", s);
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
    char* name = NULL;
    const char* value = NULL;
    HX_RETURN_IF_ERROR(split_assignment("--shape", o->shapes[i], &name, &value));
    hc_shape_override* s = &p->shapes[p->num_shapes++];
    s->name = name;
    hx_status_t st = hc_parse_dims(value, s->dims, &s->rank);
    if (st != HX_OK) return hx_status_annotate(st, "--shape %s", o->shapes[i]);
  }
  for (int i = 0; i < o->num_constants; ++i) {
    char* name = NULL;
    const char* value = NULL;
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

hx_status_t hc_parse_batch_list(const char* text, hc_compile_options* o) {
  o->num_batches = 0;
  const char* p = text;
  while (*p) {
    char* end;
    long long b = strtoll(p, &end, 10);
    if (end == p || b < 1)
      return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "--batch expects positive sizes separated by commas, got '%s'", text);
    if (o->num_batches == HC_MAX_BATCHES)
      return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "--batch: at most %d sizes", HC_MAX_BATCHES);
    if (o->num_batches && b <= o->batch_sizes[o->num_batches - 1])
      return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "--batch: sizes must be strictly increasing, got '%s'", text);
    o->batch_sizes[o->num_batches++] = b;
    p = end;
    if (*p == ',') ++p;
    else if (*p) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "--batch expects sizes like 1,2,4,8, got '%s'", text);
  }
  if (o->num_batches == 0) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "--batch needs at least one size");
  return HX_OK;
}

/* Imports the model (for one batch size when batch > 0) and runs the pass
 * pipeline on it. */
static hx_status_t build_graph(const hc_compile_options* o, const parsed_overrides* ov, hc_pass_ctx* pctx, int64_t batch,
                               FILE* log, hc_graph** out_g) {
  hc_graph* g = NULL;
  double t0 = now_ms();
  hc_import_options io = {ov->shapes, ov->num_shapes, ov->constants, ov->num_constants, false, batch};
  hx_status_t st = hc_import_onnx_file(o->input_path, &io, &g);
  if (st == HX_OK && o->time_passes) fprintf(log, "time: %-20s %9.3f ms  (%d nodes)\n", "import", now_ms() - t0, g->num_nodes);
  if (st == HX_OK && o->print_after && !strcmp(o->print_after, "all")) {
    fprintf(stderr, "// ----- IR after import -----\n");
    hc_graph_print(g, stderr);
  }
  if (st == HX_OK) {
    hc_pipeline_options po = {.print_after = o->print_after, .print_out = stderr, .time_passes = o->time_passes};
    st = hc_run_pipeline(pctx, g, hc_pipeline_for_level(o->opt_level), &po);
  }
  *out_g = g;
  return st;
}

/* Outputs of a batch program must lead with the batch, and differ from the
 * first program's only there, so the runtime can split results per request. */
static hx_status_t check_batch_outputs(const hc_program* p, const hc_program* first) {
  for (int i = 0; i < p->g->num_outputs; ++i) {
    const hc_value* v = p->g->outputs[i];
    const hc_value* f = first->g->outputs[i];
    bool ok = v->rank >= 1 && v->dims[0] == p->batch && v->rank == f->rank && v->dtype == f->dtype;
    for (int d = 1; ok && d < v->rank; ++d) ok = v->dims[d] == f->dims[d];
    if (!ok) {
      char shape[128];
      return hx_status_make(HX_STATUS_INVALID_ARGUMENT,
                            "--batch: output '%s' has shape %s at batch %lld; its leading dimension must be the batch "
                            "(and the rest must not depend on it) so that results can be split per request",
                            p->g->output_names[i], hc_shape_str(v->rank, v->dims, shape, sizeof shape), (long long)p->batch);
    }
  }
  return HX_OK;
}

static int popcount64(uint64_t x) {
  int n = 0;
  for (; x; x &= x - 1) ++n;
  return n;
}

/* Resolves --target (one name or a comma list, for a fat artifact) and
 * --mcpu into targets ordered most capable first (more CPU features first,
 * ties in the given order), which is the order the runtime tries them in. */
static hx_status_t parse_targets(const hc_compile_options* o, hc_target* targets, int* out_n) {
  const char* list = o->target ? o->target : "native";
  if (!strchr(list, ',')) {
    *out_n = 1;
    return hc_target_init(&targets[0], o->target, o->mcpu);
  }
  if (o->mcpu)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT,
                          "--mcpu names one CPU and cannot be combined with several --target values ('%s')", list);
  int n = 0;
  for (const char* p = list;;) {
    const char* comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == 0 || len >= 64)
      return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "--target expects names separated by commas, got '%s'", list);
    if (n == HC_MAX_TARGETS)
      return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "--target: at most %d targets in one artifact", HC_MAX_TARGETS);
    char name[64];
    memcpy(name, p, len);
    name[len] = 0;
    HX_RETURN_IF_ERROR(hc_target_init(&targets[n], name, NULL));
    for (int k = 0; k < n; ++k)
      if (targets[k].required_features == targets[n].required_features)
        return hx_status_make(HX_STATUS_INVALID_ARGUMENT,
                              "--target: %s and %s need the same CPU features, so only one of them could ever be chosen",
                              targets[k].name, targets[n].name);
    ++n;
    if (!comma) break;
    p = comma + 1;
  }
  /* Stable insertion sort, most features first. */
  for (int i = 1; i < n; ++i) {
    hc_target t = targets[i];
    int j = i;
    for (; j > 0 && popcount64(targets[j - 1].required_features) < popcount64(t.required_features); --j)
      targets[j] = targets[j - 1];
    targets[j] = t;
  }
  *out_n = n;
  return HX_OK;
}

hx_status_t hc_compile(const hc_compile_options* o) {
  FILE* log = o->log ? o->log : stderr;
  if (!o->input_path) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "no input model given");
  if (!o->output_path) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "no output path given (use -o FILE)");
  if (o->opt_level < 0 || o->opt_level > 3)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "optimisation level must be 0..3, got %d", o->opt_level);
  if (o->parallel_groups < HC_PARALLEL_GROUPS_AUTO || o->parallel_groups > HC_PARALLEL_GROUPS_NONE)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "unknown parallel-groups mode %d", o->parallel_groups);
  if (o->threads_hint < 0 || o->threads_hint > 4096)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "--threads-hint must be 1..4096, got %d", o->threads_hint);
  if (o->num_batches < 0 || o->num_batches > HC_MAX_BATCHES)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "at most %d batch sizes", HC_MAX_BATCHES);
  for (int i = 0; i < o->num_batches; ++i)
    if (o->batch_sizes[i] < 1 || (i && o->batch_sizes[i] <= o->batch_sizes[i - 1]))
      return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "batch sizes must be positive and strictly increasing");
  hc_emit_kind kind = HC_EMIT_LIB;
  HX_RETURN_IF_ERROR(parse_emit(o->emit ? o->emit : "lib", &kind));
  if (o->print_after && strcmp(o->print_after, "all") != 0 && !hc_pass_find(o->print_after))
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "--print-after: unknown pass '%s'", o->print_after);

  int precision = HC_PRECISION_FP32;
  if (o->precision) HX_RETURN_IF_ERROR(hc_precision_parse(o->precision, &precision));

  hc_target targets[HC_MAX_TARGETS], host;
  int nv = 0;
  HX_RETURN_IF_ERROR(parse_targets(o, targets, &nv));
  HX_RETURN_IF_ERROR(hc_target_host(&host));

  const int batched = o->num_batches > 0;
  const int n = batched ? o->num_batches : 1;
  /* Variant-major: program i of targets[v] is progs[v * n + i]. */
  hc_program* progs = calloc((size_t)(nv * n), sizeof(hc_program));
  hc_pass_ctx* pctxs = calloc((size_t)(nv * n), sizeof(hc_pass_ctx));
  if (!progs || !pctxs) {
    free(progs);
    free(pctxs);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  parsed_overrides ov;
  hx_status_t st = parse_overrides(o, &ov);
  for (int j = 0; j < nv * n && st == HX_OK; ++j) {
    int v = j / n, i = j % n;
    pctxs[j] = (hc_pass_ctx){.target = &targets[v], .host = &host, .opt_level = o->opt_level, .verbose = o->verbose, .log = log,
                             .precision = precision, .keep_fp32 = o->keep_fp32};
    progs[j].pctx = &pctxs[j];
    pctxs[j].parallel_groups = o->parallel_groups == HC_PARALLEL_GROUPS_ALL    ? HC_GROUPS_ALL
                               : o->parallel_groups == HC_PARALLEL_GROUPS_NONE ? HC_GROUPS_NONE
                                                                               : HC_GROUPS_AUTO;
    pctxs[j].schedule_threads = o->threads_hint;
    progs[j].batch = batched ? o->batch_sizes[i] : 0;
    if (nv > 1 && o->verbose) fprintf(log, "harnessc: target %s\n", targets[v].name);
    if (batched && o->verbose) fprintf(log, "harnessc: batch %lld\n", (long long)progs[j].batch);
    st = build_graph(o, &ov, &pctxs[j], progs[j].batch, log, &progs[j].g);
    if (st == HX_OK && batched) st = check_batch_outputs(&progs[j], &progs[v * n]);
    if (st != HX_OK && batched) st = hx_status_annotate(st, "compiling batch size %lld", (long long)progs[j].batch);
    if (st != HX_OK && nv > 1) st = hx_status_annotate(st, "compiling for target %s", targets[v].name);
  }
  if (st == HX_OK) {
    hc_emit_options eo = {.kind = kind, .output_path = o->output_path, .opt_level = o->opt_level, .producer = hc_version_string()};
    double t2 = now_ms();
    st = hc_emit_variants(progs, n, nv, batched, targets, &eo);
    if (st == HX_OK && o->time_passes) fprintf(log, "time: %-20s %9.3f ms\n", "codegen+emit", now_ms() - t2);
  }
  if (st == HX_OK && o->verbose)
    for (int v = 0; v < nv; ++v)
      fprintf(log, "harnessc: %s -> %s (%s%s, %d kernels' nodes, arena %llu bytes, weights %llu bytes%s%s)\n", o->input_path,
              o->output_path, targets[v].name, nv > 1 ? (v == 0 ? ", variant 0: preferred" : ", fallback variant") : "",
              progs[v * n].g->num_nodes, (unsigned long long)pctxs[v * n + n - 1].arena_bytes,
              (unsigned long long)pctxs[0].weights_bytes, batched ? ", shared by every batch size" : "",
              nv > 1 ? ", one blob for every variant" : "");
  for (int j = 0; j < nv * n; ++j) hc_graph_free(progs[j].g);
  free(progs);
  free(pctxs);
  free_overrides(&ov);
  return st;
}

/* Appends a status's message (one or more lines) to a growing report. */
static void append_problems(char** report, hx_status_t st) {
  const char* msg = hx_status_message(st);
  size_t old = *report ? strlen(*report) : 0;
  char* grown = realloc(*report, old + strlen(msg) + 2);
  if (grown) {
    sprintf(grown + old, "%s%s", old ? "\n" : "", msg);
    *report = grown;
  }
}

hx_status_t hc_check(const hc_compile_options* o, FILE* out) {
  if (!o->input_path) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "no input model given");
  parsed_overrides ov;
  hx_status_t st = parse_overrides(o, &ov);
  if (st != HX_OK) return st;
  hc_graph* g = NULL;
  char* report = NULL;
  /* 1. Import in collect mode: unsupported ops and attributes, symbolic
   * dimensions, bad tensors -- every one, with the graph kept. */
  hc_import_options io = {ov.shapes, ov.num_shapes, ov.constants, ov.num_constants, true};
  st = hc_import_onnx_file(o->input_path, &io, &g);
  if (st != HX_OK) {
    append_problems(&report, st);
    hx_status_free(st);
  }
  /* 2. Shape inference over what imported, collecting every node whose
   * verification fails (dtypes, attribute values, shapes); then the rest of
   * the pipeline if nothing was found. */
  if (g) {
    st = hc_graph_sort(g);
    if (st == HX_OK) {
      hc_target host;
      st = hc_target_host(&host);
      char* collected = NULL;
      hc_pass_ctx pctx = {.target = &host, .host = &host, .opt_level = 1, .log = o->log ? o->log : stderr,
                          .collected_errors = &collected};
      if (st == HX_OK) st = hc_run_pipeline(&pctx, g, hc_pipeline_for_level(1), NULL);
      if (collected) {
        hx_status_free(st);
        st = hx_status_make(HX_STATUS_INVALID_ARGUMENT, "%s", collected);
        free(collected);
      }
    }
    if (st != HX_OK) {
      append_problems(&report, st);
      hx_status_free(st);
    }
  }
  if (!report) fprintf(out, "%s: OK (%d nodes after optimisation)\n", o->input_path, g->num_nodes);
  hc_graph_free(g);
  free_overrides(&ov);
  if (!report) return HX_OK;
  st = hx_status_make(HX_STATUS_INVALID_ARGUMENT, "%s", report);
  free(report);
  return st;
}
