#!/usr/bin/python3
"""Error paths of If / Loop / Scan: each model below must fail to compile with
a message naming the node and the cause (and the --constant flag where one
would help).

usage: check_control_flow_errors.py BIN_DIR    (the folder holding harnessc)
Prints one line per case and exits non-zero if any case misbehaves.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import casekit
from casekit import vi

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def model(graph):
    """The error models all import opset 13."""
    return casekit.make_model(graph, 13)


def loop_body(nodes, carried, scans=()):
    ins = [vi('i', I64, []), vi('cond_in', BOOL, [])] + [vi(n + '_in', F32, None) for n in carried]
    outs = [vi('cond_out', BOOL, [])] + [vi(n + '_out', F32, None) for n in carried] + [vi(s, F32, None) for s in scans]
    return helper.make_graph(nodes, 'body', ins, outs)


def cases():
    c = {}
    # Loop-carried value that grows.
    body = loop_body([helper.make_node('Concat', ['x_in', 'x_in'], ['x_out'], axis=0),
                      helper.make_node('Identity', ['cond_in'], ['cond_out'])], ['x'])
    c['carried_grows'] = (model(helper.make_graph(
        [helper.make_node('Loop', ['M', '', 'x0'], ['x'], body=body)], 'g',
        [vi('M', I64, []), vi('x0', F32, [2])], [vi('x', F32, None)])),
        ['"Loop_0" (Loop', "loop-carried value 0 ('x_in') enters the body as float32[2] but leaves it as float32[4]"])
    # If branches of different shapes under a run-time condition.
    t = helper.make_graph([helper.make_node('Identity', ['a'], ['ta'])], 't', [], [vi('ta', F32, None)])
    e = helper.make_graph([helper.make_node('Identity', ['b'], ['eb'])], 'e', [], [vi('eb', F32, None)])
    c['if_shapes_differ'] = (model(helper.make_graph(
        [helper.make_node('If', ['c'], ['y'], then_branch=t, else_branch=e)], 'g',
        [vi('c', BOOL, []), vi('a', F32, [2]), vi('b', F32, [3])], [vi('y', F32, None)])),
        ['"If_0" (If', 'output 0 has shape 2 in then_branch but 3 in else_branch'])
    # A branch that is only valid for other input shapes, under a condition
    # computed from an integer input (Silero VAD's sample-rate If: its 8 kHz
    # branch cannot run a 16 kHz chunk): the message names the input to freeze.
    t = helper.make_graph([helper.make_node('MatMul', ['x', 'w16'], ['tv'])], 't', [], [vi('tv', F32, None)])
    e = helper.make_graph([helper.make_node('MatMul', ['x', 'w8'], ['ev'])], 'e', [], [vi('ev', F32, None)])
    c['if_branch_invalid_for_shapes'] = (model(helper.make_graph(
        [helper.make_node('Constant', [], ['k16'], value=numpy_helper.from_array(np.array(16000, np.int64))),
         helper.make_node('Equal', ['sr', 'k16'], ['is16']),
         helper.make_node('If', ['is16'], ['y'], then_branch=t, else_branch=e)], 'g',
        [vi('sr', I64, []), vi('x', F32, [1, 6])], [vi('y', F32, None)],
        [numpy_helper.from_array(np.ones((6, 2), np.float32), 'w16'),
         numpy_helper.from_array(np.ones((3, 2), np.float32), 'w8')])),
        ['"If_2" (If', "subgraph 'else_branch'", '(MatMul', "the If condition ('is16') is computed at run time from "
         "input 'sr'", '--constant sr=FILE.pb'])
    # Scan outputs of a Loop whose trip count is a run-time input.
    body = loop_body([helper.make_node('Identity', ['cond_in'], ['cond_out']),
                      helper.make_node('Identity', ['x_in'], ['x_out']),
                      helper.make_node('Neg', ['x_in'], ['s'])], ['x'], ['s'])
    c['scan_needs_m'] = (model(helper.make_graph(
        [helper.make_node('Loop', ['M', '', 'x0'], ['x', 'hist'], body=body)], 'g',
        [vi('M', I64, []), vi('x0', F32, [2])], [vi('x', F32, None), vi('hist', F32, None)])),
        ['"Loop_0" (Loop', "M ('M') is computed at run time", '--constant M=FILE.pb'])
    # Body needing the iteration number at compile time, M at run time.
    body = helper.make_graph([
        helper.make_node('Constant', [], ['ax'], value=numpy_helper.from_array(np.array([0], np.int64))),
        helper.make_node('Unsqueeze', ['i', 'ax'], ['st']),
        helper.make_node('Slice', ['x_in', 'st', 'st'], ['sl']),
        helper.make_node('Identity', ['x_in'], ['x_out']),
        helper.make_node('Identity', ['cond_in'], ['cond_out'])],
        'body', [vi('i', I64, []), vi('cond_in', BOOL, []), vi('x_in', F32, None)],
        [vi('cond_out', BOOL, []), vi('x_out', F32, None)])
    c['needs_iteration'] = (model(helper.make_graph(
        [helper.make_node('Loop', ['M', '', 'x0'], ['x'], body=body)], 'g',
        [vi('M', I64, []), vi('x0', F32, [4])], [vi('x', F32, None)])),
        ['"Slice_2" (Slice', 'compiles the body once per iteration', '--constant M=FILE.pb'])
    # If branch with a formal input.
    t = helper.make_graph([helper.make_node('Identity', ['p'], ['q'])], 't', [vi('p', F32, [2])], [vi('q', F32, None)])
    e = helper.make_graph([helper.make_node('Identity', ['a'], ['r'])], 'e', [], [vi('r', F32, None)])
    c['if_branch_inputs'] = (model(helper.make_graph(
        [helper.make_node('If', ['c'], ['y'], then_branch=t, else_branch=e)], 'g',
        [vi('c', BOOL, []), vi('a', F32, [2])], [vi('y', F32, None)])),
        ['"If_0" (If', 'then_branch has 1 inputs; If branches take none'])
    # Scan inputs of different sequence lengths.
    sb = helper.make_graph([helper.make_node('Add', ['s_in', 'u'], ['s0']), helper.make_node('Add', ['s0', 'v'], ['s_out'])],
                           'sb', [vi('s_in', F32, [2]), vi('u', F32, [2]), vi('v', F32, [2])], [vi('s_out', F32, None)])
    c['scan_lengths'] = (model(helper.make_graph(
        [helper.make_node('Scan', ['s', 'U', 'V'], ['y'], body=sb, num_scan_inputs=2)], 'g',
        [vi('s', F32, [2]), vi('U', F32, [3, 2]), vi('V', F32, [4, 2])], [vi('y', F32, None)])),
        ['"Scan_0" (Scan', 'different sequence lengths'])
    # A name no graph defines.
    body = loop_body([helper.make_node('Add', ['x_in', 'nowhere'], ['x_out']),
                      helper.make_node('Identity', ['cond_in'], ['cond_out'])], ['x'])
    c['undefined_name'] = (model(helper.make_graph(
        [helper.make_node('Loop', ['M', '', 'x0'], ['x'], body=body)], 'g',
        [vi('M', I64, []), vi('x0', F32, [2])], [vi('x', F32, None)])),
        ['"Loop_0" (Loop', "subgraph 'body'", "input 'nowhere' is not produced by any node, initializer or graph input of "
         "this subgraph or an enclosing graph"])
    # No trip count, no condition input, condition always true.
    body = helper.make_graph([
        helper.make_node('Constant', [], ['cond_out'], value=numpy_helper.from_array(np.array(True))),
        helper.make_node('Identity', ['x_in'], ['x_out'])],
        'body', [vi('i', I64, []), vi('cond_in', BOOL, []), vi('x_in', F32, None)],
        [vi('cond_out', BOOL, []), vi('x_out', F32, None)])
    c['never_ends'] = (model(helper.make_graph(
        [helper.make_node('Loop', ['', '', 'x0'], ['x'], body=body)], 'g', [vi('x0', F32, [2])], [vi('x', F32, None)])),
        ['"Loop_0" (Loop', 'the loop never ends'])
    # A value-dependent shape inside a body.
    body = loop_body([helper.make_node('NonZero', ['x_in'], ['nz']),
                      helper.make_node('Identity', ['x_in'], ['x_out']),
                      helper.make_node('Identity', ['cond_in'], ['cond_out'])], ['x'], ['nz'])
    c['dynamic_in_body'] = (model(helper.make_graph(
        [helper.make_node('Constant', [], ['M'], value=numpy_helper.from_array(np.array(2, np.int64))),
         helper.make_node('Loop', ['M', '', 'x0'], ['x', 'nzs'], body=body)], 'g',
        [vi('x0', F32, [2])], [vi('x', F32, None), vi('nzs', F32, None)])),
        ['"Loop_1" (Loop', 'value-dependent shape'])
    # Loop condition that is not a single bool.
    body = loop_body([helper.make_node('Identity', ['x_in'], ['x_out']),
                      helper.make_node('Identity', ['cond_in'], ['cond_out'])], ['x'])
    c['cond_type'] = (model(helper.make_graph(
        [helper.make_node('Loop', ['M', 'c', 'x0'], ['x'], body=body)], 'g',
        [vi('M', I64, []), vi('c', F32, []), vi('x0', F32, [2])], [vi('x', F32, None)])),
        ['"Loop_0" (Loop', "cond ('c') must be a single bool"])
    return c


def main():
    bin_dir, _ = casekit.command_line(__doc__, make_dir=False)
    harnessc = os.path.join(bin_dir, 'harnessc')
    bad = 0
    with tempfile.TemporaryDirectory(prefix='cf-errors-') as d:
        for name, (m, wants) in cases().items():
            path = os.path.join(d, name + '.onnx')
            onnx.save(m, path)
            p = subprocess.run([harnessc, path, '-o', os.path.join(d, name + '.so')], capture_output=True, text=True)
            msg = (p.stdout + p.stderr).strip()
            missing = [w for w in wants if w not in msg]
            ok = p.returncode != 0 and not missing
            bad += not ok
            print('%s %s%s' % ('PASS' if ok else 'FAIL', name, '' if ok else ': rc=%d, missing %s in: %s' % (
                p.returncode, missing, msg)))
    print('%d of %d error cases behave' % (len(cases()) - bad, len(cases())))
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
