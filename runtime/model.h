/* Internal view of a loaded artifact, shared by model.c, session.c and the
 * serving layer. */
#ifndef HARNESS_RUNTIME_MODEL_H
#define HARNESS_RUNTIME_MODEL_H

#include <stdio.h>

#include "executor.h"
#include "harness/artifact_abi.h"
#include "harness/harness.h"

/* One runnable program: the artifact's code for one batch size (or its only
 * code, for artifacts compiled without --batch). */
typedef struct hx_program {
  int64_t batch;                /* compiled batch size; 0 = not a batch program */
  uint64_t arena_bytes;
  const hx_abi_tensor* inputs;  /* lent by the artifact */
  const hx_abi_tensor* outputs;
  const hx_abi_variant* variant;/* code variant chosen for this CPU */
  hx_exec_plan plan;
  /* Per output: arena offset of its actual-dims slot (ABI 1.2 dynamic
   * outputs), -1 for an output of static shape. Owned. */
  int64_t* dims_offsets;
} hx_program;

struct hx_model {
  void* handle;                 /* dlopen handle, owned */
  const hx_abi_header* header;  /* lent by the artifact */
  const hx_abi_variant* variant;/* code variant chosen for this CPU (program 0's) */
  hx_program* programs;         /* smallest batch first; at least one */
  uint32_t num_programs;
  int batched;                  /* compiled with --batch */
  uint64_t max_arena_bytes;     /* largest arena of any program */
  uint32_t max_lanes;           /* widest parallel group of any program */
  char* manifest;               /* ABI 1.3: the inflated manifest, owned; NULL before 1.3 */
  const void* weights;          /* what sessions read: the header's blob or weights_copy */
  void* weights_copy;           /* the blob in huge pages (weights_memory.h), owned; NULL when in place */
};

/* The program compiled for exactly `batch`, or NULL. */
const hx_program* hx_model_program_for_batch(const hx_model_t* model, int64_t batch);

#endif /* HARNESS_RUNTIME_MODEL_H */
