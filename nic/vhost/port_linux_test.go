package vhost

import (
	"bytes"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/uiod/uiod/nic"
)

// openServer opens a port in server mode on a socket in a temporary directory.
func openServer(t testing.TB) (*Port, string) {
	sock := filepath.Join(t.TempDir(), "vhost.sock")
	p, err := Open(Config{Socket: sock, Mode: Server, Reconnect: 10 * time.Millisecond, PoolSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, sock
}

// startServer opens a server port (openServer) and runs a front end on it with features
// until the link is up.
func startServer(t testing.TB, features uint64) (*Port, *frontend) {
	p, sock := openServer(t)
	f := dial(t, sock)
	f.start(features)
	eventually(t, "link up", func() bool { return p.Link().Up })
	return p, f
}

func dial(t testing.TB, sock string) *frontend {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	return newFrontend(t, c)
}

// eventually polls cond every millisecond for up to 10 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func frame(i, n int) []byte {
	b := make([]byte, n)
	for k := range b {
		b[k] = byte(i + k)
	}
	return b
}

// rxAll polls RxBurst until want frames came, and returns them.
func rxAll(t testing.TB, p *Port, want int) [][]byte {
	t.Helper()
	bufs := make([]*nic.Buf, 32)
	var got [][]byte
	eventually(t, "frames from the front end", func() bool {
		n := p.RxBurst(0, bufs)
		for _, b := range bufs[:n] {
			got = append(got, append([]byte(nil), b.Bytes()...))
			b.Free()
		}
		return len(got) >= want
	})
	return got
}

func TestFramesBothWays(t *testing.T) {
	for _, tc := range []struct {
		name     string
		features uint64
	}{
		{"event-idx+protocol", stdFeatures},
		{"version1-only", 1 << featVersion1},
		{"legacy-header", 0},
		{"no SET_FEATURES", noSetFeatures},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, sock := openServer(t)
			if tc.features == noSetFeatures {
				// A front end that negotiated 0 before goes away: its successor's rings
				// start without SET_FEATURES, with the legacy header.
				f0 := dial(t, sock)
				f0.start(stdFeatures)
				eventually(t, "link up", func() bool { return p.Link().Up })
				f0.c.Close()
				eventually(t, "the front end to go", func() bool { return !p.connected.Load() })
				tc.features = 0
			}
			f := dial(t, sock)
			f.start(tc.features)
			eventually(t, "link up", func() bool { return p.Link().Up })
			hdr := 12
			if tc.features&(1<<featVersion1) == 0 {
				hdr = 10
			}
			// Front end → port (its TX ring is the port's RX queue).
			const n = 40
			for i := range n {
				off, addr := f.bufAddr(i)
				fr := frame(i, 60+i)
				clear(f.mem[off : off+hdr])
				copy(f.mem[off+hdr:], fr)
				f.putDesc(ringGuestTX, i, addr, uint32(hdr+len(fr)), 0, 0)
				f.pushAvail(ringGuestTX, uint16(i))
			}
			got := rxAll(t, p, n)
			for i, g := range got {
				if !bytes.Equal(g, frame(i, 60+i)) {
					t.Fatalf("frame %d: got % x", i, g)
				}
			}
			if u := f.usedIdx(ringGuestTX); u != n {
				t.Fatalf("guest TX used index %d, want %d", u, n)
			}
			// Port → front end.
			f.postRx(n)
			var out []*nic.Buf
			for i := range n {
				b := p.pools[0].Get()
				b.SetLen(copy(b.Data(), frame(100+i, 64+i)))
				out = append(out, b)
			}
			if sent := p.TxBurst(0, out); sent != n {
				t.Fatalf("TxBurst took %d of %d", sent, n)
			}
			f.mem = f.mem[:len(f.mem)]
			rx := receivedHdr(f, hdr)
			if len(rx) != n {
				t.Fatalf("front end received %d frames, want %d", len(rx), n)
			}
			for i, g := range rx {
				if !bytes.Equal(g, frame(100+i, 64+i)) {
					t.Fatalf("received frame %d: got % x", i, g)
				}
			}
			if p.pools[0].Avail() != p.pools[0].Size() {
				t.Fatalf("pool has %d of %d buffers", p.pools[0].Avail(), p.pools[0].Size())
			}
			st := p.Stats()
			if st.RxPackets != n || st.TxPackets != n || st.RxErrors != 0 || st.TxErrors != 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// noSetFeatures marks a test front end that never sends SET_FEATURES.
const noSetFeatures = 1 << 63

// rawReceiver is a guest RX ring's frames as the front end sees them (a frontend's pair 0,
// or one pair of it).
type rawReceiver interface{ receivedRaw() [][]byte }

// receivedHdr is frontend.received for a header of hdr bytes.
func receivedHdr(f rawReceiver, hdr int) [][]byte {
	var out [][]byte
	for _, b := range f.receivedRaw() {
		out = append(out, b[hdr:])
	}
	return out
}

// TestResumedRings checks a front end that comes back with its rings where they were but
// SET_VRING_BASE 0 (virtio-user in server mode reconnecting to a new back end): the port
// resumes from the used index in its memory, takes what is available beyond it, and counts
// no fault.
func TestResumedRings(t *testing.T) {
	p, sock := openServer(t)
	f := dial(t, sock)
	f.start(stdFeatures)
	eventually(t, "link up", func() bool { return p.Link().Up })
	for i := range 40 {
		f.transmit(i, frame(i, 60))
	}
	rxAll(t, p, 40)
	f.c.Close()
	eventually(t, "the front end to go", func() bool { return !p.connected.Load() })
	// Two frames made available while no back end ran, then the new connection.
	f.transmit(40, frame(40, 60))
	f.transmit(41, frame(41, 60))
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.features = 0
	f.start(stdFeatures)
	eventually(t, "link up again", func() bool { return p.Link().Up })
	got := rxAll(t, p, 2)
	if len(got) != 2 || !bytes.Equal(got[0], frame(40, 60)) || !bytes.Equal(got[1], frame(41, 60)) {
		t.Fatalf("after the reconnect got %d frames: % x", len(got), got)
	}
	if f.usedIdx(ringGuestTX) != 42 || p.Faults() != 0 {
		t.Fatalf("used index %d, faults %d; want 42, 0", f.usedIdx(ringGuestTX), p.Faults())
	}
}
