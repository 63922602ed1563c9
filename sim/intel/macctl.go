package intel

import (
	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
)

// ctlBit reports whether a MAC function is on: the 82576 keeps its switch in bit b76 of
// register r76, the 82599 in bit b99 of r99.
func (m *Model) ctlBit(r76, b76, r99, b99 uint32) bool {
	if m.cfg.Flavor == X82576 {
		return m.get(r76)&b76 != 0
	}
	return m.get(r99)&b99 != 0
}

// rxEnabled reports whether the receiver is on (82576 RCTL.EN, 82599 RXCTRL.RXEN).
func (m *Model) rxEnabled() bool {
	return m.ctlBit(i82576.RCTL, i82576.RctlEN, i82599.RXCTRL, i82599.RxctrlRXEN)
}

// crcStrip reports whether the driver enabled FCS stripping.
func (m *Model) crcStrip() bool {
	return m.ctlBit(i82576.RCTL, i82576.RctlSECRC, i82599.HLREG0, i82599.Hlreg0RxCRCStrp)
}

// txEnabled reports whether the transmitter is on (82576 TCTL.EN, 82599 DMATXCTL.TE).
func (m *Model) txEnabled() bool {
	return m.ctlBit(i82576.TCTL, i82576.TctlEN, i82599.DMATXCTL, i82599.DmatxctlTE)
}

// txPad reports whether short frames are padded to 60 bytes.
func (m *Model) txPad() bool {
	return m.ctlBit(i82576.TCTL, i82576.TctlPSP, i82599.HLREG0, i82599.Hlreg0TxPadEn)
}

// txCRC reports whether the MAC may append an FCS at all (the 82576 always may).
func (m *Model) txCRC() bool {
	return m.cfg.Flavor == X82576 || m.get(i82599.HLREG0)&i82599.Hlreg0TxCRCEn != 0
}
