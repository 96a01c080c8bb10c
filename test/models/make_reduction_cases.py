#!/usr/bin/python3
"""Generates ONNX backend-style test folders for the reduction family:
Reduce{Max,Min,Prod,L1,L2,LogSum,LogSumExp,SumSquare}, ArgMax/ArgMin,
CumSum, TopK, Hardmax, LogSoftmax, InstanceNormalization, LRN,
MeanVarianceNormalization, GroupNormalization and LpNormalization, with the
attribute / dtype / opset combinations the ONNX suite misses (integer and
half types, old attribute forms, opset 18+ axes inputs, noop_with_empty_axes,
empty reductions, NaNs, ties, strided axes, blocks larger than one task).
Expected outputs are computed with numpy.

usage: make_reduction_cases.py OUTPUT_DIR
then:  harness-test OUTPUT_DIR/*
"""
import warnings

import numpy as np
from onnx import helper

import casekit
from casekit import BF16, bf16_round

RNG = np.random.default_rng(4321)


def write_case(root, name, nodes, inputs, outputs, opset, initializers=None):
    """inputs/outputs: lists of (name, value); initializers: list of (name, value)."""
    casekit.write_case(root, name, nodes, inputs, outputs, opset, initializers or (),
                       producer="make_reduction_cases")


def rand(shape, dtype):
    """Random values of dtype ('bf16' gives a BF16-rounded float32 array)."""
    if dtype == "bf16":
        return bf16_round(RNG.standard_normal(shape).astype(np.float32))
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return RNG.random(shape) < 0.5
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        lo, hi = max(info.min, -50), min(info.max, 50)
        return RNG.integers(lo, hi, size=shape, endpoint=True).astype(dt)
    return RNG.standard_normal(shape).astype(dt)


def wrap(values, dtype):
    """A test value of dtype from float64/int reference values."""
    if dtype == "bf16":
        return BF16(np.asarray(values, dtype=np.float64).astype(np.float32))
    return np.asarray(values).astype(dtype)


def is_int(dtype):
    return dtype != "bf16" and np.issubdtype(np.dtype(dtype), np.integer)


# ---- Reduce* ----------------------------------------------------------------------------


def reduce_ref(op, x, axes, keepdims, noop, dtype):
    """numpy reference; axes None = all (or none with noop)."""
    if axes is None or len(axes) == 0:
        ax = () if noop else tuple(range(x.ndim))
    else:
        ax = tuple(a % x.ndim for a in axes)
    kd = bool(keepdims)
    if dtype != "bf16" and np.dtype(dtype) == np.bool_:
        f = np.logical_or.reduce if op == "ReduceMax" else np.logical_and.reduce
        return f(x, axis=ax, keepdims=kd)
    integer = is_int(dtype)
    if op in ("ReduceMax", "ReduceMin"):
        if integer:
            info = np.iinfo(np.dtype(dtype))
            init = info.min if op == "ReduceMax" else info.max
        else:
            init = -np.inf if op == "ReduceMax" else np.inf
        f = np.max if op == "ReduceMax" else np.min
        return f(x, axis=ax, keepdims=kd, initial=init)
    if integer:
        acc = np.int64 if np.issubdtype(np.dtype(dtype), np.signedinteger) else np.uint64
        xi = x.astype(acc)
        with np.errstate(all="ignore"):
            if op == "ReduceProd":
                return np.prod(xi, axis=ax, keepdims=kd)
            if op == "ReduceL1":
                return np.sum(np.abs(xi), axis=ax, keepdims=kd)
            if op == "ReduceSumSquare":
                return np.sum(xi * xi, axis=ax, keepdims=kd)
            if op == "ReduceSum":
                return np.sum(xi, axis=ax, keepdims=kd)
            s = np.sum(xi * xi if op == "ReduceL2" else xi, axis=ax, keepdims=kd).astype(np.float64)
            if op == "ReduceL2":
                return np.trunc(np.sqrt(s))
            if op == "ReduceLogSum":
                return np.trunc(np.log(s))
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        if op == "ReduceSum":
            return np.sum(x, axis=ax, keepdims=kd)
        if op == "ReduceMean":
            return np.mean(x, axis=ax, keepdims=kd)
        if op == "ReduceProd":
            return np.prod(x, axis=ax, keepdims=kd)
        if op == "ReduceL1":
            return np.sum(np.abs(x), axis=ax, keepdims=kd)
        if op == "ReduceL2":
            return np.sqrt(np.sum(x * x, axis=ax, keepdims=kd))
        if op == "ReduceSumSquare":
            return np.sum(x * x, axis=ax, keepdims=kd)
        if op == "ReduceLogSum":
            return np.log(np.sum(x, axis=ax, keepdims=kd))
        if op == "ReduceLogSumExp":
            m = np.max(x, axis=ax, keepdims=True, initial=-np.inf)
            m = np.where(np.isinf(m), 0.0, m)
            r = np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True)) + m
            return r if kd else np.squeeze(r, axis=ax)
    raise ValueError(op)


def reduce_case(root, name, op, shape, axes, keepdims=1, dtype=np.float32, opset=13, noop=None, x=None):
    if x is None:
        x = rand(shape, dtype)
        if op == "ReduceLogSum" and not is_int(dtype):
            x = np.abs(x) + (0.1 if dtype != "bf16" else 0.125)
            if dtype == "bf16":
                x = bf16_round(x)
            else:
                x = x.astype(dtype)
        if op == "ReduceLogSum" and is_int(dtype):
            x = (np.abs(x.astype(np.int64)) + 1).astype(dtype)
        if op == "ReduceProd" and not is_int(dtype):
            x = (RNG.random(shape) + 0.5).astype(np.float32 if dtype == "bf16" else dtype)
            if dtype == "bf16":
                x = bf16_round(x)
    axes_input = opset >= (13 if op == "ReduceSum" else 18)
    attrs = {"keepdims": keepdims}
    if noop is not None:
        attrs["noop_with_empty_axes"] = noop
    inputs, inits = ["x"], []
    if axes is not None:
        if axes_input:
            inputs.append("axes")
            inits.append(("axes", np.array(axes, dtype=np.int64)))
        else:
            attrs["axes"] = axes
    y = reduce_ref(op, x, axes, keepdims, noop, dtype)
    node = helper.make_node(op, inputs, ["y"], **attrs)
    xv = BF16(x) if dtype == "bf16" else x
    write_case(root, name, [node], [("x", xv)], [("y", wrap(y, dtype))], opset, inits)


REDUCE_OPS = ["ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
              "ReduceSumSquare"]


def reduce_cases(root):
    for op in REDUCE_OPS:
        s = op[6:].lower()
        # Attribute form (opset 11 and 1), input form (18), layouts.
        reduce_case(root, "hc_reduce_%s_o1" % s, op, (3, 4, 5), [1], opset=1)
        reduce_case(root, "hc_reduce_%s_o11_neg" % s, op, (3, 4, 5), [-1, 0], keepdims=0, opset=11)
        reduce_case(root, "hc_reduce_%s_o13_all" % s, op, (3, 4, 5), None, keepdims=0, opset=13)
        reduce_case(root, "hc_reduce_%s_o18_inner" % s, op, (6, 7, 9), [2], opset=18)
        reduce_case(root, "hc_reduce_%s_o18_strided" % s, op, (5, 700), [0], keepdims=0, opset=18)
        reduce_case(root, "hc_reduce_%s_o18_mixed" % s, op, (3, 4, 5, 6), [0, 2], opset=18)
        reduce_case(root, "hc_reduce_%s_o18_noaxes" % s, op, (2, 3, 4), None, keepdims=1, opset=18)
        reduce_case(root, "hc_reduce_%s_o18_noop" % s, op, (2, 3, 4), [], opset=18, noop=1)
        reduce_case(root, "hc_reduce_%s_o18_empty_axes_all" % s, op, (2, 3), [], keepdims=0, opset=18, noop=0)
        # dtypes
        reduce_case(root, "hc_reduce_%s_f64" % s, op, (4, 33), [1], dtype=np.float64, opset=13)
        reduce_case(root, "hc_reduce_%s_f16" % s, op, (4, 9, 3), [1], dtype=np.float16, opset=13)
        reduce_case(root, "hc_reduce_%s_bf16" % s, op, (4, 9, 3), [0, 2], dtype="bf16", opset=13)
        reduce_case(root, "hc_reduce_%s_i32" % s, op, (5, 6, 7), [1], dtype=np.int32, opset=13)
        reduce_case(root, "hc_reduce_%s_i64" % s, op, (5, 6), [1], keepdims=0, dtype=np.int64, opset=18)
        reduce_case(root, "hc_reduce_%s_u32" % s, op, (5, 6), [0], dtype=np.uint32, opset=13)
        reduce_case(root, "hc_reduce_%s_u64" % s, op, (5, 6), None, keepdims=0, dtype=np.uint64, opset=13)
        # An empty reduced dim: the identity of the reduction.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reduce_case(root, "hc_reduce_%s_empty_set" % s, op, (3, 0, 4), [1], keepdims=0, opset=18)
    for op in ("ReduceMax", "ReduceMin"):
        s = op[6:].lower()
        reduce_case(root, "hc_reduce_%s_i8" % s, op, (4, 5, 6), [2], dtype=np.int8, opset=12)
        reduce_case(root, "hc_reduce_%s_u8" % s, op, (4, 5, 6), [0], dtype=np.uint8, opset=18)
        reduce_case(root, "hc_reduce_%s_i8_empty" % s, op, (4, 0), [1], dtype=np.int8, opset=18)
        reduce_case(root, "hc_reduce_%s_bool" % s, op, (4, 5, 6), [1], dtype=np.bool_, opset=20)
        reduce_case(root, "hc_reduce_%s_bool_strided" % s, op, (5, 600), [0], dtype=np.bool_, opset=20)
        x = rand((3, 8), np.float32)
        x[1, 3] = np.nan
        x[2, 0] = np.inf
        reduce_case(root, "hc_reduce_%s_nan" % s, op, None, [1], x=x, opset=13)
    # ReduceLogSumExp: large values (stability), -inf rows, +inf.
    x = (rand((3, 50), np.float32) * 50 + 1000).astype(np.float32)
    reduce_case(root, "hc_reduce_logsumexp_large", "ReduceLogSumExp", None, [1], x=x, opset=13)
    x = (rand((50, 3), np.float32) * 50 - 1000).astype(np.float32)
    reduce_case(root, "hc_reduce_logsumexp_large_strided", "ReduceLogSumExp", None, [0], x=x, opset=13)
    x = np.full((2, 4), -np.inf, dtype=np.float32)
    x[1, 2] = np.inf
    reduce_case(root, "hc_reduce_logsumexp_inf", "ReduceLogSumExp", None, [1], x=x, opset=13)
    x = (rand((4, 20), np.float64) * 300).astype(np.float64)
    reduce_case(root, "hc_reduce_logsumexp_f64_large", "ReduceLogSumExp", None, [1], dtype=np.float64, x=x,
                opset=18)
    # ReduceSum / ReduceMean through the shared reducer: noop copy, axes input, strided.
    reduce_case(root, "hc_reduce_sum_noop_o13", "ReduceSum", (2, 3), [], opset=13, noop=1)
    reduce_case(root, "hc_reduce_mean_o18_strided", "ReduceMean", (300, 7), [0], keepdims=0, opset=18)
    reduce_case(root, "hc_reduce_sum_i64_mixed", "ReduceSum", (3, 4, 5, 6), [1, 3], dtype=np.int64, opset=13)


# ---- ArgMax / ArgMin ---------------------------------------------------------------------


def arg_ref(op, x, axis, keepdims, last):
    f = np.argmax if op == "ArgMax" else np.argmin
    if last:
        flipped = np.flip(x, axis)
        r = x.shape[axis] - 1 - f(flipped, axis=axis)
    else:
        r = f(x, axis=axis)
    if keepdims:
        r = np.expand_dims(r, axis)
    return r.astype(np.int64)


def arg_case(root, name, op, x, axis=0, keepdims=1, last=None, opset=13):
    attrs = {"axis": axis, "keepdims": keepdims}
    if last is not None:
        attrs["select_last_index"] = last
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    xs = x.values if isinstance(x, BF16) else x
    write_case(root, name, [node], [("x", x)], [("y", arg_ref(op, xs, axis, keepdims, bool(last)))], opset)


def arg_cases(root):
    for op in ("ArgMax", "ArgMin"):
        s = op.lower()
        ties = RNG.integers(0, 3, size=(4, 6, 5)).astype(np.float32)
        arg_case(root, "hc_%s_o1" % s, op, ties, axis=1, opset=1)
        arg_case(root, "hc_%s_o11_neg" % s, op, ties, axis=-1, keepdims=0, opset=11)
        for last in (0, 1):
            arg_case(root, "hc_%s_ties_inner_last%d" % (s, last), op, ties, axis=2, last=last, opset=12)
            arg_case(root, "hc_%s_ties_outer_last%d" % (s, last), op, ties, axis=0, keepdims=0, last=last)
            big = RNG.integers(0, 5, size=(3, 700)).astype(np.int32)
            arg_case(root, "hc_%s_i32_strided_last%d" % (s, last), op, big, axis=0, last=last)
            x = rand((3, 7), np.float32)
            x[0, 2] = x[0, 5] = np.nan
            x[1, 6] = np.nan
            arg_case(root, "hc_%s_nan_last%d" % (s, last), op, x, axis=1, last=last)
        arg_case(root, "hc_%s_axis_size1" % s, op, rand((3, 1, 4), np.float32), axis=1, keepdims=0)
        for dt in (np.float16, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int64, np.uint64, np.uint32):
            arg_case(root, "hc_%s_%s" % (s, np.dtype(dt).name), op, rand((4, 5, 6), dt), axis=1)
        arg_case(root, "hc_%s_bf16" % s, op, BF16(rand((4, 5, 6), np.float32)), axis=2, keepdims=0)
        x = np.array([[-np.inf, -np.inf], [np.inf, np.inf]], dtype=np.float32)
        arg_case(root, "hc_%s_inf" % s, op, x, axis=1, last=1)
        arg_case(root, "hc_%s_inf_first" % s, op, x, axis=1, last=0)


# ---- CumSum ---------------------------------------------------------------------------------


def cumsum_ref(x, axis, exclusive, reverse):
    acc = np.float64 if np.issubdtype(x.dtype, np.floating) else x.dtype
    y = np.flip(x, axis) if reverse else x
    with np.errstate(all="ignore"):
        c = np.cumsum(y.astype(acc), axis=axis, dtype=acc)
    if exclusive:
        c = np.concatenate([np.zeros_like(np.take(c, [0], axis=axis)), np.delete(c, -1, axis=axis)], axis=axis)
    return np.flip(c, axis) if reverse else c


def cumsum_case(root, name, x, axis, exclusive=0, reverse=0, opset=14, axis_dtype=np.int64, axis_1d=False):
    xs = x.values if isinstance(x, BF16) else x
    y = cumsum_ref(xs, axis, exclusive, reverse)
    node = helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)
    a = np.array([axis] if axis_1d else axis, dtype=axis_dtype)
    out = BF16(y) if isinstance(x, BF16) else y.astype(xs.dtype)
    write_case(root, name, [node], [("x", x)], [("y", out)], opset, [("axis", a)])


def cumsum_cases(root):
    for ex in (0, 1):
        for rev in (0, 1):
            t = "ex%d_rev%d" % (ex, rev)
            cumsum_case(root, "hc_cumsum_rows_" + t, rand((3, 4, 17), np.float32), -1, ex, rev)
            cumsum_case(root, "hc_cumsum_strided_" + t, rand((3, 6, 700), np.float32), 1, ex, rev)
            cumsum_case(root, "hc_cumsum_i64_" + t, rand((5, 6), np.int64), 0, ex, rev, opset=11, axis_dtype=np.int32)
    cumsum_case(root, "hc_cumsum_f16", rand((4, 30), np.float16), 1, 0, 0)
    cumsum_case(root, "hc_cumsum_bf16", BF16(rand((4, 30), np.float32)), 0, 1, 0)
    cumsum_case(root, "hc_cumsum_f64_axis1d", rand((4, 5, 6), np.float64), 2, 0, 1, axis_1d=True)
    cumsum_case(root, "hc_cumsum_i32_wrap", (rand((3, 9), np.int32) * 100000000).astype(np.int32), 1, 0, 0)
    cumsum_case(root, "hc_cumsum_u32", rand((3, 9), np.uint32), 0, 1, 1)
    cumsum_case(root, "hc_cumsum_u64", rand((3, 9), np.uint64), 1, 0, 0)
    cumsum_case(root, "hc_cumsum_empty", np.zeros((0, 4), np.float32), 1, 0, 0)


# ---- TopK -----------------------------------------------------------------------------------


def topk_ref(x, k, axis, largest):
    """Best first, ties by lower index, NaN last."""
    xm = np.moveaxis(x, axis, -1)
    flat = xm.reshape(-1, xm.shape[-1])
    vals = np.empty((flat.shape[0], k), dtype=x.dtype)
    idxs = np.empty((flat.shape[0], k), dtype=np.int64)
    for r, row in enumerate(flat):
        def key(i):
            v = row[i]
            nan = bool(np.issubdtype(row.dtype, np.floating) and np.isnan(v))
            num = 0 if nan else (-int(v) if is_int(row.dtype) else -float(v)) if largest else \
                (int(v) if is_int(row.dtype) else float(v))
            return (nan, num, i)
        order = sorted(range(len(row)), key=key)[:k]
        vals[r] = row[order]
        idxs[r] = order
    shape = xm.shape[:-1] + (k,)
    return np.moveaxis(vals.reshape(shape), -1, axis), np.moveaxis(idxs.reshape(shape), -1, axis)


def topk_case(root, name, x, k, axis=-1, largest=None, sorted_=None, opset=11):
    attrs = {"axis": axis}
    if largest is not None:
        attrs["largest"] = largest
    if sorted_ is not None:
        attrs["sorted"] = sorted_
    inits = []
    inputs = ["x"]
    if opset < 10:
        attrs["k"] = k
    else:
        inputs.append("k")
        inits.append(("k", np.array([k], dtype=np.int64)))
    xs = x.values if isinstance(x, BF16) else x
    v, i = topk_ref(xs, k, axis, largest is None or largest == 1)
    node = helper.make_node("TopK", inputs, ["values", "indices"], **attrs)
    write_case(root, name, [node], [("x", x)], [("values", BF16(v) if isinstance(x, BF16) else v), ("indices", i)],
               opset, inits)


def topk_cases(root):
    topk_case(root, "hc_topk_o1", rand((3, 10), np.float32), 4, opset=1)
    topk_case(root, "hc_topk_o10_axis0", rand((9, 5), np.float32), 3, axis=0, opset=10)
    ties = RNG.integers(0, 4, size=(4, 5, 12)).astype(np.float32)
    topk_case(root, "hc_topk_ties_largest", ties, 6, axis=-1)
    topk_case(root, "hc_topk_ties_smallest", ties, 6, axis=2, largest=0)
    topk_case(root, "hc_topk_ties_middle_axis", ties, 3, axis=1, largest=1, sorted_=1)
    topk_case(root, "hc_topk_k_eq_n", rand((3, 17), np.float32), 17)
    topk_case(root, "hc_topk_k1", rand((5, 33), np.float32), 1, largest=0)
    topk_case(root, "hc_topk_k0", rand((2, 5), np.float32), 0)
    topk_case(root, "hc_topk_big", rand((3, 2000), np.float32), 37)
    topk_case(root, "hc_topk_big_smallest_strided", rand((1000, 3), np.float32), 100, axis=0, largest=0)
    topk_case(root, "hc_topk_unsorted", rand((3, 40), np.float32), 7, sorted_=0)
    x = rand((2, 9), np.float32)
    x[0, 1] = x[0, 4] = np.nan
    x[1, 8] = np.nan
    topk_case(root, "hc_topk_nan_largest", x, 8)
    topk_case(root, "hc_topk_nan_smallest", x, 8, largest=0)
    for dt in (np.float16, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.int64, np.uint32,
               np.uint64):
        topk_case(root, "hc_topk_%s" % np.dtype(dt).name, rand((3, 4, 25), dt), 5, axis=2)
        topk_case(root, "hc_topk_%s_smallest" % np.dtype(dt).name, rand((25, 3), dt), 4, axis=0, largest=0)


# ---- Softmax family ------------------------------------------------------------------------


def coerce(x, axis, opset):
    """The (outer, n, inner) view and back for the opset's semantics."""
    if opset < 13:
        shape = x.shape
        a = axis % x.ndim
        return x.reshape(int(np.prod(shape[:a])), -1), 1, lambda y: y.reshape(shape)
    return x, axis, lambda y: y


def log_softmax_ref(x, axis, opset):
    v, ax, back = coerce(x.astype(np.float64), axis, opset)
    m = np.max(v, axis=ax, keepdims=True)
    return back(v - m - np.log(np.sum(np.exp(v - m), axis=ax, keepdims=True)))


def hardmax_ref(x, axis, opset):
    v, ax, back = coerce(x, axis, opset)
    am = np.expand_dims(np.argmax(v, axis=ax), ax)
    y = np.zeros_like(v)
    np.put_along_axis(y, am, 1, axis=ax)
    return back(y)


def sm_case(root, name, op, x, axis, opset):
    attrs = {} if axis is None else {"axis": axis}
    ax = axis if axis is not None else (1 if opset < 13 else -1)
    xs = x.values if isinstance(x, BF16) else x
    y = (log_softmax_ref if op == "LogSoftmax" else hardmax_ref)(xs, ax, opset)
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    out = BF16(y) if isinstance(x, BF16) else y.astype(xs.dtype)
    write_case(root, name, [node], [("x", x)], [("y", out)], opset)


def softmax_family_cases(root):
    for op in ("LogSoftmax", "Hardmax"):
        s = op.lower()
        make = (lambda shape, dt=np.float32: rand(shape, dt)) if op == "LogSoftmax" else \
            (lambda shape, dt=np.float32: RNG.integers(0, 4, size=shape).astype(dt))
        sm_case(root, "hc_%s_o1_default" % s, op, make((2, 3, 4)), None, 1)
        sm_case(root, "hc_%s_o11_axis0" % s, op, make((2, 3, 4)), 0, 11)
        sm_case(root, "hc_%s_o11_axis2" % s, op, make((2, 3, 4)), 2, 11)
        sm_case(root, "hc_%s_o13_axis1_strided" % s, op, make((3, 7, 300)), 1, 13)
        sm_case(root, "hc_%s_o13_axis0" % s, op, make((6, 5)), 0, 13)
        sm_case(root, "hc_%s_f16" % s, op, make((3, 20), np.float16), -1, 13)
        sm_case(root, "hc_%s_f64_strided" % s, op, make((3, 4, 5), np.float64), 1, 13)
        sm_case(root, "hc_%s_bf16" % s, op, BF16(make((3, 20))), -1, 13)
        sm_case(root, "hc_%s_bf16_strided" % s, op, BF16(make((3, 6, 4))), 1, 13)
    x = (rand((3, 20), np.float32) * 30 + 10000).astype(np.float32)
    sm_case(root, "hc_logsoftmax_large", "LogSoftmax", x, -1, 13)
    x = np.array([[1, np.nan, 3, np.nan], [2, 2, 1, 0]], dtype=np.float32)
    sm_case(root, "hc_hardmax_nan", "Hardmax", x, 1, 13)
    sm_case(root, "hc_hardmax_nan_strided", "Hardmax", np.ascontiguousarray(x.T), 0, 13)


# ---- normalisations ------------------------------------------------------------------------


def instance_norm_ref(x, s, b, eps):
    x = x.astype(np.float64)
    ax = tuple(range(2, x.ndim))
    m = x.mean(axis=ax, keepdims=True)
    v = x.var(axis=ax, keepdims=True)
    sh = (1, -1) + (1,) * (x.ndim - 2)
    return (x - m) / np.sqrt(v + eps) * s.astype(np.float64).reshape(sh) + b.astype(np.float64).reshape(sh)


def group_norm_ref(x, s, b, G, eps, per_channel):
    x64 = x.astype(np.float64)
    N, C = x.shape[:2]
    g = x64.reshape(N, G, -1)
    m = g.mean(axis=2, keepdims=True)
    v = g.var(axis=2, keepdims=True)
    y = ((g - m) / np.sqrt(v + eps)).reshape(x.shape)
    if not per_channel:
        s = np.repeat(s, C // G)
        b = np.repeat(b, C // G)
    sh = (1, -1) + (1,) * (x.ndim - 2)
    return y * s.astype(np.float64).reshape(sh) + b.astype(np.float64).reshape(sh)


def lrn_ref(x, size, alpha, beta, bias):
    x64 = x.astype(np.float64)
    C = x.shape[1]
    sq = np.zeros_like(x64)
    for c in range(C):
        lo, hi = max(0, c - (size - 1) // 2), min(C - 1, c + size - 1 - (size - 1) // 2)
        sq[:, c] = np.sum(x64[:, lo:hi + 1] ** 2, axis=1)
    return x64 / (bias + alpha / size * sq) ** beta


def mvn_ref(x, axes):
    x64 = x.astype(np.float64)
    ax = tuple(axes)
    m = x64.mean(axis=ax, keepdims=True)
    sd = np.sqrt(((x64 - m) ** 2).mean(axis=ax, keepdims=True))
    return (x64 - m) / (sd + 1e-9)


def lp_ref(x, axis, p):
    x64 = x.astype(np.float64)
    n = np.sum(np.abs(x64), axis=axis, keepdims=True) if p == 1 else \
        np.sqrt(np.sum(x64 * x64, axis=axis, keepdims=True))
    return x64 / n


def cast_like(y, x):
    return BF16(y) if isinstance(x, BF16) else y.astype(x.dtype)


def vals(x):
    return x.values if isinstance(x, BF16) else x


def mk(shape, dt):
    return BF16(rand(shape, np.float32)) if dt == "bf16" else rand(shape, dt)


def norm_cases(root):
    # InstanceNormalization
    for name, shape, dt, opset, eps in (("o6", (2, 3, 4, 5), np.float32, 6, 1e-5),
                                        ("o1", (2, 3, 7), np.float32, 1, 1e-3),
                                        ("f16", (2, 4, 9), np.float16, 6, 1e-5),
                                        ("f64_5d", (1, 3, 2, 3, 4), np.float64, 6, 1e-2),
                                        ("bf16", (2, 3, 8), "bf16", 22, 1e-5),
                                        ("big", (1, 2, 3000), np.float32, 6, 1e-5)):
        x, s, b = mk(shape, dt), mk((shape[1],), dt), mk((shape[1],), dt)
        node = helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=eps)
        y = instance_norm_ref(vals(x), vals(s), vals(b), eps)
        write_case(root, "hc_instancenorm_" + name, [node], [("x", x), ("s", s), ("b", b)], [("y", cast_like(y, x))],
                   opset)
    # GroupNormalization: opset 18 (per-group scale/bias) and 21 (per-channel, stash_type).
    for name, shape, G, dt, opset, stash in (("o18", (2, 6, 3, 4), 3, np.float32, 18, None),
                                             ("o18_g1", (2, 4, 5), 1, np.float32, 18, None),
                                             ("o18_f16", (2, 4, 5), 2, np.float16, 18, None),
                                             ("o21", (2, 6, 3, 4), 3, np.float32, 21, None),
                                             ("o21_gc", (2, 6, 7), 6, np.float64, 21, 11),
                                             ("o21_bf16", (2, 4, 6), 2, "bf16", 21, 1)):
        C = shape[1]
        pc = opset >= 21
        x, s, b = mk(shape, dt), mk((C if pc else G,), dt), mk((C if pc else G,), dt)
        attrs = {"num_groups": G, "epsilon": 1e-4}
        if stash is not None:
            attrs["stash_type"] = stash
        node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], **attrs)
        y = group_norm_ref(vals(x), vals(s), vals(b), G, 1e-4, pc)
        write_case(root, "hc_groupnorm_" + name, [node], [("x", x), ("s", s), ("b", b)], [("y", cast_like(y, x))],
                   opset)
    # LRN
    for name, shape, size, dt, opset, a, be, bi in (("o1_size3", (2, 5, 4, 4), 3, np.float32, 1, 1e-4, 0.75, 1.0),
                                                    ("size4", (1, 6, 3, 5), 4, np.float32, 13, 0.01, 0.5, 2.0),
                                                    ("size_gt_c", (2, 3, 7), 7, np.float32, 13, 0.1, 0.75, 1.0),
                                                    ("f64", (1, 4, 2, 3), 3, np.float64, 13, 1e-3, 0.6, 1.0),
                                                    ("f16", (1, 4, 10), 2, np.float16, 13, 0.2, 0.75, 1.0),
                                                    ("bf16", (1, 4, 10), 5, "bf16", 13, 0.2, 0.75, 1.0),
                                                    ("big_plane", (1, 3, 30, 40), 3, np.float32, 13, 0.05, 0.75, 1.0)):
        x = mk(shape, dt)
        node = helper.make_node("LRN", ["x"], ["y"], size=size, alpha=a, beta=be, bias=bi)
        write_case(root, "hc_lrn_" + name, [node], [("x", x)], [("y", cast_like(lrn_ref(vals(x), size, a, be, bi), x))],
                   opset)
    # MeanVarianceNormalization
    for name, shape, axes, dt, opset in (("o9_default", (2, 3, 4, 5), None, np.float32, 9),
                                         ("axes1", (3, 4, 5), [1], np.float32, 13),
                                         ("axes_last", (3, 4, 50), [2], np.float32, 13),
                                         ("axes_first_strided", (20, 700), [0], np.float32, 13),
                                         ("axes_02", (3, 4, 5), [0, 2], np.float64, 13),
                                         ("f16", (2, 3, 4, 5), None, np.float16, 13),
                                         ("bf16", (2, 3, 4, 5), [1, 3], "bf16", 13)):
        x = mk(shape, dt)
        attrs = {} if axes is None else {"axes": axes}
        node = helper.make_node("MeanVarianceNormalization", ["x"], ["y"], **attrs)
        y = mvn_ref(vals(x), axes if axes is not None else [0, 2, 3])
        write_case(root, "hc_mvn_" + name, [node], [("x", x)], [("y", cast_like(y, x))], opset)
    # LpNormalization
    for name, shape, axis, p, dt, opset in (("default", (3, 4, 5), None, None, np.float32, 1),
                                            ("p1_axis1", (3, 4, 5), 1, 1, np.float32, 1),
                                            ("p2_axis0_strided", (10, 600), 0, 2, np.float32, 1),
                                            ("p1_neg", (3, 4, 5), -2, 1, np.float64, 1),
                                            ("f16", (3, 16), 1, 2, np.float16, 1),
                                            ("bf16", (3, 16), -1, 1, "bf16", 22),
                                            ("o22", (2, 3, 4), 2, 2, np.float32, 22)):
        x = mk(shape, dt)
        attrs = {}
        if axis is not None:
            attrs["axis"] = axis
        if p is not None:
            attrs["p"] = p
        node = helper.make_node("LpNormalization", ["x"], ["y"], **attrs)
        y = lp_ref(vals(x), -1 if axis is None else axis, 2 if p is None else p)
        write_case(root, "hc_lpnorm_" + name, [node], [("x", x)], [("y", cast_like(y, x))], opset)


def batchnorm_training_cases(root):
    """BatchNormalization with training_mode=1 (opsets 14 and 15)."""
    for name, shape, dt, opset, outs, mom in (("o15", (2, 3, 4, 5), np.float32, 15, 3, 0.9),
                                              ("o14_2d", (6, 4), np.float32, 14, 3, 0.7),
                                              ("f64_3d", (3, 2, 7), np.float64, 15, 3, 0.5),
                                              ("f16_mean_only", (2, 3, 9), np.float16, 15, 2, 0.9),
                                              ("y_only", (2, 3, 4), np.float32, 15, 1, 0.9)):
        C = shape[1]
        x, s, b, m = mk(shape, dt), mk((C,), dt), mk((C,), dt), mk((C,), dt)
        v = (RNG.random(C) + 0.5).astype(dt)
        x64 = x.astype(np.float64)
        ax = tuple(i for i in range(len(shape)) if i != 1)
        bm, bv = x64.mean(axis=ax), x64.var(axis=ax)
        sh = (1, C) + (1,) * (len(shape) - 2)
        y = (x64 - bm.reshape(sh)) / np.sqrt(bv.reshape(sh) + 1e-5) * s.astype(np.float64).reshape(sh) + \
            b.astype(np.float64).reshape(sh)
        rm = m.astype(np.float64) * mom + bm * (1 - mom)
        rv = v.astype(np.float64) * mom + bv * (1 - mom)
        outputs = [("y", y.astype(dt)), ("rm", rm.astype(dt)), ("rv", rv.astype(dt))][:outs]
        node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], [o for o, _ in outputs],
                                training_mode=1, momentum=mom)
        write_case(root, "hc_batchnorm_training_" + name, [node], [("x", x), ("s", s), ("b", b), ("m", m), ("v", v)],
                   outputs, opset)


def main():
    root = casekit.out_dir(__doc__)
    reduce_cases(root)
    arg_cases(root)
    cumsum_cases(root)
    topk_cases(root)
    softmax_family_cases(root)
    norm_cases(root)
    batchnorm_training_cases(root)


if __name__ == "__main__":
    main()
