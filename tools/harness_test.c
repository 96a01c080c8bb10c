/* harness-test: runs ONNX backend test folders end to end.
 *
 * A test folder holds model.onnx and test_data_set_N folders of input_<i>.pb / output_<i>.pb.
 * Each test is compiled with the compiler library, loaded and run through
 * libharness's public API, and every output is compared with the expected
 * one (floats: |a-b| <= atol + rtol*|b|; integers and bools: exact). Each
 * test runs in a child process, so a crash fails one test, not the run.
 *
 * Shape-determining inputs (a Reshape's shape, a Slice's starts...) must be
 * compile-time constants in an AOT compiler. When a model does not compile
 * because such an input is a graph input, the test is recompiled per data
 * set with its integer inputs frozen from that data set (--constant), which
 * is how a user deploys such a model. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compiler/frontend/tensor_proto.h"
#include "onnx.pb-c.h"
#include "harness/compiler.h"
#include "harness/harness.h"

typedef struct test_options {
  int opt_level;
  double rtol, atol;
  int verbose;
  int timeout_s;
  const char* target;
} test_options;

enum { RESULT_PASS = 0, RESULT_FAIL = 1, RESULT_SKIP = 2 };

static bool is_dir(const char* p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool file_exists(const char* p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int cmp_str(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }

/* Lists subdirectories of dir whose names start with prefix, sorted. */
static int list_dirs(const char* dir, const char* prefix, char*** out) {
  DIR* d = opendir(dir);
  *out = NULL;
  if (!d) return 0;
  int n = 0, cap = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (!is_dir(path)) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      *out = realloc(*out, sizeof(char*) * (size_t)cap);
    }
    (*out)[n++] = strdup(path);
  }
  closedir(d);
  if (n) qsort(*out, (size_t)n, sizeof(char*), cmp_str);
  return n;
}

static void free_list(char** l, int n) {
  for (int i = 0; i < n; ++i) free(l[i]);
  free(l);
}

static const char* base_name(const char* p) {
  const char* s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* Reads element i of a tensor as double (floats and integers). */
static double elem(const void* data, hx_dtype_t dt, size_t i) {
  switch (dt) {
    case HX_DTYPE_FLOAT32: return ((const float*)data)[i];
    case HX_DTYPE_FLOAT64: return ((const double*)data)[i];
    case HX_DTYPE_FLOAT16: {
      uint16_t h = ((const uint16_t*)data)[i];
      int e = (h >> 10) & 0x1f, m = h & 0x3ff;
      double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
      return (h & 0x8000) ? -v : v;
    }
    case HX_DTYPE_BFLOAT16: {
      uint32_t bits = (uint32_t)((const uint16_t*)data)[i] << 16;
      float f;
      memcpy(&f, &bits, 4);
      return f;
    }
    case HX_DTYPE_INT8: return ((const int8_t*)data)[i];
    case HX_DTYPE_UINT8: return ((const uint8_t*)data)[i];
    case HX_DTYPE_BOOL: return ((const uint8_t*)data)[i] != 0;
    case HX_DTYPE_INT16: return ((const int16_t*)data)[i];
    case HX_DTYPE_UINT16: return ((const uint16_t*)data)[i];
    case HX_DTYPE_INT32: return ((const int32_t*)data)[i];
    case HX_DTYPE_UINT32: return ((const uint32_t*)data)[i];
    case HX_DTYPE_INT64: return (double)((const int64_t*)data)[i];
    case HX_DTYPE_UINT64: return (double)((const uint64_t*)data)[i];
    default: return 0;
  }
}

static bool is_float(hx_dtype_t dt) {
  return dt == HX_DTYPE_FLOAT32 || dt == HX_DTYPE_FLOAT64 || dt == HX_DTYPE_FLOAT16 || dt == HX_DTYPE_BFLOAT16 ||
         dt == HX_DTYPE_COMPLEX64 || dt == HX_DTYPE_COMPLEX128;
}

/* Compares got with expected; on mismatch writes a reason into why. */
static bool compare(const hx_tensor_info_t* info, const void* got, const hc_tensor* exp, const test_options* o, char* why,
                    size_t cap) {
  /* Older ONNX test data stores bfloat16 tensors as uint16 bit patterns. */
  if (info->dtype == HX_DTYPE_BFLOAT16 && exp->dtype == HX_DTYPE_UINT16) ((hc_tensor*)exp)->dtype = HX_DTYPE_BFLOAT16;
  if (info->dtype != exp->dtype) {
    snprintf(why, cap, "output '%s' is %s, expected %s", info->name, hx_dtype_name(info->dtype), hx_dtype_name(exp->dtype));
    return false;
  }
  bool same_shape = info->rank == exp->rank;
  for (int d = 0; same_shape && d < info->rank; ++d) same_shape = info->dims[d] == exp->dims[d];
  if (!same_shape) {
    snprintf(why, cap, "output '%s' has the wrong shape", info->name);
    return false;
  }
  hx_dtype_t dt = exp->dtype;
  if (dt == HX_DTYPE_COMPLEX64 || dt == HX_DTYPE_COMPLEX128) dt = dt == HX_DTYPE_COMPLEX64 ? HX_DTYPE_FLOAT32 : HX_DTYPE_FLOAT64;
  size_t es = hx_dtype_size(dt);
  size_t n = es ? exp->nbytes / es : 0;
  double rtol = o->rtol, atol = o->atol;
  if (exp->dtype == HX_DTYPE_FLOAT16 || exp->dtype == HX_DTYPE_BFLOAT16) {
    rtol = rtol > 1e-2 ? rtol : 1e-2;
    atol = atol > 1e-2 ? atol : 1e-2;
  }
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    double a = elem(got, dt, i), b = elem(exp->data, dt, i);
    bool ok;
    if (is_float(exp->dtype)) {
      if (isnan(b)) ok = isnan(a);
      else if (isinf(b)) ok = a == b;
      else ok = fabs(a - b) <= atol + rtol * fabs(b);
    } else {
      ok = memcmp((const char*)got + i * es, (const char*)exp->data + i * es, es) == 0 ||
           (dt == HX_DTYPE_BOOL && (a != 0) == (b != 0));
    }
    if (!ok) {
      if (!bad) first = i;
      ++bad;
      double err = fabs(a - b);
      if (err > worst || isnan(err)) worst = err;
    }
  }
  if (bad) {
    snprintf(why, cap, "output '%s': %zu of %zu values differ (first at %zu: got %g, expected %g; max abs error %g)",
             info->name, bad, n, first, elem(got, dt, first), elem(exp->data, dt, first), worst);
    return false;
  }
  return true;
}

/* Reads input_<i>.pb files of a data set until one is missing. */
static int read_inputs(const char* set, hc_tensor* in, int cap, char* why, size_t wcap) {
  int n = 0;
  for (; n < cap; ++n) {
    char p[4096];
    snprintf(p, sizeof p, "%s/input_%d.pb", set, n);
    if (!file_exists(p)) break;
    hx_status_t st = hc_tensor_read_pb(p, &in[n]);
    if (st != HX_OK) {
      snprintf(why, wcap, "%s", hx_status_message(st));
      hx_status_free(st);
      for (int k = 0; k < n; ++k) hc_tensor_free(&in[k]);
      return -1;
    }
  }
  return n;
}

/* Runs one data set against a loaded model. */
static int run_data_set(hx_model_t* model, const char* set, const test_options* o, char* why, size_t wcap) {
  enum { MAX_IO = 64 };
  hc_tensor in[MAX_IO] = {0};
  int nin = read_inputs(set, in, MAX_IO, why, wcap);
  if (nin < 0) return RESULT_FAIL;
  int result = RESULT_FAIL;
  hx_session_t* s = NULL;
  void* outs[MAX_IO] = {0};
  hx_session_options_t so = {.threads = 1};
  hx_status_t st = hx_session_create(model, &so, &s);
  size_t mnin = hx_model_input_count(model), mnout = hx_model_output_count(model);
  if (st != HX_OK) goto fail_status;
  /* Inputs frozen as constants are absent from the model: match by name. */
  for (size_t i = 0; i < mnin; ++i) {
    hx_tensor_info_t info;
    hx_model_input_info(model, i, &info);
    int k = -1;
    for (int j = 0; j < nin; ++j)
      if (in[j].name && !strcmp(in[j].name, info.name)) k = j;
    if (k < 0 && (int)i < nin && (!in[i].name || !in[i].name[0])) k = (int)i;
    if (k < 0) {
      snprintf(why, wcap, "%s: no data for input '%s'", base_name(set), info.name);
      goto done;
    }
    st = hx_session_bind_input(s, i, in[k].data, in[k].nbytes);
    if (st != HX_OK) goto fail_status;
  }
  for (size_t i = 0; i < mnout && i < MAX_IO; ++i) {
    hx_tensor_info_t info;
    hx_model_output_info(model, i, &info);
    outs[i] = aligned_alloc(64, (info.bytes + 63) / 64 * 64 + 64);
    st = hx_session_bind_output(s, i, outs[i], info.bytes);
    if (st != HX_OK) goto fail_status;
  }
  st = hx_session_run(s);
  if (st != HX_OK) goto fail_status;
  result = RESULT_PASS;
  for (size_t i = 0; i < mnout && result == RESULT_PASS; ++i) {
    char p[4096];
    snprintf(p, sizeof p, "%s/output_%zu.pb", set, i);
    hc_tensor exp;
    st = hc_tensor_read_pb(p, &exp);
    if (st != HX_OK) goto fail_status;
    hx_tensor_info_t info;
    hx_model_output_info(model, i, &info);
    /* Compare in the true shape (value-dependent outputs fill only the start
     * of their upper-bound buffers). */
    int32_t rank = 0;
    int64_t dims[16];
    st = hx_session_output_shape(s, i, &rank, dims, 16);
    if (st != HX_OK) {
      hc_tensor_free(&exp);
      goto fail_status;
    }
    size_t numel = 1;
    for (int d = 0; d < rank; ++d) numel *= (size_t)dims[d];
    info.rank = rank;
    info.dims = dims;
    info.bytes = numel * hx_dtype_size(info.dtype);
    char reason[512];
    if (!compare(&info, outs[i], &exp, o, reason, sizeof reason)) {
      snprintf(why, wcap, "%s: %s", base_name(set), reason);
      result = RESULT_FAIL;
    }
    hc_tensor_free(&exp);
  }
  goto done;

fail_status:
  snprintf(why, wcap, "%s: %s", base_name(set), hx_status_message(st));
  hx_status_free(st);
  result = RESULT_FAIL;
done:
  for (int k = 0; k < MAX_IO; ++k) free(outs[k]);
  for (int k = 0; k < nin; ++k) hc_tensor_free(&in[k]);
  hx_session_free(s);
  return result;
}

/* Compiles model.onnx with the given --constant flags into so_path. */
static hx_status_t compile_model(const char* dir, const char* so_path, const test_options* o, const char** constants,
                                 int num_constants) {
  char model[4096];
  snprintf(model, sizeof model, "%s/model.onnx", dir);
  hc_compile_options co;
  hc_compile_options_init(&co);
  co.input_path = model;
  co.output_path = so_path;
  co.opt_level = o->opt_level;
  co.target = o->target;
  for (int i = 0; i < num_constants && i < HC_MAX_OVERRIDES; ++i) co.constants[co.num_constants++] = constants[i];
  return hc_compile(&co);
}

/* Extracts "unsupported op X" from a compile error, for the skip line. */
static bool unsupported_op(hx_status_t st, char* op, size_t cap) {
  if (hx_status_code(st) != HX_STATUS_UNSUPPORTED) return false;
  const char* m = strstr(hx_status_message(st), "unsupported op ");
  if (!m) return false;
  m += strlen("unsupported op ");
  size_t n = strcspn(m, " :(");
  snprintf(op, cap, "%.*s", (int)n, m);
  return true;
}

static int run_test(const char* dir, const test_options* o, char* why, size_t wcap) {
  char so_path[] = "/tmp/harness-test-XXXXXX.so";
  int fd = mkstemps(so_path, 3);
  if (fd < 0) {
    snprintf(why, wcap, "cannot create a temporary file: %s", strerror(errno));
    return RESULT_FAIL;
  }
  close(fd);
  char** sets = NULL;
  int nsets = list_dirs(dir, "test_data_set_", &sets);
  int result = RESULT_PASS;
  hx_status_t st = compile_model(dir, so_path, o, NULL, 0);
  bool per_set = false;
  if (st != HX_OK && hx_status_code(st) == HX_STATUS_UNSUPPORTED && strstr(hx_status_message(st), "--constant")) {
    per_set = true; /* recompile per data set with integer inputs frozen */
    hx_status_free(st);
    st = HX_OK;
  }
  if (st != HX_OK) {
    char op[128];
    if (unsupported_op(st, op, sizeof op)) {
      snprintf(why, wcap, "unsupported op %s", op);
      result = RESULT_SKIP;
    } else {
      snprintf(why, wcap, "compile: %s", hx_status_message(st));
      result = RESULT_FAIL;
    }
    hx_status_free(st);
    goto done;
  }
  if (nsets == 0) {
    snprintf(why, wcap, "no test_data_set_* folders");
    result = RESULT_FAIL;
    goto done;
  }
  for (int s = 0; s < nsets && result == RESULT_PASS; ++s) {
    if (per_set) {
      const char* constants[64];
      char* owned[64];
      int nc = 0;
      for (int i = 0; i < 64; ++i) {
        char p[4096];
        snprintf(p, sizeof p, "%s/input_%d.pb", sets[s], i);
        if (!file_exists(p)) break;
        hc_tensor t;
        if (hc_tensor_read_pb(p, &t) != HX_OK) continue;
        if ((t.dtype == HX_DTYPE_INT64 || t.dtype == HX_DTYPE_INT32) && t.name && t.name[0]) {
          owned[nc] = NULL;
          if (asprintf(&owned[nc], "%s=%s", t.name, p) > 0) {
            constants[nc] = owned[nc];
            ++nc;
          }
        }
        hc_tensor_free(&t);
      }
      st = compile_model(dir, so_path, o, constants, nc);
      for (int i = 0; i < nc; ++i) free(owned[i]);
      if (st != HX_OK) {
        snprintf(why, wcap, "compile (inputs frozen): %s", hx_status_message(st));
        hx_status_free(st);
        result = RESULT_FAIL;
        break;
      }
    }
    hx_model_t* model = NULL;
    st = hx_model_load(so_path, &model);
    if (st != HX_OK) {
      snprintf(why, wcap, "load: %s", hx_status_message(st));
      hx_status_free(st);
      result = RESULT_FAIL;
      break;
    }
    result = run_data_set(model, sets[s], o, why, wcap);
    hx_model_free(model);
  }
done:
  unlink(so_path);
  free_list(sets, nsets);
  return result;
}

/* Collects test folders: a folder with model.onnx, or a folder of them. */
static void collect(const char* path, char*** tests, int* n, int* cap) {
  char model[4096];
  snprintf(model, sizeof model, "%s/model.onnx", path);
  if (file_exists(model)) {
    if (*n == *cap) {
      *cap = *cap ? *cap * 2 : 256;
      *tests = realloc(*tests, sizeof(char*) * (size_t)*cap);
    }
    (*tests)[(*n)++] = strdup(path);
    return;
  }
  char** subs = NULL;
  int ns = list_dirs(path, "", &subs);
  for (int i = 0; i < ns; ++i) collect(subs[i], tests, n, cap);
  free_list(subs, ns);
}

/* ---- categories ------------------------------------------------------------ */

/* Test categories, as operator coverage is judged (issue 3): the inference
 * tests by element type and op family, and the kinds that are out of scope
 * for an inference compiler. */
typedef enum category {
  CAT_FLOAT32 = 0,   /* a: float32 tensors only */
  CAT_OTHER_TYPES,   /* b: any other element type */
  CAT_QUANTIZED,     /* c: quantized operators */
  CAT_NON_TENSOR,    /* d: sequence, optional, map or string values */
  CAT_TRAINING,      /* e: training operators and modes */
  CAT_CONTROL_FLOW,  /* f: If, Loop, Scan */
  CAT_RANDOM,        /* g: random number generators */
  CAT_COUNT
} category;

static const char* const k_category_names[CAT_COUNT] = {
    "a float32", "b other types", "c quantized", "d non-tensor", "e training", "f control flow", "g random"};

static bool op_in(const char* op, const char* const* list) {
  for (int i = 0; list[i]; ++i)
    if (!strcmp(op, list[i])) return true;
  return false;
}

/* Records the element type of a graph input/output; false if it is not a
 * numeric tensor (sequence, optional, map, string). */
static bool note_value(const Onnx__ValueInfoProto* vi, bool* has_f32, bool* other_type) {
  const Onnx__TypeProto* t = vi->type;
  if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type) return false;
  int et = t->tensor_type->elem_type;
  if (et == HX_DTYPE_STRING || et == HX_DTYPE_UNDEFINED) return false;
  if (et == HX_DTYPE_FLOAT32) *has_f32 = true;
  else if (et != HX_DTYPE_INT64 && et != HX_DTYPE_INT32 && et != HX_DTYPE_BOOL) *other_type = true;
  return true;
}

/* Classifies a test folder by its model's ops and graph input/output types:
 * "float32" tests have float32 I/O (int32/int64/bool index and mask tensors
 * allowed beside it); any other element type, or no float32 I/O at all,
 * makes it an "other types" test. */
static category classify(const char* dir) {
  static const char* const quantized[] = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv",
                                          "QLinearMatMul", "ConvInteger", "MatMulInteger", NULL};
  static const char* const control[] = {"If", "Loop", "Scan", NULL};
  static const char* const random[] = {"Bernoulli", "RandomNormal", "RandomNormalLike", "RandomUniform",
                                       "RandomUniformLike", "Multinomial", NULL};
  static const char* const training[] = {"Adagrad", "Adam", "Momentum", "Gradient", NULL};
  static const char* const sequence[] = {"ConcatFromSequence", "SplitToSequence", "Optional", "OptionalHasElement",
                                         "OptionalGetElement", NULL};
  char path[4096];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  void* data;
  size_t len;
  hx_status_t st = hc_read_file(path, &data, &len);
  if (st != HX_OK) {
    hx_status_free(st);
    return CAT_FLOAT32;
  }
  Onnx__ModelProto* m = onnx__model_proto__unpack(NULL, len, data);
  free(data);
  if (!m || !m->graph) {
    if (m) onnx__model_proto__free_unpacked(m, NULL);
    return CAT_FLOAT32;
  }
  const Onnx__GraphProto* g = m->graph;
  bool q = false, cf = false, rnd = false, train = false, seq = false;
  for (size_t i = 0; i < g->n_node; ++i) {
    const char* op = g->node[i]->op_type ? g->node[i]->op_type : "";
    q |= op_in(op, quantized);
    cf |= op_in(op, control);
    rnd |= op_in(op, random);
    train |= op_in(op, training);
    seq |= op_in(op, sequence) || !strncmp(op, "Sequence", 8);
    /* Training-mode Dropout draws random masks. */
    if (!strcmp(op, "Dropout") && g->node[i]->n_input > 2) rnd = true;
  }
  bool tensors = true, has_f32 = false, other = false;
  for (size_t i = 0; i < g->n_input; ++i) tensors &= note_value(g->input[i], &has_f32, &other);
  for (size_t i = 0; i < g->n_output; ++i) tensors &= note_value(g->output[i], &has_f32, &other);
  onnx__model_proto__free_unpacked(m, NULL);
  if (!tensors || seq) return CAT_NON_TENSOR;
  if (train) return CAT_TRAINING;
  if (rnd) return CAT_RANDOM;
  if (q) return CAT_QUANTIZED;
  if (cf) return CAT_CONTROL_FLOW;
  return has_f32 && !other ? CAT_FLOAT32 : CAT_OTHER_TYPES;
}

/* Writes one JSON string literal (escaping quotes, backslashes, controls). */
static void json_string(FILE* f, const char* s) {
  fputc('"', f);
  for (; *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

typedef struct job {
  pid_t pid;
  int fd;
  int index;
  time_t started;
  char buf[4096];
  size_t len;
} job;

static void usage(FILE* out) {
  fprintf(out,
          "usage: harness-test [options] DIR...\n"
          "\n"
          "Runs ONNX backend test folders (model.onnx + test_data_set_*/): compile, run,\n"
          "compare with the expected outputs. DIR may be a test folder or a folder of them.\n"
          "Prints one line per test and a closing line 'N passed, N failed, N skipped'.\n"
          "\n"
          "  -j N          run N tests in parallel (default: number of CPUs)\n"
          "  -O N          optimisation level for the compiled tests (default 1)\n"
          "  --target T    target (default native)\n"
          "  --rtol X      relative tolerance (default 1e-3)\n"
          "  --atol X      absolute tolerance (default 1e-5)\n"
          "  --timeout S   seconds per test before it fails (default 300)\n"
          "  -q            print only failures and the summary\n"
          "  --json FILE   also write every result (test, category, status, reason) as JSON\n"
          "exit status: 0 if no test failed, 1 otherwise\n");
}

int main(int argc, char** argv) {
  test_options o = {.opt_level = 1, .rtol = 1e-3, .atol = 1e-5, .timeout_s = 300, .target = "native"};
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int jobs = ncpu > 0 ? (int)ncpu : 1;
  int quiet = 0;
  const char* json_path = NULL;
  enum { OPT_RTOL = 1000, OPT_ATOL, OPT_TIMEOUT, OPT_TARGET, OPT_JSON };
  static const struct option longopts[] = {
      {"rtol", required_argument, NULL, OPT_RTOL},       {"atol", required_argument, NULL, OPT_ATOL},
      {"timeout", required_argument, NULL, OPT_TIMEOUT}, {"target", required_argument, NULL, OPT_TARGET},
      {"json", required_argument, NULL, OPT_JSON},
      {"help", no_argument, NULL, 'h'},                  {NULL, 0, NULL, 0},
  };
  int c;
  while ((c = getopt_long(argc, argv, "j:O:qh", longopts, NULL)) != -1) {
    switch (c) {
      case 'j': jobs = atoi(optarg) > 0 ? atoi(optarg) : 1; break;
      case 'O': o.opt_level = atoi(optarg); break;
      case 'q': quiet = 1; break;
      case OPT_RTOL: o.rtol = atof(optarg); break;
      case OPT_ATOL: o.atol = atof(optarg); break;
      case OPT_TIMEOUT: o.timeout_s = atoi(optarg); break;
      case OPT_TARGET: o.target = optarg; break;
      case OPT_JSON: json_path = optarg; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (optind >= argc) {
    usage(stderr);
    return 2;
  }
  char** tests = NULL;
  int ntests = 0, cap = 0;
  for (int i = optind; i < argc; ++i) {
    if (!is_dir(argv[i])) {
      /* An unmatched shell glob arrives literally; say so and go on. */
      fprintf(stderr, "warning: '%s' is not a directory; ignored\n", argv[i]);
      continue;
    }
    collect(argv[i], &tests, &ntests, &cap);
  }
  int passed = 0, failed = 0, skipped = 0;
  int per_cat[CAT_COUNT][3] = {{0}};
  FILE* json = NULL;
  if (json_path) {
    json = fopen(json_path, "w");
    if (!json) {
      fprintf(stderr, "error: cannot create '%s': %s\n", json_path, strerror(errno));
      return 2;
    }
    fputs("[\n", json);
  }
  int json_count = 0;
  job* running = calloc((size_t)jobs, sizeof(job));
  int next = 0, active = 0;
  fflush(stdout);
  while (next < ntests || active > 0) {
    while (active < jobs && next < ntests) {
      int p[2];
      if (pipe(p) != 0) {
        perror("pipe");
        return 1;
      }
      pid_t pid = fork();
      if (pid == 0) {
        close(p[0]);
        char why[2048] = "";
        int r = run_test(tests[next], &o, why, sizeof why);
        dprintf(p[1], "%d %s", r, why);
        _exit(0);
      }
      close(p[1]);
      for (int k = 0; k < jobs; ++k) {
        if (running[k].pid) continue;
        running[k] = (job){.pid = pid, .fd = p[0], .index = next, .started = time(NULL)};
        break;
      }
      ++next;
      ++active;
    }
    struct pollfd pfds[256];
    int map[256], np = 0;
    for (int k = 0; k < jobs && np < 256; ++k) {
      if (!running[k].pid) continue;
      pfds[np] = (struct pollfd){.fd = running[k].fd, .events = POLLIN};
      map[np++] = k;
    }
    poll(pfds, (nfds_t)np, 1000);
    for (int q = 0; q < np; ++q) {
      job* jb = &running[map[q]];
      bool finished = false;
      if (pfds[q].revents & (POLLIN | POLLHUP)) {
        ssize_t got = read(jb->fd, jb->buf + jb->len, sizeof jb->buf - 1 - jb->len);
        if (got > 0) jb->len += (size_t)got;
        else finished = true;
      }
      bool timed_out = !finished && time(NULL) - jb->started > o.timeout_s;
      if (!finished && !timed_out) continue;
      if (timed_out) kill(jb->pid, SIGKILL);
      int status = 0;
      waitpid(jb->pid, &status, 0);
      close(jb->fd);
      jb->buf[jb->len] = '\0';
      const char* name = base_name(tests[jb->index]);
      int r = RESULT_FAIL;
      const char* why = "";
      char reason[256];
      if (timed_out) {
        snprintf(reason, sizeof reason, "timed out after %d s", o.timeout_s);
        why = reason;
      } else if (WIFSIGNALED(status)) {
        snprintf(reason, sizeof reason, "crashed (signal %d: %s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
        why = reason;
      } else if (jb->len > 0) {
        r = jb->buf[0] - '0';
        why = jb->len > 2 ? jb->buf + 2 : "";
      } else {
        why = "test process exited without a result";
      }
      if (r < RESULT_PASS || r > RESULT_SKIP) r = RESULT_FAIL;
      if (r == RESULT_PASS) {
        ++passed;
        if (!quiet) printf("PASS %s\n", name);
      } else if (r == RESULT_SKIP) {
        ++skipped;
        if (!quiet) printf("SKIP %s: %s\n", name, why);
      } else {
        ++failed;
        printf("FAIL %s: %s\n", name, why);
      }
      category cat = classify(tests[jb->index]);
      per_cat[cat][r]++;
      if (json) {
        static const char* const status[3] = {"pass", "fail", "skip"};
        fprintf(json, "%s {\"test\": ", json_count++ ? ",\n" : "");
        json_string(json, tests[jb->index]);
        fprintf(json, ", \"category\": \"%c\", \"status\": \"%s\", \"reason\": ", k_category_names[cat][0], status[r]);
        json_string(json, why);
        fputc('}', json);
      }
      fflush(stdout);
      jb->pid = 0;
      --active;
    }
  }
  for (int c = 0; c < CAT_COUNT; ++c) {
    int total = per_cat[c][0] + per_cat[c][1] + per_cat[c][2];
    if (total)
      printf("category %-16s %4d/%-4d passed (%.1f%%), %d failed, %d skipped\n", k_category_names[c], per_cat[c][0],
             total, 100.0 * per_cat[c][0] / total, per_cat[c][1], per_cat[c][2]);
  }
  if (json) {
    fputs("\n]\n", json);
    fclose(json);
  }
  printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  free(running);
  free_list(tests, ntests);
  return failed ? 1 : 0;
}
