#!/usr/bin/python3
"""Before/after latency of QDQ artifacts, interleaved (docs/precision.md):

    /usr/bin/python3 bench/precision/qdq_ab.py --bin build/bin --rounds 10 \\
        NAME=QDQ.onnx:FP32.so:BEFORE.so:AFTER.so ...

For each model: Harness fp32, the QDQ artifact compiled before and after a
change (any harnessc), and ONNX Runtime on the same QDQ model, all at 1
thread in one interleaved loop (bench/compare/engines.py), so machine noise
hits all alike. Prints medians (ms) and the ratios after/ORT, after/fp32,
before/after: of wall time per run, then of on-CPU time per run (each
block's /proc schedstat time over its runs, bench/compare/engines.py), the
steadier figure on a shared machine.
"""
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "compare"))
import engines  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    head = ("| QDQ model | fp32 ms | before ms | after ms | ORT ms | after/ORT | before/ORT | after/fp32 | before/after |\n"
            "|---|---|---|---|---|---|---|---|---|")
    rows = {"wall": [], "on-CPU": []}
    for spec in args.models:
        name, rest = spec.split("=", 1)
        qdq, fp32, before, after = rest.split(":")
        es = [engines.harness_engine(args.bin, fp32, 1), engines.harness_engine(args.bin, before, 1),
              engines.harness_engine(args.bin, after, 1), engines.ort_engine(qdq, 1)]
        for e, n in zip(es, ("fp32", "before", "after", "ort")):
            e.name = n
        try:
            cpu = {}
            times, _ = engines.interleave(es, args.rounds, cpu=cpu)
        finally:
            for e in es:
                e.close()
        for kind, data in (("wall", times), ("on-CPU", cpu)):
            med = {k: statistics.median(v) / 1e6 for k, v in data.items()}
            rows[kind].append("| %s | %.2f | %.2f | %.2f | %.2f | %.3f | %.3f | %.3f | %.2f |" % (
                name, med["fp32"], med["before"], med["after"], med["ort"], med["after"] / med["ort"],
                med["before"] / med["ort"], med["after"] / med["fp32"], med["before"] / med["after"]))
    for kind in ("wall", "on-CPU"):
        print("%s time per run, medians:\n%s" % (kind, head))
        print("\n".join(rows[kind]) + "\n", flush=True)


if __name__ == "__main__":
    main()
