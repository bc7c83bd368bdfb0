#!/usr/bin/env bash
# Builds pvgpu and installs it into a prefix inside the repository.
#
#   scripts/build.sh [BUILD_DIR]      BUILD_DIR defaults to build/
#
# Environment: PVGPU_INSTALL_PREFIX (default out/, gitignored), PVGPU_JOBS (default nproc),
# PVGPU_CUDA_ROOT (default /usr/local/cuda), PVGPU_CMAKE_ARGS (extra configure arguments),
# PVGPU_BUILD_TARGETS (space-separated targets to build instead of everything; the installed
# programs and libraries must be among them).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

build_dir="${1:-build}"
prefix="${PVGPU_INSTALL_PREFIX:-$root/out}"
jobs="${PVGPU_JOBS:-$(nproc)}"
cuda_root="${PVGPU_CUDA_ROOT:-/usr/local/cuda}"

scripts/install-deps.sh

# A build directory configured earlier keeps its generator; asking CMake for another fails.
generator=(-G Ninja)
if [[ -f "$build_dir/CMakeCache.txt" ]] && grep -q '^CMAKE_GENERATOR:INTERNAL=' "$build_dir/CMakeCache.txt"; then
  generator=()
fi
# shellcheck disable=SC2086  # PVGPU_CMAKE_ARGS is a list of words on purpose.
cmake -S . -B "$build_dir" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPVGPU_CUDA_ROOT="$cuda_root" \
  ${PVGPU_CMAKE_ARGS:-}
# shellcheck disable=SC2086  # PVGPU_BUILD_TARGETS is a list of words on purpose.
if [[ -n ${PVGPU_BUILD_TARGETS:-} ]]; then
  cmake --build "$build_dir" -j"$jobs" --target ${PVGPU_BUILD_TARGETS}
else
  cmake --build "$build_dir" -j"$jobs"
fi
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
echo "build: pvgpu installed in $prefix (run $prefix/bin/pvgpu run -- PROGRAM)"
