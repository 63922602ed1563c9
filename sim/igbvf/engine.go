package igbvf

import "github.com/uiod/uiod/sim"

var _ sim.Model = (*Model)(nil)

// Link reports whether the PF's link is up.
func (m *Model) Link() bool { return m.eng.Link() }

// DropNext loses the next n frames the VF's queue would receive (on the engine).
func (m *Model) DropNext(n int) { m.eng.DropNext(n) }

// OversizeNext reports the next n receive completions with a length over their buffer
// (on the engine).
func (m *Model) OversizeNext(n int) { m.eng.OversizeNext(n) }

// InterruptStorm raises queue q's interrupt n times with nothing completed (on the
// engine).
func (m *Model) InterruptStorm(q, n int) { m.eng.InterruptStorm(q, n) }

// Counters implements sim.Model: the engine's counters with what the PF's pool filter
// and anti-spoof check refused (frames over the SET_LPE size count as TooLong; spoofed
// frames and frames sent with VFTE off as TxErrors, not as WireOut, though the engine
// handed them to the PF's switch).
func (m *Model) Counters() sim.Counters {
	v, c := m.Stats(), m.eng.Counters()
	c.TooLong += v.TooLong
	c.Refused += v.Filtered + v.RxOff
	held := v.Spoofed + v.TxOff
	c.TxErrors += held
	c.WireOut -= min(held, c.WireOut) // a snapshot may catch the engine before it counted them
	return c
}
