#!/bin/bash
# kernel-idle.sh — what an idle kernel exception path costs: `uiod run` on two model ports
# (adaptive, nothing on the far ends of their wires) idles for SECS seconds without and
# then with `kernel: {tap: ...}` on port a, in a network namespace with IPv6 off (so the
# kernel sends nothing on the new interface), and it prints the CPU time of all the
# daemon's threads (schedstat) in each run and the ratio.
# Usage (as root): bench/kernel-idle.sh [SECS]   (default 30; ORDER="with without" swaps)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
SECS=${1:-30}
NS=uiod-kidle-$$
TMP=$(mktemp -d)
PID=
cleanup() {
	if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
	ip netns del "$NS" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
(cd "$REPO" && go build -o "$TMP/uiod" ./cmd/uiod)
ip netns add "$NS"
ip netns exec "$NS" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
cpu() { cat /proc/"$1"/task/*/schedstat | awk '{s += $1} END {print s}'; }
declare -A used
for mode in ${ORDER:-without with}; do
	k=""; [ "$mode" = with ] && k=", kernel: {tap: uiodki0}"
	mkdir -m 700 "$TMP/state-$mode"
	cat >"$TMP/$mode.yaml" <<YAML
metrics: {listen: ""}
state_dir: $TMP/state-$mode
ports:
  - {name: a, driver: sim, wire: "pair:ki0"$k}
  - {name: b, driver: sim, wire: "pair:ki1"}
poll: {mode: adaptive}
YAML
	ip netns exec "$NS" "$TMP/uiod" run --config "$TMP/$mode.yaml" 2>"$TMP/$mode.log" &
	PID=$!
	sleep 2
	t0=$(cpu "$PID")
	sleep "$SECS"
	t1=$(cpu "$PID")
	kill -TERM "$PID"; wait "$PID" || true; PID=
	used[$mode]=$(( (t1 - t0) / 1000 ))
	printf '%-8s TAP: %8d µs CPU in %d s\n' "$mode" "${used[$mode]}" "$SECS"
done
awk -v w="${used[with]}" -v wo="${used[without]}" 'BEGIN { printf "ratio with/without: %.2f\n", (wo > 0 ? w / wo : 0) }'
