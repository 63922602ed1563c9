package intel

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel/ring"
)

// regs is a register file in a map: reads return what was last written.
type regs struct {
	v      map[uint32]uint32
	writes []uint32 // offsets in write order
}

func newRegs() *regs { return &regs{v: map[uint32]uint32{}} }

func (r *regs) Read32(off uint32) uint32 { return r.v[off] }
func (r *regs) Write32(off, v uint32) {
	r.v[off] = v
	r.writes = append(r.writes, off)
}
func (r *regs) Read64(off uint32) uint64 { return uint64(r.v[off]) | uint64(r.v[off+4])<<32 }
func (r *regs) Write64(off uint32, v uint64) {
	r.Write32(off, uint32(v))
	r.Write32(off+4, uint32(v>>32))
}
func (r *regs) Len() int { return 128 << 10 }

func TestInterval(t *testing.T) {
	const (
		ixgbeMask = 0x1ff << 3
		igbMask   = 0x1fff << 2
	)
	tests := []struct {
		d, unit time.Duration
		mask    uint32
		shift   uint
		want    uint32
	}{
		{0, 2048, ixgbeMask, 3, 0},
		{time.Nanosecond, 2048, ixgbeMask, 3, 1 << 3},
		{4095, 2048, ixgbeMask, 3, 1 << 3},
		{4096, 2048, ixgbeMask, 3, 2 << 3},
		{time.Second, 2048, ixgbeMask, 3, 0x1ff << 3},
		{0, time.Microsecond, igbMask, 2, 0},
		{999, time.Microsecond, igbMask, 2, 1 << 2},
		{250 * time.Microsecond, time.Microsecond, igbMask, 2, 250 << 2},
		{time.Hour, time.Microsecond, igbMask, 2, 0x1fff << 2},
		// 2^32 units and a few: the count must saturate, not wrap to a few units.
		{(1<<32 + 5) * 2048, 2048, ixgbeMask, 3, 0x1ff << 3},
		{(1<<32 + 5) * time.Microsecond, time.Microsecond, igbMask, 2, 0x1fff << 2},
	}
	for _, tt := range tests {
		if got := Interval(tt.d, tt.unit, tt.mask, tt.shift); got != tt.want {
			t.Errorf("Interval(%v, %v, %#x, %d) = %#x, want %#x", tt.d, tt.unit, tt.mask, tt.shift, got, tt.want)
		}
	}
}

func TestSetIVAR(t *testing.T) {
	tests := []struct {
		old    uint32
		shift  uint
		vector int
		want   uint32
	}{
		{0, 0, 0, 0x80},
		{0, 8, 3, 0x8300},
		{0xffffffff, 16, 1, 0xff81ffff},
		{0x11223344, 24, 0x7f, 0xff223344},
	}
	for _, tt := range tests {
		r := newRegs()
		r.v[0x1700] = tt.old
		entry := func(q int, tx bool) (uint32, uint) { return 0x1700, tt.shift }
		SetIVAR(&Port{bar: r, layout: Layout{IVAR: entry}}, 0, false, tt.vector)
		if got := r.v[0x1700]; got != tt.want {
			t.Errorf("old %#x shift %d vector %d: IVAR %#x, want %#x", tt.old, tt.shift, tt.vector, got, tt.want)
		}
	}
}

// TestMapRxQueues checks that RX queue q's IVAR entry names vector q and the bits
// returned are the queues'.
func TestMapRxQueues(t *testing.T) {
	tests := []struct {
		queues int
		bits   uint32
	}{
		{1, 0x1},
		{2, 0x3},
		{4, 0xf},
	}
	for _, tt := range tests {
		r := newRegs()
		entry := func(q int, tx bool) (uint32, uint) { return 0x1700 + 4*uint32(q), 8 }
		p := &Port{bar: r, layout: Layout{IVAR: entry}, rx: make([]*ring.RxQueue, tt.queues)}
		if got := MapRxQueues(p); got != tt.bits {
			t.Errorf("%d queues: bits %#x, want %#x", tt.queues, got, tt.bits)
		}
		for q := 0; q < tt.queues; q++ {
			if got, want := r.v[0x1700+4*uint32(q)], uint32(q|intelnic.IvarValid)<<8; got != want {
				t.Errorf("%d queues: queue %d IVAR %#x, want %#x", tt.queues, q, got, want)
			}
		}
	}
}

// TestModerate checks that the first n vectors' EITR get the configured interval in the
// layout's format and the others are left alone.
func TestModerate(t *testing.T) {
	tests := []struct {
		itr  time.Duration
		n    int
		want uint32
	}{
		{0, 2, 0x80000000},
		{100 * time.Microsecond, 1, 100<<2 | 0x80000000},
		{100 * time.Microsecond, 3, 100<<2 | 0x80000000},
	}
	for _, tt := range tests {
		r := newRegs()
		p := &Port{bar: r, layout: Layout{
			EITR: func(v int) uint32 { return 0x1680 + 4*uint32(v) },
			ITR:  Moderation{Unit: time.Microsecond, Mask: 0x1fff << 2, Shift: 2, Keep: 0x80000000},
		}}
		p.cfg.ITR = tt.itr
		Moderate(p, tt.n)
		for v := 0; v < 4; v++ {
			want := tt.want
			if v >= tt.n {
				want = 0
			}
			if got := r.v[0x1680+4*uint32(v)]; got != want {
				t.Errorf("ITR %v, %d vectors: EITR(%d) = %#x, want %#x", tt.itr, tt.n, v, got, want)
			}
		}
	}
}

func TestSetupRSS(t *testing.T) {
	tests := []struct {
		queues int
		writes int
	}{
		{1, 0},
		{2, 10 + 32 + 2},
		{3, 10 + 32 + 2},
		{16, 10 + 32 + 2},
	}
	for _, tt := range tests {
		r := newRegs()
		p := &Port{bar: r, rx: make([]*ring.RxQueue, tt.queues)}
		SetupRSS(p, &RSSKey, 0x2|1<<16)
		if len(r.writes) != tt.writes {
			t.Errorf("%d queues: %d register writes, want %d", tt.queues, len(r.writes), tt.writes)
		}
		if tt.queues < 2 {
			continue
		}
		if got := r.v[intelnic.RSSRK]; got != 0xda565a6d {
			t.Errorf("%d queues: RSSRK[0] = %#x, want the key's first bytes little-endian", tt.queues, got)
		}
		if got := r.v[intelnic.RSSRK+36]; got != 0xfa01acbe {
			t.Errorf("%d queues: RSSRK[9] = %#x", tt.queues, got)
		}
		for e := 0; e < retaSize; e++ {
			got := int(r.v[intelnic.RETA+4*uint32(e/4)] >> (8 * (e % 4)) & 0xff)
			if got != e%tt.queues {
				t.Fatalf("%d queues: RETA entry %d = %d, want %d", tt.queues, e, got, e%tt.queues)
			}
		}
		if got := r.v[intelnic.MRQC]; got != 0x2|1<<16 {
			t.Errorf("%d queues: MRQC %#x", tt.queues, got)
		}
		if r.v[intelnic.RXCSUM]&intelnic.RxcsumPCSD == 0 {
			t.Errorf("%d queues: RXCSUM %#x without PCSD: the write-back carries no RSS hash, and QEMU's igb computes none", tt.queues, r.v[intelnic.RXCSUM])
		}
	}
}

func TestReadMAC(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi uint32
		keep   bool
	}{
		{"valid", 0x33221100 &^ 1, 0x5544 | intelnic.RahAV, true},
		{"not valid", 0x33221100, 0x5544, false},
		{"zero", 0, intelnic.RahAV, false},
		{"multicast", 0x33221101, 0x5544 | intelnic.RahAV, false},
	}
	for _, tt := range tests {
		r := newRegs()
		r.v[intelnic.RAL0], r.v[intelnic.RAH0] = tt.lo, tt.hi
		p := &Port{bar: r}
		if err := ReadMAC(p); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		mac := p.MAC()
		stored := net.HardwareAddr{byte(r.v[intelnic.RAL0]), byte(r.v[intelnic.RAL0] >> 8), byte(r.v[intelnic.RAL0] >> 16), byte(r.v[intelnic.RAL0] >> 24), byte(r.v[intelnic.RAH0]), byte(r.v[intelnic.RAH0] >> 8)}
		if mac.String() != stored.String() || r.v[intelnic.RAH0]&intelnic.RahAV == 0 {
			t.Errorf("%s: MAC %v, receive address 0 holds %v (RAH %#x)", tt.name, mac, stored, r.v[intelnic.RAH0])
		}
		if tt.keep != (len(r.writes) == 0) {
			t.Errorf("%s: %d register writes, keep %v", tt.name, len(r.writes), tt.keep)
		}
		if !tt.keep && (mac[0]&1 != 0 || mac[0]&2 == 0) {
			t.Errorf("%s: replacement %v is not unicast and locally administered", tt.name, mac)
		}
	}
}

func TestWaitBits(t *testing.T) {
	r := newRegs()
	r.v[0x10] = 0x0f
	if v, err := WaitBits(r, 0x10, 0x3, 0x3, time.Millisecond); err != nil || v != 0x0f {
		t.Errorf("bits present: %#x, %v", v, err)
	}
	if err := WaitClear(r, 0x10, 0x30, time.Millisecond); err != nil {
		t.Errorf("bits clear: %v", err)
	}
	v, err := WaitBits(r, 0x10, 0x10, 0x10, time.Millisecond)
	if !errors.Is(err, errTimeout) || v != 0x0f {
		t.Errorf("bit never set: %#x, %v, want the last value and a timeout", v, err)
	}
	if err := WaitSet(r, 0x10, 0x1f, time.Millisecond); !errors.Is(err, errTimeout) {
		t.Errorf("WaitSet of a missing bit: %v", err)
	}
}

// TestInterruptsNone checks that a port configured without interrupts enables no vectors.
func TestInterruptsNone(t *testing.T) {
	p := &Port{cfg: nic.Config{Interrupts: nic.IRQNone}}
	if _, ok, err := EnableVectors(p); err != nil || ok {
		t.Errorf("EnableVectors with IRQNone: ok %v, err %v", ok, err)
	}
}

// TestWaitLink checks the last bring-up step: it returns as soon as the link reads up,
// and a link still down after LinkTimeout ends the wait without an error (the port opens
// with the link down).
func TestWaitLink(t *testing.T) {
	for _, tt := range []struct {
		name    string
		upAfter int // reads until the link is up; 0: never
		timeout time.Duration
	}{
		{"up at once", 1, time.Hour},
		{"up after reads", 5, time.Hour},
		{"never up", 0, 30 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reads := 0
			p := &Port{cfg: nic.Config{LinkTimeout: tt.timeout}}
			p.ops.Link = func() nic.Link {
				reads++
				return nic.Link{Up: tt.upAfter > 0 && reads >= tt.upAfter}
			}
			start := time.Now()
			WaitLink(p)
			took := time.Since(start)
			if tt.upAfter > 0 && reads != tt.upAfter {
				t.Errorf("%d link reads, want %d (the wait goes on after the link is up)", reads, tt.upAfter)
			}
			if tt.upAfter == 0 && took < tt.timeout {
				t.Errorf("returned after %v with the link down, want the whole %v", took, tt.timeout)
			}
		})
	}
}
