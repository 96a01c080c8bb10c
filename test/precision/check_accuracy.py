#!/usr/bin/python3
"""Accuracy of harnessc --precision on a trained classifier (issue 5's
thresholds, docs/precision.md):

  fp16, bf16, mixed:  cosine similarity >= 0.999 with the fp32 artifact's
                      logits (the minimum over the inputs) and top-1
                      agreement >= 99% over 100 random inputs;
  int8-weights:       cosine >= 0.99.

The model is a small MobileNet-like CNN (3x3 conv + BatchNorm + ReLU,
depthwise 3x3, 1x1 expand/project convs with a residual, strides, global
pooling, a Gemm head; 10 classes, 3x32x32 inputs) trained here for a few
seconds with torch on a synthetic task (each class a fixed random smooth
pattern, inputs a random multiple of it plus strong noise). Random-weight
torchvision models do not work for this: their logits hardly depend on the
input (MobileNetV2 with random weights predicts the same class for every
input), so top-1 agreement could not fail. The trained one predicts every
class, with margins of all sizes; the test also asserts that (fp32
artifact's top-1 matches torch's on >= 98% of the inputs, >= 8 distinct
classes), and that each narrowed artifact's weights really are smaller
(manifest `weights.bytes`), so a --precision that did nothing would fail.
It also checks --keep-fp32: `Conv,Gemm` keeps every weight float32 (the
fp32 artifact's weights and outputs), `Gemm` keeps just the head.

usage: check_accuracy.py --bin BUILD/bin --work DIR [--target native] [-O 3]
exit status: 0 when every threshold holds.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

CLASSES, BATCH = 10, 100
# precision -> (min cosine, min top-1 agreement or None, max weights ratio to fp32)
THRESHOLDS = {
    "fp16": (0.999, 0.99, 0.55),
    "bf16": (0.999, 0.99, 0.55),
    "mixed": (0.999, 0.99, 0.55),
    "int8-weights": (0.99, None, 0.30),
}


def make_model(work):
    """Trains the CNN and exports it (batch BATCH); returns (onnx path, test
    inputs, torch logits)."""
    import torch
    from torch import nn
    torch.manual_seed(7)
    torch.set_num_threads(1)
    rng = np.random.default_rng(11)
    # Smooth class patterns: random 8x8 upsampled to 32x32.
    coarse = rng.standard_normal((CLASSES, 3, 8, 8)).astype(np.float32)
    patterns = np.repeat(np.repeat(coarse, 4, axis=2), 4, axis=3)

    def batch(n, r):
        y = r.integers(0, CLASSES, n)
        amp = r.uniform(0.05, 0.5, (n, 1, 1, 1)).astype(np.float32)
        x = patterns[y] * amp + r.standard_normal((n, 3, 32, 32)).astype(np.float32) * 1.5
        return x.astype(np.float32), y

    def cbr(cin, cout, k, s, groups=1):
        return [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]

    class Block(nn.Module):
        def __init__(self, c, e):
            super().__init__()
            self.body = nn.Sequential(*cbr(c, c * e, 1, 1), *cbr(c * e, c * e, 3, 1, c * e),
                                      nn.Conv2d(c * e, c, 1, bias=False), nn.BatchNorm2d(c))

        def forward(self, x):
            return x + self.body(x)

    model = nn.Sequential(*cbr(3, 32, 3, 2), Block(32, 4), *cbr(32, 64, 3, 2), Block(64, 4), *cbr(64, 128, 1, 1),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, CLASSES))
    opt = torch.optim.Adam(model.parameters(), 3e-3)
    model.train()
    for _ in range(300):
        x, y = batch(64, rng)
        loss = nn.functional.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    x, y = batch(BATCH, np.random.default_rng(12345))
    with torch.no_grad():
        logits = model(torch.from_numpy(x)).numpy()
    print("trained: accuracy %.2f on the %d test inputs (labels), loss %.3f" % (
        float((logits.argmax(1) == y).mean()), BATCH, float(loss)))
    path = os.path.join(work, "cnn.onnx")
    torch.onnx.export(model, torch.from_numpy(x), path, input_names=["input"], output_names=["logits"],
                      opset_version=13, do_constant_folding=True)
    return path, x, logits


def compile_run(args, model, x, precision, keep=None):
    """Compiles at `precision` (with --keep-fp32 `keep`), runs the batch;
    returns (logits, weights bytes)."""
    so = os.path.join(args.work, "cnn_%s%s.so" % (precision, "_keep" if keep else ""))
    base = [os.path.join(args.bin, "harnessc"), model, "-O%d" % args.O, "--target", args.target,
            "--precision", precision] + (["--keep-fp32", keep] if keep else [])
    for extra in (["-o", so], ["--emit", "manifest", "-o", so + ".json"]):
        r = subprocess.run(base + extra, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("harnessc --precision %s failed: %s" % (precision, r.stderr))
    np.save(os.path.join(args.work, "input.npy"), x)
    out = os.path.join(args.work, "out_" + precision)
    os.makedirs(out, exist_ok=True)
    r = subprocess.run([os.path.join(args.bin, "harness-run"), so, "--input",
                        "input=" + os.path.join(args.work, "input.npy"), "--outputs", out, "--format", "npy",
                        "--threads", "2"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("harness-run (%s) failed: %s" % (precision, r.stderr))
    weights = json.load(open(so + ".json"))["weights"]["bytes"]
    return np.load(os.path.join(out, "output_0.npy")).astype(np.float64), weights


def cosines(a, b):
    """Per-row cosine similarity."""
    return (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--target", default="native")
    ap.add_argument("-O", type=int, default=3)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    model, x, torch_logits = make_model(args.work)
    ref, ref_w = compile_run(args, model, x, "fp32")
    failures = []
    top = ref.argmax(1)
    agree_torch = float((top == torch_logits.argmax(1)).mean())
    distinct = len(set(top.tolist()))
    srt = np.sort(ref, 1)
    margins = srt[:, -1] - srt[:, -2]
    print("fp32: top-1 agreement with torch %.2f, %d distinct classes, top-1 margins min %.3g median %.3g, "
          "weights %d bytes" % (agree_torch, distinct, margins.min(), np.median(margins), ref_w))
    if agree_torch < 0.98 or distinct < 8:
        failures.append("fp32 artifact: agreement with torch %.2f (>= 0.98), %d classes (>= 8)" % (
            agree_torch, distinct))
    print("%-13s %10s %10s %8s %8s" % ("precision", "min cos", "cos(all)", "top-1", "weights"))
    for p, (min_cos, min_top1, max_w) in THRESHOLDS.items():
        got, w = compile_run(args, model, x, p)
        cos = float(cosines(got, ref).min())
        cos_all = float(cosines(got.reshape(1, -1), ref.reshape(1, -1))[0])
        agree = float((got.argmax(1) == top).mean())
        print("%-13s %10.6f %10.6f %8.2f %8.3f" % (p, cos, cos_all, agree, w / ref_w))
        if cos < min_cos:
            failures.append("%s: min cosine %.6f < %g" % (p, cos, min_cos))
        if min_top1 is not None and agree < min_top1:
            failures.append("%s: top-1 agreement %.2f < %g" % (p, agree, min_top1))
        if w > max_w * ref_w:
            failures.append("%s: weights %d bytes, more than %g of fp32's %d" % (p, w, max_w, ref_w))
    # --keep-fp32 overrides the policy: every Conv and the Gemm kept float32
    # gives the fp32 artifact's weights and outputs; keeping only the Gemm
    # (the classifier head) keeps more bytes than int8-weights alone.
    got, w = compile_run(args, model, x, "int8-weights", "Conv,Gemm")
    print("int8-weights --keep-fp32 Conv,Gemm: weights %d bytes, max |diff| %.3g" % (w, np.abs(got - ref).max()))
    if w != ref_w or np.abs(got - ref).max() > 1e-5 * np.abs(ref).max():
        failures.append("--keep-fp32 Conv,Gemm did not keep every weight float32")
    _, w_all = compile_run(args, model, x, "int8-weights")
    _, w_gemm = compile_run(args, model, x, "int8-weights", "Gemm")
    print("int8-weights --keep-fp32 Gemm: weights %d bytes (int8-weights alone %d)" % (w_gemm, w_all))
    if not w_all < w_gemm < ref_w:
        failures.append("--keep-fp32 Gemm: weights %d bytes, expected between %d and %d" % (w_gemm, w_all, ref_w))
    for f in failures:
        print("FAIL " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
