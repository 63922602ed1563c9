package igbvf

import (
	"net"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
)

// The PF's events, as tests cause them.

// SetAdminMAC sets the VF's MAC from the PF ("ip link set PF vf N mac ..."): Linux igb
// programs the pool's address at once and tells the VF nothing; the VF's own SET_MAC_ADDR
// of another address is refused from now on.
func (m *Model) SetAdminMAC(mac net.HardwareAddr) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pf.adminMAC = true
	m.pf.mac = append(net.HardwareAddr(nil), mac...)
	m.filt.setMAC(mac)
}

// PFDown starts a PF reset ("ip link set PF down", or the PF driver resetting its port):
// the VF's receive and transmit stop, it loses clear to send, gets a control message
// without CTS, reads RSTI and the link down, and its messages go unanswered until PFUp.
// The reset clears the VF's statistics registers (QEMU's igb_reset sets every register
// back; the PF's CTRL.RST in Linux's igb_reset).
func (m *Model) PFDown() {
	m.mu.Lock()
	m.st.pfResets.Add(1)
	m.pf.cts = false
	m.filt.setPool(false, false)
	m.pfWriteLocked([]uint32{i82576.MsgPFControl})
	m.pf.down = true
	m.mbx.rsti = true
	m.clearStatsLocked()
	m.mu.Unlock()
	m.eng.SetLink(false)
}

// PFUp ends the PF reset: RSTD (the PF driver's CTRL_EXT.PFRSTD), and the link comes back.
func (m *Model) PFUp() {
	m.eng.SetLink(true)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pf.down = false
	m.mbx.rsti = m.mbx.resetting
	m.mbx.r2c |= i82576.MbxRSTD
	m.raiseMailbox()
}

// ResetPF runs PFDown and, after downFor, PFUp.
func (m *Model) ResetPF(downFor time.Duration) {
	m.PFDown()
	time.AfterFunc(downFor, func() {
		if !m.closed.Load() {
			m.PFUp()
		}
	})
}

// CTS reports whether the PF has the VF clear to send (its reset handshake done).
func (m *Model) CTS() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pf.cts
}
