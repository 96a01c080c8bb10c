/* The compiler <-> runtime contract: what a Harness artifact exports.
 *
 * An artifact is a shared object made by harnessc. It exports one function,
 * HX_ARTIFACT_QUERY_SYMBOL, returning a pointer to a constant hx_abi_header
 * that describes everything the runtime needs: input/output signature, the
 * size of the statically planned arena, the weights, and one or more code
 * variants (per CPU feature level), each a list of kernels in schedule order.
 *
 * Versioning works like a schema: the major version changes when a field
 * changes meaning or position (the loader refuses other majors); the minor
 * version grows when fields are appended at the end of a struct, which old
 * loaders ignore. Struct sizes are pinned by static_assert so that an
 * accidental layout change breaks the build instead of an artifact.
 *
 * History: 1.0 the original layout. 1.1 gives hx_abi_kernel's reserved word
 * a meaning (`lane`, 0 in 1.0 artifacts, which is exactly the sequential
 * schedule) and appends `programs` to the header: an artifact compiled with
 * `harnessc --batch 1,2,4,8` holds one program per batch size, all sharing
 * the one weights blob. The header's own signature, arena and variants are
 * those of programs[0], so a 1.0 loader still runs a 1.1 artifact at its
 * smallest batch size. 1.2 appends `dynamic_outputs` to the header: outputs
 * whose shape depends on values (NonZero, Unique, Compress,
 * NonMaxSuppression, TopK with a run-time k). Their hx_abi_tensor holds an
 * upper bound that the caller's buffer must have room for; after a run the
 * data is dense in the actual shape at the start of the buffer and the
 * actual dims are in the arena (see hx_abi_dynamic_output). A 1.1 loader
 * ignores the table and sees the upper bound. 1.3 appends the scheduling
 * manifest compressed with zlib (`manifest_z`, RFC 1950 zlib format: a
 * header, deflate data and an Adler-32 check) and its sizes; such a header
 * has `manifest_json` NULL, and the loader inflates the text once at load
 * (hx_model_manifest_json). A 1.2 loader runs a 1.3 artifact unchanged but
 * sees no manifest (NULL); the manifest is for tools and humans, never
 * needed to run.
 *
 * Kernel calling convention: every kernel is
 *     void kernel(void* const* bases, int64_t begin, int64_t end);
 * and computes tasks [begin, end) of its `tasks` independent pieces of work.
 * A tensor lives at bases[base_index] + a constant byte offset that the
 * compiler baked into the code. The bases table is laid out as:
 *     bases[HX_BASE_ARENA]            the planned arena (arena_bytes, 64-aligned)
 *     bases[HX_BASE_WEIGHTS]          the weights blob inside the artifact
 *     bases[HX_BASE_FIRST_IO + i]     input i, for i < num_inputs
 *     bases[HX_BASE_FIRST_IO + num_inputs + j]   output j
 * Kernels never allocate, never lock, and touch nothing else.
 *
 * This header is standalone (C11, stdint only) so that the compiler, the
 * runtime and third-party loaders can share it.
 */
#ifndef HARNESS_ARTIFACT_ABI_H
#define HARNESS_ARTIFACT_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HX_ABI_MAGIC 0x53534e48u /* "HNSS" little-endian */
#define HX_ABI_VERSION_MAJOR 1
#define HX_ABI_VERSION_MINOR 3
#define HX_ARTIFACT_QUERY_SYMBOL "harness_artifact_query"

/* Indices into the bases table (see above). */
enum {
  HX_BASE_ARENA = 0,
  HX_BASE_WEIGHTS = 1,
  HX_BASE_FIRST_IO = 2,
};

/* CPU features an artifact variant may require (bit mask). */
enum {
  HX_CPU_SSE42 = 1u << 0,
  HX_CPU_AVX = 1u << 1,
  HX_CPU_AVX2 = 1u << 2,
  HX_CPU_FMA = 1u << 3,
  HX_CPU_F16C = 1u << 4,
  HX_CPU_BMI2 = 1u << 5,
  HX_CPU_AVX512F = 1u << 6,
  HX_CPU_AVX512BW = 1u << 7,
  HX_CPU_AVX512DQ = 1u << 8,
  HX_CPU_AVX512VL = 1u << 9,
  HX_CPU_AVX512CD = 1u << 10,
  HX_CPU_AVX512VNNI = 1u << 11,
  HX_CPU_AVX512BF16 = 1u << 12,
  HX_CPU_AVX512FP16 = 1u << 13,
  HX_CPU_AVXVNNI = 1u << 14,
};

/* Pipeline stage of a kernel. */
enum { HX_STAGE_PRE = 0, HX_STAGE_INFER = 1, HX_STAGE_POST = 2 };

/* Device a kernel runs on. */
enum { HX_DEVICE_CPU = 0, HX_DEVICE_CUDA = 1 };

typedef void (*hx_abi_kernel_fn)(void* const* bases, int64_t begin, int64_t end);

/* One graph input or output. dtype uses ONNX TensorProto.DataType numbering. */
typedef struct hx_abi_tensor {
  const char* name;
  const int64_t* dims; /* rank entries */
  uint64_t bytes;      /* dense, row-major size */
  int32_t dtype;
  int32_t rank;
} hx_abi_tensor;

/* One kernel of the schedule. Kernels run in array order, except that
 * consecutive kernels with the same `group` form a parallel group: inside a
 * group, kernels with the same `lane` depend on each other and run in array
 * order, while different lanes are independent (separate branches of the
 * graph) and may run concurrently. A group whose kernels all share one lane
 * is plain sequential code. Group ids never decrease along the table. */
typedef struct hx_abi_kernel {
  const char* name;   /* fused node name, for profiles and errors */
  hx_abi_kernel_fn fn;
  int64_t tasks;      /* independent tasks; the runtime may split [0,tasks) across threads */
  double flops;       /* estimated arithmetic work of the whole kernel */
  double bytes;       /* estimated memory traffic of the whole kernel */
  int32_t stage;      /* HX_STAGE_* */
  int32_t device;     /* HX_DEVICE_* */
  int32_t group;      /* parallel group (schedule step) */
  int32_t lane;       /* branch within the group (ABI 1.1; reserved and 0 in 1.0) */
} hx_abi_kernel;

/* The same schedule compiled for one CPU feature level. */
typedef struct hx_abi_variant {
  const char* target;          /* e.g. "x86-64-v3" */
  uint64_t required_features;  /* HX_CPU_* bits the code uses */
  const hx_abi_kernel* kernels;
  uint32_t num_kernels;
  uint32_t reserved;
} hx_abi_variant;

/* One compiled batch size (ABI 1.1). Every input and output has the batch as
 * its leading dimension; tensor descriptors and kernels are this program's
 * own, the weights blob is the header's and shared by all programs. The
 * variants list has the same targets in the same order as the header's. */
typedef struct hx_abi_program {
  int64_t batch;
  uint64_t arena_bytes;
  const hx_abi_tensor* inputs;  /* header.num_inputs entries */
  const hx_abi_tensor* outputs; /* header.num_outputs entries */
  const hx_abi_variant* variants;
  uint32_t num_variants;
  uint32_t reserved;
} hx_abi_program;

/* One output with a value-dependent shape (ABI 1.2). After every run the
 * arena holds its actual dims, int64[rank] (the rank of its hx_abi_tensor),
 * at byte offset dims_offset; each dim is at most the tensor's upper-bound
 * dim, and the output's data is dense (row-major) in those dims at the start
 * of its buffer. The slot is written by the kernels only: a loader that
 * reads it before the first run must have initialised it (libharness writes
 * the upper bound at session creation). */
typedef struct hx_abi_dynamic_output {
  uint32_t program;     /* index in hx_abi_header.programs (0 without --batch) */
  uint32_t output;      /* output index */
  uint64_t dims_offset; /* arena byte offset of the int64[rank] actual dims */
} hx_abi_dynamic_output;

typedef struct hx_abi_header {
  uint32_t magic;       /* HX_ABI_MAGIC */
  uint16_t abi_major;   /* HX_ABI_VERSION_MAJOR of the producer */
  uint16_t abi_minor;
  uint32_t header_bytes;/* sizeof(hx_abi_header) of the producer */
  uint32_t num_bases;   /* HX_BASE_FIRST_IO + num_inputs + num_outputs */
  const char* producer; /* e.g. "harnessc 0.1.0" */
  const char* model_name;
  const char* manifest_json; /* the scheduling manifest, for tools and humans;
                              * NULL from 1.3 on when manifest_z holds it */
  uint64_t arena_bytes;
  uint64_t arena_alignment;
  const void* weights;
  uint64_t weights_bytes;
  const hx_abi_tensor* inputs;
  const hx_abi_tensor* outputs;
  uint32_t num_inputs;
  uint32_t num_outputs;
  const hx_abi_variant* variants; /* best first */
  uint32_t num_variants;
  uint32_t reserved;
  /* ABI 1.1: batch programs, smallest batch first, programs[0] describing the
   * same code as the fields above. NULL/0 in artifacts compiled without
   * --batch (and absent in 1.0 artifacts: check header_bytes). */
  const hx_abi_program* programs;
  uint32_t num_programs;
  uint32_t reserved2;
  /* ABI 1.2: the outputs with value-dependent shapes, in (program, output)
   * order; NULL/0 when every output is static (and absent before 1.2: check
   * abi_minor and header_bytes). */
  const hx_abi_dynamic_output* dynamic_outputs;
  uint32_t num_dynamic_outputs;
  uint32_t reserved3;
  /* ABI 1.3: the manifest as one zlib stream (compress2 format) of
   * manifest_z_bytes bytes that inflates to exactly manifest_bytes bytes of
   * JSON text (no terminating NUL inside the stream). When manifest_z is
   * non-NULL, manifest_json is NULL; when it is NULL, manifest_json holds
   * the text as before (and before 1.3: check abi_minor and header_bytes). */
  const void* manifest_z;
  uint64_t manifest_z_bytes;
  uint64_t manifest_bytes;
} hx_abi_header;

/* sizeof(hx_abi_header) in ABI 1.0, the smallest header a loader accepts. */
#define HX_ABI_HEADER_BYTES_1_0 112u
/* sizeof(hx_abi_header) in ABI 1.1 (up to programs). */
#define HX_ABI_HEADER_BYTES_1_1 128u
/* sizeof(hx_abi_header) in ABI 1.2 (up to dynamic_outputs). */
#define HX_ABI_HEADER_BYTES_1_2 144u

typedef const hx_abi_header* (*hx_abi_query_fn)(void);

#if defined(__x86_64__) || defined(_M_X64)
_Static_assert(sizeof(hx_abi_tensor) == 32, "hx_abi_tensor layout is ABI");
_Static_assert(sizeof(hx_abi_kernel) == 56, "hx_abi_kernel layout is ABI");
_Static_assert(sizeof(hx_abi_variant) == 32, "hx_abi_variant layout is ABI");
_Static_assert(sizeof(hx_abi_program) == 48, "hx_abi_program layout is ABI");
_Static_assert(sizeof(hx_abi_dynamic_output) == 16, "hx_abi_dynamic_output layout is ABI");
_Static_assert(sizeof(hx_abi_header) == 168, "hx_abi_header layout is ABI");
#endif

#ifdef __cplusplus
}
#endif
#endif /* HARNESS_ARTIFACT_ABI_H */
