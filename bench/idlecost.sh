#!/bin/bash
# idlecost.sh: what an idle uiod daemon costs, thread by thread — context switches per
# second and CPU time, from /proc/PID/task/*/{status,schedstat}, over a window with no
# traffic at all.
#
#   bench/idlecost.sh [uiod binary=./uiod] [seconds=5] [settle=3] [poll mode=adaptive]
#
# It runs `uiod run` on a copy of examples/sim.yaml (two ports of the device model,
# metrics on 127.0.0.1:0, a temporary state_dir), waits settle seconds for the start-up
# to finish, samples every thread, waits, samples again and prints one line per thread
# plus the total.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$repo/uiod}
secs=${2:-5}
settle=${3:-3}
mode=${4:-adaptive}
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
sed -e 's|listen: 127.0.0.1:9477|listen: 127.0.0.1:0|' -e "s|state_dir: /run/uiod|state_dir: $tmp/state|" \
	-e "s|^  mode: adaptive|  mode: $mode|" -e 's|level: info|level: warn|' \
	"$repo/examples/sim.yaml" >"$tmp/sim.yaml"
"$bin" run --config "$tmp/sim.yaml" >"$tmp/log" 2>&1 &
pid=$!
sleep "$settle"
kill -0 "$pid" 2>/dev/null || { cat "$tmp/log" >&2; echo "idlecost: uiod exited" >&2; exit 1; }

# sample prints "tid switches cpu_ns" for every thread of pid.
sample() {
	for t in /proc/"$pid"/task/*; do
		[ -r "$t/status" ] || continue
		awk -v tid="${t##*/}" '/^voluntary_ctxt_switches/ {v=$2} /^nonvoluntary_ctxt_switches/ {n=$2}
			END {printf "%s %d %d ", tid, v, n}' "$t/status" 2>/dev/null || continue
		awk '{print $1}' "$t/schedstat" 2>/dev/null || echo 0
	done
}
sample >"$tmp/a"
sleep "$secs"
sample >"$tmp/b"
join "$tmp/a" "$tmp/b" | awk -v s="$secs" '
	{ vol = ($5 - $2) / s; inv = ($6 - $3) / s; cpu = ($7 - $4) / 1e6
	  printf "thread %-8s %7.1f switches/s (%6.1f voluntary, %5.1f involuntary)  %7.2f ms CPU\n", $1, vol + inv, vol, inv, cpu
	  tv += vol; ti += inv; tc += cpu }
	END { printf "total           %7.1f switches/s (%6.1f voluntary, %5.1f involuntary)  %7.2f ms CPU in %d s (%.3f %% of a CPU)\n", tv + ti, tv, ti, tc, s, tc / (s * 10) }'
