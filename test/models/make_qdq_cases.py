#!/usr/bin/python3
"""Generates QDQ-format models (QuantizeLinear/DequantizeLinear around
Conv, Gemm and MatMul, as onnxruntime.quantization and
bench/precision/make_qdq.py write them) for passes/qdq.c, with expected
outputs from a numpy model of the QDQ semantics.

Every case: float32 graph inputs -> QuantizeLinear -> DequantizeLinear ->
op (weights: DequantizeLinear of int8 constants, per tensor or per output
channel; bias: DequantizeLinear of an int32 constant with scale
x_scale * w_scale and zero point 0) [-> Relu] -> QuantizeLinear (the
graph output, 8-bit) and, for some, -> DequantizeLinear (a float output).

Each folder holds model.onnx, test_data_set_0/{input,output}_i.pb and a
file `kernels`: one line per op type that `harnessc --emit manifest` must
show (`+QLinearConv`) or must not show (`-Conv`), so the checker
(test/precision/check_qdq.py) proves the groups were rewritten into the
integer kernels and not executed in float.

Reference. With x = (xq - zx) * sx, w = (wq - zw) * sw[m], b = bq * sx*sw[m],
QDQ gives yq = sat(rne(y / sy) + zy) for y = op(x, w) + b (Relu: max(y, 0)).
numpy computes y as the exact integer sum times sx*sw[m] (float64), then
y / sy in float64 and rounds half to even. The float32 path of a float
executor, or the float32 requantisation multiplier of an integer kernel,
may round a value that lies within float32 rounding of a .5 tie the other
way: the checker therefore accepts one quantization step of difference
and only in a small fraction of the elements (see check_qdq.py).

usage: make_qdq_cases.py OUT_DIR
then:  test/precision/check_qdq.py --bin BUILD/bin OUT_DIR
"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import casekit

RNG = np.random.default_rng(20251129)


def quantize(x, scale, zp, dtype):
    """QuantizeLinear: sat(rne(x / scale) + zp), x / scale in float32 as the
    specification writes it."""
    info = np.iinfo(dtype)
    q = np.rint(np.asarray(x, np.float32) / np.float32(scale)).astype(np.float64) + float(zp)
    return np.clip(q, info.min, info.max).astype(dtype)


def requantize(y, sy, zy, dtype):
    """The final QuantizeLinear of an exact float64 result."""
    info = np.iinfo(dtype)
    return np.clip(np.rint(y / float(sy)) + float(zy), info.min, info.max).astype(dtype)


def int8_weight(shape, axis):
    """Random int8 weights in [-127, 127] and a positive float32 scale per
    index of `axis` (None: one per tensor)."""
    q = RNG.integers(-127, 128, shape).astype(np.int8)
    n = 1 if axis is None else shape[axis]
    s = RNG.uniform(0.002, 0.02, n).astype(np.float32)
    return q, s


class Graph:
    """Collects nodes, initializers, inputs and outputs of one QDQ case."""

    def __init__(self):
        self.nodes, self.inits = [], []

    def const(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def q(self, src, dst, scale, zp):
        s = self.const(dst + "_scale", np.array(scale, np.float32))
        z = self.const(dst + "_zp", np.array(zp))
        self.nodes.append(helper.make_node("QuantizeLinear", [src, s, z], [dst], name=dst + "_Q"))
        return dst

    def dq(self, src, dst, scale, zp, axis=None):
        s = self.const(dst + "_dqscale", np.asarray(scale, np.float32))
        z = self.const(dst + "_dqzp", np.asarray(zp))
        kw = {} if axis is None else {"axis": axis}
        self.nodes.append(helper.make_node("DequantizeLinear", [src, s, z], [dst], name=dst + "_DQ", **kw))
        return dst

    def qdq_input(self, name, scale, zp):
        """Q -> DQ of a float graph input; returns the DQ output."""
        self.q(name, name + "_q", scale, zp)
        return self.dq(name + "_q", name + "_dq", scale, zp)

    def weight(self, name, q, s, axis):
        """DequantizeLinear of an int8 constant (per tensor when s has one value)."""
        self.const(name + "_int8", q)
        if s.size == 1:
            return self.dq(name + "_int8", name, s.reshape(()), np.int8(0))
        return self.dq(name + "_int8", name, s, np.zeros(s.shape, np.int8), axis)

    def bias(self, name, bq, bs):
        """DequantizeLinear of an int32 constant, scale bs (per channel), zero point 0."""
        self.const(name + "_int32", bq)
        if bs.size == 1:
            return self.dq(name + "_int32", name, bs.reshape(()), np.int32(0))
        return self.dq(name + "_int32", name, bs, np.zeros(bs.shape, np.int32), 0)


def act_params(dtype, lo, hi):
    """Scale and zero point of an 8-bit activation covering [lo, hi]."""
    info = np.iinfo(dtype)
    scale = np.float32((hi - lo) / (info.max - info.min))
    zp = np.clip(np.rint(info.min - lo / scale), info.min, info.max).astype(dtype)
    return scale, zp


def write(root, name, g, inputs, outputs, kernels, opset=13):
    """inputs/outputs: lists of (name, array); kernels: lines of `kernels`."""
    graph = helper.make_graph(g.nodes, name, [casekit.value_info(n, v) for n, v in inputs],
                              [casekit.value_info(n, v) for n, v in outputs], g.inits)
    model = casekit.make_model(graph, opset, ir_version=None)
    data = ([casekit.to_tensor(n, v) for n, v in inputs], [casekit.to_tensor(n, v) for n, v in outputs])
    casekit.write_folder(root, name, model, [data])
    with open(os.path.join(root, name, "kernels"), "w") as f:
        f.write("\n".join(kernels) + "\n")


def conv_ref(x, w, stride, pad, group):
    """float64 NCHW convolution (x, w already dequantized to exact float64)."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for oc in range(m):
        gi = oc // mg
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, gi * cg:(gi + 1) * cg, i:i + stride * oh:stride, j:j + stride * ow:stride]
                y[:, oc] += np.einsum("nchw,c->nhw", patch, w[oc, :, i, j])
    return y


def conv_case(root, name, cin, cout, hw, k, stride, pad, group, per_channel, relu, xdt, ydt, float_out):
    """Q/DQ around Conv (+ Relu): per-tensor or per-channel weights, int32 bias."""
    x = RNG.uniform(-1.0, 1.5, (1, cin, hw, hw)).astype(np.float32)
    sx, zx = act_params(xdt, -1.0, 1.5)
    wq, sw = int8_weight((cout, cin // group, k, k), 0 if per_channel else None)
    bs = (sx * sw).astype(np.float32)
    bq = RNG.integers(-2000, 2000, cout).astype(np.int32)
    g = Graph()
    xd = g.qdq_input("x", sx, zx)
    wd = g.weight("w", wq, sw, 0)
    bd = g.bias("b", bq, bs if per_channel else bs)
    g.nodes.append(helper.make_node("Conv", [xd, wd, bd], ["conv"], name="conv", kernel_shape=[k, k],
                                    strides=[stride, stride], pads=[pad] * 4, group=group))
    # Reference.
    xq = quantize(x, sx, zx, xdt).astype(np.float64)
    xr = (xq - float(zx)) * float(sx)
    swm = np.broadcast_to(sw.astype(np.float64), (cout,))
    y = conv_ref(xr, wq.astype(np.float64) * swm[:, None, None, None], stride, pad, group)
    y = y + (bq.astype(np.float64) * np.broadcast_to(bs.astype(np.float64), (cout,)))[None, :, None, None]
    src = "conv"
    if relu:
        g.nodes.append(helper.make_node("Relu", ["conv"], ["relu"], name="relu"))
        y = np.maximum(y, 0.0)
        src = "relu"
        lo, hi = 0.0, float(y.max())
    else:
        lo, hi = float(y.min()), float(y.max())
    sy, zy = act_params(ydt, lo, hi * 0.9)  # some saturation at the top
    yq = requantize(y, sy, zy, ydt)
    g.q(src, "y_q", sy, zy)
    outputs = [("y_q", yq)]
    if float_out:
        g.dq("y_q", "y", sy, zy)
        outputs = [("y", ((yq.astype(np.float64) - float(zy)) * float(sy)).astype(np.float32))]
    kernels = ["+QLinearConv", "-Conv", "-Relu"]
    write(root, name, g, [("x", x)], outputs, kernels)


def gemm_case(root, name, m, k, n, trans_b, relu):
    """Q/DQ around Gemm with per-column weight scales and an int32 bias."""
    a = RNG.uniform(-2.0, 2.0, (m, k)).astype(np.float32)
    sa, za = act_params(np.uint8, -2.0, 2.0)
    wshape, axis = ((n, k), 0) if trans_b else ((k, n), 1)
    wq, sw = int8_weight(wshape, axis)
    bs = (sa * sw).astype(np.float32)
    bq = RNG.integers(-5000, 5000, n).astype(np.int32)
    g = Graph()
    ad = g.qdq_input("a", sa, za)
    wd = g.weight("w", wq, sw, axis)
    bd = g.bias("b", bq, bs)
    g.nodes.append(helper.make_node("Gemm", [ad, wd, bd], ["gemm"], name="gemm", transB=1 if trans_b else 0))
    ar = (quantize(a, sa, za, np.uint8).astype(np.float64) - float(za)) * float(sa)
    wr = wq.astype(np.float64) * (sw.astype(np.float64)[:, None] if trans_b else sw.astype(np.float64)[None, :])
    y = ar @ (wr.T if trans_b else wr) + bq.astype(np.float64) * bs.astype(np.float64)
    src = "gemm"
    if relu:
        g.nodes.append(helper.make_node("Relu", ["gemm"], ["relu"], name="relu"))
        y = np.maximum(y, 0.0)
        src = "relu"
        sy, zy = act_params(np.uint8, 0.0, float(y.max()))
    else:
        sy, zy = act_params(np.uint8, float(y.min()), float(y.max()))
    yq = requantize(y, sy, zy, np.uint8)
    g.q(src, "y_q", sy, zy)
    g.dq("y_q", "y", sy, zy)
    out = ((yq.astype(np.float64) - float(zy)) * float(sy)).astype(np.float32)
    write(root, name, g, [("a", a)], [("y", out)], ["+QLinearConv", "-Gemm", "-Relu"])


def matmul_case(root, name, ashape, wshape, per_channel, xdt):
    """Q/DQ around MatMul with a constant int8 weight (per column or per tensor)."""
    a = RNG.uniform(-1.0, 1.0, ashape).astype(np.float32)
    sa, za = act_params(xdt, -1.0, 1.0)
    wq, sw = int8_weight(wshape, len(wshape) - 1 if per_channel else None)
    g = Graph()
    ad = g.qdq_input("a", sa, za)
    wd = g.weight("w", wq, sw, len(wshape) - 1)
    g.nodes.append(helper.make_node("MatMul", [ad, wd], ["mm"], name="mm"))
    ar = (quantize(a, sa, za, xdt).astype(np.float64) - float(za)) * float(sa)
    y = ar @ (wq.astype(np.float64) * sw.astype(np.float64))
    sy, zy = act_params(np.uint8, float(y.min()), float(y.max()))
    yq = requantize(y, sy, zy, np.uint8)
    g.q("mm", "y_q", sy, zy)
    write(root, name, g, [("a", a)], [("y_q", yq)], ["+QLinearMatMul", "-MatMul"])


def attention_case(root, name, ashape, bshape):
    """Q/DQ around an activation x activation MatMul (attention scores
    Q.K^T): both operands quantized per tensor, uint8 and int8."""
    a = RNG.uniform(-1.0, 1.0, ashape).astype(np.float32)
    b = RNG.uniform(-0.5, 1.5, bshape).astype(np.float32)
    sa, za = act_params(np.uint8, -1.0, 1.0)
    sb, zb = act_params(np.int8, -0.5, 1.5)
    g = Graph()
    ad = g.qdq_input("a", sa, za)
    bd = g.qdq_input("b", sb, zb)
    g.nodes.append(helper.make_node("MatMul", [ad, bd], ["mm"], name="mm"))
    ar = (quantize(a, sa, za, np.uint8).astype(np.float64) - float(za)) * float(sa)
    br = (quantize(b, sb, zb, np.int8).astype(np.float64) - float(zb)) * float(sb)
    y = np.matmul(ar, br)
    sy, zy = act_params(np.uint8, float(y.min()), float(y.max()))
    yq = requantize(y, sy, zy, np.uint8)
    g.q("mm", "y_q", sy, zy)
    g.dq("y_q", "y", sy, zy)
    out = ((yq.astype(np.float64) - float(zy)) * float(sy)).astype(np.float32)
    write(root, name, g, [("a", a), ("b", b)], [("y", out)], ["+QLinearMatMul", "-MatMul"])


def float_bias_case(root, name):
    """A float (not int32-quantized) bias cannot be folded exactly: the
    group must stay float (Conv present, no QLinearConv) and still be right."""
    x = RNG.uniform(-1.0, 1.0, (1, 4, 6, 6)).astype(np.float32)
    sx, zx = act_params(np.uint8, -1.0, 1.0)
    wq, sw = int8_weight((6, 4, 3, 3), 0)
    b = RNG.uniform(-0.5, 0.5, 6).astype(np.float32)
    g = Graph()
    xd = g.qdq_input("x", sx, zx)
    wd = g.weight("w", wq, sw, 0)
    g.const("b", b)
    g.nodes.append(helper.make_node("Conv", [xd, wd, "b"], ["conv"], name="conv", kernel_shape=[3, 3], pads=[1] * 4))
    xr = (quantize(x, sx, zx, np.uint8).astype(np.float64) - float(zx)) * float(sx)
    y = conv_ref(xr, wq.astype(np.float64) * sw.astype(np.float64)[:, None, None, None], 1, 1, 1)
    y = y + b.astype(np.float64)[None, :, None, None]
    sy, zy = act_params(np.uint8, float(y.min()), float(y.max()))
    g.q("conv", "y_q", sy, zy)
    write(root, name, g, [("x", x)], [("y_q", requantize(y, sy, zy, np.uint8))], ["+Conv", "-QLinearConv"])


def residual_add_case(root, name, xdt, per_axis_b):
    """A QDQ model's residual: DQ(a) + DQ(b) -> Relu -> Q, element-wise in
    float32 as written. At -O2 and above fusion evaluates the per-tensor
    QuantizeLinear/DequantizeLinear inside one FusedElementwise kernel with
    the Add and Relu (no DequantizeLinear or Add kernel left); a
    DequantizeLinear with a scale per channel (per_axis_b) is not
    element-wise and must stay a kernel of its own. The reference is the
    same float32 arithmetic in numpy."""
    shape = (2, 6, 5, 7)
    a = RNG.uniform(-1.0, 2.0, shape).astype(np.float32)
    b = RNG.uniform(-1.5, 1.0, shape).astype(np.float32)
    sa, za = act_params(xdt, -1.0, 2.0)
    sb, zb = act_params(xdt, -1.5, 1.0)
    g = Graph()
    ad = g.qdq_input("a", sa, za)
    bq = g.q("b", "b_q", sb, zb)
    bq_ = quantize(b, sb, zb, xdt)
    if per_axis_b:
        sbc = (sb * RNG.uniform(0.9, 1.1, shape[1])).astype(np.float32)
        zbc = np.full(shape[1], zb, dtype=xdt)
        bd = g.dq(bq, "b_dq", sbc, zbc, axis=1)
        bf = (bq_.astype(np.int32) - zbc.astype(np.int32)[None, :, None, None]).astype(np.float32) * \
            sbc[None, :, None, None]
    else:
        bd = g.dq(bq, "b_dq", sb, zb)
        bf = (bq_.astype(np.int32) - int(zb)).astype(np.float32) * np.float32(sb)
    af = (quantize(a, sa, za, xdt).astype(np.int32) - int(za)).astype(np.float32) * np.float32(sa)
    g.nodes.append(helper.make_node("Add", [ad, bd], ["sum"], name="add"))
    g.nodes.append(helper.make_node("Relu", ["sum"], ["relu"], name="relu"))
    y = np.maximum(af + bf, np.float32(0))
    sy, zy = act_params(np.uint8, 0.0, 2.5)
    g.q("relu", "y_q", sy, zy)
    yq = quantize(y, sy, zy, np.uint8)
    kernels = ["+FusedElementwise >=2", "-Add >=2", "-Relu >=2"]
    kernels += ["+DequantizeLinear"] if per_axis_b else ["-DequantizeLinear >=2"]
    write(root, name, g, [("a", a), ("b", b)], [("y_q", yq)], kernels)


def maxpool_ref(x, k, stride, pad, ceil):
    """MaxPool over H and W of an NCHW array (padding never wins)."""
    n, c, h, w = x.shape
    oh = (h + 2 * pad - k + (stride - 1 if ceil else 0)) // stride + 1
    ow = (w + 2 * pad - k + (stride - 1 if ceil else 0)) // stride + 1
    if ceil:  # the last window must start inside the input or the left padding
        oh -= (oh - 1) * stride >= h + pad
        ow -= (ow - 1) * stride >= w + pad
    y = np.full((n, c, oh, ow), -np.inf)
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * stride - pad, j * stride - pad
            win = x[:, :, max(r0, 0):min(r0 + k, h), max(c0, 0):min(c0 + k, w)]
            y[:, :, i, j] = win.max(axis=(2, 3))
    return y


def maxpool_case(root, name, xdt, relu, same_params, ceil):
    """DQ -> MaxPool [-> Relu] -> Q: with the same parameters on both sides
    passes/qdq.c runs the MaxPool on the 8-bit tensor (no DequantizeLinear
    kernel, an 8-bit MaxPool); otherwise it stays float, and is still
    right. The float reference: the maximum of the dequantized values,
    requantized."""
    x = RNG.uniform(-1.0, 2.0, (1, 5, 11, 12)).astype(np.float32)
    sx, zx = act_params(xdt, -1.0, 2.0)
    if relu:  # the saturation is the Relu only when the zero point is the minimum
        sx, zx = act_params(xdt, 0.0, 2.0)
    g = Graph()
    xd = g.qdq_input("x", sx, zx)
    g.nodes.append(helper.make_node("MaxPool", [xd], ["pool"], name="pool", kernel_shape=[3, 3], strides=[2, 2],
                                    pads=[1, 1, 1, 1], ceil_mode=int(ceil)))
    src = "pool"
    if relu:
        g.nodes.append(helper.make_node("Relu", ["pool"], ["relu"], name="relu"))
        src = "relu"
    sy, zy = (sx, zx) if same_params else act_params(xdt, -1.0, 2.5)
    g.q(src, "y_q", sy, zy)
    xf = (quantize(x, sx, zx, xdt).astype(np.float64) - float(zx)) * float(sx)
    y = maxpool_ref(xf.astype(np.float32).astype(np.float64), 3, 2, 1, ceil)
    if relu:
        y = np.maximum(y, 0)
    yq = quantize(y.astype(np.float32), sy, zy, xdt)
    # Rewritten, no dequantization is left anywhere (at -O2+ it would sit in
    # a FusedElementwise with the input's QuantizeLinear).
    kernels = ["+MaxPool", "-DequantizeLinear", "-FusedElementwise"] if same_params else ["+MaxPool"]
    write(root, name, g, [("x", x)], [("y_q", yq)], kernels)


def torch_export_case(root, name):
    """Q/DQ around Conv + Relu spelled as torch.onnx writes quantized
    PyTorch models: every scale, zero point and weight a Constant node (not
    an initializer), a Cast to uint8 between each QuantizeLinear and its
    DequantizeLinear, and the bias's zero point Cast(ConstantOfShape([1],
    value = int32 0), to = int32). passes/qdq.c must see through all three
    (before shape inference, which is what evaluates them) and still emit
    QLinearConv."""
    cin, cout, hw = 6, 10, 7
    x = RNG.uniform(-1.0, 1.5, (1, cin, hw, hw)).astype(np.float32)
    sx, zx = act_params(np.uint8, -1.0, 1.5)
    wq, sw = int8_weight((cout, cin, 3, 3), None)
    bs = np.float32(sx * sw[0])
    bq = RNG.integers(-2000, 2000, cout).astype(np.int32)
    nodes = []

    def const(nm, arr):
        nodes.append(helper.make_node("Constant", [], [nm], name=nm + "_c", value=numpy_helper.from_array(
            np.asarray(arr), nm)))
        return nm

    def cast(src, dst, to):
        nodes.append(helper.make_node("Cast", [src], [dst], name=dst + "_cast", to=to))
        return dst

    nodes.append(helper.make_node("QuantizeLinear", ["x", const("sx", sx), const("zx", zx)], ["xq"], name="qx"))
    cast("xq", "xq_u8", TensorProto.UINT8)
    nodes.append(helper.make_node("DequantizeLinear", ["xq_u8", const("sx2", sx), const("zx2", zx)], ["xd"],
                                  name="dqx"))
    nodes.append(helper.make_node("DequantizeLinear", [const("wq", wq), const("sw", sw.reshape(1)),
                                                       const("zw", np.zeros(1, np.int8))], ["wd"], name="dqw"))
    nodes.append(helper.make_node("ConstantOfShape", [const("bz_shape", np.array([1], np.int64))], ["bz0"],
                                  name="bz", value=numpy_helper.from_array(np.array([0], np.int32))))
    cast("bz0", "bz", TensorProto.INT32)
    nodes.append(helper.make_node("DequantizeLinear", [const("bq", bq), const("sb", np.array([bs], np.float32)), "bz"],
                                  ["bd"], name="dqb"))
    nodes.append(helper.make_node("Conv", ["xd", "wd", "bd"], ["conv"], name="conv", kernel_shape=[3, 3],
                                  pads=[1] * 4))
    nodes.append(helper.make_node("Relu", ["conv"], ["relu"], name="relu"))
    xr = (quantize(x, sx, zx, np.uint8).astype(np.float64) - float(zx)) * float(sx)
    y = conv_ref(xr, wq.astype(np.float64) * float(sw[0]), 1, 1, 1) + (bq.astype(np.float64) * float(bs))[
        None, :, None, None]
    y = np.maximum(y, 0.0)
    sy, zy = act_params(np.uint8, 0.0, float(y.max()) * 0.9)
    nodes.append(helper.make_node("QuantizeLinear", ["relu", const("sy", sy), const("zy", zy)], ["yq"], name="qy"))
    cast("yq", "y_q", TensorProto.UINT8)
    g = Graph()
    g.nodes = nodes
    write(root, name, g, [("x", x)], [("y_q", requantize(y, sy, zy, np.uint8))], ["+QLinearConv", "-Conv", "-Relu"])


def main():
    root = casekit.out_dir(__doc__)
    conv_case(root, "qdq_conv_relu", 8, 16, 10, 3, 1, 1, 1, False, True, np.uint8, np.uint8, False)
    conv_case(root, "qdq_conv_per_channel", 12, 20, 9, 3, 2, 1, 1, True, False, np.uint8, np.uint8, True)
    conv_case(root, "qdq_conv_1x1_per_channel_relu", 24, 40, 7, 1, 1, 0, 1, True, True, np.uint8, np.uint8, True)
    conv_case(root, "qdq_conv_depthwise", 16, 16, 8, 3, 1, 1, 16, True, True, np.uint8, np.uint8, False)
    conv_case(root, "qdq_conv_s8_activations", 8, 12, 8, 3, 1, 1, 1, True, False, np.int8, np.int8, True)
    # planes that are not a multiple of the requantisation's vectors (19x19:
    # 22 vectors of 16 and a tail of 9), int8 and uint8 outputs saturating
    # at the top; the bit-exact rounding cases are in make_quantization_cases
    conv_case(root, "qdq_conv_depthwise_ragged_s8", 24, 24, 19, 3, 1, 1, 24, True, False, np.int8, np.int8, False)
    conv_case(root, "qdq_conv_1x1_ragged", 16, 20, 13, 1, 1, 0, 1, True, False, np.uint8, np.uint8, False)
    gemm_case(root, "qdq_gemm_transb", 3, 64, 24, True, False)
    gemm_case(root, "qdq_gemm_relu", 2, 40, 33, False, True)
    matmul_case(root, "qdq_matmul_per_channel", (2, 5, 48), (48, 24), True, np.uint8)
    matmul_case(root, "qdq_matmul_per_tensor_s8", (7, 32), (32, 17), False, np.int8)
    attention_case(root, "qdq_attention_scores", (1, 4, 8, 16), (1, 4, 16, 8))
    float_bias_case(root, "qdq_float_bias_stays_float")
    residual_add_case(root, "qdq_residual_add_fused", np.uint8, False)
    residual_add_case(root, "qdq_residual_add_s8", np.int8, False)
    residual_add_case(root, "qdq_residual_add_per_axis_unfused", np.uint8, True)
    torch_export_case(root, "qdq_conv_relu_torch_export")
    maxpool_case(root, "qdq_maxpool_u8", np.uint8, False, True, False)
    maxpool_case(root, "qdq_maxpool_s8_ceil", np.int8, False, True, True)
    maxpool_case(root, "qdq_maxpool_relu_u8", np.uint8, True, True, False)
    maxpool_case(root, "qdq_maxpool_other_params_stays_float", np.uint8, False, False, False)


if __name__ == "__main__":
    main()
