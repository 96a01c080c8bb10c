/* The graph IR: values (tensors) and nodes (operations) of one model.
 *
 * A graph owns everything reachable from it through one arena (names,
 * attributes, shape lists) plus separately owned constant data buffers.
 * Values are SSA: each has at most one producer node. Shapes are static:
 * after import every dimension is a known non-negative integer (symbolic
 * dimensions must be fixed with --shape before lowering; import records their
 * names so errors can say which flag fixes them).
 *
 * Node order in graph->nodes is always a topological order; passes that
 * create or rewire nodes keep it so (hc_graph_sort restores it).
 */
#ifndef HARNESS_IR_GRAPH_H
#define HARNESS_IR_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/harness.h"
#include "ir/arena.h"

#define HC_MAX_RANK 8

struct hc_op_desc;
struct hc_graph;

typedef enum hc_value_kind {
  HC_VALUE_INTERMEDIATE = 0, /* produced by a node */
  HC_VALUE_INPUT = 1,        /* graph input, bound by the caller at run time */
  HC_VALUE_CONST = 2,        /* initializer or folded constant; data is known */
} hc_value_kind;

/* Where a value lives at run time: bases[base] + offset (see artifact_abi.h). */
typedef struct hc_storage {
  int32_t base;   /* HX_BASE_* index, -1 = not assigned */
  uint64_t offset;
} hc_storage;

typedef struct hc_value {
  int id;
  const char* name;
  hx_dtype_t dtype;
  int rank;            /* -1 = unknown (before shape inference) */
  int64_t dims[HC_MAX_RANK];
  const char* dim_params[HC_MAX_RANK]; /* symbolic names from the model, NULL if none */
  hc_value_kind kind;
  bool is_output;      /* listed in the graph outputs */
  struct hc_node* producer; /* NULL for inputs and constants */
  /* Constant data (kind == HC_VALUE_CONST): dense row-major, nbytes long. */
  const void* data;
  /* Aliasing: a view value shares the storage of `alias_of` (Reshape etc.).
   * A Concat input that memory planning assembled in place
   * (passes/memory_plan.c, concat_in_place) is a part: its bytes are
   * `alias_offset` bytes into those of `alias_of`, the Concat's output. */
  struct hc_value* alias_of;
  uint64_t alias_offset;
  bool alias_part;
  hc_storage storage;
  /* Liveness over the schedule (node indices), set by memory planning for
   * arena tensors: the value occupies its bytes from step live_first to
   * live_last inclusive. */
  int live_first, live_last;
  /* Value-dependent shape (NonZero, Unique, Compress, NonMaxSuppression,
   * TopK with a run-time k; see compiler/ops/dynamic.h). `dims` is then an
   * upper bound that memory planning reserves, the data is dense in the
   * actual shape at the start of the buffer, and a kernel writes the actual
   * dims (int64[rank]) into a "dims slot" in the arena at dyn_dims_offset.
   * dyn_source is the value owning the slot: NULL for the producer's own
   * output, the dynamic input for an element-wise consumer (same shape). */
  bool dynamic;
  struct hc_value* dyn_source;
  uint64_t dyn_dims_offset; /* set by memory planning for slot owners */
  /* The static shape the model declares for this value (graph outputs and
   * value_info), when it has one: shape inference of an op whose output
   * shape depends on a run-time input (Resize's scales...) uses it. */
  bool has_declared_shape;
  int declared_rank;
  int64_t declared_dims[HC_MAX_RANK];
} hc_value;

typedef enum hc_attr_type {
  HC_ATTR_UNDEFINED = 0,
  HC_ATTR_FLOAT,
  HC_ATTR_INT,
  HC_ATTR_STRING,
  HC_ATTR_TENSOR,
  HC_ATTR_GRAPH,
  HC_ATTR_FLOATS,
  HC_ATTR_INTS,
  HC_ATTR_STRINGS,
} hc_attr_type;

/* A tensor-valued attribute (e.g. Constant's value). */
typedef struct hc_attr_tensor {
  hx_dtype_t dtype;
  int rank;
  int64_t dims[HC_MAX_RANK];
  const void* data; /* owned by the graph */
  size_t nbytes;
} hc_attr_tensor;

typedef struct hc_attr {
  const char* name;
  hc_attr_type type;
  float f;
  int64_t i;
  const char* s;
  int n;            /* element count of the list forms */
  const float* floats;
  const int64_t* ints;
  const char* const* strings;
  const hc_attr_tensor* t;
  struct hc_graph* g;
} hc_attr;

/* One element-wise operation fused into the kernel of another node (its
 * "owner"; see passes/fusion.c). `node` is the original element-wise node,
 * no longer in the graph's node list but kept (arena-owned) for its op
 * descriptor's scalar function, attributes and value types. args[i] says
 * where its input i comes from:
 *   args[i] >= 0       the owner's input args[i] (an extra operand),
 *   args[i] == -1      the owner's own result (Conv/Gemm/MatMul output; unused
 *                      for a FusedElementwise owner, which has none),
 *   args[i] == -2 - j  the result of fused op j (j earlier in the list). */
typedef struct hc_fused_op {
  struct hc_node* node;
  int* args;
} hc_fused_op;

/* A constant input replaced by a copy in the layout the op's kernels read
 * (passes/fusion.c, pack-weights): the packing is done once at compile time
 * and the artifact stores only the packed copy. `original` is the unpacked
 * value (its shape is what the op's geometry uses; its bytes are not
 * placed). Layouts are op-specific (HC_PACK_*) and independent of the
 * target, so every code variant of an artifact reads the same weights. */
typedef struct hc_packed_input {
  int input;                 /* the owner's input slot holding the packed value */
  int layout;                /* HC_PACK_* */
  struct hc_value* original; /* unpacked constant */
  /* Appended for reduced-precision weights (passes/precision.c,
   * docs/precision.md). Element type of the packed copy: HX_DTYPE_UNDEFINED
   * (as the records above made before) or FLOAT32 = the original's; FLOAT16
   * or BFLOAT16 = rounded to nearest even; INT8 = symmetric per output
   * channel, w ~ q * scale[channel]. An INT8 copy is a 1-D INT8 value: its
   * first scales_offset bytes are the quantised weights in `layout`, then
   * (64-byte aligned) scales_count scales in the channel order the kernels
   * use (Conv: output channel; Gemm/MatMul: B matrix * N + column), each a
   * scales_elem (FLOAT16; FLOAT32 or UNDEFINED: float32) holding the scale
   * times 2^scales_exp (float16 scales are shifted into its range and the
   * weights quantised with the stored, rounded values). */
  hx_dtype_t elem;
  uint64_t scales_offset;
  int64_t scales_count;
  hx_dtype_t scales_elem;
  int scales_exp;
} hc_packed_input;

/* HC_PACK_* layouts. */
enum {
  HC_PACK_NONE = 0,
  /* Panels of 16 (float32; 8 for float64) columns of a K x N matrix B of a
   * product A x B: [batch][ceil(N/16)][K][16], zero beyond N. A Gemm/MatMul
   * B; a Conv's weights seen as B[(ic, tap)][oc] (per group:
   * [G][ceil(Mg/16)][Cg*taps][16]); a ConvTranspose's the same with each
   * panel's rows grouped by output phase: [phase][ic][the phase's taps]. */
  HC_PACK_PANELS = 1,
};

typedef struct hc_node {
  int id;
  const char* name;
  const char* op_type;
  const char* domain;       /* "" for the default ONNX domain */
  int opset;                /* opset version of its domain in the model */
  const struct hc_op_desc* op;
  int num_inputs;
  hc_value** inputs;        /* NULL entries are omitted optional inputs */
  int num_outputs;
  hc_value** outputs;       /* NULL entries are omitted optional outputs */
  int num_attrs;
  hc_attr* attrs;
  void* op_state;           /* parsed attributes, owned by the graph arena */
  /* Scratch memory the node's kernels need (see hc_op_desc.workspace), placed
   * in the arena by memory planning. */
  uint64_t workspace_bytes;
  uint64_t workspace_offset;
  /* Bit k set: the kernels this node is lowered to (for the compilation
   * target) may write output 0 over input k (hc_op_desc.inplace_input).
   * Set by memory planning before it plans; 0 elsewhere. */
  uint32_t inplace_inputs;
  /* Parallel group from the scheduling pass: consecutive nodes with the same
   * group > 0 are one group, in which nodes of different lanes are
   * independent and may run concurrently (nodes of one lane run in order).
   * 0 = not in a parallel group (a step of its own). */
  int group;
  int lane;
  /* Made by the channel-blocks pass (passes/channel_blocks.c): its chains
   * run one after another, never as lanes of a parallel group, so each
   * block's tensors stay in cache and its output is written in place into
   * the blocks' Concat. */
  bool channel_block;
  bool dead;                /* removed; skipped by iteration, reclaimed by compaction */
  /* Fusion (passes/fusion.c, -O2 and above). A node with num_fused > 0
   * computes fused[num_fused - 1](...fused[0](its own result)...) in its
   * kernel and writes only that to outputs[0]; the intermediate values have
   * no producer and no storage. Inputs [fused_input_base, num_inputs) are
   * the extra operands the fused ops read (residuals, biases...), so
   * liveness and scheduling see them. A FusedElementwise node (op
   * hc_op_fused_elementwise) has no result of its own: all its inputs are
   * operands of its fused ops. The printer shows the fused ops through the
   * node's "fused" attribute. */
  int num_fused;
  hc_fused_op* fused;
  int fused_input_base;
  /* Pre-packed constant input (NULL = none). */
  hc_packed_input* packed;
  /* Control flow (If/Loop/Scan): inputs [num_inputs - num_captures,
   * num_inputs) are the node's implicit inputs, values of the enclosing
   * graph that its subgraphs read (outer-scope captures, and constants the
   * bodies use, hoisted here so the weights blob holds them). Being inputs,
   * they are seen by DCE, liveness, scheduling and memory planning like any
   * other; each subgraph maps them to its own values (hc_graph.captures). */
  int num_captures;
} hc_node;

typedef struct hc_graph {
  hc_arena arena;
  const char* name;
  hc_value** values;
  int num_values, cap_values;
  hc_node** nodes;
  int num_nodes, cap_nodes;
  hc_value** inputs;
  int num_inputs;
  hc_value** outputs;
  const char** output_names; /* user-facing output names (values may be rewired) */
  int num_outputs, cap_outputs;
  int default_opset;        /* opset of the "" domain */
  /* Constant data buffers owned by the graph (freed with it). */
  void** owned;
  int num_owned, cap_owned;
  /* Subgraphs (attributes of this graph's nodes, and copies made of them)
   * owned by this graph and freed with it. */
  struct hc_graph** children;
  int num_children, cap_children;
  /* A subgraph's outer-scope captures: captures[i] is a value of this graph
   * (kind INPUT, or CONST once its outer value is known constant) standing
   * for input capture_slots[i] of the node that owns the subgraph. Empty for
   * a top-level graph. */
  hc_value** captures;
  int* capture_slots;
  int num_captures, cap_captures;
} hc_graph;

/* Creates an empty graph; free with hc_graph_free. */
hx_status_t hc_graph_create(const char* name, hc_graph** out_graph);
void hc_graph_free(hc_graph* g);

/* Creates a value owned by the graph. The name is copied. */
hx_status_t hc_graph_add_value(hc_graph* g, const char* name, hx_dtype_t dtype, int rank, const int64_t* dims,
                               hc_value** out_value);
/* Finds a value by name (linear scan; import keeps its own index). */
hc_value* hc_graph_find_value(const hc_graph* g, const char* name);
/* Creates a node owned by the graph, appended at the end of graph->nodes. */
hx_status_t hc_graph_add_node(hc_graph* g, const char* name, const char* op_type, const char* domain,
                              int num_inputs, int num_outputs, hc_node** out_node);
/* Sets input slot i of node n, keeping producer/consumer facts consistent. */
void hc_node_set_input(hc_node* n, int i, hc_value* v);
/* Makes `v` a constant holding `data` (nbytes must match the shape); the
 * graph takes ownership of `data` (malloc'd). */
hx_status_t hc_value_set_const(hc_graph* g, hc_value* v, void* data, size_t nbytes);
/* Allocates zeroed constant storage owned by the graph (64-byte aligned). */
void* hc_graph_alloc_data(hc_graph* g, size_t nbytes);
/* Takes ownership of a malloc'd buffer. */
hx_status_t hc_graph_own(hc_graph* g, void* data);
/* Adds v to the graph outputs. */
hx_status_t hc_graph_add_output(hc_graph* g, hc_value* v);

/* ---- subgraphs (If/Loop/Scan bodies) ------------------------------------- */

/* Makes `child` owned by g (freed with it). */
hx_status_t hc_graph_add_child(hc_graph* g, hc_graph* child);
/* Makes outer value `v` (a value of g) an implicit input of node n of g:
 * reuses n's capture slot holding v, or appends one. *out_slot is the input
 * index. */
hx_status_t hc_node_add_capture(hc_graph* g, hc_node* n, hc_value* v, int* out_slot);
/* Records that subgraph value `v` stands for input `slot` of its owner. */
hx_status_t hc_graph_add_capture(hc_graph* sub, hc_value* v, int slot);
/* The capture index of v in sub, or -1 if v is not a capture. */
int hc_graph_capture_index(const hc_graph* sub, const hc_value* v);
/* Deep copy of subgraph `src` (values, nodes, captures, nested subgraphs),
 * owned by `owner`. Constant data and attribute payloads are shared with
 * src, which must live as long (both are owned by the same graph). Node
 * op_state, schedule and storage are not copied. */
hx_status_t hc_graph_clone(hc_graph* owner, const hc_graph* src, hc_graph** out);
/* Moves every node and value of subgraph `sub` into g, the nodes inserted at
 * position `pos` of g->nodes (ids renumbered). The caller has already
 * rewired sub's captures to values of g; sub is left empty (still owned). */
hx_status_t hc_graph_splice(hc_graph* g, int pos, hc_graph* sub);

/* Replaces every use of `from` (node inputs and graph outputs) by `to`. */
void hc_graph_replace_uses(hc_graph* g, hc_value* from, hc_value* to);
/* Counts the live nodes that read v. */
int hc_value_use_count(const hc_graph* g, const hc_value* v);
/* Drops dead nodes from graph->nodes and renumbers ids. */
void hc_graph_compact(hc_graph* g);
/* Re-sorts graph->nodes topologically (stable: among ready nodes the one
 * that came first wins). Fails on a cycle, naming a node on each. */
hx_status_t hc_graph_sort(hc_graph* g);
/* Tarjan's SCC check: fails naming one node of every cycle. */
hx_status_t hc_graph_check_acyclic(const hc_graph* g);

/* Shape helpers. */
int64_t hc_value_numel(const hc_value* v);
size_t hc_value_nbytes(const hc_value* v);
/* The value whose storage v's bytes are in (v itself unless v is a view or
 * an in-place Concat part), and where in it they start. */
const hc_value* hc_value_storage_root(const hc_value* v, uint64_t* offset_in_root);
int64_t hc_shape_numel(int rank, const int64_t* dims);
/* Formats "1x3x224x224" (or "scalar") into buf. */
const char* hc_shape_str(int rank, const int64_t* dims, char* buf, size_t cap);
void hc_value_set_shape(hc_value* v, hx_dtype_t dtype, int rank, const int64_t* dims);

/* Attribute lookup; NULL if absent. */
const hc_attr* hc_node_attr(const hc_node* n, const char* name);

/* Reads constant data as int64 / double regardless of its integer/float dtype.
 * Returns false if v is not constant or idx is out of range. */
bool hc_value_const_i64(const hc_value* v, int64_t idx, int64_t* out);
bool hc_value_const_f64(const hc_value* v, int64_t idx, double* out);

/* Builds the standard error for a node: 'node "conv_12" (Conv, opset 11): <msg>'. */
hx_status_t hc_node_error(const hc_node* n, hx_status_code_t code, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appended HC_PACK_* layout (passes/precision.c): the original layout and
 * shape with another element type (hc_packed_input.elem), for kernels that
 * read the weight in place. pack-weights turns it into HC_PACK_PANELS of the
 * same element type where the kernel reads panels. */
enum { HC_PACK_PLAIN = 2 };

/* Appended HC_PACK_* layout (compiler/ops/conv_winograd.c): a 3x3 Conv
 * weight transformed for Winograd F(m x m, 3 x 3), (G g G^T)[xi] for the
 * alpha^2 = (m+2)^2 frequencies xi, float32, in panels of 16 output
 * channels: [alpha^2][ceil(M/16)][C][16], zero past M. */
enum { HC_PACK_WINOGRAD = 3 };

/* Appended HC_PACK_* layout (compiler/ops/conv.c): a float32 ConvTranspose
 * weight W[C][Mg][taps] regrouped by output phase (the taps each stride
 * residue of the output receives, in tap order): phase after phase,
 * [G][Cg][Mg][taps of the phase], so that a phase kernel reads its taps
 * contiguously instead of a stride through every tap of W. */
enum { HC_PACK_CONVT_PHASES = 4 };

/* Appended HC_PACK_* layout (compiler/ops/integer_ops.c): a MatMulInteger's
 * or QLinearMatMul's constant int8 B with zero point 0 and K a multiple of 4, for targets with
 * 512-bit VNNI (vpdpbusd): element (k, n) of batch matrix bb at
 * ((bb*K/4 + k/4)*Np + n)*4 + k%4, int8, Np = N rounded up to 16, zeros in
 * the padding ([B batch][K/4][Np][4]). The layout depends on the target:
 * each code variant's graph packs its own, and the weights blob keeps one
 * copy per distinct layout. */
enum { HC_PACK_KQUADS_S8 = 5 };

/* Appended HC_PACK_* layout (compiler/ops/conv_winograd.c): a 3x3 Conv
 * weight g[M][C][3][3] that the precision pass narrowed (hc_packed_input.elem
 * FLOAT16, BFLOAT16 or INT8), for a Winograd convolution whose products
 * compute U = G g G^T from it per task: in panels of 16 output channels,
 * [ceil(M/16)][C][9 taps][16], zero past M; an INT8 copy's scales (one per
 * padded output channel, zero past M) follow as hc_packed_input says. */
enum { HC_PACK_WINOGRAD_G = 6 };

/* Appended HC_PACK_* layout (compiler/ops/integer_ops.c): a ConvInteger's or
 * QLinearConv's constant 8-bit weights as the int16 rows its product kernel
 * broadcasts a K pair at a time, on targets without the VNNI byte path:
 * [M][Kp], K = C/group * taps in W's order, Kp = K rounded up to even,
 * each row's zero point subtracted and a 0 in the padding. Read in place,
 * the 8-bit rows cost a load, a widening, a subtraction and a broadcast per
 * row and K pair, more than the pair's products. */
enum { HC_PACK_ROWS_I16 = 7 };

/* Appended HC_PACK_* layout (compiler/ops/integer_ops.c): a MatMulInteger's
 * or QLinearMatMul's constant 8-bit B, on targets (or B types and zero
 * points) without the VNNI byte path, as the int16 K-pair panels its
 * product reads: element (k, n) of batch matrix bb at
 * bb*Kp*Np + ((k/2)*Np + n)*2 + k%2, B minus its zero point, Kp = K
 * rounded up to even, Np = N rounded up to 16, zeros in the padding
 * ([B batch][Kp/2][Np][2]). */
enum { HC_PACK_KPAIRS_I16 = 8 };

/* Appended HC_PACK_* layout (compiler/ops/integer_ops.c): a ConvInteger's or
 * QLinearConv's constant int8 weights of zero point 0 for the direct
 * convolution of VNNI targets (ci_use_taps: 2-D, stride 1, C/group a
 * multiple of 4), whose K quads are four input channels at one tap:
 * element (m, c, tap) at ((m*C/4 + c/4)*taps + tap)*4 + c%4 of [M][K], K =
 * C/group * taps. The layout depends on the target, as HC_PACK_KQUADS_S8's. */
enum { HC_PACK_TAP_QUADS_S8 = 9 };

#endif /* HARNESS_IR_GRAPH_H */
