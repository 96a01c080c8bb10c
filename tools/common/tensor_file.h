/* Tensor files for the tools: ONNX TensorProto (.pb) and NumPy (.npy).
 * The format is chosen by the file extension (.npy, anything else = .pb). */
#ifndef HARNESS_TOOLS_TENSOR_FILE_H
#define HARNESS_TOOLS_TENSOR_FILE_H

#include "compiler/frontend/tensor_proto.h"

hx_status_t hx_tensor_file_read(const char* path, hc_tensor* out);
hx_status_t hx_tensor_file_write(const char* path, const hc_tensor* t);
/* NumPy .npy (format 1.0/2.0/3.0, little-endian, C order). */
hx_status_t hx_npy_read(const char* path, hc_tensor* out);
hx_status_t hx_npy_write(const char* path, const hc_tensor* t);

#endif /* HARNESS_TOOLS_TENSOR_FILE_H */
