#!/usr/bin/python3
"""Extra test cases for the quantized operators, checked against numpy.

Writes ONNX backend-style test folders (model.onnx + test_data_set_0/
input_i.pb, output_i.pb) under the directory given on the command line,
covering what the ONNX backend suite does not: per-axis quantization on
several axes, negative zero points, saturation and rounding ties, blocked
quantization and 16-bit types (opset 21), float16/bfloat16 scales (opset 19),
int32 inputs, constant-folded dequantization, multi-chunk
DynamicQuantizeLinear, batch-broadcast MatMulInteger/QLinearMatMul with per
row/column zero points and scales, uint8 x int8 mixes, and grouped, strided,
dilated, padded (explicit and auto_pad) 1-D/2-D/3-D ConvInteger and
QLinearConv with per-channel weight scales and zero points and a bias.

The expected outputs are computed here with integer numpy arithmetic
(int64 products and sums) and the specification's rounding (np.rint, half to
even); the requantisation multiplies the exact sum by the float32 multiplier
a_scale * b_scale / y_scale in float64, as the ONNX reference does.

usage: make_quantization_cases.py OUT_DIR
then:  harness-test OUT_DIR
"""
import numpy as np
from onnx import TensorProto as T
from onnx import helper

import casekit
from casekit import BF16, bf16_round

RNG = np.random.default_rng(20240611)


def save_case(root, name, node, inputs, outputs, opset, initializers=()):
    """inputs/outputs: lists of (name, array); initializers: names among the
    inputs that become graph initializers (constants) instead of inputs."""
    casekit.write_case(root, name, node, [(n, a) for n, a in inputs if n not in initializers], outputs, opset,
                       [(n, a) for n, a in inputs if n in initializers], ir_version=None)


def qrange(dt):
    info = np.iinfo(dt)
    return int(info.min), int(info.max)


def expand_param(p, xshape, axis, block):
    """Scale or zero point broadcast to x's shape (per tensor, axis, block)."""
    p = np.asarray(p)
    if p.size == 1 and p.ndim <= 1 and not block:
        return np.broadcast_to(p.reshape(()), xshape)
    axis = axis % len(xshape)
    if block:
        return np.take(np.repeat(p, block, axis=axis), np.arange(xshape[axis]), axis=axis)
    shp = [1] * len(xshape)
    shp[axis] = xshape[axis]
    return np.broadcast_to(p.reshape(shp), xshape)


def ref_quantize(x, s, z, yt, axis=1, block=0):
    xs = x.values if isinstance(x, BF16) else x
    sv = s.values if isinstance(s, BF16) else s
    se = expand_param(sv, xs.shape, axis, block)
    if xs.dtype == np.int32:
        q = xs.astype(np.float64) / se.astype(np.float64)
    elif isinstance(x, BF16):
        q = bf16_round(xs.astype(np.float32) / se.astype(np.float32))
    else:
        q = xs / se
    # saturate infinities before the conversion (numpy maps them to INT64_MIN)
    r = np.clip(np.rint(q.astype(np.float64)), -2.0**40, 2.0**40).astype(np.int64)
    if z is not None:
        r = r + expand_param(z, xs.shape, axis, block).astype(np.int64)
    lo, hi = qrange(yt)
    return np.clip(r, lo, hi).astype(yt)


def ref_dequantize(x, s, z, axis=1, block=0):
    sv = s.values if isinstance(s, BF16) else s
    d = x.astype(np.int64)
    if z is not None:
        d = d - expand_param(z, x.shape, axis, block).astype(np.int64)
    y = d.astype(np.float32) * expand_param(sv, x.shape, axis, block).astype(np.float32)
    if isinstance(s, BF16):
        return BF16(y)
    return y.astype(sv.dtype)


def rand_q(dt, shape):
    lo, hi = qrange(dt)
    return RNG.integers(lo, hi + 1, size=shape).astype(dt)


# ---- QuantizeLinear / DequantizeLinear ----------------------------------------

def quantize_cases(root):
    def q(name, x, s, z, yt, opset, axis=None, block=None, out_dtype=None):
        attrs = {}
        if axis is not None:
            attrs['axis'] = axis
        if block is not None:
            attrs['block_size'] = block
        if out_dtype is not None:
            attrs['output_dtype'] = out_dtype
        ins = ['x', 's'] + (['z'] if z is not None else [])
        node = helper.make_node('QuantizeLinear', ins, ['y'], **attrs)
        y = ref_quantize(x, s, z, yt, 1 if axis is None else axis, block or 0)
        inputs = [('x', x), ('s', s)] + ([('z', z)] if z is not None else [])
        save_case(root, name, node, inputs, [('y', y)], opset)

    x = (RNG.standard_normal((3, 4, 5)) * 300).astype(np.float32)
    q('q_axis0_int8_negzp', x, np.array([0.5, 2.0, 3.25], np.float32), np.array([-7, 0, 100], np.int8), np.int8, 13,
      axis=0)
    q('q_axis_last_uint8', x, (RNG.random(5) * 4 + 0.1).astype(np.float32),
      np.array([0, 3, 128, 250, 255], np.uint8), np.uint8, 13, axis=-1)
    q('q_axis_mid_int8', x, (RNG.random(4) * 4 + 0.1).astype(np.float32),
      np.array([-128, -1, 1, 127], np.int8), np.int8, 13, axis=1)
    ties = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, 127.5, -128.5, -129.5, 1e10, -1e10, np.inf, -np.inf, 3.0,
                     -3.49999], np.float32)
    q('q_ties_saturate_int8', ties, np.float32(1.0), np.int8(-3), np.int8, 13)
    q('q_ties_saturate_uint8', ties * 2, np.float32(2.0), np.uint8(7), np.uint8, 10)
    q('q_no_zero_point', (RNG.random((2, 9)) * 600 - 100).astype(np.float32), np.float32(2.5), None, np.uint8, 13)
    # the quotient x / s rounded half to even: quotients at and one or two
    # ulps around every half-integer of the range, a scale whose reciprocal
    # is inexact (a multiplication by 1/s would round some of them the
    # other way); a subnormal and a huge scale; zero (x / 0 is infinite,
    # 0 / 0 NaN: the lower bound)
    sq = np.float32(0.0123456789)
    mids = ((np.arange(-140, 140, dtype=np.float32) + np.float32(0.5)) * sq).astype(np.float32)
    near = [mids]
    for d in (1, 2):
        near += [np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf))]
        mids_up, mids_dn = near[-2], near[-1]
        if d == 2:
            near += [np.nextafter(mids_up, np.float32(np.inf)), np.nextafter(mids_dn, np.float32(-np.inf))]
    q('q_near_ties_inexact_reciprocal', np.concatenate(near).astype(np.float32), sq, np.uint8(128), np.uint8, 13)
    tiny = np.float32(1e-40)
    q('q_subnormal_scale', (np.arange(-300, 300, 7, dtype=np.float32) * tiny).astype(np.float32), tiny, np.int8(3),
      np.int8, 13)
    q('q_huge_scale', np.array([3e38, -3e38, 1e33, 5e32, 1.5e31, -2.5e31, 1e30, 0.0, 7.0], np.float32),
      np.float32(1e31), np.uint8(100), np.uint8, 13)
    with np.errstate(divide='ignore', invalid='ignore'):
        q('q_zero_scale', np.array([0.0, 1.0, -1.0, 5e-30, np.inf], np.float32), np.float32(0.0), np.uint8(9), np.uint8,
          13)
    q('q_int32_input', RNG.integers(-2000, 2000, size=(4, 6)).astype(np.int32), np.float32(7.5), np.int8(5), np.int8,
      13)
    q('q_scale_1d_single', (RNG.standard_normal((2, 3)) * 50).astype(np.float32), np.array([0.75], np.float32),
      np.array([12], np.uint8), np.uint8, 13)
    xf16 = (RNG.standard_normal((3, 8)) * 100).astype(np.float16)
    q('q_float16', xf16, np.float16(0.7), np.uint8(120), np.uint8, 19)
    q('q_float16_axis', xf16, np.array([0.3, 1.1, 2.7], np.float16), np.array([-5, 0, 9], np.int8), np.int8, 19,
      axis=0)
    q('q_bfloat16', BF16(RNG.standard_normal((4, 5)) * 100), BF16(np.float32(0.9)), np.int8(-2), np.int8, 19)
    x21 = (RNG.standard_normal((4, 6)) * 200).astype(np.float32)
    q('q_blocked_last_axis_ragged', x21, (RNG.random((4, 2)) * 3 + 0.2).astype(np.float32),
      RNG.integers(-20, 20, size=(4, 2)).astype(np.int8), np.int8, 21, axis=1, block=4)
    x21b = (RNG.standard_normal((7, 5, 3)) * 200).astype(np.float32)
    q('q_blocked_axis0', x21b, (RNG.random((3, 5, 3)) * 3 + 0.2).astype(np.float32),
      RNG.integers(0, 255, size=(3, 5, 3)).astype(np.uint8), np.uint8, 21, axis=0, block=3)
    q('q_blocked_block1', x21, (RNG.random((4, 6)) * 3 + 0.2).astype(np.float32),
      RNG.integers(-20, 20, size=(4, 6)).astype(np.int8), np.int8, 21, axis=1, block=1)
    q('q_int16', (RNG.standard_normal((5, 7)) * 40000).astype(np.float32), np.float32(0.8), np.int16(-300), np.int16,
      21)
    q('q_uint16_axis', (RNG.standard_normal((5, 7)) * 40000).astype(np.float32),
      (RNG.random(7) + 0.5).astype(np.float32), RNG.integers(0, 65535, size=7).astype(np.uint16), np.uint16, 21, axis=1)
    q('q_output_dtype_int8', (RNG.standard_normal((3, 4)) * 200).astype(np.float32), np.float32(1.5), None, np.int8,
      21, out_dtype=T.INT8)

    def dq(name, x, s, z, opset, axis=None, block=None, consts=()):
        attrs = {}
        if axis is not None:
            attrs['axis'] = axis
        if block is not None:
            attrs['block_size'] = block
        ins = ['x', 's'] + (['z'] if z is not None else [])
        node = helper.make_node('DequantizeLinear', ins, ['y'], **attrs)
        y = ref_dequantize(x, s, z, 1 if axis is None else axis, block or 0)
        inputs = [('x', x), ('s', s)] + ([('z', z)] if z is not None else [])
        save_case(root, name, node, inputs, [('y', y)], opset, initializers=consts)

    dq('dq_axis0_int8_negzp', rand_q(np.int8, (3, 4, 5)), np.array([0.5, 2.0, 3.25], np.float32),
       np.array([-128, 0, 127], np.int8), 13, axis=0)
    dq('dq_axis_last_uint8', rand_q(np.uint8, (2, 3, 6)), (RNG.random(6) + 0.1).astype(np.float32),
       rand_q(np.uint8, (6,)), 13, axis=-1)
    dq('dq_int32', RNG.integers(-2**31, 2**31 - 1, size=(3, 5)).astype(np.int32), np.float32(0.001), None, 13)
    dq('dq_int32_axis', RNG.integers(-2**20, 2**20, size=(3, 5)).astype(np.int32),
       (RNG.random(3) + 0.01).astype(np.float32), np.zeros(3, np.int32), 13, axis=0)
    dq('dq_no_zero_point_int8', rand_q(np.int8, (4, 4)), np.float32(0.25), None, 10)
    dq('dq_blocked_inner', rand_q(np.int8, (2, 7, 3)), (RNG.random((2, 3, 3)) + 0.1).astype(np.float32),
       rand_q(np.int8, (2, 3, 3)), 21, axis=1, block=3)
    dq('dq_blocked_last_axis', rand_q(np.uint8, (3, 10)), (RNG.random((3, 3)) + 0.1).astype(np.float32),
       rand_q(np.uint8, (3, 3)), 21, axis=-1, block=4)
    dq('dq_int16', rand_q(np.int16, (4, 9)), np.float32(0.01), np.int16(-1234), 21)
    dq('dq_uint16_axis', rand_q(np.uint16, (4, 9)), (RNG.random(4) + 0.1).astype(np.float32), rand_q(np.uint16, (4,)),
       21, axis=0)
    dq('dq_float16', rand_q(np.uint8, (3, 5)), np.float16(0.0123), np.uint8(128), 19)
    dq('dq_bfloat16_axis', rand_q(np.int8, (3, 5)), BF16(RNG.random(5) + 0.1), rand_q(np.int8, (5,)), 19, axis=1)
    dq('dq_constant_folded', rand_q(np.int8, (6, 4)), (RNG.random(6) + 0.1).astype(np.float32), rand_q(np.int8, (6,)),
       13, axis=0, consts=('x', 's', 'z'))


# ---- DynamicQuantizeLinear ------------------------------------------------------

def ref_dynamic(x):
    mn = np.float32(min(np.float32(0), x.min()))
    mx = np.float32(max(np.float32(0), x.max()))
    scale = np.float32(1.0) if mx == mn else np.float32((mx - mn) / np.float32(255))
    zp = np.float32(np.clip(-(mn / scale), 0, 255))
    zp = np.uint8(np.rint(zp))
    y = np.clip(np.rint(x / scale).astype(np.int64) + int(zp), 0, 255).astype(np.uint8)
    return y, np.array(scale, np.float32), np.array(zp, np.uint8)


def dynamic_cases(root):
    def dyn(name, x):
        node = helper.make_node('DynamicQuantizeLinear', ['x'], ['y', 'y_scale', 'y_zero_point'])
        y, s, z = ref_dynamic(x)
        save_case(root, name, node, [('x', x)], [('y', y), ('y_scale', s), ('y_zero_point', z)], 11)

    dyn('dynq_multi_chunk', (RNG.standard_normal((3, 1000, 17)) * 5 + 1).astype(np.float32))
    dyn('dynq_all_positive', (RNG.random((4, 33)) * 7 + 0.5).astype(np.float32))
    dyn('dynq_all_negative', (-RNG.random((50,)) * 3 - 0.1).astype(np.float32))
    dyn('dynq_all_zero', np.zeros((2, 3), np.float32))
    dyn('dynq_ties', np.array([-2.55, -1.275, 0, 1.275, 2.55, 0.005, 0.015, 0.025], np.float32))


# ---- MatMulInteger / QLinearMatMul ----------------------------------------------

def zp_expand_a(z, A):
    """a_zero_point/scale broadcast against A's rows (per tensor, [M], [..., M, 1])."""
    z = np.asarray(z)
    if z.size == 1 and z.ndim <= 1:
        return z.reshape(())
    if z.ndim == 1:
        return z.reshape(-1, 1)
    return z


def zp_expand_b(z, B):
    z = np.asarray(z)
    if z.size == 1 and z.ndim <= 1:
        return z.reshape(())
    return z  # [N] or [..., 1, N] broadcast along rows


def int_matmul(A, B, az, bz):
    a = A.astype(np.int64) - (zp_expand_a(az, A).astype(np.int64) if az is not None else 0)
    b = B.astype(np.int64) - (zp_expand_b(bz, B).astype(np.int64) if bz is not None else 0)
    return np.matmul(a, b)


def wrap32(v):
    return ((v + 2**31) % 2**32 - 2**31).astype(np.int32)


def requant(acc, mult, yz, yt):
    v = np.rint(acc.astype(np.float64) * mult.astype(np.float64)).astype(np.int64) + int(np.asarray(yz).reshape(()))
    lo, hi = qrange(yt)
    return np.clip(v, lo, hi).astype(yt)


def matmul_cases(root):
    def mmi(name, A, B, az=None, bz=None, consts=()):
        ins = ['A', 'B'] + (['az'] if az is not None or bz is not None else []) + (['bz'] if bz is not None else [])
        inputs = [('A', A), ('B', B)]
        if az is None and bz is not None:
            ins[2] = ''
        if az is not None:
            inputs.append(('az', az))
        if bz is not None:
            inputs.append(('bz', bz))
        node = helper.make_node('MatMulInteger', ins, ['Y'])
        save_case(root, name, node, inputs, [('Y', wrap32(int_matmul(A, B, az, bz)))], 10, consts)

    mmi('mmi_u8_s8_tensor_zp', rand_q(np.uint8, (5, 40)), rand_q(np.int8, (40, 33)), np.uint8(131), np.int8(-9))
    mmi('mmi_s8_u8_row_col_zp', rand_q(np.int8, (37, 300)), rand_q(np.uint8, (300, 70)), rand_q(np.int8, (37,)),
        rand_q(np.uint8, (70,)))
    mmi('mmi_batch_broadcast_nd_zp', rand_q(np.uint8, (2, 3, 5, 7)), rand_q(np.int8, (3, 7, 4)),
        rand_q(np.uint8, (2, 3, 5, 1)), rand_q(np.int8, (3, 1, 4)))
    mmi('mmi_broadcast_b_batch1', rand_q(np.int8, (4, 6, 19)), rand_q(np.int8, (1, 19, 9)), np.int8(-128),
        np.int8(127))
    mmi('mmi_1d_a', rand_q(np.uint8, (23,)), rand_q(np.uint8, (2, 23, 6)), np.uint8(255), np.uint8(0))
    mmi('mmi_1d_b', rand_q(np.uint8, (3, 4, 23)), rand_q(np.int8, (23,)), np.uint8(1), np.int8(3))
    mmi('mmi_no_zero_points', rand_q(np.uint8, (8, 64)), rand_q(np.uint8, (64, 8)))
    mmi('mmi_only_b_zero_point', rand_q(np.int8, (3, 5)), rand_q(np.uint8, (5, 2)), None, rand_q(np.uint8, (2,)))
    # at most 4 rows: the unpacked (axpy) path, several column blocks
    mmi('mmi_few_rows_batch_nd_zp', rand_q(np.uint8, (2, 3, 2, 37)), rand_q(np.int8, (3, 37, 300)),
        rand_q(np.uint8, (2, 3, 2, 1)), rand_q(np.int8, (3, 1, 300)))
    mmi('mmi_gemv_row_col_zp', rand_q(np.int8, (1, 700)), rand_q(np.int8, (700, 513)), rand_q(np.int8, (1,)),
        rand_q(np.int8, (513,)))
    ext_a = np.full((6, 512), -128, np.int8)
    ext_b = np.full((512, 5), -128, np.int8)
    mmi('mmi_extremes', ext_a, ext_b, np.int8(127), np.int8(127))
    # the outer-product kernel: even K reads A directly (per-row zero points
    # with batch dims), odd K packs it; rows not a multiple of the register
    # tile, columns over several blocks and a ragged last vector
    mmi('mmi_even_k_direct_batched_row_zp', rand_q(np.uint8, (2, 9, 48)), rand_q(np.int8, (48, 150)),
        rand_q(np.uint8, (2, 9, 1)), rand_q(np.int8, (150,)))
    mmi('mmi_odd_k_packed', rand_q(np.int8, (21, 33)), rand_q(np.uint8, (33, 40)), rand_q(np.int8, (21,)),
        np.uint8(77))
    # constant B (a dynamically quantized layer's weights): packed at
    # compile time at -O2 and up (HC_PACK_KPAIRS_I16) with its constant zero
    # point; per column, batched with per-matrix zero points, odd K and a
    # ragged last vector, uint8 B; a zero point given as an input keeps the
    # run-time packing
    mmi('mmi_const_b_col_zp', rand_q(np.uint8, (12, 64)), rand_q(np.int8, (64, 40)), np.uint8(129),
        rand_q(np.int8, (40,)), consts=('B', 'bz'))
    mmi('mmi_const_b_batched_odd_k', rand_q(np.uint8, (2, 3, 9, 37)), rand_q(np.int8, (3, 37, 21)),
        rand_q(np.uint8, (2, 3, 9, 1)), rand_q(np.int8, (3, 1, 21)), consts=('B', 'bz'))
    mmi('mmi_const_b_u8_no_zp', rand_q(np.int8, (8, 50)), rand_q(np.uint8, (50, 17)), consts=('B',))
    mmi('mmi_const_b_zp_input', rand_q(np.uint8, (6, 30)), rand_q(np.int8, (30, 33)), np.uint8(3),
        rand_q(np.int8, (33,)), consts=('B',))
    # the VNNI byte path on 512-bit VNNI targets (HC_PACK_KQUADS_S8): int8 B
    # with zero point 0 (absent or zeros), K a multiple of 4; uint8 and int8
    # A (offset by 128 in the kernel), per-tensor and per-row zero points,
    # batch dims, a ragged last vector, the int32 extremes
    mmi('mmi_const_b_vnni_u8a', rand_q(np.uint8, (12, 64)), rand_q(np.int8, (64, 40)), np.uint8(131),
        consts=('B',))
    mmi('mmi_const_b_vnni_s8a_batched_row_zp', rand_q(np.int8, (2, 3, 9, 36)), rand_q(np.int8, (3, 36, 21)),
        rand_q(np.int8, (2, 3, 9, 1)), np.zeros((3, 1, 21), np.int8), consts=('B', 'bz'))
    mmi('mmi_const_b_vnni_s8a_no_zp', rand_q(np.int8, (8, 128)), rand_q(np.int8, (128, 17)), consts=('B',))
    mmi('mmi_const_b_vnni_bz_input', rand_q(np.uint8, (7, 32)), rand_q(np.int8, (32, 18)), np.uint8(9),
        np.zeros((18,), np.int8), consts=('B',))
    mmi('mmi_const_b_vnni_extremes', np.full((6, 512), -128, np.int8), np.full((512, 5), -128, np.int8),
        np.int8(127), np.int8(0), consts=('B', 'bz'))

    def qmm(name, a, as_, az, b, bs, bz, ys, yz, opset=10, consts=()):
        node = helper.make_node('QLinearMatMul', ['a', 'as', 'az', 'b', 'bs', 'bz', 'ys', 'yz'], ['y'])
        acc = wrap32(int_matmul(a, b, az, bz)).astype(np.int64)
        if isinstance(as_, BF16):
            # the multiplier in bfloat16 arithmetic: each step rounded to bfloat16
            prod = bf16_round(zp_expand_a(as_.values, a) * zp_expand_b(bs.values, b))
            mult = bf16_round(prod / ys.values.reshape(()))
        else:
            # float32 (or float16) arithmetic in the scales' own type, as the reference
            mult = (zp_expand_a(as_, a) * zp_expand_b(bs, b)) / np.asarray(ys).reshape(())
        y = requant(acc, np.asarray(mult), yz, np.asarray(yz).dtype.type)
        save_case(root, name, node, [('a', a), ('as', as_), ('az', az), ('b', b), ('bs', bs), ('bz', bz), ('ys', ys),
                                     ('yz', yz)], [('y', y)], opset, consts)

    f32 = np.float32
    qmm('qmm_u8_tensor', rand_q(np.uint8, (9, 50)), f32(0.02), np.uint8(120), rand_q(np.uint8, (50, 11)), f32(0.015),
        np.uint8(130), f32(0.6), np.uint8(128))
    # constant int8 B with zero point 0 (a QDQ model's MatMul weights): the
    # VNNI byte path on 512-bit VNNI targets, requantized per column
    qmm('qmm_const_b_vnni_u8a_col_scale', rand_q(np.uint8, (10, 64)), f32(0.02), np.uint8(117),
        rand_q(np.int8, (64, 35)), (RNG.random(35) * 0.05 + 0.01).astype(f32), np.zeros((35,), np.int8), f32(0.7),
        np.uint8(128), consts=('b', 'bs', 'bz'))
    qmm('qmm_const_b_vnni_s8a_batched', rand_q(np.int8, (2, 6, 40)), (RNG.random((2, 6, 1)) * 0.05 + 0.01).astype(f32),
        rand_q(np.int8, (2, 6, 1)), rand_q(np.int8, (2, 40, 19)), f32(0.03), np.int8(0), f32(0.5), np.int8(-3),
        consts=('b', 'bs', 'bz'))
    # constant uint8 B with per-column zero points: int16 K-pair panels
    # packed at compile time (HC_PACK_KPAIRS_I16, targets without the byte
    # path), zero points subtracted there; A batched over a 2-D B, odd K
    qmm('qmm_const_b_pairs_u8b_col_zp', rand_q(np.uint8, (2, 9, 33)), f32(0.02), np.uint8(100),
        rand_q(np.uint8, (33, 21)), (RNG.random(21) * 0.05 + 0.01).astype(f32), rand_q(np.uint8, (21,)), f32(0.4),
        np.uint8(120), consts=('b', 'bs', 'bz'))
    qmm('qmm_s8_row_col', rand_q(np.int8, (7, 45)), (RNG.random(7) * 0.05 + 0.01).astype(f32), rand_q(np.int8, (7,)),
        rand_q(np.int8, (45, 13)), (RNG.random(13) * 0.05 + 0.01).astype(f32), rand_q(np.int8, (13,)), f32(0.9),
        np.int8(-10))
    qmm('qmm_batched_nd_params', rand_q(np.uint8, (2, 5, 30)), (RNG.random((2, 5, 1)) * 0.05 + 0.01).astype(f32),
        rand_q(np.uint8, (2, 5, 1)), rand_q(np.int8, (2, 30, 6)), (RNG.random((2, 1, 6)) * 0.05 + 0.01).astype(f32),
        rand_q(np.int8, (2, 1, 6)), f32(0.3), np.uint8(100))
    qmm('qmm_few_rows_row_col', rand_q(np.uint8, (3, 50)), (RNG.random(3) * 0.05 + 0.01).astype(f32),
        rand_q(np.uint8, (3,)), rand_q(np.int8, (50, 270)), (RNG.random(270) * 0.05 + 0.01).astype(f32),
        rand_q(np.int8, (270,)), f32(0.5), np.uint8(77))
    qmm('qmm_few_rows_nd_broadcast', rand_q(np.int8, (2, 1, 4, 16)),
        (RNG.random((2, 1, 4, 1)) * 0.05 + 0.01).astype(f32), rand_q(np.int8, (2, 1, 4, 1)),
        rand_q(np.uint8, (3, 16, 5)), (RNG.random((3, 1, 5)) * 0.05 + 0.01).astype(f32),
        rand_q(np.uint8, (3, 1, 5)), f32(0.08), np.int8(-20))
    qmm('qmm_even_k_many_rows', rand_q(np.uint8, (37, 66)), (RNG.random(37) * 0.05 + 0.01).astype(f32),
        rand_q(np.uint8, (37,)), rand_q(np.int8, (66, 150)), (RNG.random(150) * 0.05 + 0.01).astype(f32),
        rand_q(np.int8, (150,)), f32(0.7), np.uint8(128))
    f16 = np.float16
    qmm('qmm_float16_scales', rand_q(np.uint8, (6, 40)), (RNG.random(6) * 0.05 + 0.01).astype(f16),
        rand_q(np.uint8, (6,)), rand_q(np.int8, (40, 9)), f16(0.013), np.int8(1), f16(0.4), np.uint8(128), opset=21)
    qmm('qmm_bfloat16_scales', rand_q(np.int8, (2, 3, 24)), BF16(np.float32(0.021)), np.int8(-4),
        rand_q(np.uint8, (24, 7)), BF16(RNG.random(7) * 0.05 + 0.01), rand_q(np.uint8, (7,)), BF16(np.float32(0.5)),
        np.int8(0), opset=21)
    qmm('qmm_broadcast_saturate_s8', rand_q(np.uint8, (3, 4, 64)), f32(0.1), np.uint8(0), rand_q(np.int8, (64, 5)),
        f32(0.1), np.int8(0), f32(0.05), np.int8(3))


# ---- ConvInteger / QLinearConv ---------------------------------------------------

def conv_geometry(xs, ks, strides, dil, pads, auto_pad):
    nd = len(ks)
    pb, pe, out = [], [], []
    for i in range(nd):
        ek = (ks[i] - 1) * dil[i] + 1
        if auto_pad in ('SAME_UPPER', 'SAME_LOWER'):
            o = -(-xs[i] // strides[i])
            total = max(0, (o - 1) * strides[i] + ek - xs[i])
            b = total // 2 if auto_pad == 'SAME_UPPER' else total - total // 2
            pb.append(b)
            pe.append(total - b)
        elif auto_pad == 'VALID':
            pb.append(0)
            pe.append(0)
        else:
            pb.append(pads[i])
            pe.append(pads[nd + i])
        out.append((xs[i] + pb[i] + pe[i] - ek) // strides[i] + 1)
    return pb, pe, out


def int_conv(x, w, xz, wz, group, strides, dil, pads, auto_pad):
    """Exact integer convolution of (x - xz) and (w - wz) (padding = 0 after
    the zero point is subtracted), int64."""
    N, C = x.shape[:2]
    M = w.shape[0]
    nd = x.ndim - 2
    ks = list(w.shape[2:])
    pb, pe, out = conv_geometry(list(x.shape[2:]), ks, strides, dil, pads, auto_pad)
    xd = x.astype(np.int64) - (int(np.asarray(xz).reshape(())) if xz is not None else 0)
    wd = w.astype(np.int64)
    if wz is not None:
        wz = np.asarray(wz).astype(np.int64)
        wd = wd - (wz.reshape((-1,) + (1,) * (nd + 1)) if wz.size > 1 else wz.reshape(()))
    xp = np.pad(xd, [(0, 0), (0, 0)] + [(pb[i], pe[i]) for i in range(nd)])
    Cg, Mg = C // group, M // group
    y = np.zeros([N, M] + out, np.int64)
    for g in range(group):
        for m in range(g * Mg, (g + 1) * Mg):
            for tap in np.ndindex(*ks):
                sl = [slice(None), slice(g * Cg, (g + 1) * Cg)]
                for i in range(nd):
                    st = tap[i] * dil[i]
                    sl.append(slice(st, st + (out[i] - 1) * strides[i] + 1, strides[i]))
                patch = xp[tuple(sl)]  # N, Cg, out...
                wv = wd[(m, slice(None)) + tap]  # Cg
                y[:, m] += np.tensordot(patch, wv, axes=([1], [0]))
    return y


def conv_attrs(nd, group, strides, dil, pads, auto_pad, ks):
    a = {'group': group}
    if strides != [1] * nd:
        a['strides'] = strides
    if dil != [1] * nd:
        a['dilations'] = dil
    if auto_pad != 'NOTSET':
        a['auto_pad'] = auto_pad
    elif any(pads):
        a['pads'] = pads
    a['kernel_shape'] = ks
    return a


def conv_cases(root):
    def ci(name, x, w, xz, wz, group=1, strides=None, dil=None, pads=None, auto_pad='NOTSET', consts=()):
        nd = x.ndim - 2
        strides = strides or [1] * nd
        dil = dil or [1] * nd
        pads = pads or [0] * (2 * nd)
        ins = ['x', 'w'] + (['xz'] if xz is not None or wz is not None else []) + (['wz'] if wz is not None else [])
        inputs = [('x', x), ('w', w)]
        if xz is None and wz is not None:
            ins[2] = ''
        if xz is not None:
            inputs.append(('xz', xz))
        if wz is not None:
            inputs.append(('wz', wz))
        node = helper.make_node('ConvInteger', ins, ['y'],
                                **conv_attrs(nd, group, strides, dil, pads, auto_pad, list(w.shape[2:])))
        y = wrap32(int_conv(x, w, xz, wz, group, strides, dil, pads, auto_pad))
        save_case(root, name, node, inputs, [('y', y)], 10, consts)

    ci('ci_grouped_strided_padded_dilated', rand_q(np.uint8, (2, 4, 9, 8)), rand_q(np.int8, (6, 2, 3, 2)),
       np.uint8(128), rand_q(np.int8, (6,)), group=2, strides=[2, 1], dil=[1, 2], pads=[1, 0, 2, 1])
    ci('ci_1d_same_upper', rand_q(np.int8, (2, 3, 11)), rand_q(np.uint8, (5, 3, 3)), np.int8(-5), np.uint8(200),
       strides=[2], auto_pad='SAME_UPPER')
    ci('ci_2d_same_lower', rand_q(np.uint8, (1, 3, 7, 6)), rand_q(np.int8, (4, 3, 4, 3)), np.uint8(7), np.int8(-1),
       strides=[2, 2], auto_pad='SAME_LOWER')
    ci('ci_3d_valid', rand_q(np.uint8, (1, 2, 5, 6, 4)), rand_q(np.uint8, (3, 2, 2, 3, 2)), np.uint8(100),
       rand_q(np.uint8, (3,)), auto_pad='VALID')
    ci('ci_depthwise', rand_q(np.int8, (1, 8, 10, 10)), rand_q(np.int8, (8, 1, 3, 3)), np.int8(3),
       rand_q(np.int8, (8,)), group=8, pads=[1, 1, 1, 1])
    ci('ci_no_zero_points', rand_q(np.int8, (1, 16, 5, 5)), rand_q(np.uint8, (20, 16, 1, 1)), None, None)
    ci('ci_only_w_zero_point', rand_q(np.uint8, (1, 3, 6, 6)), rand_q(np.int8, (2, 3, 3, 3)), None, np.int8(-7),
       pads=[2, 2, 0, 0])
    # depthwise path: narrow planes (short vectors), channel multiplier
    ci('ci_depthwise_7x7_plane', rand_q(np.uint8, (2, 5, 7, 7)), rand_q(np.uint8, (5, 1, 3, 3)), np.uint8(90),
       rand_q(np.uint8, (5,)), group=5, pads=[1, 1, 1, 1])
    ci('ci_depthwise_multiplier_dilated', rand_q(np.int8, (1, 4, 20, 40)), rand_q(np.int8, (8, 1, 5, 5)),
       np.int8(-7), rand_q(np.int8, (8,)), group=4, dil=[2, 2], pads=[4, 3, 4, 5])
    # depthwise byte path (uint8 x, int8 w with zero point 0 on a VNNI
    # target): quads of taps per kernel row, 16/8/4-lane vectors, stride,
    # dilation, kernels wider than 4 taps, channel multiplier
    i8z = lambda n: np.zeros(n, np.int8)
    ci('ci_dw_u8_3x3', rand_q(np.uint8, (2, 6, 20, 37)), rand_q(np.int8, (6, 1, 3, 3)), np.uint8(128), i8z(6),
       group=6, pads=[1, 1, 1, 1], consts=('wz',))
    ci('ci_dw_u8_5x5_s2_dilated', rand_q(np.uint8, (1, 4, 23, 50)), rand_q(np.int8, (4, 1, 5, 5)), np.uint8(17), None,
       group=4, strides=[2, 2], dil=[1, 2], pads=[2, 4, 2, 4])
    ci('ci_dw_u8_narrow_planes', rand_q(np.uint8, (1, 3, 9, 11)), rand_q(np.int8, (3, 1, 3, 3)), np.uint8(255), i8z(3),
       group=3, pads=[1, 1, 1, 1], consts=('w', 'wz'))
    ci('ci_dw_u8_6x6', rand_q(np.uint8, (1, 3, 6, 6)), rand_q(np.int8, (3, 1, 3, 3)), np.uint8(0), None,
       group=3, pads=[1, 1, 1, 1])
    ci('ci_dw_u8_7x7_multiplier', rand_q(np.uint8, (1, 3, 16, 30)), rand_q(np.int8, (6, 1, 7, 7)), np.uint8(60),
       i8z(6), group=3, pads=[3, 3, 3, 3], consts=('wz',))
    ci('ci_wide_channels', rand_q(np.uint8, (1, 40, 6, 5)), rand_q(np.int8, (37, 40, 3, 3)), np.uint8(121),
       rand_q(np.int8, (37,)), pads=[1, 1, 1, 1])
    # the direct convolution (ci_use_taps) with int32 outputs: each padded
    # row's dropped columns skipped by the plain store
    ci('ci_taps_int32_out', rand_q(np.uint8, (1, 8, 9, 21)), rand_q(np.int8, (6, 8, 3, 3)), np.uint8(130), i8z(6),
       pads=[1, 0, 0, 1], consts=('w', 'wz'))
    # constant weights and zero points: int16 rows packed at compile time
    # with the zero points subtracted (HC_PACK_ROWS_I16, targets without
    # the VNNI byte path)
    ci('ci_rows16_u8w_zp_1x1', rand_q(np.uint8, (1, 24, 7, 9)), rand_q(np.uint8, (19, 24, 1, 1)), np.uint8(77),
       rand_q(np.uint8, (19,)), consts=('w', 'wz'))

    def qc(name, x, xs, xz, w, ws, wz, ys, yz, B=None, group=1, strides=None, dil=None, pads=None,
           auto_pad='NOTSET', consts=()):
        nd = x.ndim - 2
        strides = strides or [1] * nd
        dil = dil or [1] * nd
        pads = pads or [0] * (2 * nd)
        ins = ['x', 'xs', 'xz', 'w', 'ws', 'wz', 'ys', 'yz'] + (['B'] if B is not None else [])
        inputs = [('x', x), ('xs', xs), ('xz', xz), ('w', w), ('ws', ws), ('wz', wz), ('ys', ys), ('yz', yz)]
        if B is not None:
            inputs.append(('B', B))
        node = helper.make_node('QLinearConv', ins, ['y'],
                                **conv_attrs(nd, group, strides, dil, pads, auto_pad, list(w.shape[2:])))
        acc = wrap32(int_conv(x, w, xz, wz, group, strides, dil, pads, auto_pad)).astype(np.int64)
        shp = (1, -1) + (1,) * nd
        if B is not None:
            acc = wrap32(acc + B.astype(np.int64).reshape(shp)).astype(np.int64)
        wsv = np.asarray(ws, np.float32)
        mult = (np.float32(np.asarray(xs).reshape(())) * (wsv.reshape(shp) if wsv.size > 1 else wsv.reshape(()))) \
            / np.float32(np.asarray(ys).reshape(()))
        y = requant(acc, np.asarray(mult, np.float32), yz, np.asarray(yz).dtype.type)
        save_case(root, name, node, inputs, [('y', y)], 10, consts)

    f32 = np.float32
    qc('qc_per_channel_bias_grouped', rand_q(np.uint8, (2, 4, 8, 7)), f32(0.02), np.uint8(128),
       rand_q(np.int8, (6, 2, 3, 3)), (RNG.random(6) * 0.02 + 0.005).astype(f32), rand_q(np.int8, (6,)), f32(0.1),
       np.uint8(120), B=RNG.integers(-5000, 5000, size=6).astype(np.int32), group=2, strides=[2, 1],
       pads=[1, 1, 0, 2])
    qc('qc_s8_dilated_tensor', rand_q(np.int8, (1, 3, 9, 9)), f32(0.05), np.int8(-3), rand_q(np.int8, (4, 3, 2, 2)),
       f32(0.01), np.int8(2), f32(0.07), np.int8(-1), dil=[2, 3])
    qc('qc_1x1_batch_bias', rand_q(np.uint8, (2, 12, 4, 4)), f32(0.03), np.uint8(10), rand_q(np.uint8, (7, 12, 1, 1)),
       (RNG.random(7) * 0.02 + 0.005).astype(f32), rand_q(np.uint8, (7,)), f32(0.2), np.uint8(0),
       B=RNG.integers(-20000, 20000, size=7).astype(np.int32))
    qc('qc_1d_same_upper_s8', rand_q(np.int8, (1, 5, 13)), f32(0.1), np.int8(0), rand_q(np.int8, (3, 5, 4)),
       np.array([0.01, 0.02, 0.03], f32), np.array([0, 1, -1], np.int8), f32(0.05), np.int8(5), strides=[3],
       auto_pad='SAME_UPPER')
    # depthwise path, stride 2 (interior vectors read every other byte), odd sizes, bias
    qc('qc_depthwise_stride2_s8w', rand_q(np.uint8, (1, 24, 29, 37)), f32(0.02), np.uint8(131),
       rand_q(np.int8, (24, 1, 3, 3)), (RNG.random(24) * 0.02 + 0.005).astype(f32), rand_q(np.int8, (24,)),
       f32(0.05), np.uint8(3), B=RNG.integers(-3000, 3000, size=24).astype(np.int32), group=24, strides=[2, 2],
       pads=[1, 1, 1, 1])
    qc('qc_depthwise_wide_s8', rand_q(np.int8, (1, 3, 12, 70)), f32(0.03), np.int8(-2), rand_q(np.int8, (3, 1, 3, 3)),
       f32(0.01), np.int8(0), f32(0.04), np.int8(-128), group=3, pads=[0, 1, 2, 1])
    qc('qc_depthwise_u8_bias', rand_q(np.uint8, (1, 16, 31, 45)), f32(0.02), np.uint8(120),
       rand_q(np.int8, (16, 1, 3, 3)), (RNG.random(16) * 0.02 + 0.005).astype(f32), i8z(16), f32(0.05), np.uint8(7),
       B=RNG.integers(-3000, 3000, size=16).astype(np.int32), group=16, pads=[1, 1, 1, 1], consts=('w', 'wz', 'B'))
    qc('qc_depthwise_u8_stride2', rand_q(np.uint8, (1, 8, 33, 33)), f32(0.02), np.uint8(3),
       rand_q(np.int8, (8, 1, 3, 3)), f32(0.01), np.int8(0), f32(0.05), np.uint8(128), group=8, strides=[2, 2],
       pads=[0, 0, 1, 1], consts=('wz',))
    # outer-product kernel: 1x1 over several column blocks, rows not a
    # multiple of the tile, per-channel zero points read directly (even K)
    qc('qc_1x1_many_positions_zp', rand_q(np.uint8, (1, 32, 17, 19)), f32(0.02), np.uint8(128),
       rand_q(np.int8, (35, 32, 1, 1)), (RNG.random(35) * 0.02 + 0.005).astype(f32), rand_q(np.int8, (35,)), f32(0.3),
       np.uint8(100), B=RNG.integers(-20000, 20000, size=35).astype(np.int32))
    # odd K (packed weights), uint8 weights with zero points, stride 2
    qc('qc_odd_k_u8w_stride2', rand_q(np.uint8, (1, 3, 15, 15)), f32(0.05), np.uint8(10), rand_q(np.uint8, (18, 3, 3, 3)),
       (RNG.random(18) * 0.02 + 0.005).astype(f32), rand_q(np.uint8, (18,)), f32(0.4), np.uint8(128),
       B=RNG.integers(-5000, 5000, size=18).astype(np.int32), strides=[2, 2], pads=[1, 1, 1, 1])
    # even K per group, uint8 weights, int8 activations, batch 2
    qc('qc_grouped_even_k_s8x_u8w', rand_q(np.int8, (2, 6, 9, 11)), f32(0.05), np.int8(4), rand_q(np.uint8, (20, 3, 2, 2)),
       (RNG.random(20) * 0.02 + 0.005).astype(f32), rand_q(np.uint8, (20,)), f32(0.2), np.int8(0), group=2,
       pads=[0, 1, 1, 0])
    # one output position (a Gemm at batch 1): the lanes-over-K path, with a
    # scalar tail of K, per-channel zero points; batch 2 and uint8 weights
    qc('qc_1x1_one_position_zp', rand_q(np.uint8, (1, 70, 1, 1)), f32(0.02), np.uint8(128),
       rand_q(np.int8, (37, 70, 1, 1)), (RNG.random(37) * 0.02 + 0.005).astype(f32), rand_q(np.int8, (37,)), f32(0.3),
       np.uint8(100), B=RNG.integers(-20000, 20000, size=37).astype(np.int32))
    qc('qc_1x1_one_position_batch_u8w', rand_q(np.int8, (2, 96, 1, 1)), f32(0.02), np.int8(-3),
       rand_q(np.uint8, (10, 96, 1, 1)), f32(0.01), np.uint8(131), f32(0.5), np.int8(0))
    # constant int8 weights with zero point 0 and K a multiple of 4: the VNNI
    # byte path on AVX512-VNNI targets (x' = x, or x + 128 for int8 x;
    # padding reads zx'; W's row sums correct the x zero point)
    qc('qc_vnni_u8x_3x3_const_w', rand_q(np.uint8, (1, 16, 11, 13)), f32(0.02), np.uint8(121),
       rand_q(np.int8, (20, 16, 3, 3)), (RNG.random(20) * 0.02 + 0.005).astype(f32), np.zeros(20, np.int8), f32(0.3),
       np.uint8(100), B=RNG.integers(-20000, 20000, size=20).astype(np.int32), pads=[1, 1, 1, 1],
       consts=('w', 'wz', 'B'))
    # K longer than one slice of the product task (ig_k_slices): partial
    # sums parked in the task's tile between slices, the x zero point's
    # correction applied after the last; rows not a multiple of the tile,
    # a ragged column group. The VNNI byte path (225 K quads), and the int16
    # path (per-channel zero points of run-time weights, 405 K pairs)
    qc('qc_vnni_k_slices_const_w', rand_q(np.uint8, (1, 100, 9, 10)), f32(0.02), np.uint8(121),
       rand_q(np.int8, (42, 100, 3, 3)), (RNG.random(42) * 0.002 + 0.0005).astype(f32), np.zeros(42, np.int8),
       f32(0.3), np.uint8(100), B=RNG.integers(-20000, 20000, size=42).astype(np.int32), pads=[1, 1, 1, 1],
       consts=('w', 'wz', 'B'))
    qc('qc_pairs_k_slices_zp', rand_q(np.int8, (2, 90, 7, 8)), f32(0.05), np.int8(-3),
       rand_q(np.uint8, (18, 90, 3, 3)), (RNG.random(18) * 0.002 + 0.0005).astype(f32), rand_q(np.uint8, (18,)),
       f32(0.4), np.int8(2), pads=[1, 0, 1, 2])
    # the direct convolution of VNNI targets (ci_use_taps): x copied once
    # into padded channel quads, no im2col; the product's columns are whole
    # padded rows whose last (KW-1)*dx columns are dropped. int8 x, groups,
    # dilation, asymmetric padding, batch 2, interior rows of 16 positions
    # and a tail (4 x 4 tiles); a 5x3 kernel over 2 K slices with 8 x 3
    # tiles; a 7x7 plane (one column group); a 5x5 kernel over a narrow
    # plane, whose dropped columns would cost too much (im2col instead)
    qc('qc_taps_s8x_grouped_dilated', rand_q(np.int8, (2, 16, 6, 37)), f32(0.05), np.int8(-7),
       rand_q(np.int8, (12, 8, 3, 3)), (RNG.random(12) * 0.02 + 0.005).astype(f32), np.zeros(12, np.int8),
       f32(0.3), np.int8(2), B=RNG.integers(-5000, 5000, size=12).astype(np.int32), group=2, dil=[2, 3],
       pads=[1, 2, 2, 0], consts=('w', 'wz', 'B'))
    qc('qc_taps_u8x_5x3_k_slices', rand_q(np.uint8, (1, 64, 20, 21)), f32(0.02), np.uint8(118),
       rand_q(np.int8, (24, 64, 5, 3)), (RNG.random(24) * 0.002 + 0.0005).astype(f32), np.zeros(24, np.int8),
       f32(0.3), np.uint8(100), B=RNG.integers(-20000, 20000, size=24).astype(np.int32), pads=[2, 1, 2, 1],
       consts=('w', 'wz', 'B'))
    qc('qc_taps_u8x_7x7_plane', rand_q(np.uint8, (1, 32, 7, 7)), f32(0.02), np.uint8(3),
       rand_q(np.int8, (20, 32, 3, 3)), f32(0.004), np.int8(0), f32(0.2), np.uint8(128), pads=[1, 1, 1, 1],
       consts=('w', 'wz'))
    qc('qc_taps_rejected_5x5_narrow', rand_q(np.uint8, (1, 8, 12, 12)), f32(0.02), np.uint8(121),
       rand_q(np.int8, (10, 8, 5, 5)), f32(0.004), np.int8(0), f32(0.3), np.uint8(100), consts=('w', 'wz'))
    # requantised from registers (constant scales, one K slice): groups,
    # batch 2, rows past the last whole tile, a ragged last column block;
    # a strided 3x3 over int8 x
    qc('qc_vnni_1x1_registers_grouped', rand_q(np.uint8, (2, 16, 9, 23)), f32(0.02), np.uint8(121),
       rand_q(np.int8, (42, 8, 1, 1)), (RNG.random(42) * 0.02 + 0.005).astype(f32), np.zeros(42, np.int8),
       f32(0.3), np.uint8(100), B=RNG.integers(-2000, 2000, size=42).astype(np.int32), group=2,
       consts=('w', 'wz', 'B', 'xs', 'ws', 'ys'))
    qc('qc_vnni_3x3_s2_registers_s8x', rand_q(np.int8, (1, 12, 15, 17)), f32(0.05), np.int8(-3),
       rand_q(np.int8, (20, 12, 3, 3)), f32(0.004), np.int8(0), f32(0.2), np.int8(5), strides=[2, 2],
       pads=[1, 1, 1, 1], consts=('w', 'wz', 'xs', 'ws', 'ys'))
    qc('qc_vnni_s8x_1x1_stride2_const_w', rand_q(np.int8, (2, 8, 9, 9)), f32(0.05), np.int8(-5),
       rand_q(np.int8, (12, 8, 1, 1)), f32(0.01), np.int8(0), f32(0.2), np.int8(3), strides=[2, 2],
       consts=('w', 'wz'))
    qc('qc_vnni_grouped_extremes_const_w', np.full((1, 8, 6, 6), 255, np.uint8), f32(0.05), np.uint8(0),
       np.full((6, 4, 1, 1), -128, np.int8), f32(0.01), np.int8(0), f32(0.2), np.uint8(128), group=2,
       pads=[1, 0, 0, 1], consts=('w',))
    qc('qc_vnni_odd_k_const_w', rand_q(np.uint8, (1, 3, 15, 17)), f32(0.02), np.uint8(140),
       rand_q(np.int8, (10, 3, 3, 3)), (RNG.random(10) * 0.02 + 0.005).astype(f32), np.zeros(10, np.int8), f32(0.3),
       np.uint8(90), strides=[2, 2], pads=[1, 1, 1, 1], consts=('w', 'wz'))
    qc('qc_depthwise_u8', rand_q(np.uint8, (1, 6, 7, 7)), f32(0.01), np.uint8(127), rand_q(np.uint8, (6, 1, 3, 3)),
       (RNG.random(6) * 0.02 + 0.005).astype(f32), rand_q(np.uint8, (6,)), f32(0.02), np.uint8(128), group=6,
       pads=[1, 1, 1, 1], B=RNG.integers(-300, 300, size=6).astype(np.int32))
    # pointwise convolutions with whole quads of channels: the K-quad
    # packing interleaves four input rows 16 positions at a time
    # (ci_pack_quads_1x1), then a tail of P % 16 positions and the padding
    qc('qc_vnni_pointwise_quads_u8_batch', rand_q(np.uint8, (2, 8, 5, 7)), f32(0.02), np.uint8(121),
       rand_q(np.int8, (12, 8, 1, 1)), (RNG.random(12) * 0.02 + 0.005).astype(f32), np.zeros(12, np.int8), f32(0.3),
       np.uint8(100), B=RNG.integers(-2000, 2000, size=12).astype(np.int32), consts=('w', 'wz', 'B'))
    qc('qc_vnni_pointwise_quads_s8_grouped', rand_q(np.int8, (1, 16, 6, 9)), f32(0.05), np.int8(-5),
       rand_q(np.int8, (10, 8, 1, 1)), f32(0.01), np.int8(0), f32(0.2), np.int8(3), group=2, consts=('w', 'wz'))
    # depthwise byte path over whole rows (border columns in the vectors,
    # loads masked to the row, requantised from registers): dilation,
    # asymmetric padding, a channel multiplier, a last vector overlapping
    # the one before, and stride 2
    qc('qc_depthwise_u8_full_rows_dilated', rand_q(np.uint8, (1, 5, 13, 21)), f32(0.02), np.uint8(117),
       rand_q(np.int8, (10, 1, 3, 3)), (RNG.random(10) * 0.02 + 0.005).astype(f32), np.zeros(10, np.int8), f32(0.05),
       np.uint8(9), B=RNG.integers(-3000, 3000, size=10).astype(np.int32), group=5, dil=[2, 2], pads=[2, 1, 1, 2],
       consts=('w', 'wz', 'B'))
    qc('qc_depthwise_u8_full_rows_stride2_5x5', rand_q(np.uint8, (1, 4, 23, 41)), f32(0.02), np.uint8(250),
       rand_q(np.int8, (4, 1, 5, 5)), f32(0.01), np.int8(0), f32(0.05), np.uint8(128), group=4, strides=[2, 2],
       pads=[2, 2, 1, 2], consts=('w', 'wz'))
    # the VNNI im2col of 2-D convolutions (ci_pack_quads_2d): a first
    # convolution (3 channels, 7x7, stride 2, K = 147 not a multiple of 4,
    # 16-column vectors, the last one overlapping), batch 2; int8 x with
    # asymmetric padding and dilation, 16 columns and a ragged end
    qc('qc_vnni_im2col_7x7_stride2', rand_q(np.uint8, (2, 3, 41, 45)), f32(0.02), np.uint8(113),
       rand_q(np.int8, (8, 3, 7, 7)), (RNG.random(8) * 0.02 + 0.005).astype(f32), np.zeros(8, np.int8), f32(0.5),
       np.uint8(97), B=RNG.integers(-5000, 5000, size=8).astype(np.int32), strides=[2, 2], pads=[3, 3, 3, 3],
       consts=('w', 'wz', 'B'))
    qc('qc_vnni_im2col_s8_dilated', rand_q(np.int8, (1, 6, 12, 37)), f32(0.05), np.int8(-7),
       rand_q(np.int8, (5, 6, 3, 3)), f32(0.01), np.int8(0), f32(0.3), np.int8(2), dil=[2, 1], pads=[1, 2, 2, 0],
       consts=('w', 'wz'))
    # constant weights with non-zero constant zero points (per channel and
    # per tensor): int16 rows packed at compile time on targets without the
    # VNNI byte path, zero points subtracted there; groups, padding, odd K,
    # stride and dilation
    qc('qc_rows16_u8w_zp_grouped', rand_q(np.uint8, (2, 8, 13, 19)), f32(0.02), np.uint8(119),
       rand_q(np.uint8, (12, 4, 3, 3)), (RNG.random(12) * 0.02 + 0.005).astype(f32), rand_q(np.uint8, (12,)),
       f32(0.3), np.uint8(100), B=RNG.integers(-20000, 20000, size=12).astype(np.int32), group=2, pads=[1, 1, 1, 1],
       consts=('w', 'wz', 'B'))
    qc('qc_rows16_s8w_scalar_zp_odd_k', rand_q(np.int8, (1, 3, 17, 23)), f32(0.05), np.int8(-4),
       rand_q(np.int8, (16, 3, 3, 3)), f32(0.01), np.int8(-3), f32(0.2), np.int8(2), strides=[2, 2], dil=[1, 2],
       pads=[1, 2, 0, 1], consts=('w', 'wz'))
    # the int16 K-pair im2col (ci_pack_pairs_2d): stride 2 over 16-column
    # vectors (32-byte loads), int8 x, dilation, padding rows above and
    # below, a last vector overlapping the one before, batch 2
    qc('qc_pairs_s8x_stride2_dilated', rand_q(np.int8, (2, 6, 20, 41)), f32(0.05), np.int8(-6),
       rand_q(np.int8, (8, 6, 3, 3)), (RNG.random(8) * 0.02 + 0.005).astype(f32), rand_q(np.int8, (8,)), f32(0.3),
       np.int8(1), strides=[2, 2], dil=[2, 2], pads=[2, 2, 3, 2])
    requant_cases(qc)


def near_ties(m, lo, hi, count):
    """Up to `count` sums a in [lo, hi) whose product with the float32
    multiplier m, rounded half to even, differs between the exact product
    and its float32 rounding: a * m lies within float32 rounding of a .5
    tie, and rounding to float32 first lands on the tie and then on the
    wrong side. A requantisation that multiplies in plain float32 (as
    opposed to rounding the exact product) gets every one of them wrong."""
    a = np.arange(lo, hi, dtype=np.int64)
    exact = np.rint(a * np.float64(m))  # a * m is exact in float64 here
    plain = np.rint((a.astype(np.float32) * np.float32(m)).astype(np.float64))
    return a[exact != plain][:count]


def requant_cases(qc):
    """The requantisation itself, bit-exact (harness-test compares integers
    exactly): sums acc = B[c] + (x - 128) from a 1x1 convolution whose
    weights are 1, so each channel's bias places its sums. Channels:
    near ties (near_ties: sums where a float32 product rounds the wrong
    way), exact ties (multiplier 1/4; the odd output zero point must be
    added after rounding half to even, not before), saturation at both ends
    and an int32 bias that wraps. Per-channel weight scales make one
    multiplier per channel. Planes of 5x7 positions: two 16-lane vectors and
    a scalar tail of the requantisation loop (ig_requantize)."""
    f32 = np.float32
    yz = 131  # odd: ties of (acc * m) and of (acc * m + yz) round differently
    lo, hi = -yz, 255 - yz
    near_m = [f32(0.00012), f32(0.00010255556), f32(8.82353e-05), f32(0.000205111)]
    biases, ms = [], []
    for m in near_m:
        hits = near_ties(m, int(lo / m), int(hi / m), 3)
        assert len(hits) > 0, m  # the search range holds dozens for these m
        for h in hits:
            biases.append(int(h))
            ms.append(m)
    n_near = len(biases)
    biases += [0, 1, 2**30, -2**30, 2**31 - 60]
    ms += [f32(0.25), f32(0.25), f32(0.125), f32(0.125), f32(0.125)]
    C = len(biases)
    H, W = 5, 7
    x = np.full((1, C, H, W), 128, np.uint8)
    rng = np.random.default_rng(7)
    for c in range(C):
        if c < n_near:
            # the near-tie sum itself (x = 128) in both vector blocks and the
            # tail, random neighbours elsewhere
            x[0, c] = rng.integers(118, 139, size=(H, W))
            x[0, c].flat[[0, 5, 17, 20, 33, 34]] = 128
        else:
            x[0, c] = rng.integers(8, 248, size=(H, W))
    # multiplier m = (xs * ws) / ys with xs = 0.5, ys = 1: ws = 2m exactly
    ws = np.array([2 * m for m in ms], f32)
    B = np.array(biases, np.int64).astype(np.int32)
    w_dw = np.ones((C, 1, 1, 1), np.int8)
    qc('qc_requant_ties_depthwise', x, f32(0.5), np.uint8(128), w_dw, ws, np.zeros(C, np.int8), f32(1.0),
       np.uint8(yz), B=B, group=C, consts=('w', 'wz', 'B'))
    # the same sums through the product kernel: two input channels, the
    # second weighted 0 (the VNNI byte path on AVX512-VNNI targets)
    x2 = np.concatenate([x[:, :1], rng.integers(0, 256, size=(1, 1, H, W)).astype(np.uint8)], axis=1)
    w2 = np.zeros((C, 2, 1, 1), np.int8)
    w2[:, 0] = 1
    qc('qc_requant_ties_product', x2, f32(0.5), np.uint8(128), w2, ws, np.zeros(C, np.int8), f32(1.0),
       np.uint8(yz), B=B, consts=('w', 'wz', 'B'))
    qc('qc_requant_ties_product_int16', x2, f32(0.5), np.uint8(128), w2, ws, np.zeros(C, np.int8), f32(1.0),
       np.uint8(yz), B=B)
    # constant scales: on VNNI targets the product requantises from its
    # registers (ig_rq_in_registers) with multipliers computed at compile
    # time, and stores each vector masked to the task's columns
    qc('qc_requant_ties_registers', x2, f32(0.5), np.uint8(128), w2, ws, np.zeros(C, np.int8), f32(1.0),
       np.uint8(yz), B=B, consts=('w', 'wz', 'B', 'xs', 'ws', 'ys'))


def main():
    root = casekit.out_dir(__doc__)
    quantize_cases(root)
    dynamic_cases(root)
    matmul_cases(root)
    conv_cases(root)


if __name__ == '__main__':
    main()
