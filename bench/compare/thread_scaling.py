#!/usr/bin/env python3
"""Where a model loses when it goes from one thread to two: per kernel, the
one-thread time against the two-thread time, from `harness-bench --profile`
runs at each thread count in alternating rounds:

    /usr/bin/python3 bench/compare/thread_scaling.py --bench build/bin/harness-bench MODEL.so \\
        [--threads 2] [--rounds 6] [--iters 15] [--top 30] [--input NAME=FILE.npy ...]

Per kernel (medians over rounds of each run's per-kernel median) it prints
the loss t_N - t_1 / N, the speedup t_1 / t_N and the task count, sorted by
loss, after the summed kernel times and their speedup. A kernel whose loss
is large while `trace_idle.py` finds its threads busy is slower per task at
N threads (data the other core wrote, shared caches and memory); one whose
threads idle is split unevenly.
"""
import argparse
import json
import statistics
import subprocess


def profile(bench, so, threads, iters, inputs):
    cmd = [bench, so, "--profile", "--json", "--iters", str(iters), "--threads", str(threads)]
    for i in inputs:
        cmd += ["--input", i]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out)["profile"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--iters", type=int, default=15)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--input", action="append", default=[])
    a = ap.parse_args()
    n = a.threads
    per = {1: {}, n: {}}
    total = {1: [], n: []}
    for r in range(a.rounds):
        for t in ((1, n) if r % 2 == 0 else (n, 1)):
            prof = profile(a.bench, a.model, t, a.iters, a.input)
            total[t].append(prof["kernel_sum_ms"]["median"])
            for k in prof["kernels"]:
                per[t].setdefault((k["index"], k["name"], k["op"], k["tasks"]), []).append(k["median_us"])
    t1, tn = statistics.median(total[1]), statistics.median(total[n])
    print(f"kernel sum: 1 thread {t1:.2f} ms, {n} threads {tn:.2f} ms, speedup {t1 / tn:.3f}")
    rows = []
    for key, times in per[1].items():
        if key in per[n]:
            a1, an = statistics.median(times), statistics.median(per[n][key])
            rows.append((an - a1 / n, key, a1, an))
    rows.sort(key=lambda x: -x[0])
    print(f"loss summed over kernels (t_{n} - t_1/{n}): {sum(r[0] for r in rows) / 1000:.2f} ms")
    print(f"{'loss us':>9} {'1 thread us':>12} {f'{n} threads us':>13} {'speedup':>8} {'tasks':>6}  kernel")
    for loss, key, a1, an in rows[:a.top]:
        print(f"{loss:9.1f} {a1:12.1f} {an:13.1f} {a1 / an:8.2f} {key[3]:6d}  {key[1]}")


if __name__ == "__main__":
    main()
