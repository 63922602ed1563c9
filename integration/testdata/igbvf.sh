# Guest side of TestIntegrationIGBVF (see igbvf_test.go), run by the qemutest /init as root
# in /tmp: Linux's igb drives both NICs as PFs and creates two VFs on each (uiod vf create);
# VF 0 of PF 1 gets the probes' destination MAC from its PF, VF 0 of each PF goes to
# vfio-pci with `uiod bind`, and one daemon forwards l2fwd between the two VFs with the
# adaptive policy (nic: igbvf) while the host probes PF 1's wire. The host's commands on the
# control port: "snap NAME" (interrupts and /status), "vfmac" (the PF sets VF 0 of PF 1 a
# new MAC while uiod runs, then back to the probes' one), "pfbounce" (PF 1 down and up),
# "pfrebind" (PF 1 unbound from igb, which removes its VFs, and bound again, its VFs
# created again and VF 0 given back to vfio-pci: the daemon must let the VF go and re-open
# it by itself; the guest prints the times of each step as "E2E pfrebind-times ..."),
# "unpriv" (the daemon stopped and the same configuration run again by
# TestGuestToolUnprivileged as uid 1000 with CapEff 0 and the memlock `config validate`
# prints, unpriv_run), "pfphase" (the daemon stopped, the VFs given back and removed, the
# PFs bound to vfio-pci and forwarded by a new daemon with nic: igb, for the comparison in
# one boot), "done".
# The daemon starts with PF 1's interface down (VF 0's Open finds the PF in reset): it must
# run with vf0's link down (snapshot "pfdown") until the PF goes up, then vf0 comes up by
# itself before READY ("E2E pfdown-times ...").
# Every line the host reads starts with "E2E ".
# The functions of vflib.sh come before it (igbvf_test.go).
PROBE_DST=02:75:69:6f:64:02
say "nics $UIOD_GUEST_NICS kernel=$UIOD_GUEST_KERNEL iommu=$UIOD_GUEST_IOMMU"
loopback_up
# pfrebind: PF 1 off igb (its VFs go with it) and back, then its VFs again.
pfrebind() {
	pf=$(nic 1)
	write_timed "$pf" /sys/bus/pci/drivers/igb/unbind
	unbind=$took
	say "pfrebind: unbind returned after ${unbind} s; numvfs=$(cat "/sys/bus/pci/devices/$pf/sriov_numvfs") virtfn0=$(ls -d "/sys/bus/pci/devices/$pf/virtfn0" 2>/dev/null) vf0 present=$([ -e "/sys/bus/pci/devices/$VF0" ] && echo yes || echo no)"
	port_is vf0 '"absent":true' 10
	absent=$(since "$t0")
	t1=$(now)
	echo "$pf" >/sys/bus/pci/drivers/igb/bind || fail "echo $pf > /sys/bus/pci/drivers/igb/bind"
	pf_vfs "$pf" "$PROBE_DST"
	[ "$vf" = "$VF0" ] || fail "VF 0 of $pf came back as $vf, not $VF0"
	PFIF=$ifc
	bound=$(since "$t1")
	port_is vf0 '"link_up":true.*"absent":false' 60
	say "pfrebind-times unbind=$unbind absent=$absent rebound=$bound back=$(since "$t1") total=$(since "$t0")"
}
# unpriv_run: the VF daemon stopped and run again on its configuration as uid 1000 by
# TestGuestToolUnprivileged (PID), which prints its Uid:/CapEff: lines and memlock.
unpriv_run() {
	stop_daemon vf
	RUN=unpriv
	UIOD_UNPRIV_CONFIG=/tmp/vf.yaml UIOD_UNPRIV_PCI="$VFS" UIOD_UNPRIV_STATUS="http://$METRICS/status" UIOD_UNPRIV_LOG=$RUNLOG \
		guest.test -test.run '^TestGuestToolUnprivileged$' -test.count=1 -test.v >/tmp/unpriv.log 2>&1 &
	PID=$!
	wait_line /tmp/unpriv.log '^E2E unpriv up' "uiod run as uid 1000 (TestGuestToolUnprivileged)" 300
	grep '^E2E unpriv' /tmp/unpriv.log
}
# stop_run stops the VF daemon, root's (RUN vf) or the tool's (RUN unpriv), whose exit line
# and log it prints too.
stop_run() {
	stop_daemon $RUN
	[ $RUN = vf ] || {
		grep '^E2E unpriv exit' /tmp/unpriv.log
		sed "s|^|$TAG log $RUN tool |" /tmp/unpriv.log
	}
	RUN=vf
}
VFS=
PFIF=
RUN=vf
n=0
for pf in $(nic 1) $(nic 2); do
	n=$((n + 1))
	mac=02:75:69:6f:76:0$n
	[ $n = 1 ] && mac=$PROBE_DST
	pf_vfs "$pf" "$mac"
	VFS="$VFS $vf"
	[ $n = 1 ] && PFIF=$ifc VF0=$vf
done
PFS="$(nic 1) $(nic 2)"
set -- $VFS
# PF 1's interface down before the daemon opens the VFs: VF 0's Open finds the PF in
# reset; the daemon must start all the same and the port come up once the PF does
# (pfdown_open, vflib.sh).
ip link set "$PFIF" down || fail "ip link set $PFIF down"
say "pfdown: $PFIF down before uiod opens $VF0"
PFDOWN="$PFIF vf0" serve_vfs vf0 "$1" vf1 "$2"
while read -r cmd arg <"$UIOD_GUEST_CONTROL"; do
	case $cmd in
	snap) snap "$arg" ;;
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
	pfrebind)
		pfrebind
		say "pfrebind done"
		;;
	unpriv)
		unpriv_run
		say "unpriv ready"
		;;
	pfphase)
		stop_run
		# shellcheck disable=SC2086 # VFS is a list of addresses
		uiod unbind --restore $VFS || fail "uiod unbind --restore $VFS"
		for pf in $PFS; do
			echo 0 >"/sys/bus/pci/devices/$pf/sriov_numvfs" || fail "echo 0 > $pf/sriov_numvfs"
			bind_vfio "$pf"
		done
		set -- $PFS
		{
			conf_head info
			conf_msix_port pf0 "$1" igb "promiscuous: true"
			conf_msix_port pf1 "$2" igb "promiscuous: true"
			conf_l2fwd pf0 pf1
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
# shellcheck disable=SC2086 # the lists of addresses
if [ -n "$VFS" ]; then finish $VFS; else finish $PFS; fi
