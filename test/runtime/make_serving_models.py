#!/usr/bin/env python3
"""Builds the ONNX models the scheduling and batching tests compile.

    /usr/bin/python3 test/runtime/make_serving_models.py OUTDIR

branches.onnx       an Inception-like block: one input fans out into four
                    independent element-wise branches that a Concat joins,
                    plus a second output read from one branch (parallel groups).
lanes.onnx          three independent branches of four ops each, most with their
                    own kernels (Softmax), joined by a Concat: tensors of one
                    branch can share bytes in order while the branches run as
                    concurrent lanes (lane-aware memory planning).
batchable.onnx      two inputs sharing a symbolic batch dimension N.
batch_static.onnx   a batch dimension fixed to 1 by the model (--batch overrides it).
batch_mismatch.onnx inputs leading with different symbolic dimensions.
batch_transposed.onnx an output whose leading dimension is not the batch.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(nodes, inputs, outputs, inits=(), name="m"):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def arr(name, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), name)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)

    def save(m, fname):
        onnx.save(m, os.path.join(out, fname))

    n = helper.make_node
    # x -> relu -> {sigmoid*2, tanh+1, neg->exp, abs} -> concat; z = exp branch + 1.
    save(model([n("Relu", ["x"], ["r"], name="stem"),
                n("Sigmoid", ["r"], ["a1"], name="b1_sigmoid"), n("Mul", ["a1", "two"], ["a2"], name="b1_scale"),
                n("Tanh", ["r"], ["b1"], name="b2_tanh"), n("Add", ["b1", "one"], ["b2"], name="b2_shift"),
                n("Neg", ["r"], ["c1"], name="b3_neg"), n("Exp", ["c1"], ["c2"], name="b3_exp"),
                n("Abs", ["r"], ["d1"], name="b4_abs"),
                n("Concat", ["a2", "b2", "c2", "d1"], ["y"], name="join", axis=1),
                n("Add", ["c2", "one"], ["z"], name="head")],
               [vi("x", [4, 4096])], [vi("y", [4, 16384]), vi("z", [4, 4096])],
               [arr("two", [2.0]), arr("one", [1.0])], name="branches"), "branches.onnx")

    # x -> relu -> {softmax, neg, softmax, abs | sigmoid, softmax, tanh, softmax | exp, softmax, softmax, neg}
    # -> concat. Softmax over rows of 4096.
    lanes = [("a", ["Softmax", "Neg", "Softmax", "Abs"]), ("b", ["Sigmoid", "Softmax", "Tanh", "Softmax"]),
             ("c", ["Exp", "Softmax", "Softmax", "Neg"])]
    nodes = [n("Relu", ["x"], ["r"], name="stem")]
    for lane, ops in lanes:
        prev = "r"
        for i, op in enumerate(ops):
            value = f"{lane}{i + 1}"
            attrs = {"axis": 1} if op == "Softmax" else {}
            nodes.append(n(op, [prev], [value], name=f"{lane}{i + 1}_{op.lower()}", **attrs))
            prev = value
    nodes.append(n("Concat", ["a4", "b4", "c4"], ["y"], name="join", axis=1))
    save(model(nodes, [vi("x", [4, 4096])], [vi("y", [4, 3 * 4096])], name="lanes"), "lanes.onnx")

    save(model([n("Mul", ["x", "w"], ["xw"], name="scale"), n("Add", ["xw", "s"], ["t"], name="add_s"),
                n("Relu", ["t"], ["y"], name="relu")],
               [vi("x", ["N", 8]), vi("s", ["N", 8])], [vi("y", ["N", 8])],
               [arr("w", np.arange(8) - 3.5)], name="batchable"), "batchable.onnx")

    save(model([n("Mul", ["x", "w"], ["y"], name="scale")], [vi("x", [1, 8])], [vi("y", [1, 8])],
               [arr("w", np.arange(8))], name="batch_static"), "batch_static.onnx")

    save(model([n("Add", ["x", "s"], ["y"], name="add")], [vi("x", ["N", 8]), vi("s", ["M", 8])],
               [vi("y", ["N", 8])], name="batch_mismatch"), "batch_mismatch.onnx")

    save(model([n("Transpose", ["x"], ["y"], name="flip", perm=[1, 0])], [vi("x", ["N", 3])], [vi("y", [3, "N"])],
               name="batch_transposed"), "batch_transposed.onnx")


if __name__ == "__main__":
    main()
