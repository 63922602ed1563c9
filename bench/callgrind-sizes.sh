#!/bin/bash
# callgrind-sizes.sh: what a forwarded frame costs by its size, per driver: instructions
# per frame (valgrind --tool=callgrind, which repeats exactly on a noisy machine) and
# frames/s per core (the thread's CPU time, natively).
#
#   bench/callgrind-sizes.sh [drivers=ixgbe,igb,igbvf,virtio,vhost] [frames=20000,80000] [native_runs=3]
#
# The PCI drivers (ixgbe, igb, igbvf, virtio) run nictest's BenchmarkForwardSizes/size=N
# (the Forwarder of bench/callgrind.sh: receive and send back at batch 32, the NIC side a
# few stores): frames of 64 and 1514 bytes on a port of the default MTU, 9014 on one of
# MTU 9000. Collection is on only inside (*Forwarder).Step, as in bench/callgrind.sh.
# vhost-user runs nic/vhost's BenchmarkBurst32/64B, /1500B and BenchmarkBurst32Jumbo (the
# in-process test front end; 32 frames out of its TX ring and 32 into its RX ring per op,
# so an op forwards 32 frames), counted as the inclusive instructions of (*Port).RxBurst
# (section 9 of BENCHMARKS.md: a toggle there also collects the test front end's own
# work). TxBurst is left out: its inclusive count is not repeatable (two identical runs
# of 20 000 64-byte frames counted 11.2 M and 23.6 M), as it takes in whatever the Go
# scheduler runs after the system call that kicks the front end. Each count is taken at both frame counts; "slope" is the per-frame
# cost with the b.N=1 warm-up taken out, the number to compare.
# The native runs (GOMAXPROCS=1, native_runs of 2 000 000 frames each) give cpu-Mpps, the
# frames a core forwards per second of the poll thread's CPU time (vhost-user: half its
# benchmark's frames/s, which counts both directions, from wall time).
# VHOST_SIZES (default "64 1500 9014") restricts the vhost-user sizes.
# REPO=DIR measures the tree at DIR instead of this one (for a tree without
# BenchmarkForwardSizes use bench/callgrind.sh DRIVER 32 there: its 60-byte frames).
set -euo pipefail
repo=${REPO:-$(cd "$(dirname "$0")/.." && pwd)}
command -v valgrind >/dev/null || { echo "callgrind-sizes.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
IFS=, read -r -a drivers <<<"${1:-ixgbe,igb,igbvf,virtio,vhost}"
IFS=, read -r -a counts <<<"${2:-20000,80000}"
runs=${3:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# cg BINARY BENCH N TOGGLE...: run BENCH N times under callgrind (collection inside the
# toggles, or everything with none); the log is $tmp/log, the profile $tmp/cg.out.
cg() {
	local bin=$1 bench=$2 n=$3
	shift 3
	local args=()
	for f in "$@"; do args+=("--toggle-collect=$f"); done
	GOGC=off GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
		"${args[@]}" "$bin" -test.run '^$' -test.bench "$bench" -test.benchtime "${n}x" \
		>"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
}
collected() { sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$tmp/log"; }
# inclusive FUNC...: the sum of the inclusive counts of FUNCs in $tmp/cg.out.
inclusive() {
	callgrind_annotate --inclusive=yes --threshold=100 "$tmp/cg.out" 2>/dev/null |
		awk -v names="$*" 'BEGIN {n = split(names, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1}
			{fn = $3; sub(/^[^:]*:/, "", fn)} (fn in want) && !seen[fn]++ {gsub(",", "", $1); s += $1} END {print s + 0}'
}
per() { awk -v a="$1" -v n="$2" 'BEGIN {printf "%.1f", a / n}'; }
slope() { awk -v a="$1" -v b="$2" -v n="$3" -v m="$4" 'BEGIN {printf "%.1f", (a - b) / (n - m)}'; }
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
for drv in "${drivers[@]}"; do
	if [ "$drv" = vhost ]; then
		(cd "$repo" && CGO_ENABLED=0 go test -c -o "$tmp/drv.test" ./nic/vhost)
		vh=github.com/uiod/uiod/nic/vhost
		for sz in ${VHOST_SIZES:-64 1500 9014}; do
			case $sz in
			64) bench='^BenchmarkBurst32$/^64B$' ;;
			1500) bench='^BenchmarkBurst32$/^1500B$' ;;
			9014) bench='^BenchmarkBurst32Jumbo$' ;;
			esac
			line="vhost size=$sz RxBurst"
			prev_n=0 prev_ir=0
			for n in "${counts[@]}"; do
				cg "$tmp/drv.test" "$bench" $((n / 32))
				ir=$(inclusive "$vh.(*Port).RxBurst")
				line="$line frames=$n per_frame=$(per "$ir" "$n")"
				[ "$prev_n" -gt 0 ] && line="$line slope=$(slope "$ir" "$prev_ir" "$n" "$prev_n")"
				prev_n=$n prev_ir=$ir
			done
			fps=$(for _ in $(seq "$runs"); do
				GOMAXPROCS=1 "$tmp/drv.test" -test.run '^$' -test.bench "$bench" -test.benchtime 62500x |
					awk '{for (i = 1; i < NF; i++) if ($(i + 1) == "frames/s") print $i / 2}'
			done | median)
			echo "$line forwarded_frames_per_s=$fps"
		done
		continue
	fi
	(cd "$repo" && CGO_ENABLED=0 go test -c -o "$tmp/drv.test" "./nic/$drv")
	for sz in 64 1514 9014; do
		bench="^BenchmarkForwardSizes\$/^size=$sz\$"
		line="$drv size=$sz"
		prev_n=0 prev_ir=0
		for n in "${counts[@]}"; do
			cg "$tmp/drv.test" "$bench" "$n" 'github.com/uiod/uiod/nic/internal/nictest.(*Forwarder).Step'
			ir=$(collected)
			[ -n "$ir" ] || { cat "$tmp/log" >&2; echo "callgrind-sizes.sh: no count" >&2; exit 1; }
			line="$line frames=$n per_frame=$(per "$ir" "$n")"
			[ "$prev_n" -gt 0 ] && line="$line slope=$(slope "$ir" "$prev_ir" "$n" "$prev_n")"
			prev_n=$n prev_ir=$ir
		done
		mpps=$(for _ in $(seq "$runs"); do
			GOMAXPROCS=1 "$tmp/drv.test" -test.run '^$' -test.bench "$bench" -test.benchtime 2000000x |
				awk '{for (i = 1; i < NF; i++) if ($(i + 1) == "cpu-Mpps") print $i}'
		done | median)
		echo "$line cpu_Mpps=$mpps"
	done
done
