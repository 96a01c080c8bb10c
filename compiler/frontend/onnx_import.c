/* ONNX ModelProto -> graph IR. */
#include "compiler/frontend/onnx_import.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiler/frontend/tensor_proto.h"
#include "compiler/ops/op.h"
#include "onnx.pb-c.h"

/* ---- name -> value index (open addressing) ------------------------------- */

typedef struct name_map {
  hc_value** slots;
  size_t cap, count;
} name_map;

static uint64_t hash_str(const char* s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; ++s) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static hc_value* map_get(const name_map* m, const char* name) {
  if (!m->cap) return NULL;
  for (size_t i = hash_str(name) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (!m->slots[i]) return NULL;
    if (strcmp(m->slots[i]->name, name) == 0) return m->slots[i];
  }
}

static bool map_put(name_map* m, hc_value* v) {
  if ((m->count + 1) * 2 > m->cap) {
    size_t ncap = m->cap ? m->cap * 2 : 256;
    hc_value** ns = calloc(ncap, sizeof(hc_value*));
    if (!ns) return false;
    for (size_t i = 0; i < m->cap; ++i) {
      if (!m->slots[i]) continue;
      size_t j = hash_str(m->slots[i]->name) & (ncap - 1);
      while (ns[j]) j = (j + 1) & (ncap - 1);
      ns[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
  }
  size_t i = hash_str(v->name) & (m->cap - 1);
  while (m->slots[i] && strcmp(m->slots[i]->name, v->name) != 0) i = (i + 1) & (m->cap - 1);
  if (!m->slots[i]) ++m->count;
  m->slots[i] = v;
  return true;
}

/* ---- importer state -------------------------------------------------------- */

typedef struct importer {
  hc_graph* g;
  name_map values;
  const hc_import_options* opts;
  const char* base_dir;
  const Onnx__ModelProto* model;
  /* Errors collected in collect mode, joined by newlines. */
  char* errors;
  size_t errors_len;
  int num_errors;
  /* --batch: the leading dimension of the first input, to check the others
   * share it (a symbolic name, or a fixed size when batch_param is NULL). */
  const char* batch_input;
  const char* batch_param;
  int64_t batch_size;
  /* Subgraph import (If/Loop/Scan bodies): the importer of the enclosing
   * graph and the node of that graph owning the subgraph; NULL at top level.
   * Names a subgraph does not define resolve through `parent` into
   * outer-scope captures (see capture_outer). */
  struct importer* parent;
  hc_node* owner;
  const char* attr; /* the owner's attribute holding this subgraph */
} importer;

/* --batch: checks that input `name`'s leading dimension (symbolic `param`, or
 * fixed `size`) is the one every input shares. */
static hx_status_t note_batch_dim(importer* im, const char* name, int rank, const char* param, int64_t size) {
  if (rank < 1)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "--batch: graph input '%s' is a scalar, so it has no batch dimension", name);
  if (!im->batch_input) {
    im->batch_input = name;
    im->batch_param = param;
    im->batch_size = size;
    return HX_OK;
  }
  bool same = im->batch_param ? (param && !strcmp(param, im->batch_param)) : (!param && size == im->batch_size);
  if (same) return HX_OK;
  char a[64], b[64];
  if (im->batch_param) snprintf(a, sizeof a, "'%s'", im->batch_param); else snprintf(a, sizeof a, "%lld", (long long)im->batch_size);
  if (param) snprintf(b, sizeof b, "'%s'", param); else snprintf(b, sizeof b, "%lld", (long long)size);
  return hx_status_make(HX_STATUS_INVALID_ARGUMENT,
                        "--batch: the graph inputs do not share a batch dimension: '%s' leads with %s but '%s' with %s",
                        im->batch_input, a, name, b);
}

/* In collect mode, records the error and returns OK so import continues. */
static hx_status_t report(importer* im, hx_status_t st) {
  if (st == HX_OK || !im->opts->collect_errors) return st;
  /* A subgraph's errors join the model's list, saying where they are. */
  for (; im->parent; im = im->parent)
    st = hx_status_annotate(st, "node \"%s\" (%s, opset %d), subgraph '%s'", im->owner->name, im->owner->op_type,
                            im->owner->opset, im->attr);
  const char* msg = hx_status_message(st);
  size_t add = strlen(msg) + 1;
  char* n = realloc(im->errors, im->errors_len + add + 1);
  if (n) {
    im->errors = n;
    memcpy(im->errors + im->errors_len, msg, add - 1);
    im->errors[im->errors_len + add - 1] = '\n';
    im->errors_len += add;
    im->errors[im->errors_len] = '\0';
  }
  im->num_errors++;
  hx_status_free(st);
  return HX_OK;
}

static int domain_opset(const Onnx__ModelProto* mp, const char* domain) {
  bool dflt = !domain || !domain[0] || !strcmp(domain, "ai.onnx");
  for (size_t i = 0; i < mp->n_opset_import; ++i) {
    const char* d = mp->opset_import[i]->domain;
    bool ddflt = !d || !d[0] || !strcmp(d, "ai.onnx");
    if ((dflt && ddflt) || (!dflt && !ddflt && !strcmp(d, domain))) return (int)mp->opset_import[i]->version;
  }
  return dflt && mp->n_opset_import == 0 ? 1 : 0;
}

hx_status_t hc_parse_dims(const char* text, int64_t* dims, int* rank) {
  *rank = 0;
  const char* p = text;
  if (!*p) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "empty shape");
  while (*p) {
    char* end;
    long long d = strtoll(p, &end, 10);
    if (end == p || d < 0)
      return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "cannot parse shape '%s' (expected e.g. 1x3x224x224)", text);
    if (*rank >= HC_MAX_RANK) return hx_status_make(HX_STATUS_UNSUPPORTED, "shape '%s' has more than %d dims", text, HC_MAX_RANK);
    dims[(*rank)++] = d;
    p = end;
    if (*p == 'x' || *p == 'X' || *p == ',') {
      ++p;
      if (!*p) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "cannot parse shape '%s'", text);
    } else if (*p) {
      return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "cannot parse shape '%s' (expected e.g. 1x3x224x224)", text);
    }
  }
  return HX_OK;
}

/* ---- tensors and attributes ------------------------------------------------- */

static hx_status_t import_initializer(importer* im, const Onnx__TensorProto* tp) {
  char what[512];
  snprintf(what, sizeof what, "initializer '%s'", tp->name ? tp->name : "");
  hc_tensor t;
  HX_RETURN_IF_ERROR(hc_tensor_from_proto(tp, im->base_dir, what, &t));
  hc_value* v;
  hx_status_t st = hc_graph_add_value(im->g, t.name, t.dtype, t.rank, t.dims, &v);
  if (st == HX_OK) st = hc_graph_own(im->g, t.data);
  if (st != HX_OK) {
    hc_tensor_free(&t);
    return st;
  }
  v->kind = HC_VALUE_CONST;
  v->data = t.data;
  free(t.name);
  if (!map_put(&im->values, v)) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  return HX_OK;
}

/* Every initializer of graph gp, each one's protobuf bytes freed as soon
 * as the graph holds its copy (or reported why not): a model's weights are
 * never held three times (file, protobuf, graph). */
static hx_status_t import_initializers(importer* im, const Onnx__GraphProto* gp) {
  hx_status_t st = HX_OK;
  for (size_t i = 0; i < gp->n_initializer && st == HX_OK; ++i) {
    Onnx__TensorProto* tp = gp->initializer[i];
    st = report(im, import_initializer(im, tp));
    if (tp->has_raw_data && tp->raw_data.data) {
      free(tp->raw_data.data); /* protobuf-c's default allocator is malloc */
      tp->raw_data.data = NULL;
      tp->raw_data.len = 0;
    }
  }
  if (gp->n_sparse_initializer && st == HX_OK)
    st = report(im, hx_status_make(HX_STATUS_UNSUPPORTED, "sparse initializers are not supported"));
  return st;
}

static hx_status_t import_attr(importer* im, const hc_node* n, const Onnx__AttributeProto* ap, hc_attr* a) {
  hc_arena* ar = &im->g->arena;
  a->name = hc_arena_strdup(ar, ap->name ? ap->name : "");
  int type = ap->has_type ? (int)ap->type : 0;
  if (!ap->has_type) { /* IR < 3: infer the type from the populated field */
    if (ap->has_f) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    else if (ap->has_i) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    else if (ap->has_s) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    else if (ap->t) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    else if (ap->g) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    else if (ap->n_floats) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    else if (ap->n_ints) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    else if (ap->n_strings) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
  }
  switch (type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
      a->type = HC_ATTR_FLOAT;
      a->f = ap->f;
      break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
      a->type = HC_ATTR_INT;
      a->i = ap->i;
      break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
      a->type = HC_ATTR_STRING;
      char* s = hc_arena_alloc(ar, ap->s.len + 1);
      if (!s) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
      if (ap->s.len) memcpy(s, ap->s.data, ap->s.len);
      a->s = s;
      break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
      a->type = HC_ATTR_FLOATS;
      a->n = (int)ap->n_floats;
      a->floats = hc_arena_memdup(ar, ap->floats, sizeof(float) * ap->n_floats);
      break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
      a->type = HC_ATTR_INTS;
      a->n = (int)ap->n_ints;
      a->ints = hc_arena_memdup(ar, ap->ints, sizeof(int64_t) * ap->n_ints);
      break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
      a->type = HC_ATTR_STRINGS;
      a->n = (int)ap->n_strings;
      char** ss = hc_arena_alloc(ar, sizeof(char*) * (ap->n_strings + 1));
      if (!ss) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
      for (size_t i = 0; i < ap->n_strings; ++i) {
        ss[i] = hc_arena_alloc(ar, ap->strings[i].len + 1);
        if (!ss[i]) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
        if (ap->strings[i].len) memcpy(ss[i], ap->strings[i].data, ap->strings[i].len);
      }
      a->strings = (const char* const*)ss;
      break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
      if (!ap->t) return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "attribute '%s' has no tensor", a->name);
      char what[300];
      snprintf(what, sizeof what, "attribute '%s' of node \"%s\"", a->name, n->name);
      hc_tensor t;
      HX_RETURN_IF_ERROR(hc_tensor_from_proto(ap->t, im->base_dir, what, &t));
      hc_attr_tensor* at = hc_arena_alloc(ar, sizeof(*at));
      if (!at || hc_graph_own(im->g, t.data) != HX_OK) {
        hc_tensor_free(&t);
        return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
      }
      at->dtype = t.dtype;
      at->rank = t.rank;
      memcpy(at->dims, t.dims, sizeof(at->dims));
      at->data = t.data;
      at->nbytes = t.nbytes;
      free(t.name);
      a->type = HC_ATTR_TENSOR;
      a->t = at;
      break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
      /* Subgraph bodies (If/Loop/Scan) are imported once the enclosing
       * graph's nodes all exist (import_nodes, phase 3). */
      a->type = HC_ATTR_GRAPH;
      a->g = NULL;
      break;
    default:
      a->type = HC_ATTR_UNDEFINED;
      break;
  }
  return HX_OK;
}

/* ---- graph inputs ------------------------------------------------------------- */

static const hc_shape_override* find_shape(const hc_import_options* o, const char* name) {
  for (int i = 0; i < o->num_shapes; ++i)
    if (!strcmp(o->shapes[i].name, name)) return &o->shapes[i];
  return NULL;
}

static hx_status_t import_input(importer* im, const Onnx__ValueInfoProto* vi, bool* used_shape_override) {
  const char* name = vi->name ? vi->name : "";
  const Onnx__TypeProto* tp = vi->type;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
    return hx_status_make(HX_STATUS_UNSUPPORTED, "graph input '%s' is not a tensor (sequence, map and optional inputs are not supported)", name);
  const Onnx__TypeProto__Tensor* tt = tp->tensor_type;
  hx_dtype_t dt = (hx_dtype_t)tt->elem_type;
  if (hx_dtype_size(dt) == 0 || tt->elem_type > HX_DTYPE_BFLOAT16)
    return hx_status_make(HX_STATUS_UNSUPPORTED, "graph input '%s' has unsupported element type %d (%s)", name,
                          tt->elem_type, hx_dtype_name(dt));
  int rank = tt->shape ? (int)tt->shape->n_dim : -1;
  if (rank > HC_MAX_RANK)
    return hx_status_make(HX_STATUS_UNSUPPORTED, "graph input '%s' has rank %d; Harness supports up to %d", name, rank, HC_MAX_RANK);
  hc_value* v;
  HX_RETURN_IF_ERROR(hc_graph_add_value(im->g, name, dt, rank < 0 ? 0 : rank, NULL, &v));
  v->kind = HC_VALUE_INPUT;
  if (!map_put(&im->values, v)) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");

  /* --constant NAME=FILE: the input becomes a weight. */
  for (int i = 0; i < im->opts->num_constants; ++i) {
    if (strcmp(im->opts->constants[i].name, name) != 0) continue;
    hc_tensor t;
    HX_RETURN_IF_ERROR(hc_tensor_read_pb(im->opts->constants[i].path, &t));
    if (t.dtype != dt) {
      hx_status_t st = hx_status_make(HX_STATUS_INVALID_ARGUMENT, "--constant %s: file holds %s but the input is %s", name,
                                      hx_dtype_name(t.dtype), hx_dtype_name(dt));
      hc_tensor_free(&t);
      return st;
    }
    for (int d = 0; rank >= 0 && d < rank && d < t.rank; ++d) {
      const Onnx__TensorShapeProto__Dimension* dim = tt->shape->dim[d];
      if (rank != t.rank || (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dim->dim_value != t.dims[d])) {
        hx_status_t st = hx_status_make(HX_STATUS_INVALID_ARGUMENT, "--constant %s: file shape does not match the input's declared shape", name);
        hc_tensor_free(&t);
        return st;
      }
    }
    hc_value_set_shape(v, dt, t.rank, t.dims);
    hx_status_t st = hc_graph_own(im->g, t.data);
    if (st != HX_OK) {
      hc_tensor_free(&t);
      return st;
    }
    v->kind = HC_VALUE_CONST;
    v->data = t.data;
    free(t.name);
    return HX_OK;
  }

  if (rank < 0) {
    const hc_shape_override* o = find_shape(im->opts, name);
    if (!o)
      return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "graph input '%s' has no shape; give one with --shape %s=DIMS", name, name);
    *used_shape_override = true;
    hc_value_set_shape(v, dt, o->rank, o->dims);
    if (im->opts->batch > 0) {
      HX_RETURN_IF_ERROR(note_batch_dim(im, name, o->rank, NULL, o->rank ? o->dims[0] : 0));
      v->dims[0] = im->opts->batch;
    }
    return HX_OK;
  }
  const hc_shape_override* whole = find_shape(im->opts, name);
  if (whole) {
    if (whole->rank != rank)
      return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "--shape %s: gives %d dims but the input has rank %d", name, whole->rank, rank);
    for (int d = 0; d < rank; ++d) {
      const Onnx__TensorShapeProto__Dimension* dim = tt->shape->dim[d];
      if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dim->dim_value != whole->dims[d])
        return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "--shape %s: dim %d is fixed to %lld by the model, not %lld", name, d,
                              (long long)dim->dim_value, (long long)whole->dims[d]);
    }
    hc_value_set_shape(v, dt, rank, whole->dims);
    *used_shape_override = true;
    if (im->opts->batch > 0) {
      HX_RETURN_IF_ERROR(note_batch_dim(im, name, rank, NULL, rank ? whole->dims[0] : 0));
      v->dims[0] = im->opts->batch;
    }
    return HX_OK;
  }
  if (im->opts->batch > 0 && rank < 1) return note_batch_dim(im, name, rank, NULL, 0);
  char example[256] = "";
  int missing = -1;
  for (int d = 0; d < rank; ++d) {
    const Onnx__TensorShapeProto__Dimension* dim = tt->shape->dim[d];
    bool fixed = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dim->dim_value >= 0;
    const char* param = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ? dim->dim_param : NULL;
    if (d == 0 && im->opts->batch > 0) {
      /* The batch dimension: whatever the model says, --batch decides. */
      HX_RETURN_IF_ERROR(note_batch_dim(im, name, rank, fixed ? NULL : (param ? param : "?"), fixed ? dim->dim_value : -1));
      if (param) v->dim_params[d] = hc_arena_strdup(&im->g->arena, param);
      v->dims[d] = im->opts->batch;
      continue;
    }
    if (fixed) {
      v->dims[d] = dim->dim_value;
      continue;
    }
    const hc_shape_override* o = param ? find_shape(im->opts, param) : NULL;
    if (o && o->rank == 1) {
      v->dims[d] = o->dims[0];
      v->dim_params[d] = hc_arena_strdup(&im->g->arena, param);
      continue;
    }
    if (param) v->dim_params[d] = hc_arena_strdup(&im->g->arena, param);
    v->dims[d] = -1;
    if (missing < 0) missing = d;
  }
  if (missing >= 0) {
    /* Show known dims as numbers and unknown ones as N. */
    size_t used = 0;
    for (int d = 0; d < rank && used < sizeof example; ++d) {
      if (v->dims[d] >= 0)
        used += (size_t)snprintf(example + used, sizeof example - used, "%s%lld", d ? "x" : "", (long long)v->dims[d]);
      else
        used += (size_t)snprintf(example + used, sizeof example - used, "%sN", d ? "x" : "");
    }
    if (v->dim_params[missing])
      return hx_status_make(HX_STATUS_INVALID_ARGUMENT,
                            "graph input '%s' has symbolic dimension %d ('%s'); fix it with --shape %s=%s or --shape %s=N",
                            name, missing, v->dim_params[missing], name, example, v->dim_params[missing]);
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "graph input '%s' has unknown dimension %d; fix it with --shape %s=%s",
                          name, missing, name, example);
  }
  return HX_OK;
}

/* ---- nodes ---------------------------------------------------------------- */

/* Phase 1: creates the node, its attributes and its output values. Inputs are
 * connected in phase 2, so nodes may reference values defined later in the
 * file (sloppy exporters) and cycles are diagnosed by the scheduler's SCC
 * check instead of looking like missing values. */
static hx_status_t create_node(importer* im, const Onnx__NodeProto* np, int index, hc_node** out) {
  hc_graph* g = im->g;
  char gen_name[64];
  const char* name = np->name && np->name[0] ? np->name : NULL;
  if (!name) {
    snprintf(gen_name, sizeof gen_name, "%s_%d", np->op_type ? np->op_type : "node", index);
    name = gen_name;
  }
  hc_node* n;
  HX_RETURN_IF_ERROR(hc_graph_add_node(g, name, np->op_type ? np->op_type : "", np->domain, (int)np->n_input,
                                       (int)np->n_output, &n));
  *out = n;
  n->opset = domain_opset(im->model, np->domain);
  n->num_attrs = (int)np->n_attribute;
  n->attrs = hc_arena_alloc(&g->arena, sizeof(hc_attr) * (np->n_attribute ? np->n_attribute : 1));
  if (!n->attrs) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  for (size_t i = 0; i < np->n_attribute; ++i) HX_RETURN_IF_ERROR(import_attr(im, n, np->attribute[i], &n->attrs[i]));
  for (size_t i = 0; i < np->n_output; ++i) {
    const char* outname = np->output[i];
    if (!outname || !outname[0]) continue; /* omitted optional output */
    if (map_get(&im->values, outname))
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT, "output '%s' is already defined (ONNX graphs are SSA)", outname);
    hc_value* v;
    HX_RETURN_IF_ERROR(hc_graph_add_value(g, outname, HX_DTYPE_UNDEFINED, 0, NULL, &v));
    v->rank = -1;
    v->producer = n;
    n->outputs[i] = v;
    if (!map_put(&im->values, v)) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  n->op = hc_op_find(n->domain, n->op_type);
  if (!n->op) {
    if (n->domain[0] && n->opset == 0)
      return hc_node_error(n, HX_STATUS_UNSUPPORTED, "unsupported op %s: domain '%s' is not imported by the model",
                           n->op_type, n->domain);
    return hc_node_error(n, HX_STATUS_UNSUPPORTED, "unsupported op %s%s%s (opset %d)", n->domain[0] ? n->domain : "",
                         n->domain[0] ? "." : "", n->op_type, n->opset);
  }
  return hc_op_check_node(n);
}

/* Resolves `name`, undefined in subgraph im, in the enclosing graphs: the
 * outer value becomes an implicit input of the node owning the subgraph
 * (hc_node.num_captures) and a capture value of the subgraph stands for it.
 * A value two or more levels up is captured level by level, so every node on
 * the way reads it explicitly. *out is NULL when no enclosing graph has it. */
static hx_status_t capture_outer(importer* im, const char* name, hc_value** out) {
  *out = NULL;
  if (!im->parent) return HX_OK;
  hc_value* outer = map_get(&im->parent->values, name);
  if (!outer) HX_RETURN_IF_ERROR(capture_outer(im->parent, name, &outer));
  if (!outer) return HX_OK;
  int slot;
  HX_RETURN_IF_ERROR(hc_node_add_capture(im->parent->g, im->owner, outer, &slot));
  hc_value* v;
  HX_RETURN_IF_ERROR(hc_graph_add_value(im->g, name, outer->dtype, outer->rank < 0 ? 0 : outer->rank, outer->dims, &v));
  v->rank = outer->rank;
  v->kind = HC_VALUE_INPUT;
  HX_RETURN_IF_ERROR(hc_graph_add_capture(im->g, v, slot));
  if (!map_put(&im->values, v)) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  *out = v;
  return HX_OK;
}

/* Phase 2: connects the node's inputs by name. */
static hx_status_t connect_node(importer* im, const Onnx__NodeProto* np, hc_node* n) {
  for (size_t i = 0; i < np->n_input; ++i) {
    const char* in = np->input[i];
    if (!in || !in[0]) continue; /* omitted optional input */
    hc_value* v = map_get(&im->values, in);
    if (!v) HX_RETURN_IF_ERROR(capture_outer(im, in, &v));
    if (!v)
      return hc_node_error(n, HX_STATUS_INVALID_ARGUMENT,
                           "input '%s' is not produced by any node, initializer or graph input%s", in,
                           im->parent ? " of this subgraph or an enclosing graph" : "");
    n->inputs[i] = v;
  }
  return HX_OK;
}

static hx_status_t import_subgraph(importer* parent, hc_node* owner, const Onnx__AttributeProto* ap, hc_graph** out);

static hx_status_t import_nodes(importer* im, const Onnx__GraphProto* gp) {
  hc_node** nodes = calloc(gp->n_node ? gp->n_node : 1, sizeof(hc_node*));
  if (!nodes) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  hx_status_t st = HX_OK;
  for (size_t i = 0; i < gp->n_node && st == HX_OK; ++i) st = report(im, create_node(im, gp->node[i], (int)i, &nodes[i]));
  for (size_t i = 0; i < gp->n_node && st == HX_OK; ++i)
    if (nodes[i]) st = report(im, connect_node(im, gp->node[i], nodes[i]));
  /* Phase 3: subgraph bodies, once every value of this graph exists, so a
   * body may capture a value defined later in the file. */
  for (size_t i = 0; i < gp->n_node && st == HX_OK; ++i) {
    hc_node* n = nodes[i];
    if (!n || !n->op) continue;
    for (int a = 0; a < n->num_attrs && st == HX_OK; ++a)
      if (n->attrs[a].type == HC_ATTR_GRAPH && gp->node[i]->attribute[a]->g)
        st = report(im, import_subgraph(im, n, gp->node[i]->attribute[a], &n->attrs[a].g));
  }
  free(nodes);
  return st;
}

/* Records the static shapes the model declares for graph outputs and
 * value_info entries (hc_value.declared_*): ops whose output shape depends
 * on a float input computed or fed at run time (Resize's scales, OneHot's
 * depth...) use them (compiler/ops/dynamic.h). A symbolic dim counts when a
 * --shape NAME=N fixes it; declarations with unknown dims are skipped, and
 * so is everything under --batch, whose batch size they do not know. */
static void record_declared_shapes(importer* im, const Onnx__GraphProto* gp) {
  if (im->opts->batch > 0) return;
  for (size_t k = 0; k < gp->n_output + gp->n_value_info; ++k) {
    const Onnx__ValueInfoProto* vi = k < gp->n_output ? gp->output[k] : gp->value_info[k - gp->n_output];
    hc_value* v = vi->name ? map_get(&im->values, vi->name) : NULL;
    const Onnx__TypeProto* tp = vi->type;
    if (!v || !tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type ||
        !tp->tensor_type->shape || tp->tensor_type->shape->n_dim > HC_MAX_RANK)
      continue;
    const Onnx__TensorShapeProto* sh = tp->tensor_type->shape;
    int64_t dims[HC_MAX_RANK];
    bool known = true;
    for (size_t d = 0; d < sh->n_dim && known; ++d) {
      const Onnx__TensorShapeProto__Dimension* dim = sh->dim[d];
      bool symbolic = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dim->dim_param;
      const hc_shape_override* o = symbolic ? find_shape(im->opts, dim->dim_param) : NULL;
      if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dim->dim_value >= 0)
        dims[d] = dim->dim_value;
      else if (o && o->rank == 1)
        dims[d] = o->dims[0];
      else
        known = false;
    }
    if (!known) continue;
    v->has_declared_shape = true;
    v->declared_rank = (int)sh->n_dim;
    for (size_t d = 0; d < sh->n_dim; ++d) v->declared_dims[d] = dims[d];
  }
}

/* A subgraph's formal input: a value of the declared type; dims (and the
 * dtype) may be unknown until the owning op binds them at shape inference. */
static hx_status_t import_formal_input(importer* im, const Onnx__ValueInfoProto* vi) {
  const char* name = vi->name ? vi->name : "";
  const Onnx__TypeProto* tp = vi->type;
  if (tp && tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->value_case != ONNX__TYPE_PROTO__VALUE__NOT_SET)
    return hx_status_make(HX_STATUS_UNSUPPORTED, "input '%s' is not a tensor (sequence, map and optional values are not supported)",
                          name);
  const Onnx__TypeProto__Tensor* tt = tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? tp->tensor_type : NULL;
  hx_dtype_t dt = tt ? (hx_dtype_t)tt->elem_type : HX_DTYPE_UNDEFINED;
  int rank = tt && tt->shape ? (int)tt->shape->n_dim : -1;
  if (rank > HC_MAX_RANK)
    return hx_status_make(HX_STATUS_UNSUPPORTED, "input '%s' has rank %d; Harness supports up to %d", name, rank, HC_MAX_RANK);
  if (map_get(&im->values, name)) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "input '%s' is defined twice", name);
  hc_value* v;
  HX_RETURN_IF_ERROR(hc_graph_add_value(im->g, name, dt, rank < 0 ? 0 : rank, NULL, &v));
  v->rank = rank;
  v->kind = HC_VALUE_INPUT;
  for (int d = 0; d < rank; ++d) {
    const Onnx__TensorShapeProto__Dimension* dim = tt->shape->dim[d];
    v->dims[d] = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ? dim->dim_value : -1;
  }
  if (!map_put(&im->values, v)) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  return HX_OK;
}

/* Imports the GRAPH attribute `ap` of node `owner` (a node of parent's
 * graph) as a subgraph owned by the parent graph: initializers, formal
 * inputs in order (g->inputs), nodes, and outputs (g->outputs). Names it
 * does not define become outer-scope captures (capture_outer). Errors are
 * prefixed with the owning node and the attribute. */
static hx_status_t import_subgraph(importer* parent, hc_node* owner, const Onnx__AttributeProto* ap, hc_graph** out) {
  const Onnx__GraphProto* gp = ap->g;
  *out = NULL;
  importer im = {0};
  im.opts = parent->opts;
  im.base_dir = parent->base_dir;
  im.model = parent->model;
  im.parent = parent;
  im.owner = owner;
  im.attr = ap->name ? ap->name : "";
  hx_status_t st = hc_graph_create(gp->name && gp->name[0] ? gp->name : ap->name, &im.g);
  if (st != HX_OK) return st;
  st = hc_graph_add_child(parent->g, im.g);
  if (st != HX_OK) {
    hc_graph_free(im.g);
    return st;
  }
  *out = im.g;
  im.g->default_opset = parent->g->default_opset;
  if (st == HX_OK) st = import_initializers(&im, gp);
  im.g->inputs = calloc(gp->n_input + 1, sizeof(hc_value*));
  if (!im.g->inputs && st == HX_OK) st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  for (size_t i = 0; i < gp->n_input && st == HX_OK; ++i) {
    st = report(&im, import_formal_input(&im, gp->input[i]));
    hc_value* v = gp->input[i]->name ? map_get(&im.values, gp->input[i]->name) : NULL;
    if (st == HX_OK && v) im.g->inputs[im.g->num_inputs++] = v;
  }
  if (st == HX_OK) st = import_nodes(&im, gp);
  if (st == HX_OK) record_declared_shapes(&im, gp);
  for (size_t i = 0; i < gp->n_output && st == HX_OK; ++i) {
    const char* name = gp->output[i]->name ? gp->output[i]->name : "";
    hc_value* v = map_get(&im.values, name);
    if (!v) st = capture_outer(&im, name, &v);
    if (st == HX_OK && !v) {
      st = report(&im, hx_status_make(HX_STATUS_INVALID_ARGUMENT, "subgraph output '%s' is not produced by any node", name));
      continue;
    }
    if (st == HX_OK) st = hc_graph_add_output(im.g, v);
  }
  if (st == HX_OK && !parent->opts->collect_errors) st = hc_graph_sort(im.g);
  free(im.values.slots);
  if (st != HX_OK && hx_status_code(st) != HX_STATUS_OUT_OF_MEMORY)
    st = hx_status_annotate(st, "node \"%s\" (%s, opset %d), subgraph '%s'", owner->name, owner->op_type, owner->opset,
                            ap->name ? ap->name : "");
  return st;
}

static Onnx__ModelProto* unpack_model(const void* data, size_t len, hx_status_t* out_st) {
  Onnx__ModelProto* mp = onnx__model_proto__unpack(NULL, len, data);
  *out_st = mp ? HX_OK
               : hx_status_make(HX_STATUS_INVALID_ARGUMENT,
                                "not a valid ONNX model: protobuf parsing failed (the file is truncated, corrupt or not ONNX)");
  return mp;
}

/* Imports an unpacked model and frees it (the initializers' bytes as soon
 * as the graph has its own copy of each, so the two copies of a large
 * model's weights coexist only one tensor at a time). */
static hx_status_t import_model(Onnx__ModelProto* mp, const char* base_dir, const char* default_name,
                                const hc_import_options* opts, hc_graph** out_graph) {
  *out_graph = NULL;
  hc_import_options no_opts = {0};
  if (!opts) opts = &no_opts;
  hx_status_t st = HX_OK;
  importer im = {0};
  im.opts = opts;
  im.base_dir = base_dir;
  im.model = mp;
  const Onnx__GraphProto* gp = mp->graph;
  if (!gp) {
    st = hx_status_make(HX_STATUS_INVALID_ARGUMENT, "not a valid ONNX model: it has no graph");
    goto done;
  }
  st = hc_graph_create(gp->name && gp->name[0] ? gp->name : default_name, &im.g);
  if (st != HX_OK) goto done;
  im.g->default_opset = domain_opset(mp, "");

  if (st == HX_OK) st = import_initializers(&im, gp);

  bool used_override = false;
  for (size_t i = 0; i < gp->n_input && st == HX_OK; ++i) {
    const Onnx__ValueInfoProto* vi = gp->input[i];
    /* Older exporters list initializers as inputs too; they are weights. */
    if (vi->name && map_get(&im.values, vi->name)) continue;
    st = report(&im, import_input(&im, vi, &used_override));
  }
  for (int i = 0; i < opts->num_constants && st == HX_OK; ++i) {
    hc_value* v = map_get(&im.values, opts->constants[i].name);
    if (!v || v->kind != HC_VALUE_CONST || v->producer)
      st = report(&im, hx_status_make(HX_STATUS_NOT_FOUND, "--constant %s: the model has no graph input of that name",
                                      opts->constants[i].name));
  }
  for (int i = 0; i < opts->num_shapes && st == HX_OK; ++i) {
    const hc_shape_override* o = &opts->shapes[i];
    bool used = false;
    for (int k = 0; k < im.g->num_values && !used; ++k) {
      hc_value* v = im.g->values[k];
      if (v->kind != HC_VALUE_INPUT) continue;
      if (!strcmp(v->name, o->name)) used = true;
      for (int d = 0; d < v->rank; ++d)
        if (v->dim_params[d] && !strcmp(v->dim_params[d], o->name)) used = true;
    }
    if (!used)
      st = report(&im, hx_status_make(HX_STATUS_NOT_FOUND, "--shape %s: the model has no graph input or symbolic dimension of that name",
                                      o->name));
  }
  if (st == HX_OK) st = import_nodes(&im, gp);
  if (st == HX_OK) record_declared_shapes(&im, gp);

  for (size_t i = 0; i < gp->n_output && st == HX_OK; ++i) {
    const char* name = gp->output[i]->name ? gp->output[i]->name : "";
    hc_value* v = map_get(&im.values, name);
    if (!v) {
      st = report(&im, hx_status_make(HX_STATUS_INVALID_ARGUMENT, "graph output '%s' is not produced by any node", name));
      continue;
    }
    st = hc_graph_add_output(im.g, v);
  }
  if (st == HX_OK && gp->n_output == 0) st = hx_status_make(HX_STATUS_INVALID_ARGUMENT, "the graph has no outputs");
  /* Graph inputs in declaration order (excluding frozen ones). */
  if (st == HX_OK) {
    im.g->inputs = calloc((size_t)im.g->num_values + 1, sizeof(hc_value*));
    if (!im.g->inputs) st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int k = 0; st == HX_OK && k < im.g->num_values; ++k)
      if (im.g->values[k]->kind == HC_VALUE_INPUT) im.g->inputs[im.g->num_inputs++] = im.g->values[k];
  }
  if (st == HX_OK && im.num_errors > 0) {
    /* Drop the trailing newline. */
    if (im.errors_len) im.errors[im.errors_len - 1] = '\0';
    st = hx_status_make(HX_STATUS_INVALID_ARGUMENT, "%s", im.errors);
  }
  if (st == HX_OK && !opts->collect_errors) st = hc_graph_sort(im.g);

done:
  free(im.values.slots);
  free(im.errors);
  onnx__model_proto__free_unpacked(mp, NULL);
  if (st != HX_OK && !(opts->collect_errors && im.g)) {
    hc_graph_free(im.g);
    return st;
  }
  *out_graph = im.g;
  return st;
}

hx_status_t hc_import_onnx_buffer(const void* data, size_t len, const char* base_dir, const char* default_name,
                                  const hc_import_options* opts, hc_graph** out_graph) {
  *out_graph = NULL;
  hx_status_t st;
  Onnx__ModelProto* mp = unpack_model(data, len, &st);
  return mp ? import_model(mp, base_dir, default_name, opts, out_graph) : st;
}

/* The file mapped read-only and unpacked; the mapping is gone before the
 * graph takes its copies of the weights. */
static hx_status_t unpack_file(const char* path, Onnx__ModelProto** out_mp) {
  *out_mp = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return hx_status_make(errno == ENOENT ? HX_STATUS_NOT_FOUND : HX_STATUS_IO, "cannot open '%s': %s", path,
                          strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    /* Not a regular file (a pipe...): read it. */
    close(fd);
    void* data;
    size_t len;
    HX_RETURN_IF_ERROR(hc_read_file(path, &data, &len));
    hx_status_t st;
    *out_mp = unpack_model(data, len, &st);
    free(data);
    return st;
  }
  size_t len = (size_t)sb.st_size;
  void* data = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
  close(fd);
  if (len && data == MAP_FAILED) return hx_status_make(HX_STATUS_IO, "cannot map '%s': %s", path, strerror(errno));
  hx_status_t st;
  *out_mp = unpack_model(len ? data : "", len, &st);
  if (len) munmap(data, len);
  return st;
}

hx_status_t hc_import_onnx_file(const char* path, const hc_import_options* opts, hc_graph** out_graph) {
  *out_graph = NULL;
  Onnx__ModelProto* mp;
  HX_RETURN_IF_ERROR(unpack_file(path, &mp));
  char* dir = strdup(path);
  char* base = strdup(path);
  if (!dir || !base) {
    free(dir);
    free(base);
    onnx__model_proto__free_unpacked(mp, NULL);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  char* slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  char* bname = strrchr(base, '/') ? strrchr(base, '/') + 1 : base;
  char* dot = strrchr(bname, '.');
  if (dot) *dot = '\0';
  hx_status_t st = import_model(mp, slash ? dir : ".", bname, opts, out_graph);
  free(dir);
  free(base);
  return hx_status_annotate(st, "%s", path);
}
