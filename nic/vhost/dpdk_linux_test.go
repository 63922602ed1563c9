package vhost_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/daemon"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/wire"
)

// testpmd runs DPDK's dpdk-testpmd with a virtio-user port on sock (server=1 when the
// front end is to listen), forwarding in mode, without hugepages (memfd memory, which
// virtio-user shares with the back end), until stopped.
type testpmd struct {
	t      testing.TB
	bin    string
	lcores string // default 0-1
	main   string // the main lcore (default: the lowest); forwarding runs on the other
	vdev   string // default: virtio-user on sock
	sock   string
	server bool
	mode   string
	prefix string
	queues int      // virtio-user's queue pairs, and testpmd's --rxq/--txq (default 1)
	args   []string // more testpmd options
	cmd    *exec.Cmd
	log    *bytes.Buffer
}

func (tp *testpmd) start() {
	tp.t.Helper()
	queues := max(tp.queues, 1)
	vdev := fmt.Sprintf("net_virtio_user0,path=%s,queues=%d", tp.sock, queues)
	if tp.server {
		vdev += ",server=1"
	}
	if tp.vdev != "" {
		vdev = tp.vdev
	}
	lcores := "0-1"
	if tp.lcores != "" {
		lcores = tp.lcores
	}
	args := []string{"-l", lcores, "--no-pci", "--no-huge", "-m", "512", "--file-prefix=" + tp.prefix, "--vdev", vdev}
	if tp.main != "" {
		args = append(args, "--main-lcore="+tp.main)
	}
	args = append(args, "--", "--forward-mode="+tp.mode, "--total-num-mbufs=4096", "--nb-cores=1", "--stats-period=1", "-a")
	if queues > 1 {
		args = append(args, fmt.Sprintf("--rxq=%d", queues), fmt.Sprintf("--txq=%d", queues))
	}
	args = append(args, tp.args...)
	tp.cmd = exec.Command(tp.bin, args...)
	tp.log = &bytes.Buffer{}
	tp.cmd.Stdout, tp.cmd.Stderr = tp.log, tp.log
	if err := tp.cmd.Start(); err != nil {
		tp.t.Fatalf("dpdk-testpmd: %v", err)
	}
}

// kill SIGKILLs testpmd and reaps it.
func (tp *testpmd) kill() {
	if tp.cmd == nil {
		return
	}
	tp.cmd.Process.Signal(syscall.SIGKILL)
	tp.cmd.Wait()
	tp.cmd = nil
	os.RemoveAll("/var/run/dpdk/" + tp.prefix)
	if tp.server {
		os.Remove(tp.sock) // a killed virtio-user server leaves its socket behind
	}
}

// echoCounter counts the frames that come back on the far end of the model port's wire,
// by sequence number, and checks what macswap did to them.
type echoCounter struct {
	mu      sync.Mutex
	seen    map[uint32]bool
	swapped int
}

func (e *echoCounter) handler(f []byte, _ int64) {
	if len(f) < 64 || binary.BigEndian.Uint16(f[12:]) != 0x88b5 {
		return
	}
	e.mu.Lock()
	e.seen[binary.BigEndian.Uint32(f[60:])] = true
	if bytes.Equal(f[:6], srcMAC) {
		e.swapped++
	}
	e.mu.Unlock()
}

func (e *echoCounter) has(lo, hi uint32) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for s := lo; s < hi; s++ {
		if !e.seen[s] {
			return false
		}
	}
	return true
}

var srcMAC = []byte{2, 0, 0, 0, 0, 9}

// farEnd is the test's end of a model port's pair wire, counting what comes back.
type farEnd struct {
	w    wire.Port
	echo *echoCounter
}

func (e *farEnd) open(t testing.TB, name string) {
	t.Helper()
	w, err := wire.Open("pair:" + name)
	if err != nil {
		t.Fatal(err)
	}
	e.w, e.echo = w, &echoCounter{seen: map[uint32]bool{}}
	w.SetHandler(e.echo.handler)
	t.Cleanup(func() { w.Close() })
}

func echoFrame(seq uint32) []byte {
	f := make([]byte, 64)
	copy(f, []byte{2, 0, 0, 0, 0, 8})
	copy(f[6:], srcMAC)
	binary.BigEndian.PutUint16(f[12:], 0x88b5)
	binary.BigEndian.PutUint32(f[60:], seq)
	return f
}

// TestIntegrationDPDK runs DPDK's virtio-user (dpdk-testpmd) against a uiod daemon whose
// vhost-user port is l2fwd-paired with a model NIC: frames sent into the model's wire go
// through uiod to testpmd, which sends them back (macswap), and come out of the model's
// wire again, every one. testpmd is then killed with SIGKILL and started again, and the
// traffic resumes without restarting uiod: in server mode testpmd reconnects, in client
// mode uiod does. In client mode uiod itself is then restarted under the running testpmd,
// and the traffic resumes again.
func TestIntegrationDPDK(t *testing.T) {
	bin := dpdkBin(t)
	if testing.Short() {
		t.Skip("starts dpdk-testpmd three times; not in -short")
	}
	for _, mode := range []string{config.VhostServer, config.VhostClient} {
		t.Run(mode, func(t *testing.T) { runDPDK(t, bin, mode) })
	}
}

// dpdkBin is the path of dpdk-testpmd; it skips t when it is not installed or the test
// does not run as root.
func dpdkBin(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("dpdk-testpmd")
	switch {
	case err != nil:
		t.Skip("dpdk-testpmd not installed (apt-get install dpdk): ", err)
	case os.Geteuid() != 0:
		t.Skip("dpdk-testpmd needs root")
	}
	return bin
}

func runDPDK(t *testing.T, bin, mode string) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "vhost.sock")
	wireName := fmt.Sprintf("vhdpdk-%s-%d", mode, os.Getpid())
	cfg := pairedConfig(t, dir, wireName, sock, mode, "mode: adaptive, wait_timeout: 5ms")
	var fe farEnd
	fe.open(t, wireName)

	tp := &testpmd{t: t, bin: bin, sock: sock, server: mode == config.VhostClient, mode: "macswap",
		prefix: fmt.Sprintf("uiodvh%d%s", os.Getpid(), mode)}
	defer tp.kill()
	if tp.server {
		tp.start() // the front end listens first; uiod dials it
	}
	d := daemon.New(cfg, daemon.Options{})
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { d.Stop() }()
	if !tp.server {
		tp.start()
	}
	linkUp := func(want bool) func() bool {
		return func() bool { return d.Status().Ports[1].LinkUp == want }
	}
	var seq uint32
	// round sends n frames, 32 at a time, each group once the one before came back.
	round := func(what string, n int) {
		t.Helper()
		if !testutil.WaitFor(30*time.Second, linkUp(true)) {
			t.Fatalf("%s: vhost-user link never came up; testpmd:\n%s", what, tp.log)
		}
		// The first frames may find testpmd's RX ring not yet filled: probe until one echoes.
		probe := seq
		if !testutil.WaitFor(30*time.Second, func() bool {
			fe.w.Send(echoFrame(seq))
			seq++
			time.Sleep(20 * time.Millisecond)
			return fe.echo.has(seq-1, seq)
		}) {
			t.Fatalf("%s: no echo from testpmd; status %+v; testpmd:\n%s", what, d.Status().Ports, tp.log)
		}
		t.Logf("%s: %d probe frames before the first echo", what, seq-probe)
		start := seq
		for i := 0; i < n; i += 32 {
			lo := seq
			for range 32 {
				if err := fe.w.Send(echoFrame(seq)); err != nil {
					t.Fatal(err)
				}
				seq++
			}
			if !testutil.WaitFor(10*time.Second, func() bool { return fe.echo.has(lo, seq) }) {
				t.Fatalf("%s: frames %d..%d did not all come back; status %+v", what, lo, seq, d.Status())
			}
		}
		t.Logf("%s: all %d frames back (%d..%d)", what, seq-start, start, seq)
	}
	round("first front end", 2048)
	tp.kill()
	if !testutil.WaitFor(10*time.Second, linkUp(false)) {
		t.Fatal("vhost-user link still up after testpmd was killed")
	}
	tp.start()
	round("after kill -9 and restart", 2048)
	fe.echo.mu.Lock()
	echoed, swapped := len(fe.echo.seen), fe.echo.swapped
	fe.echo.mu.Unlock()
	if swapped != echoed {
		t.Errorf("%d of %d echoed frames had their MACs swapped", swapped, echoed)
	}
	// Every frame accounted: the model port received all sent, and each one went to
	// testpmd or was dropped with a reason (tx_full: testpmd's RX ring not yet posted);
	// every frame testpmd sent back reached the wire. The poll thread publishes its
	// counters when it sleeps: wait for the totals to settle.
	var st daemon.Status
	ok := testutil.WaitFor(10*time.Second, func() bool {
		st = d.Status()
		nic, vm := st.Queues[0], st.Queues[1]
		return nic.RxPackets == uint64(seq) && nic.RxPackets == nic.TxPackets+nic.Drops &&
			vm.RxPackets == vm.TxPackets && vm.TxPackets == uint64(echoed)
	})
	if !ok {
		t.Errorf("frames unaccounted for: sent %d, echoed %d, queues %+v", seq, echoed, st.Queues)
	}
	vm := st.Ports[1].Stats
	if vm.RxErrors != 0 || vm.TxErrors != 0 || vm.TxPackets != st.Queues[0].TxPackets {
		t.Errorf("vhost-user port %+v, nic queue %+v", vm, st.Queues[0])
	}
	t.Logf("sent %d, echoed %d; vhost-user port %+v; queues %+v", seq, echoed, vm, st.Queues)
	if mode != config.VhostClient {
		return
	}
	// uiod restarts under a running testpmd, which listens: the new daemon connects and
	// the traffic resumes. The model port's new wire end pairs with a new far end.
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	fe.w.Close()
	fe.open(t, wireName)
	d = daemon.New(cfg, daemon.Options{})
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	round("after uiod restarted", 1024)
}

// pairedConfig is a daemon configuration in dir: a model NIC cabled to the in-memory wire
// wireName, l2fwd-paired with a vhost-user port on sock in mode, under the poll section
// poll; the metrics endpoint on an ephemeral loopback port.
func pairedConfig(t testing.TB, dir, wireName, sock, mode, poll string) *config.Config {
	t.Helper()
	cfg, err := config.Read(strings.NewReader(fmt.Sprintf(`
ports:
  - {name: nic, driver: sim, wire: "pair:%s", promiscuous: true}
  - {name: vm, driver: vhost-user, socket: %s, mode: %s}
forward: {mode: l2fwd, pairs: [[nic, vm]]}
poll: {%s}
`, wireName, sock, mode, poll)))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Metrics.Listen, cfg.StateDir = "127.0.0.1:0", filepath.Join(dir, "state")
	return cfg
}
