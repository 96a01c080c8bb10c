/* .pb / .npy tensor files (see tensor_file.h). */
#include "tools/common/tensor_file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool has_suffix(const char* s, const char* suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

hx_status_t hx_tensor_file_read(const char* path, hc_tensor* out) {
  return has_suffix(path, ".npy") ? hx_npy_read(path, out) : hc_tensor_read_pb(path, out);
}

hx_status_t hx_tensor_file_write(const char* path, const hc_tensor* t) {
  return has_suffix(path, ".npy") ? hx_npy_write(path, t) : hc_tensor_write_pb(path, t);
}

/* NumPy dtype descriptors ('<f4' etc.) for each dtype; NULL = no npy form. */
static const char* npy_descr(hx_dtype_t dt) {
  switch (dt) {
    case HX_DTYPE_FLOAT32: return "<f4";
    case HX_DTYPE_FLOAT64: return "<f8";
    case HX_DTYPE_FLOAT16: return "<f2";
    case HX_DTYPE_INT8: return "|i1";
    case HX_DTYPE_UINT8: return "|u1";
    case HX_DTYPE_INT16: return "<i2";
    case HX_DTYPE_UINT16: return "<u2";
    case HX_DTYPE_INT32: return "<i4";
    case HX_DTYPE_UINT32: return "<u4";
    case HX_DTYPE_INT64: return "<i8";
    case HX_DTYPE_UINT64: return "<u8";
    case HX_DTYPE_BOOL: return "|b1";
    case HX_DTYPE_COMPLEX64: return "<c8";
    case HX_DTYPE_COMPLEX128: return "<c16";
    /* NumPy has no bfloat16; ml_dtypes writes it as raw 2-byte void. */
    case HX_DTYPE_BFLOAT16: return "|V2";
    default: return NULL;
  }
}

static hx_dtype_t npy_dtype(const char* d) {
  static const hx_dtype_t all[] = {HX_DTYPE_FLOAT32, HX_DTYPE_FLOAT64, HX_DTYPE_FLOAT16, HX_DTYPE_INT8,
                                   HX_DTYPE_UINT8,   HX_DTYPE_INT16,   HX_DTYPE_UINT16,  HX_DTYPE_INT32,
                                   HX_DTYPE_UINT32,  HX_DTYPE_INT64,   HX_DTYPE_UINT64,  HX_DTYPE_BOOL,
                                   HX_DTYPE_COMPLEX64, HX_DTYPE_COMPLEX128};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) {
    const char* e = npy_descr(all[i]);
    /* Accept '=' and '|' byte-order marks as well as '<'. */
    if (strcmp(e + 1, d + 1) == 0 && (d[0] == '<' || d[0] == '|' || d[0] == '=')) return all[i];
  }
  return HX_DTYPE_UNDEFINED;
}

hx_status_t hx_npy_read(const char* path, hc_tensor* out) {
  memset(out, 0, sizeof(*out));
  void* buf;
  size_t len;
  HX_RETURN_IF_ERROR(hc_read_file(path, &buf, &len));
  const unsigned char* b = buf;
  hx_status_t st = HX_OK;
  if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0) {
    st = hx_status_make(HX_STATUS_INVALID_ARGUMENT, "'%s' is not a .npy file", path);
    goto done;
  }
  size_t hlen, hstart;
  if (b[6] == 1) {
    hlen = (size_t)b[8] | ((size_t)b[9] << 8);
    hstart = 10;
  } else {
    if (len < 12) {
      st = hx_status_make(HX_STATUS_INVALID_ARGUMENT, "'%s' is truncated", path);
      goto done;
    }
    hlen = (size_t)b[8] | ((size_t)b[9] << 8) | ((size_t)b[10] << 16) | ((size_t)b[11] << 24);
    hstart = 12;
  }
  if (hstart + hlen > len) {
    st = hx_status_make(HX_STATUS_INVALID_ARGUMENT, "'%s' is truncated", path);
    goto done;
  }
  char* header = strndup((const char*)b + hstart, hlen);
  if (!header) {
    st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  const char* descr = strstr(header, "'descr'");
  const char* fortran = strstr(header, "'fortran_order'");
  const char* shape = strstr(header, "'shape'");
  char dstr[16] = "";
  if (descr) {
    const char* q = strchr(descr + 7, '\'');
    if (q) sscanf(q, "'%15[^']'", dstr);
  }
  out->dtype = npy_dtype(dstr);
  bool fortran_order = false;
  if (fortran) {
    const char* v = strchr(fortran + 15, ':');
    if (v) fortran_order = strncmp(v + 1 + strspn(v + 1, " "), "True", 4) == 0;
  }
  if (!descr || !shape || out->dtype == HX_DTYPE_UNDEFINED) {
    st = hx_status_make(HX_STATUS_UNSUPPORTED, "'%s': unsupported .npy header (dtype '%s')", path, dstr);
  } else if (fortran_order) {
    st = hx_status_make(HX_STATUS_UNSUPPORTED, "'%s' is in Fortran order; save it in C order", path);
  } else {
    const char* p = strchr(shape, '(');
    int64_t numel = 1;
    out->rank = 0;
    for (p = p ? p + 1 : NULL; p && *p && *p != ')';) {
      while (*p == ' ' || *p == ',') ++p;
      if (*p == ')') break;
      char* endp;
      long long d = strtoll(p, &endp, 10);
      if (endp == p || out->rank >= HC_TENSOR_MAX_RANK) {
        st = hx_status_make(HX_STATUS_UNSUPPORTED, "'%s': cannot parse shape", path);
        break;
      }
      out->dims[out->rank++] = d;
      numel *= d;
      p = endp;
    }
    if (st == HX_OK) {
      out->nbytes = (size_t)numel * hx_dtype_size(out->dtype);
      if (hstart + hlen + out->nbytes > len) {
        st = hx_status_make(HX_STATUS_INVALID_ARGUMENT, "'%s' holds fewer bytes than its shape needs", path);
      } else {
        out->data = aligned_alloc(64, (out->nbytes + 63) / 64 * 64 + 64);
        out->name = strdup("");
        if (!out->data || !out->name) st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
        else memcpy(out->data, b + hstart + hlen, out->nbytes);
      }
    }
  }
  free(header);
done:
  free(buf);
  if (st != HX_OK) hc_tensor_free(out);
  return st;
}

hx_status_t hx_npy_write(const char* path, const hc_tensor* t) {
  const char* descr = npy_descr(t->dtype);
  if (!descr) return hx_status_make(HX_STATUS_UNSUPPORTED, "%s has no .npy representation", hx_dtype_name(t->dtype));
  char dict[512];
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int i = 0; i < t->rank; ++i) n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld,%s", (long long)t->dims[i], i + 1 < t->rank ? " " : "");
  n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
  /* Pad with spaces so that the data starts 64-byte aligned, ending in '\n'. */
  size_t total = 10 + (size_t)n + 1;
  size_t padded = (total + 63) / 64 * 64;
  size_t hlen = padded - 10;
  FILE* f = fopen(path, "wb");
  if (!f) return hx_status_make(HX_STATUS_IO, "cannot create '%s': %s", path, strerror(errno));
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
  fwrite(pre, 1, 10, f);
  fwrite(dict, 1, (size_t)n, f);
  for (size_t i = (size_t)n; i + 1 < hlen; ++i) fputc(' ', f);
  fputc('\n', f);
  size_t put = t->nbytes ? fwrite(t->data, 1, t->nbytes, f) : 0;
  int rc = fclose(f);
  if (put != t->nbytes || rc != 0) return hx_status_make(HX_STATUS_IO, "cannot write '%s'", path);
  return HX_OK;
}
