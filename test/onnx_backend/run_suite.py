#!/usr/bin/env python3
"""Runs harness-test over the whole ONNX backend suite (Debian
libonnx-testdata: node, pytorch-converted, pytorch-operator, simple) and
checks the inference categories.

    /usr/bin/python3 test/onnx_backend/run_suite.py --harness-test build/bin/harness-test [--json OUT]

Categories (as harness-test classifies them): a float32, b other element
types, c quantized operators, f control flow must pass entirely, except the
tests listed with a reason in suite_known_failures.txt. Categories d
(sequence/optional/string values), e (training) and g (random) are outside an
inference compiler's scope and are reported, not checked. A listed test that
passes fails the run, so the list only shrinks.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

DATA = "/usr/share/libonnx-testdata/data"
HERE = os.path.dirname(os.path.abspath(__file__))
CHECKED = set("abcf")


def known_failures(path):
    known = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, why = line.partition(" ")
            known[name] = why.strip()
    return known


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--harness-test", required=True)
    ap.add_argument("--json", help="keep harness-test's per-test results here")
    ap.add_argument("--known", default=os.path.join(HERE, "suite_known_failures.txt"))
    ap.add_argument("-j", default=str(os.cpu_count() or 1))
    a = ap.parse_args()
    dirs = [os.path.join(DATA, d) for d in ("node", "pytorch-converted", "pytorch-operator", "simple")]
    if not all(os.path.isdir(d) for d in dirs):
        print("libonnx-testdata is not installed")
        return 1
    out = a.json or tempfile.mktemp(suffix=".json")
    p = subprocess.run([a.harness_test, "-q", "-j", a.j, "--json", out] + dirs, text=True, capture_output=True)
    lines = p.stdout.strip().splitlines()
    print("\n".join(l for l in lines if l.startswith(("category", "PASS", "SKIP")) or " passed, " in l))
    results = json.load(open(out))
    known = known_failures(a.known)
    unexpected, fixed = [], []
    for r in results:
        name = os.path.basename(r["test"])
        if r["category"] not in CHECKED:
            continue
        if r["status"] != "pass" and name not in known:
            unexpected.append(f"{r['status'].upper()} {name} [{r['category']}]: {r['reason']}")
        if r["status"] == "pass" and name in known:
            fixed.append(name)
    for u in unexpected:
        print(u)
    for f in fixed:
        print(f"known failure {f} now passes: remove it from {a.known}")
    listed = sum(1 for r in results if r["category"] in CHECKED and os.path.basename(r["test"]) in known)
    print(f"{len(unexpected)} unexpected failures; {listed} known failures listed in {os.path.basename(a.known)}")
    return 1 if unexpected or fixed else 0


if __name__ == "__main__":
    sys.exit(main())
