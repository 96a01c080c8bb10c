/* Element type facts shared by the runtime, the compiler and the tools. */
#include "harness/harness.h"

size_t hx_dtype_size(hx_dtype_t dtype) {
  switch (dtype) {
    case HX_DTYPE_FLOAT32: return 4;
    case HX_DTYPE_UINT8: return 1;
    case HX_DTYPE_INT8: return 1;
    case HX_DTYPE_UINT16: return 2;
    case HX_DTYPE_INT16: return 2;
    case HX_DTYPE_INT32: return 4;
    case HX_DTYPE_INT64: return 8;
    case HX_DTYPE_BOOL: return 1;
    case HX_DTYPE_FLOAT16: return 2;
    case HX_DTYPE_FLOAT64: return 8;
    case HX_DTYPE_UINT32: return 4;
    case HX_DTYPE_UINT64: return 8;
    case HX_DTYPE_COMPLEX64: return 8;
    case HX_DTYPE_COMPLEX128: return 16;
    case HX_DTYPE_BFLOAT16: return 2;
    case HX_DTYPE_UNDEFINED:
    case HX_DTYPE_STRING: return 0;
  }
  return 0;
}

const char* hx_dtype_name(hx_dtype_t dtype) {
  switch (dtype) {
    case HX_DTYPE_UNDEFINED: return "undefined";
    case HX_DTYPE_FLOAT32: return "float32";
    case HX_DTYPE_UINT8: return "uint8";
    case HX_DTYPE_INT8: return "int8";
    case HX_DTYPE_UINT16: return "uint16";
    case HX_DTYPE_INT16: return "int16";
    case HX_DTYPE_INT32: return "int32";
    case HX_DTYPE_INT64: return "int64";
    case HX_DTYPE_STRING: return "string";
    case HX_DTYPE_BOOL: return "bool";
    case HX_DTYPE_FLOAT16: return "float16";
    case HX_DTYPE_FLOAT64: return "float64";
    case HX_DTYPE_UINT32: return "uint32";
    case HX_DTYPE_UINT64: return "uint64";
    case HX_DTYPE_COMPLEX64: return "complex64";
    case HX_DTYPE_COMPLEX128: return "complex128";
    case HX_DTYPE_BFLOAT16: return "bfloat16";
  }
  return "invalid";
}
