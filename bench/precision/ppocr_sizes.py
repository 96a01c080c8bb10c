#!/usr/bin/python3
"""Artifact sizes of the PP-OCR models at fp32, fp16 and int8-weights
(docs/precision.md, "Sizes after sharing Winograd blocks ..."):

    /usr/bin/python3 bench/precision/ppocr_sizes.py --harnessc BUILD/bin/harnessc --work DIR
        [--direct-harnessc DIRECT/bin/harnessc] [--json OUT.json]

Compiles each model with `harnessc -O3 --shape ... --precision P` and prints
file bytes, `.text` bytes and the weights blob (the `harness_weights`
symbol), and the fp16/int8 size ratios against the fp32 artifact. With
--direct-harnessc, also against the fp32 artifact of a build whose Winograd
choice is switched off (a measurement build: `return 0;` at the top of
hc_wino_choose in compiler/ops/conv_winograd.c), whose convolution kernels
are the direct ones the narrowed artifacts use.
"""
import argparse
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ASSETS = os.path.join(HERE, "..", "..", "test", "reference", "node_modules", "@gutenye", "ocr-models", "assets")
MODELS = {"ppocr_det": ("ch_PP-OCRv4_det_infer.onnx", "x=1,3,640,640"),
          "ppocr_cls": ("ch_ppocr_mobile_v2.0_cls_infer.onnx", "x=1,3,48,192"),
          "ppocr_rec": ("ch_PP-OCRv4_rec_infer.onnx", "x=1,3,48,320")}


def info(so):
    nm = subprocess.run(["nm", "-S", so], stdout=subprocess.PIPE, text=True, check=True).stdout
    weights = next(int(l.split()[1], 16) for l in nm.splitlines() if l.endswith(" harness_weights"))
    sz = subprocess.run(["size", "-A", so], stdout=subprocess.PIPE, text=True, check=True).stdout
    text = next(int(l.split()[1]) for l in sz.splitlines() if l.startswith(".text "))
    return {"bytes": os.path.getsize(so), "weights": weights, "text": text}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--harnessc", required=True)
    ap.add_argument("--direct-harnessc", default=None)
    ap.add_argument("--work", required=True)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    runs = [("fp32", args.harnessc, "fp32"), ("fp16", args.harnessc, "fp16"),
            ("int8-weights", args.harnessc, "int8-weights")]
    if args.direct_harnessc:
        runs.append(("fp32_direct", args.direct_harnessc, "fp32"))
    res = {}
    for m, (f, shape) in MODELS.items():
        r = res[m] = {}
        for tag, hc, prec in runs:
            out = os.path.join(args.work, "%s_%s.so" % (m, tag))
            subprocess.run([hc, os.path.join(ASSETS, f), "-O3", "--shape", shape, "--precision", prec, "-o", out],
                           check=True)
            r[tag] = info(out)
        line = "%-10s fp32 %10d" % (m, r["fp32"]["bytes"])
        if "fp32_direct" in r:
            line += " (direct %10d)" % r["fp32_direct"]["bytes"]
        for p in ("fp16", "int8-weights"):
            r[p]["ratio"] = r[p]["bytes"] / r["fp32"]["bytes"]
            line += "  %s %10d ratio %.4f" % (p, r[p]["bytes"], r[p]["ratio"])
            if "fp32_direct" in r:
                r[p]["ratio_direct"] = r[p]["bytes"] / r["fp32_direct"]["bytes"]
                r[p]["weights_ratio_direct"] = r[p]["weights"] / r["fp32_direct"]["weights"]
                line += " (direct %.4f)" % r[p]["ratio_direct"]
        print(line, flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
