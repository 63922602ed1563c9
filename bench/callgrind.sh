#!/bin/bash
# callgrind.sh: instructions per forwarded frame of a driver's receive-and-send-back path
# (nictest's Forwarder: the NIC side is a few stores, no model code), counted by
# valgrind --tool=callgrind, which repeats exactly on a noisy machine.
#
#   bench/callgrind.sh [driver=ixgbe] [batch=32] [frames=20000,80000]
#   bench/callgrind.sh loop [turns=20000,80000]
#
# It runs the driver's BenchmarkForward/batch=B under callgrind with collection on only
# inside (*Forwarder).Step, for each frame count, and prints the count per frame and the
# slope between the counts (the per-frame cost with the b.N=1 warm-up taken out).
# "loop" counts instead one turn of the dataplane's busy polling loop (dataplane's
# BenchmarkLoopStep: two queues over ports that cost nothing, collection off inside their
# RxBurst and TxBurst), empty and with a batch of 32 frames on one queue: the loop's own
# work, to add to a driver's.
# GOGC=off: with the collector on, a cycle that overlaps the measured loop turns on the
# write barriers and lets Step do marking work (gcWriteBarrier, wbBufFlush), a fixed
# amount of work that lands inside or outside the toggle by timing, so the counts stop
# scaling with the frames. GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1: callgrind does not
# survive the runtime's preemption signal.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
# count BINARY BENCH N TOGGLE...: the instructions collected inside the toggles.
count() {
	local bin=$1 bench=$2 n=$3
	shift 3
	local args=()
	for f in "$@"; do args+=("--toggle-collect=$f"); done
	GOGC=off GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
		"${args[@]}" "$bin" -test.run '^$' -test.bench "$bench" -test.benchtime "${n}x" \
		>"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
	local ir
	ir=$(sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$tmp/log")
	[ -n "$ir" ] || { cat "$tmp/log" >&2; echo "callgrind.sh: no count" >&2; exit 1; }
	echo "$ir"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "${1:-}" = loop ]; then
	IFS=, read -r -a counts <<<"${2:-20000,80000}"
	(cd "$repo" && CGO_ENABLED=0 go test -c -o "$tmp/dp.test" ./dataplane)
	dp=github.com/uiod/uiod/dataplane
	for bench in empty frames/batch=32; do
		prev_n=0 prev_ir=0
		for n in "${counts[@]}"; do
			ir=$(count "$tmp/dp.test" "BenchmarkLoopStep/$bench\$" "$n" "$dp.(*loop).step" \
				"$dp.(*countPort).RxBurst" "$dp.(*countPort).TxBurst")
			line="loop $bench turns=$n instructions=$ir per_turn=$(awk -v a="$ir" -v n="$n" 'BEGIN {printf "%.1f", a / n}')"
			if [ "$prev_n" -gt 0 ]; then
				line="$line slope=$(awk -v a="$ir" -v b="$prev_ir" -v n="$n" -v m="$prev_n" 'BEGIN {printf "%.1f", (a - b) / (n - m)}')"
			fi
			echo "$line"
			prev_n=$n prev_ir=$ir
		done
	done
	exit 0
fi
drv=${1:-ixgbe}
batch=${2:-32}
IFS=, read -r -a counts <<<"${3:-20000,80000}"
(cd "$repo" && CGO_ENABLED=0 go test -c -o "$tmp/drv.test" "./nic/$drv")
prev_n=0 prev_ir=0
for n in "${counts[@]}"; do
	ir=$(count "$tmp/drv.test" "BenchmarkForward/batch=$batch\$" "$n" \
		'github.com/uiod/uiod/nic/internal/nictest.(*Forwarder).Step')
	line="$drv batch=$batch frames=$n instructions=$ir per_frame=$(awk -v a="$ir" -v n="$n" 'BEGIN {printf "%.1f", a / n}')"
	if [ "$prev_n" -gt 0 ]; then
		line="$line slope=$(awk -v a="$ir" -v b="$prev_ir" -v n="$n" -v m="$prev_n" 'BEGIN {printf "%.1f", (a - b) / (n - m)}')"
	fi
	echo "$line"
	callgrind_annotate --inclusive=yes "$tmp/cg.out" 2>/dev/null |
		awk -v n="$n" '/(RxBurst|TxBurst|Burst|refill|Reclaim|StoreUint32) \[/ {fn = $3; sub(/^[^:]*:/, "", fn); sub(/^github.com\/uiod\/uiod\//, "", fn)
			if (!seen[fn]++) {gsub(",", "", $1); printf "  %-56s %7.1f per frame\n", fn, $1 / n}}' | head -8
	prev_n=$n prev_ir=$ir
done
