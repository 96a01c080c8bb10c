/* The memory plan as JSON and SVG (see memplan.h, docs/memory.md). */
#define _GNU_SOURCE
#include "compiler/backend/memplan.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops/op.h"
#include "harness/artifact_abi.h"

/* One rectangle of the plan: an arena tensor or a node's workspace. */
typedef struct row {
  const hc_value* value;   /* NULL for a workspace or a dims slot */
  const hc_node* node;     /* workspace owner */
  const hc_value* dims_of; /* dims slot owner (compiler/ops/dynamic.h) */
  uint64_t size, offset;
  int first, last;
  const hc_value* inplace_of; /* the input whose bytes it reuses */
} row;

/* Arena tensors in value order, then workspaces in schedule order, then
 * the dims slots of values with data-dependent shapes. Caller frees *out.
 * Returns the count, -1 on out-of-memory. */
static int collect_rows(const hc_graph* g, row** out) {
  row* r = calloc(2 * (size_t)g->num_values + (size_t)g->num_nodes + 1, sizeof(row));
  if (!r) return -1;
  int n = 0;
  for (int i = 0; i < g->num_values; ++i) {
    const hc_value* v = g->values[i];
    if (v->alias_of || v->storage.base != HX_BASE_ARENA) continue;
    r[n++] = (row){.value = v, .size = hc_value_nbytes(v), .offset = v->storage.offset, .first = v->live_first,
                   .last = v->live_last, .inplace_of = hc_memory_plan_inplace_source(v)};
  }
  for (int s = 0; s < g->num_nodes; ++s) {
    const hc_node* nd = g->nodes[s];
    if (!nd->workspace_bytes) continue;
    /* Live while its node runs (within its lane, as the planner placed it). */
    r[n++] = (row){.node = nd, .size = nd->workspace_bytes, .offset = nd->workspace_offset, .first = s, .last = s};
  }
  for (int i = 0; i < g->num_values && g->num_nodes > 0; ++i) {
    const hc_value* v = g->values[i];
    if (!v->dynamic || v->dyn_source || !v->producer || v->producer->dead) continue;
    r[n++] = (row){.dims_of = v, .size = sizeof(int64_t) * (uint64_t)(v->rank > 0 ? v->rank : 1),
                   .offset = v->dyn_dims_offset, .first = 0, .last = g->num_nodes - 1};
  }
  *out = r;
  return n;
}

static cJSON* shape_json(const hc_value* v) {
  cJSON* a = cJSON_CreateArray();
  for (int d = 0; d < v->rank; ++d) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v->dims[d]));
  return a;
}

/* The fields of one program's plan, added to `o`. */
static bool add_plan(cJSON* o, const hc_program* p) {
  const hc_graph* g = p->g;
  const hc_pass_ctx* pc = p->pctx;
  const hc_memplan_stats* ms = &pc->memplan;
  cJSON_AddNumberToObject(o, "arena_bytes", (double)pc->arena_bytes);
  cJSON_AddNumberToObject(o, "lower_bound_bytes", (double)pc->arena_lower_bound);
  cJSON_AddNumberToObject(o, "lower_bound_no_inplace_bytes", (double)ms->lower_bound_no_inplace);
  cJSON_AddNumberToObject(o, "lower_bound_sequential_bytes", (double)ms->lower_bound_sequential);
  cJSON_AddNumberToObject(o, "alignment", 64);
  cJSON_AddNumberToObject(o, "weights_bytes", (double)pc->weights_bytes);
  cJSON_AddNumberToObject(o, "steps", g->num_nodes);
  cJSON_AddNumberToObject(o, "inplace", ms->inplace);
  cJSON_AddNumberToObject(o, "concat_parts", ms->concat_parts);
  cJSON_AddNumberToObject(o, "parallel_groups", pc->schedule_groups);
  cJSON_AddNumberToObject(o, "parallel_groups_declined", pc->schedule_groups_declined);
  if (ms->chosen >= 0 && ms->chosen < ms->num_heuristics)
    cJSON_AddStringToObject(o, "heuristic", ms->heuristic[ms->chosen]);
  cJSON* hs = cJSON_AddArrayToObject(o, "heuristics");
  for (int i = 0; i < ms->num_heuristics; ++i) {
    cJSON* h = cJSON_CreateObject();
    cJSON_AddStringToObject(h, "name", ms->heuristic[i]);
    cJSON_AddNumberToObject(h, "arena_bytes", (double)ms->arena[i]);
    cJSON_AddItemToArray(hs, h);
  }
  cJSON* sched = cJSON_AddArrayToObject(o, "schedule");
  for (int s = 0; s < g->num_nodes; ++s) {
    const hc_node* nd = g->nodes[s];
    cJSON* e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "step", s);
    cJSON_AddStringToObject(e, "node", nd->name);
    cJSON_AddStringToObject(e, "op", nd->op_type);
    cJSON_AddNumberToObject(e, "group", nd->group);
    cJSON_AddNumberToObject(e, "lane", nd->lane);
    cJSON_AddItemToArray(sched, e);
  }
  row* rows;
  int nr = collect_rows(g, &rows);
  if (nr < 0) return false;
  cJSON* tensors = cJSON_AddArrayToObject(o, "tensors");
  for (int i = 0; i < nr; ++i) {
    const row* r = &rows[i];
    cJSON* t = cJSON_CreateObject();
    if (r->value) {
      cJSON_AddStringToObject(t, "name", r->value->name);
      cJSON_AddStringToObject(t, "kind", "tensor");
      cJSON_AddStringToObject(t, "dtype", hx_dtype_name(r->value->dtype));
      cJSON_AddItemToObject(t, "shape", shape_json(r->value));
    } else {
      char name[512];
      snprintf(name, sizeof name, "%s:%s", r->node ? r->node->name : r->dims_of->name, r->node ? "workspace" : "dims");
      cJSON_AddStringToObject(t, "name", name);
      cJSON_AddStringToObject(t, "kind", r->node ? "workspace" : "dims");
    }
    cJSON_AddNumberToObject(t, "size", (double)r->size);
    cJSON_AddNumberToObject(t, "offset", (double)r->offset);
    cJSON_AddNumberToObject(t, "first", r->first);
    cJSON_AddNumberToObject(t, "last", r->last);
    if (r->inplace_of) cJSON_AddStringToObject(t, "inplace_of", r->inplace_of->name);
    cJSON_AddItemToArray(tensors, t);
  }
  free(rows);
  /* Views of arena tensors and in-place Concat parts: zero bytes of their
   * own; a part's bytes start `offset` bytes into its root's. */
  cJSON* views = cJSON_AddArrayToObject(o, "views");
  for (int i = 0; i < g->num_values; ++i) {
    const hc_value* v = g->values[i];
    if (!v->alias_of) continue;
    uint64_t in_root;
    const hc_value* root = hc_value_storage_root(v, &in_root);
    if (root->storage.base != HX_BASE_ARENA) continue;
    cJSON* e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", v->name);
    cJSON_AddStringToObject(e, "alias_of", root->name);
    if (in_root) cJSON_AddNumberToObject(e, "offset", (double)in_root);
    cJSON_AddItemToArray(views, e);
  }
  return true;
}

char* hc_memplan_json(const hc_program* progs, int num_programs, int batched) {
  cJSON* root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", "harness-memplan");
  cJSON_AddNumberToObject(root, "version", 1);
  cJSON_AddStringToObject(root, "model", progs[0].g->name);
  bool ok = add_plan(root, &progs[0]);
  if (batched) {
    cJSON* list = cJSON_AddArrayToObject(root, "programs");
    for (int i = 0; ok && i < num_programs; ++i) {
      cJSON* o = cJSON_CreateObject();
      cJSON_AddNumberToObject(o, "batch", (double)progs[i].batch);
      ok = add_plan(o, &progs[i]);
      cJSON_AddItemToArray(list, o);
    }
  }
  char* text = ok ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  return text;
}

/* ---- SVG ---------------------------------------------------------------- */

/* A growing string; `oom` sticks once an allocation fails. */
typedef struct sbuf {
  char* p;
  size_t len, cap;
  bool oom;
} sbuf;

static void sb_printf(sbuf* b, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf* b, const char* fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->oom = true;
      return;
    }
    if (b->p && b->len + (size_t)n < b->cap) {
      b->len += (size_t)n;
      return;
    }
    size_t cap = b->cap ? b->cap * 2 : 65536;
    while (cap < b->len + (size_t)n + 1) cap *= 2;
    char* p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
}

/* Appends s with XML's special characters escaped. */
static void sb_xml(sbuf* b, const char* s) {
  for (; *s; ++s) {
    switch (*s) {
      case '&': sb_printf(b, "&amp;"); break;
      case '<': sb_printf(b, "&lt;"); break;
      case '>': sb_printf(b, "&gt;"); break;
      case '"': sb_printf(b, "&quot;"); break;
      default: sb_printf(b, "%c", *s); break;
    }
  }
}

/* A stable colour per op type (FNV-1a of its name). */
static int hue_of(const char* s) {
  uint32_t h = 2166136261u;
  for (; *s; ++s) h = (h ^ (unsigned char)*s) * 16777619u;
  return (int)(h % 360);
}

static void human_bytes(uint64_t bytes, char* buf, size_t cap) {
  if (bytes >= (1ull << 20)) snprintf(buf, cap, "%.2f MiB", (double)bytes / (1 << 20));
  else if (bytes >= 1024) snprintf(buf, cap, "%.1f KiB", (double)bytes / 1024);
  else snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
}

char* hc_memplan_svg(const hc_program* prog) {
  const hc_graph* g = prog->g;
  const hc_pass_ctx* pc = prog->pctx;
  row* rows;
  int nr = collect_rows(g, &rows);
  if (nr < 0) return NULL;
  const double W = 1200, H = 640, left = 90, right = 20, top = 56, bottom = 48;
  const double pw = W - left - right, ph = H - top - bottom;
  int steps = g->num_nodes > 0 ? g->num_nodes : 1;
  uint64_t ymax = pc->arena_bytes > 0 ? pc->arena_bytes : 1;
  if (pc->arena_lower_bound > ymax) ymax = pc->arena_lower_bound;
#define XS(s) (left + pw * (double)(s) / steps)
#define YA(a) (top + ph * (1.0 - (double)(a) / (double)ymax))

  sbuf b = {0};
  sb_printf(&b,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H, W, H);
  char arena_s[32], lower_s[32];
  human_bytes(pc->arena_bytes, arena_s, sizeof arena_s);
  human_bytes(pc->arena_lower_bound, lower_s, sizeof lower_s);
  double over = pc->arena_lower_bound
                    ? 100.0 * ((double)pc->arena_bytes - (double)pc->arena_lower_bound) / (double)pc->arena_lower_bound
                    : 0;
  const hc_memplan_stats* ms = &pc->memplan;
  sb_printf(&b, "<text x=\"%.0f\" y=\"20\" font-size=\"14\">", left);
  sb_xml(&b, g->name);
  sb_printf(&b, ": arena %s, lower bound %s (+%.2f%%), heuristic %s, %d outputs in place, %d steps</text>\n", arena_s,
            lower_s, over, ms->chosen >= 0 ? ms->heuristic[ms->chosen] : "-", ms->inplace, g->num_nodes);
  sb_printf(&b,
            "<text x=\"%.0f\" y=\"38\" fill=\"#555\">x: schedule step, y: arena offset; one rectangle per tensor "
            "(hover for its name), red: live bytes, dashed: lower bound</text>\n",
            left);

  /* Steps: transparent columns whose title names the node. */
  sb_printf(&b, "<g fill-opacity=\"0\">\n");
  for (int s = 0; s < g->num_nodes; ++s) {
    const hc_node* nd = g->nodes[s];
    sb_printf(&b, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\"><title>step %d: ", XS(s), top,
              XS(s + 1) - XS(s), ph, s);
    sb_xml(&b, nd->name);
    sb_printf(&b, " (");
    sb_xml(&b, nd->op_type);
    if (nd->group) sb_printf(&b, ", group %d lane %d", nd->group, nd->lane);
    sb_printf(&b, ")</title></rect>\n");
  }
  sb_printf(&b, "</g>\n");

  /* Axes and ticks. */
  sb_printf(&b, "<g stroke=\"#888\" fill=\"none\"><rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\"/></g>\n",
            left, top, pw, ph);
  for (int t = 0; t <= 4; ++t) {
    uint64_t a = ymax * (uint64_t)t / 4;
    char lab[32];
    human_bytes(a, lab, sizeof lab);
    sb_printf(&b, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left - 6, YA(a) + 4, lab);
  }
  int tick = steps / 10 > 0 ? steps / 10 : 1;
  for (int s = 0; s <= steps; s += tick)
    sb_printf(&b, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%d</text>\n", XS(s), top + ph + 16, s);
  sb_printf(&b, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">schedule step</text>\n", left + pw / 2,
            top + ph + 36);

  /* Tensors. */
  sb_printf(&b, "<g stroke=\"#333\" stroke-width=\"0.3\">\n");
  for (int i = 0; i < nr; ++i) {
    const row* r = &rows[i];
    double x0 = XS(r->first), x1 = XS(r->last + 1), y0 = YA(r->offset + r->size), y1 = YA(r->offset);
    const char* op = r->value ? (r->value->producer ? r->value->producer->op_type : "") : "";
    char fill[48];
    /* Hue by producing op, lightness by tensor, so neighbours stand apart. */
    if (r->value) snprintf(fill, sizeof fill, "hsl(%d,55%%,%d%%)", hue_of(op), 52 + hue_of(r->value->name) % 24);
    else snprintf(fill, sizeof fill, "#aaaaaa");
    char size_s[32];
    human_bytes(r->size, size_s, sizeof size_s);
    sb_printf(&b, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"><title>", x0, y0,
              x1 - x0 > 0.5 ? x1 - x0 : 0.5, y1 - y0 > 0.5 ? y1 - y0 : 0.5, fill);
    if (r->value) {
      char shape[128];
      sb_xml(&b, r->value->name);
      sb_printf(&b, " (%s %s, from ", hx_dtype_name(r->value->dtype),
                hc_shape_str(r->value->rank, r->value->dims, shape, sizeof shape));
      sb_xml(&b, op);
      sb_printf(&b, ")");
    } else {
      sb_xml(&b, r->node ? r->node->name : r->dims_of->name);
      sb_printf(&b, r->node ? ":workspace" : ":dims (run-time shape)");
    }
    sb_printf(&b, "\n%s at [%llu, %llu), steps %d..%d", size_s, (unsigned long long)r->offset,
              (unsigned long long)(r->offset + r->size), r->first, r->last);
    if (r->inplace_of) {
      sb_printf(&b, "\nwritten in place over ");
      sb_xml(&b, r->inplace_of->name);
    }
    sb_printf(&b, "</title></rect>\n");
  }
  sb_printf(&b, "</g>\n");

  /* Live bytes per step: an in-place pair counts once where both are live. */
  int64_t* live = calloc((size_t)steps + 1, sizeof(int64_t));
  if (!live) b.oom = true;
  for (int i = 0; live && i < nr; ++i) {
    const row* r = &rows[i];
    for (int s = r->first; s <= r->last && s < steps; ++s) {
      bool shared = false;
      if (r->inplace_of && r->inplace_of->live_first <= s && s <= r->inplace_of->live_last) shared = true;
      if (!shared && s >= 0) live[s] += (int64_t)r->size;
    }
  }
  sb_printf(&b, "<polyline fill=\"none\" stroke=\"#d22\" stroke-width=\"1.2\" points=\"");
  for (int s = 0; live && s < steps; ++s)
    sb_printf(&b, "%.2f,%.2f %.2f,%.2f ", XS(s), YA(live[s]), XS(s + 1), YA(live[s]));
  sb_printf(&b, "\"><title>live bytes per step</title></polyline>\n");
  free(live);
  sb_printf(&b,
            "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"#222\" stroke-dasharray=\"6,4\">"
            "<title>lower bound %s</title></line>\n",
            left, left + pw, YA(pc->arena_lower_bound), YA(pc->arena_lower_bound), lower_s);
  sb_printf(&b, "</svg>\n");
#undef XS
#undef YA
  free(rows);
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

/* ---- files -------------------------------------------------------------- */

static hx_status_t write_file(const char* path, const char* text) {
  if (!strcmp(path, "-")) {
    fputs(text, stdout);
    return HX_OK;
  }
  FILE* f = fopen(path, "w");
  if (!f) return hx_status_make(HX_STATUS_IO, "cannot create '%s': %s", path, strerror(errno));
  fputs(text, f);
  if (fclose(f) != 0) return hx_status_make(HX_STATUS_IO, "cannot write '%s'", path);
  return HX_OK;
}

hx_status_t hc_memplan_write(const hc_program* progs, int num_programs, int batched, int svg_only, const char* path) {
  hx_status_t st = HX_OK;
  if (!svg_only) {
    char* json = hc_memplan_json(progs, num_programs, batched);
    if (!json) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory writing the memory plan");
    size_t n = strlen(json);
    char* text = malloc(n + 2);
    if (text) {
      memcpy(text, json, n);
      memcpy(text + n, "\n", 2);
      st = write_file(path, text);
    } else {
      st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory writing the memory plan");
    }
    free(text);
    free(json);
    if (st != HX_OK || !strcmp(path, "-")) return st;
  }
  char* svg = hc_memplan_svg(&progs[0]);
  if (!svg) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory drawing the memory plan");
  char* svg_path = NULL;
  if (svg_only) {
    svg_path = strdup(path);
  } else {
    size_t n = strlen(path);
    bool json_ext = n > 5 && !strcmp(path + n - 5, ".json");
    if (asprintf(&svg_path, "%.*s.svg", (int)(json_ext ? n - 5 : n), path) < 0) svg_path = NULL;
  }
  if (!svg_path) st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  else st = write_file(svg_path, svg);
  free(svg_path);
  free(svg);
  return st;
}
