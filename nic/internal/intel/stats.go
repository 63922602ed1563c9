package intel

import (
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
)

// counters accumulates the NIC's read-to-clear statistics registers.
type counters struct {
	rxPackets, txPackets, rxBytes, txBytes, rxMissed uint64
	// rxErrors are the frames the MAC refused: CRC and length errors, runts and frames
	// longer than the MTU (Linux's rx_crc_errors and rx_length_errors).
	rxErrors uint64
}

// ReadCounters adds the statistics registers to the port's totals, which clears them. A
// driver calls it once during bring-up so that the totals start from zero.
func ReadCounters(p *Port) {
	p.statsMu.Lock()
	p.readCounters()
	p.statsMu.Unlock()
}

// readCounters adds the statistics registers to p.hw. statsMu is held.
func (p *Port) readCounters() {
	if p.layout.Counters != nil {
		rxp, rxb, txp, txb := p.layout.Counters()
		p.hw.rxPackets += rxp
		p.hw.rxBytes += rxb
		p.hw.txPackets += txp
		p.hw.txBytes += txb
	} else {
		p.readStatRegs()
	}
	if p.layout.QueueDrops != nil {
		r := p.bar
		for q := range p.rx {
			p.hw.rxMissed += uint64(r.Read32(p.layout.QueueDrops(q)))
		}
	}
}

// readStatRegs adds the read-to-clear statistics registers and the missed packet
// counters to p.hw. statsMu is held.
func (p *Port) readStatRegs() {
	r := p.bar
	p.hw.rxPackets += uint64(r.Read32(intelnic.GPRC))
	p.hw.txPackets += uint64(r.Read32(intelnic.GPTC))
	lo := uint64(r.Read32(intelnic.GORCL))
	p.hw.rxBytes += lo | uint64(r.Read32(intelnic.GORCH))<<32
	lo = uint64(r.Read32(intelnic.GOTCL))
	p.hw.txBytes += lo | uint64(r.Read32(intelnic.GOTCH))<<32
	for _, off := range p.layout.MPC {
		p.hw.rxMissed += uint64(r.Read32(off))
	}
	for _, off := range []uint32{intelnic.CRCERRS, intelnic.RLEC, intelnic.RUC, intelnic.ROC} {
		p.hw.rxErrors += uint64(r.Read32(off))
	}
}

// Stats implements nic.Port: the NIC's counters plus the frames the driver refused. RX
// errors are the MAC's (CRC, length, runt and oversize frames) and the rings' (bad
// write-backs, frames longer than the MTU, fragments).
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
		RxErrors:  p.hw.rxErrors,
	}
	p.statsMu.Unlock()
	for _, q := range p.rx {
		st := q.Stats()
		s.RxErrors += st.Errors + st.Fragments
	}
	for _, q := range p.tx {
		st := q.Stats()
		s.TxErrors += st.Errors + st.Discarded
		s.TxTimeouts += st.Timeouts
	}
	return s
}

// Link implements nic.Port: the driver's reading of its link registers, or link down
// once the port is closed. It holds statsMu, as Stats does, so that Close cannot unmap
// the registers under a read in progress.
func (p *Port) Link() nic.Link {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	if p.closed.Load() {
		return nic.Link{}
	}
	return p.ops.Link()
}

// LinkChanges is the number of link-status-change interrupts the port handled.
func (p *Port) LinkChanges() uint64 { return p.linkCh.Load() }

// LinkChanged records a link status change interrupt.
func LinkChanged(p *Port) { p.linkCh.Add(1) }
