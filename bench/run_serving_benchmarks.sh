#!/usr/bin/env bash
# The serving benchmarks behind docs/serving-results.md: pipeline overlap,
# parallel groups, dynamic batching on MobileNetV2 and a BERT-like encoder,
# and deadline-aware priority scheduling against FIFO.
#
#   bash bench/run_serving_benchmarks.sh BUILD_DIR OUT_DIR [pipeline|groups|batching|priority ...]
#
# BUILD_DIR holds bin/harnessc, bin/harness-load, bin/harness-pipeline-bench,
# bin/harness-parallel-bench and lib/synthetic.so. Every run appends a JSON
# line to OUT_DIR/<section>.jsonl and prints a summary; timings are never
# asserted. Benchmarks that compare two configurations interleave them
# (A B A B ...) so that drifting machine load hits both alike.
set -euo pipefail
build=$(cd "${1:?build dir}" && pwd)
out=${2:?output dir}
shift 2
sections=${*:-pipeline groups batching priority}
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bin
synthetic=$build/lib/synthetic.so
rounds=${ROUNDS:-3}
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/machine.txt"

for section in $sections; do
  case $section in
    pipeline)
      # Three stages with synthetic costs; the bound is 1 / slowest stage.
      : >"$out/pipeline.jsonl"
      for cfg in "2000 2000 2000 sleep" "2000 3000 1500 sleep" "1000 1000 1000 sleep" "1500 2500 1000 spin"; do
        set -- $cfg
        "$bin/harness-pipeline-bench" "$synthetic" --pre-us "$1" --infer-us "$2" --post-us "$3" --mode "$4" \
          --requests 1000 --json | tee -a "$out/pipeline.jsonl"
      done
      ;;
    groups)
      : >"$out/groups.txt"
      for mode in spin sleep; do
        for args in "--lanes 2 --chain 4 --kernel-us 500 --tasks 1" "--lanes 4 --chain 4 --kernel-us 500 --tasks 1" \
                    "--lanes 3 --chain 4 --kernel-us 500 --tasks 1" "--lanes 2 --chain 4 --kernel-us 1000 --tasks 64"; do
          "$bin/harness-parallel-bench" $args --threads 2 --reps 61 --mode $mode | tee -a "$out/groups.txt"
        done
      done
      ;;
    batching)
      # Saturated throughput of the same artifact with batches of 1 and of up
      # to 8, closed loop with 24 requests in flight and a 5 ms batching window
      # (which never delays batches of 1); p99 latency included.
      models=$out/models
      mkdir -p "$models"
      if [ ! -f "$models/mobilenet_v2.onnx" ]; then
        /usr/bin/python3 "$src/test/real_models/export_torchvision.py" "$models" mobilenet_v2 >/dev/null
      fi
      [ -f "$models/bert_like.onnx" ] || /usr/bin/python3 "$src/bench/models/make_bert_like.py" "$models/bert_like.onnx" >/dev/null
      for m in mobilenet_v2 bert_like; do
        [ -f "$models/$m.so" ] || "$bin/harnessc" "$models/$m.onnx" -o "$models/$m.so" --batch 1,2,4,8
      done
      : >"$out/batching.jsonl"
      for r in $(seq "$rounds"); do
        for m in mobilenet_v2 bert_like; do
          dur=20
          [ "$m" = bert_like ] && dur=10
          for b in 1 8; do
            "$bin/harness-load" "$models/$m.so" --rate 0 --duration "$dur" --warmup 2 --queue 24 --batch-max "$b" \
              --max-delay-us 5000 \
              --threads 2 --json | sed "s/^{/{\"round\":$r,\"batch_max\":$b,\"name\":\"$m\",/" | tee -a "$out/batching.jsonl" |
              /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["name"], "batch-max", d["batch_max"], "qps %.2f p99 %.1f ms mean batch %.2f" % (d["qps"], d["latency_ms"]["p99"], d["mean_batch"]))'
          done
        done
      done
      ;;
    priority)
      # The synthetic artifact as the model: 2 ms per batch + 0.25 ms per
      # sample (batch 8: 4 ms), spent sleeping (an accelerator; immune to
      # other load on the machine) or, with SYN_MODE=spin, spinning on a core
      # (a CPU-bound model). Capacity first, then the same bursty trace under
      # FIFO and under priority scheduling, then SLA at 80% of capacity.
      syn="--synthetic 2000,250,${SYN_MODE:-sleep} --threads 1"
      : >"$out/priority.jsonl"
      "$bin/harness-load" "$synthetic" $syn --rate 0 --duration 5 --queue 64 --json |
        sed 's/^{/{"run":"capacity",/' | tee -a "$out/priority.jsonl" >/dev/null
      cap=$(tail -1 "$out/priority.jsonl" | /usr/bin/python3 -c 'import json,sys; print(int(json.load(sys.stdin)["qps"]))')
      echo "capacity: $cap QPS"
      base=$((cap / 2))
      for r in $(seq "$rounds"); do
        for pol in fifo priority; do
          "$bin/harness-load" "$synthetic" $syn --rate "$base" --burst 3 --duration 20 --high-share 0.1 \
            --deadline-ms 100 --policy "$pol" --seed "$r" --json |
            sed "s/^{/{\"run\":\"burst\",\"round\":$r,/" | tee -a "$out/priority.jsonl" |
            /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); q=d["queue_wait_ms"]; print("burst", d["policy"], "high p99 wait %.2f ms, normal p99 wait %.2f ms, met %.4f, dropped %d, qps %.0f" % (q["high"]["p99"], q["normal"]["p99"], d["deadline_met_ratio"], d["dropped"], d["qps"]))'
        done
      done
      sla=$((cap * 8 / 10))
      for r in $(seq "$rounds"); do
        for pol in fifo priority; do
          "$bin/harness-load" "$synthetic" $syn --rate "$sla" --duration 20 --high-share 0.1 --deadline-ms 50 \
            --policy "$pol" --seed "$r" --json |
            sed "s/^{/{\"run\":\"sla80\",\"round\":$r,/" | tee -a "$out/priority.jsonl" |
            /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print("sla@80%", d["policy"], "met %.4f, p99 %.2f ms, dropped %d, qps %.0f" % (d["deadline_met_ratio"], d["latency_ms"]["p99"], d["dropped"], d["qps"]))'
        done
      done
      ;;
    *)
      echo "unknown section $section (pipeline, groups, batching, priority)" >&2
      exit 2
      ;;
  esac
done
