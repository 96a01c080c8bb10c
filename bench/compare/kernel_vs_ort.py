#!/usr/bin/python3
"""Harness against ONNX Runtime on small models (one layer, one block), in
interleaved rounds, so that a kernel's standing against ORT's is measured
under the same host load instead of read off two profilers run minutes
apart:

    /usr/bin/python3 bench/compare/kernel_vs_ort.py --bin BUILD/bin --work DIR \\
        [--threads 1 2] [--rounds 8] [--harnessc-arg=--mcpu=znver3 ...] MODEL.onnx ...

Each model is compiled (`harnessc -O3`) into DIR, fed a random first input
(float32, the model's static shape; further inputs get each engine's own
synthetic data), and both engines stay
loaded while `engines.interleave` alternates blocks of runs between them.
It prints, per model and thread count, each engine's median latency and the
median of the per-round ratios Harness/ORT (the figure the host's drift
disturbs least), with the rounds' spread.

A one-layer model flatters Harness against ORT: ORT converts a lone
convolution's input to its NCHWc layout and its output back (ReorderInput,
ReorderOutput) in every run, which inside a model it does once for a chain
of layers. ResNet-50's 1024 -> 256 1x1 alone took ORT 1.7 ms against 1.2-1.3
in the model's profile. Use it to compare kernels of Harness between
commits against a common yardstick, and `layer_compare.py` for standings
inside a model.
"""
import argparse
import os
import statistics
import subprocess
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engines  # noqa: E402


def inputs_of(model_path, work):
    """One random .npy per graph input; returns the --input specs."""
    m = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    specs = []
    rng = np.random.default_rng(0)
    stem = os.path.splitext(os.path.basename(model_path))[0]
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        if t.elem_type != onnx.TensorProto.FLOAT:
            raise SystemExit(f"{model_path}: input {vi.name} is not float32")
        shape = [d.dim_value for d in t.shape.dim]
        if any(s <= 0 for s in shape):
            raise SystemExit(f"{model_path}: input {vi.name} has no static shape")
        f = os.path.join(work, f"{stem}.{len(specs)}.npy")
        np.save(f, rng.standard_normal(shape, dtype=np.float32))
        specs.append(f"{vi.name}={f}")
    return specs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--threads", nargs="*", type=int, default=[1])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--block-s", type=float, default=0.25)
    ap.add_argument("--harnessc-arg", action="append", default=[])
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    print(f"{'model':28s} {'thr':>3s} {'harness ms':>11s} {'ORT ms':>9s} {'ratio':>6s} {'rounds':>11s}")
    for path in a.models:
        name = os.path.splitext(os.path.basename(path))[0]
        art = os.path.join(a.work, name + ".so")
        subprocess.run([os.path.join(a.bin, "harnessc"), path, "-o", art, "-O3"] + a.harnessc_arg, check=True)
        specs = inputs_of(path, a.work)
        # The engines take one --input; a second input (a residual block's
        # r) gets each engine's own synthetic data.
        spec = specs[0] if specs else None
        for t in a.threads:
            with engines.harness_engine(a.bin, art, t, spec) as h, engines.ort_engine(path, t, spec) as o:
                times, rmed = engines.interleave([h, o], a.rounds, a.block_s)
            ratios = [x / y for x, y in zip(rmed["harness"], rmed["ort"])]
            hm = statistics.median(times["harness"]) / 1e6
            om = statistics.median(times["ort"]) / 1e6
            print(f"{name:28s} {t:3d} {hm:11.4f} {om:9.4f} {statistics.median(ratios):6.3f} "
                  f"{min(ratios):5.3f}-{max(ratios):5.3f}", flush=True)


if __name__ == "__main__":
    main()
