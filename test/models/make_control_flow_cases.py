#!/usr/bin/python3
"""Extra If / Loop / Scan cases the ONNX backend suite does not cover.

usage: make_control_flow_cases.py OUT_DIR

Writes one ONNX backend-style test folder per case under OUT_DIR
(model.onnx + test_data_set_N/{input_i.pb,output_i.pb}); run them with
`harness-test OUT_DIR`. Expected outputs come from plain numpy re-implementations
of each model written next to it here, not from any backend.

Cases: If with a run-time condition (both branches, outputs that are outer
values), If with a constant condition (inlined), If nested in a Loop body
reading a value two levels up, Loop with scan outputs and early exit through
its condition (value-dependent scan-output length), Loop-carried values that
swap (staging), while loop without trip count, body with a constant
subgraph (folded), Loop whose body needs the iteration number at compile time
(compiled per iteration), nested Loop/Scan, Scan with reverse directions and
non-zero axes, Scan-8 with sequence_lens and batch, all-constant control
flow (folded at compile time), int32 / int64 / float16 / bool values.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import casekit
from casekit import vi

F32, I64, I32, F16, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.FLOAT16, TensorProto.BOOL
NP = {F32: np.float32, I64: np.int64, I32: np.int32, F16: np.float16, BOOL: np.bool_}


def const(name, arr):
    return helper.make_node('Constant', [], [name], value=numpy_helper.from_array(np.asarray(arr), name))


def write(out_dir, name, graph, opset, sets):
    """sets: list of (inputs list, outputs list) numpy arrays, in graph order."""
    m = casekit.make_model(graph, opset, producer='make_control_flow_cases', ir_version=8 if opset >= 13 else 6)
    onnx.checker.check_model(m)
    data = [([casekit.to_tensor(v.name, a) for v, a in zip(graph.input, ins)],
             [casekit.to_tensor(v.name, a) for v, a in zip(graph.output, outs)]) for ins, outs in sets]
    casekit.write_folder(out_dir, name, m, data)


def case_if_runtime(out):
    # then: x * 2 + y ; else: x - y. Outer values captured by both branches.
    then_g = helper.make_graph([
        const('two', np.float32(2)),
        helper.make_node('Mul', ['x', 'two'], ['t0']),
        helper.make_node('Add', ['t0', 'y'], ['t_out']),
    ], 'then_g', [], [vi('t_out', F32, [2, 3])])
    else_g = helper.make_graph([helper.make_node('Sub', ['x', 'y'], ['e_out'])], 'else_g', [], [vi('e_out', F32, [2, 3])])
    g = helper.make_graph([helper.make_node('If', ['c'], ['r'], then_branch=then_g, else_branch=else_g),
                           helper.make_node('Relu', ['r'], ['z'])], 'if_runtime',
                          [vi('c', BOOL, []), vi('x', F32, [2, 3]), vi('y', F32, [2, 3])], [vi('z', F32, [2, 3])])
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3)).astype(np.float32)
    sets = [([np.array(True), x, y], [np.maximum(x * 2 + y, 0)]), ([np.array(False), x, y], [np.maximum(x - y, 0)])]
    write(out, 'cf_if_runtime', g, 13, sets)


def case_if_outer_outputs(out):
    # Branches return outer values directly, one output twice, plus a computed one; float16.
    then_g = helper.make_graph([helper.make_node('Neg', ['a'], ['na'])], 'then_g', [],
                               [vi('a', F16, [4]), vi('na', F16, [4]), vi('a', F16, [4])])
    else_g = helper.make_graph([helper.make_node('Add', ['a', 'b'], ['s'])], 'else_g', [],
                               [vi('b', F16, [4]), vi('s', F16, [4]), vi('s', F16, [4])])
    g = helper.make_graph([helper.make_node('If', ['c'], ['o0', 'o1', 'o2'], then_branch=then_g, else_branch=else_g)],
                          'if_outer', [vi('c', BOOL, [1]), vi('a', F16, [4]), vi('b', F16, [4])],
                          [vi('o0', F16, [4]), vi('o1', F16, [4]), vi('o2', F16, [4])])
    a = np.array([1, -2, 3.5, 0.25], np.float16)
    b = np.array([0.5, 2, -1, 4], np.float16)
    sets = [([np.array([True]), a, b], [a, -a, a]), ([np.array([False]), a, b], [b, a + b, a + b])]
    write(out, 'cf_if_outer_outputs_f16', g, 13, sets)


def case_if_const(out):
    # Constant condition: the then branch is inlined (no If left after shape inference).
    then_g = helper.make_graph([helper.make_node('Relu', ['x'], ['r']), helper.make_node('Mul', ['r', 'x'], ['t'])],
                               'then_g', [], [vi('t', F32, [5])])
    else_g = helper.make_graph([helper.make_node('Neg', ['x'], ['e'])], 'else_g', [], [vi('e', F32, [5])])
    g = helper.make_graph([const('c', np.array(True)),
                           helper.make_node('If', ['c'], ['y'], then_branch=then_g, else_branch=else_g)],
                          'if_const', [vi('x', F32, [5])], [vi('y', F32, [5])])
    x = np.array([-1, 2, -3, 4, 0.5], np.float32)
    write(out, 'cf_if_const_inlined', g, 11, [([x], [np.maximum(x, 0) * x])])


def case_if_in_loop(out):
    # Loop M=4: cond_i = (i % 2 == 0); acc = If(cond_i, acc + x, acc * w); scan acc.
    # x is a top-level input read inside the If branch (two levels up).
    then_g = helper.make_graph([helper.make_node('Add', ['acc_in', 'x'], ['t'])], 'then_g', [], [vi('t', F32, [3])])
    else_g = helper.make_graph([helper.make_node('Mul', ['acc_in', 'w'], ['e'])], 'else_g', [], [vi('e', F32, [3])])
    body = helper.make_graph([
        const('two', np.int64(2)), const('zero', np.int64(0)),
        helper.make_node('Mod', ['i', 'two'], ['m']),
        helper.make_node('Equal', ['m', 'zero'], ['even']),
        helper.make_node('If', ['even'], ['acc_out'], then_branch=then_g, else_branch=else_g),
        helper.make_node('Identity', ['cond_in'], ['cond_out']),
        helper.make_node('Identity', ['acc_out'], ['scan']),
    ], 'loop_body', [vi('i', I64, []), vi('cond_in', BOOL, []), vi('acc_in', F32, [3])],
        [vi('cond_out', BOOL, []), vi('acc_out', F32, [3]), vi('scan', F32, [3])])
    g = helper.make_graph([const('M', np.int64(4)), const('cond', np.array(True)),
                           helper.make_node('Loop', ['M', 'cond', 'a0'], ['a', 'hist'], body=body)],
                          'if_in_loop', [vi('a0', F32, [3]), vi('x', F32, [3]), vi('w', F32, [3])],
                          [vi('a', F32, [3]), vi('hist', F32, [4, 3])])
    a0 = np.array([1, 2, 3], np.float32)
    x = np.array([0.5, -1, 2], np.float32)
    w = np.array([2, 0.5, -1], np.float32)
    acc, hist = a0.copy(), []
    for i in range(4):
        acc = acc + x if i % 2 == 0 else acc * w
        hist.append(acc)
    write(out, 'cf_if_in_loop_capture2', g, 13, [([a0, x, w], [acc, np.stack(hist)])])


def case_loop_early_exit(out):
    # M=10, s += x each iteration, cond_out = s < limit (limit a run-time input):
    # the scan output's length is value-dependent (upper bound 10).
    body = helper.make_graph([
        helper.make_node('Add', ['s_in', 'x'], ['s_out']),
        helper.make_node('Less', ['s_out', 'limit'], ['lt']),
        helper.make_node('Cast', ['lt'], ['lt_f'], to=F32),
        helper.make_node('ReduceMin', ['lt_f'], ['lt_min'], keepdims=0),
        helper.make_node('Cast', ['lt_min'], ['cond_out'], to=BOOL),
        helper.make_node('Identity', ['s_out'], ['scan']),
    ], 'loop_body', [vi('i', I64, []), vi('cond_in', BOOL, []), vi('s_in', F32, [2])],
        [vi('cond_out', BOOL, []), vi('s_out', F32, [2]), vi('scan', F32, [2])])
    g = helper.make_graph([const('M', np.int64(10)), const('cond', np.array(True)),
                           helper.make_node('Loop', ['M', 'cond', 's0'], ['s', 'hist'], body=body)],
                          'loop_early_exit', [vi('s0', F32, [2]), vi('x', F32, [2]), vi('limit', F32, [2])],
                          [vi('s', F32, [2]), vi('hist', F32, ['n', 2])])
    sets = []
    for limit in (np.array([7, 9], np.float32), np.array([100, 100], np.float32), np.array([-5, 1], np.float32)):
        s0 = np.array([0, 1], np.float32)
        x = np.array([2, 2], np.float32)
        s, hist, cond = s0.copy(), [], True
        for i in range(10):
            if not cond:
                break
            s = s + x
            hist.append(s)
            cond = bool(np.all(s < limit))
        sets.append(([s0, x, limit], [s, np.stack(hist).astype(np.float32)]))
    write(out, 'cf_loop_early_exit_dynamic', g, 13, sets)


def case_loop_swap(out):
    # Fibonacci-like swap a, b = b, a + b; c passes through; int32 and int64 states.
    body = helper.make_graph([
        helper.make_node('Add', ['a_in', 'b_in'], ['ab']),
        helper.make_node('Identity', ['b_in'], ['a_out']),
        helper.make_node('Identity', ['c_in'], ['c_out']),
        helper.make_node('Identity', ['cond_in'], ['cond_out']),
    ], 'loop_body', [vi('i', I64, []), vi('cond_in', BOOL, []), vi('a_in', I32, [2]), vi('b_in', I32, [2]),
                     vi('c_in', I64, [3])],
        [vi('cond_out', BOOL, []), vi('a_out', I32, [2]), vi('ab', I32, [2]), vi('c_out', I64, [3])])
    g = helper.make_graph([helper.make_node('Loop', ['M', '', 'a0', 'b0', 'c0'], ['a', 'b', 'c'], body=body)],
                          'loop_swap', [vi('M', I64, []), vi('a0', I32, [2]), vi('b0', I32, [2]), vi('c0', I64, [3])],
                          [vi('a', I32, [2]), vi('b', I32, [2]), vi('c', I64, [3])])
    sets = []
    for M in (0, 1, 7):
        a, b = np.array([0, 5], np.int32), np.array([1, 3], np.int32)
        c = np.array([9, 8, 7], np.int64)
        a0, b0 = a.copy(), b.copy()
        for _ in range(M):
            a, b = b, a + b
        sets.append(([np.array(M, np.int64), a0, b0, c], [a, b, c]))
    write(out, 'cf_loop_swap_runtime_m', g, 11, sets)


def case_loop_while(out):
    # No trip count: while (cond) { k += 1; p *= 2; cond = k < n } with n a run-time input.
    body = helper.make_graph([
        const('one', np.int64(1)),
        helper.make_node('Add', ['k_in', 'one'], ['k_out']),
        helper.make_node('Add', ['p_in', 'p_in'], ['p_out']),
        helper.make_node('Less', ['k_out', 'n'], ['cond_out']),
    ], 'loop_body', [vi('i', I64, []), vi('cond_in', BOOL, []), vi('k_in', I64, []), vi('p_in', F32, [2])],
        [vi('cond_out', BOOL, []), vi('k_out', I64, []), vi('p_out', F32, [2])])
    g = helper.make_graph([helper.make_node('Loop', ['', 'go', 'k0', 'p0'], ['k', 'p'], body=body)],
                          'loop_while', [vi('go', BOOL, []), vi('k0', I64, []), vi('p0', F32, [2]), vi('n', I64, [])],
                          [vi('k', I64, []), vi('p', F32, [2])])
    sets = []
    for go, n in ((True, 5), (False, 5), (True, -3)):
        k, p, cond = np.int64(0), np.array([1, -0.5], np.float32), go
        p0 = p.copy()
        while cond:
            k = k + 1
            p = p + p
            cond = k < n
        sets.append(([np.array(go), np.array(0, np.int64), p0, np.array(n, np.int64)], [np.array(k, np.int64), p]))
    write(out, 'cf_loop_while', g, 13, sets)


def case_loop_const_body(out):
    # Body with a constant subgraph (Constant -> Mul -> Add folds to 5) and scan output = incoming value.
    body = helper.make_graph([
        const('k', np.float32(2)),
        helper.make_node('Mul', ['k', 'k'], ['kk']),
        const('one', np.float32(1)),
        helper.make_node('Add', ['kk', 'one'], ['k5']),
        helper.make_node('Mul', ['s_in', 'k5'], ['s_out']),
        helper.make_node('Identity', ['s_in'], ['prev']),
        helper.make_node('Identity', ['cond_in'], ['cond_out']),
    ], 'loop_body', [vi('i', I64, []), vi('cond_in', BOOL, []), vi('s_in', F32, [2, 2])],
        [vi('cond_out', BOOL, []), vi('s_out', F32, [2, 2]), vi('prev', F32, [2, 2])])
    g = helper.make_graph([const('M', np.int64(3)),
                           helper.make_node('Loop', ['M', '', 's0'], ['s', 'hist'], body=body)],
                          'loop_const_body', [vi('s0', F32, [2, 2])], [vi('s', F32, [2, 2]), vi('hist', F32, [3, 2, 2])])
    s0 = np.array([[1, 2], [3, -4]], np.float32)
    hist = np.stack([s0, s0 * 5, s0 * 25])
    write(out, 'cf_loop_const_body_folded', g, 13, [([s0], [s0 * 125, hist])])


def case_loop_specialised(out):
    # Slice starts from the iteration number (needs it at compile time): compiled per iteration.
    # The condition is computed (early exit possible), so the scan output is value-dependent.
    body = helper.make_graph([
        const('one', np.int64(1)), const('ax', np.array([0], np.int64)),
        helper.make_node('Add', ['i', 'one'], ['i1']),
        helper.make_node('Unsqueeze', ['i', 'ax'], ['st']),
        helper.make_node('Unsqueeze', ['i1', 'ax'], ['en']),
        helper.make_node('Slice', ['table', 'st', 'en'], ['row']),
        helper.make_node('Add', ['acc_in', 'row'], ['acc_out']),
        helper.make_node('ReduceSum', ['acc_out'], ['tot'], keepdims=0),
        helper.make_node('Less', ['tot', 'cap'], ['cond_out']),
        helper.make_node('Identity', ['row'], ['seen']),
    ], 'loop_body', [vi('i', I64, []), vi('cond_in', BOOL, []), vi('acc_in', F32, [1, 3])],
        [vi('cond_out', BOOL, []), vi('acc_out', F32, [1, 3]), vi('seen', F32, [1, 3])])
    g = helper.make_graph([const('M', np.int64(5)), const('cond', np.array(True)),
                           helper.make_node('Loop', ['M', 'cond', 'acc0'], ['acc', 'rows'], body=body)],
                          'loop_specialised', [vi('acc0', F32, [1, 3]), vi('table', F32, [5, 3]), vi('cap', F32, [])],
                          [vi('acc', F32, [1, 3]), vi('rows', F32, ['n', 1, 3])], value_info=[])
    table = np.arange(15, dtype=np.float32).reshape(5, 3)
    sets = []
    for cap in (np.float32(1000), np.float32(20)):
        acc, rows, cond = np.zeros((1, 3), np.float32), [], True
        for i in range(5):
            if not cond:
                break
            row = table[i:i + 1]
            acc = acc + row
            rows.append(row)
            cond = bool(acc.sum() < cap)
        sets.append(([np.zeros((1, 3), np.float32), table, np.array(cap, np.float32)], [acc, np.stack(rows)]))
    write(out, 'cf_loop_specialised_slice', g, 13, sets)


def case_nested_loops(out):
    # Outer Loop (M=3) whose body runs a Scan over the rows of a top-level input
    # (captured two levels up) and an inner Loop (M=2); outer scan collects results.
    scan_body = helper.make_graph([
        helper.make_node('Mul', ['row', 'scale_in'], ['r2']),
        helper.make_node('Add', ['sum_in', 'r2'], ['sum_out']),
        helper.make_node('Add', ['sum_out', 'bias'], ['emit']),
    ], 'scan_body', [vi('sum_in', F32, [2]), vi('row', F32, [2])], [vi('sum_out', F32, [2]), vi('emit', F32, [2])])
    inner_body = helper.make_graph([
        helper.make_node('Mul', ['v_in', 'v_in'], ['v_out']),
        helper.make_node('Identity', ['c_in'], ['c_out']),
    ], 'inner_body', [vi('j', I64, []), vi('c_in', BOOL, []), vi('v_in', F32, [2])],
        [vi('c_out', BOOL, []), vi('v_out', F32, [2])])
    outer_body = helper.make_graph([
        helper.make_node('Cast', ['i'], ['fi'], to=F32),
        helper.make_node('Add', ['fi', 'one_f'], ['scale_in']),
        helper.make_node('Scan', ['zero2', 'rows'], ['tot', 'emits'], body=scan_body, num_scan_inputs=1),
        helper.make_node('Loop', ['two', 'tru', 'tot'], ['sq'], body=inner_body),
        helper.make_node('Add', ['acc_in', 'sq'], ['acc_out']),
        helper.make_node('Identity', ['cond_in'], ['cond_out']),
    ], 'outer_body', [vi('i', I64, []), vi('cond_in', BOOL, []), vi('acc_in', F32, [2])],
        [vi('cond_out', BOOL, []), vi('acc_out', F32, [2]), vi('emits', F32, [4, 2])])
    g = helper.make_graph([
        const('M', np.int64(3)), const('one_f', np.float32(1)), const('zero2', np.zeros(2, np.float32)),
        const('two', np.int64(2)), const('tru', np.array(True)),
        helper.make_node('Loop', ['M', '', 'acc0'], ['acc', 'all_emits'], body=outer_body),
    ], 'nested_loops', [vi('acc0', F32, [2]), vi('rows', F32, [4, 2]), vi('bias', F32, [2])],
        [vi('acc', F32, [2]), vi('all_emits', F32, [3, 4, 2])])
    rows = np.array([[0.5, 1], [1, -1], [0.25, 0.5], [-0.5, 0]], np.float32)
    bias = np.array([0.1, -0.2], np.float32)
    acc, all_emits = np.array([1, 1], np.float32), []
    for i in range(3):
        scale = np.float32(i + 1)
        s, emits = np.zeros(2, np.float32), []
        for r in rows:
            s = s + r * scale
            emits.append(s + bias)
        v = s
        for _ in range(2):
            v = v * v
        acc = acc + v
        all_emits.append(np.stack(emits))
    write(out, 'cf_nested_loop_scan_loop', g, 13, [([np.array([1, 1], np.float32), rows, bias], [acc, np.stack(all_emits)])])


def case_scan_axes(out):
    # Scan-11: x [2,4,3] scanned on axis 1 in reverse, y [4,2,3] on axis 0 forward;
    # state s [2,3]; outputs: s per step on axis 2 in reverse, x element on axis 0, y element on axis -1.
    body = helper.make_graph([
        helper.make_node('Mul', ['xt', 'yt'], ['p']),
        helper.make_node('Add', ['s_in', 'p'], ['s_out']),
        helper.make_node('Identity', ['s_out'], ['o1']),
        helper.make_node('Identity', ['xt'], ['o2']),
        helper.make_node('Neg', ['yt'], ['o3']),
    ], 'scan_body', [vi('s_in', F32, [2, 3]), vi('xt', F32, [2, 3]), vi('yt', F32, [2, 3])],
        [vi('s_out', F32, [2, 3]), vi('o1', F32, [2, 3]), vi('o2', F32, [2, 3]), vi('o3', F32, [2, 3])])
    node = helper.make_node('Scan', ['s0', 'x', 'y'], ['s', 'out1', 'out2', 'out3'], body=body, num_scan_inputs=2,
                            scan_input_axes=[1, 0], scan_input_directions=[1, 0],
                            scan_output_axes=[2, 0, -1], scan_output_directions=[1, 0, 0])
    g = helper.make_graph([node], 'scan_axes', [vi('s0', F32, [2, 3]), vi('x', F32, [2, 4, 3]), vi('y', F32, [4, 2, 3])],
                          [vi('s', F32, [2, 3]), vi('out1', F32, [2, 3, 4]), vi('out2', F32, [4, 2, 3]),
                           vi('out3', F32, [2, 3, 4])])
    rng = np.random.default_rng(3)
    s0 = rng.standard_normal((2, 3)).astype(np.float32)
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    y = rng.standard_normal((4, 2, 3)).astype(np.float32)
    T = 4
    s = s0.copy()
    o1, o2, o3 = [None] * T, [None] * T, [None] * T
    for t in range(T):
        xt = x[:, T - 1 - t, :]
        yt = y[t]
        s = s + xt * yt
        o1[T - 1 - t] = s
        o2[t] = xt
        o3[t] = -yt
    out1 = np.stack(o1, axis=2)
    out2 = np.stack(o2, axis=0)
    out3 = np.stack(o3, axis=2)
    write(out, 'cf_scan_reverse_axes', g, 11, [([s0, x, y], [s, out1, out2, out3])])


def case_scan8(out):
    # Scan-8: batch 2, sequence 4, sequence_lens [3, 1], scan input reversed; two states
    # that swap (staging) and an int64 counter state.
    body = helper.make_graph([
        helper.make_node('Add', ['a_in', 'xt'], ['ax']),
        helper.make_node('Identity', ['a_in'], ['b_out']),
        const('one', np.int64(1)),
        helper.make_node('Add', ['n_in', 'one'], ['n_out']),
        helper.make_node('Identity', ['ax'], ['emit']),
    ], 'scan_body', [vi('a_in', F32, [3]), vi('b_in', F32, [3]), vi('n_in', I64, []), vi('xt', F32, [3])],
        [vi('b_in', F32, [3]), vi('ax', F32, [3]), vi('n_out', I64, []), vi('emit', F32, [3])])
    # a_out = b_in, b_out = a_in + xt ... written as outputs (a_out=b_in, b_out=ax)
    node = helper.make_node('Scan', ['lens', 'a0', 'b0', 'n0', 'x'], ['a', 'b', 'n', 'emits'], body=body, num_scan_inputs=1,
                            directions=[1])
    g = helper.make_graph([node], 'scan8',
                          [vi('lens', I64, [2]), vi('a0', F32, [2, 3]), vi('b0', F32, [2, 3]), vi('n0', I64, [2]),
                           vi('x', F32, [2, 4, 3])],
                          [vi('a', F32, [2, 3]), vi('b', F32, [2, 3]), vi('n', I64, [2]), vi('emits', F32, [2, 4, 3])])
    rng = np.random.default_rng(5)
    a0 = rng.standard_normal((2, 3)).astype(np.float32)
    b0 = rng.standard_normal((2, 3)).astype(np.float32)
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    n0 = np.array([10, 20], np.int64)
    lens = np.array([3, 1], np.int64)
    A, B, Nn, E = np.zeros_like(a0), np.zeros_like(b0), np.zeros_like(n0), np.zeros_like(x)
    for bi in range(2):
        a, b, n = a0[bi].copy(), b0[bi].copy(), n0[bi]
        L = lens[bi]
        for t in range(L):
            xt = x[bi, L - 1 - t]
            a, b = b, a + xt
            n = n + 1
            E[bi, t] = b
        A[bi], B[bi], Nn[bi] = a, b, n
    write(out, 'cf_scan8_seqlens_batch', g, 8, [([lens, a0, b0, n0, x], [A, B, Nn, E])])


def case_all_const(out):
    # Loop and Scan whose inputs are all constants: evaluated at compile time.
    body = helper.make_graph([
        helper.make_node('Add', ['s_in', 's_in'], ['s_out']),
        helper.make_node('Identity', ['cond_in'], ['cond_out']),
        helper.make_node('Identity', ['s_out'], ['h']),
    ], 'loop_body', [vi('i', I64, []), vi('cond_in', BOOL, []), vi('s_in', I32, [2])],
        [vi('cond_out', BOOL, []), vi('s_out', I32, [2]), vi('h', I32, [2])])
    sbody = helper.make_graph([helper.make_node('Add', ['acc_in', 'e'], ['acc_out']),
                               helper.make_node('Identity', ['acc_out'], ['o'])], 'scan_body',
                              [vi('acc_in', I32, [2]), vi('e', I32, [2])], [vi('acc_out', I32, [2]), vi('o', I32, [2])])
    g = helper.make_graph([
        const('M', np.int64(4)), const('s0', np.array([1, -1], np.int32)),
        helper.make_node('Loop', ['M', '', 's0'], ['s', 'h'], body=body),
        helper.make_node('Scan', ['s0', 'h'], ['tot', 'run'], body=sbody, num_scan_inputs=1),
        helper.make_node('Mul', ['tot', 'x'], ['y']),
    ], 'all_const', [vi('x', I32, [2])], [vi('s', I32, [2]), vi('run', I32, [4, 2]), vi('y', I32, [2])])
    s0 = np.array([1, -1], np.int32)
    h = np.stack([s0 * 2, s0 * 4, s0 * 8, s0 * 16])
    run = np.cumsum(h, axis=0).astype(np.int32) + s0
    x = np.array([3, 5], np.int32)
    write(out, 'cf_all_const_folded', g, 13, [([x], [s0 * 16, run, run[-1] * x])])


def case_bool_if(out):
    # If producing bool and int64 outputs from computed conditions (opset 1 form).
    then_g = helper.make_graph([helper.make_node('Not', ['f'], ['nf']), helper.make_node('Identity', ['k'], ['kk'])],
                               'then_g', [], [vi('nf', BOOL, [3]), vi('kk', I64, [2])])
    else_g = helper.make_graph([helper.make_node('Identity', ['f'], ['ff']), helper.make_node('Neg', ['k'], ['nk'])],
                               'else_g', [], [vi('ff', BOOL, [3]), vi('nk', I64, [2])])
    g = helper.make_graph([
        helper.make_node('ReduceSum', ['k'], ['ks'], keepdims=0),
        const('zero', np.int64(0)),
        helper.make_node('Greater', ['ks', 'zero'], ['c']),
        helper.make_node('If', ['c'], ['o', 'q'], then_branch=then_g, else_branch=else_g),
    ], 'bool_if', [vi('f', BOOL, [3]), vi('k', I64, [2])], [vi('o', BOOL, [3]), vi('q', I64, [2])])
    f = np.array([True, False, True])
    sets = [([f, np.array([3, -1], np.int64)], [~f, np.array([3, -1], np.int64)]),
            ([f, np.array([-3, 1], np.int64)], [f, np.array([3, -1], np.int64)])]
    write(out, 'cf_if_bool_int64', g, 11, sets)


def case_scan_rnn(out):
    # The spec's RNN-through-Scan: body initializers Wi, Ri, b (hoisted into the
    # model's weights); H_t = Tanh(X_t Wi + H_{t-1} Ri + b); Y all states.
    rng = np.random.default_rng(7)
    Wi = rng.standard_normal((3, 4)).astype(np.float32) * 0.5
    Ri = rng.standard_normal((4, 4)).astype(np.float32) * 0.5
    b = rng.standard_normal((4,)).astype(np.float32) * 0.1
    body = helper.make_graph([
        helper.make_node('MatMul', ['xt', 'Wi'], ['t1']),
        helper.make_node('MatMul', ['h_in', 'Ri'], ['t2']),
        helper.make_node('Add', ['t1', 't2'], ['t3']),
        helper.make_node('Add', ['t3', 'b'], ['t4']),
        helper.make_node('Tanh', ['t4'], ['h_out']),
        helper.make_node('Identity', ['h_out'], ['y']),
    ], 'rnn_cell', [vi('h_in', F32, [2, 4]), vi('xt', F32, [2, 3])], [vi('h_out', F32, [2, 4]), vi('y', F32, [2, 4])],
        initializer=[numpy_helper.from_array(Wi, 'Wi'), numpy_helper.from_array(Ri, 'Ri'), numpy_helper.from_array(b, 'b')])
    g = helper.make_graph([helper.make_node('Scan', ['h0', 'X'], ['h', 'Y'], body=body, num_scan_inputs=1)], 'scan_rnn',
                          [vi('h0', F32, [2, 4]), vi('X', F32, [5, 2, 3])], [vi('h', F32, [2, 4]), vi('Y', F32, [5, 2, 4])])
    h0 = rng.standard_normal((2, 4)).astype(np.float32)
    X = rng.standard_normal((5, 2, 3)).astype(np.float32)
    h, Y = h0, []
    for t in range(5):
        h = np.tanh(X[t] @ Wi + h @ Ri + b)
        Y.append(h)
    write(out, 'cf_scan_rnn_body_initializers', g, 16, [([h0, X], [h, np.stack(Y)])])


def case_cf_in_if(out):
    # A run-time If whose then branch runs a Loop (M=3, doubling x) and whose else
    # branch runs a Scan (running sum of x's rows); both read x from outside.
    loop_body = helper.make_graph([helper.make_node('Add', ['v_in', 'v_in'], ['v_out']),
                                   helper.make_node('Identity', ['c_in'], ['c_out'])], 'lb',
                                  [vi('j', I64, []), vi('c_in', BOOL, []), vi('v_in', F32, [3, 2])],
                                  [vi('c_out', BOOL, []), vi('v_out', F32, [3, 2])])
    scan_body = helper.make_graph([helper.make_node('Add', ['s_in', 'r'], ['s_out']),
                                   helper.make_node('Identity', ['s_out'], ['e'])], 'sb',
                                  [vi('s_in', F32, [2]), vi('r', F32, [2])], [vi('s_out', F32, [2]), vi('e', F32, [2])])
    then_g = helper.make_graph([const('M3', np.int64(3)), helper.make_node('Loop', ['M3', '', 'x'], ['lx'], body=loop_body)],
                               'then_g', [], [vi('lx', F32, [3, 2])])
    else_g = helper.make_graph([const('z2', np.zeros(2, np.float32)),
                                helper.make_node('Scan', ['z2', 'x'], ['tot', 'run'], body=scan_body, num_scan_inputs=1)],
                               'else_g', [], [vi('run', F32, [3, 2])])
    g = helper.make_graph([helper.make_node('If', ['c'], ['y'], then_branch=then_g, else_branch=else_g)], 'cf_in_if',
                          [vi('c', BOOL, []), vi('x', F32, [3, 2])], [vi('y', F32, [3, 2])])
    x = np.array([[1, 2], [3, 4], [-5, 0.5]], np.float32)
    write(out, 'cf_loop_scan_in_if', g, 13,
          [([np.array(True), x], [x * 8]), ([np.array(False), x], [np.cumsum(x, axis=0).astype(np.float32)])])


def case_loop_specialised_init(out):
    # Per-iteration compilation with a body initializer (shared by the copies)
    # and Gather with the iteration number (fine at run time) next to Slice.
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    body = helper.make_graph([
        const('ax', np.array([0], np.int64)), const('one', np.int64(1)),
        helper.make_node('Add', ['i', 'one'], ['i1']),
        helper.make_node('Unsqueeze', ['i', 'ax'], ['st']),
        helper.make_node('Unsqueeze', ['i1', 'ax'], ['en']),
        helper.make_node('Slice', ['tab', 'st', 'en'], ['row']),
        helper.make_node('Gather', ['tab', 'i'], ['g']),
        helper.make_node('Mul', ['row', 'g'], ['rg']),
        helper.make_node('Add', ['acc_in', 'rg'], ['acc_out']),
        helper.make_node('Identity', ['cond_in'], ['cond_out']),
    ], 'loop_body', [vi('i', I64, []), vi('cond_in', BOOL, []), vi('acc_in', F32, [1, 3])],
        [vi('cond_out', BOOL, []), vi('acc_out', F32, [1, 3])],
        initializer=[numpy_helper.from_array(table, 'tab')])
    g = helper.make_graph([helper.make_node('Loop', ['M', '', 'acc0'], ['acc'], body=body)], 'loop_spec_init',
                          [vi('M', I64, []), vi('acc0', F32, [1, 3])], [vi('acc', F32, [1, 3])])
    acc = np.ones((1, 3), np.float32)
    for i in range(4):
        acc = acc + table[i:i + 1] * table[i]
    write(out, 'cf_loop_specialised_initializer', g, 13, [([np.array(4, np.int64), np.ones((1, 3), np.float32)], [acc])])


def case_if_sample_rate(out):
    # A run-time condition from an integer input whose else branch cannot run
    # with the compiled shapes (Silero VAD's 8 kHz branch under a 16 kHz
    # chunk): Harness refuses it naming the input, and harness-test then
    # freezes sr from the data set, which compiles only the branch taken.
    then_g = helper.make_graph([helper.make_node('MatMul', ['x', 'w16'], ['tv'])], 'then_g', [], [vi('tv', F32, None)])
    else_g = helper.make_graph([helper.make_node('MatMul', ['x', 'w8'], ['ev'])], 'else_g', [], [vi('ev', F32, None)])
    rng = np.random.default_rng(7)
    w16 = rng.standard_normal((6, 2)).astype(np.float32)
    w8 = rng.standard_normal((3, 2)).astype(np.float32)
    g = helper.make_graph([const('k16', np.array(16000, np.int64)),
                           helper.make_node('Equal', ['sr', 'k16'], ['is16']),
                           helper.make_node('If', ['is16'], ['y'], then_branch=then_g, else_branch=else_g)],
                          'if_sample_rate', [vi('sr', I64, []), vi('x', F32, [1, 6])], [vi('y', F32, [1, 2])],
                          [numpy_helper.from_array(w16, 'w16'), numpy_helper.from_array(w8, 'w8')])
    x = rng.standard_normal((1, 6)).astype(np.float32)
    write(out, 'cf_if_sample_rate', g, 13, [([np.array(16000, np.int64), x], [x @ w16])])


def main():
    out = casekit.out_dir(__doc__)
    for f in (case_if_runtime, case_if_outer_outputs, case_if_const, case_if_in_loop, case_loop_early_exit,
              case_loop_swap, case_loop_while, case_loop_const_body, case_loop_specialised, case_nested_loops,
              case_scan_axes, case_scan8, case_all_const, case_bool_if, case_scan_rnn, case_cf_in_if,
              case_loop_specialised_init, case_if_sample_rate):
        f(out)
    print('wrote %d cases to %s' % (len(os.listdir(out)), out))


if __name__ == '__main__':
    main()
