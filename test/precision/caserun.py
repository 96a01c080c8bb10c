"""The command line and parallel loop shared by check_precision.py and
check_qdq.py: every case folder of CASES_DIR holding a given marker file is
run at every requested -O level and target by the checker's run_case."""
import argparse
import concurrent.futures
import glob
import os
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
