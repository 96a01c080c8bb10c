#!/usr/bin/python3
"""Generates ONNX test folders for NegativeLogLikelihoodLoss,
SoftmaxCrossEntropyLoss, GridSample, RoiAlign, MaxRoiPool, TfIdfVectorizer,
Det, GlobalMaxPool, GlobalLpPool, LpPool and MaxUnpool: the attribute,
opset and dtype combinations the ONNX backend suite misses.

Usage: /usr/bin/python3 make_misc_cases.py OUT_DIR
       harness-test OUT_DIR/*

Each case is OUT_DIR/<name>/model.onnx plus test_data_set_0/{input,output}_i.pb.
Expected outputs come from the straightforward numpy references below
(float64, rounded to the output type), written from the ONNX operator
specifications and reference implementations, not from Harness. Cases named
invalid_* check Harness's documented behaviour for bad run-time values
(compiler/ops/*.c file comments), which ONNX leaves undefined.
"""
import itertools
import math

import numpy as np
from onnx import helper

import casekit
from casekit import bf16_round, cast_out, from_tagged, same_pads, window_out

RNG = np.random.default_rng(20240917)
BF16 = casekit.BFLOAT16  # marker dtype: stored as float32 values rounded to bfloat16
f16, f32, f64 = np.float16, np.float32, np.float64


# ---- ONNX writing ---------------------------------------------------------------

def rand(shape, dtype, lo=-1.0, hi=1.0):
    v = RNG.uniform(lo, hi, size=shape)
    if dtype == BF16:
        return bf16_round(v)
    return v.astype(dtype)


def save_case(root, name, node, inputs, outputs, opset, inits=()):
    """inputs/outputs: lists of (name, array, dtype); inits: (name, array, dtype)
    initializers (compile-time constants)."""
    casekit.write_case(root, name, node, from_tagged(inputs), from_tagged(outputs), opset, from_tagged(inits),
                       producer="harness-tests")


# ---- losses -----------------------------------------------------------------------

def log_softmax(x):
    x = x.astype(np.float64)
    m = np.max(x, axis=1, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=1, keepdims=True))


def nll_ref(x, t, w, reduction, ii):
    """NegativeLogLikelihoodLoss; the mean divides by the summed weights of
    the targets that are not ignored. Invalid targets give NaN (Harness)."""
    x = x.astype(np.float64)
    n, c = x.shape[:2]
    xr = x.reshape(n, c, -1)
    tr = t.reshape(n, -1)
    loss = np.zeros(tr.shape)
    wt = np.zeros(tr.shape)
    for i, d in itertools.product(range(n), range(tr.shape[1])):
        tg = int(tr[i, d])
        if ii is not None and tg == ii:
            continue
        if 0 <= tg < c:
            wt[i, d] = 1.0 if w is None else float(w[tg])
            loss[i, d] = -xr[i, tg, d] * wt[i, d]
        else:
            loss[i, d] = np.nan
            wt[i, d] = 1.0
    loss = loss.reshape(t.shape)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.array(loss.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.array(loss.sum() / wt.sum())


def loss_case(root, name, op, xs, dtype=f32, tdtype=np.int64, weight=False, reduction="mean", ii=None,
              log_prob=False, opset=13, ignore_frac=0.0, bad_targets=False):
    x = rand(xs, dtype, -3, 3)
    tshape = (xs[0],) + tuple(xs[2:])
    t = RNG.integers(0, xs[1], size=tshape).astype(tdtype)
    if ii is not None and ignore_frac > 0:
        t[RNG.uniform(size=tshape) < ignore_frac] = ii
    if bad_targets:
        t.flat[0] = xs[1]
        t.flat[-1] = -5
    w = rand((xs[1],), dtype, 0.2, 2.0) if weight else None
    attrs = {"reduction": reduction}
    if ii is not None:
        attrs["ignore_index"] = ii
    outs = ["loss", "log_prob"] if log_prob else ["loss"]
    ins = ["x", "t"] + (["w"] if weight else [])
    node = helper.make_node(op, ins, outs, **attrs)
    xv = log_softmax(x.astype(np.float64)) if op == "SoftmaxCrossEntropyLoss" else x
    y = nll_ref(xv, t, w, reduction, ii)
    inputs = [("x", x, dtype), ("t", t, tdtype)] + ([("w", w, dtype)] if weight else [])
    outputs = [("loss", cast_out(y, dtype), dtype)]
    if log_prob:
        outputs.append(("log_prob", cast_out(xv, dtype), dtype))
    save_case(root, name, node, inputs, outputs, opset)


def loss_cases(root):
    NLL, SCE = "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"
    loss_case(root, "nll_opset12_NC_int32_sum", NLL, (7, 5), tdtype=np.int32, reduction="sum", opset=12)
    loss_case(root, "nll_float64_NCd_weight_mean_ii", NLL, (3, 4, 5, 6), dtype=f64, weight=True, ii=2,
              ignore_frac=0.3)
    loss_case(root, "nll_float16_none_weight", NLL, (2, 5, 7), dtype=f16, weight=True, reduction="none")
    loss_case(root, "nll_bfloat16_mean", NLL, (4, 3, 9), dtype=BF16, opset=22)
    loss_case(root, "nll_long_d_blocks_mean_ii", NLL, (2, 6, 700), ii=-1, ignore_frac=0.2)
    loss_case(root, "nll_NC_many_rows_weight_sum", NLL, (1500, 3), weight=True, reduction="sum")
    loss_case(root, "nll_ii_outside_classes_mean", NLL, (3, 4, 5), ii=17, weight=True)
    loss_case(root, "nll_all_ignored_mean_nan", NLL, (2, 3, 4), ii=1, ignore_frac=1.1)
    loss_case(root, "invalid_nll_targets_out_of_range_none", NLL, (2, 4, 3), reduction="none", bad_targets=True)
    loss_case(root, "invalid_nll_targets_out_of_range_sum", NLL, (2, 4, 3), reduction="sum", bad_targets=True)
    loss_case(root, "sce_opset12_NC_mean", SCE, (6, 9), opset=12)
    loss_case(root, "sce_NC_many_rows_log_prob_weight_ii", SCE, (900, 21), weight=True, ii=3, ignore_frac=0.1,
              log_prob=True)
    loss_case(root, "sce_float64_NCd_none_log_prob", SCE, (2, 5, 4, 3), dtype=f64, reduction="none", log_prob=True)
    loss_case(root, "sce_float16_sum_weight", SCE, (3, 6, 10), dtype=f16, weight=True, reduction="sum")
    loss_case(root, "sce_bfloat16_mean_log_prob", SCE, (2, 4, 8), dtype=BF16, log_prob=True, opset=13)
    loss_case(root, "sce_long_d_blocks_int32_mean_ii", SCE, (2, 7, 600), tdtype=np.int32, ii=0, ignore_frac=0.2,
              log_prob=True)
    loss_case(root, "sce_NC_wide_classes_none", SCE, (5, 1000), reduction="none")


# ---- GridSample ---------------------------------------------------------------------

def gs_reflect(x, lo, hi):
    rng = hi - lo
    if rng == 0:
        return lo
    if x < lo:
        dx = lo - x
        k = int(dx / rng)
        r = dx - k * rng
        return lo + r if k % 2 == 0 else hi - r
    if x > hi:
        dx = x - hi
        k = int(dx / rng)
        r = dx - k * rng
        return hi - r if k % 2 == 0 else lo + r
    return x


def cubic_coeffs(t):
    a = -0.75
    x = abs(t)
    return [((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a,
            ((a + 2) * x - (a + 3)) * x * x + 1,
            ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1,
            ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a]


def gs_ref(X, G, mode, pad, align):
    """GridSample after the ONNX reference (op_grid_sample.py), N-D, float64
    coordinates; nearest returns the element itself (any dtype)."""
    n_, c_ = X.shape[:2]
    dims = X.shape[2:]
    nd = len(dims)
    outs = G.shape[1:-1]
    Y = np.zeros((n_, c_) + outs, dtype=np.float64 if mode != "nearest" else X.dtype)
    lo = [0.0 if align else -0.5 for _ in dims]
    hi = [d - 1.0 if align else d - 0.5 for d in dims]

    def pix(n, c, idx):
        out = []
        for i, v in enumerate(idx):
            L = dims[i]
            if pad == "zeros":
                if v < 0 or v >= L:
                    return 0
            elif pad == "border":
                v = min(max(v, 0), L - 1)
            else:
                v = min(max(int(gs_reflect(float(v), lo[i], hi[i])), 0), L - 1)
            out.append(v)
        return X[(n, c) + tuple(out)]

    for n in range(n_):
        for o in np.ndindex(*outs):
            g = G[(n,) + o].astype(np.float64)[::-1]
            taps = []
            for i in range(nd):
                L = dims[i]
                x = (g[i] + 1) / 2 * (L - 1) if align else ((g[i] + 1) * L - 1) / 2
                if mode == "nearest":
                    x = float(np.rint(x))
                if x < lo[i] or x > hi[i]:
                    if pad == "border":
                        x = min(max(x, 0), L - 1)
                    elif pad == "reflection":
                        x = gs_reflect(x, lo[i], hi[i])
                if mode == "nearest":
                    taps.append([(int(x), 1.0)])
                else:
                    f = math.floor(x)
                    t = x - f
                    if mode == "linear":
                        taps.append([(f, 1 - t), (f + 1, t)])
                    else:
                        taps.append(list(zip(range(f - 1, f + 3), cubic_coeffs(t))))
            for c in range(c_):
                if mode == "nearest":
                    Y[(n, c) + o] = pix(n, c, [taps[i][0][0] for i in range(nd)])
                    continue
                s = 0.0
                for combo in itertools.product(*taps):
                    w = np.prod([t[1] for t in combo])
                    s += w * float(pix(n, c, [t[0] for t in combo]))
                Y[(n, c) + o] = s
    return Y


def gs_case(root, name, xs, outs, mode, pad="zeros", align=0, dtype=f32, gdtype=None, opset=20, spread=1.3):
    gdtype = gdtype or (dtype if dtype in (f16, f32, f64, BF16) else f32)
    nd = len(xs) - 2
    if np.issubdtype(np.dtype(dtype if dtype != BF16 else f32), np.integer):
        X = RNG.integers(0, 100, size=xs).astype(dtype)
    else:
        X = rand(xs, dtype, -2, 2)
    G = rand((xs[0],) + tuple(outs) + (nd,), gdtype, -spread, spread)
    ref_mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    Xv = X.astype(np.float64) if ref_mode != "nearest" else X
    Y = gs_ref(Xv if ref_mode != "nearest" else X, G.astype(np.float64), ref_mode, pad, align)
    node = helper.make_node("GridSample", ["X", "grid"], ["Y"], mode=mode, padding_mode=pad, align_corners=align)
    save_case(root, name, node, [("X", X, dtype), ("grid", G, gdtype)], [("Y", cast_out(Y, dtype), dtype)], opset)


def grid_sample_cases(root):
    for pad in ("zeros", "border", "reflection"):
        for align in (0, 1):
            gs_case(root, f"gridsample16_bicubic_{pad}_align{align}", (2, 3, 5, 6), (4, 7), "bicubic", pad, align,
                    opset=16, spread=1.6)
            gs_case(root, f"gridsample16_nearest_{pad}_align{align}", (1, 2, 4, 5), (3, 6), "nearest", pad, align,
                    opset=16, spread=2.5)
    gs_case(root, "gridsample16_bilinear_reflection_far", (1, 2, 4, 3), (5, 5), "bilinear", "reflection", 0,
            opset=16, spread=7.0)
    gs_case(root, "gridsample16_bilinear_border_float64", (2, 2, 5, 4), (3, 3), "bilinear", "border", 1,
            dtype=f64, opset=16)
    gs_case(root, "gridsample20_linear_1d", (2, 3, 7), (9,), "linear", "zeros", 0)
    gs_case(root, "gridsample20_cubic_1d_border", (1, 2, 6), (11,), "cubic", "border", 1, spread=1.5)
    gs_case(root, "gridsample20_linear_3d_reflection", (1, 2, 3, 4, 5), (2, 3, 4), "linear", "reflection", 0,
            spread=2.0)
    gs_case(root, "gridsample20_nearest_3d_zeros", (2, 2, 3, 4, 3), (2, 2, 3), "nearest", "zeros", 1)
    gs_case(root, "gridsample20_cubic_3d_zeros", (1, 1, 4, 4, 5), (2, 2, 2), "cubic", "zeros", 0)
    gs_case(root, "gridsample20_linear_float16", (1, 3, 6, 5), (4, 4), "linear", "border", 0, dtype=f16)
    gs_case(root, "gridsample20_linear_float64_grid_float32_x", (1, 2, 5, 5), (3, 4), "linear", "zeros", 1,
            dtype=f32, gdtype=f64)
    gs_case(root, "gridsample20_nearest_int32", (1, 2, 4, 4), (3, 5), "nearest", "reflection", 0, dtype=np.int32,
            spread=2.0)
    gs_case(root, "gridsample20_nearest_uint8_border", (2, 1, 3, 5), (4, 2), "nearest", "border", 1,
            dtype=np.uint8, spread=2.0)
    gs_case(root, "gridsample22_linear_bfloat16", (1, 2, 5, 6), (3, 4), "linear", "zeros", 0, dtype=BF16, opset=22)
    gs_case(root, "gridsample20_linear_many_locations", (1, 2, 9, 9), (40, 30), "linear", "zeros", 0)
    gs_case(root, "gridsample20_single_pixel_reflection_align", (1, 1, 1, 3), (2, 3), "linear", "reflection", 1,
            spread=3.0)


# ---- RoiAlign / MaxRoiPool ------------------------------------------------------------

def roialign_ref(X, rois, bi, oh, ow, sr, scale, mode, half):
    """Port of ONNX Runtime's RoiAlign (and the ONNX reference), float64."""
    X = X.astype(np.float64)
    rois = rois.astype(np.float64)
    _, C, H, W = X.shape
    Y = np.zeros((rois.shape[0], C, oh, ow))
    for r in range(rois.shape[0]):
        b = int(bi[r])
        off = 0.5 if half else 0.0
        x1, y1, x2, y2 = (rois[r] * scale - off)
        rw, rh = x2 - x1, y2 - y1
        if not half:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / oh, rw / ow
        gh = sr if sr > 0 else int(math.ceil(rh / oh))
        gw = sr if sr > 0 else int(math.ceil(rw / ow))
        count = max(gh * gw, 1)
        for ph, pw in itertools.product(range(oh), range(ow)):
            samples = []
            for iy in range(max(gh, 0)):
                yy = y1 + ph * bh + (iy + 0.5) * bh / gh
                for ix in range(max(gw, 0)):
                    xx = x1 + pw * bw + (ix + 0.5) * bw / gw
                    y, x = yy, xx
                    if y < -1.0 or y > H or x < -1.0 or x > W:
                        samples.append(None)
                        continue
                    y, x = max(y, 0.0), max(x, 0.0)
                    yl, xl = int(y), int(x)
                    if yl >= H - 1:
                        yh = yl = H - 1
                        y = float(yl)
                    else:
                        yh = yl + 1
                    if xl >= W - 1:
                        xh = xl = W - 1
                        x = float(xl)
                    else:
                        xh = xl + 1
                    ly, lx = y - yl, x - xl
                    hy, hx = 1 - ly, 1 - lx
                    samples.append(((hy * hx, yl, xl), (hy * lx, yl, xh), (ly * hx, yh, xl), (ly * lx, yh, xh)))
            for c in range(C):
                if mode == "avg":
                    s = 0.0
                    for smp in samples:
                        if smp:
                            s += sum(w * X[b, c, yy_, xx_] for w, yy_, xx_ in smp)
                    Y[r, c, ph, pw] = s / count
                else:
                    best = None
                    for smp in samples:
                        v = 0.0 if not smp else max(w * X[b, c, yy_, xx_] for w, yy_, xx_ in smp)
                        best = v if best is None else max(best, v)
                    Y[r, c, ph, pw] = 0.0 if best is None else best
    return Y


def roialign_case(root, name, xs, rois, bi, oh=3, ow=4, sr=0, scale=1.0, mode="avg", ctm=None, dtype=f32,
                  opset=16):
    X = rand(xs, dtype, 0, 1)
    rois = cast_out(np.array(rois, dtype=np.float64), dtype)
    bi = np.array(bi, dtype=np.int64)
    half = (ctm or ("half_pixel" if opset >= 16 else "output_half_pixel")) == "half_pixel"
    Y = roialign_ref(X, rois, bi, oh, ow, sr, scale, mode, half)
    attrs = dict(output_height=oh, output_width=ow, sampling_ratio=sr, spatial_scale=scale, mode=mode)
    if ctm:
        attrs["coordinate_transformation_mode"] = ctm
    node = helper.make_node("RoiAlign", ["X", "rois", "batch_indices"], ["Y"], **attrs)
    save_case(root, name, node, [("X", X, dtype), ("rois", rois, dtype), ("batch_indices", bi, np.int64)],
              [("Y", cast_out(Y, dtype), dtype)], opset)


def round_away(v):
    return math.copysign(math.floor(abs(v) + 0.5), v)


def maxroipool_ref(X, rois, ph_, pw_, scale):
    X = X.astype(np.float64)
    _, C, H, W = X.shape
    Y = np.zeros((rois.shape[0], C, ph_, pw_))
    for r in range(rois.shape[0]):
        roi = rois[r].astype(np.float64)
        b = int(roi[0])
        sw, sh, ew, eh = (int(round_away(v * scale)) for v in roi[1:])
        rw, rh = max(ew - sw + 1, 1), max(eh - sh + 1, 1)
        bh, bw = rh / ph_, rw / pw_
        for c, i, j in itertools.product(range(C), range(ph_), range(pw_)):
            hs = min(max(int(math.floor(i * bh)) + sh, 0), H)
            he = min(max(int(math.ceil((i + 1) * bh)) + sh, 0), H)
            ws = min(max(int(math.floor(j * bw)) + sw, 0), W)
            we = min(max(int(math.ceil((j + 1) * bw)) + sw, 0), W)
            if he <= hs or we <= ws or not 0 <= b < X.shape[0]:
                Y[r, c, i, j] = 0
            else:
                Y[r, c, i, j] = X[b, c, hs:he, ws:we].max()
    return Y


def maxroipool_case(root, name, xs, rois, pooled, scale=1.0, dtype=f32, opset=1):
    X = rand(xs, dtype, -1, 1)
    rois = cast_out(np.array(rois, dtype=np.float64), dtype)
    Y = maxroipool_ref(X, rois, pooled[0], pooled[1], scale)
    attrs = {"pooled_shape": list(pooled)}
    if scale != 1.0:
        attrs["spatial_scale"] = scale
    node = helper.make_node("MaxRoiPool", ["X", "rois"], ["Y"], **attrs)
    save_case(root, name, node, [("X", X, dtype), ("rois", rois, dtype)], [("Y", cast_out(Y, dtype), dtype)], opset)


def roi_cases(root):
    rois = [[0, 0, 9, 9], [1.5, 2.2, 6.7, 8.1], [5, 5, 9, 9], [-2, -3, 4, 3], [8, 7, 13, 12], [3, 3, 3.4, 3.2]]
    roialign_case(root, "roialign_opset10_default_output_half_pixel", (2, 3, 10, 10), rois, [0, 1, 1, 0, 1, 0],
                  sr=2, opset=10)
    roialign_case(root, "roialign_adaptive_half_pixel", (2, 3, 10, 10), rois, [1, 0, 1, 1, 0, 0], oh=2, ow=3)
    roialign_case(root, "roialign_max_output_half_pixel", (2, 2, 10, 10), rois, [0, 0, 1, 1, 0, 1], sr=2,
                  mode="max", ctm="output_half_pixel")
    roialign_case(root, "roialign_max_adaptive_half_pixel", (1, 2, 10, 10), rois, [0] * 6, mode="max")
    roialign_case(root, "roialign_scale_float64", (1, 2, 12, 9), [[0, 0, 30, 20], [4, 6, 18, 22]], [0, 0],
                  scale=0.5, sr=3, dtype=f64)
    roialign_case(root, "roialign_float16", (1, 3, 8, 8), [[1, 1, 6, 7], [0, 2, 7, 5]], [0, 0], sr=2, dtype=f16)
    roialign_case(root, "roialign_bfloat16", (1, 2, 8, 8), [[1, 1, 6, 7], [0, 2, 7, 5]], [0, 0], sr=1,
                  dtype=BF16, opset=22)
    roialign_case(root, "roialign_many_channels", (1, 70, 6, 7), [[0, 0, 5, 6], [2, 1, 4, 4]], [0, 0], oh=2, ow=2)
    # Documented behaviour: a batch index outside [0, N) gives zeros.
    X = rand((2, 2, 5, 5), f32, 0, 1)
    r = np.array([[0, 0, 4, 4], [1, 1, 3, 3], [0, 0, 2, 2]], dtype=f32)
    bi = np.array([0, 7, -1], dtype=np.int64)
    Y = roialign_ref(X, r, np.array([0, 0, 0]), 2, 2, 2, 1.0, "avg", True)
    Y[1:] = 0
    save_case(root, "invalid_roialign_batch_index", helper.make_node(
        "RoiAlign", ["X", "rois", "batch_indices"], ["Y"], output_height=2, output_width=2, sampling_ratio=2),
        [("X", X, f32), ("rois", r, f32), ("batch_indices", bi, np.int64)], [("Y", Y.astype(f32), f32)], 16)

    mrois = [[0, 0, 0, 7, 7], [1, 1.4, 2.6, 5.5, 6.5], [1, 6, 6, 12, 12], [0, -3, -2, 2, 3], [0, 4, 4, 3, 2]]
    maxroipool_case(root, "maxroipool_2x2", (2, 3, 8, 8), mrois, (2, 2))
    maxroipool_case(root, "maxroipool_3x4_scale", (2, 2, 8, 9), [[0, 0, 0, 15, 17], [1, 3, 3, 9, 11]], (3, 4),
                    scale=0.5)
    maxroipool_case(root, "maxroipool_float64", (1, 2, 6, 6), [[0, 1, 1, 4, 5]], (4, 3), dtype=f64)
    maxroipool_case(root, "maxroipool_float16", (1, 2, 6, 6), [[0, 0, 1, 5, 4]], (2, 3), dtype=f16)
    maxroipool_case(root, "maxroipool_bfloat16", (1, 1, 6, 6), [[0, 0, 1, 5, 4]], (2, 2), dtype=BF16, opset=22)
    maxroipool_case(root, "invalid_maxroipool_batch_index", (2, 1, 5, 5), [[3, 0, 0, 4, 4], [0, 0, 0, 4, 4]], (2, 2))


# ---- TfIdfVectorizer ----------------------------------------------------------------------

def tfidf_ref(X, mode, mn, mx, skip, counts, indexes, pool, weights):
    grams = []
    for j, b in enumerate(counts):
        e = counts[j + 1] if j + 1 < len(counts) else len(pool)
        for s in range(b, e, j + 1):
            grams.append(tuple(pool[s:s + j + 1]))
    first = {}
    for i, g in enumerate(grams):
        first.setdefault(g, i)
    rows = X if X.ndim == 2 else X[None]
    O = max(indexes) + 1
    Y = np.zeros((rows.shape[0], O))
    for r, row in enumerate(rows):
        for i, g in enumerate(grams):
            k = len(g)
            if first[g] != i or k < mn or k > mx:
                continue
            cnt = 0
            for d in (range(1, skip + 2) if k > 1 else [1]):
                for s in range(len(row)):
                    if s + (k - 1) * d < len(row) and all(row[s + q * d] == g[q] for q in range(k)):
                        cnt += 1
            w = 1.0 if weights is None else weights[i]
            Y[r, indexes[i]] = cnt if mode == "TF" else (w * (cnt > 0) if mode == "IDF" else w * cnt)
    return Y if X.ndim == 2 else Y[0]


def tfidf_case(root, name, X, mode, mn, mx, skip, counts, indexes, pool, weights=None, xdtype=np.int64):
    X = np.array(X, dtype=xdtype)
    Y = tfidf_ref(X, mode, mn, mx, skip, counts, indexes, pool, weights)
    attrs = dict(mode=mode, min_gram_length=mn, max_gram_length=mx, max_skip_count=skip, ngram_counts=counts,
                 ngram_indexes=indexes, pool_int64s=pool)
    if weights is not None:
        attrs["weights"] = [float(w) for w in weights]
    node = helper.make_node("TfIdfVectorizer", ["X"], ["Y"], **attrs)
    save_case(root, name, node, [("X", X, xdtype)], [("Y", Y.astype(f32), f32)], 9)


def tfidf_cases(root):
    # unigrams 2 3 5 4 7; bigrams (5 6) (7 8) (6 7) (3 3) (5 4); trigrams (1 3 3) (7 8 6) (3 3 7)
    pool = [2, 3, 5, 4, 7, 5, 6, 7, 8, 6, 7, 3, 3, 5, 4, 1, 3, 3, 7, 8, 6, 3, 3, 7]
    counts = [0, 5, 15]
    idx = [12, 0, 3, 7, 1, 9, 2, 4, 10, 5, 6, 13, 8]  # permuted, with gaps (11)
    w = [0.5, 1.5, 2.0, 0.25, 3.0, 1.25, 0.75, 2.5, 1.0, 0.1, 4.0, 0.6, 1.7]
    row = [1, 3, 3, 7, 8, 6, 7, 5, 4, 6, 8, 5, 6, 3, 3, 7, 2, 5, 4, 7]
    rows = [row[:10], row[10:]]
    tfidf_case(root, "tfidf_tf_uni_bi_tri_skip2_int64", row, "TF", 1, 3, 2, counts, idx, pool)
    tfidf_case(root, "tfidf_idf_weights_batch", rows, "IDF", 1, 2, 1, counts, idx, pool, w)
    tfidf_case(root, "tfidf_tfidf_weights_tri_only", row, "TFIDF", 3, 3, 3, counts, idx, pool, w)
    tfidf_case(root, "tfidf_tfidf_bi_tri_skip0_int32", rows, "TFIDF", 2, 3, 0, counts, idx, pool, w, xdtype=np.int32)
    tfidf_case(root, "tfidf_idf_no_weights", row, "IDF", 1, 3, 4, counts, idx, pool)
    tfidf_case(root, "tfidf_unigrams_only_skip_ignored", rows, "TF", 1, 1, 3, counts, idx, pool)
    # A large pool: every pair of 0..29 as bigrams, every token as unigram.
    big_pool = list(range(30)) + [v for a in range(30) for b in range(30) if (a + b) % 3 == 0 for v in (a, b)]
    nb = (len(big_pool) - 30) // 2
    big_idx = [int(v) for v in RNG.permutation(30 + nb)]
    X = RNG.integers(0, 32, size=(3, 40))
    tfidf_case(root, "tfidf_large_pool", X, "TF", 1, 2, 2, [0, 30], big_idx, big_pool)


# ---- Det ----------------------------------------------------------------------------------

def det_case(root, name, shape, dtype=f32, opset=11, singular=False):
    X = rand(shape, dtype, -1, 1)
    if singular:
        X = X.copy()
        X[..., 1, :] = X[..., 0, :] * 2 if dtype != BF16 else bf16_round(X[..., 0, :] * 2)
    Y = np.linalg.det(X.astype(np.float64))
    if singular:
        Y = np.zeros_like(Y)
    node = helper.make_node("Det", ["X"], ["Y"])
    save_case(root, name, node, [("X", X, dtype)], [("Y", cast_out(Y, dtype), dtype)], opset)


def det_cases(root):
    det_case(root, "det_float64_batch", (2, 3, 4, 4), dtype=f64)
    det_case(root, "det_float16", (5, 3, 3), dtype=f16)
    det_case(root, "det_bfloat16", (3, 2, 2), dtype=BF16, opset=22)
    det_case(root, "det_1x1", (4, 1, 1))
    det_case(root, "det_singular", (3, 5, 5), dtype=f64, singular=True)
    det_case(root, "det_large_workspace", (2, 70, 70), dtype=f64)
    det_case(root, "det_8x8_float32", (6, 8, 8))


# ---- global pools, LpPool, MaxUnpool -------------------------------------------------------

def global_case(root, name, op, xs, dtype=f32, p=None, opset=1):
    X = rand(xs, dtype, -2, 2)
    axes = tuple(range(2, len(xs)))
    x64 = X.astype(np.float64)
    if op == "GlobalMaxPool":
        Y = x64.max(axis=axes, keepdims=True)
        node = helper.make_node(op, ["X"], ["Y"])
    else:
        pp = 2.0 if p is None else p
        Y = np.power(np.sum(np.power(np.abs(x64), pp), axis=axes, keepdims=True), 1.0 / pp)
        node = helper.make_node(op, ["X"], ["Y"]) if p is None else helper.make_node(op, ["X"], ["Y"], p=p)
    save_case(root, name, node, [("X", X, dtype)], [("Y", cast_out(Y, dtype), dtype)], opset)


def lppool_ref(X, p, ks, strides, dil, pb, pe, ceil_mode):
    x = np.abs(X.astype(np.float64)) ** p
    nd = len(ks)
    outs = [window_out(X.shape[2 + i], ks[i], strides[i], dil[i], pb[i], pe[i], ceil_mode) for i in range(nd)]
    big = [max(0, (outs[i] - 1) * strides[i] + (ks[i] - 1) * dil[i] + 1 - X.shape[2 + i] - pb[i]) for i in range(nd)]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pb[i], big[i]) for i in range(nd)])
    Y = np.zeros(X.shape[:2] + tuple(outs))
    for o in np.ndindex(*outs):
        s = 0.0
        for kk in np.ndindex(*ks):
            idx = tuple(o[i] * strides[i] + kk[i] * dil[i] for i in range(nd))
            s = s + xp[(slice(None), slice(None)) + idx]
        Y[(slice(None), slice(None)) + o] = s
    return Y ** (1.0 / p)


def lppool_case(root, name, xs, ks, p=None, strides=None, dil=None, pads=None, auto_pad=None, ceil_mode=0,
                dtype=f32, opset=18):
    nd = len(ks)
    X = rand(xs, dtype, -2, 2)
    s = strides or [1] * nd
    d = dil or [1] * nd
    attrs = {"kernel_shape": ks}
    if p is not None:
        attrs["p"] = p
    if strides:
        attrs["strides"] = strides
    if dil:
        attrs["dilations"] = dil
    if ceil_mode:
        attrs["ceil_mode"] = ceil_mode
    if auto_pad:
        attrs["auto_pad"] = auto_pad
        if auto_pad == "VALID":
            pb = pe = [0] * nd
        else:
            pr = [same_pads(xs[2 + i], ks[i], s[i], d[i], auto_pad == "SAME_UPPER") for i in range(nd)]
            pb, pe = [q[0] for q in pr], [q[1] for q in pr]
    else:
        pads = pads or [0] * (2 * nd)
        if any(pads):
            attrs["pads"] = pads
        pb, pe = pads[:nd], pads[nd:]
    Y = lppool_ref(X, 2.0 if p is None else p, ks, s, d, pb, pe, bool(ceil_mode))
    node = helper.make_node("LpPool", ["X"], ["Y"], **attrs)
    save_case(root, name, node, [("X", X, dtype)], [("Y", cast_out(Y, dtype), dtype)], opset)


def maxunpool_ref(X, I, ks, strides, pads, out_shape):
    nd = len(ks)
    inferred = list(X.shape[:2]) + [(X.shape[2 + i] - 1) * strides[i] - pads[i] - pads[nd + i] + ks[i]
                                    for i in range(nd)]
    Y = np.zeros(int(np.prod(inferred)), dtype=X.dtype)
    for i, v in zip(I.flatten(), X.flatten()):
        Y[i] = v
    Y = Y.reshape(inferred)
    if out_shape is None:
        return Y
    res = np.zeros(out_shape, dtype=X.dtype)
    res[tuple(slice(0, q) for q in inferred)] = Y
    return res


def maxpool_with_indices(x, ks, strides, pads):
    """MaxPool's Y and flat Indices (explicit pads, no dilation)."""
    nd = len(ks)
    outs = [window_out(x.shape[2 + i], ks[i], strides[i], 1, pads[i], pads[nd + i]) for i in range(nd)]
    y = np.zeros(x.shape[:2] + tuple(outs), dtype=x.dtype)
    ind = np.zeros(y.shape, dtype=np.int64)
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in np.ndindex(*outs):
            best, bi = None, -1
            for kk in np.ndindex(*ks):
                pos = tuple(o[i] * strides[i] - pads[i] + kk[i] for i in range(nd))
                if all(0 <= pos[i] < x.shape[2 + i] for i in range(nd)):
                    v = x[(n, c) + pos]
                    if best is None or v > best:
                        best, bi = v, np.ravel_multi_index((n, c) + pos, x.shape)
            y[(n, c) + o] = best
            ind[(n, c) + o] = bi
    return y, ind


def maxunpool_case(root, name, xs, ks, strides=None, pads=None, out_shape=None, dtype=f32, opset=11,
                   const_shape=True):
    nd = len(ks)
    s = strides or [1] * nd
    pd = pads or [0] * (2 * nd)
    src = rand(xs, dtype, -2, 2)
    X, I = maxpool_with_indices(src, ks, s, pd)
    Y = maxunpool_ref(X, I, ks, s, pd, out_shape)
    attrs = {"kernel_shape": ks}
    if strides:
        attrs["strides"] = strides
    if pads:
        attrs["pads"] = pads
    ins = ["X", "I"] + (["output_shape"] if out_shape is not None else [])
    node = helper.make_node("MaxUnpool", ins, ["Y"], **attrs)
    inputs = [("X", X, dtype), ("I", I, np.int64)]
    inits = []
    if out_shape is not None:
        shp = np.array(out_shape, dtype=np.int64)
        (inits if const_shape else inputs).append(("output_shape", shp, np.int64))
    save_case(root, name, node, inputs, [("Y", cast_out(Y, dtype), dtype)], opset, inits)


def pool_cases(root):
    global_case(root, "globalmaxpool_float16_3d", "GlobalMaxPool", (2, 3, 4, 5, 6), dtype=f16)
    global_case(root, "globalmaxpool_float64_1d", "GlobalMaxPool", (2, 4, 33), dtype=f64)
    global_case(root, "globalmaxpool_large_plane", "GlobalMaxPool", (1, 3, 130, 131))
    global_case(root, "globalmaxpool_bfloat16", "GlobalMaxPool", (1, 3, 5, 5), dtype=BF16, opset=22)
    global_case(root, "globallppool_default_p2", "GlobalLpPool", (2, 3, 6, 7), opset=2)
    global_case(root, "globallppool_p1_float64", "GlobalLpPool", (2, 5, 9), dtype=f64, p=1, opset=2)
    global_case(root, "globallppool_p3_3d", "GlobalLpPool", (1, 4, 3, 4, 5), p=3, opset=2)
    global_case(root, "globallppool_opset1_float_p", "GlobalLpPool", (1, 3, 5, 5), p=2.5, opset=1)
    global_case(root, "globallppool_float16", "GlobalLpPool", (2, 2, 8, 8), dtype=f16, opset=2)

    lppool_case(root, "lppool_2d_default", (1, 3, 6, 7), [2, 3], opset=11)
    lppool_case(root, "lppool_2d_p1_pads_strides", (2, 2, 7, 8), [3, 3], p=1, strides=[2, 2], pads=[1, 1, 1, 0],
                opset=11)
    lppool_case(root, "lppool_1d_p3", (2, 3, 15), [4], p=3, strides=[3], opset=2)
    lppool_case(root, "lppool_3d_float64", (1, 2, 5, 6, 7), [2, 3, 2], strides=[1, 2, 2], pads=[1, 0, 1, 0, 1, 1],
                dtype=f64, opset=11)
    lppool_case(root, "lppool_same_upper", (1, 2, 9, 10), [3, 2], strides=[2, 2], auto_pad="SAME_UPPER", opset=11)
    lppool_case(root, "lppool_same_lower_float16", (1, 2, 9, 10), [3, 2], strides=[2, 3], auto_pad="SAME_LOWER",
                dtype=f16, opset=11)
    lppool_case(root, "lppool_valid", (1, 1, 8, 8), [3, 3], strides=[2, 2], auto_pad="VALID", opset=11)
    lppool_case(root, "lppool18_dilations", (1, 2, 10, 11), [3, 2], strides=[2, 1], dil=[2, 3], pads=[1, 1, 2, 0])
    lppool_case(root, "lppool18_ceil_mode", (1, 2, 7, 8), [3, 3], strides=[2, 2], pads=[1, 1, 1, 0], ceil_mode=1)
    lppool_case(root, "lppool_opset1_float_p", (1, 2, 6, 6), [2, 2], p=1.5, strides=[2, 2], opset=1)
    lppool_case(root, "lppool_bfloat16", (1, 2, 6, 6), [2, 2], strides=[2, 2], dtype=BF16, opset=22)

    maxunpool_case(root, "maxunpool_2d_pads", (1, 2, 5, 7), [3, 3], strides=[2, 2], pads=[1, 1, 1, 1], opset=9)
    maxunpool_case(root, "maxunpool_1d", (2, 3, 12), [2], strides=[2])
    maxunpool_case(root, "maxunpool_3d_float64", (1, 2, 4, 4, 6), [2, 2, 3], strides=[2, 2, 3], dtype=f64)
    maxunpool_case(root, "maxunpool_output_shape_3d", (1, 1, 4, 4, 4), [2, 2, 2], strides=[2, 2, 2],
                   out_shape=[1, 1, 5, 6, 4])
    maxunpool_case(root, "maxunpool_output_shape_input", (2, 2, 4, 4), [2, 2], strides=[2, 2],
                   out_shape=[2, 2, 6, 7], const_shape=False)
    maxunpool_case(root, "maxunpool_overlapping_float16", (1, 2, 5, 5), [3, 3], strides=[1, 1], dtype=f16)
    maxunpool_case(root, "maxunpool_bfloat16", (1, 2, 4, 4), [2, 2], strides=[2, 2], dtype=BF16, opset=22)
    # Documented behaviour: indices outside the unpooled tensor are dropped.
    X = np.array([[[[1, 2], [3, 4]]]], dtype=f32)
    I = np.array([[[[5, 99], [-1, 15]]]], dtype=np.int64)
    Y = np.zeros((1, 1, 4, 4), dtype=f32)
    Y.flat[5], Y.flat[15] = 1, 4
    save_case(root, "invalid_maxunpool_indices", helper.make_node("MaxUnpool", ["X", "I"], ["Y"], kernel_shape=[2, 2],
                                                                  strides=[2, 2]),
              [("X", X, f32), ("I", I, np.int64)], [("Y", Y, f32)], 11)


def main():
    root = casekit.out_dir(__doc__)
    loss_cases(root)
    grid_sample_cases(root)
    roi_cases(root)
    tfidf_cases(root)
    det_cases(root)
    pool_cases(root)


if __name__ == "__main__":
    main()
