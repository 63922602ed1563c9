#!/bin/bash
# vhostdpdkcg.sh: uiod's vhost-user back end and DPDK testpmd's net_vhost, each under
# valgrind's callgrind, behind the same native virtio-user front end (dpdk-testpmd in io
# forwarding with --tx-first: one burst of 32 64-byte frames then circulates between the
# two ends as fast as the back end returns it). The back end is stopped first; the frames
# are the front end's own counters (its RX = what the back end sent, its TX = what it was
# given), the same count for both back ends.
#
#   bash bench/vhostdpdkcg.sh [seconds=60] [fwd|rx|idle]
#
# rx: the front end in txonly mode instead (it never takes frames back): the back end's
# receive at full bursts, its send finding no room (only the receive figures count).
# idle: no frame at all (io without --tx-first): the cost of an empty receive call, which
# the fwd figures include (printed as instructions per call).        (root; dpdk-testpmd, valgrind)
#
# Printed per back end: frames, the instructions of its receive and send functions per
# frame (uiod: Port.RxBurst and Port.TxBurst, counted by bench/cgincl.py; DPDK:
# rte_vhost_dequeue_burst and rte_vhost_enqueue_burst, inclusive; the net_vhost PMD's
# own eth_vhost_rx/tx wrappers have no symbol in Debian's build and are not in them), their
# calls per frame, and the instructions per forwarded frame of the back end's busiest
# thread (the poll thread or forwarding lcore: everything it ran, empty polls included).
set -euo pipefail
secs=${1:-60}
mode=${2:-fwd} # fwd: the front end circulates one burst (io --tx-first); rx: it sends without end (txonly)
fefwd="--forward-mode=io --tx-first"
[ "$mode" = rx ] && fefwd="--forward-mode=txonly"
[ "$mode" = idle ] && fefwd="--forward-mode=io"
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${CGOUT:-/tmp/vhostdpdkcg}
rm -rf "$out" && mkdir -p "$out"
cd "$repo"
go build -o "$out/uiod" ./cmd/uiod

frontend() { # sock prefix
	dpdk-testpmd --lcores 0@1,1@1 --no-pci --no-huge -m 512 --file-prefix "$2" \
		--vdev "net_virtio_user0,path=$1,queues=1" -- $fefwd \
		--total-num-mbufs=4096 --nb-cores=1 -a <"$out/fe.in" >"$out/fe.$2.log" 2>&1 &
	echo $!
}
frames() { # log: the front end's final RX-packets and TX-packets (Forward statistics)
	awk '/Forward statistics for port 0/{p=1} p&&/RX-packets:/{rx=$2} p&&/TX-packets:/{tx=$2; print rx, tx; exit}' "$1"
}
incl() { # file function: callgrind_annotate's inclusive count (C code: no goroutines)
	{ callgrind_annotate --inclusive=yes "$1" 2>/dev/null || true; } | { grep -E " $2( |$)|:$2 " || true; } | head -1 | awk '{gsub(",","",$1); print $1+0}'
}
calls() { # file function: calls of function (the sum of every calls= line into it)
	python3 - "$1" "$2" <<'PY'
import re, sys
names, want, n, cur = {}, sys.argv[2], 0, None
for line in open(sys.argv[1]):
    if line.startswith("cfn="):
        m = re.match(r"cfn=\((\d+)\)(?: (.*))?", line.rstrip())
        if m.group(2): names[m.group(1)] = m.group(2)
        cur = names.get(m.group(1), "")
    elif line.startswith("fn="):
        m = re.match(r"fn=\((\d+)\)(?: (.*))?", line.rstrip())
        if m.group(2): names[m.group(1)] = m.group(2)
    elif line.startswith("calls=") and re.sub(r"'\d+$", "", cur).endswith(want):
        n += int(line[6:].split()[0])
print(n)
PY
}
busiest() { # prefix: the largest per-thread total of a --separate-threads run
	for f in "$1"-*; do awk '/^summary:/{print $2}' "$f"; done | sort -n | tail -1 || true
}

for be in dpdk uiod; do
	sock=$out/$be.sock
	rm -f "$out/fe.in" "$out/be.in" && mkfifo "$out/fe.in" "$out/be.in"
	exec 7<>"$out/fe.in" 8<>"$out/be.in" # held open: the testpmds wait on stdin
	if [ $be = dpdk ]; then
		valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out/cg.dpdk" \
			dpdk-testpmd -l 0-1 --main-lcore=1 --no-pci --no-huge -m 512 --file-prefix vhcgbe \
			--vdev "net_vhost0,iface=$sock,queues=1" -- --forward-mode=io --total-num-mbufs=8192 \
			--nb-cores=1 -a <"$out/be.in" >"$out/be.dpdk.log" 2>&1 &
	else
		cat >"$out/uiod.yaml" <<EOC
state_dir: $out/state
metrics: {listen: "127.0.0.1:0"}
ports:
  - {name: vm, driver: vhost-user, socket: $sock}
forward: {mode: reflect}
poll: {mode: busy, cpus: [0]}
EOC
		GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --separate-threads=yes \
			--callgrind-out-file="$out/cg.uiod" "$out/uiod" run --config "$out/uiod.yaml" \
			>"$out/be.uiod.log" 2>&1 &
	fi
	bepid=$!
	for _ in $(seq 600); do [ -S "$sock" ] && break; sleep 0.1; done
	[ -S "$sock" ] || { echo "$be: no socket $sock" >&2; cat "$out/be.$be.log" >&2; exit 1; }
	sleep 2
	fepid=$(frontend "$sock" "vhcgfe$be")
	sleep "$secs"
	if [ $be = dpdk ]; then
		echo >&8
	else # callgrind fails an assertion on a signal to the Go process: dump on request, then kill
		callgrind_control -d "$bepid" >/dev/null
		kill -KILL "$bepid"
	fi
	wait "$bepid" || true
	echo >&7
	for _ in $(seq 100); do kill -0 "$fepid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$fepid" 2>/dev/null || true
	exec 7>&- 8>&-
	rm -rf /var/run/dpdk/vhcgbe /var/run/dpdk/vhcgfe$be
	read -r rx tx < <(frames "$out/fe.vhcgfe$be.log") || { echo "$be: no front-end statistics" >&2; exit 1; }
	[ "$mode" != fwd ] || [ "$rx" -gt 0 ] || { echo "$be: the front end received nothing" >&2; exit 1; }

	rx=$((rx > 0 ? rx : 1))
	if [ $be = dpdk ]; then
		r=0 t=0
		for f in "$out"/cg.dpdk-*; do
			a=$(incl "$f" rte_vhost_dequeue_burst); r=$((r + ${a:-0}))
			b=$(incl "$f" rte_vhost_enqueue_burst); t=$((t + ${b:-0}))
		done
		rc=0 tc=0
		for f in "$out"/cg.dpdk-*; do
			rc=$((rc + $(calls "$f" rte_vhost_dequeue_burst))); tc=$((tc + $(calls "$f" rte_vhost_enqueue_burst)))
		done
		rname=rte_vhost_dequeue_burst tname=rte_vhost_enqueue_burst
	else
		r=0 t=0 rc=0 tc=0
		for f in "$out"/cg.uiod.1-*; do
			a=$(python3 bench/cgincl.py "$f" 'vhost.(*Port).RxBurst' | awk '{s+=$1} END {print s+0}'); r=$((r + a))
			b=$(python3 bench/cgincl.py "$f" 'vhost.(*Port).TxBurst' | awk '{s+=$1} END {print s+0}'); t=$((t + b))
			rc=$((rc + $(calls "$f" 'vhost.(*Port).RxBurst'))); tc=$((tc + $(calls "$f" 'vhost.(*Port).TxBurst')))
		done
		rname='Port.RxBurst' tname='Port.TxBurst'
	fi
	if [ "$mode" = idle ]; then
		echo "$be: idle, $rname: $r instructions in $rc calls, $((r / (rc > 0 ? rc : 1))) per call"
		continue
	fi
	top=$(busiest "$out/cg.$be$([ $be = uiod ] && echo .1)")
	awk -v be=$be -v rx="$rx" -v tx="$tx" -v r=$r -v t=$t -v rc=$rc -v tc=$tc -v top="$top" -v rn="$rname" -v tn="$tname" 'BEGIN {
		printf "%s: front end sent %d, received %d frames\n", be, tx, rx
		printf "  %s: %.1f instructions per frame taken (%d calls, %.2f frames a call)\n", rn, r / tx, rc, tx / rc
		printf "  %s: %.1f instructions per frame sent (%d calls, %.2f frames a call)\n", tn, t / rx, tc, rx / tc
		printf "  busiest thread: %.1f instructions per forwarded frame\n", top / rx }'
done
