#!/usr/bin/env python3
"""Where Harness is slower or faster than ONNX Runtime, part of a model by part.

    bench/compare/layer_compare.py --bin BUILD/bin MODEL.onnx MODEL.so
        [--threads N] [--iters N] [--depth D | --manifest M.json] [--input NAME=F.npy ...] [--top K]

Runs `harness-bench --profile --json` on the artifact and ONNX Runtime with its
own profiler (`ort_bench.js --profile`) on the model, then sums both engines'
per-kernel medians by module: the first D components of the node name
("/features/features.2/features.2.0/..." at D = 3 is one EfficientNet block).
A Harness kernel counts under the name of its first node. ORT renames the nodes
it rewrites (suffixes such as `_output_0_nchwc` or `/QuickGeluFusion/`) but keeps
their path, so the prefixes of both engines line up; ORT's own layout nodes
(ReorderInput/ReorderOutput) have no path and count under "(ORT layout)".

With --manifest (the artifact's `harnessc --emit manifest`) the rows are
kernels instead of modules: a Harness kernel is named by the node that makes
its output (the last of its fused nodes), and so is an ORT node, after the
suffixes ORT adds for its layout (`_output_0_nchwc`) and fusions
(`/QuickGeluFusion/`) are removed. Kernels that the two engines cut
differently stay separate rows.

ORT's profiler adds its own cost to every node (~10-50% on small kernels), so
compare the shares and the large rows, not the totals: the totals line prints
the profiled ORT latency next to it for that reason. The ratio that counts is
the one `compare.py`/`ab_rounds.py` measure without profilers.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def module_of(name, depth):
    parts = [p for p in name.split('/') if p]
    if len(parts) <= 1:
        return None
    return '/' + '/'.join(parts[:min(depth, len(parts) - 1)])


def node_of_tensor(name):
    """'/a/b/Conv_output_0' -> '/a/b/Conv' (a torch export's tensor naming)."""
    head, sep, tail = name.rpartition('_output_')
    return head if sep and tail.isdigit() else name


def ort_node_key(event_name):
    """An ORT profile node name without ORT's suffixes, as node_of_tensor gives."""
    name = event_name[:-len('_kernel_time')]
    if name.endswith('_nchwc'):
        name = name[:-len('_nchwc')]
    parts = name.rstrip('/').split('/')
    while len(parts) > 2 and 'Fusion' in parts[-1]:
        parts.pop()
    return node_of_tensor('/'.join(parts))


def harness_profile(args):
    cmd = [os.path.join(args.bin, 'harness-bench'), args.artifact, '--profile', '--json',
           '--threads', str(args.threads), '--iters', str(args.iters)]
    for spec in args.input:
        cmd += ['--input', spec]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    outputs = {}
    if args.manifest:
        outputs = {k['index']: k['outputs'][0] for k in json.load(open(args.manifest))['kernels']}
    per = collections.defaultdict(float)
    for k in out['profile']['kernels']:
        if args.manifest:
            key = node_of_tensor(outputs[k['index']])
        else:
            key = module_of(k['name'], args.depth) or f"({k['op']})"
        per[key] += k['median_us']
    return per, out['latency_ms']['median']


def ort_profile(args, work):
    cmd = ['node', os.path.join(HERE, 'ort_bench.js'), args.model, '--threads', str(args.threads),
           '--iters', str(args.iters), '--profile', os.path.join(work, 'ort')]
    for spec in args.input:
        cmd += ['--input', spec]
    res = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
    events = json.load(open(res['profile']))
    durations = collections.defaultdict(list)
    ops = {}
    for e in events:
        if e.get('cat') == 'Node' and e['name'].endswith('_kernel_time'):
            durations[e['name']].append(e['dur'])
            ops[e['name']] = e.get('args', {}).get('op_name', '?')
    per = collections.defaultdict(float)
    for name, ds in durations.items():
        key = ort_node_key(name) if args.manifest else module_of(name, args.depth)
        if key is None or (args.manifest and '/' not in key):
            key = '(ORT layout)' if ops[name].startswith('Reorder') else f'({ops[name]})'
        per[key] += statistics.median(ds[-args.iters:])
    return per, res['median_ms']


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--bin', required=True, help='directory with harness-bench')
    ap.add_argument('model', help='the ONNX model (for ONNX Runtime)')
    ap.add_argument('artifact', help='the Harness artifact compiled from it')
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--iters', type=int, default=50)
    ap.add_argument('--depth', type=int, default=3, help='name components that make a module (default 3)')
    ap.add_argument('--manifest', help='the artifact\'s manifest: compare kernel by kernel (see above)')
    ap.add_argument('--input', action='append', default=[], help='NAME=F.npy, passed to both engines')
    ap.add_argument('--top', type=int, default=40, help='rows to print, by |difference| (default 40)')
    ap.add_argument('--json', help='also write the rows to this file')
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as work:
        hc, hc_ms = harness_profile(args)
        ort, ort_ms = ort_profile(args, work)
    rows = []
    for key in set(hc) | set(ort):
        h, o = hc.get(key, 0.0), ort.get(key, 0.0)
        rows.append({'module': key, 'harness_us': h, 'ort_us': o, 'diff_us': h - o,
                     'ratio': h / o if o > 0 else None})
    rows.sort(key=lambda r: -abs(r['diff_us']))
    print(f"{'module':60s} {'harness us':>11s} {'ORT us':>10s} {'diff us':>9s} {'ratio':>6s}")
    for r in rows[:args.top]:
        ratio = f"{r['ratio']:.2f}" if r['ratio'] is not None else '-'
        print(f"{r['module'][-60:]:60s} {r['harness_us']:11.1f} {r['ort_us']:10.1f} {r['diff_us']:9.1f} {ratio:>6s}")
    th, to = sum(hc.values()), sum(ort.values())
    print(f"{'sum of kernels':60s} {th:11.1f} {to:10.1f} {th - to:9.1f} {th / to:6.2f}")
    print(f"latency: Harness {hc_ms:.3f} ms, ORT with its profiler on {ort_ms:.3f} ms")
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'rows': rows, 'harness_ms': hc_ms, 'ort_profiled_ms': ort_ms}, f, indent=1)


if __name__ == '__main__':
    sys.exit(main())
