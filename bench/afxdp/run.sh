#!/bin/bash
# run.sh: the side-by-side benchmark of uiod's af_xdp ports, DPDK testpmd's net_af_xdp
# and the kernel, on one veth pair, in one run.
#
#   bench/afxdp/run.sh [rounds=3] [probes=5000]
#
# As root with Debian's DPDK (apt-get install dpdk: dpdk-testpmd and its net_af_xdp PMD):
# makes namespaces P and F joined by a veth pair vethA/vethB, then, rounds times with the
# order rotated, lets each forwarder hold vethB in F — uiod af_xdp reflect with poll busy,
# adaptive, auto (adaptive with idle_threshold: auto) and adaptive@2ms (a threshold above the
# probes' gap; native mode, and generic for busy
# and adaptive), testpmd net_af_xdp macswap, and nothing (the
# kernel answers itself) — and sends the same ICMP echo requests from vethA through
# AF_PACKET, one every millisecond, timing each round trip. The forwarder polls on CPU 0,
# the prober on CPU 1; the forwarder's process CPU is read from schedstat while probed and
# over 10 s idle. The table lands in .cache/afxdp/report.md and in the test log.
# UIOD_AFXDP_FORWARDERS=uiod-auto,testpmd (comma-separated) runs only those.
set -euo pipefail
rounds=${1:-3}
probes=${2:-5000}
repo=$(cd "$(dirname "$0")/../.." && pwd)
cache=$repo/.cache/afxdp
[ "$(id -u)" = 0 ] || { echo "run.sh: must run as root" >&2; exit 1; }
command -v dpdk-testpmd >/dev/null || { echo "run.sh: dpdk-testpmd missing (apt-get install dpdk)" >&2; exit 1; }
mkdir -p "$cache"
cd "$repo"
UIOD_AFXDP_BENCH=1 UIOD_AFXDP_ROUNDS=$rounds UIOD_AFXDP_PROBES=$probes UIOD_AFXDP_REPORT=$cache/report.md \
	go test -count=1 -v -timeout 60m -run '^TestAFXDPSideBySide$' ./bench/afxdp
echo "report: $cache/report.md"
