/* The operator registry: one line per op descriptor, HC_OP(symbol), where
 * `symbol` is a const hc_op_desc defined in the op's family file. Lines are
 * grouped in one list file per area under compiler/ops/lists/ so that work
 * on different families never edits the same file. Included by registry.c
 * only. */
#include "compiler/ops/lists/foundation.h"
#include "compiler/ops/lists/elementwise.h"
#include "compiler/ops/lists/reduction.h"
#include "compiler/ops/lists/recurrent.h"
#include "compiler/ops/lists/signal.h"
#include "compiler/ops/lists/movement.h"
#include "compiler/ops/lists/pooling.h"
#include "compiler/ops/lists/quantization.h"
#include "compiler/ops/lists/control_flow.h"
#include "compiler/ops/lists/misc.h"
