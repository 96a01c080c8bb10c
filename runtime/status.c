/* Status objects: heap-allocated code + message, NULL for OK. */
#include "harness/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hx_status_s {
  hx_status_code_t code;
  int is_static; /* the out-of-memory fallback is never freed */
  char* message;
};

static struct hx_status_s g_out_of_memory = {
    HX_STATUS_OUT_OF_MEMORY, 1, (char*)"out of memory while reporting an error"};

hx_status_t hx_status_makev(hx_status_code_t code, const char* fmt, va_list ap) {
  if (code == HX_STATUS_OK) code = HX_STATUS_INTERNAL; /* a failure must never look like OK */
  struct hx_status_s* s = malloc(sizeof(*s));
  if (!s) return &g_out_of_memory;
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) n = 0;
  s->message = malloc((size_t)n + 1);
  if (!s->message) {
    free(s);
    return &g_out_of_memory;
  }
  vsnprintf(s->message, (size_t)n + 1, fmt, ap);
  s->code = code;
  s->is_static = 0;
  return s;
}

hx_status_t hx_status_make(hx_status_code_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hx_status_t s = hx_status_makev(code, fmt, ap);
  va_end(ap);
  return s;
}

hx_status_t hx_status_annotate(hx_status_t status, const char* fmt, ...) {
  if (status == HX_OK || status->is_static) return status;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return status;
  size_t old = strlen(status->message);
  char* msg = malloc((size_t)n + 2 + old + 1);
  if (!msg) return status; /* keep the original message rather than lose it */
  va_start(ap, fmt);
  vsnprintf(msg, (size_t)n + 1, fmt, ap);
  va_end(ap);
  memcpy(msg + n, ": ", 2);
  memcpy(msg + n + 2, status->message, old + 1);
  free(status->message);
  status->message = msg;
  return status;
}

hx_status_code_t hx_status_code(hx_status_t status) {
  return status ? status->code : HX_STATUS_OK;
}

const char* hx_status_message(hx_status_t status) {
  return status ? status->message : "";
}

const char* hx_status_code_name(hx_status_code_t code) {
  switch (code) {
    case HX_STATUS_OK: return "ok";
    case HX_STATUS_INVALID_ARGUMENT: return "invalid argument";
    case HX_STATUS_NOT_FOUND: return "not found";
    case HX_STATUS_UNSUPPORTED: return "unsupported";
    case HX_STATUS_IO: return "i/o error";
    case HX_STATUS_INCOMPATIBLE: return "incompatible";
    case HX_STATUS_OUT_OF_MEMORY: return "out of memory";
    case HX_STATUS_FAILED_PRECONDITION: return "failed precondition";
    case HX_STATUS_INTERNAL: return "internal error";
    case HX_STATUS_UNAVAILABLE: return "unavailable";
    case HX_STATUS_DEADLINE_EXCEEDED: return "deadline exceeded";
    case HX_STATUS_CANCELLED: return "cancelled";
  }
  return "unknown";
}

void hx_status_free(hx_status_t status) {
  if (!status || status->is_static) return;
  free(status->message);
  free(status);
}
