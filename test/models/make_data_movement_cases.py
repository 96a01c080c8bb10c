#!/usr/bin/env python3
"""Builds ONNX backend-style test folders for the data-movement ops.

    /usr/bin/python3 test/models/make_data_movement_cases.py OUTDIR [--freeze-suite NODE_DIR]
    build/bin/harness-test OUTDIR/*

Each case is OUTDIR/<name>/model.onnx plus test_data_set_0/{input_i.pb,
output_i.pb}. They cover what the ONNX node suite misses: Gather with
run-time int32/int64 indices (negative, out of range), Slice with negative
steps and INT64 limits, Pad with negative pads in reflect/wrap mode and a
run-time constant_value, Resize on 3 axes, with axes/keep_aspect_ratio_policy,
antialias and half_pixel_symmetric, Transpose of bool/float16 and tiled
shapes, Split with num_outputs, Concat with empty inputs and long rows,
training-mode Dropout with ratio 0 (the identity).

With --freeze-suite NODE_DIR it also copies the ONNX node suite's Resize
tests whose float scales/roi are graph inputs (harness-test freezes only
integer inputs) as frozen_<test> folders with those inputs turned into
initializers, which is how such a model is deployed (--constant).

Expected outputs come from numpy or from the ONNX reference functions in
onnx.backend.test.case.node.resize. The onnx package here (1.12) predates
Resize-18/19, so those cases use resize_ref below, a port of the newer
reference's per-axis interpolation (antialias filters, half_pixel_symmetric,
keep_aspect_ratio_policy).
"""
import glob
import os

import numpy as np
import onnx
from onnx import helper
from onnx.backend.test.case.node.resize import (cubic_coeffs, interpolate_nd, linear_coeffs,
                                                 nearest_coeffs)

import casekit

INT64_MIN = -(2 ** 63)
INT64_MAX = 2 ** 63 - 1
RNG = np.random.default_rng(20240611)


def save_case(root, name, nodes, inputs, outputs, inits=(), opset=13):
    """inputs/outputs/inits: lists of (name, numpy array)."""
    casekit.write_case(root, name, nodes, inputs, outputs, opset, inits)


def randf(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def randi(lo, hi, *shape, dtype=np.int64):
    return RNG.integers(lo, hi, size=shape).astype(dtype)


# ---- Resize reference for opsets 18/19 ------------------------------------------

def _neighbors(x, n, data):
    """The reference's get_neighbor: n nearest samples of edge-padded data."""
    pad = int(np.ceil(n / 2))
    padded = np.pad(data, pad, mode="edge")
    xp = x + pad
    idx = sorted(sorted(range(len(padded)), key=lambda i: (abs(xp - i), i))[:n])
    return np.array(idx) - pad, padded[idx]


def _linear_aa(ratio, scale):
    scale = min(scale, 1.0)
    start = int(np.floor(-1 / scale) + 1)
    footprint = 2 - 2 * start
    args = (np.arange(start, start + footprint) - ratio) * scale
    c = np.clip(1 - np.abs(args), 0, 1)
    return c / c.sum()


def _cubic_aa(ratio, scale, A=-0.75):
    scale = min(scale, 1.0)

    def k(x):
        x = abs(x)
        if x <= 1:
            return (A + 2) * x ** 3 - (A + 3) * x ** 2 + 1
        if x < 2:
            return A * x ** 3 - 5 * A * x ** 2 + 8 * A * x - 4 * A
        return 0.0

    i_start = int(np.floor(-2 / scale) + 1)
    c = np.array([k(scale * (i - ratio)) for i in range(i_start, 2 - i_start)])
    return c / c.sum()


def _interp_1d(data, scale, out_int, x, coeffs, ctm, exclude_outside):
    in_w = len(data)
    ow = scale * in_w
    if ctm == "align_corners":
        x_ori = 0.0 if ow == 1 else x * (in_w - 1) / (ow - 1)
    elif ctm == "asymmetric":
        x_ori = x / scale
    elif ctm == "pytorch_half_pixel":
        x_ori = -0.5 if ow == 1 else (x + 0.5) / scale - 0.5
    elif ctm == "half_pixel":
        x_ori = (x + 0.5) / scale - 0.5
    elif ctm == "half_pixel_symmetric":
        adjustment = out_int / ow
        offset = in_w / 2 * (1 - adjustment)
        x_ori = offset + (x + 0.5) / scale - 0.5
    else:
        raise ValueError(ctm)
    x_ori = float(x_ori)
    ratio = 1.0 if x_ori.is_integer() else x_ori - np.floor(x_ori)
    c = np.array(coeffs(ratio, scale), dtype=np.float64)
    idx, pts = _neighbors(x_ori, len(c), data)
    if exclude_outside:
        c[(idx < 0) | (idx >= in_w)] = 0
        c /= c.sum()
    return float(np.dot(c, pts))


def _interp_nd(data, scales, outs, x, coeffs, ctm, exclude_outside):
    if data.ndim == 1:
        return _interp_1d(data, scales[0], outs[0], x[0], coeffs, ctm, exclude_outside)
    inner = np.array([_interp_nd(data[i], scales[1:], outs[1:], x[1:], coeffs, ctm, exclude_outside)
                      for i in range(data.shape[0])])
    return _interp_1d(inner, scales[0], outs[0], x[0], coeffs, ctm, exclude_outside)


def resize_ref(x, mode, scales=None, sizes=None, axes=None, ctm="half_pixel", nearest_mode="round_prefer_floor",
               cubic_a=-0.75, exclude_outside=False, antialias=False, policy="stretch"):
    """Resize-19 reference (no tf_crop_and_resize) in float64."""
    r = x.ndim
    axes = list(range(r)) if axes is None else [a % r for a in axes]
    if scales is not None:
        sc = [np.float32(1.0)] * r
        for a, s in zip(axes, scales):
            sc[a] = np.float32(s)
        outs = [int(float(sc[i]) * x.shape[i]) for i in range(r)]
    else:
        sc = [1.0] * r
        outs = list(x.shape)
        ratios = [sizes[i] / x.shape[a] for i, a in enumerate(axes)]
        if policy == "stretch":
            for i, a in enumerate(axes):
                sc[a], outs[a] = ratios[i], int(sizes[i])
        else:
            s = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                sc[a], outs[a] = s, int(s * x.shape[a] + 0.5)
    if mode == "nearest":
        coeffs = lambda ratio, scale: nearest_coeffs(ratio, nearest_mode)
    elif mode == "linear":
        coeffs = _linear_aa if antialias else (lambda ratio, scale: linear_coeffs(ratio))
    else:
        coeffs = (lambda ratio, scale: _cubic_aa(ratio, scale, cubic_a)) if antialias \
            else (lambda ratio, scale: cubic_coeffs(ratio, cubic_a))
    y = np.zeros(outs)
    for idx in np.ndindex(*outs):
        y[idx] = _interp_nd(x.astype(np.float64), sc, outs, idx, coeffs, ctm, exclude_outside)
    return y.astype(x.dtype)


# ---- cases ----------------------------------------------------------------------------

def gather_cases(root):
    data = randf(3, 5, 4)
    idx = np.array([[-1, 0, 4], [-5, 2, -3]], np.int32)
    save_case(root, "dm_gather_runtime_int32_negative", helper.make_node("Gather", ["data", "idx"], ["y"], axis=1),
              [("data", data), ("idx", idx)], [("y", np.take(data, idx, axis=1))])

    data = randi(-100, 100, 4, 6)
    idx = np.array([5, -1, 0, -6, 3], np.int64)
    save_case(root, "dm_gather_runtime_int64_last_axis", helper.make_node("Gather", ["data", "idx"], ["y"], axis=-1),
              [("data", data), ("idx", idx)], [("y", np.take(data, idx, axis=-1))])

    # Out-of-range indices produce zeros (Harness's documented choice).
    data = randf(4, 3)
    idx = np.array([0, 7, -9, 2, -4], np.int64)
    want = np.zeros((5, 3), np.float32)
    for k, i in enumerate(idx):
        if -4 <= i < 4:
            want[k] = data[i]
    save_case(root, "dm_gather_out_of_range_zero", helper.make_node("Gather", ["data", "idx"], ["y"], axis=0),
              [("data", data), ("idx", idx)], [("y", want)])
    data = randf(6, 1).reshape(6)
    want = np.array([data[i] if -6 <= i < 6 else 0 for i in (2, 6, -7, -6)], np.float32)
    save_case(root, "dm_gather_out_of_range_zero_1d",
              helper.make_node("Gather", ["data", "idx"], ["y"], axis=0),
              [("data", data), ("idx", np.array([2, 6, -7, -6], np.int32))], [("y", want)])

    data = randf(5, 3, 2, dtype=np.float16)
    idx = np.array(-2, np.int64)
    save_case(root, "dm_gather_float16_scalar_index", helper.make_node("Gather", ["data", "idx"], ["y"], axis=0),
              [("data", data), ("idx", idx)], [("y", np.take(data, idx, axis=0))])

    data = (randi(0, 2, 7, 3) == 1)
    idx = np.array([[6, -7], [3, 3]], np.int32)
    save_case(root, "dm_gather_bool_constant_indices", helper.make_node("Gather", ["data", "idx"], ["y"], axis=0),
              [("data", data)], [("y", np.take(data, idx, axis=0))], inits=[("idx", idx)])


def slice_cases(root):
    x = randi(-1000, 1000, 6, 7, 5)
    starts, ends, axes, steps = [5, -1, 4], [INT64_MIN, 1, -6], [0, 1, 2], [-2, -3, -1]
    want = x[slice(5, INT64_MIN, -2), slice(-1, 1, -3), slice(4, -6, -1)]
    save_case(root, "dm_slice_negative_steps_int64",
              helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"]),
              [("x", x)], [("y", want)],
              inits=[("starts", np.array(starts, np.int64)), ("ends", np.array(ends, np.int64)),
                     ("axes", np.array(axes, np.int64)), ("steps", np.array(steps, np.int64))])

    x = randf(4, 9)
    want = x[slice(INT64_MIN, INT64_MAX, 3), slice(-100, 100, -1)]
    save_case(root, "dm_slice_int64_limits_int32_params",
              helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"]),
              [("x", x)], [("y", want)],
              inits=[("starts", np.array([-2 ** 31, -100], np.int32)), ("ends", np.array([2 ** 31 - 1, 100], np.int32)),
                     ("axes", np.array([0, -1], np.int32)), ("steps", np.array([3, -1], np.int32))])

    x = randf(5, 6, 3)
    save_case(root, "dm_slice_opset1_attributes",
              helper.make_node("Slice", ["x"], ["y"], starts=[1, -4], ends=[INT64_MAX, -1], axes=[0, 1]),
              [("x", x)], [("y", x[1:, -4:-1])], opset=9)

    x = randf(300000)
    save_case(root, "dm_slice_long_contiguous", helper.make_node("Slice", ["x", "starts", "ends"], ["y"]),
              [("x", x)], [("y", x[5:290000])],
              inits=[("starts", np.array([5], np.int64)), ("ends", np.array([290000], np.int64))])


def crop_then_pad(x, begins, ends, mode, value=0):
    sl = tuple(slice(-b if b < 0 else 0, x.shape[i] + e if e < 0 else x.shape[i]) for i, (b, e) in
               enumerate(zip(begins, ends)))
    width = [(max(b, 0), max(e, 0)) for b, e in zip(begins, ends)]
    if mode == "constant":
        return np.pad(x[sl], width, mode="constant", constant_values=value)
    return np.pad(x[sl], width, mode=mode)


def pad_cases(root):
    x = randf(3, 6, 5)
    b, e = [0, -2, 3], [1, 2, -1]
    save_case(root, "dm_pad_reflect_negative_pads", helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect"),
              [("x", x)], [("y", crop_then_pad(x, b, e, "reflect"))], inits=[("pads", np.array(b + e, np.int64))])

    x = randi(-50, 50, 4, 5, dtype=np.int32)
    b, e = [-1, 3], [2, -2]
    save_case(root, "dm_pad_wrap_negative_pads", helper.make_node("Pad", ["x", "pads"], ["y"], mode="wrap"),
              [("x", x)], [("y", crop_then_pad(x, b, e, "wrap"))], inits=[("pads", np.array(b + e, np.int64))],
              opset=19)

    x = randf(2, 3, 4)
    b, e = [1, 0, 9], [0, 2, 7]
    save_case(root, "dm_pad_wrap_larger_than_axis", helper.make_node("Pad", ["x", "pads"], ["y"], mode="wrap"),
              [("x", x)], [("y", crop_then_pad(x, b, e, "wrap"))], inits=[("pads", np.array(b + e, np.int64))],
              opset=19)

    x = randf(2, 3)
    b, e = [0, 5], [0, 4]
    save_case(root, "dm_pad_reflect_larger_than_axis", helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect"),
              [("x", x)], [("y", crop_then_pad(x, b, e, "reflect"))], inits=[("pads", np.array(b + e, np.int64))])

    x = randf(2, 3, 4, dtype=np.float16)
    value = np.array(2.5, np.float16)
    want = crop_then_pad(x, [2, 0, 1], [1, 0, 0], "constant", value)
    save_case(root, "dm_pad_constant_runtime_value_axes",
              helper.make_node("Pad", ["x", "pads", "value", "axes"], ["y"], mode="constant"),
              [("x", x), ("value", value)], [("y", want)],
              inits=[("pads", np.array([1, 2, 0, 1], np.int64)), ("axes", np.array([-1, 0], np.int64))], opset=18)

    x = randi(0, 2, 3, 4, dtype=np.int64).astype(bool)
    b, e = [2, -1], [-1, 3]
    save_case(root, "dm_pad_edge_bool_cropping", helper.make_node("Pad", ["x", "pads"], ["y"], mode="edge"),
              [("x", x)], [("y", crop_then_pad(x, b, e, "edge"))], inits=[("pads", np.array(b + e, np.int64))])

    x = randi(-9, 9, 2, 3, 4, 5, dtype=np.int8)
    b, e = [0, 1, 0, 0], [0, -1, 0, 0]
    save_case(root, "dm_pad_constant_attr_opset2_inner_blocks",
              helper.make_node("Pad", ["x"], ["y"], mode="constant", pads=b + e, value=-3.0),
              [("x", x)], [("y", crop_then_pad(x, b, e, "constant", -3))], opset=2)


def resize_cases(root):
    x = randf(1, 2, 3, 4, 5)
    scales = np.array([1, 1, 1.5, 0.5, 2.2], np.float32)
    want = interpolate_nd(x, linear_coeffs, scale_factors=scales,
                          coordinate_transformation_mode="align_corners").astype(np.float32)
    save_case(root, "dm_resize_linear_align_corners_3axes",
              helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear",
                               coordinate_transformation_mode="align_corners"),
              [("x", x)], [("y", want)], inits=[("scales", scales)])

    x = randf(3, 4, 6)
    sizes = np.array([5, 3, 9], np.int64)
    want = interpolate_nd(x, lambda r: cubic_coeffs(r, A=-0.5), output_size=sizes, exclude_outside=True,
                          coordinate_transformation_mode="half_pixel").astype(np.float32)
    save_case(root, "dm_resize_cubic_sizes_3axes_exclude_outside",
              helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="cubic", cubic_coeff_a=-0.5,
                               exclude_outside=1),
              [("x", x)], [("y", want)], inits=[("sizes", sizes)])

    x = randi(0, 255, 2, 5, 7, dtype=np.uint8)
    want = interpolate_nd(x, lambda r: nearest_coeffs(r, mode="round_prefer_ceil"), output_size=[2, 8, 3],
                          coordinate_transformation_mode="asymmetric").astype(np.uint8)
    save_case(root, "dm_resize_nearest_uint8_axes",
              helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest", axes=[1, -1],
                               nearest_mode="round_prefer_ceil", coordinate_transformation_mode="asymmetric"),
              [("x", x)], [("y", want)], inits=[("sizes", np.array([8, 3], np.int64))], opset=18)

    x = randf(1, 1, 4, 6)
    want = resize_ref(x, "linear", sizes=[7, 7], axes=[2, 3], policy="not_larger")
    save_case(root, "dm_resize_linear_not_larger",
              helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear", axes=[2, 3],
                               keep_aspect_ratio_policy="not_larger"),
              [("x", x)], [("y", want)], inits=[("sizes", np.array([7, 7], np.int64))], opset=18)

    x = randf(1, 1, 4, 6)
    want = resize_ref(x, "nearest", sizes=[3, 5], axes=[2, 3], policy="not_smaller")
    save_case(root, "dm_resize_nearest_not_smaller",
              helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest", axes=[2, 3],
                               keep_aspect_ratio_policy="not_smaller"),
              [("x", x)], [("y", want)], inits=[("sizes", np.array([3, 5], np.int64))], opset=18)

    x = randf(1, 2, 8, 9)
    scales = np.array([1, 1, 0.5, 0.4], np.float32)
    want = resize_ref(x, "linear", scales=scales, antialias=True)
    save_case(root, "dm_resize_linear_antialias",
              helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear", antialias=1),
              [("x", x)], [("y", want)], inits=[("scales", scales)], opset=18)

    x = randf(1, 1, 9, 7)
    scales = np.array([1, 1, 0.3, 0.6], np.float32)
    want = resize_ref(x, "cubic", scales=scales, antialias=True, exclude_outside=True)
    save_case(root, "dm_resize_cubic_antialias_exclude_outside",
              helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="cubic", antialias=1, exclude_outside=1),
              [("x", x)], [("y", want)], inits=[("scales", scales)], opset=18)

    x = randf(1, 1, 5, 4)
    scales = np.array([1, 1, 0.7, 1.3], np.float32)
    want = resize_ref(x, "linear", scales=scales, ctm="half_pixel_symmetric")
    save_case(root, "dm_resize_linear_half_pixel_symmetric",
              helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear",
                               coordinate_transformation_mode="half_pixel_symmetric"),
              [("x", x)], [("y", want)], inits=[("scales", scales)], opset=19)

    x = randi(-100, 100, 1, 1, 4, 5, dtype=np.int32)
    roi = np.array([0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4], np.float32)
    want = interpolate_nd(x, lambda r: nearest_coeffs(r), output_size=[1, 1, 6, 7], roi=roi,
                          coordinate_transformation_mode="tf_crop_and_resize",
                          extrapolation_value=7.0).astype(np.int32)
    save_case(root, "dm_resize_nearest_tf_crop_extrapolation_int32",
              helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], mode="nearest",
                               coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=7.0),
              [("x", x)], [("y", want)], inits=[("roi", roi), ("sizes", np.array([1, 1, 6, 7], np.int64))])

    x = randf(1, 1, 3, 4, dtype=np.float16)
    scales = np.array([1, 1, 2, 2], np.float32)
    want = interpolate_nd(x.astype(np.float64), linear_coeffs, scale_factors=scales).astype(np.float16)
    save_case(root, "dm_resize_linear_float16",
              helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear"),
              [("x", x)], [("y", want)], inits=[("scales", scales)])

    # Separable rows (lower_resize): H and W both blend and W is upsampled,
    # so each output row's H taps are blended once into a stack row that W
    # then samples. Linear (pytorch_half_pixel, a batch and channels) and
    # cubic (align_corners, A = -0.75); odd sizes, several output rows per
    # source row pair.
    x = randf(2, 3, 7, 9)
    want = interpolate_nd(x, linear_coeffs, output_size=[2, 3, 20, 31],
                          coordinate_transformation_mode="pytorch_half_pixel").astype(np.float32)
    save_case(root, "dm_resize_separable_linear",
              helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear",
                               coordinate_transformation_mode="pytorch_half_pixel"),
              [("x", x)], [("y", want)], inits=[("sizes", np.array([2, 3, 20, 31], np.int64))])
    x = randf(1, 2, 5, 6)
    want = interpolate_nd(x, lambda r: cubic_coeffs(r, A=-0.75), output_size=[1, 2, 11, 17],
                          coordinate_transformation_mode="align_corners").astype(np.float32)
    save_case(root, "dm_resize_separable_cubic",
              helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="cubic", cubic_coeff_a=-0.75,
                               coordinate_transformation_mode="align_corners"),
              [("x", x)], [("y", want)], inits=[("sizes", np.array([1, 2, 11, 17], np.int64))])

    # All inputs constant: folded at compile time through the JIT (tables
    # and the kernel run there), then the graph only copies the result.
    x = randf(2, 3, 5)
    want = interpolate_nd(x, lambda r: cubic_coeffs(r), output_size=[2, 5, 4]).astype(np.float32)
    save_case(root, "dm_resize_cubic_folded",
              [helper.make_node("Resize", ["x", "", "", "sizes"], ["r"], mode="cubic"),
               helper.make_node("Relu", ["r"], ["y"])],
              [], [("y", np.maximum(want, 0))], inits=[("x", x), ("sizes", np.array([2, 5, 4], np.int64))])

    # Opset 10: asymmetric coordinates; nearest floors, or ceils on a
    # downsampled axis (as ONNX Runtime).
    x = randf(1, 1, 4, 6)
    scales = np.array([1, 1, 0.6, 1.5], np.float32)
    outs = [int(float(s) * d) for s, d in zip(scales, x.shape)]
    rows = [min(int(np.ceil(i / np.float64(scales[2]))), 3) for i in range(outs[2])]
    cols = [min(int(np.floor(j / np.float64(scales[3]))), 5) for j in range(outs[3])]
    save_case(root, "dm_resize_opset10_nearest",
              helper.make_node("Resize", ["x", "scales"], ["y"], mode="nearest"),
              [("x", x)], [("y", x[:, :, rows][:, :, :, cols])], inits=[("scales", scales)], opset=10)


def transpose_cases(root):
    x = randi(0, 2, 2, 3, 4).astype(bool)
    save_case(root, "dm_transpose_bool", helper.make_node("Transpose", ["x"], ["y"], perm=[2, 0, 1]),
              [("x", x)], [("y", np.transpose(x, (2, 0, 1)))])
    x = randf(3, 100, 130, dtype=np.float16)
    save_case(root, "dm_transpose_float16_tiled", helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 1]),
              [("x", x)], [("y", np.transpose(x, (0, 2, 1)))])
    x = randf(2, 33, 70, 65)
    save_case(root, "dm_transpose_4d_tiled", helper.make_node("Transpose", ["x"], ["y"], perm=[0, 3, 1, 2]),
              [("x", x)], [("y", np.transpose(x, (0, 3, 1, 2)))])
    x = randf(20, 24)
    save_case(root, "dm_transpose_folded",
              [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]), helper.make_node("Relu", ["t"], ["y"])],
              [], [("y", np.maximum(x.T, 0))], inits=[("x", x)])
    x = randi(-100, 100, 5, 6, 7, dtype=np.int8)
    save_case(root, "dm_transpose_int8_default", helper.make_node("Transpose", ["x"], ["y"]),
              [("x", x)], [("y", np.transpose(x))])
    x = randi(-10 ** 12, 10 ** 12, 1, 3, 1, 4)
    save_case(root, "dm_transpose_unit_dims_int64", helper.make_node("Transpose", ["x"], ["y"], perm=[2, 1, 0, 3]),
              [("x", x)], [("y", np.transpose(x, (2, 1, 0, 3)))])


def split_concat_expand_cases(root):
    x = randf(2, 7)
    save_case(root, "dm_split_num_outputs_uneven",
              helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3),
              [("x", x)], [("a", x[:, 0:3]), ("b", x[:, 3:6]), ("c", x[:, 6:7])], opset=18)
    x = randi(-9, 9, 8, 3, dtype=np.int16)
    save_case(root, "dm_split_num_outputs_even",
              helper.make_node("Split", ["x"], ["a", "b"], num_outputs=2),
              [("x", x)], [("a", x[:4]), ("b", x[4:])], opset=18)
    x = randi(0, 60000, 2, 4, dtype=np.uint16)
    save_case(root, "dm_split_attr_negative_axis",
              helper.make_node("Split", ["x"], ["a", "b"], axis=-1, split=[1, 3]),
              [("x", x)], [("a", x[:, :1]), ("b", x[:, 1:])], opset=11)

    a, b, c = randi(-9, 9, 2, 0, 3, dtype=np.int8), randi(-9, 9, 2, 4, 3, dtype=np.int8), randi(-9, 9, 2, 1, 3,
                                                                                               dtype=np.int8)
    save_case(root, "dm_concat_zero_size_int8", helper.make_node("Concat", ["a", "b", "c"], ["y"], axis=-2),
              [("a", a), ("b", b), ("c", c)], [("y", np.concatenate([a, b, c], axis=1))])
    a, b = randf(2, 70000), randf(3, 70000)
    save_case(root, "dm_concat_long_rows", helper.make_node("Concat", ["a", "b"], ["y"], axis=0),
              [("a", a), ("b", b)], [("y", np.concatenate([a, b], axis=0))])
    a, b = randf(300, 2, 5, dtype=np.float64), randf(300, 3, 5, dtype=np.float64)
    save_case(root, "dm_concat_float64_axis1", helper.make_node("Concat", ["a", "b"], ["y"], axis=1),
              [("a", a), ("b", b)], [("y", np.concatenate([a, b], axis=1))])

    x = randi(0, 2, 3, 1).astype(bool)
    save_case(root, "dm_expand_bool", helper.make_node("Expand", ["x", "shape"], ["y"]),
              [("x", x)], [("y", np.broadcast_to(x, (2, 3, 4)).copy())],
              inits=[("shape", np.array([2, 1, 4], np.int64))])
    x = randi(-9, 9, 1, 4, dtype=np.uint64)
    save_case(root, "dm_expand_uint64_zero_dim", helper.make_node("Expand", ["x", "shape"], ["y"]),
              [("x", x)], [("y", np.zeros((0, 4), np.uint64))], inits=[("shape", np.array([0, 1], np.int64))])


def dropout_cases(root):
    """Training-mode Dropout with a constant ratio of 0 is the identity (scale
    1, mask all true): torchvision's Swin Transformer exports its attention
    dropout this way."""
    x = randf(2, 3, 5)
    save_case(root, "dm_dropout_training_ratio0_mask",
              helper.make_node("Dropout", ["x", "ratio", "training"], ["y", "mask"]),
              [("x", x)], [("y", x), ("mask", np.ones(x.shape, bool))],
              inits=[("ratio", np.array(0.0, np.float32)), ("training", np.array(True))])
    x = randf(4, 6, dtype=np.float16)
    save_case(root, "dm_dropout12_training_ratio0_float16_double_ratio",
              helper.make_node("Dropout", ["x", "ratio", "training"], ["y"]),
              [("x", x)], [("y", x)],
              inits=[("ratio", np.array(0.0, np.float64)), ("training", np.array(True))], opset=12)


def freeze_suite(root, node_dir):
    """Copies NODE_DIR/test_resize_* with float scales/roi inputs frozen."""
    for d in sorted(glob.glob(os.path.join(node_dir, "test_resize_*"))):
        names = [i.name for i in onnx.load(os.path.join(d, "model.onnx")).graph.input]
        frozen = [i for i, n in enumerate(names) if n in ("scales", "roi")]
        if not frozen or not os.path.isdir(os.path.join(d, "test_data_set_0")):
            continue
        casekit.freeze_inputs(d, os.path.join(root, "frozen_" + os.path.basename(d)), frozen)


def main():
    root, opts = casekit.command_line(__doc__, options=("--freeze-suite",))
    if opts["--freeze-suite"]:
        freeze_suite(root, opts["--freeze-suite"])
    gather_cases(root)
    slice_cases(root)
    pad_cases(root)
    resize_cases(root)
    transpose_cases(root)
    split_concat_expand_cases(root)
    dropout_cases(root)


if __name__ == "__main__":
    main()
