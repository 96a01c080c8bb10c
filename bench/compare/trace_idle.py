#!/usr/bin/python3
"""Where threads wait at kernel boundaries: runs `harness-bench --trace` on
one or more artifacts in alternating rounds and, from each trace's
per-thread spans, sums per kernel the time a thread of the session sat
idle while the kernel ran (threads x the kernel's wall time, less what
each thread spent in it):

    /usr/bin/python3 bench/compare/trace_idle.py --bench build/bin/harness-bench \\
        --threads 2 --rounds 6 [--top 15] A.so [B.so ...]

Per artifact: the median over rounds of the traced run's wall time and of
its idle thread time (also as a share of threads x wall), and the kernels
with the most idle time. For each of those kernels, `t0 last` counts the
rounds in which thread 0 finished it last: a kernel whose slow thread is
the same in every round has a structural imbalance (unequal tasks, data
one thread has to fetch from the other's cache); one whose slow thread
changes from round to round waits on interruptions of either thread.

A trace is one profiled run (docs/performance.md, "Trace"), so a round is
noisy; use several rounds and compare artifacts within the same rounds.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile


def spans(path):
    """{(kernel name, occurrence): {tid: event}} of one trace."""
    with open(path) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    out = collections.defaultdict(dict)
    seen = collections.Counter()
    for e in events:
        if e.get("ph") != "X":
            continue
        key = (e["name"], seen[(e["name"], e["tid"])])
        seen[(e["name"], e["tid"])] += 1
        out[key][e["tid"]] = e
    return out


def analyse(path, threads):
    """Wall, idle (us) and per-kernel (idle, thread-0-last) of one trace.
    tid 0 holds the kernel's own span; tids 1..threads the threads'."""
    wall = idle = 0.0
    per = {}
    for key, by_tid in spans(path).items():
        k = by_tid.get(0)
        if k is None:
            continue
        busy = [by_tid[t]["dur"] if t in by_tid else 0.0 for t in range(1, threads + 1)]
        ends = [by_tid[t]["ts"] + by_tid[t]["dur"] if t in by_tid else k["ts"] for t in range(1, threads + 1)]
        w = k["dur"]
        wall += w
        i = threads * w - sum(busy)
        idle += i
        per[key] = (i, ends[0] >= max(ends))
    return wall, idle, per


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default="build/bin/harness-bench")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--iters", type=int, default=20, help="untimed warm-up runs before the traced one")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("artifacts", nargs="+")
    a = ap.parse_args()
    if a.threads < 2:
        sys.exit("trace_idle.py: idle time needs at least two threads")
    results = {so: [] for so in a.artifacts}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            order = a.artifacts[r % len(a.artifacts):] + a.artifacts[:r % len(a.artifacts)]
            for so in order:
                path = os.path.join(tmp, "trace.json")
                subprocess.run([a.bench, so, "--threads", str(a.threads), "--iters", str(a.iters), "--trace", path],
                               check=True, stdout=subprocess.DEVNULL)
                results[so].append(analyse(path, a.threads))
    for so, runs in results.items():
        walls = [w for w, _, _ in runs]
        idles = [i for _, i, _ in runs]
        shares = [i / (a.threads * w) for w, i, _ in runs if w > 0]
        print(f"{so}: traced run {statistics.median(walls) / 1000:.3f} ms, idle thread time "
              f"{statistics.median(idles) / 1000:.3f} ms ({100 * statistics.median(shares):.1f}% of "
              f"{a.threads} x wall; rounds {' '.join(f'{i / 1000:.2f}' for i in idles)})")
        total = collections.defaultdict(float)
        last0 = collections.Counter()
        for _, _, per in runs:
            for key, (i, t0_last) in per.items():
                total[key] += i
                last0[key] += t0_last
        print(f"  {'kernel':<56} {'idle ms/run':>11} {'t0 last':>7}")
        for key in sorted(total, key=lambda k: -total[k])[:a.top]:
            name = key[0] if key[1] == 0 else f"{key[0]} #{key[1] + 1}"
            print(f"  {name[-56:]:<56} {total[key] / len(runs) / 1000:11.3f} {last0[key]:>3}/{len(runs)}")


if __name__ == "__main__":
    main()
