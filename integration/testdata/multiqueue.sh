# Guest side of TestIntegrationMultiQueue (see multiqueue_test.go), run by the qemutest /init
# as root in /tmp. For each scenario (vfio-pci: MSI-X, one vector per queue, two poll threads
# pinned to CPUs 0 and 1; uio_pci_generic: INTx, one poll thread): bind both NICs to the
# scenario's driver, run the daemon (l2fwd, 4 RX/TX queues per port, adaptive policy) while
# the host sends flows through it, taking a snapshot whenever the host names one, then stop
# it with SIGTERM. Every line the host reads starts with "E2E "; it makes the assertions.
set -u
. /etc/uiod/lib.sh
NIC1=$(nic 1)
NIC2=$(nic 2)

# mq_port NAME ADDR prints port NAME of the configuration: ADDR on driver $drv with
# interrupts $intr, 4 RX and 4 TX queues.
mq_port() {
	cat <<EOF
  - name: $1
    driver: $drv
    pci: "$2"
    nic: igb
    interrupts: $intr
    promiscuous: true
    rx_queues: 4
    tx_queues: 4
    rx_ring: 128
    tx_ring: 128
EOF
}

say "nics $NIC1 $NIC2 kernel=$UIOD_GUEST_KERNEL iommu=$UIOD_GUEST_IOMMU cpus=$(grep -c ^processor /proc/cpuinfo)"
loopback_up

# scenario DRIVER INTERRUPTS CPUS runs the daemon on both NICs bound to DRIVER.
scenario() {
	drv=$1 intr=$2 cpus=$3
	uiod bind --driver "$drv" "$NIC1" "$NIC2" || fail "uiod bind --driver $drv"
	say "bound $drv $NIC1=$(driver "$NIC1") $NIC2=$(driver "$NIC2")"
	# The INTx line of each NIC, to tell the uio ports' lines apart in /proc/interrupts.
	say "intx $NIC1 $(cat "/sys/bus/pci/devices/$NIC1/irq") $NIC2 $(cat "/sys/bus/pci/devices/$NIC2/irq")"
	{
		conf_head info
		mq_port p0 "$NIC1"
		mq_port p1 "$NIC2"
		conf_l2fwd p0 p1
		conf_poll adaptive 300us "$cpus"
	} >/tmp/mq.yaml
	run_daemon /tmp/mq.yaml
	wait_links 2 60
	snapshot "$drv/start"
	say "READY $drv"
	serve_snapshots "$drv/done"
	stop_daemon "$drv"
	uiod unbind --restore "$NIC1" "$NIC2" || fail "uiod unbind --restore ($drv)"
}

scenario vfio-pci msix 0,1
scenario uio_pci_generic intx 0
say "all done"
