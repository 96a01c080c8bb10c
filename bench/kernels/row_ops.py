#!/usr/bin/env python3
"""Row kernels (Softmax, LayerNormalization) at short and long rows: chains of
20 ops on 16384 float32 elements in rows of N, for one or more compilers.

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


if __name__ == "__main__":
    main()
