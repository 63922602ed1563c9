//go:build linux

package afxdp

import (
	"bytes"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/nic"
)

// fakeRings lays out the four rings in Go memory as the kernel would in its mappings:
// producer, consumer and flags words, then the descriptors.
func fakeRing(n, size int) ([]byte, unix.XDPRingOffset) {
	off := unix.XDPRingOffset{Producer: 0, Consumer: 64, Flags: 128, Desc: 192}
	return make([]byte, ringBytes(off, n, size)), off
}

// fakeQueue is a queue whose rings are Go memory, its UMEM a real anonymous mapping and
// no socket (fd -1): the test plays the kernel.
func fakeQueue(t testing.TB, cfg Config) *queue { return fakeQueueAt(t, cfg, 0) }

// fakeQueueAt is fakeQueue with every ring index starting at start.
func fakeQueueAt(t testing.TB, cfg Config, start uint32) *queue {
	t.Helper()
	cfg = cfg.withDefaults()
	q := &queue{fd: -1, maxFrame: MaxFrame(cfg.FrameSize), txMax: txMaxFrame(cfg)}
	var err error
	chunks := cfg.PoolSize + cfg.TxRing
	if q.umem, err = newUMEM(chunks, cfg.FrameSize); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.umem.unmap() })
	q.dma = q.umem
	for 1<<q.shift < cfg.FrameSize {
		q.shift++
	}
	if q.rxPool, err = nic.NewMempoolStride(q.umem, cfg.PoolSize, q.maxFrame, cfg.FrameSize); err != nil {
		t.Fatal(err)
	}
	if q.txPool, err = nic.NewMempoolStride(q.umem, cfg.TxRing, q.maxFrame, cfg.FrameSize); err != nil {
		t.Fatal(err)
	}
	if q.sg = multiBuffer(cfg); q.sg {
		if q.big, err = nic.NewMempool(&nic.HeapDMA{}, cfg.RxRing, nic.BufSizeFor(cfg.MTU)); err != nil {
			t.Fatal(err)
		}
	}
	q.byChunk = make([]*nic.Buf, chunks)
	for _, p := range []*nic.Mempool{q.rxPool, q.txPool} {
		var all []*nic.Buf
		for b := p.Get(); b != nil; b = p.Get() {
			q.byChunk[b.IOVA()>>q.shift] = b
			all = append(all, b)
		}
		for _, b := range all {
			p.Put(b)
		}
	}
	m, off := fakeRing(cfg.RxRing, 8)
	q.fill, _ = newAddrRing(m, off, cfg.RxRing)
	m, off = fakeRing(cfg.TxRing, 8)
	q.comp, _ = newAddrRing(m, off, cfg.TxRing)
	m, off = fakeRing(cfg.RxRing, descSize)
	q.rx, _ = newDescRing(m, off, cfg.RxRing)
	m, off = fakeRing(cfg.TxRing, descSize)
	q.tx, _ = newDescRing(m, off, cfg.TxRing)
	for _, r := range []*ring{&q.fill.ring, &q.comp.ring, &q.rx.ring, &q.tx.ring} {
		*r.prod, *r.cons, r.local, r.cached = start, start, start, start
	}
	q.rxWake = q.fill.flags
	q.refill()
	return q
}

// kernelRx plays the kernel receiving n frames of length l: it takes fill-ring addresses
// and posts them, at the headroom, on the RX ring.
func kernelRx(t testing.TB, q *queue, n int, l uint32) {
	t.Helper()
	fp, fc := *q.fill.prod, *q.fill.cons
	rp := *q.rx.prod
	for i := 0; i < n; i++ {
		if fc == fp {
			t.Fatalf("fill ring empty after %d frames", i)
		}
		addr := q.fill.descs[fc&q.fill.mask]
		fc++
		base := addr &^ uint64(q.umem.chunk-1)
		q.rx.descs[rp&q.rx.mask] = unix.XDPDesc{Addr: base + Headroom, Len: l}
		rp++
	}
	*q.fill.cons = fc
	*q.rx.prod = rp
}

// kernelTx plays the kernel sending everything on the TX ring and completing it.
func kernelTx(q *queue) int {
	tp, tc := *q.tx.prod, *q.tx.cons
	cp := *q.comp.prod
	n := 0
	for ; tc != tp; tc++ {
		q.comp.descs[cp&q.comp.mask] = q.tx.descs[tc&q.tx.mask].Addr
		cp++
		n++
	}
	*q.tx.cons = tc
	*q.comp.prod = cp
	return n
}

func TestRingIndexesWrap(t *testing.T) {
	for _, start := range []uint32{0, 1<<32 - 3, 1<<32 - 64} {
		// Every index starts near the top of 2^32, as after a long run.
		q := fakeQueueAt(t, Config{Interface: "x", RxRing: 64, TxRing: 64, PoolSize: 200}, start)
		bufs := make([]*nic.Buf, 32)
		for round := 0; round < 20; round++ {
			kernelRx(t, q, 20, 60)
			n := q.rxBurst(bufs)
			if n != 20 {
				t.Fatalf("start %#x round %d: rxBurst %d, want 20", start, round, n)
			}
			for _, b := range bufs[:n] {
				if b.Len() != 60 || b.IOVA()%uint64(q.umem.chunk) != Headroom {
					t.Fatalf("buffer len %d at %#x", b.Len(), b.IOVA())
				}
			}
			if got := q.txBurst(bufs[:n]); got != n {
				t.Fatalf("txBurst %d of %d", got, n)
			}
			if k := kernelTx(q); k != n {
				t.Fatalf("kernel sent %d of %d", k, n)
			}
		}
		q.reclaim()
		if q.rxPool.Avail()+int(*q.fill.prod-*q.fill.cons) != q.rxPool.Size() || q.txQueued != 0 {
			t.Fatalf("start %#x: %d free + %d on the fill ring of %d; %d queued", start, q.rxPool.Avail(), *q.fill.prod-*q.fill.cons, q.rxPool.Size(), q.txQueued)
		}
	}
}

// TestForeignBuffersAreCopied: a buffer of another pool goes out as a copy in this
// UMEM's TX pool, freed to its own pool; one of this UMEM as it is.
func TestForeignBuffersAreCopied(t *testing.T) {
	q := fakeQueue(t, Config{Interface: "x", RxRing: 64, TxRing: 64})
	other, err := nic.NewMempool(&nic.HeapDMA{}, 4, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b := other.Get()
	copy(b.Data(), "0123456789abcdefghij")
	b.SetLen(20)
	if n := q.txBurst([]*nic.Buf{b}); n != 1 {
		t.Fatalf("txBurst %d", n)
	}
	if other.Avail() != 4 {
		t.Fatalf("foreign buffer not freed: %d of 4", other.Avail())
	}
	d := q.tx.descs[0]
	c := q.byChunk[d.Addr>>q.shift]
	if c.Pool() != q.txPool || string(c.Bytes()) != "0123456789abcdefghij" || d.Len != 20 {
		t.Fatalf("descriptor %+v, buffer %q of pool %p", d, c.Bytes(), c.Pool())
	}
	// Bad lengths are taken, counted and freed.
	short := other.Get()
	short.SetLen(10)
	if n := q.txBurst([]*nic.Buf{short}); n != 1 || q.txBad.Load() != 1 || other.Avail() != 4 {
		t.Fatalf("short frame: n %d, bad %d, avail %d", n, q.txBad.Load(), other.Avail())
	}
}

// TestTxMTU: a queue sends frames up to its MTU's longest (MTU + 18) and counts and frees
// longer ones, which fit its chunks but not the interface.
func TestTxMTU(t *testing.T) {
	q := fakeQueue(t, Config{Interface: "x", RxRing: 64, TxRing: 64, FrameSize: 4096, MTU: 3000})
	other, err := nic.NewMempool(&nic.HeapDMA{}, 4, 4096)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range []int{nic.MaxFrame(3000), nic.MaxFrame(3000) + 1} {
		b := other.Get()
		b.SetLen(l)
		if n := q.txBurst([]*nic.Buf{b}); n != 1 || other.Avail() != 4 {
			t.Fatalf("%d-byte frame: txBurst %d, %d of 4 buffers free", l, n, other.Avail())
		}
		if bad := q.txBad.Load(); bad != uint64(i) {
			t.Fatalf("%d-byte frame at MTU 3000: %d refused, want %d", l, bad, i)
		}
	}
	if d := q.tx.descs[0]; d.Len != uint32(nic.MaxFrame(3000)) || q.tx.local != 1 {
		t.Fatalf("queued %d descriptors, the first %+v; want one of %d bytes", q.tx.local, d, nic.MaxFrame(3000))
	}
}

// TestMaxMTU: the largest MTU a chunk carries, with an Ethernet header and a VLAN tag.
func TestMaxMTU(t *testing.T) {
	for fs, want := range map[int]int{2048: 1774, 4096: 3822} {
		if got := MaxMTU(fs); got != want || nic.MaxFrame(got) != MaxFrame(fs) {
			t.Errorf("MaxMTU(%d) = %d, want %d", fs, got, want)
		}
	}
}

// TestRxBadDescriptors: an address outside the UMEM, at another offset, or a length
// beyond the buffer is counted and not handed out.
func TestRxBadDescriptors(t *testing.T) {
	q := fakeQueue(t, Config{Interface: "x", RxRing: 64, TxRing: 64})
	kernelRx(t, q, 3, 60)
	q.rx.descs[0].Addr = uint64(len(q.byChunk)) << q.shift
	q.rx.descs[1].Addr += 8
	q.rx.descs[2].Len = uint32(q.maxFrame + 1)
	bufs := make([]*nic.Buf, 8)
	if n := q.rxBurst(bufs); n != 0 || q.rxBad.Load() != 3 {
		t.Fatalf("rxBurst %d, bad %d", n, q.rxBad.Load())
	}
}

// TestBurstsAllocateNothing: RX, TX with a copy, reclaim and arm allocate nothing.
func TestBurstsAllocateNothing(t *testing.T) {
	a := fakeQueue(t, Config{Interface: "a", RxRing: 64, TxRing: 64})
	b := fakeQueue(t, Config{Interface: "b", RxRing: 64, TxRing: 64})
	// The kernel asks for every wake-up: the kicks are system calls (on no socket here).
	*b.tx.flags, *a.fill.flags = unix.XDP_RING_NEED_WAKEUP, unix.XDP_RING_NEED_WAKEUP
	bufs := make([]*nic.Buf, 32)
	allocs := testing.AllocsPerRun(100, func() {
		kernelRx(t, a, 16, 60)
		n := a.rxBurst(bufs)
		if b.txBurst(bufs[:n]) != n {
			t.Fatal("txBurst short")
		}
		kernelTx(b)
		b.arm()
		a.arm()
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per burst", allocs)
	}
	if b.kicks.Load() == 0 || a.kicks.Load() == 0 {
		t.Fatalf("kicks: TX %d, fill %d", b.kicks.Load(), a.kicks.Load())
	}
}

func TestProgramListing(t *testing.T) {
	// The program with 3 standing for the map's descriptor: its instructions and their
	// order, as the kernel's verifier sees them.
	ins := program(3, nil)
	want := []string{"LdXMemW dst: r2 src: r1 off: 16 imm: 0", "LoadMapPtr dst: r1 fd: 3", "MovImm dst: r3 imm: 2", "Call FnRedirectMap", "Exit"}
	if len(ins) != len(want) {
		t.Fatalf("%d instructions:\n%v", len(ins), ins)
	}
	for i, w := range want {
		if got := fmt.Sprint(ins[i]); got != w {
			t.Errorf("instruction %d: %q, want %q", i, got, w)
		}
	}
}

// kernelRxFrame plays the kernel receiving one frame of data over as many chunks as it
// takes (XDP_PKT_CONTD on all but the last); bad, if not -1, puts that chunk at another
// offset than the headroom.
func kernelRxFrame(t testing.TB, q *queue, data []byte, bad int) {
	t.Helper()
	fp, fc := *q.fill.prod, *q.fill.cons
	rp := *q.rx.prod
	for i, off := 0, 0; off < len(data); i++ {
		if fc == fp {
			t.Fatal("fill ring empty")
		}
		addr := q.fill.descs[fc&q.fill.mask]
		fc++
		base := addr &^ uint64(q.umem.chunk-1)
		m := min(q.maxFrame, len(data)-off)
		copy(q.byChunk[base>>q.shift].Data(), data[off:off+m])
		d := unix.XDPDesc{Addr: base + Headroom, Len: uint32(m)}
		if i == bad {
			d.Addr += 8
		}
		if off+m < len(data) {
			d.Options = unix.XDP_PKT_CONTD
		}
		q.rx.descs[rp&q.rx.mask] = d
		rp++
		off += m
	}
	*q.fill.cons = fc
	*q.rx.prod = rp
}

// TestMultiBuffer: at MTU 9000 on 2048-byte chunks a 9014-byte frame arrives over six
// chunks and is handed out as one buffer with its bytes, the chunks back in the RX pool;
// a frame of one chunk is handed out as it is; a frame with a bad chunk is dropped whole
// and counted once; a frame split across two bursts (the caller's room) is whole in the
// second. On TX the 9014-byte frame goes out over six TX-pool chunks, all but the last
// with XDP_PKT_CONTD, and counts as one frame.
func TestMultiBuffer(t *testing.T) {
	q := fakeQueue(t, Config{Interface: "x", RxRing: 64, TxRing: 64, FrameSize: 2048, MTU: 9000})
	if !q.sg || q.txMax != nic.MaxFrame(9000) {
		t.Fatalf("sg %v, txMax %d", q.sg, q.txMax)
	}
	jumbo := make([]byte, 9014)
	for i := range jumbo {
		jumbo[i] = byte(i * 7)
	}
	small := []byte("0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopq")
	kernelRxFrame(t, q, jumbo, -1)
	kernelRxFrame(t, q, small, -1)
	kernelRxFrame(t, q, jumbo, 2)
	avail := q.rxPool.Avail()
	bufs := make([]*nic.Buf, 8)
	n := q.rxBurst(bufs)
	if n != 2 || !bytes.Equal(bufs[0].Bytes(), jumbo) || bufs[0].Pool() != q.big || !bytes.Equal(bufs[1].Bytes(), small) || bufs[1].Pool() != q.rxPool {
		t.Fatalf("rxBurst %d: want the jumbo frame whole in a big buffer and the small one in its chunk", n)
	}
	if q.rxBad.Load() != 1 || q.big.Avail() != q.big.Size()-1 {
		t.Fatalf("bad %d, big buffers free %d of %d: the frame with a bad chunk not dropped whole once", q.rxBad.Load(), q.big.Avail(), q.big.Size())
	}
	if st := q.rxPackets.Load(); st != 2 {
		t.Fatalf("rx packets %d", st)
	}
	_ = avail
	// Across bursts: room for one frame, then the jumbo one in the next.
	kernelRxFrame(t, q, small, -1)
	kernelRxFrame(t, q, jumbo, -1)
	one := make([]*nic.Buf, 1)
	if n := q.rxBurst(one); n != 1 || !bytes.Equal(one[0].Bytes(), small) {
		t.Fatalf("first burst %d", n)
	}
	one[0].Free()
	if n := q.rxBurst(one); n != 1 || !bytes.Equal(one[0].Bytes(), jumbo) {
		t.Fatalf("second burst %d", n)
	}
	one[0].Free()
	bufs[1].Free()
	// TX of the jumbo frame (a big buffer: not of this UMEM).
	if n := q.txBurst(bufs[:1]); n != 1 {
		t.Fatalf("txBurst %d", n)
	}
	if q.tx.local != 6 || q.txPackets.Load() != 1 || q.big.Avail() != q.big.Size() {
		t.Fatalf("%d descriptors, %d frames, big buffers free %d of %d", q.tx.local, q.txPackets.Load(), q.big.Avail(), q.big.Size())
	}
	var sent []byte
	for i := range 6 {
		d := q.tx.descs[i]
		if cont := d.Options&unix.XDP_PKT_CONTD != 0; cont != (i < 5) {
			t.Fatalf("descriptor %d options %#x", i, d.Options)
		}
		sent = append(sent, q.byChunk[d.Addr>>q.shift].Data()[:d.Len]...)
	}
	if !bytes.Equal(sent, jumbo) {
		t.Fatal("the chunks sent do not make the frame")
	}
	txAvail := q.txPool.Avail()
	kernelTx(q)
	q.reclaim()
	if q.txPool.Avail() != txAvail+6 {
		t.Fatalf("TX pool %d free after the completions, want %d", q.txPool.Avail(), txAvail+6)
	}
}

// TestMultiBufferAllocs: receiving and sending multi-buffer frames allocates nothing.
func TestMultiBufferAllocs(t *testing.T) {
	a := fakeQueue(t, Config{Interface: "a", RxRing: 64, TxRing: 64, FrameSize: 2048, MTU: 9000})
	b := fakeQueue(t, Config{Interface: "b", RxRing: 64, TxRing: 64, FrameSize: 2048, MTU: 9000})
	jumbo := make([]byte, 9014)
	bufs := make([]*nic.Buf, 4)
	allocs := testing.AllocsPerRun(100, func() {
		kernelRxFrame(t, a, jumbo, -1)
		kernelRxFrame(t, a, jumbo, -1)
		n := a.rxBurst(bufs)
		if m := b.txBurst(bufs[:n]); m != n || n != 2 {
			t.Fatalf("received %d, sent %d of 2", n, m)
		}
		kernelTx(b)
		b.reclaim()
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per burst", allocs)
	}
}

// TestEmptyRxKicks: a receive that finds nothing makes a recvfrom when the fill ring asks
// for a wake-up (a zero-copy driver out of buffers waits for one; a busy poller never
// arms) or the socket busy-polls, and none otherwise. With no socket (fd -1) each kick is
// also a failed one.
func TestEmptyRxKicks(t *testing.T) {
	for _, c := range []struct {
		name                     string
		fillWakeup, busyPoll, sg bool
		kicks                    uint64 // recvfrom calls of one empty receive
	}{
		{name: "nothing asked"},
		{name: "fill ring asks", fillWakeup: true, kicks: 1},
		{name: "busy poll", busyPoll: true, kicks: 1},
		{name: "multi-buffer, fill ring asks", fillWakeup: true, sg: true, kicks: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Interface: "x", RxRing: 64, TxRing: 64}
			if c.sg {
				cfg.MTU = 9000
			}
			q := fakeQueue(t, cfg)
			if q.sg != c.sg {
				t.Fatalf("sg %v", q.sg)
			}
			if c.busyPoll {
				q.rxWake = &alwaysWake
			}
			if c.fillWakeup {
				*q.fill.flags = unix.XDP_RING_NEED_WAKEUP
			}
			bufs := make([]*nic.Buf, 8)
			if n := q.rxBurst(bufs); n != 0 {
				t.Fatalf("rxBurst %d", n)
			}
			if q.kicks.Load() != c.kicks || q.kickErrs.Load() != c.kicks {
				t.Fatalf("kicks %d, failed %d: want %d", q.kicks.Load(), q.kickErrs.Load(), c.kicks)
			}
			// A receive with frames makes none.
			kernelRx(t, q, 2, 60)
			if n := q.rxBurst(bufs); n != 2 || q.kicks.Load() != c.kicks {
				t.Fatalf("rxBurst %d, kicks %d", n, q.kicks.Load())
			}
		})
	}
}
