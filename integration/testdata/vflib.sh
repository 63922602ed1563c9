# The shell functions of the VF guest scripts (igbvf.sh, vfremoval.sh), which the tests put
# before the script (vfScript in igbvf_test.go).
set -u
. /etc/uiod/lib.sh
# vfmac IFC MAC: the PF IFC gives its VF 0 the address MAC (ip link set IFC vf 0 mac MAC).
vfmac() { UIOD_VF_PF=$1 UIOD_VF_INDEX=0 UIOD_VF_MAC=$2 guest.test -test.run '^TestGuestToolVFMAC$' -test.count=1 >/tmp/vfmac.log 2>&1 || fail "set $1 vf 0 mac $2: $(cat /tmp/vfmac.log)"; }
# now: seconds since boot, centisecond resolution.
now() { cut -d' ' -f1 /proc/uptime; }
# since T: the seconds from T to now.
since() { echo "$(now) $1" | awk '{printf "%.2f", $1 - $2}'; }
# threads PID: per thread of PID "tid:ticks:switches" (user+system clock ticks, voluntary and
# involuntary context switches), to tell which thread spends the idle CPU and how often it wakes.
threads() {
	for d in /proc/$1/task/*; do
		c=$(awk '{print $14 + $15}' "$d/stat" 2>/dev/null) || continue
		s=$(awk '/ctxt_switches/ {s += $2} END {print s + 0}' "$d/status" 2>/dev/null)
		echo "${d##*/}:$c:$s"
	done
}
# snap NAME: the daemon's threads ("E2E THREADS NAME t=UPTIME tid:ticks:switches...", ticks of
# USER_HZ, 100 a second on x86) and a snapshot.
snap() {
	say "THREADS $1 t=$(now) $(threads "$PID" | tr '\n' ' ')"
	snapshot "$1"
}
# pf_vfs PF MAC: brings PF's interface up (ifc), creates its two VFs (uiod vf create), gives
# VF 0 (vf) the MAC and binds it to vfio-pci.
pf_vfs() {
	ifc=$(ls "/sys/bus/pci/devices/$1/net" 2>/dev/null | head -1)
	[ -n "$ifc" ] || fail "PF $1 ($(driver "$1")) has no interface"
	ip link set "$ifc" up || fail "ip link set $ifc up"
	say "pf $1 $ifc driver=$(driver "$1") totalvfs=$(cat "/sys/bus/pci/devices/$1/sriov_totalvfs")"
	uiod vf create "$1" 2 || fail "uiod vf create $1 2"
	vf=$(basename "$(readlink "/sys/bus/pci/devices/$1/virtfn0")")
	[ -n "$vf" ] || fail "no virtfn0 under $1"
	vfmac "$ifc" "$2"
	say "vf $vf of $1 $(cat "/sys/bus/pci/devices/$vf/vendor"):$(cat "/sys/bus/pci/devices/$vf/device") mac $2 group $(basename "$(readlink "/sys/bus/pci/devices/$vf/iommu_group")")"
	bind_vfio "$vf"
	say "bound $vf=$(driver "$vf")"
}
# port_is NAME MATCH SECONDS: waits until the port NAME's entry in /status matches the grep -E
# pattern MATCH.
port_is() {
	i=0
	until status && tr -d ' \n' </tmp/status.json | sed 's/"name":/\n/g' | grep "^\"$1\"" | grep -Eq "$2"; do
		i=$((i + 1))
		[ $i -lt $(($3 * 10)) ] || fail "$1 never matched $2 in $3 s: $(cat /tmp/status.json 2>/dev/null)"
		sleep 0.1
	done
}
# write_timed VALUE FILE: writes VALUE into FILE in the background (a write the kernel may
# hold up), fails when it takes 30 s or fails; t0 is when it started, took its seconds.
write_timed() {
	t0=$(now)
	echo "$1" >"$2" &
	w=$!
	exited_within $w 30 || fail "echo $1 > $2 blocked for 30 s"
	wait $w || fail "echo $1 > $2"
	took=$(since "$t0")
}
# finish ADDR...: after the host's "done": the final /status, the daemon stopped and ADDR...
# given back to their drivers.
finish() {
	say "host says: $cmd"
	status && say "STATUS-BEGIN final" && cat /tmp/status.json && say "STATUS-END final"
	stop_daemon
	uiod unbind --restore "$@" || fail "uiod unbind --restore $*"
	say "end"
}
# vf_port NAME ADDR prints a port list entry: the VF ADDR on vfio-pci as port NAME (nic: igbvf).
vf_port() { conf_msix_port "$1" "$2" igbvf; }
# pfdown_open PFIF PORT LINKS: the daemon was started with the PF interface PFIF down (so
# that its VF, port PORT, found the PF in reset at Open): the daemon must run and serve
# /status with PORT's link down and the other LINKS-1 links up, and still so 3 s later
# (snapshot "pfdown"); then PFIF goes up and PORT's link must come up by itself, the time
# from the PF's up to the link's printed as "E2E pfdown-times up-to-link=SECONDS".
pfdown_open() {
	i=0
	until status && [ "$(grep -c '"link_up": true' /tmp/status.json)" = $(($3 - 1)) ]; do
		kill -0 "$PID" 2>/dev/null || fail "the daemon exited with $1 down: $(tail -n 20 "$RUNLOG")"
		i=$((i + 1))
		[ $i -lt 450 ] || fail "no /status with $(($3 - 1)) links up after 90 s with $1 down: $(cat /tmp/status.json 2>/dev/null)"
		sleep 0.2
	done
	port_is "$2" '"link_up":false' 10
	sleep 3
	kill -0 "$PID" 2>/dev/null || fail "the daemon exited with $1 down: $(tail -n 20 "$RUNLOG")"
	port_is "$2" '"link_up":false' 10
	say "pfdown: daemon running, $2 link down with $1 down"
	snapshot pfdown
	ip link set "$1" up || fail "ip link set $1 up"
	t0=$(now)
	port_is "$2" '"link_up":true' 60
	say "pfdown-times up-to-link=$(since "$t0")"
}
# serve CONFIG LINKS: runs the daemon on CONFIG, waits for LINKS links up, takes the snapshot
# "start" and tells the host READY. With PFDOWN set ("PFIF PORT"), the daemon starts with
# PFIF down and pfdown_open brings it up first.
serve() {
	run_daemon "$1"
	# shellcheck disable=SC2086 # PFDOWN is two words
	[ -z "${PFDOWN:-}" ] || pfdown_open $PFDOWN "$2"
	wait_links "$2" 90
	snapshot start
	say READY
}
# serve_vfs NAME ADDR [NAME ADDR ...]: serves (serve) the VFs ADDR as ports NAME (vf_port),
# forwarded l2fwd in pairs in the order given (the first with the second, and so on) under
# the adaptive policy (300 µs), its configuration in VFCONF (default /tmp/vf.yaml).
serve_vfs() {
	conf=${VFCONF:-/tmp/vf.yaml}
	names= links=0
	{
		conf_head info
		while [ $# -ge 2 ]; do
			vf_port "$1" "$2"
			names="$names $1" links=$((links + 1))
			shift 2
		done
		# shellcheck disable=SC2086 # names is a list of port names
		conf_l2fwd $names
		conf_poll adaptive 300us
	} >"$conf"
	serve "$conf" "$links"
}
