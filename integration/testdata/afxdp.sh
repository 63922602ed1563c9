# Guest side of TestIntegrationAFXDPGuest (see afxdp_test.go), run by the qemutest /init as
# root in /tmp: NIC 1 (QEMU's igb) and NIC 2 (virtio-net-pci) stay on their kernel drivers;
# `uiod run` takes both interfaces as af_xdp ports (xdp mode auto: native where the driver
# can, else generic; copy mode) and forwards l2fwd between them, adaptive; the host probes
# NIC 1's wire and takes the probes back from NIC 2's, and the other way.
# Every line the host reads starts with "E2E "; it makes the assertions.
set -u
. /etc/uiod/lib.sh

# ifname ADDR is the network interface of PCI function ADDR (igb's directly, virtio-net's
# under its virtioN device).
ifname() {
	for d in /sys/bus/pci/devices/"$1"/net/* /sys/bus/pci/devices/"$1"/virtio*/net/*; do
		[ -e "$d" ] && { basename "$d"; return 0; }
	done
	return 1
}

loopback_up
A=$(ifname "$(nic 1)") || fail "no interface for $(nic 1): $(ls /sys/bus/pci/devices/"$(nic 1)")"
B=$(ifname "$(nic 2)") || fail "no interface for $(nic 2): $(ls /sys/bus/pci/devices/"$(nic 2)")"
say "ifaces $A $B kernel=$UIOD_GUEST_KERNEL"
for i in "$A" "$B"; do ip link set "$i" up || fail "ip link set $i up"; done
say "devices $(uiod devices --interfaces 2>&1 | tr '\n' '|')"
{
	conf_head info
	cat <<CONF
  - {name: p0, driver: af_xdp, interface: $A, promiscuous: true, rx_ring: 512, tx_ring: 512}
  - {name: p1, driver: af_xdp, interface: $B, promiscuous: true, rx_ring: 512, tx_ring: 512}
forward: {mode: l2fwd}
CONF
	conf_poll adaptive 300us
} >/tmp/afxdp.yaml
run_daemon /tmp/afxdp.yaml
wait_links 2 60
# While the daemon runs, uiod devices (rtnetlink's IFLA_XDP) shows the program on both:
# the check after it stopped means something only because this one holds.
for i in "$A" "$B"; do
	uiod devices --interfaces "$i" | grep -q 'prog=".*uiod_xsk' || fail "$i shows no XDP program while the daemon runs: $(uiod devices --interfaces "$i")"
done
say READY
serve_snapshots done
stop_daemon
for i in "$A" "$B"; do
	uiod devices --interfaces "$i" | grep -q 'prog=' && fail "$i still has an XDP program after the daemon stopped: $(uiod devices --interfaces "$i")"
done
say "done"
