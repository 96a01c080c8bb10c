#!/usr/bin/python3
"""Paired A/B rounds of one-layer artifacts under kbench:

    /usr/bin/python3 bench/kernels/ab_kbench.py --bin BUILD/bin [--rounds 8] [--threads 1]
        [--iters 20] [--flush weights] [--latency] A1.so B1.so [A2.so B2.so ...]

Each round runs `kbench SO --profile --flush weights` on every artifact of
every pair, A then B (B then A in odd rounds), and takes the sum of the
kernel medians (the whole layer: pad, transforms and products alike), or
with --latency the median latency of whole runs (`kbench SO --flush
weights`): at two threads, kernels in parallel lanes (Winograd's blocks)
run one after the other under --profile, so only whole runs show what the
lanes gain. Per
pair it prints the medians over rounds and the median and quartiles of
the per-round ratio B/A: on a host whose load moves by 10-30% from one
minute to the next, the ratio within a round is what survives (stop 30's
stride-2 Winograd table in docs/performance.md came from this). Build A
and B with two compilers, e.g. a `git worktree` of the previous commit.
"""
import argparse
import re
import statistics
import subprocess


def layer_ms(kbench, so, threads, iters, flush, latency):
    cmd = [kbench, so, "--iters", str(iters), "--threads", str(threads)]
    if not latency:
        cmd += ["--profile", "--top", "1000"]
    if flush != "none":
        cmd += ["--flush", flush]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    if latency:
        return float(re.search(r"median ([\d.]+) ms", out).group(1))
    return sum(float(m.group(1)) for m in re.finditer(r"^\s+([\d.]+)\s+[\d.]+%", out, re.M))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--flush", default="weights", choices=["weights", "all", "none"])
    ap.add_argument("--latency", action="store_true", help="median latency of whole runs instead of the profile")
    ap.add_argument("arts", nargs="+", help="pairs A.so B.so")
    a = ap.parse_args()
    if len(a.arts) % 2:
        ap.error("artifacts come in pairs (A B)")
    kbench = f"{a.bin}/kbench"
    pairs = [(a.arts[i], a.arts[i + 1]) for i in range(0, len(a.arts), 2)]
    times = {p: ([], []) for p in pairs}
    for r in range(a.rounds):
        for p in pairs:
            order = (0, 1) if r % 2 == 0 else (1, 0)
            got = {}
            for k in order:
                so = p[k] if "/" in p[k] else "./" + p[k]
                got[k] = layer_ms(kbench, so, a.threads, a.iters, a.flush, a.latency)
            times[p][0].append(got[0])
            times[p][1].append(got[1])
    print(f"{'A':32s} {'B':32s} {'A ms':>8s} {'B ms':>8s} {'B/A':>6s} {'quartiles':>12s}")
    for p, (ta, tb) in times.items():
        ratios = [y / x for x, y in zip(ta, tb)]
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
        print(f"{p[0]:32s} {p[1]:32s} {statistics.median(ta):8.3f} {statistics.median(tb):8.3f} "
              f"{statistics.median(ratios):6.3f} {q[0]:.3f}-{q[2]:.3f}")


if __name__ == "__main__":
    main()
