/* Compile-time evaluation of single nodes through ORC LLJIT. */
#include "compiler/backend/jit.h"

#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/codegen/llvm_util.h"
#include "compiler/ops/op.h"
#include "harness/artifact_abi.h"

/* Nodes whose operands total at most this many bytes are compiled without
 * optimisation: their code runs once, on little data. */
#define HC_JIT_SMALL_FOLD_BYTES (64u << 10)

static uint64_t fold_bytes(const hc_node* n) {
  uint64_t b = 0;
  for (int i = 0; i < n->num_inputs; ++i)
    if (n->inputs[i]) b += hc_value_nbytes(n->inputs[i]);
  for (int j = 0; j < n->num_outputs; ++j)
    if (n->outputs[j]) b += hc_value_nbytes(n->outputs[j]);
  return b;
}

hx_status_t hc_jit_eval_node(const hc_target* host, hc_graph* g, hc_node* n) {
  hc_llvm_init();
  hx_status_t st = HX_OK;
  uint64_t ws = n->op->workspace ? n->op->workspace(n) : 0;
  uint64_t saved_ws_offset = n->workspace_offset, saved_ws_bytes = n->workspace_bytes;
  void* workspace = NULL;

  /* Give every operand a base of its own, as if it were graph I/O (a
   * control-flow node's implicit inputs can be many). */
  size_t nio = (size_t)n->num_inputs + (size_t)n->num_outputs + 1;
  hc_storage* saved_in = calloc(nio, sizeof(hc_storage));
  hc_storage* saved_out = calloc(nio, sizeof(hc_storage));
  void** bases = calloc(HX_BASE_FIRST_IO + nio, sizeof(void*));
  void** out_data = calloc(nio, sizeof(void*));
  if (!saved_in || !saved_out || !bases || !out_data) {
    free(saved_in);
    free(saved_out);
    free(bases);
    free(out_data);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory folding node \"%s\"", n->name);
  }
  for (int i = 0; i < n->num_inputs; ++i) {
    hc_value* v = n->inputs[i];
    if (!v) continue;
    saved_in[i] = v->storage;
  }
  for (int i = 0; i < n->num_inputs; ++i) {
    hc_value* v = n->inputs[i];
    if (!v) continue;
    v->storage.base = HX_BASE_FIRST_IO + i;
    v->storage.offset = 0;
    bases[HX_BASE_FIRST_IO + i] = (void*)v->data;
  }
  for (int j = 0; j < n->num_outputs; ++j) {
    hc_value* v = n->outputs[j];
    if (!v) continue;
    saved_out[j] = v->storage;
    out_data[j] = hc_graph_alloc_data(g, hc_value_nbytes(v));
    if (!out_data[j]) {
      st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory folding node \"%s\"", n->name);
      goto restore;
    }
    v->storage.base = HX_BASE_FIRST_IO + n->num_inputs + j;
    v->storage.offset = 0;
    bases[HX_BASE_FIRST_IO + n->num_inputs + j] = out_data[j];
  }

  /* Scratch memory for ops that need it: the arena holds only the workspace. */
  if (ws) {
    workspace = aligned_alloc(64, (ws + 63) / 64 * 64);
    if (!workspace) {
      st = hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory folding node \"%s\"", n->name);
      goto restore;
    }
    n->workspace_offset = 0;
    n->workspace_bytes = ws;
    bases[HX_BASE_ARENA] = workspace;
  }

  {
    LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
    LLVMContextRef ctx = LLVMOrcThreadSafeContextGetContext(tsc);
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("harness_fold", ctx);
    hc_arena names;
    hc_arena_init(&names);
    hc_lower_ctx lc = {.llctx = ctx, .mod = mod, .target = host, .graph = g, .arena = &names};
    LLVMOrcLLJITRef jit = NULL;
    LLVMTargetMachineRef tm = NULL;
    bool module_owned = true;

    st = hc_op_lower(&lc, n);
    if (st == HX_OK) {
      for (int k = 0; k < lc.num_kernels; ++k) LLVMSetLinkage(lc.kernels[k].fn, LLVMExternalLinkage);
      st = hc_llvm_verify_module(mod);
    }
    /* The target machine lowers and then, handed to the JIT's builder,
     * generates the code: small nodes (the Shape -> Gather -> Concat chains
     * exporters emit by the thousand) skip the optimisation pipeline and use
     * the fast instruction selector, which is most of a fold's cost. */
    bool small = fold_bytes(n) <= HC_JIT_SMALL_FOLD_BYTES;
    if (st == HX_OK) st = hc_target_machine(host, small ? 0 : 2, &tm);
    if (st == HX_OK) {
      LLVMSetTarget(mod, host->triple);
      LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
      char* layout = LLVMCopyStringRepOfTargetData(td);
      LLVMSetDataLayout(mod, layout);
      LLVMDisposeMessage(layout);
      LLVMDisposeTargetData(td);
    }
    if (st == HX_OK && !small) {
      LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
      st = hc_llvm_error(LLVMRunPasses(mod, "default<O2>", tm, po), "LLVM optimisation failed");
      LLVMDisposePassBuilderOptions(po);
    }
    if (st == HX_OK) {
      LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
      LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
      tm = NULL; /* owned by the builder, which the JIT consumes */
      st = hc_llvm_error(LLVMOrcCreateLLJIT(&jit, builder), "cannot start the LLVM JIT");
    }
    if (st == HX_OK) {
      LLVMOrcDefinitionGeneratorRef gen = NULL;
      st = hc_llvm_error(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(jit), NULL, NULL),
                         "cannot expose process symbols to the JIT");
      if (st == HX_OK) LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(jit), gen);
    }
    if (st == HX_OK) {
      LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsc);
      module_owned = false;
      st = hc_llvm_error(LLVMOrcLLJITAddLLVMIRModule(jit, LLVMOrcLLJITGetMainJITDylib(jit), tsm), "JIT cannot add module");
    }
    for (int k = 0; st == HX_OK && k < lc.num_kernels; ++k) {
      LLVMOrcExecutorAddress addr = 0;
      st = hc_llvm_error(LLVMOrcLLJITLookup(jit, &addr, lc.kernels[k].symbol), "JIT cannot find a kernel");
      if (st != HX_OK) break;
      hx_abi_kernel_fn fn = (hx_abi_kernel_fn)(uintptr_t)addr;
      fn(bases, 0, lc.kernels[k].tasks);
    }
    if (tm) LLVMDisposeTargetMachine(tm);
    if (jit) LLVMOrcDisposeLLJIT(jit);
    if (module_owned) LLVMDisposeModule(mod);
    LLVMOrcDisposeThreadSafeContext(tsc);
    free(lc.kernels);
    hc_arena_release(&names);
  }

restore:
  free(workspace);
  n->workspace_offset = saved_ws_offset;
  n->workspace_bytes = saved_ws_bytes;
  for (int i = 0; i < n->num_inputs; ++i)
    if (n->inputs[i]) n->inputs[i]->storage = saved_in[i];
  for (int j = 0; j < n->num_outputs; ++j) {
    hc_value* v = n->outputs[j];
    if (!v) continue;
    v->storage = saved_out[j];
    if (st == HX_OK) {
      v->kind = HC_VALUE_CONST;
      v->data = out_data[j];
      v->producer = NULL;
    }
  }
  free(saved_in);
  free(saved_out);
  free(bases);
  free(out_data);
  return hx_status_annotate(st, "while evaluating node \"%s\" (%s) at compile time", n->name, n->op_type);
}
