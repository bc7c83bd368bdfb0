#!/usr/bin/env bash
# The test suite once more under sanitizers, as CI runs it after the main test run.
#
#   scripts/sanitize.sh [asan|tsan|all]     (default all)
#
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer (-DPVGPU_SANITIZE=address,undefined) in
#         build-asan: every program is built with them, the guest libraries and the test
#         programs that load them included, so a sanitized libcuda.so.1 is never loaded into an
#         uninstrumented process (which would need LD_PRELOAD of libasan). Builds and runs the
#         code that takes a guest's bytes: the labels in PVGPU_ASAN_LABELS (default transport,
#         protocol, host, hostile); PVGPU_ASAN_LABELS=all runs the whole suite (slow: see
#         docs/fuzzing.md for the subset's reasons and what covers the rest).
#   tsan  ThreadSanitizer (-DPVGPU_SANITIZE=thread) in build-tsan: the daemon's concurrency,
#         the labels in PVGPU_TSAN_LABELS (default transport, host, hostile: the rings,
#         doorbells and fences, a real sanitized pvgpud under concurrent guests, kills, kernel
#         cancellation and restarts).
#
# UBSan findings and ASan/TSan reports fail the run (halt_on_error). Environment: PVGPU_JOBS
# (default 2), PVGPU_TEST_JOBS (default 2), PVGPU_ASAN_LABELS, PVGPU_TSAN_LABELS.
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

# The directories whose targets the default labels need (CMake's Ninja generator gives each
# directory an "all" target; the hostile tests pull in pvgpud and libcuda.so.1).
subset_targets=(src/transport/all src/protocol/all src/host/all tests/hostile/all)

build() {  # DIR LABELS
  if [[ "$2" == all ]]; then
    timed "$1 build" cmake --build "$1" -j"$jobs"
  else
    timed "$1 build" cmake --build "$1" -j"$jobs" -- "${subset_targets[@]}"
  fi
}

label_args() {  # LABELS
  [[ "$1" == all ]] && return
  echo "-L $1"
}

run_asan() {
  local labels="${PVGPU_ASAN_LABELS:-transport|protocol|host|hostile}"
  configure build-asan address,undefined
  build build-asan "$labels"
  # Leak checking stays on: a session that leaks shows at daemon exit (SIGTERM in the tests).
  # shellcheck disable=SC2046  # label_args is one option and its value, or nothing.
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    timed "asan tests" ctest --test-dir build-asan --output-on-failure -j"$test_jobs" \
      $(label_args "$labels") -LE "load|containers|cuda_adapter|remote" --timeout 900
}

run_tsan() {
  local labels="${PVGPU_TSAN_LABELS:-transport|host|hostile}"
  configure build-tsan thread
  build build-tsan "$labels"
  # shellcheck disable=SC2046
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
    timed "tsan tests" ctest --test-dir build-tsan --output-on-failure -j"$test_jobs" \
      $(label_args "$labels") --timeout 900
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
