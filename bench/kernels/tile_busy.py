#!/usr/bin/python3
"""How AVX2 register tiles of a one-tap convolution step fare when the host
is quiet and when it is busy (docs/performance.md, "F(4,3) on 14x14 planes
for AVX2", stop 29):

    /usr/bin/python3 bench/kernels/tile_busy.py [--rounds 600] [--cpu 1]

Generates x86-64 assembly for the inner loop of the channels kernel's tile
(P pixels x V vectors of 8 output channels: per step P broadcasts of an
input pixel and V weight vectors, V-F of them in registers and F folded into
the FMAs as memory operands, two steps per iteration), a register-only FMA
loop, and one 5 x 2 tile of 128 steps called per tile over a 14x14 plane
whose inputs are read as NCHW planes (a new line per channel) or packed per
tile. All data stay in L1/L2. Builds them with cc, runs every loop once per
round, pinned to --cpu, and prints each loop's nanoseconds per FMA in the
quietest 30% of rounds and the busiest 30% (rounds ranked by the mean of
all the loops that load), and the ratio. On the Zen 3 guest every tile ran
at the FMA peak when quiet and 1.35-1.49x slower when busy, the register
loop 1.03-1.07x: the busy state slows loads from L1, whatever the tile.
"""
import argparse
import os
import statistics
import subprocess
import tempfile

TILES = [(5, 2, 0), (6, 2, 0), (4, 3, 0), (3, 4, 1), (3, 4, 4)]  # (3, 4, 4): ONNX Runtime's MLAS shape


def tile_loop(p, v, f):
    """rdi = weights (cycled over 32 KiB), rsi = inputs, rdx = iterations."""
    nacc = p * v
    wregs = list(range(nacc, nacc + v - f))
    breg = nacc + v - f
    assert breg < 16
    out = [f".globl t{p}x{v}f{f}", f"t{p}x{v}f{f}:", "  vxorps %ymm0,%ymm0,%ymm0"]
    out += [f"  vmovaps %ymm0,%ymm{i}" for i in range(1, nacc)]
    out += ["  mov %rdi,%r8", "  lea 32768(%rdi),%r9", "1:"]
    for s in range(2):
        woff = s * v * 32
        out += [f"  vmovups {woff + k * 32}(%r8),%ymm{wregs[k]}" for k in range(v - f)]
        for i in range(p):
            b = breg + 1 if i % 2 and breg < 15 else breg
            out.append(f"  vbroadcastss {s * 256 + i * 4}(%rsi),%ymm{b}")
            for k in range(v):
                src = f"%ymm{wregs[k]}" if k < v - f else f"{woff + k * 32}(%r8)"
                out.append(f"  vfmadd231ps {src},%ymm{b},%ymm{i * v + k}")
    out += [f"  add ${2 * v * 32},%r8", "  cmp %r9,%r8", "  jb 2f", "  mov %rdi,%r8", "2:", "  sub $1,%rdx",
            "  jnz 1b", "  vzeroupper", "  ret"]
    return out


def register_loop():
    out = [".globl treg", "treg:", "  vxorps %ymm0,%ymm0,%ymm0"] + [f"  vmovaps %ymm0,%ymm{i}" for i in range(1, 14)]
    out += ["1:"] + [f"  vfmadd231ps %ymm12,%ymm13,%ymm{i}" for i in range(12)]
    return out + ["  sub $1,%rdx", "  jnz 1b", "  vzeroupper", "  ret"]


def plane_tile():
    """One 5 x 2 tile of 128 steps: rdi = weights, rsi = input, rdx = bytes from one channel to the next."""
    out = [".globl tile128", "tile128:", "  vxorps %ymm0,%ymm0,%ymm0"] + [f"  vmovaps %ymm0,%ymm{i}" for i in range(1, 10)]
    out += ["  mov $64,%ecx", "  lea (%rdx,%rdx),%r10", "1:", "  lea (%rsi,%rdx),%r11"]
    for s in range(2):
        base = "%rsi" if s == 0 else "%r11"
        out += [f"  vmovups {s * 64}(%rdi),%ymm10", f"  vmovups {s * 64 + 32}(%rdi),%ymm11"]
        for i in range(5):
            b = 12 + i % 2
            out += [f"  vbroadcastss {i * 4}({base}),%ymm{b}", f"  vfmadd231ps %ymm{b},%ymm10,%ymm{2 * i}",
                    f"  vfmadd231ps %ymm{b},%ymm11,%ymm{2 * i + 1}"]
    return out + ["  add $128,%rdi", "  add %r10,%rsi", "  sub $1,%ecx", "  jnz 1b", "  vzeroupper", "  ret"]


DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
%(decls)s
void treg(const float*, const float*, long);
void tile128(const float*, const float*, long);
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char** argv) {
  int rounds = atoi(argv[1]);
  float* w = aligned_alloc(64, 65536); float* x = aligned_alloc(64, 4096);
  float* plane = aligned_alloc(64, 128 * 196 * 4 + 4096); float* packed = aligned_alloc(64, 42 * 128 * 20 + 4096);
  memset(w, 0, 65536); memset(x, 0, 4096); memset(plane, 0, 128 * 196 * 4 + 4096); memset(packed, 0, 42 * 128 * 20 + 4096);
  const long fmas = 12000000;
  struct { const char* name; void (*f)(const float*, const float*, long); int per; } k[] = {%(table)s {"register", treg, 12}};
  int nk = sizeof k / sizeof k[0], toff[42], nt = 0;
  for (int r = 0; r < 14; ++r) for (int c = 0; c < 14; c += 5) toff[nt++] = r * 14 + c;
  printf("round"); for (int j = 0; j < nk; ++j) printf(" %%s", k[j].name); printf(" nchw_planes packed_tiles\n");
  for (int r = 0; r < rounds; ++r) {
    printf("%%d", r);
    for (int j = 0; j < nk; ++j) { double t0 = now(); k[j].f(w, x, fmas / k[j].per); printf(" %%.4f", (now() - t0) * 1e9 / fmas); }
    long reps = fmas / (42 * 1280);
    double t0 = now();
    for (long q = 0; q < reps; ++q) for (int t = 0; t < nt; ++t) tile128(w, plane + toff[t], 196 * 4);
    double t1 = now();
    for (long q = 0; q < reps; ++q) for (int t = 0; t < nt; ++t) tile128(w, packed + t * 128 * 5, 20);
    double t2 = now(), fl = (double)reps * nt * 1280;
    printf(" %%.4f %%.4f\n", (t1 - t0) * 1e9 / fl, (t2 - t1) * 1e9 / fl);
  }
  return 0;
}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=600)
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    a = ap.parse_args()
    names = [f"t{p}x{v}f{f}" for p, v, f in TILES]
    asm = [".text"]
    for t in TILES:
        asm += tile_loop(*t)
    asm += register_loop() + plane_tile() + ['.section .note.GNU-stack,"",@progbits']
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "k.S"), "w") as f:
            f.write("\n".join(asm) + "\n")
        with open(os.path.join(tmp, "d.c"), "w") as f:
            f.write(DRIVER % {
                "decls": "\n".join(f"void {n}(const float*, const float*, long);" for n in names),
                "table": " ".join(f'{{"{n}", {n}, {2 * p * v}}},' for n, (p, v, _) in zip(names, TILES))})
        exe = os.path.join(tmp, "tile_busy")
        subprocess.run(["cc", "-O2", os.path.join(tmp, "d.c"), os.path.join(tmp, "k.S"), "-o", exe], check=True)
        out = subprocess.run([exe, str(a.rounds)], check=True, capture_output=True, text=True,
                             preexec_fn=lambda: os.sched_setaffinity(0, {a.cpu})).stdout
    lines = out.strip().splitlines()
    cols = lines[0].split()[1:]
    rows = [[float(v) for v in ln.split()[1:]] for ln in lines[1:]]
    loads = [i for i, c in enumerate(cols) if c != "register"]
    rank = sorted(range(len(rows)), key=lambda r: statistics.mean(rows[r][i] for i in loads))
    cut = max(1, len(rows) * 3 // 10)
    quiet, busy = rank[:cut], rank[-cut:]
    print(f"{len(rows)} rounds on cpu {a.cpu}; ns per FMA instruction (the peak: two a cycle, 0.5 / GHz)")
    print(f"{'loop':14s} {'quiet':>8s} {'busy':>8s} {'busy/quiet':>10s}")
    for i, c in enumerate(cols):
        q = statistics.median(rows[r][i] for r in quiet)
        b = statistics.median(rows[r][i] for r in busy)
        print(f"{c:14s} {q:8.3f} {b:8.3f} {b / q:10.2f}")


if __name__ == "__main__":
    main()
