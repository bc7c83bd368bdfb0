#!/usr/bin/env bash
# Runs COMMAND... where nvJitLink cannot be loaded: in a private mount namespace, every
# libnvJitLink the dynamic loader or cuda-pathfinder could find (ldconfig's cache, the CUDA
# toolkit, NVIDIA wheels in the given virtual environment) is covered by an empty file.
#
#   without_nvjitlink.sh VENV COMMAND...
#
# Why: numba-cuda and cuda.core link device code with nvJitLink when they can load it, and
# nvJitLink's output is machine code (a cubin) for one NVIDIA GPU, which the cpu adapter cannot
# run. Without it they link with the driver's cuLink* calls, which pvgpu implements on the host.
# This stands in for a guest image that has numba-cuda and NVVM but not nvJitLink
# (docs/python-clients.md). Needs root (or an unprivileged user namespace) for the mounts; exits
# 77 (ctest's "skipped") when neither is available.
set -euo pipefail
venv="${1:?usage: without_nvjitlink.sh VENV COMMAND...}"
shift

if [[ "${PVGPU_IN_NAMESPACE:-}" != 1 ]]; then
  if [[ $(id -u) -eq 0 ]]; then
    flags=(--mount --propagation private)
  else
    flags=(--user --map-root-user --mount --propagation private)
  fi
  if ! unshare "${flags[@]}" true 2>/dev/null; then
    echo "without_nvjitlink: cannot create a mount namespace here (unshare ${flags[*]}): skipped" >&2
    exit 77
  fi
  PVGPU_IN_NAMESPACE=1 exec unshare "${flags[@]}" "$0" "$venv" "$@"
fi

libraries=()
while read -r path; do libraries+=("$path"); done < <(
  {
    ldconfig -p 2>/dev/null | awk '/libnvJitLink\.so/ {print $NF}'
    for dir in "${CUDA_HOME:-/usr/local/cuda}" /usr/local/cuda /usr/local/cuda-*; do
      ls "$dir"/lib64/libnvJitLink.so* "$dir"/lib/libnvJitLink.so* 2>/dev/null || true
    done
    find "$venv" -name 'libnvJitLink.so*' 2>/dev/null || true
  } | while read -r p; do readlink -f "$p"; done | sort -u)
for library in "${libraries[@]}"; do
  [[ -f "$library" ]] && mount --bind /dev/null "$library"
done
echo "without_nvjitlink: hid ${#libraries[@]} nvJitLink librar$([[ ${#libraries[@]} == 1 ]] && echo y || echo ies)" >&2
exec "$@"
