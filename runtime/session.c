/* Sessions: the planned arena, the bases table and the kernel loop. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "thread_pool.h"

struct hx_session {
  const hx_model_t* model;
  hx_pool_t* pool;
  void* arena;      /* planned arena */
  int owns_arena;
  void** bases;     /* HX_BASE_* layout, see artifact_abi.h */
  size_t* bound_bytes; /* bytes bound per input then output, 0 = unbound */
};

/* One kernel's arguments while its tasks are spread over the pool. */
typedef struct kernel_call {
  hx_abi_kernel_fn fn;
  void* const* bases;
} kernel_call;

static void run_kernel_tasks(void* ctx, int64_t begin, int64_t end) {
  kernel_call* call = ctx;
  call->fn(call->bases, begin, end);
}

hx_status_t hx_session_create(const hx_model_t* model, const hx_session_options_t* opts,
                              hx_session_t** out_session) {
  if (!out_session) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "out_session is NULL");
  *out_session = NULL;
  if (!model) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "model is NULL");
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
  s->bases = calloc(h->num_bases, sizeof(void*));
  s->bound_bytes = calloc((size_t)h->num_inputs + h->num_outputs + 1, sizeof(size_t));
  hx_status_t st = HX_OK;
  if (!s->bases || !s->bound_bytes) {
    st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory creating session");
    goto fail;
  }
  if (opts->arena) {
    s->arena = opts->arena;
  } else if (h->arena_bytes > 0) {
    size_t align = h->arena_alignment < 64 ? 64 : (size_t)h->arena_alignment;
    size_t bytes = ((size_t)h->arena_bytes + align - 1) / align * align;
    s->arena = aligned_alloc(align, bytes);
    if (!s->arena) {
      st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "cannot allocate %zu-byte arena", bytes);
      goto fail;
    }
    s->owns_arena = 1;
  }
  s->bases[HX_BASE_ARENA] = s->arena;
  s->bases[HX_BASE_WEIGHTS] = (void*)h->weights;
  st = hx_pool_create(threads, opts->pin_threads, &s->pool);
  if (st != HX_OK) goto fail;
  *out_session = s;
  return HX_OK;

fail:
  hx_session_free(s);
  return st;
}

void hx_session_free(hx_session_t* session) {
  if (!session) return;
  hx_pool_free(session->pool);
  if (session->owns_arena) free(session->arena);
  free(session->bases);
  free(session->bound_bytes);
  free(session);
}

int32_t hx_session_thread_count(const hx_session_t* session) { return hx_pool_thread_count(session->pool); }

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
  return bind(session, index, &h->inputs[index], data, bytes, "input", index);
}

hx_status_t hx_session_bind_output(hx_session_t* session, size_t index, void* data, size_t bytes) {
  const hx_abi_header* h = session->model->header;
  if (index >= h->num_outputs)
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "output index %zu out of range (model has %u outputs)",
                          index, h->num_outputs);
  return bind(session, h->num_inputs + index, &h->outputs[index], data, bytes, "output", index);
}

hx_status_t hx_session_run(hx_session_t* session) {
  if (!session) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "session is NULL");
  const hx_abi_header* h = session->model->header;
  for (uint32_t i = 0; i < h->num_inputs + h->num_outputs; ++i) {
    if (session->bound_bytes[i] == 0) {
      int is_input = i < h->num_inputs;
      const hx_abi_tensor* t = is_input ? &h->inputs[i] : &h->outputs[i - h->num_inputs];
      return hx_status_make(HX_STATUS_FAILED_PRECONDITION, "%s %u ('%s') is not bound",
                            is_input ? "input" : "output", is_input ? i : i - h->num_inputs, t->name);
    }
  }
  const hx_abi_variant* v = session->model->variant;
  for (uint32_t k = 0; k < v->num_kernels; ++k) {
    const hx_abi_kernel* kern = &v->kernels[k];
    if (kern->tasks <= 1) {
      kern->fn(session->bases, 0, kern->tasks);
    } else {
      kernel_call call = {kern->fn, session->bases};
      hx_pool_parallel_for(session->pool, kern->tasks, run_kernel_tasks, &call);
    }
  }
  return HX_OK;
}
