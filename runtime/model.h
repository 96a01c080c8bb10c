/* Internal view of a loaded artifact, shared by model.c and session.c. */
#ifndef HARNESS_RUNTIME_MODEL_H
#define HARNESS_RUNTIME_MODEL_H

#include <stdio.h>

#include "harness/artifact_abi.h"
#include "harness/harness.h"

struct hx_model {
  void* handle;                 /* dlopen handle, owned */
  const hx_abi_header* header;  /* lent by the artifact */
  const hx_abi_variant* variant;/* code variant chosen for this CPU */
};

#endif /* HARNESS_RUNTIME_MODEL_H */
