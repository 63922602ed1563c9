package vhost_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/daemon"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic/vhost"
)

// TestDaemonVhostMultiQueue runs a two-thread bridge over two vhost-user ports of two
// queue pairs each: the daemon spreads each port's RX queues over both poll threads, as
// it does a NIC's RSS queues (each queue has a kick vector of its own), and a front end
// that runs one pair only (a one-vCPU guest) still gets the frames of both threads, sent
// on TX queue 1 of its port, from the pair it runs. The frames come from the other front
// end's two pairs, so both threads forward.
func TestDaemonVhostMultiQueue(t *testing.T) {
	dir := t.TempDir()
	socks := []string{filepath.Join(dir, "vm1.sock"), filepath.Join(dir, "vm2.sock")}
	cfg, err := config.Read(strings.NewReader(fmt.Sprintf(`
ports:
  - {name: vm1, driver: vhost-user, socket: %s, rx_queues: 2, tx_queues: 2}
  - {name: vm2, driver: vhost-user, socket: %s, rx_queues: 2, tx_queues: 2}
forward: {mode: bridge}
poll: {mode: adaptive, wait_timeout: 5ms, cpus: [0, 1]}
`, socks[0], socks[1])))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Metrics.Listen, cfg.StateDir = "127.0.0.1:0", filepath.Join(dir, "state")
	d := daemon.New(cfg, daemon.Options{})
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	thread := map[string]int{}
	for _, q := range d.Status().Queues {
		thread[q.Name] = q.Thread
	}
	for _, p := range []string{"vm1", "vm2"} {
		a, okA := thread[p+"/rx0"]
		b, okB := thread[p+"/rx1"]
		if !okA || !okB || a == b {
			t.Fatalf("%s's RX queues not spread over the threads: %v", p, thread)
		}
	}
	fe1 := vhost.DialTestFrontendPairs(t, socks[0], 2)
	fe2 := vhost.DialTestFrontendPairs(t, socks[1], 1)
	if !testutil.WaitFor(10*time.Second, func() bool {
		st := d.Status()
		return st.Ports[0].LinkUp && st.Ports[1].LinkUp
	}) {
		t.Fatalf("links never came up: %+v", d.Status().Ports)
	}
	fe2.PostRx(64)
	bcast := func(q, i int) []byte {
		f := make([]byte, 60)
		copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 1, byte(q)})
		f[12], f[13], f[14], f[15] = 0x88, 0xb5, byte(q), byte(i)
		return f
	}
	const each = 8
	for i := range each {
		for q := range 2 {
			fe1.TransmitOn(q, i, bcast(q, i))
		}
	}
	var got [][]byte
	if !testutil.WaitFor(10*time.Second, func() bool {
		got = append(got, fe2.Received()...)
		return len(got) >= 2*each
	}) {
		t.Fatalf("vm2 received %d of %d frames; queues %+v", len(got), 2*each, d.Status().Queues)
	}
	for q := range 2 {
		for i := range each {
			n := 0
			for _, f := range got {
				if bytes.Equal(f, bcast(q, i)) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("frame %d of pair %d reached vm2 %d times", i, q, n)
			}
		}
	}
	// Each of vm1's RX queues took its pair's frames (the threads publish their counters
	// when they sleep: wait for them).
	var st daemon.Status
	if !testutil.WaitFor(10*time.Second, func() bool {
		st = d.Status()
		n := 0
		for _, q := range st.Queues {
			if strings.HasPrefix(q.Name, "vm1/") && q.RxPackets == each {
				n++
			}
		}
		return n == 2
	}) {
		t.Errorf("vm1's queues did not take %d frames each: %+v", each, st.Queues)
	}
	if s := st.Ports[1].Stats; s.TxPackets != 2*each || s.TxErrors != 0 {
		t.Errorf("vm2 %+v", s)
	}
}
