#!/usr/bin/env python3
"""Writes one-layer 1x1 convolution models (Conv with bias, then Relu;
seeded random weights) for kernel A/B runs:

    /usr/bin/python3 bench/models/make_conv1x1.py OUT_DIR NxCxMxHxW ...

Each spec N x C x M x H x W (images, input channels, output channels,
plane) becomes OUT_DIR/conv1x1_<spec>.onnx with input "x" [N, C, H, W].
Compile each with two compilers (or two options) and compare them with
bench/compare/ab_rounds.py.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def write(path, n, c, m, h, w):
    rng = np.random.default_rng(1)
    weight = (rng.standard_normal((m, c, 1, 1)) / np.sqrt(c)).astype(np.float32)
    bias = rng.standard_normal((m,)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv"), helper.make_node("Relu", ["c"], ["y"], name="relu")],
        "conv1x1", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, h, w])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, m, h, w])],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for spec in sys.argv[2:]:
        write(os.path.join(out, f"conv1x1_{spec}.onnx"), *map(int, spec.split("x")))


if __name__ == "__main__":
    main()
