#!/usr/bin/env bash
# Regenerates docs/operators.md: runs harness-test over the ONNX backend
# suite (Debian libonnx-testdata) and tabulates the results per operator.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
data=/usr/share/libonnx-testdata/data
"$BUILD"/bin/harness-test -q --json "$BUILD"/suite.json "$data"/node "$data"/pytorch-converted \
  "$data"/pytorch-operator "$data"/simple | tail -9 || true
/usr/bin/python3 scripts/gen_operators_doc.py --harnessc "$BUILD"/bin/harnessc --results "$BUILD"/suite.json > docs/operators.md
echo "wrote docs/operators.md"
