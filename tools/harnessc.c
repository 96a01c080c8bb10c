/* harnessc: the Harness compiler command line. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/backend/target.h"
#include "harness/compiler.h"
#include "compiler/ops/op.h"
#include "passes/pass.h"

static void usage(FILE* out) {
  fprintf(out,
          "usage: harnessc [options] MODEL.onnx -o OUTPUT\n"
          "       harnessc check [options] MODEL.onnx\n"
          "\n"
          "Compiles an ONNX model ahead of time into a self-contained shared object\n"
          "(native code for every kernel, the weights and the scheduling manifest)\n"
          "that libharness loads and runs. `check` reports every problem that would\n"
          "stop a compile, all at once.\n"
          "\n"
          "options:\n"
          "  -o FILE               output path ('-' = stdout for llvm-ir, asm, manifest)\n"
          "  --target T[,T...]     x86-64-v3 (AVX2+FMA), x86-64-v4 (AVX-512) or native\n"
          "                        (this machine; default). A comma list builds a fat\n"
          "                        artifact: the model compiled per target, all in one\n"
          "                        file, weights shared where their bytes agree; the\n"
          "                        runtime picks the most capable variant the CPU runs\n"
          "                        (e.g. --target x86-64-v3,x86-64-v4; docs/runtime.md)\n"
          "  --mcpu NAME           CPU model; its ISA defines the code (e.g. skylake-avx512);\n"
          "                        one target only\n"
          "  -O0 .. -O3            optimisation level (default -O3)\n"
          "  --shape NAME=DIMS     fix input NAME's shape (e.g. x=1x3x224x224), or a symbolic\n"
          "                        dimension everywhere it appears (e.g. batch=1)\n"
          "  --constant NAME=FILE  freeze input NAME to the tensor in FILE (TensorProto .pb)\n"
          "  --batch LIST          compile one program per batch size (e.g. 1,2,4,8) into one\n"
          "                        artifact sharing the weights; the leading dimension of\n"
          "                        every input is the batch (the runtime batches requests)\n"
          "  --precision P         element type of the Conv/Gemm/MatMul weights in the\n"
          "                        artifact: fp32 (default), fp16, bf16, mixed (fp16 where\n"
          "                        it represents the tensor well) or int8-weights (int8,\n"
          "                        per output channel); activations and sums stay fp32\n"
          "                        (docs/precision.md)\n"
          "  --keep-fp32 LIST      op types or node names (comma-separated) whose weights\n"
          "                        stay fp32 under --precision\n"
          "  --parallel-groups M   which independent branches run as concurrent lanes:\n"
          "                        auto (default: where the estimated latency saved is\n"
          "                        worth the memory added), all, or none (docs/memory.md)\n"
          "  --no-parallel-groups  the same as --parallel-groups none\n"
          "  --threads-hint N      run-time thread count that auto chooses groups for\n"
          "                        (default 4)\n"
          "  --emit KIND           lib (default), obj, llvm-ir, asm, manifest (JSON),\n"
          "                        memplan (the memory plan as JSON, plus FILE.svg next to\n"
          "                        it: tensors over time and arena offset) or memplan-svg\n"
          "  --print-after PASS    print the IR after PASS ('all' = after every pass)\n"
          "  --time-passes         print the time spent in each pass\n"
          "  -v, --verbose         print what the passes did\n"
          "  --version             print the version\n"
          "  --list-ops            list the supported operators (name, domain, opsets) and exit\n"
          "  -h, --help            this help\n"
          "\n"
          "passes: shape-inference canonicalize fold-batchnorm constant-folding dce\n"
          "        precision qdq fusion pack-weights finalize-outputs schedule memory-plan\n"
          "--mcpu names: %s\n"
          "\n"
          "environment: HARNESS_CC   C compiler driver used to link (default cc)\n"
          "exit status: 0 on success, 1 on a compile error, 2 on a usage error\n",
          hc_target_known_cpus());
}

int main(int argc, char** argv) {
  hc_compile_options o;
  hc_compile_options_init(&o);
  bool check = false;
  int argi0 = 1;
  if (argc > 1 && !strcmp(argv[1], "check")) {
    check = true;
    argi0 = 2;
  }
  enum { OPT_TARGET = 1000, OPT_MCPU, OPT_SHAPE, OPT_CONSTANT, OPT_EMIT, OPT_PRINT_AFTER, OPT_TIME_PASSES, OPT_VERSION, OPT_LIST_OPS,
         OPT_BATCH, OPT_PRECISION, OPT_KEEP_FP32, OPT_PARALLEL_GROUPS, OPT_NO_PARALLEL_GROUPS, OPT_THREADS_HINT };
  static const struct option longopts[] = {
      {"target", required_argument, NULL, OPT_TARGET},
      {"mcpu", required_argument, NULL, OPT_MCPU},
      {"shape", required_argument, NULL, OPT_SHAPE},
      {"constant", required_argument, NULL, OPT_CONSTANT},
      {"batch", required_argument, NULL, OPT_BATCH},
      {"precision", required_argument, NULL, OPT_PRECISION},
      {"keep-fp32", required_argument, NULL, OPT_KEEP_FP32},
      {"parallel-groups", required_argument, NULL, OPT_PARALLEL_GROUPS},
      {"no-parallel-groups", no_argument, NULL, OPT_NO_PARALLEL_GROUPS},
      {"threads-hint", required_argument, NULL, OPT_THREADS_HINT},
      {"emit", required_argument, NULL, OPT_EMIT},
      {"print-after", required_argument, NULL, OPT_PRINT_AFTER},
      {"time-passes", no_argument, NULL, OPT_TIME_PASSES},
      {"verbose", no_argument, NULL, 'v'},
      {"version", no_argument, NULL, OPT_VERSION},
      {"list-ops", no_argument, NULL, OPT_LIST_OPS},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  optind = argi0;
  int c;
  while ((c = getopt_long(argc, argv, "o:O:vh", longopts, NULL)) != -1) {
    switch (c) {
      case 'o': o.output_path = optarg; break;
      case 'O':
        if (strlen(optarg) != 1 || optarg[0] < '0' || optarg[0] > '3') {
          fprintf(stderr, "error: -O expects 0, 1, 2 or 3, got '%s'\n", optarg);
          return 2;
        }
        o.opt_level = optarg[0] - '0';
        break;
      case 'v': o.verbose = 1; break;
      case 'h': usage(stdout); return 0;
      case OPT_TARGET: o.target = optarg; break;
      case OPT_MCPU: o.mcpu = optarg; break;
      case OPT_EMIT: o.emit = optarg; break;
      case OPT_PARALLEL_GROUPS:
        if (!strcmp(optarg, "auto")) {
          o.parallel_groups = HC_PARALLEL_GROUPS_AUTO;
        } else if (!strcmp(optarg, "all")) {
          o.parallel_groups = HC_PARALLEL_GROUPS_ALL;
        } else if (!strcmp(optarg, "none")) {
          o.parallel_groups = HC_PARALLEL_GROUPS_NONE;
        } else {
          fprintf(stderr, "error: --parallel-groups expects auto, all or none, got '%s'\n", optarg);
          return 2;
        }
        break;
      case OPT_NO_PARALLEL_GROUPS: o.parallel_groups = HC_PARALLEL_GROUPS_NONE; break;
      case OPT_THREADS_HINT: {
        char* end;
        long t = strtol(optarg, &end, 10);
        if (*optarg == 0 || *end != 0 || t < 1 || t > 4096) {
          fprintf(stderr, "error: --threads-hint expects a thread count 1..4096, got '%s'\n", optarg);
          return 2;
        }
        o.threads_hint = (int)t;
        break;
      }
      case OPT_PRINT_AFTER: o.print_after = optarg; break;
      case OPT_PRECISION: {
        int prec;
        hx_status_t pst = hc_precision_parse(optarg, &prec);
        if (pst != HX_OK) {
          fprintf(stderr, "error: %s\n", hx_status_message(pst));
          hx_status_free(pst);
          return 2;
        }
        o.precision = optarg;
        break;
      }
      case OPT_KEEP_FP32: o.keep_fp32 = optarg; break;
      case OPT_TIME_PASSES: o.time_passes = 1; break;
      case OPT_VERSION: printf("%s\n", hc_version_string()); return 0;
      case OPT_LIST_OPS:
        /* Tab-separated, for scripts (scripts/gen_operators_doc.py). */
        printf("# op\tdomain\tsince_opset\tmax_opset\n");
        for (int i = 0; i < hc_op_count(); ++i) {
          const hc_op_desc* d = hc_op_at(i);
          printf("%s\t%s\t%d\t%d\n", d->name, d->domain, d->since_opset, d->max_opset);
        }
        return 0;
      case OPT_BATCH: {
        hx_status_t bst = hc_parse_batch_list(optarg, &o);
        if (bst != HX_OK) {
          fprintf(stderr, "error: %s\n", hx_status_message(bst));
          hx_status_free(bst);
          return 2;
        }
        break;
      }
      case OPT_SHAPE:
      case OPT_CONSTANT: {
        int* count = c == OPT_SHAPE ? &o.num_shapes : &o.num_constants;
        const char** list = c == OPT_SHAPE ? o.shapes : o.constants;
        if (*count >= HC_MAX_OVERRIDES) {
          fprintf(stderr, "error: at most %d --shape/--constant flags each\n", HC_MAX_OVERRIDES);
          return 2;
        }
        list[(*count)++] = optarg;
        break;
      }
      default: usage(stderr); return 2;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "error: expected exactly one model file (see harnessc --help)\n");
    return 2;
  }
  o.input_path = argv[optind];
  hx_status_t st;
  if (check) {
    st = hc_check(&o, stdout);
  } else {
    if (!o.output_path) {
      fprintf(stderr, "error: no output file; use -o FILE\n");
      return 2;
    }
    st = hc_compile(&o);
  }
  if (st != HX_OK) {
    /* Multi-problem reports (check) put one problem per line. */
    const char* msg = hx_status_message(st);
    while (*msg) {
      const char* nl = strchr(msg, '\n');
      int len = nl ? (int)(nl - msg) : (int)strlen(msg);
      fprintf(stderr, "error: %.*s\n", len, msg);
      msg += len + (nl ? 1 : 0);
    }
    hx_status_free(st);
    return 1;
  }
  return 0;
}
