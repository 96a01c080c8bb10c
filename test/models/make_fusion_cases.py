#!/usr/bin/python3
"""Generates ONNX backend-style test folders that exercise the fast GEMM and
convolution kernels and the fusion pass (passes/fusion.c): Conv/Gemm/MatMul
with element-wise epilogues (bias, residual Add, Relu, Clip, LeakyRelu,
HardSigmoid, HardSwish, SiLU, Tanh, the Erf form of GELU), chains of
element-wise ops (broadcasting, Cast in the middle), groups that must not
fuse (an intermediate with a second use, an intermediate that is a graph
output, an operand that depends on the group), depthwise/grouped/strided/
dilated/padded convolutions at the sizes where the kernels switch tiles,
and products with ragged edges. Expected outputs come from numpy (and
torch for convolutions, float64).

usage: make_fusion_cases.py OUTPUT_DIR
then:  harness-test -O3 OUTPUT_DIR/*   (and -O1: the same models unfused)
"""
import math

import numpy as np
from onnx import TensorProto, helper

import casekit

RNG = np.random.default_rng(4321)


def write_case(root, name, nodes, inputs, outputs, inits=(), opset=17):
    """inputs/outputs/inits: lists of (name, numpy array)."""
    casekit.write_case(root, name, nodes, inputs, outputs, opset, inits, producer="make_fusion_cases")


def randf(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def conv_ref(x, w, b, stride, pad, group, dil):
    return casekit.torch_conv2d(x, w, b, stride, pad, group, dil)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


ERF = np.vectorize(math.erf)

# Epilogues as (ONNX nodes after the producer "c" -> "y", extra inputs, numpy function of (c, extras)).
def epilogues(shape):
    res = randf(*shape)
    chan = randf(1, shape[1], *([1] * (len(shape) - 2))) if len(shape) >= 3 else randf(shape[-1])
    return {
        "relu": ([helper.make_node("Relu", ["c"], ["y"])], [], lambda c: np.maximum(c, 0)),
        "res_relu": ([helper.make_node("Add", ["c", "r"], ["a"]), helper.make_node("Relu", ["a"], ["y"])],
                     [("r", res)], lambda c: np.maximum(c + res, 0)),
        "res_first": ([helper.make_node("Add", ["r", "c"], ["y"])], [("r", res)], lambda c: res + c),
        "bias_clip": ([helper.make_node("Add", ["c", "bb"], ["a"]), helper.make_node("Clip", ["a", "lo", "hi"], ["y"])],
                      [("bb", chan), ("lo", np.float32(0)), ("hi", np.float32(6))],
                      lambda c: np.clip(c + chan, 0, 6)),
        "leaky": ([helper.make_node("LeakyRelu", ["c"], ["y"], alpha=0.1)], [], lambda c: np.where(c > 0, c, 0.1 * c)),
        "hardswish": ([helper.make_node("HardSwish", ["c"], ["y"])], [], lambda c: c * np.clip(c / 6 + 0.5, 0, 1)),
        "hardsigmoid_mul": ([helper.make_node("HardSigmoid", ["c"], ["h"], alpha=0.2, beta=0.5),
                             helper.make_node("Mul", ["c", "h"], ["y"])], [],
                            lambda c: c * np.clip(0.2 * c + 0.5, 0, 1)),
        "silu": ([helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])], [],
                 lambda c: c * sigmoid(c)),
        "tanh": ([helper.make_node("Tanh", ["c"], ["y"])], [], np.tanh),
        "gelu_erf": ([helper.make_node("Div", ["c", "sq2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
                      helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["c", "e1"], ["p"]),
                      helper.make_node("Mul", ["p", "half"], ["y"])],
                     [("sq2", np.float32(math.sqrt(2))), ("one", np.float32(1)), ("half", np.float32(0.5))],
                     lambda c: 0.5 * c * (1 + ERF(c / math.sqrt(2)))),
    }


def split_extras(extras):
    """Scalars and per-channel operands become initializers, full tensors inputs."""
    inits = [(n, v) for n, v in extras if np.ndim(v) == 0 or n in ("bb",)]
    ins = [(n, v) for n, v in extras if not (np.ndim(v) == 0 or n in ("bb",))]
    return ins, inits


def conv_epilogue_cases(root):
    # (C, H, W, M, k, stride, pad, group, dil): shapes that pick each kernel.
    shapes = {
        "pix1x1": (16, 20, 20, 24, 1, 1, 0, 1, 1),
        "pix3x3": (8, 19, 23, 20, 3, 1, 1, 1, 1),
        # Rows of several panels: panels start at each output row, the last
        # narrower (77 = 4 x 16 + 13; 51 = 3 x 16 + 3 at stride 2).
        "pix3x3_rows": (3, 13, 77, 20, 3, 1, 1, 1, 1),
        "pix3x3s2_rows": (3, 11, 101, 8, 3, 2, 1, 1, 1),
        "chan3x3": (64, 5, 6, 48, 3, 1, 1, 1, 1),  # below WINO_F2_MIN_TILES
        "chan1x1": (96, 9, 11, 40, 1, 1, 0, 1, 1),
        "dw3x3": (12, 17, 29, 12, 3, 1, 1, 12, 1),
        "dw5x5s2": (10, 21, 18, 10, 5, 2, 2, 10, 1),
        # Small planes: the whole plane is one depthwise block.
        "dw3x3_7": (16, 7, 7, 16, 3, 1, 1, 16, 1),
        "dw5x5_14": (8, 14, 14, 8, 5, 1, 2, 8, 1),
        "dw5x5s2_14": (8, 14, 14, 8, 5, 2, 2, 8, 1),
        # Winograd F(4x4,3x3) (compiler/ops/conv_winograd.c): ragged tiles on both borders.
        "wino3x3": (32, 15, 18, 40, 3, 1, 1, 1, 1),  # F(2x2,3x3)
        "wino4x4": (16, 41, 46, 24, 3, 1, 1, 1, 1),  # F(4x4,3x3)
        # Stride 2 (AVX2 at -O2 and up): 11 x 10 tiles in two blocks (64 +
        # 46), the last tile row half padding.
        "wino3x3s2": (64, 41, 39, 72, 3, 2, 1, 1, 1),
        # One output position (conv_is_gemv): a product with the output
        # channels as columns, epilogue operands per channel.
        "gemv1x1": (40, 1, 1, 72, 1, 1, 0, 1, 1),
        "gemv5x5": (12, 5, 5, 40, 5, 1, 0, 1, 1),
    }
    for sname, (C, H, W, M, k, s, p, g, dl) in shapes.items():
        x = randf(1, C, H, W)
        w = (randf(M, C // g, k, k) / math.sqrt(C // g * k * k)).astype(np.float32)
        b = randf(M)
        c = conv_ref(x, w, b, s, p, g, dl)
        for ename, (enodes, extras, fn) in epilogues(c.shape).items():
            ins, inits = split_extras(extras)
            conv = helper.make_node("Conv", ["x", "W", "B"], ["c"], kernel_shape=[k, k], strides=[s, s],
                                    pads=[p] * 4, group=g, dilations=[dl, dl])
            y = fn(c).astype(np.float32)
            write_case(root, f"fuse_conv_{sname}_{ename}", [conv] + enodes, [("x", x)] + ins, [("y", y)],
                       [("W", w), ("B", b)] + inits)


def matmul_epilogue_cases(root):
    for mname, (M, K, N, const_b, gemm) in {
        "mm_const": (37, 64, 80, True, False),
        "mm_rt": (20, 33, 50, False, False),
        "gemm_tb": (13, 40, 72, True, True),
    }.items():
        a = randf(M, K)
        bm = (randf(N, K) if gemm else randf(K, N)) / math.sqrt(K)
        bm = bm.astype(np.float32)
        bias = randf(N)
        if gemm:
            c = a.astype(np.float64) @ bm.T.astype(np.float64) + bias
            prod = helper.make_node("Gemm", ["x", "Bm", "bias"], ["c"], transB=1)
        else:
            c = a.astype(np.float64) @ bm.astype(np.float64)
            prod = helper.make_node("MatMul", ["x", "Bm"], ["c"])
        for ename, (enodes, extras, fn) in epilogues(c.shape).items():
            if ename in ("bias_clip",):
                continue
            ins, inits = split_extras(extras)
            inputs = [("x", a)] + ([] if const_b else [("Bm", bm)]) + ins
            cinits = ([("Bm", bm)] if const_b else []) + ([("bias", bias)] if gemm else []) + inits
            write_case(root, f"fuse_{mname}_{ename}", [prod] + enodes, inputs, [("y", fn(c).astype(np.float32))], cinits)
    # Batched MatMul with B shared (rows folded) and a per-row bias [M, 1].
    a = randf(3, 10, 24)
    bm = randf(24, 40)
    rb = randf(10, 1)
    c = a.astype(np.float64) @ bm
    write_case(root, "fuse_mm_batched_rowbias",
               [helper.make_node("MatMul", ["x", "Bm"], ["c"]), helper.make_node("Add", ["c", "rb"], ["a"]),
                helper.make_node("Relu", ["a"], ["y"])],
               [("x", a)], [("y", np.maximum(c + rb, 0).astype(np.float32))], [("Bm", bm), ("rb", rb)])

    # Column blocks (emit_matmul_fast): 200 columns in four blocks, fewer
    # full column tiles than blocks on AVX-512 (a tile each, the last one
    # partial), and 300 columns in evenly spaced blocks with a partial tile
    # at the end.
    for M, K, N in ((96, 96, 200), (64, 256, 300)):
        a = randf(M, K)
        bm = (randf(K, N) / math.sqrt(K)).astype(np.float32)
        c = a.astype(np.float64) @ bm.astype(np.float64)
        write_case(root, f"fuse_mm_blocks_{N}", [helper.make_node("MatMul", ["x", "Bm"], ["c"]), helper.make_node("Relu", ["c"], ["y"])],
                   [("x", a)], [("y", np.maximum(c, 0).astype(np.float32))], [("Bm", bm)])

    # A classifier (MobileNetV2's: 1280 -> 1000, Gemm with transB and a
    # bias): one row against 5 MB of weights, which two threads stream in
    # eight column blocks (gemm.c plan_fast, streams_b), the last one with
    # the partial tile.
    a = randf(1, 1280)
    bm = (randf(1000, 1280) / math.sqrt(1280)).astype(np.float32)
    bias = randf(1000)
    c = a.astype(np.float64) @ bm.T.astype(np.float64) + bias
    write_case(root, "fuse_gemm_classifier", [helper.make_node("Gemm", ["x", "Bm", "bias"], ["y"], transB=1)],
               [("x", a)], [("y", c.astype(np.float32))], [("Bm", bm), ("bias", bias)])

    # Erf in a MatMul epilogue takes the rational erf (compiler/codegen/
    # fast_math.c, hc_ew_erf_fast): products over [-12, 12] cover its
    # small-argument, middle and clamped (|x| > 4) ranges, alone and as GELU.
    a = (3 * randf(64, 16)).astype(np.float32)
    bm = (randf(16, 48) / 4).astype(np.float32)
    c = a.astype(np.float64) @ bm.astype(np.float64)
    write_case(root, "fuse_mm_erf_wide", [helper.make_node("MatMul", ["x", "Bm"], ["c"]), helper.make_node("Erf", ["c"], ["y"])],
               [("x", a)], [("y", ERF(c).astype(np.float32))], [("Bm", bm)])
    enodes, extras, fn = epilogues(c.shape)["gelu_erf"]
    write_case(root, "fuse_mm_gelu_wide", [helper.make_node("MatMul", ["x", "Bm"], ["c"])] + enodes, [("x", a)],
               [("y", fn(c).astype(np.float32))], [("Bm", bm)] + extras)


def chain_cases(root):
    x = randf(2, 3, 5, 7)
    y = randf(1, 3, 1, 7)
    z = randf(7)
    # Mul -> Add (broadcast) -> Sigmoid -> Mul(x): one FusedElementwise.
    nodes = [helper.make_node("Mul", ["x", "y"], ["m"]), helper.make_node("Add", ["m", "z"], ["a"]),
             helper.make_node("Sigmoid", ["a"], ["s"]), helper.make_node("Mul", ["s", "x"], ["out"])]
    ref = sigmoid(x * y + z) * x
    write_case(root, "fuse_chain_bcast", nodes, [("x", x), ("y", y), ("z", z)], [("out", ref.astype(np.float32))])
    # Cast in the middle of a chain (float -> int32 -> float).
    nodes = [helper.make_node("Mul", ["x", "k"], ["m"]), helper.make_node("Cast", ["m"], ["i"], to=TensorProto.INT32),
             helper.make_node("Cast", ["i"], ["f"], to=TensorProto.FLOAT), helper.make_node("Sub", ["f", "x"], ["out"])]
    ref = np.trunc(x * 3.0).astype(np.int32).astype(np.float32) - x
    write_case(root, "fuse_chain_cast", nodes, [("x", x)], [("out", ref)], [("k", np.float32(3.0))])
    # An intermediate with a use outside the chain, and one that is a graph output.
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["r"], ["n"]),
             helper.make_node("Add", ["n", "y"], ["out"]), helper.make_node("Mul", ["r", "y"], ["out2"])]
    r = np.maximum(x, 0)
    write_case(root, "fuse_chain_shared", nodes, [("x", x), ("y", y)], [("out", -r + y), ("out2", r * y)])
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["r"], ["out"])]
    write_case(root, "fuse_chain_output", nodes, [("x", x)], [("r", r), ("out", -r)])


def group_cases(root):
    # A residual that depends on the conv being fused: must not fuse into it.
    x = randf(1, 8, 9, 9)
    w = randf(8, 8, 1, 1) / 3
    c = conv_ref(x, w, None, 1, 0, 1, 1)
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], kernel_shape=[1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Neg", ["r"], ["n"]), helper.make_node("Add", ["c", "n"], ["y"])]
    r = np.maximum(c, 0)
    write_case(root, "fuse_conv_diamond", nodes, [("x", x)], [("y", (c - r).astype(np.float32))], [("W", w)])
    # The conv result is also a graph output: nothing may be fused into it.
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], kernel_shape=[1, 1]), helper.make_node("Relu", ["c"], ["y"])]
    write_case(root, "fuse_conv_output", nodes, [("x", x)], [("c", c.astype(np.float32)), ("y", r.astype(np.float32))],
               [("W", w)])
    # Two convs sharing a residual added to both.
    w2 = randf(8, 8, 3, 3) / 8
    c2 = conv_ref(x, w2, None, 1, 1, 1, 1)
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], kernel_shape=[1, 1]),
             helper.make_node("Conv", ["x", "W2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "c2"], ["y"])]
    write_case(root, "fuse_conv_sum", nodes, [("x", x)], [("y", (c + c2).astype(np.float32))], [("W", w), ("W2", w2)])


def kernel_cases(root):
    # Convolutions at shapes that pick each kernel and its ragged edges.
    for name, (N, C, H, W, M, k, s, p, g, dl) in {
        "conv_pix_big": (1, 3, 33, 47, 17, 3, 2, 1, 1, 1),
        "conv_pix_grouped": (2, 8, 12, 13, 12, 3, 1, 1, 4, 1),
        "conv_pix_dilated": (1, 6, 15, 16, 10, 3, 1, 2, 1, 2),
        "conv_chan_s2": (1, 40, 15, 15, 64, 3, 2, 1, 1, 1),
        "conv_chan_ragged": (2, 36, 5, 9, 56, 3, 1, 1, 1, 1),
        "conv_chan_grouped": (1, 64, 6, 6, 96, 1, 1, 0, 2, 1),
        "conv_dw_s1_k7": (1, 5, 9, 40, 5, 7, 1, 3, 5, 1),
        "conv_dw_s2_odd": (1, 7, 13, 35, 7, 3, 2, 1, 7, 1),
        "conv_dw_nopad": (2, 4, 6, 6, 4, 3, 1, 0, 4, 1),
        "conv_dw_wide": (1, 3, 5, 420, 3, 3, 1, 1, 3, 1),
        # Rows of 7 (two rows a step) and 15 AVX2 segments at stride 1:
        # blocks of at most 12 accumulators there, rows and segments ragged.
        "conv_dw_s1_53": (1, 6, 9, 53, 6, 3, 1, 1, 6, 1),
        "conv_dw_s1_113": (1, 4, 7, 113, 4, 3, 1, 1, 4, 1),
        "conv_dw_wide_s2_k5": (1, 2, 7, 801, 2, 5, 2, 2, 2, 1),
        "conv_1x1_s2": (1, 24, 14, 15, 40, 1, 2, 0, 1, 1),
        # Winograd F(4x4,3x3) (compiler/ops/conv_winograd.c): planes that are
        # not multiples of the tile, pad 0, a batch of 2, output channels that
        # leave a remainder of the register tile, ResNet-50's layer shapes,
        # tiles in several blocks.
        "conv_wino_13x17": (1, 32, 13, 17, 24, 3, 1, 1, 1, 1),
        "conv_wino_nopad": (1, 20, 18, 22, 21, 3, 1, 0, 1, 1),
        "conv_wino_b2_m80": (2, 48, 14, 14, 80, 3, 1, 1, 1, 1),
        "conv_wino_14": (1, 256, 14, 14, 256, 3, 1, 1, 1, 1),
        # 7x7 planes (ResNet-50's layer 4): 16 tiles of 2x2, the least
        # WINO_F2_MIN_TILES takes; the last tile row and column half padding.
        # AVX-512 at -O3 runs it in the channels kernel instead
        # (WINO_F2_AVX512_MIN_TILES); 8x8 with 24 output channels, too few
        # for the channels kernel, keeps F(2,3) there.
        "conv_wino_7": (1, 96, 7, 7, 72, 3, 1, 1, 1, 1),
        "conv_wino_8_m24": (1, 64, 8, 8, 24, 3, 1, 1, 1, 1),
        "conv_wino_28": (1, 128, 28, 28, 128, 3, 1, 1, 1, 1),
        "conv_wino_56": (1, 64, 56, 56, 64, 3, 1, 1, 1, 1),
        # Input channels in several reduction blocks of the products, the
        # last one short: 5 x 60 on AVX-512, 2 x 150 on AVX2.
        "conv_wino_c300": (1, 300, 12, 14, 40, 3, 1, 1, 1, 1),
        "conv_wino4_ragged": (1, 16, 45, 50, 24, 3, 1, 1, 1, 1),
        "conv_wino4_b2": (2, 24, 30, 33, 40, 3, 1, 1, 1, 1),
        # 625 4x4 tiles in ten blocks of the workspace (64 tiles, the last 49).
        "conv_wino_blocks": (1, 32, 100, 100, 40, 3, 1, 1, 1, 1),
        # Stride 2 (F(2x2,3x3) with 5x5 patches; AVX2, weights packed at
        # compile time, in two blocks or more): ResNet-50's layer-2 shape,
        # 196 tiles in blocks of 48, the last of 4; 110 tiles in two blocks
        # (64 + 46) with ragged borders (21 x 20 outputs) and channel counts
        # that are no multiple of a vector; pad 0 and a batch of 2 (98
        # tiles: 64 + 34).
        "conv_wino_s2_56": (1, 128, 56, 56, 128, 3, 2, 1, 1, 1),
        "conv_wino_s2_ragged": (1, 70, 41, 39, 72, 3, 2, 1, 1, 1),
        "conv_wino_s2_nopad_b2": (2, 64, 30, 28, 66, 3, 2, 0, 1, 1),
        # Direct kernels: ResNet-50's layer-3 shape, whose 49 tiles would go
        # in blocks of 16, and 49 tiles of 128 channels, which would fit
        # one block but not two of WINO_S2_MIN_BLOCK_TILES.
        "conv_wino_s2_small_blocks": (1, 256, 28, 28, 256, 3, 2, 1, 1, 1),
        "conv_wino_s2_one_block": (1, 128, 28, 28, 128, 3, 2, 1, 1, 1),
    }.items():
        x = randf(N, C, H, W)
        w = (randf(M, C // g, k, k) / math.sqrt(C // g * k * k)).astype(np.float32)
        b = randf(M)
        y = conv_ref(x, w, b, s, p, g, dl).astype(np.float32)
        node = helper.make_node("Conv", ["x", "W", "B"], ["y"], kernel_shape=[k, k], strides=[s, s], pads=[p] * 4,
                                group=g, dilations=[dl, dl])
        write_case(root, f"fast_{name}", [node], [("x", x)], [("y", y)], [("W", w), ("B", b)])
        # The same with the weights as an input (packed at run time).
        write_case(root, f"fast_{name}_wrt", [node], [("x", x), ("W", w)], [("y", y)], [("B", b)])
    # Winograd whose transformed weights stream from memory (U of F(2,3):
    # 16 x 1024 x 512 floats, 32 MiB, above HC_WINO_STREAMED_U): its 42
    # tiles go in blocks of 32, not 16 (an eighth of U holds 41 tiles' V and
    # Mx), and in one lane. Constant weights only (the run-time transform
    # keeps its blocks). A 12x14 plane (12 tiles of 4x4) keeps F(2,3) for
    # every target (hc_wino_choose_packed).
    x = randf(1, 1024, 12, 14)
    w = (randf(512, 1024, 3, 3) / math.sqrt(1024 * 9)).astype(np.float32)
    b = randf(512)
    y = conv_ref(x, w, b, 1, 1, 1, 1).astype(np.float32)
    node = helper.make_node("Conv", ["x", "W", "B"], ["y"], kernel_shape=[3, 3], pads=[1] * 4)
    write_case(root, "fast_conv_wino_streamed", [node], [("x", x)], [("y", y)], [("W", w), ("B", b)])
    # Winograd with asymmetric pads, and without a bias.
    x = randf(1, 24, 17, 19)
    w = (randf(32, 24, 3, 3) / math.sqrt(24 * 9)).astype(np.float32)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 0), (0, 2)))
    y = conv_ref(xp, w, None, 1, 0, 1, 1).astype(np.float32)
    node = helper.make_node("Conv", ["x", "W"], ["y"], kernel_shape=[3, 3], pads=[1, 0, 0, 2])
    write_case(root, "fast_conv_wino_asym_nobias", [node], [("x", x)], [("y", y)], [("W", w)])
    write_case(root, "fast_conv_wino_asym_nobias_wrt", [node], [("x", x), ("W", w)], [("y", y)])
    # Stride 2 with SAME_UPPER's pads (none at the top and left, one at the
    # bottom and right of the even 40x40 plane), no bias: 10 x 10 tiles.
    x = randf(1, 64, 40, 40)
    w = (randf(64, 64, 3, 3) / math.sqrt(64 * 9)).astype(np.float32)
    xp = np.pad(x, ((0, 0), (0, 0), (0, 1), (0, 1)))
    y = conv_ref(xp, w, None, 2, 0, 1, 1).astype(np.float32)
    node = helper.make_node("Conv", ["x", "W"], ["y"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")
    write_case(root, "fast_conv_wino_s2_same_upper", [node], [("x", x)], [("y", y)], [("W", w)])
    # Products with ragged tiles, split reductions and runtime-packed B.
    for name, (M, K, N) in {"mm_ragged": (61, 700, 77), "mm_tall": (300, 96, 40), "mm_wide": (5, 50, 300),
                            "mm_bigk": (24, 1500, 130)}.items():
        a = randf(M, K)
        bm = randf(K, N) / math.sqrt(K)
        y = (a.astype(np.float64) @ bm).astype(np.float32)
        node = helper.make_node("MatMul", ["x", "Bm"], ["y"])
        write_case(root, f"fast_{name}", [node], [("x", a), ("Bm", bm)], [("y", y)])
        write_case(root, f"fast_{name}_const", [node], [("x", a)], [("y", y)], [("Bm", bm)])


def inplace_residual_cases(root):
    """A fused residual Add whose residual is an arena intermediate read last
    by the Conv/Gemm/MatMul (a Transpose makes it; another Transpose reads
    the result, so the output is an intermediate too): at -O3 memory
    planning writes the output over the residual wherever the kernel plan
    allows it (test/passes/memory_plan_test.c checks which), one shape per
    kernel path; at -O1 the same graphs run unfused."""
    import torch

    def conv_nd(x, w, b, s, p, g):
        f = {3: torch.nn.functional.conv1d, 4: torch.nn.functional.conv2d, 5: torch.nn.functional.conv3d}[x.ndim]
        return f(torch.from_numpy(x).double(), torch.from_numpy(w).double(), torch.from_numpy(b).double(),
                 stride=s, padding=p, groups=g).numpy()

    def perm_to(nd):  # moves the channel axis last, and back
        fwd = [0] + list(range(2, nd)) + [1]
        return fwd, [fwd.index(i) for i in range(nd)]

    # (C, spatial, M, k, pad, group): 1x1 as a GEMM (single pass / split
    # reduction), pixels (padded, unpadded read in place, 1-D), channels
    # (single reduction slice / several), depthwise.
    shapes = {
        "gemm1x1": (64, (32, 32), 64, 1, 0, 1),
        "gemm1x1_ksplit": (1024, (24, 24), 32, 1, 0, 1),
        "pix3x3": (16, (30, 30), 24, 3, 1, 1),
        "pix3x3_valid": (16, (30, 30), 24, 3, 0, 1),
        "chan3x3": (64, (14, 14), 64, 3, 1, 1),
        "chan3x3_ksplit": (256, (5, 6), 64, 3, 1, 1),  # below WINO_F2_MIN_TILES
        # Outputs big enough that the kernels prefetch the next lines of
        # the residual they read (GEMM: 3.2 MB, channels: 0.8 MB, pixels:
        # 1 MB over a padded plane's pitch).
        "gemm1x1_big": (64, (56, 56), 256, 1, 0, 1),
        "chan1x1_big": (256, (14, 14), 1024, 1, 0, 1),
        "pix3x3_big": (16, (128, 128), 16, 3, 1, 1),
        "dw3x3": (32, (20, 20), 32, 3, 1, 32),
        "pix1d": (16, (200,), 24, 5, 2, 1),
        # Unpadded 1-D: the kernel reads x in place and stores flat positions
        # directly (WaveNet's gated units after an explicit Pad).
        "pix1d_valid": (16, (200,), 24, 2, 0, 1),
        # 3-D: the pixels kernel over a volume whose rows and planes are
        # padded (stores skip the pitch padding in both).
        "pix3d": (8, (5, 7, 9), 12, 3, 1, 1),
    }
    # Relu is a light epilogue (vector stores); Tanh a heavy one (a stack
    # tile, then element by element).
    acts = {"": ("Relu", lambda v: np.maximum(v, 0)), "_tanh": ("Tanh", np.tanh)}
    for sname, (C, sp, M, k, p, g) in shapes.items():
        nd = 2 + len(sp)
        x = randf(1, C, *sp)
        w = (randf(M, C // g, *([k] * len(sp))) / math.sqrt(C // g * k ** len(sp))).astype(np.float32)
        b = randf(M)
        c = conv_nd(x, w, b, 1, p, g)
        fwd, back = perm_to(nd)
        r = randf(*c.shape)
        rt = np.ascontiguousarray(r.transpose(fwd))
        for aname, (act, fn) in acts.items():
            if aname and sname not in ("gemm1x1", "pix3x3", "pix3x3_valid", "chan3x3", "dw3x3", "pix3d", "pix1d_valid"):
                continue
            y = fn(c + r).transpose(fwd).astype(np.float32)
            nodes = [helper.make_node("Transpose", ["rt"], ["r"], perm=back),
                     helper.make_node("Conv", ["x", "W", "B"], ["c"], kernel_shape=[k] * len(sp),
                                      pads=[p] * (2 * len(sp)), group=g),
                     helper.make_node("Add", ["c", "r"], ["a"]), helper.make_node(act, ["a"], ["h"]),
                     helper.make_node("Transpose", ["h"], ["y"], perm=fwd)]
            write_case(root, f"inplace_res_conv_{sname}{aname}", nodes, [("x", x), ("rt", rt)], [("y", y)],
                       [("W", w), ("B", b)])
    # The residual is also the convolution's input (it must not be overwritten).
    xt = randf(1, 20, 20, 64)
    x = np.ascontiguousarray(xt.transpose(0, 3, 1, 2))
    w = (randf(64, 64, 1, 1) / 8).astype(np.float32)
    b = randf(64)
    c = conv_nd(x, w, b, 1, 0, 1)
    nodes = [helper.make_node("Transpose", ["xt"], ["r"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["r", "W", "B"], ["c"], kernel_shape=[1, 1]),
             helper.make_node("Add", ["c", "r"], ["a"]), helper.make_node("Relu", ["a"], ["h"]),
             helper.make_node("Transpose", ["h"], ["y"], perm=[0, 2, 3, 1])]
    write_case(root, "inplace_res_conv_same_input", nodes, [("xt", xt)],
               [("y", np.maximum(c + x, 0).transpose(0, 2, 3, 1).astype(np.float32))], [("W", w), ("B", b)])
    # Products: Gemm single pass / split reduction, MatMul.
    for mname, (M, K, N, gemm) in {"gemm": (48, 64, 96, True), "gemm_ksplit": (48, 1024, 96, True),
                                   "gemm_big": (1024, 64, 512, True),
                                   "matmul": (40, 96, 64, False)}.items():
        a = randf(M, K)
        bm = (randf(K, N) / math.sqrt(K)).astype(np.float32)
        bias = randf(N)
        c = a.astype(np.float64) @ bm + (bias if gemm else 0)
        r = randf(M, N)
        prod = (helper.make_node("Gemm", ["x", "Bm", "bias"], ["c"]) if gemm
                else helper.make_node("MatMul", ["x", "Bm"], ["c"]))
        for aname, (act, fn) in acts.items():
            if aname and mname != "gemm":
                continue
            nodes = [helper.make_node("Transpose", ["rt"], ["r"], perm=[1, 0]), prod,
                     helper.make_node("Add", ["c", "r"], ["a"]), helper.make_node(act, ["a"], ["h"]),
                     helper.make_node("Transpose", ["h"], ["y"], perm=[1, 0])]
            write_case(root, f"inplace_res_{mname}{aname}", nodes, [("x", a), ("rt", np.ascontiguousarray(r.T))],
                       [("y", fn(c + r).T.astype(np.float32))], [("Bm", bm)] + ([("bias", bias)] if gemm else []))


def sigmoid_epilogue_special_cases(root):
    """The sigmoid of Conv epilogues (hc_ew_sigmoid_fast) at the values its
    range handling is about: NaN, +-inf, huge inputs, the edges where e^-x
    overflows (x < -88.4: exactly 0, so SiLU of a huge negative x is -0) or
    becomes subnormal, and 0. A depthwise 1x1 Conv with unit weights passes
    x through exactly."""
    vals = np.array([np.nan, np.inf, -np.inf, -3e38, -1e30, -100, -88.5, -88.2, -88.0, -87.5, -87.0, -20, -1,
                     -0.0, 0.0, 1, 20, 87.0, 87.5, 88.0, 100, 1e30, 3e38, 0.5, -0.5, 5, -5, 30, -30, 10, -10, 2],
                    dtype=np.float32)
    C = 16
    x = vals.reshape(1, C, 1, 2)
    w = np.ones((C, 1, 1, 1), np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        sg = 1.0 / (1.0 + np.exp(-x.astype(np.float64)))
        silu = x.astype(np.float64) * sg
    conv = helper.make_node("Conv", ["x", "W"], ["c"], group=C)
    write_case(root, "fuse_dwconv_sigmoid_special",
               [conv, helper.make_node("Sigmoid", ["c"], ["y"])],
               [("x", x)], [("y", sg.astype(np.float32))], [("W", w)])
    write_case(root, "fuse_dwconv_silu_special",
               [conv, helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])],
               [("x", x)], [("y", silu.astype(np.float32))], [("W", w)])


def se_block_cases(root):
    """Squeeze-excitation blocks as EfficientNet has them: a depthwise
    convolution (SiLU), GlobalAveragePool, 1x1 convolution, SiLU, 1x1
    convolution, Sigmoid, the Mul of the depthwise output by the per-channel
    scale (an intermediate that dies there: written in place), then the 1x1
    project convolution: a GEMM on a large plane, the channels kernel on
    14x14 and 7x7 planes, odd channel counts. Also a Mul by a scalar
    computed in the graph."""
    import torch

    def conv(x, w, b, p, g):
        return torch.nn.functional.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double(),
                                          None if b is None else torch.from_numpy(b).double(), padding=p,
                                          groups=g).numpy()

    def silu(v):
        return v * sigmoid(v)

    for name, (C, H, R, M) in {"gemm": (32, 28, 8, 16), "chan14": (240, 14, 10, 80), "chan7": (672, 7, 28, 192),
                               "odd": (72, 9, 6, 40)}.items():
        x = randf(1, C, H, H)
        wd = (randf(C, 1, 3, 3) / 3).astype(np.float32)
        bd = randf(C)
        w1 = (randf(R, C, 1, 1) / math.sqrt(C)).astype(np.float32)
        b1 = randf(R)
        w2 = (randf(C, R, 1, 1) / math.sqrt(R)).astype(np.float32)
        b2 = randf(C)
        wp = (randf(M, C, 1, 1) / math.sqrt(C)).astype(np.float32)
        bp = randf(M)
        d = silu(conv(x, wd, bd, 1, C))
        g = d.mean(axis=(2, 3), keepdims=True)
        sc = sigmoid(conv(silu(conv(g, w1, b1, 0, 1)), w2, b2, 0, 1))
        y = conv(d * sc, wp, bp, 0, 1)
        nodes = [helper.make_node("Conv", ["x", "Wd", "Bd"], ["dc"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=C),
                 helper.make_node("Sigmoid", ["dc"], ["ds"]), helper.make_node("Mul", ["dc", "ds"], ["d"]),
                 helper.make_node("GlobalAveragePool", ["d"], ["g"]),
                 helper.make_node("Conv", ["g", "W1", "B1"], ["h1"], kernel_shape=[1, 1]),
                 helper.make_node("Sigmoid", ["h1"], ["h1s"]), helper.make_node("Mul", ["h1", "h1s"], ["h"]),
                 helper.make_node("Conv", ["h", "W2", "B2"], ["h2"], kernel_shape=[1, 1]),
                 helper.make_node("Sigmoid", ["h2"], ["s"]), helper.make_node("Mul", ["d", "s"], ["e"]),
                 helper.make_node("Conv", ["e", "Wp", "Bp"], ["y"], kernel_shape=[1, 1])]
        write_case(root, f"se_block_{name}", nodes, [("x", x)], [("y", y.astype(np.float32))],
                   [("Wd", wd), ("Bd", bd), ("W1", w1), ("B1", b1), ("W2", w2), ("B2", b2), ("Wp", wp), ("Bp", bp)])
    # Scales folded into the projection's weights (passes/fold_channel_scale.c:
    # one image, a 1x1 projection on a plane of more than 16x16): the scale
    # first and of rank 3 ([C, 1, 1] through a Reshape), a projection without
    # bias followed by a residual Add; then the same block on two images,
    # where it must not fold (one scale per image).
    for name, N, rank3 in (("se_fold_rank3_residual", 1, True), ("se_fold_batch2", 2, False)):
        C, H, R, M = 24, 18, 6, 24
        x = randf(N, C, H, H)
        w1 = (randf(R, C, 1, 1) / math.sqrt(C)).astype(np.float32)
        w2 = (randf(C, R, 1, 1) / math.sqrt(R)).astype(np.float32)
        wp = (randf(M, C, 1, 1) / math.sqrt(C)).astype(np.float32)
        r = np.maximum(x.astype(np.float64), 0)
        sc = sigmoid(conv(np.maximum(conv(r.mean(axis=(2, 3), keepdims=True).astype(np.float32), w1, None, 0, 1), 0)
                          .astype(np.float32), w2, None, 0, 1))
        y = conv((r * sc).astype(np.float32), wp, None, 0, 1) + x
        nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["g"]),
                 helper.make_node("Conv", ["g", "W1"], ["h1"], kernel_shape=[1, 1]),
                 helper.make_node("Relu", ["h1"], ["h"]),
                 helper.make_node("Conv", ["h", "W2"], ["h2"], kernel_shape=[1, 1]),
                 helper.make_node("Sigmoid", ["h2"], ["s4"])]
        inits = [("W1", w1), ("W2", w2), ("Wp", wp)]
        if rank3:
            nodes.append(helper.make_node("Reshape", ["s4", "shape3"], ["s"]))
            inits.append(("shape3", np.array([C, 1, 1], np.int64)))
            nodes.append(helper.make_node("Mul", ["s", "r"], ["e"]))
        else:
            nodes.append(helper.make_node("Mul", ["r", "s4"], ["e"]))
        nodes += [helper.make_node("Conv", ["e", "Wp"], ["p"], kernel_shape=[1, 1]),
                  helper.make_node("Add", ["p", "x"], ["y"])]
        write_case(root, name, nodes, [("x", x)], [("y", y.astype(np.float32))], inits)
    # A constant per-channel scale before 1x1 convolutions, folded into
    # their weights at compile time: a small plane (the channels kernel) and
    # a large one (a GEMM).
    for name, (C, H, M) in {"const_scale_chan7": (96, 7, 40), "const_scale_gemm": (24, 20, 16)}.items():
        x = randf(1, C, H, H)
        cs = randf(1, C, 1, 1)
        wp = (randf(M, C, 1, 1) / math.sqrt(C)).astype(np.float32)
        bp = randf(M)
        y = conv((x.astype(np.float64) * cs).astype(np.float32), wp, bp, 0, 1)
        nodes = [helper.make_node("Mul", ["x", "cs"], ["e"]),
                 helper.make_node("Conv", ["e", "Wp", "Bp"], ["y"], kernel_shape=[1, 1])]
        write_case(root, f"se_{name}", nodes, [("x", x)], [("y", y.astype(np.float32))],
                   [("cs", cs), ("Wp", wp), ("Bp", bp)])
    # A scalar scale computed in the graph (a broadcast operand of one element).
    x = randf(2, 6, 5, 7)
    r = np.maximum(x, 0)
    sc = sigmoid(r.astype(np.float64).mean())
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("ReduceMean", ["r"], ["m"], keepdims=0),
             helper.make_node("Sigmoid", ["m"], ["s"]), helper.make_node("Mul", ["r", "s"], ["e"]),
             helper.make_node("Transpose", ["e"], ["y"], perm=[0, 2, 3, 1])]
    write_case(root, "se_scalar_scale", nodes, [("x", x)], [("y", (r * sc).transpose(0, 2, 3, 1).astype(np.float32))])


def channels_tile_cases(root):
    """The channels kernel (Mg >= 32 output channels, planes of at most 256
    pixels) at plane widths that give tiles of several rows (OW of 2, 5 and
    7), runs of more than 8 pixels (OW 11, 14, 16, 150 in 1-D), ragged
    channel vectors (33, 36, 40 channels), a strided 3x3 and 1x1, and 1x1
    kernels' 14-pixel tiles: its in-register
    transposed stores with a per-element residual Add and Relu, a
    per-channel Add and Clip, and no epilogue."""
    import torch

    def conv_nd(x, w, b, s, p):
        f = {3: torch.nn.functional.conv1d, 4: torch.nn.functional.conv2d, 5: torch.nn.functional.conv3d}[x.ndim]
        return f(torch.from_numpy(x).double(), torch.from_numpy(w).double(), torch.from_numpy(b).double(),
                 stride=s, padding=p).numpy()

    shapes = {"w5": (64, (5, 5), 40, 1, 0, 1), "w2": (80, (2, 2), 64, 1, 0, 1), "w16": (72, (16, 16), 33, 3, 1, 1),
              "w11": (64, (3, 11), 48, 1, 0, 1), "w150_1d": (96, (150,), 36, 3, 1, 1),
              "s2": (64, (9, 9), 96, 3, 1, 2),
              # One tap (1x1): 14-pixel tiles on AVX-512, 2 x 7 on a 7x7
              # plane (a ragged last tile row), 1 x 14 on 14x14, a strided
              # 1x1, and two reduction slices (1100 input channels).
              "pw7": (96, (7, 7), 96, 1, 0, 1), "pw14": (128, (14, 14), 112, 1, 0, 1),
              "pw_s2": (72, (13, 13), 64, 1, 0, 2), "pw7_slices": (1100, (7, 7), 64, 1, 0, 1),
              # Inputs larger than half of L2 in several slices, two panels
              # a task: the slices outside the panels (the partial sums of
              # both wait on the stack), the last task with a full and a
              # ragged panel (280 channels) or only a ragged one (264).
              "pw14_slices_outer": (1024, (14, 14), 280, 1, 0, 1),
              "pw7_slices_outer": (1400, (7, 7), 264, 1, 0, 1),
              # Projections (input over 4 times the output): on 7x7 flat
              # (no row blocks), on 14x14 in two row blocks of whole lines.
              "pw7_proj": (960, (7, 7), 160, 1, 0, 1), "pw14_proj": (576, (14, 14), 96, 1, 0, 1),
              # A strided 1x1 whose copied 16x16 images (1 KiB) are each
              # padded by a line (flat_plan.CS).
              "pw_s2_16": (64, (32, 32), 48, 1, 0, 2),
              # Stride-1 1x1s that the GEMM takes on these planes instead
              # (conv.c gemm_beats_channels): few input channels on 14x14,
              # whole 16-pixel vectors on 12x12 and 16x16.
              "pw14_gemm": (64, (14, 14), 112, 1, 0, 1), "pw12_gemm": (384, (12, 12), 64, 1, 0, 1),
              "pw16_gemm": (96, (16, 16), 48, 1, 0, 1),
              # 5 panels of 32 channels: 5 tasks made 10 by two row blocks
              # at a tile row (not at a whole output line).
              "pw7_odd": (320, (7, 7), 160, 1, 0, 1),
              # A 0.8 MB output: the stores prefetch the next line of each
              # channel and of the residual (a separate input here).
              "pw14_big": (256, (14, 14), 1024, 1, 0, 1),
              # ResNet-50's stride-2 3x3 on 56x56: on AVX-512 three panels
              # of 48 channels in blocks of two and one, whose tasks take
              # the channel blocks fastest so that two threads split the
              # work evenly (conv.c two_thread_share).
              "s2_56_balanced": (128, (56, 56), 128, 3, 1, 2)}
    for sname, (C, sp, M, k, p, st) in shapes.items():
        nd = len(sp)
        x = randf(1, C, *sp)
        w = (randf(M, C, *([k] * nd)) / math.sqrt(C * k ** nd)).astype(np.float32)
        b = randf(M)
        c = conv_nd(x, w, b, st, p)
        r = randf(*c.shape)
        chan = randf(1, M, *([1] * nd))
        conv = helper.make_node("Conv", ["x", "W", "B"], ["c"], kernel_shape=[k] * nd, pads=[p] * (2 * nd),
                                strides=[st] * nd)
        write_case(root, f"chan_tile_{sname}_res_relu", [conv, helper.make_node("Add", ["c", "r"], ["a"]),
                                                         helper.make_node("Relu", ["a"], ["y"])],
                   [("x", x), ("r", r)], [("y", np.maximum(c + r, 0).astype(np.float32))], [("W", w), ("B", b)])
        write_case(root, f"chan_tile_{sname}_chan_clip",
                   [conv, helper.make_node("Add", ["c", "cb"], ["a"]), helper.make_node("Clip", ["a", "lo", "hi"], ["y"])],
                   [("x", x)], [("y", np.clip(c + chan, 0, 6).astype(np.float32))],
                   [("W", w), ("B", b), ("cb", chan), ("lo", np.float32(0)), ("hi", np.float32(6))])
        write_case(root, f"chan_tile_{sname}_plain", [helper.make_node("Conv", ["x", "W", "B"], ["y"], kernel_shape=[k] * nd,
                                                                       pads=[p] * (2 * nd), strides=[st] * nd)],
                   [("x", x)], [("y", c.astype(np.float32))], [("W", w), ("B", b)])
    # Inception's factorised 1x7 and 7x1 on 17x17 (a 1x7 takes 4 x 2 tiles
    # on AVX2, whose 5 x 2 would spill), and a 1x5: residual Add and Relu.
    for sname, (C, M, kh, kw) in {"k1x7": (64, 64, 1, 7), "k7x1": (64, 64, 7, 1), "k1x5": (64, 48, 1, 5)}.items():
        x = randf(1, C, 17, 17)
        w = (randf(M, C, kh, kw) / math.sqrt(C * kh * kw)).astype(np.float32)
        b = randf(M)
        c = torch.nn.functional.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double(),
                                       torch.from_numpy(b).double(), padding=(kh // 2, kw // 2)).numpy()
        r = randf(*c.shape)
        conv = helper.make_node("Conv", ["x", "W", "B"], ["c"], kernel_shape=[kh, kw],
                                pads=[kh // 2, kw // 2, kh // 2, kw // 2])
        write_case(root, f"chan_tile_{sname}_17_res_relu", [conv, helper.make_node("Add", ["c", "r"], ["a"]),
                                                            helper.make_node("Relu", ["a"], ["y"])],
                   [("x", x), ("r", r)], [("y", np.maximum(c + r, 0).astype(np.float32))], [("W", w), ("B", b)])


def main():
    root = casekit.out_dir(__doc__)
    inplace_residual_cases(root)
    conv_epilogue_cases(root)
    matmul_epilogue_cases(root)
    chain_cases(root)
    group_cases(root)
    kernel_cases(root)
    se_block_cases(root)
    channels_tile_cases(root)
    sigmoid_epilogue_special_cases(root)


if __name__ == "__main__":
    main()
