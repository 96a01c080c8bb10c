#!/usr/bin/python3
"""Generates ONNX test folders for Conv, ConvTranspose, MaxPool, AveragePool
and GlobalAveragePool attribute combinations the ONNX backend suite misses.

Usage: /usr/bin/python3 make_conv_pool_cases.py OUT_DIR
       harness-test OUT_DIR/*

Each case is OUT_DIR/<name>/model.onnx plus test_data_set_0/{input,output}_i.pb.
Expected outputs come from the straightforward numpy references below
(computed in float64, rounded to the output type), written from the ONNX
operator specifications, not from Harness.
"""
import itertools

import numpy as np
from onnx import helper

import casekit
from casekit import bf16_round, cast_out, from_tagged, same_pads, window_out

RNG = np.random.default_rng(20240611)
BF16 = casekit.BFLOAT16  # marker dtype: stored as float32 values rounded to bfloat16


# ---- references ---------------------------------------------------------------

def conv_ref(x, w, b, strides, dil, pb, pe, group):
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, c = x.shape[:2]
    m = w.shape[0]
    nd = x.ndim - 2
    ks = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(pb, pe)))
    out = [window_out(x.shape[2 + i], ks[i], strides[i], dil[i], pb[i], pe[i]) for i in range(nd)]
    y = np.zeros((n, m) + tuple(out))
    cg, mg = c // group, m // group
    for g in range(group):
        for kidx in itertools.product(*[range(k) for k in ks]):
            sl = tuple(slice(kidx[i] * dil[i], kidx[i] * dil[i] + (out[i] - 1) * strides[i] + 1, strides[i])
                       for i in range(nd))
            xs = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]
            ws = w[(slice(g * mg, (g + 1) * mg), slice(None)) + kidx]
            y[:, g * mg:(g + 1) * mg] += np.einsum("nc...,mc->nm...", xs, ws)
    if b is not None:
        y += b.astype(np.float64).reshape((1, m) + (1,) * nd)
    return y


def conv_transpose_ref(x, w, b, strides, dil, pb, out_shape, group):
    """y[o] += x[i] * w[k] for o = i*s + k*d - pb, o in [0, out)."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, c = x.shape[:2]
    mg = w.shape[1]
    m = mg * group
    nd = x.ndim - 2
    ks = w.shape[2:]
    ins = x.shape[2:]
    full = [strides[i] * (ins[i] - 1) + (ks[i] - 1) * dil[i] + 1 for i in range(nd)]
    lo = [min(0, pb[i]) for i in range(nd)]
    hi = [max(full[i], pb[i] + out_shape[i]) for i in range(nd)]
    buf = np.zeros((n, m) + tuple(hi[i] - lo[i] for i in range(nd)))
    cg = c // group
    for g in range(group):
        for kidx in itertools.product(*[range(k) for k in ks]):
            sl = tuple(slice(kidx[i] * dil[i] - lo[i], kidx[i] * dil[i] - lo[i] + (ins[i] - 1) * strides[i] + 1,
                             strides[i]) for i in range(nd))
            xs = x[:, g * cg:(g + 1) * cg]
            ws = w[(slice(g * cg, (g + 1) * cg), slice(None)) + kidx]  # cg, mg
            buf[(slice(None), slice(g * mg, (g + 1) * mg)) + sl] += np.einsum("nc...,cm->nm...", xs, ws)
    crop = tuple(slice(pb[i] - lo[i], pb[i] - lo[i] + out_shape[i]) for i in range(nd))
    y = buf[(slice(None), slice(None)) + crop]
    if b is not None:
        y = y + b.astype(np.float64).reshape((1, m) + (1,) * nd)
    return y


def pool_ref(x, kind, ks, strides, dil, pb, pe, ceil_mode=False, count_include_pad=False, storage_order=0):
    """MaxPool (values and Indices) or AveragePool by explicit windows."""
    n, c = x.shape[:2]
    ins = x.shape[2:]
    nd = len(ins)
    out = [window_out(ins[i], ks[i], strides[i], dil[i], pb[i], pe[i], ceil_mode) for i in range(nd)]
    y = np.zeros((n, c) + tuple(out))
    ind = np.zeros((n, c) + tuple(out), dtype=np.int64)
    plane = int(np.prod(ins))
    col_strides = [int(np.prod(ins[:i])) for i in range(nd)]
    xf = x.astype(np.float64)
    for nn, cc in itertools.product(range(n), range(c)):
        for o in itertools.product(*[range(v) for v in out]):
            best, best_i, total, count = None, -1, 0.0, 0
            for k in itertools.product(*[range(v) for v in ks]):
                pos = [o[i] * strides[i] + k[i] * dil[i] - pb[i] for i in range(nd)]
                valid = all(0 <= pos[i] < ins[i] for i in range(nd))
                if kind == "avg" and count_include_pad:
                    count += all(pos[i] < ins[i] + pe[i] for i in range(nd))
                if not valid:
                    continue
                v = xf[(nn, cc) + tuple(pos)]
                if kind == "avg":
                    total += v
                    count += 0 if count_include_pad else 1
                elif best is None or v > best:
                    best = v
                    if storage_order == 0:
                        flat = int(np.ravel_multi_index(pos, ins))
                    else:
                        flat = sum(pos[i] * col_strides[i] for i in range(nd))
                    best_i = (nn * c + cc) * plane + flat
            if kind == "avg":
                y[(nn, cc) + o] = total / count
            else:
                y[(nn, cc) + o] = best
                ind[(nn, cc) + o] = best_i
    return y, ind


# ---- ONNX writing -----------------------------------------------------------------

def rand(shape, dtype):
    if dtype in (np.int8, np.uint8):
        info = np.iinfo(dtype)
        return RNG.integers(info.min, info.max + 1, size=shape).astype(dtype)
    v = RNG.standard_normal(shape)
    if dtype == BF16:
        return bf16_round(v)
    return v.astype(dtype)


def save_case(root, name, node, inputs, outputs, opset, inits=()):
    """inputs/outputs/inits: lists of (name, array, dtype)."""
    casekit.write_case(root, name, node, from_tagged(inputs), from_tagged(outputs), opset, from_tagged(inits),
                       producer="harness-tests")


# ---- cases ------------------------------------------------------------------------------

def conv_case(root, name, xs, ws, dtype=np.float32, bias=True, opset=17, strides=None, dil=None, pads=None,
              auto_pad=None, group=1, kernel_attr=False, unit_fan_in=False, const_weights=False):
    nd = len(xs) - 2
    x, w = rand(xs, dtype), rand(ws, dtype)
    if unit_fan_in:  # weights scaled by 1/sqrt(fan-in), as trained networks have them
        w = (w / np.sqrt(np.prod(ws[1:]))).astype(dtype)
    b = rand((ws[0],), dtype) if bias else None
    s = strides or [1] * nd
    d = dil or [1] * nd
    attrs = {"group": group}
    if strides:
        attrs["strides"] = strides
    if dil:
        attrs["dilations"] = dil
    if kernel_attr:
        attrs["kernel_shape"] = list(ws[2:])
    if auto_pad:
        attrs["auto_pad"] = auto_pad
        if auto_pad == "VALID":
            pb = pe = [0] * nd
        else:
            pp = [same_pads(xs[2 + i], ws[2 + i], s[i], d[i], auto_pad == "SAME_UPPER") for i in range(nd)]
            pb, pe = [p[0] for p in pp], [p[1] for p in pp]
    else:
        p = pads or [0] * (2 * nd)
        if pads:
            attrs["pads"] = pads
        pb, pe = p[:nd], p[nd:]
    y = conv_ref(x, w, b, s, d, pb, pe, group)
    ins = [("X", x, dtype), ("W", w, dtype)] + ([("B", b, dtype)] if bias else [])
    node = helper.make_node("Conv", [n for n, _, _ in ins], ["Y"], **attrs)
    inits = []
    if const_weights:  # initializers, as exported models have them (passes may rewrite them)
        inits, ins = ins[1:], ins[:1]
    save_case(root, name, node, ins, [("Y", cast_out(y, dtype), dtype)], opset, inits)


def conv_transpose_case(root, name, xs, ws, dtype=np.float32, bias=True, opset=17, strides=None, dil=None,
                        pads=None, output_padding=None, output_shape=None, auto_pad=None, group=1,
                        const_weights=False):
    nd = len(xs) - 2
    x, w = rand(xs, dtype), rand(ws, dtype)
    m = ws[1] * group
    b = rand((m,), dtype) if bias else None
    s = strides or [1] * nd
    d = dil or [1] * nd
    op = output_padding or [0] * nd
    attrs = {"group": group}
    for key, v in (("strides", strides), ("dilations", dil), ("output_padding", output_padding),
                   ("output_shape", output_shape), ("auto_pad", auto_pad), ("pads", pads)):
        if v is not None:
            attrs[key] = v
    full = [s[i] * (xs[2 + i] - 1) + op[i] + (ws[2 + i] - 1) * d[i] + 1 for i in range(nd)]
    if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = output_shape if output_shape is not None else [xs[2 + i] * s[i] for i in range(nd)]
        # Extra output beyond the full result goes at the end (ONNX Runtime).
        total = [max(0, full[i] - out[i]) for i in range(nd)]
        pb = [t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in total]
    else:
        p = pads or [0] * (2 * nd)
        pb = p[:nd]
        out = [full[i] - p[i] - p[nd + i] for i in range(nd)]
    y = conv_transpose_ref(x, w, b, s, d, pb, out, group)
    ins = [("X", x, dtype), ("W", w, dtype)] + ([("B", b, dtype)] if bias else [])
    node = helper.make_node("ConvTranspose", [n for n, _, _ in ins], ["Y"], **attrs)
    inits = []
    if const_weights:  # initializers: -O3 regroups them by output phase (HC_PACK_CONVT_PHASES)
        inits, ins = ins[1:], ins[:1]
    save_case(root, name, node, ins, [("Y", cast_out(y, dtype), dtype)], opset, inits)


def pool_case(root, name, op, xs, ks, dtype=np.float32, opset=17, strides=None, dil=None, pads=None, auto_pad=None,
              ceil_mode=None, count_include_pad=None, storage_order=None, indices=False, negative=False):
    nd = len(xs) - 2
    x = rand(xs, dtype)
    if negative:  # every value below the padding's 0: a window must never see the padding
        x = (-np.abs(x) - 1).astype(dtype)
    s = strides or [1] * nd
    d = dil or [1] * nd
    attrs = {"kernel_shape": ks}
    for key, v in (("strides", strides), ("dilations", dil), ("pads", pads), ("auto_pad", auto_pad),
                   ("ceil_mode", ceil_mode), ("count_include_pad", count_include_pad),
                   ("storage_order", storage_order)):
        if v is not None:
            attrs[key] = v
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pp = [same_pads(xs[2 + i], ks[i], s[i], d[i], auto_pad == "SAME_UPPER") for i in range(nd)]
        pb, pe = [p[0] for p in pp], [p[1] for p in pp]
    else:
        p = pads if pads and auto_pad != "VALID" else [0] * (2 * nd)
        pb, pe = p[:nd], p[nd:]
    kind = "max" if op == "MaxPool" else "avg"
    y, ind = pool_ref(x, kind, ks, s, d, pb, pe, bool(ceil_mode), bool(count_include_pad), storage_order or 0)
    outs = [("Y", cast_out(y, dtype), dtype)]
    if indices:
        outs.append(("I", ind, np.int64))
    node = helper.make_node(op, ["X"], [n for n, _, _ in outs], **attrs)
    save_case(root, name, node, [("X", x, dtype)], outs, opset)


def gap_case(root, name, xs, dtype=np.float32, opset=17):
    x = rand(xs, dtype)
    y = x.astype(np.float64).mean(axis=tuple(range(2, len(xs))), keepdims=True)
    node = helper.make_node("GlobalAveragePool", ["X"], ["Y"])
    save_case(root, name, node, [("X", x, dtype)], [("Y", cast_out(y, dtype), dtype)], opset)


def graph_case(root, name, nodes, inputs, outputs, inits, opset=17):
    """A multi-node model: inputs/outputs are (name, array, dtype); inits
    are (name, array) float32 initializers."""
    casekit.write_case(root, name, nodes, from_tagged(inputs), from_tagged(outputs), opset, inits,
                       producer="harness-tests")


def folding_cases(root):
    """Constant subgraphs (evaluated by the compiler's JIT, workspace included)
    and Conv + BatchNormalization folding."""
    f32 = np.float32
    xc = rand((1, 3, 9, 8), f32)
    w = rand((8, 3, 3, 3), f32)
    b = rand((8,), f32)
    z = rand((1, 8, 5, 4), f32)
    y = conv_ref(xc, w, b, [2, 2], [1, 1], [1, 1], [1, 1], 1) + z
    graph_case(root, "fold_conv_constant_input", [
        helper.make_node("Conv", ["Xc", "W", "B"], ["C"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Add", ["C", "Z"], ["Y"])],
        [("Z", z, f32)], [("Y", y.astype(f32), f32)], [("Xc", xc), ("W", w), ("B", b)])

    xt = rand((1, 2, 4, 3), f32)
    wt = rand((2, 3, 3, 3), f32)
    zt = rand((1, 3, 9, 7), f32)
    yt = conv_transpose_ref(xt, wt, None, [2, 2], [1, 1], [1, 1], [9, 7], 1) + zt
    graph_case(root, "fold_convtranspose_constant_input", [
        helper.make_node("ConvTranspose", ["Xc", "W"], ["C"], pads=[1, 1, 0, 0], strides=[2, 2],
                         output_padding=[1, 1]),
        helper.make_node("Add", ["C", "Z"], ["Y"])],
        [("Z", zt, f32)], [("Y", yt.astype(f32), f32)], [("Xc", xt), ("W", wt)])

    x = rand((2, 3, 10, 9), f32)
    w = rand((6, 3, 3, 3), f32)
    scale, shift, mean = rand((6,), f32), rand((6,), f32), rand((6,), f32)
    var = (np.abs(rand((6,), f32)) + 0.5).astype(f32)
    c = conv_ref(x, w, None, [1, 1], [1, 1], [1, 1], [0, 2], 1)
    k = (scale / np.sqrt(var.astype(np.float64) + 1e-5)).reshape(1, 6, 1, 1)
    bn = (c - mean.reshape(1, 6, 1, 1)) * k + shift.reshape(1, 6, 1, 1)
    pooled, _ = pool_ref(np.maximum(bn, 0), "max", [3, 3], [2, 2], [1, 1], [1, 1], [1, 1])
    graph_case(root, "conv_bn_relu_maxpool", [
        helper.make_node("Conv", ["X", "W"], ["C"], pads=[1, 1, 0, 2]),
        helper.make_node("BatchNormalization", ["C", "S", "Sh", "Mu", "Var"], ["N"]),
        helper.make_node("Relu", ["N"], ["R"]),
        helper.make_node("MaxPool", ["R"], ["Y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
        [("X", x, f32)], [("Y", pooled.astype(f32), f32)],
        [("W", w), ("S", scale), ("Sh", shift), ("Mu", mean), ("Var", var)])


def main():
    root = casekit.out_dir(__doc__)
    f16, f64 = np.float16, np.float64

    # Conv
    conv_case(root, "conv_group_dil_stride_asym", (2, 6, 11, 13), (6, 2, 3, 2), group=3, strides=[2, 3],
              dil=[2, 1], pads=[1, 0, 2, 3])
    conv_case(root, "conv_3d_stride_pad_dil", (1, 3, 7, 8, 9), (4, 3, 3, 2, 3), strides=[1, 2, 2], dil=[1, 2, 1],
              pads=[1, 0, 2, 1, 1, 0])
    conv_case(root, "conv_1x1_gemm_wide", (2, 12, 40, 41), (8, 12, 1, 1))
    # Two and three output channels through the pixels kernel (stride 2):
    # all channels in one tile, as many vectors as fit the registers (two
    # channels on AVX2: 2 x 4, not 2 x 6).
    conv_case(root, "conv_s2_two_outputs", (1, 8, 67, 71), (2, 8, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1])
    conv_case(root, "conv_s2_three_outputs", (1, 5, 50, 45), (3, 5, 3, 3), strides=[2, 2], pads=[1, 0, 1, 0])
    conv_case(root, "conv_1x1_gemm_rows8", (2, 12, 9, 23), (40, 12, 1, 1))  # 8-row tiles, ragged columns
    # B over 1 MiB read in place: the next column panel is prefetched (ragged last panel)
    conv_case(root, "conv_1x1_gemm_prefetch", (1, 64, 64, 65), (16, 64, 1, 1))
    # Planes of whole KiB (conv.c gemm_reads_x_in_place): read in place
    # below 128 output channels, packed into panels from 128 (both at
    # batch 3, and a ragged 136 rows).
    conv_case(root, "conv_1x1_kib_planes_in_place", (3, 48, 16, 32), (72, 48, 1, 1))
    conv_case(root, "conv_1x1_kib_planes_packed", (3, 40, 16, 32), (136, 40, 1, 1))
    conv_case(root, "conv_1x1_strided", (1, 5, 9, 10), (7, 5, 1, 1), strides=[2, 2], bias=False)
    conv_case(root, "conv_depthwise_same_upper_s2", (1, 8, 15, 16), (8, 1, 3, 3), group=8, strides=[2, 2],
              auto_pad="SAME_UPPER")
    conv_case(root, "conv_depthwise_mult_same_lower", (1, 4, 10, 9), (8, 1, 4, 4), group=4, strides=[2, 1],
              auto_pad="SAME_LOWER", dil=[1, 2])
    conv_case(root, "conv_valid_kernel_attr", (1, 3, 8, 8), (5, 3, 3, 2), auto_pad="VALID", kernel_attr=True)
    conv_case(root, "conv_1d_wide_blocks", (1, 3, 1500), (4, 3, 5), pads=[2, 3], dil=[3])
    conv_case(root, "conv_1d_long_kernel", (2, 2, 60), (3, 2, 13), pads=[6, 4], strides=[2])
    conv_case(root, "conv_kx1_merged", (1, 4, 12, 9), (6, 4, 7, 1), pads=[3, 0, 3, 0])
    conv_case(root, "conv_3d_trailing_1x1", (1, 2, 5, 6, 7), (3, 2, 3, 1, 1), pads=[1, 0, 0, 1, 0, 0], dil=[2, 1, 1])
    conv_case(root, "conv_kernel_bigger_than_input", (1, 2, 3, 4), (3, 2, 5, 5), pads=[2, 2, 2, 2])
    conv_case(root, "conv_opset1", (1, 2, 6, 6), (4, 2, 3, 3), opset=1, pads=[1, 1, 1, 1])
    conv_case(root, "conv_float16", (1, 6, 12, 14), (8, 3, 3, 3), dtype=f16, group=2, pads=[1, 1, 0, 2],
              strides=[1, 2])
    # float16 through the pixels kernel (float32 accumulation, one rounding
    # per output): 1x1 and 1-D unpadded (x still copied to float32 images),
    # several channel tiles and vectors with ragged ends, 3-D, constant
    # weights.
    conv_case(root, "conv_float16_1x1_inplace", (2, 20, 9, 11), (30, 20, 1, 1), dtype=f16, unit_fan_in=True)
    conv_case(root, "conv_float16_tiles", (1, 24, 13, 15), (40, 24, 3, 3), dtype=f16, pads=[1, 1, 1, 1],
              unit_fan_in=True, const_weights=True)
    conv_case(root, "conv_float16_1d", (1, 8, 70), (12, 8, 5), dtype=f16, unit_fan_in=True)
    # float16 through the channels kernel (small planes): weights packed in
    # float16 panels at -O3 (constant) or at run time (an input), ragged
    # channel tiles.
    conv_case(root, "conv_float16_channels_1x1", (1, 72, 14, 14), (56, 72, 1, 1), dtype=f16, unit_fan_in=True,
              const_weights=True)
    conv_case(root, "conv_float16_channels_s2", (2, 40, 15, 13), (64, 40, 3, 3), dtype=f16, strides=[2, 2],
              pads=[1, 1, 1, 1], unit_fan_in=True)
    # float16 Winograd: F(4x4,3x3) in blocks of tiles with the weights an
    # input (transformed at run time), ragged borders and padding.
    conv_case(root, "conv_float16_winograd4_input_weights", (1, 16, 46, 50), (24, 16, 3, 3), dtype=f16,
              pads=[1, 0, 1, 2], unit_fan_in=True)
    conv_case(root, "conv_float16_3d", (1, 4, 5, 6, 7), (6, 4, 3, 3, 3), dtype=f16, pads=[1, 1, 1, 1, 1, 1],
              strides=[1, 2, 1], unit_fan_in=True)
    conv_case(root, "conv_float64", (2, 3, 9, 7), (4, 3, 2, 3), dtype=f64, dil=[2, 2], pads=[0, 1, 1, 0])
    conv_case(root, "conv_bfloat16", (1, 4, 8, 9), (4, 4, 3, 3), dtype=BF16, pads=[1, 1, 1, 1], opset=22)
    conv_case(root, "conv_batch_odd_channels", (3, 5, 6, 7), (7, 5, 3, 3), pads=[1, 1, 1, 1])
    # The pixels kernel by output rows (plan_pixels): asymmetric pads, two
    # images, rows of 71 (4 panels and 7 lanes on AVX2) in blocks of rows.
    conv_case(root, "conv_pixels_rows_batch", (2, 3, 40, 70), (6, 3, 3, 3), pads=[1, 2, 0, 1])
    # A 7x7 stem (147 terms) whose channel blocks plan_pixels shrinks to
    # weights a quarter of L1 fits (2 tiles of 6 on AVX2): 22 channels in
    # blocks of 12 and 10, the last a tile and a ragged one of 4.
    conv_case(root, "conv_pixels_stem7_blocks", (1, 3, 30, 40), (22, 3, 7, 7), strides=[2, 2], pads=[3, 3, 3, 3])
    # Strided images with rows of more than 16 vectors (emit_repack): the
    # inner vectors copied in a loop, odd widths, padding on either side.
    conv_case(root, "conv_float16_pixels_rows", (1, 3, 9, 140), (4, 3, 3, 3), dtype=f16, strides=[2, 2], pads=[1, 1, 1, 1],
              unit_fan_in=True)
    conv_case(root, "conv_s2_long_rows", (1, 2, 7, 301), (4, 2, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1])
    conv_case(root, "conv_s2_long_rows_asym", (2, 3, 6, 290), (5, 3, 3, 5), strides=[1, 2], pads=[1, 2, 0, 1])
    # Vectorised repack (padded / strided input images): rows of one, two and three vectors, masked tails,
    # zero rows above and below, the pixels and the channels kernels, 1-D
    conv_case(root, "conv_repack_s2_wide", (1, 3, 40, 37), (8, 3, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1])
    conv_case(root, "conv_repack_s2_channels", (2, 16, 15, 14), (32, 16, 3, 3), strides=[2, 2], pads=[0, 1, 2, 1])
    conv_case(root, "conv_repack_1x1_s2_wide", (1, 8, 38, 41), (8, 8, 1, 1), strides=[2, 2])
    conv_case(root, "conv_repack_s1_pad_wide", (1, 4, 9, 35), (6, 4, 3, 5), pads=[1, 2, 1, 2])
    conv_case(root, "conv_repack_s2_dil", (1, 3, 20, 21), (4, 3, 3, 3), strides=[2, 2], dil=[2, 2], pads=[2, 2, 2, 2])
    conv_case(root, "conv_repack_1d_s2", (2, 4, 50), (5, 4, 3), strides=[2], pads=[1, 1])
    # Dilated kernels wider than the plane (DeepLabV3's atrous rates): taps that
    # only read padding are trimmed (canonicalize), down to a 1x1 GEMM; the
    # channels kernel takes dilated rows as wide as half the output
    conv_case(root, "conv_dil_taps_only_center", (1, 8, 9, 9), (16, 8, 3, 3), dil=[12, 12], pads=[12] * 4,
              const_weights=True)
    conv_case(root, "conv_dil_taps_trim_front_1d", (2, 3, 20), (5, 3, 5), dil=[6], pads=[20, 4], const_weights=True)
    conv_case(root, "conv_dil_taps_trim_same_upper", (1, 4, 5, 7), (6, 4, 3, 3), dil=[8, 1], auto_pad="SAME_UPPER",
              const_weights=True)
    conv_case(root, "conv_dil_taps_trim_strided_3d", (1, 2, 4, 6, 5), (3, 2, 3, 3, 2), strides=[2, 1, 2],
              dil=[5, 4, 6], pads=[5, 4, 0, 5, 4, 6], const_weights=True)
    conv_case(root, "conv_dil_channels_wide_plane", (1, 16, 30, 31), (32, 16, 3, 3), dil=[12, 12], pads=[12] * 4,
              const_weights=True, unit_fan_in=True)
    # Per-tile tap skipping in the channels kernel (ch_emit_terms): tiles
    # whose taps read only padding leave those taps out. ASPP-like rates on
    # small planes; a batch of 2 with weights as an input; stride 2 with
    # uneven pads; 1-D; input channels in several reduction slices (partial
    # sums parked between them); ragged tile rows and columns throughout.
    conv_case(root, "conv_dil_skip_aspp", (1, 24, 17, 19), (40, 24, 3, 3), dil=[6, 6], pads=[6] * 4,
              const_weights=True, unit_fan_in=True)
    conv_case(root, "conv_dil_skip_rate_wide", (2, 24, 13, 11), (36, 24, 3, 3), dil=[9, 7], pads=[9, 7, 9, 7],
              unit_fan_in=True)
    conv_case(root, "conv_dil_skip_strided", (1, 32, 23, 21), (48, 32, 3, 3), strides=[2, 2], dil=[5, 4],
              pads=[6, 3, 4, 5], const_weights=True, unit_fan_in=True)
    conv_case(root, "conv_dil_skip_1d", (2, 32, 60), (40, 32, 3), dil=[24], pads=[24, 24], const_weights=True,
              unit_fan_in=True)
    conv_case(root, "conv_dil_skip_slices", (1, 160, 15, 14), (48, 160, 3, 3), dil=[5, 5], pads=[5] * 4,
              const_weights=True, unit_fan_in=True)
    # One output position per image (conv_is_gemv): a product of the images
    # with W transposed. Several images; 1-D and 3-D kernels that cover the
    # input; more taps than the other fast kernels take (9x9); weights as an
    # input (packed by a kernel at run time); wide outputs in several tasks.
    conv_case(root, "conv_gemv_batch3", (3, 70, 1, 1), (33, 70, 1, 1), const_weights=True, unit_fan_in=True)
    conv_case(root, "conv_gemv_head_1d", (2, 8, 7), (37, 8, 7), const_weights=True, unit_fan_in=True)
    conv_case(root, "conv_gemv_head_3d_input_weights", (2, 3, 2, 3, 4), (20, 3, 2, 3, 4), unit_fan_in=True)
    conv_case(root, "conv_gemv_9x9", (2, 2, 9, 9), (24, 2, 9, 9), bias=False, const_weights=True, unit_fan_in=True)
    conv_case(root, "conv_gemv_wide", (1, 300, 1, 1), (1000, 300, 1, 1), const_weights=True, unit_fan_in=True)
    conv_case(root, "conv_gemv_valid_strided", (2, 16, 3, 3), (24, 16, 3, 3), strides=[2, 2], auto_pad="VALID",
              const_weights=True, unit_fan_in=True)
    # Channels kernel with the input more than 4 times the output (a
    # projection): two row blocks (8 + 6 rows of 14) before channel blocks.
    conv_case(root, "conv_proj_rows_first", (1, 384, 14, 14), (64, 384, 1, 1), const_weights=True, unit_fan_in=True)
    conv_case(root, "conv_proj_rows_first_grouped_batch2", (2, 384, 14, 14), (64, 192, 1, 1), group=2,
              const_weights=True, unit_fan_in=True)
    conv_case(root, "conv_proj_rows_first_dilated", (1, 320, 24, 13), (64, 320, 3, 3), dil=[2, 2], pads=[2] * 4,
              const_weights=True, unit_fan_in=True)
    # Winograd F(2x2,3x3) and F(4x4,3x3) with the weights as an input
    # (transformed by a "wino*_w" kernel at run time). Winograd's error is a
    # small multiple of the direct kernels' (about 1e-6 of the output's scale
    # for F(4x4,3x3)): unnormalised weights would leave outputs near zero
    # among terms of magnitude 50, beyond atol 1e-5 for either.
    conv_case(root, "conv_winograd2_input_weights", (2, 17, 10, 11), (19, 17, 3, 3), pads=[1, 1, 1, 1],
              unit_fan_in=True)
    conv_case(root, "conv_winograd4_input_weights_asym", (1, 16, 46, 46), (16, 16, 3, 3), pads=[0, 1, 2, 1],
              bias=False, unit_fan_in=True)

    # ConvTranspose
    conv_transpose_case(root, "convt_group_dil_stride_opad", (2, 4, 5, 4), (4, 3, 3, 2), group=2, strides=[2, 3],
                        dil=[2, 1], output_padding=[1, 0], pads=[1, 0, 2, 1])
    conv_transpose_case(root, "convt_1d_stride1_gather", (1, 6, 20), (6, 2, 4), group=3, dil=[2], pads=[3, 1])
    conv_transpose_case(root, "convt_3d_strides", (1, 2, 3, 4, 3), (2, 3, 2, 3, 2), strides=[2, 1, 3],
                        pads=[0, 1, 1, 1, 0, 0])
    conv_transpose_case(root, "convt_output_shape_odd", (1, 2, 4, 5), (2, 2, 3, 3), strides=[2, 2],
                        output_shape=[9, 12])
    conv_transpose_case(root, "convt_output_shape_same_upper", (1, 2, 4, 5), (2, 2, 3, 3), strides=[2, 2],
                        output_shape=[8, 10], auto_pad="SAME_UPPER")
    conv_transpose_case(root, "convt_output_shape_larger", (1, 2, 3, 3), (2, 2, 3, 3), strides=[2, 2],
                        output_shape=[9, 8])
    conv_transpose_case(root, "convt_same_lower", (1, 2, 4, 5), (2, 1, 4, 3), strides=[2, 3], auto_pad="SAME_LOWER")
    conv_transpose_case(root, "convt_same_upper_k_lt_s", (1, 1, 4, 3), (1, 2, 2, 2), strides=[3, 3],
                        auto_pad="SAME_UPPER")
    conv_transpose_case(root, "convt_1d_wide_scatter", (1, 2, 400), (2, 2, 3), strides=[2], pads=[1, 0])
    conv_transpose_case(root, "convt_1d_wide_gather", (1, 2, 700), (2, 3, 5), pads=[2, 2], dil=[2])
    conv_transpose_case(root, "convt_1x1_merged", (1, 3, 6, 7), (3, 4, 1, 1), bias=False)
    # Four phases of one tap each: one kernel body for all of them.
    conv_transpose_case(root, "convt_k2_s2_phases", (2, 8, 6, 5), (8, 4, 2, 2), strides=[2, 2])
    # float32 ConvTranspose takes the pixels kernel, one kernel per output
    # phase; with constant weights regrouped by phase at -O3. DCGAN's
    # 4x4 stride-2 upsampler with more channels than one register tile,
    # groups with output padding and uneven phases, 1-D, and a stride above
    # the kernel (phases that receive no tap: bias only).
    conv_transpose_case(root, "convt_dcgan_const", (1, 40, 5, 4), (40, 20, 4, 4), strides=[2, 2], pads=[1, 1, 1, 1],
                        const_weights=True)
    conv_transpose_case(root, "convt_group_opad_const", (2, 6, 5, 7), (6, 5, 3, 2), group=3, strides=[2, 3],
                        dil=[1, 2], output_padding=[1, 2], pads=[1, 0, 0, 1], const_weights=True)
    conv_transpose_case(root, "convt_1d_s3_const", (1, 24, 33), (24, 10, 5), strides=[3], pads=[2, 1],
                        const_weights=True)
    conv_transpose_case(root, "convt_k_lt_s_const", (1, 9, 6, 5), (9, 7, 2, 1), strides=[3, 2], const_weights=True)
    # Kernel = stride (UNet's up-convolutions): canonicalize makes it a 1x1
    # Conv to O*s*s channels and DepthToSpace (constant weights, float32,
    # group 1, no pads); the others keep the phase kernels.
    conv_transpose_case(root, "convt_k_eq_s_conv_d2s", (2, 12, 5, 7), (12, 6, 2, 2), strides=[2, 2],
                        const_weights=True)
    conv_transpose_case(root, "convt_k_eq_s3_conv_d2s_nobias", (1, 5, 4, 3), (5, 7, 3, 3), strides=[3, 3], bias=False,
                        const_weights=True)
    conv_transpose_case(root, "convt_k_eq_s_dilated", (1, 6, 4, 4), (6, 5, 2, 2), strides=[2, 2], dil=[2, 2],
                        const_weights=True)
    conv_transpose_case(root, "convt_k_eq_s_rect", (1, 6, 4, 4), (6, 5, 2, 3), strides=[2, 3], const_weights=True)
    # Many output channels on small phase planes take the channels kernel
    # (convt_channels): constant weights packed in panels grouped by phase at
    # -O3, run-time panels otherwise; ragged channel panels, groups with
    # output padding, 1-D, stride 1 (one phase, vector stores) and a stride
    # equal to the kernel (one tap per phase).
    conv_transpose_case(root, "convt_chan_dcgan_const", (1, 64, 4, 4), (64, 40, 4, 4), strides=[2, 2],
                        pads=[1, 1, 1, 1], const_weights=True)
    conv_transpose_case(root, "convt_chan_rt_weights", (1, 64, 4, 4), (64, 40, 4, 4), strides=[2, 2],
                        pads=[1, 1, 1, 1])
    conv_transpose_case(root, "convt_chan_group_opad_const", (2, 48, 5, 3), (48, 36, 4, 4), group=2, strides=[2, 2],
                        output_padding=[1, 0], pads=[1, 2, 0, 1], const_weights=True)
    conv_transpose_case(root, "convt_chan_1d_const", (1, 80, 20), (80, 33, 4), strides=[2], pads=[1, 1],
                        const_weights=True)
    conv_transpose_case(root, "convt_chan_stride1_const", (1, 64, 6, 7), (64, 32, 3, 3), pads=[1, 1, 1, 1],
                        const_weights=True)
    conv_transpose_case(root, "convt_chan_k_eq_s_const", (1, 64, 4, 4), (64, 32, 3, 3), strides=[3, 3],
                        pads=[1, 1, 1, 1], const_weights=True)  # padded: not a Conv + DepthToSpace
    # An output of one row at stride 2: the odd row phase has no outputs, so
    # the weights are not packed by phase at -O3 (convt_prepack_panels) but
    # at run time.
    conv_transpose_case(root, "convt_chan_empty_phase_const", (1, 64, 1, 3), (64, 32, 2, 2), strides=[2, 2],
                        pads=[1, 0, 0, 0], const_weights=True)
    # One input position (a generator's first layer): canonicalize makes it
    # Flatten -> Gemm -> Reshape (constant weights, float32, group 1, zero
    # pads); the others keep the ConvTranspose kernels.
    conv_transpose_case(root, "convt_1x1_input_gemm", (2, 24, 1, 1), (24, 20, 4, 4), strides=[2, 2],
                        const_weights=True)
    conv_transpose_case(root, "convt_1x1_input_gemm_nobias_3d", (1, 10, 1, 1, 1), (10, 6, 2, 3, 2), bias=False,
                        pads=[0, 0, 0, 0, 0, 0], const_weights=True)
    conv_transpose_case(root, "convt_1x1_input_gemm_1d_dil_k1", (3, 7, 1), (7, 5, 1), dil=[3], const_weights=True)
    conv_transpose_case(root, "convt_1x1_input_pads", (1, 8, 1, 1), (8, 6, 4, 4), strides=[2, 2], pads=[1, 1, 1, 1],
                        const_weights=True)
    conv_transpose_case(root, "convt_1x1_input_opad", (1, 8, 1, 1), (8, 6, 3, 3), strides=[2, 2],
                        output_padding=[1, 1], const_weights=True)
    conv_transpose_case(root, "convt_1x1_input_dil", (1, 8, 1, 1), (8, 6, 3, 3), dil=[2, 2], const_weights=True)
    conv_transpose_case(root, "convt_1x1_input_group", (1, 8, 1, 1), (8, 3, 4, 4), group=2, const_weights=True)
    conv_transpose_case(root, "convt_1x1_input_rt_weights", (1, 8, 1, 1), (8, 6, 4, 4))
    conv_transpose_case(root, "convt_float16", (1, 4, 5, 6), (4, 2, 3, 3), dtype=f16, strides=[2, 2],
                        output_padding=[1, 1], pads=[1, 1, 0, 0])
    conv_transpose_case(root, "convt_float64_opset1", (2, 2, 4, 4), (2, 2, 2, 3), dtype=f64, opset=1,
                        strides=[1, 2])

    # MaxPool
    pool_case(root, "maxpool_int8", "MaxPool", (2, 3, 9, 10), [3, 3], dtype=np.int8, strides=[2, 2],
              pads=[1, 1, 1, 0], opset=12)
    pool_case(root, "maxpool_uint8_3d", "MaxPool", (1, 2, 5, 6, 7), [2, 3, 2], dtype=np.uint8, strides=[1, 2, 2],
              pads=[0, 1, 1, 1, 1, 0], opset=12)
    pool_case(root, "maxpool_dil_ceil_idx", "MaxPool", (1, 2, 11, 12), [3, 2], strides=[2, 3], dil=[2, 2],
              pads=[1, 0, 1, 1], ceil_mode=1, indices=True)
    pool_case(root, "maxpool_idx_colmajor", "MaxPool", (2, 3, 7, 8), [3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
              storage_order=1, indices=True)
    pool_case(root, "maxpool_idx_3d_colmajor", "MaxPool", (1, 2, 5, 6, 4), [2, 2, 3], strides=[2, 1, 1],
              pads=[0, 1, 1, 1, 0, 1], storage_order=1, indices=True)
    pool_case(root, "maxpool_ceil_drop_last", "MaxPool", (1, 1, 5, 5), [2, 2], strides=[3, 3], pads=[1, 1, 1, 1],
              ceil_mode=1, indices=True)
    pool_case(root, "maxpool_float16", "MaxPool", (1, 3, 9, 8), [3, 3], dtype=f16, strides=[2, 2],
              auto_pad="SAME_UPPER")
    pool_case(root, "maxpool_1d_wide", "MaxPool", (1, 2, 3000), [4], strides=[1], pads=[1, 2], indices=True)
    pool_case(root, "maxpool_long_kernel", "MaxPool", (1, 2, 6, 40), [2, 11], strides=[1, 3], pads=[0, 5, 1, 5])
    pool_case(root, "maxpool_opset8_same_lower", "MaxPool", (1, 2, 7, 6), [2, 3], strides=[2, 2],
              auto_pad="SAME_LOWER", opset=8)
    pool_case(root, "maxpool_float64_valid_ceil", "MaxPool", (1, 2, 8, 9), [3, 2], dtype=f64, strides=[2, 2],
              auto_pad="VALID")

    # MaxPool without Indices: the separable kernel (rows folded first, full-window rows in one pass)
    pool_case(root, "maxpool_sep_resnet_odd", "MaxPool", (1, 4, 13, 11), [3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
              negative=True)
    pool_case(root, "maxpool_sep_dil_ceil", "MaxPool", (2, 3, 12, 13), [3, 3], strides=[2, 2], dil=[2, 1],
              pads=[1, 2, 2, 1], ceil_mode=1, negative=True)
    pool_case(root, "maxpool_sep_1d", "MaxPool", (1, 2, 37), [5], strides=[2], pads=[2, 1], negative=True)
    pool_case(root, "maxpool_sep_3d", "MaxPool", (1, 2, 5, 7, 9), [2, 3, 3], strides=[1, 2, 2], pads=[1, 1, 0, 0, 1, 2])
    # ... whose float32 output columns go in vectors of 8 for strides up to 4 (a shuffle per tap), the
    # rest one by one: 19 columns = 2 vectors + 3; 18 = 2 + 2 with dilation; stride 5 stays scalar
    pool_case(root, "maxpool_sep_vec_s2", "MaxPool", (1, 3, 40, 37), [3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
              negative=True)
    pool_case(root, "maxpool_sep_vec_s4_dil", "MaxPool", (1, 2, 9, 75), [2, 3], strides=[1, 4], dil=[1, 2],
              pads=[0, 1, 1, 0])
    pool_case(root, "maxpool_sep_vec_s1", "MaxPool", (1, 2, 6, 29), [2, 3], strides=[1, 1], pads=[0, 1, 0, 1])
    pool_case(root, "maxpool_sep_s5", "MaxPool", (1, 2, 6, 83), [2, 5], strides=[2, 5])

    # AveragePool
    pool_case(root, "avgpool_dilations", "AveragePool", (1, 2, 10, 11), [3, 2], strides=[2, 1], dil=[2, 3],
              pads=[1, 1, 2, 0], opset=19)
    pool_case(root, "avgpool_ceil_include_pad", "AveragePool", (1, 2, 7, 8), [3, 3], strides=[2, 2],
              pads=[1, 1, 1, 0], ceil_mode=1, count_include_pad=1)
    pool_case(root, "avgpool_ceil_exclude_pad", "AveragePool", (1, 2, 7, 8), [3, 3], strides=[2, 2],
              pads=[1, 1, 1, 0], ceil_mode=1)
    pool_case(root, "avgpool_3d_asym", "AveragePool", (2, 2, 5, 6, 7), [2, 3, 2], strides=[1, 2, 2],
              pads=[1, 0, 1, 0, 1, 1])
    pool_case(root, "avgpool_3d_include_pad", "AveragePool", (1, 2, 4, 5, 6), [3, 2, 3], strides=[2, 2, 1],
              pads=[1, 1, 1, 1, 0, 2], count_include_pad=1)
    pool_case(root, "avgpool_float16_same_lower", "AveragePool", (1, 3, 9, 10), [3, 2], dtype=f16, strides=[2, 2],
              auto_pad="SAME_LOWER")
    pool_case(root, "avgpool_float64_dil_include", "AveragePool", (1, 2, 9, 9), [2, 3], dtype=f64, strides=[1, 2],
              dil=[3, 2], pads=[2, 1, 1, 2], count_include_pad=1, opset=19)
    pool_case(root, "avgpool_1d_wide", "AveragePool", (2, 1, 2100), [5], strides=[1], pads=[2, 2])
    pool_case(root, "avgpool_bfloat16", "AveragePool", (1, 2, 6, 6), [2, 2], dtype=BF16, strides=[2, 2], opset=22)

    # GlobalAveragePool
    gap_case(root, "gap_float16_3d", (2, 3, 4, 5, 6), dtype=f16)
    gap_case(root, "gap_large_plane", (1, 3, 130, 131))
    gap_case(root, "gap_many_small_planes", (2, 300, 7, 7))
    gap_case(root, "gap_float64_1d", (2, 4, 33), dtype=f64)

    folding_cases(root)


if __name__ == "__main__":
    main()
