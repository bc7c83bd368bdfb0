#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and nothing else prepared: installs what pvgpu builds with,
# builds it, runs the end-to-end suite through a pvgpud serving the GPU with the cuda adapter
# (the system's own libcuda.so.1), runs `pvgpu bench latency`, `bandwidth` and `nbody` against
# that pvgpud, and writes one JSON file of results. Everything shares an 8-minute budget; a step
# that would overrun is cut short and recorded as such.
#
# Usage: scripts/gpu-check.sh [RESULTS.json]   (default: gpu-check.json in the repository)
# For trying the script itself without a GPU: GPU_CHECK_BUILD_DIR=DIR uses an existing build
# (no install, no build), GPU_CHECK_CUDA_DRIVER=PATH is passed to pvgpud as --cuda-driver
# (e.g. pvgpu's own libcuda.so.1 with PVGPU_HOST naming a second pvgpud, as the chained tests do).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
results=${1:-$root/gpu-check.json}
build=${GPU_CHECK_BUILD_DIR:-$root/build-gpu}
driver_args=()
[[ -n ${GPU_CHECK_CUDA_DRIVER:-} ]] && driver_args=(--cuda-driver "$GPU_CHECK_CUDA_DRIVER")
budget=480
started=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/pvgpu-gpu-check.XXXXXX")
daemon_pid=""
cleanup() {
  if [[ -n $daemon_pid ]]; then
    kill -TERM "$daemon_pid" 2>/dev/null
    wait "$daemon_pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

left() { echo $((budget - ($(date +%s) - started))); }
# step NAME CMD...: runs CMD within the remaining budget, logging to $work/NAME.log; records
# NAME's exit status and seconds in $work/steps.tsv.
step() {
  local name=$1 t0 rc
  shift
  t0=$(date +%s)
  if (($(left) <= 5)); then
    echo "gpu-check: no time left for $name" | tee "$work/$name.log"
    rc=124
  else
    timeout --kill-after=5 "$(left)" "$@" >"$work/$name.log" 2>&1
    rc=$?
  fi
  printf '%s\t%s\t%s\n' "$name" "$rc" $(($(date +%s) - t0)) >>"$work/steps.tsv"
  echo "gpu-check: $name: exit $rc ($(($(date +%s) - t0)) s)"
  return $rc
}

: >"$work/steps.tsv"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
  >"$work/gpu.txt" 2>&1 || echo "nvidia-smi unavailable" >"$work/gpu.txt"

# 1. Dependencies and build (Release; only what the check runs).
programs=()
for source in "$root"/tests/e2e/*_drv.c; do programs+=("$(basename "${source%.c}")"); done
if [[ -z ${GPU_CHECK_BUILD_DIR:-} ]]; then
  if ! command -v cmake >/dev/null || ! command -v ninja >/dev/null ||
     ! [[ -e /usr/include/CLI/CLI.hpp ]]; then
    step install-deps "$root/scripts/install-deps.sh"
  fi
  # The e2e programs live in the test tree; only they and the daemon, tool and guest driver
  # are built, not the unit tests.
  step configure cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DPVGPU_BUILD_TESTS=ON &&
    step build cmake --build "$build" -j"$(nproc)" --target pvgpud pvgpu pvgpu_cuda \
      "${programs[@]}"
fi

# 2. A pvgpud serving the GPU through the system's driver (found in the standard locations).
sock="$work/gpu.sock"
if [[ -x $build/bin/pvgpud ]]; then
  mkfifo "$work/ready"
  "$build/bin/pvgpud" --listen "unix:$sock" --adapters cuda "${driver_args[@]}" --ready-fd 3 \
    --log-file "$work/pvgpud.log" 3>"$work/ready" &
  daemon_pid=$!
  read -r line <"$work/ready" || line=""
  if [[ $line != ready ]]; then
    echo "gpu-check: pvgpud --adapters cuda did not start" | tee -a "$work/pvgpud.log"
    wait "$daemon_pid" 2>/dev/null
    daemon_pid=""
  fi
fi

# 3. The end-to-end suite through the cuda adapter.
if [[ -n $daemon_pid ]]; then
  for program in "${programs[@]}"; do
    step "e2e.$program" env -C "$build/tests/e2e" PVGPU_HOST="unix:$sock" \
      LD_LIBRARY_PATH="$build/lib/pvgpu" "$build/tests/e2e/$program"
  done
fi

# 4. Benchmarks, if this tree has them: through pvgpu (the GPU behind the channel) with the
# bench's own in-process baseline. A native GPU run needs the bench to load the system driver;
# recorded as not available unless it offers that.
bench_available=false
if [[ -x $build/bin/pvgpu ]] && "$build/bin/pvgpu" bench --help >/dev/null 2>&1; then
  bench_available=true
  if [[ -n $daemon_pid ]]; then
    for name in latency bandwidth nbody; do
      step "bench.$name" "$build/bin/pvgpu" bench "$name" --json --host "unix:$sock"
    done
  fi
fi

# 5. One JSON file.
python3 - "$work" "$results" "$bench_available" "$budget" "$started" <<'PY'
import json, os, sys, time
work, results, bench_available, budget, started = sys.argv[1:6]
def read(name):
    try:
        with open(os.path.join(work, name), errors="replace") as f:
            return f.read()
    except OSError:
        return None
steps = {}
for line in (read("steps.tsv") or "").splitlines():
    name, rc, seconds = line.split("\t")
    steps[name] = {"exit": int(rc), "seconds": int(seconds), "timed_out": rc in ("124", "137")}
e2e = {n[4:]: s for n, s in steps.items() if n.startswith("e2e.")}
bench = {}
for name in ("latency", "bandwidth", "nbody"):
    step = steps.get("bench." + name)
    if bench_available != "true":
        bench[name] = "not available (pvgpu bench is not in this build)"
        continue
    if step is None:
        bench[name] = "not run (no pvgpud with the cuda adapter)"
        continue
    entry = dict(step)
    text = read(f"bench.{name}.log") or ""
    try:
        entry["through_pvgpu"] = json.loads(text[text.index("{"):])
    except ValueError:
        entry["output_tail"] = text[-2000:]
    entry["native_gpu"] = "not available (pvgpu bench's baseline is the in-process cpu adapter)"
    bench[name] = entry
report = {
    "gpu": (read("gpu.txt") or "").strip(),
    "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(started))),
    "seconds": int(time.time()) - int(started),
    "budget_seconds": int(budget),
    "steps": {k: v for k, v in steps.items() if not k.startswith(("e2e.", "bench."))},
    "e2e": e2e,
    "e2e_passed": bool(e2e) and all(s["exit"] == 0 for s in e2e.values()),
    "bench": bench,
    "pvgpud_log_tail": (read("pvgpud.log") or "")[-4000:],
    "failure_logs": {n: (read(n + ".log") or "")[-2000:] for n, s in steps.items()
                     if s["exit"] != 0},
}
with open(results, "w") as f:
    json.dump(report, f, indent=2)
print(f"gpu-check: results in {results}; e2e passed: {report['e2e_passed']}")
sys.exit(0 if report["e2e_passed"] else 1)
PY
