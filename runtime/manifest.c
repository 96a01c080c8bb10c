/* Inflating the compressed manifest of an ABI 1.3 artifact (see manifest.h
 * and artifact_abi.h). One inflate() call over the whole stream into a
 * buffer of the declared size plus one byte, so that every way a stream can
 * disagree with its header is told apart: corrupt data, a stream cut short,
 * bytes after its end, or a text longer or shorter than declared. */
#include "manifest.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

hx_status_t hx_manifest_inflate(const void* z, uint64_t z_bytes, uint64_t text_bytes, const char* path,
                                char** out_text) {
  *out_text = NULL;
  const unsigned long long zb = (unsigned long long)z_bytes, tb = (unsigned long long)text_bytes;
  if (!z || z_bytes == 0)
    return hx_status_make(HX_STATUS_INCOMPATIBLE, "artifact '%s' has a malformed header: its compressed manifest is "
                          "%s", path, z ? "empty" : "missing (NULL with a size)");
  /* zlib counts in uInt; a real manifest is a few megabytes at most, so a
   * larger size is a corrupt header, not a manifest to allocate for. */
  if (z_bytes >= UINT_MAX || text_bytes >= UINT_MAX)
    return hx_status_make(HX_STATUS_INCOMPATIBLE, "artifact '%s' has a malformed header: its compressed manifest "
                          "declares %llu bytes inflating to %llu, more than a manifest can be", path, zb, tb);
  char* text = malloc((size_t)text_bytes + 1);
  if (!text) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory inflating the manifest of '%s' (%llu "
                                   "bytes)", path, tb);
  z_stream s;
  memset(&s, 0, sizeof s);
  int rc = inflateInit(&s);
  if (rc != Z_OK) {
    free(text);
    return hx_status_make(rc == Z_MEM_ERROR ? HX_STATUS_OUT_OF_MEMORY : HX_STATUS_INTERNAL,
                          "cannot inflate the manifest of '%s': zlib inflateInit failed (%d)", path, rc);
  }
  s.next_in = (Bytef*)z;
  s.avail_in = (uInt)z_bytes;
  s.next_out = (Bytef*)text;
  s.avail_out = (uInt)text_bytes + 1; /* one spare byte: a longer text shows as avail_out == 0 */
  rc = inflate(&s, Z_FINISH);
  uint64_t produced = s.total_out, consumed = s.total_in;
  hx_status_t st = HX_OK;
  if (rc == Z_STREAM_END) {
    if (s.avail_in != 0)
      st = hx_status_make(HX_STATUS_INCOMPATIBLE,
                          "artifact '%s': its compressed manifest (%llu bytes) has %llu bytes after the end of its "
                          "zlib stream", path, zb, (unsigned long long)s.avail_in);
    else if (produced != text_bytes)
      st = hx_status_make(HX_STATUS_INCOMPATIBLE,
                          "artifact '%s': its compressed manifest (%llu bytes) inflates to %llu bytes, not the %llu "
                          "its header declares", path, zb, (unsigned long long)produced, tb);
  } else if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT) {
    st = hx_status_make(HX_STATUS_INCOMPATIBLE, "artifact '%s': its compressed manifest (%llu bytes) is corrupt "
                        "(zlib: %s, after %llu bytes)", path, zb,
                        rc == Z_NEED_DICT ? "needs a preset dictionary" : s.msg ? s.msg : "data error",
                        (unsigned long long)consumed);
  } else if (rc == Z_MEM_ERROR) {
    st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory inflating the manifest of '%s'", path);
  } else if (s.avail_out == 0) {
    st = hx_status_make(HX_STATUS_INCOMPATIBLE,
                        "artifact '%s': its compressed manifest (%llu bytes) inflates to more than the %llu bytes its "
                        "header declares", path, zb, tb);
  } else {
    st = hx_status_make(HX_STATUS_INCOMPATIBLE,
                        "artifact '%s': its compressed manifest is truncated (the zlib stream does not end within "
                        "its %llu bytes; %llu bytes of text so far, %llu declared)", path, zb,
                        (unsigned long long)produced, tb);
  }
  inflateEnd(&s);
  if (st == HX_OK && memchr(text, 0, (size_t)text_bytes))
    st = hx_status_make(HX_STATUS_INCOMPATIBLE, "artifact '%s': its manifest text contains a NUL byte", path);
  if (st != HX_OK) {
    free(text);
    return st;
  }
  text[text_bytes] = '\0';
  *out_text = text;
  return HX_OK;
}
