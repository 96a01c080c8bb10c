#!/usr/bin/env python3
"""Turns the JSON lines of bench/run_serving_benchmarks.sh into the tables of
docs/serving-results.md.

    /usr/bin/python3 bench/summarize_serving.py OUT_DIR

Medians over rounds; ratios are taken per round (interleaved runs) and then
the median of the ratios, so that slow drifts in machine load cancel.
"""
import json
import os
import statistics
import sys


def lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip().startswith("{")]


def pipeline(out):
    rows = lines(os.path.join(out, "pipeline.jsonl"))
    if not rows:
        return
    print("| stages (pre / infer / post, us) | mode | throughput /s | stage times measured (us) | "
          "% of 1/slowest measured | % of 1/slowest nominal | serial /s |")
    print("|---|---|---|---|---|---|---|")
    for d in rows:
        st = d["stage_us"]
        print(f"| {d['pre_us']} / {d['infer_us']} / {d['post_us']} | {d['mode']} | {d['qps']:.1f} | "
              f"{st['pre']:.0f} / {st['infer']:.0f} / {st['post']:.0f} | {100 * d['ratio']:.1f}% | "
              f"{100 * d['nominal_ratio']:.1f}% | {d['serial_qps']:.1f} |")
    print()


def batching(out):
    rows = lines(os.path.join(out, "batching.jsonl"))
    if not rows:
        return
    print("| model | batch-max 1: QPS, p99 ms | batch-max 8: QPS, p99 ms, mean batch | throughput ratio (median of rounds) |")
    print("|---|---|---|---|")
    for name in sorted({d["name"] for d in rows}):
        one = {d["round"]: d for d in rows if d["name"] == name and d["batch_max"] == 1}
        eight = {d["round"]: d for d in rows if d["name"] == name and d["batch_max"] == 8}
        rounds = sorted(set(one) & set(eight))
        ratios = [eight[r]["qps"] / one[r]["qps"] for r in rounds if one[r]["qps"] > 0]
        q1 = statistics.median(one[r]["qps"] for r in rounds)
        p1 = statistics.median(one[r]["latency_ms"]["p99"] for r in rounds)
        q8 = statistics.median(eight[r]["qps"] for r in rounds)
        p8 = statistics.median(eight[r]["latency_ms"]["p99"] for r in rounds)
        mb = statistics.median(eight[r]["mean_batch"] for r in rounds)
        per = ", ".join(f"{x:.2f}" for x in ratios)
        print(f"| {name} | {q1:.1f}, {p1:.0f} | {q8:.1f}, {p8:.0f}, {mb:.2f} | "
              f"**{statistics.median(ratios):.2f}x** (rounds: {per}) |")
    print()


def priority(out):
    rows = lines(os.path.join(out, "priority.jsonl"))
    if not rows:
        return
    cap = [d for d in rows if d.get("run") == "capacity"]
    if cap:
        print(f"Capacity (closed loop, batch up to 8): {cap[0]['qps']:.0f} QPS, mean batch {cap[0]['mean_batch']:.2f}.\n")
    for run, title in (("burst", "3x bursts"), ("sla80", "80% of capacity, no bursts")):
        rs = [d for d in rows if d.get("run") == run]
        if not rs:
            continue
        print(f"**{title}** (offered {rs[0]['rate']:.0f} QPS base rate, {rs[0]['duration_s']:.0f} s per run)\n")
        print("| round | policy | high p50 / p99 queue wait ms | normal p99 queue wait ms | latency p99 ms | "
              "deadline met (of offered) | dropped | QPS |")
        print("|---|---|---|---|---|---|---|---|")
        for d in sorted(rs, key=lambda d: (d["round"], d["policy"])):
            q = d["queue_wait_ms"]
            print(f"| {d['round']} | {d['policy']} | {q['high']['p50']:.2f} / {q['high']['p99']:.2f} | "
                  f"{q['normal']['p99']:.2f} | {d['latency_ms']['p99']:.2f} | {d['deadline_met_ratio']:.4f} | "
                  f"{d['dropped']} | {d['qps']:.0f} |")
        if run == "burst":
            ratios = []
            for r in sorted({d["round"] for d in rs}):
                f = [d for d in rs if d["round"] == r and d["policy"] == "fifo"]
                p = [d for d in rs if d["round"] == r and d["policy"] == "priority"]
                if f and p and p[0]["queue_wait_ms"]["high"]["p99"] > 0:
                    ratios.append(f[0]["queue_wait_ms"]["high"]["p99"] / p[0]["queue_wait_ms"]["high"]["p99"])
            if ratios:
                print(f"\nHigh-priority p99 queue wait, FIFO / priority: "
                      f"**{statistics.median(ratios):.1f}x** (rounds: {', '.join(f'{x:.1f}' for x in ratios)})")
        print()


def main():
    out = sys.argv[1]
    pipeline(out)
    batching(out)
    priority(out)
    groups = os.path.join(out, "groups.txt")
    if os.path.exists(groups):
        print("```")
        print(open(groups).read().rstrip())
        print("```")


if __name__ == "__main__":
    main()
