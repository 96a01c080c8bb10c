/* Dense tensors from and to ONNX TensorProto messages and .pb files.
 *
 * Shared by the importer (initializers, Constant values) and the tools
 * (test data and --constant files). Data is always returned dense, row-major,
 * little-endian and 64-byte aligned, whatever field of the TensorProto held
 * it (raw_data, typed repeated fields, or external data files). */
#ifndef HARNESS_FRONTEND_TENSOR_PROTO_H
#define HARNESS_FRONTEND_TENSOR_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "harness/harness.h"

#define HC_TENSOR_MAX_RANK 8

typedef struct hc_tensor {
  char* name;      /* malloc'd, may be "" */
  hx_dtype_t dtype;
  int rank;
  int64_t dims[HC_TENSOR_MAX_RANK];
  void* data;      /* aligned_alloc'd (64), nbytes long (free with hc_tensor_free) */
  size_t nbytes;
} hc_tensor;

struct Onnx__TensorProto;

/* Converts a TensorProto. base_dir resolves external data locations (may be
 * NULL when the tensor cannot be external). `what` names the tensor in
 * errors, e.g. "initializer 'conv1.weight'". */
hx_status_t hc_tensor_from_proto(const struct Onnx__TensorProto* tp, const char* base_dir, const char* what,
                                 hc_tensor* out);
/* Reads a serialized TensorProto file (the ONNX test-data format). */
hx_status_t hc_tensor_read_pb(const char* path, hc_tensor* out);
/* Writes a tensor as a serialized TensorProto (raw_data form). */
hx_status_t hc_tensor_write_pb(const char* path, const hc_tensor* t);
void hc_tensor_free(hc_tensor* t);

/* Reads a whole file into a malloc'd buffer. */
hx_status_t hc_read_file(const char* path, void** out_data, size_t* out_len);

#endif /* HARNESS_FRONTEND_TENSOR_PROTO_H */
