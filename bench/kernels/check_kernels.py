#!/usr/bin/env python3
"""Compiles the models of make_kernel_models.py (written with --check) and
compares Harness's outputs with the numpy/torch references; optionally
times each with kbench.

    /usr/bin/python3 bench/kernels/check_kernels.py --bin BUILD/bin --dir OUTDIR
        [--flags "-O3 --target x86-64-v3"] [--time] [--threads N] [--only NAME ...]

Prints one line per model: max abs error, max error relative to the
output's scale, and with --time the kbench median and GFLOP/s (from the
compiler's flops estimate of the whole model).
"""
import argparse
import glob
import os
import re
import subprocess
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--flags", default="-O3")
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args()
    failures = 0
    for path in sorted(glob.glob(os.path.join(a.dir, "*.onnx"))):
        name = os.path.basename(path)[:-5]
        if a.only and name not in a.only:
            continue
        d = os.path.join(a.dir, name)
        so = os.path.join(d, "model.so")
        p = subprocess.run([os.path.join(a.bin, "harnessc"), path, "-o", so] + a.flags.split(), capture_output=True,
                           text=True)
        if p.returncode:
            print(f"{name:<18} COMPILE FAILED\n{p.stderr}")
            failures += 1
            continue
        ins = sorted(glob.glob(os.path.join(d, "input_*.npy")))
        line = f"{name:<18}"
        if ins:
            p = subprocess.run([os.path.join(a.bin, "harness-run"), so, "--inputs", d, "--outputs", d, "--format",
                                "npy", "--threads", str(a.threads)], capture_output=True, text=True)
            if p.returncode:
                print(f"{line} RUN FAILED\n{p.stderr}")
                failures += 1
                continue
            y = np.load(os.path.join(d, "output_0.npy")).astype(np.float64)
            e = np.load(os.path.join(d, "expected.npy"))
            err = np.abs(y - e).max() if y.shape == e.shape else float("inf")
            scale = max(np.abs(e).max(), 1e-6)
            ok = err / scale < a.tol
            failures += not ok
            line += f" err {err:.2e} rel {err / scale:.2e} {'ok' if ok else 'FAIL'}"
        if a.time:
            p = subprocess.run([os.path.join(a.bin, "kbench"), so, "--profile", "--iters", str(a.iters), "--threads",
                                str(a.threads), "--top", "3"], capture_output=True, text=True)
            m = re.search(r"median total ([\d.]+) ms.*?([\d.]+) GFLOP/s", p.stdout)
            if m:
                line += f"   {float(m.group(1)):9.3f} ms {float(m.group(2)):7.1f} GFLOP/s"
            kl = [l for l in p.stdout.splitlines()[2:5]]
            line += "   | " + " | ".join(" ".join(l.split()[i] for i in (0, 2, 3, 5)) for l in kl if l.strip())
        print(line, flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
