#!/usr/bin/env bash
# Runs the whole CPU performance suite (issue 4) and rewrites the results
# block of docs/performance.md:
#
#   bench/run_all.sh [BUILD_DIR] [WORK_DIR]
#
# BUILD_DIR defaults to build-bench (configured Release and built here),
# WORK_DIR to BUILD_DIR/bench (exported models, artifacts, JSON results).
# Environment: MODELS="resnet50 ..." to restrict the model list, ROUNDS
# (interleaved rounds per model and thread count, default 12), THREADS
# (default "1 2"), SKIP="check compare gemm compile" to leave steps out (their old
# JSON is then reused by the report if present).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(realpath -m "${1:-$REPO/build-bench}")
WORK=$(realpath -m "${2:-$BUILD/bench}")
PY=/usr/bin/python3 # Debian's python3-torch, torchvision, onnx, numpy
ROUNDS=${ROUNDS:-12}
THREADS=${THREADS:-"1 2"}
SKIP=${SKIP:-}
MODEL_ARGS=()
if [[ -n "${MODELS:-}" ]]; then read -r -a MODEL_ARGS <<<"--models $MODELS"; fi
skip() { [[ " $SKIP " == *" $1 "* ]]; }

# What the suite needs from Debian on a fresh machine: the build, torch and
# torchvision (model export), npm (ONNX Runtime), OpenBLAS and GNU time.
"$REPO/scripts/install_deps.sh" --bench

mkdir -p "$WORK"
if ! { cmake -S "$REPO" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release &&
  make -C "$BUILD" -j"$(nproc)" harnessc harness-run harness-bench; } >"$WORK/build.log" 2>&1; then
  tail -40 "$WORK/build.log"
  exit 1
fi
BIN="$BUILD/bin"
status=0

if ! skip check; then
  echo "== correctness of the benchmark models vs ONNX Runtime"
  $PY "$REPO/bench/models/check_models.py" --bin "$BIN" --work "$WORK" "${MODEL_ARGS[@]}" \
    --json "$WORK/check.json" || status=1
fi

if ! skip compare; then
  echo "== Harness vs ONNX Runtime"
  # shellcheck disable=SC2086
  $PY "$REPO/bench/compare/compare.py" --bin "$BIN" --work "$WORK" "${MODEL_ARGS[@]}" --threads $THREADS \
    --rounds "$ROUNDS" --json "$WORK/compare.json" || status=1
fi

if ! skip gemm; then
  echo "== SGEMM vs OpenBLAS"
  $PY "$REPO/bench/gemm/run_gemm.py" --bin "$BIN" --work "$WORK" --isa native --json "$WORK/gemm-native.json"
  $PY "$REPO/bench/gemm/run_gemm.py" --bin "$BIN" --work "$WORK" --isa avx2 --json "$WORK/gemm-avx2.json"
fi

if ! skip compile; then
  echo "== compile time"
  $PY "$REPO/bench/compare/compile_time.py" --bin "$BIN" --work "$WORK" --json "$WORK/compile.json"
fi

$PY "$REPO/bench/compare/report.py" --work "$WORK" --bin "$BIN" --command "bench/run_all.sh${1:+ $1}${2:+ $2}"
exit $status
