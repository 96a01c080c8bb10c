#!/usr/bin/python3
"""Runs the --precision cases of test/models/make_precision_cases.py: each
case folder is compiled with `harnessc --precision P` (P from its
`precision` file) at every requested -O level and target, run by
harness-run on test_data_set_0, and its outputs compared with the expected
ones (numpy with weights on P's grid, so the narrowed artifact must match up
to float32 rounding).

usage: check_precision.py --bin BUILD/bin [--levels 1,3] [--targets native,x86-64-v3]
                          [--rtol 1e-4] [--atol 1e-4] [-j N] CASES_DIR
exit status: 0 when every case passes.
"""
import argparse
import concurrent.futures
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper


def run_case(args, case, level, target):
    """Compiles and runs one case; returns None on success, else the reason."""
    precision = open(os.path.join(case, "precision")).read().strip()
    with tempfile.TemporaryDirectory(prefix="hxprec") as tmp:
        so = os.path.join(tmp, "model.so")
        cmd = [os.path.join(args.bin, "harnessc"), os.path.join(case, "model.onnx"), "-o", so, "-O%d" % level,
               "--target", target, "--precision", precision]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            return "compile failed: " + r.stderr.strip()
        data = os.path.join(case, "test_data_set_0")
        r = subprocess.run([os.path.join(args.bin, "harness-run"), so, "--inputs", data, "--outputs", tmp,
                            "--format", "npy"], capture_output=True, text=True)
        if r.returncode != 0:
            return "run failed: " + r.stderr.strip()
        for f in sorted(glob.glob(os.path.join(data, "output_*.pb"))):
            i = int(os.path.basename(f)[len("output_"):-3])
            want = numpy_helper.to_array(onnx.load_tensor(f)).astype(np.float64)
            got = np.load(os.path.join(tmp, "output_%d.npy" % i)).astype(np.float64)
            if got.shape != want.shape:
                return "output %d: shape %s, expected %s" % (i, got.shape, want.shape)
            tol = args.atol * max(1.0, float(np.abs(want).max())) + args.rtol * np.abs(want)
            bad = np.abs(got - want) > tol
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                return "output %d: %d of %d elements differ (first at %d: %g vs %g)" % (
                    i, int(bad.sum()), bad.size, k, got.ravel()[k], want.ravel()[k])
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cases")
    ap.add_argument("--bin", required=True)
    ap.add_argument("--levels", default="1,3")
    ap.add_argument("--targets", default="native,x86-64-v3")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    cases = sorted(d for d in glob.glob(os.path.join(args.cases, "*")) if os.path.exists(os.path.join(d, "precision")))
    if not cases:
        sys.exit("no cases in %s" % args.cases)
    jobs = [(c, int(lv), t) for c in cases for lv in args.levels.split(",") for t in args.targets.split(",")]
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(args.j) as pool:
        for (c, lv, t), why in zip(jobs, pool.map(lambda j: run_case(args, *j), jobs)):
            if why:
                failed += 1
                print("FAIL %s -O%d %s: %s" % (os.path.basename(c), lv, t, why), flush=True)
    print("%d passed, %d failed" % (len(jobs) - failed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
