/* Sessions: the planned arena, the bases table, and one program's schedule
 * run on the session's thread pool. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena_memory.h"
#include "executor.h"
#include "model.h"
#include "thread_pool.h"

struct hx_session {
  const hx_model_t* model;
  const hx_program* program;
  hx_pool_t* pool;
  hx_exec_scratch* scratch;
  void* arena;      /* planned arena */
  int owns_arena;
  int arena_mapped;   /* owned arena is a huge-page mapping (arena_memory.h) */
  size_t arena_alloc_bytes;
  void** bases;     /* HX_BASE_* layout, see artifact_abi.h */
  size_t* bound_bytes; /* bytes bound per input then output, 0 = unbound */
};

static hx_status_t create_session(const hx_model_t* model, const hx_program* program, const hx_session_options_t* opts,
                                  hx_session_t** out_session) {
  hx_session_options_t defaults = {0};
  if (!opts) opts = &defaults;
  const hx_abi_header* h = model->header;

  int threads = opts->threads;
  if (threads < 0) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "threads must be >= 0, got %d", threads);
  if (threads == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    threads = n > 0 ? (int)n : 1;
  }
  if (opts->arena && ((uintptr_t)opts->arena % h->arena_alignment) != 0)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "caller arena must be %llu-byte aligned",
                          (unsigned long long)h->arena_alignment);

  hx_session_t* s = calloc(1, sizeof(*s));
  if (!s) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory creating session");
  s->model = model;
  s->program = program;
  s->bases = calloc(h->num_bases, sizeof(void*));
  s->bound_bytes = calloc((size_t)h->num_inputs + h->num_outputs + 1, sizeof(size_t));
  hx_status_t st = HX_OK;
  if (!s->bases || !s->bound_bytes) {
    st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory creating session");
    goto fail;
  }
  if (opts->arena) {
    s->arena = opts->arena;
  } else if (program->arena_bytes > 0) {
    size_t align = h->arena_alignment < 64 ? 64 : (size_t)h->arena_alignment;
    size_t bytes = ((size_t)program->arena_bytes + align - 1) / align * align;
    s->arena = hx_arena_memory_alloc(bytes, align, &s->arena_mapped);
    s->arena_alloc_bytes = bytes;
    if (!s->arena) {
      st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "cannot allocate %zu-byte arena", bytes);
      goto fail;
    }
    s->owns_arena = 1;
  }
  s->bases[HX_BASE_ARENA] = s->arena;
  s->bases[HX_BASE_WEIGHTS] = (void*)model->weights;
  /* Until the first run, a value-dependent output reports its upper bound. */
  for (uint32_t j = 0; j < h->num_outputs; ++j) {
    int64_t off = program->dims_offsets[j];
    if (off < 0) continue;
    const hx_abi_tensor* t = &program->outputs[j];
    if (t->rank > 0) memcpy((char*)s->arena + off, t->dims, sizeof(int64_t) * (size_t)t->rank);
  }
  st = hx_exec_scratch_create(program->plan.max_lanes, &s->scratch);
  if (st != HX_OK) goto fail;
  st = hx_pool_create(threads, opts->pin_threads ? HX_POOL_PIN : HX_POOL_PIN_NONE, &s->pool);
  if (st != HX_OK) goto fail;
  *out_session = s;
  return HX_OK;

fail:
  hx_session_free(s);
  return st;
}

hx_status_t hx_session_create(const hx_model_t* model, const hx_session_options_t* opts,
                              hx_session_t** out_session) {
  if (!out_session) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "out_session is NULL");
  *out_session = NULL;
  if (!model) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "model is NULL");
  return create_session(model, &model->programs[0], opts, out_session);
}

hx_status_t hx_session_create_for_batch(const hx_model_t* model, int64_t batch, const hx_session_options_t* opts,
                                        hx_session_t** out_session) {
  if (!out_session) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "out_session is NULL");
  *out_session = NULL;
  if (!model) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "model is NULL");
  const hx_program* p = hx_model_program_for_batch(model, batch);
  if (!p || !model->batched) {
    char sizes[256] = "";
    size_t used = 0;
    for (uint32_t i = 0; model->batched && i < model->num_programs && used < sizeof sizes; ++i)
      used += (size_t)snprintf(sizes + used, sizeof sizes - used, "%s%lld", i ? ", " : "",
                               (long long)model->programs[i].batch);
    if (!model->batched)
      return hx_status_make(HX_STATUS_NOT_FOUND, "model '%s' was compiled without --batch; it has no batch-%lld program",
                            hx_model_name(model), (long long)batch);
    return hx_status_make(HX_STATUS_NOT_FOUND, "model '%s' has no batch-%lld program (compiled batch sizes: %s)",
                          hx_model_name(model), (long long)batch, sizes);
  }
  return create_session(model, p, opts, out_session);
}

void hx_session_free(hx_session_t* session) {
  if (!session) return;
  hx_pool_free(session->pool);
  hx_exec_scratch_free(session->scratch);
  if (session->owns_arena) hx_arena_memory_free(session->arena, session->arena_alloc_bytes, session->arena_mapped);
  free(session->bases);
  free(session->bound_bytes);
  free(session);
}

int32_t hx_session_thread_count(const hx_session_t* session) { return hx_pool_thread_count(session->pool); }

static void fill_info(const hx_abi_tensor* t, hx_tensor_info_t* out) {
  out->name = t->name;
  out->dtype = (hx_dtype_t)t->dtype;
  out->rank = t->rank;
  out->dims = t->dims;
  out->bytes = (size_t)t->bytes;
}

hx_status_t hx_session_input_info(const hx_session_t* session, size_t index, hx_tensor_info_t* out_info) {
  const hx_abi_header* h = session->model->header;
  if (index >= h->num_inputs)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "input index %zu out of range (model has %u inputs)", index,
                          h->num_inputs);
  fill_info(&session->program->inputs[index], out_info);
  return HX_OK;
}

hx_status_t hx_session_output_info(const hx_session_t* session, size_t index, hx_tensor_info_t* out_info) {
  const hx_abi_header* h = session->model->header;
  if (index >= h->num_outputs)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "output index %zu out of range (model has %u outputs)", index,
                          h->num_outputs);
  fill_info(&session->program->outputs[index], out_info);
  return HX_OK;
}

static hx_status_t bind(hx_session_t* s, size_t slot, const hx_abi_tensor* t, const void* data, size_t bytes,
                        const char* what, size_t index) {
  if (!data && t->bytes > 0)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "%s %zu ('%s'): data is NULL", what, index, t->name);
  if (bytes != t->bytes)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "%s %zu ('%s'): expected %llu bytes, got %zu", what, index,
                          t->name, (unsigned long long)t->bytes, bytes);
  s->bases[HX_BASE_FIRST_IO + slot] = (void*)data;
  /* Zero-byte tensors are bound too; remember binding separately from size. */
  s->bound_bytes[slot] = bytes + 1;
  return HX_OK;
}

hx_status_t hx_session_bind_input(hx_session_t* session, size_t index, const void* data, size_t bytes) {
  const hx_abi_header* h = session->model->header;
  if (index >= h->num_inputs)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "input index %zu out of range (model has %u inputs)", index,
                          h->num_inputs);
  return bind(session, index, &session->program->inputs[index], data, bytes, "input", index);
}

hx_status_t hx_session_bind_output(hx_session_t* session, size_t index, void* data, size_t bytes) {
  const hx_abi_header* h = session->model->header;
  if (index >= h->num_outputs)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "output index %zu out of range (model has %u outputs)",
                          index, h->num_outputs);
  return bind(session, h->num_inputs + index, &session->program->outputs[index], data, bytes, "output", index);
}

hx_status_t hx_session_run(hx_session_t* session) {
  if (!session) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "session is NULL");
  const hx_abi_header* h = session->model->header;
  for (uint32_t i = 0; i < h->num_inputs + h->num_outputs; ++i) {
    if (session->bound_bytes[i] == 0) {
      int is_input = i < h->num_inputs;
      const hx_abi_tensor* t = is_input ? &session->program->inputs[i] : &session->program->outputs[i - h->num_inputs];
      return hx_status_make(HX_STATUS_FAILED_PRECONDITION, "%s %u ('%s') is not bound",
                            is_input ? "input" : "output", is_input ? i : i - h->num_inputs, t->name);
    }
  }
  hx_exec_run(&session->program->plan, session->pool, session->scratch, session->bases);
  return HX_OK;
}

/* The actual shape of an output after the last run: its dims slot for a
 * value-dependent output (checked against the upper bound), its static
 * shape otherwise. */
hx_status_t hx_session_output_shape(const hx_session_t* session, size_t index, int32_t* out_rank, int64_t* out_dims,
                                    size_t dims_capacity) {
  if (!session || !out_rank) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "session or out_rank is NULL");
  const hx_abi_header* h = session->model->header;
  if (index >= h->num_outputs)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "output index %zu out of range (model has %u outputs)", index,
                          h->num_outputs);
  const hx_abi_tensor* t = &session->program->outputs[index];
  if ((size_t)t->rank > dims_capacity || (t->rank > 0 && !out_dims))
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "output %zu ('%s') has rank %d; out_dims has room for %zu", index,
                          t->name, t->rank, dims_capacity);
  *out_rank = t->rank;
  int64_t off = session->program->dims_offsets[index];
  const int64_t* dims = t->dims;
  if (off >= 0) dims = (const int64_t*)(const void*)((const char*)session->arena + off);
  for (int32_t d = 0; d < t->rank; ++d) {
    if (dims[d] < 0 || dims[d] > t->dims[d])
      return hx_status_make(HX_STATUS_INTERNAL, "output %zu ('%s'): dim %d is %lld, outside its upper bound %lld",
                            index, t->name, d, (long long)dims[d], (long long)t->dims[d]);
    out_dims[d] = dims[d];
  }
  return HX_OK;
}
