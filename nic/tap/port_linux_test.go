package tap

import (
	"bytes"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
)

// kernelEnd is the test's stand-in for the kernel: the other end of a SOCK_SEQPACKET
// socket pair, which carries one frame per read and write as a TAP descriptor does.
type kernelEnd struct {
	t   *testing.T
	fd  int
	buf []byte
}

// send transmits frame as the kernel transmitting on the interface.
func (k kernelEnd) send(frame []byte) {
	k.t.Helper()
	if _, err := unix.Write(k.fd, frame); err != nil {
		k.t.Fatalf("kernel side write: %v", err)
	}
}

// recv waits up to two seconds for a frame the port wrote. The frame is valid until the
// next recv.
func (k kernelEnd) recv() []byte {
	k.t.Helper()
	if n, err := pollIn(k.fd); err != nil || n != 1 {
		k.t.Fatalf("no frame from the port (poll %d, %v)", n, err)
	}
	n, err := unix.Read(k.fd, k.buf)
	if err != nil {
		k.t.Fatalf("kernel side read: %v", err)
	}
	return k.buf[:n]
}

// pollIn waits up to two seconds for fd to be readable.
func pollIn(fd int) (int, error) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 2000)
		if err != unix.EINTR {
			return n, err
		}
	}
}

var testMAC = net.HardwareAddr{2, 0, 0, 0, 0x7a, 1}

// pairPort returns a port on one end of a socket pair and the other end. Both are closed
// at cleanup; sndbuf > 0 shrinks the port's send buffer (so that the writer blocks).
func pairPort(t *testing.T, cfg Config, sndbuf int) (*Port, kernelEnd) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sndbuf > 0 {
		if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, sndbuf); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	if cfg.Name == "" {
		cfg.Name = "uiodtest0"
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	p, err := newPort(cfg, os.NewFile(uintptr(fds[0]), "pair"), testMAC, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		unix.Close(fds[1])
	})
	return p, kernelEnd{t, fds[1], make([]byte, 16384)}
}

// frame is a test frame of n bytes whose payload starts with seq.
func frame(n int, seq byte) []byte {
	f := make([]byte, n)
	copy(f, []byte{2, 0, 0, 0, 0, 9, 2, 0, 0, 0, 0, 8, 0x88, 0xb5})
	for i := 14; i < n; i++ {
		f[i] = seq + byte(i)
	}
	return f
}

// rxWait polls RxBurst until it returns frames, for at most two seconds.
func rxWait(t *testing.T, p *Port, bufs []*nic.Buf) int {
	t.Helper()
	n := 0
	if !testutil.Eventually(t, 2*time.Second, func() bool { n = p.RxBurst(0, bufs); return n > 0 }, "RxBurst found no frame") {
		t.FailNow()
	}
	return n
}

func TestRxTx(t *testing.T) {
	cases := []struct {
		name string
		size int
	}{{"runt ARP", 42}, {"minimum", 60}, {"typical", 590}, {"MTU", 1514}, {"VLAN-tagged MTU", 1518}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testutil.CheckLeaks(t)
			p, k := pairPort(t, Config{TxQueues: 2}, 0)
			bufs := make([]*nic.Buf, 32)
			for round := range 3 * DefaultRing { // many ring wraps
				want := frame(c.size, byte(round))
				k.send(want)
				if n := rxWait(t, p, bufs); n != 1 {
					t.Fatalf("round %d: %d frames, want 1", round, n)
				}
				if got := bufs[0].Bytes(); !bytes.Equal(got, want) {
					t.Fatalf("round %d: received %d bytes % x, want % x", round, len(got), got[:min(len(got), 20)], want[:20])
				}
				// Out through the other queue: the frame goes back to the kernel.
				if n := p.TxBurst(round%2, bufs[:1]); n != 1 {
					t.Fatalf("round %d: TxBurst took %d", round, n)
				}
				if got := k.recv(); !bytes.Equal(got, want) {
					t.Fatalf("round %d: kernel got %d bytes, want %d", round, len(got), len(want))
				}
			}
			n := uint64(3 * DefaultRing)
			// The writer counts a frame after the kernel side may have read it.
			testutil.Eventually(t, 2*time.Second, func() bool { return p.Stats().TxPackets == n }, "TxPackets %d, want %d", p.Stats().TxPackets, n)
			if st := p.Stats(); st.RxPackets != n || st.TxPackets != n || st.RxBytes != n*uint64(c.size) || st.TxBytes != st.RxBytes {
				t.Fatalf("stats %+v after %d frames each way", st, n)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if p.Link().Up {
				t.Fatal("link up after Close")
			}
		})
	}
}

func TestTxBadLength(t *testing.T) {
	p, k := pairPort(t, Config{}, 0)
	pool, err := nic.NewMempool(&nic.HeapDMA{}, 4, 2048)
	if err != nil {
		t.Fatal(err)
	}
	bufs := make([]*nic.Buf, 3)
	for i, n := range []int{13, 1519, 100} {
		bufs[i] = pool.Get()
		bufs[i].SetLen(n)
	}
	if n := p.TxBurst(0, bufs); n != 3 {
		t.Fatalf("TxBurst took %d of 3", n)
	}
	if got := k.recv(); len(got) != 100 {
		t.Fatalf("kernel got a %d-byte frame, want the 100-byte one", len(got))
	}
	if c := p.Counters(); c.TxBadLength != 2 || p.Stats().TxErrors != 2 {
		t.Fatalf("counters %+v, stats %+v: want the 13- and 1519-byte frames counted", c, p.Stats())
	}
	if pool.Avail() != 4 {
		t.Fatalf("%d of 4 buffers back in their pool", pool.Avail())
	}
}

// TestRxInterrupt: the vector fires for a frame that arrives while the interrupt is
// enabled, once per arming, never while it is disabled, and at once when a frame was
// already waiting at the arm.
func TestRxInterrupt(t *testing.T) {
	p, k := pairPort(t, Config{}, 0)
	v := p.RxVector(0)
	if v == nil || p.RxVector(1) != nil {
		t.Fatal("want a vector for RX queue 0 only")
	}
	bufs := make([]*nic.Buf, 32)
	freeAll := func(n int) {
		for _, b := range bufs[:n] {
			b.Free()
		}
	}
	fired := func() bool {
		n, _ := pollIn(v.Fd())
		return n == 1 && testutil.Drain(t, v) > 0
	}

	// Armed: the next frame fires it.
	p.EnableRxInterrupt(0)
	k.send(frame(60, 1))
	if !fired() {
		t.Fatal("armed vector did not fire for a frame")
	}
	freeAll(rxWait(t, p, bufs))

	// Disarmed: a frame is received, the vector stays quiet.
	p.DisableRxInterrupt(0)
	k.send(frame(60, 2))
	freeAll(rxWait(t, p, bufs))
	if n := testutil.Drain(t, v); n != 0 {
		t.Fatalf("disarmed vector signalled %d times", n)
	}

	// A frame queued before the arm: enabling fires at once.
	k.send(frame(60, 3))
	testutil.Eventually(t, 2*time.Second, p.rx.pending, "frame not queued")
	p.EnableRxInterrupt(0)
	if n := testutil.Drain(t, v); n != 1 {
		t.Fatalf("arming with a frame waiting signalled %d times, want 1", n)
	}
	freeAll(rxWait(t, p, bufs))

	// One signal per arming: the vector is disarmed once it fired.
	p.EnableRxInterrupt(0)
	k.send(frame(60, 4))
	if !fired() {
		t.Fatal("re-armed vector did not fire")
	}
	k.send(frame(60, 5))
	testutil.Eventually(t, 2*time.Second, func() bool { return p.Stats().RxPackets == 5 }, "fifth frame not queued")
	if n := testutil.Drain(t, v); n != 0 {
		t.Fatalf("vector signalled %d more times without being re-armed", n)
	}
	for got := 0; got < 2; {
		n := rxWait(t, p, bufs)
		freeAll(n)
		got += n
	}
}

// TestRxNoBuffer: frames the kernel sends while every posted buffer is filled are read
// and dropped, and counted, so the port never stops reading.
func TestRxNoBuffer(t *testing.T) {
	const ring, sent = 8, 50
	p, k := pairPort(t, Config{RxRing: ring}, 0)
	for i := range sent {
		k.send(frame(60, byte(i)))
	}
	testutil.Eventually(t, 2*time.Second, func() bool {
		st := p.Stats()
		return st.RxPackets+st.RxMissed == sent
	}, "stats %+v: want %d frames accounted for", p.Stats(), sent)
	if st := p.Stats(); st.RxPackets != ring || st.RxMissed != sent-ring || p.Counters().RxNoBuffer != st.RxMissed {
		t.Fatalf("stats %+v, counters %+v: want %d queued and %d missed", st, p.Counters(), ring, sent-ring)
	}
	bufs := make([]*nic.Buf, 32)
	if n := p.RxBurst(0, bufs); n != ring {
		t.Fatalf("RxBurst %d, want the %d queued frames", n, ring)
	}
	for i, b := range bufs[:ring] {
		if !bytes.Equal(b.Bytes(), frame(60, byte(i))) {
			t.Fatalf("frame %d is not the %dth sent", i, i)
		}
		b.Free()
	}
	// Buffers are posted again: the next frame is queued.
	k.send(frame(60, 99))
	rxWait(t, p, bufs)
	bufs[0].Free()
}

// TestTxRingFull: with the kernel not reading, the writer blocks and the ring fills;
// TxBurst then refuses frames, counts them and never blocks.
func TestTxRingFull(t *testing.T) {
	const ring = 8
	p, k := pairPort(t, Config{TxRing: ring}, 4096)
	pool, err := nic.NewMempool(&nic.HeapDMA{}, 64, 2048)
	if err != nil {
		t.Fatal(err)
	}
	bufs := make([]*nic.Buf, 16)
	var took, refused uint64
	done := testutil.WaitFor(5*time.Second, func() bool {
		for i := range bufs {
			bufs[i] = pool.Get()
			bufs[i].SetLen(1000)
		}
		n := p.TxBurst(0, bufs)
		for _, b := range bufs[n:] {
			b.Free()
		}
		took += uint64(n)
		refused += uint64(len(bufs) - n)
		return refused > 0
	})
	if !done {
		t.Fatalf("TxBurst never refused a frame (took %d)", took)
	}
	if c := p.Counters(); c.TxRingFull != refused || p.Stats().TxErrors != refused {
		t.Fatalf("counters %+v, TxErrors %d: want %d refused", c, p.Stats().TxErrors, refused)
	}
	if pool.Avail() != pool.Size() {
		t.Fatalf("%d of %d buffers back", pool.Avail(), pool.Size())
	}
	// The kernel reads again: everything taken arrives.
	for got := uint64(0); got < took; got++ {
		if f := k.recv(); len(f) != 1000 {
			t.Fatalf("frame %d is %d bytes", got, len(f))
		}
	}
	testutil.Eventually(t, 2*time.Second, func() bool { return p.Stats().TxPackets == took }, "TxPackets %d, want %d", p.Stats().TxPackets, took)
}

func TestAllocs(t *testing.T) {
	p, k := pairPort(t, Config{}, 0)
	bufs := make([]*nic.Buf, 32)
	f := frame(128, 0)
	if a := testing.AllocsPerRun(100, func() { p.RxBurst(0, bufs) }); a != 0 {
		t.Fatalf("empty RxBurst: %v allocations", a)
	}
	a := testing.AllocsPerRun(100, func() {
		k.send(f)
		n := 0
		for n == 0 {
			n = p.RxBurst(0, bufs)
		}
		p.TxBurst(0, bufs[:n])
		k.recv()
	})
	if a != 0 {
		t.Fatalf("%v allocations per frame round trip", a)
	}
	p.EnableRxInterrupt(0)
	if a := testing.AllocsPerRun(100, func() { p.EnableRxInterrupt(0); p.DisableRxInterrupt(0) }); a != 0 {
		t.Fatalf("arming: %v allocations", a)
	}
}

// TestClose: Close stops both goroutines although frames are still queued either way,
// gives the posted buffers back and may be called again.
func TestClose(t *testing.T) {
	testutil.CheckLeaks(t)
	p, k := pairPort(t, Config{}, 4096)
	for i := range 20 {
		k.send(frame(60, byte(i)))
	}
	pool, _ := nic.NewMempool(&nic.HeapDMA{}, 64, 2048)
	bufs := make([]*nic.Buf, 64)
	for i := range bufs {
		bufs[i] = pool.Get()
		bufs[i].SetLen(1500)
	}
	p.TxBurst(0, bufs)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := p.vec.Signal(); !errors.Is(err, unix.EBADF) {
		t.Fatalf("vector still open after Close: %v", err)
	}
}
