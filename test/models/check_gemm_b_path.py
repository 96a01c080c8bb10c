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


def kernel_names(harnessc, model, level, target, flag="--target"):
    """The kernel names of model's manifest at -O<level> for `flag target`
    (--target x86-64-v3, --mcpu sapphirerapids...)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "m.json")
        subprocess.run([harnessc, f"-O{level}", flag, target, "--emit", "manifest", model, "-o", out],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return [k["name"] for k in json.load(f)["kernels"]]


def run_checks(doc, checks):
    """The command line both path checks share: --bin BUILD/bin CASES_DIR;
    checks(harnessc, cases_dir) yields (label, failure message or None)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("cases")
    a = ap.parse_args()
    total = bad = 0
    for label, failure in checks(os.path.join(a.bin, "harnessc"), a.cases):
        total += 1
        if failure:
            bad += 1
            print(f"FAIL {label}: {failure}")
    print(f"{total - bad} passed, {bad} failed")
    return 1 if bad else 0


def gemm_b_checks(harnessc, cases):
    for case, packed in CASES.items():
        model = os.path.join(cases, case, "model.onnx")
        for target in ("x86-64-v3", "x86-64-v4"):
            for level in (1, 3):
                names = kernel_names(harnessc, model, level, target)
                ok = any(n.endswith(":packb") for n in names) == packed
                yield (f"{case} -O{level} {target}",
                       None if ok else f"want {'a' if packed else 'no'} :packb kernel, got {names}")


if __name__ == "__main__":
    sys.exit(run_checks(__doc__, gemm_b_checks))
