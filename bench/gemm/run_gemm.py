#!/usr/bin/env python3
"""SGEMM: Harness (an ONNX MatMul compiled by harnessc) vs OpenBLAS
(cblas_sgemm), interleaved, at square and model-shaped sizes.

    /usr/bin/python3 bench/gemm/run_gemm.py --bin BUILD/bin --work WORKDIR [--isa native|avx2]
                     [--threads 1] [--rounds 8] [--shapes MxNxK ...] [--json OUT.json]

Shapes are M x N x K of C[M,N] = A[M,K] B[K,N] (B constant). --isa avx2
compiles with `--target x86-64-v3`, runs OpenBLAS with
OPENBLAS_CORETYPE=Haswell and quotes the AVX2 peak, which is the benchmark
machine's configuration on any AVX-512 host; native uses this machine's
widest ISA for all three (OpenBLAS's own pick of kernels, or SkylakeX's
AVX-512 ones on an AVX-512 CPU it does not know; the header line names
the set). Percent of peak = GFLOP/s / (2 FMA x lanes x 2
flops x measured GHz x threads) from `harness-bench --peak`.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "compare"))
import engines  # noqa: E402

# Square sizes, then shapes the benchmark models run: BERT-like encoder
# projections and FFN (128 tokens x 256/1024), a batch-1 vector-matrix product,
# ResNet-50's classifier, the classifier of a batch-4 program (--batch, dynamic
# batching), and 3x3 convolutions of ResNet stages as implicit GEMMs (output
# pixels x output channels x 9 * input channels).
SHAPES = ["256x256x256", "512x512x512", "1024x1024x1024", "2048x2048x2048",
          "128x256x256", "128x1024x256", "128x256x1024", "1x1024x256", "1x256x1024", "1x1000x2048",
          "4x1000x2048", "3136x64x576", "784x128x1152", "196x256x2304", "49x512x4608"]


def build_openblas(work):
    exe = os.path.join(work, "openblas_sgemm")
    src = os.path.join(HERE, "openblas_sgemm.c")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        p = subprocess.run(["cc", "-O2", "-o", exe, src, "-lopenblas"], capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"cannot build {src} (apt-get install libopenblas-dev):\n{p.stderr}")
    return exe


# OpenBLAS kernel sets (openblas_get_corename) that use AVX-512.
AVX512_CORES = {"skylakex", "cooperlake", "sapphirerapids", "zen4", "zen5"}


def openblas_core(exe, env):
    """The kernel set OpenBLAS picks under env (openblas_sgemm --corename)."""
    p = subprocess.run([exe, "--corename"], env=env, capture_output=True, text=True, check=True)
    return p.stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--isa", choices=["native", "avx2"], default="native")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--block-s", type=float, default=0.2)
    ap.add_argument("--shapes", nargs="*", default=SHAPES)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    bin_dir = os.path.abspath(a.bin)
    work = os.path.join(a.work, f"gemm-{a.isa}")
    os.makedirs(work, exist_ok=True)
    exe = build_openblas(work)
    machine = engines.peak(bin_dir)
    peak_name, peak_core = engines.peak_for(machine, "avx2" if a.isa == "avx2" else None)
    peak = peak_core * a.threads
    env = dict(os.environ)
    if a.isa == "avx2":
        env["OPENBLAS_CORETYPE"] = "Haswell"
    corename = openblas_core(exe, env)
    if a.isa != "avx2" and machine["isa"] == "avx512" and "OPENBLAS_CORETYPE" not in os.environ and \
            corename.lower() not in AVX512_CORES:
        # A CPU newer than Debian's OpenBLAS 0.3.21 (an Emerald Rapids Xeon)
        # gets its generic SSE3 kernels ("Prescott", 12-16% of the AVX-512
        # peak at 1024^3); SkylakeX is its AVX-512 kernel set.
        env["OPENBLAS_CORETYPE"] = "SkylakeX"
        corename = f"{openblas_core(exe, env)} (OPENBLAS_CORETYPE; it picked {corename})"
    rows = []
    print(f"SGEMM, {a.threads} thread(s), {a.isa}: peak {peak_name} {peak:.1f} GFLOP/s "
          f"({machine['clock_ghz']:.2f} GHz measured); OpenBLAS kernels {corename}", flush=True)
    print(f"{'M x N x K':<16} {'Harness GFLOP/s':>15} {'% peak':>7} {'OpenBLAS GFLOP/s':>16} {'% peak':>7} "
          f"{'H/OpenBLAS':>10}", flush=True)
    for shape in a.shapes:
        m, n, k = map(int, shape.split("x"))
        onnx_path = os.path.join(work, f"matmul_{shape}.onnx")
        art = os.path.join(work, f"matmul_{shape}.so")
        subprocess.run(["/usr/bin/python3", os.path.join(HERE, "make_matmul.py"), onnx_path, str(m), str(n), str(k)],
                       check=True)
        cmd = [os.path.join(bin_dir, "harnessc"), onnx_path, "-o", art, "-O3"]
        if a.isa == "avx2":
            cmd += ["--target", "x86-64-v3"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{shape:<16} harnessc failed: {p.stderr.strip()}", flush=True)
            continue
        flops = 2.0 * m * n * k
        with engines.harness_engine(bin_dir, art, a.threads, warmup=3) as h, \
                engines.Engine("openblas", [exe, str(m), str(n), str(k), "--threads", str(a.threads), "--warmup", "3",
                                            "--serve"], env, threads=a.threads) as o:
            times, _ = engines.interleave([h, o], a.rounds, a.block_s)
        hg = flops / statistics.median(times["harness"])
        og = flops / statistics.median(times["openblas"])
        row = {"shape": shape, "m": m, "n": n, "k": k, "threads": a.threads, "isa": a.isa,
               "harness_gflops": hg, "openblas_gflops": og, "harness_peak_pct": 100 * hg / peak,
               "openblas_peak_pct": 100 * og / peak, "ratio": hg / og}
        rows.append(row)
        print(f"{shape:<16} {hg:>15.2f} {row['harness_peak_pct']:>6.1f}% {og:>16.2f} {row['openblas_peak_pct']:>6.1f}% "
              f"{hg / og:>10.3f}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": machine, "peak_name": peak_name, "peak_gflops": peak, "isa": a.isa,
                       "openblas_core": corename,
                       "threads": a.threads, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
