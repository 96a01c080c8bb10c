/* Artifact writer (see artifact.h). The ABI tables mirror
 * runtime/include/harness/artifact_abi.h field by field. */
#define _GNU_SOURCE
#include "compiler/backend/artifact.h"

#include <errno.h>
#include <llvm-c/Core.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "compiler/backend/blob_object.h"
#include "compiler/backend/link.h"
#include "compiler/backend/manifest.h"
#include "compiler/backend/memplan.h"
#include "compiler/codegen/llvm_util.h"
#include "compiler/ops/dynamic.h"
#include "compiler/ops/op.h"
#include "harness/artifact_abi.h"
#include "harness/compiler.h"

#define WEIGHTS_SYMBOL "harness_weights"

typedef struct abi_types {
  LLVMTypeRef i16, i32, i64, f64, ptr;
  LLVMTypeRef tensor, kernel, variant, program, dynamic_output, header;
} abi_types;

static void abi_types_init(LLVMContextRef c, abi_types* t) {
  t->i16 = LLVMInt16TypeInContext(c);
  t->i32 = LLVMInt32TypeInContext(c);
  t->i64 = LLVMInt64TypeInContext(c);
  t->f64 = LLVMDoubleTypeInContext(c);
  t->ptr = LLVMPointerTypeInContext(c, 0);
  LLVMTypeRef tensor[] = {t->ptr, t->ptr, t->i64, t->i32, t->i32};
  t->tensor = LLVMStructTypeInContext(c, tensor, 5, 0);
  LLVMTypeRef kernel[] = {t->ptr, t->ptr, t->i64, t->f64, t->f64, t->i32, t->i32, t->i32, t->i32};
  t->kernel = LLVMStructTypeInContext(c, kernel, 9, 0);
  LLVMTypeRef variant[] = {t->ptr, t->i64, t->ptr, t->i32, t->i32};
  t->variant = LLVMStructTypeInContext(c, variant, 5, 0);
  LLVMTypeRef program[] = {t->i64, t->i64, t->ptr, t->ptr, t->ptr, t->i32, t->i32};
  t->program = LLVMStructTypeInContext(c, program, 7, 0);
  LLVMTypeRef dynamic_output[] = {t->i32, t->i32, t->i64};
  t->dynamic_output = LLVMStructTypeInContext(c, dynamic_output, 3, 0);
  LLVMTypeRef header[] = {t->i32, t->i16, t->i16, t->i32, t->i32, t->ptr, t->ptr, t->ptr, t->i64,
                          t->i64, t->ptr, t->i64, t->ptr, t->ptr, t->i32, t->i32, t->ptr, t->i32,
                          t->i32, t->ptr, t->i32, t->i32, t->ptr, t->i32, t->i32, t->ptr, t->i64, t->i64};
  t->header = LLVMStructTypeInContext(c, header, 28, 0);
}

static LLVMValueRef private_const(LLVMModuleRef mod, LLVMValueRef init, const char* name) {
  LLVMValueRef g = LLVMAddGlobal(mod, LLVMTypeOf(init), name);
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  return g;
}

static LLVMValueRef cstring(LLVMContextRef c, LLVMModuleRef mod, const char* s) {
  return private_const(mod, LLVMConstStringInContext2(c, s, strlen(s), 0), ".str");
}

static LLVMValueRef i32c(abi_types* t, int64_t x) { return LLVMConstInt(t->i32, (unsigned long long)x, 1); }
static LLVMValueRef i64c(abi_types* t, int64_t x) { return LLVMConstInt(t->i64, (unsigned long long)x, 1); }

static LLVMValueRef tensor_entry(LLVMContextRef c, LLVMModuleRef mod, abi_types* t, const hc_value* v, const char* name) {
  LLVMValueRef dims[HC_MAX_RANK];
  for (int d = 0; d < v->rank; ++d) dims[d] = i64c(t, v->dims[d]);
  LLVMValueRef dims_g = v->rank ? private_const(mod, LLVMConstArray2(t->i64, dims, (uint64_t)v->rank), ".dims")
                                : LLVMConstNull(t->ptr);
  LLVMValueRef f[] = {cstring(c, mod, name), dims_g, i64c(t, (int64_t)hc_value_nbytes(v)), i32c(t, v->dtype), i32c(t, v->rank)};
  return LLVMConstNamedStruct(t->tensor, f, 5);
}

/* The tables of one program: signature, and its kernels once per variant. */
typedef struct program_tables {
  LLVMValueRef inputs, outputs, variants;
} program_tables;

/* One variant entry: the kernels of program p compiled for target tgt. */
static LLVMValueRef variant_entry(LLVMContextRef c, LLVMModuleRef mod, abi_types* t, const hc_program* p,
                                  const hc_target* tgt, const hc_lower_ctx* lc) {
  int nk = p->num_kernels;
  LLVMValueRef* ks = malloc(sizeof(LLVMValueRef) * (size_t)(nk + 1));
  for (int k = 0; k < nk; ++k) {
    const hc_kernel_rec* r = &lc->kernels[p->first_kernel + k];
    int lane = hc_kernel_lane(r);
    LLVMValueRef f[] = {cstring(c, mod, r->name), r->fn, i64c(t, r->tasks), LLVMConstReal(t->f64, r->flops),
                        LLVMConstReal(t->f64, r->bytes), i32c(t, r->stage), i32c(t, HX_DEVICE_CPU), i32c(t, r->group),
                        i32c(t, lane)};
    ks[k] = LLVMConstNamedStruct(t->kernel, f, 9);
  }
  LLVMValueRef ks_g = nk ? private_const(mod, LLVMConstArray2(t->kernel, ks, (uint64_t)nk), ".kernels") : LLVMConstNull(t->ptr);
  free(ks);
  LLVMValueRef vf[] = {cstring(c, mod, tgt->name), i64c(t, (int64_t)tgt->required_features), ks_g, i32c(t, nk), i32c(t, 0)};
  return LLVMConstNamedStruct(t->variant, vf, 5);
}

/* progs is variant-major: program p of variant v is progs[v * num_programs + p]. */
static program_tables emit_program_tables(LLVMContextRef c, LLVMModuleRef mod, abi_types* t, const hc_program* progs,
                                          int num_programs, int num_variants, int p, const hc_target* tgts,
                                          const hc_lower_ctx* lc) {
  const hc_graph* g = progs[p].g;
  int nin = g->num_inputs, nout = g->num_outputs;
  program_tables out;
  LLVMValueRef* ins = malloc(sizeof(LLVMValueRef) * (size_t)(nin + 1));
  LLVMValueRef* outs = malloc(sizeof(LLVMValueRef) * (size_t)(nout + 1));
  for (int i = 0; i < nin; ++i) ins[i] = tensor_entry(c, mod, t, g->inputs[i], g->inputs[i]->name);
  for (int i = 0; i < nout; ++i) outs[i] = tensor_entry(c, mod, t, g->outputs[i], g->output_names[i]);
  out.inputs = nin ? private_const(mod, LLVMConstArray2(t->tensor, ins, (uint64_t)nin), ".inputs") : LLVMConstNull(t->ptr);
  out.outputs = private_const(mod, LLVMConstArray2(t->tensor, outs, (uint64_t)nout), ".outputs");
  free(ins);
  free(outs);
  LLVMValueRef vs[HC_MAX_TARGETS];
  for (int v = 0; v < num_variants; ++v)
    vs[v] = variant_entry(c, mod, t, &progs[v * num_programs + p], &tgts[v], lc);
  out.variants = private_const(mod, LLVMConstArray2(t->variant, vs, (uint64_t)num_variants), ".variants");
  return out;
}

/* The arena program p needs: the largest over its variants (the memory
 * plan depends on the target's kernel plans and layouts). */
static uint64_t program_arena_bytes(const hc_program* progs, int num_programs, int num_variants, int p) {
  uint64_t m = 0;
  for (int v = 0; v < num_variants; ++v) {
    uint64_t b = progs[v * num_programs + p].pctx->arena_bytes;
    if (b > m) m = b;
  }
  return m;
}

/* The manifest as one zlib stream (ABI 1.3's manifest_z), made with
 * compress2 at Z_BEST_COMPRESSION: the embedded copy is compact JSON, tens
 * to hundreds of KB of the same keys on every kernel and tensor, which
 * level 9 shrinks 8-15x (6-9% smaller than the default level 6) for about
 * 3 ms once per compile; inflating costs the same at any level, once per
 * load. zlib's output depends only on the input, the level and the zlib
 * version, so artifacts stay byte-identical. On success *out is malloc'd
 * (free()). */
static hx_status_t deflate_manifest(const char* manifest, size_t len, unsigned char** out, size_t* out_bytes) {
  *out = NULL;
  *out_bytes = 0;
  uLongf cap = compressBound((uLong)len);
  unsigned char* buf = malloc(cap ? cap : 1);
  if (!buf) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory compressing the manifest");
  int rc = compress2(buf, &cap, (const Bytef*)manifest, (uLong)len, Z_BEST_COMPRESSION);
  if (rc != Z_OK) {
    free(buf);
    return hx_status_make(rc == Z_MEM_ERROR ? HX_STATUS_OUT_OF_MEMORY : HX_STATUS_INTERNAL,
                          "zlib could not compress the %zu-byte manifest (compress2 returned %d)", len, rc);
  }
  *out = buf;
  *out_bytes = (size_t)cap;
  return HX_OK;
}

/* Builds the ABI header, its tables and harness_artifact_query(). The header
 * describes program 0; a batched artifact also lists every program. The
 * manifest goes in compressed (ABI 1.3): the header's manifest_z points at
 * the manifest_z_bytes bytes of the zlib stream, manifest_bytes is the
 * length of the JSON text, and manifest_json is NULL. */
static void emit_abi_tables(LLVMContextRef c, LLVMModuleRef mod, const hc_program* progs, int num_programs,
                            int num_variants, int batched, const hc_target* tgts, const hc_lower_ctx* lc,
                            const unsigned char* manifest_z, size_t manifest_z_bytes, size_t manifest_bytes,
                            const char* producer, LLVMValueRef weights, uint64_t weights_bytes) {
  abi_types t;
  abi_types_init(c, &t);
  const hc_graph* g = progs[0].g;
  int nin = g->num_inputs, nout = g->num_outputs;
  program_tables first = emit_program_tables(c, mod, &t, progs, num_programs, num_variants, 0, tgts, lc);
  LLVMValueRef programs_g = LLVMConstNull(t.ptr);
  if (batched) {
    LLVMValueRef* ps = malloc(sizeof(LLVMValueRef) * (size_t)num_programs);
    for (int i = 0; i < num_programs; ++i) {
      program_tables pt = i == 0 ? first : emit_program_tables(c, mod, &t, progs, num_programs, num_variants, i, tgts, lc);
      LLVMValueRef f[] = {i64c(&t, progs[i].batch), i64c(&t, (int64_t)program_arena_bytes(progs, num_programs, num_variants, i)),
                          pt.inputs, pt.outputs, pt.variants, i32c(&t, num_variants), i32c(&t, 0)};
      ps[i] = LLVMConstNamedStruct(t.program, f, 7);
    }
    programs_g = private_const(mod, LLVMConstArray2(t.program, ps, (uint64_t)num_programs), ".programs");
    free(ps);
  }

  /* ABI 1.2: outputs with value-dependent shapes and their dims slots. */
  LLVMValueRef dynamic_g = LLVMConstNull(t.ptr);
  int num_dynamic = 0;
  {
    int cap = 0;
    for (int p = 0; p < (batched ? num_programs : 1); ++p) cap += progs[p].g->num_outputs;
    LLVMValueRef* ds = malloc(sizeof(LLVMValueRef) * (size_t)(cap + 1));
    for (int p = 0; ds && p < (batched ? num_programs : 1); ++p) {
      const hc_graph* pg = progs[p].g;
      for (int i = 0; i < pg->num_outputs; ++i) {
        const hc_value* v = pg->outputs[i];
        if (!v->dynamic) continue;
        LLVMValueRef f[] = {i32c(&t, p), i32c(&t, i), i64c(&t, (int64_t)hc_dyn_owner(v)->dyn_dims_offset)};
        ds[num_dynamic++] = LLVMConstNamedStruct(t.dynamic_output, f, 3);
      }
    }
    if (num_dynamic)
      dynamic_g = private_const(mod, LLVMConstArray2(t.dynamic_output, ds, (uint64_t)num_dynamic), ".dynamic_outputs");
    free(ds);
  }

  /* ABI 1.3: the compressed manifest, raw bytes without a terminating NUL. */
  LLVMValueRef manifest_z_g =
      private_const(mod, LLVMConstStringInContext2(c, (const char*)manifest_z, manifest_z_bytes, 1), ".manifest_z");

  LLVMValueRef hf[] = {
      i32c(&t, HX_ABI_MAGIC), LLVMConstInt(t.i16, HX_ABI_VERSION_MAJOR, 0), LLVMConstInt(t.i16, HX_ABI_VERSION_MINOR, 0),
      i32c(&t, (int64_t)sizeof(hx_abi_header)), i32c(&t, HX_BASE_FIRST_IO + nin + nout),
      cstring(c, mod, producer), cstring(c, mod, g->name), LLVMConstNull(t.ptr),
      i64c(&t, (int64_t)program_arena_bytes(progs, num_programs, num_variants, 0)), i64c(&t, 64), weights,
      i64c(&t, (int64_t)weights_bytes), first.inputs, first.outputs, i32c(&t, nin), i32c(&t, nout), first.variants,
      i32c(&t, num_variants), i32c(&t, 0),
      programs_g, i32c(&t, batched ? num_programs : 0), i32c(&t, 0), dynamic_g, i32c(&t, num_dynamic), i32c(&t, 0),
      manifest_z_g, i64c(&t, (int64_t)manifest_z_bytes), i64c(&t, (int64_t)manifest_bytes)};
  LLVMValueRef header = private_const(mod, LLVMConstNamedStruct(t.header, hf, 28), "harness_header");
  LLVMSetAlignment(header, 16);

  LLVMTypeRef qty = LLVMFunctionType(t.ptr, NULL, 0, 0);
  LLVMValueRef q = LLVMAddFunction(mod, HX_ARTIFACT_QUERY_SYMBOL, qty);
  LLVMSetLinkage(q, LLVMExternalLinkage);
  LLVMSetVisibility(q, LLVMDefaultVisibility);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, q, "entry"));
  LLVMBuildRet(b, header);
  LLVMDisposeBuilder(b);
}

/* Gives the weights of several programs one blob (passes/weights_layout.c):
 * a constant whose bytes equal an already placed one (the same initializer
 * compiled for another batch size or target) shares its offset. */
static hx_status_t share_weights(hc_program* progs, int n, uint64_t* out_bytes) {
  hc_graph** graphs = malloc((size_t)n * sizeof *graphs);
  if (!graphs) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory sharing weights");
  for (int p = 0; p < n; ++p) graphs[p] = progs[p].g;
  hx_status_t st = hc_weights_layout(graphs, n, out_bytes);
  free(graphs);
  if (st == HX_OK)
    for (int p = 0; p < n; ++p) progs[p].pctx->weights_bytes = *out_bytes;
  return st;
}

/* Parallel-group ids of one program's kernels: kernels of nodes in the same
 * schedule group share an id, and so do consecutive kernels of one node
 * with sublanes (hc_kernel_rec.sublane); every other kernel is a group of
 * its own. Ids increase along the table, as the ABI requires. */
static void assign_kernel_groups(hc_lower_ctx* lc, const hc_program* p) {
  int id = -1, prev_node_group = 0;
  const hc_kernel_rec* prev = NULL;
  for (int k = p->first_kernel; k < p->first_kernel + p->num_kernels; ++k) {
    hc_kernel_rec* r = &lc->kernels[k];
    int ng = r->node ? r->node->group : 0;
    bool same = r->sublane > 0 ? prev && prev->sublane > 0 && prev->node == r->node
                               : ng != 0 && ng == prev_node_group && !(prev && prev->sublane > 0);
    if (!same) ++id;
    r->group = id;
    prev_node_group = ng;
    prev = r;
  }
}

/* Every program's weights at their planned offsets, written through
 * `write` (into a buffer, or straight into the weights object's file), in
 * offset order. A place several constants share (equal bytes,
 * passes/weights_layout.c) is written once. */
typedef struct weights_src {
  const hc_program* progs;
  int n;
  uint64_t bytes;
} weights_src;

static int by_storage_offset(const void* a, const void* b) {
  uint64_t x = (*(const hc_value* const*)a)->storage.offset, y = (*(const hc_value* const*)b)->storage.offset;
  return x < y ? -1 : x > y;
}

static hx_status_t fill_weights(void* ctx, hc_blob_write_fn write, void* sink) {
  const weights_src* w = ctx;
  size_t values = 1, count = 0;
  for (int p = 0; p < w->n; ++p) values += (size_t)w->progs[p].g->num_values;
  const hc_value** vals = malloc(values * sizeof *vals);
  if (!vals) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory writing the weights");
  for (int p = 0; p < w->n; ++p)
    for (int i = 0; i < w->progs[p].g->num_values; ++i) {
      const hc_value* v = w->progs[p].g->values[i];
      if (v->kind == HC_VALUE_CONST && v->storage.base == HX_BASE_WEIGHTS && hc_value_nbytes(v) > 0) vals[count++] = v;
    }
  qsort(vals, count, sizeof *vals, by_storage_offset);
  hx_status_t st = HX_OK;
  for (size_t i = 0; i < count && st == HX_OK; ++i)
    if (i == 0 || vals[i]->storage.offset != vals[i - 1]->storage.offset)
      st = write(sink, vals[i]->storage.offset, vals[i]->data, hc_value_nbytes(vals[i]));
  free(vals);
  return st;
}

static hx_status_t buffer_write(void* sink, uint64_t offset, const void* data, uint64_t size) {
  memcpy((unsigned char*)sink + offset, data, size);
  return HX_OK;
}

/* Packs every program's weights at their planned offsets into one buffer. */
static hx_status_t pack_weights(const hc_program* progs, int n, uint64_t bytes, unsigned char** out) {
  unsigned char* buf = calloc(1, bytes ? bytes : 1);
  if (!buf) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "cannot allocate %llu bytes of weights", (unsigned long long)bytes);
  weights_src src = {progs, n, bytes};
  hx_status_t st = fill_weights(&src, buffer_write, buf);
  if (st != HX_OK) {
    free(buf);
    return st;
  }
  *out = buf;
  return HX_OK;
}

static hx_status_t write_text(const char* path, const char* text) {
  if (!strcmp(path, "-")) {
    fputs(text, stdout);
    fputc('\n', stdout);
    return HX_OK;
  }
  FILE* f = fopen(path, "w");
  if (!f) return hx_status_make(HX_STATUS_IO, "cannot create '%s': %s", path, strerror(errno));
  fputs(text, f);
  fputc('\n', f);
  if (fclose(f) != 0) return hx_status_make(HX_STATUS_IO, "cannot write '%s'", path);
  return HX_OK;
}

static hx_status_t emit_to_file(LLVMTargetMachineRef tm, LLVMModuleRef mod, const char* path, LLVMCodeGenFileType kind) {
  char* err = NULL;
  if (LLVMTargetMachineEmitToFile(tm, mod, path, kind, &err))
    return hc_llvm_message(err, HX_STATUS_IO, "LLVM code generation failed");
  return HX_OK;
}

hx_status_t hc_emit_artifact(hc_pass_ctx* pctx, hc_graph* g, const hc_target* tgt, const hc_emit_options* opts) {
  hc_program p = {.g = g, .pctx = pctx};
  return hc_emit_programs(&p, 1, 0, tgt, opts);
}

hx_status_t hc_emit_programs(hc_program* progs, int num_programs, int batched, const hc_target* tgt,
                             const hc_emit_options* opts) {
  return hc_emit_variants(progs, num_programs, 1, batched, tgt, opts);
}

/* A fat artifact's ABI tables have one dims slot per dynamic output, shared
 * by the variants, so their memory plans must agree on it. */
static hx_status_t check_variant_dynamic_outputs(const hc_program* progs, int num_programs, int num_variants) {
  for (int v = 1; v < num_variants; ++v)
    for (int p = 0; p < num_programs; ++p) {
      const hc_graph* g0 = progs[p].g;
      const hc_graph* gv = progs[v * num_programs + p].g;
      for (int i = 0; i < g0->num_outputs && i < gv->num_outputs; ++i) {
        if (!g0->outputs[i]->dynamic) continue;
        if (!gv->outputs[i]->dynamic ||
            hc_dyn_owner(gv->outputs[i])->dyn_dims_offset != hc_dyn_owner(g0->outputs[i])->dyn_dims_offset)
          return hx_status_make(HX_STATUS_UNSUPPORTED,
                                "fat artifacts do not support output '%s' (value-dependent shape) yet: its memory plan "
                                "differs between targets; compile one target at a time",
                                g0->output_names[i]);
      }
    }
  return HX_OK;
}

hx_status_t hc_emit_variants(hc_program* progs, int num_programs, int num_variants, int batched,
                             const hc_target* tgts, const hc_emit_options* opts) {
  if (num_programs < 1 || num_variants < 1 || num_variants > HC_MAX_TARGETS)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "no program to emit");
  const int total = num_programs * num_variants;
  const hc_target* tgt = &tgts[num_variants - 1]; /* the module's target machine: the least capable */
  if (num_variants > 1 && (opts->kind == HC_EMIT_MEMPLAN || opts->kind == HC_EMIT_MEMPLAN_SVG))
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT,
                          "--emit memplan/memplan-svg describes one target's memory plan: give a single --target");
  if (num_variants > 1) HX_RETURN_IF_ERROR(check_variant_dynamic_outputs(progs, num_programs, num_variants));
  /* The memory plan needs no code: written straight from the planned graphs. */
  if (opts->kind == HC_EMIT_MEMPLAN || opts->kind == HC_EMIT_MEMPLAN_SVG)
    return hc_memplan_write(progs, num_programs, batched, opts->kind == HC_EMIT_MEMPLAN_SVG, opts->output_path);
  hc_graph* g = progs[0].g;
  uint64_t weights_bytes = progs[0].pctx->weights_bytes;
  if (total > 1) HX_RETURN_IF_ERROR(share_weights(progs, total, &weights_bytes));
  hc_llvm_init();
  hx_status_t st = HX_OK;
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(g->name, c);
  LLVMSetSourceFileName(mod, g->name, strlen(g->name));
  LLVMTargetMachineRef tm = NULL;
  hc_arena names;
  hc_arena_init(&names);
  hc_lower_ctx lc = {.llctx = c, .mod = mod, .target = tgt, .graph = g, .arena = &names};
  char* manifest = NULL;
  unsigned char* manifest_z = NULL;
  unsigned char* wbuf = NULL;
  char tmp_obj[] = "/tmp/harnessc-XXXXXX.o";
  char tmp_blob[] = "/tmp/harnessc-weights-XXXXXX.o";
  bool tmp_made = false, blob_made = false;

  st = hc_target_machine(tgt, opts->opt_level, &tm);
  if (st != HX_OK) goto done;
  LLVMSetTarget(mod, tgt->triple);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(mod, dl);
  LLVMDisposeTargetData(dl);

  char prefix[16];
  for (int p = 0; p < total && st == HX_OK; ++p) {
    hc_graph* pg = progs[p].g;
    const hc_target* vt = &tgts[p / num_programs];
    lc.graph = pg;
    lc.target = vt;
    if (num_variants > 1) {
      snprintf(prefix, sizeof prefix, "v%d_", p / num_programs);
      lc.symbol_prefix = prefix;
    }
    progs[p].first_kernel = lc.num_kernels;
    for (int i = 0; i < pg->num_nodes && st == HX_OK; ++i) st = hc_op_lower(&lc, pg->nodes[i]);
    if (st != HX_OK && batched) st = hx_status_annotate(st, "batch %lld", (long long)progs[p].batch);
    if (st != HX_OK && num_variants > 1) st = hx_status_annotate(st, "target %s", vt->name);
    progs[p].num_kernels = lc.num_kernels - progs[p].first_kernel;
    if (st == HX_OK) assign_kernel_groups(&lc, &progs[p]);
    /* A fat artifact's module has the least capable target machine; each
     * kernel carries its own variant's CPU so LLVM's vectoriser, instruction
     * selection and scheduling see that variant's ISA (function multiversioning). */
    for (int k = progs[p].first_kernel; num_variants > 1 && k < lc.num_kernels; ++k)
      for (int which = 0; which < 2; ++which) {
        LLVMValueRef fn = which ? lc.kernels[k].body : lc.kernels[k].fn;
        LLVMAddTargetDependentFunctionAttr(fn, "target-cpu", vt->cpu);
        /* Always set (even ""), or the module machine's feature string would apply. */
        LLVMAddTargetDependentFunctionAttr(fn, "target-features", vt->features);
      }
  }
  lc.graph = g;
  lc.target = &tgts[0];
  lc.symbol_prefix = NULL;
  if (st != HX_OK) goto done;

  manifest = hc_manifest_json(progs, num_programs, num_variants, batched, weights_bytes, tgts, &lc, opts->producer,
                              opts->kind != HC_EMIT_MANIFEST);
  if (!manifest) {
    st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory writing the manifest");
    goto done;
  }
  if (opts->kind == HC_EMIT_MANIFEST) {
    st = write_text(opts->output_path, manifest);
    goto done;
  }
  size_t manifest_len = strlen(manifest), manifest_z_bytes = 0;
  st = deflate_manifest(manifest, manifest_len, &manifest_z, &manifest_z_bytes);
  if (st != HX_OK) goto done;

  /* Weights are declared now (the tables point at them) and defined only
   * after optimisation, so LLVM's passes never walk the blob. */
  LLVMTypeRef wty = LLVMArrayType2(LLVMInt8TypeInContext(c), weights_bytes ? weights_bytes : 1);
  LLVMValueRef weights = LLVMAddGlobal(mod, wty, WEIGHTS_SYMBOL);
  LLVMSetAlignment(weights, 64);
  LLVMSetGlobalConstant(weights, 1);
  emit_abi_tables(c, mod, progs, num_programs, num_variants, batched, tgts, &lc, manifest_z, manifest_z_bytes,
                  manifest_len, opts->producer, weights, weights_bytes);

  st = hc_llvm_verify_module(mod);
  if (st == HX_OK) st = hc_kb_share_bodies(&lc, tm);
  if (st != HX_OK) goto done;
  {
    char pipeline[32];
    snprintf(pipeline, sizeof pipeline, "default<O%d>", opts->opt_level < 0 ? 0 : opts->opt_level > 3 ? 3 : opts->opt_level);
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    st = hc_llvm_error(LLVMRunPasses(mod, pipeline, tm, po), "LLVM optimisation failed");
    LLVMDisposePassBuilderOptions(po);
    if (st != HX_OK) goto done;
  }

  if (opts->kind == HC_EMIT_LLVM_IR) {
    char* text = LLVMPrintModuleToString(mod);
    st = write_text(opts->output_path, text);
    LLVMDisposeMessage(text);
    goto done;
  }
  if (opts->kind == HC_EMIT_ASM) {
    if (!strcmp(opts->output_path, "-")) {
      LLVMMemoryBufferRef buf = NULL;
      char* err = NULL;
      if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &err, &buf)) {
        st = hc_llvm_message(err, HX_STATUS_INTERNAL, "LLVM code generation failed");
        goto done;
      }
      fwrite(LLVMGetBufferStart(buf), 1, LLVMGetBufferSize(buf), stdout);
      LLVMDisposeMemoryBuffer(buf);
    } else {
      st = emit_to_file(tm, mod, opts->output_path, LLVMAssemblyFile);
    }
    goto done;
  }

  if (opts->kind == HC_EMIT_OBJ) {
    /* One self-contained object: the weights are an LLVM constant. */
    st = pack_weights(progs, total, weights_bytes, &wbuf);
    if (st != HX_OK) goto done;
    LLVMSetInitializer(weights, LLVMConstStringInContext2(c, (const char*)wbuf, weights_bytes ? weights_bytes : 1, 1));
    LLVMSetLinkage(weights, LLVMInternalLinkage);
    free(wbuf);
    wbuf = NULL;
    st = emit_to_file(tm, mod, opts->output_path, LLVMObjectFile);
    goto done;
  }
  /* A shared object: the code's object refers to the weights as a hidden
   * symbol that a second object, written straight from the graphs
   * (blob_object.c), defines; the linker joins them. LLVM never holds the
   * weights, so the compile needs no copies of them beyond the graphs'. */
  LLVMSetVisibility(weights, LLVMHiddenVisibility);
  {
    int fd = mkstemps(tmp_obj, 2);
    if (fd < 0) {
      st = hx_status_make(HX_STATUS_IO, "cannot create a temporary object file: %s", strerror(errno));
      goto done;
    }
    close(fd);
    tmp_made = true;
    fd = mkstemps(tmp_blob, 2);
    if (fd < 0) {
      st = hx_status_make(HX_STATUS_IO, "cannot create a temporary object file: %s", strerror(errno));
      goto done;
    }
    close(fd);
    blob_made = true;
    st = emit_to_file(tm, mod, tmp_obj, LLVMObjectFile);
    weights_src src = {progs, total, weights_bytes};
    if (st == HX_OK)
      st = hc_write_blob_object(tmp_blob, WEIGHTS_SYMBOL, weights_bytes ? weights_bytes : 1, 64, fill_weights, &src);
    const char* objs[2] = {tmp_obj, tmp_blob};
    if (st == HX_OK) st = hc_link_shared(objs, 2, opts->output_path);
  }

done:
  if (tmp_made) unlink(tmp_obj);
  if (blob_made) unlink(tmp_blob);
  free(wbuf);
  free(manifest);
  free(manifest_z);
  free(lc.kernels);
  hc_arena_release(&names);
  if (tm) LLVMDisposeTargetMachine(tm);
  LLVMDisposeModule(mod);
  LLVMContextDispose(c);
  return st;
}
