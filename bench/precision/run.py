#!/usr/bin/python3
"""Precision benchmark (issue 5, docs/precision.md): one command,

    /usr/bin/python3 bench/precision/run.py --bin build/bin --work /tmp/precision-bench \\
        [--json precision.json] [--models resnet50,mobilenet_v2,...] [--precisions fp32,fp16,...]
        [--rounds 10] [--top1-inputs 100] [--no-latency] [--no-qdq]
    /usr/bin/python3 bench/precision/run.py --bin build/bin --work W --table precision.json   # reprint

For every benchmark model (bench/models/models.py: resnet50, mobilenet_v2,
efficientnet_b0, bert_encoder, ppocr_det, and the trained PP-OCR text classifier
and recogniser ppocr_cls, ppocr_rec; exported into --work, or copied
there beforehand) and every precision (fp32, fp16, bf16, mixed,
int8-weights) it compiles `harnessc -O3 --precision P` for the native target
and reports

  size     artifact bytes / the fp32 artifact's (issue targets: <= 0.52 for
           fp16/bf16, <= 0.28 for int8-weights); `weights ratio` is the same
           for the weights blob alone (the rest is code, manifest, tables);
  cos      cosine similarity with the fp32 artifact's outputs on fixed inputs
           (uniform [0,1), seeds 0..; for ppocr_det synthetic text pages,
           see text_page(); the minimum over inputs and outputs);
  ccos     the same after subtracting the fp32 outputs' mean over those
           inputs from both: how well the input-dependent part survives. The
           torchvision models have random (seeded) weights, and their logits
           hardly depend on the input (MobileNetV2's vary by ~1e-7), so `cos`
           alone is near 1 for any error that keeps the constant part;
  top1     top-1 agreement with the fp32 artifact over --top1-inputs random
           inputs (classifiers only; `classes` says how many distinct classes
           fp32 predicted over them: 1 means the agreement says nothing);
  latency  median latency / fp32's, 1 thread, harness-bench --serve engines
           interleaved in rounds (bench/compare/engines.py), so machine
           noise hits every precision alike.

Then, for resnet50 and mobilenet_v2, a QDQ copy (bench/precision/make_qdq.py,
calibrated with ONNX Runtime on uniform [0,1) inputs) is compiled (passes/qdq.c
turns its Q/DQ groups into QLinearConv / QLinearMatMul) and compared with
the fp32 artifact and with ONNX Runtime running the same QDQ model (1
thread, interleaved): latency ratios, and agreement with ORT's outputs
(cosine, top-1 over --qdq-inputs inputs).

Prints a table and writes JSON (--json, default WORK/precision.json).
Latency needs a quiet machine: on a shared one the ratios are noisy.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
REPO = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(BENCH, "compare"))
sys.path.insert(0, os.path.join(BENCH, "models"))
import engines  # noqa: E402
import models  # noqa: E402

PRECISIONS = ["fp32", "fp16", "bf16", "mixed", "int8-weights"]
MODELS = ["resnet50", "mobilenet_v2", "efficientnet_b0", "bert_encoder", "ppocr_det", "ppocr_cls", "ppocr_rec"]
# Top-1 agreement is measured on these; ppocr_cls and ppocr_rec are the
# ones with trained weights (ppocr_rec: argmax per time step).
CLASSIFIERS = {"resnet50", "mobilenet_v2", "efficientnet_b0", "ppocr_cls", "ppocr_rec"}
QDQ_MODELS = ["resnet50", "mobilenet_v2"]
ORT_RUN = os.path.join(REPO, "test", "reference", "ort_run.js")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def compile_model(args, onnx_path, name, precision, out):
    """harnessc -O3 --precision; returns the artifact size."""
    if not os.path.exists(out):
        cmd = [os.path.join(args.bin, "harnessc"), onnx_path, "-O3", "--shape", models.shape_flag(name),
               "-o", out]
        if precision:
            cmd += ["--precision", precision]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("harnessc %s failed: %s" % (" ".join(cmd), r.stderr))
    return os.path.getsize(out)


def weights_bytes(so):
    """Size of the artifact's weights blob (the `harness_weights` symbol)."""
    r = subprocess.run(["nm", "-S", so], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[3] == "harness_weights":
            return int(f[1], 16)
    return None


def text_page(shape, seed):
    """A synthetic document for the text detector: a light page with a dozen
    dark bars of text-line size and a little noise, normalised as PP-OCR's
    preprocessing does ((x - mean) / std, ImageNet statistics). On uniform
    noise the detector's probability map is ~0 everywhere (max ~2e-5), and
    cosine on those tails measures float noise, not the model."""
    rng = np.random.default_rng(seed)
    _, c, h, w = shape
    img = np.full((h, w, c), 0.9, np.float32)
    for _ in range(12):
        y, x = rng.integers(20, h - 40), rng.integers(0, w // 2)
        img[y:y + rng.integers(8, 30), x:x + rng.integers(80, w // 2)] = rng.uniform(0.0, 0.3)
    img += rng.normal(0, 0.05, img.shape).astype(np.float32)
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    return ((img - mean) / std).transpose(2, 0, 1)[None].astype(np.float32)


def text_line(shape, seed):
    """A synthetic text-line crop for the PP-OCR classifier and recogniser: a
    light strip with glyph-sized dark strokes of random widths and gaps (so
    the recogniser's per-step argmax varies), some upside down for the
    classifier, normalised as their preprocessing does ((x - 0.5) / 0.5)."""
    rng = np.random.default_rng(seed)
    _, c, h, w = shape
    img = np.full((h, w), rng.uniform(0.7, 1.0), np.float32)
    x = int(rng.integers(2, 12))
    while x < w - 4:
        gw = int(rng.integers(3, 14))
        top, bottom = int(rng.integers(6, 18)), int(rng.integers(30, 44))
        if rng.random() < 0.3:  # strokes of a glyph: a few vertical and horizontal bars
            img[top:bottom, x:x + 2] = rng.uniform(0.0, 0.3)
            img[top + int(rng.integers(0, 10)), x:x + gw] = rng.uniform(0.0, 0.3)
        else:
            img[top:bottom, x:x + gw] = rng.uniform(0.0, 0.4)
        x += gw + int(rng.integers(1, 10))
    if rng.random() < 0.5:
        img = img[::-1, ::-1]
    img = img + rng.normal(0, 0.05, img.shape).astype(np.float32)
    return np.repeat(((img - 0.5) / 0.5)[None, None], c, axis=1).astype(np.float32)


def make_input(name, seed):
    """Input `seed` of model `name`: a synthetic text page for ppocr_det, a
    text line for ppocr_cls / ppocr_rec, else uniform [0,1) (what
    harness-bench and make_qdq.py use)."""
    if name == "ppocr_det":
        return text_page(models.ALL[name]["shape"], seed)
    if name in ("ppocr_cls", "ppocr_rec"):
        return text_line(models.ALL[name]["shape"], seed)
    return np.random.default_rng(seed).random(models.ALL[name]["shape"], dtype=np.float32)


def input_file(args, name, seed):
    path = os.path.join(args.work, "inputs", "%s_%d.npy" % (name, seed))
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        np.save(path, make_input(name, seed))
    return path


def harness_outputs(args, so, name, seeds):
    """Outputs (list of float64 arrays) of artifact `so` for each input seed."""
    tag = os.path.basename(so)[:-3]

    def one(seed):
        out = os.path.join(args.work, "outputs", tag, str(seed))
        os.makedirs(out, exist_ok=True)
        r = subprocess.run([os.path.join(args.bin, "harness-run"), so, "--input",
                            "%s=%s" % (models.ALL[name]["input"], input_file(args, name, seed)),
                            "--outputs", out, "--format", "npy", "--threads", "1"], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("harness-run %s failed: %s" % (so, r.stderr))
        outs, i = [], 0
        while os.path.exists(os.path.join(out, "output_%d.npy" % i)):
            outs.append(np.load(os.path.join(out, "output_%d.npy" % i)).astype(np.float64))
            i += 1
        shutil.rmtree(out)
        return outs
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        return list(pool.map(one, seeds))


def ort_outputs(args, onnx_path, name, seeds):
    """ONNX Runtime's outputs of the model for each input seed."""
    res = []
    for seed in seeds:
        out = os.path.join(args.work, "outputs", "ort", str(seed))
        os.makedirs(out, exist_ok=True)
        r = subprocess.run(["node", ORT_RUN, onnx_path, out, "%s=%s" % (models.ALL[name]["input"],
                                                                          input_file(args, name, seed)),
                            "--threads", "1"], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("ort_run failed: " + r.stderr)
        outs, i = [], 0
        while os.path.exists(os.path.join(out, "output_%d.npy" % i)):
            outs.append(np.load(os.path.join(out, "output_%d.npy" % i)).astype(np.float64))
            i += 1
        shutil.rmtree(out)
        res.append(outs)
    return res


def cosine(a, b):
    a, b = a.ravel(), b.ravel()
    d = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / d) if d > 0 else (1.0 if not a.any() and not b.any() else 0.0)


def compare(ref, got):
    """(min cosine, min centred cosine) over inputs and outputs; ref, got:
    [input][output] arrays."""
    cos, ccos = 1.0, 1.0
    for o in range(len(ref[0])):
        mean = np.mean([r[o] for r in ref], axis=0)
        for r, g in zip(ref, got):
            cos = min(cos, cosine(r[o], g[o]))
            ccos = min(ccos, cosine(r[o] - mean, g[o] - mean))
    return cos, ccos


def top1(ref, got):
    """(agreement of the first output's argmax over its last axis, distinct
    classes of ref): one prediction per input for an [N, classes] output,
    one per time step for a sequence [N, T, classes] (ppocr_rec)."""
    a = np.concatenate([np.argmax(r[0], axis=-1).ravel() for r in ref])
    b = np.concatenate([np.argmax(g[0], axis=-1).ravel() for g in got])
    return float(np.mean(a == b)), len(set(a.tolist()))


def latency(args, named_engines):
    """Interleaved medians (ns) of the engines."""
    try:
        times, _ = engines.interleave(named_engines, args.rounds)
        return {k: statistics.median(v) for k, v in times.items()}
    finally:
        for e in named_engines:
            e.close()


def model_path(args, name):
    """The model's .onnx in --work (exported by bench/models/models.py if missing)."""
    return models.ensure(name, args.work)


def bench_model(args, name):
    path = model_path(args, name)
    d = os.path.join(args.work, name)
    os.makedirs(d, exist_ok=True)
    row = {}
    sos = {}
    for p in args.precisions:
        so = os.path.join(d, "%s_%s.so" % (name, p))
        log("%s: compiling %s" % (name, p))
        row[p] = {"bytes": compile_model(args, path, name, p, so), "weights_bytes": weights_bytes(so)}
        sos[p] = so
    fixed = list(range(args.fixed_inputs))
    # The cosine columns use the first --fixed-inputs of the same seeds.
    seeds = list(range(max(args.top1_inputs, args.fixed_inputs))) if name in CLASSIFIERS else fixed
    outs = {}
    for p in args.precisions:
        log("%s: running %s on %d inputs" % (name, p, len(seeds)))
        outs[p] = harness_outputs(args, sos[p], name, seeds)
    ref = outs["fp32"]
    for p in args.precisions:
        r = row[p]
        r["size_ratio"] = r["bytes"] / row["fp32"]["bytes"]
        if r["weights_bytes"] and row["fp32"]["weights_bytes"]:
            r["weights_ratio"] = r["weights_bytes"] / row["fp32"]["weights_bytes"]
        r["cosine"], r["centred_cosine"] = compare(ref[:len(fixed)], outs[p][:len(fixed)])
        if name in CLASSIFIERS:
            r["top1_agreement"], r["fp32_classes"] = top1(ref, outs[p])
            r["top1_inputs"] = len(seeds)
    if args.rounds:
        log("%s: latency, %d interleaved rounds" % (name, args.rounds))
        es = [engines.harness_engine(args.bin, sos[p], 1) for p in args.precisions]
        for e, p in zip(es, args.precisions):
            e.name = p
        med = latency(args, es)
        for p in args.precisions:
            row[p]["latency_ms"] = med[p] / 1e6
            row[p]["latency_ratio"] = med[p] / med["fp32"]
    return row


def bench_qdq(args, name, fp32_so):
    """The QDQ copy of `name`: compiled, against fp32 and ORT."""
    path = model_path(args, name)
    d = os.path.join(args.work, name)
    qdq = os.path.join(d, "%s_qdq.onnx" % name)
    if not os.path.exists(qdq):
        log("%s: making the QDQ copy" % name)
        shape = "x".join(map(str, models.ALL[name]["shape"]))
        r = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "make_qdq.py"), path, qdq, "--input",
                            "%s=%s" % (models.ALL[name]["input"], shape)], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("make_qdq.py failed: " + r.stderr)
    so = os.path.join(d, "%s_qdq.so" % name)
    log("%s: compiling the QDQ copy" % name)
    res = {"bytes": compile_model(args, qdq, name, None, so)}
    man = os.path.join(d, "%s_qdq.json" % name)
    subprocess.run([os.path.join(args.bin, "harnessc"), qdq, "-O3", "--shape", models.shape_flag(name),
                    "--emit", "manifest", "-o", man], check=True, capture_output=True)
    ops = {}
    for k in json.load(open(man))["kernels"]:
        ops[k["op"]] = ops.get(k["op"], 0) + 1
    res["kernels"] = ops
    seeds = list(range(args.qdq_inputs))
    log("%s: QDQ outputs, harness and ORT, %d inputs" % (name, len(seeds)))
    h = harness_outputs(args, so, name, seeds)
    o = ort_outputs(args, qdq, name, seeds)
    f = harness_outputs(args, fp32_so, name, seeds)
    res["cosine_vs_ort"], res["centred_cosine_vs_ort"] = compare(o, h)
    res["top1_vs_ort"], res["ort_classes"] = top1(o, h)
    res["cosine_vs_fp32"], res["centred_cosine_vs_fp32"] = compare(f, h)
    res["max_abs_diff_vs_ort"] = max(float(np.abs(a[0] - b[0]).max()) for a, b in zip(o, h))
    if args.rounds:
        log("%s: QDQ latency, %d interleaved rounds" % (name, args.rounds))
        es = [engines.harness_engine(args.bin, fp32_so, 1), engines.harness_engine(args.bin, so, 1),
              engines.ort_engine(qdq, 1)]
        es[0].name, es[1].name, es[2].name = "fp32", "qdq", "ort_qdq"
        med = latency(args, es)
        res["latency_ms"] = med["qdq"] / 1e6
        res["ort_latency_ms"] = med["ort_qdq"] / 1e6
        res["fp32_latency_ms"] = med["fp32"] / 1e6
        res["latency_vs_fp32"] = med["qdq"] / med["fp32"]
        res["latency_vs_ort"] = med["qdq"] / med["ort_qdq"]
    return res


def table(results):
    lines = ["| model | precision | size MB | size ratio | weights ratio | cos | centred cos | top-1 (fp32 classes) | "
             "latency ms | latency ratio |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, row in results["models"].items():
        for p, r in row.items():
            t1 = "%.2f (%d)" % (r["top1_agreement"], r["fp32_classes"]) if "top1_agreement" in r else "-"
            lat = ("%.2f" % r["latency_ms"], "%.3f" % r["latency_ratio"]) if "latency_ms" in r else ("-", "-")
            wr = "%.4f" % r["weights_ratio"] if "weights_ratio" in r else "-"
            lines.append("| %s | %s | %.2f | %.4f | %s | %.6f | %.6f | %s | %s | %s |" % (
                name, p, r["bytes"] / 1e6, r["size_ratio"], wr, r["cosine"], r["centred_cosine"], t1, *lat))
    if results["qdq"]:
        lines += ["", "| QDQ model | size MB | cos vs ORT | centred cos vs ORT | top-1 vs ORT (classes) | "
                  "cos vs fp32 | latency ms | vs fp32 | ORT ms | vs ORT |", "|---|---|---|---|---|---|---|---|---|---|"]
        for name, r in results["qdq"].items():
            lat = ("%.2f" % r["latency_ms"], "%.3f" % r["latency_vs_fp32"], "%.2f" % r["ort_latency_ms"],
                   "%.3f" % r["latency_vs_ort"]) if "latency_ms" in r else ("-",) * 4
            lines.append("| %s | %.2f | %.6f | %.6f | %.2f (%d) | %.6f | %s | %s | %s | %s |" % (
                name, r["bytes"] / 1e6, r["cosine_vs_ort"], r["centred_cosine_vs_ort"], r["top1_vs_ort"],
                r["ort_classes"], r["cosine_vs_fp32"], *lat))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--json")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--precisions", default=",".join(PRECISIONS))
    ap.add_argument("--rounds", type=int, default=10, help="interleaved latency rounds (0: no latency)")
    ap.add_argument("--fixed-inputs", type=int, default=5, help="inputs of the cosine columns")
    ap.add_argument("--top1-inputs", type=int, default=100)
    ap.add_argument("--qdq-inputs", type=int, default=10)
    ap.add_argument("--no-latency", action="store_true")
    ap.add_argument("--no-qdq", action="store_true")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="harness-run processes at a time (1 thread each)")
    ap.add_argument("--table", metavar="JSON", help="only print the table of a saved result")
    args = ap.parse_args()
    if args.table:
        print(table(json.load(open(args.table))))
        return
    if args.no_latency:
        args.rounds = 0
    args.precisions = args.precisions.split(",")
    if "fp32" not in args.precisions:
        args.precisions.insert(0, "fp32")
    args.fixed_inputs = min(args.fixed_inputs, args.top1_inputs)
    os.makedirs(args.work, exist_ok=True)
    machine = engines.peak(args.bin)
    results = {"machine": machine, "rounds": args.rounds, "models": {}, "qdq": {}}
    for name in args.models.split(","):
        results["models"][name] = bench_model(args, name)
    if not args.no_qdq:
        for name in QDQ_MODELS:
            if name in results["models"]:
                fp32_so = os.path.join(args.work, name, "%s_fp32.so" % name)
                results["qdq"][name] = bench_qdq(args, name, fp32_so)
    out = args.json or os.path.join(args.work, "precision.json")
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    print(table(results))
    print("\nJSON: " + out)


if __name__ == "__main__":
    main()
