#!/usr/bin/python3
"""Runs the QDQ cases of test/models/make_qdq_cases.py: each case is
compiled at every requested -O level and target, and

 1. `harnessc --emit manifest` must list a kernel of every op type the
    case's `kernels` file marks `+` and none of the ones it marks `-` (so
    `+QLinearConv -Conv` proves the Q/DQ group became an integer kernel and
    no float convolution is left); a line ending in ` >=N` applies only at
    -O N and above (fusion runs from -O2);
 2. the artifact's outputs (harness-run) must match the numpy QDQ reference
    within one quantization step, and be exact in all but --max-off
    (default 2%) of the elements.

Why one step: the reference rounds the exact real result (integer sum times
scales, float64) half to even; the artifact requantises with a float32
multiplier and its QuantizeLinear of the float inputs may compute x / s
with a different float32 rounding, so a value within float32 rounding of a
.5 tie may land one step away. Anything else (a wrong zero point, scale,
bias or channel) moves many elements by many steps and fails.

usage: check_qdq.py --bin BUILD/bin [--levels 1,3] [--targets native,x86-64-v3]
                    [--max-off 0.02] [-j N] CASES_DIR
exit status: 0 when every case passes.
"""
import json
import os
import subprocess
import tempfile

import caserun  # test/precision/caserun.py, beside this script
import numpy as np
import onnx
from onnx import numpy_helper


def output_steps(model_path):
    """Graph output name -> (scale, zero point or None) that turns its values
    into quantization steps: the QuantizeLinear producing it, or the
    DequantizeLinear producing it (whose input is quantized), directly or
    through a Cast (torch.onnx writes one after each QuantizeLinear). Scales
    are initializers or Constant nodes."""
    m = onnx.load(model_path)
    consts = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    steps = {}
    for n in m.graph.node:
        s = consts.get(n.input[1]) if n.op_type in ("QuantizeLinear", "DequantizeLinear") else None
        if s is not None and s.size == 1:
            steps[n.output[0]] = (float(s), n.op_type == "DequantizeLinear")
        if n.op_type == "Cast" and n.input[0] in steps:
            steps[n.output[0]] = steps[n.input[0]]
    return [steps[o.name] for o in m.graph.output]


def run_case(args, case, level, target):
    """Returns None on success, else the reason."""
    want_ops = [ln.strip() for ln in open(os.path.join(case, "kernels")) if ln.strip()]
    model = os.path.join(case, "model.onnx")
    hc = os.path.join(args.bin, "harnessc")
    with tempfile.TemporaryDirectory(prefix="hxqdq") as tmp:
        man = os.path.join(tmp, "manifest.json")
        base = [hc, model, "-O%d" % level, "--target", target]
        r = subprocess.run(base + ["--emit", "manifest", "-o", man], capture_output=True, text=True)
        if r.returncode != 0:
            return "manifest failed: " + r.stderr.strip()
        ops = set()
        for k in json.load(open(man))["kernels"]:
            ops.update(p for p in k["op"].replace("+", " ").split())
        for line in want_ops:
            # "+Op" / "-Op", optionally ">=N": only at -O N and above
            w, _, min_level = line.partition(" >=")
            if min_level and level < int(min_level):
                continue
            if w[0] == "+" and w[1:] not in ops:
                return "no %s kernel (kernels: %s)" % (w[1:], ", ".join(sorted(ops)))
            if w[0] == "-" and w[1:] in ops:
                return "a %s kernel is left (kernels: %s)" % (w[1:], ", ".join(sorted(ops)))
        why, data = caserun.compile_and_run(args, base, case, tmp)
        if why:
            return why
        for i, (scale, is_float) in enumerate(output_steps(model)):
            want = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, "output_%d.pb" % i)))
            got = np.load(os.path.join(tmp, "output_%d.npy" % i))
            if got.shape != want.shape or got.dtype != want.dtype:
                return "output %d: %s %s, expected %s %s" % (i, got.dtype, got.shape, want.dtype, want.shape)
            diff = got.astype(np.float64) - want.astype(np.float64)
            if is_float:
                diff /= scale
            steps = np.abs(np.rint(diff))
            off = int((steps > 0).sum())
            if steps.max() > 1 or off > args.max_off * steps.size:
                k = int(np.argmax(steps))
                return "output %d: %d of %d elements differ, max %d steps (at %d: %s vs %s)" % (
                    i, off, steps.size, int(steps.max()), k, got.ravel()[k], want.ravel()[k])
    return None


def main():
    ap = caserun.parser()
    ap.add_argument("--max-off", type=float, default=0.02)
    caserun.run_all(ap.parse_args(), "kernels", run_case)


if __name__ == "__main__":
    main()
