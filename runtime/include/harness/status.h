/* Harness status: the one error type of the whole code base.
 *
 * A status is either HX_OK (the NULL pointer, free to create and test) or a
 * heap object carrying a code and a human-readable message. Every function
 * that can fail returns one. Ownership: a non-OK status belongs to whoever
 * receives it; they must hand it on or release it with hx_status_free().
 * Context is added on the way up with hx_status_annotate(), so the message
 * a user finally reads says where and why (node, op, file...).
 */
#ifndef HARNESS_STATUS_H
#define HARNESS_STATUS_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hx_status_code {
  HX_STATUS_OK = 0,
  HX_STATUS_INVALID_ARGUMENT = 1,   /* caller passed something malformed */
  HX_STATUS_NOT_FOUND = 2,          /* a file, symbol or name does not exist */
  HX_STATUS_UNSUPPORTED = 3,        /* valid input we do not implement (op, attribute, dtype) */
  HX_STATUS_IO = 4,                 /* reading or writing a file failed */
  HX_STATUS_INCOMPATIBLE = 5,       /* artifact ABI or CPU features do not match */
  HX_STATUS_OUT_OF_MEMORY = 6,
  HX_STATUS_FAILED_PRECONDITION = 7,/* call made in the wrong state (e.g. unbound input) */
  HX_STATUS_INTERNAL = 8,           /* a bug in Harness or in a library it uses */
  HX_STATUS_UNAVAILABLE = 9,        /* a resource is busy (queue full); retry later */
  HX_STATUS_DEADLINE_EXCEEDED = 10, /* a request's deadline cannot be or was not met */
  HX_STATUS_CANCELLED = 11,         /* work abandoned on request (e.g. server shutdown) */
} hx_status_code_t;

typedef struct hx_status_s* hx_status_t;

/* The OK status. Comparing with HX_OK (or testing for NULL) is the idiom. */
#define HX_OK ((hx_status_t)0)

/* Creates a status with a printf-style message. Never returns HX_OK; if the
 * message cannot be allocated a static out-of-memory status is returned. */
hx_status_t hx_status_make(hx_status_code_t code, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
hx_status_t hx_status_makev(hx_status_code_t code, const char* fmt, va_list ap);

/* Prefixes context ("while X: ") to the message of a failed status and returns
 * it. HX_OK passes through unchanged, so it can wrap any call. */
hx_status_t hx_status_annotate(hx_status_t status, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Code of a status; HX_STATUS_OK for HX_OK. */
hx_status_code_t hx_status_code(hx_status_t status);

/* Message of a status ("" for HX_OK). Lent: valid until hx_status_free. */
const char* hx_status_message(hx_status_t status);

/* Short name of a code, e.g. "unsupported". */
const char* hx_status_code_name(hx_status_code_t code);

/* Releases a status; HX_OK is accepted. */
void hx_status_free(hx_status_t status);

/* Propagates a failure to the caller: HX_RETURN_IF_ERROR(f(x)); */
#define HX_RETURN_IF_ERROR(expr)          \
  do {                                    \
    hx_status_t hx_status_tmp__ = (expr); \
    if (hx_status_tmp__ != HX_OK) return hx_status_tmp__; \
  } while (0)

#ifdef __cplusplus
}
#endif
#endif /* HARNESS_STATUS_H */
