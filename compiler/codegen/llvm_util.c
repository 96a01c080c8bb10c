/* LLVM error conversion. */
#include "compiler/codegen/llvm_util.h"

#include <llvm-c/Analysis.h>
#include <stddef.h>

hx_status_t hc_llvm_error(LLVMErrorRef err, const char* what) {
  if (!err) return HX_OK;
  char* msg = LLVMGetErrorMessage(err);
  hx_status_t st = hx_status_make(HX_STATUS_INTERNAL, "%s: %s", what, msg ? msg : "unknown LLVM error");
  LLVMDisposeErrorMessage(msg);
  return st;
}

hx_status_t hc_llvm_message(char* message, hx_status_code_t code, const char* what) {
  hx_status_t st = hx_status_make(code, "%s: %s", what, message ? message : "unknown LLVM error");
  if (message) LLVMDisposeMessage(message);
  return st;
}

hx_status_t hc_llvm_verify_module(LLVMModuleRef mod) {
  char* msg = NULL;
  if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg))
    return hc_llvm_message(msg, HX_STATUS_INTERNAL, "generated LLVM IR is invalid (a Harness bug)");
  if (msg) LLVMDisposeMessage(msg);
  return HX_OK;
}
