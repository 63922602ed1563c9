package vhost_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/daemon"
	"github.com/uiod/uiod/testrig/qemutest"
)

// TestIntegrationQEMUMultiQueue boots a two-vCPU QEMU guest on `-netdev
// vhost-user,queues=2` and `virtio-net-pci,mq=on` against a two-pair uiod port (QEMU
// refuses queues=2 against a back end without VHOST_USER_PROTOCOL_F_MQ and GET_QUEUE_NUM
// 2): the guest's virtio_net comes up with two queue pairs, and pings from each vCPU,
// pinned to its own TX queue by XPS, reach the peer behind the model NIC, through uiod's
// RX queue 0 and RX queue 1 of the vhost-user port.
func TestIntegrationQEMUMultiQueue(t *testing.T) {
	h := newQEMUHost(t, "uiodvm", "boots a two-vCPU QEMU guest; not in -short")
	wireName := fmt.Sprintf("vhqemumq%d", os.Getpid())
	p := startPeer(t, wireName)
	d := startDaemon(t, h.config(t, fmt.Sprintf(`
ports:
  - {name: nic, driver: sim, wire: "pair:%s", promiscuous: true, rx_queues: 2, tx_queues: 2}
  - {name: vm, driver: vhost-user, socket: %s, rx_queues: 2, tx_queues: 2}
forward: {mode: l2fwd, pairs: [[nic, vm]]}
poll: {mode: adaptive}
`, wireName, h.sock)))
	defer d.Stop()
	r := qemutest.Run(t, qemutest.Options{
		Kernel: h.kernel, NICs: 1, CPUs: 2, VhostUser: h.sock, VhostQueues: 2, Timeout: 4 * time.Minute,
		Script: guestIF + `echo "queues $(ls /sys/class/net/$IF/queues | tr '\n' ' ')"
echo 1 >/sys/class/net/$IF/queues/tx-0/xps_cpus
echo 2 >/sys/class/net/$IF/queues/tx-1/xps_cpus
` + guestUp + `taskset 1 ping -c 5 -W 10 10.22.0.1 >/dev/null; echo "cpu0 ping exit $?"
taskset 2 ping -c 5 -W 10 10.22.0.1 >/dev/null; echo "cpu1 ping exit $?"`,
	})
	st := d.Status()
	t.Logf("guest (boot %v, script %v):\n%s\nuiod queues %+v\npeer: %d echo requests", r.Boot, r.Script, r.Output, st.Queues, p.echoes.Load())
	for _, want := range []string{"queues rx-0 rx-1 tx-0 tx-1", "cpu0 ping exit 0", "cpu1 ping exit 0"} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("guest output lacks %q:\n%s\nconsole:\n%s", want, r.Output, r.Console)
		}
	}
	var vmq []daemon.QueueStatus
	for _, q := range st.Queues {
		if strings.HasPrefix(q.Name, "vm/") {
			vmq = append(vmq, q)
		}
	}
	if len(vmq) != 2 {
		t.Fatalf("vm has %d RX queues in /status, want 2: %+v", len(vmq), st.Queues)
	}
	for _, q := range vmq {
		if q.RxPackets == 0 {
			t.Errorf("%s carried no frame from the guest: %+v", q.Name, vmq)
		}
	}
	noPortErrors(t, st.Ports[1])
}
