#!/usr/bin/env python3
"""Checks that every benchmark model compiles with harnessc and matches ONNX
Runtime (rtol 1e-3, atol 1e-4, as test/real_models/run_real_models.py).

    /usr/bin/python3 bench/models/check_models.py --bin BUILD/bin --work WORKDIR [--models NAME ...]
                     [--opt -O3] [--target T] [--json OUT.json]

A model that does not compile is reported with harnessc's own message, which
names the node, op and attribute at fault. Exits non-zero if any model fails.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import models


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--models", nargs="*", default=list(models.MODELS))
    ap.add_argument("--opt", default="-O3")
    ap.add_argument("--target", default=None)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    failures, results = 0, []
    print(f"{'model':<16} {'compile s':>9} {'max abs err':>12} {'max rel err':>12}  result", flush=True)
    for name in a.models:
        d = os.path.join(a.work, name)
        os.makedirs(d, exist_ok=True)
        try:
            path = models.ensure(name, a.work)
            m = models.ALL[name]
            x = np.random.default_rng(0).random(m["shape"], dtype=np.float32)
            np.save(os.path.join(d, "input.npy"), x)
            run(["node", os.path.join(models.REFERENCE, "ort_run.js"), path, os.path.join(d, "ort"),
                 f"{m['input']}={os.path.join(d, 'input.npy')}"])
            art = os.path.join(d, name + ".so")
            cmd = [os.path.join(a.bin, "harnessc"), path, "-o", art, a.opt, "--shape", models.shape_flag(name)]
            if a.target:
                cmd += ["--target", a.target]
            t0 = time.time()
            run(cmd)
            compile_s = time.time() - t0
            run([os.path.join(a.bin, "harness-run"), art, "--input", f"{m['input']}={os.path.join(d, 'input.npy')}",
                 "--outputs", os.path.join(d, "harness"), "--format", "npy"])
            worst_abs = worst_rel = 0.0
            ok, i = True, 0
            while os.path.exists(os.path.join(d, "ort", f"output_{i}.npy")):
                ref = np.load(os.path.join(d, "ort", f"output_{i}.npy")).astype(np.float64)
                got = np.load(os.path.join(d, "harness", f"output_{i}.npy")).astype(np.float64)
                if ref.shape != got.shape:
                    raise RuntimeError(f"output {i}: shape {got.shape} != reference {ref.shape}")
                err = np.abs(got - ref)
                worst_abs = max(worst_abs, float(err.max(initial=0)))
                worst_rel = max(worst_rel, float((err / np.maximum(np.abs(ref), 1e-6)).max(initial=0)))
                ok &= bool(np.allclose(got, ref, rtol=a.rtol, atol=a.atol))
                i += 1
            failures += not ok
            results.append({"model": name, "ok": ok, "compile_s": compile_s, "max_abs_err": worst_abs,
                            "max_rel_err": worst_rel})
            print(f"{name:<16} {compile_s:>9.2f} {worst_abs:>12.3g} {worst_rel:>12.3g}  {'PASS' if ok else 'FAIL'}",
                  flush=True)
        except RuntimeError as e:
            failures += 1
            results.append({"model": name, "ok": False, "error": str(e)})
            print(f"{name:<16} {'-':>9} {'-':>12} {'-':>12}  FAIL\n{e}", flush=True)
    print(f"{len(a.models) - failures} of {len(a.models)} models match ONNX Runtime")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rtol": a.rtol, "atol": a.atol, "opt": a.opt, "results": results}, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
