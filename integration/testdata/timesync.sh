# Guest side of TestIntegrationTimesyncLatency and TestIntegrationTimesyncDelay (see
# timesync_test.go): four igb, NICs 1-2 on one QEMU hub (or the host's delaying relay)
# and 3-4 on another; UIOD_TS_POLICIES lists the DUT's policies (default busy adaptive auto;
# auto is adaptive with idle_threshold auto, the default policy). uiod latency --timestamps
# hw drives NICs 1 and 4 on vfio-pci; `uiod run` forwards l2fwd between NICs 2 and 3
# (vfio-pci), once per policy. bench/dpdk's TestDPDKTimesync runs this after its testpmd
# part, in the same guest. Every line the host reads starts with "TS ".
set -u
TAG=TS
. /etc/uiod/lib.sh
loopback_up
timesync_nics
say "bound $(driver "$gtx") $(driver "$din") $(driver "$dout") $(driver "$grx")"
for pol in ${UIOD_TS_POLICIES:-busy adaptive auto}; do
	{
		conf_head info
		conf_msix_port p0 "$din" igb "promiscuous: true"
		conf_msix_port p1 "$dout" igb "promiscuous: true"
		conf_l2fwd p0 p1
		case $pol in
		auto) conf_poll adaptive auto ;;
		*) conf_poll "$pol" 300us ;;
		esac
	} >/tmp/ts.yaml
	run_daemon /tmp/ts.yaml
	wait_links 2 60
	timeout 180 uiod latency --ports "$gtx,$grx" --timestamps hw --count 300 --interval 2ms --label "$pol" \
		--json "/tmp/lat-$pol.json" >"/tmp/lat-$pol.txt" 2>&1 || fail "uiod latency ($pol): $(cat "/tmp/lat-$pol.txt")"
	sed "s|^|$TAG latency $pol |" "/tmp/lat-$pol.txt"
	status || fail "wget /status"
	say "STATUS $pol $(tr -d '\n ' </tmp/status.json | grep -o '"port":"p[01]","wake":"[a-z]*","count":[0-9]*' | tr '\n' ' ')"
	stop_daemon "$pol" >/dev/null
done
say "done"
