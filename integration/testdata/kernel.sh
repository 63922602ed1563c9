# Guest side of TestIntegrationKernelPathGuest (see kernel_test.go), run by the qemutest
# /init as root in /tmp: bind the igb NIC (on a host TAP) to vfio-pci and run `uiod run` on
# it under l3fwd with the kernel exception path uiodk0, which holds the guest's address
# 10.233.0.1/24; the host pings that address through the vfio-bound NIC. The l3fwd route
# covers only 192.0.2.0/24, so ARP and the pings are not routed: ARP and the pings to the
# router's own address (forward.local) go to the kernel.
# Every line the host reads starts with "E2E "; it makes the assertions.
set -u
. /etc/uiod/lib.sh
NIC=$(nic 1)

say "nic $NIC kernel=$UIOD_GUEST_KERNEL"
loopback_up
[ -c /dev/net/tun ] || { mkdir -p /dev/net && mknod /dev/net/tun c 10 200; } || fail "no /dev/net/tun"
bind_vfio "$NIC"
{
	conf_head info
	conf_vfio_port p0 "$NIC"
	cat <<EOF
    interrupts: msix
    kernel: {tap: uiodk0}
forward:
  mode: l3fwd
  local: [10.233.0.1]
  routes:
    - {prefix: 192.0.2.0/24, port: p0, next_hop_mac: "02:00:00:00:00:01"}
EOF
	conf_poll adaptive 300us
} >/tmp/kernel.yaml
run_daemon /tmp/kernel.yaml
wait_links 1 60
ip addr add 10.233.0.1/24 dev uiodk0 || fail "ip addr add 10.233.0.1/24 dev uiodk0: $(ip link show 2>&1)"
say "tap $(ip link show uiodk0 | tr '\n' ' ')"
say READY
serve_snapshots done
stop_daemon
ip link show uiodk0 >/dev/null 2>&1 && fail "uiodk0 still there after the daemon stopped"
uiod unbind --restore "$NIC" || fail "uiod unbind --restore"
say "done"
