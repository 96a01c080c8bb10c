#!/usr/bin/python3
"""Generates ONNX backend-style test folders for shapes that depend on values
(issue 3): the value-dependent outputs of NonZero, Unique, Compress,
NonMaxSuppression and TopK with a run-time k (several data sets per model, so
one artifact reports different shapes run after run; element-wise consumers
of such outputs), and the ops whose float shape inputs are fed at run time
while the model declares the output shape: Resize (scales, roi) in every
mode and coordinate transformation, Upsample, OneHot (depth) and Range.
Expected outputs are computed with numpy (Resize with the ONNX reference
functions of python3-onnx).

usage: make_dynamic_cases.py OUTPUT_DIR [ERROR_DIR]
then:  harness-test OUTPUT_DIR/*
ERROR_DIR receives models Harness must refuse with a clear message (a
value-dependent shape feeding an op that cannot take it, run-time scales
without a declared output shape), as ERROR_DIR/<name>.onnx.
"""
import os

import numpy as np
from onnx import TensorProto, helper
from onnx.backend.test.case.node import resize as rref

import casekit

RNG = np.random.default_rng(2024)


def write_case(root, name, nodes, in_names, out_names, sets, opset, initializers=None, out_shapes=None):
    """sets: list of (input values, output values), one per data set. Graph
    inputs and outputs are declared with the first set's shapes, or with
    out_shapes (a list; None entries keep the first set's shape) for outputs."""
    ins0, outs0 = sets[0]
    decl = []
    for i, (n, v) in enumerate(zip(out_names, outs0)):
        shape = casekit.shape_of(v)
        if out_shapes and out_shapes[i] is not None:
            shape = out_shapes[i]
        decl.append(casekit.vi(n, casekit.elem_type(v), shape))
    graph = helper.make_graph(nodes, name, [casekit.value_info(n, v) for n, v in zip(in_names, ins0)], decl,
                              initializer=[casekit.to_tensor(n, v) for n, v in (initializers or [])])
    data = [([casekit.to_tensor(n, v) for n, v in zip(in_names, ins)],
             [casekit.to_tensor(n, v) for n, v in zip(out_names, outs)]) for ins, outs in sets]
    casekit.write_folder(root, name, casekit.make_model(graph, opset, producer="make_dynamic_cases"), data)


def sparse(shape, dtype, p_zero=0.5):
    """Random values of dtype with about p_zero of them zero."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return RNG.random(shape) >= p_zero
    if np.issubdtype(dt, np.integer):
        v = RNG.integers(1, 20, size=shape).astype(dt)
    else:
        v = (RNG.standard_normal(shape) + 3).astype(dt)
    v[RNG.random(shape) < p_zero] = 0
    return v


# ---- NonZero ---------------------------------------------------------------------------


def nonzero_ref(x):
    return np.array(np.nonzero(np.atleast_1d(x)), dtype=np.int64).reshape(max(x.ndim, 1), -1)


def nonzero_cases(root):
    node = helper.make_node("NonZero", ["x"], ["y"])
    for dtype, shape in (("float32", [2, 3, 4]), ("bool", [7]), ("int8", [3, 5]), ("uint16", [4, 4]),
                         ("float16", [2, 2, 3]), ("float64", [5, 2]), ("int64", [1, 3, 1, 2])):
        sets = []
        for p in (0.5, 1.0, 0.0):
            x = sparse(shape, dtype, p)
            sets.append(([x], [nonzero_ref(x)]))
        write_case(root, "dyn_nonzero_%s" % dtype, [node], ["x"], ["y"], sets, 13, out_shapes=[[len(shape), "N"]])
    x = np.array([1.0, np.nan, 0.0, -0.0, 2.0], dtype=np.float32)
    write_case(root, "dyn_nonzero_nan", [node], ["x"], ["y"], [([x], [nonzero_ref(x)])], 9)
    sets = [([np.array(v, dtype=np.float32)], [nonzero_ref(np.array(v, dtype=np.float32))]) for v in (3.0, 0.0)]
    write_case(root, "dyn_nonzero_scalar", [node], ["x"], ["y"], sets, 13)
    x = np.zeros([0, 3], dtype=np.float32)
    write_case(root, "dyn_nonzero_empty", [node], ["x"], ["y"], [([x], [nonzero_ref(x)])], 13)
    x = sparse([200, 300], "float32", 0.7)  # several blocks, several tasks
    x2 = sparse([200, 300], "float32", 0.1)
    write_case(root, "dyn_nonzero_large", [node], ["x"], ["y"], [([x], [nonzero_ref(x)]), ([x2], [nonzero_ref(x2)])], 13)
    # A constant input folds to a static shape; the result feeds an Add with a run-time tensor.
    c = np.array([[0, 1, 0], [2, 0, 3]], dtype=np.int64)
    a = RNG.integers(0, 9, size=[2, 3]).astype(np.int64)
    nodes = [helper.make_node("NonZero", ["c"], ["nz"]), helper.make_node("Add", ["nz", "a"], ["y"])]
    write_case(root, "dyn_nonzero_const", nodes, ["a"], ["y"], [([a], [nonzero_ref(c) + a])], 13, [("c", c)])
    # Element-wise consumers share the dims slot: Cast, Mul by a scalar, Relu,
    # Identity; the dynamic value is also an output itself.
    one = np.array([0.5], dtype=np.float32)
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]), helper.make_node("Cast", ["nz"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["f", "half"], ["m"]), helper.make_node("Relu", ["m"], ["r"]),
             helper.make_node("Identity", ["r"], ["y"])]
    sets = []
    for p in (0.3, 0.8):
        x = sparse([3, 4], "float32", p)
        nz = nonzero_ref(x)
        sets.append(([x], [np.maximum(nz.astype(np.float32) * 0.5, 0), nz]))
    write_case(root, "dyn_nonzero_elementwise", nodes, ["x"], ["y", "nz"], sets, 13, [("half", one)])


# ---- Compress --------------------------------------------------------------------------


def compress_cases(root):
    for name, shape, axis, clen, dtype, opset in (
        ("axis0", [5, 3], 0, 5, "float32", 11), ("axis1", [2, 6, 3], 1, 6, "int64", 11),
        ("axis_neg", [3, 4], -1, 4, "float16", 11), ("flat", [3, 4], None, 12, "uint8", 11),
        ("short", [6, 2], 0, 4, "bool", 9), ("flat_short", [2, 5], None, 7, "int32", 9),
        ("large", [300, 8, 64], 1, 8, "float32", 11),
    ):
        kw = {} if axis is None else {"axis": axis}
        node = helper.make_node("Compress", ["x", "c"], ["y"], **kw)
        sets = []
        for p in (0.5, 0.0, 1.0):
            x = sparse(shape, dtype, 0.2)
            c = RNG.random(clen) >= p
            ax = None if axis is None else axis
            n_ax = x.size if axis is None else x.shape[axis]
            y = np.compress(np.concatenate([c, np.zeros(max(0, n_ax - clen), bool)])[:n_ax], x, axis=ax)
            sets.append(([x, c], [y]))
        write_case(root, "dyn_compress_" + name, [node], ["x", "c"], ["y"], sets, opset)
    # A constant condition gives a static shape.
    c = np.array([True, False, True, True])
    node = helper.make_node("Compress", ["x", "c"], ["y"], axis=1)
    x = sparse([2, 4, 3], "float64", 0.1)
    write_case(root, "dyn_compress_const_cond", [node], ["x"], ["y"], [([x], [np.compress(c, x, axis=1)])], 11,
               [("c", c)])


# ---- Unique ----------------------------------------------------------------------------


def unique_ref(x, axis, sorted_):
    y, idx, inv, cnt = np.unique(x, True, True, True, axis=axis)
    inv = inv.reshape(-1)
    if not sorted_:
        order = np.argsort(idx, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        idx, cnt, inv = idx[order], cnt[order], rank[inv]
        y = np.take(x.reshape(-1) if axis is None else x, idx, axis=0 if axis is None else axis)
    return [y, idx.astype(np.int64), inv.astype(np.int64), cnt.astype(np.int64)]


def unique_cases(root):
    outs = ["Y", "indices", "inverse_indices", "counts"]
    for name, shape, axis, dtype, lo, hi in (
        ("f32_flat", [4, 5], None, "float32", 0, 6), ("i64_axis0", [6, 3], 0, "int64", 0, 2),
        ("i32_axis1", [3, 7], 1, "int32", -1, 1), ("u8_axis_neg", [2, 5, 2], -1, "uint8", 0, 1),
        ("f64_3d_axis1", [2, 6, 2], 1, "float64", 0, 2), ("i8_flat", [50], None, "int8", -5, 5),
        ("f16_flat", [3, 3], None, "float16", 0, 3), ("large", [4000], None, "int64", 0, 500),
    ):
        for sorted_ in (1, 0):
            kw = {"sorted": sorted_}
            if axis is not None:
                kw["axis"] = axis
            node = helper.make_node("Unique", ["X"], outs, **kw)
            sets = []
            for _ in range(2):
                x = RNG.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
                sets.append(([x], unique_ref(x, axis, sorted_)))
            write_case(root, "dyn_unique_%s_%s" % (name, "sorted" if sorted_ else "unsorted"), [node], ["X"], outs,
                       sets, 11)
    x = np.array([2.0, np.nan, 1.0, np.nan, 2.0, -0.0, 0.0], dtype=np.float32)
    node = helper.make_node("Unique", ["X"], outs)
    write_case(root, "dyn_unique_nan", [node], ["X"], outs, [([x], unique_ref(x, None, 1))], 11)
    x = np.array([True, False, True])
    node = helper.make_node("Unique", ["X"], outs, sorted=0)
    write_case(root, "dyn_unique_bool", [node], ["X"], outs, [([x], unique_ref(x, None, 0))], 11)
    # Only some outputs (the others omitted).
    x = RNG.integers(0, 4, size=[10]).astype(np.float32)
    r = unique_ref(x, None, 1)
    node = helper.make_node("Unique", ["X"], ["Y", "", "", "counts"])
    write_case(root, "dyn_unique_some_outputs", [node], ["X"], ["Y", "counts"], [([x], [r[0], r[3]])], 11)
    x = np.zeros([0], dtype=np.float32)
    node = helper.make_node("Unique", ["X"], outs)
    write_case(root, "dyn_unique_empty", [node], ["X"], outs, [([x], unique_ref(x, None, 1))], 11)


# ---- NonMaxSuppression -----------------------------------------------------------------


def nms_ref(boxes, scores, max_out, iou_thr, score_thr, center):
    """ONNX Runtime's algorithm (float32 IoU)."""
    def corners(b):
        if center:
            x0, x1 = b[0] - b[2] / np.float32(2), b[0] + b[2] / np.float32(2)
            y0, y1 = b[1] - b[3] / np.float32(2), b[1] + b[3] / np.float32(2)
            return x0, x1, y0, y1
        return min(b[1], b[3]), max(b[1], b[3]), min(b[0], b[2]), max(b[0], b[2])

    def suppress(a, b):
        ax0, ax1, ay0, ay1 = corners(a)
        bx0, bx1, by0, by1 = corners(b)
        ix0, ix1, iy0, iy1 = max(ax0, bx0), min(ax1, bx1), max(ay0, by0), min(ay1, by1)
        if ix1 <= ix0 or iy1 <= iy0:
            return False
        inter = np.float32(ix1 - ix0) * np.float32(iy1 - iy0)
        a1 = np.float32(ax1 - ax0) * np.float32(ay1 - ay0)
        a2 = np.float32(bx1 - bx0) * np.float32(by1 - by0)
        uni = np.float32(a1 + a2 - inter)
        if inter <= 0 or a1 <= 0 or a2 <= 0 or uni <= 0:
            return False
        return np.float32(inter / uni) > iou_thr

    out = []
    B, C, N = scores.shape
    for b in range(B):
        for c in range(C):
            cand = [i for i in range(N) if score_thr is None or scores[b, c, i] > score_thr]
            cand.sort(key=lambda i: (-scores[b, c, i], i))
            sel = []
            for i in cand:
                if len(sel) >= max_out:
                    break
                if not any(suppress(boxes[b, i], boxes[b, j]) for j in sel):
                    sel.append(i)
            out += [[b, c, i] for i in sel]
    return np.array(out, dtype=np.int64).reshape(-1, 3)


def random_boxes(B, N, center):
    if center:
        xy = RNG.random([B, N, 2]) * 10
        wh = RNG.random([B, N, 2]) * 4 + 0.5
        return np.concatenate([xy, wh], axis=2).astype(np.float32)
    a = RNG.random([B, N, 2]) * 10
    b = a + (RNG.random([B, N, 2]) * 6 - 1)  # some flipped corners
    return np.stack([a[..., 0], a[..., 1], b[..., 0], b[..., 1]], axis=2).astype(np.float32)


def nms_cases(root):
    for name, B, C, N, center in (("corners", 2, 3, 20, 0), ("center", 1, 2, 30, 1), ("many", 3, 4, 64, 0)):
        node = helper.make_node("NonMaxSuppression", ["boxes", "scores", "max", "iou", "score"], ["sel"],
                                center_point_box=center)
        sets = []
        for max_out, iou, sthr in ((4, 0.5, 0.3), (100, 0.2, 0.0), (1, 0.9, 0.95)):
            boxes = random_boxes(B, N, center)
            scores = RNG.random([B, C, N]).astype(np.float32)
            scores[..., ::5] = scores[..., :1]  # ties
            ins = [boxes, scores, np.array([max_out], np.int64), np.array([iou], np.float32),
                   np.array([sthr], np.float32)]
            sets.append((ins, [nms_ref(boxes, scores, max_out, np.float32(iou), np.float32(sthr), center)]))
        write_case(root, "dyn_nms_" + name, [node], ["boxes", "scores", "max", "iou", "score"], ["sel"], sets, 11,
                   out_shapes=[["N", 3]])
    # Constant max_output_boxes_per_class, no score threshold, scalar inputs.
    node = helper.make_node("NonMaxSuppression", ["boxes", "scores", "max", "iou"], ["sel"])
    boxes, scores = random_boxes(2, 12, 0), RNG.random([2, 2, 12]).astype(np.float32)
    write_case(root, "dyn_nms_const_max", [node], ["boxes", "scores", "iou"], ["sel"],
               [([boxes, scores, np.array(0.3, np.float32)], [nms_ref(boxes, scores, 3, np.float32(0.3), None, 0)])],
               10, [("max", np.array(3, np.int64))])
    # No max_output_boxes_per_class: nothing is selected.
    node = helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["sel"])
    write_case(root, "dyn_nms_no_max", [node], ["boxes", "scores"], ["sel"],
               [([boxes, scores], [np.zeros([0, 3], np.int64)])], 11)


# ---- TopK with a run-time k ------------------------------------------------------------------


def topk_ref(x, k, axis, largest):
    xm = np.moveaxis(x, axis, -1)
    flat = xm.reshape(-1, xm.shape[-1])
    vals, idxs = [], []
    for row in flat:
        order = sorted(range(len(row)), key=lambda i: ((-row[i].item() if largest else row[i].item()), i))[:k]
        idxs.append(order)
        vals.append(row[order])
    shp = list(xm.shape[:-1]) + [k]
    v = np.moveaxis(np.array(vals, dtype=x.dtype).reshape(shp), -1, axis)
    i = np.moveaxis(np.array(idxs, dtype=np.int64).reshape(shp), -1, axis)
    return [v, i]


def topk_cases(root):
    for name, shape, axis, largest, dtype in (
        ("f32", [3, 10], 1, 1, "float32"), ("axis0_smallest", [7, 4], 0, 0, "float32"),
        ("i32_3d", [2, 9, 3], 1, 1, "int32"), ("f16", [4, 6], -1, 0, "float16"),
        ("f64_ties", [5, 8], 1, 1, "float64"), ("u8", [3, 12], 1, 1, "uint8"),
    ):
        node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=axis, largest=largest)
        sets = []
        for k in (3, shape[axis], 0, 1):
            x = RNG.integers(0, 6, size=shape).astype(dtype) if "ties" in name or dtype in ("int32", "uint8") \
                else RNG.standard_normal(shape).astype(dtype)
            sets.append(([x, np.array([k], np.int64)], topk_ref(x, k, axis % len(shape), largest)))
        write_case(root, "dyn_topk_" + name, [node], ["x", "k"], ["values", "indices"], sets, 11)
    node = helper.make_node("TopK", ["x", "k"], ["values", "indices"])
    x = RNG.standard_normal([2, 5]).astype(np.float32)
    write_case(root, "dyn_topk_opset10", [node], ["x", "k"], ["values", "indices"],
               [([x, np.array([2], np.int64)], topk_ref(x, 2, 1, 1))], 10)


# ---- Resize / Upsample with run-time scales and roi -----------------------------------------


def resize_ref(x, scales, mode, ct, nearest_mode, cubic_a, exclude, roi=None, extrapolation=0.0):
    if mode == "nearest":
        coeffs = lambda r: rref.nearest_coeffs(r, mode=nearest_mode)  # noqa: E731
    elif mode == "linear":
        coeffs = rref.linear_coeffs
    else:
        coeffs = lambda r: rref.cubic_coeffs(r, A=cubic_a)  # noqa: E731
    out = rref.interpolate_nd(x.astype(np.float64), coeffs, scale_factors=scales, roi=roi,
                              coordinate_transformation_mode=ct, exclude_outside=exclude,
                              extrapolation_value=extrapolation)
    return out.astype(x.dtype)


def resize_cases(root):
    n = 0
    for mode in ("nearest", "linear", "cubic"):
        for ct in ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"):
            for nm in (("round_prefer_floor", "round_prefer_ceil", "floor", "ceil") if mode == "nearest" else ("-",)):
                for up in (True, False):
                    opset = 11 if mode == "linear" else 13
                    kw = {"mode": mode, "coordinate_transformation_mode": ct}
                    if mode == "nearest":
                        kw["nearest_mode"] = nm
                    exclude = int(mode == "cubic" and up)
                    a = -0.5 if exclude else -0.75
                    if mode == "cubic":
                        kw.update(exclude_outside=exclude, cubic_coeff_a=a)
                    x = RNG.standard_normal([1, 2, 5, 7]).astype(np.float32)
                    # Two scale sets with the same output size: the kernel must use the run-time values.
                    sc = [[1, 1, 2.0, 1.5], [1, 1, 2.1, 1.55]] if up else [[1, 1, 0.65, 0.5], [1, 1, 0.7, 0.55]]
                    sets = []
                    for s in sc:
                        s = np.array(s, np.float32)
                        sets.append(([x, s], [resize_ref(x, s, mode, ct, nm, a, exclude)]))
                    shapes = {tuple(o[0].shape) for _, o in sets}
                    assert len(shapes) == 1, shapes
                    node = helper.make_node("Resize", ["X", "", "scales"] if opset >= 13 else ["X", "roi", "scales"],
                                            ["Y"], **kw)
                    inits = [] if opset >= 13 else [("roi", np.zeros([0], np.float32))]
                    write_case(root, "dyn_resize_%s_%s_%s_%s" % (mode, ct, nm.replace("round_prefer_", "r"),
                                                                 "up" if up else "down"),
                               [node], ["X", "scales"], ["Y"], sets, opset, inits)
                    n += 1
    # tf_crop_and_resize: run-time roi (constant sizes), and run-time roi and scales.
    x = RNG.standard_normal([1, 1, 6, 6]).astype(np.float32)
    for mode in ("linear", "nearest", "cubic"):
        node = helper.make_node("Resize", ["X", "roi", "", "sizes"], ["Y"], mode=mode,
                                coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=7.5)
        sets = []
        for roi in ([0, 0, 0.2, 0.3, 1, 1, 0.9, 0.8], [0, 0, -0.2, 0.1, 1, 1, 1.3, 0.6]):
            roi = np.array(roi, np.float32)
            y = rref.interpolate_nd(x, rref.linear_coeffs if mode == "linear" else
                                    rref.nearest_coeffs if mode == "nearest" else rref.cubic_coeffs,
                                    output_size=[1, 1, 4, 5], roi=roi,
                                    coordinate_transformation_mode="tf_crop_and_resize",
                                    extrapolation_value=7.5).astype(np.float32)
            sets.append(([x, roi], [y]))
        write_case(root, "dyn_resize_tf_crop_roi_%s" % mode, [node], ["X", "roi"], ["Y"], sets, 13,
                   [("sizes", np.array([1, 1, 4, 5], np.int64))])
    node = helper.make_node("Resize", ["X", "roi", "scales"], ["Y"], mode="linear",
                            coordinate_transformation_mode="tf_crop_and_resize")
    sets = []
    for roi, s in (([0, 0, 0.1, 0.2, 1, 1, 0.7, 0.9], [1, 1, 1.5, 0.8]), ([0, 0, 0.0, 0.0, 1, 1, 1.0, 1.0],
                                                                           [1, 1, 1.6, 0.75])):
        roi, s = np.array(roi, np.float32), np.array(s, np.float32)
        sets.append(([x, roi, s], [resize_ref(x, s, "linear", "tf_crop_and_resize", "-", -0.75, 0, roi=roi)]))
    write_case(root, "dyn_resize_tf_crop_roi_scales", [node], ["X", "roi", "scales"], ["Y"], sets, 13)
    # Other dtypes and opsets.
    for dtype, mode in (("float64", "linear"), ("float16", "cubic"), ("int8", "nearest"), ("uint8", "nearest")):
        x = (RNG.standard_normal([2, 3, 4]) * 20).astype(dtype)
        s = np.array([1, 1.5, 2.25], np.float32)
        node = helper.make_node("Resize", ["X", "", "scales"], ["Y"], mode=mode)
        y = resize_ref(x.astype(np.float64), s, mode, "half_pixel", "round_prefer_floor", -0.75, 0).astype(dtype)
        write_case(root, "dyn_resize_%s_%s" % (dtype, mode), [node], ["X", "scales"], ["Y"], [([x, s], [y])], 13)
    x = RNG.standard_normal([1, 1, 3, 4]).astype(np.float32)
    for mode in ("nearest", "linear"):
        node = helper.make_node("Resize", ["X", "scales"], ["Y"], mode=mode)
        sets = []
        for s in ([1, 1, 2.0, 0.5], [1, 1, 2.2, 0.6]):
            s = np.array(s, np.float32)
            # Resize-10: asymmetric, nearest rounds down (ceil when downsampling).
            if mode == "nearest":
                y = np.empty([1, 1, int(3 * s[2]), int(4 * s[3])], np.float32)
                for i in range(y.shape[2]):
                    for j in range(y.shape[3]):
                        si, sj = i / float(s[2]), j / float(s[3])
                        si = int(np.ceil(si)) if s[2] < 1 else int(np.floor(si))
                        sj = int(np.ceil(sj)) if s[3] < 1 else int(np.floor(sj))
                        y[0, 0, i, j] = x[0, 0, min(si, 2), min(sj, 3)]
            else:
                y = resize_ref(x, s, "linear", "asymmetric", "-", -0.75, 0)
            sets.append(([x, s], [y]))
        write_case(root, "dyn_resize_opset10_%s" % mode, [node], ["X", "scales"], ["Y"], sets, 10)
    # Upsample-9 with run-time scales.
    for mode in ("nearest", "linear"):
        node = helper.make_node("Upsample", ["X", "scales"], ["Y"], mode=mode)
        x = RNG.standard_normal([1, 2, 3, 3]).astype(np.float32)
        sets = []
        for s in ([1, 1, 2, 3], [1, 1, 2.3, 3.2]):
            s = np.array(s, np.float32)
            if mode == "nearest":
                y = rref.interpolate_nd(x, lambda r: rref.nearest_coeffs(r, mode="floor"), scale_factors=s,
                                        coordinate_transformation_mode="asymmetric").astype(np.float32)
            else:
                y = resize_ref(x, s, "linear", "asymmetric", "-", -0.75, 0)
            sets.append(([x, s], [y]))
        write_case(root, "dyn_upsample_%s" % mode, [node], ["X", "scales"], ["Y"], sets, 9)


# ---- OneHot and Range with run-time shape inputs --------------------------------------------


def onehot_ref(ind, depth, axis, values, wrap):
    ind = np.asarray(ind).astype(np.int64)
    if wrap:
        ind = np.where(ind < 0, ind + depth, ind)
    rank = ind.ndim + 1
    axis = axis % rank
    eye = (np.arange(depth).reshape([1] * axis + [depth] + [1] * (rank - axis - 1))
           == np.expand_dims(ind, axis))
    return np.where(eye, values[1], values[0]).astype(values.dtype)


def onehot_range_cases(root):
    for name, ind_dt, depth_dt, axis, opset in (("f32depth_axis_last", "int64", "float32", -1, 11),
                                                ("i32depth_axis0", "int32", "int32", 0, 11),
                                                ("f64depth_axis1", "float32", "float64", 1, 11),
                                                ("opset9", "int64", "float32", -1, 9)):
        node = helper.make_node("OneHot", ["ind", "depth", "values"], ["y"], axis=axis)
        vals = np.array([-1.0, 4.0], np.float32)
        sets = []
        for _ in range(2):
            ind = RNG.integers(-6, 8, size=[3, 4]).astype(ind_dt)
            depth = np.array(6.7 if depth_dt.startswith("float") else 6, depth_dt)
            sets.append(([ind, depth, vals], [onehot_ref(ind, 6, axis, vals, opset >= 11)]))
        write_case(root, "dyn_onehot_" + name, [node], ["ind", "depth", "values"], ["y"], sets, opset)
    for dt, start, limit, delta in (("float32", 1.5, 7.2, 0.7), ("float64", 10.0, -3.0, -2.5), ("int32", -4, 20, 3),
                                    ("int16", 9, 0, -2), ("int64", 0, 50, 7)):
        node = helper.make_node("Range", ["s", "l", "d"], ["y"])
        ins = [np.array(start, dt), np.array(limit, dt), np.array(delta, dt)]
        y = np.arange(ins[0], ins[1], ins[2]).astype(dt)
        write_case(root, "dyn_range_%s" % dt, [node], ["s", "l", "d"], ["y"], [(ins, [y])], 11)


def error_models(root):
    """Models that must fail to compile, naming the node and the reason."""
    os.makedirs(root, exist_ok=True)

    def save(name, nodes, inputs, outputs, opset=13):
        model = casekit.make_model(helper.make_graph(nodes, name, inputs, outputs), opset,
                                   producer="make_dynamic_cases")
        with open(os.path.join(root, name + ".onnx"), "wb") as f:
            f.write(model.SerializeToString())

    f32 = TensorProto.FLOAT
    save("err_nonzero_transpose",
         [helper.make_node("NonZero", ["x"], ["nz"], name="nz"), helper.make_node("Transpose", ["nz"], ["y"], name="tr")],
         [helper.make_tensor_value_info("x", f32, [2, 3])], [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    save("err_two_dynamic",
         [helper.make_node("NonZero", ["a"], ["na"], name="na"), helper.make_node("NonZero", ["b"], ["nb"], name="nb"),
          helper.make_node("Add", ["na", "nb"], ["y"], name="add")],
         [helper.make_tensor_value_info("a", f32, [4]), helper.make_tensor_value_info("b", f32, [4])],
         [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    save("err_resize_undeclared", [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="rs")],
         [helper.make_tensor_value_info("x", f32, [1, 1, 2, 2]), helper.make_tensor_value_info("scales", f32, [4])],
         [helper.make_tensor_value_info("y", f32, [1, 1, "H", "W"])])


def main():
    root, more = casekit.command_line(__doc__, optional=("ERROR_DIR",))
    if more["ERROR_DIR"]:
        error_models(more["ERROR_DIR"])
    nonzero_cases(root)
    compress_cases(root)
    unique_cases(root)
    nms_cases(root)
    topk_cases(root)
    resize_cases(root)
    onehot_range_cases(root)


if __name__ == "__main__":
    main()
