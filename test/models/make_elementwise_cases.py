#!/usr/bin/python3
"""Generates ONNX backend-style test folders for the element-wise family
(math, logic, bitwise, activations, Cast/CastLike, Size) in the cases the
ONNX suite does not cover: integer, float16, bfloat16 and float64 dtypes,
attribute combinations, broadcasting, legacy (opset < 7) broadcasting, the
newer ops (Bitwise*, Mish, Gelu) and edge values (NaN, inf, zero divisors,
shift widths, rounding ties). Expected outputs are computed with numpy in
float64 (and exact rational rounding for float16/bfloat16 targets).

Three groups of folders, by name prefix:
  ew_*     ordinary cases, for the default tolerances;
  tight_*  float32/float64 sweeps of the transcendental activations over
           their whole range, meant for --rtol 1e-6 --atol 1e-37;
  exact_*  conversions to float16/bfloat16 widened back to float64 or
           float32, meant for --rtol 0 --atol 0 (correct rounding).

usage: make_elementwise_cases.py OUTPUT_DIR
then:  harness-test OUTPUT_DIR/ew_*
       harness-test --rtol 1e-6 --atol 1e-37 OUTPUT_DIR/tight_*
       harness-test --rtol 0 --atol 0 OUTPUT_DIR/exact_*
"""
import math
import warnings
from fractions import Fraction

import numpy as np
from onnx import TensorProto, helper

import casekit

RNG = np.random.default_rng(4321)


# ---- exact rounding and bfloat16 ---------------------------------------------------


def round_exact(v, mant, emin, emax):
    """Rounds a Python int or float to the nearest value (ties to even) of a
    binary format with `mant` significand bits, minimum normal exponent emin
    and maximum exponent emax, with exact rational arithmetic."""
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return v
    f = Fraction(v)
    if f == 0:
        return math.copysign(0.0, v) if isinstance(v, float) else 0.0
    sign = -1 if f < 0 else 1
    a = abs(f)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, emin)
    q = Fraction(2) ** (e - mant + 1)
    n = a / q
    r = n.numerator // n.denominator
    rem = n - r
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and r % 2 == 1):
        r += 1
    res = r * q
    if res >= Fraction(2) ** (emax + 1):
        return sign * math.inf
    return sign * float(res)


def to_f16_exact(values):
    return np.array([round_exact(v, 11, -14, 15) for v in values], dtype=np.float16)


def to_bf16_exact(values):
    return np.array([round_exact(v, 8, -126, 127) for v in values], dtype=np.float32)


class BF16(casekit.BF16):
    """A bfloat16 tensor held as the float32 values it represents exactly,
    rounded from the given values exactly (float64 input is not rounded to
    float32 first)."""

    def __init__(self, values):
        v = np.asarray(values)
        if v.dtype != np.float32 or not np.array_equal(to_bf16_exact(v.ravel().tolist()).reshape(v.shape), v,
                                                        equal_nan=True):
            v = to_bf16_exact(np.asarray(values, dtype=np.float64).ravel().tolist()).reshape(v.shape)
        self.values = v


def as_f64(value):
    return (value.values if isinstance(value, BF16) else np.asarray(value)).astype(np.float64)


def write_case(root, name, nodes, inputs, outputs, opset, initializers=None):
    """inputs/outputs: lists of (name, value); initializers: list of (name, value)."""
    casekit.write_case(root, name, nodes, inputs, outputs, opset, initializers or (),
                       producer="make_elementwise_cases", ir_version=8 if opset < 21 else 10)


def cast_out(y64, like):
    """float64 results to the dtype of `like` (a numpy dtype, np.float32 etc.,
    or the BF16 class), correctly rounded."""
    if like is BF16:
        return BF16(to_bf16_exact(np.asarray(y64, dtype=np.float64).ravel().tolist()).reshape(np.shape(y64)))
    if np.dtype(like) == np.float16:
        return to_f16_exact(np.asarray(y64, dtype=np.float64).ravel().tolist()).reshape(np.shape(y64))
    return np.asarray(y64).astype(like)


def make_input(x64, dtype):
    """float64 values to an input tensor of dtype (numpy dtype or BF16)."""
    return cast_out(x64, dtype)


def randf(*shape, scale=1.0):
    return RNG.standard_normal(shape) * scale


# ---- references --------------------------------------------------------------------

erf = np.vectorize(math.erf, otypes=[np.float64])
erfc = np.vectorize(math.erfc, otypes=[np.float64])
SELU_ALPHA = float(np.float32(1.67326319217681884765625))
SELU_GAMMA = float(np.float32(1.05070102214813232421875))


def softplus(x):
    return np.logaddexp(0.0, x)


def gelu(x):
    return 0.5 * x * erfc(-x / math.sqrt(2.0))


def gelu_tanh(x):
    z = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)
    with np.errstate(over="ignore"):
        return x / (1.0 + np.exp(-2.0 * z))


def mish(x):
    return x * np.tanh(softplus(x))


def sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


ACTIVATIONS = {
    # op: (attrs, reference on float64, opset, input sweep kind)
    "Sigmoid": ({}, sigmoid, 13),
    "Tanh": ({}, np.tanh, 13),
    "Erf": ({}, erf, 13),
    "Exp": ({}, np.exp, 13),
    "Softplus": ({}, softplus, 1),
    "Softsign": ({}, lambda x: x / (1 + np.abs(x)), 1),
    "Elu": ({"alpha": 0.75}, lambda x: np.where(x < 0, float(np.float32(0.75)) * np.expm1(np.minimum(x, 0)), x), 6),
    "Selu": ({}, lambda x: np.where(x > 0, SELU_GAMMA * x, SELU_GAMMA * SELU_ALPHA * np.expm1(np.minimum(x, 0))), 6),
    "Celu": ({"alpha": 1.5}, lambda x: np.maximum(0, x) + np.minimum(0, 1.5 * np.expm1(np.minimum(x, 0) / 1.5)), 12),
    "Mish": ({}, mish, 18),
    "Gelu": ({}, gelu, 20),
    "GeluTanh": ({"approximate": "tanh"}, gelu_tanh, 20),
}


def sweep_values():
    """float32 inputs covering the whole range of the activations: a dense
    grid, tiny magnitudes (relative accuracy near 0), the saturation and
    overflow regions, and the special values."""
    grid = np.linspace(-12, 12, 2401)
    tiny = np.logspace(-38, -1, 75)
    wide = np.array([15, 20, 30, 50, 80, 87, 88, 88.3, 88.5, 88.7, 89, 100, 1e4, 3e38])
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
    return np.concatenate([grid, tiny, -tiny, wide, -wide, special]).astype(np.float32).astype(np.float64)


def activation_cases(root):
    for op, (attrs, ref, opset) in ACTIVATIONS.items():
        x = sweep_values()
        if op == "GeluTanh":
            # Below -3 the result (< 4e-3) is limited to a relative accuracy of
            # about |2z| 2^-24 by the rounding of z = sqrt(2/pi)(x + 0.044715x^3)
            # in float32; the ew_ sweep covers that range.
            x = x[~(x < -3)]
        onnx_op = "Gelu" if op == "GeluTanh" else op
        node = helper.make_node(onnx_op, ["x"], ["y"], **attrs)
        with np.errstate(all="ignore"):
            y = ref(x)
        for dt, tag in ((np.float32, "f32"), (np.float64, "f64")):
            write_case(root, "tight_%s_%s" % (op.lower(), tag), [node], [("x", x.astype(dt))],
                       [("y", y.astype(dt))], opset)
        full = sweep_values()
        with np.errstate(all="ignore"):
            write_case(root, "ew_%s_sweep_f32" % op.lower(), [node], [("x", full.astype(np.float32))],
                       [("y", ref(full).astype(np.float32))], opset)
        # float16 / bfloat16: moderate inputs, default tolerance.
        xs = np.concatenate([np.linspace(-8, 8, 161), [0.0, 1e-3, -1e-3, 30, -30]])
        for dt, tag, o in ((np.float16, "f16", opset), (BF16, "bf16", 22)):
            xin = make_input(xs, dt)
            with np.errstate(all="ignore"):
                yy = ref(as_f64(xin))
            write_case(root, "ew_%s_%s" % (op.lower(), tag), [node], [("x", xin)], [("y", cast_out(yy, dt))], o)
    # Log over positive values incl. subnormals, zero and negatives.
    xl = np.concatenate([np.logspace(-45, 38, 400), np.linspace(0.5, 2, 301), [0.0, -0.0, -1.0, np.inf, np.nan]])
    xl = xl.astype(np.float32).astype(np.float64)
    with np.errstate(all="ignore"):
        yl = np.log(xl)
    node = helper.make_node("Log", ["x"], ["y"])
    write_case(root, "tight_log_f32", [node], [("x", xl.astype(np.float32))], [("y", yl.astype(np.float32))], 13)
    # Tanh near 0 keeps relative accuracy.
    xt = np.concatenate([np.logspace(-30, -1, 200), -np.logspace(-30, -1, 200)]).astype(np.float32)
    write_case(root, "tight_tanh_small_f32", [helper.make_node("Tanh", ["x"], ["y"])], [("x", xt)],
               [("y", np.tanh(xt.astype(np.float64)).astype(np.float32))], 13)


def simple_activation_cases(root):
    x = randf(3, 4, 5, scale=3.0)
    x.ravel()[:5] = [0.0, -0.0, 1.0, -1.0, np.nan]
    for dt, tag, opset in ((np.float64, "f64", 13), (np.float16, "f16", 13), (BF16, "bf16", 22)):
        xin = make_input(x, dt)
        xv = as_f64(xin)
        cases = [
            ("ThresholdedRelu", {"alpha": 0.5}, np.where((xv > 0.5) | np.isnan(xv), xv, 0.0)),
            ("ThresholdedRelu", {}, np.where((xv > 1.0) | np.isnan(xv), xv, 0.0)),
            ("Relu", {}, np.maximum(xv, 0)),
            ("LeakyRelu", {"alpha": 0.2}, np.where(xv < 0, float(np.float32(0.2)) * xv, xv)),
            ("HardSigmoid", {"alpha": 0.3, "beta": 0.4},
             np.clip(float(np.float32(0.3)) * xv + float(np.float32(0.4)), 0, 1)),
            ("HardSwish", {}, xv * np.clip(xv / 6 + 0.5, 0, 1)),
            ("Shrink", {"lambd": 1.5, "bias": 0.5}, np.where(xv < -1.5, xv + 0.5, np.where(xv > 1.5, xv - 0.5, 0))),
            ("Shrink", {}, np.where(xv < -0.5, xv, np.where(xv > 0.5, xv, 0))),
            ("Reciprocal", {}, 1 / xv),
            ("Abs", {}, np.abs(xv)),
            ("Neg", {}, -xv),
            ("Sqrt", {}, np.sqrt(np.abs(xv))),
        ]
        for k, (op, attrs, y) in enumerate(cases):
            inp = make_input(np.abs(xv), dt) if op == "Sqrt" else xin
            write_case(root, "ew_%s%d_%s" % (op.lower(), k, tag), [helper.make_node(op, ["x"], ["y"], **attrs)],
                       [("x", inp)], [("y", cast_out(y, dt))], 22 if tag == "bf16" else max(opset, 14))
    # Shrink on integers: float compare, truncating result.
    for dt in (np.int8, np.uint8, np.int32, np.int64):
        lo = 0 if np.issubdtype(dt, np.unsignedinteger) else -9
        x = RNG.integers(lo, 10, size=(4, 6)).astype(dt)
        xv = x.astype(np.float64)
        y = np.where(xv < -2.5, xv + 1.5, np.where(xv > 2.5, xv - 1.5, 0))
        write_case(root, "ew_shrink_%s" % np.dtype(dt).name,
                   [helper.make_node("Shrink", ["x"], ["y"], lambd=2.5, bias=1.5)], [("x", x)],
                   [("y", np.trunc(y).astype(dt))], 9)
    # Relu on signed integers (opset 14), Clip on integers with one bound.
    x8 = RNG.integers(-100, 100, size=(5, 7)).astype(np.int8)
    write_case(root, "ew_relu_int8", [helper.make_node("Relu", ["x"], ["y"])], [("x", x8)], [("y", np.maximum(x8, 0))], 14)
    xu = RNG.integers(0, 2 ** 63, size=(3, 5), dtype=np.uint64)
    hi = np.array(2 ** 62, dtype=np.uint64)
    write_case(root, "ew_clip_uint64_max_only", [helper.make_node("Clip", ["x", "", "hi"], ["y"])],
               [("x", xu), ("hi", hi)], [("y", np.minimum(xu, hi))], 13)
    x16 = RNG.integers(-1000, 1000, size=(4, 4)).astype(np.int16)
    lo16 = np.array(-5, dtype=np.int16)
    write_case(root, "ew_clip_int16_min_only", [helper.make_node("Clip", ["x", "lo"], ["y"])], [("x", x16), ("lo", lo16)],
               [("y", np.maximum(x16, lo16))], 12)
    # Clip-6 attributes on float64 (bounds are float32 attributes).
    xd = randf(3, 4, scale=4)
    write_case(root, "ew_clip6_attrs_f64", [helper.make_node("Clip", ["x"], ["y"], min=-1.5, max=2.25)], [("x", xd)],
               [("y", np.clip(xd, -1.5, 2.25))], 6)
    write_case(root, "ew_clip6_default_f64", [helper.make_node("Clip", ["x"], ["y"])], [("x", xd)], [("y", xd)], 6)
    # Erf on integers (opset 13): truncated erf.
    xi = np.array([-7, -3, -1, 0, 1, 2, 5, 6, 100], dtype=np.int32)
    write_case(root, "ew_erf_int32", [helper.make_node("Erf", ["x"], ["y"])], [("x", xi)],
               [("y", np.trunc(erf(xi.astype(np.float64))).astype(np.int32))], 13)
    # Abs/Neg on integers, incl. the most negative value.
    xa = np.array([-128, -127, -1, 0, 1, 127], dtype=np.int8)
    write_case(root, "ew_abs_int8", [helper.make_node("Abs", ["x"], ["y"])], [("x", xa)], [("y", np.abs(xa))], 13)
    write_case(root, "ew_neg_int16", [helper.make_node("Neg", ["x"], ["y"])], [("x", xa.astype(np.int16))],
               [("y", -xa.astype(np.int16))], 13)
    xb = RNG.integers(0, 255, size=(9,)).astype(np.uint8)
    write_case(root, "ew_abs_uint8", [helper.make_node("Abs", ["x"], ["y"])], [("x", xb)], [("y", xb)], 13)


def gelu_mish_extra_cases(root):
    # Large 2-D tensors so the kernels split into several tasks and vectorise.
    x = randf(33, 517, scale=4.0)
    for op, attrs, ref, opset in (("Gelu", {}, gelu, 20), ("Gelu", {"approximate": "tanh"}, gelu_tanh, 20),
                                  ("Mish", {}, mish, 18), ("Softplus", {}, softplus, 1)):
        tag = "gelutanh" if attrs else op.lower()
        write_case(root, "ew_%s_large" % tag, [helper.make_node(op, ["x"], ["y"], **attrs)],
                   [("x", x.astype(np.float32))], [("y", ref(x.astype(np.float32).astype(np.float64)).astype(np.float32))],
                   opset)


# ---- trig, rounding, classification ----------------------------------------------------


def trig_cases(root):
    funcs = {
        "Sin": (np.sin, (-10, 10), 7), "Cos": (np.cos, (-10, 10), 7), "Tan": (np.tan, (-1.5, 1.5), 7),
        "Asin": (np.arcsin, (-1, 1), 7), "Acos": (np.arccos, (-1, 1), 7), "Atan": (np.arctan, (-10, 10), 7),
        "Sinh": (np.sinh, (-5, 5), 9), "Cosh": (np.cosh, (-5, 5), 9), "Asinh": (np.arcsinh, (-10, 10), 9),
        "Acosh": (np.arccosh, (1, 10), 9), "Atanh": (np.arctanh, (-0.99, 0.99), 9),
    }
    for op, (ref, (lo, hi), opset) in funcs.items():
        x = RNG.uniform(lo, hi, size=(4, 5))
        node = helper.make_node(op, ["x"], ["y"])
        for dt, tag, o in ((np.float64, "f64", opset), (np.float16, "f16", opset), (BF16, "bf16", 22)):
            xin = make_input(x, dt)
            write_case(root, "ew_%s_%s" % (op.lower(), tag), [node], [("x", xin)],
                       [("y", cast_out(ref(as_f64(xin)), dt))], o)


def rounding_cases(root):
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -3.7, 3.7, 0.49999997, -0.0, 0.0, 1e20, -1e20, np.inf, -np.inf,
                  np.nan, 2.4, -2.6, 7.0])
    for dt, tag, o in ((np.float32, "f32", 11), (np.float64, "f64", 11), (np.float16, "f16", 11), (BF16, "bf16", 22)):
        xin = make_input(x, dt)
        xv = as_f64(xin)
        for op, ref in (("Round", np.round), ("Ceil", np.ceil), ("Floor", np.floor)):
            write_case(root, "ew_%s_%s" % (op.lower(), tag), [helper.make_node(op, ["x"], ["y"])], [("x", xin)],
                       [("y", cast_out(ref(xv), dt))], o)
        write_case(root, "ew_sign_%s" % tag, [helper.make_node("Sign", ["x"], ["y"])], [("x", xin)],
                   [("y", cast_out(np.sign(xv), dt))], 13)
        write_case(root, "ew_isnan_%s" % tag, [helper.make_node("IsNaN", ["x"], ["y"])], [("x", xin)],
                   [("y", np.isnan(xv))], 20 if tag in ("f16", "bf16") else 13)
        for dn, dp in ((1, 1), (1, 0), (0, 1), (0, 0)):
            y = (np.isposinf(xv) & bool(dp)) | (np.isneginf(xv) & bool(dn))
            write_case(root, "ew_isinf_%s_n%d_p%d" % (tag, dn, dp),
                       [helper.make_node("IsInf", ["x"], ["y"], detect_negative=dn, detect_positive=dp)], [("x", xin)],
                       [("y", y)], 20 if tag in ("f16", "bf16") else 10)
    for dt in (np.int8, np.int64, np.uint16, np.uint64):
        lo = 0 if np.issubdtype(dt, np.unsignedinteger) else -50
        x = RNG.integers(lo, 50, size=(3, 7)).astype(dt)
        x.ravel()[0] = 0
        write_case(root, "ew_sign_%s" % np.dtype(dt).name, [helper.make_node("Sign", ["x"], ["y"])], [("x", x)],
                   [("y", np.sign(x).astype(dt))], 13)


# ---- logic and bitwise ------------------------------------------------------------------------


def logic_cases(root):
    a = RNG.integers(0, 2, size=(2, 3, 4)).astype(bool)
    b = RNG.integers(0, 2, size=(3, 1)).astype(bool)
    for op, ref in (("And", np.logical_and), ("Or", np.logical_or), ("Xor", np.logical_xor)):
        write_case(root, "ew_%s_bcast" % op.lower(), [helper.make_node(op, ["a", "b"], ["y"])], [("a", a), ("b", b)],
                   [("y", ref(a, b))], 7)
        # Legacy broadcasting: B aligned at axis 0 of A.
        b0 = RNG.integers(0, 2, size=(2, 3)).astype(bool)
        write_case(root, "ew_%s_legacy_axis0" % op.lower(),
                   [helper.make_node(op, ["a", "b"], ["y"], broadcast=1, axis=0)], [("a", a), ("b", b0)],
                   [("y", ref(a, b0[:, :, None]))], 1)
    write_case(root, "ew_not_3d", [helper.make_node("Not", ["a"], ["y"])], [("a", a)], [("y", ~a)], 1)
    for dt in (np.int8, np.uint16, np.int32, np.uint64, np.int64):
        info = np.iinfo(dt)
        x = RNG.integers(info.min, info.max, size=(3, 4), dtype=dt, endpoint=True)
        y = RNG.integers(info.min, info.max, size=(4,), dtype=dt, endpoint=True)
        name = np.dtype(dt).name
        for op, ref in (("BitwiseAnd", np.bitwise_and), ("BitwiseOr", np.bitwise_or), ("BitwiseXor", np.bitwise_xor)):
            write_case(root, "ew_%s_%s" % (op.lower(), name), [helper.make_node(op, ["x", "y"], ["z"])],
                       [("x", x), ("y", y)], [("z", ref(x, y))], 18)
        write_case(root, "ew_bitwisenot_%s" % name, [helper.make_node("BitwiseNot", ["x"], ["z"])], [("x", x)],
                   [("z", np.invert(x))], 18)
    for dt in (np.uint8, np.uint32, np.uint64):
        bits = np.dtype(dt).itemsize * 8
        x = RNG.integers(0, np.iinfo(dt).max, size=(2, 8), dtype=dt, endpoint=True)
        s = np.array([0, 1, 3, bits - 1, bits, bits + 5, 2 * bits, 7], dtype=dt)
        for d in ("LEFT", "RIGHT"):
            ok = s < bits
            ss = np.where(ok, s, 0).astype(dt)
            y = (np.left_shift(x, ss) if d == "LEFT" else np.right_shift(x, ss)).astype(dt)
            y = np.where(ok, y, 0).astype(dt)
            write_case(root, "ew_bitshift_%s_%s" % (d.lower(), np.dtype(dt).name),
                       [helper.make_node("BitShift", ["x", "s"], ["y"], direction=d)], [("x", x), ("s", s)],
                       [("y", y)], 11)


# ---- arithmetic and comparison ------------------------------------------------------------------


def py_mod(a, b, fmod):
    """Python / C remainder on integers, 0 for a zero divisor."""
    out = []
    for x, y in zip(a.ravel().tolist(), b.ravel().tolist()):
        if y == 0:
            out.append(0)
        elif fmod:
            out.append(int(math.fmod(x, y)) if abs(x) < 2 ** 52 else x - y * int(Fraction(x, y)))
        else:
            out.append(x % y)
    return np.array(out).reshape(a.shape)


def mod_cases(root):
    for dt in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64):
        info = np.iinfo(dt)
        lo = max(info.min, -1000)
        a = RNG.integers(lo, 1000, size=(3, 8)).astype(dt)
        b = RNG.integers(lo, 30, size=(8,)).astype(dt)
        b[0] = 0
        if info.min < 0:
            a[0, 1] = info.min
            b[1] = -1
            b[2] = 7
            a[1, 2] = -13
        for fmod in (0, 1):
            big = np.broadcast_to(b, a.shape)
            y = py_mod(a.astype(object), big.astype(object), fmod).astype(dt)
            write_case(root, "ew_mod_%s_fmod%d" % (np.dtype(dt).name, fmod),
                       [helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)], [("a", a), ("b", b)], [("y", y)], 13)
    a = randf(4, 6, scale=10)
    b = randf(6, scale=3)
    for dt, tag, o in ((np.float64, "f64", 13), (np.float16, "f16", 13), (BF16, "bf16", 13), (np.float32, "f32", 10)):
        ai, bi = make_input(a, dt), make_input(b, dt)
        write_case(root, "ew_mod_fmod1_%s" % tag, [helper.make_node("Mod", ["a", "b"], ["y"], fmod=1)],
                   [("a", ai), ("b", bi)], [("y", cast_out(np.fmod(as_f64(ai), as_f64(bi)), dt))], o)
    write_case(root, "ew_mod_float_fmod0_f32", [helper.make_node("Mod", ["a", "b"], ["y"])],
               [("a", a.astype(np.float32)), ("b", b.astype(np.float32))],
               [("y", np.mod(a.astype(np.float32).astype(np.float64), b.astype(np.float32).astype(np.float64)).astype(np.float32))], 13)


def compare_cases(root):
    a = np.round(randf(3, 4, 5, scale=2), 1)
    b = np.round(randf(4, 1, scale=2), 1)
    a.ravel()[:3] = [np.nan, 0.5, 1.0]
    b.ravel()[1] = a.ravel()[1]
    for dt, tag, o in ((np.float64, "f64", 16), (np.float16, "f16", 16), (BF16, "bf16", 16)):
        ai, bi = make_input(a, dt), make_input(b, dt)
        av, bv = as_f64(ai), as_f64(bi)
        for op, ref in (("Equal", np.equal), ("Less", np.less), ("Greater", np.greater),
                        ("LessOrEqual", np.less_equal), ("GreaterOrEqual", np.greater_equal)):
            with np.errstate(invalid="ignore"):
                y = ref(av, bv)
            write_case(root, "ew_%s_%s" % (op.lower(), tag), [helper.make_node(op, ["a", "b"], ["y"])],
                       [("a", ai), ("b", bi)], [("y", y)], o)
    for dt in (np.int8, np.uint16, np.int64, np.uint64):
        info = np.iinfo(dt)
        x = RNG.integers(info.min, info.max, size=(5, 6), dtype=dt, endpoint=True)
        y = RNG.integers(info.min, info.max, size=(6,), dtype=dt, endpoint=True)
        y[0] = x[0, 0]
        for op, ref in (("Equal", np.equal), ("Less", np.less), ("Greater", np.greater),
                        ("LessOrEqual", np.less_equal), ("GreaterOrEqual", np.greater_equal)):
            write_case(root, "ew_%s_%s" % (op.lower(), np.dtype(dt).name), [helper.make_node(op, ["a", "b"], ["y"])],
                       [("a", x), ("b", y)], [("y", ref(x, y))], 16)
    p = RNG.integers(0, 2, size=(4, 5)).astype(bool)
    q = RNG.integers(0, 2, size=(5,)).astype(bool)
    write_case(root, "ew_equal_bool", [helper.make_node("Equal", ["a", "b"], ["y"])], [("a", p), ("b", q)],
               [("y", p == q)], 11)


def variadic_cases(root):
    xs = [randf(2, 3, 4), randf(3, 1), randf(4), randf(1, 1, 1), randf(2, 1, 4)]
    xs[0].ravel()[0] = np.nan
    for dt, tag, o in ((np.float32, "f32", 13), (np.float64, "f64", 13), (np.float16, "f16", 13), (BF16, "bf16", 13)):
        ins = [make_input(x, dt) for x in xs]
        vals = [as_f64(x) for x in ins]
        names = ["x%d" % i for i in range(len(ins))]
        for op, ref in (("Sum", lambda v: sum(v[1:], v[0])), ("Mean", lambda v: sum(v[1:], v[0]) / len(v)),
                        ("Max", lambda v: np.maximum.reduce(np.broadcast_arrays(*v))),
                        ("Min", lambda v: np.minimum.reduce(np.broadcast_arrays(*v)))):
            write_case(root, "ew_%s5_%s" % (op.lower(), tag), [helper.make_node(op, names, ["y"])],
                       list(zip(names, ins)), [("y", cast_out(ref(vals), dt))], o)
            write_case(root, "ew_%s1_%s" % (op.lower(), tag), [helper.make_node(op, names[:1], ["y"])],
                       [(names[0], ins[0])], [("y", cast_out(vals[0], dt))], o)
    for dt in (np.int8, np.uint32, np.int64, np.uint64):
        info = np.iinfo(dt)
        v = [RNG.integers(info.min, info.max, size=s, dtype=dt, endpoint=True) for s in ((3, 4), (4,), (3, 1))]
        names = ["a", "b", "c"]
        for op, ref in (("Max", np.maximum), ("Min", np.minimum)):
            write_case(root, "ew_%s3_%s" % (op.lower(), np.dtype(dt).name), [helper.make_node(op, names, ["y"])],
                       list(zip(names, v)), [("y", ref(ref(v[0], v[1]), v[2]))], 13)
    # Sum-6 (no broadcasting, same shapes).
    s6 = [randf(3, 4) for _ in range(3)]
    write_case(root, "ew_sum_opset6", [helper.make_node("Sum", ["a", "b", "c"], ["y"])],
               [("a", s6[0].astype(np.float32)), ("b", s6[1].astype(np.float32)), ("c", s6[2].astype(np.float32))],
               [("y", (s6[0] + s6[1] + s6[2]).astype(np.float32))], 6)


def int_pow_ref(b, e, dt):
    """numpy integer power with wrap-around; negative exponents truncate."""
    bits = np.dtype(dt).itemsize * 8
    out = []
    for x, y in zip(b.ravel().tolist(), e.ravel().tolist()):
        if y < 0:
            out.append(1 if x == 1 else ((-1 if y % 2 else 1) if x == -1 else 0))
        else:
            r = pow(int(x), int(y), 2 ** bits)
            if r >= 2 ** (bits - 1):
                r -= 2 ** bits
            out.append(r)
    return np.array(out, dtype=dt).reshape(b.shape)


def pow_cases(root):
    b32 = np.array([[2, 3, -3, 7, 0, 1, -1, -2], [5, -5, 11, 2, 3, -1, 1, 10]], dtype=np.int32)
    e32 = np.array([[30, 21, 21, 5, 0, 100, 7, 31], [0, 3, 9, 31, 40, -3, -4, 9]], dtype=np.int32)
    write_case(root, "ew_pow_int32_int32_wrap", [helper.make_node("Pow", ["b", "e"], ["y"])], [("b", b32), ("e", e32)],
               [("y", int_pow_ref(b32, e32, np.int32))], 15)
    b64 = b32.astype(np.int64)
    e8 = np.abs(e32).astype(np.uint8) + 20
    write_case(root, "ew_pow_int64_uint8", [helper.make_node("Pow", ["b", "e"], ["y"])], [("b", b64), ("e", e8)],
               [("y", int_pow_ref(b64, e8.astype(np.int64), np.int64))], 15)
    e8s = (e32 % 40 - 3).astype(np.int8)
    write_case(root, "ew_pow_int64_int8_neg", [helper.make_node("Pow", ["b", "e"], ["y"])], [("b", b64), ("e", e8s)],
               [("y", int_pow_ref(b64, e8s.astype(np.int64), np.int64))], 15)
    bf = randf(3, 4, scale=2)
    ei = RNG.integers(-3, 4, size=(4,)).astype(np.int64)
    for dt, tag in ((np.float32, "f32"), (np.float64, "f64"), (np.float16, "f16")):
        write_case(root, "ew_pow_%s_int64" % tag, [helper.make_node("Pow", ["b", "e"], ["y"])],
                   [("b", bf.astype(dt)), ("e", ei)], [("y", cast_out(np.power(bf.astype(dt).astype(np.float64), ei), dt))],
                   15)
    ef = np.array([0.5, 2.0, 1.5, 3.0], dtype=np.float32)
    bi = np.array([[4, 9, 2, 3], [16, 25, 7, 1]], dtype=np.int32)
    write_case(root, "ew_pow_int32_f32", [helper.make_node("Pow", ["b", "e"], ["y"])], [("b", bi), ("e", ef)],
               [("y", np.trunc(np.power(bi.astype(np.float64), ef.astype(np.float64))).astype(np.int32))], 15)
    # Constant exponents are specialised at compile time (x^2 -> x*x, x^0.5
    # -> sqrt with pow's -0 and -inf results, x^-1 -> 1/x): edge values.
    edge = np.array([-0.0, 0.0, -np.inf, np.inf, np.nan, -2.0, -0.3, 0.7, 1e-20, 3e19, 5.0, 1e-40], dtype=np.float64)
    xs = np.concatenate([edge, randf(20, scale=4)]).reshape(4, 8)
    with np.errstate(all="ignore"):
        for ev, tag in ((2.0, "2"), (0.5, "half"), (-1.0, "m1"), (1.0, "1"), (3.0, "3"), (-0.5, "mhalf")):
            for dt, etag, edt in ((np.float32, "f32", np.float32), (np.float64, "f64", np.float64),
                                  (np.float16, "f16", np.float16), (np.float32, "f32i", np.int64)):
                if edt is np.int64 and ev != int(ev):
                    continue
                x = xs.astype(dt)
                write_case(root, "ew_pow_const_%s_e%s" % (etag, tag), [helper.make_node("Pow", ["x", "e"], ["y"])],
                           [("x", x)], [("y", cast_out(np.power(x.astype(np.float64), ev), dt))], 15,
                           initializers=[("e", np.array(ev, dtype=edt))])
        # A uniform constant of several elements, and a varying one (no specialisation).
        x = xs.astype(np.float32)
        for tag, e in (("uniform", np.full((8,), 2.0, np.float32)),
                       ("varying", np.array([2, 0.5, 3, -1, 1, 2, -0.5, 0.25], np.float32))):
            write_case(root, "ew_pow_const_vec_%s" % tag, [helper.make_node("Pow", ["x", "e"], ["y"])], [("x", x)],
                       [("y", np.power(x.astype(np.float64), e.astype(np.float64)).astype(np.float32))], 15,
                       initializers=[("e", e)])


def legacy_broadcast_cases(root):
    a = randf(2, 3, 4, 5).astype(np.float32)
    for op, ref in (("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply), ("Div", np.divide)):
        b1 = randf(3, 4).astype(np.float32) + 3
        write_case(root, "ew_%s_legacy_axis1" % op.lower(),
                   [helper.make_node(op, ["a", "b"], ["y"], broadcast=1, axis=1)], [("a", a), ("b", b1)],
                   [("y", ref(a, b1[:, :, None]))], 6)
        b2 = randf(5).astype(np.float32) + 3
        write_case(root, "ew_%s_legacy_suffix" % op.lower(), [helper.make_node(op, ["a", "b"], ["y"], broadcast=1)],
                   [("a", a), ("b", b2)], [("y", ref(a, b2))], 6)
        b3 = np.array([[2.5]], dtype=np.float32)
        write_case(root, "ew_%s_legacy_scalar" % op.lower(), [helper.make_node(op, ["a", "b"], ["y"], broadcast=1)],
                   [("a", a), ("b", b3)], [("y", ref(a, b3[0, 0]))], 6)
    b0 = randf(2, 3).astype(np.float32)
    write_case(root, "ew_pow_legacy_axis0", [helper.make_node("Pow", ["a", "b"], ["y"], broadcast=1, axis=0)],
               [("a", np.abs(a) + 0.5), ("b", b0)], [("y", np.power(np.abs(a) + 0.5, b0[:, :, None, None]))], 6)
    i32 = RNG.integers(-5, 5, size=(3, 4)).astype(np.int32)
    j32 = RNG.integers(-5, 5, size=(3,)).astype(np.int32)
    write_case(root, "ew_equal_legacy_axis0", [helper.make_node("Equal", ["a", "b"], ["y"], broadcast=1, axis=0)],
               [("a", i32), ("b", j32)], [("y", i32 == j32[:, None])], 1)
    # Chains that fusion (-O2 and above) would merge: a re-aligned legacy
    # operand must keep its own lowering.
    x0 = randf(2, 3, 4, 5).astype(np.float32)
    c0 = randf(3, 4).astype(np.float32)
    nodes = [helper.make_node("Add", ["a", "b"], ["s"], broadcast=1, axis=1), helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("Mul", ["r", "x"], ["y"])]
    write_case(root, "ew_add_legacy_axis1_chain", nodes, [("a", a), ("b", c0), ("x", x0)],
               [("y", np.maximum(a + c0[:, :, None], 0) * x0)], 6)
    sl = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    nodes = [helper.make_node("Sigmoid", ["x"], ["t"]), helper.make_node("PRelu", ["t2", "s"], ["p"]),
             helper.make_node("Sub", ["t", "x"], ["t2"]), helper.make_node("Abs", ["p"], ["y"])]
    nodes = [nodes[0], nodes[2], nodes[1], nodes[3]]
    t2 = 1 / (1 + np.exp(-x0.astype(np.float64))) - x0
    write_case(root, "ew_prelu_legacy_channel_chain", nodes, [("x", x0), ("s", sl)],
               [("y", np.abs(np.where(t2 < 0, t2 * sl[:, None, None], t2)).astype(np.float32))], 6)
    # PRelu-6: a 1-D slope per channel (dim 1); opset 7+: unidirectional broadcast.
    x = randf(2, 3, 4, 5).astype(np.float32)
    s = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    write_case(root, "ew_prelu_legacy_channel", [helper.make_node("PRelu", ["x", "s"], ["y"])], [("x", x), ("s", s)],
               [("y", np.where(x < 0, x * s[:, None, None], x))], 6)
    s3 = randf(3, 1, 1).astype(np.float32)
    write_case(root, "ew_prelu_c11", [helper.make_node("PRelu", ["x", "s"], ["y"])], [("x", x), ("s", s3)],
               [("y", np.where(x < 0, x * s3, x))], 16)
    xi = RNG.integers(-50, 50, size=(4, 6)).astype(np.int64)
    si = RNG.integers(-3, 3, size=(6,)).astype(np.int64)
    write_case(root, "ew_prelu_int64", [helper.make_node("PRelu", ["x", "s"], ["y"])], [("x", xi), ("s", si)],
               [("y", np.where(xi < 0, xi * si, xi))], 16)
    xf = randf(4, 6)
    for dt, tag, o in ((np.float16, "f16", 16), (BF16, "bf16", 16), (np.float64, "f64", 9)):
        xin, sin_ = make_input(xf, dt), make_input(np.array([0.25]), dt)
        write_case(root, "ew_prelu_scalar_%s" % tag, [helper.make_node("PRelu", ["x", "s"], ["y"])],
                   [("x", xin), ("s", sin_)], [("y", cast_out(np.where(as_f64(xin) < 0, as_f64(xin) * 0.25, as_f64(xin)), dt))],
                   o)


def where_cases(root):
    c = RNG.integers(0, 2, size=(3, 1, 4)).astype(bool)
    for dt, tag in ((np.float16, "f16"), (BF16, "bf16"), (np.bool_, "bool"), (np.uint8, "uint8")):
        if dt is np.bool_:
            a, b = RNG.integers(0, 2, size=(2, 4)).astype(bool), RNG.integers(0, 2, size=(4,)).astype(bool)
        elif dt is np.uint8:
            a, b = RNG.integers(0, 255, size=(2, 4)).astype(np.uint8), RNG.integers(0, 255, size=(4,)).astype(np.uint8)
        else:
            a, b = make_input(randf(2, 4), dt), make_input(randf(4), dt)
        av = a.values if isinstance(a, BF16) else a
        bv = b.values if isinstance(b, BF16) else b
        y = np.where(c, av, bv)
        write_case(root, "ew_where_%s" % tag, [helper.make_node("Where", ["c", "a", "b"], ["y"])],
                   [("c", c), ("a", a), ("b", b)], [("y", BF16(y) if dt is BF16 else y)], 16)


# ---- Cast, CastLike, Size ------------------------------------------------------------------------------


def cast_exact_cases(root):
    """Conversions to float16/bfloat16 that round twice if done through
    float32 naively; widened back so the comparison is exact."""
    t16 = [1 + 2 ** -11 + 2 ** -40, -(1 + 2 ** -11 + 2 ** -40), 1 + 2 ** -11, 1 + 3 * 2 ** -11, 65519.99, 65520.0,
           2 ** -25, 2 ** -25 + 2 ** -60, 3 * 2 ** -26, 1e-30, -1e300, 1e300, 0.1, -0.3, 2.0 / 3]
    t16 += RNG.standard_normal(49).tolist()
    tb = [1 + 2 ** -8 + 2 ** -30, -(1 + 2 ** -8 + 2 ** -30), 1 + 2 ** -8, 3.3895313892515355e38, 3.4e38, 1e39,
          2 ** -133, 2 ** -134, 2 ** -134 + 2 ** -160, 1e-45, 0.1, -0.3]
    tb += (RNG.standard_normal(52) * 1e3).tolist()
    x16 = np.array(t16, dtype=np.float64)
    xb = np.array(tb, dtype=np.float64)
    wide = TensorProto.DOUBLE
    for to, name, vals, ref in ((TensorProto.FLOAT16, "f16", x16, lambda v: to_f16_exact(v).astype(np.float64)),
                                (TensorProto.BFLOAT16, "bf16", xb, lambda v: to_bf16_exact(v).astype(np.float64))):
        nodes = [helper.make_node("Cast", ["x"], ["h"], to=to), helper.make_node("Cast", ["h"], ["y"], to=wide)]
        write_case(root, "exact_cast_f64_to_%s" % name, nodes, [("x", vals)], [("y", ref(vals.tolist()))], 13)
        like = np.zeros((1,), dtype=np.float16) if name == "f16" else BF16(np.zeros((1,), dtype=np.float32))
        like_nodes = [helper.make_node("CastLike", ["x", "like"], ["h"]), helper.make_node("Cast", ["h"], ["y"], to=wide)]
        write_case(root, "exact_castlike_f64_to_%s" % name, like_nodes, [("x", vals), ("like", like)],
                   [("y", ref(vals.tolist()))], 15)
    ints = {
        np.int32: [2 ** 24 + 2 ** 16 + 1, -(2 ** 24 + 2 ** 16 + 1), 2 ** 31 - 1, -2 ** 31, 16777217, 65520, 65519, 3, -7],
        np.uint32: [2 ** 24 + 2 ** 16 + 1, 2 ** 32 - 1, 65520, 65519, 0, 1],
        np.int64: [2 ** 60 + 2 ** 51 + 1, -(2 ** 60 + 2 ** 51 + 1), 2 ** 63 - 1, -2 ** 63, 2 ** 53 + 1, 65520, -65504, 5],
        np.uint64: [2 ** 64 - 1, 2 ** 60 + 2 ** 51 + 1, 2 ** 63 + 2 ** 55 + 1, 65520, 12345, 0],
    }
    for dt, vals in ints.items():
        x = np.array(vals, dtype=dt)
        for to, name, ref in ((TensorProto.FLOAT16, "f16", to_f16_exact), (TensorProto.BFLOAT16, "bf16", to_bf16_exact)):
            nodes = [helper.make_node("Cast", ["x"], ["h"], to=to), helper.make_node("Cast", ["h"], ["y"], to=wide)]
            write_case(root, "exact_cast_%s_to_%s" % (np.dtype(dt).name, name), nodes, [("x", x)],
                       [("y", ref([int(v) for v in vals]).astype(np.float64))], 13)
    # float16 <-> bfloat16 and float32 -> both, widened to float32.
    h = RNG.standard_normal(64).astype(np.float16)
    h[:4] = [65504, -65504, 6e-8, np.inf]
    nodes = [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.BFLOAT16),
             helper.make_node("Cast", ["h"], ["y"], to=TensorProto.FLOAT)]
    write_case(root, "exact_cast_f16_to_bf16", nodes, [("x", h)], [("y", to_bf16_exact(h.astype(np.float64).tolist()))], 13)
    b = BF16(RNG.standard_normal(64).astype(np.float32) * 100)
    b.values[:3] = [1e-6, 7e4, -1e5]
    b = BF16(b.values)
    nodes = [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16),
             helper.make_node("Cast", ["h"], ["y"], to=TensorProto.FLOAT)]
    write_case(root, "exact_cast_bf16_to_f16", nodes, [("x", b)],
               [("y", to_f16_exact(b.values.astype(np.float64).tolist()).astype(np.float32))], 13)
    f = (RNG.standard_normal(64) * 1e3).astype(np.float32)
    for to, name, ref in ((TensorProto.FLOAT16, "f16", to_f16_exact), (TensorProto.BFLOAT16, "bf16", to_bf16_exact)):
        nodes = [helper.make_node("Cast", ["x"], ["h"], to=to), helper.make_node("Cast", ["h"], ["y"], to=TensorProto.FLOAT)]
        write_case(root, "exact_cast_f32_to_%s" % name, nodes, [("x", f)],
                   [("y", np.asarray(ref(f.astype(np.float64).tolist()), dtype=np.float32))], 13)


def cast_cases(root):
    x = np.array([-3.7, -1.2, -0.0, 0.0, 0.4, 1.9, 100.6, -100.6, 2.5], dtype=np.float64)
    for dt in (np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64):
        src = np.abs(x) if np.issubdtype(dt, np.unsignedinteger) else x
        write_case(root, "ew_cast_f64_to_%s" % np.dtype(dt).name,
                   [helper.make_node("Cast", ["x"], ["y"], to=casekit.np_elem_type(dt))], [("x", src)],
                   [("y", np.trunc(src).astype(dt))], 13)
    xh = x.astype(np.float16)
    write_case(root, "ew_cast_f16_to_int32", [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT32)],
               [("x", xh)], [("y", np.trunc(xh.astype(np.float64)).astype(np.int32))], 13)
    xb = np.array([0.0, -0.0, 1.5, np.nan, -2.0, 1e-30], dtype=np.float32)
    write_case(root, "ew_cast_f32_to_bool", [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.BOOL)],
               [("x", xb)], [("y", xb.astype(bool))], 13)
    bb = np.array([True, False, True], dtype=bool)
    for to, dt in ((TensorProto.FLOAT16, np.float16), (TensorProto.INT64, np.int64), (TensorProto.DOUBLE, np.float64)):
        write_case(root, "ew_cast_bool_to_%s" % np.dtype(dt).name, [helper.make_node("Cast", ["x"], ["y"], to=to)],
                   [("x", bb)], [("y", bb.astype(dt))], 13)
    write_case(root, "ew_cast_bool_to_bf16", [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.BFLOAT16)],
               [("x", bb)], [("y", BF16(bb.astype(np.float32)))], 13)
    ii = np.array([-129, 128, 255, 256, -1, 70000], dtype=np.int32)
    for dt in (np.int8, np.uint8, np.uint16, np.int64, np.uint64):
        write_case(root, "ew_cast_int32_to_%s" % np.dtype(dt).name,
                   [helper.make_node("Cast", ["x"], ["y"], to=casekit.np_elem_type(dt))], [("x", ii)],
                   [("y", ii.astype(dt))], 13)
    # Cast-19 with saturate (no effect outside float8), Cast-6.
    write_case(root, "ew_cast19_saturate", [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT16, saturate=1)],
               [("x", x.astype(np.float32))], [("y", x.astype(np.float32).astype(np.float16))], 19)
    write_case(root, "ew_cast6_f32_to_f64", [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.DOUBLE)],
               [("x", x.astype(np.float32))], [("y", x.astype(np.float32).astype(np.float64))], 6)
    # CastLike: the second input's shape and values are irrelevant.
    like = np.zeros((7, 2), dtype=np.int16)
    write_case(root, "ew_castlike_f32_to_int16_othershape", [helper.make_node("CastLike", ["x", "like"], ["y"])],
               [("x", x.astype(np.float32)), ("like", like)], [("y", np.trunc(x).astype(np.int16))], 15)
    write_case(root, "ew_castlike_int64_to_f64", [helper.make_node("CastLike", ["x", "like"], ["y"])],
               [("x", ii.astype(np.int64)), ("like", np.zeros((), dtype=np.float64))],
               [("y", ii.astype(np.float64))], 21)


def size_cases(root):
    for shape in ((3, 4, 5), (), (0, 3), (1,)):
        x = RNG.standard_normal(shape).astype(np.float32)
        name = "x".join(str(d) for d in shape) or "scalar"
        write_case(root, "ew_size_%s" % name, [helper.make_node("Size", ["x"], ["y"])], [("x", x)],
                   [("y", np.array(x.size, dtype=np.int64))], 13)
    xi = RNG.integers(0, 9, size=(2, 3)).astype(np.int8)
    write_case(root, "ew_size_int8_opset21", [helper.make_node("Size", ["x"], ["y"])], [("x", xi)],
               [("y", np.array(6, dtype=np.int64))], 21)


def folded_cases(root):
    """Ops on initializers, evaluated at compile time by constant folding
    (through the same kernels, in the JIT), feeding a run-time op."""
    x = randf(2, 3).astype(np.float32)
    c = np.array([[0.1, -0.5, 0.9], [0.0, 0.3, -0.99]], dtype=np.float32)
    nodes = [helper.make_node("Acos", ["c"], ["a"]), helper.make_node("Add", ["x", "a"], ["y"])]
    write_case(root, "ew_folded_acos", nodes, [("x", x)], [("y", x + np.arccos(c))], 13, initializers=[("c", c)])
    b = np.array([3, -2, 5], dtype=np.int64)
    e = np.array([39, 7, 2], dtype=np.int64)
    xi = RNG.integers(-5, 5, size=(2, 3)).astype(np.int64)
    nodes = [helper.make_node("Pow", ["b", "e"], ["p"]), helper.make_node("Add", ["x", "p"], ["y"])]
    write_case(root, "ew_folded_pow_int64", nodes, [("x", xi)], [("y", xi + int_pow_ref(b, e, np.int64))], 15,
               initializers=[("b", b), ("e", e)])
    a4 = randf(2, 3, 4).astype(np.float32)
    b4 = randf(2, 3).astype(np.float32)
    x4 = randf(2, 3, 4).astype(np.float32)
    nodes = [helper.make_node("Mul", ["a", "b"], ["m"], broadcast=1, axis=0), helper.make_node("Add", ["x", "m"], ["y"])]
    write_case(root, "ew_folded_legacy_mul_axis0", nodes, [("x", x4)], [("y", x4 + a4 * b4[:, :, None])], 6,
               initializers=[("a", a4), ("b", b4)])
    d = np.array([1 + 2 ** -11 + 2 ** -40, 0.1, -3.3], dtype=np.float64)
    h = randf(3).astype(np.float16)
    nodes = [helper.make_node("Cast", ["d"], ["dh"], to=TensorProto.FLOAT16), helper.make_node("Add", ["x", "dh"], ["y"])]
    write_case(root, "ew_folded_cast_f64_f16", nodes, [("x", h)],
               [("y", (h.astype(np.float64) + to_f16_exact(d.tolist()).astype(np.float64)).astype(np.float16))], 13,
               initializers=[("d", d)])
    nodes = [helper.make_node("Size", ["x"], ["s"]), helper.make_node("Cast", ["s"], ["sf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["x", "sf"], ["y"])]
    write_case(root, "ew_folded_size_mul", nodes, [("x", x)], [("y", x * np.float32(x.size))], 13)


def main():
    root = casekit.out_dir(__doc__)
    warnings.simplefilter("ignore", RuntimeWarning)
    activation_cases(root)
    simple_activation_cases(root)
    gelu_mish_extra_cases(root)
    trig_cases(root)
    rounding_cases(root)
    logic_cases(root)
    mod_cases(root)
    compare_cases(root)
    variadic_cases(root)
    pow_cases(root)
    legacy_broadcast_cases(root)
    where_cases(root)
    cast_exact_cases(root)
    cast_cases(root)
    size_cases(root)
    folded_cases(root)


if __name__ == "__main__":
    main()
