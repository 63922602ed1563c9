#!/bin/bash
# run.sh: the side-by-side benchmark of uiod's learning bridge and OVS-DPDK, on the host,
# in one run.
#
#   bench/ovs/run.sh [rounds=3] [probes=5000]
#
# As root with Debian's DPDK (dpdk-testpmd with the net_virtio and net_af_packet PMDs) and
# openvswitch-switch-dpdk. Installs nothing unless UIOD_OVS_INSTALL=1, which runs
# `apt-get install -y openvswitch-switch-dpdk` first. The Go test (TestOVSSideBySide)
# reserves 512 2-MiB huge pages and a hugetlbfs mount and gives both back; creates a network
# namespace with a veth pair vethA/vethB; then measures OVS-DPDK (a private ovsdb-server and
# ovs-vswitchd under a temporary directory, one netdev bridge, two dpdkvhostuser ports, one
# PMD thread on CPU 0) and uiod's bridge (two vhost-user ports, poll thread on CPU 0, busy
# and adaptive) in turn, rounds times with the order rotated. The front end is always the
# same dpdk-testpmd on CPU 1: virtio-user on both sockets and af_packet on vethB, chained io
# forwarding. `uiod latency` probes vethA every 400 µs; the switch's process CPU is read from
# schedstat while probed and while idle. The table lands in .cache/ovs/report.md and in the
# test log. UIOD_OVS_SWITCHES=ovs-dpdk,uiod-auto,uiod-adaptive@500us (comma-separated) runs
# only those; a uiod switch is uiod-POLICY, POLICY busy, adaptive, auto (adaptive with
# idle_threshold: auto) or adaptive@DURATION.
. "$(dirname "$0")/../../testrig/sidebyside/prologue.sh" ovs "$@"
if [ "${UIOD_OVS_INSTALL:-}" = 1 ] && [ ! -x /usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y openvswitch-switch-dpdk
fi
[ -x /usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk ] ||
	{ echo "run.sh: OVS-DPDK missing (apt-get install openvswitch-switch-dpdk, or UIOD_OVS_INSTALL=1)" >&2; exit 1; }
UIOD_OVS_BENCH=1 UIOD_OVS_REPORT=$cache/report.md \
	go test -count=1 -v -timeout 30m -run '^TestOVSSideBySide$' ./bench/ovs \
	-args -ovs.rounds "$rounds" -ovs.probes "$probes" -ovs.switches "${UIOD_OVS_SWITCHES:-}"
echo "report: $cache/report.md"
