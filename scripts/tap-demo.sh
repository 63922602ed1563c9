#!/bin/bash
# tap-demo.sh shows two network namespaces pinging each other through uiod: each namespace
# holds a TAP interface that is the cable of one model 82599 port of a `uiod run`, and the
# dataplane forwards (l2fwd) between the two ports, sleeping on RX interrupts when idle.
#
#   ns uiod-demo-a                  uiod run (sim ports)                 ns uiod-demo-b
#   10.78.0.1 uiodtap0 ── tap:uiodtap0 ─ sim0 ⇄ l2fwd ⇄ sim1 ─ tap:uiodtap1 ── uiodtap1 10.78.0.2
#
# Usage (as root): scripts/tap-demo.sh [UIOD_BINARY]
#   Without UIOD_BINARY, uiod is built from this repository.
#   Env: COUNT (pings, default 5), PING_INTERVAL (seconds, default 1), POLL (the YAML poll
#   section's body on one line, default "{mode: adaptive, idle_threshold: 300us}"),
#   STATUS=1 prints the poll thread's CPU share from uiod's /status after the pings
#   (bench/kni-tap.sh uses these to measure each idle policy on the TAP + ping path).
# Everything it creates (namespaces, TAPs, temporary files, the daemon) is removed on exit.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
NS_A=uiod-demo-a
NS_B=uiod-demo-b
TAP_A=uiodtap0
TAP_B=uiodtap1
COUNT=${COUNT:-5}
PING_INTERVAL=${PING_INTERVAL:-1}
POLL=${POLL:-"{mode: adaptive, idle_threshold: 300us}"}
METRICS=127.0.0.1:${METRICS_PORT:-9479}

die() { echo "tap-demo: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces and TAP interfaces)"
[ -c /dev/net/tun ] || die "no /dev/net/tun"
command -v ip >/dev/null || die "needs the ip tool (iproute2)"
if command -v ping >/dev/null; then PING=(ping)
elif command -v busybox >/dev/null; then PING=(busybox ping)
else die "needs ping (iputils-ping or busybox)"; fi

TMP=$(mktemp -d)
PID=
cleanup() {
	if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
	ip netns del "$NS_A" 2>/dev/null || true
	ip netns del "$NS_B" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT

UIOD=${1:-}
if [ -z "$UIOD" ]; then
	echo "tap-demo: building uiod"
	(cd "$REPO" && go build -o "$TMP/uiod" ./cmd/uiod)
	UIOD=$TMP/uiod
fi


cat >"$TMP/uiod.yaml" <<YAML
log:
  level: info
  format: console
metrics:
  listen: "$METRICS"
state_dir: $TMP/state
ports:
  - name: sim0
    driver: sim
    wire: tap:$TAP_A
    nic: ixgbe
    promiscuous: true
  - name: sim1
    driver: sim
    wire: tap:$TAP_B
    nic: ixgbe
    promiscuous: true
forward:
  mode: l2fwd
  pairs:
    - [sim0, sim1]
poll: $POLL
YAML

echo "tap-demo: starting uiod run (log: $TMP/uiod.log)"
"$UIOD" run --config "$TMP/uiod.yaml" >"$TMP/uiod.log" 2>&1 &
PID=$!
for _ in $(seq 100); do
	if ip link show "$TAP_A" >/dev/null 2>&1 && ip link show "$TAP_B" >/dev/null 2>&1; then break; fi
	kill -0 "$PID" 2>/dev/null || { cat "$TMP/uiod.log" >&2; die "uiod run exited"; }
	sleep 0.1
done
ip link show "$TAP_A" >/dev/null 2>&1 || { cat "$TMP/uiod.log" >&2; die "uiod did not create $TAP_A"; }

# The TAPs keep working when they move: uiod's file descriptors stay attached.
i=1
for pair in "$NS_A:$TAP_A" "$NS_B:$TAP_B"; do
	ns=${pair%%:*} tap=${pair#*:}
	ip netns add "$ns"
	ip link set "$tap" netns "$ns"
	ip -n "$ns" addr add "10.78.0.$i/24" dev "$tap"
	ip -n "$ns" link set "$tap" up
	ip -n "$ns" link set lo up
	i=$((i + 1))
done

echo "tap-demo: $NS_A (10.78.0.1) → $NS_B (10.78.0.2) through uiod"
if ip netns exec "$NS_A" "${PING[@]}" -c "$COUNT" -i "$PING_INTERVAL" -W 2 10.78.0.2; then
	if [ "${STATUS:-0}" = 1 ]; then
		# The poll thread's CPU share over the whole run, from uiod's own accounting.
		wget -q -O - "http://$METRICS/status" 2>/dev/null | tr -d ' \n' |
			sed -n 's/.*"cpu_percent":\([0-9.e+-]*\).*"sleeps":\([0-9]*\).*"wakeups_interrupt":\([0-9]*\).*/tap-demo: poll-thread cpu_percent=\1 sleeps=\2 wakeups_interrupt=\3/p'; echo
	fi
	echo "tap-demo: ok"
else
	cat "$TMP/uiod.log" >&2
	die "ping did not get through"
fi
