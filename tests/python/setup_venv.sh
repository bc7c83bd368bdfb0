#!/usr/bin/env bash
# Creates the virtual environment the Python client tests use (PyPI: cuda-bindings, numba-cuda,
# numpy).
# Idempotent: an environment that already imports both is kept.
set -euo pipefail
venv="${1:?usage: setup_venv.sh VENV_DIR}"
if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c "import cuda.bindings.driver, numba.cuda, numpy" 2>/dev/null; then
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "cuda-bindings>=13,<14" \
  "numba-cuda>=0.30,<1" numpy
"$venv/bin/python" -c "import cuda.bindings.driver, cuda.bindings.nvrtc, numba.cuda, numpy"
