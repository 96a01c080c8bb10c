#!/usr/bin/env bash
# Installs what Harness needs to build and test on Debian 12 (bookworm).
#   scripts/install_deps.sh          build + unit tests + ONNX backend suite
#   scripts/install_deps.sh --full   also real-model references (torch, node)
#   scripts/install_deps.sh --bench  --full, plus what bench/run_all.sh needs
#                                    (OpenBLAS, GNU time)
set -euo pipefail
full=0 bench=0
[ "${1:-}" = "--full" ] && full=1
[ "${1:-}" = "--bench" ] && full=1 && bench=1
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
pkgs=(build-essential cmake llvm-19-dev libprotobuf-c-dev protobuf-c-compiler libonnx-dev libcjson-dev
      zlib1g-dev libcmocka-dev python3 python3-onnx python3-numpy libonnx-testdata)
if [ "$full" = 1 ]; then
  pkgs+=(python3-torch python3-torchvision)
  command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
fi
if [ "$bench" = 1 ]; then
  pkgs+=(libopenblas-dev time)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
