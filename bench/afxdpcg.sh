#!/bin/bash
# afxdpcg.sh: uiod's af_xdp port (forward.mode reflect, poll busy) and DPDK testpmd's
# net_af_xdp (macswap), counted the same way on the same veth pair with the same frames:
# system calls, sleeps and wake-ups per frame (natively, perf's tracepoint counters and
# /proc's context switches), then each under valgrind's callgrind for the user
# instructions of its receive and send calls per frame and per empty receive.
#
#   bash bench/afxdpcg.sh [frames=2000] [ping|BURST=ping] [idle_seconds=2]
#
# The rig: namespaces afxdpcgP and afxdpcgF joined by the veth pair afxdpcgA/afxdpcgB,
# the forwarder holding afxdpcgB (native XDP, copy mode: veth has no zero-copy) with its
# poll thread or forwarding lcore on CPU 0. bench/afxdp/cggen.py sends 58-byte ICMP echo
# requests from afxdpcgA through AF_PACKET: "ping" one at a time, each waited for until it
# is back and then 1 ms of nothing (the latency benchmark's traffic, every frame a burst
# of its own); BURST that many back to back, waited for together. The frames counted are
# the ones that came back. (root; dpdk-testpmd, valgrind, perf)
#
# Native, per forwarder: an idle window of idle_seconds (per second: what the forwarder
# costs with no traffic) and the traffic (per frame: everything the process did while the
# frames passed, its idle polls included). Columns: all system calls, sendto, recvfrom,
# poll/ppoll/epoll_pwait, futex, nanosleep/clock_nanosleep, the others; voluntary context
# switches of the process's threads (each a sleep that a wake-up ended), involuntary ones
# (preemptions), and the sched_wakeup events the process raised (threads it woke).
#
# Callgrind, per forwarder: counters zeroed once it answers, dump 1 after idle_seconds of
# no traffic, dump 2 after the frames (callgrind_control -z, -d). uiod: afxdp.(*Port).RxBurst
# and TxBurst as callgrind records them (everything below, the system calls' wrappers
# included) and as bench/cgincl.py counts them (uiod's own code and runtime leaves only).
# DPDK: Debian's librte_net_af_xdp is stripped, so its receive and send functions are
# found by their calls: of the PMD's functions that testpmd's object calls, the most
# called is the receive (eth_af_xdp_rx) and the next the send (eth_af_xdp_tx); callgrind's
# inclusive counts (libc's send and recvfrom wrappers included). For each: the idle
# window's instructions per receive call (an empty receive) and the process's per receive
# call (an empty turn, all threads); the receive's instructions per frame less the empty
# calls (the traffic's calls less its send calls, one per receive that brought frames, at
# the empty receive's cost), the send's per frame, and the process's per frame less the
# empty turns. uiod's other threads (sysmon, the runtime yield) work by the clock, not by
# the turn, so its process figure moves between runs (DPDK's moved by under 1 % in three).
# UIOD_AFXDPCG_XDP adds keys to uiod's xdp section ("busy_poll: true").
set -euo pipefail
frames=${1:-2000}
burst=${2:-ping}
idle=${3:-2}
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${CGOUT:-/tmp/afxdpcg}
P=afxdpcgP F=afxdpcgF A=afxdpcgA B=afxdpcgB
[ "$(id -u)" = 0 ] || { echo "afxdpcg.sh: must run as root" >&2; exit 1; }
for c in dpdk-testpmd valgrind callgrind_control perf python3; do
	command -v $c >/dev/null || { echo "afxdpcg.sh: $c missing" >&2; exit 1; }
done
rm -rf "$out" && mkdir -p "$out"
cd "$repo"
go build -o "$out/uiod" ./cmd/uiod

cleanup() {
	ip netns del $P 2>/dev/null || true
	ip netns del $F 2>/dev/null || true
	rm -rf /var/run/dpdk/afxdpcg
}
cleanup
trap cleanup EXIT
ip netns add $P
ip netns add $F
ip link add $A netns $P type veth peer name $B netns $F
for ns in $P $F; do
	ip netns exec $ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ip -n $ns link set lo up
done
ip -n $P addr add 10.77.0.1/24 dev $A
ip -n $F addr add 10.77.0.2/24 dev $B
ip -n $P link set $A up
ip -n $F link set $B up
mac=$(ip -n $F -br link show $B | awk '{print $3}')
gen() { # frames burst [timeout]: "sent back"
	GEN_TIMEOUT=${3:-1} ip netns exec $P python3 bench/afxdp/cggen.py $A "$mac" "$1" "$2"
}

cat >"$out/uiod.yaml" <<EOC
state_dir: $out/state
metrics: {listen: ""}
log: {level: warn}
ports:
  - {name: p, driver: af_xdp, interface: $B, rx_ring: 512, tx_ring: 512, xdp: {mode: native}}
forward: {mode: reflect}
poll: {mode: busy, cpus: [0]}
EOC
[ -z "${UIOD_AFXDPCG_XDP:-}" ] || sed -i "s|xdp: {mode: native}|xdp: {mode: native, $UIOD_AFXDPCG_XDP}|" "$out/uiod.yaml"

start() { # be tag [valgrind args...]: starts the forwarder in F, its pid in $fwpid
	local be=$1 tag=$2
	shift 2
	rm -f "$out/in" && mkfifo "$out/in"
	exec 7<>"$out/in" # held open: testpmd waits on stdin
	if [ "$be" = dpdk ]; then
		ip netns exec $F "$@" dpdk-testpmd -l 0-1 --main-lcore=1 --no-pci --no-huge -m 512 \
			--vdev "net_af_xdp0,iface=$B" --file-prefix=afxdpcg -- --forward-mode=macswap \
			--nb-cores=1 --total-num-mbufs=8192 -a <"$out/in" >"$out/$be.$tag.log" 2>&1 &
	else
		ip netns exec $F env ${GOENV:-} "$@" "$out/uiod" run --config "$out/uiod.yaml" \
			<"$out/in" >"$out/$be.$tag.log" 2>&1 &
	fi
	fwpid=$!
	local t=0
	until [ "$(gen 10 ping 0.5 | awk '{print $2}')" = 10 ]; do
		t=$((t + 1))
		if [ $t -gt 100 ] || ! kill -0 $fwpid 2>/dev/null; then
			echo "$be ($tag): no answer" >&2
			tail -20 "$out/$be.$tag.log" >&2
			exit 1
		fi
		sleep 1
	done
}
stop() { # be tag
	if [ "$1" = dpdk ]; then
		echo >&7
	elif [ "$2" = native ]; then
		kill -TERM $fwpid
	fi # (callgrind fails an assertion on a signal to the Go process: killed)
	for _ in $(seq 300); do [ "$1$2" != uiodcg ] && kill -0 $fwpid 2>/dev/null || break; sleep 0.1; done
	kill -KILL $fwpid 2>/dev/null || true
	wait $fwpid 2>/dev/null || true
	exec 7>&-
	rm -rf /var/run/dpdk/afxdpcg
	sleep 1
}
ctx() { # pid: voluntary and involuntary context switches of all its threads
	cat /proc/$1/task/*/status 2>/dev/null | awk '/^voluntary_ctxt/{v+=$2} /^nonvoluntary_ctxt/{n+=$2} END {print v+0, n+0}'
}
ev=raw_syscalls:sys_enter,syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,syscalls:sys_enter_poll,syscalls:sys_enter_ppoll,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep,syscalls:sys_enter_clock_nanosleep,sched:sched_wakeup
count() { # pid file cmd...: perf's counts of $ev in pid while cmd runs, then "ctx vol invol" and "secs S"
	local pid=$1 f=$2
	shift 2
	local c0 c1 t0 t1
	c0=$(ctx $pid)
	t0=$(date +%s.%N)
	perf stat -x, -e $ev -p $pid -o "$f" &
	local pp=$!
	sleep 0.3
	"$@" >"$f.out"
	kill -INT $pp
	wait $pp || true
	t1=$(date +%s.%N)
	c1=$(ctx $pid)
	echo "ctx $c0 $c1" >>"$f"
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "secs %.3f\n", b - a - 0.3}' >>"$f"
}
native() { # be: the idle window's and the traffic's counts
	start "$1" native
	count $fwpid "$out/$1.idle" sleep "$idle"
	count $fwpid "$out/$1.traffic" gen "$frames" "$burst"
	stop "$1" native
}
callgrind() { # be
	local vg=(valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out/cg.$1")
	GOENV="GOGC=off GODEBUG=asyncpreemptoff=1" start "$1" cg "${vg[@]}"
	callgrind_control -z $fwpid >/dev/null
	sleep "$idle"
	callgrind_control -d $fwpid >/dev/null # dump 1: idle
	gen "$frames" "$burst" 5 >"$out/cg.$1.gen"
	callgrind_control -d $fwpid >/dev/null # dump 2: the traffic
	stop "$1" cg
}
for be in dpdk uiod; do
	native $be
	callgrind $be
done

python3 - "$out" "$frames" <<'PY'
import glob, re, subprocess, sys
from collections import defaultdict
out, want = sys.argv[1], int(sys.argv[2])

def perf(path):
    c = {}
    for line in open(path):
        p = line.strip().split(",")
        if line.startswith("ctx "):
            v0, n0, v1, n1 = map(int, line.split()[1:])
            c["vol"], c["invol"] = v1 - v0, n1 - n0
        elif line.startswith("secs "):
            c["secs"] = float(line.split()[1])
        elif len(p) > 2 and p[0].isdigit():
            k = p[2]
            c["raw_syscalls" if k.startswith("raw_syscalls") else k.split(":")[-1].replace("sys_enter_", "")] = int(p[0])
    c["pollish"] = sum(c.get(k, 0) for k in ("poll", "ppoll", "epoll_pwait"))
    c["sleeps"] = c.get("nanosleep", 0) + c.get("clock_nanosleep", 0)
    c["other"] = c["raw_syscalls"] - sum(c.get(k, 0) for k in ("sendto", "recvfrom", "futex")) - c["pollish"] - c["sleeps"]
    return c

cols = ["raw_syscalls", "sendto", "recvfrom", "pollish", "futex", "sleeps", "other", "vol", "invol", "sched_wakeup"]
head = ["syscalls", "sendto", "recvfrom", "poll*", "futex", "sleep", "other", "vol cs", "invol cs", "wakeups"]

def cgfile(path):
    """per file: total, and per function (name, ob) -> [calls, inclusive] over call sites from other objects/functions"""
    names, obs = {}, {}
    total = 0
    incl = defaultdict(lambda: [0, 0])
    ob = cob = fn = cfn = None
    in_call = False
    def nm(table, v):
        m = re.match(r"\((\d+)\)(?: (.*))?", v)
        if not m:
            return v
        if m.group(2) is not None:
            table[m.group(1)] = m.group(2)
        return table.get(m.group(1), "")
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("summary:"):
            total = int(line.split()[1])
        elif line.startswith("ob="):
            ob = nm(obs, line[3:])
        elif line.startswith("cob="):
            cob = nm(obs, line[4:])
        elif line.startswith("fn="):
            fn = re.sub(r"'\d+$", "", nm(names, line[3:]))
        elif line.startswith("cfn="):
            cfn = re.sub(r"'\d+$", "", nm(names, line[4:]))
        elif line.startswith("calls="):
            in_call = True
            n = int(line[6:].split()[0])
        elif in_call and line and (line[0].isdigit() or line[0] in "+-*"):
            callee_ob = cob if cob is not None else ob
            if cfn != fn:
                e = incl[(cfn, callee_ob, ob)]
                e[0] += n
                e[1] += int(line.split()[1])
            in_call, cob = False, None
    return total, incl

def gen(path):
    s, b = map(int, open(path).read().split())
    return s, b

res = {}
for be in ("dpdk", "uiod"):
    idle, tr = perf(f"{out}/{be}.idle"), perf(f"{out}/{be}.traffic")
    s, b = gen(f"{out}/{be}.traffic.out")
    res[be] = (idle, tr, b)
nat = dict(res)
print("native (perf tracepoints, /proc context switches):")
print("| forwarder | window | " + " | ".join(head) + " |")
print("|---|---|" + "---|" * len(head))
for be, (idle, tr, b) in res.items():
    print(f"| {be} | idle, per second | " + " | ".join(f"{idle.get(k, 0) / idle['secs']:.1f}" for k in cols) + " |")
    print(f"| {be} | traffic, per frame ({b} back, {tr['secs']:.2f} s) | " + " | ".join(f"{tr.get(k, 0) / b:.2f}" for k in cols) + " |")

print()
print("callgrind (user instructions; idle: the idle window, per call; traffic: per frame back):")
def dump(be, d):
    files = sorted(glob.glob(f"{out}/cg.{be}.{d}-*"))
    procs, agg = 0, defaultdict(lambda: [0, 0])
    for f in files:
        total, incl = cgfile(f)
        procs += total
        for k, v in incl.items():
            agg[k][0] += v[0]
            agg[k][1] += v[1]
    return files, procs, agg
def fold(agg, match):
    c = i = 0
    for k, v in agg.items():
        if match(k):
            c += v[0]
            i += v[1]
    return c, i
def fns(be, agg):
    """(rx calls, rx instructions, tx calls, tx instructions, names)"""
    if be == "dpdk":
        cand = sorted(((v[0], v[1], k[0]) for k, v in agg.items()
                       if "af_xdp" in (k[1] or "") and "testpmd" in (k[2] or "")), reverse=True)
        cand += [(0, 0, "?")] * 2
        (rc, r, rn), (tc, t, tn) = cand[0], cand[1]
        return rc, r, tc, t, f"PMD rx ({rn})", f"PMD tx ({tn})"
    return (fold(agg, lambda k: k[0].endswith("afxdp.(*Port).RxBurst")) + fold(agg, lambda k: k[0].endswith("afxdp.(*Port).TxBurst")) +
            ("Port.RxBurst", "Port.TxBurst"))
def cgincl(files, fn):
    tot = 0
    for f in files:
        o = subprocess.run(["python3", "bench/cgincl.py", f, fn], capture_output=True, text=True).stdout.split()
        tot += int(o[0]) if o else 0
    return tot
for be in ("dpdk", "uiod"):
    s, b = gen(f"{out}/cg.{be}.gen")
    bb = max(b, 1)
    ifiles, iprocs, iagg = dump(be, 1)
    irc, ir, _, _, _, _ = fns(be, iagg)
    files, procs, agg = dump(be, 2)
    rc, r, tc, t, rname, tname = fns(be, agg)
    empty_rx = ir / max(irc, 1)           # one empty receive call
    empty_turn = iprocs / max(irc, 1)     # the process's instructions per empty receive call
    full = tc                              # receive calls that brought frames: one send each
    rx_frames = (r - (rc - full) * empty_rx) / bb
    proc_frames = (procs - (rc - full) * empty_turn) / bb
    print(f"{be}: {s} sent, {b} back; {len(files)} threads")
    print(f"  idle: {irc} receive calls, {empty_rx:.1f} instructions each; the process {empty_turn:.1f} per receive call (an empty turn, all threads)")
    print(f"  {rname}: {r / bb:.1f} per frame with the empty calls ({rc} calls), {rx_frames:.1f} per frame without them")
    print(f"  {tname}: {t / bb:.1f} per frame ({tc} calls, {b / max(tc, 1):.2f} frames a call)")
    if be == "uiod":
        cg_empty = cgincl(ifiles, "afxdp.(*Port).RxBurst") / max(irc, 1)
        print(f"  cgincl (uiod code and runtime leaves only): empty RxBurst {cg_empty:.1f}, RxBurst {(cgincl(files, 'afxdp.(*Port).RxBurst') - (rc - full) * cg_empty) / bb:.1f} per frame without the empty calls, TxBurst {cgincl(files, 'afxdp.(*Port).TxBurst') / bb:.1f}")
    print(f"  the process: {procs / bb:.1f} per frame (all threads, empty turns included), {proc_frames:.1f} less the empty turns")
    res[be] = dict(rx=rx_frames, tx=t / bb, proc=proc_frames, empty=empty_rx, turn=empty_turn)
print()
d, u = res["dpdk"], res["uiod"]
print("uiod / DPDK: receive per frame %.2fx, send per frame %.2fx, receive+send %.2fx, process per frame less empty turns %.2fx, empty receive %.2fx, empty turn %.2fx" % (
    u["rx"] / d["rx"], u["tx"] / d["tx"], (u["rx"] + u["tx"]) / (d["rx"] + d["tx"]), u["proc"] / d["proc"], u["empty"] / d["empty"], u["turn"] / d["turn"]))
PY
