/* Dynamic batching arithmetic: which compiled batch size runs n requests,
 * where each request's rows sit in a batch buffer, padding, and splitting
 * results back per request.
 *
 * A batch buffer holds, per model input (or output), max_rows samples one
 * after another (the batch is every tensor's leading dimension). Request r of
 * a batch owns row r of every tensor; rows past the last request are padding
 * and are zeroed so that a padded run is deterministic. An artifact compiled
 * without --batch behaves as a single batch-1 program whose "row" is the
 * whole tensor. */
#ifndef HARNESS_RUNTIME_BATCHER_H
#define HARNESS_RUNTIME_BATCHER_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

#define HX_BATCHER_MAX_PROGRAMS 16

typedef struct hx_batcher {
  int num_programs;         /* usable programs (batch <= max_requests, plus the first that holds it) */
  int64_t sizes[HX_BATCHER_MAX_PROGRAMS];
  int program_index[HX_BATCHER_MAX_PROGRAMS]; /* into model->programs */
  int max_requests;         /* most requests per batch */
  int max_rows;             /* rows of the largest usable program */
  int num_inputs, num_outputs;
  size_t* in_row;           /* bytes of one sample, per input */
  size_t* out_row;          /* per output */
} hx_batcher;

/* Prepares batching for `model` with at most max_batch requests per batch
 * (0 = the largest compiled size). Fails if the programs disagree on a
 * sample's size. */
hx_status_t hx_batcher_init(hx_batcher* b, const hx_model_t* model, int max_batch);
void hx_batcher_release(hx_batcher* b);

/* Index (into b->sizes) of the smallest compiled size holding n requests. */
int hx_batcher_choose(const hx_batcher* b, int n);

/* Pointers to row `row` of every input (or output) buffer. */
void hx_batcher_rows(const hx_batcher* b, int is_output, void* const* bufs, int row, void** out_ptrs);
/* Copies one request's samples into row `row` of the input buffers. */
void hx_batcher_gather(const hx_batcher* b, void* const* in_bufs, int row, const void* const* samples);
/* Zeroes input rows [used, rows). */
void hx_batcher_pad(const hx_batcher* b, void* const* in_bufs, int used, int rows);
/* Copies row `row` of the output buffers to one request's outputs (NULL
 * entries are skipped). */
void hx_batcher_split(const hx_batcher* b, void* const* out_bufs, int row, void* const* samples);

#endif /* HARNESS_RUNTIME_BATCHER_H */
