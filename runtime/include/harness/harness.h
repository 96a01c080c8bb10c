/* libharness: load a Harness artifact and run it.
 *
 *   hx_model_t* model;   hx_session_t* session;
 *   hx_status_t st = hx_model_load("model.so", &model);
 *   st = hx_session_create(model, NULL, &session);
 *   hx_session_bind_input(session, 0, in, in_bytes);
 *   hx_session_bind_output(session, 0, out, out_bytes);
 *   st = hx_session_run(session);
 *
 * Every function that can fail returns an hx_status_t (see status.h); the
 * library never prints, exits or aborts. Objects: a model is immutable after
 * load and may be shared by any number of sessions and threads; a session
 * owns the planned arena and a thread pool and is used by one thread at a
 * time. Names: hx_<object>_<verb>; out_ parameters receive results.
 */
#ifndef HARNESS_HARNESS_H
#define HARNESS_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "harness/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HX_VERSION_STRING "0.1.0"

/* Element types; the numbering is ONNX's TensorProto.DataType. */
typedef enum hx_dtype {
  HX_DTYPE_UNDEFINED = 0,
  HX_DTYPE_FLOAT32 = 1,
  HX_DTYPE_UINT8 = 2,
  HX_DTYPE_INT8 = 3,
  HX_DTYPE_UINT16 = 4,
  HX_DTYPE_INT16 = 5,
  HX_DTYPE_INT32 = 6,
  HX_DTYPE_INT64 = 7,
  HX_DTYPE_STRING = 8,
  HX_DTYPE_BOOL = 9,
  HX_DTYPE_FLOAT16 = 10,
  HX_DTYPE_FLOAT64 = 11,
  HX_DTYPE_UINT32 = 12,
  HX_DTYPE_UINT64 = 13,
  HX_DTYPE_COMPLEX64 = 14,
  HX_DTYPE_COMPLEX128 = 15,
  HX_DTYPE_BFLOAT16 = 16,
} hx_dtype_t;

/* Bytes per element (0 for undefined/string). */
size_t hx_dtype_size(hx_dtype_t dtype);
/* ONNX-style name, e.g. "float32"; "invalid" for unknown values. */
const char* hx_dtype_name(hx_dtype_t dtype);

/* Description of a graph input or output. All pointers are lent by the model
 * and stay valid until hx_model_free. */
typedef struct hx_tensor_info {
  const char* name;
  hx_dtype_t dtype;
  int32_t rank;
  const int64_t* dims;
  size_t bytes; /* dense row-major size in bytes */
} hx_tensor_info_t;

typedef struct hx_model hx_model_t;
typedef struct hx_session hx_session_t;

/* Loads an artifact made by harnessc. Refuses artifacts of another ABI major
 * version and artifacts whose code needs CPU features this machine lacks;
 * the message names the missing feature. An ABI 1.3 artifact's compressed
 * manifest is inflated here (the only allocation it costs); a corrupt one is
 * an HX_STATUS_INCOMPATIBLE error saying what was wrong. On success *out_model is owned by
 * the caller (release with hx_model_free). */
hx_status_t hx_model_load(const char* path, hx_model_t** out_model);
void hx_model_free(hx_model_t* model);

size_t hx_model_input_count(const hx_model_t* model);
size_t hx_model_output_count(const hx_model_t* model);
hx_status_t hx_model_input_info(const hx_model_t* model, size_t index, hx_tensor_info_t* out_info);
hx_status_t hx_model_output_info(const hx_model_t* model, size_t index, hx_tensor_info_t* out_info);
/* Finds an input/output by name; HX_STATUS_NOT_FOUND if absent. */
hx_status_t hx_model_find_input(const hx_model_t* model, const char* name, size_t* out_index);
hx_status_t hx_model_find_output(const hx_model_t* model, const char* name, size_t* out_index);

/* Model facts, lent until hx_model_free. */
const char* hx_model_name(const hx_model_t* model);
const char* hx_model_producer(const hx_model_t* model);
const char* hx_model_target(const hx_model_t* model);      /* chosen code variant */
/* The scheduling manifest (docs/manifest.md) as JSON text. An ABI 1.3
 * artifact stores it compressed; hx_model_load inflated it, so this only
 * lends the text. NULL for a (hand-made) artifact that carries none. */
const char* hx_model_manifest_json(const hx_model_t* model);
/* Arena bytes a session needs: the largest of any batch program. */
size_t hx_model_arena_bytes(const hx_model_t* model);
size_t hx_model_kernel_count(const hx_model_t* model);
/* Where the sessions read the weights: *bytes of them at the returned
 * address. *copied is 1 when hx_model_load moved them into huge pages of
 * this process's own memory (blobs of 2 MiB or more unless HX_HUGEPAGES=0;
 * the artifact file's pages are then not used), 0 when they are read in
 * place from the artifact's file mapping. Either pointer may be NULL. */
const void* hx_model_weights(const hx_model_t* model, size_t* bytes, int* copied);

/* Batch sizes compiled into the artifact (harnessc --batch 1,2,4,8), smallest
 * first. hx_model_batch_count is 0 for an artifact compiled without --batch;
 * it then has the one program its model's shapes describe. A batched
 * artifact's hx_model_input_info/output_info describe its smallest batch. */
size_t hx_model_batch_count(const hx_model_t* model);
/* The index-th compiled batch size; 0 if index is out of range. */
int64_t hx_model_batch_size(const hx_model_t* model, size_t index);

/* Names a CPU feature bit (HX_CPU_*) and reports this machine's features. */
const char* hx_cpu_feature_name(uint64_t feature_bit);
uint64_t hx_cpu_features(void);

typedef struct hx_session_options {
  /* Threads that execute kernels, the calling thread included; 0 = one per
   * online CPU. The pool never runs more busy threads than this. */
  int32_t threads;
  /* Pin worker threads to CPUs 0..threads-1 (best effort). */
  int32_t pin_threads;
  /* Optional caller-owned arena of at least hx_model_arena_bytes() bytes,
   * 64-byte aligned; NULL lets the session allocate it once at creation. */
  void* arena;
} hx_session_options_t;

/* Creates a session: arena and thread pool are allocated here, once; runs
 * allocate nothing. opts may be NULL for defaults. The model must outlive the
 * session. */
hx_status_t hx_session_create(const hx_model_t* model, const hx_session_options_t* opts,
                              hx_session_t** out_session);
/* Same for the program of a batched artifact compiled for exactly `batch`
 * (HX_STATUS_NOT_FOUND names the sizes that exist). Its inputs and outputs
 * have `batch` as leading dimension; see hx_session_input_info. */
hx_status_t hx_session_create_for_batch(const hx_model_t* model, int64_t batch, const hx_session_options_t* opts,
                                        hx_session_t** out_session);
void hx_session_free(hx_session_t* session);

/* The signature of the session's program (differs from hx_model_*_info only
 * for sessions made with hx_session_create_for_batch). Lent by the model. */
hx_status_t hx_session_input_info(const hx_session_t* session, size_t index, hx_tensor_info_t* out_info);
hx_status_t hx_session_output_info(const hx_session_t* session, size_t index, hx_tensor_info_t* out_info);

/* Binds caller-owned buffers (dense, row-major, of exactly the size reported
 * by hx_model_*_info). Bindings persist across runs until rebound. Output
 * buffers must not overlap each other or any input. */
hx_status_t hx_session_bind_input(hx_session_t* session, size_t index, const void* data, size_t bytes);
hx_status_t hx_session_bind_output(hx_session_t* session, size_t index, void* data, size_t bytes);

/* Runs the model once on the bound buffers. Fails with
 * HX_STATUS_FAILED_PRECONDITION if an input or output is unbound. */
hx_status_t hx_session_run(hx_session_t* session);

/* Outputs whose shape depends on values (NonZero, Unique, Compress,
 * NonMaxSuppression, TopK with a run-time k): hx_model_output_info and
 * hx_session_output_info give an upper bound, and the buffer bound to such
 * an output must have room for it. After hx_session_run, the output's data
 * is dense (row-major) in its actual shape at the start of the buffer, and
 * hx_session_output_shape reports that shape; its byte size is the product
 * of the dims times hx_dtype_size. */
/* 1 if output `index` has a value-dependent shape, 0 otherwise. */
int hx_model_output_is_dynamic(const hx_model_t* model, size_t index);
/* The shape of output `index` produced by the last hx_session_run: the
 * actual shape of a value-dependent output (its upper bound before the first
 * run), the static shape of any other. Writes the rank to *out_rank and the
 * dims to out_dims, which has room for dims_capacity entries (the output's
 * rank from hx_session_output_info is enough). */
hx_status_t hx_session_output_shape(const hx_session_t* session, size_t index, int32_t* out_rank, int64_t* out_dims,
                                    size_t dims_capacity);

/* Threads the session actually uses. */
int32_t hx_session_thread_count(const hx_session_t* session);

#ifdef __cplusplus
}
#endif
#endif /* HARNESS_HARNESS_H */
