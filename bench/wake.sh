#!/bin/sh
# wake.sh: the wake-up latency benchmark, the C floor and each Go variant interleaved.
#
#   bench/wake.sh [rounds=24] [frames per chunk=200] [frames after silence=4]
#
# Builds bench/cfloor/floor.c, then runs dataplane's BenchmarkWakeRounds twice, with the
# polling and sending threads pinned to the last two CPUs and unpinned (UIOD_BENCH_PIN=0).
# Every round sends a chunk of frames one per 400 µs through the floor and every Go
# variant, in a fresh random order, plus a few frames 200 ms apart (deep idle against a
# raw wait); the rounds are pooled and the ratios to the floor come with 90 % bootstrap
# intervals over the rounds. Latencies are event → frame processed. The older one-after-
# another run with CPU shares is BenchmarkPolicies (UIOD_CFLOOR=... go test -bench Policies).
set -eu
rounds=${1:-24}
chunk=${2:-200}
silence=${3:-4}
dir=$(cd "$(dirname "$0")/.." && pwd)
floor=$(mktemp -t uiod-floor.XXXXXX)
trap 'rm -f "$floor"' EXIT
gcc -O2 -Wall -pthread -o "$floor" "$dir/bench/cfloor/floor.c"
cd "$dir"
for pin in 1 0; do
	UIOD_BENCH_PIN=$pin UIOD_CFLOOR="$floor" go test -run '^$' -bench '^BenchmarkWakeRounds$' -benchtime 1x -count 1 \
		-timeout 60m ./dataplane -args -wake.rounds "$rounds" -wake.chunk "$chunk" -wake.silence "$silence"
done
