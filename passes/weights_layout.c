/* The weights blob: where each constant the kernels read lives in it.
 *
 * One layout serves a single program (memory planning) and the programs of a
 * fat or batched artifact together (compiler/backend/artifact.c), so a blob
 * is laid out the same way whichever builds it:
 *
 *  - Constants with equal bytes share one place: the same initializer
 *    compiled for another target or batch size, and within one program the
 *    repeated scalars of exported graphs (HardSwish's 3 and 6, a block's
 *    learnt scale, shape tensors...). Kernels only read the blob.
 *  - Constants of 64 bytes or more start 64-byte aligned, in first-use order,
 *    so a layer's weights stream from memory in the order the kernels ask.
 *  - Smaller ones follow them, packed: each aligned to the power of two at or
 *    above its size (at most 64), so that none straddles a cache line or is
 *    less aligned than a vector load of all of it assumes. Padding every
 *    scalar to 64 bytes had cost PP-OCRv4 rec 11 KB in each precision.
 *
 * Deterministic: graphs in the order given, nodes in schedule order, inputs
 * in slot order. Rewrites every weight's storage offset, which the kernels
 * bake in at lowering, so it runs before lowering. */
#include <stdlib.h>
#include <string.h>

#include "harness/artifact_abi.h"
#include "passes/pass.h"

typedef struct placed_const {
  uint64_t hash, offset;
  const hc_value* v;
} placed_const;

static uint64_t bytes_hash(const unsigned char* d, size_t n) {
  uint64_t h = 1469598103934665603ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, d + i, 8);
    h = (h ^ w) * 1099511628211ull;
    h ^= h >> 32;
  }
  for (; i < n; ++i) h = (h ^ d[i]) * 1099511628211ull;
  return h;
}

static uint64_t weight_alignment(uint64_t nbytes) {
  uint64_t a = 1;
  while (a < nbytes && a < 64) a <<= 1;
  return a;
}

static bool in_blob(const hc_value* v) { return v && v->kind == HC_VALUE_CONST && v->storage.base == HX_BASE_WEIGHTS; }

hx_status_t hc_weights_layout(hc_graph* const* graphs, int n, uint64_t* out_bytes) {
  size_t total = 0;
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < graphs[p]->num_values; ++i) total += in_blob(graphs[p]->values[i]);
  size_t cap = 16;
  while (cap < total * 2) cap *= 2;
  placed_const* table = calloc(cap, sizeof *table);
  bool** seen = calloc((size_t)n, sizeof *seen);
  hx_status_t st = HX_OK;
  if (!table || !seen) st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory laying out the weights");
  for (int p = 0; p < n && st == HX_OK; ++p)
    if (!(seen[p] = calloc((size_t)graphs[p]->num_values + 1, sizeof(bool))))
      st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory laying out the weights");
  uint64_t bytes = 0;
  /* Round 0 places the constants of 64 bytes or more; rounds 1.. the
   * smaller ones, largest alignment first (64, 32, ... 1). */
  for (int round = 0; round <= 7 && st == HX_OK; ++round) {
    uint64_t align = round == 0 ? 64 : (uint64_t)64 >> (round - 1);
    for (int p = 0; p < n; ++p) {
      hc_graph* g = graphs[p];
      for (int s = 0; s < g->num_nodes; ++s) {
        hc_node* nd = g->nodes[s];
        for (int j = 0; j < nd->num_inputs; ++j) {
          hc_value* v = nd->inputs[j];
          if (!in_blob(v) || seen[p][v->id]) continue;
          uint64_t nb = hc_value_nbytes(v);
          if (nb == 0) {
            seen[p][v->id] = true;
            v->storage.offset = 0;
            continue;
          }
          if (round == 0 ? nb < 64 : (nb >= 64 || weight_alignment(nb) != align)) continue;
          seen[p][v->id] = true;
          uint64_t h = bytes_hash(v->data, nb);
          size_t slot = (size_t)h & (cap - 1);
          while (table[slot].v) {
            const hc_value* o = table[slot].v;
            if (table[slot].hash == h && hc_value_nbytes(o) == nb && !memcmp(o->data, v->data, nb)) break;
            slot = (slot + 1) & (cap - 1);
          }
          if (!table[slot].v) {
            bytes = (bytes + align - 1) / align * align;
            table[slot] = (placed_const){h, bytes, v};
            bytes += nb;
          }
          v->storage.offset = table[slot].offset;
        }
      }
    }
  }
  for (int p = 0; seen && p < n; ++p) free(seen[p]);
  free(seen);
  free(table);
  if (st == HX_OK) *out_bytes = (bytes + 63) / 64 * 64;
  return st;
}
