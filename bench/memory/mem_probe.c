/* harness-mem-probe: the Harness side of the memory benchmark (see
 * bench/memory/memory_bench.py and docs/memory.md).
 *
 *   harness-mem-probe MODEL.so RUNS [THREADS]
 *
 * Loads the artifact, creates a session, allocates and fills every input and
 * output buffer, and faults in every page the artifact's file maps (code and
 * weights), so everything but the inference's own memory is resident. Then it
 * resets the process's peak-RSS counter (/proc/self/clear_refs, "5"), reads
 * the resident set, runs RUNS times (0 = load only) and reads the peak again:
 * the difference is the memory the inference itself touched, i.e. the
 * planned arena (the session allocates it at creation, but its pages become
 * resident only when kernels write them) plus any stray allocation. Under
 * /usr/bin/time -v the whole process's peak is reported as well. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>

#include "harness/artifact_abi.h"
#include "harness/harness.h"

/* A line of /proc/self/status in KiB ("VmHWM:", "VmRSS:"). */
static long status_kib(const char* key) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  size_t n = strlen(key);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, n)) kib = strtol(line + n, NULL, 10);
  fclose(f);
  return kib;
}

/* Resets VmHWM to the current resident set (Linux >= 4.0). */
static int reset_peak(void) {
  FILE* f = fopen("/proc/self/clear_refs", "w");
  if (!f) return -1;
  fputs("5", f);
  return fclose(f);
}

/* Reads one byte of every page of every readable mapping of `path`, but
 * not of [skip, skip + skip_bytes): weights the runtime copied into its own
 * memory at load, whose file pages no run reads (touching them would count
 * the weights twice in the whole-process figures). */
static void fault_in(const char* path, const void* skip, size_t skip_bytes) {
  char* real = realpath(path, NULL);
  FILE* f = fopen("/proc/self/maps", "r");
  if (!real || !f) {
    free(real);
    if (f) fclose(f);
    return;
  }
  char line[4096];
  volatile unsigned char sink = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    char perms[8], file[4096] = "";
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %4095s", &lo, &hi, perms, file) < 3) continue;
    if (perms[0] != 'r' || strcmp(file, real) != 0) continue;
    for (unsigned long a = lo; a < hi; a += 4096) {
      unsigned long s0 = (unsigned long)skip, s1 = s0 + skip_bytes;
      if (skip_bytes && a >= s0 && a + 4096 <= s1) continue; /* a page wholly inside the copied blob */
      sink += *(const volatile unsigned char*)a;
    }
  }
  (void)sink;
  fclose(f);
  free(real);
}

static int fail(hx_status_t st) {
  fprintf(stderr, "error: %s\n", hx_status_message(st));
  hx_status_free(st);
  return 1;
}

/* Touches every page with small deterministic values (zeros for integer
 * inputs, which are valid token ids and indices). */
static void fill(void* data, const hx_tensor_info_t* info) {
  if (info->dtype == HX_DTYPE_FLOAT32) {
    float* p = data;
    for (size_t i = 0; i < info->bytes / sizeof(float); ++i) p[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
  } else {
    memset(data, 0, info->bytes);
  }
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: harness-mem-probe MODEL.so RUNS [THREADS]\n");
    return 2;
  }
  int runs = atoi(argv[2]);
  int threads = argc > 3 ? atoi(argv[3]) : 1;
  hx_model_t* model;
  hx_status_t st = hx_model_load(argv[1], &model);
  if (st != HX_OK) return fail(st);
  hx_session_t* session;
  hx_session_options_t opts = {.threads = threads};
  st = hx_session_create(model, &opts, &session);
  if (st != HX_OK) return fail(st);
  size_t ni = hx_model_input_count(model), no = hx_model_output_count(model);
  void** bufs = calloc(ni + no + 1, sizeof(void*));
  for (size_t i = 0; i < ni + no; ++i) {
    hx_tensor_info_t info;
    st = i < ni ? hx_model_input_info(model, i, &info) : hx_model_output_info(model, i - ni, &info);
    if (st != HX_OK) return fail(st);
    bufs[i] = malloc(info.bytes ? info.bytes : 1);
    fill(bufs[i], &info);
    st = i < ni ? hx_session_bind_input(session, i, bufs[i], info.bytes)
                : hx_session_bind_output(session, i - ni, bufs[i], info.bytes);
    if (st != HX_OK) return fail(st);
  }
  /* Weights copied at load are resident already; in place, they are file
   * pages to fault in like the code. The artifact's own header says where
   * its blob lies in the file mapping. */
  size_t wbytes = 0;
  int copied = 0;
  hx_model_weights(model, &wbytes, &copied);
  const void* blob = NULL;
  if (copied) {
    char* real = realpath(argv[1], NULL); /* the name hx_model_load opened it by */
    void* h = real ? dlopen(real, RTLD_NOW | RTLD_NOLOAD) : NULL;
    free(real);
    hx_abi_query_fn query = h ? (hx_abi_query_fn)dlsym(h, HX_ARTIFACT_QUERY_SYMBOL) : NULL;
    const hx_abi_header* hd = query ? query() : NULL;
    if (hd) blob = hd->weights;
    if (h) dlclose(h);
  }
  fault_in(argv[1], blob, blob ? wbytes : 0);
  long load_peak = status_kib("VmHWM:");
  int reset = reset_peak();
  long before = status_kib("VmRSS:");
  for (int r = 0; r < runs; ++r) {
    st = hx_session_run(session);
    if (st != HX_OK) return fail(st);
  }
  long peak = status_kib("VmHWM:");
  printf("arena_bytes %zu\nload_peak_kib %ld\nrss_before_kib %ld\npeak_after_kib %ld\ninference_kib %ld\n",
         hx_model_arena_bytes(model), load_peak, before, peak, reset == 0 ? peak - before : -1);
  for (size_t i = 0; i < ni + no; ++i) free(bufs[i]);
  free(bufs);
  hx_session_free(session);
  hx_model_free(model);
  return 0;
}
