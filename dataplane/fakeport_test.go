package dataplane

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
)

// goDMA is a pci.DMA backed by Go memory with made-up bus addresses.
type goDMA struct {
	mu   sync.Mutex
	next uint64
	live int
}

func (d *goDMA) Alloc(size int) (pci.Mem, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.next == 0 {
		d.next = 1 << 32
	}
	m := pci.Mem{Bytes: make([]byte, size), IOVA: d.next}
	d.next += uint64(size+4095) &^ 4095
	d.live++
	return m, nil
}

func (d *goDMA) Free(pci.Mem) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.live--
	return nil
}

// fakeRxQueue is an RX ring: buffers posted by the driver side (the polling thread,
// in RxBurst) and filled by the "wire" side (inject, any goroutine), like a NIC's.
type fakeRxQueue struct {
	mu      sync.Mutex
	pool    *nic.Mempool
	posted  []*nic.Buf // free descriptors owned by the "NIC"
	filled  []*nic.Buf // received, not yet taken by RxBurst
	enabled bool
	vec     *irq.Vector
	missed  int
}

// fakePort is a nic.Port whose frames come from inject and whose sent frames are
// recorded by the polling thread (through onTx) and freed at once.
type fakePort struct {
	mac     net.HardwareAddr
	rxq     []*fakeRxQueue
	ntx     int
	txLimit int // if > 0, TxBurst accepts at most this many frames per call
	// onTx sees every accepted frame on the polling thread before it is freed.
	onTx func(q int, b *nic.Buf)

	txPackets  atomic.Uint64
	interrupts atomic.Uint64
}

const fakeRing = 256

var fakePortID atomic.Uint32

func newFakePort(t testing.TB, dma *goDMA, nrx, ntx int, withIRQ bool) *fakePort {
	t.Helper()
	id := fakePortID.Add(1)
	p := &fakePort{mac: net.HardwareAddr{2, 0, 0, 0, byte(id >> 8), byte(id)}, ntx: ntx}
	for i := 0; i < nrx; i++ {
		pool, err := nic.NewMempool(dma, 2*fakeRing, 2048)
		if err != nil {
			t.Fatal(err)
		}
		q := &fakeRxQueue{pool: pool}
		for len(q.posted) < fakeRing {
			q.posted = append(q.posted, pool.Get())
		}
		if withIRQ {
			v, err := irq.NewEventfd(irq.MSIX, i)
			if err != nil {
				t.Fatal(err)
			}
			q.vec = v
		}
		p.rxq = append(p.rxq, q)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// inject puts frame into RX queue q as the NIC would: into the next posted buffer, then
// the interrupt if it is enabled. It reports false if no buffer was posted (a miss).
func (p *fakePort) inject(q int, frame []byte) bool {
	r := p.rxq[q]
	r.mu.Lock()
	n := len(r.posted)
	if n == 0 {
		r.missed++
		r.mu.Unlock()
		return false
	}
	b := r.posted[n-1]
	r.posted = r.posted[:n-1]
	b.SetLen(copy(b.Data(), frame))
	r.filled = append(r.filled, b)
	fire := r.enabled && r.vec != nil
	r.mu.Unlock()
	if fire {
		p.interrupts.Add(1)
		r.vec.Signal()
	}
	return true
}

func (p *fakePort) MAC() net.HardwareAddr { return p.mac }
func (p *fakePort) NumRxQueues() int      { return len(p.rxq) }
func (p *fakePort) NumTxQueues() int      { return p.ntx }

func (p *fakePort) RxBurst(q int, bufs []*nic.Buf) int {
	r := p.rxq[q]
	r.mu.Lock()
	n := copy(bufs, r.filled)
	r.filled = append(r.filled[:0], r.filled[n:]...)
	for len(r.posted) < fakeRing {
		b := r.pool.Get()
		if b == nil {
			break
		}
		r.posted = append(r.posted, b)
	}
	r.mu.Unlock()
	return n
}

func (p *fakePort) TxBurst(q int, bufs []*nic.Buf) int {
	n := len(bufs)
	if p.txLimit > 0 && n > p.txLimit {
		n = p.txLimit
	}
	for _, b := range bufs[:n] {
		if p.onTx != nil {
			p.onTx(q, b)
		}
		b.Free() // "sent" at once
	}
	p.txPackets.Add(uint64(n))
	return n
}

func (p *fakePort) RxVector(q int) *irq.Vector {
	if v := p.rxq[q].vec; v != nil {
		return v
	}
	return nil
}

func (p *fakePort) EnableRxInterrupt(q int) {
	r := p.rxq[q]
	r.mu.Lock()
	r.enabled = true // like a NIC that does not fire a pending cause on unmask
	r.mu.Unlock()
}

func (p *fakePort) DisableRxInterrupt(q int) {
	r := p.rxq[q]
	r.mu.Lock()
	r.enabled = false
	r.mu.Unlock()
}

func (p *fakePort) Link() nic.Link   { return nic.Link{Up: true, SpeedMbps: 10000} }
func (p *fakePort) Stats() nic.Stats { return nic.Stats{TxPackets: p.txPackets.Load()} }

// leaked is the number of buffers that are neither free, posted nor waiting in a ring.
func (p *fakePort) leaked() int {
	n := 0
	for _, r := range p.rxq {
		r.mu.Lock()
		n += r.pool.Size() - r.pool.Avail() - len(r.posted) - len(r.filled)
		r.mu.Unlock()
	}
	return n
}

func (p *fakePort) Close() error {
	var first error
	for _, r := range p.rxq {
		r.mu.Lock()
		for _, b := range r.posted {
			b.Free()
		}
		for _, b := range r.filled {
			b.Free()
		}
		r.posted, r.filled = nil, nil
		if err := r.pool.Close(); err != nil && first == nil {
			first = fmt.Errorf("rx pool: %w", err)
		}
		r.mu.Unlock()
		if r.vec != nil {
			r.vec.Close()
		}
	}
	return first
}

// Test frames carry a sequence number and an injection time (idle.Now) after the
// Ethernet header.
const (
	frameLen = 64
	offSeq   = 14
	offTime  = 22
)

func makeFrame(buf []byte, dst, src net.HardwareAddr, seq uint64, ts int64) []byte {
	f := buf[:frameLen]
	clear(f)
	copy(f[0:6], dst)
	copy(f[6:12], src)
	binary.BigEndian.PutUint16(f[12:14], 0x88b5) // local experimental ethertype
	binary.LittleEndian.PutUint64(f[offSeq:], seq)
	binary.LittleEndian.PutUint64(f[offTime:], uint64(ts))
	return f
}

func frameSeq(f []byte) uint64 { return binary.LittleEndian.Uint64(f[offSeq:]) }
func frameTime(f []byte) int64 { return int64(binary.LittleEndian.Uint64(f[offTime:])) }
