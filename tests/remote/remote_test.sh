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
BOUND_S=15  # design bound 5 s of silence; asserted with margin

ID="$$$RANDOM"
ID="${ID: -8}"
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

for tool in "$PVGPUD" "$E2E/saxpy_drv" "$E2E/big_module_drv" "$REMOTE/long_run" "$REMOTE/two_devices"; do
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
  ip link add "$VETH_H" netns "$HOST_NS" type veth peer name "$VETH_G" netns "$GUEST_NS" ||
    fail "ip link add veth"
  ip -n "$HOST_NS" addr add "$HOST_IP/30" dev "$VETH_H" || fail "ip addr (host)"
  ip -n "$GUEST_NS" addr add "$GUEST_IP/30" dev "$VETH_G" || fail "ip addr (guest)"
  for ns in "$HOST_NS" "$GUEST_NS"; do ip -n "$ns" link set lo up; done
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

# cut_and_check HOW: starts long_run, waits until it is mid-run, loses the host with HOW,
# and checks the error and the bound.
cut_and_check() {
  local how="$1" address="$2" out="$WORK/long_run.$RANDOM.out"
  guest "$GUEST_NS" "$address" "$REMOTE/long_run" "$E2E/saxpy.ptx" 600 >"$out" 2>&1 &
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
    guest "$GUEST_NS" "tls://$HOST_IP:7070" "$E2E/saxpy_drv" || fail "new guest after the link came back"
    cut_and_check "kill -KILL ${DAEMONS[0]}" "tls://$HOST_IP:7070"
    start_daemon host2 "$HOST_NS" "tls://$HOST_IP:7070"
    guest "$GUEST_NS" "tls://$HOST_IP:7070" "$E2E/saxpy_drv" || fail "new guest after the host came back"
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
  *)
    fail "unknown case $CASE"
    ;;
esac
echo "PASS: $CASE"
