package vhost_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/daemon"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/vhost"
	"github.com/uiod/uiod/wire"
)

// TestDPDKJumbo runs DPDK's virtio-user (dpdk-testpmd, mrg_rxbuf=1, --max-pkt-len 9018,
// 2 KiB mbufs chained by RX scatter) in macswap mode against a vhost-user port of MTU
// 9000 driven by the test itself: 9014-byte frames sent with TxBurst are spread over
// testpmd's 2 KiB receive buffers, come back as one chain each, and are received whole,
// byte for byte, with the MACs swapped.
func TestDPDKJumbo(t *testing.T) {
	bin := testpmdBin(t)
	p, sock := dpdkPort(t, vhost.Config{MTU: 9000, PoolSize: 512})
	tp := &testpmd{t: t, bin: bin, sock: sock, mode: "macswap", prefix: fmt.Sprintf("uiodvhj%d", os.Getpid()),
		vdev: fmt.Sprintf("net_virtio_user0,path=%s,queues=1,mrg_rxbuf=1", sock),
		args: []string{"--max-pkt-len=9018", "--enable-scatter", "--mbuf-size=2176"}}
	tp.start()
	defer tp.kill()
	if !testutil.WaitFor(30*time.Second, func() bool { return p.Link().Up }) {
		t.Fatalf("link never came up; testpmd:\n%s", tp.log)
	}
	pool, err := nic.NewMempool(&nic.HeapDMA{}, 64, 16384)
	if err != nil {
		t.Fatal(err)
	}
	const size = 9014
	jumbo := func(seq uint32) []byte {
		f := make([]byte, size)
		copy(f, []byte{2, 0, 0, 0, 0, 8, 2, 0, 0, 0, 0, 9})
		binary.BigEndian.PutUint16(f[12:], 0x88b5)
		binary.BigEndian.PutUint32(f[14:], seq)
		for i := 18; i < size; i++ {
			f[i] = byte(seq) + byte(i)
		}
		return f
	}
	got := map[uint32]bool{}
	rx := make([]*nic.Buf, 32)
	receive := func() {
		n := p.RxBurst(0, rx)
		for _, b := range rx[:n] {
			f := b.Bytes()
			if len(f) != size {
				t.Errorf("a frame of %d bytes came back, want %d", len(f), size)
				b.Free()
				continue
			}
			seq := binary.BigEndian.Uint32(f[14:])
			want := jumbo(seq)
			copy(want, want[6:12]) // macswap
			copy(want[6:], []byte{2, 0, 0, 0, 0, 8})
			if !bytes.Equal(f, want) {
				t.Errorf("frame %d came back altered", seq)
			}
			got[seq] = true
			b.Free()
		}
	}
	// sendUntil sends frame seq until it comes back (testpmd may not have posted its
	// receive buffers yet), for up to 30 s.
	sendUntil := func(seq uint32) bool {
		return testutil.WaitFor(30*time.Second, func() bool {
			b := pool.Get()
			copy(b.Data(), jumbo(seq))
			b.SetLen(size)
			if p.TxBurst(0, []*nic.Buf{b}) == 0 {
				b.Free()
			}
			time.Sleep(5 * time.Millisecond)
			receive()
			return got[seq]
		})
	}
	const frames = 256
	for seq := range uint32(frames) {
		if !sendUntil(seq) {
			t.Fatalf("frame %d never came back; port %+v; testpmd:\n%s", seq, p.Stats(), tp.log)
		}
	}
	st := p.Stats()
	t.Logf("%d frames of %d bytes echoed; port %+v", len(got), size, st)
	if !p.MergeableRx() {
		t.Errorf("testpmd ran without VIRTIO_NET_F_MRG_RXBUF")
	}
	if st.RxErrors != 0 || p.Faults() != 0 {
		t.Errorf("port %+v, faults %d", st, p.Faults())
	}
}

// TestIntegrationDPDKJumbo is TestDPDKJumbo through the daemon: a model NIC and the
// vhost-user port, both of MTU 9000, l2fwd-paired; 9014-byte frames sent into the model's
// wire go through uiod to testpmd (mrg_rxbuf=1, --max-pkt-len=9018, 2 KiB mbufs), which
// sends them back (macswap), and come out of the model's wire again whole.
func TestIntegrationDPDKJumbo(t *testing.T) {
	bin := testpmdBin(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "vhost.sock")
	wireName := fmt.Sprintf("vhdpdkj-%d", os.Getpid())
	cfg, err := config.Read(strings.NewReader(fmt.Sprintf(`
ports:
  - {name: nic, driver: sim, wire: "pair:%s", promiscuous: true, mtu: 9000}
  - {name: vm, driver: vhost-user, socket: %s, mtu: 9000}
forward: {mode: l2fwd, pairs: [[nic, vm]]}
poll: {mode: adaptive, wait_timeout: 5ms}
`, wireName, sock)))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Metrics.Listen, cfg.StateDir = "127.0.0.1:0", filepath.Join(dir, "state")
	w, err := wire.Open("pair:" + wireName)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const size = 9014
	jumbo := func(seq uint32, swapped bool) []byte {
		f := make([]byte, size)
		copy(f, []byte{2, 0, 0, 0, 0, 8})
		copy(f[6:], srcMAC)
		if swapped {
			copy(f, srcMAC)
			copy(f[6:], []byte{2, 0, 0, 0, 0, 8})
		}
		binary.BigEndian.PutUint16(f[12:], 0x88b5)
		binary.BigEndian.PutUint32(f[14:], seq)
		for i := 18; i < size; i++ {
			f[i] = byte(seq) ^ byte(i)
		}
		return f
	}
	var mu sync.Mutex
	back, bad := map[uint32]bool{}, 0
	w.SetHandler(func(f []byte, _ int64) {
		if len(f) < 18 || binary.BigEndian.Uint16(f[12:]) != 0x88b5 {
			return
		}
		seq := binary.BigEndian.Uint32(f[14:])
		mu.Lock()
		defer mu.Unlock()
		if !bytes.Equal(f, jumbo(seq, true)) {
			bad++
			return
		}
		back[seq] = true
	})
	has := func(lo, hi uint32) bool {
		mu.Lock()
		defer mu.Unlock()
		for s := lo; s < hi; s++ {
			if !back[s] {
				return false
			}
		}
		return true
	}
	tp := &testpmd{t: t, bin: bin, sock: sock, mode: "macswap", prefix: fmt.Sprintf("uiodvhjd%d", os.Getpid()),
		vdev: fmt.Sprintf("net_virtio_user0,path=%s,queues=1,mrg_rxbuf=1", sock),
		args: []string{"--max-pkt-len=9018", "--enable-scatter", "--mbuf-size=2176"}}
	d := daemon.New(cfg, daemon.Options{})
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { d.Stop() }()
	tp.start()
	defer tp.kill()
	if !testutil.WaitFor(30*time.Second, func() bool { return d.Status().Ports[1].LinkUp }) {
		t.Fatalf("vhost-user link never came up; testpmd:\n%s", tp.log)
	}
	var seq uint32
	// The first frames may find testpmd's RX ring not yet filled: probe until one echoes.
	if !testutil.WaitFor(30*time.Second, func() bool {
		w.Send(jumbo(seq, false))
		seq++
		time.Sleep(20 * time.Millisecond)
		return has(seq-1, seq)
	}) {
		t.Fatalf("no echo from testpmd; status %+v; testpmd:\n%s", d.Status().Ports, tp.log)
	}
	start := seq
	for range 16 {
		lo := seq
		for range 16 {
			if err := w.Send(jumbo(seq, false)); err != nil {
				t.Fatal(err)
			}
			seq++
		}
		if !testutil.WaitFor(10*time.Second, func() bool { return has(lo, seq) }) {
			t.Fatalf("frames %d..%d did not all come back; status %+v", lo, seq, d.Status())
		}
	}
	mu.Lock()
	n, nbad := len(back), bad
	mu.Unlock()
	st := d.Status()
	t.Logf("%d frames of %d bytes sent after the probe, all back; %d echoed in all; vhost-user port %+v",
		seq-start, size, n, st.Ports[1].Stats)
	if nbad != 0 {
		t.Errorf("%d frames came back altered", nbad)
	}
	if vm := st.Ports[1].Stats; vm.RxErrors != 0 || vm.TxErrors != 0 {
		t.Errorf("vhost-user port %+v", vm)
	}
}

// testpmdBin is dpdkBin for a test that starts dpdk-testpmd once: it skips in -short too.
func testpmdBin(t *testing.T) string {
	t.Helper()
	bin := dpdkBin(t)
	if testing.Short() {
		t.Skip("starts dpdk-testpmd; not in -short")
	}
	return bin
}

// dpdkPort opens a vhost-user port as cfg says, on a socket of its own in t's temporary
// directory (cfg.Socket is set), closed when t ends; it returns the port and the socket.
func dpdkPort(t *testing.T, cfg vhost.Config) (*vhost.Port, string) {
	t.Helper()
	cfg.Socket = filepath.Join(t.TempDir(), "vhost.sock")
	p, err := vhost.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, cfg.Socket
}
