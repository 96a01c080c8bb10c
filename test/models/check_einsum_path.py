"""Checks that the Einsum cases of make_movement2_cases.py take the kernel
they are written for (compiler/ops/einsum.c ein_product_desc): with --emit
manifest, the batched-product cases compile to the register-tiled GEMM
(no ":loops" kernel; a ":packb" kernel where B's columns are not contiguous)
and the others to the loop nest, on x86-64-v3 and x86-64-v4 at -O1 and -O3.
harness-test checks their outputs (movement2_cases_*).

Usage: /usr/bin/python3 check_einsum_path.py --bin BUILD/bin MOVEMENT2_CASES
"""
import os
import sys

from check_gemm_b_path import kernel_names, run_checks

# case (make_movement2_cases.py einsum_cases, by position): expected kernels
LOOPS, DIRECT, PACKED = "loops", "product", "product, B packed"
CASES = {
    "einsum_00_float32": DIRECT,   # ij,jk->ik
    "einsum_01_float32": LOOPS,    # ij,kj->ik: 5 columns
    "einsum_02_float64": LOOPS,    # float64
    "einsum_19_float32": LOOPS,    # ij,j->i: one row against a B to pack
    "einsum_20_float32": LOOPS,    # three inputs
    "einsum_24_float32": PACKED,   # MaxViT's q.k: keys' columns 32 apart
    "einsum_25_float32": DIRECT,   # MaxViT's attn.v
    "einsum_26_float32": DIRECT,   # ki,kj->ij: A transposed
    "einsum_27_float32": PACKED,   # bij,bjk->bki: columns from the first input
    "einsum_28_float32": DIRECT,   # bij,jk->bik: batch merged into the rows
    "einsum_29_float32": DIRECT,   # ij,bjk->bik: A broadcast over the batch
    "einsum_30_float32": PACKED,   # hbid,bhjd->bhij: A's batch axes permuted
    "einsum_31_float32": PACKED,   # bhid,hbjd->bhij: B's matrices not K x N apart
    "einsum_32_float32": DIRECT,   # ibj,jk->bik: rows that do not merge
    "einsum_33_float32": DIRECT,   # bij,bjk->bik with A's batch of size 1
    "einsum_34_float32": DIRECT,   # bhwc,hwck->bk: three summed labels
    "einsum_35_float32": DIRECT,   # ij,jkl->ikl: two column labels
    "einsum_36_float32": PACKED,   # ik,jk->ij: K split into slices
    "einsum_37_float32": DIRECT,   # ik,kj->ij: K split into slices
    "einsum_38_float32": DIRECT,   # bii,bij->bj: a diagonal
    "einsum_39_float32": PACKED,   # ...id,...jd->...ij
}


def einsum_checks(harnessc, cases):
    for case, want in CASES.items():
        model = os.path.join(cases, case, "model.onnx")
        for target in ("x86-64-v3", "x86-64-v4"):
            for level in (1, 3):
                names = kernel_names(harnessc, model, level, target)
                loops = any(n.endswith(":loops") for n in names)
                packb = any(n.endswith(":packb") for n in names)
                got = LOOPS if loops else PACKED if packb else DIRECT
                yield (f"{case} -O{level} {target}", None if got == want else f"want {want}, got {names}")


if __name__ == "__main__":
    sys.exit(run_checks(__doc__, einsum_checks))
