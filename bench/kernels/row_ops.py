#!/usr/bin/env python3
"""Row kernels at short and long rows, for one or more compilers: Softmax and
LayerNormalization as chains of 20 ops on 16384 float32 elements in rows of
N; a per-row scale (Mul by a [rows, 1] operand, as a squeeze-and-excitation
block scales its channel planes) and GlobalAveragePool over 131072
elements in rows (planes) of N, timed by the per-kernel profile.

    /usr/bin/python3 bench/kernels/row_ops.py --work DIR BUILD/bin/harnessc [OTHER/bin/harnessc ...]

Prints, per op and row length, each compiler's median latency of the chain
(harness-bench next to each harnessc, 1 thread, 500 runs) in microseconds
per op. This is the measurement behind hc_loop_end_row (kernel_builder.h):
LLVM unrolls a short row loop fully before vectorising it.
"""
import argparse
import json
import os
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROWS = (16, 32, 49, 64, 96, 128, 256)
CHAIN = 20


def model(op, n, path):
    rows = 16384 // n
    inits, nodes, x = [], [], "x"
    if op == "LayerNormalization":
        inits = [numpy_helper.from_array(np.ones(n, np.float32), "g"),
                 numpy_helper.from_array(np.zeros(n, np.float32), "b")]
    for i in range(CHAIN):
        ins = [x, "g", "b"] if op == "LayerNormalization" else [x]
        nodes.append(helper.make_node(op, ins, [f"y{i}"], axis=-1))
        x = f"y{i}"
    g = helper.make_graph(nodes, f"{op}_{n}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, n])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [rows, n])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def plane_model(n, path):
    """Relu (so that the scaled tensor is an intermediate, written in place),
    GlobalAveragePool of it and its per-row scale: [1, C, n] planes."""
    c = 131072 // n
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, n])
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Mul", ["r", "s"], ["y"])]
    g = helper.make_graph(nodes, f"planes_{n}", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, n]),
                          helper.make_tensor_value_info("g", TensorProto.FLOAT, [1, c, 1])],
                          [numpy_helper.from_array(np.full((1, c, 1), 0.5, np.float32), "s")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def kernel_us(harnessc, onnx_path, so, op):
    """Median time of the artifact's kernel of op `op` (--profile)."""
    subprocess.run([harnessc, onnx_path, "-O3", "-o", so], check=True)
    bench = os.path.join(os.path.dirname(harnessc), "harness-bench")
    out = subprocess.run([bench, so, "--iters", "500", "--json", "--profile"], check=True, capture_output=True,
                         text=True).stdout
    return next(k["median_us"] for k in json.loads(out)["profile"]["kernels"] if k["op"] == op)


def median_us(harnessc, onnx_path, so):
    subprocess.run([harnessc, onnx_path, "-O3", "-o", so], check=True)
    bench = os.path.join(os.path.dirname(harnessc), "harness-bench")
    out = subprocess.run([bench, so, "--iters", "500", "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["latency_ms"]["median"] * 1000.0 / CHAIN


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("harnessc", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    print("%-20s %5s " % ("op", "row") + " ".join("%12s" % f"us/op [{i}]" for i in range(len(a.harnessc))))
    for op in ("Softmax", "LayerNormalization"):
        for n in ROWS:
            path = os.path.join(a.work, f"{op}_{n}.onnx")
            model(op, n, path)
            t = [median_us(os.path.abspath(h), path, os.path.join(a.work, f"{op}_{n}_{i}.so"))
                 for i, h in enumerate(a.harnessc)]
            print("%-20s %5d " % (op, n) + " ".join("%12.2f" % v for v in t))
    for op in ("Mul", "GlobalAveragePool"):
        for n in ROWS:
            path = os.path.join(a.work, f"planes_{n}.onnx")
            plane_model(n, path)
            t = [kernel_us(os.path.abspath(h), path, os.path.join(a.work, f"planes_{n}_{i}.so"), op)
                 for i, h in enumerate(a.harnessc)]
            print("%-20s %5d " % (op, n) + " ".join("%12.2f" % v for v in t))


if __name__ == "__main__":
    main()
