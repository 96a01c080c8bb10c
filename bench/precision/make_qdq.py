#!/usr/bin/python3
"""Writes a QDQ-quantized copy of a float32 ONNX model, in the format
onnxruntime.quantization's quantize_static(QuantFormat.QDQ) produces (its
Python package is not available here, so the graph is built with numpy and
onnx directly):

  - activations: uint8, asymmetric, per tensor, MinMax-calibrated on random
    inputs run through ONNX Runtime (node test/reference/ort_run.js with
    every calibrated tensor added as a graph output);
  - weights of Conv, Gemm and MatMul: int8, symmetric (zero point 0, range
    [-127, 127]), per output channel (DequantizeLinear axis 0 for Conv and
    transB Gemm weights, the last axis for MatMul and plain Gemm B);
  - biases (Conv B, Gemm C): int32 with scale x_scale * w_scale (float32
    product) and zero point 0, as the quantization tools write them;
  - every input of a Conv/Gemm/MatMul that is not a constant (so both
    operands of attention MatMuls) and every output gets a
    QuantizeLinear -> DequantizeLinear pair; a Relu, or a Clip with min 0,
    that is the only consumer of such an output is removed when its output
    range starts at 0 (zero point 0: saturation of the QuantizeLinear is
    the activation, exactly), as the tools do;
  - other ops (Add, pools, Softmax, LayerNormalization...) stay float,
    between DequantizeLinear and QuantizeLinear where their neighbours are
    quantized.

usage: make_qdq.py MODEL.onnx OUT.onnx --input NAME=1x3x224x224 [--samples 8] [--seed 7]
                   [--dist uniform|normal]
The default opset is raised to 13 when lower (per-axis DequantizeLinear).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
ORT_RUN = os.path.join(REPO, "test", "reference", "ort_run.js")
QUANT_OPS = ("Conv", "Gemm", "MatMul")


def random_input(shape, seed, dist):
    """The calibration / evaluation inputs: uniform [0, 1) (as harness-bench)
    or standard normal."""
    rng = np.random.default_rng(seed)
    if dist == "normal":
        return rng.standard_normal(shape).astype(np.float32)
    return rng.random(shape, dtype=np.float32)


def ort_run(model_path, feeds, out_dir, threads=1):
    """Runs ONNX Runtime (npm onnxruntime-node) and returns the outputs in
    the model's output order."""
    os.makedirs(out_dir, exist_ok=True)
    args = ["node", ORT_RUN, model_path, out_dir, "--threads", str(threads)]
    for name, arr in feeds.items():
        p = os.path.join(out_dir, "in_%s.npy" % name.replace("/", "_"))
        np.save(p, arr)
        args.append("%s=%s" % (name, p))
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("ort_run failed: " + r.stderr)
    outs, i = [], 0
    while os.path.exists(os.path.join(out_dir, "output_%d.npy" % i)):
        outs.append(np.load(os.path.join(out_dir, "output_%d.npy" % i)))
        os.remove(os.path.join(out_dir, "output_%d.npy" % i))
        i += 1
    return outs


def constants(graph):
    """name -> numpy array of the initializers and Constant nodes."""
    c = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    for n in graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    c[n.output[0]] = numpy_helper.to_array(a.t)
    return c


def consumers(graph):
    """tensor name -> nodes reading it."""
    u = {}
    for n in graph.node:
        for x in n.input:
            u.setdefault(x, []).append(n)
    return u


def plan(model):
    """Which tensors get Q/DQ pairs, which activation nodes go, and the
    quantized ops. Returns (ops, act_of, tensors): act_of maps an op's
    output to the Relu/Clip node folded into its quantization."""
    g = model.graph
    consts = constants(g)
    users = consumers(g)
    outputs = {o.name for o in g.output}
    ops, act_of, tensors = [], {}, []

    def add(t):
        if t not in tensors:
            tensors.append(t)
    for n in g.node:
        if n.op_type not in QUANT_OPS:
            continue
        if n.op_type == "Gemm":
            attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
            if attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0:
                continue
        ops.append(n)
        for k, x in enumerate(n.input[:2]):
            if x not in consts:
                add(x)
            elif k == 0:
                break
        y = n.output[0]
        us = users.get(y, [])
        if y not in outputs and len(us) == 1 and us[0].op_type in ("Relu", "Clip"):
            a = us[0]
            lo = 0.0
            if a.op_type == "Clip":
                lo = None
                if len(a.input) > 1 and a.input[1] in consts:
                    lo = float(consts[a.input[1]])
                for at in a.attribute:
                    if at.name == "min":
                        lo = at.f
            if lo == 0.0:
                act_of[y] = a
                add(a.output[0])
                continue
        add(y)
    return ops, act_of, tensors


def calibrate(model, tensors, input_name, shape, samples, seed, dist, work):
    """MinMax ranges of `tensors` over `samples` random inputs, via ONNX Runtime."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for t in tensors:
        if t not in have:
            m.graph.output.append(helper.make_tensor_value_info(t, TensorProto.FLOAT, None))
    path = os.path.join(work, "calib.onnx")
    onnx.save(m, path)
    names = [o.name for o in m.graph.output]
    lo = {t: np.inf for t in tensors}
    hi = {t: -np.inf for t in tensors}
    for s in range(samples):
        outs = ort_run(path, {input_name: random_input(shape, seed + s, dist)}, os.path.join(work, "calib_out"))
        for name, arr in zip(names, outs):
            if name in lo:
                lo[name] = min(lo[name], float(arr.min()))
                hi[name] = max(hi[name], float(arr.max()))
    return lo, hi


def act_qparams(lo, hi):
    """uint8 asymmetric scale and zero point of a range (always holding 0)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = np.float32((hi - lo) / 255.0) if hi > lo else np.float32(1.0)
    zp = np.uint8(np.clip(np.round(-lo / scale), 0, 255))
    return scale, zp


def quantize_weight(w, axis):
    """int8 symmetric per-axis quantization: (q, scales)."""
    w = np.asarray(w, np.float32)
    red = tuple(i for i in range(w.ndim) if i != axis)
    amax = np.abs(w).max(axis=red) if red else np.abs(w)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    shp = [1] * w.ndim
    shp[axis] = -1
    q = np.clip(np.round(w / scale.reshape(shp)), -127, 127).astype(np.int8)
    return q, scale


def build(model, ops, act_of, tensors, lo, hi):
    """The QDQ graph (a new ModelProto)."""
    g = model.graph
    consts = constants(g)
    inits = {i.name: i for i in g.initializer}
    graph_inputs = {i.name for i in g.input}
    qp = {t: act_qparams(lo[t], hi[t]) for t in tensors}
    new_inits = []
    head, body = [], []
    dropped_inits = set()
    weight_of = {}  # float weight name -> DQ output name (same name)

    def q_dq(t, src, dst):
        """Q(src) -> DQ -> dst with t's parameters."""
        s, z = qp[t]
        new_inits.append(numpy_helper.from_array(np.array(s, np.float32), t + "_scale"))
        new_inits.append(numpy_helper.from_array(np.array(z, np.uint8), t + "_zero_point"))
        return [helper.make_node("QuantizeLinear", [src, t + "_scale", t + "_zero_point"], [t + "_quantized"],
                                 name=t + "_QuantizeLinear"),
                helper.make_node("DequantizeLinear", [t + "_quantized", t + "_scale", t + "_zero_point"], [dst],
                                 name=t + "_DequantizeLinear")]

    def dq_const(name, q, scale, zp, axis):
        """DequantizeLinear of a quantized constant, producing `name`."""
        new_inits.append(numpy_helper.from_array(q, name + "_quantized"))
        new_inits.append(numpy_helper.from_array(scale, name + "_scale"))
        new_inits.append(numpy_helper.from_array(zp, name + "_zero_point"))
        kw = {"axis": axis} if scale.ndim == 1 and scale.size > 1 else {}
        if scale.ndim == 1 and scale.size == 1:
            kw = {"axis": axis}
        head.append(helper.make_node("DequantizeLinear", [name + "_quantized", name + "_scale", name + "_zero_point"],
                                     [name], name=name + "_DequantizeLinear", **kw))
        dropped_inits.add(name)

    # Weights and biases.
    for n in ops:
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        x = n.input[0]
        sx = qp[x][0] if x in qp else None
        w = n.input[1]
        if w in consts and w in inits and w not in weight_of:
            wv = consts[w]
            if n.op_type == "Conv":
                axis = 0
            elif n.op_type == "Gemm":
                axis = 0 if attrs.get("transB", 0) else 1
            else:
                axis = wv.ndim - 1
            q, s = quantize_weight(wv, axis)
            dq_const(w, q, s, np.zeros(s.shape, np.int8), axis)
            weight_of[w] = s
        if len(n.input) > 2 and n.input[2] and n.input[2] in inits and sx is not None and w in weight_of:
            b = n.input[2]
            bv = consts[b].astype(np.float32)
            bs = (np.float32(sx) * weight_of[w]).astype(np.float32)
            if bv.ndim == 1 and bv.shape[0] == bs.shape[0]:
                bq = np.round(bv.astype(np.float64) / bs.astype(np.float64)).astype(np.int32)
                dq_const(b, bq, bs, np.zeros(bs.shape, np.int32), 0)
    # Activations: graph inputs first, then after each producer.
    for t in tensors:
        if t in graph_inputs:
            head.extend(q_dq(t, t, t + "_dequantized"))
    renamed_inputs = {t: t + "_dequantized" for t in tensors if t in graph_inputs}
    removed = {id(a) for a in act_of.values()}
    act_out = {a.output[0]: y for y, a in act_of.items()}
    for n in g.node:
        if id(n) in removed:
            continue
        nn = onnx.NodeProto()
        nn.CopyFrom(n)
        for i, x in enumerate(nn.input):
            if x in renamed_inputs:
                nn.input[i] = renamed_inputs[x]
        pending = []
        for i, y in enumerate(nn.output):
            t = act_of[y].output[0] if y in act_of else y
            if t in qp and t not in graph_inputs:
                nn.output[i] = t + "_float"
                pending.extend(q_dq(t, t + "_float", t))
        body.append(nn)
        body.extend(pending)
    del act_out
    out = onnx.ModelProto()
    out.CopyFrom(model)
    og = out.graph
    del og.node[:]
    og.node.extend(head + body)
    kept = [i for i in g.initializer if i.name not in dropped_inits]
    del og.initializer[:]
    og.initializer.extend(kept + new_inits)
    del og.value_info[:]
    for op in out.opset_import:
        if op.domain in ("", "ai.onnx") and op.version < 13:
            op.version = 13
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--input", required=True, help="NAME=1x3x224x224")
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--dist", default="uniform", choices=("uniform", "normal"))
    args = ap.parse_args()
    name, dims = args.input.rsplit("=", 1)
    shape = tuple(int(d) for d in dims.split("x"))
    model = onnx.load(args.model)
    ops, act_of, tensors = plan(model)
    with tempfile.TemporaryDirectory(prefix="qdq") as work:
        lo, hi = calibrate(model, tensors, name, shape, args.samples, args.seed, args.dist, work)
    q = build(model, ops, act_of, tensors, lo, hi)
    onnx.save(q, args.out)
    kinds = {}
    for n in q.graph.node:
        kinds[n.op_type] = kinds.get(n.op_type, 0) + 1
    print("%s: %d quantized ops, %d activations, %d Relu/Clip folded; %s" % (
        args.out, len(ops), len(tensors), len(act_of), ", ".join("%s %d" % kv for kv in sorted(kinds.items()))))


if __name__ == "__main__":
    sys.exit(main())
