#!/usr/bin/env python3
"""Writes single-operator ONNX models at the shapes the benchmark models use,
for timing the GEMM and convolution kernels one at a time with kbench.

    /usr/bin/python3 bench/kernels/make_kernel_models.py OUTDIR [--check]

Each model is OUTDIR/<name>.onnx with one float32 input "x" (and "b" for
products whose B is a run-time tensor); weights are seeded random
constants. With --check, also writes OUTDIR/<name>/input_*.npy and the numpy
reference OUTDIR/<name>/expected.npy, so a run can be compared (see
bench/kernels/README.md). Shapes: SGEMM 256..1024 square (B as input and as
a constant), BERT-like encoder products, and the convolutions of ResNet-50,
MobileNetV2 and PP-OCRv4 det (1x1, 3x3, strided, depthwise, first layers),
and ResNet-50's MaxPool.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(7)


def save(outdir, name, nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, os.path.join(outdir, name + ".onnx"))


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def matmul_case(outdir, name, M, K, N, const_b, check):
    b = (RNG.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32)
    inits = [numpy_helper.from_array(b, "B")] if const_b else []
    inputs = [vi("x", (M, K))] + ([] if const_b else [vi("B", (K, N))])
    save(outdir, name, [helper.make_node("MatMul", ["x", "B"], ["y"])], inputs, [vi("y", (M, N))], inits)
    if check:
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        x = RNG.standard_normal((M, K)).astype(np.float32)
        np.save(os.path.join(d, "input_0.npy"), x)
        if not const_b:
            np.save(os.path.join(d, "input_1.npy"), b)
        np.save(os.path.join(d, "expected.npy"), x.astype(np.float64) @ b.astype(np.float64))


def maxpool_case(outdir, name, C, H, W, k, stride, pad, check):
    oh, ow = (H + 2 * pad - k) // stride + 1, (W + 2 * pad - k) // stride + 1
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)
    save(outdir, name, [node], [vi("x", (1, C, H, W))], [vi("y", (1, C, oh, ow))], [])
    if check:
        import torch  # reference only
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        x = RNG.standard_normal((1, C, H, W)).astype(np.float32)
        np.save(os.path.join(d, "input_0.npy"), x)
        y = torch.nn.functional.max_pool2d(torch.from_numpy(x).double(), k, stride, pad)
        np.save(os.path.join(d, "expected.npy"), y.numpy())


def conv_ref(x, w, b, stride, pad, group, dil=1):
    import torch  # reference only
    y = torch.nn.functional.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double(),
                                   torch.from_numpy(b).double(), stride=stride, padding=pad, dilation=dil, groups=group)
    return y.numpy()


def conv_case(outdir, name, C, H, W, M, k, stride, pad, group, relu, check, dil=1, residual=False):
    """residual: y = Relu(Conv(x) + r), r a second input shaped like the
    output (ResNet's bottleneck ends, whose Add and Relu fuse into the
    convolution's epilogue)."""
    w = (RNG.standard_normal((M, C // group, k, k)) / np.sqrt(C // group * k * k)).astype(np.float32)
    b = (RNG.standard_normal(M) * 0.1).astype(np.float32)
    oh = (H + 2 * pad - dil * (k - 1) - 1) // stride + 1
    ow = (W + 2 * pad - dil * (k - 1) - 1) // stride + 1
    nodes = [helper.make_node("Conv", ["x", "W", "Bias"], ["c" if relu or residual else "y"], kernel_shape=[k, k],
                              strides=[stride, stride], pads=[pad] * 4, group=group, dilations=[dil, dil])]
    inputs = [vi("x", (1, C, H, W))]
    if residual:
        nodes += [helper.make_node("Add", ["c", "r"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
        inputs.append(vi("r", (1, M, oh, ow)))
    elif relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    save(outdir, name, nodes, inputs, [vi("y", (1, M, oh, ow))],
         [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "Bias")])
    if check:
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        x = RNG.standard_normal((1, C, H, W)).astype(np.float32)
        np.save(os.path.join(d, "input_0.npy"), x)
        y = conv_ref(x, w, b, stride, pad, group, dil)
        if residual:
            r = RNG.standard_normal(y.shape).astype(np.float32)
            np.save(os.path.join(d, "input_1.npy"), r)
            y = np.maximum(y + r, 0)
        elif relu:
            y = np.maximum(y, 0)
        np.save(os.path.join(d, "expected.npy"), y)


CONVS = [
    # name, C, H, W, M, k, stride, pad, group
    ("r50_conv1", 3, 224, 224, 64, 7, 2, 3, 1),
    ("r50_l1_1x1_64", 64, 56, 56, 64, 1, 1, 0, 1),
    ("r50_l1_3x3", 64, 56, 56, 64, 3, 1, 1, 1),
    ("r50_l1_1x1_256", 64, 56, 56, 256, 1, 1, 0, 1),
    ("r50_l1_1x1_in256", 256, 56, 56, 64, 1, 1, 0, 1),
    ("r50_l2_3x3s2", 128, 56, 56, 128, 3, 2, 1, 1),
    ("r50_l2_3x3", 128, 28, 28, 128, 3, 1, 1, 1),
    ("r50_l2_1x1", 128, 28, 28, 512, 1, 1, 0, 1),
    ("r50_l2_down", 256, 56, 56, 512, 1, 2, 0, 1),
    ("r50_l3_3x3", 256, 14, 14, 256, 3, 1, 1, 1),
    ("r50_l3_1x1", 1024, 14, 14, 256, 1, 1, 0, 1),
    ("r50_l4_3x3", 512, 7, 7, 512, 3, 1, 1, 1),
    ("r50_l4_1x1", 512, 7, 7, 2048, 1, 1, 0, 1),
    ("mv2_first", 3, 224, 224, 32, 3, 2, 1, 1),
    ("mv2_dw112", 32, 112, 112, 32, 3, 1, 1, 32),
    ("mv2_dw_s2", 96, 112, 112, 96, 3, 2, 1, 96),
    ("mv2_dw14", 384, 14, 14, 384, 3, 1, 1, 384),
    ("mv2_pw112", 32, 112, 112, 16, 1, 1, 0, 1),
    ("mv2_pw56", 24, 56, 56, 144, 1, 1, 0, 1),
    ("mv2_pw14", 384, 14, 14, 64, 1, 1, 0, 1),
    ("mv2_pw7", 960, 7, 7, 320, 1, 1, 0, 1),
    ("eff_dw5", 240, 28, 28, 240, 5, 1, 2, 240),
    ("ocr_first", 3, 640, 640, 16, 3, 2, 1, 1),
    ("ocr_3x3_160", 16, 160, 160, 16, 3, 1, 1, 1),
    ("ocr_3x3_big", 64, 160, 160, 64, 3, 1, 1, 1),
    # Register-tile edge cases (docs/performance.md, "Register tiles that
    # fit"): few output channels in the pixels kernel, depthwise rows of
    # many AVX2 segments.
    ("few_out2_s2", 32, 224, 224, 2, 3, 2, 1, 1),
    ("few_out3_s2", 32, 224, 224, 3, 3, 2, 1, 1),
    ("few_out3_k5", 32, 112, 112, 3, 5, 1, 2, 1),
    ("mv2_dw56", 144, 56, 56, 144, 3, 1, 1, 144),
    # The other 1x1 shapes of ResNet-50's layer3/layer4 (docs/performance.md,
    # "On the Zen 3 guest": reduction slices, flat planes).
    ("r50_l4_1x1_in2048", 2048, 7, 7, 512, 1, 1, 0, 1),
    ("r50_l4_1x1_in1024", 1024, 14, 14, 512, 1, 1, 0, 1),
    ("r50_l3_1x1_256", 256, 14, 14, 1024, 1, 1, 0, 1),
    # The other two stride-2 3x3s (layer3.0 and layer4.0's conv2), and
    # stride-2 3x3s of other sizes (docs/performance.md, "Stride-2 Winograd").
    ("r50_l3_3x3s2", 256, 28, 28, 256, 3, 2, 1, 1),
    ("r50_l4_3x3s2", 512, 14, 14, 512, 3, 2, 1, 1),
    ("s2_c64_112", 64, 112, 112, 64, 3, 2, 1, 1),
    ("s2_c64_56", 64, 56, 56, 64, 3, 2, 1, 1),
    ("s2_c96_40", 96, 40, 40, 96, 3, 2, 1, 1),
    ("s2_c128_28", 128, 28, 28, 128, 3, 2, 1, 1),
]

RESIDUAL_CONVS = [
    # ResNet-50's bottleneck ends, conv3 + Add + Relu (name, C, H, W, M)
    ("r50_l1_res", 64, 56, 56, 256),
    ("r50_l2_res", 128, 28, 28, 512),
    ("r50_l3_res", 256, 14, 14, 1024),
    ("r50_l4_res", 512, 7, 7, 2048),
]

POOLS = [
    # name, C, H, W, k, stride, pad: MaxPool
    ("r50_maxpool", 64, 112, 112, 3, 2, 1),
]

MATMULS = [
    # name, M, K, N, B constant
    ("sgemm256", 256, 256, 256, False),
    ("sgemm512", 512, 512, 512, False),
    ("sgemm1024", 1024, 1024, 1024, False),
    ("sgemm1024c", 1024, 1024, 1024, True),
    ("bert_qkv", 128, 256, 256, True),
    ("bert_ffn1", 128, 256, 1024, True),
    ("bert_ffn2", 128, 1024, 256, True),
    ("fc_gemv", 1, 2048, 1000, True),
    ("odd_57x93x75", 57, 93, 75, False),
    ("odd_57x93x75c", 57, 93, 75, True),
    # A 64-column B (the tall narrow-B tile) and fully connected layers of
    # batch-2 to batch-4 programs (tiles widened for few rows).
    ("narrow_b64", 3136, 576, 64, True),
    ("fc_rows2", 2, 512, 1024, True),
    ("fc_rows3", 3, 512, 1024, True),
    ("fc_rows4", 4, 512, 1024, True),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    for name, M, K, N, cb in MATMULS:
        if a.only and name not in a.only:
            continue
        matmul_case(a.outdir, name, M, K, N, cb, a.check)
    for name, C, H, W, M, k, s, p, g in CONVS:
        if a.only and name not in a.only:
            continue
        conv_case(a.outdir, name, C, H, W, M, k, s, p, g, False, a.check)
    for name, C, H, W, M in RESIDUAL_CONVS:
        if a.only and name not in a.only:
            continue
        conv_case(a.outdir, name, C, H, W, M, 1, 1, 0, 1, False, a.check, residual=True)
    for name, C, H, W, k, s, p in POOLS:
        if a.only and name not in a.only:
            continue
        maxpool_case(a.outdir, name, C, H, W, k, s, p, a.check)


if __name__ == "__main__":
    main()
