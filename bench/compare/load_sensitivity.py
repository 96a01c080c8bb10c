#!/usr/bin/python3
"""Which of an artifact's kernels slow down when the host is busy, and what
the host's state looks like meanwhile:

    /usr/bin/python3 bench/compare/load_sensitivity.py --bin BUILD/bin MODEL.so \\
        [B.so ...] [--rounds 24] [--iters 10] [--threads 1] [--top 15] [--json OUT.json]

Each round runs `harness-bench --peak` (this core's register-only FMA loop,
its clock and its streaming read bandwidth), then `harness-bench --profile`
on the artifact (per-kernel medians inside whole runs), then --peak again.
The benchmark machine is a cloud guest whose speed swings by 30% and more
within minutes, and no counter inside the guest tells why (perf has no
hardware events there). Splitting the rounds at the median whole-run time
into a quiet and a busy half shows what the busy state costs: per kind of
kernel (op, and the stage after ':' for split kernels such as Winograd's),
busy time over quiet time, next to the host figures of the same rounds.
A kind whose time grows while the FMA loop, the clock and the streaming
bandwidth stay put is losing to something the peak probes do not touch
(the private caches, for instance). Further artifacts (another compiler's,
other options) are profiled in every round too, in alternating order, each
split at its own median; the script prints how their round times
correlate with the first's, which says whether a busy state outlasts a
round (on the benchmark guest it did not: r = 0.10, 2026-12-01).

How ONNX Runtime fares in the same states is a question for interleaved
engines that stay loaded (engines.interleave, as compare.py runs them): a
per-round ORT process spends seconds creating its session, by which time
the host's state has often changed.

At one thread every process is pinned to the core the comparison scripts
use (engines.one_thread_cpu).
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engines  # noqa: E402


def run_json(cmd, threads):
    p = subprocess.run(cmd, capture_output=True, text=True, check=True, preexec_fn=engines.pin_one_thread(threads))
    return json.loads(p.stdout)


def kind(k):
    name, op = k["name"], k["op"]
    return f"{op}:{name.rsplit(':', 1)[1]}" if ":" in name else op


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("artifacts", nargs="+", help="artifacts profiled every round (the first's halves give the host figures)")
    ap.add_argument("--rounds", type=int, default=24)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--top", type=int, default=15, help="largest kernels listed one by one")
    ap.add_argument("--json")
    a = ap.parse_args()
    bench = os.path.join(a.bin, "harness-bench")
    rounds = []
    for r in range(a.rounds):
        before = run_json([bench, "--peak", "--json"], 1)
        runs = {}
        for art in (a.artifacts if r % 2 == 0 else list(reversed(a.artifacts))):
            prof = run_json([bench, art, "--profile", "--json", "--threads", str(a.threads), "--iters", str(a.iters)],
                            a.threads)
            ks = prof["profile"]["kernels"]
            runs[art] = {"median_ms": prof["latency_ms"]["median"], "kernels": {k["name"]: k["median_us"] for k in ks},
                         "kinds": {k["name"]: kind(k) for k in ks}}
        after = run_json([bench, "--peak", "--json"], 1)
        host = {k: (before[k] + after[k]) / 2 for k in ("clock_ghz", "fma_loop_avx2_gflops", "mem_read_gbps_per_core")}
        rounds.append({"runs": runs, "host": host})
        print(f"round {r + 1}/{a.rounds}: " + ", ".join(f"{runs[x]['median_ms']:.2f}" for x in a.artifacts) +
              f" ms, FMA loop {host['fma_loop_avx2_gflops']:.1f} GFLOP/s, clock {host['clock_ghz']:.2f} GHz, "
              f"read {host['mem_read_gbps_per_core']:.1f} GB/s", file=sys.stderr, flush=True)
    def med(rs, art, name=None):
        return statistics.median(r["runs"][art]["kernels"][name] / 1000 if name else r["runs"][art]["median_ms"]
                                 for r in rs)

    def halves(art):
        """The rounds split at this artifact's own median whole run."""
        rs = sorted(rounds, key=lambda x: x["runs"][art]["median_ms"])
        n = len(rs) // 2
        return rs[:n], rs[len(rs) - n:]

    first = a.artifacts[0]
    quiet, busy = halves(first)
    print(f"{len(rounds)} rounds, {a.threads} thread(s); host probes in {os.path.basename(first)}'s quiet and busy "
          f"halves:")
    for key, label in (("fma_loop_avx2_gflops", "FMA loop GFLOP/s"), ("clock_ghz", "clock GHz"),
                       ("mem_read_gbps_per_core", "streaming read GB/s")):
        qh = statistics.median(r["host"][key] for r in quiet)
        bh = statistics.median(r["host"][key] for r in busy)
        print(f"  {label:24s} quiet {qh:8.2f}   busy {bh:8.2f}")
    t0 = [r["runs"][first]["median_ms"] for r in rounds]
    for art in a.artifacts[1:]:
        # Whether the busy state outlasts a round: if two artifacts' times
        # in the same round hardly correlate, it does not, and one
        # artifact's halves say nothing about another's (splitting at A's
        # slow rounds makes B look steady).
        t = [r["runs"][art]["median_ms"] for r in rounds]
        print(f"  {os.path.basename(art)} over {os.path.basename(first)}: paired median "
              f"{statistics.median(x / y for x, y in zip(t, t0)):.3f} over all rounds; round times correlate "
              f"{statistics.correlation(t, t0):.2f}")
    for art in a.artifacts:
        q_rs, b_rs = halves(art)
        kinds = rounds[0]["runs"][art]["kinds"]
        times = {n: (med(q_rs, art, n), med(b_rs, art, n)) for n in kinds}
        q, b = collections.Counter(), collections.Counter()
        for n, k in kinds.items():
            q[k] += times[n][0]
            b[k] += times[n][1]
        print(f"\n{os.path.basename(art)}: whole runs quiet {med(q_rs, art):.2f} ms, busy {med(b_rs, art):.2f} ms "
              f"(its own halves)\n{'kind of kernel':44s} {'quiet ms':>9s} {'busy ms':>9s} {'busy/quiet':>10s}")
        for k, v in sorted(q.items(), key=lambda x: -x[1]):
            print(f"{k:44s} {v:9.2f} {b[k]:9.2f} {b[k] / v if v else 0:10.2f}")
        print(f"{'all kernels':44s} {sum(q.values()):9.2f} {sum(b.values()):9.2f} "
              f"{sum(b.values()) / sum(q.values()):10.2f}")
        for n, (x, y) in sorted(times.items(), key=lambda i: -i[1][0])[:a.top]:
            print(f"{n[-44:]:44s} {x:9.3f} {y:9.3f} {y / x if x else 0:10.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"threads": a.threads, "artifacts": a.artifacts, "rounds": rounds}, f)


if __name__ == "__main__":
    main()
