#!/usr/bin/env python3
"""Harness vs ONNX Runtime on the benchmark models, interleaved.

    /usr/bin/python3 bench/compare/compare.py --bin BUILD/bin --work WORKDIR [--models NAME ...]
                     [--threads 1 2] [--rounds 12] [--block-s 0.25] [--target T] [--peak-isa avx2|avx512]
                     [--json OUT.json] [--no-compile]

For each model (bench/models/models.py) and thread count: compiles it with
`harnessc -O3`, loads it in `harness-bench --serve` and in onnxruntime-node
(bench/compare/ort_bench.js: graph optimisations "all", intraOpNumThreads =
threads, interOpNumThreads 1) on the same input, then alternates blocks of
runs A B / B A / ... so that machine load hits both alike. Reports each
engine's median over all runs, the ratio Harness/ORT, achieved GFLOP/s (the
artifact manifest's flop count over the median) and percent of this
machine's fp32 peak (2 FMA x lanes x 2 flops x measured GHz x threads; see
`harness-bench --peak`), and beside it the ratio of on-CPU time per run
(each engine's threads' time on a core, from /proc/PID/task/*/schedstat,
median over blocks): on a shared machine, wall time also counts the time an
engine waited for a core another process held, on-CPU time does not, so at
one thread the "cpu H/ORT" column is the steadier ratio (at several threads
it also counts spinning workers and means little). Then profiles each
artifact at one thread (`harness-bench --profile`; `--profile-s 0` skips it)
for framework overhead and the time by op type.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "models"))
import engines  # noqa: E402
import models  # noqa: E402


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def compile_model(bin_dir, name, onnx_path, art, target):
    cmd = [os.path.join(bin_dir, "harnessc"), onnx_path, "-o", art, "-O3", "--shape", models.shape_flag(name)]
    if target:
        cmd += ["--target", target]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"harnessc failed on {name}:\n{p.stderr}")


def profile(bin_dir, art, input_spec, threads, max_time):
    p = subprocess.run([os.path.join(bin_dir, "harness-bench"), art, "--profile", "--json", "--threads", str(threads),
                        "--iters", "100000", "--max-time", str(max_time), "--input", input_spec],
                       capture_output=True, text=True, preexec_fn=engines.pin_one_thread(threads))
    if p.returncode != 0:
        raise RuntimeError(f"harness-bench --profile failed:\n{p.stderr}")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--models", nargs="*", default=list(models.MODELS))
    ap.add_argument("--threads", nargs="*", type=int, default=[1, 2])
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--block-s", type=float, default=0.25)
    ap.add_argument("--target", default=None, help="harnessc --target (default: native)")
    ap.add_argument("--peak-isa", choices=["avx2", "avx512"], default=None,
                    help="peak to quote (default: the machine's widest ISA)")
    ap.add_argument("--profile-s", type=float, default=5.0, help="seconds of profiled runs per model (0: no profile)")
    ap.add_argument("--json", default=None, help="write all results here")
    ap.add_argument("--no-compile", action="store_true", help="reuse existing artifacts")
    a = ap.parse_args()
    bin_dir = os.path.abspath(a.bin)

    machine = engines.peak(bin_dir)
    peak_name, peak_core = engines.peak_for(machine, a.peak_isa)
    log(f"machine: {machine['isa']}, {machine['cores']} cores, {machine['clock_ghz']:.2f} GHz; "
        f"quoting the {peak_name} peak, {peak_core:.1f} GFLOP/s per core; "
        f"core-to-core round trip {machine.get('core_roundtrip_ns', -1):.0f} ns")
    rows, profiles, failures = [], {}, []
    for name in a.models:
        d = os.path.join(a.work, name)
        os.makedirs(d, exist_ok=True)
        try:
            onnx_path = models.ensure(name, a.work)
            m = models.ALL[name]
            inp = os.path.join(d, "input.npy")
            np.save(inp, np.random.default_rng(0).random(m["shape"], dtype=np.float32))
            spec = f"{m['input']}={inp}"
            art = os.path.join(d, name + ".so")
            if not (a.no_compile and os.path.exists(art)):
                log(f"{name}: compiling")
                compile_model(bin_dir, name, onnx_path, art, a.target)
            info = engines.artifact_info(bin_dir, art)
            flops = info["flops"]
            for t in a.threads:
                log(f"{name}: {t} thread(s), {a.rounds} interleaved rounds")
                host_before = engines.handoff(bin_dir) if t > 1 else None
                cpu = {}
                with engines.harness_engine(bin_dir, art, t, spec) as h, engines.ort_engine(onnx_path, t, spec) as o:
                    times, rmed = engines.interleave([h, o], a.rounds, a.block_s, cpu=cpu)
                hm = statistics.median(times["harness"]) / 1e6
                om = statistics.median(times["ort"]) / 1e6
                round_ratios = [x / y for x, y in zip(rmed["harness"], rmed["ort"])]
                peak = peak_core * t
                row = {
                    "model": name, "threads": t, "target": info["target"], "gflop": flops / 1e9,
                    "harness_ms": hm, "ort_ms": om, "ratio": hm / om,
                    "ratio_round_min": min(round_ratios), "ratio_round_max": max(round_ratios),
                    # Per-round medians (ms), in order: whether the engines
                    # slow down together when the host is busy.
                    "harness_round_ms": [x / 1e6 for x in rmed["harness"]],
                    "ort_round_ms": [x / 1e6 for x in rmed["ort"]],
                    "harness_runs": len(times["harness"]), "ort_runs": len(times["ort"]),
                    "harness_p90_ms": float(np.percentile(times["harness"], 90)) / 1e6,
                    "ort_p90_ms": float(np.percentile(times["ort"], 90)) / 1e6,
                    "harness_gflops": flops / (hm * 1e6), "ort_gflops": flops / (om * 1e6),
                    "peak_gflops": peak,
                    # Median over blocks of on-CPU time per run (all threads
                    # of the process, spinning workers included): at one
                    # thread, the ratio that machine load disturbs least.
                    "harness_cpu_ms": statistics.median(cpu["harness"]) / 1e6 if cpu.get("harness") else None,
                    "ort_cpu_ms": statistics.median(cpu["ort"]) / 1e6 if cpu.get("ort") else None,
                }
                if t > 1:
                    # The host's cross-core state around these rounds
                    # (engines.handoff): several threads pay it at every
                    # handoff between kernels, one thread never does.
                    row["host_before"], row["host_after"] = host_before, engines.handoff(bin_dir)
                if row["harness_cpu_ms"] and row["ort_cpu_ms"]:
                    row["cpu_ratio"] = row["harness_cpu_ms"] / row["ort_cpu_ms"]
                row["harness_peak_pct"] = 100 * row["harness_gflops"] / peak
                row["ort_peak_pct"] = 100 * row["ort_gflops"] / peak
                if len(set(row["harness_round_ms"])) > 1 and len(set(row["ort_round_ms"])) > 1:
                    row["round_corr"] = statistics.correlation(row["harness_round_ms"], row["ort_round_ms"])
                rows.append(row)
                log(f"  harness {hm:.4f} ms, ort {om:.4f} ms, ratio {hm / om:.3f} "
                    f"(rounds {row['ratio_round_min']:.3f}-{row['ratio_round_max']:.3f}"
                    + (f", round times correlate {row['round_corr']:.2f})" if "round_corr" in row else ")")
                    + (f"; on-CPU per run {row['harness_cpu_ms']:.4f} / {row['ort_cpu_ms']:.4f} ms, "
                       f"ratio {row['cpu_ratio']:.3f}" if row.get("cpu_ratio") else ""))
            if a.profile_s > 0:
                log(f"{name}: profiling at 1 thread")
                profiles[name] = profile(bin_dir, art, spec, 1, a.profile_s)
        except RuntimeError as e:
            failures.append({"model": name, "error": str(e)})
            log(f"{name}: FAILED\n{e}")

    print(f"peak: {peak_name}, {peak_core:.1f} GFLOP/s per core ({machine['clock_ghz']:.2f} GHz measured)")
    print(f"{'model':<16} {'thr':>3} {'Harness ms':>11} {'ORT ms':>10} {'H/ORT':>6} {'H GFLOP/s':>10} {'H %pk':>6} "
          f"{'ORT GFLOP/s':>11} {'ORT %pk':>7} {'cpu H/ORT':>9}  host (round trip ns, rewrite ns/line)")
    for r in rows:
        print(f"{r['model']:<16} {r['threads']:>3} {r['harness_ms']:>11.4f} {r['ort_ms']:>10.4f} {r['ratio']:>6.3f} "
              f"{r['harness_gflops']:>10.2f} {r['harness_peak_pct']:>5.1f}% {r['ort_gflops']:>11.2f} "
              f"{r['ort_peak_pct']:>6.1f}% {r.get('cpu_ratio') or float('nan'):>9.3f}  {engines.host_state(r)}")
    for name, p in profiles.items():
        print(f"{name}: framework overhead {p['profile']['overhead_us']:.3f} us per inference at 1 thread")
    for f in failures:
        print(f"{f['model']}: FAILED: {f['error'].splitlines()[0]}")
    # The round trip again, to show whether it moved during the run.
    machine_end = engines.peak(bin_dir)
    print(f"core-to-core round trip: {machine.get('core_roundtrip_ns', -1):.0f} ns at the start, "
          f"{machine_end.get('core_roundtrip_ns', -1):.0f} ns at the end")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": machine, "machine_end": machine_end, "peak_name": peak_name, "peak_gflops_per_core": peak_core,
                       "rounds": a.rounds, "block_s": a.block_s, "one_thread_cpu": engines.one_thread_cpu(), "target": a.target or "native",
                       "rows": rows, "profiles": profiles, "failures": failures}, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
