package dataplane

import (
	"fmt"
	"sync/atomic"

	"github.com/uiod/uiod/nic"
)

// Direction is which way a mirrored frame crossed its port.
type Direction uint8

// Directions.
const (
	RX Direction = iota
	TX
)

// String is "rx" or "tx".
func (d Direction) String() string {
	if d == TX {
		return "tx"
	}
	return "rx"
}

// Mirror sees copies of the frames a port receives and sends: a packet capture. Mirror is
// called on the poll thread itself, for RX frames right after the RX burst and for TX
// frames just before the TX burst that sends them, so it must copy what it wants and
// return at once: never block, never keep the buffers. thread is the poll thread's index
// (one caller per index at a time), queue the RX or TX queue, now the poll's idle.Now().
type Mirror interface {
	Mirror(thread int, dir Direction, queue int, frames []*nic.Buf, now int64)
}

// mirrorSlot is where a port's mirror is attached. Every queue and TX slot points at
// one, so that the poll loop's check is one load and one branch.
type mirrorSlot struct {
	m atomic.Pointer[mirrorRef]
}

type mirrorRef struct{ m Mirror }

// SetMirror attaches m to port p, replacing any mirror it had; nil detaches it. A poll
// thread may still be inside the previous mirror's Mirror call for a moment after
// SetMirror returns.
func (dp *Dataplane) SetMirror(p PortID, m Mirror) error {
	if int(p) >= len(dp.mirrors) {
		return fmt.Errorf("port %d: no such port (have %d)", p, len(dp.mirrors))
	}
	if m == nil {
		dp.mirrors[p].m.Store(nil)
		return nil
	}
	dp.mirrors[p].m.Store(&mirrorRef{m})
	return nil
}

// Mirrored reports whether port p has a mirror attached.
func (dp *Dataplane) Mirrored(p PortID) bool {
	return int(p) < len(dp.mirrors) && dp.mirrors[p].m.Load() != nil
}

// Ports returns the ports by PortID, with their default names filled in.
func (dp *Dataplane) Ports() []Port {
	return append([]Port(nil), dp.cfg.Ports...)
}
