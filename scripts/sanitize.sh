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
#         protocol, host, hostile; add jit for the cpu adapter's compiler and its caches, about
#         6 minutes more); PVGPU_ASAN_LABELS=all runs the whole suite (slow: see
#         docs/fuzzing.md for the subset's reasons and what covers the rest).
#   tsan  ThreadSanitizer (-DPVGPU_SANITIZE=thread) in build-tsan: the daemon's concurrency,
#         the labels in PVGPU_TSAN_LABELS (default transport, host, hostile: the rings,
#         doorbells and fences, a real sanitized pvgpud under concurrent guests, kills, kernel
#         cancellation and restarts).
#
# Every report fails the run, including one from a process whose exit status no test looks at
# (a killed guest, a daemon a test stops): every pvgpud and guest a test starts writes to the
# test's stderr, which CTest keeps in DIR/Testing/Temporary/LastTest.log for passing tests too;
# after the tests that log is searched for sanitizer reports. (Not log_path: GCC's standalone
# UBSan runtime ignores it, and ASan's report then goes half to the file, half to stderr.)
# Reports also halt the reporting process (halt_on_error). TSan reads its suppressions from
# scripts/tsan.supp when it exists. Environment: PVGPU_JOBS (default 2), PVGPU_TEST_JOBS
# (default 2), PVGPU_ASAN_LABELS, PVGPU_TSAN_LABELS.
set -euo pipefail
cd "$(dirname "$0")/.."

which="${1:-all}"
jobs="${PVGPU_JOBS:-2}"
test_jobs="${PVGPU_TEST_JOBS:-2}"

configure() {  # DIR SANITIZERS
  local generator=(-G Ninja)
  [[ -f "$1/CMakeCache.txt" ]] && generator=()
  # -O1 -g1 (line tables, all a report's stack trace needs): instrumented code at -O2 -g, and
  # the PTX engine at -O3, took two to three times as long to build, which pushed CI's ASan
  # pass past its bound (docs/fuzzing.md, Costs).
  cmake -S . -B "$1" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DPVGPU_SANITIZE="$2" -DPVGPU_BUILD_BENCH=OFF >/dev/null
}

timed() {  # NAME COMMAND...  (returns the command's status)
  local start=$SECONDS status=0
  "${@:2}" || status=$?
  echo "sanitize: $1 took $((SECONDS - start)) s"
  return "$status"
}

# The directories whose targets the default labels need (CMake's Ninja generator gives each
# directory an "all" target; the hostile tests pull in pvgpud and libcuda.so.1).
subset_targets=(src/transport/all src/protocol/all src/host/all tests/hostile/all)

build() {  # DIR LABELS
  if [[ "$2" == all ]]; then
    timed "$1 build" cmake --build "$1" -j"$jobs"
  else
    local targets=("${subset_targets[@]}")
    # The jit label's tests are the PTX engine's (about 5 minutes more of an ASan build).
    [[ "|$2|" == *"|jit|"* || "|$2|" == *"|ptx|"* ]] && targets+=(src/ptx/all)
    timed "$1 build" cmake --build "$1" -j"$jobs" -- "${targets[@]}"
  fi
}

label_args() {  # LABELS
  [[ "$1" == all ]] && return
  echo "-L $1"
}

# The start of every sanitizer report: ASan and LeakSanitizer ("==PID==ERROR: ..."), UBSan
# ("file:line:col: runtime error: ..."), TSan ("WARNING: ThreadSanitizer: ...", "FATAL: ...").
report_pattern='==[0-9]+==ERROR: [A-Za-z]+Sanitizer|:[0-9]+:[0-9]+: runtime error: |(WARNING|FATAL): ThreadSanitizer'

check_reports() {  # DIR TEST_STATUS
  local log="$1/Testing/Temporary/LastTest.log" count
  count=$(grep -cE "$report_pattern" "$log" || true)
  if [[ $count -gt 0 ]]; then
    echo "sanitize: $count sanitizer report(s) in the output of these tests ($log):" >&2
    grep -nE -A12 "$report_pattern" "$log" >&2 || true
    return 1
  fi
  return "$2"
}

run_asan() {
  local labels="${PVGPU_ASAN_LABELS:-transport|protocol|host|hostile}" status=0
  # "|| return": run_asan and run_tsan run under "||" in "all", where set -e does not apply.
  configure build-asan address,undefined || return
  build build-asan "$labels" || return
  # Leak checking stays on: a session that leaks shows at daemon exit (SIGTERM in the tests).
  # shellcheck disable=SC2046  # label_args is one option and its value, or nothing.
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    timed "asan tests" ctest --test-dir build-asan --output-on-failure -j"$test_jobs" \
      $(label_args "$labels") -LE "load|containers|cuda_adapter|remote" --timeout 900 ||
    status=$?
  check_reports build-asan "$status"
}

run_tsan() {
  local labels="${PVGPU_TSAN_LABELS:-transport|host|hostile}" status=0 supp=""
  # "|| return": run_asan and run_tsan run under "||" in "all", where set -e does not apply.
  configure build-tsan thread || return
  build build-tsan "$labels" || return
  [[ -f scripts/tsan.supp ]] && supp=":suppressions=$PWD/scripts/tsan.supp"
  # shellcheck disable=SC2046
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1$supp" \
    timed "tsan tests" ctest --test-dir build-tsan --output-on-failure -j"$test_jobs" \
      $(label_args "$labels") --timeout 900 || status=$?
  check_reports build-tsan "$status"
}

case "$which" in
  asan) run_asan ;;
  tsan) run_tsan ;;
  all)
    # Both passes run even when the first fails, so that one CI run shows every finding.
    status=0
    run_asan || status=$?
    run_tsan || status=$?
    exit "$status"
    ;;
  *)
    sed -n '2,26p' "$0" >&2
    exit 64
    ;;
esac
