/* Compilation targets: which CPU the generated code is for.
 *
 * --target picks an x86-64 feature level (x86-64-v3 = AVX2+FMA,
 * x86-64-v4 = AVX-512) or `native` (this machine); --mcpu picks a specific
 * CPU model, whose ISA then defines the code (like clang's -march). The
 * target also records the HX_CPU_* features the code may use, which the
 * artifact declares and the runtime checks at load time. */
#ifndef HARNESS_BACKEND_TARGET_H
#define HARNESS_BACKEND_TARGET_H

#include <llvm-c/TargetMachine.h>
#include <stdint.h>

#include "harness/status.h"

typedef struct hc_target {
  char name[64];       /* "x86-64-v3", "x86-64-v4", "native (znver3)", cpu name... */
  char triple[64];
  char cpu[64];
  char features[2048]; /* LLVM feature string ("" when the cpu implies them) */
  uint64_t required_features; /* HX_CPU_* */
  int vector_bits;     /* widest native vector: 128, 256 or 512 */
  int l1d_bytes;       /* L1 data cache per core: the host's for native, else the CPU's (32 KiB for
                          the ISA levels), for the products' cache blocking */
  int l2_bytes;        /* L2 per core, the same way (512 KiB for x86-64-v3, 1 MiB for v4): what
                          stays in L2 from one run to the next */
} hc_target;

/* Resolves --target / --mcpu (either may be NULL; default native). */
hx_status_t hc_target_init(hc_target* t, const char* target, const char* mcpu);
/* The machine the compiler runs on (used for compile-time evaluation). */
hx_status_t hc_target_host(hc_target* t);
/* Creates an LLVM target machine (PIC, for shared objects). */
hx_status_t hc_target_machine(const hc_target* t, int opt_level, LLVMTargetMachineRef* out_tm);
/* Initialises LLVM's x86 back end once per process. */
void hc_llvm_init(void);
/* Names the known --target values and --mcpu CPUs, for --help and errors. */
const char* hc_target_known_cpus(void);

#endif /* HARNESS_BACKEND_TARGET_H */
