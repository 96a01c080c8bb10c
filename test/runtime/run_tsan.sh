#!/usr/bin/env bash
# Builds the runtime tests (thread pool, executor, scheduler, batching,
# serving pipeline) with -fsanitize=thread in a separate build directory and
# runs them; any ThreadSanitizer report fails the run.
#
#   bash test/runtime/run_tsan.sh SOURCE_DIR BUILD_DIR
#
# CTest runs it as the `runtime_tsan` test (build tree: <build>/tsan).
set -euo pipefail
src=${1:?source dir}
build=${2:?build dir}
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S "$src" -B "$build" -DHARNESS_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
make -C "$build" -j"$jobs" harness_runtime_tests >"$build.make.log" 2>&1 || { tail -50 "$build.make.log"; exit 1; }
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1"
export CMOCKA_MESSAGE_OUTPUT=stdout
export HARNESS_SYNTHETIC="$build/lib/synthetic.so"
status=0
for t in executor_test scheduler_test batcher_test server_test histogram_test; do
  echo "== $t (ThreadSanitizer)"
  if ! "$build/bin/$t" >"$build/$t.log" 2>&1; then
    cat "$build/$t.log"
    status=1
  elif grep -q "WARNING: ThreadSanitizer" "$build/$t.log"; then
    cat "$build/$t.log"
    status=1
  else
    tail -1 "$build/$t.log"
  fi
done
exit $status
