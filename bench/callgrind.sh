#!/bin/bash
# callgrind.sh: instructions per forwarded frame of a driver's receive-and-send-back path
# (nictest's Forwarder: the NIC side is a few stores, no model code), counted by
# valgrind --tool=callgrind, which repeats exactly on a noisy machine.
#
#   bench/callgrind.sh [driver=ixgbe] [batch=32] [frames=20000,80000]
#   bench/callgrind.sh loop [turns=20000,80000]
#   bench/callgrind.sh queues [turns=20000,80000]
#   bench/callgrind.sh models [turns=20000,80000]
#   bench/callgrind.sh rate [turns=500,2000]
#
# It runs the driver's BenchmarkForward/batch=B under callgrind with collection on only
# inside (*Forwarder).Step, for each frame count, and prints the count per frame and the
# slope between the counts (the per-frame cost with the b.N=1 warm-up taken out); then,
# from the same profiles, the step split by bench/cgsplit.py into the driver's RxBurst and
# TxBurst (the ring's refill and Reclaim inside them), the fake NIC's write-backs and the
# step's own instructions, per frame and as slopes, with the check that the parts add up.
# "loop" counts instead one turn of the dataplane's busy polling loop (dataplane's
# BenchmarkLoopStep: two queues over ports that cost nothing, collection off inside their
# RxBurst and TxBurst), empty and with a batch of 32 frames on one queue: the loop's own
# work, to add to a driver's. "queues" counts an empty turn of a busy thread polling 1, 2,
# 4 and 8 such queues (BenchmarkLoopQueues): the loop's cost per queue polled. "models"
# counts the same empty turn over 1, 2, 4 and 8 RX queues of an 82599 model through the
# ixgbe driver (BenchmarkModelRate/queues=Q/empty), the driver's empty RxBurst included.
# "rate" counts BenchmarkModelRate's turns with frames (one batch on every queue, ring 512)
# per frame: the loop and the driver, collection off inside the model's register writes
# (sim.bar0.Write32: its doorbell handlers run the model's TX), for 1, 2, 4 and 8 queues at
# batch 32 and one queue at batch 8, 16 and 64.
# Both first run the benchmark natively for the run of untold empty polls the idle policy
# settles on (idle.Skip sizes it by time, and under valgrind time runs ~50x faster against
# the code, so the run would stay near 0) and pin that run under callgrind
# (UIOD_BENCH_SKIP_RUN; set SKIP_RUN=n to choose it instead).
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
	GOGC=off GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 UIOD_BENCH_SKIP_RUN=${skip_run:-0} valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
		"${args[@]}" "$bin" -test.run '^$' -test.bench "$bench" -test.benchtime "${n}x" \
		>"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
	local ir
	ir=$(sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$tmp/log")
	[ -n "$ir" ] || { cat "$tmp/log" >&2; echo "callgrind.sh: no count" >&2; exit 1; }
	echo "$ir"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# native_run BENCH: the mean run a native run of the benchmark reports, rounded.
native_run() {
	if [ -n "${SKIP_RUN:-}" ]; then
		echo "$SKIP_RUN"
		return
	fi
	"$tmp/dp.test" -test.run '^$' -test.bench "$1" -test.benchtime 2000000x |
		awk '/^Benchmark/ {for (i = 1; i < NF; i++) if ($(i+1) == "run") {printf "%d\n", $i + 0.5; exit}}'
}
# loop_counts BENCH...: the loop's instructions per turn of each benchmark.
loop_counts() {
	local dp=github.com/uiod/uiod/dataplane
	for bench in "$@"; do
		skip_run=$(native_run "$bench\$")
		[ -n "$skip_run" ] || { echo "callgrind.sh: no native run for $bench" >&2; exit 1; }
		prev_n=0 prev_ir=0
		for n in "${counts[@]}"; do
			ir=$(count "$tmp/dp.test" "$bench\$" "$n" "$dp.(*loop).step" "${toggles[@]}")
			line="loop ${bench#*/} turns=$n skip_run=$skip_run instructions=$ir per_turn=$(awk -v a="$ir" -v n="$n" 'BEGIN {printf "%.1f", a / n}')"
			if [ "$prev_n" -gt 0 ]; then
				line="$line slope=$(awk -v a="$ir" -v b="$prev_ir" -v n="$n" -v m="$prev_n" 'BEGIN {printf "%.1f", (a - b) / (n - m)}')"
				if [ "${frames_per_turn:-0}" -gt 0 ]; then
					line="$line per_frame=$(awk -v a="$ir" -v b="$prev_ir" -v n="$n" -v m="$prev_n" -v f="$frames_per_turn" 'BEGIN {printf "%.1f", (a - b) / (n - m) / f}')"
				fi
			fi
			echo "$line"
			prev_n=$n prev_ir=$ir
		done
	done
}
case "${1:-}" in
loop | queues | models | rate)
	def=20000,80000
	[ "$1" = rate ] && def=500,2000
	IFS=, read -r -a counts <<<"${2:-$def}"
	(cd "$repo" && CGO_ENABLED=0 go test -c -o "$tmp/dp.test" ./dataplane)
	# Collection off inside the free ports' bursts; the models' are the driver's and count.
	toggles=(github.com/uiod/uiod/dataplane.\(\*countPort\).RxBurst github.com/uiod/uiod/dataplane.\(\*countPort\).TxBurst)
	case "$1" in
	loop) loop_counts BenchmarkLoopStep/empty BenchmarkLoopStep/frames/batch=32 ;;
	queues) loop_counts BenchmarkLoopQueues/queues=1 BenchmarkLoopQueues/queues=2 BenchmarkLoopQueues/queues=4 BenchmarkLoopQueues/queues=8 ;;
	models)
		toggles=()
		loop_counts BenchmarkModelRate/queues=1/empty BenchmarkModelRate/queues=2/empty BenchmarkModelRate/queues=4/empty BenchmarkModelRate/queues=8/empty
		;;
	rate)
		toggles=('github.com/uiod/uiod/sim.*bar0*Write32')
		SKIP_RUN=0 # turns with frames: no untold run
		for qb in 1/32 2/32 4/32 8/32 1/8 1/16 1/64; do
			frames_per_turn=$((${qb%/*} * ${qb#*/}))
			loop_counts "BenchmarkModelRate/queues=${qb%/*}/ring=512/batch=${qb#*/}"
		done
		;;
	esac
	exit 0
	;;
esac
drv=${1:-ixgbe}
batch=${2:-32}
IFS=, read -r -a counts <<<"${3:-20000,80000}"
(cd "$repo" && CGO_ENABLED=0 go test -c -o "$tmp/drv.test" "./nic/$drv")
prev_n=0 prev_ir=0 profiles=()
for n in "${counts[@]}"; do
	ir=$(count "$tmp/drv.test" "BenchmarkForward/batch=$batch\$" "$n" \
		'github.com/uiod/uiod/nic/internal/nictest.(*Forwarder).Step')
	line="$drv batch=$batch frames=$n instructions=$ir per_frame=$(awk -v a="$ir" -v n="$n" 'BEGIN {printf "%.1f", a / n}')"
	if [ "$prev_n" -gt 0 ]; then
		line="$line slope=$(awk -v a="$ir" -v b="$prev_ir" -v n="$n" -v m="$prev_n" 'BEGIN {printf "%.1f", (a - b) / (n - m)}')"
	fi
	echo "$line"
	mv "$tmp/cg.out" "$tmp/cg.$n.out"
	profiles+=("$tmp/cg.$n.out:$n")
	prev_n=$n prev_ir=$ir
done
python3 "$repo/bench/cgsplit.py" 'nictest.(*Forwarder).Step' "${profiles[@]}"
