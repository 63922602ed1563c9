package vhost_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/qemutest"
)

// TestIntegrationQEMUJumbo boots a QEMU guest whose virtio-net-pci (host_mtu=9000) is
// backed by uiod's vhost-user port of MTU 9000, l2fwd-paired with a model NIC of MTU 9000
// behind which a peer answers pings: the guest's virtio_net comes up at MTU 9000 (QEMU's
// VIRTIO_NET_F_MTU, which the back end offers, and its NET_SET_MTU, which it takes), and
// pings of 8972 bytes (9014-byte frames, one IP packet each) come back.
func TestIntegrationQEMUJumbo(t *testing.T) { runQEMUJumbo(t, 9000) }

// TestIntegrationQEMUJumboRefused is TestIntegrationQEMUJumbo with uiod's port at MTU 1500:
// QEMU's NET_SET_MTU 9000 is refused, QEMU reports it and does not start the back end.
func TestIntegrationQEMUJumboRefused(t *testing.T) { runQEMUJumbo(t, 1500) }

func runQEMUJumbo(t *testing.T, portMTU int) {
	h := newQEMUHost(t, "uiodvqj", "")
	wireName := fmt.Sprintf("vhqemuj%d", os.Getpid())
	cfg := h.config(t, fmt.Sprintf(`
ports:
  - {name: nic, driver: sim, wire: "pair:%s", promiscuous: true, mtu: 9000}
  - {name: vm, driver: vhost-user, socket: %s, mtu: %d}
forward: {mode: l2fwd, pairs: [[nic, vm]]}
poll: {mode: adaptive}
`, wireName, h.sock, portMTU))
	p := startPeer(t, wireName)
	d := startDaemon(t, cfg)
	defer func() { d.Stop() }()
	script := guestIF + `echo "guest mtu $(cat /sys/class/net/$IF/mtu)"
ip link set "$IF" mtu 9000
` + guestUp + `ping -c 2 -W 10 10.22.0.1
ping -c 5 -W 10 -s 8972 10.22.0.1
echo "jumbo ping exit $?"
echo "rx_packets $(cat /sys/class/net/$IF/statistics/rx_packets) tx_packets $(cat /sys/class/net/$IF/statistics/tx_packets)"`
	if portMTU < 9000 {
		// One ping is enough to show nothing passes (each unanswered one waits -W).
		script = guestIF + guestUp + `ping -c 1 -W 2 10.22.0.1
echo "ping exit $?"`
	}
	vm := qemutest.Start(t, qemutest.Options{
		Kernel:    h.kernel,
		NICs:      1,
		VhostUser: h.sock,
		VhostMTU:  9000,
		Timeout:   4 * time.Minute,
		Script:    script,
	})
	r, err := vm.Wait()
	if portMTU < 9000 {
		// QEMU does not start the back end whose NET_SET_MTU failed: the guest's frames
		// never reach uiod.
		if err != nil {
			t.Fatal(err)
		}
		vmStats := d.Status().Ports[1].Stats
		t.Logf("guest output:\n%s\nvhost-user port %+v", r.Output, vmStats)
		if !strings.Contains(r.Console, "9000Bytes MTU not supported by the backend") {
			t.Errorf("QEMU did not report the refused MTU; console:\n%s", r.Console)
		}
		if !strings.Contains(r.Output, "ping exit 1") || vmStats.RxPackets != 0 || vmStats.TxPackets != 0 {
			t.Errorf("frames went through a back end that refused the guest's MTU: %+v", vmStats)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	st := d.Status()
	t.Logf("guest (boot %v, script %v):\n%s\nuiod ports %+v\nqueues %+v\npeer: %d echo requests, longest frame %d bytes",
		r.Boot, r.Script, r.Output, st.Ports, st.Queues, p.echoes.Load(), p.maxEcho.Load())
	if !strings.Contains(r.Output, "guest mtu 9000") {
		t.Errorf("the guest's virtio_net did not come up at host_mtu 9000:\n%s", r.Output)
	}
	if !strings.Contains(r.Output, "jumbo ping exit 0") {
		t.Fatalf("the guest's 8972-byte pings did not come back:\n%s\nconsole:\n%s", r.Output, r.Console)
	}
	if got := p.maxEcho.Load(); got != 9014 {
		t.Errorf("longest echo request %d bytes, want 9014 (one unfragmented packet)", got)
	}
	noPortErrors(t, st.Ports[1])
}
