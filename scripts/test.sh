#!/usr/bin/env bash
# Builds pvgpu (scripts/build.sh) and runs the whole test suite. Arguments go to ctest, e.g.
#   scripts/test.sh -L tools        only the tools' tests
#   scripts/test.sh -LE gpu         everything that does not need a GPU
# Environment: PVGPU_BUILD_DIR (default build/), PVGPU_TEST_JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir="${PVGPU_BUILD_DIR:-build}"
# PoCL too, so that the benchmarks' PoCL rows are tested.
scripts/install-deps.sh --pocl
start=$SECONDS
scripts/build.sh "$build_dir"
echo "test: build took $((SECONDS - start)) s"
start=$SECONDS
status=0
ctest --test-dir "$build_dir" --output-on-failure -j"${PVGPU_TEST_JOBS:-2}" "$@" || status=$?
echo "test: tests took $((SECONDS - start)) s"
exit "$status"
