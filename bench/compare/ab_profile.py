#!/usr/bin/python3
"""Per-kernel A/B of two artifacts of the same model: runs
`harness-bench ART --profile` on A and B alternately for --rounds rounds and
prints, per kernel name with the layer prefix removed (/layers.N/), the sum
over layers of the kernel's median time, the minimum over rounds, for each
artifact, and the session-run median. The minimum over alternating rounds
is what survives the load of a shared machine; one profile each does not.
The order swaps every round (A B, B A, ...), so that a load that drifts
over the minutes of a comparison favours neither side: an artifact against
a copy of itself read 0.948 in one run of six rounds with a fixed order
(2026-12-01, stop 27).

With --group NAME=REGEX (repeatable) it also prints, per group, the median
and quartiles over rounds of the paired ratio B/A of the summed kernels
whose names match REGEX, and the same for the whole runs' medians: the
ratio of two artifacts measured minutes apart moves with the host's load,
the ratio within a round much less (the way stop 30 measured one layer
inside ResNet-50, e.g. --group conv2='layer2.0/conv2').

usage: ab_profile.py --bin BUILD/bin A.so B.so [--rounds 3] [--threads 1] [--iters 100] [--group NAME=REGEX ...]
"""
import argparse
import re
import statistics
import subprocess


def profile(bench, art, threads, iters):
    out = subprocess.run([bench, art, "--threads", str(threads), "--profile", "--iters", str(iters)],
                         capture_output=True, text=True, check=True).stdout
    kernels = {}
    median = None
    for line in out.splitlines():
        m = re.match(r"\s+\d+ (\S+)\s+\S+\s+\d+\s+([\d.]+)\s", line)
        if m:
            name = re.sub(r"^/layers\.\d+/", "", m.group(1))
            kernels[name] = kernels.get(name, 0.0) + float(m.group(2))
        m = re.match(r"latency\s+median ([\d.]+) ms", line)
        if m:
            median = float(m.group(1)) * 1000
    return kernels, median


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--group", action="append", default=[], metavar="NAME=REGEX")
    a = ap.parse_args()
    bench = f"{a.bin}/harness-bench"
    best = {a.a: ({}, None), a.b: ({}, None)}
    groups = [g.split("=", 1) for g in a.group]
    paired = {name: [] for name, _ in groups}
    paired["whole run"] = []
    for r in range(a.rounds):
        got = {}
        for art in (a.a, a.b) if r % 2 == 0 else (a.b, a.a):
            k, med = profile(bench, art, a.threads, a.iters)
            got[art] = (k, med)
            bk, bmed = best[art]
            for n, t in k.items():
                bk[n] = min(bk.get(n, t), t)
            best[art] = (bk, med if bmed is None else min(bmed, med))
        for name, rx in groups:
            sa, sb = (sum(t for n, t in got[art][0].items() if re.search(rx, n)) for art in (a.a, a.b))
            if sa and sb:
                paired[name].append(sb / sa)
        paired["whole run"].append(got[a.b][1] / got[a.a][1])
    names = sorted(set(best[a.a][0]) | set(best[a.b][0]), key=lambda n: -best[a.a][0].get(n, 0))
    print(f"{'kernel (sum over layers, us)':40s} {'A':>10s} {'B':>10s} {'B/A':>6s}")
    for n in names:
        ta, tb = best[a.a][0].get(n), best[a.b][0].get(n)
        ratio = f"{tb / ta:6.3f}" if ta and tb else ""
        print(f"{n:40s} {ta or 0:10.1f} {tb or 0:10.1f} {ratio}")
    ta, tb = sum(best[a.a][0].values()), sum(best[a.b][0].values())
    print(f"{'all kernels':40s} {ta:10.1f} {tb:10.1f} {tb / ta:6.3f}")
    print(f"{'session median':40s} {best[a.a][1]:10.1f} {best[a.b][1]:10.1f} {best[a.b][1] / best[a.a][1]:6.3f}")
    if groups:
        print(f"\n{'paired B/A per round':40s} {'median':>10s} {'quartiles':>16s}")
        for name, v in paired.items():
            if len(v) >= 2:
                q = statistics.quantiles(v, n=4)
                print(f"{name:40s} {statistics.median(v):10.3f} {q[0]:7.3f}-{q[2]:.3f}")


if __name__ == "__main__":
    main()
