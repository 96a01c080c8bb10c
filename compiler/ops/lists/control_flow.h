/* Ops: If, Loop, Scan (see op_list.h). */

/* control_flow.c: subgraph bodies compiled into branches and loops */
HC_OP(hc_op_if)
HC_OP(hc_op_loop)
HC_OP(hc_op_scan)
