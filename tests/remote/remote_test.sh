#!/usr/bin/env bash
# End-to-end tests of remote hosts with real pvgpud processes and real CUDA driver-API programs.
#
#   remote_test.sh CASE BUILD_DIR
#
# CASE:
#   loopback   tls:// and tcp:// on 127.0.0.1: programs run; wrong token, untrusted CA and plain
#              TCP to a TLS listener are refused with clear errors while the daemon keeps
#              serving; tcp:// on a non-loopback address is refused at start-up. No root needed.
#   netns      guest and host in two network namespaces joined by a veth pair: saxpy_drv and
#              kernels_drv over TLS, plus the refusals.
#   cut        a long run loses its host (link down, then pvgpud killed): the call in flight
#              fails with CUDA_ERROR_DEVICE_UNAVAILABLE within the bound; a new process works
#              once the host is back.
#   two_hosts  two daemons in PVGPU_HOST are two devices; both compute correctly.
#   cut_copy   the link is cut while a guest copies 256 MiB blocks back and forth: first taken
#              down, then deleted (what removing a namespace does to its links): the call fails
#              with CUDA_ERROR_DEVICE_UNAVAILABLE within the bound, and the host ends the
#              session and frees its memory (pvgpu smi on the host's own unix socket).
#   stress     tcp:// and tls:// on 127.0.0.1: four threads and streams of mixed copies,
#              launches, event records and synchronizes, all checked (tests/remote/stress.c),
#              each run within a deadline. No root needed.
#   bench      `pvgpu bench bandwidth --quick` and `latency --quick` against a real pvgpud over
#              tcp:// and tls://, each within a deadline, their JSON well formed. No root needed.
#   shaped     two namespaces joined by a veth pair shaped with tc (tbf rate 2gbit) and delayed
#              1 ms each way (netem where the kernel has it, else delay_relay): the stress
#              program and the benches' quick runs over tls://, within deadlines.
#   shaped_bench  (not run by CTest) the full bandwidth and latency benches over that link, for
#              their figures; RATE (tc syntax) and DELAY_MS set the shaping.
#   figures    (not run by CTest) the full bandwidth and latency benches against one pvgpud over
#              its unix socket, tcp:// and tls:// on loopback, one after the other in ROUNDS
#              rounds (default 1, the schemes' order rotating), and a table of the figures side
#              by side; the JSON stays in OUT (default: not kept). No root needed.
#
# The netns cases need root and `ip netns`; without them they exit 77 (ctest SKIP) and say why.
# Namespaces, links and daemons get names unique to this run and are removed on every exit.
# Addresses come from 198.18.0.0/15 (RFC 2544 benchmarking) and exist only inside the
# namespaces.
set -uo pipefail

CASE="${1:?usage: remote_test.sh CASE BUILD_DIR}"
BUILD="$(cd "${2:?usage: remote_test.sh CASE BUILD_DIR}" && pwd)"
PVGPUD="$BUILD/bin/pvgpud"
LIBDIR="$BUILD/lib/pvgpu"
E2E="$BUILD/tests/e2e"
REMOTE="$BUILD/tests/remote"
PVGPU="$BUILD/bin/pvgpu"
BOUND_S=15  # design bound 5 s of silence; asserted with margin
DEADLINE_S=120  # for runs that must finish (a healthy one takes seconds): catches hangs only

# Eight digits from the pid and $RANDOM ("${ID: -8}" of a shorter string would be empty).
ID="$(printf '%08d' $(((($$ << 15) + RANDOM) % 100000000)))"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/pvgpu-remote-XXXXXX")"
HOST_NS="pvgpu-h$ID"
GUEST_NS="pvgpu-g$ID"
VETH_H="pvh$ID"
VETH_G="pvg$ID"
HOST_IP=198.18.0.1
GUEST_IP=198.18.0.2
DAEMONS=()
NETNS_MADE=0

fail() {
  echo "FAIL: $*" >&2
  for log in "$WORK"/*.log; do
    [[ -f "$log" ]] && { echo "--- $log" >&2; tail -n 30 "$log" >&2; }
  done
  exit 1
}
skip() {
  echo "SKIPPED: $*"
  exit 77
}

cleanup() {
  for pid in "${DAEMONS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${DAEMONS[@]}"; do wait "$pid" 2>/dev/null; done
  if ((NETNS_MADE)); then
    ip netns del "$HOST_NS" 2>/dev/null   # deleting a namespace deletes its veth end
    ip netns del "$GUEST_NS" 2>/dev/null
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for tool in "$PVGPUD" "$PVGPU" "$E2E/saxpy_drv" "$E2E/big_module_drv" "$REMOTE/long_run" \
  "$REMOTE/two_devices" "$REMOTE/stress" "$REMOTE/delay_relay"; do
  [[ -x "$tool" ]] || fail "missing $tool (build first)"
done
command -v openssl >/dev/null || fail "the openssl command is needed (scripts/install-deps.sh)"

# CA, host certificate naming 127.0.0.1 and $HOST_IP, an unrelated CA, and the token; all
# made now, never stored in the repository.
make_pki() {
  (
    cd "$WORK" || exit 1
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
      -subj "/CN=pvgpu test CA" -keyout ca.key -out ca.pem
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
      -subj "/CN=other CA" -keyout other-ca.key -out other-ca.pem
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
      -subj "/CN=pvgpu test host" -keyout host.key -out host.csr
    printf 'subjectAltName=IP:127.0.0.1,IP:%s\nextendedKeyUsage=serverAuth\n' "$HOST_IP" \
      > host.ext
    openssl x509 -req -in host.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
      -extfile host.ext -out host.pem
    openssl rand -hex 32 > token
    openssl rand -hex 32 > wrong-token
  ) >"$WORK/openssl.out" 2>&1 || { cat "$WORK/openssl.out" >&2; fail "openssl"; }
}

# start_daemon NAME NETNS(or "") ADDRESS [extra args]: starts pvgpud, waits until it serves.
start_daemon() {
  local name="$1" ns="$2" address="$3"
  shift 3
  local run=()
  [[ -n "$ns" ]] && run=(ip netns exec "$ns")
  "${run[@]}" "$PVGPUD" --listen "$address" --tls-cert "$WORK/host.pem" \
    --tls-key "$WORK/host.key" --token-file "$WORK/token" --threads 2 --memory 1G \
    --log-file "$WORK/$name.log" "$@" &
  DAEMONS+=($!)
  local pid=$!
  for _ in $(seq 200); do
    grep -q "serving" "$WORK/$name.log" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || fail "pvgpud $name exited at start-up"
    sleep 0.1
  done
  fail "pvgpud $name did not start"
}
bound_address() {  # the tls:// or tcp:// address pvgpud logged (port 0 resolved)
  grep -oE 'listening on (tls|tcp)://[^ ]*' "$WORK/$1.log" | head -1 | sed 's/listening on //'
}

# guest NETNS HOST_LIST PROGRAM ARGS...: runs a driver-API program as a guest.
guest() {
  local ns="$1" hosts="$2"
  shift 2
  local run=()
  [[ -n "$ns" ]] && run=(ip netns exec "$ns")
  "${run[@]}" env PVGPU_HOST="$hosts" PVGPU_TLS_CA="${CA:-$WORK/ca.pem}" \
    PVGPU_TOKEN_FILE="${TOKEN:-$WORK/token}" LD_LIBRARY_PATH="$LIBDIR" "$@"
}

# The refusals every remote set-up must give, then proof the daemon still serves.
check_refusals() {
  local ns="$1" address="$2" daemon_log="$WORK/$3.log" out
  out="$(TOKEN="$WORK/wrong-token" guest "$ns" "$address" "$E2E/saxpy_drv" 2>&1)" &&
    fail "wrong token accepted: $out"
  grep -q "token rejected" <<<"$out" || fail "guest did not say 'token rejected': $out"
  grep -q "NO_DEVICE\|no CUDA-capable" <<<"$out" || fail "cuInit did not fail with NO_DEVICE: $out"
  grep -q "token rejected" "$daemon_log" || fail "pvgpud did not log the rejected token"

  out="$(CA="$WORK/other-ca.pem" guest "$ns" "$address" "$E2E/saxpy_drv" 2>&1)" &&
    fail "untrusted certificate accepted: $out"
  grep -q "certificate verify failed" <<<"$out" || fail "no certificate error: $out"

  out="$(guest "$ns" "tcp://${address#tls://}" "$E2E/saxpy_drv" 2>&1)" &&
    fail "plain TCP to a TLS listener worked: $out"
  grep -q "TLS handshake failed" "$daemon_log" || fail "pvgpud did not log the plain TCP guest"

  guest "$ns" "$address" "$E2E/saxpy_drv" >"$WORK/after-refusals.out" 2>&1 ||
    fail "daemon stopped serving after refusals: $(cat "$WORK/after-refusals.out")"
}

setup_netns() {
  [[ "$(id -u)" -eq 0 ]] || skip "network-namespace tests need root"
  command -v ip >/dev/null || skip "ip (iproute2) is not installed"
  ip netns add "$HOST_NS" 2>"$WORK/netns.err" || skip "ip netns add failed: $(cat "$WORK/netns.err")"
  NETNS_MADE=1
  ip netns add "$GUEST_NS" || fail "ip netns add $GUEST_NS"
  for ns in "$HOST_NS" "$GUEST_NS"; do ip -n "$ns" link set lo up; done
  make_link
}

# The veth pair between the namespaces, with its addresses, up.
make_link() {
  ip link add "$VETH_H" netns "$HOST_NS" type veth peer name "$VETH_G" netns "$GUEST_NS" ||
    fail "ip link add veth"
  ip -n "$HOST_NS" addr add "$HOST_IP/30" dev "$VETH_H" || fail "ip addr (host)"
  ip -n "$GUEST_NS" addr add "$GUEST_IP/30" dev "$VETH_G" || fail "ip addr (guest)"
  ip -n "$HOST_NS" link set "$VETH_H" up || fail "ip link set up (host)"
  ip -n "$GUEST_NS" link set "$VETH_G" up || fail "ip link set up (guest)"
}

# wait_exit PID LIMIT_S: waits for PID, at most LIMIT_S seconds (then kills it and fails).
wait_exit() {
  local pid="$1" limit="$2"
  for _ in $(seq $((limit * 10))); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid"; return $?; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null
  fail "guest still running ${limit} s after its host was lost (a hang)"
}

# cut_and_check HOW ADDRESS [MIB]: starts long_run (with MIB-sized copies), waits until it is
# mid-run, loses the host with HOW, and checks the error and the bound.
cut_and_check() {
  local how="$1" address="$2" mib="${3:-0}" out="$WORK/long_run.$RANDOM.out"
  guest "$GUEST_NS" "$address" "$REMOTE/long_run" "$E2E/saxpy.ptx" 600 "$mib" >"$out" 2>&1 &
  local pid=$!
  for _ in $(seq 600); do
    (($(grep -c '^iteration' "$out") >= 3)) && break
    kill -0 "$pid" 2>/dev/null || fail "long_run ended early: $(cat "$out")"
    sleep 0.1
  done
  (($(grep -c '^iteration' "$out") >= 3)) || fail "long_run made no progress: $(cat "$out")"
  local start=$SECONDS
  eval "$how"
  wait_exit "$pid" 60
  local rc=$? elapsed=$((SECONDS - start))
  echo "[$how] guest ended with status $rc after ${elapsed} s: $(tail -n 1 "$out")"
  ((rc == 3)) || fail "expected CUDA_ERROR_DEVICE_UNAVAILABLE (status 3), got $rc: $(tail -n 3 "$out")"
  grep -q "CUDA_ERROR_DEVICE_UNAVAILABLE" "$out" || fail "no DEVICE_UNAVAILABLE in output"
  ((elapsed < BOUND_S)) || fail "the failure took ${elapsed} s (bound ${BOUND_S} s)"
  CUT_CALL="$(grep -o 'FAILED [a-zA-Z_0-9]*' "$out" | head -1)"
}

# guest_after_cut ADDRESS: a new guest works once the link is back. Neighbour entries that
# failed during the cut can make the first connections fail fast ("No route to host") for a
# moment, so it is flushed and the guest tried for a few seconds.
guest_after_cut() {
  ip -n "$GUEST_NS" neigh flush all 2>/dev/null
  for _ in $(seq 10); do
    guest "$GUEST_NS" "$1" "$E2E/saxpy_drv" >"$WORK/after-cut.out" 2>&1 && return 0
    grep -q "No route to host\|Network is unreachable" "$WORK/after-cut.out" || break
    sleep 0.5
  done
  fail "new guest after the link came back: $(cat "$WORK/after-cut.out")"
}

# The host at unix socket $1 has no guest session left and no device memory in use, within the
# bound: a lost guest's session ends and its allocations are freed.
expect_host_freed() {
  local socket="$1" start=$SECONDS status
  for _ in $(seq $((BOUND_S * 5))); do
    status="$("$PVGPU" smi --json --host "unix:$socket" 2>&1)" || fail "pvgpu smi: $status"
    if python3 -c 'import json, sys
d = json.loads(sys.argv[1])
sys.exit(0 if not d["sessions"] and all(a["memory_used"] == 0 for a in d["adapters"]) else 1)' \
      "$status"; then
      echo "host freed the session and its memory $((SECONDS - start)) s after the guest failed"
      return 0
    fi
    sleep 0.2
  done
  fail "the host still holds the lost guest's session or memory: $status"
}

# finish_within NAME NETNS(or "") HOST_LIST COMMAND...: runs COMMAND as a guest (stdout in
# $WORK/NAME.out, stderr in NAME.err) and fails when it fails or outlives DEADLINE_S.
finish_within() {
  local name="$1" ns="$2" hosts="$3" start=$SECONDS rc run=()
  shift 3
  [[ -n "$ns" ]] && run=(ip netns exec "$ns")
  timeout -k 5 "$DEADLINE_S" "${run[@]}" env PVGPU_HOST="$hosts" PVGPU_TLS_CA="$WORK/ca.pem" \
    PVGPU_TOKEN_FILE="$WORK/token" LD_LIBRARY_PATH="$LIBDIR" "$@" >"$WORK/$name.out" \
    2>"$WORK/$name.err"
  rc=$?
  local said
  said="$(tail -n 5 "$WORK/$name.out" "$WORK/$name.err")"
  ((rc == 124 || rc == 137)) && fail "$name did not finish within ${DEADLINE_S} s (a hang): $said"
  ((rc == 0)) || fail "$name exited with $rc: $said"
  echo "$name: done in $((SECONDS - start)) s"
}

# Both loopback schemes of one daemon, for the cases that run the same work over each.
start_loopback_pair() {
  start_daemon tls "" "tls://127.0.0.1:0"
  start_daemon plain "" "tcp://127.0.0.1:0"
  SCHEMES=("$(bound_address plain)" "$(bound_address tls)")
  [[ -n "${SCHEMES[0]}" && -n "${SCHEMES[1]}" ]] || fail "no bound addresses in the logs"
}

# run_bench NETNS ADDRESS NAME ARGS...: `pvgpu bench NAME --json` as a guest against ADDRESS,
# within the deadline; the path's limits must have been measured in the same run and the
# targets judged.
run_bench() {
  local ns="$1" address="$2" bench="$3"
  shift 3
  local name="bench-$bench-${address%%:*}${ns:+-netns}"
  finish_within "$name" "$ns" "$address" "$PVGPU" bench "$bench" --json --host "$address" "$@"
  python3 - "$WORK/$name.out" "$bench" <<'PY' || fail "$name: bad JSON: $(head -c 600 "$WORK/$name.out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["benchmark"] == sys.argv[2]
path = d["path"]
if sys.argv[2] == "bandwidth":
    assert path["raw_send_gbps"] > 0 and path["raw_receive_gbps"] > 0
    assert path["htod_limit_gbps"] > 0 and path["dtoh_limit_gbps"] > 0
    assert len(path["fractions"]) == len(d["sizes"])
else:
    assert path["raw_round_trip_us"] > 0
    assert d["ratios"]["copy_dtoh_small_vs_raw_round_trip"] > 0
if path["address"].startswith("tls://"):
    assert path["cipher"].startswith("TLS_"), path
    if sys.argv[2] == "bandwidth":
        assert path["cipher_one_core_gbps"] > 0
assert any("path" in t["name"] or "round trip" in t["name"] for t in d["targets"])
PY
}

# shape_link RATE DELAY_MS: both ends of the veth pair send at most RATE (tc tbf) after a delay
# of DELAY_MS each way: tc netem where the kernel has it (sch_netem), else tests/remote's
# delay_relay in the guest's namespace, between the guest and the link (each direction's bytes
# held back DELAY_MS, the rate still the link's). Sets LINK_ADDRESS, the tls:// address the
# guest uses to reach the host over the shaped link.
shape_link() {
  local rate="$1" delay="$2" end ns dev netem=1
  command -v tc >/dev/null || skip "tc (iproute2) is not installed"
  for end in "$HOST_NS $VETH_H" "$GUEST_NS $VETH_G"; do
    read -r ns dev <<<"$end"
    if ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: netem delay "${delay}ms" \
      limit 100000 2>"$WORK/tc.err"; then
      ip netns exec "$ns" tc qdisc add dev "$dev" parent 1: handle 2: tbf rate "$rate" \
        burst 1mb latency 100ms 2>"$WORK/tc.err" || skip "tc tbf failed: $(cat "$WORK/tc.err")"
    else
      netem=0
      ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$rate" burst 1mb \
        latency 100ms 2>"$WORK/tc.err" || skip "tc tbf failed: $(cat "$WORK/tc.err")"
    fi
  done
  LINK_ADDRESS="tls://$HOST_IP:7070"
  if ((netem)); then
    echo "link shaped: $rate each way, ${delay} ms delay each way (netem + tbf)"
  elif [[ "$delay" != 0 ]]; then
    ip netns exec "$GUEST_NS" "$REMOTE/delay_relay" 127.0.0.1:0 "$HOST_IP:7070" \
      "$((delay * 1000))" >"$WORK/relay.out" 2>"$WORK/relay.log" &
    DAEMONS+=($!)
    local port=""
    for _ in $(seq 100); do
      port="$(grep -oE 'listening on 127.0.0.1:[0-9]+' "$WORK/relay.out" 2>/dev/null | sed 's/.*://')"
      [[ -n "$port" ]] && break
      sleep 0.1
    done
    [[ -n "$port" ]] || fail "delay_relay did not start: $(cat "$WORK/relay.log")"
    LINK_ADDRESS="tls://127.0.0.1:$port"
    echo "link shaped: $rate each way (tbf), ${delay} ms delay each way (this kernel has no" \
      "netem: delay_relay in the guest's namespace holds each direction's bytes back)"
  else
    echo "link shaped: $rate each way (tbf), no delay"
  fi
}

make_pki
case "$CASE" in
  loopback)
    start_daemon host "" "tls://127.0.0.1:0"
    address="$(bound_address host)"
    [[ -n "$address" ]] || fail "no bound address in the log"
    guest "" "$address" "$E2E/saxpy_drv" || fail "saxpy_drv over $address"
    # A module image larger than a message goes in chunks over TLS and TCP alike.
    guest "" "$address" "$E2E/big_module_drv" || fail "big_module_drv over $address"
    # Managed memory needs shared pages: the device says it has none, the call is refused.
    out="$(guest "" "$address" "$E2E/managed_drv" 2>&1)" || fail "managed_drv over $address: $out"
    grep -q "refused as expected" <<<"$out" || fail "managed memory over $address: $out"
    check_refusals "" "$address" host
    # Plain tcp:// serves on loopback, and only there.
    start_daemon plain "" "tcp://127.0.0.1:0"
    address="$(bound_address plain)"
    guest "" "$address" "$E2E/kernels_drv" || fail "kernels_drv over $address"
    guest "" "$address" "$E2E/big_module_drv" || fail "big_module_drv over $address"
    out="$("$PVGPUD" --listen tcp://0.0.0.0:0 2>&1)" && fail "tcp:// on 0.0.0.0 was accepted"
    grep -q "loopback" <<<"$out" || fail "unclear refusal: $out"
    echo "pvgpud refused: $out"
    ;;
  netns)
    setup_netns
    start_daemon host "$HOST_NS" "tls://$HOST_IP:7070"
    guest "$GUEST_NS" "tls://$HOST_IP:7070" "$E2E/saxpy_drv" || fail "saxpy_drv across namespaces"
    guest "$GUEST_NS" "tls://$HOST_IP:7070" "$E2E/kernels_drv" || fail "kernels_drv across namespaces"
    check_refusals "$GUEST_NS" "tls://$HOST_IP:7070" host
    out="$(ip netns exec "$HOST_NS" "$PVGPUD" --listen "tcp://$HOST_IP:7071" 2>&1)" &&
      fail "tcp:// on $HOST_IP was accepted"
    grep -q "loopback" <<<"$out" || fail "unclear refusal: $out"
    ;;
  cut)
    setup_netns
    start_daemon host "$HOST_NS" "tls://$HOST_IP:7070"
    cut_and_check "ip -n $HOST_NS link set $VETH_H down" "tls://$HOST_IP:7070"
    ip -n "$HOST_NS" link set "$VETH_H" up || fail "ip link set up"
    guest_after_cut "tls://$HOST_IP:7070"
    cut_and_check "kill -KILL ${DAEMONS[0]}" "tls://$HOST_IP:7070"
    start_daemon host2 "$HOST_NS" "tls://$HOST_IP:7070"
    guest "$GUEST_NS" "tls://$HOST_IP:7070" "$E2E/saxpy_drv" || fail "new guest after the host came back"
    ;;
  cut_copy)
    setup_netns
    start_daemon host "$HOST_NS" "tls://$HOST_IP:7070" --listen "unix:$WORK/host.sock"
    for how in "ip -n $HOST_NS link set $VETH_H down" "ip -n $GUEST_NS link del $VETH_G"; do
      cut_and_check "$how" "tls://$HOST_IP:7070" 256
      echo "the call that failed: ${CUT_CALL#FAILED } (copies take most of each round)"
      expect_host_freed "$WORK/host.sock"
      if ip -n "$HOST_NS" link show "$VETH_H" >/dev/null 2>&1; then
        ip -n "$HOST_NS" link set "$VETH_H" up || fail "ip link set up"
      else
        make_link
      fi
      guest_after_cut "tls://$HOST_IP:7070"
    done
    ;;
  two_hosts)
    setup_netns
    start_daemon a "$HOST_NS" "tls://$HOST_IP:7070"
    start_daemon b "$HOST_NS" "tls://$HOST_IP:7071"
    guest "$GUEST_NS" "tls://$HOST_IP:7070,tls://$HOST_IP:7071" "$REMOTE/two_devices" \
      "$E2E/saxpy.ptx" 2 || fail "two hosts as two devices"
    grep -q "session .* started" "$WORK/a.log" || fail "host a served no session"
    grep -q "session .* started" "$WORK/b.log" || fail "host b served no session"
    ;;
  stress)
    start_loopback_pair
    for address in "${SCHEMES[@]}"; do
      finish_within "stress-${address%%:*}" "" "$address" "$REMOTE/stress" "$E2E/saxpy.ptx" 4 300
      cat "$WORK/stress-${address%%:*}.out"
    done
    ;;
  bench)
    help="$("$PVGPU" bench --help 2>&1)" || fail "pvgpu bench --help failed: $help"
    grep -qi "issue" <<<"$help" && fail "pvgpu bench --help speaks of issues: $help"
    start_loopback_pair
    for address in "${SCHEMES[@]}"; do
      for bench in bandwidth latency; do
        run_bench "" "$address" "$bench" --quick
      done
    done
    ;;
  shaped)
    setup_netns
    start_daemon host "$HOST_NS" "tls://$HOST_IP:7070"
    shape_link 2gbit 1
    finish_within stress-shaped "$GUEST_NS" "$LINK_ADDRESS" "$REMOTE/stress" \
      "$E2E/saxpy.ptx" 2 100
    cat "$WORK/stress-shaped.out"
    for bench in bandwidth latency; do run_bench "$GUEST_NS" "$LINK_ADDRESS" "$bench" --quick; done
    ;;
  shaped_bench)
    # Not a CTest test: the full benchmarks over the shaped link, for their figures
    # (docs/remote.md). RATE and DELAY_MS may be set in the environment.
    setup_netns
    start_daemon host "$HOST_NS" "tls://$HOST_IP:7070"
    shape_link "${RATE:-2gbit}" "${DELAY_MS:-1}"
    for bench in bandwidth latency; do
      DEADLINE_S=900 finish_within "shaped-$bench" "$GUEST_NS" "$LINK_ADDRESS" "$PVGPU" \
        bench "$bench" --host "$LINK_ADDRESS"
      cat "$WORK/shaped-$bench.out"
    done
    ;;
  figures)
    # Not a CTest test: the figures of docs/remote.md, every scheme in the same run.
    start_daemon all "" "unix:$WORK/host.sock" --listen "tcp://127.0.0.1:0" \
      --listen "tls://127.0.0.1:0"
    tcp="$(grep -oE 'listening on tcp://[^ ]*' "$WORK/all.log" | head -1 | sed 's/listening on //')"
    tls="$(grep -oE 'listening on tls://[^ ]*' "$WORK/all.log" | head -1 | sed 's/listening on //')"
    [[ -n "$tcp" && -n "$tls" ]] || fail "no bound addresses in the log"
    schemes=("unix:$WORK/host.sock" "$tcp" "$tls")
    out="${OUT:-$WORK/figures}"
    mkdir -p "$out"
    for ((round = 0; round < ${ROUNDS:-1}; ++round)); do
      for ((i = 0; i < 3; ++i)); do
        address="${schemes[(i + round) % 3]}"
        for bench in bandwidth latency; do
          name="$bench-${address%%:*}-$round"
          DEADLINE_S=900 finish_within "$name" "" "$address" "$PVGPU" bench "$bench" --json \
            --host "$address"
          cp "$WORK/$name.out" "$out/$name.json"
        done
      done
    done
    python3 - "$out" <<'PY' || fail "figures: bad JSON"
import glob, json, os, sys
def rate(d, key):
    return d["rows"][-1][key]
print(f"{'run':<10} {'HtoD GB/s':>9} {'(limit)':>8} {'DtoH GB/s':>9} {'(limit)':>8} "
      f"{'4B DtoH us':>10} {'raw RT us':>9} {'ratio':>6} {'launches ratio':>14}")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "bandwidth-*.json"))):
    scheme, rnd = os.path.basename(f)[len("bandwidth-"):-len(".json")].rsplit("-", 1)
    b = json.load(open(f))
    l = json.load(open(f.replace("bandwidth-", "latency-")))
    p, lp = b.get("path", {}), l.get("path", {})
    lim = lambda k: f"{p[k]:8.2f}" if k in p else f"{'-':>8}"
    rt = lp.get("raw_round_trip_us")
    ratios = l.get("ratios", {})
    print(f"{scheme + '/' + rnd:<10} {rate(b, 'htod_pageable'):9.2f} {lim('htod_limit_gbps')} "
          f"{rate(b, 'dtoh_pageable'):9.2f} {lim('dtoh_limit_gbps')} "
          f"{l['copy_dtoh_small_us']['channel']:10.1f} "
          f"{(f'{rt:9.1f}' if rt else f'{chr(45):>9}')} "
          f"{ratios.get('copy_dtoh_small_vs_raw_round_trip', float('nan')):6.2f} "
          f"{ratios.get('launch_batch_vs_round_trip_plus_inprocess', float('nan')):14.2f}")
    if p.get("cipher"):
        print(f"{'':<10} cipher {p['cipher']}: {p['cipher_one_core_gbps']:.2f} GB/s on one core; "
              f"raw TCP {p['raw_send_gbps']:.2f} / {p['raw_receive_gbps']:.2f} GB/s")
    elif p.get("raw_send_gbps"):
        print(f"{'':<10} raw TCP {p['raw_send_gbps']:.2f} / {p['raw_receive_gbps']:.2f} GB/s")
PY
    ;;
  *)
    fail "unknown case $CASE"
    ;;
esac
echo "PASS: $CASE"
