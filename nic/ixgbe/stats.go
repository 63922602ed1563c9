package ixgbe

import (
	"github.com/uiod/uiod/nic"
)

// hwCounters accumulates the NIC's read-to-clear statistics registers.
type hwCounters struct {
	rxPackets, txPackets, rxBytes, txBytes, rxMissed uint64
}

// readCounters adds the statistics registers to p.hw (which clears them). statsMu is held
// or the port is not shared yet.
func (p *Port) readCounters() {
	r := p.bar
	p.hw.rxPackets += uint64(r.Read32(regGPRC))
	p.hw.txPackets += uint64(r.Read32(regGPTC))
	lo := uint64(r.Read32(regGORCL))
	p.hw.rxBytes += lo | uint64(r.Read32(regGORCH))<<32
	lo = uint64(r.Read32(regGOTCL))
	p.hw.txBytes += lo | uint64(r.Read32(regGOTCH))<<32
	for i := 0; i < 8; i++ {
		p.hw.rxMissed += uint64(r.Read32(regMPC(i)))
	}
}

// Stats implements nic.Port: the NIC's counters plus the frames the driver refused.
func (p *Port) Stats() nic.Stats {
	p.statsMu.Lock()
	if !p.closed.Load() {
		p.readCounters()
	}
	s := nic.Stats{
		RxPackets: p.hw.rxPackets,
		RxBytes:   p.hw.rxBytes,
		TxPackets: p.hw.txPackets,
		TxBytes:   p.hw.txBytes,
		RxMissed:  p.hw.rxMissed,
	}
	p.statsMu.Unlock()
	for _, q := range p.rx {
		st := q.Stats()
		s.RxErrors += st.Errors + st.Fragments
	}
	for _, q := range p.tx {
		s.TxErrors += q.Stats().Errors
	}
	return s
}

// Link implements nic.Port, reading the link status register.
func (p *Port) Link() nic.Link {
	if p.closed.Load() {
		return nic.Link{}
	}
	v := p.bar.Read32(regLINKS)
	l := nic.Link{Up: v&linksUp != 0}
	if l.Up {
		switch v & linksSpeedMask {
		case linksSpeed10G:
			l.SpeedMbps = 10000
		case linksSpeed1G:
			l.SpeedMbps = 1000
		case linksSpeed100M:
			l.SpeedMbps = 100
		}
	}
	return l
}

// LinkChanges is the number of link-status-change interrupts the port handled.
func (p *Port) LinkChanges() uint64 { return p.linkCh.Load() }

// linkChanged records a link status change interrupt.
func (p *Port) linkChanged() { p.linkCh.Add(1) }
