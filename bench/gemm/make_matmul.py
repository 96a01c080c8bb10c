#!/usr/bin/env python3
"""Writes a one-node ONNX MatMul model for the SGEMM benchmark: input "A"
[M,K] float32 times a constant B [K,N] (random, seeded; a weight, as in a
model, so the compiler may pre-pack it) gives "C" [M,N].

    /usr/bin/python3 bench/gemm/make_matmul.py OUT.onnx M N K
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out, m, n, k = sys.argv[1], *map(int, sys.argv[2:5])
    b = np.random.default_rng(7).random((k, n), dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["A", "B"], ["C"], name="sgemm")], f"sgemm_{m}x{n}x{k}",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("C", TensorProto.FLOAT, [m, n])],
        [numpy_helper.from_array(b, "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, out)


if __name__ == "__main__":
    main()
