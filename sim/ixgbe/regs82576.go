package ixgbe

import "github.com/uiod/uiod/sim"

// 82576 registers the engine uses by name.
const (
	rctl       = 0x00100
	tctl       = 0x00400
	rlpml      = 0x05004
	rxpbs82576 = 0x02404
	icr        = 0x000C0
	rctlEN     = 1 << 1
	rctlUPE    = 1 << 3
	rctlMPE    = 1 << 4
	rctlLPE    = 1 << 5
	rctlBAM    = 1 << 15
	rctlSECRC  = 1 << 26
	tctlEN     = 1 << 1
	tctlPSP    = 1 << 3
	icrLSC     = 1 << 2
)

func (m *Model) registers82576() []sim.Reg {
	return nil
}
