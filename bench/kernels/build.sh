#!/bin/sh
# Builds bench/kernels/kbench against a Harness build directory's static
# runtime: bench/kernels/build.sh BUILD_DIR (writes BUILD_DIR/bin/kbench).
set -e
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${1:-$repo/build}
mkdir -p "$build/bin"
${CC:-cc} -O2 -std=gnu11 -Wall -Wextra -Wno-unused-parameter -I"$repo/runtime/include" \
  "$here/kbench.c" -o "$build/bin/kbench" "$build/lib/libharness_static.a" -lz -lpthread -ldl -lm
echo "$build/bin/kbench"
