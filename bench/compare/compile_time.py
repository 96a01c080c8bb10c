#!/usr/bin/env python3
"""harnessc compile time and peak memory on large models.

    /usr/bin/python3 bench/compare/compile_time.py --bin BUILD/bin --work WORKDIR [--models resnet50 vit_b_16]
                     [--opt -O3] [--repeat 1] [--json OUT.json]

Runs `/usr/bin/time -v harnessc OPT MODEL -o MODEL.so` (Debian package
`time`) and reports wall-clock seconds, user+system CPU seconds and the
maximum resident set size; with --repeat N the fastest run is kept.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "models"))
import models  # noqa: E402


def parse_time_v(text):
    """Wall seconds, CPU seconds and peak RSS (MiB) from GNU time -v output."""
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text).group(1)
    parts = [float(p) for p in wall.split(":")]
    secs = 0.0
    for p in parts:
        secs = secs * 60 + p
    user = float(re.search(r"User time \(seconds\): (\S+)", text).group(1))
    sys_t = float(re.search(r"System time \(seconds\): (\S+)", text).group(1))
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
    return secs, user + sys_t, rss_kb / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--models", nargs="*", default=["resnet50", "vit_b_16"])
    ap.add_argument("--opt", default="-O3")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    rows = []
    print(f"{'model':<12} {'onnx MB':>10} {'wall s':>8} {'cpu s':>8} {'peak RSS MB':>12} {'artifact MB':>12}")
    for name in a.models:
        try:
            path = models.ensure(name, a.work)
        except RuntimeError as e:
            rows.append({"model": name, "error": str(e)})
            print(f"{name:<12} export failed: {str(e).splitlines()[0]}")
            continue
        art = os.path.join(a.work, f"{name}-compile.so")
        best = None
        for _ in range(a.repeat):
            p = subprocess.run(["/usr/bin/time", "-v", os.path.join(a.bin, "harnessc"), a.opt, path, "-o", art,
                                "--shape", models.shape_flag(name)], capture_output=True, text=True)
            if p.returncode != 0:
                best = {"model": name, "error": p.stderr.strip()[-2000:]}
                break
            wall, cpu, rss = parse_time_v(p.stderr)
            if best is None or wall < best["wall_s"]:
                best = {"model": name, "wall_s": wall, "cpu_s": cpu, "peak_rss_mb": rss}
        if "error" in best:
            print(f"{name:<12} harnessc failed: {best['error'].splitlines()[-1]}")
        else:
            best["onnx_mb"] = os.path.getsize(path) / 1e6
            best["artifact_mb"] = os.path.getsize(art) / 1e6
            print(f"{name:<12} {best['onnx_mb']:>10.1f} {best['wall_s']:>8.2f} {best['cpu_s']:>8.2f} "
                  f"{best['peak_rss_mb']:>12.1f} {best['artifact_mb']:>12.1f}", flush=True)
        rows.append(best)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"opt": a.opt, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
