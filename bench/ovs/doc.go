// Package ovs holds the side-by-side benchmark of uiod's learning bridge (forward.mode:
// bridge) against Open vSwitch with DPDK (Debian's openvswitch-switch-dpdk): the same two
// DPDK virtio-user front ends on two vhost-user ports of each switch in turn, probed the
// same way, the switch's CPU read while probed and while idle. It is run by hand
// (bench/ovs/run.sh, UIOD_OVS_BENCH=1), not by `make test`: see BENCHMARKS.md.
package ovs
