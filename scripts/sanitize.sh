#!/usr/bin/env bash
# The test suite once more under sanitizers, as CI runs it after the main test run.
#
#   scripts/sanitize.sh [asan|tsan|all]     (default all)
#
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer (-DPVGPU_SANITIZE=address,undefined) in
#         build-asan: every program is built with them, the guest libraries and the test
#         programs that load them included, so a sanitized libcuda.so.1 is never loaded into an
#         uninstrumented process (which would need LD_PRELOAD of libasan). Runs every test except
#         the labels in PVGPU_ASAN_EXCLUDE (default: load, containers, cuda_adapter, remote —
#         see docs/fuzzing.md for why, and what covers them instead).
#   tsan  ThreadSanitizer (-DPVGPU_SANITIZE=thread) in build-tsan: the daemon's concurrency,
#         i.e. the transport and host tests plus the hostile tests (a real sanitized pvgpud
#         under concurrent guests, kills and restarts).
#
# UBSan findings and ASan/TSan reports fail the run (halt_on_error). Environment: PVGPU_JOBS
# (default 2), PVGPU_TEST_JOBS (default 2), PVGPU_ASAN_EXCLUDE, PVGPU_TSAN_LABELS.
set -euo pipefail
cd "$(dirname "$0")/.."

which="${1:-all}"
jobs="${PVGPU_JOBS:-2}"
test_jobs="${PVGPU_TEST_JOBS:-2}"

configure() {  # DIR SANITIZERS
  local generator=(-G Ninja)
  [[ -f "$1/CMakeCache.txt" ]] && generator=()
  cmake -S . -B "$1" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPVGPU_SANITIZE="$2" -DPVGPU_BUILD_BENCH=OFF >/dev/null
}

timed() {  # NAME COMMAND...
  local start=$SECONDS
  "${@:2}"
  echo "sanitize: $1 took $((SECONDS - start)) s"
}

run_asan() {
  configure build-asan address,undefined
  timed "asan build" cmake --build build-asan -j"$jobs"
  # Leak checking stays on: a session that leaks shows at daemon exit (SIGTERM in the tests).
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    timed "asan tests" ctest --test-dir build-asan --output-on-failure -j"$test_jobs" \
      -LE "${PVGPU_ASAN_EXCLUDE:-load|containers|cuda_adapter|remote}" --timeout 900
}

run_tsan() {
  configure build-tsan thread
  timed "tsan build" cmake --build build-tsan -j"$jobs"
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
    timed "tsan tests" ctest --test-dir build-tsan --output-on-failure -j"$test_jobs" \
      -L "${PVGPU_TSAN_LABELS:-transport|host|hostile}" --timeout 900
}

case "$which" in
  asan) run_asan ;;
  tsan) run_tsan ;;
  all)
    run_asan
    run_tsan
    ;;
  *)
    sed -n '2,20p' "$0" >&2
    exit 64
    ;;
esac
