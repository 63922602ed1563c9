package wire

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
)

func TestUnixPort(t *testing.T) {
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	a, err := Open("unix:" + pa + "," + pb)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := listenUnix(t, pb, pa)

	type rx struct {
		frame []byte
		ts    int64
	}
	got := make(chan rx, 10)
	b.SetHandler(func(f []byte, ts int64) { got <- rx{append([]byte(nil), f...), ts} })
	frame := bytes.Repeat([]byte{0xab}, 1514)
	before := Now()
	if err := a.Send(frame); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if !bytes.Equal(r.frame, frame) {
			t.Fatalf("received %d bytes, want the 1514 sent", len(r.frame))
		}
		if r.ts < before {
			t.Fatalf("stamped %d, before the send at %d", r.ts, before)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("frame not delivered")
	}

	// Both directions: b answers.
	back := make(chan int, 1)
	a.SetHandler(func(f []byte, ts int64) { back <- len(f) })
	if err := b.Send(frame[:60]); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-back:
		if n != 60 {
			t.Fatalf("got %d bytes back, want 60", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reply not delivered")
	}

	// A runt is padded with zeros to the Ethernet minimum, as a NIC would on transmit.
	if err := b.Send([]byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-back:
		if n != MinFrame {
			t.Fatalf("3-byte frame arrived as %d bytes, want %d", n, MinFrame)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("runt not delivered")
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pb); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Close left %s behind: %v", pb, err)
	}
	if err := b.Send(frame); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close = %v, want ErrClosed", err)
	}
	if err := a.Send(frame); err == nil {
		t.Fatal("Send to an unbound remote path succeeded")
	}
}

func TestUnixPortStaleSocket(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "stale")
	// A socket file left behind by a process that died.
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: p, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ListenUnix(p, filepath.Join(dir, "x")); err == nil {
		t.Fatal("ListenUnix took over a socket that is in use")
	}
	c.Close()
	port, err := ListenUnix(p, filepath.Join(dir, "x"))
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	port.Close()

	regular := filepath.Join(dir, "file")
	os.WriteFile(regular, nil, 0o600)
	if _, err := ListenUnix(regular, p); err == nil {
		t.Fatal("ListenUnix replaced a regular file")
	}
}

// TestUnixPortAllocs: sending a frame and the peer's reader receiving it allocate nothing.
func TestUnixPortAllocs(t *testing.T) {
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	a, b := listenUnix(t, pa, pb), listenUnix(t, pb, pa)
	var got atomic.Int64
	b.SetHandler(func([]byte, int64) { got.Add(1) })
	frame := bytes.Repeat([]byte{0xab}, 64)
	allocs := testing.AllocsPerRun(500, func() {
		if err := a.Send(frame); err != nil {
			t.Fatal(err)
		}
	})
	if !testutil.WaitFor(10*time.Second, func() bool { return got.Load() >= 501 }) {
		t.Fatalf("peer received %d of 501 frames", got.Load())
	}
	if allocs != 0 {
		t.Fatalf("%v allocations per frame sent and received, want 0", allocs)
	}
}

// listenUnix is ListenUnix that fails t, closed when t ends.
func listenUnix(t *testing.T, local, remote string) *UnixPort {
	t.Helper()
	p, err := ListenUnix(local, remote)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
