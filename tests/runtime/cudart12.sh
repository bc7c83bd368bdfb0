#!/usr/bin/env bash
# Runs cudart12_client against NVIDIA's shared CUDA 12 runtime from PyPI
# (nvidia-cuda-runtime-cu12==VERSION), through pvgpu. The runtime is installed into a virtual
# environment under the build tree on first use; when the package index cannot be reached the
# test is skipped (exit 77) with the reason.
#
#   cudart12.sh VENV VERSION PVGPU CLIENT FATBIN
set -euo pipefail
venv="$1" version="$2" pvgpu="$3" client="$4" fatbin="$5"
package="nvidia-cuda-runtime-cu12==$version"
find_library() {
  "$venv/bin/python" - <<'PY' 2>/dev/null
import glob, os, nvidia.cuda_runtime as runtime
paths = [p for base in runtime.__path__ for p in glob.glob(os.path.join(base, "lib", "libcudart.so.12*"))]
print(sorted(paths)[0] if paths else "")
PY
}
library=""
if [[ -x "$venv/bin/python" ]] && "$venv/bin/pip" show --quiet "nvidia-cuda-runtime-cu12" >/dev/null 2>&1 &&
   [[ "$("$venv/bin/pip" show nvidia-cuda-runtime-cu12 | sed -n 's/^Version: //p')" == "$version" ]]; then
  library="$(find_library)"
fi
if [[ -z "$library" ]]; then
  python3 -m venv "$venv"
  if ! "$venv/bin/pip" install --quiet --disable-pip-version-check "$package"; then
    if ! "$venv/bin/pip" index versions nvidia-cuda-runtime-cu12 >/dev/null 2>&1; then
      echo "SKIPPED: the package index is unreachable, so $package cannot be installed" >&2
      exit 77
    fi
    echo "installing $package failed although the package index answers" >&2
    exit 1
  fi
  library="$(find_library)"
fi
if [[ -z "$library" ]]; then
  echo "$package installed no libcudart.so.12" >&2
  exit 1
fi
echo "using $library"
exec "$pvgpu" run -- "$client" "$library" "$fatbin"
