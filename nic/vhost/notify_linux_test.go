package vhost

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
)

// sendN passes n frames through TxBurst into the front end's RX ring.
func sendN(t *testing.T, p *Port, f *frontend, n int) {
	t.Helper()
	f.postRx(n)
	bufs := make([]*nic.Buf, n)
	for i := range bufs {
		bufs[i] = p.pools[0].Get()
		bufs[i].SetLen(60)
	}
	if got := p.TxBurst(0, bufs); got != n {
		t.Fatalf("TxBurst took %d of %d", got, n)
	}
	f.receivedRaw()
}

// syncCalls waits until every call the port signalled was written (the callers write
// the call eventfds on their own goroutines).
func syncCalls(t testing.TB, p *Port) {
	t.Helper()
	for i := range p.rings {
		var c *caller
		p.withRing(i, func(r *vring) error {
			c = r.call
			return nil
		})
		if c != nil && !c.sync(10*time.Second) {
			t.Fatalf("vring %d: the call eventfd's writer is stuck", i)
		}
	}
}

// TestCallSuppression checks that the call eventfd is written only when the front end
// asked for an interrupt: with EVENT_IDX when the used index passes used_event, without it
// unless VRING_AVAIL_F_NO_INTERRUPT is set.
func TestCallSuppression(t *testing.T) {
	type step struct {
		usedEvent, flags uint16
		frames           int
		call             bool
	}
	for _, tc := range []struct {
		name     string
		features uint64
		steps    []step
	}{
		{"event-idx", stdFeatures, []step{
			{usedEvent: 0, frames: 1, call: true},   // used 0→1 passes 0
			{usedEvent: 10, frames: 1, call: false}, // 1→2 does not pass 10
			{usedEvent: 10, frames: 8, call: false}, // 2→10 does not pass 10
			{usedEvent: 10, frames: 1, call: true},  // 10→11 passes it
			{usedEvent: 5, frames: 3, call: false},  // behind: no more calls
		}},
		{"flags", 1 << featVersion1, []step{
			{flags: availNoInterrupt, frames: 4, call: false},
			{frames: 1, call: true},
			{flags: availNoInterrupt, frames: 1, call: false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, f := startServer(t, tc.features)
			for i, s := range tc.steps {
				f.setUsedEvent(ringGuestRX, s.usedEvent)
				f.setAvailFlags(ringGuestRX, s.flags)
				sendN(t, p, f, s.frames)
				syncCalls(t, p)
				if got := f.calls(ringGuestRX) > 0; got != s.call {
					t.Fatalf("step %d (%+v): call %v, want %v", i, s, got, s.call)
				}
			}
		})
	}
}

// TestRxInterrupt checks the kick side: EnableRxInterrupt asks for a kick (avail_event at
// the next entry, or NO_NOTIFY cleared), DisableRxInterrupt withdraws it, and a kick wakes
// a Poller on RxVector, also after the front end was replaced by one with another kick
// eventfd.
func TestRxInterrupt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		features uint64
	}{{"event-idx", stdFeatures}, {"flags", 1 << featVersion1}} {
		t.Run(tc.name, func(t *testing.T) {
			p, sock := openServer(t)
			poller, err := irq.NewPoller(irq.WaitBlocking, p.RxVector(0))
			if err != nil {
				t.Fatal(err)
			}
			defer poller.Close()
			eventIdx := tc.features&(1<<featEventIdx) != 0
			for round := range 2 {
				f := dial(t, sock)
				f.start(tc.features)
				eventually(t, "link up", func() bool { return p.Link().Up })
				_, _, u := f.ringOff(ringGuestTX)
				usedFlags := func() uint16 { return le16(f.mem, u) }
				if !eventIdx && usedFlags()&usedNoNotify == 0 {
					t.Fatal("a started ring asks for kicks before the poll thread armed")
				}
				f.transmit(0, frame(1, 60))
				rxAll(t, p, 1)
				p.EnableRxInterrupt(0)
				if eventIdx && f.availEvent(ringGuestTX) != 1 {
					t.Fatalf("avail_event %d after arming at entry 1", f.availEvent(ringGuestTX))
				}
				if !eventIdx && usedFlags()&usedNoNotify != 0 {
					t.Fatal("NO_NOTIFY still set after arming")
				}
				poller.Drain() // the back end's own kick at start
				f.transmit(1, frame(2, 60))
				w, err := poller.Wait(10 * time.Second)
				if err != nil || w != irq.WakeInterrupt {
					t.Fatalf("round %d: wait = %v, %v; want an interrupt", round, w, err)
				}
				if n, _ := poller.Drain(); n == 0 {
					t.Fatalf("round %d: Drain counted no kick", round)
				}
				p.DisableRxInterrupt(0)
				if !eventIdx && usedFlags()&usedNoNotify == 0 {
					t.Fatal("NO_NOTIFY clear after disarming")
				}
				rxAll(t, p, 1)
				f.c.Close()
				eventually(t, "the front end to go", func() bool { return !p.connected.Load() })
			}
		})
	}
}

// TestBurstsAllocateNothing checks the data path: a burst each way allocates nothing.
func TestBurstsAllocateNothing(t *testing.T) {
	p, f := startServer(t, stdFeatures)
	rx := make([]*nic.Buf, 32)
	tx := make([]*nic.Buf, 32)
	for i := range 32 {
		f.transmit(i, frame(i, 60))
	}
	rxAll(t, p, 32)
	allocs := testing.AllocsPerRun(100, func() {
		for i := range 32 {
			f.pushAvail(ringGuestTX, uint16(i))
		}
		n := p.RxBurst(0, rx)
		f.postRx(n)
		copy(tx, rx[:n])
		if p.TxBurst(0, tx[:n]) != n {
			panic("TxBurst short")
		}
		f.usedSeen[ringGuestRX] = f.usedIdx(ringGuestRX)
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per pair of bursts", allocs)
	}
}

// TestClientReconnects checks client mode: uiod dials the front end's socket, and dials
// again when the front end restarts (a new listener on the same path).
func TestClientReconnects(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "fe.sock")
	listen := func() *net.UnixListener {
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	ln := listen()
	p, err := Open(Config{Socket: sock, Mode: Client, Reconnect: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for round := range 3 {
		ln.SetDeadline(time.Now().Add(10 * time.Second))
		c, err := ln.AcceptUnix()
		if err != nil {
			t.Fatalf("round %d: the port did not connect: %v", round, err)
		}
		f := newFrontend(t, c)
		f.start(stdFeatures)
		eventually(t, "link up", func() bool { return p.Link().Up })
		f.transmit(0, frame(round, 60))
		if got := rxAll(t, p, 1); string(got[0]) != string(frame(round, 60)) {
			t.Fatalf("round %d: got % x", round, got[0])
		}
		// The front end restarts: connection and socket gone, a new one later.
		ln.Close() // first, or the port's immediate redial would find it still listening
		os.Remove(sock)
		c.Close()
		eventually(t, "link down", func() bool { return !p.Link().Up })
		if round < 2 {
			time.Sleep(30 * time.Millisecond) // a few failed dials
			ln = listen()
		}
	}
	if got := p.Connects(); got != 3 {
		t.Fatalf("connects = %d, want 3", got)
	}
}
