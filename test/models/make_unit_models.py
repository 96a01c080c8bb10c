#!/usr/bin/env python3
"""Builds the small ONNX models the unit tests compile, valid and broken.

    /usr/bin/python3 test/models/make_unit_models.py OUTDIR

Each model exercises one path of the importer, the passes or the CLI; the
C tests refer to them by file name (see test/support/test_support.h).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(nodes, inputs, outputs, inits=(), opset=13, name="m"):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def vi(name, shape, dt=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dt, shape)


def arr(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)

    def save(m, fname):
        onnx.save(m, os.path.join(out, fname))

    # y = relu(x + b): the basic end-to-end model.
    add_relu = model([helper.make_node("Add", ["x", "b"], ["s"], name="add0"),
                      helper.make_node("Relu", ["s"], ["y"], name="relu0")],
                     [vi("x", [2, 3])], [vi("y", [2, 3])], [arr("b", np.array([1, -2, 3], np.float32))])
    save(add_relu, "add_relu.onnx")

    # y = x W with 3 MiB of weights: large enough for the runtime to move
    # them into huge pages at load (runtime/weights_memory.c). The weights
    # are multiples of 1/64 (small sums are exact in any order); session_test
    # computes the same formula.
    i, j = np.meshgrid(np.arange(1024), np.arange(768), indexing="ij")
    w = (((i * 7 + j * 13) % 17) - 8).astype(np.float32) / 64
    save(model([helper.make_node("MatMul", ["x", "W"], ["y"], name="mm0")], [vi("x", [1, 1024])], [vi("y", [1, 768])],
               [arr("W", w)]), "big_weights.onnx")
    data = add_relu.SerializeToString()
    with open(os.path.join(out, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    with open(os.path.join(out, "not_onnx.onnx"), "w") as f:
        f.write("this is not an ONNX model\n" * 4)

    save(model([helper.make_node("FooBar", ["x"], ["y"], name="mystery")], [vi("x", [2])], [vi("y", [2])]),
         "unknown_op.onnx")

    bad = arr("b", np.array([1, 2, 3], np.float32))
    bad.dims[:] = [4]
    save(model([helper.make_node("Add", ["x", "b"], ["y"], name="add0")], [vi("x", [4])], [vi("y", [4])], [bad]),
         "bad_initializer.onnx")

    save(model([helper.make_node("LeakyRelu", ["x"], ["y"], name="lrelu", alpha=0.1, beta=2.0)],
               [vi("x", [3])], [vi("y", [3])]), "bad_attribute.onnx")

    save(model([helper.make_node("Relu", ["x"], ["y"], name="relu0")],
               [vi("x", ["batch", 3])], [vi("y", ["batch", 3])]), "symbolic.onnx")

    # Two nodes feeding each other.
    save(model([helper.make_node("Add", ["x", "b2"], ["a1"], name="loop_a"),
                helper.make_node("Relu", ["a1"], ["b2"], name="loop_b"),
                helper.make_node("Identity", ["a1"], ["y"], name="out")],
               [vi("x", [2])], [vi("y", [2])]), "cycle.onnx")

    # Weights in an external file.
    ext = model([helper.make_node("Mul", ["x", "w"], ["y"], name="mul0")], [vi("x", [4])], [vi("y", [4])],
                [arr("w", np.array([1, 2, 3, 4], np.float32))])
    onnx.save_model(ext, os.path.join(out, "external.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="external.bin", size_threshold=0)

    # Shape-computing subgraph: y = reshape(x, concat(shape(x)[0], -1)).
    save(model([helper.make_node("Shape", ["x"], ["sh"], name="shape0"),
                helper.make_node("Slice", ["sh", "zero", "one"], ["n"], name="slice0"),
                helper.make_node("Concat", ["n", "minus1"], ["target"], name="concat0", axis=0),
                helper.make_node("Reshape", ["x", "target"], ["r"], name="reshape0"),
                helper.make_node("Exp", ["r"], ["y"], name="exp0")],
               [vi("x", [2, 3, 4])], [vi("y", [2, 12])],
               [arr("zero", np.array([0], np.int64)), arr("one", np.array([1], np.int64)),
                arr("minus1", np.array([-1], np.int64))]), "shape_subgraph.onnx")

    # Outputs that need copies: an input, a constant, a view, a duplicate.
    save(model([helper.make_node("Reshape", ["x", "shape"], ["v"], name="view0"),
                helper.make_node("Neg", ["x"], ["n"], name="neg0")],
               [vi("x", [2, 3])], [vi("x", [2, 3]), vi("c", [2]), vi("v", [3, 2]), vi("n", [2, 3]), vi("n", [2, 3])],
               [arr("shape", np.array([3, 2], np.int64)), arr("c", np.array([7, 8], np.float32))]),
         "output_copies.onnx")

    # Constant folding + dead code: y = x * (c1 + c2); an unused branch.
    save(model([helper.make_node("Add", ["c1", "c2"], ["c3"], name="fold_me"),
                helper.make_node("Mul", ["x", "c3"], ["y"], name="mul0"),
                helper.make_node("Exp", ["x"], ["dead"], name="unused")],
               [vi("x", [4])], [vi("y", [4])],
               [arr("c1", np.array([1, 2, 3, 4], np.float32)), arr("c2", np.array([1, 1, 1, 1], np.float32))]),
         "fold_dce.onnx")

    # Per-channel scales before 1x1 convolutions (passes/fold_channel_scale.c):
    # mul1 (scale first) folds into conv1's weights; mul2's product has a
    # second use and stays; mul3's constant scale becomes conv3's constant
    # weights.
    w1 = np.full((4, 8, 1, 1), 0.5, np.float32)
    w2 = np.full((4, 8, 1, 1), 0.25, np.float32)
    save(model([helper.make_node("Relu", ["x"], ["r"], name="relu0"),
                helper.make_node("Mul", ["s", "r"], ["e1"], name="mul1"),
                helper.make_node("Conv", ["e1", "w1"], ["y1"], name="conv1"),
                helper.make_node("Mul", ["r", "s"], ["e2"], name="mul2"),
                helper.make_node("Conv", ["e2", "w2"], ["y2"], name="conv2"),
                helper.make_node("Neg", ["e2"], ["y3"], name="neg0"),
                helper.make_node("Mul", ["r", "c3"], ["e3"], name="mul3"),
                helper.make_node("Conv", ["e3", "w2"], ["y4"], name="conv3")],
               [vi("x", [1, 8, 20, 20]), vi("s", [1, 8, 1, 1])],
               [vi("y1", [1, 4, 20, 20]), vi("y2", [1, 4, 20, 20]), vi("y3", [1, 8, 20, 20]), vi("y4", [1, 4, 20, 20])],
               [arr("w1", w1), arr("w2", w2), arr("c3", np.arange(1, 9, dtype=np.float32).reshape(1, 8, 1, 1))]),
         "channel_scale.onnx")

    # A chain for memory planning: x -> a -> b -> c -> y, tensors can share.
    nodes = []
    prev = "x"
    for i in range(6):
        nodes.append(helper.make_node("Sigmoid" if i % 2 else "Exp", [prev], [f"t{i}"], name=f"n{i}"))
        prev = f"t{i}"
    nodes.append(helper.make_node("Add", [prev, "t2"], ["y"], name="join"))
    save(model(nodes, [vi("x", [64, 64])], [vi("y", [64, 64])]), "chain.onnx")

    # Several problems at once, for `harnessc check`.
    save(model([helper.make_node("FooBar", ["x"], ["a"], name="mystery"),
                helper.make_node("LeakyRelu", ["a"], ["b"], name="lrelu", beta=1.0),
                helper.make_node("Relu", ["b"], ["y"], name="relu0")],
               [vi("x", ["batch", 3])], [vi("y", ["batch", 3])]), "three_problems.onnx")

    # Mixed dtypes through Cast and comparisons.
    save(model([helper.make_node("Cast", ["x"], ["xi"], name="cast0", to=TensorProto.INT32),
                helper.make_node("Greater", ["xi", "thr"], ["mask"], name="gt0"),
                helper.make_node("Where", ["mask", "x", "zero"], ["y"], name="where0")],
               [vi("x", [5])], [vi("y", [5])],
               [arr("thr", np.array([1], np.int32)), arr("zero", np.array([0], np.float32))]), "cast_where.onnx")

    # A miniature backend-test tree for harness-test: one test that passes,
    # one whose expected output is wrong, one with an unsupported op.
    def suite_case(name, m, inputs, outputs):
        d = os.path.join(out, "suite", name)
        os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
        onnx.save(m, os.path.join(d, "model.onnx"))
        for i, (n, a) in enumerate(inputs):
            with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())
        for i, (n, a) in enumerate(outputs):
            with open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())

    # Four MatMul+Relu blocks of one shape with different weights: the
    # middle two (arena to arena) compile to one shared kernel body.
    rng = np.random.default_rng(7)
    xs = rng.standard_normal((4, 64)).astype(np.float32)
    ws = [(rng.standard_normal((64, 64)) / 8).astype(np.float32) for _ in range(4)]
    nodes, h = [], "x"
    ref = xs
    for i in range(4):
        nodes += [helper.make_node("MatMul", [h, f"w{i}"], [f"m{i}"], name=f"mm{i}"),
                  helper.make_node("Relu", [f"m{i}"], [f"h{i}" if i < 3 else "y"], name=f"relu{i}")]
        h = f"h{i}"
        ref = np.maximum(ref @ ws[i], 0)
    repeated = model(nodes, [vi("x", [4, 64])], [vi("y", [4, 64])], [arr(f"w{i}", w) for i, w in enumerate(ws)])
    save(repeated, "repeated_blocks.onnx")
    d = os.path.join(out, "shared_bodies", "test_repeated_blocks")
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(repeated, os.path.join(d, "model.onnx"))
    for kind, n, a in (("input", "x", xs), ("output", "y", ref)):
        with open(os.path.join(d, "test_data_set_0", f"{kind}_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())

    # A stride-2, 2x2 ConvTranspose: its four output phases have one tap
    # each, so their kernels share one body. Padded: without padding,
    # canonicalize makes a kernel-equals-stride ConvTranspose a 1x1 Conv and
    # DepthToSpace instead.
    save(model([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1],
                                 name="up")],
               [vi("x", [1, 8, 6, 5])], [vi("y", [1, 4, 10, 8])],
               [arr("w", rng.standard_normal((8, 4, 2, 2)).astype(np.float32)),
                arr("b", rng.standard_normal(4).astype(np.float32))]), "convt_phases.onnx")

    x = np.array([[-2, -1, 0], [1, 2, 3]], np.float32)
    y = np.maximum(x + np.array([1, -2, 3], np.float32), 0)
    suite_case("test_good", add_relu, [("x", x)], [("y", y)])
    suite_case("test_wrong_expectation", add_relu, [("x", x)], [("y", y + 1)])
    suite_case("test_unsupported", model([helper.make_node("FooBar", ["x"], ["y"], name="mystery")],
                                         [vi("x", [2])], [vi("y", [2])]),
               [("x", np.zeros(2, np.float32))], [("y", np.zeros(2, np.float32))])


if __name__ == "__main__":
    main()
