/* Links objects into a shared object with the system C compiler driver. */
#ifndef HARNESS_BACKEND_LINK_H
#define HARNESS_BACKEND_LINK_H

#include "harness/status.h"

/* Runs `$HARNESS_CC (default cc) -shared -o out OBJ... -lm ...` on 1 to 8
 * objects. Its stderr is returned in the error message on failure. */
hx_status_t hc_link_shared(const char* const* objs, int num_objs, const char* out_path);

#endif /* HARNESS_BACKEND_LINK_H */
