/* Compile-time evaluation: runs a node's own generated kernels on constant
 * inputs through LLVM's ORC JIT. Constant folding therefore uses exactly the
 * code the artifact would run, so every op has one implementation. */
#ifndef HARNESS_BACKEND_JIT_H
#define HARNESS_BACKEND_JIT_H

#include "compiler/backend/target.h"
#include "ir/graph.h"

/* Evaluates node n, whose present inputs are all constants, on the host and
 * makes each present output a constant owned by the graph. */
hx_status_t hc_jit_eval_node(const hc_target* host, hc_graph* g, hc_node* n);

#endif /* HARNESS_BACKEND_JIT_H */
