#!/bin/bash
# vhostrate.sh: CPU time per frame of the vhost-user data path (nic/vhost BenchmarkBurst32
# and BenchmarkBurst32Jumbo: per op 32 frames out of the test front end's TX ring and 32
# into its RX ring), from the process's own user+system time at two iteration counts
# (the slope, so that start-up is left out), and frames/s per core from it. On a shared
# machine this counts the CPU the benchmark used, not the wall-clock time it waited for one.
#   bash bench/vhostrate.sh [test binary] [rounds=3]
set -euo pipefail
bin=${1:-}
rounds=${2:-3}
if [ -z "$bin" ]; then
	bin=/tmp/vhostrate.test
	go test -c -o "$bin" ./nic/vhost/
fi
cpu() { # pattern iterations: user+system seconds of one run
	GOMAXPROCS=1 /usr/bin/time -f "%U %S" "$bin" -test.run '^$' -test.bench "$1" -test.benchtime "$2x" 2>&1 >/dev/null |
		tail -1 | awk '{print $1 + $2}'
}
for r in $(seq "$rounds"); do
	for b in 64B 1500B Jumbo; do
		case $b in
		Jumbo) pat='^BenchmarkBurst32Jumbo$' lo=5000 hi=50000 ;;
		*) pat="^BenchmarkBurst32\$/^$b\$" lo=20000 hi=300000 ;;
		esac
		a=$(cpu "$pat" $lo)
		c=$(cpu "$pat" $hi)
		awk -v r="$r" -v b=$b -v a="$a" -v c="$c" -v d=$((64 * (hi - lo))) -v l="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
			ns = (c - a) * 1e9 / d
			printf "round %s %-6s %.1f ns CPU per frame, %.1f M frames/s per core (load %s)\n", r, b, ns, 1e3 / ns, l }'
	done
done
