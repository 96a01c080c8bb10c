#!/usr/bin/env bash
# Builds Harness and runs the whole test suite: CMocka unit tests, the
# embedding example, the ONNX backend node tests of the supported ops, and
# the real models against ONNX Runtime (which needs npm and torch: installed
# here with scripts/install_deps.sh --full).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --full
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
