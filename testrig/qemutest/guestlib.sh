# Shell functions for the guest scripts: qemutest installs this file in every initramfs as
# /etc/uiod/lib.sh, and a script sources it with `. /etc/uiod/lib.sh`. Set before sourcing
# where the defaults do not fit:
#
#	TAG      the first word of every line the host reads (default E2E)
#	RUNLOG   the daemon's log (default /tmp/run.log)
#	LOGTAIL  how many of the log's last lines fail prints (default all of it)
#
# PID is the daemon's process while one runs; its metrics endpoint is METRICS.
TAG=${TAG:-E2E}
RUNLOG=${RUNLOG:-/tmp/run.log}
METRICS=127.0.0.1:9477
PID=

# say prints one line for the host.
say() { echo "$TAG $*"; }

# stop stops the daemon with SIGTERM and waits for it. A script may define its own after
# sourcing this file; fail calls whichever is defined.
stop() { [ -n "$PID" ] && kill -TERM "$PID" && wait_exit daemon 60; }

# running PROC: whether the process PROC is alive (a zombie, exited but not yet waited
# for, is not). Shell builtins only: the callers poll it. PROC can be reaped at any moment
# (the shell reaps its own children when it likes), so the status file is opened once and
# a failed open is the answer "gone", not a message: testing for the file first would
# leave a window between the test and the open.
running() {
	{
		while read -r _rk _rv _; do
			[ "$_rk" = State: ] || continue
			[ "$_rv" != Z ]
			return
		done <"/proc/$1/status"
	} 2>/dev/null
	return 1
}

# exited_within PROC SECONDS: whether the process PROC is gone within SECONDS (polled
# every 50 ms; it does not reap PROC).
exited_within() {
	_i=0
	while running "$1"; do
		_i=$((_i + 1))
		[ $_i -lt $(($2 * 20)) ] || return 1
		sleep 0.05
	done
}

# wait_exit WHAT SECONDS waits for the process PID to exit and returns its exit status.
# A process still running after SECONDS is reported (WHAT, its state and kernel stack),
# killed and failed: no wait in a guest script is unbounded.
wait_exit() {
	if ! exited_within "$PID" "$2"; then
		say "HANG $1 (pid $PID) still running after $2 s: $(grep -E '^(State|Threads):' "/proc/$PID/status" 2>/dev/null | tr '\n\t' '  ')"
		for s in /proc/"$PID"/task/*/stack; do say "HANG stack $s: $(tr '\n' ' ' 2>/dev/null <"$s")"; done
		kill -KILL "$PID" 2>/dev/null
		wait "$PID" 2>/dev/null
		PID=
		fail "$1 did not exit within $2 s"
	fi
	wait "$PID"
}

# fail reports a failure and the daemon's log, stops the daemon and exits 1.
fail() {
	say "FAIL $*"
	if [ -f "$RUNLOG" ]; then
		if [ -n "${LOGTAIL:-}" ]; then tail -n "$LOGTAIL" "$RUNLOG"; else cat "$RUNLOG"; fi | sed "s/^/$TAG log /"
	fi
	stop
	exit 1
}

# nic N prints the N-th (from 1) address of UIOD_GUEST_NICS.
nic() { echo "$UIOD_GUEST_NICS" | cut -d' ' -f"$1"; }

# bind_vfio [OPTION...] ADDR... binds the PCI functions ADDR to vfio-pci with `uiod bind`
# (OPTION such as --noiommu first); it fails the run if that does.
bind_vfio() { uiod bind --driver vfio-pci "$@" || fail "uiod bind --driver vfio-pci $*"; }

# timesync_nics sets gtx, din, dout and grx to the guest's NICs 1 to 4 (the latency
# generator's TX port, the forwarder's in and out, the generator's RX port: NICs 1-2 share
# one wire, 3-4 another) and binds the four to vfio-pci; it fails with fewer than four.
timesync_nics() {
	gtx=$(nic 1) din=$(nic 2) dout=$(nic 3) grx=$(nic 4)
	[ -n "$grx" ] || fail "want four igb in '$UIOD_GUEST_NICS'"
	bind_vfio "$gtx" "$din" "$dout" "$grx"
}

# driver ADDR prints the driver the PCI function ADDR is bound to, nothing when none.
driver() { [ -e "/sys/bus/pci/devices/$1/driver" ] && basename "$(readlink "/sys/bus/pci/devices/$1/driver")"; }

# loopback_up brings lo up: the daemon's metrics endpoint listens on 127.0.0.1.
loopback_up() { ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up || fail "loopback up"; }

# conf_head LEVEL prints the start of a daemon configuration: log level, metrics endpoint,
# and the "ports:" key for the port list that follows.
conf_head() {
	cat <<CONF
log:
  level: $1
metrics:
  listen: $METRICS
ports:
CONF
}

# conf_vfio_port NAME ADDR prints the start of a port list entry: the port NAME on the PCI
# function ADDR under vfio-pci; the caller adds the rest of its keys.
conf_vfio_port() {
	printf '  - name: %s\n    driver: vfio-pci\n    pci: "%s"\n' "$1" "$2"
}

# conf_msix_port NAME ADDR NIC [KEYS] prints a one-line port list entry: the port NAME on
# the PCI function ADDR under vfio-pci, driven by the NIC driver NIC with MSI-X, and KEYS
# (such as "promiscuous: true") when given.
conf_msix_port() {
	printf '  - {name: %s, driver: vfio-pci, pci: "%s", nic: %s, interrupts: msix%s}\n' "$1" "$2" "$3" "${4:+, $4}"
}

# conf_poll MODE THRESHOLD [CPUS] prints a configuration's poll section: idle policy MODE
# with idle threshold THRESHOLD, a 1 s wait timeout (long, so that a sleeping poll thread
# is woken by the NICs' interrupts, not by its timer), and the poll threads' CPUs when
# given (comma-separated).
conf_poll() {
	cat <<CONF
poll:
  mode: $1
  idle_threshold: $2
  wait_timeout: 1s
CONF
	[ -z "${3:-}" ] || echo "  cpus: [$3]"
}

# conf_l2fwd A B [C D ...] prints a configuration's forward section: l2fwd between the
# ports A and B, C and D, and so on.
conf_l2fwd() {
	printf 'forward:\n  mode: l2fwd\n  pairs:\n'
	while [ $# -ge 2 ]; do
		printf '    - [%s, %s]\n' "$1" "$2"
		shift 2
	done
}

# status fetches the daemon's /status into /tmp/status.json.
status() { wget -q -O /tmp/status.json "http://$METRICS/status" 2>/dev/null; }

# run_daemon CONFIG validates CONFIG and starts `uiod run` on it in the background (PID),
# its output going to RUNLOG.
run_daemon() {
	uiod config validate "$1" || fail "uiod config validate $1: $(cat "$1")"
	uiod run --config "$1" >"$RUNLOG" 2>&1 &
	PID=$!
}

# wait_line FILE PATTERN WHAT SECONDS waits until FILE has a line matching PATTERN; it fails,
# naming WHAT and with FILE's tail, when the process PID exits first or after SECONDS.
wait_line() {
	i=0
	until grep -q "$2" "$1" 2>/dev/null; do
		kill -0 "$PID" 2>/dev/null || fail "$3 exited: $(tail -n 20 "$1" 2>/dev/null)"
		i=$((i + 1))
		[ $i -lt $(($4 * 5)) ] || fail "$3 not ready after $4 s: $(tail -n 20 "$1" 2>/dev/null)"
		sleep 0.2
	done
}

# wait_links N SECONDS waits until the daemon's /status shows N links up; it fails when
# the daemon exits first or after SECONDS.
wait_links() {
	i=0
	until status && [ "$(grep -c '"link_up": true' /tmp/status.json)" = "$1" ]; do
		kill -0 "$PID" 2>/dev/null || fail "the daemon exited before it was ready"
		i=$((i + 1))
		[ $i -lt $(($2 * 5)) ] || fail "no /status with $1 links up after $2 s: $(cat /tmp/status.json 2>/dev/null)"
		sleep 0.2
	done
}

# snapshot NAME prints the interrupt counts of the vfio MSI-X vectors and of
# uio_pci_generic's INTx lines and the daemon's /status, under NAME.
snapshot() {
	grep -E 'vfio|uio' /proc/interrupts | sed "s|^|$TAG irq $1 |"
	status || fail "wget /status"
	say "STATUS-BEGIN $1"
	cat /tmp/status.json
	say "STATUS-END $1"
	say "snapshot $1 taken"
}

# serve_snapshots END takes a snapshot named after each line the host sends on the control
# port, until the host sends END; cmd is then END.
serve_snapshots() {
	while read -r cmd <"$UIOD_GUEST_CONTROL"; do
		[ "$cmd" = "$1" ] && break
		snapshot "$cmd"
	done
}

# stop_daemon [NAME] stops the daemon with SIGTERM and prints its exit status
# ("run-exit=N") and its log, both followed by NAME when given.
stop_daemon() {
	kill -TERM "$PID"
	wait_exit "the daemon${1:+ ($1)}" 60
	say "run-exit=$?${1:+ $1}"
	PID=
	sed "s|^|$TAG log ${1:+$1 }|" "$RUNLOG"
}
