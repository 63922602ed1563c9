# Guest side of TestIntegrationVirtioRunMultiQueue (see virtio_mq_test.go), run by the
# qemutest /init as root in /tmp: bind the virtio-net NIC (on a 2-queue host TAP) to
# vfio-pci and run `uiod run` on it with 2 queue pairs, reflect, one adaptive poll thread
# per queue on CPUs 0 and 1, while the host sends flows into the TAP; take a snapshot
# whenever the host names one, then stop the daemon with SIGTERM and give the NIC back.
# Every line the host reads starts with "E2E "; it makes the assertions.
set -u
. /etc/uiod/lib.sh
NIC=$(nic 1)

say "nic $NIC kernel=$UIOD_GUEST_KERNEL cpus=$(grep -c ^processor /proc/cpuinfo)"
loopback_up
bind_vfio "$NIC"
{
	conf_head info
	cat <<EOF
  - name: p0
    driver: vfio-pci
    pci: "$NIC"
    nic: virtio
    interrupts: msix
    promiscuous: true
    rx_queues: 2
    tx_queues: 2
forward:
  mode: reflect
EOF
	conf_poll adaptive 300us 0,1
} >/tmp/mq.yaml
run_daemon /tmp/mq.yaml
wait_links 1 60
snapshot start
say READY
serve_snapshots done
stop_daemon
uiod unbind --restore "$NIC" || fail "uiod unbind --restore"
