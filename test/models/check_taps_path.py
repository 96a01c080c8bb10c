"""Checks that the quantization cases named for the direct int8 convolution
(compiler/ops/integer_ops.c ci_use_taps) take the path they are named for:
with --emit manifest at -O3, compiled for CPUs with AVX512-VNNI
(sapphirerapids, icelake-server), a qc_taps_* case copies x into channel
quads (":taps_x") and packs no im2col (":pack_x"), and the rejected case
packs the im2col; on targets without VNNI (x86-64-v4, x86-64-v3) and at
-O1 (no weight packing) every case packs the im2col. harness-test checks
their outputs (quantization_cases_*).

Usage: /usr/bin/python3 check_taps_path.py --bin BUILD/bin QUANTIZATION_CASES
"""
import os
import sys

from check_gemm_b_path import kernel_names, run_checks

# case: whether VNNI targets at -O3 convolve it directly
CASES = {
    "qc_taps_s8x_grouped_dilated": True,   # 4 x 4 tiles, groups, dilation
    "qc_taps_u8x_5x3_k_slices": True,      # 8 x 3 tiles, two K slices
    "qc_taps_u8x_7x7_plane": True,         # one column group
    "qc_vnni_u8x_3x3_const_w": True,
    "ci_taps_int32_out": True,             # ConvInteger: int32 outputs
    "qc_taps_rejected_5x5_narrow": False,  # 6 column vectors for 4 outputs' worth
}
VNNI = ("--mcpu", "sapphirerapids"), ("--mcpu", "icelake-server")
NO_VNNI = ("--target", "x86-64-v4"), ("--target", "x86-64-v3")


def taps_checks(harnessc, cases):
    for case, direct in CASES.items():
        model = os.path.join(cases, case, "model.onnx")
        for flag, value in VNNI + NO_VNNI:
            for level in (1, 3):
                want = direct and level == 3 and (flag, value) in VNNI
                names = kernel_names(harnessc, model, level, value, flag)
                got = any(n.endswith(":taps_x") for n in names) and not any(n.endswith(":pack_x") for n in names)
                yield (f"{case} -O{level} {flag} {value}",
                       None if got == want else f"want {'the direct' if want else 'the im2col'} path, got {names}")


if __name__ == "__main__":
    sys.exit(run_checks(__doc__, taps_checks))
