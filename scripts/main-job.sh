#!/usr/bin/env bash
# The main job: builds and installs pvgpu, then runs the demo program through `pvgpu run`,
# which starts a private host (pvgpud with the cpu adapter) unless PVGPU_HOST names one.
# Exits with the demo's status.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

build_dir="${PVGPU_BUILD_DIR:-$root/build}"
prefix="${PVGPU_INSTALL_PREFIX:-$root/out}"
# The program to run, and its arguments. Change this line to change the demo.
demo=("$build_dir/tests/e2e/saxpy_drv")

PVGPU_INSTALL_PREFIX="$prefix" scripts/build.sh "$build_dir"

if [[ ! -x "${demo[0]}" ]]; then
  echo "main-job: error: demo program ${demo[0]} was not built" >&2
  exit 1
fi
echo "main-job: $prefix/bin/pvgpu run -- ${demo[*]}"
exec "$prefix/bin/pvgpu" run -- "${demo[@]}"
