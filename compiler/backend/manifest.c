/* The scheduling manifest as JSON (schema: docs/manifest.md). */
#include "compiler/backend/manifest.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/backend/target.h"
#include "compiler/ops/dynamic.h"
#include "compiler/ops/op.h"
#include "harness/artifact_abi.h"
#include "harness/harness.h"

static cJSON* shape_json(const hc_value* v) {
  cJSON* a = cJSON_CreateArray();
  for (int d = 0; d < v->rank; ++d) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v->dims[d]));
  return a;
}

static const char* location_of(const hc_value* v, int num_inputs) {
  while (v->alias_of) v = v->alias_of;
  if (v->storage.base == HX_BASE_ARENA) return "arena";
  if (v->storage.base == HX_BASE_WEIGHTS) return "weights";
  if (v->storage.base >= HX_BASE_FIRST_IO + num_inputs) return "output";
  if (v->storage.base >= HX_BASE_FIRST_IO) return "input";
  return "none";
}

static cJSON* io_json(const hc_value* v, const char* name, int base) {
  cJSON* o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", name);
  cJSON_AddStringToObject(o, "dtype", hx_dtype_name(v->dtype));
  cJSON_AddItemToObject(o, "shape", shape_json(v));
  cJSON_AddNumberToObject(o, "bytes", (double)hc_value_nbytes(v));
  cJSON_AddNumberToObject(o, "base", base);
  if (v->dynamic) { /* value-dependent shape: `shape` is the upper bound */
    cJSON_AddBoolToObject(o, "dynamic", 1);
    cJSON_AddNumberToObject(o, "dims_offset", (double)hc_dyn_owner(v)->dyn_dims_offset);
  }
  return o;
}

static cJSON* feature_list(uint64_t bits) {
  cJSON* a = cJSON_CreateArray();
  for (int b = 0; b < 64; ++b)
    if (bits & (1ull << b)) cJSON_AddItemToArray(a, cJSON_CreateString(hx_cpu_feature_name(1ull << b)));
  return a;
}

static cJSON* value_names(hc_value* const* vs, int n) {
  cJSON* a = cJSON_CreateArray();
  for (int i = 0; i < n; ++i) cJSON_AddItemToArray(a, vs[i] ? cJSON_CreateString(vs[i]->name) : cJSON_CreateNull());
  return a;
}

static cJSON* kernels_json(const hc_program* p, const hc_lower_ctx* lc) {
  cJSON* kernels = cJSON_CreateArray();
  for (int k = p->first_kernel; k < p->first_kernel + p->num_kernels; ++k) {
    const hc_kernel_rec* r = &lc->kernels[k];
    cJSON* o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", k - p->first_kernel);
    cJSON_AddStringToObject(o, "name", r->name);
    cJSON_AddStringToObject(o, "symbol", r->symbol);
    cJSON_AddStringToObject(o, "op", r->node ? r->node->op_type : "");
    cJSON_AddNumberToObject(o, "tasks", (double)r->tasks);
    cJSON_AddNumberToObject(o, "flops", r->flops);
    cJSON_AddNumberToObject(o, "bytes", r->bytes);
    cJSON_AddStringToObject(o, "stage", r->stage == HX_STAGE_PRE ? "pre" : r->stage == HX_STAGE_POST ? "post" : "infer");
    cJSON_AddStringToObject(o, "device", "cpu");
    cJSON_AddNumberToObject(o, "group", r->group);
    cJSON_AddNumberToObject(o, "lane", hc_kernel_lane(r));
    if (r->node) {
      cJSON_AddItemToObject(o, "inputs", value_names(r->node->inputs, r->node->num_inputs));
      cJSON_AddItemToObject(o, "outputs", value_names(r->node->outputs, r->node->num_outputs));
      if (r->node->workspace_bytes) {
        cJSON_AddNumberToObject(o, "workspace_offset", (double)r->node->workspace_offset);
        cJSON_AddNumberToObject(o, "workspace_bytes", (double)r->node->workspace_bytes);
      }
    }
    cJSON_AddItemToArray(kernels, o);
  }
  return kernels;
}

static void add_signature(cJSON* o, const hc_graph* g) {
  cJSON* inputs = cJSON_AddArrayToObject(o, "inputs");
  for (int i = 0; i < g->num_inputs; ++i)
    cJSON_AddItemToArray(inputs, io_json(g->inputs[i], g->inputs[i]->name, HX_BASE_FIRST_IO + i));
  cJSON* outputs = cJSON_AddArrayToObject(o, "outputs");
  for (int i = 0; i < g->num_outputs; ++i)
    cJSON_AddItemToArray(outputs, io_json(g->outputs[i], g->output_names[i], HX_BASE_FIRST_IO + g->num_inputs + i));
}

static void add_arena(cJSON* o, const hc_pass_ctx* pctx) {
  cJSON* arena = cJSON_AddObjectToObject(o, "arena");
  cJSON_AddNumberToObject(arena, "bytes", (double)pctx->arena_bytes);
  cJSON_AddNumberToObject(arena, "lower_bound_bytes", (double)pctx->arena_lower_bound);
  cJSON_AddNumberToObject(arena, "alignment", 64);
}

static cJSON* target_json(const hc_target* t) {
  cJSON* target = cJSON_CreateObject();
  cJSON_AddStringToObject(target, "name", t->name);
  cJSON_AddStringToObject(target, "triple", t->triple);
  cJSON_AddStringToObject(target, "cpu", t->cpu);
  cJSON_AddNumberToObject(target, "vector_bits", t->vector_bits);
  cJSON_AddItemToObject(target, "required_features", feature_list(t->required_features));
  return target;
}

char* hc_manifest_json(const hc_program* progs, int num_programs, int num_variants, int batched, uint64_t weights_bytes,
                       const hc_target* targets, const hc_lower_ctx* lc, const char* producer, int compact) {
  const hc_target* t = &targets[0];
  const hc_graph* g = progs[0].g;
  const hc_pass_ctx* pctx = progs[0].pctx;
  cJSON* root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", "harness-manifest");
  cJSON_AddNumberToObject(root, "version", 1);
  cJSON_AddStringToObject(root, "producer", producer);
  char abi[32];
  snprintf(abi, sizeof abi, "%d.%d", HX_ABI_VERSION_MAJOR, HX_ABI_VERSION_MINOR);
  cJSON_AddStringToObject(root, "abi", abi);
  cJSON_AddStringToObject(root, "model", g->name);
  cJSON_AddNumberToObject(root, "opset", g->default_opset);

  cJSON_AddItemToObject(root, "target", target_json(t));

  add_arena(root, pctx);
  cJSON* weights = cJSON_AddObjectToObject(root, "weights");
  cJSON_AddNumberToObject(weights, "bytes", (double)weights_bytes);

  add_signature(root, g);
  cJSON_AddItemToObject(root, "kernels", kernels_json(&progs[0], lc));
  if (batched) {
    cJSON* sizes = cJSON_AddArrayToObject(root, "batch_sizes");
    cJSON* list = cJSON_AddArrayToObject(root, "programs");
    for (int i = 0; i < num_programs; ++i) {
      cJSON_AddItemToArray(sizes, cJSON_CreateNumber((double)progs[i].batch));
      cJSON* o = cJSON_CreateObject();
      cJSON_AddNumberToObject(o, "batch", (double)progs[i].batch);
      add_arena(o, progs[i].pctx);
      add_signature(o, progs[i].g);
      cJSON_AddItemToObject(o, "kernels", kernels_json(&progs[i], lc));
      cJSON_AddItemToArray(list, o);
    }
  }
  if (num_variants > 1) { /* fat artifact: every variant, best first */
    cJSON* list = cJSON_AddArrayToObject(root, "variants");
    for (int v = 0; v < num_variants; ++v) {
      const hc_program* vp = &progs[v * num_programs];
      cJSON* o = cJSON_CreateObject();
      cJSON_AddItemToObject(o, "target", target_json(&targets[v]));
      add_arena(o, vp->pctx);
      cJSON_AddItemToObject(o, "kernels", kernels_json(vp, lc));
      if (batched) {
        cJSON* plist = cJSON_AddArrayToObject(o, "programs");
        for (int i = 0; i < num_programs; ++i) {
          cJSON* po = cJSON_CreateObject();
          cJSON_AddNumberToObject(po, "batch", (double)vp[i].batch);
          add_arena(po, vp[i].pctx);
          cJSON_AddItemToObject(po, "kernels", kernels_json(&vp[i], lc));
          cJSON_AddItemToArray(plist, po);
        }
      }
      cJSON_AddItemToArray(list, o);
    }
  }

  cJSON* tensors = cJSON_AddArrayToObject(root, "tensors");
  for (int i = 0; i < g->num_values; ++i) {
    const hc_value* v = g->values[i];
    const char* loc = location_of(v, g->num_inputs);
    if (!strcmp(loc, "none")) continue; /* folded away or unused */
    if (v->kind == HC_VALUE_CONST && v->storage.base < 0) continue;
    uint64_t in_root;
    const hc_value* root_v = hc_value_storage_root(v, &in_root);
    cJSON* o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", v->name);
    cJSON_AddStringToObject(o, "dtype", hx_dtype_name(v->dtype));
    cJSON_AddItemToObject(o, "shape", shape_json(v));
    cJSON_AddNumberToObject(o, "size", (double)hc_value_nbytes(v));
    cJSON_AddStringToObject(o, "location", loc);
    cJSON_AddNumberToObject(o, "offset", (double)(root_v->storage.offset + in_root));
    if (root_v != v) cJSON_AddStringToObject(o, "alias_of", root_v->name);
    const hc_value* over = hc_memory_plan_inplace_source(v);
    if (over) cJSON_AddStringToObject(o, "inplace_of", over->name);
    if (v->dynamic) {
      cJSON_AddBoolToObject(o, "dynamic", 1);
      cJSON_AddNumberToObject(o, "dims_offset", (double)hc_dyn_owner(v)->dyn_dims_offset);
    }
    if (v->live_first >= 0) {
      cJSON_AddNumberToObject(o, "first", v->live_first);
      cJSON_AddNumberToObject(o, "last", v->live_last);
    }
    cJSON_AddItemToArray(tensors, o);
  }
  char* text = compact ? cJSON_PrintUnformatted(root) : cJSON_Print(root);
  cJSON_Delete(root);
  return text;
}
