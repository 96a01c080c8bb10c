#!/usr/bin/python3
"""Generates the end-to-end cases of harnessc --precision (docs/precision.md):
Conv, Gemm and MatMul shapes that reach every kernel that reads narrowed
weights (convolution "pixels", "channels" with and without reduction slices,
1x1-as-GEMM, depthwise, Winograd F(2,3) and F(4,3) building U from the
narrowed weights; Gemm with and without transB, C, ragged panels; MatMul
folded, batched B, GEMV-like), with and without a fused Relu.

Each case is written once per precision (fp16, bf16, int8-weights) as
OUT/<case>_<precision>/ (model.onnx, test_data_set_0/{input,output}_i.pb,
and a file `precision` naming the harnessc flag). The float32 weights are
chosen on the grid of that precision (float16 / bfloat16 values; int8:
q * scale per output channel with max |q| = 127), so narrowing them loses
nothing and the expected outputs (numpy, float64) hold for the narrowed
artifact up to float32 rounding: what is checked is that every kernel
reads, widens and scales the weights it is given exactly right. A case may
also name kernels (a file `expect_kernels`, one name fragment per line)
that its -O2+ manifest must contain and its -O0/-O1 one must not: the
Winograd cases take that path only once pack-weights has stored the
narrowed weights for it.

usage: make_precision_cases.py OUTPUT_DIR
then:  test/precision/check_precision.py --bin BUILD/bin OUTPUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(2024)
PRECISIONS = ("fp16", "bf16", "int8-weights")


def bf16_round(x):
    """x rounded to the nearest bfloat16 (ties to even), as float32."""
    a = np.asarray(x, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    bits = (bits + np.uint64(0x7FFF) + ((bits >> np.uint64(16)) & np.uint64(1))) & np.uint64(0xFFFF0000)
    return bits.astype(np.uint32).view(np.float32).reshape(a.shape)


def on_grid(w, precision, channel_of):
    """Float32 weights like w that `precision` represents exactly. For
    int8-weights, channel_of(w) gives each element's output channel (an
    integer array of w's shape): q in [-127, 127] with one +-127 per channel,
    times a positive scale per channel that float16 holds (the artifact
    stores the scales as float16, shifted by a power of two per tensor:
    passes/precision.c, q8_scales)."""
    w = np.asarray(w, dtype=np.float32)
    if precision == "fp16":
        return w.astype(np.float16).astype(np.float32)
    if precision == "bf16":
        return bf16_round(w)
    ch = channel_of(w)
    n = int(ch.max()) + 1
    return int8_grid(w.shape, ch, RNG.uniform(0.002, 0.05, n).astype(np.float16).astype(np.float32))


def int8_grid(shape, ch, scale):
    """q * scale[ch] with q in [-127, 127] and one +-127 per channel."""
    n = len(scale)
    q = RNG.integers(-127, 128, shape).astype(np.float32)
    flat_ch, flat_q = ch.ravel(), q.ravel()
    for c in range(n):
        idx = np.flatnonzero(flat_ch == c)
        flat_q[idx[RNG.integers(0, len(idx))]] = 127 * (1 if RNG.random() < 0.5 else -1)
    return (flat_q.reshape(shape) * scale[ch]).astype(np.float64)


def write(root, name, precision, nodes, inputs, outputs, inits, opset=17, expect_kernels=()):
    """One test folder: inputs/outputs/inits are (name, float32 array) lists."""
    d = os.path.join(root, "%s_%s" % (name, precision))
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    vi = lambda n, a: helper.make_tensor_value_info(n, TensorProto.FLOAT, list(a.shape))
    graph = helper.make_graph(nodes, name, [vi(n, a) for n, a in inputs], [vi(n, a) for n, a in outputs],
                              [numpy_helper.from_array(np.asarray(a, np.float32), n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="make_precision_cases")
    model.ir_version = 8
    onnx.save(model, os.path.join(d, "model.onnx"))
    for kind, items in (("input", inputs), ("output", outputs)):
        for i, (n, a) in enumerate(items):
            t = numpy_helper.from_array(np.asarray(a, np.float32), n)
            with open(os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, i)), "wb") as f:
                f.write(t.SerializeToString())
    with open(os.path.join(d, "precision"), "w") as f:
        f.write(precision + "\n")
    if expect_kernels:
        with open(os.path.join(d, "expect_kernels"), "w") as f:
            f.write("".join(k + "\n" for k in expect_kernels))


def conv_ref(x, w, b, stride, pad, group):
    """NCHW convolution in float64 (symmetric pads)."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    N, C, H, W = x.shape
    M, Cg, KH, KW = w.shape
    OH, OW = (H - KH) // stride + 1, (W - KW) // stride + 1
    Mg = M // group
    y = np.zeros((N, M, OH, OW))
    for g in range(group):
        xs = x[:, g * Cg:(g + 1) * Cg]
        for kh in range(KH):
            for kw in range(KW):
                patch = xs[:, :, kh:kh + stride * OH:stride, kw:kw + stride * OW:stride]
                y[:, g * Mg:(g + 1) * Mg] += np.einsum("nchw,mc->nmhw", patch, w[g * Mg:(g + 1) * Mg, :, kh, kw])
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y


def conv_case(root, name, x_shape, M, k, stride=1, pad=0, group=1, bias=True, relu=False, expect_kernels=()):
    N, C, H, W = x_shape
    for p in PRECISIONS:
        x = RNG.standard_normal(x_shape).astype(np.float32)
        w0 = RNG.standard_normal((M, C // group, k, k)).astype(np.float32) * 0.2
        w = on_grid(w0, p, lambda a: np.arange(a.shape[0]).reshape(-1, 1, 1, 1) + np.zeros(a.shape, np.int64))
        b = RNG.standard_normal(M).astype(np.float32) if bias else None
        y = conv_ref(x, w, b, stride, pad, group)
        if relu:
            y = np.maximum(y, 0)
        attrs = {"kernel_shape": [k, k], "strides": [stride, stride], "pads": [pad] * 4, "group": group}
        ins = ["x", "w"] + (["b"] if bias else [])
        nodes = [helper.make_node("Conv", ins, ["c" if relu else "y"], **attrs)]
        if relu:
            nodes.append(helper.make_node("Relu", ["c"], ["y"]))
        inits = [("w", w)] + ([("b", b)] if bias else [])
        write(root, name, p, nodes, [("x", x)], [("y", y.astype(np.float32))], inits, expect_kernels=expect_kernels)


def input_layer_case(root, name):
    """The input-layer rule (passes/precision.c): a small first convolution
    that reads the graph input keeps float32 weights, so its weights here are
    NOT on the precision's grid (narrowing them would move the outputs by
    ~1e-3 relative, far past the checker's tolerance); the two later
    convolutions, ~190x its weight bytes, are narrowed, weights on the grid."""
    chan = lambda a: np.arange(a.shape[0]).reshape(-1, 1, 1, 1) + np.zeros(a.shape, np.int64)
    for p in PRECISIONS:
        x = RNG.standard_normal((1, 3, 12, 12)).astype(np.float32)
        w1 = (RNG.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
        w2 = on_grid(RNG.standard_normal((64, 8, 3, 3)).astype(np.float32) * 0.2, p, chan)
        w3 = on_grid(RNG.standard_normal((64, 64, 3, 3)).astype(np.float32) * 0.05, p, chan)
        y = x
        for w in (w1, w2, w3):
            y = conv_ref(y, w, None, 1, 1, 1).astype(np.float32)
        conv = lambda i, w, o: helper.make_node("Conv", [i, w], [o], kernel_shape=[3, 3], pads=[1] * 4)
        nodes = [conv("x", "w1", "h1"), conv("h1", "w2", "h2"), conv("h2", "w3", "y")]
        write(root, name, p, nodes, [("x", x)], [("y", y)], [("w1", w1), ("w2", w2), ("w3", w3)])


def int8_scale_range_case(root, name, op, low_exp, spread=20, dead=False, plane=9, channels=16, expect_kernels=()):
    """int8-weights scales far from 1 (passes/precision.c, q8_scales): output
    channel c's scale is a float16 value times 2^-e_c, e_c spread over
    [low_exp - spread, low_exp] (all e_c > 106: the scales are too small for
    the shifted float16 form, so the artifact keeps them float32), and a
    Mul by 2^e_c after the product brings every channel back to O(1), so that
    the checker's tolerance tests each channel's scale to float32 rounding.
    With `dead`, one channel's weights are 2^-60 of the others' and its Mul
    is 1: it checks that such a channel (trained models have some) does not
    shift the other channels' scales out of float16's range. `plane` and
    `channels`: the Conv's input height and width and its input channels
    (16 and 48: a Winograd F(2,3) convolution)."""
    p = "int8-weights"
    M = 24
    e = RNG.integers(low_exp - spread, low_exp + 1, M)
    if dead:
        e[5] = low_exp + 60
    mant = RNG.uniform(0.5, 1.0, M).astype(np.float16).astype(np.float64)
    scale = np.ldexp(mant, -e)
    comp = np.ldexp(1.0, e)
    if dead:
        comp[5] = 1.0
    if op == "Conv":
        x = RNG.standard_normal((1, channels, plane, plane)).astype(np.float32)
        shape = (M, channels, 3, 3)
        w = int8_grid(shape, np.arange(M).reshape(-1, 1, 1, 1) + np.zeros(shape, np.int64), scale)
        b = RNG.standard_normal(M) * scale * 50
        y = conv_ref(x.astype(np.float64), w, b, 1, 0, 1) * comp.reshape(1, -1, 1, 1)
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3]),
                 helper.make_node("Mul", ["c", "k"], ["y"])]
        inits = [("w", w), ("b", b), ("k", comp.reshape(1, -1, 1, 1))]
    else:
        x = RNG.standard_normal((3, 40)).astype(np.float32)
        shape = (40, M)
        w = int8_grid(shape, np.arange(M).reshape(1, -1) + np.zeros(shape, np.int64), scale)
        y = (x.astype(np.float64) @ w) * comp.reshape(1, -1)
        nodes = [helper.make_node("MatMul", ["x", "w"], ["c"]), helper.make_node("Mul", ["c", "k"], ["y"])]
        inits = [("w", w), ("k", comp.reshape(1, -1))]
    write(root, name, p, nodes, [("x", x)], [("y", y.astype(np.float32))], inits, expect_kernels=expect_kernels)


def gemm_case(root, name, M, K, N, trans_b=0, c=None, relu=False):
    for p in PRECISIONS:
        a = RNG.standard_normal((M, K)).astype(np.float32)
        bshape = (N, K) if trans_b else (K, N)
        b0 = RNG.standard_normal(bshape).astype(np.float32) * 0.2
        chan = (lambda t: np.arange(N).reshape(-1, 1) + np.zeros(bshape, np.int64)) if trans_b else \
            (lambda t: np.arange(N).reshape(1, -1) + np.zeros(bshape, np.int64))
        b = on_grid(b0, p, chan)
        bt = b.T if trans_b else b
        y = a.astype(np.float64) @ bt.astype(np.float64)
        ins, inits = ["a", "b"], [("b", b)]
        if c is not None:
            cv = RNG.standard_normal(c).astype(np.float32)
            y = y + cv
            ins.append("c")
            inits.append(("c", cv))
        if relu:
            y = np.maximum(y, 0)
        nodes = [helper.make_node("Gemm", ins, ["g" if relu else "y"], transB=trans_b)]
        if relu:
            nodes.append(helper.make_node("Relu", ["g"], ["y"]))
        write(root, name, p, nodes, [("a", a)], [("y", y.astype(np.float32))], inits, opset=13)


def matmul_case(root, name, a_shape, b_shape, relu=False):
    K, N = b_shape[-2], b_shape[-1]
    for p in PRECISIONS:
        a = RNG.standard_normal(a_shape).astype(np.float32)
        b0 = RNG.standard_normal(b_shape).astype(np.float32) * 0.2
        nmat = int(np.prod(b_shape[:-2])) if len(b_shape) > 2 else 1

        def chan(t):
            mat = np.arange(nmat).reshape(b_shape[:-2] + (1, 1)) if len(b_shape) > 2 else 0
            return (mat * N + np.arange(N).reshape(1, -1)) + np.zeros(b_shape, np.int64)
        b = on_grid(b0, p, chan)
        y = np.matmul(a.astype(np.float64), b.astype(np.float64))
        nodes = [helper.make_node("MatMul", ["a", "b"], ["m" if relu else "y"])]
        if relu:
            y = np.maximum(y, 0)
            nodes.append(helper.make_node("Relu", ["m"], ["y"]))
        write(root, name, p, nodes, [("a", a)], [("y", y.astype(np.float32))], [("b", b)])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    os.makedirs(root, exist_ok=True)
    # Convolutions: the fast kernels are chosen from shapes (compiler/ops/conv.c).
    conv_case(root, "conv_pixels", (1, 3, 20, 21), 8, 3, pad=1)
    conv_case(root, "conv_pixels_s2_relu", (2, 4, 17, 17), 13, 5, stride=2, pad=2, relu=True)
    conv_case(root, "conv_channels", (1, 64, 8, 8), 40, 3, pad=1)
    conv_case(root, "conv_channels_slices", (1, 128, 6, 7), 48, 3, pad=1, relu=True)
    conv_case(root, "conv_channels_grouped", (1, 64, 7, 7), 64, 3, pad=1, group=2, bias=False)
    conv_case(root, "conv_1x1_gemm", (1, 32, 18, 19), 24, 1)
    conv_case(root, "conv_1x1_gemm_kslices_relu", (1, 600, 9, 36), 20, 1, relu=True)
    conv_case(root, "conv_1x1_small_plane", (1, 96, 7, 7), 64, 1)
    conv_case(root, "conv_gemv_se", (1, 48, 1, 1), 200, 1)
    conv_case(root, "conv_gemv_head_relu", (2, 16, 5, 5), 40, 5, relu=True)
    conv_case(root, "conv_depthwise", (1, 16, 15, 15), 16, 3, pad=1, group=16)
    conv_case(root, "conv_depthwise_s2_relu", (1, 24, 14, 13), 24, 5, stride=2, pad=2, group=24, relu=True)
    # Winograd (compiler/ops/conv_winograd.c, hc_wino_choose): F(2,3) on a
    # 14x14 plane with output channels past the last whole panel; input
    # channels in three reduction blocks; F(4,3) with a fused Relu; and a
    # plane large enough for several blocks of tiles in two lanes. Narrowed
    # weights take Winograd only when they outweigh its tables 4 to 1, so
    # the channel counts are large enough for int8.
    conv_case(root, "conv_winograd_f2", (1, 24, 14, 14), 40, 3, pad=1, expect_kernels=["wino2_mm"])
    conv_case(root, "conv_winograd_f2_kblocks", (1, 150, 12, 12), 64, 3, pad=1, expect_kernels=["wino2_mm"])
    conv_case(root, "conv_winograd_f4_relu", (1, 32, 22, 22), 33, 3, pad=1, relu=True, expect_kernels=["wino4_mm"])
    conv_case(root, "conv_winograd_f4_blocks", (1, 96, 48, 48), 64, 3, pad=1, expect_kernels=["wino4_mm"])
    input_layer_case(root, "input_layer_stays_fp32")
    # Gemm and MatMul: B read in place, packed at compile time (-O2+) or by a
    # packing kernel (-O1, large B).
    gemm_case(root, "gemm_small", 5, 70, 45, c=(45,))
    gemm_case(root, "gemm_transb_relu", 9, 64, 100, trans_b=1, c=(1, 100), relu=True)
    gemm_case(root, "gemm_large_transb", 3, 300, 600, trans_b=1, c=(600,))
    gemm_case(root, "gemm_large", 20, 260, 130)
    gemm_case(root, "gemm_long_k", 14, 1500, 40, c=(14, 40))
    matmul_case(root, "matmul_folded", (2, 7, 64), (64, 40))
    matmul_case(root, "matmul_batched_b_relu", (3, 5, 16), (3, 16, 24), relu=True)
    matmul_case(root, "matmul_gemv", (1, 256), (256, 1000))
    matmul_case(root, "matmul_seq", (1, 33, 200), (200, 120))
    # int8 scales across float16's range and past it.
    int8_scale_range_case(root, "int8_scales_wide_conv", "Conv", 24, dead=True)
    int8_scale_range_case(root, "int8_scales_wide_matmul", "MatMul", 8, dead=True)
    int8_scale_range_case(root, "int8_scales_float32_conv", "Conv", 120, spread=8)
    int8_scale_range_case(root, "int8_scales_wide_winograd", "Conv", 24, dead=True, plane=16, channels=48,
                          expect_kernels=["wino2_mm"])
    int8_scale_range_case(root, "int8_scales_float32_winograd", "Conv", 120, spread=8, plane=16, channels=48,
                          expect_kernels=["wino2_mm"])


if __name__ == "__main__":
    main()
