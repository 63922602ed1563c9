# Guest side of TestIntegrationVFRemoval (see vfremoval_test.go), run by the qemutest /init as
# root in /tmp after the functions of vflib.sh: Linux's igb drives four NICs as PFs and
# creates two VFs on each (uiod vf create); VF 0 of each PF goes to vfio-pci, and one daemon
# forwards l2fwd between VF 0 of PF 1 and PF 2 (pair a: a0, a1) and between VF 0 of PF 3 and
# PF 4 (pair b: b0, b1), adaptive, nic: igbvf, while the host probes PF 1's and PF 3's wires
# (VF 0 of PF 1 and of PF 3 both have the probes' destination MAC: their wires are apart).
# The host's commands on the control port: "snap NAME" (threads, interrupts and /status),
# "vfremove HOW" (VF 0 of PF 3 taken away under the probes, timed: Linux gives a VF no
# remove file, so by "echo 0 > PF3/sriov_numvfs" (HOW numvfs) or "echo 1 > PF3/remove"
# (pfremove); /status must show b0 absent, snapshot "absent-HOW"; then echo 1 >
# /sys/bus/pci/rescan, and if that does not bring the VF back within 3 s, uiod vf create PF 3
# 2, the MAC again and uiod bind --driver vfio-pci: the daemon must re-open b0 by itself; the
# times are printed as "E2E vfremove-times HOW ..."), "done". The daemon starts with PF 1's
# interface down (a0's Open finds the PF in reset; pfdown_open, vflib.sh). Every line the host reads
# starts with "E2E ".
PROBE_DST=02:75:69:6f:64:02
say "nics $UIOD_GUEST_NICS kernel=$UIOD_GUEST_KERNEL iommu=$UIOD_GUEST_IOMMU"
loopback_up
# vfremove HOW: VF 0 of PF 3 (RVF) taken away under traffic the way HOW names, timed, and
# brought back (see the top). Linux gives a VF no remove file (nor rescan): a VF goes with
# sriov_numvfs 0 (numvfs) or with its PF (pfremove: echo 1 > PF/remove).
vfremove() {
	say "vfremove $1: $RVF/remove $([ -e "/sys/bus/pci/devices/$RVF/remove" ] && echo exists || echo "does not exist (a virtfn has none)")"
	case $1 in
	numvfs) file=/sys/bus/pci/devices/$RPF/sriov_numvfs val=0 ;;
	pfremove) file=/sys/bus/pci/devices/$RPF/remove val=1 ;;
	*) fail "vfremove $1: unknown" ;;
	esac
	write_timed $val "$file"
	removed=$took
	say "vfremove $1: echo $val > $file returned after $removed s; $RVF present=$([ -e "/sys/bus/pci/devices/$RVF" ] && echo yes || echo no)"
	port_is b0 '"absent":true' 10
	absent=$(since "$t0")
	snap "absent-$1"
	t1=$(now)
	echo 1 >/sys/bus/pci/rescan || fail "echo 1 > /sys/bus/pci/rescan"
	i=0
	while { [ ! -e "/sys/bus/pci/devices/$RVF" ] || [ ! -e "/sys/bus/pci/devices/$RPF/net" ]; } && [ $i -lt 30 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	rescan="PF $RPF $([ -e "/sys/bus/pci/devices/$RPF" ] && echo "on $(driver "$RPF") numvfs=$(cat "/sys/bus/pci/devices/$RPF/sriov_numvfs")" || echo absent), VF $RVF $([ -e "/sys/bus/pci/devices/$RVF" ] && echo back || echo "not back")"
	say "vfremove $1: 3 s after echo 1 > /sys/bus/pci/rescan: $rescan"
	if [ -e "/sys/bus/pci/devices/$RVF" ]; then
		how=rescan
		bind_vfio "$RVF"
	else
		how="uiod-vf-create"
		i=0
		until [ -e "/sys/bus/pci/devices/$RPF/net" ]; do
			i=$((i + 1))
			[ $i -lt 300 ] || fail "PF $RPF has no interface 30 s after the rescan"
			sleep 0.1
		done
		pf_vfs "$RPF" "$PROBE_DST"
		[ "$vf" = "$RVF" ] || fail "VF 0 of $RPF came back as $vf, not $RVF"
	fi
	bound=$(since "$t1")
	port_is b0 '"link_up":true.*"absent":false' 60
	say "vfremove-times $1 removed=$removed absent=$absent back-by=$how rebound=$bound back=$(since "$t1") total=$(since "$t0")"
}
VFS=
n=0
for pf in $UIOD_GUEST_NICS; do
	n=$((n + 1))
	mac=02:75:69:6f:76:0$n
	[ $((n % 2)) = 1 ] && mac=$PROBE_DST
	pf_vfs "$pf" "$mac"
	VFS="$VFS $vf"
	[ $n = 1 ] && PF1IF=$ifc
	[ $n = 3 ] && RPF=$pf RVF=$vf
done
# shellcheck disable=SC2086 # VFS is a list of addresses
set -- $VFS
[ $# = 4 ] || fail "want four VFs, have $VFS"
# PF 1's interface down before the daemon opens the VFs: a0's Open finds the PF in reset;
# the daemon must start all the same and a0 come up once the PF does (pfdown_open).
ip link set "$PF1IF" down || fail "ip link set $PF1IF down"
say "pfdown: $PF1IF down before uiod opens $1"
PFDOWN="$PF1IF a0" serve_vfs a0 "$1" a1 "$2" b0 "$3" b1 "$4"
while read -r cmd arg <"$UIOD_GUEST_CONTROL"; do
	case $cmd in
	snap) snap "$arg" ;;
	vfremove)
		vfremove "$arg"
		say "vfremove $arg done"
		;;
	done) break ;;
	*) fail "unknown command $cmd" ;;
	esac
done
# shellcheck disable=SC2086 # the list of addresses
finish $VFS
