/* Kernel builder implementation: thin, typed wrappers over the LLVM C API. */
#include "compiler/codegen/kernel_builder.h"

#include "compiler/backend/target.h"
#include "compiler/codegen/fast_math.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/artifact_abi.h"
#include <llvm-c/DebugInfo.h>
#include <llvm-c/Transforms/PassBuilder.h>

static void init_types(hc_kb* kb) {
  LLVMContextRef c = kb->lc->llctx;
  kb->t_void = LLVMVoidTypeInContext(c);
  kb->t_i1 = LLVMInt1TypeInContext(c);
  kb->t_i8 = LLVMInt8TypeInContext(c);
  kb->t_i16 = LLVMInt16TypeInContext(c);
  kb->t_i32 = LLVMInt32TypeInContext(c);
  kb->t_i64 = LLVMInt64TypeInContext(c);
  kb->t_f16 = LLVMHalfTypeInContext(c);
  kb->t_bf16 = LLVMBFloatTypeInContext(c);
  kb->t_f32 = LLVMFloatTypeInContext(c);
  kb->t_f64 = LLVMDoubleTypeInContext(c);
  kb->t_ptr = LLVMPointerTypeInContext(c, 0);
}

static void add_enum_attr(hc_lower_ctx* lc, LLVMValueRef fn, LLVMAttributeIndex at, const char* name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, at, LLVMCreateEnumAttribute(lc->llctx, kind, 0));
}

/* Makes an LLVM-friendly symbol out of a node name. */
static void sanitize(char* s) {
  for (; *s; ++s)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) *s = '_';
}

/* Room for one more record in lc->kernels. */
static hx_status_t reserve_kernel(hc_lower_ctx* lc) {
  if (lc->num_kernels < lc->cap_kernels) return HX_OK;
  int ncap = lc->cap_kernels ? lc->cap_kernels * 2 : 64;
  hc_kernel_rec* nk = realloc(lc->kernels, (size_t)ncap * sizeof(*nk));
  if (!nk) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory recording kernels");
  lc->kernels = nk;
  lc->cap_kernels = ncap;
  return HX_OK;
}

hx_status_t hc_kb_begin(hc_lower_ctx* lc, const hc_node* node, const char* suffix, int64_t tasks, hc_kb* kb) {
  memset(kb, 0, sizeof(*kb));
  kb->last_param = -1;
  kb->lc = lc;
  kb->node = node;
  kb->tasks = tasks < 0 ? 0 : tasks;
  init_types(kb);
  char sym[192];
  snprintf(sym, sizeof sym, "%.16shk%d_%.40s_%.60s%s%.20s", lc->symbol_prefix ? lc->symbol_prefix : "", lc->symbol_counter++, node ? node->op_type : "k",
           node ? node->name : "", suffix ? "_" : "", suffix ? suffix : "");
  sanitize(sym);
  /* The body; hc_kb_end adds the kernel @sym that calls it. */
  char body_sym[200];
  snprintf(body_sym, sizeof body_sym, "%s.body", sym);
  LLVMTypeRef params[4] = {kb->t_ptr, kb->t_i64, kb->t_i64, kb->t_ptr};
  LLVMTypeRef fty = LLVMFunctionType(kb->t_void, params, 4, 0);
  kb->fn = LLVMAddFunction(lc->mod, body_sym, fty);
  LLVMSetLinkage(kb->fn, LLVMInternalLinkage);
  LLVMSetUnnamedAddress(kb->fn, LLVMGlobalUnnamedAddr);
  /* Kernels are leaf code: no unwinding, and they may be vectorised freely. */
  add_enum_attr(lc, kb->fn, LLVMAttributeFunctionIndex, "nounwind");
  add_enum_attr(lc, kb->fn, 1, "noalias");
  /* Nothing the kernel stores reaches its offset table: loads of it are
   * invariant and LICM can hoist them out of any loop. */
  add_enum_attr(lc, kb->fn, 4, "noalias");
  add_enum_attr(lc, kb->fn, 4, "nocapture");
  add_enum_attr(lc, kb->fn, 4, "readonly");
  kb->bases = LLVMGetParam(kb->fn, 0);
  kb->begin = LLVMGetParam(kb->fn, 1);
  kb->end = LLVMGetParam(kb->fn, 2);
  kb->offsets = LLVMGetParam(kb->fn, 3);
  LLVMSetValueName2(kb->bases, "bases", 5);
  LLVMSetValueName2(kb->begin, "begin", 5);
  LLVMSetValueName2(kb->end, "end", 3);
  LLVMSetValueName2(kb->offsets, "offsets", 7);
  kb->b = LLVMCreateBuilderInContext(lc->llctx);
  kb->entry = LLVMAppendBasicBlockInContext(lc->llctx, kb->fn, "entry");
  LLVMPositionBuilderAtEnd(kb->b, kb->entry);

  HX_RETURN_IF_ERROR(reserve_kernel(lc));
  hc_kernel_rec* rec = &lc->kernels[lc->num_kernels];
  memset(rec, 0, sizeof(*rec));
  char label[200];
  snprintf(label, sizeof label, "%s%s%s", node ? node->name : "kernel", suffix ? ":" : "", suffix ? suffix : "");
  rec->name = hc_arena_strdup(lc->arena, label);
  rec->symbol = hc_arena_strdup(lc->arena, sym);
  rec->body = kb->fn;
  rec->tasks = kb->tasks;
  rec->node = node;
  rec->stage = HX_STAGE_INFER;
  return HX_OK;
}

/* The wrapper @symbol(bases, begin, end) = @body(bases, begin, end, @symbol.offsets),
 * the table holding `values`. */
static LLVMValueRef emit_wrapper(hc_kb* kb, LLVMValueRef body, const uint64_t* values, int count, const char* symbol) {
  hc_lower_ctx* lc = kb->lc;
  LLVMValueRef table = LLVMConstPointerNull(kb->t_ptr);
  if (count > 0) {
    LLVMValueRef* elems = hc_arena_alloc(lc->arena, sizeof(LLVMValueRef) * (size_t)count);
    for (int i = 0; elems && i < count; ++i) elems[i] = hc_kb_i64(kb, (int64_t)values[i]);
    if (elems) {
      char name[220];
      snprintf(name, sizeof name, "%s.offsets", symbol);
      table = hc_kb_const_table(lc, LLVMConstArray2(kb->t_i64, elems, (uint64_t)count), name, 8);
    }
  }
  LLVMTypeRef params[3] = {kb->t_ptr, kb->t_i64, kb->t_i64};
  LLVMValueRef w = LLVMAddFunction(lc->mod, symbol, LLVMFunctionType(kb->t_void, params, 3, 0));
  LLVMSetLinkage(w, LLVMInternalLinkage);
  /* The body's function attributes (nounwind, preferred vector width,
   * target CPU...) become the wrapper's too: they decide how the body is
   * compiled once it is inlined there. */
  unsigned nattr = LLVMGetAttributeCountAtIndex(body, LLVMAttributeFunctionIndex);
  LLVMAttributeRef* attrs = nattr ? hc_arena_alloc(lc->arena, sizeof(LLVMAttributeRef) * nattr) : NULL;
  if (attrs) {
    LLVMGetAttributesAtIndex(body, LLVMAttributeFunctionIndex, attrs);
    for (unsigned i = 0; i < nattr; ++i) LLVMAddAttributeAtIndex(w, LLVMAttributeFunctionIndex, attrs[i]);
  }
  LLVMBuilderRef b = LLVMCreateBuilderInContext(lc->llctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(lc->llctx, w, "entry"));
  LLVMValueRef args[4] = {LLVMGetParam(w, 0), LLVMGetParam(w, 1), LLVMGetParam(w, 2), table};
  LLVMBuildCall2(b, LLVMGlobalGetValueType(body), body, args, 4, "");
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
  return w;
}

void hc_kb_end(hc_kb* kb, double flops, double bytes) {
  LLVMBuildRetVoid(kb->b);
  LLVMDisposeBuilder(kb->b);
  kb->b = NULL;
  hc_kernel_rec* rec = &kb->lc->kernels[kb->lc->num_kernels++];
  rec->fn = emit_wrapper(kb, kb->fn, kb->offset_values, kb->num_offsets, rec->symbol);
  rec->flops = flops;
  rec->bytes = bytes;
  rec->offset_values = kb->offset_values;
  rec->num_offsets = kb->num_offsets;
}

hx_status_t hc_kb_repeat(hc_lower_ctx* lc, int proto, int nset, const int* slots, const int64_t* values) {
  if (proto < 0 || proto >= lc->num_kernels)
    return hx_status_make(HX_STATUS_INTERNAL, "hc_kb_repeat: no kernel %d to repeat", proto);
  HX_RETURN_IF_ERROR(reserve_kernel(lc));
  const hc_kernel_rec* p = &lc->kernels[proto];
  int n = p->num_offsets;
  for (int i = 0; i < nset; ++i)
    if (slots[i] >= n)
      return hx_status_make(HX_STATUS_INTERNAL, "hc_kb_repeat: kernel %s has no table entry %d", p->name, slots[i]);
  uint64_t* table = n ? hc_arena_alloc(lc->arena, sizeof(uint64_t) * (size_t)n) : NULL;
  if (n && !table) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory recording kernels");
  if (n) memcpy(table, p->offset_values, sizeof(uint64_t) * (size_t)n);
  for (int i = 0; i < nset; ++i)
    if (slots[i] >= 0) table[slots[i]] = (uint64_t)values[i];
  char sym[192];
  snprintf(sym, sizeof sym, "%.16shk%d_%.160s", lc->symbol_prefix ? lc->symbol_prefix : "", lc->symbol_counter++,
           p->symbol);
  sanitize(sym);
  hc_kb kb;
  memset(&kb, 0, sizeof kb);
  kb.lc = lc;
  init_types(&kb);
  hc_kernel_rec* rec = &lc->kernels[lc->num_kernels];
  *rec = *p;
  rec->symbol = hc_arena_strdup(lc->arena, sym);
  rec->offset_values = table;
  rec->fn = emit_wrapper(&kb, p->body, table, n, rec->symbol);
  lc->num_kernels++;
  return HX_OK;
}

int hc_kernel_lane(const hc_kernel_rec* r) {
  if (r->sublane > 0) return r->sublane - 1;
  return r->node && r->node->group ? r->node->lane : 0;
}

hx_status_t hc_kb_share_bodies(hc_lower_ctx* lc, LLVMTargetMachineRef tm) {
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef err = LLVMRunPasses(lc->mod, "constmerge,mergefunc", tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (err) {
    char* msg = LLVMGetErrorMessage(err);
    hx_status_t st = hx_status_make(HX_STATUS_INTERNAL, "LLVM function merging failed: %s", msg);
    LLVMDisposeErrorMessage(msg);
    return st;
  }
  /* The bodies still called from one kernel only go back into it. */
  unsigned always = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
  for (LLVMValueRef f = LLVMGetFirstFunction(lc->mod); f; f = LLVMGetNextFunction(f)) {
    size_t len = 0;
    const char* name = LLVMGetValueName2(f, &len);
    if (len < 5 || strcmp(name + len - 5, ".body") != 0 || LLVMIsDeclaration(f)) continue;
    int uses = 0;
    for (LLVMUseRef u = LLVMGetFirstUse(f); u && uses < 2; u = LLVMGetNextUse(u)) ++uses;
    if (uses == 1) LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(lc->llctx, always, 0));
  }
  return HX_OK;
}

LLVMValueRef hc_kb_i64(hc_kb* kb, int64_t x) { return LLVMConstInt(kb->t_i64, (unsigned long long)x, 1); }
LLVMValueRef hc_kb_i32(hc_kb* kb, int32_t x) { return LLVMConstInt(kb->t_i32, (unsigned long long)(int64_t)x, 1); }

/* Room for `more` entries in the kernel's table. */
static bool table_reserve(hc_kb* kb, int64_t more) {
  if (kb->num_offsets + more <= kb->cap_offsets) return true;
  int64_t ncap = kb->cap_offsets ? kb->cap_offsets : 8;
  while (ncap < kb->num_offsets + more) ncap *= 2;
  if (ncap > INT32_MAX) return false;
  uint64_t* nv = hc_arena_alloc(kb->lc->arena, sizeof(uint64_t) * (size_t)ncap);
  if (!nv) return false;
  if (kb->num_offsets) memcpy(nv, kb->offset_values, sizeof(uint64_t) * (size_t)kb->num_offsets);
  kb->offset_values = nv;
  kb->cap_offsets = (int)ncap;
  return true;
}

/* Byte offset `offset` as the kernel's next offset-table entry: an
 * invariant load, so kernels differing only in where their tensors live
 * have identical bodies. */
static LLVMValueRef table_offset(hc_kb* kb, uint64_t offset) {
  if (!table_reserve(kb, 1)) return hc_kb_i64(kb, (int64_t)offset); /* out of memory: the immediate is still correct */
  int i = kb->num_offsets++;
  kb->offset_values[i] = offset;
  LLVMValueRef slot = LLVMBuildGEP2(kb->b, kb->t_i64, kb->offsets, (LLVMValueRef[]){hc_kb_i64(kb, i)}, 1, "");
  LLVMValueRef load = LLVMBuildLoad2(kb->b, kb->t_i64, slot, "off");
  LLVMSetAlignment(load, 8);
  LLVMContextRef c = kb->lc->llctx;
  LLVMSetMetadata(load, LLVMGetMDKindIDInContext(c, "invariant.load", 14), LLVMMetadataAsValue(c, LLVMMDNodeInContext2(c, NULL, 0)));
  return load;
}

static LLVMValueRef base_plus(hc_kb* kb, int base, uint64_t offset) {
  LLVMValueRef slot = LLVMBuildGEP2(kb->b, kb->t_ptr, kb->bases, (LLVMValueRef[]){hc_kb_i64(kb, base)}, 1, "");
  LLVMValueRef basep = LLVMBuildLoad2(kb->b, kb->t_ptr, slot, "");
  return LLVMBuildGEP2(kb->b, kb->t_i8, basep, (LLVMValueRef[]){table_offset(kb, offset)}, 1, "");
}

LLVMValueRef hc_kb_ptr(hc_kb* kb, const hc_value* v) {
  /* A view has no storage of its own: read through the value it aliases
   * (an in-place Concat part at its offset in the Concat's output). */
  uint64_t off;
  const hc_value* root = hc_value_storage_root(v, &off);
  return base_plus(kb, root->storage.base, root->storage.offset + off);
}

LLVMValueRef hc_kb_workspace(hc_kb* kb) { return base_plus(kb, HX_BASE_ARENA, kb->node->workspace_offset); }

LLVMValueRef hc_kb_param(hc_kb* kb, int64_t x) {
  int slot = kb->num_offsets;
  LLVMValueRef v = table_offset(kb, (uint64_t)x);
  /* Out of memory, table_offset gave the immediate: no entry to patch. */
  kb->last_param = kb->num_offsets == slot + 1 ? slot : -1;
  return v;
}

LLVMValueRef hc_kb_param_array(hc_kb* kb, const int64_t* v, int64_t n) {
  if (!table_reserve(kb, n)) return NULL;
  int64_t first = kb->num_offsets;
  for (int64_t i = 0; i < n; ++i) kb->offset_values[kb->num_offsets++] = (uint64_t)v[i];
  return LLVMBuildGEP2(kb->b, kb->t_i64, kb->offsets, (LLVMValueRef[]){hc_kb_i64(kb, first)}, 1, "params");
}

bool hc_dtype_is_float(hx_dtype_t dt) {
  return dt == HX_DTYPE_FLOAT32 || dt == HX_DTYPE_FLOAT64 || dt == HX_DTYPE_FLOAT16 || dt == HX_DTYPE_BFLOAT16;
}

bool hc_dtype_is_signed(hx_dtype_t dt) {
  return dt == HX_DTYPE_INT8 || dt == HX_DTYPE_INT16 || dt == HX_DTYPE_INT32 || dt == HX_DTYPE_INT64;
}

bool hc_dtype_is_integer(hx_dtype_t dt) {
  return hc_dtype_is_signed(dt) || dt == HX_DTYPE_UINT8 || dt == HX_DTYPE_UINT16 || dt == HX_DTYPE_UINT32 ||
         dt == HX_DTYPE_UINT64;
}

LLVMTypeRef hc_kb_storage_type(hc_kb* kb, hx_dtype_t dt) {
  switch (dt) {
    case HX_DTYPE_FLOAT32: return kb->t_f32;
    case HX_DTYPE_FLOAT64: return kb->t_f64;
    case HX_DTYPE_FLOAT16: return kb->t_f16;
    case HX_DTYPE_BFLOAT16: return kb->t_bf16;
    case HX_DTYPE_INT8:
    case HX_DTYPE_UINT8:
    case HX_DTYPE_BOOL: return kb->t_i8;
    case HX_DTYPE_INT16:
    case HX_DTYPE_UINT16: return kb->t_i16;
    case HX_DTYPE_INT32:
    case HX_DTYPE_UINT32: return kb->t_i32;
    case HX_DTYPE_INT64:
    case HX_DTYPE_UINT64: return kb->t_i64;
    default: return kb->t_i8;
  }
}

LLVMTypeRef hc_kb_compute_type(hc_kb* kb, hx_dtype_t dt) {
  switch (dt) {
    case HX_DTYPE_FLOAT16:
    case HX_DTYPE_BFLOAT16: return kb->t_f32;
    case HX_DTYPE_BOOL: return kb->t_i1;
    default: return hc_kb_storage_type(kb, dt);
  }
}

static LLVMValueRef const_scalar(hc_kb* kb, hx_dtype_t dt, double x) {
  LLVMTypeRef t = hc_kb_compute_type(kb, dt);
  if (hc_dtype_is_float(dt)) return LLVMConstReal(t, x);
  if (dt == HX_DTYPE_BOOL) return LLVMConstInt(t, x != 0, 0);
  if (hc_dtype_is_signed(dt)) return LLVMConstInt(t, (unsigned long long)(long long)x, 1);
  return LLVMConstInt(t, (unsigned long long)x, 0);
}

LLVMValueRef hc_kb_const(hc_kb* kb, hx_dtype_t dt, double x) {
  LLVMValueRef c = const_scalar(kb, dt, x);
  return kb->const_lanes ? hc_kb_splat(kb, c, kb->const_lanes) : c;
}

LLVMValueRef hc_kb_const_i(hc_kb* kb, hx_dtype_t dt, int64_t x) {
  LLVMTypeRef t = hc_kb_compute_type(kb, dt);
  LLVMValueRef c;
  if (hc_dtype_is_float(dt))
    c = LLVMConstReal(t, (double)x);
  else if (dt == HX_DTYPE_BOOL)
    c = LLVMConstInt(t, x != 0, 0);
  else
    c = LLVMConstInt(t, (unsigned long long)x, hc_dtype_is_signed(dt));
  return kb->const_lanes ? hc_kb_splat(kb, c, kb->const_lanes) : c;
}

LLVMValueRef hc_kb_gep(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef index) {
  return LLVMBuildGEP2(kb->b, hc_kb_storage_type(kb, dt), ptr, &index, 1, "");
}

/* bfloat16 <-> float32 with integer operations. An fptrunc to bfloat lowers
 * to __truncsfbf2 on targets without AVX512-BF16, which libgcc before GCC 13
 * lacks; a visible fpext also lets the optimiser narrow float32 arithmetic
 * back to bfloat. Widening is exact; narrowing rounds to nearest-even and
 * keeps NaNs quiet. Both work lane-wise on vectors too. */
LLVMValueRef hc_kb_bf16_to_f32(hc_kb* kb, LLVMValueRef raw_i16) {
  LLVMTypeRef t = LLVMTypeOf(raw_i16);
  bool vec = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
  unsigned n = vec ? LLVMGetVectorSize(t) : 1;
  LLVMTypeRef i32 = vec ? LLVMVectorType(kb->t_i32, n) : kb->t_i32;
  LLVMTypeRef f32 = vec ? LLVMVectorType(kb->t_f32, n) : kb->t_f32;
  LLVMValueRef sixteen = vec ? hc_kb_splat(kb, LLVMConstInt(kb->t_i32, 16, 0), n) : LLVMConstInt(kb->t_i32, 16, 0);
  LLVMValueRef wide = LLVMBuildShl(kb->b, LLVMBuildZExt(kb->b, raw_i16, i32, ""), sixteen, "");
  return LLVMBuildBitCast(kb->b, wide, f32, "");
}

LLVMValueRef hc_kb_f32_to_bf16(hc_kb* kb, LLVMValueRef v) {
  LLVMBuilderRef b = kb->b;
  LLVMTypeRef t = LLVMTypeOf(v);
  bool vec = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
  unsigned n = vec ? LLVMGetVectorSize(t) : 1;
  LLVMTypeRef i32 = vec ? LLVMVectorType(kb->t_i32, n) : kb->t_i32;
  LLVMTypeRef i16 = vec ? LLVMVectorType(kb->t_i16, n) : kb->t_i16;
#define C32(x) (vec ? hc_kb_splat(kb, LLVMConstInt(kb->t_i32, (x), 0), n) : LLVMConstInt(kb->t_i32, (x), 0))
  LLVMValueRef bits = LLVMBuildBitCast(b, v, i32, "");
  LLVMValueRef high = LLVMBuildLShr(b, bits, C32(16), "");
  LLVMValueRef bias = LLVMBuildAdd(b, LLVMBuildAnd(b, high, C32(1), ""), C32(0x7FFF), "");
  LLVMValueRef rounded = LLVMBuildLShr(b, LLVMBuildAdd(b, bits, bias, ""), C32(16), "");
  LLVMValueRef quiet_nan = LLVMBuildOr(b, high, C32(0x40), "");
#undef C32
  LLVMValueRef is_nan = LLVMBuildFCmp(b, LLVMRealUNO, v, v, "");
  return LLVMBuildTrunc(b, LLVMBuildSelect(b, is_nan, quiet_nan, rounded, ""), i16, "");
}

LLVMValueRef hc_kb_load(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef index) {
  LLVMTypeRef st = dt == HX_DTYPE_BFLOAT16 ? kb->t_i16 : hc_kb_storage_type(kb, dt);
  LLVMValueRef v = LLVMBuildLoad2(kb->b, st, hc_kb_gep(kb, dt, ptr, index), "");
  switch (dt) {
    case HX_DTYPE_FLOAT16: return LLVMBuildFPExt(kb->b, v, kb->t_f32, "");
    case HX_DTYPE_BFLOAT16: return hc_kb_bf16_to_f32(kb, v);
    case HX_DTYPE_BOOL: return LLVMBuildICmp(kb->b, LLVMIntNE, v, LLVMConstInt(kb->t_i8, 0, 0), "");
    default: return v;
  }
}

void hc_kb_store(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef index, LLVMValueRef value) {
  switch (dt) {
    case HX_DTYPE_FLOAT16: value = LLVMBuildFPTrunc(kb->b, value, kb->t_f16, ""); break;
    case HX_DTYPE_BFLOAT16: value = hc_kb_f32_to_bf16(kb, value); break;
    case HX_DTYPE_BOOL: value = LLVMBuildZExt(kb->b, value, kb->t_i8, ""); break;
    default: break;
  }
  LLVMBuildStore(kb->b, value, hc_kb_gep(kb, dt, ptr, index));
}

LLVMValueRef hc_kb_reassoc(LLVMValueRef v) {
  if (LLVMIsAInstruction(v) && LLVMCanValueUseFastMathFlags(v)) LLVMSetFastMathFlags(v, LLVMFastMathAllowReassoc);
  return v;
}

LLVMValueRef hc_kb_splat(hc_kb* kb, LLVMValueRef s, unsigned n) {
  LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(s), n);
  LLVMValueRef v = LLVMBuildInsertElement(kb->b, LLVMGetPoison(vt), s, LLVMConstInt(kb->t_i32, 0, 0), "");
  return LLVMBuildShuffleVector(kb->b, v, LLVMGetPoison(vt), LLVMConstNull(LLVMVectorType(kb->t_i32, n)), "");
}

LLVMValueRef hc_kb_shuffle(hc_kb* kb, LLVMValueRef a, LLVMValueRef b, const int* idx, unsigned n) {
  LLVMValueRef c[128];
  for (unsigned l = 0; l < n && l < 128; ++l) c[l] = LLVMConstInt(kb->t_i32, (unsigned long long)idx[l], 0);
  return LLVMBuildShuffleVector(kb->b, a, b, LLVMConstVector(c, n < 128 ? n : 128), "");
}

/* Vectorisable float32 exp (compiler/codegen/fast_math.c: correct over the
 * whole range, subnormal results included). */
LLVMValueRef hc_kb_exp_f32(hc_kb* kb, LLVMValueRef x) { return hc_ew_exp(kb, HX_DTYPE_FLOAT32, x); }

LLVMValueRef hc_kb_convert(hc_kb* kb, LLVMValueRef v, hx_dtype_t from, hx_dtype_t to) {
  LLVMTypeRef tt = hc_kb_compute_type(kb, to);
  LLVMTypeRef ft = hc_kb_compute_type(kb, from);
  bool ff = hc_dtype_is_float(from), tf = hc_dtype_is_float(to);
  if (to == HX_DTYPE_BOOL) {
    if (ff) return LLVMBuildFCmp(kb->b, LLVMRealUNE, v, LLVMConstReal(ft, 0.0), "");
    if (from == HX_DTYPE_BOOL) return v;
    return LLVMBuildICmp(kb->b, LLVMIntNE, v, LLVMConstInt(ft, 0, 0), "");
  }
  if (from == HX_DTYPE_BOOL) {
    if (tf) return LLVMBuildUIToFP(kb->b, v, tt, "");
    return LLVMBuildZExt(kb->b, v, tt, "");
  }
  if (ff && tf) {
    unsigned fw = LLVMGetTypeKind(ft) == LLVMDoubleTypeKind ? 64 : 32;
    unsigned tw = LLVMGetTypeKind(tt) == LLVMDoubleTypeKind ? 64 : 32;
    if (fw == tw) {
      /* float32 compute values that come from or go to half/bfloat are
       * rounded by the store; nothing to do in registers. */
      return v;
    }
    return fw < tw ? LLVMBuildFPExt(kb->b, v, tt, "") : LLVMBuildFPTrunc(kb->b, v, tt, "");
  }
  if (ff && !tf) {
    /* fptosi/fptoui are poison out of range; the saturating intrinsics give
     * the defined, platform-independent answer. NaN -> 0. */
    LLVMTypeRef tys[2] = {tt, ft};
    const char* name = hc_dtype_is_signed(to) ? "llvm.fptosi.sat" : "llvm.fptoui.sat";
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef decl = LLVMGetIntrinsicDeclaration(kb->lc->mod, id, tys, 2);
    LLVMTypeRef fty = LLVMIntrinsicGetType(kb->lc->llctx, id, tys, 2);
    return LLVMBuildCall2(kb->b, fty, decl, &v, 1, "");
  }
  if (!ff && tf) {
    return hc_dtype_is_signed(from) ? LLVMBuildSIToFP(kb->b, v, tt, "") : LLVMBuildUIToFP(kb->b, v, tt, "");
  }
  /* int -> int */
  unsigned fw = LLVMGetIntTypeWidth(ft), tw = LLVMGetIntTypeWidth(tt);
  if (fw == tw) return v;
  if (fw > tw) return LLVMBuildTrunc(kb->b, v, tt, "");
  return hc_dtype_is_signed(from) ? LLVMBuildSExt(kb->b, v, tt, "") : LLVMBuildZExt(kb->b, v, tt, "");
}

LLVMValueRef hc_kb_add(hc_kb* kb, hx_dtype_t dt, LLVMValueRef a, LLVMValueRef b) {
  if (hc_dtype_is_float(dt)) return LLVMBuildFAdd(kb->b, a, b, "");
  if (dt == HX_DTYPE_BOOL) return LLVMBuildOr(kb->b, a, b, "");
  return LLVMBuildAdd(kb->b, a, b, "");
}

LLVMValueRef hc_kb_sub(hc_kb* kb, hx_dtype_t dt, LLVMValueRef a, LLVMValueRef b) {
  return hc_dtype_is_float(dt) ? LLVMBuildFSub(kb->b, a, b, "") : LLVMBuildSub(kb->b, a, b, "");
}

LLVMValueRef hc_kb_mul(hc_kb* kb, hx_dtype_t dt, LLVMValueRef a, LLVMValueRef b) {
  if (hc_dtype_is_float(dt)) return LLVMBuildFMul(kb->b, a, b, "");
  if (dt == HX_DTYPE_BOOL) return LLVMBuildAnd(kb->b, a, b, "");
  return LLVMBuildMul(kb->b, a, b, "");
}

LLVMValueRef hc_kb_div(hc_kb* kb, hx_dtype_t dt, LLVMValueRef a, LLVMValueRef b) {
  if (hc_dtype_is_float(dt)) return LLVMBuildFDiv(kb->b, a, b, "");
  /* Integer division by zero is undefined in LLVM (and traps on x86); ONNX
   * leaves it undefined too. Dividing by 1 instead keeps kernels total. */
  LLVMValueRef zero = LLVMConstInt(LLVMTypeOf(b), 0, 0);
  LLVMValueRef is0 = LLVMBuildICmp(kb->b, LLVMIntEQ, b, zero, "");
  LLVMValueRef safe = LLVMBuildSelect(kb->b, is0, LLVMConstInt(LLVMTypeOf(b), 1, 0), b, "");
  if (hc_dtype_is_signed(dt)) {
    /* INT_MIN / -1 overflows (and traps); numpy wraps to INT_MIN. */
    LLVMValueRef q = LLVMBuildSDiv(kb->b, a, safe, "");
    return LLVMBuildSelect(kb->b, is0, zero, q, "");
  }
  LLVMValueRef q = LLVMBuildUDiv(kb->b, a, safe, "");
  return LLVMBuildSelect(kb->b, is0, zero, q, "");
}

LLVMValueRef hc_kb_fma(hc_kb* kb, hx_dtype_t dt, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  if (hc_dtype_is_float(dt)) {
    LLVMValueRef args[3] = {a, b, c};
    return hc_kb_intrinsic(kb, "llvm.fmuladd", LLVMTypeOf(a), args, 3);
  }
  return hc_kb_add(kb, dt, hc_kb_mul(kb, dt, a, b), c);
}

LLVMValueRef hc_kb_min(hc_kb* kb, hx_dtype_t dt, LLVMValueRef a, LLVMValueRef b) {
  if (hc_dtype_is_float(dt)) {
    LLVMValueRef args[2] = {a, b};
    return hc_kb_intrinsic(kb, "llvm.minimum", LLVMTypeOf(a), args, 2);
  }
  LLVMIntPredicate p = hc_dtype_is_signed(dt) ? LLVMIntSLT : LLVMIntULT;
  return LLVMBuildSelect(kb->b, LLVMBuildICmp(kb->b, p, a, b, ""), a, b, "");
}

LLVMValueRef hc_kb_max(hc_kb* kb, hx_dtype_t dt, LLVMValueRef a, LLVMValueRef b) {
  if (hc_dtype_is_float(dt)) {
    LLVMValueRef args[2] = {a, b};
    return hc_kb_intrinsic(kb, "llvm.maximum", LLVMTypeOf(a), args, 2);
  }
  LLVMIntPredicate p = hc_dtype_is_signed(dt) ? LLVMIntSGT : LLVMIntUGT;
  return LLVMBuildSelect(kb->b, LLVMBuildICmp(kb->b, p, a, b, ""), a, b, "");
}

LLVMValueRef hc_kb_cmp(hc_kb* kb, hx_dtype_t dt, const char* pred, LLVMValueRef a, LLVMValueRef b) {
  int which = !strcmp(pred, "eq") ? 0 : !strcmp(pred, "ne") ? 1 : !strcmp(pred, "lt") ? 2
            : !strcmp(pred, "le") ? 3 : !strcmp(pred, "gt") ? 4 : 5;
  if (hc_dtype_is_float(dt)) {
    static const LLVMRealPredicate fp[6] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
    return LLVMBuildFCmp(kb->b, fp[which], a, b, "");
  }
  static const LLVMIntPredicate sp[6] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
  static const LLVMIntPredicate up[6] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
  return LLVMBuildICmp(kb->b, hc_dtype_is_signed(dt) ? sp[which] : up[which], a, b, "");
}

LLVMValueRef hc_kb_select(hc_kb* kb, LLVMValueRef cond, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(kb->b, cond, a, b, "");
}

LLVMValueRef hc_kb_intrinsic(hc_kb* kb, const char* name, LLVMTypeRef type, LLVMValueRef* args, unsigned nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMTypeRef tys[1] = {type};
  LLVMValueRef decl = LLVMGetIntrinsicDeclaration(kb->lc->mod, id, tys, 1);
  LLVMTypeRef fty = LLVMIntrinsicGetType(kb->lc->llctx, id, tys, 1);
  return LLVMBuildCall2(kb->b, fty, decl, args, nargs, "");
}

static void prefetch(hc_kb* kb, LLVMValueRef ptr, unsigned write, int locality) {
  LLVMValueRef args[4] = {ptr, LLVMConstInt(kb->t_i32, write, 0), LLVMConstInt(kb->t_i32, (unsigned)locality, 0),
                          LLVMConstInt(kb->t_i32, 1, 0)};
  hc_kb_intrinsic(kb, "llvm.prefetch", kb->t_ptr, args, 4);
}

void hc_kb_prefetch(hc_kb* kb, LLVMValueRef ptr, int locality) { prefetch(kb, ptr, 0, locality); }

void hc_kb_prefetch_write_span(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptr, LLVMValueRef index, int64_t count,
                               int locality) {
  size_t es = hx_dtype_size(dt);
  int64_t step = es > 0 && es < 64 ? 64 / (int64_t)es : 1;
  for (int64_t o = 0; o < count; o += step)
    prefetch(kb, hc_kb_gep(kb, dt, ptr, hc_kb_iadd(kb, index, hc_kb_i64(kb, o))), 1, locality);
}

LLVMValueRef hc_kb_libm(hc_kb* kb, const char* name, LLVMTypeRef type, LLVMValueRef* args, unsigned nargs) {
  LLVMTypeRef params[4] = {type, type, type, type};
  LLVMTypeRef fty = LLVMFunctionType(type, params, nargs, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(kb->lc->mod, name);
  if (!fn) {
    fn = LLVMAddFunction(kb->lc->mod, name, fty);
    unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(kb->lc->llctx, nounwind, 0));
  }
  return LLVMBuildCall2(kb->b, fty, fn, args, nargs, "");
}

LLVMValueRef hc_kb_math(hc_kb* kb, hx_dtype_t dt, const char* name, LLVMValueRef* args, unsigned nargs) {
  LLVMTypeRef t = hc_kb_compute_type(kb, dt);
  bool dbl = LLVMGetTypeKind(t) == LLVMDoubleTypeKind;
  /* Inline, vectorisable float32 versions instead of per-element libm calls. */
  if (!dbl && nargs == 1) {
    if (!strcmp(name, "exp")) return hc_ew_exp(kb, dt, args[0]);
    if (!strcmp(name, "expm1")) return hc_ew_expm1(kb, dt, args[0]);
    if (!strcmp(name, "log")) return hc_ew_log(kb, dt, args[0]);
    if (!strcmp(name, "log1p")) return hc_ew_log1p(kb, dt, args[0]);
    if (!strcmp(name, "tanh")) return hc_ew_tanh(kb, dt, args[0]);
    if (!strcmp(name, "erf")) return hc_ew_erf(kb, dt, args[0]);
  }
  /* Functions LLVM knows as intrinsics (vectorisable, constant-foldable). */
  static const char* const intrinsics[] = {"exp", "exp2", "log", "log2", "log10", "sqrt", "fabs", "floor", "ceil",
                                           "trunc", "round", "rint", "nearbyint", "sin", "cos", "pow", "copysign",
                                           "roundeven", NULL};
  for (int i = 0; intrinsics[i]; ++i) {
    if (strcmp(name, intrinsics[i]) == 0) {
      char iname[40];
      snprintf(iname, sizeof iname, "llvm.%s", strcmp(name, "fabs") == 0 ? "fabs" : name);
      return hc_kb_intrinsic(kb, iname, t, args, nargs);
    }
  }
  char cname[40];
  snprintf(cname, sizeof cname, "%s%s", name, dbl ? "" : "f");
  return hc_kb_libm(kb, cname, t, args, nargs);
}

LLVMValueRef hc_kb_iadd(hc_kb* kb, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(kb->b, a, b, ""); }
LLVMValueRef hc_kb_imul(hc_kb* kb, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildMul(kb->b, a, b, ""); }
LLVMValueRef hc_kb_imin(hc_kb* kb, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(kb->b, LLVMBuildICmp(kb->b, LLVMIntSLT, a, b, ""), a, b, "");
}
LLVMValueRef hc_kb_imax(hc_kb* kb, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(kb->b, LLVMBuildICmp(kb->b, LLVMIntSGT, a, b, ""), a, b, "");
}

LLVMValueRef hc_loop_begin_step(hc_kb* kb, hc_loop* loop, LLVMValueRef lo, LLVMValueRef hi, int64_t step,
                                const char* name) {
  LLVMContextRef c = kb->lc->llctx;
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(kb->b);
  loop->header = LLVMAppendBasicBlockInContext(c, kb->fn, name ? name : "loop");
  loop->body = LLVMAppendBasicBlockInContext(c, kb->fn, "body");
  loop->exit = LLVMAppendBasicBlockInContext(c, kb->fn, "exit");
  loop->step = hc_kb_i64(kb, step);
  /* Guarded form: skip the loop entirely when empty, so the body's phi is
   * only entered with lo < hi (the rotated form LLVM's passes prefer). */
  LLVMValueRef enter = LLVMBuildICmp(kb->b, LLVMIntSLT, lo, hi, "");
  LLVMBuildCondBr(kb->b, enter, loop->header, loop->exit);
  LLVMPositionBuilderAtEnd(kb->b, loop->header);
  loop->iv = LLVMBuildPhi(kb->b, kb->t_i64, name ? name : "i");
  LLVMAddIncoming(loop->iv, &lo, &pre, 1);
  LLVMBuildBr(kb->b, loop->body);
  LLVMPositionBuilderAtEnd(kb->b, loop->body);
  loop->hi = hi;
  return loop->iv;
}

LLVMValueRef hc_loop_begin(hc_kb* kb, hc_loop* loop, LLVMValueRef lo, LLVMValueRef hi, const char* name) {
  return hc_loop_begin_step(kb, loop, lo, hi, 1, name);
}

static LLVMValueRef loop_close(hc_kb* kb, hc_loop* loop) {
  LLVMValueRef hi = loop->hi;
  LLVMBasicBlockRef cur = LLVMGetInsertBlock(kb->b);
  LLVMValueRef next = LLVMBuildAdd(kb->b, loop->iv, loop->step, "");
  LLVMSetNSW(next, 1);
  LLVMValueRef more = LLVMBuildICmp(kb->b, LLVMIntSLT, next, hi, "");
  LLVMValueRef br = LLVMBuildCondBr(kb->b, more, loop->header, loop->exit);
  LLVMAddIncoming(loop->iv, &next, &cur, 1);
  LLVMPositionBuilderAtEnd(kb->b, loop->exit);
  return br;
}

void hc_loop_end(hc_kb* kb, hc_loop* loop) { (void)loop_close(kb, loop); }

void hc_loop_step_by(hc_loop* loop, LLVMValueRef step) { loop->step = step; }

void hc_loop_end_rolled(hc_kb* kb, hc_loop* loop) {
  LLVMValueRef br = loop_close(kb, loop);
  LLVMContextRef c = kb->lc->llctx;
  static const char k_disable[] = "llvm.loop.unroll.disable";
  LLVMMetadataRef name = LLVMMDStringInContext2(c, k_disable, sizeof k_disable - 1);
  /* The loop ID: a node whose first operand is itself, then the property. */
  LLVMMetadataRef tmp = LLVMTemporaryMDNode(c, NULL, 0);
  LLVMMetadataRef ops[2] = {tmp, LLVMMDNodeInContext2(c, &name, 1)};
  LLVMMetadataRef id = LLVMMDNodeInContext2(c, ops, 2);
  LLVMMetadataReplaceAllUsesWith(tmp, id);
  LLVMSetMetadata(br, LLVMGetMDKindIDInContext(c, "llvm.loop", 9), LLVMMetadataAsValue(c, id));
}

void hc_loop_end_row(hc_kb* kb, hc_loop* loop, int64_t trip) {
  if (trip < HC_ROW_ROLLED)
    hc_loop_end_rolled(kb, loop);
  else
    hc_loop_end(kb, loop);
}

LLVMValueRef hc_kb_task_loop_begin(hc_kb* kb, hc_loop* loop) {
  return hc_loop_begin(kb, loop, kb->begin, kb->end, "task");
}

void hc_if_begin(hc_kb* kb, hc_if* s, LLVMValueRef cond) {
  s->then_bb = LLVMAppendBasicBlockInContext(kb->lc->llctx, kb->fn, "then");
  s->merge_bb = LLVMAppendBasicBlockInContext(kb->lc->llctx, kb->fn, "endif");
  LLVMBuildCondBr(kb->b, cond, s->then_bb, s->merge_bb);
  LLVMPositionBuilderAtEnd(kb->b, s->then_bb);
}

void hc_if_end(hc_kb* kb, hc_if* s) {
  LLVMBuildBr(kb->b, s->merge_bb);
  LLVMPositionBuilderAtEnd(kb->b, s->merge_bb);
}

LLVMValueRef hc_kb_alloca(hc_kb* kb, LLVMTypeRef type, const char* name) {
  LLVMBuilderRef tmp = LLVMCreateBuilderInContext(kb->lc->llctx);
  LLVMValueRef first = LLVMGetFirstInstruction(kb->entry);
  if (first)
    LLVMPositionBuilderBefore(tmp, first);
  else
    LLVMPositionBuilderAtEnd(tmp, kb->entry);
  LLVMValueRef a = LLVMBuildAlloca(tmp, type, name ? name : "");
  LLVMDisposeBuilder(tmp);
  /* Stack tiles and buffers on whole cache lines: a vector that straddles
   * two lines costs two accesses, and a stored accumulator tile is read
   * back at once (the heavy epilogues, transposed stores). */
  if (LLVMGetTypeKind(type) == LLVMArrayTypeKind && LLVMGetArrayLength2(type) >= 16) LLVMSetAlignment(a, 64);
  return a;
}

void hc_kb_memcpy(hc_kb* kb, LLVMValueRef dst, LLVMValueRef src, LLVMValueRef bytes) {
  LLVMBuildMemCpy(kb->b, dst, 1, src, 1, bytes);
}

LLVMValueRef hc_kb_prefix_mask(hc_kb* kb, unsigned lanes, unsigned valid) {
  LLVMValueRef bits[256];
  if (lanes > 256) lanes = 256;
  for (unsigned l = 0; l < lanes; ++l) bits[l] = LLVMConstInt(kb->t_i1, l < valid, 0);
  return LLVMConstVector(bits, lanes);
}

LLVMValueRef hc_kb_masked_load(hc_kb* kb, LLVMTypeRef vt, LLVMValueRef ptr, unsigned align, LLVMValueRef mask) {
  return hc_kb_masked_load_or(kb, vt, ptr, align, mask, LLVMConstNull(vt));
}

LLVMValueRef hc_kb_masked_load_or(hc_kb* kb, LLVMTypeRef vt, LLVMValueRef ptr, unsigned align, LLVMValueRef mask,
                                  LLVMValueRef passthru) {
  const char* name = "llvm.masked.load";
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMTypeRef tys[2] = {vt, kb->t_ptr};
  LLVMValueRef decl = LLVMGetIntrinsicDeclaration(kb->lc->mod, id, tys, 2);
  LLVMValueRef args[4] = {ptr, LLVMConstInt(kb->t_i32, align, 0), mask, passthru};
  return LLVMBuildCall2(kb->b, LLVMIntrinsicGetType(kb->lc->llctx, id, tys, 2), decl, args, 4, "");
}

void hc_kb_masked_store(hc_kb* kb, LLVMValueRef v, LLVMValueRef ptr, unsigned align, LLVMValueRef mask) {
  const char* name = "llvm.masked.store";
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMTypeRef tys[2] = {LLVMTypeOf(v), kb->t_ptr};
  LLVMValueRef decl = LLVMGetIntrinsicDeclaration(kb->lc->mod, id, tys, 2);
  LLVMValueRef args[4] = {v, ptr, LLVMConstInt(kb->t_i32, align, 0), mask};
  LLVMBuildCall2(kb->b, LLVMIntrinsicGetType(kb->lc->llctx, id, tys, 2), decl, args, 4, "");
}

bool hc_kb_plain_prefix_stores(const hc_kb* kb) { return kb->lc->target->vector_bits < 512; }

void hc_kb_prefix_store(hc_kb* kb, LLVMValueRef v, LLVMValueRef ptr, unsigned align, unsigned valid) {
  LLVMTypeRef vt = LLVMTypeOf(v);
  unsigned lanes = LLVMGetVectorSize(vt);
  if (valid >= lanes) {
    LLVMSetAlignment(LLVMBuildStore(kb->b, v, ptr), align);
    return;
  }
  if (!hc_kb_plain_prefix_stores(kb)) {
    hc_kb_masked_store(kb, v, ptr, align, hc_kb_prefix_mask(kb, lanes, valid));
    return;
  }
  LLVMTypeRef et = LLVMGetElementType(vt);
  unsigned at = 0;
  for (unsigned piece = lanes / 2; piece >= 1 && at < valid; piece /= 2) {
    if (valid - at < piece) continue;
    LLVMValueRef idx = LLVMConstInt(kb->t_i64, at, 0);
    LLVMValueRef dst = LLVMBuildGEP2(kb->b, et, ptr, &idx, 1, "");
    LLVMValueRef part;
    if (piece == 1) {
      part = LLVMBuildExtractElement(kb->b, v, LLVMConstInt(kb->t_i32, at, 0), "");
    } else {
      LLVMValueRef sel[128];
      for (unsigned i = 0; i < piece; ++i) sel[i] = LLVMConstInt(kb->t_i32, at + i, 0);
      part = LLVMBuildShuffleVector(kb->b, v, LLVMGetUndef(vt), LLVMConstVector(sel, piece), "");
    }
    LLVMSetAlignment(LLVMBuildStore(kb->b, part, dst), align);
    at += piece;
  }
}

void hc_kb_memset(hc_kb* kb, LLVMValueRef dst, int byte, LLVMValueRef bytes) {
  LLVMBuildMemSet(kb->b, dst, LLVMConstInt(kb->t_i8, (unsigned long long)byte, 0), bytes, 1);
}

void hc_strides(int rank, const int64_t* dims, int64_t* out) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    out[i] = s;
    s *= dims[i];
  }
}

LLVMValueRef hc_kb_const_table(hc_lower_ctx* lc, LLVMValueRef init, const char* name, unsigned align) {
  LLVMValueRef g = LLVMAddGlobal(lc->mod, LLVMTypeOf(init), name);
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  if (align) LLVMSetAlignment(g, align);
  return g;
}

hx_status_t hc_kb_emit_zero(hc_lower_ctx* lc, const hc_node* n, const hc_value* v) {
  hc_kb kb;
  HX_RETURN_IF_ERROR(hc_kb_begin(lc, n, "zero", 1, &kb));
  LLVMValueRef p = hc_kb_ptr(&kb, v);
  hc_loop task;
  hc_kb_task_loop_begin(&kb, &task);
  hc_kb_memset(&kb, p, 0, hc_kb_i64(&kb, (int64_t)hc_value_nbytes(v)));
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, 0, (double)hc_value_nbytes(v));
  return HX_OK;
}
