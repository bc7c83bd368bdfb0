#!/usr/bin/env bash
# Creates the virtual environment of one set of Python client tests, from PyPI, on first use:
#
#   setup_client_venv.sh VENV CHECK PACKAGE...
#
# pip-installs the PACKAGEs (requirement specifiers) into VENV, runs CHECK (Python code, e.g.
# "import cupy, numpy") with VENV's python, and records the PACKAGEs in VENV/.pvgpu-ready. CHECK
# runs without a CUDA driver, so it must not load one (pycuda.driver links libcuda.so.1). A later
# run with the same PACKAGEs whose CHECK still passes does nothing, so the environment
# (hundreds of MB for CuPy, a build from source for pycuda) is made once per build tree. Exits 77
# (ctest's "skipped") when the package index cannot be reached; the tests that use VENV then
# skip too (run_client.sh).
set -euo pipefail
venv="${1:?usage: setup_client_venv.sh VENV CHECK PACKAGE...}"
check="${2:?usage: setup_client_venv.sh VENV CHECK PACKAGE...}"
shift 2
stamp="$venv/.pvgpu-ready"
wanted="$*"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]] &&
   "$venv/bin/python" -c "$check" 2>/dev/null; then
  exit 0
fi
rm -f "$stamp"
python3 -m venv "$venv"
if ! "$venv/bin/pip" install --quiet --disable-pip-version-check "$@"; then
  first="${1%%[<>=!~;[ ]*}"
  if ! "$venv/bin/pip" index versions "$first" >/dev/null 2>&1; then
    echo "SKIPPED: the package index is unreachable, so $* cannot be installed" >&2
    exit 77
  fi
  echo "installing $* failed although the package index answers" >&2
  exit 1
fi
"$venv/bin/python" -c "$check"
echo "$wanted" >"$stamp"
