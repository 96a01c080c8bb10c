#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a running model: installs the
# dependencies, builds Harness, compiles the bundled example model and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
echo
echo "== harnessc examples/tiny_cnn.onnx -o build/tiny_cnn.so"
build/bin/harnessc examples/tiny_cnn.onnx -o build/tiny_cnn.so -v
echo "== harness-run build/tiny_cnn.so --input image=examples/tiny_cnn_input.pb --print"
build/bin/harness-run build/tiny_cnn.so --input image=examples/tiny_cnn_input.pb --outputs build/tiny_cnn_out --print
echo "(outputs written to build/tiny_cnn_out/output_0.pb)"
