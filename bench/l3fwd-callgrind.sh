#!/bin/bash
# l3fwd-callgrind.sh: instructions per frame of the dataplane's Poll with l3fwd against
# l2fwd, counted by valgrind --tool=callgrind (which repeats exactly on a noisy machine).
#
#   bench/l3fwd-callgrind.sh [batch=32] [frames=200000,800000]
#
# It runs l3fwd's BenchmarkPoll/app=APP/batch=B (a busy poll thread whose one queue gets a
# full batch of IPv4 frames on every poll, over ports that cost nothing) under callgrind
# with collection on only inside dataplane's (*loop).Poll and off again inside the ports'
# RxBurst and TxBurst (which restore the frames l3fwd rewrote), divides by the frames the
# benchmark reports, and prints both apps' counts per frame, the slope between the frame
# counts (start-up taken out) and l3fwd's difference over l2fwd.
# GOGC=off and GODEBUG=asyncpreemptoff=1 as in callgrind.sh; GOMAXPROCS=2 because the
# poll thread and the benchmark's goroutine both run.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
command -v valgrind >/dev/null || { echo "l3fwd-callgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
batch=${1:-32}
IFS=, read -r -a counts <<<"${2:-200000,800000}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$repo" && CGO_ENABLED=0 go test -c -o "$tmp/l3fwd.test" ./l3fwd)
dp=github.com/uiod/uiod/dataplane
port=github.com/uiod/uiod/l3fwd.\(\*benchPort\)
declare -A slope
for app in l2fwd l3fwd; do
	prev_f=0 prev_ir=0
	for n in "${counts[@]}"; do
		GOGC=off GODEBUG=asyncpreemptoff=1 GOMAXPROCS=2 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
			"--toggle-collect=$dp.(*loop).Poll" "--toggle-collect=$port.RxBurst" "--toggle-collect=$port.TxBurst" \
			"$tmp/l3fwd.test" -test.run '^$' -test.bench "BenchmarkPoll/app=$app/batch=$batch\$" -test.benchtime "${n}x" \
			>"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
		ir=$(sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$tmp/log")
		f=$(sed -n 's/.* \([0-9]*\) frames.*/\1/p' "$tmp/log" | head -1)
		[ -n "$ir" ] && [ -n "$f" ] || { cat "$tmp/log" >&2; echo "l3fwd-callgrind.sh: no count" >&2; exit 1; }
		line="$app batch=$batch frames=$f instructions=$ir per_frame=$(awk -v a="$ir" -v n="$f" 'BEGIN {printf "%.1f", a / n}')"
		if [ "$prev_f" -gt 0 ]; then
			s=$(awk -v a="$ir" -v b="$prev_ir" -v n="$f" -v m="$prev_f" 'BEGIN {printf "%.1f", (a - b) / (n - m)}')
			slope[$app]=$s
			line="$line slope=$s"
		fi
		echo "$line"
		prev_f=$f prev_ir=$ir
	done
done
if [ -n "${slope[l2fwd]:-}" ] && [ -n "${slope[l3fwd]:-}" ]; then
	echo "l3fwd over l2fwd: $(awk -v a="${slope[l3fwd]}" -v b="${slope[l2fwd]}" 'BEGIN {printf "%+.1f", a - b}') instructions per frame (slopes)"
fi
