#!/usr/bin/python3
"""Generates ONNX backend-style test folders for Gemm, MatMul,
BatchNormalization, LayerNormalization, Softmax, ReduceSum and ReduceMean
cases that the ONNX suite does not cover (integer dtypes, batch
broadcasting, 1-D operands, float16/bfloat16, odd tile edges, old opsets,
strided reductions...). Expected outputs are computed with numpy.

usage: make_gemm_norm_cases.py OUTPUT_DIR
then:  harness-test OUTPUT_DIR/*
"""
import warnings

import numpy as np
from onnx import TensorProto, helper

import casekit
from casekit import BF16, bf16_round

RNG = np.random.default_rng(1234)


def write_case(root, name, nodes, inputs, outputs, opset, initializers=None):
    """inputs/outputs: lists of (name, value); initializers: list of (name, value)."""
    casekit.write_case(root, name, nodes, inputs, outputs, opset, initializers or (),
                       producer="make_gemm_norm_cases")


def randf(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def randi(lo, hi, *shape, dtype=np.int32):
    return RNG.integers(lo, hi, size=shape).astype(dtype)


# ---- Gemm / MatMul -----------------------------------------------------------


def gemm_ref(a, b, c, alpha, beta, ta, tb, out_dtype):
    a = a.T if ta else a
    b = b.T if tb else b
    if np.issubdtype(out_dtype, np.integer):
        acc = a.astype(np.int64) @ b.astype(np.int64)
        if alpha == 1.0 and (c is None or beta in (0.0, 1.0)):
            y = acc + (c.astype(np.int64) if c is not None and beta == 1.0 else 0)
            return y.astype(out_dtype)
        y = acc.astype(np.float64) * alpha + (c.astype(np.float64) * beta if c is not None else 0.0)
        return np.trunc(y).astype(out_dtype)
    y = alpha * (a.astype(np.float64) @ b.astype(np.float64))
    if c is not None:
        y = y + beta * c.astype(np.float64)
    return y.astype(out_dtype)


def gemm_case(root, name, M, K, N, ta=0, tb=0, c_shape=None, alpha=1.0, beta=1.0, dtype=np.float32, opset=13,
              extra_attrs=None):
    if np.issubdtype(dtype, np.integer):
        lo = 0 if np.issubdtype(dtype, np.unsignedinteger) else -9
        a = randi(lo, 10, *((K, M) if ta else (M, K)), dtype=dtype)
        b = randi(lo, 10, *((N, K) if tb else (K, N)), dtype=dtype)
        c = randi(lo, 10, *c_shape, dtype=dtype) if c_shape is not None else None
    else:
        a = randf(*((K, M) if ta else (M, K)), dtype=dtype)
        b = randf(*((N, K) if tb else (K, N)), dtype=dtype)
        c = randf(*c_shape, dtype=dtype) if c_shape is not None else None
    attrs = dict(alpha=alpha, beta=beta, transA=ta, transB=tb)
    attrs.update(extra_attrs or {})
    ins = [("a", a), ("b", b)] + ([("c", c)] if c is not None else [])
    node = helper.make_node("Gemm", [n for n, _ in ins], ["y"], **attrs)
    y = gemm_ref(a, b, c, alpha, beta, ta, tb, np.dtype(dtype))
    write_case(root, name, [node], ins, [("y", y)], opset)


def matmul_case(root, name, a_shape, b_shape, dtype=np.float32, opset=13, b_const=False):
    if np.issubdtype(dtype, np.integer):
        a, b = randi(-9, 10, *a_shape, dtype=dtype), randi(-9, 10, *b_shape, dtype=dtype)
        y = np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(dtype)
    else:
        a, b = randf(*a_shape, dtype=dtype), randf(*b_shape, dtype=dtype)
        y = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(dtype)
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    if b_const:
        write_case(root, name, [node], [("a", a)], [("y", y)], opset, initializers=[("b", b)])
    else:
        write_case(root, name, [node], [("a", a), ("b", b)], [("y", y)], opset)


def matmul_bf16_case(root, name, a_shape, b_shape):
    # Small integers over 8 are exact in bfloat16, and so are their products'
    # float32 sums; the result is rounded once to bfloat16.
    a = RNG.integers(-8, 9, size=a_shape).astype(np.float32) / 8
    b = RNG.integers(-8, 9, size=b_shape).astype(np.float32) / 8
    y = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    write_case(root, name, [node], [("a", BF16(a)), ("b", BF16(b))], [("y", BF16(y))], 13)


# ---- normalisation -------------------------------------------------------------


def batchnorm_case(root, name, x_shape, dtype=np.float32, opset=15, spatial=None, eps=1e-5):
    C = x_shape[1] if len(x_shape) > 1 else 1
    pshape = [C] if spatial in (None, 1) else [C] + list(x_shape[2:])
    x = randf(*x_shape, dtype=dtype)
    s, bias, mean = randf(*pshape, dtype=dtype), randf(*pshape, dtype=dtype), randf(*pshape, dtype=dtype)
    var = (RNG.random(pshape) + 0.5).astype(dtype)
    bshape = [1, -1] + [1] * (len(x_shape) - 2) if spatial in (None, 1) else [1] + pshape
    if len(x_shape) == 1:
        bshape = [1]
    f = lambda v: v.astype(np.float64).reshape(bshape)
    y = (x.astype(np.float64) - f(mean)) / np.sqrt(f(var) + eps) * f(s) + f(bias)
    attrs = {"epsilon": eps}
    if spatial is not None:
        attrs["spatial"] = spatial
    if opset < 7:
        attrs["is_test"] = 1
    node = helper.make_node("BatchNormalization", ["x", "s", "bias", "mean", "var"], ["y"], **attrs)
    ins = [("x", x), ("s", s), ("bias", bias), ("mean", mean), ("var", var)]
    write_case(root, name, [node], ins, [("y", y.astype(dtype))], opset)


def layernorm_ref(x, scale, bias, axis, eps, stat_dtype):
    x64 = x.astype(stat_dtype).astype(np.float64)
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x64.mean(axis=axes, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=axes, keepdims=True)
    inv = 1.0 / np.sqrt(var + eps)
    y = (x64 - mean) * inv * scale.astype(np.float64)
    if bias is not None:
        y = y + bias.astype(np.float64)
    return y, mean, inv


def layernorm_case(root, name, x_shape, axis, scale_shape, bias_shape, dtype=np.float32, stash_type=None,
                   outputs=("y", "mean", "inv"), eps=1e-5):
    x = randf(*x_shape, dtype=dtype)
    scale = randf(*scale_shape, dtype=dtype)
    bias = randf(*bias_shape, dtype=dtype) if bias_shape is not None else None
    stat_dtype = np.float64 if stash_type == TensorProto.DOUBLE else np.float32
    y, mean, inv = layernorm_ref(x, scale, bias, axis, eps, stat_dtype)
    attrs = {"axis": axis, "epsilon": eps}
    if stash_type is not None:
        attrs["stash_type"] = stash_type
    ins = [("x", x), ("scale", scale)] + ([("bias", bias)] if bias is not None else [])
    node = helper.make_node("LayerNormalization", [n for n, _ in ins], list(outputs), **attrs)
    vals = {"y": y.astype(dtype), "mean": mean.astype(stat_dtype), "inv": inv.astype(stat_dtype)}
    write_case(root, name, [node], ins, [(o, vals[o]) for o in outputs], 17)


# ---- Softmax ----------------------------------------------------------------------


def softmax_ref(x, axis, opset):
    x64 = x.astype(np.float64)
    if opset < 13:
        axis = axis % x.ndim
        rows = int(np.prod(x.shape[:axis], dtype=np.int64))
        x2 = x64.reshape(rows, -1)
        e = np.exp(x2 - x2.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)).reshape(x.shape)
    e = np.exp(x64 - x64.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_case(root, name, x_shape, axis, opset, dtype=np.float32, scale=1.0):
    x = (randf(*x_shape) * scale).astype(dtype)
    attrs = {} if axis is None else {"axis": axis}
    node = helper.make_node("Softmax", ["x"], ["y"], **attrs)
    ax = axis if axis is not None else (1 if opset < 13 else -1)
    write_case(root, name, [node], [("x", x)], [("y", softmax_ref(x, ax, opset).astype(dtype))], opset)


# ---- ReduceSum / ReduceMean ---------------------------------------------------------


def reduce_case(root, name, op, x_shape, axes, keepdims=1, dtype=np.float32, opset=13, noop=None, axes_as_input=None):
    if np.issubdtype(dtype, np.integer):
        lo = 0 if np.issubdtype(dtype, np.unsignedinteger) else -100
        x = randi(lo, 100, *x_shape, dtype=dtype)
    else:
        x = randf(*x_shape, dtype=dtype)
    if axes_as_input is None:
        axes_as_input = opset >= (18 if op == "ReduceMean" else 13)
    attrs = {"keepdims": keepdims}
    if noop is not None:
        attrs["noop_with_empty_axes"] = noop
    inits = []
    inputs = ["x"]
    if axes is not None:
        if axes_as_input:
            inits.append(("axes", np.array(axes, dtype=np.int64)))
            inputs.append("axes")
        else:
            attrs["axes"] = axes
    node = helper.make_node(op, inputs, ["y"], **attrs)
    if noop and not axes:
        y = x
    else:
        ax = tuple(axes) if axes else None
        if np.issubdtype(dtype, np.integer):
            s = x.astype(np.int64 if np.issubdtype(dtype, np.signedinteger) else np.uint64).sum(axis=ax, keepdims=bool(keepdims))
            if op == "ReduceMean":
                cnt = x.size // max(s.size, 1) if x.size else 0
                # Truncation toward zero, as C integer division does.
                s = np.trunc(s.astype(np.float64) / cnt)
            y = s.astype(dtype)
        else:
            x64 = x.astype(np.float64)
            y = (x64.mean if op == "ReduceMean" else x64.sum)(axis=ax, keepdims=bool(keepdims)).astype(dtype)
    write_case(root, name, [node], [("x", x)], [("y", np.asarray(y, dtype=dtype))], opset, initializers=inits)


def bf16_cases(root):
    """One bfloat16 case per op: inputs rounded to bfloat16, references
    computed in float64 from the rounded values and rounded once."""
    r = lambda *shape: bf16_round(randf(*shape))

    a, b, c = r(5, 24), r(19, 24), r(19)
    y = gemm_ref(a, b, c, 0.5, 1.0, 0, 1, np.dtype(np.float64))
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, transB=1)
    write_case(root, "hc_gemm_bf16_transB", [node], [("a", BF16(a)), ("b", BF16(b)), ("c", BF16(c))],
               [("y", BF16(y))], 13)

    x = r(3, 40)
    node = helper.make_node("Softmax", ["x"], ["y"], axis=-1)
    write_case(root, "hc_softmax_bf16", [node], [("x", BF16(x))], [("y", BF16(softmax_ref(x, -1, 13)))], 13)

    x = r(4, 6, 5)
    node = helper.make_node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0)
    write_case(root, "hc_reduce_mean_bf16", [node], [("x", BF16(x))],
               [("y", BF16(x.astype(np.float64).mean(axis=1)))], 13)

    x, s, bias, mean = r(2, 3, 5), r(3), r(3), r(3)
    var = bf16_round((RNG.random(3) + 0.5).astype(np.float32))
    f = lambda v: v.astype(np.float64).reshape(1, 3, 1)
    y = (x - f(mean)) / np.sqrt(f(var) + 1e-5) * f(s) + f(bias)
    node = helper.make_node("BatchNormalization", ["x", "s", "bias", "mean", "var"], ["y"])
    write_case(root, "hc_batchnorm_bf16", [node],
               [("x", BF16(x)), ("s", BF16(s)), ("bias", BF16(bias)), ("mean", BF16(mean)), ("var", BF16(var))],
               [("y", BF16(y))], 15)

    x, scale, bias = r(3, 8), r(8), r(8)
    y, mean, inv = layernorm_ref(x, scale, bias, -1, 1e-5, np.float32)
    node = helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y", "mean", "inv"], stash_type=16)
    write_case(root, "hc_layernorm_bf16_stash_bf16", [node],
               [("x", BF16(x)), ("scale", BF16(scale)), ("bias", BF16(bias))],
               [("y", BF16(y)), ("mean", BF16(mean)), ("inv", BF16(inv))], 17)


def folded_chain_case(root):
    """MatMul -> Softmax -> LayerNormalization -> ReduceMean -> Gemm on
    initializers only: constant folding runs these kernels at compile time."""
    c1, c2 = randf(6, 9), randf(9, 20)
    sc, bi = randf(20), randf(20)
    w, bias = randf(20, 5), randf(5)
    x = randf(3, 5)
    m = c1.astype(np.float64) @ c2.astype(np.float64)
    sm = softmax_ref(m, -1, 13)
    ln, _, _ = layernorm_ref(sm.astype(np.float32), sc, bi, -1, 1e-5, np.float32)
    r = ln.mean(axis=0, keepdims=True)
    g = r @ w.astype(np.float64) + bias
    y = (x + g).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["c1", "c2"], ["m"]),
        helper.make_node("Softmax", ["m"], ["sm"]),
        helper.make_node("LayerNormalization", ["sm", "sc", "bi"], ["ln"]),
        helper.make_node("ReduceMean", ["ln"], ["r"], axes=[0], keepdims=1),
        helper.make_node("Gemm", ["r", "w", "bias"], ["g"]),
        helper.make_node("Add", ["x", "g"], ["y"]),
    ]
    write_case(root, "hc_const_folded_chain", nodes, [("x", x)], [("y", y)], 17,
               initializers=[("c1", c1), ("c2", c2), ("sc", sc), ("bi", bi), ("w", w), ("bias", bias)])


def empty_cases(root):
    """Zero-sized dimensions: empty outputs, and empty reductions (sum 0, mean NaN)."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's "mean of empty slice"
        reduce_case(root, "hc_reduce_sum_empty_reduced", "ReduceSum", (3, 0, 4), [1], keepdims=0)
        reduce_case(root, "hc_reduce_mean_empty_reduced", "ReduceMean", (3, 0, 4), [1], keepdims=0)
        reduce_case(root, "hc_reduce_sum_empty_output", "ReduceSum", (0, 4), [1], keepdims=1)
        x = np.zeros((3, 0), np.float32)
        node = helper.make_node("LayerNormalization", ["x", "scale"], ["y", "mean", "inv"])
        nan = np.full((3, 1), np.nan, np.float32)
        write_case(root, "hc_layernorm_empty_rows", [node], [("x", x), ("scale", np.zeros((0,), np.float32))],
                   [("y", x), ("mean", nan), ("inv", nan)], 17)
    matmul_case(root, "hc_matmul_empty_m", (0, 4), (4, 5))
    gemm_case(root, "hc_gemm_empty_n", 3, 4, 0, c_shape=(0,))
    softmax_case(root, "hc_softmax_empty", (0, 3), -1, 13)


def main():
    root = casekit.out_dir(__doc__)

    # Gemm: integer types, every transpose combination, odd tile edges, C shapes, old opsets.
    gemm_case(root, "hc_gemm_int32", 5, 7, 9, c_shape=(9,), dtype=np.int32)
    gemm_case(root, "hc_gemm_int32_alpha_beta", 4, 6, 5, c_shape=(4, 5), alpha=2.0, beta=-3.0, dtype=np.int32)
    gemm_case(root, "hc_gemm_int64_transB", 7, 13, 11, tb=1, c_shape=(7, 1), dtype=np.int64)
    gemm_case(root, "hc_gemm_uint32_transA", 6, 5, 20, ta=1, dtype=np.uint32, opset=11)
    gemm_case(root, "hc_gemm_f32_edges", 37, 70, 53, c_shape=(53,), alpha=0.5, beta=2.0)
    gemm_case(root, "hc_gemm_f32_transA", 37, 70, 53, ta=1, c_shape=(37, 1))
    gemm_case(root, "hc_gemm_f32_transB", 37, 70, 53, tb=1, c_shape=())
    gemm_case(root, "hc_gemm_f32_transAB", 13, 21, 19, ta=1, tb=1, c_shape=(13, 19))
    gemm_case(root, "hc_gemm_f32_transB_gemv", 1, 300, 70, tb=1, c_shape=(1, 70))
    gemm_case(root, "hc_gemm_f32_transB_gemv_stream", 1, 2400, 128, tb=1, c_shape=(128,))
    gemm_case(root, "hc_gemm_f32_big", 64, 256, 96, c_shape=(96,))
    gemm_case(root, "hc_gemm_f64_transB", 9, 33, 10, tb=1, c_shape=(10,), dtype=np.float64)
    gemm_case(root, "hc_gemm_f16", 10, 40, 24, c_shape=(24,), dtype=np.float16)
    gemm_case(root, "hc_gemm_opset6_broadcast", 3, 4, 5, c_shape=(5,), opset=6, extra_attrs={"broadcast": 1})
    gemm_case(root, "hc_gemm_opset9_no_broadcast", 3, 4, 5, c_shape=(3, 5), opset=9)
    gemm_case(root, "hc_gemm_k0", 3, 0, 4, c_shape=(4,), beta=0.5)

    # MatMul: batch broadcasting, 1-D operands, dtypes, tile edges.
    matmul_case(root, "hc_matmul_bcast_2x1x3x4_5x4x6", (2, 1, 3, 4), (5, 4, 6))
    matmul_case(root, "hc_matmul_bcast_1x3x4_2x4x5", (1, 3, 4), (2, 4, 5))
    matmul_case(root, "hc_matmul_1d_nd", (4,), (2, 4, 3))
    matmul_case(root, "hc_matmul_nd_1d", (2, 3, 4), (4,))
    matmul_case(root, "hc_matmul_1d_1d", (7,), (7,))
    matmul_case(root, "hc_matmul_2d_1d_long", (5, 100), (100,))
    matmul_case(root, "hc_matmul_f16", (3, 17, 33), (33, 40), dtype=np.float16)
    matmul_case(root, "hc_matmul_f64", (2, 9, 12), (2, 12, 7), dtype=np.float64)
    matmul_case(root, "hc_matmul_int32_batch", (3, 4, 5), (3, 5, 6), dtype=np.int32)
    matmul_case(root, "hc_matmul_int64", (4, 9), (9, 17), dtype=np.int64)
    matmul_case(root, "hc_matmul_tall_shared_b", (4, 25, 64), (64, 70), b_const=True)
    matmul_case(root, "hc_matmul_batched_edges", (3, 50, 64), (3, 64, 70))
    matmul_case(root, "hc_matmul_narrow_n", (20, 30), (30, 3))
    # B of 49-64 columns (four AVX-512 vectors): the tall narrow-B tile,
    # which must leave registers for B and a broadcast (6 x 4, not 7 x 4),
    # with ragged row tiles and a ragged last vector; B packed and direct.
    matmul_case(root, "hc_matmul_narrow_b_64", (101, 70), (70, 64), b_const=True)
    matmul_case(root, "hc_matmul_narrow_b_60_direct", (2, 45, 33), (2, 33, 60))
    # Two to four rows: tiles widened as far as the registers allow (4 x 6
    # on AVX-512, 3 x 2 and 2 x 4 on AVX2), ragged last panels.
    matmul_case(root, "hc_matmul_three_rows_wide", (3, 70), (70, 130), b_const=True)
    matmul_case(root, "hc_matmul_four_rows_wide", (4, 33), (33, 200), b_const=True)
    matmul_case(root, "hc_matmul_opset1", (3, 4), (4, 5), opset=1)
    matmul_case(root, "hc_matmul_gemv_wide", (1, 37), (37, 2100), b_const=True)
    matmul_case(root, "hc_matmul_two_rows_wide", (1, 2, 9), (9, 2050))
    matmul_case(root, "hc_matmul_gemv_1d_wide", (64,), (64, 2048))
    matmul_bf16_case(root, "hc_matmul_bf16", (2, 7, 20), (20, 35))
    # A few rows against a B of 256 KB or more: the column tiles are halved
    # so that two threads stream half of B each (plan_fast's streams_b),
    # with a ragged last tile (200 columns) and a constant, packed B.
    matmul_case(root, "hc_matmul_stream_b_rows2", (2, 1024), (1024, 200), b_const=True)
    matmul_case(root, "hc_matmul_stream_b_runtime", (3, 700), (700, 130))

    # BatchNormalization: dtypes, ranks, plane vs row tasks, spatial=0, old opsets.
    batchnorm_case(root, "hc_batchnorm_2d_input", (6, 5))
    batchnorm_case(root, "hc_batchnorm_1d_input", (6,))
    batchnorm_case(root, "hc_batchnorm_large_planes", (2, 3, 8, 8))
    batchnorm_case(root, "hc_batchnorm_f64", (2, 4, 3, 5), dtype=np.float64)
    batchnorm_case(root, "hc_batchnorm_f16", (2, 4, 6, 6), dtype=np.float16)
    batchnorm_case(root, "hc_batchnorm_spatial0_opset7", (2, 3, 4, 5), opset=7, spatial=0)
    batchnorm_case(root, "hc_batchnorm_spatial0_large_opset7", (2, 3, 8, 8), opset=7, spatial=0)
    batchnorm_case(root, "hc_batchnorm_opset6", (2, 3, 4), opset=6)
    batchnorm_case(root, "hc_batchnorm_opset9", (2, 3, 4, 4), opset=9)

    # LayerNormalization: axis=1 with statistics outputs, broadcast Scale, dtypes, stash_type.
    layernorm_case(root, "hc_layernorm_axis1_stats", (2, 3, 4, 5), 1, (3, 4, 5), (3, 4, 5))
    layernorm_case(root, "hc_layernorm_axis_neg2_stats", (3, 4, 6), -2, (4, 6), (6,))
    layernorm_case(root, "hc_layernorm_scale_bcast", (2, 3, 4), 1, (1, 4), None, outputs=("y",))
    layernorm_case(root, "hc_layernorm_scale_rows", (2, 3, 4), 2, (3, 4), (2, 1, 4), outputs=("y",))
    layernorm_case(root, "hc_layernorm_no_bias_mean_only", (4, 16), -1, (16,), None, outputs=("y", "mean"))
    layernorm_case(root, "hc_layernorm_f16", (3, 40), -1, (40,), (40,), dtype=np.float16, outputs=("y",))
    layernorm_case(root, "hc_layernorm_f64_stash_double", (3, 10), -1, (10,), (10,), dtype=np.float64,
                   stash_type=TensorProto.DOUBLE)
    layernorm_case(root, "hc_layernorm_long_rows", (2, 1000), -1, (1000,), (1000,))

    # Softmax: opset 11 coercion, strided axes, big blocks, float16.
    softmax_case(root, "hc_softmax_opset11_axis1_4d", (2, 3, 4, 5), 1, 11)
    softmax_case(root, "hc_softmax_opset11_default_axis", (2, 3, 4), None, 11)
    softmax_case(root, "hc_softmax_opset1_axis2", (2, 3, 4), 2, 1)
    softmax_case(root, "hc_softmax_opset13_axis1_strided", (2, 30, 4, 5), 1, 13)
    softmax_case(root, "hc_softmax_opset13_axis0_wide", (7, 600), 0, 13)
    softmax_case(root, "hc_softmax_opset13_long_rows", (3, 1000), -1, 13, scale=10.0)
    softmax_case(root, "hc_softmax_f16", (4, 50), -1, 13, dtype=np.float16)
    softmax_case(root, "hc_softmax_f16_strided", (4, 6, 10), 1, 13, dtype=np.float16)
    softmax_case(root, "hc_softmax_f64", (4, 9), -1, 13, dtype=np.float64)

    # ReduceSum / ReduceMean: middle axes, inner-kept blocks, integer types, opset forms.
    reduce_case(root, "hc_reduce_sum_middle_axes_nokeep", "ReduceSum", (2, 3, 4, 5), [1, 2], keepdims=0)
    reduce_case(root, "hc_reduce_sum_axes_0_2", "ReduceSum", (3, 4, 5, 6), [0, 2], keepdims=1)
    reduce_case(root, "hc_reduce_sum_axis0_wide", "ReduceSum", (7, 1200), [0], keepdims=0)
    reduce_case(root, "hc_reduce_sum_all_nokeep", "ReduceSum", (3, 4, 5), None, keepdims=0)
    reduce_case(root, "hc_reduce_sum_int32", "ReduceSum", (4, 5, 6), [2], dtype=np.int32)
    reduce_case(root, "hc_reduce_sum_int64_axis0", "ReduceSum", (4, 5, 6), [0], dtype=np.int64)
    reduce_case(root, "hc_reduce_sum_uint32", "ReduceSum", (4, 50), [1], dtype=np.uint32, keepdims=0)
    reduce_case(root, "hc_reduce_sum_f16", "ReduceSum", (4, 64), [1], dtype=np.float16)
    reduce_case(root, "hc_reduce_sum_f64", "ReduceSum", (4, 6, 7), [0, 2], dtype=np.float64)
    reduce_case(root, "hc_reduce_sum_opset11_attr", "ReduceSum", (3, 4, 5), [-1], opset=11)
    reduce_case(root, "hc_reduce_sum_noop", "ReduceSum", (3, 4), [], noop=1)
    reduce_case(root, "hc_reduce_sum_empty_axes_all", "ReduceSum", (3, 4), [], noop=0, keepdims=0)
    reduce_case(root, "hc_reduce_sum_size1_axis", "ReduceSum", (3, 1, 4), [1], keepdims=0)
    reduce_case(root, "hc_reduce_mean_int32", "ReduceMean", (4, 5, 6), [1], dtype=np.int32)
    reduce_case(root, "hc_reduce_mean_int64_all", "ReduceMean", (4, 5), None, dtype=np.int64, keepdims=0)
    reduce_case(root, "hc_reduce_mean_middle", "ReduceMean", (2, 3, 4, 5), [1, 2], keepdims=0)
    reduce_case(root, "hc_reduce_mean_opset18_input", "ReduceMean", (2, 3, 4), [0, 2], opset=18)
    reduce_case(root, "hc_reduce_mean_opset18_noop", "ReduceMean", (2, 3), None, opset=18, noop=1)
    reduce_case(root, "hc_reduce_mean_f16", "ReduceMean", (3, 100), [-1], dtype=np.float16)

    bf16_cases(root)
    folded_chain_case(root)
    empty_cases(root)


if __name__ == "__main__":
    main()
