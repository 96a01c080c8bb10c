#!/usr/bin/env python3
"""Generates the bundled example model: a small image classifier.

examples/tiny_cnn.onnx takes a 1x3x32x32 image and returns 10 class
probabilities: Conv-BatchNorm-Relu-MaxPool, Conv-Relu, GlobalAveragePool,
Flatten, Gemm, Softmax. Weights are deterministic pseudo-random numbers, so
the file (and the artifact compiled from it) is reproducible. Also writes
tiny_cnn_input.pb, a fixed input image.

Run with Debian's python3 (python3-onnx, python3-numpy):
    /usr/bin/python3 examples/make_example.py [OUTDIR]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(20261129)

    def w(name, *shape, scale=0.2):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [
        w("conv1.w", 16, 3, 3, 3), w("conv1.b", 16, scale=0.05),
        numpy_helper.from_array((1 + 0.1 * rng.standard_normal(16)).astype(np.float32), "bn1.scale"),
        w("bn1.bias", 16, scale=0.1), w("bn1.mean", 16, scale=0.1),
        numpy_helper.from_array((0.5 + rng.random(16)).astype(np.float32), "bn1.var"),
        w("conv2.w", 32, 16, 3, 3, scale=0.1), w("conv2.b", 32, scale=0.05),
        w("fc.w", 10, 32, scale=0.3), w("fc.b", 10, scale=0.05),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "conv1.w", "conv1.b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn1.scale", "bn1.bias", "bn1.mean", "bn1.var"], ["b1"],
                         name="bn1", epsilon=1e-5),
        helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.w", "conv2.b"], ["c2"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "tiny_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="harness-example")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "tiny_cnn.onnx"))
    image = rng.random((1, 3, 32, 32), dtype=np.float32)
    with open(os.path.join(out, "tiny_cnn_input.pb"), "wb") as f:
        f.write(numpy_helper.from_array(image, "image").SerializeToString())


if __name__ == "__main__":
    main()
