# Guest side of TestIntegrationIGBVF (see igbvf_test.go), run by the qemutest /init as root
# in /tmp: Linux's igb drives both NICs as PFs and creates two VFs on each (sriov_numvfs);
# VF 0 of PF 1 gets the probes' destination MAC from its PF, VF 0 of each PF goes to
# vfio-pci with `uiod bind`, and one daemon forwards l2fwd between the two VFs with the
# adaptive policy (nic: igbvf) while the host probes PF 1's wire. The host's commands on the
# control port: "snap NAME" (interrupts and /status), "vfmac" (the PF sets VF 0 of PF 1 a
# new MAC while uiod runs, then back to the probes' one), "pfbounce" (PF 1 down and up),
# "pfphase" (the daemon stopped, the VFs given back and removed, the PFs bound to vfio-pci
# and forwarded by a new daemon with nic: igb, for the comparison in one boot), "done".
# Every line the host reads starts with "E2E ".
set -u
. /etc/uiod/lib.sh
PROBE_DST=02:75:69:6f:64:02
say "nics $UIOD_GUEST_NICS kernel=$UIOD_GUEST_KERNEL iommu=$UIOD_GUEST_IOMMU"
loopback_up
vfmac() { UIOD_VF_PF=$1 UIOD_VF_INDEX=0 UIOD_VF_MAC=$2 guest.test -test.run '^TestGuestToolVFMAC$' -test.count=1 >/tmp/vfmac.log 2>&1 || fail "set $1 vf 0 mac $2: $(cat /tmp/vfmac.log)"; }
VFS=
PFIF=
n=0
for pf in $(nic 1) $(nic 2); do
	n=$((n + 1))
	ifc=$(ls "/sys/bus/pci/devices/$pf/net" 2>/dev/null | head -1)
	[ -n "$ifc" ] || fail "PF $pf ($(driver "$pf")) has no interface"
	ip link set "$ifc" up || fail "ip link set $ifc up"
	say "pf $pf $ifc driver=$(driver "$pf") totalvfs=$(cat "/sys/bus/pci/devices/$pf/sriov_totalvfs")"
	echo 2 >"/sys/bus/pci/devices/$pf/sriov_numvfs" || fail "echo 2 > $pf/sriov_numvfs"
	vf=$(basename "$(readlink "/sys/bus/pci/devices/$pf/virtfn0")")
	[ -n "$vf" ] || fail "no virtfn0 under $pf"
	mac=02:75:69:6f:76:0$n
	[ $n = 1 ] && mac=$PROBE_DST
	vfmac "$ifc" "$mac"
	say "vf $vf of $pf $(cat "/sys/bus/pci/devices/$vf/vendor"):$(cat "/sys/bus/pci/devices/$vf/device") mac $mac group $(basename "$(readlink "/sys/bus/pci/devices/$vf/iommu_group")")"
	uiod bind --driver vfio-pci "$vf" || fail "uiod bind --driver vfio-pci $vf"
	say "bound $vf=$(driver "$vf")"
	VFS="$VFS $vf"
	[ $n = 1 ] && PFIF=$ifc
done
PFS="$(nic 1) $(nic 2)"
set -- $VFS
{
	conf_head info
	cat <<CONF
  - {name: vf0, driver: vfio-pci, pci: "$1", nic: igbvf, interrupts: msix}
  - {name: vf1, driver: vfio-pci, pci: "$2", nic: igbvf, interrupts: msix}
forward:
  mode: l2fwd
  pairs:
    - [vf0, vf1]
CONF
	conf_poll adaptive 300us
} >/tmp/vf.yaml
run_daemon /tmp/vf.yaml
wait_links 2 60
snapshot start
say READY
while read -r cmd arg <"$UIOD_GUEST_CONTROL"; do
	case $cmd in
	snap) snapshot "$arg" ;;
	vfmac)
		vfmac "$PFIF" 02:75:69:6f:76:99
		sleep 3
		vfmac "$PFIF" "$PROBE_DST"
		say "vfmac done"
		;;
	pfbounce)
		ip link set "$PFIF" down || fail "ip link set $PFIF down"
		sleep 2
		ip link set "$PFIF" up || fail "ip link set $PFIF up"
		say "pfbounce done"
		;;
	pfphase)
		stop_daemon vf
		# shellcheck disable=SC2086 # VFS is a list of addresses
		uiod unbind --restore $VFS || fail "uiod unbind --restore $VFS"
		for pf in $PFS; do
			echo 0 >"/sys/bus/pci/devices/$pf/sriov_numvfs" || fail "echo 0 > $pf/sriov_numvfs"
			uiod bind --driver vfio-pci "$pf" || fail "uiod bind --driver vfio-pci $pf"
		done
		set -- $PFS
		{
			conf_head info
			cat <<CONF
  - {name: pf0, driver: vfio-pci, pci: "$1", nic: igb, interrupts: msix, promiscuous: true}
  - {name: pf1, driver: vfio-pci, pci: "$2", nic: igb, interrupts: msix, promiscuous: true}
forward:
  mode: l2fwd
  pairs:
    - [pf0, pf1]
CONF
			conf_poll adaptive 300us
		} >/tmp/pf.yaml
		run_daemon /tmp/pf.yaml
		wait_links 2 60
		VFS=
		say "pf ready"
		;;
	done) break ;;
	*) fail "unknown command $cmd" ;;
	esac
done
say "host says: $cmd"
status && say "STATUS-BEGIN final" && cat /tmp/status.json && say "STATUS-END final"
stop_daemon
# shellcheck disable=SC2086 # the lists of addresses
if [ -n "$VFS" ]; then
	uiod unbind --restore $VFS || fail "uiod unbind --restore $VFS"
else
	uiod unbind --restore $PFS || fail "uiod unbind --restore $PFS"
fi
say "end"
