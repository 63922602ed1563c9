# Guest side of TestIntegrationVirtioRunMultiQueue (see virtio_mq_run_test.go), run by the
# qemutest /init as root in /tmp: bind the virtio-net NIC (on a 2-queue host TAP) to
# vfio-pci and run `uiod run` on it with 2 queue pairs, reflect, one adaptive poll thread
# per queue on CPUs 0 and 1, while the host sends flows into the TAP; take a snapshot
# whenever the host names one, then stop the daemon with SIGTERM and give the NIC back.
# Every line the host reads starts with "E2E "; it makes the assertions.
set -u
NIC=$(echo "$UIOD_GUEST_NICS" | cut -d' ' -f1)
PID=
say() { echo "E2E $*"; }
fail() {
	say "FAIL $*"
	[ -f /tmp/run.log ] && sed 's/^/E2E log /' /tmp/run.log
	[ -n "$PID" ] && kill -TERM "$PID" && wait "$PID"
	exit 1
}
snapshot() {
	grep -E 'vfio' /proc/interrupts | sed "s/^/E2E irq $1 /"
	wget -q -O /tmp/status.json http://127.0.0.1:9477/status || fail "wget /status"
	say "STATUS-BEGIN $1"
	cat /tmp/status.json
	say "STATUS-END $1"
	say "snapshot $1 taken"
}

say "nic $NIC kernel=$UIOD_GUEST_KERNEL cpus=$(grep -c ^processor /proc/cpuinfo)"
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up || fail "loopback up"
uiod bind --driver vfio-pci "$NIC" || fail "uiod bind --driver vfio-pci $NIC"
cat >/tmp/mq.yaml <<EOF
log:
  level: info
metrics:
  listen: 127.0.0.1:9477
ports:
  - name: p0
    driver: vfio-pci
    pci: "$NIC"
    nic: virtio
    interrupts: msix
    promiscuous: true
    rx_queues: 2
    tx_queues: 2
forward:
  mode: reflect
poll:
  mode: adaptive
  idle_threshold: 300us
  wait_timeout: 1s
  cpus: [0, 1]
EOF
uiod config validate /tmp/mq.yaml || fail "uiod config validate"
uiod run --config /tmp/mq.yaml >/tmp/run.log 2>&1 &
PID=$!
i=0
until wget -q -O /tmp/status.json http://127.0.0.1:9477/status 2>/dev/null &&
	grep -q '"link_up": true' /tmp/status.json; do
	kill -0 "$PID" 2>/dev/null || fail "uiod run exited before it was ready"
	i=$((i + 1))
	[ $i -lt 300 ] || fail "no /status with the link up after 60s: $(cat /tmp/status.json 2>/dev/null)"
	sleep 0.2
done
snapshot start
say READY
while read -r cmd <"$UIOD_GUEST_CONTROL"; do
	[ "$cmd" = done ] && break
	snapshot "$cmd"
done
kill -TERM "$PID"
wait "$PID"
say "run-exit=$?"
PID=
sed 's/^/E2E log /' /tmp/run.log
uiod unbind --restore "$NIC" || fail "uiod unbind --restore"
