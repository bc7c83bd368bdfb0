#!/usr/bin/env bash
# The main job: builds and installs pvgpu, runs the saxpy demo (a driver-API program) and the
# WSL GPU-PV articles' `nbody -benchmark` (an ordinary nvcc-built CUDA runtime program, <<<>>>)
# through `pvgpu run`, then the articles' two experiments through `pvgpu bench`: nbody (the
# driver API, the CUDA runtime program, the in-process adapter and plain C++ side by side) and a
# short matmul. Each starts a private host (pvgpud with the cpu adapter) unless PVGPU_HOST names one,
# and prints its table. Exits nonzero when any step fails or results disagree.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

build_dir="${PVGPU_BUILD_DIR:-$root/build}"
prefix="${PVGPU_INSTALL_PREFIX:-$root/out}"
# The demo program, and the benchmarks' sizes (small enough for a couple of shared cores; a
# larger machine can pass e.g. PVGPU_NBODY_N=16384).
demo=("$build_dir/tests/e2e/saxpy_drv")
nbody_n="${PVGPU_NBODY_N:-4096}"
matmul_n="${PVGPU_MATMUL_N:-256}"

# Only what the main job runs: the daemon, the tool (whose benchmarks embed their kernels), the
# guest libraries and the two demo programs; the test suite is left for scripts/test.sh.
PVGPU_INSTALL_PREFIX="$prefix" \
  PVGPU_BUILD_TARGETS="pvgpud pvgpu pvgpu_cuda pvgpu_nvml pvgpu_nbody_cudart saxpy_drv" \
  scripts/build.sh "$build_dir"

if [[ ! -x "${demo[0]}" ]]; then
  echo "main-job: error: demo program ${demo[0]} was not built" >&2
  exit 1
fi
echo "main-job: $prefix/bin/pvgpu run -- ${demo[*]}"
"$prefix/bin/pvgpu" run -- "${demo[@]}"

echo
nbody=("$prefix/libexec/pvgpu/nbody" -benchmark "-numbodies=$nbody_n")
echo "main-job: $prefix/bin/pvgpu run -- ${nbody[*]}"
"$prefix/bin/pvgpu" run -- "${nbody[@]}"

echo
echo "main-job: $prefix/bin/pvgpu bench nbody --n $nbody_n"
"$prefix/bin/pvgpu" bench nbody --n "$nbody_n"

echo
echo "main-job: $prefix/bin/pvgpu bench matmul --n $matmul_n"
"$prefix/bin/pvgpu" bench matmul --n "$matmul_n"
