package igbvf

import (
	"encoding/binary"
	"net"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
)

// mailbox is the VF's side of the PF↔VF mailbox. Guarded by Model.mu.
type mailbox struct {
	mem       [i82576.VFMbxWords]uint32
	vfu       bool   // the VF holds the buffer
	r2c       uint32 // PFSTS, PFACK, RSTD: set until the VF reads them
	rsti      bool   // a PF or VF reset is in progress
	resetting bool   // a VF reset waits for its queues to stop
	unacked   bool   // the PF's last message was not acknowledged (ACK) yet
	inFlight  bool   // a VF message waits for the PF to take it
	req       uint64 // bumped by every REQ, VF reset and flush: a serve of another is dropped
	reply     []uint32
	replyAt   time.Time // when reply started to wait for the VF to give the buffer back
}

// pfDriver is the PF driver's state for the VF (Linux igb's vf_data_storage).
type pfDriver struct {
	mac      net.HardwareAddr
	adminMAC bool      // IGB_VF_FLAG_PF_SET_MAC: the administrator set the MAC
	cts      bool      // IGB_VF_FLAG_CTS: the VF finished its reset handshake
	down     bool      // the PF is in reset (its driver serves no message)
	lastNack time.Time // vf_data->last_nack: the VF's last reset, or the last bare NACK
}

// heldOff reports whether the PF still ignores a VF that is not clear to send (within
// the holdoff after lastNack). m.mu is held.
func (m *Model) heldOff() bool {
	return m.holdoff > 0 && time.Since(m.pf.lastNack) < m.holdoff
}

func (p *pfDriver) init(mac net.HardwareAddr) { p.mac = append(net.HardwareAddr(nil), mac...) }

// readMailbox is a VF read of V2PMAILBOX: the read-to-clear bits go with it. A VF reset
// ends (RSTI off, RSTD on) once its queues read disabled.
func (m *Model) readMailbox() uint32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := &m.mbx
	if b.resetting && m.bar.Read32(i82576.RXDCTL(0))&intelnic.DctlEnable == 0 && m.bar.Read32(i82576.TXDCTL(0))&intelnic.DctlEnable == 0 {
		b.resetting = false
		b.rsti = m.pf.down
		b.r2c |= i82576.MbxRSTD
	}
	v := b.r2c
	b.r2c = 0
	if b.rsti {
		v |= i82576.MbxRSTI
	}
	if b.vfu {
		v |= i82576.MbxVFU
	}
	return v
}

// writeMailbox is a VF write of V2PMAILBOX: VFU takes (or, clear, gives back) the buffer,
// ACK acknowledges the PF's message, REQ posts the VF's.
func (m *Model) writeMailbox(v uint32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := &m.mbx
	held := b.vfu
	b.vfu = v&i82576.MbxVFU != 0
	if v&i82576.MbxAck != 0 {
		b.unacked = false
		m.ackFromVFLocked()
	}
	if v&i82576.MbxReq == 0 {
		m.releasedLocked()
		return
	}
	switch {
	case !held:
		m.fault("mailbox REQ without holding VFU: the message was written unlocked")
		return
	case b.inFlight:
		m.fault("mailbox REQ before the PF took the previous message (PFACK)")
		return
	}
	b.inFlight = true
	b.req++
	req := b.req
	if m.delay < 0 {
		m.releasedLocked()
		if b.inFlight {
			m.serveLocked(b.mem)
		}
		return
	}
	time.AfterFunc(m.delay, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.mbx.req == req && m.mbx.inFlight && !m.closed.Load() {
			m.serveLocked(m.mbx.mem) // what the buffer holds now, as the PF reads it
		}
	})
	m.releasedLocked()
}

// mem is a VF access to VMBMEM word i: only while it holds VFU.
func (m *Model) readMem(i int) uint32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.mbx.vfu {
		m.fault("VMBMEM[%d] read without holding VFU", i)
	}
	return m.mbx.mem[i]
}

func (m *Model) writeMem(i int, v uint32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.mbx.vfu {
		m.fault("VMBMEM[%d] written without holding VFU", i)
		return
	}
	m.mbx.mem[i] = v
}

// serveLocked is the PF driver taking a VF message (igb_rcv_msg_from_vf): PFACK, then
// the reply. A PF in reset takes nothing: the VF's wait for PFACK times out.
func (m *Model) serveLocked(msg [i82576.VFMbxWords]uint32) {
	b := &m.mbx
	b.inFlight = false
	if m.pf.down {
		return
	}
	m.st.messages.Add(1)
	b.r2c |= i82576.MbxPFAck
	m.raiseMailbox()
	w0 := msg[0]
	if w0&(i82576.MsgAck|i82576.MsgNack) != 0 {
		return // a reply of the VF's: nothing to do
	}
	if w0&i82576.MsgTypeMask == i82576.MsgVFReset {
		m.vfResetMsgLocked()
		return
	}
	if !m.pf.cts && m.heldOff() {
		return // taken, not answered: the VF's wait for the reply times out
	}
	ok := false
	if m.pf.cts {
		switch w0 & i82576.MsgTypeMask {
		case i82576.MsgSetMAC:
			ok = m.setMACLocked(msg[1:3])
		case i82576.MsgSetMcast:
			// Linux keeps the count; above 30 hashes the pool goes multicast promiscuous.
			n := int(w0 & i82576.MsgInfoMask >> i82576.MsgInfoShift)
			h := make([]uint16, min(n, i82576.MsgMcastMax))
			for i := range h {
				h[i] = uint16(msg[1+i/2] >> (16 * (i % 2)))
			}
			m.filt.setHashes(h, n > i82576.MsgMcastMax)
			ok = true
		case i82576.MsgSetLPE:
			m.filt.setMaxFrame(int(min(msg[1], i82576.VFMaxFrame))) // clamped, ACKed
			ok = true
		case i82576.MsgSetPromisc:
			if info := w0 & i82576.MsgInfoMask; info&^i82576.PromiscMcast == 0 && !(info != 0 && m.cfg.NoMcastPromisc) {
				m.filt.setMcastPromisc(info != 0)
				ok = true
			}
		default:
			m.st.unhandled.Add(1)
		}
	}
	reply := w0 | i82576.MsgNack
	if ok {
		reply = w0 | i82576.MsgAck
	} else {
		m.st.nacked.Add(1)
	}
	if m.pf.cts {
		reply |= i82576.MsgCTS
	}
	m.pfWriteLocked([]uint32{reply})
}

// vfResetMsgLocked answers VF_RESET (igb_vf_reset_msg): the pool's filters cleared, the
// MAC programmed, receive and transmit on, clear to send, and the MAC in the reply (NACK
// without one).
func (m *Model) vfResetMsgLocked() {
	m.filt.resetPool()
	m.filt.setMAC(m.pf.mac)
	m.filt.setPool(true, true)
	m.pf.cts = true
	reply := []uint32{i82576.MsgVFReset | i82576.MsgAck, 0, 0}
	if string(m.pf.mac) == "\x00\x00\x00\x00\x00\x00" {
		reply[0] = i82576.MsgVFReset | i82576.MsgNack
		m.st.nacked.Add(1)
	}
	var a [8]byte
	copy(a[:], m.pf.mac)
	reply[1] = binary.LittleEndian.Uint32(a[0:])
	reply[2] = binary.LittleEndian.Uint32(a[4:])
	m.pfWriteLocked(reply)
}

// setMACLocked is SET_MAC_ADDR: a valid unicast address, refused whatever it is once the
// administrator set the MAC of the (untrusted) VF (Linux 6.12 igb_set_vf_mac_addr).
func (m *Model) setMACLocked(words []uint32) bool {
	var a [8]byte
	binary.LittleEndian.PutUint32(a[0:], words[0])
	binary.LittleEndian.PutUint32(a[4:], words[1])
	mac := net.HardwareAddr(a[:6])
	if mac[0]&1 != 0 || string(mac) == "\x00\x00\x00\x00\x00\x00" {
		return false
	}
	if m.pf.adminMAC {
		return false
	}
	m.pf.mac = append(net.HardwareAddr(nil), mac...)
	m.filt.setMAC(mac)
	return true
}

// pfWriteLocked writes a PF message into the buffer (PFSTS) and raises the VF's mailbox
// interrupt. While the VF holds the buffer the PF waits for it: the message is written
// when the VF gives VFU back, or lost if that is more than pfLockTimeout later. A VF
// request the PF has not taken yet is flushed (the VF sees PFSTS without PFACK).
func (m *Model) pfWriteLocked(words []uint32) {
	b := &m.mbx
	if b.vfu {
		if b.reply == nil {
			b.replyAt = time.Now()
		}
		b.reply = words
		return
	}
	if b.inFlight {
		b.inFlight = false
		b.req++
		m.st.flushed.Add(1)
	}
	if b.unacked {
		m.st.overwrites.Add(1)
	}
	b.mem = [i82576.VFMbxWords]uint32{}
	copy(b.mem[:], words)
	b.unacked = true
	b.r2c |= i82576.MbxPFSts
	m.raiseMailbox()
}

// releasedLocked is the VF giving the buffer back: a PF message waiting for it is
// written, or lost if it waited longer than pfLockTimeout. m.mu is held.
func (m *Model) releasedLocked() {
	b := &m.mbx
	if b.vfu || b.reply == nil {
		return
	}
	words := b.reply
	b.reply = nil
	if time.Since(b.replyAt) > pfLockTimeout {
		m.st.lost.Add(1)
		return
	}
	m.pfWriteLocked(words)
}

// ping is the PF's control message to the VF (igb_ping_all_vfs): CTS while the VF is
// clear to send.
func (m *Model) ping() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pf.down {
		return
	}
	msg := uint32(i82576.MsgPFControl)
	if m.pf.cts {
		msg |= i82576.MsgCTS
	}
	m.pfWriteLocked([]uint32{msg})
}

// vfReset is VTCTRL.RST or a function-level reset: the VF's queues and interrupt
// registers go back to their reset state, its mailbox is emptied, and the PF driver
// (told by the VFLR event) takes away clear to send, receive and transmit until the VF
// sends VF_RESET. RSTI reads 1 until the queues have stopped.
func (m *Model) vfReset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st.vfResets.Add(1)
	b := &m.mbx
	*b = mailbox{req: b.req + 1, rsti: true, resetting: true}
	m.pf.cts = false
	m.pf.lastNack = time.Now()
	if !m.pf.adminMAC {
		// igb_vf_reset_event: "clear mac address as we were hotplug removed/added".
		m.pf.mac = make(net.HardwareAddr, 6)
		m.filt.setMAC(m.pf.mac)
	}
	m.filt.resetPool()
	m.filt.setPool(false, false)
	r := m.bar
	r.Write32(i82576.EIMC, vfVectorMask)
	r.Write32(i82576.EIAC, 0)
	r.Write32(i82576.EIAM, 0)
	r.Write32(i82576.IVAR0, 0)
	r.Write32(i82576.IVARMisc, 0)
	for v := 0; v < i82576.VFVectors; v++ {
		r.Write32(i82576.EITR(v), 0)
	}
	r.Write32(i82576.RXDCTL(0), 0)
	r.Write32(i82576.TXDCTL(0), 0)
	r.Write32(i82576.EICR, vfVectorMask)
}

// ackFromVFLocked is igb_rcv_ack_from_vf: a VF that acknowledges a PF message while not
// clear to send, past the holdoff, is sent a bare NACK (no message type). m.mu is held.
func (m *Model) ackFromVFLocked() {
	if m.pf.cts || m.pf.down || m.heldOff() {
		return
	}
	m.pf.lastNack = time.Now()
	m.st.bareNacks.Add(1)
	m.pfWriteLocked([]uint32{i82576.MsgNack})
}
