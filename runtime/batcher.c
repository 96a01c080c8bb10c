/* Batch sizing, row layout, padding and splitting (see batcher.h). */
#include "batcher.h"

#include <stdlib.h>
#include <string.h>

hx_status_t hx_batcher_init(hx_batcher* b, const hx_model_t* model, int max_batch) {
  memset(b, 0, sizeof(*b));
  const hx_abi_header* h = model->header;
  if (max_batch < 0) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "max_batch must be >= 0, got %d", max_batch);
  b->num_inputs = (int)h->num_inputs;
  b->num_outputs = (int)h->num_outputs;
  b->in_row = calloc((size_t)b->num_inputs + 1, sizeof(size_t));
  b->out_row = calloc((size_t)b->num_outputs + 1, sizeof(size_t));
  if (!b->in_row || !b->out_row) {
    hx_batcher_release(b);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory preparing batching");
  }
  if (!model->batched) {
    b->num_programs = 1;
    b->sizes[0] = 1;
    b->max_requests = b->max_rows = 1;
    for (int i = 0; i < b->num_inputs; ++i) b->in_row[i] = (size_t)model->programs[0].inputs[i].bytes;
    for (int i = 0; i < b->num_outputs; ++i) b->out_row[i] = (size_t)model->programs[0].outputs[i].bytes;
    return HX_OK;
  }
  int64_t largest = model->programs[model->num_programs - 1].batch;
  int64_t cap = max_batch == 0 || max_batch > largest ? largest : max_batch;
  for (uint32_t p = 0; p < model->num_programs && b->num_programs < HX_BATCHER_MAX_PROGRAMS; ++p) {
    const hx_program* pr = &model->programs[p];
    for (int i = 0; i < b->num_inputs + b->num_outputs; ++i) {
      const hx_abi_tensor* t = i < b->num_inputs ? &pr->inputs[i] : &pr->outputs[i - b->num_inputs];
      size_t row = (size_t)(t->bytes / (uint64_t)pr->batch);
      size_t* slot = i < b->num_inputs ? &b->in_row[i] : &b->out_row[i - b->num_inputs];
      if (p > 0 && *slot != row) {
        hx_batcher_release(b);
        return hx_status_make(HX_STATUS_INCOMPATIBLE, "batch programs disagree on the sample size of '%s'", t->name);
      }
      *slot = row;
    }
    b->sizes[b->num_programs] = pr->batch;
    b->program_index[b->num_programs] = (int)p;
    b->num_programs++;
    if (pr->batch >= cap) break; /* the first size that holds a full batch is the last needed */
  }
  b->max_requests = (int)cap;
  b->max_rows = (int)b->sizes[b->num_programs - 1];
  return HX_OK;
}

void hx_batcher_release(hx_batcher* b) {
  free(b->in_row);
  free(b->out_row);
  memset(b, 0, sizeof(*b));
}

int hx_batcher_choose(const hx_batcher* b, int n) {
  for (int i = 0; i < b->num_programs; ++i)
    if (b->sizes[i] >= n) return i;
  return b->num_programs - 1;
}

void hx_batcher_rows(const hx_batcher* b, int is_output, void* const* bufs, int row, void** out_ptrs) {
  int n = is_output ? b->num_outputs : b->num_inputs;
  const size_t* rows = is_output ? b->out_row : b->in_row;
  for (int i = 0; i < n; ++i) out_ptrs[i] = (char*)bufs[i] + (size_t)row * rows[i];
}

void hx_batcher_gather(const hx_batcher* b, void* const* in_bufs, int row, const void* const* samples) {
  for (int i = 0; i < b->num_inputs; ++i)
    if (b->in_row[i]) memcpy((char*)in_bufs[i] + (size_t)row * b->in_row[i], samples[i], b->in_row[i]);
}

void hx_batcher_pad(const hx_batcher* b, void* const* in_bufs, int used, int rows) {
  if (used >= rows) return;
  for (int i = 0; i < b->num_inputs; ++i)
    memset((char*)in_bufs[i] + (size_t)used * b->in_row[i], 0, (size_t)(rows - used) * b->in_row[i]);
}

void hx_batcher_split(const hx_batcher* b, void* const* out_bufs, int row, void* const* samples) {
  for (int i = 0; i < b->num_outputs; ++i)
    if (samples[i] && b->out_row[i])
      memcpy(samples[i], (const char*)out_bufs[i] + (size_t)row * b->out_row[i], b->out_row[i]);
}
