package daemon

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci/pcihost"
)

// TestStartKeepsWiresInsideRoot: under a --root, a sim port's unix wire whose socket lies
// outside the root is refused before anything is bound, even in a config that was not
// validated against that root.
func TestStartKeepsWiresInsideRoot(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	cfg := testConfig(t, `
forward: {mode: reflect}
ports:
  - {name: a, driver: sim, wire: "unix:`+outside+`/a.sock,`+outside+`/b.sock"}
`)
	d := New(cfg, Options{Root: root})
	err := d.Start()
	if err == nil {
		d.Stop()
	}
	testutil.ErrorContains(t, err, "ports[0].wire", "outside the root")
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("%d files created outside the root: %v", len(entries), entries)
	}
}

// TestCPUDMALatencyContained: <root>/dev/cpu_dma_latency is opened only inside the root,
// without blocking, and only if it is a character device: a FIFO in its place is refused
// at once, a symlink out of the root is not followed (the file it points at is not
// written), a regular file is refused.
func TestCPUDMALatencyContained(t *testing.T) {
	hold := func(t *testing.T, root string) error {
		t.Helper()
		return testutil.Within(t, 10*time.Second, "holdCPUDMALatency", func() error {
			f, err := holdCPUDMALatency(root, 0)
			if f != nil {
				f.Close()
			}
			return err
		})
	}
	t.Run("fifo", func(t *testing.T) {
		root := t.TempDir()
		os.Mkdir(filepath.Join(root, "dev"), 0o755)
		if err := syscall.Mkfifo(filepath.Join(root, cpuDMALatencyPath), 0o600); err != nil {
			t.Fatal(err)
		}
		testutil.ErrorContains(t, hold(t, root), "power.cpu_dma_latency")
	})
	t.Run("symlink out of the root", func(t *testing.T) {
		root, outside := t.TempDir(), t.TempDir()
		victim := filepath.Join(outside, "cpu_dma_latency")
		os.WriteFile(victim, []byte("precious"), 0o644)
		os.Symlink(outside, filepath.Join(root, "dev"))
		testutil.ErrorIs(t, hold(t, root), pcihost.ErrOutsideRoot, "power.cpu_dma_latency")
		if b, _ := os.ReadFile(victim); string(b) != "precious" {
			t.Errorf("the file outside the root now holds %q", b)
		}
	})
	t.Run("regular file", func(t *testing.T) {
		root := t.TempDir()
		os.Mkdir(filepath.Join(root, "dev"), 0o755)
		os.WriteFile(filepath.Join(root, cpuDMALatencyPath), nil, 0o644)
		testutil.ErrorContains(t, hold(t, root), "power.cpu_dma_latency", "not a character device")
	})
}

// TestUnixWirePinnedInsideRoot: under a --root, a unix wire's socket directory is the one
// it was when the daemon started, however it is renamed later: with the directory moved
// and a symlink out of the root put in its place, the daemon's next connect to its peer
// still reaches the peer that moved with the directory, never a socket outside the root.
func TestUnixWirePinnedInsideRoot(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "s")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	listen := func(p string) *net.UnixConn {
		c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: p, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	peer := listen(filepath.Join(dir, "peer.sock")) // moves with the directory
	hostile := listen(filepath.Join(outside, "peer.sock"))
	cfg := testConfig(t, `
forward: {mode: reflect}
ports:
  - {name: a, driver: sim, wire: "unix:`+dir+`/a.sock,`+dir+`/peer.sock", promiscuous: true}
`)
	d := New(cfg, Options{Root: root})
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	moved := filepath.Join(root, "moved")
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, 60)
	copy(frame, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x88, 0xb5})
	got := make(chan string, 2)
	for name, c := range map[string]*net.UnixConn{"the peer inside the root": peer, "the socket outside the root": hostile} {
		go func() {
			buf := make([]byte, 2048)
			if n, err := c.Read(buf); err == nil && n >= 14 && buf[12] == 0x88 && buf[13] == 0xb5 {
				got <- name
			}
		}()
	}
	send := &net.UnixAddr{Name: filepath.Join(moved, "a.sock"), Net: "unixgram"}
	ok := testutil.WaitFor(20*time.Second, func() bool {
		peer.WriteToUnix(frame, send) // the daemon's socket moved with the directory
		select {
		case who := <-got:
			if who != "the peer inside the root" {
				t.Fatalf("the daemon sent the reflected frame to %s", who)
			}
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	})
	if !ok {
		t.Fatal("no frame reflected to the peer within 20s")
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(moved, "a.sock")); !os.IsNotExist(err) {
		t.Errorf("the daemon's socket is still there after Stop: %v", err)
	}
}
