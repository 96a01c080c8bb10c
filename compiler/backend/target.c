/* Target resolution and LLVM target machines. */
#include "compiler/backend/target.h"

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness/artifact_abi.h"

#define V2 (HX_CPU_SSE42)
#define V3 (V2 | HX_CPU_AVX | HX_CPU_AVX2 | HX_CPU_FMA | HX_CPU_F16C | HX_CPU_BMI2)
#define V4 (V3 | HX_CPU_AVX512F | HX_CPU_AVX512BW | HX_CPU_AVX512DQ | HX_CPU_AVX512VL | HX_CPU_AVX512CD)

/* CPUs --mcpu accepts, with the HX_CPU_* features their ISA includes and
 * their L1 data cache per core in KiB (the ISA levels: 32, the smallest of
 * the CPUs that implement them; hybrid parts: their 32 KiB efficiency
 * cores). */
typedef struct cpu_entry {
  const char* name;
  uint64_t features;
  int l1d_kib;
  int l2_kib; /* per core (the ISA levels: a typical part of their era) */
} cpu_entry;

static const cpu_entry k_cpus[] = {
    {"x86-64-v2", V2, 32, 256},
    {"x86-64-v3", V3, 32, 512},
    {"x86-64-v4", V4, 32, 1024},
    {"haswell", V3, 32, 256},
    {"broadwell", V3, 32, 256},
    {"skylake", V3, 32, 256},
    {"alderlake", V3 | HX_CPU_AVXVNNI, 32, 1280},
    {"raptorlake", V3 | HX_CPU_AVXVNNI, 32, 2048},
    {"znver1", V3, 32, 512},
    {"znver2", V3, 32, 512},
    {"znver3", V3, 32, 512},
    {"skylake-avx512", V4, 32, 1024},
    {"cascadelake", V4 | HX_CPU_AVX512VNNI, 32, 1024},
    {"cooperlake", V4 | HX_CPU_AVX512VNNI | HX_CPU_AVX512BF16, 32, 1024},
    {"icelake-client", V4 | HX_CPU_AVX512VNNI, 48, 512},
    {"icelake-server", V4 | HX_CPU_AVX512VNNI, 48, 1280},
    {"tigerlake", V4 | HX_CPU_AVX512VNNI, 48, 1280},
    {"sapphirerapids", V4 | HX_CPU_AVX512VNNI | HX_CPU_AVX512BF16 | HX_CPU_AVX512FP16 | HX_CPU_AVXVNNI, 48, 2048},
    {"znver4", V4 | HX_CPU_AVX512VNNI | HX_CPU_AVX512BF16, 32, 1024},
    {"znver5", V4 | HX_CPU_AVX512VNNI | HX_CPU_AVX512BF16 | HX_CPU_AVXVNNI, 48, 1024},
};

const char* hc_target_known_cpus(void) {
  return "x86-64-v2, x86-64-v3, x86-64-v4, haswell, broadwell, skylake, alderlake, raptorlake, znver1, znver2, "
         "znver3, skylake-avx512, cascadelake, cooperlake, icelake-client, icelake-server, tigerlake, "
         "sapphirerapids, znver4, znver5";
}

static pthread_once_t g_llvm_once = PTHREAD_ONCE_INIT;

static void llvm_init_once(void) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  LLVMInitializeX86AsmParser();
}

void hc_llvm_init(void) { pthread_once(&g_llvm_once, llvm_init_once); }

static int vector_bits_for(uint64_t f) { return (f & HX_CPU_AVX512F) ? 512 : (f & HX_CPU_AVX) ? 256 : 128; }

/* Maps LLVM host feature names ("+avx2") to HX_CPU_* bits. */
static uint64_t features_from_llvm(const char* fs) {
  static const struct {
    const char* name;
    uint64_t bit;
  } map[] = {
      {"+sse4.2", HX_CPU_SSE42},       {"+avx", HX_CPU_AVX},           {"+avx2", HX_CPU_AVX2},
      {"+fma", HX_CPU_FMA},            {"+f16c", HX_CPU_F16C},         {"+bmi2", HX_CPU_BMI2},
      {"+avx512f", HX_CPU_AVX512F},    {"+avx512bw", HX_CPU_AVX512BW}, {"+avx512dq", HX_CPU_AVX512DQ},
      {"+avx512vl", HX_CPU_AVX512VL},  {"+avx512cd", HX_CPU_AVX512CD}, {"+avx512vnni", HX_CPU_AVX512VNNI},
      {"+avx512bf16", HX_CPU_AVX512BF16}, {"+avx512fp16", HX_CPU_AVX512FP16}, {"+avxvnni", HX_CPU_AVXVNNI},
  };
  uint64_t bits = 0;
  for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); ++i) {
    size_t len = strlen(map[i].name);
    for (const char* p = fs; (p = strstr(p, map[i].name)) != NULL; p += len) {
      if ((p[len] == ',' || p[len] == '\0') && (p == fs || p[-1] == ',')) {
        bits |= map[i].bit;
        break;
      }
    }
  }
  return bits;
}

hx_status_t hc_target_host(hc_target* t) {
  hc_llvm_init();
  memset(t, 0, sizeof(*t));
  char* cpu = LLVMGetHostCPUName();
  char* fs = LLVMGetHostCPUFeatures();
  char* triple = LLVMGetDefaultTargetTriple();
  snprintf(t->cpu, sizeof t->cpu, "%s", cpu);
  snprintf(t->features, sizeof t->features, "%s", fs);
  snprintf(t->triple, sizeof t->triple, "%s", triple);
  snprintf(t->name, sizeof t->name, "native (%s)", cpu);
  t->required_features = features_from_llvm(fs);
  t->vector_bits = vector_bits_for(t->required_features);
  /* The L1 data cache of the machine itself (glibc reads CPUID). */
  long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  t->l1d_bytes = l1 >= 16384 && l1 <= (1L << 20) ? (int)l1 : 32768;
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  t->l2_bytes = l2 >= (64L << 10) && l2 <= (64L << 20) ? (int)l2 : 512 << 10;
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(fs);
  LLVMDisposeMessage(triple);
  return HX_OK;
}

hx_status_t hc_target_init(hc_target* t, const char* target, const char* mcpu) {
  hc_llvm_init();
  if (!target || !strcmp(target, "native")) {
    if (!mcpu) return hc_target_host(t);
    target = NULL;
  }
  memset(t, 0, sizeof(*t));
  snprintf(t->triple, sizeof t->triple, "x86_64-pc-linux-gnu");
  const char* cpu_name = mcpu ? mcpu : target;
  const cpu_entry* e = NULL;
  for (size_t i = 0; i < sizeof(k_cpus) / sizeof(k_cpus[0]); ++i)
    if (!strcmp(k_cpus[i].name, cpu_name)) e = &k_cpus[i];
  if (!e) {
    if (!mcpu)
      return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "unknown --target '%s' (expected x86-64-v3, x86-64-v4 or native)", target);
    return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "unknown --mcpu '%s' (known: %s)", mcpu, hc_target_known_cpus());
  }
  if (target && mcpu) {
    /* Both given: the CPU must implement the requested level. */
    const cpu_entry* level = NULL;
    for (size_t i = 0; i < sizeof(k_cpus) / sizeof(k_cpus[0]); ++i)
      if (!strcmp(k_cpus[i].name, target)) level = &k_cpus[i];
    if (!level || strncmp(target, "x86-64", 6) != 0)
      return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "unknown --target '%s' (expected x86-64-v3, x86-64-v4 or native)", target);
    if ((level->features & ~e->features) != 0)
      return hx_status_make(HX_STATUS_INVALID_ARGUMENT, "--mcpu %s does not implement --target %s", mcpu, target);
  }
  snprintf(t->cpu, sizeof t->cpu, "%s", e->name);
  snprintf(t->name, sizeof t->name, "%s", e->name);
  t->required_features = e->features;
  t->vector_bits = vector_bits_for(e->features);
  t->l1d_bytes = e->l1d_kib * 1024;
  t->l2_bytes = e->l2_kib * 1024;
  return HX_OK;
}

hx_status_t hc_target_machine(const hc_target* t, int opt_level, LLVMTargetMachineRef* out_tm) {
  hc_llvm_init();
  LLVMTargetRef target;
  char* err = NULL;
  if (LLVMGetTargetFromTriple(t->triple, &target, &err)) {
    hx_status_t st = hx_status_make(HX_STATUS_INTERNAL, "LLVM has no target for '%s': %s", t->triple, err ? err : "");
    LLVMDisposeMessage(err);
    return st;
  }
  LLVMCodeGenOptLevel level = opt_level <= 0 ? LLVMCodeGenLevelNone
                            : opt_level == 1 ? LLVMCodeGenLevelLess
                            : opt_level == 2 ? LLVMCodeGenLevelDefault
                                             : LLVMCodeGenLevelAggressive;
  *out_tm = LLVMCreateTargetMachine(target, t->triple, t->cpu, t->features, level, LLVMRelocPIC, LLVMCodeModelDefault);
  if (!*out_tm) return hx_status_make(HX_STATUS_INTERNAL, "LLVM cannot create a target machine for %s", t->name);
  return HX_OK;
}
