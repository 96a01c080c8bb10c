#!/usr/bin/env python3
"""Interleaved A/B of two engines on one input: two Harness artifacts (a
change against its baseline), or an artifact against ONNX Runtime.

    /usr/bin/python3 bench/compare/ab.py --bin BUILD/bin --input NAME=FILE.npy A B
                     [--threads 1] [--rounds 10] [--block-s 0.25] [--env-a K=V,...] [--env-b K=V,...]

A and B are artifacts (.so) or `ort:MODEL.onnx`. Blocks of runs alternate
A B / B A (engines.interleave); for each engine it prints the median and
minimum wall time per run and the median and minimum over blocks of on-CPU
time per run (/proc/PID/task/*/schedstat), then the ratios A/B. On a shared
machine the on-CPU ratio at one thread is the steady one: wall time also
counts waits for a core another process held. --env-a/--env-b set
environment variables of one engine (e.g. HX_HUGEPAGES=0).
"""
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import engines  # noqa: E402


def make(bin_dir, spec, threads, input_spec, env_spec):
    env = dict(os.environ)
    for kv in filter(None, env_spec.split(",")):
        k, v = kv.split("=", 1)
        env[k] = v
    if spec.startswith("ort:"):
        cmd = ["node", os.path.join(HERE, "ort_bench.js"), spec[4:], "--serve", "--threads", str(threads),
               "--warmup", "10", "--input", input_spec]
    else:
        cmd = [os.path.join(bin_dir, "harness-bench"), spec, "--serve", "--threads", str(threads), "--warmup", "10",
               "--input", input_spec]
    return engines.Engine(spec, cmd, env=env, threads=threads)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--input", required=True, help="NAME=FILE.npy")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--block-s", type=float, default=0.25)
    ap.add_argument("--env-a", default="")
    ap.add_argument("--env-b", default="")
    a = ap.parse_args()
    bin_dir = os.path.abspath(a.bin)
    if a.a == a.b and a.env_a == a.env_b:
        ap.error("A and B are the same engine")
    cpu = {}
    with make(bin_dir, a.a, a.threads, a.input, a.env_a) as ea, make(bin_dir, a.b, a.threads, a.input, a.env_b) as eb:
        # Distinct names even for one artifact under two environments.
        ea.name, eb.name = "A " + a.a, "B " + a.b
        times, _ = engines.interleave([ea, eb], a.rounds, a.block_s, cpu=cpu)
    stat = {}
    for e in (ea, eb):
        t, c = times[e.name], cpu[e.name]
        stat[e.name] = (statistics.median(t) / 1e6, min(t) / 1e6, statistics.median(c) / 1e6, min(c) / 1e6)
        print(f"{e.name:<50} wall median {stat[e.name][0]:9.4f} min {stat[e.name][1]:9.4f} ms | "
              f"on-CPU median {stat[e.name][2]:9.4f} min {stat[e.name][3]:9.4f} ms")
    sa, sb = stat[ea.name], stat[eb.name]
    print(f"A/B: wall median {sa[0] / sb[0]:.3f}, wall min {sa[1] / sb[1]:.3f}, "
          f"on-CPU median {sa[2] / sb[2]:.3f}, on-CPU min {sa[3] / sb[3]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
