# Guest side of TestIntegrationMultiQueue (see multiqueue_test.go), run by the qemutest /init
# as root in /tmp. For each scenario (vfio-pci: MSI-X, one vector per queue, two poll threads
# pinned to CPUs 0 and 1; uio_pci_generic: INTx, one poll thread): bind both NICs to the
# scenario's driver, run the daemon (l2fwd, 4 RX/TX queues per port, adaptive policy) while
# the host sends flows through it, taking a snapshot whenever the host names one, then stop
# it with SIGTERM. Every line the host reads starts with "E2E "; it makes the assertions.
set -u
NIC1=$(echo "$UIOD_GUEST_NICS" | cut -d' ' -f1)
NIC2=$(echo "$UIOD_GUEST_NICS" | cut -d' ' -f2)
PID=
say() { echo "E2E $*"; }
fail() {
	say "FAIL $*"
	[ -f /tmp/run.log ] && sed 's/^/E2E log /' /tmp/run.log
	[ -n "$PID" ] && kill -TERM "$PID" && wait "$PID"
	exit 1
}
# snapshot prints the interrupt counts of the vfio MSI-X vectors and of uio_pci_generic's
# INTx lines and the daemon's /status under a name.
snapshot() {
	grep -E 'vfio|uio' /proc/interrupts | sed "s|^|E2E irq $1 |"
	wget -q -O /tmp/status.json http://127.0.0.1:9477/status || fail "wget /status"
	say "STATUS-BEGIN $1"
	cat /tmp/status.json
	say "STATUS-END $1"
	say "snapshot $1 taken"
}
driver() { basename "$(readlink "/sys/bus/pci/devices/$1/driver")"; }

say "nics $NIC1 $NIC2 kernel=$UIOD_GUEST_KERNEL iommu=$UIOD_GUEST_IOMMU cpus=$(grep -c ^processor /proc/cpuinfo)"
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up || fail "loopback up"

# scenario DRIVER INTERRUPTS CPUS runs the daemon on both NICs bound to DRIVER.
scenario() {
	drv=$1 intr=$2 cpus=$3
	uiod bind --driver "$drv" "$NIC1" "$NIC2" || fail "uiod bind --driver $drv"
	say "bound $drv $NIC1=$(driver "$NIC1") $NIC2=$(driver "$NIC2")"
	# The INTx line of each NIC, to tell the uio ports' lines apart in /proc/interrupts.
	say "intx $NIC1 $(cat "/sys/bus/pci/devices/$NIC1/irq") $NIC2 $(cat "/sys/bus/pci/devices/$NIC2/irq")"
	cat >/tmp/mq.yaml <<EOF
log:
  level: info
metrics:
  listen: 127.0.0.1:9477
ports:
  - name: p0
    driver: $drv
    pci: "$NIC1"
    nic: igb
    interrupts: $intr
    promiscuous: true
    rx_queues: 4
    tx_queues: 4
    rx_ring: 128
    tx_ring: 128
  - name: p1
    driver: $drv
    pci: "$NIC2"
    nic: igb
    interrupts: $intr
    promiscuous: true
    rx_queues: 4
    tx_queues: 4
    rx_ring: 128
    tx_ring: 128
forward:
  mode: l2fwd
  pairs:
    - [p0, p1]
poll:
  mode: adaptive
  idle_threshold: 300us
  wait_timeout: 1s
  cpus: [$cpus]
EOF
	uiod config validate /tmp/mq.yaml || fail "uiod config validate ($drv)"
	uiod run --config /tmp/mq.yaml >/tmp/run.log 2>&1 &
	PID=$!
	i=0
	until wget -q -O /tmp/status.json http://127.0.0.1:9477/status 2>/dev/null &&
		[ "$(grep -c '"link_up": true' /tmp/status.json)" = 2 ]; do
		kill -0 "$PID" 2>/dev/null || fail "uiod run ($drv) exited before it was ready"
		i=$((i + 1))
		[ $i -lt 300 ] || fail "no /status with both links up after 60s: $(cat /tmp/status.json 2>/dev/null)"
		sleep 0.2
	done
	snapshot "$drv/start"
	say "READY $drv"
	while read -r cmd <"$UIOD_GUEST_CONTROL"; do
		[ "$cmd" = "$drv/done" ] && break
		snapshot "$cmd"
	done
	kill -TERM "$PID"
	wait "$PID"
	say "run-exit=$? $drv"
	PID=
	sed "s|^|E2E log $drv |" /tmp/run.log
	uiod unbind --restore "$NIC1" "$NIC2" || fail "uiod unbind --restore ($drv)"
}

scenario vfio-pci msix 0,1
scenario uio_pci_generic intx 0
say "all done"
