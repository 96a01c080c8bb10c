"""Checks that the cases of make_blocks_cases.py take the paths they are
named for: compiles each with harnessc --emit manifest and --emit memplan
and counts the channel-block Conv kernels (names ending ":cb<N>"), the
Concat copy kernels and the Concat inputs memory planning wrote in place.

At -O3 (native and AVX2) the split cases must have their blocks (and,
but for one whose planned arena would grow, no Concat copy), the near
misses no block, the Concat cases their parts in place or their copies as
named; at -O1 nothing is split and every Concat
copies (the rewrites are -O2 and up). The outputs themselves are checked by
harness-test on the same folders (blocks_cases_O1/O3).

Usage: /usr/bin/python3 check_blocks_path.py --bin BUILD/bin BLOCKS_CASES
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

# case: (channel-block Conv kernels, Concat copy kernels, Concat inputs in place) at -O3
EXPECT = {
    "cb_clip_s1": (6, 0, 3),           # 96 channels in 3 blocks: 3 expansions + 3 depthwise
    "cb_silu_s2_nobias": (8, 0, 4),    # 64 channels in 4 blocks of 16
    # 128 channels in 2 blocks of 64, their outputs in place in the Concat.
    # (Until the blocks' 16 -> 64 expansions read x in place instead of
    # packing it into a workspace, conv.c gemm_reads_x_in_place, the first
    # block's output in place would have been live during that workspace
    # and grown the planned arena, so the Concat copied.)
    "cb_dw5x5_se": (4, 0, 2),
    "cb_dilated_plain": (4, 0, 2),     # 80 channels in 2 blocks of 40
    "cb_small_whole": (0, 0, 0),
    "cb_below_threshold_whole": (0, 0, 0),
    "cb_multiplier_whole": (0, 0, 0),
    "cb_second_use_whole": (0, 0, 0),
    "cb_direct_second_use_whole": (0, 0, 0),
    "cb_pool_between_whole": (0, 0, 0),
    "concat_branches": (0, 0, 3),
    "concat_nested": (0, 0, 4),        # the inner Concat's 2 parts and the outer's 2
    "concat_part_read_after": (0, 0, 2),
    "concat_axis0_products": (0, 0, 2),
    "concat_inner_axis_copies": (0, 2, 0),
    "concat_twice_copies": (0, 2, 0),
    "concat_output_input_copies": (0, 2, 0),
    "concat_far_skip_copies": (0, 2, 0),
    "concat_thin_skip": (0, 0, 2),
}


def counts(harnessc, model, level, target):
    with tempfile.TemporaryDirectory() as tmp:
        man, plan = os.path.join(tmp, "m.json"), os.path.join(tmp, "p.json")
        for kind, out in (("manifest", man), ("memplan", plan)):
            subprocess.run([harnessc, f"-O{level}", "--target", target, "--emit", kind, model, "-o", out],
                           check=True, stdout=subprocess.DEVNULL)
        kernels = json.load(open(man))["kernels"]
        parts = json.load(open(plan))["concat_parts"]
    # Each block's Conv kernels themselves (not their packing kernels, ":cbN:packb").
    blocks = sum(1 for k in kernels if k["op"] == "Conv" and re.search(r":cb\d+$", k["name"]))
    copies = sum(1 for k in kernels if k["op"] == "Concat")
    return blocks, copies, parts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("cases")
    args = ap.parse_args()
    harnessc = os.path.join(args.bin, "harnessc")
    failures = 0
    for case, (blocks, copies, parts) in EXPECT.items():
        model = os.path.join(args.cases, case, "model.onnx")
        for level, target in ((3, "native"), (3, "x86-64-v3"), (1, "native")):
            # -O1: the model as written (the cb_ cases have no Concat).
            want = (blocks, copies, parts) if level >= 2 else (0, 0 if case.startswith("cb_") else copies + parts, 0)
            got = counts(harnessc, model, level, target)
            ok = got == want
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {case} -O{level} {target}: blocks {got[0]}, Concat copies {got[1]}, "
                  f"in place {got[2]}" + ("" if ok else f" (expected {want})"))
    print(f"{len(EXPECT) * 3 - failures} of {len(EXPECT) * 3} as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
