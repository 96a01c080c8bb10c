/* dlopen of an artifact path for the tools that open an artifact's shared
 * object directly (to read its ABI header or kernel table) beside the
 * runtime's own load. */
#ifndef HARNESS_TOOLS_ARTIFACT_DLOPEN_H
#define HARNESS_TOOLS_ARTIFACT_DLOPEN_H

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* dlopen(path, flags) where a path without a slash names a file in the
 * current directory, as it does for hx_model_load (runtime/model.c): dlopen
 * itself would search the library path for such a name, so `harness-bench
 * m.so` failed with "cannot open shared object file" while `harness-run
 * m.so` worked. */
static inline void* hx_tool_dlopen(const char* path, int flags) {
  if (strchr(path, '/')) return dlopen(path, flags);
  char local[4096];
  if (snprintf(local, sizeof local, "./%s", path) >= (int)sizeof local) return NULL;
  return dlopen(local, flags);
}

#endif /* HARNESS_TOOLS_ARTIFACT_DLOPEN_H */
