# Guest side of TestDPDKTimesync (timesync_test.go), its testpmd part: four igb, NICs 1-2 on
# one QEMU hub and 3-4 on another. DPDK's testpmd (io forwarding, paired) forwards between
# NICs 2 and 3 on vfio-pci while uiod latency --ports NIC1,NIC4 --timestamps hw measures
# through it on the NICs' clocks. The test appends integration/testdata/timesync.sh, which
# measures uiod's l2fwd on the same NICs, policy by policy, and says done. Every line the
# host reads starts with "TS ".
set -u
TAG=TS RUNLOG=/tmp/fw.log LOGTAIL=40
. /etc/uiod/lib.sh
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu
loopback_up
chmod go-w / /usr /usr/lib /usr/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/dpdk 2>/dev/null
mkdir -p /var/run /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null
timesync_nics
say "bound"
rm -f /tmp/tp.in && mkfifo /tmp/tp.in
sleep 100000 >/tmp/tp.in &
FIFOPID=$!
dpdk-testpmd -l 0,1 -n 1 --in-memory --no-telemetry --iova-mode=va -m 256 -a "$din" -a "$dout" -- \
	--forward-mode=io --auto-start --nb-cores=1 --rxq=1 --txq=1 --port-topology=paired </tmp/tp.in >/tmp/fw.log 2>&1 &
PID=$!
wait_line /tmp/fw.log "Press enter to exit" testpmd 120
say "testpmd started"
timeout 180 uiod latency --ports "$gtx,$grx" --timestamps hw --count 300 --interval 2ms --label testpmd \
	>/tmp/lat.txt 2>&1 || fail "uiod latency: $(cat /tmp/lat.txt)"
sed "s|^|$TAG latency |" /tmp/lat.txt
kill -INT "$PID"
wait_exit testpmd 60
kill "$FIFOPID" 2>/dev/null
PID=
say "testpmd done"
