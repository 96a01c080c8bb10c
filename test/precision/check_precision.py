#!/usr/bin/python3
"""Runs the --precision cases of test/models/make_precision_cases.py: each
case folder is compiled with `harnessc --precision P` (P from its
`precision` file) at every requested -O level and target, run by
harness-run on test_data_set_0, and its outputs compared with the expected
ones (numpy with weights on P's grid, so the narrowed artifact must match up
to float32 rounding). A case's `expect_kernels` file names kernels (one
name fragment per line) that the manifest must contain at -O2 and above
and must not at -O0 and -O1.

usage: check_precision.py --bin BUILD/bin [--levels 1,3] [--targets native,x86-64-v3]
                          [--rtol 1e-4] [--atol 1e-4] [-j N] CASES_DIR
exit status: 0 when every case passes.
"""
import glob
import json
import os
import subprocess
import tempfile

import caserun  # test/precision/caserun.py, beside this script
import numpy as np
import onnx
from onnx import numpy_helper


def check_kernels(cmd, case, level, tmp):
    """The expect_kernels rule of the module docstring; None when it holds."""
    path = os.path.join(case, "expect_kernels")
    if not os.path.exists(path):
        return None
    want = [l.strip() for l in open(path) if l.strip()]
    man = os.path.join(tmp, "manifest.json")
    r = subprocess.run(cmd + ["--emit", "manifest", "-o", man], capture_output=True, text=True)
    if r.returncode != 0:
        return "manifest failed: " + r.stderr.strip()
    names = [k["name"] for k in json.load(open(man))["kernels"]]
    for w in want:
        found = any(w in n for n in names)
        if found != (level >= 2):
            return "kernel '%s' %s at -O%d (kernels: %s)" % (w, "present" if found else "missing", level,
                                                            ", ".join(names))
    return None


def run_case(args, case, level, target):
    """Compiles and runs one case; returns None on success, else the reason."""
    precision = open(os.path.join(case, "precision")).read().strip()
    with tempfile.TemporaryDirectory(prefix="hxprec") as tmp:
        cmd = [os.path.join(args.bin, "harnessc"), os.path.join(case, "model.onnx"), "-O%d" % level,
               "--target", target, "--precision", precision]
        why = check_kernels(cmd, case, level, tmp)
        if why:
            return why
        why, data = caserun.compile_and_run(args, cmd, case, tmp)
        if why:
            return why
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
    ap = caserun.parser()
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-4)
    caserun.run_all(ap.parse_args(), "precision", run_case)


if __name__ == "__main__":
    main()
