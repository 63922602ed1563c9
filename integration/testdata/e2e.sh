# Guest side of TestIntegrationE2E* (see e2e_test.go), run by the qemutest /init as root in
# /tmp: for each NIC model in UIOD_E2E_MODELS (default igb) take the next two NICs, bind the
# first to vfio-pci and the second to uio_pci_generic, run one daemon (l2fwd within each
# pair, adaptive policy) while the host sends probes through every NIC, then stop it with
# SIGTERM and give the NICs back. Every line the host reads starts with "E2E "; it makes the
# assertions.
set -u
MODELS=${UIOD_E2E_MODELS:-igb}
PID=
say() { echo "E2E $*"; }
fail() {
	say "FAIL $*"
	[ -f /tmp/run.log ] && sed 's/^/E2E log /' /tmp/run.log
	[ -n "$PID" ] && kill -TERM "$PID" && wait "$PID"
	exit 1
}
# nic N prints the N-th (from 1) address of UIOD_GUEST_NICS.
nic() { echo "$UIOD_GUEST_NICS" | cut -d' ' -f"$1"; }
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
driver() { [ -e "/sys/bus/pci/devices/$1/driver" ] && basename "$(readlink "/sys/bus/pci/devices/$1/driver")"; }

say "nics $UIOD_GUEST_NICS models=$MODELS kernel=$UIOD_GUEST_KERNEL iommu=$UIOD_GUEST_IOMMU noiommu=$UIOD_GUEST_NOIOMMU"
say "hugepages free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null)"
# The metrics endpoint listens on 127.0.0.1: the guest's loopback must be up.
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up || fail "loopback up"
noiommu=
[ "$UIOD_GUEST_NOIOMMU" = 1 ] && noiommu=--noiommu-mode
# Port p(2k) is pair k's vfio-pci NIC, p(2k+1) its uio_pci_generic NIC.
k=0
ALL=
PORTS=
PAIRS=
for model in $MODELS; do
	a=$(nic $((2 * k + 1)))
	b=$(nic $((2 * k + 2)))
	[ -n "$a" ] && [ -n "$b" ] || fail "model $model: no NICs $((2 * k + 1)) and $((2 * k + 2)) in '$UIOD_GUEST_NICS'"
	say "original $a $(driver "$a")"
	say "original $b $(driver "$b")"
	uiod bind --driver vfio-pci $noiommu "$a" || fail "uiod bind --driver vfio-pci $a"
	uiod bind --driver uio_pci_generic "$b" || fail "uiod bind --driver uio_pci_generic $b"
	say "bound $a=$(driver "$a") $b=$(driver "$b")"
	# The INTx line of the uio port, to tell it apart in /proc/interrupts.
	say "intx $b $(cat "/sys/bus/pci/devices/$b/irq")"
	PORTS="$PORTS
  - {name: p$((2 * k)), driver: vfio-pci, pci: \"$a\", nic: $model, interrupts: msix, promiscuous: true}
  - {name: p$((2 * k + 1)), driver: uio_pci_generic, pci: \"$b\", nic: $model, interrupts: intx, promiscuous: true}"
	PAIRS="$PAIRS
    - [p$((2 * k)), p$((2 * k + 1))]"
	ALL="$ALL $a $b"
	k=$((k + 1))
done
NPORTS=$((2 * k))

# wait_timeout is long so that a sleeping poll thread is woken by the NICs' interrupts, not
# by its timer.
cat >/tmp/e2e.yaml <<EOF
log:
  level: info
metrics:
  listen: 127.0.0.1:9477
ports:$PORTS
forward:
  mode: l2fwd
  pairs:$PAIRS
poll:
  mode: adaptive
  idle_threshold: 300us
  wait_timeout: 1s
EOF
uiod config validate /tmp/e2e.yaml || fail "uiod config validate: $(cat /tmp/e2e.yaml)"

uiod run --config /tmp/e2e.yaml >/tmp/run.log 2>&1 &
PID=$!
# Ready when /status answers with every link up.
i=0
until wget -q -O /tmp/status.json http://127.0.0.1:9477/status 2>/dev/null &&
	[ "$(grep -c '"link_up": true' /tmp/status.json)" = "$NPORTS" ]; do
	kill -0 "$PID" 2>/dev/null || fail "uiod run exited before it was ready"
	i=$((i + 1))
	[ $i -lt 300 ] || fail "no /status with all $NPORTS links up after 60s: $(cat /tmp/status.json 2>/dev/null)"
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

# shellcheck disable=SC2086 # ALL is a list of addresses
uiod unbind --restore $ALL || fail "uiod unbind --restore"
for a in $ALL; do
	say "restored $a=$(driver "$a")"
done
uiod devices --json >/tmp/devices.json || fail "uiod devices --json"
say DEVICES-BEGIN
cat /tmp/devices.json
say DEVICES-END
