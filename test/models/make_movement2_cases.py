#!/usr/bin/env python3
"""Builds ONNX backend-style test folders for the tensor-movement ops beyond
the foundation set (Tile, GatherElements, GatherND, Scatter*, DepthToSpace,
SpaceToDepth, Trilu, Einsum, OneHot, Range, EyeLike, Upsample,
CenterCropPad, ReverseSequence, Col2Im).

    /usr/bin/python3 test/models/make_movement2_cases.py OUTDIR [--freeze-suite NODE_DIR]
    build/bin/harness-test OUTDIR/*

Each case is OUTDIR/<name>/model.onnx plus test_data_set_0/{input_i.pb,
output_i.pb}, with expected outputs from numpy. They cover what the ONNX
node suite (opset <= 17 here) misses: other dtypes (integers, bool,
float16, bfloat16), attribute combinations, opset-18 ops and reductions
(CenterCropPad, Col2Im, ScatterElements/ScatterND max/min), out-of-range
indices with Harness's documented results, the Tile fallback for deep
nests, Einsum equations with ellipses, diagonals and broadcasting, and
constant folding of multi-kernel nodes through the JIT.

With --freeze-suite NODE_DIR it also copies the node suite's tests whose
shape-determining inputs are float tensors (OneHot's depth, Range's
start/limit/delta, Upsample's scales), which harness-test cannot freeze
(it freezes integer inputs only), as frozen_<test> folders with those
inputs turned into initializers: how such a model is deployed.
"""
import glob
import os

import numpy as np
import onnx
from onnx import TensorProto, helper

import casekit
from casekit import BF16, bf16_round

RNG = np.random.default_rng(20240612)


def save_case(root, name, nodes, inputs, outputs, inits=(), opset=13):
    """inputs/outputs/inits: lists of (name, value)."""
    casekit.write_case(root, name, nodes, inputs, outputs, opset, inits)


def randf(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def randi(lo, hi, *shape, dtype=np.int64):
    return RNG.integers(lo, hi, size=shape).astype(dtype)


def rand_of(dtype, *shape):
    """Random values of a dtype (BF16 allowed)."""
    if dtype is BF16:
        return BF16(randf(*shape))
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return RNG.integers(0, 2, size=shape).astype(np.bool_)
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -50
        return RNG.integers(lo, 50, size=shape).astype(dt)
    return randf(*shape).astype(dt)


def vals(v):
    return v.values if isinstance(v, BF16) else v


def like(v, a):
    """a in v's dtype (BF16 stays BF16)."""
    return BF16(a) if isinstance(v, BF16) else np.asarray(a).astype(v.dtype)


# ---- Tile, DepthToSpace, SpaceToDepth, Trilu ---------------------------------------

def tile_cases(root):
    for dt, shape, reps in [(np.int8, (2, 3, 4), (2, 1, 3)), (np.bool_, (3, 1), (1, 5)),
                            (np.float16, (5,), (4,)), (np.int64, (2, 2), (0, 3)),
                            (np.uint16, (1, 1, 1), (2, 3, 4)), (BF16, (3, 4), (2, 2)),
                            (np.float32, (2, 2, 2, 2, 2, 2, 2), (2, 2, 2, 1, 2, 2, 2)),
                            (np.float32, (2, 3, 2, 3, 2, 3, 2, 3), (2, 2, 2, 2, 2, 2, 2, 2)),
                            (np.float64, (), ())]:
        x = rand_of(dt, *shape)
        y = like(x, np.tile(vals(x), reps))
        name = f"tile_{'bf16' if dt is BF16 else np.dtype(dt).name}_{len(shape)}d"
        node = helper.make_node("Tile", ["x", "r"], ["y"])
        save_case(root, name, node, [("x", x)], [("y", y)], [("r", np.array(reps, dtype=np.int64))])
    # opset 6 with repeats as a graph input (frozen by harness-test).
    x = randf(3, 4)
    save_case(root, "tile_opset6_input_repeats", helper.make_node("Tile", ["x", "r"], ["y"]),
              [("x", x), ("r", np.array([2, 3], dtype=np.int64))], [("y", np.tile(x, (2, 3)))], opset=6)


def d2s_ref(x, b, mode):
    n, c, h, w = x.shape
    if mode == "DCR":
        t = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(n, c // (b * b), h * b, w * b)


def s2d_ref(x, b):
    n, c, h, w = x.shape
    t = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return t.reshape(n, c * b * b, h // b, w // b)


def depth_space_cases(root):
    for dt, mode, b, shape, opset in [(np.int8, "CRD", 3, (2, 18, 3, 5), 13), (np.bool_, "DCR", 2, (1, 8, 4, 3), 13),
                                      (np.float16, "CRD", 2, (2, 12, 9, 17), 13), (np.float32, None, 2, (1, 16, 5, 5), 1),
                                      (np.float32, "DCR", 4, (1, 32, 19, 21), 11),
                                      # Rows of 16 or more with blocks of 2-4 interleave input rows
                                      # (lower_d2s_rows); a block of 5 takes the strided copy.
                                      (np.int8, "DCR", 3, (2, 27, 4, 20), 13), (np.int64, "CRD", 2, (1, 12, 3, 16), 13),
                                      (np.float32, "DCR", 2, (2, 8, 7, 33), 13), (np.float32, "CRD", 5, (1, 50, 2, 17), 13)]:
        x = rand_of(dt, *shape)
        attrs = {"blocksize": b}
        if mode:
            attrs["mode"] = mode
        node = helper.make_node("DepthToSpace", ["x"], ["y"], **attrs)
        save_case(root, f"depthtospace_{np.dtype(dt).name}_{mode or 'default'}_b{b}_op{opset}", node, [("x", x)],
                  [("y", d2s_ref(x, b, mode or "DCR"))], opset=opset)
    for dt, b, shape, opset in [(np.uint8, 3, (2, 2, 9, 6), 13), (np.float64, 2, (1, 3, 16, 34), 13),
                                (np.float32, 4, (1, 5, 8, 12), 1)]:
        x = rand_of(dt, *shape)
        node = helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=b)
        save_case(root, f"spacetodepth_{np.dtype(dt).name}_b{b}_op{opset}", node, [("x", x)], [("y", s2d_ref(x, b))],
                  opset=opset)


def trilu_cases(root):
    for dt, shape, upper, k, kind in [(np.float32, (3, 4, 5), 1, 2, "input"), (np.float16, (2, 6, 3), 0, -1, "init"),
                                      (BF16, (4, 4), 1, -2, "init"), (np.bool_, (3, 5, 2), 0, 0, "none"),
                                      (np.int32, (5, 300), 1, 100, "init"), (np.uint8, (7, 3), 0, -100, "input"),
                                      (np.int64, (2, 3), 1, 2 ** 62, "input"), (np.float32, (2, 3), 0, -2 ** 62, "init")]:
        x = rand_of(dt, *shape)
        xv = vals(x)
        y = np.triu(xv, k) if upper else np.tril(xv, k)
        kk = np.array(k, dtype=np.int64)
        ins = [("x", x)] + ([("k", kk)] if kind == "input" else [])
        inits = [("k", kk)] if kind == "init" else []
        node = helper.make_node("Trilu", ["x", "k"] if kind != "none" else ["x"], ["y"], upper=upper)
        name = f"trilu_{'bf16' if dt is BF16 else np.dtype(dt).name}_{'upper' if upper else 'lower'}_k{k}_{kind}"
        save_case(root, name, node, ins, [("y", like(x, y))], inits, opset=14)


# ---- GatherElements, GatherND ------------------------------------------------------

def gather_elements_ref(x, idx, axis):
    """Harness semantics: negative indices wrap, others out of range give 0."""
    a = x.shape[axis]
    w = np.where(idx < 0, idx + a, idx)
    ok = (w >= 0) & (w < a)
    safe = np.where(ok, w, 0)
    out = np.empty(idx.shape, dtype=x.dtype)
    for pos in np.ndindex(idx.shape):
        src = list(pos)
        src[axis] = safe[pos]
        out[pos] = x[tuple(src)] if ok[pos] else 0
    return out


def gather_nd_ref(x, idx, b):
    """Harness semantics: negative components wrap, invalid tuples give 0."""
    bshape = idx.shape[:b]
    m = idx.shape[-1]
    slice_shape = x.shape[b + m:]
    out = np.zeros(idx.shape[:-1] + slice_shape, dtype=x.dtype)
    for pos in np.ndindex(idx.shape[:-1]):
        t = idx[pos]
        src = list(pos[:b])
        ok = True
        for k in range(m):
            dim = x.shape[b + k]
            c = int(t[k]) + (dim if t[k] < 0 else 0)
            ok &= 0 <= c < dim
            src.append(c)
        if ok:
            out[pos] = x[tuple(src)]
    return out


def gather_cases(root):
    for dt, xs, ishape, axis, itype, lo, hi in [(np.float16, (4, 5, 6), (4, 3, 6), 1, np.int32, -5, 5),
                                                (np.int64, (3, 7), (2, 9), -1, np.int64, -7, 7),
                                                (np.bool_, (6, 2, 3), (4, 2, 1), 0, np.int64, -6, 6),
                                                (np.float32, (3, 4, 5), (2, 3, 4), 2, np.int64, -8, 8),
                                                (BF16, (5, 3), (7, 2), 0, np.int32, -5, 5),
                                                (np.float32, (2, 40000), (2, 40000), 1, np.int64, 0, 40000)]:
        x = rand_of(dt, *xs)
        idx = randi(lo, hi, *ishape, dtype=itype)
        y = gather_elements_ref(vals(x), idx, axis)
        node = helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)
        name = f"gather_elements_{'bf16' if dt is BF16 else np.dtype(dt).name}_axis{axis}_{np.dtype(itype).name}"
        save_case(root, name, node, [("x", x), ("i", idx)], [("y", like(x, y))])
    for dt, xs, ishape, b, lo, hi in [(np.float32, (2, 3, 4, 5), (2, 3, 6, 1), 2, -4, 4),
                                      (np.int8, (2, 3, 4), (2, 5, 2), 1, -4, 4),
                                      (np.bool_, (4, 5), (3, 2), 0, -5, 6),
                                      (np.float16, (3, 4, 5), (2, 2, 3), 0, -3, 3),
                                      (np.int32, (2, 3, 4), (2, 3, 1), 2, -5, 5),
                                      (np.float32, (6, 5, 7), (4, 1), 0, -6, 7)]:
        x = rand_of(dt, *xs)
        idx = randi(lo, hi, *ishape)
        y = gather_nd_ref(x, idx, b)
        node = helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=b)
        save_case(root, f"gathernd_{np.dtype(dt).name}_b{b}_{len(xs)}d_{len(ishape)}q", node, [("x", x), ("i", idx)],
                  [("y", y)])


# ---- Scatter ----------------------------------------------------------------------

RED = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def reduce_into(out, pos, v, reduction, bf16=False):
    if reduction == "none":
        out[pos] = v
    else:
        out[pos] = RED[reduction](out[pos], v)
        if bf16:  # bfloat16 outputs round after every update
            out[pos] = bf16_round(out[pos])


def scatter_elements_ref(x, idx, upd, axis, reduction, wdtype=None):
    """In order; negative indices wrap, out-of-range ones are skipped."""
    out = x.astype(wdtype or x.dtype)
    a = x.shape[axis]
    for pos in np.ndindex(idx.shape):
        i = int(idx[pos]) + (a if idx[pos] < 0 else 0)
        if not 0 <= i < a:
            continue
        dpos = list(pos)
        dpos[axis] = i
        reduce_into(out, tuple(dpos), upd[pos], reduction, wdtype is not None)
    return out


def scatter_nd_ref(x, idx, upd, reduction, wdtype=None):
    out = x.astype(wdtype or x.dtype)
    k = idx.shape[-1]
    for pos in np.ndindex(idx.shape[:-1]):
        t = []
        ok = True
        for c in range(k):
            dim = x.shape[c]
            v = int(idx[pos][c]) + (dim if idx[pos][c] < 0 else 0)
            ok &= 0 <= v < dim
            t.append(v)
        if ok:
            reduce_into(out, tuple(t), upd[pos], reduction, wdtype is not None)
    return out


def scatter_cases(root):
    cases = [(np.float32, (4, 5, 6), (3, 5, 2), 1, np.int64, "add", 16),
             (np.int32, (3, 7), (3, 9), 1, np.int32, "mul", 16),
             (np.float16, (6, 4), (8, 4), 0, np.int64, "max", 18),
             (np.int64, (5, 3, 2), (5, 3, 2), 2, np.int64, "min", 18),
             (np.uint8, (4, 6), (2, 6), 0, np.int32, "max", 18),
             (np.bool_, (3, 4), (3, 2), -1, np.int64, "none", 13),
             (BF16, (5, 4), (3, 4), 0, np.int64, "add", 18),
             (np.float64, (4, 3), (4, 3), 0, np.int64, "none", 11),
             (np.float32, (3, 3), (2, 3), 0, np.int64, "min", 18),
             (np.float32, (6, 1000), (5, 1000), 0, np.int64, "add", 16)]
    for dt, xs, ishape, axis, itype, red, opset in cases:
        x = rand_of(dt, *xs)
        a = xs[axis]
        # a few out-of-range indices (skipped by Harness) where no reduction
        # depends on order
        idx = randi(-a - (red != "none"), a + (red != "none"), *ishape, dtype=itype)
        if red == "none":
            # unique targets along the axis, so the result does not depend on order
            ax = axis % len(xs)
            full = list(ishape)
            full[ax] = a
            idx = np.take(np.argsort(RNG.random(full), axis=ax), range(ishape[ax]), axis=ax).astype(itype)
        upd = rand_of(dt, *ishape)
        xv, uv = vals(x), vals(upd)
        wd = np.float32 if dt is BF16 else None
        y = scatter_elements_ref(xv, idx, uv, axis, red, wd)
        attrs = {"axis": axis}
        if opset >= 16:
            attrs["reduction"] = red
        node = helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], **attrs)
        name = f"scatter_elements_{'bf16' if dt is BF16 else np.dtype(dt).name}_{red}_axis{axis}_op{opset}"
        save_case(root, name, node, [("x", x), ("i", idx), ("u", upd)], [("y", like(x, y))], opset=opset)
    # Scatter (opset 10) with int32 indices.
    x = randf(3, 4)
    idx = np.array([[1, 0, 2, -1], [2, 1, 0, 0]], dtype=np.int32)
    upd = randf(2, 4)
    save_case(root, "scatter_op10_int32", helper.make_node("Scatter", ["x", "i", "u"], ["y"], axis=0),
              [("x", x), ("i", idx), ("u", upd)], [("y", scatter_elements_ref(x, idx, upd, 0, "none"))], opset=10)

    nd = [(np.float32, (4, 5, 6), (3, 1), "add", 16), (np.int32, (4, 5, 6), (2, 3, 2), "mul", 16),
          (np.float16, (6, 7), (5, 2), "max", 18), (np.int64, (3, 4, 5), (4, 3), "min", 18),
          (np.bool_, (5, 4), (2, 1), "none", 13), (np.float32, (8, 100, 300), (6, 1), "add", 18),
          (np.float32, (8, 100, 300), (3, 1), "none", 13), (BF16, (6, 5), (4, 1), "mul", 18)]
    for dt, xs, ishape, red, opset in nd:
        x = rand_of(dt, *xs)
        k = ishape[-1]
        cols = [randi(-xs[c] - 1, xs[c] + 1, *ishape[:-1]) for c in range(k)]
        idx = np.stack(cols, axis=-1)
        if red == "none":  # unique in-range tuples
            flat = RNG.permutation(int(np.prod(xs[:k])))[:int(np.prod(ishape[:-1]))]
            idx = np.stack(np.unravel_index(flat, xs[:k]), axis=-1).reshape(ishape).astype(np.int64)
        upd = rand_of(dt, *(ishape[:-1] + xs[k:]))
        wd = np.float32 if dt is BF16 else None
        y = scatter_nd_ref(vals(x), idx, vals(upd), red, wd)
        attrs = {"reduction": red} if opset >= 16 else {}
        node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], **attrs)
        name = f"scatternd_{'bf16' if dt is BF16 else np.dtype(dt).name}_{red}_{len(xs)}d_k{k}_op{opset}"
        save_case(root, name, node, [("x", x), ("i", idx), ("u", upd)], [("y", like(x, y))], opset=opset)


# ---- OneHot, Range, EyeLike -----------------------------------------------------------

def onehot_ref(idx, depth, axis, off, on, opset):
    """Harness semantics: float indices truncate; opset 11 wraps [-depth, -1];
    anything else out of range is all-off."""
    i = np.trunc(idx).astype(np.int64) if idx.dtype.kind == "f" else idx.astype(np.int64)
    if opset >= 11:
        i = np.where(i < 0, i + depth, i)
    rank = idx.ndim + 1
    axis = axis + rank if axis < 0 else axis
    d = np.arange(depth).reshape((1,) * axis + (depth,) + (1,) * (rank - axis - 1))
    hit = np.expand_dims(i, axis) == d
    return np.where(hit, on, off)


def onehot_cases(root):
    for itype, ishape, depth, dtype_d, axis, vtype, opset in [
            (np.int64, (3, 4), 6, np.int64, 1, np.float32, 11), (np.float32, (5,), 7, np.float32, 0, np.int64, 11),
            (np.int32, (2, 3, 2), 5, np.int32, -1, np.bool_, 11), (np.int8, (4, 3), 4, np.float64, -3, np.float16, 11),
            (np.int64, (6,), 5, np.int64, -1, np.int32, 9), (np.uint8, (2, 5), 300, np.int64, 1, np.uint8, 11)]:
        idx = (RNG.uniform(-depth - 2, depth + 2, size=ishape).astype(itype) if np.dtype(itype).kind == "f"
               else randi(-depth - 2 if np.dtype(itype).kind == "i" else 0, depth + 2, *ishape, dtype=itype))
        values = np.array([3, 7] if vtype != np.bool_ else [0, 1]).astype(vtype)
        y = onehot_ref(idx, depth, axis, values[0], values[1], opset).astype(vtype)
        node = helper.make_node("OneHot", ["i", "d", "v"], ["y"], axis=axis)
        name = f"onehot_{np.dtype(itype).name}_{np.dtype(vtype).name}_axis{axis}_op{opset}"
        save_case(root, name, node, [("i", idx), ("v", values)], [("y", y)],
                  [("d", np.array(depth, dtype=dtype_d))], opset=opset)


def range_cases(root):
    for dt, s, l, d in [(np.int16, 3, 100, 7), (np.int64, 2 ** 40, 2 ** 40 - 50, -3), (np.float64, 0.5, -3.2, -0.25),
                        (np.float32, 1.0, 1.0, 1.0), (np.int32, -5, 70000, 3), (np.float32, -2.0, 40000.0, 1.5)]:
        y = np.arange(s, l, d).astype(dt) if dt != np.float32 else \
            (np.float32(s) + np.arange(int(np.ceil((np.float32(l) - np.float32(s)) / d)), dtype=np.float64) *
             np.float32(d)).astype(np.float32)
        node = helper.make_node("Range", ["s", "l", "d"], ["y"])
        inits = [("s", np.array(s, dtype=dt)), ("l", np.array(l, dtype=dt)), ("d", np.array(d, dtype=dt))]
        # a trivial graph input keeps the model runnable; the Range node is folded
        x = np.zeros((1,), dtype=np.float32)
        ident = helper.make_node("Identity", ["x"], ["x_out"])
        save_case(root, f"range_{np.dtype(dt).name}_{len(y)}", [node, ident], [("x", x)], [("y", y), ("x_out", x)],
                  inits, opset=11)


def eyelike_cases(root):
    for shape, k, dtype, in_dt in [((4, 6), 2, TensorProto.BOOL, np.float32), ((5, 3), -2, TensorProto.FLOAT16, np.int32),
                                   ((3, 3), 5, None, np.int8), ((300, 500), -7, TensorProto.INT64, np.float32),
                                   ((4, 4), -4, TensorProto.UINT16, np.float32), ((2, 7), 0, TensorProto.DOUBLE, np.bool_)]:
        x = rand_of(in_dt, *shape)
        npt = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[dtype] if dtype is not None else np.dtype(in_dt)
        y = np.eye(shape[0], shape[1], k=k).astype(npt)
        attrs = {"k": k}
        if dtype is not None:
            attrs["dtype"] = dtype
        node = helper.make_node("EyeLike", ["x"], ["y"], **attrs)
        save_case(root, f"eyelike_{shape[0]}x{shape[1]}_k{k}_{np.dtype(npt).name}", node, [("x", x)], [("y", y)],
                  opset=9)


# ---- Upsample, CenterCropPad, ReverseSequence ---------------------------------------------

def upsample_ref(x, scales, mode):
    """Upsample = Resize-10: asymmetric coordinates, nearest floor, linear
    with edge clamping (numpy, separable)."""
    y = x.astype(np.float64)
    for d, s in enumerate(scales):
        n_in = x.shape[d]
        n_out = int(np.floor(n_in * s))
        xo = np.arange(n_out) / np.float64(np.float32(s))
        if mode == "nearest":
            i0 = np.minimum(np.floor(xo).astype(np.int64), n_in - 1)
            y = np.take(y, i0, axis=d)
        else:
            f = np.floor(xo)
            i0 = np.clip(f.astype(np.int64), 0, n_in - 1)
            i1 = np.clip(f.astype(np.int64) + 1, 0, n_in - 1)
            w = (xo - f).reshape((-1,) + (1,) * (x.ndim - d - 1))
            y = np.take(y, i0, axis=d) * (1 - w) + np.take(y, i1, axis=d) * w
    return y.astype(x.dtype)


def upsample_cases(root):
    for opset, mode, dt, shape, scales in [(7, "nearest", np.int32, (1, 2, 3, 3), [1, 1, 2, 3]),
                                           (7, "linear", np.float32, (2, 3, 4), [1, 2.5, 1.5]),
                                           (8, "nearest", np.bool_, (2, 3), [2, 2]),
                                           (9, "linear", np.float32, (1, 1, 4, 5), [1, 1, 2, 3]),
                                           (9, "nearest", np.float16, (1, 2, 3, 2), [1, 1, 3, 2]),
                                           (9, "nearest", BF16, (2, 3), [2, 1]),
                                           (9, "linear", BF16, (1, 3, 4), [1, 2, 2])]:
        x = rand_of(dt, *shape)
        y = like(x, upsample_ref(vals(x), scales, mode))
        sc = np.array(scales, dtype=np.float32)
        if opset < 9:
            node = helper.make_node("Upsample", ["x"], ["y"], mode=mode, scales=[float(s) for s in scales])
            inits = []
        else:
            node = helper.make_node("Upsample", ["x", "s"], ["y"], mode=mode)
            inits = [("s", sc)]
        save_case(root, f"upsample_op{opset}_{mode}_{'bf16' if dt is BF16 else np.dtype(dt).name}", node, [("x", x)], [("y", y)], inits,
                  opset=opset)


def center_crop_pad_ref(x, shape, axes):
    axes = [a + x.ndim if a < 0 else a for a in (axes if axes is not None else range(x.ndim))]
    crop = [slice(0, s) for s in x.shape]
    place = [slice(0, s) for s in x.shape]
    out_shape = list(x.shape)
    for a, s in zip(axes, shape):
        dim = x.shape[a]
        out_shape[a] = s
        if s < dim:
            b = (dim - s) // 2
            crop[a] = slice(b, b + s)
        elif s > dim:
            b = (s - dim) // 2
            place[a] = slice(b, b + dim)
    out = np.zeros(out_shape, dtype=x.dtype)
    out[tuple(place)] = x[tuple(crop)]
    return out


def center_crop_pad_cases(root):
    for dt, xs, shape, axes in [(np.float32, (20, 10, 3), (10, 7, 3), None), (np.float32, (10, 7, 3), (20, 10, 3), None),
                                (np.float32, (20, 8, 3), (10, 10, 3), None), (np.float32, (32, 32, 3), (20, 10), [0, 1]),
                                (np.float32, (3, 32, 32), (20, 10), [1, 2]), (np.int8, (3, 5, 9), (8, 4), [-1, 1]),
                                (np.bool_, (4, 4), (7, 1), None), (np.float16, (2, 3, 6, 5), (3, 7), [-2, -1])]:
        x = rand_of(dt, *xs)
        attrs = {"axes": axes} if axes is not None else {}
        node = helper.make_node("CenterCropPad", ["x", "s"], ["y"], **attrs)
        y = center_crop_pad_ref(x, shape, axes)
        name = f"center_crop_pad_{np.dtype(dt).name}_{'x'.join(map(str, xs))}_to_{'x'.join(map(str, shape))}"
        save_case(root, name, node, [("x", x)], [("y", y)], [("s", np.array(shape, dtype=np.int64))], opset=18)


def reverse_sequence_ref(x, lens, batch_axis, time_axis):
    out = x.copy()
    T = x.shape[time_axis]
    for b, n in enumerate(lens):
        n = max(0, min(int(n), T))
        src = [slice(None)] * x.ndim
        src[batch_axis] = b
        dst = list(src)
        src[time_axis] = slice(n - 1, None, -1) if n > 0 else slice(0, 0)
        dst[time_axis] = slice(0, n)
        out[tuple(dst)] = x[tuple(src)]
    return out


def reverse_sequence_cases(root):
    for dt, xs, ba, ta, lens in [(np.float32, (3, 5, 4, 2), 0, 1, [5, 1, 3]), (np.int16, (6, 2, 3), 1, 0, [4, 6]),
                                 (np.bool_, (4, 3), 1, 0, [0, 4, 2]), (BF16, (2, 7, 3), 0, 1, [9, -2])]:
        x = rand_of(dt, *xs)
        lens = np.array(lens, dtype=np.int64)
        y = reverse_sequence_ref(vals(x), lens, ba, ta)
        node = helper.make_node("ReverseSequence", ["x", "l"], ["y"], batch_axis=ba, time_axis=ta)
        name = f"reversesequence_{'bf16' if dt is BF16 else np.dtype(dt).name}_{len(xs)}d_batch{ba}"
        save_case(root, name, node, [("x", x), ("l", lens)], [("y", like(x, y))], opset=10)


# ---- Col2Im ---------------------------------------------------------------------------------

def col2im_ref(x, img, blk, dil, pads, strides):
    S = len(img)
    N, CK, L = x.shape
    K = int(np.prod(blk))
    C = CK // K
    Ld = [(img[d] + pads[d] + pads[S + d] - dil[d] * (blk[d] - 1) - 1) // strides[d] + 1 for d in range(S)]
    assert int(np.prod(Ld)) == L
    xr = x.reshape(N, C, K, L).astype(np.float64)
    out = np.zeros((N, C) + tuple(img), dtype=np.float64)
    for kf, k in enumerate(np.ndindex(*blk)):
        for lf, l in enumerate(np.ndindex(*Ld)):
            pos = tuple(l[d] * strides[d] + k[d] * dil[d] - pads[d] for d in range(S))
            if all(0 <= pos[d] < img[d] for d in range(S)):
                out[(slice(None), slice(None)) + pos] += xr[:, :, kf, lf]
    return out


def col2im_cases(root):
    for dt, N, C, img, blk, dil, pads, strides in [
            (np.float32, 1, 1, [5, 5], [1, 5], None, None, None),
            (np.float32, 1, 2, [6, 6], [2, 2], [1, 1], [0, 0, 0, 0], [2, 2]),
            (np.float32, 1, 1, [5, 5], [2, 2], [2, 2], None, None),
            (np.float32, 1, 1, [5, 5], [2, 2], None, [1, 0, 1, 0], None),
            (np.float32, 1, 2, [3, 4, 5], [1, 1, 5], None, None, None),
            (np.float64, 2, 3, [7, 9], [3, 2], [2, 1], [1, 2, 0, 1], [2, 3]),
            (np.float16, 1, 2, [6, 5], [3, 3], None, [1, 1, 1, 1], None),
            (np.int32, 2, 1, [8], [3], [2], [1, 2], [1]),
            (np.float32, 1, 3, [20, 30], [3, 3], None, [1, 1, 1, 1], None)]:
        S = len(img)
        d_ = dil or [1] * S
        p_ = pads or [0] * (2 * S)
        s_ = strides or [1] * S
        Ld = [(img[d] + p_[d] + p_[S + d] - d_[d] * (blk[d] - 1) - 1) // s_[d] + 1 for d in range(S)]
        x = rand_of(dt, N, C * int(np.prod(blk)), int(np.prod(Ld)))
        if dt == np.float16:
            x = (np.round(x.astype(np.float32) * 8) / 8).astype(np.float16)  # exact sums
        y = col2im_ref(x, img, blk, d_, p_, s_).astype(dt)
        attrs = {}
        if dil:
            attrs["dilations"] = dil
        if pads:
            attrs["pads"] = pads
        if strides:
            attrs["strides"] = strides
        node = helper.make_node("Col2Im", ["x", "img", "blk"], ["y"], **attrs)
        name = f"col2im_{np.dtype(dt).name}_{S}d_{'x'.join(map(str, img))}_b{'x'.join(map(str, blk))}"
        if dil:
            name += "_dil"
        if pads:
            name += "_pads"
        if strides:
            name += "_strides"
        save_case(root, name, node, [("x", x)], [("y", y)],
                  [("img", np.array(img, dtype=np.int64)), ("blk", np.array(blk, dtype=np.int64))], opset=18)


# ---- Einsum ----------------------------------------------------------------------------------

def einsum_cases(root):
    cases = [("ij,jk->ik", [(5, 7), (7, 9)], np.float32), ("ij,kj->ik", [(6, 33), (5, 33)], np.float32),
             ("bij,bjk->bik", [(3, 4, 5), (3, 5, 6)], np.float64), ("ii->i", [(5, 5)], np.float32),
             ("ii", [(4, 4)], np.int32), ("i,i", [(17,), (17,)], np.float32), ("i,j->ij", [(3,), (4,)], np.int64),
             ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)], np.float32), ("ijk->kji", [(2, 3, 4)], np.int8),
             ("bhid,bhjd->bhij", [(2, 3, 4, 8), (2, 3, 5, 8)], np.float32), ("a...,a...->...", [(3, 2, 4), (3, 4)], np.float32),
             ("ba", [(3, 4)], np.float32), ("ij,ij,ij->", [(3, 4)] * 3, np.float64), ("iij->ij", [(3, 3, 4)], np.float32),
             ("ijj->i", [(2, 5, 5)], np.float32), ("ij,jk", [(3, 4), (4, 2)], np.float16), ("...", [(2, 3)], np.float32),
             ("Ab,bA->", [(3, 4), (4, 3)], np.float32), ("i,i->i", [(1,), (6,)], np.float32),
             ("ij,j->i", [(300, 600), (600,)], np.float32), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)], np.float32),
             ("i...->...", [(4, 0, 2)], np.float32), ("ij->", [(0, 3)], np.float32), ("  i j , j k -> i k ", [(2, 3), (3, 2)], np.float32),
             # Two float32 inputs in the roles of a batched matrix product
             # (einsum.c ein_product_desc; check_einsum_path.py): MaxViT's
             # attention, transposed operands, columns from the first input,
             # batches folded or broadcast or permuted, merged labels,
             # reductions split into slices, a diagonal, an ellipsis.
             ("B G H I D, B G H J D -> B G H I J", [(1, 4, 2, 49, 32), (1, 4, 2, 49, 32)], np.float32),
             ("BGHIJ,BGHJD->BGHID", [(1, 4, 2, 49, 49), (1, 4, 2, 49, 32)], np.float32),
             ("ki,kj->ij", [(40, 13), (40, 20)], np.float32), ("bij,bjk->bki", [(2, 9, 7), (2, 7, 11)], np.float32),
             ("bij,jk->bik", [(3, 5, 6), (6, 17)], np.float32), ("ij,bjk->bik", [(5, 6), (3, 6, 17)], np.float32),
             ("hbid,bhjd->bhij", [(2, 3, 10, 8), (3, 2, 9, 8)], np.float32),
             ("bhid,hbjd->bhij", [(3, 2, 10, 8), (2, 3, 9, 8)], np.float32),
             ("ibj,jk->bik", [(4, 3, 5), (5, 12)], np.float32), ("bij,bjk->bik", [(1, 9, 5), (3, 5, 12)], np.float32),
             ("bhwc,hwck->bk", [(3, 2, 3, 4), (2, 3, 4, 10)], np.float32), ("ij,jkl->ikl", [(4, 5), (5, 3, 6)], np.float32),
             ("ik,jk->ij", [(10, 700), (20, 700)], np.float32), ("ik,kj->ij", [(12, 700), (700, 40)], np.float32),
             ("bii,bij->bj", [(2, 5, 5), (2, 5, 9)], np.float32),
             ("...id,...jd->...ij", [(2, 3, 10, 16), (3, 12, 16)], np.float32)]
    for k, (eq, shapes, dt) in enumerate(cases):
        ins = [rand_of(dt, *s) if np.dtype(dt).kind == "f" else RNG.integers(-3, 4, size=s).astype(dt) for s in shapes]
        if dt == np.float16:
            ins = [(np.round(a.astype(np.float32) * 4) / 4).astype(np.float16) for a in ins]
        y = np.einsum(eq.replace(" ", ""), *[a.astype(np.float64) if dt == np.float16 else a for a in ins]).astype(dt)
        y = np.asarray(y)
        names = [f"x{i}" for i in range(len(ins))]
        node = helper.make_node("Einsum", names, ["y"], equation=eq)
        save_case(root, f"einsum_{k:02d}_{np.dtype(dt).name}", node, list(zip(names, ins)), [("y", y)], opset=12)


# ---- constant folding ------------------------------------------------------------------------

def folded_cases(root):
    """Nodes with constant inputs, evaluated at compile time by their own
    kernels through the JIT (multi-kernel nodes, workspaces)."""
    z = np.zeros((1,), np.float32)
    ident = helper.make_node("Identity", ["z"], ["z2"])
    x, idx, u = randf(4, 5), np.array([[1], [3], [1]], dtype=np.int64), randf(3, 5)
    save_case(root, "folded_scatternd_add", [helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction="add"), ident],
              [("z", z)], [("y", scatter_nd_ref(x, idx, u, "add")), ("z2", z)], [("x", x), ("i", idx), ("u", u)], opset=16)
    c = (np.round(randf(1, 8, 6) * 8) / 8).astype(np.float16)
    y = col2im_ref(c, [3, 4], [2, 2], [1, 1], [0, 0, 0, 0], [1, 1]).astype(np.float16)
    save_case(root, "folded_col2im_float16", [helper.make_node("Col2Im", ["c", "s", "b"], ["y"]), ident], [("z", z)],
              [("y", y), ("z2", z)], [("c", c), ("s", np.array([3, 4], dtype=np.int64)),
                                      ("b", np.array([2, 2], dtype=np.int64))], opset=18)
    a, b = randf(3, 4), randf(4, 5)
    save_case(root, "folded_einsum", [helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ki"), ident],
              [("z", z)], [("y", np.einsum("ij,jk->ki", a, b)), ("z2", z)], [("a", a), ("b", b)], opset=12)


# ---- frozen copies of suite tests ---------------------------------------------------------------

FREEZE = {"test_onehot_": [1], "test_range_float_type_positive_delta": [0, 1, 2], "test_upsample_nearest": [1]}


def freeze_suite(root, node_dir):
    """Copies suite tests whose float shape inputs harness-test cannot freeze,
    those inputs turned into initializers."""
    for d in sorted(glob.glob(os.path.join(node_dir, "test_*"))):
        base = os.path.basename(d)
        which = next((v for k, v in FREEZE.items() if base.startswith(k) and not base.endswith("_expanded")), None)
        if which is None:
            continue
        casekit.freeze_inputs(d, os.path.join(root, "frozen_" + base), which)


def main():
    root, opts = casekit.command_line(__doc__, options=("--freeze-suite",))
    for fn in (tile_cases, depth_space_cases, trilu_cases, gather_cases, scatter_cases, onehot_cases, range_cases,
               eyelike_cases, upsample_cases, center_crop_pad_cases, reverse_sequence_cases, col2im_cases,
               einsum_cases, folded_cases):
        fn(root)
    if opts["--freeze-suite"]:
        freeze_suite(root, opts["--freeze-suite"])
    print("wrote", len(os.listdir(root)), "cases to", root)


if __name__ == "__main__":
    main()
