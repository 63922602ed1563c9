#!/bin/bash
# kni-tap.sh — the KNI seed table on the TAP + ping path: for each idle policy, two network
# namespaces ping each other through `uiod run` (two model 82599 ports on TAP interfaces,
# l2fwd), and the table shows the poll thread's CPU share and the ping RTT.
# Usage (as root): bench/kni-tap.sh [COUNT] [INTERVAL]   (defaults: 500 pings, 0.01 s apart)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
COUNT=${1:-500}
INTERVAL=${2:-0.01}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
(cd "$REPO" && go build -o "$TMP/uiod" ./cmd/uiod)
printf '%-22s %8s %10s %10s %10s %8s\n' policy cpu% rtt-min rtt-avg rtt-max loss
run() { # label, poll section
	out=$(STATUS=1 COUNT=$COUNT PING_INTERVAL=$INTERVAL POLL="$2" bash "$REPO/scripts/tap-demo.sh" "$TMP/uiod" 2>&1) || { echo "$1: failed"; echo "$out" | tail -5; return; }
	cpu=$(echo "$out" | sed -n 's/.*cpu_percent=\([0-9.]*\).*/\1/p')
	rtt=$(echo "$out" | sed -n 's|.*min/avg/max = \([0-9.]*\)/\([0-9.]*\)/\([0-9.]*\) ms|\1 \2 \3|p')
	loss=$(echo "$out" | sed -n 's/.* \([0-9.]*%\) packet loss.*/\1/p')
	set -- "$1" $rtt
	printf '%-22s %8.1f %8s ms %7s ms %7s ms %8s\n' "$1" "${cpu:-0}" "$2" "$3" "$4" "$loss"
}
run busy "{mode: busy}"
run adaptive "{mode: adaptive, idle_threshold: 300us}"
run auto "{mode: adaptive, idle_threshold: auto}"
for r in 5us-10us 20us-50us 50us-100us 100us-200us 1000us-1100us; do
	run "sleep:$r" "{mode: sleep, sleep_min: ${r%-*}, sleep_max: ${r#*-}}"
done
