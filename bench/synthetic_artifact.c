/* A hand-written Harness artifact with a tunable cost, for the serving tests
 * and benchmarks that must not depend on the compiler's operators.
 *
 * It implements artifact_abi.h directly: one input x[B][16] and one output
 * y[B][16] = 2 * x + 1, compiled "for" batch sizes 1, 2, 4 and 8 (ABI 1.1
 * programs sharing an empty weights blob). Every run also costs
 *     base_us + per_sample_us * B
 * of simulated time, spent spinning on the CPU (a CPU-bound model) or
 * sleeping (an accelerator the CPU waits for), set through
 * harness_synthetic_configure() — tests dlopen the artifact themselves to
 * call it, which shares the runtime's handle. Each run counts itself in
 * harness_synthetic_runs() so tests can see how many batches ran.
 *
 * Per-sample cost below per-batch cost is what makes batching pay, as larger
 * GEMMs do for real models. */
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "harness/artifact_abi.h"

#define FEATURES 16

enum { COST_NONE = 0, COST_SPIN = 1, COST_SLEEP = 2 };

static atomic_long g_base_us, g_per_sample_us, g_mode, g_runs;

void harness_synthetic_configure(long base_us, long per_sample_us, int mode) {
  atomic_store(&g_base_us, base_us);
  atomic_store(&g_per_sample_us, per_sample_us);
  atomic_store(&g_mode, mode);
}

long harness_synthetic_runs(void) { return atomic_load(&g_runs); }

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spends the configured cost of a batch of b samples. */
static void spend(int64_t b) {
  long mode = atomic_load(&g_mode);
  int64_t ns = (atomic_load(&g_base_us) + atomic_load(&g_per_sample_us) * b) * 1000;
  if (mode == COST_NONE || ns <= 0) return;
  int64_t until = now_ns() + ns;
  if (mode == COST_SLEEP) {
    struct timespec ts = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
    }
    return;
  }
  while (now_ns() < until) {
  }
}

/* y = 2x + 1 over rows [begin, end) of a batch of B rows, then the cost. One
 * task per batch: the cost models one indivisible device call. */
#define KERNEL(B)                                                             \
  static void run_b##B(void* const* bases, int64_t begin, int64_t end) {      \
    const float* x = bases[HX_BASE_FIRST_IO];                                 \
    float* y = bases[HX_BASE_FIRST_IO + 1];                                   \
    for (int64_t i = 0; i < (int64_t)(B) * FEATURES; ++i) y[i] = 2 * x[i] + 1; \
    spend(B);                                                                 \
    atomic_fetch_add(&g_runs, 1);                                             \
    (void)begin;                                                              \
    (void)end;                                                                \
  }
KERNEL(1)
KERNEL(2)
KERNEL(4)
KERNEL(8)

#define PROGRAM_TABLES(B)                                                                                   \
  static const int64_t dims_b##B[2] = {B, FEATURES};                                                       \
  static const hx_abi_tensor in_b##B[1] = {{"x", dims_b##B, (B) * FEATURES * 4, 1, 2}};                     \
  static const hx_abi_tensor out_b##B[1] = {{"y", dims_b##B, (B) * FEATURES * 4, 1, 2}};                    \
  static const hx_abi_kernel kernels_b##B[1] = {{"affine", run_b##B, 1, 2.0 * (B) * FEATURES,               \
                                                 8.0 * (B) * FEATURES, HX_STAGE_INFER, HX_DEVICE_CPU, 0, 0}}; \
  static const hx_abi_variant variant_b##B[1] = {{"x86-64", 0, kernels_b##B, 1, 0}};
PROGRAM_TABLES(1)
PROGRAM_TABLES(2)
PROGRAM_TABLES(4)
PROGRAM_TABLES(8)

static const hx_abi_program programs[4] = {
    {1, 0, in_b1, out_b1, variant_b1, 1, 0},
    {2, 0, in_b2, out_b2, variant_b2, 1, 0},
    {4, 0, in_b4, out_b4, variant_b4, 1, 0},
    {8, 0, in_b8, out_b8, variant_b8, 1, 0},
};

static const unsigned char weights[64];

static const hx_abi_header header = {
    .magic = HX_ABI_MAGIC,
    .abi_major = HX_ABI_VERSION_MAJOR,
    .abi_minor = HX_ABI_VERSION_MINOR,
    .header_bytes = sizeof(hx_abi_header),
    .num_bases = HX_BASE_FIRST_IO + 2,
    .producer = "synthetic_artifact.c",
    .model_name = "synthetic",
    .manifest_json = "{\"format\":\"harness-manifest\",\"model\":\"synthetic\",\"batch_sizes\":[1,2,4,8]}",
    .arena_bytes = 0,
    .arena_alignment = 64,
    .weights = weights,
    .weights_bytes = 0,
    .inputs = in_b1,
    .outputs = out_b1,
    .num_inputs = 1,
    .num_outputs = 1,
    .variants = variant_b1,
    .num_variants = 1,
    .programs = programs,
    .num_programs = 4,
};

const hx_abi_header* harness_artifact_query(void) { return &header; }
