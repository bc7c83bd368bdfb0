#!/usr/bin/env bash
# Creates the virtual environment the Python client tests use (PyPI: cuda-bindings, numba-cuda
# with cuda-core, numpy). Idempotent: an environment that already imports them all is kept.
set -euo pipefail
venv="${1:?usage: setup_venv.sh VENV_DIR}"
if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c "import cuda.bindings.driver, cuda.core, numba.cuda, numpy" 2>/dev/null; then
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "cuda-bindings>=13,<14" \
  "numba-cuda>=0.30,<1" numpy
"$venv/bin/python" -c "import cuda.bindings.driver, cuda.bindings.nvrtc, cuda.core, numba.cuda, numpy"
