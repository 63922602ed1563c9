#!/bin/bash
# run.sh: the side-by-side benchmark of uiod's vhost-user back end and DPDK testpmd's
# net_vhost, on the host, in one run.
#
#   bench/vhost/run.sh [rounds=3] [probes=5000]
#
# As root with Debian's DPDK (apt-get install dpdk: dpdk-testpmd and the net_vhost,
# net_virtio and net_af_packet PMDs): creates a network namespace with a veth pair
# vethA/vethB, then measures testpmd net_vhost (io forwarding between the vhost-user socket
# and net_af_packet on vethB), uiod busy, uiod adaptive and uiod auto (a vhost-user port
# l2fwd-paired with a sim port whose wire is afpacket:vethB) in turn, rounds times with the
# order rotated. The client is always the same dpdk-testpmd net_virtio_user in macswap
# forwarding on CPU 1; the back end polls on CPU 0. `uiod latency` probes vethA every
# 400 µs; the back end's process CPU is read from schedstat while probed and while idle.
# The table lands in .cache/vhost/report.md and in the test log; the namespace is deleted.
. "$(dirname "$0")/../../testrig/sidebyside/prologue.sh" vhost "$@"
UIOD_VHOST_BENCH=1 UIOD_VHOST_REPORT=$cache/report.md \
	go test -count=1 -v -timeout 60m -run '^TestVhostSideBySide$' ./bench/vhost \
	-args -vhost.rounds "$rounds" -vhost.probes "$probes"
echo "report: $cache/report.md"
