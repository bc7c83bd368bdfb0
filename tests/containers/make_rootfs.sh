#!/usr/bin/env bash
# Assembles a minimal container root filesystem from files on this machine, so that the
# container tests need no image and no registry:
#
#   make_rootfs.sh ROOTFS [--lib LIBRARY]... FILE...
#
# Each FILE (a program or a data file such as a kernel's .ptx) lands in ROOTFS/opt/pvgpu-test/;
# for programs, every shared library ldd resolves (libc, libm, the dynamic loader) is copied to
# the same path inside ROOTFS. libcuda.so.1 and libnvidia-ml.so.1 are never copied that way:
# inside the container they must come from the CDI spec's mounts, which is what is tested.
# Each --lib LIBRARY is copied to ROOTFS/opt/pvgpu-lib/ (for the container that has the
# libraries but no device). ROOTFS must not exist yet.
set -euo pipefail

if (($# < 2)); then
  echo "usage: $0 ROOTFS [--lib LIBRARY]... FILE..." >&2
  exit 2
fi
rootfs="$1"
shift
if [[ -e "$rootfs" ]]; then
  echo "make_rootfs: $rootfs already exists" >&2
  exit 1
fi
mkdir -p "$rootfs"/{opt/pvgpu-test,opt/pvgpu-lib,etc,tmp,run/pvgpu,proc,sys,dev}
# The directories the CDI spec mounts libraries into, present as in Debian/Fedora images.
mkdir -p "$rootfs/usr/lib/$(uname -m)-linux-gnu" "$rootfs/usr/lib64"
echo "root:x:0:0:root:/:/bin/false" >"$rootfs/etc/passwd"
echo "root:x:0:" >"$rootfs/etc/group"

copy_dependencies() {
  local program="$1" line library
  # ldd prints "name => /path (addr)" or "/path (addr)"; "not found" is expected for the
  # pvgpu libraries, which the CDI mounts provide.
  while read -r line; do
    library="$(grep -o '/[^ ]*' <<<"$line" | head -n1 || true)"
    [[ -z "$library" || "$line" == *"not found"* ]] && continue
    case "$(basename "$library")" in
      libcuda.so* | libnvidia-ml.so*) continue ;;
    esac
    if [[ ! -e "$rootfs$library" ]]; then
      mkdir -p "$rootfs$(dirname "$library")"
      cp -L "$library" "$rootfs$library"
    fi
  done < <(ldd "$program" 2>/dev/null || true)
}

while (($# > 0)); do
  if [[ "$1" == "--lib" ]]; then
    cp -L "$2" "$rootfs/opt/pvgpu-lib/"
    shift 2
    continue
  fi
  cp -L "$1" "$rootfs/opt/pvgpu-test/"
  if [[ -x "$1" ]] && head -c4 "$1" | grep -q 'ELF'; then
    copy_dependencies "$1"
  fi
  shift
done
