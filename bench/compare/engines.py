"""Engine processes for interleaved benchmarks: `harness-bench --serve` and
bench/compare/ort_bench.js --serve speak the same line protocol ("run K" ->
{"times_ns": [...]}), so a driver can alternate blocks of runs between
engines that stay loaded, and machine-wide noise hits both alike."""
import glob
import json
import os
import statistics
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def one_thread_cpu():
    """The core that every one-thread engine is pinned to: $BENCH_CPU if set
    (-1: no pinning), else the highest-numbered core this process may use.
    On a cloud guest the cores are not alike: on the benchmark machine's
    guest, cpu0 shares its physical core with other load, runs MobileNetV2
    23% slower than cpu1 and reads memory at 20 instead of 33 GB/s
    (`taskset -c N harness-bench --peak`). Unpinned, two engines compared at
    one thread each run on whichever core the scheduler picked, and the
    ratio measured that pick instead of the engines. Pinned to one core,
    both see the same core."""
    env = os.environ.get("BENCH_CPU")
    if env is not None:
        return None if int(env) < 0 else int(env)
    return max(os.sched_getaffinity(0))


def pin_one_thread(threads):
    """preexec_fn for a subprocess computing with `threads` threads: at one,
    pins it to one_thread_cpu(); None otherwise."""
    cpu = one_thread_cpu() if int(threads) == 1 else None
    return (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None


class Engine:
    """One model loaded in one engine, answering "run K". threads: how many
    the engine computes with; at 1 it is pinned to one_thread_cpu(). A
    context manager: `with` closes it, also when the other engine of a
    comparison fails to start."""

    def __init__(self, name, cmd, env=None, threads=None):
        self.name = name
        pin = pin_one_thread(threads) if threads is not None else None
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1, env=env, preexec_fn=pin)
        line = self.proc.stdout.readline()
        if not line or not json.loads(line).get("ready"):
            err = self.proc.stderr.read()
            raise RuntimeError(f"{name} did not start: {' '.join(cmd)}\n{line}{err}")

    def run(self, k):
        """Times k runs; returns their times in ns."""
        self.proc.stdin.write(f"run {k}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name} exited:\n{self.proc.stderr.read()}")
        reply = json.loads(line)
        if "times_ns" not in reply:
            raise RuntimeError(f"{self.name}: {line}")
        return reply["times_ns"]

    def cpu_ns(self):
        """Nanoseconds the engine's threads have spent on a CPU so far
        (/proc/PID/task/*/schedstat), 0 where that is not available. Unlike
        wall time, it leaves out the time the engine waited for a core that
        another process held; it includes spinning pool workers."""
        total = 0
        for f in glob.glob(f"/proc/{self.proc.pid}/task/*/schedstat"):
            try:
                with open(f) as fh:
                    total += int(fh.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
        return total

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=30)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            self.proc.kill()


def harness_engine(bin_dir, artifact, threads, input_spec=None, warmup=10):
    cmd = [os.path.join(bin_dir, "harness-bench"), artifact, "--serve", "--threads", str(threads),
           "--warmup", str(warmup)]
    if input_spec:
        cmd += ["--input", input_spec]
    return Engine("harness", cmd, threads=threads)


def ort_engine(model, threads, input_spec=None, warmup=10):
    cmd = ["node", os.path.join(HERE, "ort_bench.js"), model, "--serve", "--threads", str(threads),
           "--warmup", str(warmup)]
    if input_spec:
        cmd += ["--input", input_spec]
    return Engine("ort", cmd, threads=threads)


def interleave(engines, rounds, block_s=0.25, pause_s=0.02, min_block=1, max_block=2000, cpu=None):
    """Runs blocks of each engine in turn (A B, then B A, ...) for `rounds`
    rounds, with a short pause between blocks so the other engine's spinning
    workers park; each engine's block size is chosen so a block lasts about
    block_s. Returns {name: [times_ns]} and {name: [per-round medians]}.
    If `cpu` is a dict, cpu[name] gets each block's on-CPU ns per run
    (Engine.cpu_ns): at one thread, a measure that machine load inflates
    much less than wall time."""
    block = {}
    for e in engines:
        probe = e.run(3)
        per = statistics.median(probe)
        block[e.name] = max(min_block, min(max_block, int(block_s * 1e9 / max(per, 1))))
    times = {e.name: [] for e in engines}
    round_medians = {e.name: [] for e in engines}
    for r in range(rounds):
        order = engines if r % 2 == 0 else list(reversed(engines))
        for e in order:
            time.sleep(pause_s)
            c0 = e.cpu_ns() if cpu is not None else 0
            t = e.run(block[e.name])
            if cpu is not None:
                cpu.setdefault(e.name, []).append((e.cpu_ns() - c0) / len(t))
            times[e.name] += t
            round_medians[e.name].append(statistics.median(t))
    return times, round_medians


def peak(bin_dir):
    """This machine's ISA, clock and fp32 peaks (harness-bench --peak --json),
    measured on the core the one-thread engines use."""
    p = subprocess.run([os.path.join(bin_dir, "harness-bench"), "--peak", "--json"], capture_output=True, text=True,
                       check=True, preexec_fn=pin_one_thread(1))
    return json.loads(p.stdout)


def handoff(bin_dir):
    """What passing data between CPUs 0 and 1 costs right now (harness-bench
    --handoff --json): the round trip of one cache line and, per line of a
    512 KiB buffer, reading the other core's writes and rewriting lines the
    other core has read. The host moves between states minutes apart (on the
    Zen 5 guest: a 55 ns round trip with 2.2-2.7 ns rewrites, or 380-480 ns
    with 8.6-12 ns rewrites), and two-thread results move with it."""
    p = subprocess.run([os.path.join(bin_dir, "harness-bench"), "--handoff", "--json"], capture_output=True, text=True,
                       check=True)
    return json.loads(p.stdout)


def host_state(row):
    """A several-thread result row's host state, 'RT/RT ns, RW/RW ns': the
    round trip and the rewrite cost per line (handoff()) before/after its
    rounds; '-' for one thread."""
    b, e = row.get("host_before"), row.get("host_after")
    if not b or not e:
        return "-"
    return (f"{b['core_roundtrip_ns']:.0f}/{e['core_roundtrip_ns']:.0f} ns, "
            f"{b['handoff_rewrite_ns_per_line']:.1f}/{e['handoff_rewrite_ns_per_line']:.1f} ns")


def artifact_info(bin_dir, artifact):
    """flops per run, target and required CPU features of an artifact."""
    p = subprocess.run([os.path.join(bin_dir, "harness-bench"), artifact, "--iters", "1", "--warmup", "0", "--json"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"harness-bench {artifact} failed:\n{p.stderr}")
    return json.loads(p.stdout)


def peak_for(machine, isa=None):
    """(name, GFLOP/s per core) of the peak to quote: `isa` ("avx2" or
    "avx512") if given, else the machine's widest vector ISA."""
    isa = isa or machine["isa"]
    if isa == "avx512" and machine["peak_avx512_gflops_per_core"] > 0:
        return "AVX-512", machine["peak_avx512_gflops_per_core"]
    return "AVX2", machine["peak_avx2_gflops_per_core"]
