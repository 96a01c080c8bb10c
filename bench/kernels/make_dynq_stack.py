#!/usr/bin/python3
"""A dynamically quantized stack, as ONNX Runtime's `quantize_dynamic` writes
one: four layers of DynamicQuantizeLinear -> MatMulInteger (constant int8
weights, zero point 0) -> Cast -> Mul by the two scales -> Relu, on a
1x128x256 float input, widths 256 -> 1024 -> 256 -> 1024 -> 256 (the
measurement behind MatMulInteger's byte path, docs/precision.md). With
--qlinear, the statically quantized form instead: QuantizeLinear, four
QLinearMatMul layers on uint8 activations (the same weights, per-column
scales), DequantizeLinear.

    /usr/bin/python3 bench/kernels/make_dynq_stack.py OUT.onnx [--qlinear]
    BUILD/bin/harnessc OUT.onnx -O3 -o dynq.so && BUILD/bin/kbench ./dynq.so --profile --iters 300
    node bench/kernels/ort_time.js OUT.onnx x=1x128x256 --threads 1 --iters 300
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def qlinear(rng):
    f32 = np.float32
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q0"])]
    inits = [numpy_helper.from_array(np.array(0.02, f32), "xs"), numpy_helper.from_array(np.array(128, np.uint8), "xz")]
    x, k = "q0", 256
    for i, n in enumerate([1024, 256, 1024, 256]):
        inits += [numpy_helper.from_array(rng.integers(-127, 128, (k, n)).astype(np.int8), f"w{i}"),
                  numpy_helper.from_array((rng.random(n) * 0.002 + 0.001).astype(f32), f"ws{i}"),
                  numpy_helper.from_array(np.zeros(n, np.int8), f"wz{i}"),
                  numpy_helper.from_array(np.array(0.05, f32), f"ys{i}"),
                  numpy_helper.from_array(np.array(128, np.uint8), f"yz{i}")]
        a_s, a_z = ("xs", "xz") if i == 0 else (f"ys{i - 1}", f"yz{i - 1}")
        nodes.append(helper.make_node("QLinearMatMul", [x, a_s, a_z, f"w{i}", f"ws{i}", f"wz{i}", f"ys{i}", f"yz{i}"],
                                      [f"q{i + 1}"]))
        x, k = f"q{i + 1}", n
    nodes.append(helper.make_node("DequantizeLinear", [x, "ys3", "yz3"], ["y"]))
    return nodes, inits, "y"


def main():
    rng = np.random.default_rng(0)
    if "--qlinear" in sys.argv[2:]:
        nodes, inits, x = qlinear(rng)
        save(nodes, inits, x)
        return
    nodes, inits = [], []
    x, k = "x", 256
    for i, n in enumerate([1024, 256, 1024, 256]):
        inits += [numpy_helper.from_array(rng.integers(-127, 128, (k, n)).astype(np.int8), f"w{i}"),
                  numpy_helper.from_array(np.array(0, np.int8), f"wz{i}"),
                  numpy_helper.from_array(np.array(0.01, np.float32), f"ws{i}")]
        nodes += [helper.make_node("DynamicQuantizeLinear", [x], [f"q{i}", f"s{i}", f"z{i}"]),
                  helper.make_node("MatMulInteger", [f"q{i}", f"w{i}", f"z{i}", f"wz{i}"], [f"mi{i}"]),
                  helper.make_node("Cast", [f"mi{i}"], [f"mf{i}"], to=TensorProto.FLOAT),
                  helper.make_node("Mul", [f"s{i}", f"ws{i}"], [f"sc{i}"]),
                  helper.make_node("Mul", [f"mf{i}", f"sc{i}"], [f"y{i}"]),
                  helper.make_node("Relu", [f"y{i}"], [f"r{i}"])]
        x, k = f"r{i}", n
    save(nodes, inits, x)


def save(nodes, inits, out):
    graph = helper.make_graph(nodes, "dynq_stack", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 128, 256])],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, 128, 256])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, sys.argv[1])


if __name__ == "__main__":
    main()
