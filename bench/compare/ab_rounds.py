#!/usr/bin/python3
"""Interleaved latency rounds of several artifacts (or of one artifact under
several runtimes), for changes whose effect is smaller than the machine's
drift between runs:

    /usr/bin/python3 bench/compare/ab_rounds.py --threads 2 --rounds 12 --iters 300 \\
        --input input=FILE.npy [BENCH:]A.so [BENCH:]B.so ...

Each round runs every artifact once (`harness-bench SO --threads T --iters
N`, the order rotated every round) and records its median latency; the
summary is each artifact's median and minimum over rounds and its ratio to
the first. BENCH is the harness-bench binary to use for that artifact
(default: --bench), so that two runtimes can be compared on one artifact.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engines  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="build/bin/harness-bench")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--iters", default="100")
    ap.add_argument("--input", action="append", default=[], help="NAME=FILE.npy, passed to harness-bench")
    ap.add_argument("specs", nargs="+", metavar="[BENCH:]SO")
    args = ap.parse_args()
    res = {s: [] for s in args.specs}
    for r in range(args.rounds):
        k = r % len(args.specs)
        for s in args.specs[k:] + args.specs[:k]:
            bench, so = s.rsplit(":", 1) if ":" in s else (args.bench, s)
            cmd = [bench, so, "--threads", args.threads, "--iters", args.iters, "--warmup", "5"]
            for i in args.input:
                cmd += ["--input", i]
            out = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=engines.pin_one_thread(args.threads))
            m = re.search(r"median ([0-9.]+) ms", out.stdout)
            if not m:
                raise SystemExit("%s failed:\n%s%s" % (" ".join(cmd), out.stdout, out.stderr))
            res[s].append(float(m.group(1)))
    base = statistics.median(res[args.specs[0]])
    for s in args.specs:
        v = res[s]
        md = statistics.median(v)
        paired = statistics.median(x / b for x, b in zip(v, res[args.specs[0]]))
        print("%-48s median %9.4f ms  min %9.4f  ratio %.3f  paired %.3f  rounds %s" %
              (s[-48:], md, min(v), md / base, paired, " ".join("%.3f" % x for x in v)))


if __name__ == "__main__":
    main()
