#!/bin/sh
# wake.sh: the wake-up latency and poll-thread CPU benchmark, C floor included, in one run.
#
#   bench/wake.sh [frames=5000]
#
# Builds bench/cfloor/floor.c, then runs dataplane's BenchmarkPolicies with the floor as
# its first sub-benchmark. Every sub-benchmark sends one frame per 400 µs; latencies are
# event → frame processed, in ns (p50/p90/p99/max), cpu% is the poll thread's share.
set -eu
frames=${1:-5000}
dir=$(cd "$(dirname "$0")/.." && pwd)
floor=$(mktemp -t uiod-floor.XXXXXX)
trap 'rm -f "$floor"' EXIT
gcc -O2 -Wall -pthread -o "$floor" "$dir/bench/cfloor/floor.c"
cd "$dir"
UIOD_CFLOOR="$floor" go test -run '^$' -bench '^BenchmarkPolicies$' -benchtime "${frames}x" -count 1 ./dataplane
