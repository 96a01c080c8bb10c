/* ONNX import: ModelProto -> graph IR. The only code that sees onnx.pb-c.h
 * besides tensor_proto.c. */
#ifndef HARNESS_FRONTEND_ONNX_IMPORT_H
#define HARNESS_FRONTEND_ONNX_IMPORT_H

#include "ir/graph.h"

/* --shape NAME=DIMS: NAME is a graph input (all dims given) or a symbolic
 * dimension name (dims is one number, applied wherever it appears). */
typedef struct hc_shape_override {
  const char* name;
  int rank;
  int64_t dims[HC_MAX_RANK];
} hc_shape_override;

/* --constant NAME=FILE.pb: graph input NAME becomes a weight with the file's data. */
typedef struct hc_constant_override {
  const char* name;
  const char* path;
} hc_constant_override;

typedef struct hc_import_options {
  const hc_shape_override* shapes;
  int num_shapes;
  const hc_constant_override* constants;
  int num_constants;
  /* Keep going after an error and report every problem at once (harnessc
   * check); the returned graph is then incomplete. */
  bool collect_errors;
  /* > 0 (harnessc --batch): the leading dimension of every graph input becomes
   * this, whether the model fixes it or names it; the inputs must share that
   * dimension (the same symbolic name, or the same fixed size). */
  int64_t batch;
} hc_import_options;

/* Parses a parses the ONNX file at `path`. On success *out_graph is owned by
 * the caller. Errors name the node, op and cause. */
hx_status_t hc_import_onnx_file(const char* path, const hc_import_options* opts, hc_graph** out_graph);
/* Same for an in-memory model; base_dir resolves external data. */
hx_status_t hc_import_onnx_buffer(const void* data, size_t len, const char* base_dir, const char* default_name,
                                  const hc_import_options* opts, hc_graph** out_graph);

/* Parses "1x3x224x224" (or "1,3,224,224") into dims. */
hx_status_t hc_parse_dims(const char* text, int64_t* dims, int* rank);

#endif /* HARNESS_FRONTEND_ONNX_IMPORT_H */
