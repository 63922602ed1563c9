# Guest side of TestIntegrationIgbJumbo and TestIntegrationVirtioJumboTCP (see
# igbjumbo_test.go), run by the qemutest /init as root in /tmp: bind both NICs (igb, or
# virtio with UIOD_JUMBO_NIC=virtio) to vfio-pci and run `uiod run` with both ports at
# `mtu: 9000` (MSI-X, promiscuous, l2fwd between them) while the host pings and sends TCP
# through them from one namespace to another. Every line the host reads starts with "E2E ";
# it makes the assertions.
set -u
. /etc/uiod/lib.sh
A=$(nic 1)
B=$(nic 2)
[ -n "$A" ] && [ -n "$B" ] || fail "no two NICs in '$UIOD_GUEST_NICS'"
say "nics $A $B kernel=$UIOD_GUEST_KERNEL"
loopback_up
bind_vfio "$A" "$B"
{
	conf_head info
	conf_msix_port p0 "$A" "${UIOD_JUMBO_NIC:-igb}" "promiscuous: true, mtu: 9000"
	conf_msix_port p1 "$B" "${UIOD_JUMBO_NIC:-igb}" "promiscuous: true, mtu: 9000"
	conf_l2fwd p0 p1
	conf_poll adaptive 300us
} >/tmp/jumbo.yaml
uiod config validate /tmp/jumbo.yaml 2>&1 | sed "s|^|$TAG validate |"
run_daemon /tmp/jumbo.yaml
wait_links 2 60
snapshot start
say READY
serve_snapshots done
stop_daemon
uiod unbind --restore "$A" "$B" || fail "uiod unbind --restore"
say "done"
