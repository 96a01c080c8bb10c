/* TensorProto <-> dense tensor conversion (see tensor_proto.h). */
#include "compiler/frontend/tensor_proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"

hx_status_t hc_read_file(const char* path, void** out_data, size_t* out_len) {
  *out_data = NULL;
  *out_len = 0;
  FILE* f = fopen(path, "rb");
  if (!f) return hx_status_make(errno == ENOENT ? HX_STATUS_NOT_FOUND : HX_STATUS_IO, "cannot open '%s': %s", path, strerror(errno));
  if (fseek(f, 0, SEEK_END) != 0) {
    fclose(f);
    return hx_status_make(HX_STATUS_IO, "cannot seek '%s': %s", path, strerror(errno));
  }
  long len = ftell(f);
  if (len < 0) {
    fclose(f);
    return hx_status_make(HX_STATUS_IO, "cannot size '%s': %s", path, strerror(errno));
  }
  rewind(f);
  void* buf = malloc((size_t)len + 1);
  if (!buf) {
    fclose(f);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "cannot allocate %ld bytes for '%s'", len, path);
  }
  size_t got = fread(buf, 1, (size_t)len, f);
  fclose(f);
  if (got != (size_t)len) {
    free(buf);
    return hx_status_make(HX_STATUS_IO, "short read on '%s'", path);
  }
  *out_data = buf;
  *out_len = (size_t)len;
  return HX_OK;
}

static void* alloc_aligned(size_t nbytes) {
  size_t padded = (nbytes + 63) / 64 * 64;
  void* p = aligned_alloc(64, padded ? padded : 64);
  if (p && padded) memset((char*)p + nbytes, 0, padded - nbytes);
  return p;
}

/* Reads `length` bytes at `offset` of base_dir/location (length < 0: to EOF). */
static hx_status_t read_external(const char* base_dir, const char* location, long long offset, long long length,
                                 const char* what, void* dst, size_t expect) {
  if (!location) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "%s: external data without a location", what);
  if (strstr(location, "..") || location[0] == '/')
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "%s: external data location '%s' leaves the model directory",
                          what, location);
  size_t plen = (base_dir ? strlen(base_dir) : 1) + strlen(location) + 2;
  char* path = malloc(plen);
  if (!path) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  snprintf(path, plen, "%s/%s", base_dir ? base_dir : ".", location);
  FILE* f = fopen(path, "rb");
  if (!f) {
    hx_status_t st = hx_status_make(HX_STATUS_NOT_FOUND, "%s: cannot open external data '%s': %s", what, path, strerror(errno));
    free(path);
    return st;
  }
  hx_status_t st = HX_OK;
  if (length < 0) length = (long long)expect;
  if ((size_t)length != expect) {
    st = hx_status_make(HX_STATUS_INVALID_ARGUMENT, "%s: external data length %lld does not match the %zu bytes its shape needs",
                        what, length, expect);
  } else if (fseeko(f, (off_t)offset, SEEK_SET) != 0 || fread(dst, 1, expect, f) != expect) {
    st = hx_status_make(HX_STATUS_IO, "%s: external data '%s' is shorter than offset %lld + %zu bytes", what, path,
                        offset, expect);
  }
  fclose(f);
  free(path);
  return st;
}

hx_status_t hc_tensor_from_proto(const Onnx__TensorProto* tp, const char* base_dir, const char* what, hc_tensor* out) {
  memset(out, 0, sizeof(*out));
  if (tp->n_dims > HC_TENSOR_MAX_RANK)
    return hx_status_make(HX_STATUS_UNSUPPORTED, "%s has rank %zu; Harness supports up to %d", what, tp->n_dims,
                          HC_TENSOR_MAX_RANK);
  hx_dtype_t dt = (hx_dtype_t)tp->data_type;
  size_t esize = hx_dtype_size(dt);
  if (esize == 0 || tp->data_type > HX_DTYPE_BFLOAT16)
    return hx_status_make(HX_STATUS_UNSUPPORTED, "%s has unsupported element type %d (%s)", what, tp->data_type,
                          hx_dtype_name(dt));
  if (tp->segment) return hx_status_make(HX_STATUS_UNSUPPORTED, "%s is segmented; segmented tensors are not supported", what);
  int64_t numel = 1;
  for (size_t i = 0; i < tp->n_dims; ++i) {
    if (tp->dims[i] < 0) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "%s has negative dimension %lld", what, (long long)tp->dims[i]);
    out->dims[i] = tp->dims[i];
    numel *= tp->dims[i];
  }
  out->rank = (int)tp->n_dims;
  out->dtype = dt;
  size_t nbytes = (size_t)numel * esize;
  out->nbytes = nbytes;
  out->name = strdup(tp->name ? tp->name : "");
  out->data = alloc_aligned(nbytes);
  if (!out->data || !out->name) {
    hc_tensor_free(out);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "cannot allocate %zu bytes for %s", nbytes, what);
  }
  hx_status_t st = HX_OK;
  char shape[160] = "";
  for (int i = 0, used = 0; i < out->rank && used < (int)sizeof shape; ++i)
    used += snprintf(shape + used, sizeof shape - (size_t)used, "%s%lld", i ? "x" : "", (long long)out->dims[i]);
  if (out->rank == 0) snprintf(shape, sizeof shape, "scalar");

#define COUNT_MISMATCH(have, unit)                                                                          \
  hx_status_make(HX_STATUS_INVALID_ARGUMENT, "%s has %zu %s but its dims (%s, %s) need %lld", what, (size_t)(have), unit, \
                 shape, hx_dtype_name(dt), (long long)numel)

  if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    const char* location = NULL;
    long long offset = 0, length = -1;
    for (size_t i = 0; i < tp->n_external_data; ++i) {
      const Onnx__StringStringEntryProto* e = tp->external_data[i];
      if (!e->key || !e->value) continue;
      if (!strcmp(e->key, "location")) location = e->value;
      else if (!strcmp(e->key, "offset")) offset = strtoll(e->value, NULL, 10);
      else if (!strcmp(e->key, "length")) length = strtoll(e->value, NULL, 10);
    }
    st = read_external(base_dir, location, offset, length, what, out->data, nbytes);
  } else if (tp->has_raw_data) {
    if (tp->raw_data.len != nbytes)
      st = hx_status_make(HX_STATUS_INVALID_ARGUMENT, "%s has %zu bytes of data but its dims (%s, %s) need %zu", what,
                          tp->raw_data.len, shape, hx_dtype_name(dt), nbytes);
    else if (nbytes)
      memcpy(out->data, tp->raw_data.data, nbytes);
  } else {
    switch (dt) {
      case HX_DTYPE_FLOAT32:
        if (tp->n_float_data != (size_t)numel) { st = COUNT_MISMATCH(tp->n_float_data, "floats"); break; }
        memcpy(out->data, tp->float_data, nbytes);
        break;
      case HX_DTYPE_COMPLEX64:
        if (tp->n_float_data != (size_t)numel * 2) { st = COUNT_MISMATCH(tp->n_float_data / 2, "complex values"); break; }
        memcpy(out->data, tp->float_data, nbytes);
        break;
      case HX_DTYPE_FLOAT64:
        if (tp->n_double_data != (size_t)numel) { st = COUNT_MISMATCH(tp->n_double_data, "doubles"); break; }
        memcpy(out->data, tp->double_data, nbytes);
        break;
      case HX_DTYPE_COMPLEX128:
        if (tp->n_double_data != (size_t)numel * 2) { st = COUNT_MISMATCH(tp->n_double_data / 2, "complex values"); break; }
        memcpy(out->data, tp->double_data, nbytes);
        break;
      case HX_DTYPE_INT64:
        if (tp->n_int64_data != (size_t)numel) { st = COUNT_MISMATCH(tp->n_int64_data, "int64 values"); break; }
        memcpy(out->data, tp->int64_data, nbytes);
        break;
      case HX_DTYPE_UINT32:
      case HX_DTYPE_UINT64:
        if (tp->n_uint64_data != (size_t)numel) { st = COUNT_MISMATCH(tp->n_uint64_data, "uint64 values"); break; }
        for (int64_t i = 0; i < numel; ++i) {
          if (dt == HX_DTYPE_UINT32) ((uint32_t*)out->data)[i] = (uint32_t)tp->uint64_data[i];
          else ((uint64_t*)out->data)[i] = tp->uint64_data[i];
        }
        break;
      default: /* int32_data carries int8/16/32, uint8/16, bool, float16, bfloat16 */
        if (tp->n_int32_data != (size_t)numel) { st = COUNT_MISMATCH(tp->n_int32_data, "int32 values"); break; }
        for (int64_t i = 0; i < numel; ++i) {
          int32_t v = tp->int32_data[i];
          switch (esize) {
            case 1: ((uint8_t*)out->data)[i] = (uint8_t)v; break;
            case 2: ((uint16_t*)out->data)[i] = (uint16_t)v; break;
            default: ((int32_t*)out->data)[i] = v; break;
          }
        }
        break;
    }
  }
#undef COUNT_MISMATCH
  if (st != HX_OK) hc_tensor_free(out);
  return st;
}

hx_status_t hc_tensor_read_pb(const char* path, hc_tensor* out) {
  memset(out, 0, sizeof(*out));
  void* buf;
  size_t len;
  HX_RETURN_IF_ERROR(hc_read_file(path, &buf, &len));
  Onnx__TensorProto* tp = onnx__tensor_proto__unpack(NULL, len, buf);
  free(buf);
  if (!tp) return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "'%s' is not a serialized ONNX TensorProto", path);
  /* External data in a standalone tensor file is relative to that file. */
  char* dir = strdup(path);
  char* slash = dir ? strrchr(dir, '/') : NULL;
  if (slash) *slash = '\0';
  char what[512];
  snprintf(what, sizeof what, "tensor file '%s'", path);
  hx_status_t st = hc_tensor_from_proto(tp, slash ? dir : ".", what, out);
  free(dir);
  onnx__tensor_proto__free_unpacked(tp, NULL);
  return st;
}

hx_status_t hc_tensor_write_pb(const char* path, const hc_tensor* t) {
  Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
  tp.n_dims = (size_t)t->rank;
  tp.dims = (int64_t*)t->dims;
  tp.has_data_type = 1;
  tp.data_type = (int32_t)t->dtype;
  tp.name = t->name ? t->name : (char*)"";
  tp.has_raw_data = 1;
  tp.raw_data.len = t->nbytes;
  tp.raw_data.data = t->data;
  size_t len = onnx__tensor_proto__get_packed_size(&tp);
  uint8_t* buf = malloc(len ? len : 1);
  if (!buf) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  onnx__tensor_proto__pack(&tp, buf);
  FILE* f = fopen(path, "wb");
  if (!f) {
    free(buf);
    return hx_status_make(HX_STATUS_IO, "cannot create '%s': %s", path, strerror(errno));
  }
  size_t put = fwrite(buf, 1, len, f);
  int rc = fclose(f);
  free(buf);
  if (put != len || rc != 0) return hx_status_make(HX_STATUS_IO, "cannot write '%s'", path);
  return HX_OK;
}

void hc_tensor_free(hc_tensor* t) {
  if (!t) return;
  free(t->name);
  free(t->data);
  t->name = NULL;
  t->data = NULL;
}
