"""The command line and parallel loop shared by check_precision.py and
check_qdq.py: every case folder of CASES_DIR holding a given marker file is
run at every requested -O level and target by the checker's run_case."""
import argparse
import concurrent.futures
import glob
import os
import subprocess
import sys


def parser():
    """The options both checkers take; a checker adds its own."""
    ap = argparse.ArgumentParser()
    ap.add_argument("cases")
    ap.add_argument("--bin", required=True)
    ap.add_argument("--levels", default="1,3")
    ap.add_argument("--targets", default="native,x86-64-v3")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    return ap


def compile_and_run(args, compile_cmd, case, tmp):
    """Compiles with compile_cmd (a harnessc command line without -o) into
    tmp, runs the artifact on the case's test_data_set_0 and writes its
    outputs as tmp/output_N.npy. Returns (None, data folder) on success,
    else (the reason, None)."""
    so = os.path.join(tmp, "model.so")
    r = subprocess.run(compile_cmd + ["-o", so], capture_output=True, text=True)
    if r.returncode != 0:
        return "compile failed: " + r.stderr.strip(), None
    data = os.path.join(case, "test_data_set_0")
    r = subprocess.run([os.path.join(args.bin, "harness-run"), so, "--inputs", data, "--outputs", tmp,
                        "--format", "npy"], capture_output=True, text=True)
    if r.returncode != 0:
        return "run failed: " + r.stderr.strip(), None
    return None, data


def run_all(args, marker, run_case):
    """Runs run_case(args, case, level, target) (None on success, else the
    reason) over the cases that hold `marker`; prints each failure and a
    closing count, and exits 1 if any failed."""
    cases = sorted(d for d in glob.glob(os.path.join(args.cases, "*")) if os.path.exists(os.path.join(d, marker)))
    if not cases:
        sys.exit("no cases in %s" % args.cases)
    jobs = [(c, int(lv), t) for c in cases for lv in args.levels.split(",") for t in args.targets.split(",")]
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(args.j) as pool:
        for (c, lv, t), why in zip(jobs, pool.map(lambda j: run_case(args, *j), jobs)):
            if why:
                failed += 1
                print("FAIL %s -O%d %s: %s" % (os.path.basename(c), lv, t, why), flush=True)
    print("%d passed, %d failed" % (len(jobs) - failed, failed))
    sys.exit(1 if failed else 0)
