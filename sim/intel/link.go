package intel

import (
	"time"

	"github.com/uiod/uiod/wire"
)

// linkState is the port's link. It is up when a wire is plugged in, no fault injection
// holds it down, and the (optional) auto-negotiation delay after reset has passed.
// Guarded by the device lock.
type linkState struct {
	plugged bool
	wanted  bool // false while fault injection holds the link down
	up      bool
	readyAt int64
	timer   *time.Timer
}

func (l *linkState) stopTimer() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}

// reset restarts auto-negotiation.
func (l *linkState) reset(m *Model) {
	l.stopTimer()
	l.up = false
	l.readyAt = 0
	if d := m.cfg.LinkUpDelay; d > 0 {
		l.readyAt = wire.Now() + int64(d)
		l.timer = time.AfterFunc(d, func() {
			m.dev.Lock()
			defer m.dev.Unlock()
			if !m.closing {
				m.updateLink()
			}
		})
	}
	m.updateLink()
}

// updateLink recomputes the link and raises LSC when it changed. The lock is held.
func (m *Model) updateLink() {
	l := &m.link
	up := l.plugged && l.wanted && wire.Now() >= l.readyAt
	if up == l.up {
		return
	}
	l.up = up
	m.st.LinkChanges++
	if m.cfg.Flavor == X82576 {
		m.ic.raiseMisc(icrLSC)
	} else {
		m.ic.raiseMisc(eicrLSC)
	}
}

// LINKS bits (82599).
const (
	linksUp       = 1 << 30
	linksSpeed10G = 3 << 28
	linksStatus   = 1 << 7
)

func (m *Model) readLINKS(int, uint32) uint32 {
	if !m.link.up {
		return 0
	}
	return linksUp | linksSpeed10G | linksStatus
}

// STATUS bits.
const (
	statusGIOMaster = 1 << 19 // 82599 and 82576: master requests enabled
	statusLU82576   = 1 << 1
	statusFD82576   = 1 << 0
	statusSpeed1000 = 2 << 6
	ctrlGIODisable  = 1 << 2
)

func (m *Model) readSTATUS(_ int, v uint32) uint32 {
	v &^= statusGIOMaster | statusLU82576 | statusFD82576 | statusSpeed1000
	if m.dev.BusMaster() && m.get(0)&ctrlGIODisable == 0 {
		v |= statusGIOMaster
	}
	if m.cfg.Flavor == X82576 && m.link.up {
		v |= statusLU82576 | statusFD82576 | statusSpeed1000
	}
	return v
}

// SetLink forces the link down (false) or lets it come up again (true), raising LSC on
// every change.
func (m *Model) SetLink(up bool) {
	m.dev.Lock()
	defer m.dev.Unlock()
	m.link.wanted = up
	m.updateLink()
}

// Link reports whether the link is up.
func (m *Model) Link() bool {
	m.dev.Lock()
	defer m.dev.Unlock()
	return m.link.up
}

// FlapLink takes the link down and brings it back after downFor (at once when downFor is
// 0), raising LSC twice.
func (m *Model) FlapLink(downFor time.Duration) {
	m.SetLink(false)
	if downFor <= 0 {
		m.SetLink(true)
		return
	}
	time.AfterFunc(downFor, func() { m.SetLink(true) })
}
