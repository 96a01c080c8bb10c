/* Artifact loading: dlopen, ABI check, variant choice by CPU features, the
 * per-program execution plans, and the manifest (inflated at load). */
#define _GNU_SOURCE
#include "model.h"

#include "manifest.h"
#include "weights_memory.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static hx_status_t check_tensor_table(const hx_abi_tensor* t, uint32_t n, const char* what) {
  for (uint32_t i = 0; i < n; ++i) {
    if (!t[i].name || t[i].rank < 0 || (t[i].rank > 0 && !t[i].dims) ||
        hx_dtype_size((hx_dtype_t)t[i].dtype) == 0)
      return hx_status_make(HX_STATUS_INCOMPATIBLE, "artifact %s %u has a malformed descriptor", what, i);
  }
  return HX_OK;
}

/* Describes the features in `missing` as "avx512f, avx512bw". */
static void describe_features(uint64_t missing, char* buf, size_t cap) {
  buf[0] = '\0';
  size_t used = 0;
  for (int bit = 0; bit < 64; ++bit) {
    if (!(missing & (1ull << bit))) continue;
    const char* name = hx_cpu_feature_name(1ull << bit);
    int n = snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", name);
    if (n < 0 || (size_t)n >= cap - used) break;
    used += (size_t)n;
  }
}

static const hx_abi_program* header_programs(const hx_abi_header* h, uint32_t* out_count) {
  *out_count = 0;
  if (h->abi_minor < 1 || h->header_bytes < HX_ABI_HEADER_BYTES_1_1 || !h->programs) return NULL;
  *out_count = h->num_programs;
  return h->programs;
}

/* Every input and output of a batch program has the batch as leading dim. */
static hx_status_t check_batch_dims(const hx_abi_tensor* t, uint32_t n, int64_t batch, const char* what) {
  for (uint32_t i = 0; i < n; ++i)
    if (t[i].rank < 1 || t[i].dims[0] != batch)
      return hx_status_make(HX_STATUS_INCOMPATIBLE, "batch-%lld program: %s '%s' does not have the batch as its leading dimension",
                            (long long)batch, what, t[i].name);
  return HX_OK;
}

/* Builds m->programs from the header: one program per compiled batch size,
 * or the header's own code as the only program. `vi` is the index of the
 * chosen code variant, the same in every program. */
static hx_status_t load_programs(hx_model_t* m, uint32_t vi, const char* path) {
  const hx_abi_header* h = m->header;
  uint32_t n = 0;
  const hx_abi_program* ps = header_programs(h, &n);
  m->batched = n > 0;
  m->num_programs = n ? n : 1;
  m->programs = calloc(m->num_programs, sizeof(hx_program));
  if (!m->programs) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  for (uint32_t i = 0; i < m->num_programs; ++i) {
    hx_program* p = &m->programs[i];
    if (n) {
      const hx_abi_program* ap = &ps[i];
      if (ap->num_variants != h->num_variants || !ap->variants || ap->batch < 1 ||
          (i > 0 && ap->batch <= ps[i - 1].batch))
        return hx_status_make(HX_STATUS_INCOMPATIBLE, "artifact '%s' has a malformed batch program table", path);
      HX_RETURN_IF_ERROR(check_tensor_table(ap->inputs, h->num_inputs, "input"));
      HX_RETURN_IF_ERROR(check_tensor_table(ap->outputs, h->num_outputs, "output"));
      HX_RETURN_IF_ERROR(check_batch_dims(ap->inputs, h->num_inputs, ap->batch, "input"));
      HX_RETURN_IF_ERROR(check_batch_dims(ap->outputs, h->num_outputs, ap->batch, "output"));
      p->batch = ap->batch;
      p->arena_bytes = ap->arena_bytes;
      p->inputs = ap->inputs;
      p->outputs = ap->outputs;
      p->variant = &ap->variants[vi];
    } else {
      p->arena_bytes = h->arena_bytes;
      p->inputs = h->inputs;
      p->outputs = h->outputs;
      p->variant = m->variant;
    }
    hx_status_t st = hx_exec_plan_build(p->variant->kernels, p->variant->num_kernels, &p->plan);
    if (st != HX_OK) return hx_status_annotate(st, "artifact '%s'", path);
    if (p->arena_bytes > m->max_arena_bytes) m->max_arena_bytes = p->arena_bytes;
    if (p->plan.max_lanes > m->max_lanes) m->max_lanes = p->plan.max_lanes;
  }
  return HX_OK;
}

/* ABI 1.2: records the dims slot of every output with a value-dependent
 * shape (hx_abi_dynamic_output); every other output, and every output of an
 * older artifact, is static (-1). */
static hx_status_t load_dynamic_outputs(hx_model_t* m, const char* path) {
  const hx_abi_header* h = m->header;
  for (uint32_t i = 0; i < m->num_programs; ++i) {
    hx_program* p = &m->programs[i];
    p->dims_offsets = malloc(sizeof(int64_t) * (h->num_outputs ? h->num_outputs : 1));
    if (!p->dims_offsets) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
    for (uint32_t j = 0; j < h->num_outputs; ++j) p->dims_offsets[j] = -1;
  }
  size_t need = offsetof(hx_abi_header, reserved3) + sizeof(h->reserved3);
  if (h->abi_minor < 2 || h->header_bytes < need || !h->dynamic_outputs) return HX_OK;
  for (uint32_t k = 0; k < h->num_dynamic_outputs; ++k) {
    const hx_abi_dynamic_output* e = &h->dynamic_outputs[k];
    if (e->program >= m->num_programs || e->output >= h->num_outputs)
      return hx_status_make(HX_STATUS_INCOMPATIBLE, "artifact '%s' has a malformed dynamic-output table", path);
    hx_program* p = &m->programs[e->program];
    const hx_abi_tensor* t = &p->outputs[e->output];
    if (e->dims_offset % sizeof(int64_t) != 0 || e->dims_offset + sizeof(int64_t) * (uint64_t)t->rank > p->arena_bytes)
      return hx_status_make(HX_STATUS_INCOMPATIBLE,
                            "artifact '%s': the dims slot of output '%s' lies outside the arena", path, t->name);
    p->dims_offsets[e->output] = (int64_t)e->dims_offset;
  }
  return HX_OK;
}

/* ABI 1.3: inflates the compressed manifest once, here, so that
 * hx_model_manifest_json lends plain text and nothing inflates later. An
 * older header (or one without manifest_z) keeps its plain manifest_json. */
static hx_status_t load_manifest(hx_model_t* m, const char* path) {
  const hx_abi_header* h = m->header;
  size_t need = offsetof(hx_abi_header, manifest_bytes) + sizeof(h->manifest_bytes);
  if (h->abi_minor < 3 || h->header_bytes < need || !h->manifest_z) return HX_OK;
  return hx_manifest_inflate(h->manifest_z, h->manifest_z_bytes, h->manifest_bytes, path, &m->manifest);
}

hx_status_t hx_model_load(const char* path, hx_model_t** out_model) {
  if (!out_model) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "out_model is NULL");
  *out_model = NULL;
  if (!path) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "artifact path is NULL");
  /* dlopen searches the library path for names without a slash; an artifact
   * is a file, so make relative names explicit. */
  char* full = NULL;
  if (!strchr(path, '/')) {
    full = malloc(strlen(path) + 3);
    if (!full) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
    strcpy(full, "./");
    strcat(full, path);
  }
  void* handle = dlopen(full ? full : path, RTLD_NOW | RTLD_LOCAL);
  free(full);
  if (!handle) return hx_status_make(HX_STATUS_IO, "cannot load artifact '%s': %s", path, dlerror());

  hx_status_t st = HX_OK;
  hx_abi_query_fn query = (hx_abi_query_fn)dlsym(handle, HX_ARTIFACT_QUERY_SYMBOL);
  if (!query) {
    st = hx_status_make(HX_STATUS_INCOMPATIBLE, "'%s' is not a Harness artifact (no %s symbol)", path,
                        HX_ARTIFACT_QUERY_SYMBOL);
    goto fail;
  }
  const hx_abi_header* h = query();
  if (!h || h->magic != HX_ABI_MAGIC) {
    st = hx_status_make(HX_STATUS_INCOMPATIBLE, "'%s' is not a Harness artifact (bad magic)", path);
    goto fail;
  }
  if (h->abi_major != HX_ABI_VERSION_MAJOR) {
    st = hx_status_make(HX_STATUS_INCOMPATIBLE,
                        "artifact '%s' uses ABI %u.%u but this runtime supports %u.x; recompile it with a "
                        "matching harnessc",
                        path, h->abi_major, h->abi_minor, HX_ABI_VERSION_MAJOR);
    goto fail;
  }
  /* A 1.0 header is shorter; fields appended since are read only when the
   * producer's header has them. */
  if (h->header_bytes < HX_ABI_HEADER_BYTES_1_0 || h->num_variants == 0 ||
      h->num_bases != HX_BASE_FIRST_IO + h->num_inputs + h->num_outputs) {
    st = hx_status_make(HX_STATUS_INCOMPATIBLE, "artifact '%s' has a malformed header", path);
    goto fail;
  }
  st = check_tensor_table(h->inputs, h->num_inputs, "input");
  if (st == HX_OK) st = check_tensor_table(h->outputs, h->num_outputs, "output");
  if (st != HX_OK) goto fail;

  /* Variants are stored best first; take the first this CPU can run. */
  uint64_t have = hx_cpu_features();
  const hx_abi_variant* chosen = NULL;
  for (uint32_t i = 0; i < h->num_variants; ++i) {
    if ((h->variants[i].required_features & ~have) == 0) {
      chosen = &h->variants[i];
      break;
    }
  }
  if (!chosen) {
    char missing[256];
    describe_features(h->variants[h->num_variants - 1].required_features & ~have, missing, sizeof missing);
    if (h->num_variants > 1) /* fat artifact: even its least demanding variant is out of reach */
      st = hx_status_make(HX_STATUS_INCOMPATIBLE,
                          "artifact '%s' has %u code variants (best first: %s ... %s) and this machine runs none: "
                          "the least demanding, %s, needs CPU features this machine lacks: %s; "
                          "recompile with --target native",
                          path, h->num_variants, h->variants[0].target, h->variants[h->num_variants - 1].target,
                          h->variants[h->num_variants - 1].target, missing);
    else
      st = hx_status_make(HX_STATUS_INCOMPATIBLE,
                          "artifact '%s' was compiled for %s and needs CPU features this machine lacks: %s; "
                          "recompile with --target x86-64-v3 or --target native",
                          path, h->variants[h->num_variants - 1].target, missing);
    goto fail;
  }

  hx_model_t* m = calloc(1, sizeof(*m));
  if (!m) {
    st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }
  m->handle = handle;
  m->header = h;
  m->variant = chosen;
  m->weights_copy = hx_weights_memory_place(h->weights, (size_t)h->weights_bytes);
  m->weights = m->weights_copy ? m->weights_copy : h->weights;
  st = load_programs(m, (uint32_t)(chosen - h->variants), path);
  if (st == HX_OK) st = load_dynamic_outputs(m, path);
  if (st == HX_OK) st = load_manifest(m, path);
  if (st != HX_OK) {
    m->handle = NULL;
    hx_model_free(m);
    goto fail;
  }
  *out_model = m;
  return HX_OK;

fail:
  dlclose(handle);
  return st;
}

void hx_model_free(hx_model_t* model) {
  if (!model) return;
  for (uint32_t i = 0; model->programs && i < model->num_programs; ++i) {
    hx_exec_plan_release(&model->programs[i].plan);
    free(model->programs[i].dims_offsets);
  }
  free(model->programs);
  free(model->manifest);
  hx_weights_memory_free(model->weights_copy, (size_t)model->header->weights_bytes);
  if (model->handle) dlclose(model->handle);
  free(model);
}

const hx_program* hx_model_program_for_batch(const hx_model_t* model, int64_t batch) {
  for (uint32_t i = 0; i < model->num_programs; ++i)
    if (model->programs[i].batch == batch) return &model->programs[i];
  return NULL;
}

size_t hx_model_batch_count(const hx_model_t* model) { return model->batched ? model->num_programs : 0; }

int64_t hx_model_batch_size(const hx_model_t* model, size_t index) {
  return model->batched && index < model->num_programs ? model->programs[index].batch : 0;
}

size_t hx_model_input_count(const hx_model_t* model) { return model->header->num_inputs; }
size_t hx_model_output_count(const hx_model_t* model) { return model->header->num_outputs; }

static void fill_info(const hx_abi_tensor* t, hx_tensor_info_t* out) {
  out->name = t->name;
  out->dtype = (hx_dtype_t)t->dtype;
  out->rank = t->rank;
  out->dims = t->dims;
  out->bytes = (size_t)t->bytes;
}

hx_status_t hx_model_input_info(const hx_model_t* model, size_t index, hx_tensor_info_t* out_info) {
  if (index >= model->header->num_inputs)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "input index %zu out of range (model has %u inputs)", index,
                          model->header->num_inputs);
  fill_info(&model->header->inputs[index], out_info);
  return HX_OK;
}

hx_status_t hx_model_output_info(const hx_model_t* model, size_t index, hx_tensor_info_t* out_info) {
  if (index >= model->header->num_outputs)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "output index %zu out of range (model has %u outputs)",
                          index, model->header->num_outputs);
  fill_info(&model->header->outputs[index], out_info);
  return HX_OK;
}

int hx_model_output_is_dynamic(const hx_model_t* model, size_t index) {
  return model && index < model->header->num_outputs && model->programs[0].dims_offsets &&
         model->programs[0].dims_offsets[index] >= 0;
}

static hx_status_t find_by_name(const hx_abi_tensor* t, uint32_t n, const char* name, const char* what,
                                size_t* out_index) {
  for (uint32_t i = 0; i < n; ++i) {
    if (strcmp(t[i].name, name) == 0) {
      *out_index = i;
      return HX_OK;
    }
  }
  return hx_status_make(HX_STATUS_NOT_FOUND, "model has no %s named '%s'", what, name);
}

hx_status_t hx_model_find_input(const hx_model_t* model, const char* name, size_t* out_index) {
  return find_by_name(model->header->inputs, model->header->num_inputs, name, "input", out_index);
}

hx_status_t hx_model_find_output(const hx_model_t* model, const char* name, size_t* out_index) {
  return find_by_name(model->header->outputs, model->header->num_outputs, name, "output", out_index);
}

const char* hx_model_name(const hx_model_t* model) { return model->header->model_name; }
const char* hx_model_producer(const hx_model_t* model) { return model->header->producer; }
const char* hx_model_target(const hx_model_t* model) { return model->variant->target; }
const char* hx_model_manifest_json(const hx_model_t* model) {
  return model->manifest ? model->manifest : model->header->manifest_json;
}
size_t hx_model_arena_bytes(const hx_model_t* model) { return (size_t)model->max_arena_bytes; }

const void* hx_model_weights(const hx_model_t* model, size_t* bytes, int* copied) {
  if (bytes) *bytes = (size_t)model->header->weights_bytes;
  if (copied) *copied = model->weights_copy != NULL;
  return model->weights;
}
size_t hx_model_kernel_count(const hx_model_t* model) { return model->variant->num_kernels; }
