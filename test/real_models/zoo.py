#!/usr/bin/env python3
"""Model-zoo sweep: exports a broad set of architectures (torchvision's, at
several opsets, input sizes and batches, quantized ones, and the small
torch.nn models of zoo_nn.py) with seeded random weights, compiles each with
harnessc, runs it on a fixed random input and compares every output with
ONNX Runtime's.

    /usr/bin/python3 test/real_models/zoo.py --bin build/bin --work build/zoo [NAME ...]
        [--opt N] [--target T] [--threads N] [--bench] [--list] [--json FILE]

NAME selects models (default: all of ZOO below; `--list` prints them). A
model is exported once into WORK/NAME.onnx (delete it to re-export), in a
child process so that one export's memory is returned before the next;
artifacts and outputs go to WORK/NAME/O<N>-<target>-t<threads>/. Weights
are random but seeded; BatchNorm statistics and every parameter an
initialiser leaves constant are randomised (randomise()). Tolerance: rtol
1e-3 and atol 1e-4 times the output's largest magnitude (at least 1);
integers exactly; quantized models within twice the difference between
ONNX Runtime's own optimisation levels (compare()). --opt, --target and
--threads choose harnessc's level and target and harness-run's threads.
`--bench` adds a rough single latency measurement at one thread: the median
of `harness-bench --threads 1` and of bench/compare/ort_bench.js --threads 1
over --iters runs each (not interleaved; for a careful comparison use
bench/compare/compare.py). Uses Debian's python3-torch 1.13 /
python3-torchvision 0.14 and onnxruntime-node from test/reference.

The detection models (kind "det") export but do not compile: their
post-processing computes shapes from NonZero/NonMaxSuppression results
(docs/shapes.md), which an ahead-of-time compiler with static shapes
refuses with an error naming the node. The whole list takes about 6
minutes on two cores with --bench once the exports exist (exporting them
first takes about 5 more); it is not part of CI (CTest
real_models_zoo_small runs seven small models in about 35 s). Results and
the bugs the sweep found: docs/testing.md. Exits non-zero if any model
fails.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
REFERENCE = os.path.join(REPO, "test", "reference")
ORT_BENCH = os.path.join(REPO, "bench", "compare", "ort_bench.js")

CLS = (1, 3, 224, 224)
# name -> (torchvision builder path, input shape, opset, kind, builder kwargs)
# kind: "cls" (one tensor in, logits out), "seg" (dict out), "video",
# "quant" (eager-mode static quantization, qnnpack, calibrated on 4 random
# inputs: QuantizeLinear/DequantizeLinear around float ops in ONNX),
# "flow" (two images in, RAFT with 2 refinement steps: one flow per step out),
# "det" (a list of one CHW image in, a variable number of detections out).
ZOO = {
    "alexnet": ("alexnet", CLS, 13, "cls", {}),
    "vgg11_bn": ("vgg11_bn", CLS, 13, "cls", {}),
    "squeezenet1_1": ("squeezenet1_1", CLS, 13, "cls", {}),
    "densenet121": ("densenet121", CLS, 13, "cls", {}),
    "googlenet": ("googlenet", CLS, 13, "cls", {"aux_logits": False, "init_weights": True}),
    "inception_v3": ("inception_v3", (1, 3, 299, 299), 13, "cls", {"aux_logits": False, "init_weights": True}),
    "shufflenet_v2_x1_0": ("shufflenet_v2_x1_0", CLS, 13, "cls", {}),
    "mnasnet1_0": ("mnasnet1_0", CLS, 13, "cls", {}),
    "mnasnet1_0_b3_rect": ("mnasnet1_0", (3, 3, 192, 256), 13, "cls", {}),
    "squeezenet1_1_op9": ("squeezenet1_1", CLS, 9, "cls", {}),
    "googlenet_op11": ("googlenet", CLS, 11, "cls", {"aux_logits": False, "init_weights": True}),
    "regnet_y_400mf_b2_odd": ("regnet_y_400mf", (2, 3, 231, 199), 13, "cls", {}),
    "mobilenet_v3_small": ("mobilenet_v3_small", CLS, 13, "cls", {}),
    "mobilenet_v3_large": ("mobilenet_v3_large", CLS, 13, "cls", {}),
    "regnet_y_400mf": ("regnet_y_400mf", CLS, 13, "cls", {}),
    "resnext50_32x4d": ("resnext50_32x4d", CLS, 13, "cls", {}),
    "wide_resnet50_2": ("wide_resnet50_2", CLS, 13, "cls", {}),
    "efficientnet_v2_s": ("efficientnet_v2_s", CLS, 13, "cls", {}),
    "convnext_tiny": ("convnext_tiny", CLS, 13, "cls", {}),
    "convnext_tiny_op17": ("convnext_tiny", CLS, 17, "cls", {}),
    "swin_t": ("swin_t", CLS, 13, "cls", {}),
    "swin_t_op17": ("swin_t", CLS, 17, "cls", {}),
    "mobilenet_v3_large_op17": ("mobilenet_v3_large", CLS, 17, "cls", {}),
    "quant_mobilenet_v2": ("quantization.mobilenet_v2", CLS, 13, "quant", {}),
    "quant_resnet18": ("quantization.resnet18", CLS, 13, "quant", {}),
    "quant_mobilenet_v3_large": ("quantization.mobilenet_v3_large", CLS, 13, "quant", {}),
    "quant_googlenet": ("quantization.googlenet", CLS, 13, "quant", {"aux_logits": False, "init_weights": True}),
    "quant_inception_v3": ("quantization.inception_v3", (1, 3, 299, 299), 13, "quant",
                           {"aux_logits": False, "init_weights": True}),
    "quant_resnet50": ("quantization.resnet50", CLS, 13, "quant", {}),
    "vit_b_16": ("vit_b_16", CLS, 13, "cls", {}),
    "vit_b_16_op17": ("vit_b_16", CLS, 17, "cls", {}),
    "maxvit_t": ("maxvit_t", CLS, 17, "cls", {}),
    "fcn_resnet50": ("segmentation.fcn_resnet50", CLS, 13, "seg", {"weights_backbone": None}),
    "deeplabv3_mobilenet_v3_large": ("segmentation.deeplabv3_mobilenet_v3_large", CLS, 13, "seg",
                                     {"weights_backbone": None}),
    "lraspp_mobilenet_v3_large": ("segmentation.lraspp_mobilenet_v3_large", CLS, 13, "seg",
                                  {"weights_backbone": None}),
    "deeplabv3_mobilenet_v3_large_520": ("segmentation.deeplabv3_mobilenet_v3_large", (1, 3, 520, 520), 13, "seg",
                                         {"weights_backbone": None}),
    "lraspp_mobilenet_v3_large_op9": ("segmentation.lraspp_mobilenet_v3_large", CLS, 9, "seg",
                                      {"weights_backbone": None}),
    "lraspp_mobilenet_v3_large_op10": ("segmentation.lraspp_mobilenet_v3_large", CLS, 10, "seg",
                                       {"weights_backbone": None}),
    "lraspp_mobilenet_v3_large_op11": ("segmentation.lraspp_mobilenet_v3_large", CLS, 11, "seg",
                                       {"weights_backbone": None}),
    "r3d_18": ("video.r3d_18", (1, 3, 8, 112, 112), 13, "video", {}),
    "mc3_18": ("video.mc3_18", (1, 3, 8, 112, 112), 13, "video", {}),
    "raft_small": ("optical_flow.raft_small", (1, 3, 128, 128), 16, "flow", {}),
    # torch.nn architectures outside torchvision (zoo_nn.py): inputs are the
    # export's own example inputs (token ids must stay below the vocabulary)
    "lstm_tagger": ("lstm_tagger", None, 13, "nn", {}),
    "gru_regressor": ("gru_regressor", None, 13, "nn", {}),
    "text_encoder": ("text_encoder", None, 13, "nn", {}),
    "text_encoder_op17": ("text_encoder", None, 17, "nn", {}),
    "dcgan_generator": ("dcgan_generator", None, 13, "nn", {}),
    "espcn_x3": ("espcn_x3", None, 13, "nn", {}),
    "unet_small": ("unet_small", None, 13, "nn", {}),
    "wavenet_like": ("wavenet_like", None, 13, "nn", {}),
    "conv3d_autoencoder": ("conv3d_autoencoder", None, 13, "nn", {}),
    "gpt_decoder": ("gpt_decoder", None, 14, "nn", {}),
    "gpt_decoder_op17": ("gpt_decoder", None, 17, "nn", {}),
    "conformer_block": ("conformer_block", None, 14, "nn", {}),
    "hifigan_like": ("hifigan_like", None, 13, "nn", {}),
    "ssdlite320_mobilenet_v3_large": ("detection.ssdlite320_mobilenet_v3_large", (3, 320, 320), 13, "det",
                                      {"weights_backbone": None}),
    "fasterrcnn_mobilenet_v3_large_320_fpn": ("detection.fasterrcnn_mobilenet_v3_large_320_fpn", (3, 320, 320),
                                              13, "det", {"weights_backbone": None}),
    "retinanet_resnet50_fpn": ("detection.retinanet_resnet50_fpn", (3, 320, 320), 13, "det",
                               {"weights_backbone": None}),
}


# ---------------------------------------------------------------- export ---
def randomise(model, gen):
    """BatchNorm statistics as export_torchvision.py randomises them, and every
    parameter its initialiser left constant (zero classification heads and
    class tokens, LayerNorm's ones and zeros, zero biases) drawn at random, so
    that no part of the graph computes something trivial."""
    import torch

    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)
                m.weight.copy_(1 + 0.1 * torch.randn(m.weight.shape, generator=gen))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))
        for p in model.parameters():
            if p.numel() and bool((p == p.flatten()[0]).all()) and float(p.flatten()[0]) in (0.0, 1.0):
                p.add_((0.02 if p.dim() >= 2 else 0.1) * torch.randn(p.shape, generator=gen))


def export_one(name, path):
    """Exports ZOO[name] to path (runs in a child process)."""
    import torch
    import torchvision

    builder_path, shape, opset, kind, kwargs = ZOO[name]
    torch.manual_seed(1234)
    gen = torch.Generator().manual_seed(5678)
    if kind == "nn":
        sys.path.insert(0, HERE)
        import zoo_nn

        build, make_inputs, inputs, outputs = zoo_nn.NN[builder_path]
        model = build()
        randomise(model, gen)
        model.eval()
        args = make_inputs(gen)
        np.savez(path + ".inputs.npz", **{n: a.numpy() for n, a in zip(inputs, args)})
        torch.onnx.export(model, args, path, input_names=inputs, output_names=outputs, opset_version=opset,
                          do_constant_folding=True)
        return
    builder = torchvision.models
    for part in builder_path.split("."):
        builder = getattr(builder, part)
    model = builder(weights=None, **kwargs)
    randomise(model, gen)
    model.eval()
    if kind == "quant":
        torch.backends.quantized.engine = "qnnpack"
        model.fuse_model()
        model.qconfig = torch.ao.quantization.get_default_qconfig("qnnpack")
        torch.ao.quantization.prepare(model, inplace=True)
        with torch.no_grad():
            for _ in range(4):
                model(torch.rand(shape, generator=gen))
        torch.ao.quantization.convert(model, inplace=True)
    x = torch.rand(shape, generator=gen)
    inputs = ["input"]
    if kind == "det":
        args = ([x],)
        outputs = ["boxes", "scores", "labels"]
    elif kind == "flow":
        args = (x, torch.roll(x, 3, dims=-1), {"num_flow_updates": 2})
        inputs = ["input", "input2"]
        outputs = ["flow1", "flow2"]
    elif kind == "seg":
        args = (x,)
        outputs = ["out", "aux"] if getattr(model, "aux_classifier", None) is not None else ["out"]
    else:
        args = (x,)
        outputs = ["logits"]
    torch.onnx.export(model, args, path, input_names=inputs, output_names=outputs, opset_version=opset,
                      do_constant_folding=True)


# ----------------------------------------------------------------- check ---
def run(cmd, timeout=None, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-4000:]}{p.stderr[-4000:]}")
    return p


def compile_model(cmd, rss_file, timeout):
    """Runs harnessc under /usr/bin/time; returns (seconds, peak RSS in MiB)."""
    t0 = time.time()
    run(["/usr/bin/time", "-f", "%M", "-o", rss_file] + cmd, timeout=timeout)
    secs = time.time() - t0
    with open(rss_file) as f:
        return secs, int(f.read().split()[-1]) / 1024


def onnx_ops(path):
    import onnx

    m = onnx.load(path, load_external_data=False)
    ops = set()

    def walk(g):
        for n in g.node:
            ops.add(n.op_type)
            for a in n.attribute:
                if a.g is not None and a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                for sg in a.graphs:
                    walk(sg)

    walk(m.graph)
    return sorted(ops)


def compare(d, rd, rtol, atol, quant_band=False):
    """Harness's outputs (rd/harness) against ORT's (d/ort): floats within
    rtol and atol times the output's largest magnitude (at least 1), since
    random-weight models reach large activations whose float32 rounding
    alone exceeds a fixed atol; integers exactly. quant_band: the model is
    quantized, and a one-step rounding difference early on (a value within
    float32 rounding of a tie) moves later outputs by whole steps; ORT
    differs from itself that way between its optimisation levels (its
    integer kernels against its float QDQ, d/ort_float), so the band is
    twice that difference."""
    worst_abs = worst_rel = 0.0
    ok = True
    i = 0
    notes = []
    while os.path.exists(os.path.join(d, "ort", f"output_{i}.npy")):
        ref = np.load(os.path.join(d, "ort", f"output_{i}.npy"))
        got = np.load(os.path.join(rd, "harness", f"output_{i}.npy"))
        if ref.shape != got.shape:
            notes.append(f"output {i}: shape {got.shape} != reference {ref.shape}")
            ok = False
            i += 1
            continue
        if ref.dtype.kind in "iub":
            if not np.array_equal(ref, got):
                notes.append(f"output {i}: {int((ref != got).sum())} of {ref.size} integers differ")
                ok = False
            i += 1
            continue
        ref = ref.astype(np.float64)
        got = got.astype(np.float64)
        err = np.abs(got - ref)
        a = float(err.max(initial=0))
        r = float((err / np.maximum(np.abs(ref), 1e-6)).max(initial=0))
        worst_abs, worst_rel = max(worst_abs, a), max(worst_rel, r)
        scale = float(np.abs(ref).max(initial=0))
        tol = atol * max(1.0, scale)
        if quant_band:
            ref2 = np.load(os.path.join(d, "ort_float", f"output_{i}.npy")).astype(np.float64)
            tol = max(tol, 2 * float(np.abs(ref2 - ref).max(initial=0)))
        if not np.allclose(got, ref, rtol=rtol, atol=tol):
            notes.append(f"output {i}: max abs {a:.3g}, max rel {r:.3g}, scale {scale:.3g}")
            ok = False
        i += 1
    if i == 0:
        raise RuntimeError("ONNX Runtime wrote no outputs")
    return ok, worst_abs, worst_rel, notes


def bench(art, model, feeds, iters):
    """Rough single-run medians at one thread: (Harness ms, ORT ms)."""
    inputs = []
    for f in feeds:
        inputs += ["--input", f]
    hb = run([os.path.join(ARGS.bin, "harness-bench"), art, "--threads", "1", "--warmup", "3", "--iters", str(iters),
              "--json"] + inputs)
    ob = run(["node", ORT_BENCH, model, "--threads", "1", "--warmup", "3", "--iters", str(iters)] + inputs)
    return json.loads(hb.stdout)["latency_ms"]["median"], json.loads(ob.stdout)["median_ms"]


def check(name):
    """Exports (once), runs ORT, compiles, runs and compares one model."""
    _, shape, opset, kind, _ = ZOO[name]
    path = os.path.join(ARGS.work, name + ".onnx")
    d = os.path.join(ARGS.work, name)
    os.makedirs(d, exist_ok=True)
    res = {"model": name, "opset": opset}
    if not os.path.exists(path):
        t0 = time.time()
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--export-one", name, path],
                           capture_output=True, text=True)
        if p.returncode != 0 or not os.path.exists(path):
            res.update(result="EXPORT-FAIL", note=(p.stderr.strip().splitlines() or ["?"])[-1][:300])
            return res
        res["export_s"] = time.time() - t0
    res["ops"] = onnx_ops(path)
    if kind == "nn":
        arrays = dict(np.load(path + ".inputs.npz"))
    else:
        names = ["input", "input2"] if kind == "flow" else ["input"]
        arrays = {nm: np.random.default_rng(k).random(shape, dtype=np.float32) for k, nm in enumerate(names)}
    feeds = []
    for nm, a in arrays.items():
        npy = os.path.join(d, f"{nm}.npy")
        np.save(npy, a)
        feeds.append(f"{nm}={npy}")
    try:
        run(["node", os.path.join(REFERENCE, "ort_run.js"), path, os.path.join(d, "ort")] + feeds)
        if kind == "quant":
            run(["node", os.path.join(REFERENCE, "ort_run.js"), path, os.path.join(d, "ort_float"), "--opt",
                 "disabled"] + feeds)
    except RuntimeError as e:
        res.update(result="ORT-FAIL", note=str(e).strip().splitlines()[-1][:300])
        return res
    tag = f"{ARGS.opt.lstrip('-')}-{ARGS.target or 'native'}-t{ARGS.threads}"
    rd = os.path.join(d, tag)
    os.makedirs(rd, exist_ok=True)
    art = os.path.join(rd, name + ".so")
    cmd = [os.path.join(ARGS.bin, "harnessc"), path, "-o", art, ARGS.opt]
    if ARGS.target:
        cmd += ["--target", ARGS.target]
    for nm, a in arrays.items():
        cmd += ["--shape", f"{nm}={'x'.join(map(str, a.shape))}"]
    try:
        res["compile_s"], res["compile_mib"] = compile_model(cmd, os.path.join(rd, "rss"), ARGS.compile_timeout)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        res.update(result="COMPILE-FAIL", note=" | ".join(str(e).strip().splitlines()[1:3])[:400])
        return res
    try:
        inputs = []
        for f in feeds:
            inputs += ["--input", f]
        run([os.path.join(ARGS.bin, "harness-run"), art, "--outputs", os.path.join(rd, "harness"), "--format", "npy",
             "--threads", str(ARGS.threads)] + inputs, timeout=600)
        ok, a, r, notes = compare(d, rd, ARGS.rtol, ARGS.atol, kind == "quant")
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        res.update(result="RUN-FAIL", note=str(e).strip().splitlines()[-1][:300])
        return res
    res.update(result="PASS" if ok else "MISMATCH", max_abs=a, max_rel=r)
    if notes:
        res["note"] = "; ".join(notes)[:400]
    if ARGS.bench and ok:
        try:
            res["harness_ms"], res["ort_ms"] = bench(art, path, feeds, ARGS.iters)
        except (RuntimeError, KeyError, ValueError) as e:
            res["note"] = f"bench: {str(e).strip().splitlines()[-1][:200]}"
    return res


def fmt(v, spec):
    return format(v, spec) if isinstance(v, (int, float)) else format("-", spec.rstrip("fgdeEG").split(".")[0] or "")


def main():
    global ARGS
    if len(sys.argv) == 4 and sys.argv[1] == "--export-one":
        export_one(sys.argv[2], sys.argv[3])
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "bin"))
    ap.add_argument("--work", default=os.path.join(REPO, "build", "zoo"))
    ap.add_argument("models", nargs="*")
    ap.add_argument("--opt", default="3", help="optimisation level 0..3 (harnessc -ON)")
    ap.add_argument("--target", help="harnessc --target (default: this machine)")
    ap.add_argument("--threads", type=int, default=1, help="harness-run threads for the comparison")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--bench", action="store_true", help="rough 1-thread latency, Harness and ORT")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--compile-timeout", type=float, default=1800)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--json", help="write every result to this file")
    ARGS = ap.parse_args()
    ARGS.opt = "-O" + ARGS.opt.lstrip("-O")
    if ARGS.list:
        for n, (b, s, o, k, _) in ZOO.items():
            print(f"{n:<40} {k:<6} opset {o:<3} {'x'.join(map(str, s)) if s else '(example inputs)'}")
        return 0
    names = ARGS.models or list(ZOO)
    for n in names:
        if n not in ZOO:
            sys.exit(f"unknown model {n}; see --list")
    os.makedirs(ARGS.work, exist_ok=True)
    results = []
    print(f"{'model':<40} {'compile s':>9} {'MiB':>6} {'max abs':>9} {'max rel':>9} {'H ms':>8} {'ORT ms':>8}  result",
          flush=True)
    for n in names:
        r = check(n)
        results.append(r)
        print(f"{n:<40} {fmt(r.get('compile_s'), '9.1f')} {fmt(r.get('compile_mib'), '6.0f')} "
              f"{fmt(r.get('max_abs'), '9.2g')} {fmt(r.get('max_rel'), '9.2g')} {fmt(r.get('harness_ms'), '8.2f')} "
              f"{fmt(r.get('ort_ms'), '8.2f')}  {r['result']}" + (f"  ({r['note']})" if r.get("note") else ""),
              flush=True)
    if ARGS.json:
        with open(ARGS.json, "w") as f:
            json.dump(results, f, indent=1)
    bad = [r["model"] for r in results if r["result"] != "PASS"]
    print(f"{len(results) - len(bad)} of {len(results)} models match ONNX Runtime" +
          (f"; not: {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
