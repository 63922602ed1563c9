# Guest side of TestIntegrationE2E* (see e2e_test.go), run by the qemutest /init as root in
# /tmp: bind NIC 1 to vfio-pci and NIC 2 to uio_pci_generic, run the daemon (l2fwd, adaptive
# policy) while the host sends probes through both NICs, then stop it with SIGTERM and give
# the NICs back. Every line the host reads starts with "E2E "; it makes the assertions.
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
# irqs prints the interrupt counts of the vfio MSI-X vectors and of uio_pci_generic's INTx.
irqs() { grep -E 'vfio|uio' /proc/interrupts | sed "s/^/E2E irq $1 /"; }
# snapshot prints the interrupt counts and the daemon's /status under a name.
snapshot() {
	irqs "$1"
	wget -q -O /tmp/status.json http://127.0.0.1:9477/status || fail "wget /status"
	say "STATUS-BEGIN $1"
	cat /tmp/status.json
	say "STATUS-END $1"
	say "snapshot $1 taken"
}
driver() { basename "$(readlink "/sys/bus/pci/devices/$1/driver")"; }

say "nics $NIC1 $NIC2 kernel=$UIOD_GUEST_KERNEL iommu=$UIOD_GUEST_IOMMU noiommu=$UIOD_GUEST_NOIOMMU"
say "hugepages free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null)"
# The metrics endpoint listens on 127.0.0.1: the guest's loopback must be up.
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up || fail "loopback up"
noiommu=
[ "$UIOD_GUEST_NOIOMMU" = 1 ] && noiommu=--noiommu-mode
uiod bind --driver vfio-pci $noiommu "$NIC1" || fail "uiod bind --driver vfio-pci $NIC1"
uiod bind --driver uio_pci_generic "$NIC2" || fail "uiod bind --driver uio_pci_generic $NIC2"
say "bound $NIC1=$(driver "$NIC1") $NIC2=$(driver "$NIC2")"

# wait_timeout is long so that a sleeping poll thread is woken by the NICs' interrupts, not
# by its timer.
cat >/tmp/e2e.yaml <<EOF
log:
  level: info
metrics:
  listen: 127.0.0.1:9477
ports:
  - name: p0
    driver: vfio-pci
    pci: "$NIC1"
    nic: igb
    interrupts: msix
    promiscuous: true
  - name: p1
    driver: uio_pci_generic
    pci: "$NIC2"
    nic: igb
    interrupts: intx
    promiscuous: true
forward:
  mode: l2fwd
  pairs:
    - [p0, p1]
poll:
  mode: adaptive
  idle_threshold: 300us
  wait_timeout: 1s
EOF
uiod config validate /tmp/e2e.yaml || fail "uiod config validate"

uiod run --config /tmp/e2e.yaml >/tmp/run.log 2>&1 &
PID=$!
# Ready when /status answers with both links up.
i=0
until wget -q -O /tmp/status.json http://127.0.0.1:9477/status 2>/dev/null &&
	[ "$(grep -c '"link_up": true' /tmp/status.json)" = 2 ]; do
	kill -0 "$PID" 2>/dev/null || fail "uiod run exited before it was ready"
	i=$((i + 1))
	[ $i -lt 300 ] || fail "no /status with both links up after 60s: $(cat /tmp/status.json 2>/dev/null)"
	sleep 0.2
done
# With UIOD_VFIO_INTERFACE set, the vfio port must have been opened through it.
if [ -n "${UIOD_VFIO_INTERFACE:-}" ]; then
	grep -q "\"interface\": \"$UIOD_VFIO_INTERFACE\"" /tmp/run.log ||
		fail "vfio port not opened through $UIOD_VFIO_INTERFACE: $(grep vfio /tmp/run.log)"
	say "vfio interface $UIOD_VFIO_INTERFACE"
fi
snapshot start
say READY
# The host names a snapshot after each run of probes, then says done.
while read -r cmd <"$UIOD_GUEST_CONTROL"; do
	[ "$cmd" = done ] && break
	snapshot "$cmd"
done
say "host says: $cmd"

kill -TERM "$PID"
wait "$PID"
say "run-exit=$?"
PID=
sed 's/^/E2E log /' /tmp/run.log

uiod unbind --restore "$NIC1" "$NIC2" || fail "uiod unbind --restore"
say "restored $NIC1=$(driver "$NIC1") $NIC2=$(driver "$NIC2")"
uiod devices --json >/tmp/devices.json || fail "uiod devices --json"
say DEVICES-BEGIN
cat /tmp/devices.json
say DEVICES-END
