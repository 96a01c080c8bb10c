"""Checks that the Winograd test cases really take the Winograd path
(compiler/ops/conv_winograd.c): compiles each with harnessc --emit manifest
at -O1 and -O3 for AVX2 (x86-64-v3) and AVX-512 (x86-64-v4) and looks for
the expected "winoM_mm" kernel (M = 4 for F(4x4,3x3), 2 for F(2x2,3x3),
2s2 for F(2x2,3x3) with stride 2),
and for the run-time weight transform "winoM_w" exactly where the weights
are not a compile-time constant (a graph input, or -O1 without packing).
Shapes that must keep the direct kernels (planes below 7x7) are checked too.
Where the tiles go in blocks, the LLVM IR at -O3 must show the blocks'
"winoM_in" and "winoM_out" kernels calling one shared body (every whole
block; the ragged last one may have its own): the block's first tile is
read from the kernel's table, not an immediate (kernel-body sharing,
docs/architecture.md section 5). Those blocked single-Conv cases must also
put their blocks in two lanes of one parallel group (the first half of the
blocks in lane 0, the rest in lane 1, each block's three kernels in one
lane, each lane with its own workspace copy: hc_wino_shape.lanes), and
give the expected outputs, bit for bit the same,
at one and at two threads (harness-run), where the lanes run concurrently.
A convolution whose transformed weights stream from memory
(HC_WINO_STREAMED_U) must take blocks larger than the workspace caps give,
in one lane, with the same outputs at one and two threads.

Usage: /usr/bin/python3 check_winograd_path.py --bin BUILD/bin FUSION_CASES CONV_POOL_CASES
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

# (folder: 0 fusion cases, 1 conv_pool cases; case; tile size or 0 for no Winograd; weights at run time)
CASES = [
    # ResNet-50's layer-1 shape: the transformed images of all tiles (3.8
    # MB) exceed the workspace cap (HC_WINO_MAX_WORKSPACE), so the tiles go
    # in blocks (HC_WINO_BLOCK_WORKSPACE: seven of up to 32). Its layer-2 shape
    # (49 tiles of 4x4, at least WINO_F4_MIN_TILES) takes F(4,3). Its layer-3
    # shape (16 tiles, 256 channels) takes F(2,3), but F(4,3) where
    # pack-weights transforms U for AVX2 (x86-64-v3 at -O3;
    # hc_wino_choose_packed). A pair (m, m_avx2) gives the two tile sizes,
    # a triple (m, m_avx2, m_avx512) also the one where pack-weights runs
    # for AVX-512 (x86-64-v4 at -O3): 0 on 7x7 and 8x8 planes, which the
    # channels kernel runs there (WINO_F2_AVX512_MIN_TILES), except with
    # fewer output channels than it takes.
    (0, "fast_conv_wino_56", 4, False),
    (0, "fast_conv_wino_28", 4, False),
    # 625 tiles in ten blocks, the last one ragged (49 tiles).
    (0, "fast_conv_wino_blocks", 4, False),
    (0, "fast_conv_wino_blocks_wrt", 4, True),
    (0, "fast_conv_wino4_ragged", 4, False),
    (0, "fast_conv_wino4_b2_wrt", 4, True),
    (0, "fuse_conv_wino4x4_res_relu", 4, False),
    (0, "fast_conv_wino_13x17", 2, False),
    (0, "fast_conv_wino_14", (2, 4), False),
    (0, "fast_conv_wino_7", (2, 2, 0), False),
    (0, "fast_conv_wino_8_m24", (2, 2, 2), False),
    (0, "fast_conv_wino_7_wrt", 2, True),
    (0, "fast_conv_wino_c300", 2, False),
    # Transformed weights of 32 MiB (above HC_WINO_STREAMED_U): blocks of 32
    # tiles in one lane (STREAMED below).
    (0, "fast_conv_wino_streamed", 2, False),
    # A batch of 2 14x14 planes: 32 tiles of 4x4 together.
    (0, "fast_conv_wino_b2_m80", 4, False),
    (0, "fast_conv_wino_asym_nobias_wrt", 2, True),
    (0, "fuse_conv_wino3x3_gelu_erf", 2, False),
    (0, "fuse_conv_chan3x3_relu", 0, False),
    # Stride 2 ("wino2s2" kernels): only where pack-weights transforms U for
    # AVX2 (x86-64-v3 at -O3; hc_wino_choose_packed), the direct kernels
    # elsewhere, and for shapes whose tiles do not fill two blocks of 48.
    (0, "fast_conv_wino_s2_56", (0, "2s2"), False),
    (0, "fast_conv_wino_s2_56_wrt", 0, True),
    (0, "fast_conv_wino_s2_ragged", (0, "2s2"), False),
    (0, "fast_conv_wino_s2_nopad_b2", (0, "2s2"), False),
    (0, "fast_conv_wino_s2_same_upper", (0, "2s2"), False),
    (0, "fuse_conv_wino3x3s2_relu", (0, "2s2"), False),
    (0, "fast_conv_wino_s2_small_blocks", 0, False),
    (0, "fast_conv_wino_s2_one_block", 0, False),
    (1, "conv_winograd2_input_weights", 2, True),
    (1, "conv_winograd4_input_weights_asym", 4, True),
    # float16: transformed and multiplied in float32; constant weights too
    # are transformed at run time (float16 weights stay float16 in the
    # artifact). 13x15 planes: 16 tiles of 4x4, F(2,3).
    (1, "conv_float16_tiles", 2, True),
    (1, "conv_float16_winograd4_input_weights", 4, True),
]


def kernels(harnessc, model, level, target):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "m.json")
        subprocess.run([harnessc, f"-O{level}", "--target", target, "--emit", "manifest", model, "-o", out],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            text = f.read()
    return text


# Blocked cases whose stage kernels must share bodies (see the docstring).
SHARED_BLOCKS = ["fast_conv_wino_blocks", "fast_conv_wino_56", "fast_conv_wino_blocks_wrt"]


# Cases whose U streams from memory: at -O3 (native) their blocks hold
# more than WINO_PAD tiles, the products run this many blocks, all in lane
# 0, and the outputs match at 1 and 2 threads.
STREAMED = {"fast_conv_wino_streamed": 2}


def streamed_problem(harnessc, model, m, want_blocks):
    man = json.loads(kernels(harnessc, model, 3, "native"))
    mm = [k for k in man["kernels"] if re.search(rf":wino{m}_mm$", k["name"])]
    if len(mm) != want_blocks:
        return f"{len(mm)} blocks of products, want {want_blocks} (blocks grown from 16 tiles to 32)"
    lanes = {k["lane"] for k in man["kernels"] if re.search(rf":wino{m}_(in|mm|out)$", k["name"])}
    return None if lanes == {0} else f"block kernels in lanes {sorted(lanes)}, want one lane"


def shared_body_calls(harnessc, model, target, m, stage):
    """(kernels of the stage, most calls any one of its bodies gets) at -O3."""
    ir = subprocess.run([harnessc, "-O3", "--target", target, "--emit", "llvm-ir", model, "-o", "-"],
                        check=True, stdout=subprocess.PIPE, text=True).stdout
    kernels = set(re.findall(rf"^define [^@]*@(hk\d+_\w*_wino{m}_{stage})\(", ir, re.M))
    calls = re.findall(rf"call [^@]*@(hk\d+_\w*_wino{m}_{stage}\.body)\(", ir)
    return len(kernels), max((calls.count(c) for c in set(calls)), default=0)


def lane_problems(harnessc, model, m):
    """What is wrong with the blocks' lanes in the -O3 manifest (native)."""
    man = json.loads(kernels(harnessc, model, 3, "native"))
    ks = [k for k in man["kernels"] if re.search(rf":wino{m}_(in|mm|out)$", k["name"])]
    if len(ks) < 6 or len(ks) % 3:
        return f"{len(ks)} block kernels"
    if len({k["group"] for k in ks}) != 1:
        return "the blocks' kernels are in %d groups, not one" % len({k["group"] for k in ks})
    lanes = [k["lane"] for k in ks]
    blocks = lanes[::3]
    first1 = blocks.index(1) if 1 in blocks else len(blocks)
    want = [0] * first1 + [1] * (len(blocks) - first1)
    ok = 0 < first1 < len(blocks) and blocks == want and all(lanes[i] == blocks[i // 3] for i in range(len(lanes)))
    return None if ok else f"lanes {lanes}: want each block's three kernels in one lane, the first blocks in lane 0, the rest in lane 1"


def run_outputs(harness_run, model_so, case_dir, threads, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    subprocess.run([harness_run, model_so, "--inputs", os.path.join(case_dir, "test_data_set_0"), "--threads",
                    str(threads), "--format", "npy", "--outputs", out_dir], check=True, stdout=subprocess.DEVNULL)
    import numpy as np
    return np.load(os.path.join(out_dir, "output_0.npy"))


def threads_problem(a, harnessc, case_dir):
    """Runs the -O3 artifact at 1 and 2 threads: both must match the expected
    output (rtol = atol = 1e-4) and each other bit for bit."""
    import numpy as np
    from onnx import TensorProto, numpy_helper
    with tempfile.TemporaryDirectory() as tmp:
        so = os.path.join(tmp, "m.so")
        subprocess.run([harnessc, "-O3", os.path.join(case_dir, "model.onnx"), "-o", so], check=True,
                       stdout=subprocess.DEVNULL)
        run = os.path.join(a.bin, "harness-run")
        y1 = run_outputs(run, so, case_dir, 1, os.path.join(tmp, "t1"))
        y2 = run_outputs(run, so, case_dir, 2, os.path.join(tmp, "t2"))
    t = TensorProto()
    with open(os.path.join(case_dir, "test_data_set_0", "output_0.pb"), "rb") as f:
        t.ParseFromString(f.read())
    want = numpy_helper.to_array(t)
    if not np.array_equal(y1, y2):
        return "outputs at 1 and 2 threads differ (max %g)" % float(np.abs(y1 - y2).max())
    if not np.allclose(y2, want, rtol=1e-4, atol=1e-4):
        return "output differs from the expected one (max %g)" % float(np.abs(y2 - want).max())
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("dirs", nargs=2)
    a = ap.parse_args()
    harnessc = os.path.join(a.bin, "harnessc")
    bad = 0
    for folder, case, tiles, runtime_w in CASES:
        model = os.path.join(a.dirs[folder], case, "model.onnx")
        for target in ("x86-64-v3", "x86-64-v4"):
            for level in (1, 3):
                # U packed at compile time (-O3, constant weights) for AVX2.
                packed = level == 3 and not runtime_w
                pick = 0 if not packed else 1 if target == "x86-64-v3" else 2
                m = tiles if isinstance(tiles, int) else tiles[pick if pick < len(tiles) else 0]
                text = kernels(harnessc, model, level, target)
                json.loads(text)
                want_w = m and (runtime_w or level == 1)
                ok = (f"wino{m}_mm" in text if m else not any(f"wino{t}_{k}" in text for t in (2, 4, "2s2") for k in ("in", "mm", "out"))) and \
                    ((f"wino{m}_w" in text) == bool(want_w))
                if not ok:
                    bad += 1
                    print(f"FAIL {case} -O{level} {target}: expected "
                          f"{f'wino{m} kernels' if m else 'no Winograd'}"
                          f"{' with the run-time weight transform' if want_w else ''}")
    checks = len(CASES) * 4
    for case in SHARED_BLOCKS:
        folder, _, m, _ = next(c for c in CASES if c[1] == case)
        model = os.path.join(a.dirs[folder], case, "model.onnx")
        for target in ("x86-64-v3", "x86-64-v4"):
            for stage in ("in", "out"):
                checks += 1
                nk, most = shared_body_calls(harnessc, model, target, m, stage)
                if nk < 3 or most < nk - 1:
                    bad += 1
                    print(f"FAIL {case} {target}: {nk} wino{m}_{stage} kernels (blocks), but at most {most} "
                          f"of them call one shared body (want all whole blocks: >= {nk - 1})")
    # Each blocked case's layout (its lanes; a streamed case's grown blocks
    # in one lane), then its outputs at one and two threads.
    layouts = [(case, "lanes", lambda model, m: lane_problems(harnessc, model, m)) for case in SHARED_BLOCKS]
    layouts += [(case, "blocks", lambda model, m, w=w: streamed_problem(harnessc, model, m, w))
                for case, w in STREAMED.items()]
    for case, label, layout in layouts:
        folder, _, m, _ = next(c for c in CASES if c[1] == case)
        case_dir = os.path.join(a.dirs[folder], case)
        model = os.path.join(case_dir, "model.onnx")
        for what, problem in ((label, lambda: layout(model, m)), ("threads", lambda: threads_problem(a, harnessc, case_dir))):
            checks += 1
            why = problem()
            if why:
                bad += 1
                print(f"FAIL {case} {what}: {why}")
    print(f"{checks - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
