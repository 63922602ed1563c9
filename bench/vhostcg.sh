#!/bin/bash
# Instructions per frame of the vhost-user back end's bursts (BENCHMARKS.md, "vhost-user at
# 200 instructions a frame"): callgrind's inclusive count of Port.RxBurst and Port.TxBurst
# in BenchmarkBurst32/<size> at two iteration counts, the slope divided by 32 frames a call.
# The inclusive count is bench/cgincl.py's: summed over the function's blocks from every source
# file (callgrind_annotate lists each file's inlined part as a function of its own).
#   bash bench/vhostcg.sh [bench] [test binary]     bench: 64B (default), 1500B, Jumbo
set -euo pipefail
bench=${1:-64B}
bin=${2:-}
out=${CGOUT:-/tmp/vhostcg}
mkdir -p "$out"
if [ -z "$bin" ]; then
	bin=$out/vhost.test
	go test -c -o "$bin" ./nic/vhost/
fi
case $bench in
Jumbo) pat='^BenchmarkBurst32Jumbo$' lo=500 hi=2000 ;;
*) pat="^BenchmarkBurst32\$/^$bench\$" lo=2000 hi=8000 ;;
esac
here=$(dirname "$0")
for n in $lo $hi; do
	GOGC=off GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind --dump-instr=yes \
		--callgrind-out-file="$out/cg.$bench.$n.out" "$bin" -test.run '^$' \
		-test.bench "$pat" -test.benchtime ${n}x >"$out/cg.$bench.$n.log" 2>&1
done
for f in RxBurst TxBurst; do
	a=$(python3 "$here/cgincl.py" "$out/cg.$bench.$lo.out" "vhost.(*Port).$f" | awk '{print $1}')
	b=$(python3 "$here/cgincl.py" "$out/cg.$bench.$hi.out" "vhost.(*Port).$f" | awk '{print $1}')
	awk -v a="$a" -v b="$b" -v d=$((32 * (hi - lo))) -v f=$f -v s="$bench" \
		'BEGIN { printf "%s %s: %.1f instructions per frame\n", s, f, (b - a) / d }'
done
