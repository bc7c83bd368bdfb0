#!/usr/bin/env bash
# The cuda adapter without a GPU: pvgpu's own libcuda.so.1 stands in for NVIDIA's.
#
#   guest program --PVGPU_HOST--> host 1 (pvgpud --adapters cuda --cuda-driver lib/pvgpu/libcuda.so.1)
#                                   | its cuda adapter calls pvgpu's libcuda, which connects to
#                                   v PVGPU_HOST in host 1's environment
#                                 host 2 (pvgpud --adapters cpu)
#
# Usage: [PVGPU_CHAIN_DEVICES=N] run_chain.sh BUILD_DIR [PROGRAM...]
# Without PROGRAMs it runs every end-to-end program (BUILD_DIR/tests/e2e/*_drv). Exits non-zero
# when a program fails, when either daemon does not start, or when the work did not go through
# host 1's cuda adapter. Both daemons are stopped on every exit path; logs are printed on
# failure.
set -uo pipefail

build=$(cd "${1:?usage: run_chain.sh BUILD_DIR [PROGRAM...]}" && pwd)
shift
programs=()
for p in "$@"; do programs+=("$(realpath "$p")"); done
if [[ ${#programs[@]} -eq 0 ]]; then
  for p in "$build"/tests/e2e/*_drv; do [[ -x $p ]] && programs+=("$p"); done
fi
if [[ ${#programs[@]} -eq 0 ]]; then
  echo "run_chain: no end-to-end programs under $build/tests/e2e" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/pvgpu-chain.XXXXXX")
pids=()
status=0
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
  if [[ $status -ne 0 ]]; then
    for log in "$work"/host*.log; do
      [[ -f $log ]] || continue
      echo "----- $(basename "$log") (last 60 lines)" >&2
      tail -n 60 "$log" >&2
    done
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# start_daemon NAME ENV... -- ARGS...: starts pvgpud and waits for its "ready" line (an early
# exit closes the pipe, so a daemon that fails to start ends the wait too).
start_daemon() {
  local name=$1 fifo="$work/$1.ready"
  shift
  mkfifo "$fifo"
  env "$@" --ready-fd 3 --log-file "$work/$name.log" 3>"$fifo" &
  pids+=($!)
  local line=""
  read -r line <"$fifo"
  if [[ $line != ready ]]; then
    echo "run_chain: $name did not start" >&2
    status=1
    exit 1
  fi
}

# PVGPU_CHAIN_DEVICES cpu adapters on host 2 (default 1), each a device of host 1's driver.
devices=${PVGPU_CHAIN_DEVICES:-1}
if ! [[ $devices =~ ^[1-9][0-9]?$ ]]; then
  echo "run_chain: PVGPU_CHAIN_DEVICES must be a count of devices, not '$devices'" >&2
  exit 1
fi
adapters=cpu
for ((i = 1; i < devices; ++i)); do adapters+=",cpu"; done
start_daemon host2 "$build/bin/pvgpud" --listen "unix:$work/host2.sock" --adapters "$adapters"
start_daemon host1 PVGPU_HOST="unix:$work/host2.sock" "$build/bin/pvgpud" \
  --listen "unix:$work/host1.sock" --adapters cuda \
  --cuda-driver "$build/lib/pvgpu/libcuda.so.1"

for program in "${programs[@]}"; do
  echo "=== $(basename "$program") through host 1's cuda adapter"
  if ! (cd "$(dirname "$program")" &&
        PVGPU_HOST="unix:$work/host1.sock" LD_LIBRARY_PATH="$build/lib/pvgpu" "$program"); then
    echo "run_chain: FAILED: $(basename "$program")" >&2
    status=1
  fi
done

# The work must really have gone through the chain: host 1 served a cuda adapter and host 2
# saw host 1 (process name pvgpud) as a guest.
if ! grep -q "cuda adapter: driver .*pvgpu's guest driver" "$work/host1.log"; then
  echo "run_chain: host 1 did not serve pvgpu's driver through a cuda adapter" >&2
  status=1
fi
if ! grep -q "guest 'pvgpud'" "$work/host2.log"; then
  echo "run_chain: host 2 never saw host 1 as a guest" >&2
  status=1
fi
[[ $status -eq 0 ]] && echo "run_chain: ${#programs[@]} program(s) passed through the chain"
exit $status
