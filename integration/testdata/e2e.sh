# Guest side of TestIntegrationE2E* (see e2e_test.go), run by the qemutest /init as root in
# /tmp: for each NIC model in UIOD_E2E_MODELS (default igb) take the next two NICs, bind the
# first to vfio-pci and the second to uio_pci_generic, run one daemon (l2fwd within each
# pair, adaptive policy) while the host sends probes through every NIC, then stop it with
# SIGTERM and give the NICs back. Every line the host reads starts with "E2E "; it makes the
# assertions.
set -u
. /etc/uiod/lib.sh
MODELS=${UIOD_E2E_MODELS:-igb}

say "nics $UIOD_GUEST_NICS models=$MODELS kernel=$UIOD_GUEST_KERNEL iommu=$UIOD_GUEST_IOMMU noiommu=$UIOD_GUEST_NOIOMMU"
say "hugepages free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null)"
loopback_up
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
	bind_vfio $noiommu "$a"
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

{
	conf_head info
	cat <<EOF
$PORTS
forward:
  mode: l2fwd
  pairs:$PAIRS
EOF
	conf_poll adaptive 300us
} >/tmp/e2e.yaml
run_daemon /tmp/e2e.yaml
wait_links "$NPORTS" 60
# With UIOD_VFIO_INTERFACE set, the vfio port must have been opened through it.
if [ -n "${UIOD_VFIO_INTERFACE:-}" ]; then
	grep -q "\"interface\": \"$UIOD_VFIO_INTERFACE\"" /tmp/run.log ||
		fail "vfio port not opened through $UIOD_VFIO_INTERFACE: $(grep vfio /tmp/run.log)"
	say "vfio interface $UIOD_VFIO_INTERFACE"
fi
snapshot start
say READY
# The host names a snapshot after each run of probes, then says done.
serve_snapshots done
say "host says: $cmd"
stop_daemon

# shellcheck disable=SC2086 # ALL is a list of addresses
uiod unbind --restore $ALL || fail "uiod unbind --restore"
for a in $ALL; do
	say "restored $a=$(driver "$a")"
done
uiod devices --json >/tmp/devices.json || fail "uiod devices --json"
say DEVICES-BEGIN
cat /tmp/devices.json
say DEVICES-END
