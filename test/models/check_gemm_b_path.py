"""Checks that the conv_pool cases named for how a 1x1 convolution's GEMM
reads x (compiler/ops/conv.c gemm_reads_x_in_place) take that path: with
--emit manifest at -O1 and -O3 for AVX2 (x86-64-v3) and AVX-512 (x86-64-v4),
a packed case has the run-time packing kernel (":packb") and a read-in-place
case has none. The rule depends on shapes only, so every target agrees.
harness-test checks their outputs (conv_pool_cases_*).

Usage: /usr/bin/python3 check_gemm_b_path.py --bin BUILD/bin CONV_POOL_CASES
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# case: whether x is packed into panels (else read in place)
CASES = {
    "conv_1x1_kib_planes_in_place": False,  # 72 output channels on 16x32 planes (2 KiB)
    "conv_1x1_kib_planes_packed": True,     # 136 output channels on the same planes
}


def kernel_names(harnessc, model, level, target):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "m.json")
        subprocess.run([harnessc, f"-O{level}", "--target", target, "--emit", "manifest", model, "-o", out],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return [k["name"] for k in json.load(f)["kernels"]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("cases")
    a = ap.parse_args()
    harnessc = os.path.join(a.bin, "harnessc")
    checks = bad = 0
    for case, packed in CASES.items():
        model = os.path.join(a.cases, case, "model.onnx")
        for target in ("x86-64-v3", "x86-64-v4"):
            for level in (1, 3):
                checks += 1
                names = kernel_names(harnessc, model, level, target)
                if any(n.endswith(":packb") for n in names) != packed:
                    bad += 1
                    print(f"FAIL {case} -O{level} {target}: want {'a' if packed else 'no'} :packb kernel, got {names}")
    print(f"{checks - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
