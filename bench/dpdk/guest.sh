# Guest side of bench/dpdk (see dpdk_test.go), run by the qemutest /init as root in /tmp.
# Both NICs go to vfio-pci once; then the host names forwarders one at a time over the
# control port ("start NAME"), the guest starts it, pins the NICs' MSI-X vectors to the
# forwarding CPU and says "BENCH READY NAME"; the host probes and says "probed"; the guest
# takes the CPU and interrupt counts over the probes and over an idle stretch, prints one
# "BENCH RESULT" line, stops the forwarder and waits for the next name ("done" ends it).
# With BENCH_VF=1 (vf_test.go) the forwarders run on virtual functions instead: Linux's igb
# drives both NICs as PFs and creates one VF on each, VF 0 of NIC 1 gets the probes'
# destination MAC from its PF, and the two VFs are what goes to vfio-pci (uiod with
# nic: igbvf, DPDK with its igbvf PMD); each forwarder's log is printed when it stops.
set -u
TAG=BENCH RUNLOG=/tmp/fw.log LOGTAIL=40
. /etc/uiod/lib.sh
NIC1=$(nic 1)
NIC2=$(nic 2)
BENCH_VF=${BENCH_VF:-0}
# vf PF MAC: creates one VF on PF (igb's), has the PF give it MAC; VF is its address.
vf() {
	ifc=$(ls "/sys/bus/pci/devices/$1/net" 2>/dev/null | head -1)
	[ -n "$ifc" ] || fail "PF $1 ($(driver "$1")) has no interface"
	ip link set "$ifc" up || fail "ip link set $ifc up"
	echo 1 >"/sys/bus/pci/devices/$1/sriov_numvfs" || fail "echo 1 > $1/sriov_numvfs"
	UIOD_VF_PF=$ifc UIOD_VF_INDEX=0 UIOD_VF_MAC=$2 guest.test -test.run '^TestGuestToolVFMAC$' -test.count=1 >/tmp/vfmac.log 2>&1 ||
		fail "set $ifc vf 0 mac $2: $(cat /tmp/vfmac.log)"
	VF=$(basename "$(readlink "/sys/bus/pci/devices/$1/virtfn0")")
	[ -n "$VF" ] || fail "no virtfn0 under $1"
}
if [ "$BENCH_VF" = 1 ]; then
	vf "$NIC1" 02:75:69:6f:64:02
	NIC1=$VF
	vf "$NIC2" 02:75:69:6f:76:02
	NIC2=$VF
	say "vfs $NIC1 of $(nic 1), $NIC2 of $(nic 2)"
fi
FWCPU=1
IDLE=${BENCH_IDLE_SECONDS:-4}
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu
loopback_up
# EAL refuses a plugin directory under a world-writable path, and the initramfs root is one.
chmod go-w / /usr /usr/lib /usr/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/dpdk 2>/dev/null
mkdir -p /var/run /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null
bind_vfio "$NIC1" "$NIC2"
say "bound $NIC1 $NIC2 hugepages=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages)"
uiod devices | sed 's/^/BENCH devices /'

# ticks PID: the process's user+system CPU time in clock ticks (USER_HZ = 100).
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# threads PID: per thread "tid:ticks:switches" (CPU time, voluntary + involuntary context
# switches), to tell which thread spends the CPU and how often it wakes.
threads() {
	for d in /proc/$1/task/*; do
		t=${d##*/}
		c=$(awk '{print $14 + $15}' "$d/stat" 2>/dev/null) || continue
		s=$(awk '/ctxt_switches/ {s += $2} END {print s + 0}' "$d/status" 2>/dev/null)
		echo "$t:$c:$s"
	done
}
# stalls: uiod's poll threads' stall count and seconds summed from /status ("" for the
# DPDK forwarders); stall_delta BEFORE AFTER: the " probe_stalls=N probe_stall_s=S" of the
# RESULT line.
stalls() {
	case $NAME in uiod-*) ;; *) return 0 ;; esac
	status || return 0
	tr -d ' \n' </tmp/status.json | grep -o '"stalls":[0-9]*,"stall_seconds":[0-9.e+-]*' |
		awk -F'[:,]' '{n += $2; s += $4} END {printf "%d:%.6f", n, s}'
}
stall_delta() {
	[ -n "$1" ] && [ -n "$2" ] || return 0
	echo "$1 $2" | awk '{split($1, a, ":"); split($2, b, ":"); printf " probe_stalls=%d probe_stall_s=%.6f", b[1] - a[1], b[2] - a[2]}'
}
# now: seconds since boot, centisecond resolution.
now() { cut -d' ' -f1 /proc/uptime; }
# irqsum: the NICs' vfio MSI-X interrupt count summed over CPUs and vectors.
irqsum() { grep vfio-msix /proc/interrupts | awk '{for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i; else break} END {print s + 0}'; }
# pin: every vfio MSI-X vector of the NICs to the forwarding CPU (the kernel spreads them
# otherwise, and a round's latency then depends on where the interrupt landed).
pin() {
	for n in $(grep vfio-msix /proc/interrupts | cut -d: -f1); do
		echo $FWCPU >"/proc/irq/$(echo $n)/smp_affinity_list" 2>/dev/null
	done
}
# stop ends the forwarder (SIGINT, then SIGKILL after 10 s) and testpmd's stdin FIFO.
stop() {
	[ -n "$PID" ] || return 0
	kill -INT "$PID" 2>/dev/null
	exited_within "$PID" 10 || kill -KILL "$PID" 2>/dev/null
	wait "$PID" 2>/dev/null
	PID=
	[ -n "${FIFOPID:-}" ] && kill "$FIFOPID" 2>/dev/null
	FIFOPID=
}
# wait_log PATTERN SECONDS: until the forwarder's log shows PATTERN.
wait_log() {
	i=0
	until grep -q "$1" /tmp/fw.log 2>/dev/null; do
		kill -0 "$PID" 2>/dev/null || fail "$NAME exited before it was ready"
		i=$((i + 1))
		if [ $i -ge $(($2 * 5)) ]; then
			# Where it is stuck, and what it had buffered (stop's SIGINT has it exit).
			for d in /proc/$PID/task/*; do say "stuck $NAME task ${d##*/} $(cut -d' ' -f3 "$d/stat") wchan=$(cat "$d/wchan" 2>/dev/null)"; done
			stop
			fail "$NAME: no \"$1\" after $2 s"
		fi
		sleep 0.2
	done
}
EALCOMMON="-n 1 --in-memory --no-telemetry --iova-mode=va -m 256 -a $NIC1 -a $NIC2"
# testpmd forwards on a worker lcore and waits for stdin on the main one; l3fwd-power runs
# its loop on every lcore, the main one included, and the main lcore would otherwise spin
# in rte_eal_mp_wait_lcore: give it the forwarding CPU alone.
EAL="-l 0,$FWCPU $EALCOMMON"
EAL1="-l $FWCPU $EALCOMMON"
# uiod_conf MODE THRESHOLD [l3fwd]: uiod's configuration, l2fwd between the two ports or,
# with l3fwd, routing the probes' 192.0.2.0/24 to port 1 as the patched l3fwd-power does
# (its next hop MAC for port 1 is 02:00:00:00:00:01).
uiod_conf() {
	{
		conf_head warn
		if [ "$BENCH_VF" = 1 ]; then
			conf_msix_port p0 "$NIC1" igbvf
			conf_msix_port p1 "$NIC2" igbvf
		else
			conf_msix_port p0 "$NIC1" igb "promiscuous: true"
			conf_msix_port p1 "$NIC2" igb "promiscuous: true"
		fi
		if [ "${3:-}" = l3fwd ]; then
			cat <<EOF
forward:
  mode: l3fwd
  routes:
    - {prefix: 192.0.2.0/24, port: p1, next_hop_mac: "02:00:00:00:00:01"}
EOF
		else
			cat <<EOF
forward:
  mode: l2fwd
  pairs: [[p0, p1]]
EOF
		fi
		conf_poll "$1" "$2" "$FWCPU"
	} >/tmp/uiod.yaml
}
start() {
	NAME=$1
	: >/tmp/fw.log
	case $NAME in
	testpmd)
		# testpmd exits at EOF on stdin: hold a FIFO open.
		rm -f /tmp/tp.in && mkfifo /tmp/tp.in
		sleep 100000 >/tmp/tp.in &
		FIFOPID=$!
		# testpmd's stdout to a file is block-buffered, and on the VFs (less output) its
		# "Press enter to exit" stayed in the buffer: line-buffer it there, as stdbuf -oL.
		if [ "$BENCH_VF" = 1 ]; then
			export LD_PRELOAD=/usr/libexec/coreutils/libstdbuf.so _STDBUF_O=L
		fi
		dpdk-testpmd $EAL -- --forward-mode=io --auto-start --nb-cores=1 --rxq=1 --txq=1 \
			--port-topology=paired </tmp/tp.in >/tmp/fw.log 2>&1 &
		PID=$!
		unset LD_PRELOAD _STDBUF_O
		wait_log "Press enter to exit" 120
		;;
	l3fwd-power)
		# A VF takes no unicast promiscuous mode (the PF filters by its MAC, the probes'
		# destination): no -P there.
		promisc=-P
		[ "$BENCH_VF" = 1 ] && promisc=
		l3fwd-power $EAL1 -- -p 0x3 $promisc --interrupt-only --parse-ptype \
			--config="(0,0,$FWCPU),(1,0,$FWCPU)" >/tmp/fw.log 2>&1 &
		PID=$!
		wait_log "entering main interrupt loop" 120
		;;
	uiod-*)
		case $NAME in
		uiod-busy) uiod_conf busy 300us ;;
		uiod-busy-noyield) uiod_conf busy 300us ;;
		uiod-adaptive) uiod_conf adaptive 300us ;;
		uiod-auto) uiod_conf adaptive auto ;;
		uiod-l3fwd-adaptive) uiod_conf adaptive 300us l3fwd ;;
		uiod-l3fwd-auto) uiod_conf adaptive auto l3fwd ;;
		*) fail "unknown forwarder $NAME" ;;
		esac
		# uiod-busy-noyield: busy without the poll thread's yields to the Go scheduler
		# (idle.RuntimeYieldEnv), left to the runtime's own preemption.
		[ "$NAME" = uiod-busy-noyield ] && export UIOD_RUNTIME_YIELD=off
		run_daemon /tmp/uiod.yaml
		unset UIOD_RUNTIME_YIELD
		wait_links 2 120
		;;
	*) fail "unknown forwarder $NAME" ;;
	esac
	pin
	sleep 1
	T0=$(now) C0=$(ticks "$PID") I0=$(irqsum) S0=$(stalls)
	say "READY $NAME"
}
while read -r cmd arg <"$UIOD_GUEST_CONTROL"; do
	case $cmd in
	start) start "$arg" ;;
	probed)
		T1=$(now) C1=$(ticks "$PID") I1=$(irqsum) S1=$(stalls) TH1=$(threads "$PID")
		sleep "$IDLE"
		T2=$(now) C2=$(ticks "$PID") I2=$(irqsum) TH2=$(threads "$PID")
		# uiod's own view of the run (port and queue counters, stalls) for the log.
		case $NAME in uiod-*) status && say "STATUSDUMP $NAME $(tr -d ' \n' </tmp/status.json | head -c 4000)" ;; esac
		say "THREADS $NAME idle_s=$(echo "$T2 $T1" | awk '{print $1 - $2}') before $(echo $TH1) after $(echo $TH2)"
		say "RESULT $NAME probe_s=$(echo "$T1 $T0" | awk '{print $1 - $2}') probe_ticks=$((C1 - C0)) probe_irqs=$((I1 - I0)) idle_s=$(echo "$T2 $T1" | awk '{print $1 - $2}') idle_ticks=$((C2 - C1)) idle_irqs=$((I2 - I1))$(stall_delta "$S0" "$S1")"
		;;
	stop)
		# After the host's burst, which follows the idle stretch.
		stop
		[ "$BENCH_VF" = 1 ] && sed "s|^|$TAG FWLOG $NAME |" /tmp/fw.log | tail -n 60
		say "STOPPED $NAME"
		;;
	done) break ;;
	*) say "FAIL unknown command $cmd" ;;
	esac
done
uiod unbind --restore "$NIC1" "$NIC2" >/dev/null 2>&1
say "END"
