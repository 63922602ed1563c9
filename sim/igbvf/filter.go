package igbvf

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/wire"
)

// defaultMaxFrame is the VF's receive limit before its driver sends SET_LPE: a standard
// frame with a VLAN tag, FCS included.
const defaultMaxFrame = 1522

// filter is the PF's switch between the wire and the VF's pool: the receive filter
// (VFRE, the pool's unicast address, broadcast, registered multicast hashes, the SET_LPE
// size) and the transmit checks (VFTE, MAC anti-spoofing). The model's wire frames carry
// no FCS; sizes here count it.
type filter struct {
	mu        sync.Mutex
	addr      [6]byte
	rxOn      bool // VFRE
	txOn      bool // VFTE
	antiSpoof bool
	mcProm    bool // SET_PROMISC multicast
	mcOver    bool // more hashes registered than the filter holds: multicast promiscuous
	hashes    [i82576.MsgMcastMax]uint16
	nHashes   int
	maxFrame  int

	out     wire.Port                    // the PF port's cable
	handler atomic.Pointer[wire.Handler] // the engine's receive

	spoofed, txOff, rxOff, filtered, tooLong atomic.Uint64
}

func (f *filter) init(mac net.HardwareAddr, antiSpoof bool) {
	copy(f.addr[:], mac)
	f.antiSpoof = antiSpoof
	f.maxFrame = defaultMaxFrame
}

func (f *filter) mac() net.HardwareAddr {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append(net.HardwareAddr(nil), f.addr[:]...)
}

func (f *filter) setMAC(mac net.HardwareAddr) {
	f.mu.Lock()
	copy(f.addr[:], mac)
	f.mu.Unlock()
}

// setPool sets receive and transmit for the VF (VFRE, VFTE).
func (f *filter) setPool(rx, tx bool) {
	f.mu.Lock()
	f.rxOn, f.txOn = rx, tx
	f.mu.Unlock()
}

// resetPool is what a VF reset clears: its multicast hashes, multicast promiscuous mode
// and receive size.
func (f *filter) resetPool() {
	f.mu.Lock()
	f.nHashes, f.mcProm, f.mcOver, f.maxFrame = 0, false, false, defaultMaxFrame
	f.mu.Unlock()
}

// setHashes sets the pool's multicast hashes; over, more than it holds were registered
// (the PF then takes every multicast frame, Linux's VMOLR.MPME).
func (f *filter) setHashes(h []uint16, over bool) {
	f.mu.Lock()
	f.nHashes = copy(f.hashes[:], h)
	f.mcOver = over
	f.mu.Unlock()
}

func (f *filter) setMcastPromisc(on bool) {
	f.mu.Lock()
	f.mcProm = on
	f.mu.Unlock()
}

func (f *filter) setMaxFrame(n int) {
	f.mu.Lock()
	f.maxFrame = n
	f.mu.Unlock()
}

// McastHash is the 12-bit multicast table hash of addr as the VF sends it in
// SET_MULTICAST (Linux e1000_hash_mc_addr_vf with a 128-register table: bits 47:36).
func McastHash(addr []byte) uint16 { return (uint16(addr[4])>>4 | uint16(addr[5])<<4) & 0xFFF }

type filterStats struct{ spoofed, txOff, rxOff, filtered, tooLong uint64 }

func (f *filter) stats() filterStats {
	return filterStats{f.spoofed.Load(), f.txOff.Load(), f.rxOff.Load(), f.filtered.Load(), f.tooLong.Load()}
}

// wrap puts the filter between the engine and w: the engine gets the filter's end.
func (f *filter) wrap(w wire.Port) wire.Port {
	f.mu.Lock()
	f.out = w
	f.mu.Unlock()
	if w != nil {
		w.SetHandler(f.receive)
	}
	return (*filterPort)(f)
}

// accept decides whether a frame from the wire reaches the VF's pool.
func (f *filter) accept(frame []byte) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case !f.rxOn:
		f.rxOff.Add(1)
		return false
	case len(frame) < 14:
		return true // the engine counts the runt
	case len(frame)+4 > f.maxFrame:
		f.tooLong.Add(1)
		return false
	}
	dst := frame[:6]
	switch {
	case dst[0]&1 == 0:
		if bytes.Equal(dst, f.addr[:]) {
			return true
		}
	case bytes.Equal(dst, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}):
		return true
	case f.mcProm, f.mcOver:
		return true
	default:
		h := McastHash(dst)
		for _, v := range f.hashes[:f.nHashes] {
			if v == h {
				return true
			}
		}
	}
	f.filtered.Add(1)
	return false
}

// receive passes a frame from the wire to the engine when the pool takes it.
func (f *filter) receive(frame []byte, ts int64) {
	if !f.accept(frame) {
		return
	}
	if h := f.handler.Load(); h != nil && *h != nil {
		(*h)(frame, ts)
	}
}

// filterPort is the filter as the engine's wire.
type filterPort filter

// Send implements wire.Port: the transmit checks, then the cable.
func (p *filterPort) Send(frame []byte) error {
	f := (*filter)(p)
	f.mu.Lock()
	out, txOn := f.out, f.txOn
	spoof := f.antiSpoof && len(frame) >= 12 && !bytes.Equal(frame[6:12], f.addr[:])
	f.mu.Unlock()
	switch {
	case !txOn:
		f.txOff.Add(1)
		return nil
	case spoof:
		f.spoofed.Add(1)
		return nil
	case out == nil:
		return wire.ErrClosed
	}
	return out.Send(frame)
}

// SetHandler implements wire.Port.
func (p *filterPort) SetHandler(h wire.Handler) { p.handler.Store(&h) }

// Close implements wire.Port.
func (p *filterPort) Close() error {
	f := (*filter)(p)
	f.mu.Lock()
	out := f.out
	f.mu.Unlock()
	if out != nil {
		return out.Close()
	}
	return nil
}

// Multicast is the pool's multicast filter as the VF's driver set it: the hashes it
// registered (SET_MULTICAST) and whether the PF takes every multicast frame for it
// (SET_PROMISC multicast, or more hashes than it holds).
func (m *Model) Multicast() (hashes []uint16, all bool) {
	f := &m.filt
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]uint16(nil), f.hashes[:f.nHashes]...), f.mcProm || f.mcOver
}
