#!/usr/bin/python3
"""Generates ONNX test folders for the signal-processing ops (DFT, STFT,
HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix) covering what
the ONNX backend suite misses: inverse and onesided transforms, dft_length
padding and truncation, complex input, axes with signal dimensions after
them, power-of-two lengths (FFT) and long non-power-of-two ones, DFT-20's
axis input, STFT with and without window / frame_length, float64, float16
and bfloat16 data, window output types, and mel matrices for other
parameters and element types.

Usage: /usr/bin/python3 make_signal_cases.py OUT_DIR
       harness-test OUT_DIR/*

Each case is OUT_DIR/<name>/model.onnx plus test_data_set_0/{input,output}_i.pb.
Expected outputs come from numpy (np.fft in float64, rounded to the output
type) and from ports of the ONNX reference evaluator's window and mel
formulas, written from the operator specifications, not from Harness.
"""
import numpy as np
from onnx import helper

import casekit
from casekit import bf16_round, cast_out, from_tagged, np_elem_type

RNG = np.random.default_rng(20240612)
BF16 = casekit.BFLOAT16  # marker dtype: stored as float32 values rounded to bfloat16


# ---- ONNX writing -----------------------------------------------------------------

def save_case(root, name, node, inputs, outputs, inits=(), opset=17):
    """inputs/outputs/inits: lists of (name, array, dtype)."""
    casekit.write_case(root, name, node, from_tagged(inputs), from_tagged(outputs), opset, from_tagged(inits),
                       producer="harness-tests", ir_version=9 if opset >= 19 else 8)


def rand(shape, dtype):
    v = RNG.standard_normal(shape)
    if dtype == BF16:
        return bf16_round(v)
    return v.astype(dtype)


# ---- references -------------------------------------------------------------------

def as_complex(x):
    """[..., 1] real or [..., 2] complex -> complex128 array without the last dim."""
    x = np.asarray(x, np.float64)
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0] + 0j


def dft_ref(x, n, axis, inverse, onesided):
    """ONNX DFT: transform of length n along axis (of the signal dims), the
    result sliced to n // 2 + 1 bins when onesided (as the reference)."""
    c = as_complex(x)
    y = np.fft.ifft(c, n=n, axis=axis) if inverse else np.fft.fft(c, n=n, axis=axis)
    if onesided:
        y = np.take(y, np.arange(n // 2 + 1), axis=axis)
    return np.stack([y.real, y.imag], axis=-1)


def stft_ref(sig, step, window, frame_length, onesided):
    c = as_complex(sig)
    length = c.shape[1]
    if frame_length is None:
        frame_length = len(window) if window is not None else length
    w = np.ones(frame_length) if window is None else np.asarray(window, np.float64)
    frames = (length - frame_length) // step + 1
    bins = frame_length // 2 + 1 if onesided else frame_length
    out = np.zeros((c.shape[0], frames, bins, 2))
    for b in range(c.shape[0]):
        for f in range(frames):
            y = np.fft.fft(c[b, f * step:f * step + frame_length] * w)[:bins]
            out[b, f, :, 0], out[b, f, :, 1] = y.real, y.imag
    return out


def window_ref(kind, size, periodic):
    """The reference evaluator's window formulas, in float64."""
    k = np.arange(size, dtype=np.float64)
    period = size if periodic else size - 1
    if kind == "HannWindow":
        return np.sin(k * np.pi / period) ** 2
    if kind == "HammingWindow":
        return 25.0 / 46.0 - np.cos(k * np.pi * 2 / period) * (1 - 25.0 / 46.0)
    return 0.42 - 0.5 * np.cos(k * np.pi * 2 / period) + 0.08 * np.cos(k * np.pi * 4 / period)


def mel_ref(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz):
    """The ONNX reference MelWeightMatrix, statement for statement (numpy
    scalar types included: the edges keep their float type)."""
    num_spectrogram_bins = dft_length // 2 + 1
    frequency_bins = np.arange(0, num_mel_bins + 2)
    low_frequency_mel = 2595 * np.log10(1 + lower_edge_hertz / 700)
    high_frequency_mel = 2595 * np.log10(1 + upper_edge_hertz / 700)
    mel_step = (high_frequency_mel - low_frequency_mel) / frequency_bins.shape[0]
    frequency_bins = frequency_bins * mel_step + low_frequency_mel
    frequency_bins = 700 * (np.power(10, (frequency_bins / 2595)) - 1)
    frequency_bins = ((dft_length + 1) * frequency_bins) // sample_rate
    frequency_bins = frequency_bins.astype(int)
    output = np.zeros((num_spectrogram_bins, num_mel_bins))
    for i in range(num_mel_bins):
        lower_frequency_value = frequency_bins[i]
        center_frequency_point = frequency_bins[i + 1]
        higher_frequency_point = frequency_bins[i + 2]
        low_to_center = center_frequency_point - lower_frequency_value
        if low_to_center == 0:
            output[center_frequency_point, i] = 1
        else:
            for j in range(lower_frequency_value, center_frequency_point + 1):
                output[j, i] = float(j - lower_frequency_value) / float(low_to_center)
        center_to_high = higher_frequency_point - center_frequency_point
        if center_to_high > 0:
            for j in range(center_frequency_point, higher_frequency_point):
                output[j, i] = float(higher_frequency_point - j) / float(center_to_high)
    return output


# ---- cases ------------------------------------------------------------------------

def dft_case(root, name, shape, axis=None, inverse=0, onesided=0, dft_length=None, dtype=np.float32, opset=17,
             axis_input=None, const_input=False):
    x = rand(shape, dtype)
    attrs = {}
    if inverse:
        attrs["inverse"] = inverse
    if onesided:
        attrs["onesided"] = onesided
    inputs, inits = [("x", x, dtype)], []
    names = ["x"]
    if opset < 20:
        if axis is not None:
            attrs["axis"] = axis
        eff_axis = 1 if axis is None else axis
        if dft_length is not None:
            names.append("dft_length")
            inits.append(("dft_length", np.array(dft_length, np.int64), np.int64))
    else:
        names.append("dft_length" if dft_length is not None else "")
        if dft_length is not None:
            inits.append(("dft_length", np.array(dft_length, np.int32), np.int32))
        eff_axis = -2 if axis_input is None else axis_input
        if axis_input is not None:
            names.append("axis")
            inits.append(("axis", np.array(axis_input, np.int64), np.int64))
        while names and names[-1] == "":
            names.pop()
    rank = len(shape)
    ax = eff_axis % rank
    n = shape[ax] if dft_length is None else dft_length
    y = dft_ref(x, n, ax, inverse, onesided)
    node = helper.make_node("DFT", names, ["y"], **attrs)
    if const_input:  # folded at compile time through the JIT
        inputs, inits = [], inputs + inits
    save_case(root, name, node, inputs, [("y", cast_out(y, dtype), dtype)], inits, opset)


def stft_case(root, name, shape, step, window=None, frame_length=None, onesided=None, dtype=np.float32,
              runtime_window=True):
    sig = rand(shape, dtype)
    attrs = {} if onesided is None else {"onesided": onesided}
    inputs = [("signal", sig, dtype)]
    inits = [("frame_step", np.array(step, np.int64), np.int64)]
    names = ["signal", "frame_step", "", ""]
    if window is not None:
        w = cast_out(window_ref("HannWindow", window, True), dtype)
        names[2] = "window"
        (inputs if runtime_window else inits).append(("window", w, dtype))
    else:
        w = None
    if frame_length is not None:
        names[3] = "frame_length"
        inits.append(("frame_length", np.array(frame_length, np.int64), np.int64))
    while names[-1] == "":
        names.pop()
    y = stft_ref(sig, step, w, frame_length, 1 if onesided is None else onesided)
    node = helper.make_node("STFT", names, ["y"], **attrs)
    save_case(root, name, node, inputs, [("y", cast_out(y, dtype), dtype)], inits)


def window_case(root, name, kind, size, periodic=None, out_dtype=None, size_dtype=np.int64, size_input=False):
    attrs = {}
    if periodic is not None:
        attrs["periodic"] = periodic
    dt = np.float32 if out_dtype is None else out_dtype
    if out_dtype is not None:
        attrs["output_datatype"] = np_elem_type(out_dtype)
    y = cast_out(window_ref(kind, size, 1 if periodic is None else periodic), dt)
    s = np.array(size, size_dtype)
    node = helper.make_node(kind, ["size"], ["y"], **attrs)
    if size_input:
        save_case(root, name, node, [("size", s, size_dtype)], [("y", y, dt)])
    else:
        save_case(root, name, node, [], [("y", y, dt)], [("size", s, size_dtype)])


def mel_case(root, name, num_mel_bins, dft_length, sample_rate, lower, upper, int_dtype=np.int32,
             edge_dtype=np.float32, out_dtype=None, edges_runtime=True):
    attrs = {} if out_dtype is None else {"output_datatype": np_elem_type(out_dtype)}
    dt = np.float32 if out_dtype is None else out_dtype
    ints = [("num_mel_bins", int_dtype(num_mel_bins)), ("dft_length", int_dtype(dft_length)),
            ("sample_rate", int_dtype(sample_rate))]
    edt = np.float32 if edge_dtype == BF16 else edge_dtype
    lo, hi = edt(lower), edt(upper)
    if edge_dtype == BF16:
        lo, hi = np.float32(bf16_round(lo)), np.float32(bf16_round(hi))
    y = cast_out(mel_ref(ints[0][1], ints[1][1], ints[2][1], lo, hi), dt)
    edges = [("lower_edge_hertz", np.array(lo), edge_dtype), ("upper_edge_hertz", np.array(hi), edge_dtype)]
    ints = [(n, np.array(v), int_dtype) for n, v in ints]
    node = helper.make_node("MelWeightMatrix", [n for n, _, _ in ints + edges], ["y"], **attrs)
    if edges_runtime:
        save_case(root, name, node, edges, [("y", y, dt)], ints)
    else:
        save_case(root, name, node, [], [("y", y, dt)], ints + edges)


def main():
    root = casekit.out_dir(__doc__)

    # DFT-17: direct transforms (rows form), onesided, padding, truncation.
    dft_case(root, "dft_real_n12", (3, 12, 1))
    dft_case(root, "dft_complex_inverse_n10", (2, 10, 2), inverse=1)
    dft_case(root, "dft_onesided_odd", (2, 9, 1), onesided=1)
    dft_case(root, "dft_onesided_even", (2, 12, 1), onesided=1)
    dft_case(root, "dft_pad", (2, 10, 1), dft_length=14)
    dft_case(root, "dft_truncate_complex", (2, 10, 2), dft_length=6)
    dft_case(root, "dft_inverse_onesided", (2, 11, 2), inverse=1, onesided=1)
    dft_case(root, "dft_axis_neg2_attr", (2, 3, 10, 1), axis=-2)
    # Axis with signal dimensions after it (columns form).
    dft_case(root, "dft_columns_complex", (2, 7, 5, 2), axis=1)
    dft_case(root, "dft_columns_onesided_pad", (2, 6, 3, 1), axis=1, dft_length=9, onesided=1)
    dft_case(root, "dft_axis0", (6, 4, 1), axis=0)
    # Element types.
    dft_case(root, "dft_float64_inverse", (2, 15, 2), inverse=1, dtype=np.float64)
    dft_case(root, "dft_float16", (2, 12, 1), dtype=np.float16)
    dft_case(root, "dft_bfloat16", (2, 12, 2), dtype=BF16)
    # Power-of-two lengths: FFT.
    dft_case(root, "dft_fft64_real", (3, 64, 1))
    dft_case(root, "dft_fft256_complex_inverse", (2, 256, 2), inverse=1)
    dft_case(root, "dft_fft_pad_onesided", (2, 50, 1), dft_length=64, onesided=1)
    dft_case(root, "dft_fft_truncate_columns", (2, 40, 3, 2), axis=1, dft_length=32)
    dft_case(root, "dft_fft_float64", (2, 128, 2), dtype=np.float64)
    dft_case(root, "dft_fft16_float16", (2, 16, 2), dtype=np.float16)
    dft_case(root, "dft_fft1024_many_rows", (40, 1024, 1), onesided=1)
    # Long non-power-of-two length: twiddle table instead of matrix.
    dft_case(root, "dft_long_table", (2, 1200, 1), onesided=1)
    # Constant input: evaluated by constant folding (FFT workspace included).
    dft_case(root, "dft_folded_fft", (3, 64, 2), const_input=True)
    dft_case(root, "dft_folded_direct", (3, 10, 1), onesided=1, const_input=True)
    # DFT-20: axis input (default -2), dft_length int32.
    dft_case(root, "dft20_default_axis", (2, 3, 12, 1), opset=20)
    dft_case(root, "dft20_axis_input_inverse_onesided", (2, 10, 3, 2), opset=20, axis_input=1, dft_length=12,
             inverse=1, onesided=1)
    dft_case(root, "dft20_neg_axis", (4, 6, 1), opset=20, axis_input=-3)
    dft_case(root, "dft20_fft_axis0", (32, 3, 2), opset=20, axis_input=0)

    # STFT.
    stft_case(root, "stft_window_runtime", (2, 100, 1), 10, window=16)
    stft_case(root, "stft_complex_twosided", (1, 64, 2), 7, frame_length=20, onesided=0)
    stft_case(root, "stft_window_and_length_float64", (2, 80, 1), 16, window=32, frame_length=32, dtype=np.float64,
              runtime_window=False)
    stft_case(root, "stft_whole_signal", (1, 30, 1), 5)
    stft_case(root, "stft_float16", (1, 48, 1), 8, window=12, dtype=np.float16)
    stft_case(root, "stft_bfloat16_complex", (2, 40, 2), 6, frame_length=10, dtype=BF16)
    stft_case(root, "stft_fft512", (1, 2048, 1), 256, window=512)
    stft_case(root, "stft_odd_window_onesided", (3, 57, 1), 4, window=15)

    # Windows.
    for kind in ("HannWindow", "HammingWindow", "BlackmanWindow"):
        k = kind[:-6].lower()
        window_case(root, f"{k}_periodic_7", kind, 7)
        window_case(root, f"{k}_symmetric_64_float64", kind, 64, periodic=0, out_dtype=np.float64)
        window_case(root, f"{k}_float16_size_input", kind, 33, out_dtype=np.float16, size_input=True,
                    size_dtype=np.int32)
        window_case(root, f"{k}_bfloat16", kind, 20, periodic=0, out_dtype=BF16)
        window_case(root, f"{k}_int32", kind, 10, out_dtype=np.int32)
        window_case(root, f"{k}_uint8_symmetric", kind, 9, periodic=0, out_dtype=np.uint8)
        window_case(root, f"{k}_empty", kind, 0)

    # MelWeightMatrix.
    mel_case(root, "mel_suite_params_runtime_edges", 8, 16, 8192, 0, 4096)
    mel_case(root, "mel_audio_40", 40, 512, 16000, 20, 8000)
    mel_case(root, "mel_float64_edges_int64", 23, 400, 22050, 30.5, 11025, int_dtype=np.int64,
             edge_dtype=np.float64, out_dtype=np.float64)
    mel_case(root, "mel_float16_out_const", 10, 256, 8000, 100, 3900, out_dtype=np.float16, edges_runtime=False)
    mel_case(root, "mel_float16_edges", 12, 128, 16000, 0, 7000, edge_dtype=np.float16)
    mel_case(root, "mel_int64_out", 6, 64, 4000, 0, 2000, out_dtype=np.int64)
    mel_case(root, "mel_coincident_edges", 30, 64, 16000, 0, 8000)


if __name__ == "__main__":
    main()
