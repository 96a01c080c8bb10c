#!/usr/bin/env python3
"""Runs harness-test over the ONNX backend node tests whose ops are all in
the foundation operator set (docs/operators.md lists the full coverage).

    /usr/bin/python3 test/onnx_backend/run_foundation.py --harness-test build/bin/harness-test

A test is selected when every node's op is in FOUNDATION_OPS and every graph
input and output is a numeric tensor (string, sequence and optional values
are outside what an inference compiler takes), and it is not a training-mode
test. Exits non-zero if any selected test fails or is skipped, except the
tests listed with a reason in known_failures.txt (expected failures, kept
visible); a listed test that passes also fails the run, so the list only
shrinks.
"""
import argparse
import glob
import os
import subprocess
import sys

import onnx

FOUNDATION_OPS = set("""
Conv ConvTranspose Gemm MatMul Add Sub Mul Div Pow Sqrt Exp Log Abs Neg Reciprocal Erf Tanh Sigmoid Relu
LeakyRelu Clip HardSigmoid HardSwish BatchNormalization MaxPool AveragePool GlobalAveragePool Flatten Reshape
Transpose Concat Split Slice Squeeze Unsqueeze Gather Shape Constant Cast Identity Dropout Softmax ReduceMean
ReduceSum LayerNormalization Pad Expand Where Equal Less Greater Min Max ConstantOfShape Resize
""".split())

NODE_TESTS = "/usr/share/libonnx-testdata/data/node"
KNOWN_FAILURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "known_failures.txt")


def known_failures():
    known = {}
    for line in open(KNOWN_FAILURES):
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, why = line.partition(" ")
            known[name] = why.strip()
    return known


def numeric_tensor(vi):
    t = vi.type
    if not t.HasField("tensor_type"):
        return False
    return t.tensor_type.elem_type not in (onnx.TensorProto.STRING, onnx.TensorProto.UNDEFINED)


def selected(test_dir):
    m = onnx.load(os.path.join(test_dir, "model.onnx"), load_external_data=False)
    if os.path.basename(test_dir).startswith("test_training_"):
        return False
    ops = {n.op_type for n in m.graph.node}
    if not ops or not ops <= FOUNDATION_OPS:
        return False
    return all(numeric_tensor(v) for v in list(m.graph.input) + list(m.graph.output))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--harness-test", required=True)
    ap.add_argument("--tests", default=NODE_TESTS)
    ap.add_argument("-j", default=str(os.cpu_count() or 1))
    a = ap.parse_args()
    tests = [d for d in sorted(glob.glob(os.path.join(a.tests, "test_*"))) if selected(d)]
    print(f"{len(tests)} node tests use only foundation ops", flush=True)
    if not tests:
        print("no tests found; is libonnx-testdata installed?")
        return 1
    p = subprocess.run([a.harness_test, "-q", "-j", a.j] + tests, text=True, capture_output=True)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    known = known_failures()
    bad = []
    failed = set()
    for line in p.stdout.splitlines():
        if line.startswith(("FAIL ", "SKIP ")):
            name = line.split()[1].rstrip(":")
            failed.add(name)
            if name not in known:
                bad.append(line)
    fixed = [t for t in known if t not in failed and any(os.path.basename(d) == t for d in tests)]
    print(f"{len(failed)} known failures of {len(tests)} tests" if not bad else f"{len(bad)} unexpected failures")
    for t in fixed:
        print(f"known failure {t} now passes: remove it from {KNOWN_FAILURES}")
    summary = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    return 0 if not bad and not fixed and summary else 1


if __name__ == "__main__":
    sys.exit(main())
