/* Converts LLVM's error conventions into hx_status_t (the one wrapper file
 * for LLVM errors). */
#ifndef HARNESS_CODEGEN_LLVM_UTIL_H
#define HARNESS_CODEGEN_LLVM_UTIL_H

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>

#include "harness/status.h"

/* Consumes an LLVMErrorRef; HX_OK if it is the success value. */
hx_status_t hc_llvm_error(LLVMErrorRef err, const char* what);
/* Consumes a message from LLVM (may be NULL) into a status of `code`. */
hx_status_t hc_llvm_message(char* message, hx_status_code_t code, const char* what);
/* Runs LLVM's verifier over a module; a failure is a Harness bug. */
hx_status_t hc_llvm_verify_module(LLVMModuleRef mod);

#endif /* HARNESS_CODEGEN_LLVM_UTIL_H */
