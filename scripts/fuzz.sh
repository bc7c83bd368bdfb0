#!/usr/bin/env bash
# Fuzzes the decoders that read a guest's bytes, with libFuzzer (clang), ASan and UBSan.
#
#   scripts/fuzz.sh TARGET SECONDS   fuzz TARGET for SECONDS; TARGET: protocol, ptx, jit,
#                                    diff, fatbin, stream, all
#   scripts/fuzz.sh replay           run every target once over its corpus (-runs=0), as CI does,
#                                    and build the guest libraries with clang's lock analysis
#
# Targets (each skipped with a note when its fuzzer is not in this tree):
#   protocol  src/protocol/dispatch_fuzzer.cc   seeds tests/fuzz/protocol
#   ptx       src/ptx/ptx_parser_fuzzer.cc      seeds tests/ptx_corpus/fuzz_seeds
#   jit       the same source as ptx_jit_fuzzer: every accepted kernel compiled by the cpu
#             adapter's compiling engine (LLVM) before it runs; same seeds
#   diff      src/ptx/ptx_diff_fuzzer.cc        seeds tests/fuzz/diff (the input's bytes are the
#             choices of a random well-formed kernel; the interpreter and the compiler must
#             leave the same bytes)
#   fatbin    src/fatbin/fatbin_fuzzer.cc       seeds tests/fuzz/fatbin
#   stream    src/transport/stream_frames_fuzzer.cc  seeds tests/fuzz/stream_frames (the remote
#             channel's frame decoder: bytes from the network)
# New inputs go to build-fuzz/corpus/TARGET (the seeds in the repository are only read); crashes
# to build-fuzz/crashes/TARGET-*. Environment: PVGPU_FUZZ_BUILD_DIR (default build-fuzz),
# PVGPU_JOBS (default 2), PVGPU_FUZZ_ARGS (more libFuzzer flags). See docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '2,22p' "$0" >&2
  exit 64
}
[[ $# -ge 1 ]] || usage
mode="$1"
seconds="${2:-}"
[[ "$mode" == replay || "$seconds" =~ ^[0-9]+$ ]] || usage

build_dir="${PVGPU_FUZZ_BUILD_DIR:-build-fuzz}"
declare -A source=([protocol]=src/protocol/dispatch_fuzzer.cc [ptx]=src/ptx/ptx_parser_fuzzer.cc
                   [jit]=src/ptx/ptx_parser_fuzzer.cc [diff]=src/ptx/ptx_diff_fuzzer.cc
                   [fatbin]=src/fatbin/fatbin_fuzzer.cc
                   [stream]=src/transport/stream_frames_fuzzer.cc)
declare -A binary=([protocol]=src/protocol/dispatch_fuzzer [ptx]=src/ptx/ptx_parser_fuzzer
                   [jit]=src/ptx/ptx_jit_fuzzer [diff]=src/ptx/ptx_diff_fuzzer
                   [fatbin]=src/fatbin/fatbin_fuzzer [stream]=src/transport/stream_frames_fuzzer)
declare -A seeds=([protocol]=tests/fuzz/protocol [ptx]=tests/ptx_corpus/fuzz_seeds
                  [jit]=tests/ptx_corpus/fuzz_seeds [diff]=tests/fuzz/diff
                  [fatbin]=tests/fuzz/fatbin [stream]=tests/fuzz/stream_frames)

case "$mode" in
  all | replay) targets=(protocol ptx jit diff fatbin stream) ;;
  protocol | ptx | jit | diff | fatbin | stream) targets=("$mode") ;;
  *) usage ;;
esac

# Only the targets whose fuzzer source exists in this tree.
present=()
for t in "${targets[@]}"; do
  if [[ -f "${source[$t]}" ]]; then present+=("$t"); else echo "fuzz: no ${source[$t]}; $t skipped"; fi
done
[[ ${#present[@]} -gt 0 ]] || exit 0

generator=(-G Ninja)
[[ -f "$build_dir/CMakeCache.txt" ]] && generator=()
# -O1 -g1 as in the sanitizer builds (scripts/sanitize.sh): instrumented code builds two to
# three times faster than at -O2 -g, and line tables are all a crash's stack trace needs.
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DPVGPU_FUZZ=ON \
  -DPVGPU_BUILD_TESTS=OFF -DPVGPU_BUILD_BENCH=OFF >/dev/null
build_targets=()
have_jit=false
grep -q '^LLVM_DIR:PATH=/' "$build_dir/CMakeCache.txt" && have_jit=true
for t in "${present[@]}"; do
  [[ ("$t" == jit || "$t" == diff) && "$have_jit" == false ]] && continue  # none without LLVM
  build_targets+=("$(basename "${binary[$t]}")")
done
# CI's replay also builds the guest libraries here, the one clang build it has: clang checks
# their thread-safety annotations (-Werror=thread-safety, src/guest/CMakeLists.txt).
[[ "$mode" == replay ]] && build_targets+=(pvgpu_cuda pvgpu_nvml)
cmake --build "$build_dir" -j"${PVGPU_JOBS:-2}" --target "${build_targets[@]}"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
mkdir -p "$build_dir/crashes"
status=0
for t in "${present[@]}"; do
  fuzzer="$build_dir/${binary[$t]}"
  if [[ ("$t" == jit || "$t" == diff) && "$have_jit" == false ]]; then
    echo "fuzz: this build has no compiling engine (LLVM 19 not found); $t skipped"
    continue
  fi
  if [[ ! -x "$fuzzer" ]]; then
    echo "fuzz: $fuzzer was not built (its CMake target needs clang and PVGPU_FUZZ=ON)" >&2
    status=1
    continue
  fi
  # shellcheck disable=SC2086  # PVGPU_FUZZ_ARGS is a list of words on purpose.
  if [[ "$mode" == replay ]]; then
    count=$(find "${seeds[$t]}" -type f | wc -l)
    echo "fuzz: replaying $count inputs of ${seeds[$t]} through $t"
    # Artifacts (a crash, or a unit slower than 10 s, which libFuzzer writes too) go to the
    # build directory, not the working tree.
    "$fuzzer" -runs=0 -timeout=60 -artifact_prefix="$build_dir/crashes/$t-" ${PVGPU_FUZZ_ARGS:-} \
      "${seeds[$t]}" || status=1
  else
    corpus="$build_dir/corpus/$t"
    mkdir -p "$corpus"
    echo "fuzz: $t for ${seconds}s (new inputs in $corpus)"
    "$fuzzer" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 \
      -artifact_prefix="$build_dir/crashes/$t-" ${PVGPU_FUZZ_ARGS:-} "$corpus" "${seeds[$t]}" ||
      status=1
  fi
done
exit $status
