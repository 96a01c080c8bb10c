/* harness-run: run a compiled artifact on tensor files through libharness. */
#include <dirent.h>
#include <errno.h>
#include <dlfcn.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/artifact_abi.h"
#include "harness/harness.h"
#include "tools/common/artifact_dlopen.h"
#include "tools/common/tensor_file.h"

static void usage(FILE* out) {
  fprintf(out,
          "usage: harness-run MODEL.so [--input NAME=FILE ...] [--inputs DIR] [--outputs DIR]\n"
          "                   [--format pb|npy] [--threads N] [--print] [-v]\n"
          "\n"
          "Loads a Harness artifact, binds the inputs, runs it once and writes each output i\n"
          "as DIR/output_<i>.pb (ONNX TensorProto) or .npy.\n"
          "\n"
          "  --input NAME=FILE   input NAME from FILE (.pb TensorProto or .npy)\n"
          "  --inputs DIR        inputs from DIR/input_<i>.pb (or .npy), in graph-input order\n"
          "  --outputs DIR       where to write outputs (default: current directory)\n"
          "  --format pb|npy     output file format (default pb)\n"
          "  --threads N         threads to run kernels on (default: all CPUs)\n"
          "  --print             print a summary of each output to stdout\n"
          "  -v, --verbose       print which code variant (target) the runtime chose for this\n"
          "                      CPU, and all variants of a fat artifact\n"
          "  -h, --help          this help\n");
}

/* A shape as "2x3", or "a scalar" for rank 0 (a 0-d .npy, an ONNX scalar). */
static void print_shape(FILE* f, int rank, const int64_t* dims) {
  if (rank == 0) fprintf(f, "a scalar");
  for (int d = 0; d < rank; ++d) fprintf(f, "%s%lld", d ? "x" : "", (long long)dims[d]);
}

/* Prints shape and the first few values of an output. */

static void print_summary(const hx_tensor_info_t* info, const void* data) {
  printf("%s: %s[", info->name, hx_dtype_name(info->dtype));
  for (int d = 0; d < info->rank; ++d) printf("%s%lld", d ? "x" : "", (long long)info->dims[d]);
  printf("]");
  size_t n = hx_dtype_size(info->dtype) ? info->bytes / hx_dtype_size(info->dtype) : 0;
  size_t show = n < 8 ? n : 8;
  printf(" = [");
  for (size_t i = 0; i < show; ++i) {
    double v = 0;
    switch (info->dtype) {
      case HX_DTYPE_FLOAT32: v = ((const float*)data)[i]; break;
      case HX_DTYPE_FLOAT64: v = ((const double*)data)[i]; break;
      case HX_DTYPE_INT64: v = (double)((const int64_t*)data)[i]; break;
      case HX_DTYPE_INT32: v = ((const int32_t*)data)[i]; break;
      case HX_DTYPE_INT8: v = ((const int8_t*)data)[i]; break;
      case HX_DTYPE_UINT8:
      case HX_DTYPE_BOOL: v = ((const uint8_t*)data)[i]; break;
      default: break;
    }
    printf("%s%g", i ? ", " : "", v);
  }
  printf("%s]\n", n > show ? ", ..." : "");
}

/* -v: the artifact's code variants (a fat artifact has several, best
 * first) and the one the runtime chose for this CPU. */
static void print_variants(const char* path, const hx_model_t* model) {
  const char* chosen = hx_model_target(model);
  fprintf(stderr, "harness-run: %s: variant %s chosen for this CPU", path, chosen);
  void* so = hx_tool_dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  hx_abi_query_fn q = so ? (hx_abi_query_fn)dlsym(so, HX_ARTIFACT_QUERY_SYMBOL) : NULL;
  const hx_abi_header* h = q ? q() : NULL;
  if (h && h->num_variants > 1) {
    fprintf(stderr, " (variants, best first:");
    for (uint32_t v = 0; v < h->num_variants; ++v) fprintf(stderr, "%s %s", v ? "," : "", h->variants[v].target);
    fprintf(stderr, ")");
  }
  if (so) dlclose(so);
  fprintf(stderr, "\n");
}

static int fail(hx_status_t st, const char* what) {
  fprintf(stderr, "error: %s%s%s\n", what ? what : "", what ? ": " : "", hx_status_message(st));
  hx_status_free(st);
  return 1;
}

int main(int argc, char** argv) {
  const char* inputs_dir = NULL;
  const char* outputs_dir = ".";
  const char* format = "pb";
  int threads = 0, print = 0, verbose = 0;
  const char* named[256];
  int num_named = 0;
  enum { OPT_INPUT = 1000, OPT_INPUTS, OPT_OUTPUTS, OPT_FORMAT, OPT_THREADS, OPT_PRINT };
  static const struct option longopts[] = {
      {"input", required_argument, NULL, OPT_INPUT},   {"inputs", required_argument, NULL, OPT_INPUTS},
      {"outputs", required_argument, NULL, OPT_OUTPUTS}, {"format", required_argument, NULL, OPT_FORMAT},
      {"threads", required_argument, NULL, OPT_THREADS}, {"print", no_argument, NULL, OPT_PRINT},
      {"verbose", no_argument, NULL, 'v'},             {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int c;
  while ((c = getopt_long(argc, argv, "hv", longopts, NULL)) != -1) {
    switch (c) {
      case OPT_INPUT:
        if (num_named >= 256) {
          fprintf(stderr, "error: too many --input flags\n");
          return 2;
        }
        named[num_named++] = optarg;
        break;
      case OPT_INPUTS: inputs_dir = optarg; break;
      case OPT_OUTPUTS: outputs_dir = optarg; break;
      case OPT_FORMAT: format = optarg; break;
      case OPT_THREADS: threads = atoi(optarg); break;
      case OPT_PRINT: print = 1; break;
      case 'v': verbose = 1; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (optind != argc - 1) {
    usage(stderr);
    return 2;
  }
  if (strcmp(format, "pb") != 0 && strcmp(format, "npy") != 0) {
    fprintf(stderr, "error: --format must be pb or npy\n");
    return 2;
  }
  const char* model_path = argv[optind];
  hx_model_t* model = NULL;
  hx_status_t st = hx_model_load(model_path, &model);
  if (st != HX_OK) return fail(st, NULL);
  if (verbose) print_variants(model_path, model);

  size_t nin = hx_model_input_count(model), nout = hx_model_output_count(model);
  hc_tensor* in = calloc(nin + 1, sizeof(hc_tensor));
  void** out = calloc(nout + 1, sizeof(void*));
  int rc = 0;
  hx_session_t* session = NULL;
  hx_session_options_t so = {.threads = threads};
  st = hx_session_create(model, &so, &session);
  if (st != HX_OK) {
    rc = fail(st, NULL);
    goto done;
  }

  for (int k = 0; k < num_named; ++k) {
    const char* eq = strrchr(named[k], '=');
    if (!eq) {
      fprintf(stderr, "error: --input expects NAME=FILE, got '%s'\n", named[k]);
      rc = 2;
      goto done;
    }
    char* name = strndup(named[k], (size_t)(eq - named[k]));
    size_t idx;
    st = hx_model_find_input(model, name, &idx);
    free(name);
    if (st != HX_OK) {
      rc = fail(st, NULL);
      goto done;
    }
    hc_tensor_free(&in[idx]);
    st = hx_tensor_file_read(eq + 1, &in[idx]);
    if (st != HX_OK) {
      rc = fail(st, NULL);
      goto done;
    }
  }
  if (inputs_dir) {
    /* Test-data folders name each tensor; match by name so that inputs
     * frozen with --constant (absent from the artifact) do not shift the
     * others. Unnamed files are taken in graph-input order. */
    hc_tensor files[256];
    int nfiles = 0;
    for (; nfiles < 256; ++nfiles) {
      char path[4096];
      struct stat sb;
      snprintf(path, sizeof path, "%s/input_%d.pb", inputs_dir, nfiles);
      if (stat(path, &sb) != 0) snprintf(path, sizeof path, "%s/input_%d.npy", inputs_dir, nfiles);
      if (stat(path, &sb) != 0) break;
      st = hx_tensor_file_read(path, &files[nfiles]);
      if (st != HX_OK) {
        for (int k = 0; k < nfiles; ++k) hc_tensor_free(&files[k]);
        rc = fail(st, NULL);
        goto done;
      }
    }
    for (size_t i = 0; i < nin; ++i) {
      if (in[i].data) continue;
      hx_tensor_info_t info;
      hx_model_input_info(model, i, &info);
      int pick = -1;
      for (int k = 0; k < nfiles && pick < 0; ++k)
        if (files[k].data && files[k].name && !strcmp(files[k].name, info.name)) pick = k;
      if (pick < 0 && (int)i < nfiles && files[i].data && (!files[i].name || !files[i].name[0])) pick = (int)i;
      if (pick < 0) continue;
      in[i] = files[pick];
      files[pick].data = NULL;
      files[pick].name = NULL;
    }
    for (int k = 0; k < nfiles; ++k) hc_tensor_free(&files[k]);
  }
  for (size_t i = 0; i < nin; ++i) {
    if (in[i].data) continue;
    hx_tensor_info_t info;
    hx_model_input_info(model, i, &info);
    fprintf(stderr, "error: input %zu ('%s') not given; use --input %s=FILE or --inputs DIR\n", i, info.name, info.name);
    rc = 2;
    goto done;
  }
  for (size_t i = 0; i < nin; ++i) {
    hx_tensor_info_t info;
    hx_model_input_info(model, i, &info);
    /* ONNX test data before onnx 1.14 stores bfloat16 tensors as uint16
     * bit patterns; accept them as the bfloat16 bits they are. */
    if (info.dtype == HX_DTYPE_BFLOAT16 && in[i].dtype == HX_DTYPE_UINT16) in[i].dtype = HX_DTYPE_BFLOAT16;
    if (in[i].dtype != info.dtype) {
      fprintf(stderr, "error: input '%s' must be %s, the file holds %s\n", info.name, hx_dtype_name(info.dtype),
              hx_dtype_name(in[i].dtype));
      rc = 1;
      goto done;
    }
    bool same = in[i].rank == info.rank;
    for (int d = 0; same && d < info.rank; ++d) same = in[i].dims[d] == info.dims[d];
    if (!same) {
      fprintf(stderr, "error: input '%s' must have shape ", info.name);
      print_shape(stderr, info.rank, info.dims);
      fprintf(stderr, " (the artifact was compiled for it), the file holds ");
      print_shape(stderr, in[i].rank, in[i].dims);
      fprintf(stderr, "\n");
      rc = 1;
      goto done;
    }
    st = hx_session_bind_input(session, i, in[i].data, in[i].nbytes);
    if (st != HX_OK) {
      rc = fail(st, NULL);
      goto done;
    }
  }
  for (size_t i = 0; i < nout; ++i) {
    hx_tensor_info_t info;
    hx_model_output_info(model, i, &info);
    out[i] = aligned_alloc(64, (info.bytes + 63) / 64 * 64 + 64);
    if (!out[i]) {
      fprintf(stderr, "error: out of memory\n");
      rc = 1;
      goto done;
    }
    st = hx_session_bind_output(session, i, out[i], info.bytes);
    if (st != HX_OK) {
      rc = fail(st, NULL);
      goto done;
    }
  }
  st = hx_session_run(session);
  if (st != HX_OK) {
    rc = fail(st, NULL);
    goto done;
  }
  if (mkdir(outputs_dir, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "error: cannot create '%s': %s\n", outputs_dir, strerror(errno));
    rc = 1;
    goto done;
  }
  for (size_t i = 0; i < nout; ++i) {
    hx_tensor_info_t info;
    hx_model_output_info(model, i, &info);
    /* The true shape: a value-dependent output (NonZero...) fills only the
     * start of its upper-bound buffer. */
    int32_t rank = 0;
    int64_t dims[16];
    st = hx_session_output_shape(session, i, &rank, dims, 16);
    if (st != HX_OK) {
      rc = fail(st, NULL);
      goto done;
    }
    size_t numel = 1;
    for (int d = 0; d < rank; ++d) numel *= (size_t)dims[d];
    info.dims = dims;
    info.bytes = numel * hx_dtype_size(info.dtype);
    hc_tensor t = {.name = (char*)info.name, .dtype = info.dtype, .rank = rank, .data = out[i], .nbytes = info.bytes};
    for (int d = 0; d < rank; ++d) t.dims[d] = dims[d];
    char path[4096];
    snprintf(path, sizeof path, "%s/output_%zu.%s", outputs_dir, i, format);
    st = hx_tensor_file_write(path, &t);
    if (st != HX_OK) {
      rc = fail(st, NULL);
      goto done;
    }
    if (print) print_summary(&info, out[i]);
  }

done:
  for (size_t i = 0; i < nin; ++i) hc_tensor_free(&in[i]);
  for (size_t i = 0; i < nout; ++i) free(out[i]);
  free(in);
  free(out);
  hx_session_free(session);
  hx_model_free(model);
  return rc;
}
