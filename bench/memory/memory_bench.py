#!/usr/bin/python3
"""Memory benchmark: per model, Harness's planned arena against its lower
bound, and the memory an inference needs in Harness and in ONNX Runtime.

    /usr/bin/python3 bench/memory/memory_bench.py [--bin BUILD/bin] [--work DIR]
        [--models resnet50,mobilenet_v2,bert_like,ppocr_det] [--reps 5] [--threads 1]
        [-O 3] [--json OUT.json]

For each model:
  1. `harnessc -O<n> --emit memplan` gives the arena, the lower bound (most
     bytes simultaneously live at one step, in-place chains counted once),
     the bound had nothing been written in place, and the winning packing
     heuristic; the plan's JSON and SVG stay in the work directory.
  2. The model is compiled to an artifact and run once by harness-mem-probe,
     and by bench/memory/ort_probe.js in ONNX Runtime (onnxruntime-node, CPU,
     graph optimisations "all", memory patterns on; once with its default
     CPU memory arena, once without), on the same input (same shapes and
     values), with the same thread count. Both probes load the model and
     allocate the inputs and the (preallocated) outputs first, make
     everything else resident (Harness: every page of the artifact's file
     mapping, i.e. code and weights; ONNX Runtime holds weights and
     prepacked weights after session creation), reset the kernel's peak-RSS
     counter (/proc/self/clear_refs), run once and report peak RSS minus the
     RSS before the run: the "inference memory". For Harness that is the
     arena plus whatever else the run touched; for ONNX Runtime its
     activations, arena growth and kernel scratch.
     Every probe runs with MALLOC_MMAP_THRESHOLD_=65536: glibc then serves
     every block of 64 KiB or more with its own mmap and unmaps it on free.
     Without it, memory that model loading freed (ONNX Runtime drops the
     unpacked copies of the weights it prepacks) stays resident and is
     silently reused for activations, hiding them from RSS (ResNet-50 shows
     0.6 MiB that way). Harness's arena is one mmap either way.
  3. The whole process is also measured with /usr/bin/time -v (maximum
     resident set size) at RUNS=1 and RUNS=0 (load only); those raw figures
     include the runtimes, weights and for ONNX Runtime node.js itself, and
     the transient peak of loading often hides the run entirely.
Each measurement is repeated --reps times, engines interleaved; medians are
reported. Writes the table to stdout and, with --json, all figures.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "bench", "models"))
import models as bench_models  # noqa: E402  (bench/models/models.py)

PYTHON = "/usr/bin/python3"
DEFAULT_MODELS = ["resnet50", "mobilenet_v2", "bert_like", "ppocr_det"]


def model_path(name, work):
    """The model's .onnx and its harnessc --shape flags."""
    if name == "bert_like":
        path = os.path.join(work, "bert_like.onnx")
        if not os.path.exists(path):
            subprocess.run([PYTHON, os.path.join(REPO, "bench", "models", "make_bert_like.py"), path], check=True,
                           stdout=subprocess.DEVNULL)
        return path, ["--shape", "N=1"]
    return bench_models.ensure(name, work), ["--shape", bench_models.shape_flag(name)]


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r.stdout, r.stderr


PROBE_ENV = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536")


def probe(cmd):
    """Runs a probe under /usr/bin/time -v: its key/value lines plus max RSS."""
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=PROBE_ENV)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    out, err = r.stdout, r.stderr
    vals = {k: int(v) for k, v in re.findall(r"^(\w+) (-?\d+)$", out, re.M)}
    vals["max_rss_kib"] = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", err).group(1))
    return vals


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "bin"))
    ap.add_argument("--work", default=os.path.join(REPO, "build", "bench", "memory"))
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("-O", dest="opt", type=int, default=3)
    ap.add_argument("--json")
    ap.add_argument("--plan-only", action="store_true", help="only the plans (no artifacts, no RSS probes)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    harnessc = os.path.join(a.bin, "harnessc")
    mem_probe = os.path.join(a.bin, "harness-mem-probe")
    ort_probe = os.path.join(HERE, "ort_probe.js")
    results = []
    for name in a.models.split(","):
        onnx_path, shape = model_path(name, a.work)
        base = os.path.join(a.work, f"{name}.O{a.opt}")
        run([harnessc, f"-O{a.opt}", onnx_path] + shape + ["--emit", "memplan", "-o", base + ".memplan.json"])
        plan = json.load(open(base + ".memplan.json"))
        if a.plan_only:
            results.append(plan_row(name, a.opt, plan))
            print_plan_row(results[-1], header=len(results) == 1)
            continue
        run([harnessc, f"-O{a.opt}", onnx_path] + shape + ["--emit", "manifest", "-o", base + ".manifest.json"])
        if not os.path.exists(base + ".so") or os.path.getmtime(base + ".so") < os.path.getmtime(harnessc):
            run([harnessc, f"-O{a.opt}", onnx_path] + shape + ["-o", base + ".so"])
        reps = {"harness": [], "ort": [], "ort_no_arena": [], "harness_load": [], "ort_load": []}
        ort = ["node", ort_probe, onnx_path]
        for _ in range(a.reps):
            reps["harness"].append(probe([mem_probe, base + ".so", "1", str(a.threads)]))
            reps["ort"].append(probe(ort + ["1", str(a.threads), base + ".manifest.json"]))
            reps["ort_no_arena"].append(probe(ort + ["1", str(a.threads), base + ".manifest.json", "--no-arena"]))
            reps["harness_load"].append(probe([mem_probe, base + ".so", "0", str(a.threads)]))
            reps["ort_load"].append(probe(ort + ["0", str(a.threads), base + ".manifest.json"]))

        def med(key, field):
            return int(statistics.median(r[field] for r in reps[key]))

        row = plan_row(name, a.opt, plan)
        row.update({
            "harness_inference_kib": med("harness", "inference_kib"),
            "ort_inference_kib": med("ort", "inference_kib"),
            "ort_no_arena_inference_kib": med("ort_no_arena", "inference_kib"),
            "harness_max_rss_kib": med("harness", "max_rss_kib"),
            "harness_load_max_rss_kib": med("harness_load", "max_rss_kib"),
            "ort_max_rss_kib": med("ort", "max_rss_kib"),
            "ort_load_max_rss_kib": med("ort_load", "max_rss_kib"),
            "samples": {k: [{"inference_kib": r.get("inference_kib"), "max_rss_kib": r["max_rss_kib"]} for r in v]
                        for k, v in reps.items()},
        })
        results.append(row)
        print_row(row, header=len(results) == 1)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"threads": a.threads, "reps": a.reps, "results": results}, f, indent=1)


def plan_row(name, opt, plan):
    return {
        "model": name,
        "opt_level": opt,
        "arena_bytes": plan["arena_bytes"],
        "lower_bound_bytes": plan["lower_bound_bytes"],
        "lower_bound_no_inplace_bytes": plan["lower_bound_no_inplace_bytes"],
        "lower_bound_sequential_bytes": plan["lower_bound_sequential_bytes"],
        "inplace": plan["inplace"],
        "heuristic": plan.get("heuristic"),
        "heuristics": plan["heuristics"],
    }


def print_plan_row(r, header):
    if header:
        print(f"{'model':13} {'arena MiB':>10} {'bound MiB':>10} {'over':>6} {'no-inpl MiB':>11} {'no-grp MiB':>10} "
              f"{'in place':>8}  heuristic")
    over = 100.0 * (r["arena_bytes"] - r["lower_bound_bytes"]) / max(r["lower_bound_bytes"], 1)
    print(f"{r['model']:13} {mib(r['arena_bytes']):>10} {mib(r['lower_bound_bytes']):>10} {over:5.2f}% "
          f"{mib(r['lower_bound_no_inplace_bytes']):>11} {mib(r['lower_bound_sequential_bytes']):>10} "
          f"{r['inplace']:8d}  {r['heuristic']}", flush=True)


def mib(x):
    return f"{x / 2**20:8.2f}"


def print_row(r, header):
    if header:
        print(f"{'model':13} {'arena':>8} {'bound':>8} {'over':>6} {'no-inpl':>8} {'no-grp':>8} {'Harness':>8} "
              f"{'ORT':>8} {'ORT-noar':>8} {'H/ORT':>6} {'H rss run/load':>15} {'ORT rss run/load':>17}  heuristic")
        print(f"{'':13} {'MiB':>8} {'MiB':>8} {'':>6} {'MiB':>8} {'MiB':>8} {'inf MiB':>8} {'inf MiB':>8} "
              f"{'inf MiB':>8}")
    over = 100.0 * (r["arena_bytes"] - r["lower_bound_bytes"]) / max(r["lower_bound_bytes"], 1)
    h, o, o2 = r["harness_inference_kib"], r["ort_inference_kib"], r["ort_no_arena_inference_kib"]
    print(f"{r['model']:13} {mib(r['arena_bytes'])} {mib(r['lower_bound_bytes'])} {over:5.2f}% "
          f"{mib(r['lower_bound_no_inplace_bytes'])} {mib(r['lower_bound_sequential_bytes'])} "
          f"{h / 1024:8.2f} {o / 1024:8.2f} {o2 / 1024:8.2f} "
          f"{h / max(o, 1):6.2f} {r['harness_max_rss_kib'] / 1024:7.1f}/{r['harness_load_max_rss_kib'] / 1024:<7.1f} "
          f"{r['ort_max_rss_kib'] / 1024:8.1f}/{r['ort_load_max_rss_kib'] / 1024:<8.1f}  {r['heuristic']}",
          flush=True)


if __name__ == "__main__":
    main()
