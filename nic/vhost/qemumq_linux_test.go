package vhost_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/config"
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
	k, err := qemutest.SharedKernel()
	if err != nil {
		t.Skip("no guest kernel with virtio_net built in: ", err)
	}
	if testing.Short() {
		t.Skip("boots a two-vCPU QEMU guest; not in -short")
	}
	dir, err := os.MkdirTemp("", "uiodvm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "vm.sock")
	wireName := fmt.Sprintf("vhqemumq%d", os.Getpid())
	cfg, err := config.Read(strings.NewReader(fmt.Sprintf(`
ports:
  - {name: nic, driver: sim, wire: "pair:%s", promiscuous: true, rx_queues: 2, tx_queues: 2}
  - {name: vm, driver: vhost-user, socket: %s, rx_queues: 2, tx_queues: 2}
forward: {mode: l2fwd, pairs: [[nic, vm]]}
poll: {mode: adaptive}
`, wireName, sock)))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Metrics.Listen, cfg.StateDir = "127.0.0.1:0", filepath.Join(dir, "state")
	p := startPeer(t, wireName)
	d := daemon.New(cfg, daemon.Options{})
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	r := qemutest.Run(t, qemutest.Options{
		Kernel: k, NICs: 1, CPUs: 2, VhostUser: sock, VhostQueues: 2, Timeout: 4 * time.Minute,
		Script: `for d in /sys/class/net/*; do n=${d##*/}; [ "$n" = lo ] || IF=$n; done
echo "queues $(ls /sys/class/net/$IF/queues | tr '\n' ' ')"
echo 1 >/sys/class/net/$IF/queues/tx-0/xps_cpus
echo 2 >/sys/class/net/$IF/queues/tx-1/xps_cpus
ip link set "$IF" up
ip addr add 10.22.0.2/24 dev "$IF"
taskset 1 ping -c 5 -W 10 10.22.0.1 >/dev/null; echo "cpu0 ping exit $?"
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
	if s := st.Ports[1].Stats; s.RxErrors != 0 || s.TxErrors != 0 {
		t.Errorf("vhost-user port errors: %+v", s)
	}
}
