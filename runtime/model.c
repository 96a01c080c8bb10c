/* Artifact loading: dlopen, ABI check, variant choice by CPU features. */
#define _GNU_SOURCE
#include "model.h"

#include <dlfcn.h>
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
  if (h->header_bytes < sizeof(hx_abi_header) || h->num_variants == 0 ||
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
  *out_model = m;
  return HX_OK;

fail:
  dlclose(handle);
  return st;
}

void hx_model_free(hx_model_t* model) {
  if (!model) return;
  dlclose(model->handle);
  free(model);
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
const char* hx_model_manifest_json(const hx_model_t* model) { return model->header->manifest_json; }
size_t hx_model_arena_bytes(const hx_model_t* model) { return (size_t)model->header->arena_bytes; }
size_t hx_model_kernel_count(const hx_model_t* model) { return model->variant->num_kernels; }
