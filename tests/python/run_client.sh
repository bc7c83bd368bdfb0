#!/usr/bin/env bash
# Runs one Python client test in the virtual environment setup_client_venv.sh made:
#
#   run_client.sh VENV COMMAND...
#
# Exits 77 (ctest's "skipped") when VENV was not made (the package index was unreachable).
# COMMAND runs with a private TMPDIR, removed afterwards: pycuda leaves nvcc's work directories
# in the temporary directory for some of its kernels (gpuarray.dot compiles with keep=True), and
# pycuda's compiler cache (PYCUDA_CACHE_DIR, which pycuda does not create) goes there too.
set -uo pipefail
venv="${1:?usage: run_client.sh VENV COMMAND...}"
shift
if [[ ! -f "$venv/.pvgpu-ready" ]]; then
  echo "SKIPPED: $venv was not set up (see the python.*.setup test; PyPI unreachable?)" >&2
  exit 77
fi
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pvgpu-pyclient.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/pycuda-cache"
export TMPDIR="$tmp"
export PYCUDA_CACHE_DIR="${PYCUDA_CACHE_DIR:-$tmp/pycuda-cache}"
"$@"
