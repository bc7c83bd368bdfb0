#!/usr/bin/env bash
# Installs the Debian packages that pvgpu builds and tests with, and checks for the CUDA
# toolkit (cuda.h is the API pvgpu implements; nvcc compiles test kernels to PTX).
#
# Idempotent and fast when nothing is missing: apt-get runs only if dpkg reports a package
# as not installed. Runs apt-get as root, or through sudo otherwise.
#
#   scripts/install-deps.sh          what building and testing need
#   scripts/install-deps.sh --pocl   also PoCL (OpenCL on the CPU, with its own LLVM: several
#                                    hundred MB), the reference row of `pvgpu bench nbody/matmul`
set -euo pipefail
cd "$(dirname "$0")/.."
with_pocl=0
for arg in "$@"; do
  case "$arg" in
    --pocl) with_pocl=1 ;;
    *) echo "install-deps: unknown option $arg (expected --pocl)" >&2; exit 2 ;;
  esac
done

PACKAGES=(
  build-essential cmake ninja-build python3
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev
  libssl-dev libzstd-dev liblz4-dev
  clang clang-format clang-tidy
  llvm-19-dev  # the cpu adapter's compiling engine (src/ptx/jit.cc): ORC JIT
  iproute2 openssl  # remote tests (tests/remote): ip netns, certificates made at test time
  podman runc  # container tests (tests/containers): rootful podman with the runc runtime
  libcpp-httplib-dev  # pvgpud --metrics-listen: the HTTP server of GET /metrics
  prometheus  # host.metrics_prometheus: a real Prometheus scrapes pvgpud; promtool checks it
  opencl-c-headers  # pvgpu bench's PoCL rows (libOpenCL itself is loaded at run time)
)
if ((with_pocl)); then
  PACKAGES+=(pocl-opencl-icd ocl-icd-libopencl1)
fi
CUDA_ROOT="${PVGPU_CUDA_ROOT:-/usr/local/cuda}"

missing=()
for package in "${PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)"
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} > 0)); then
  echo "install-deps: missing packages: ${missing[*]}"
  if [[ "$(id -u)" -eq 0 ]]; then
    as_root=(env)
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo env)
  else
    echo "install-deps: error: installing packages needs root or sudo; as root run:" >&2
    echo "  apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  "${as_root[@]}" DEBIAN_FRONTEND=noninteractive apt-get update
  "${as_root[@]}" DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${PACKAGES[@]}"
fi

cuda_ok=1
for file in include/cuda.h bin/nvcc; do
  if [[ ! -e "$CUDA_ROOT/$file" ]]; then
    echo "install-deps: error: $CUDA_ROOT/$file not found." >&2
    cuda_ok=0
  fi
done
if ((cuda_ok == 0)); then
  echo "install-deps: pvgpu needs the CUDA toolkit's headers and nvcc (no GPU or driver is" >&2
  echo "  needed). Install the toolkit under /usr/local/cuda or set PVGPU_CUDA_ROOT." >&2
  exit 1
fi
echo "install-deps: all dependencies present (CUDA toolkit: $CUDA_ROOT)"
