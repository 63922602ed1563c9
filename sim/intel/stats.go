package intel

import (
	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/sim"
)

// Stats are the model's own counters, beyond the NIC's statistics registers: everything
// that happened to frames and interrupts, for tests to check.
type Stats struct {
	WireIn   uint64 // frames that arrived from the wire
	WireOut  uint64 // frames handed to the wire
	WireLost uint64 // transmitted frames the wire refused (unplugged, closed)

	RxFrames    uint64 // frames written to RX rings
	RxBytes     uint64 // their bytes (as placed in buffers)
	Missed      uint64 // no packet-buffer space (MPC)
	QueueDrops  uint64 // no free descriptor on a queue with DROP_EN (QPRDC, RQDPC)
	Buffered    uint64 // frames that waited in the packet buffer
	Filtered    uint64 // refused by the address filters
	BadFrames   uint64 // runts and oversize frames (RUC, ROC)
	RxOff       uint64 // arrived with link down, RX off, the queue disabled or misconfigured
	Dropped     uint64 // dropped by fault injection
	NoBusMaster uint64 // frames dropped and doorbells ignored without bus mastering
	DMAFaults   uint64 // DMA to unmapped addresses (also in Device().Faults())

	TxFrames   uint64 // frames sent
	TxBytes    uint64
	TxErrors   uint64 // malformed descriptors or frames, faulting buffers
	TxNoFCS    uint64 // frames without IFCS (they would fail the peer's FCS check)
	TxLinkDown uint64 // frames discarded because the link was down
	TxRunts    uint64 // frames under 17 bytes (a protocol fault: undefined for the MAC)

	TxWritebackDelayed uint64 // DD write-backs held back by TxWritebackDelay
	TxWritebackLost    uint64 // DD write-backs never written (TxWritebackLost)
	TxHangs            uint64 // TX queues hung by TxHang

	Interrupts     uint64 // MSI-X messages delivered
	LostInterrupts uint64 // messages for vectors the driver did not set up
	Throttled      uint64 // messages EITR delayed
	Spurious       uint64 // injected interrupts without a cause
	LateInterrupts uint64 // throttled messages sent after their cause was gone (Quirks.LateMSIX)
	LinkChanges    uint64 // link transitions (each raised LSC)
	Resets         uint64 // CTRL.RST software resets
}

// Stats returns a snapshot of the model's counters.
func (m *Model) Stats() Stats {
	m.dev.Lock()
	defer m.dev.Unlock()
	return m.st
}

// RxQueueFrames returns the frames the model has written to the ring of each of RX queues
// 0 to n-1 since it was made (RxFrames per queue): where RSS sent what it placed.
func (m *Model) RxQueueFrames(n int) []uint64 {
	m.dev.Lock()
	defer m.dev.Unlock()
	return append([]uint64(nil), m.rxQueued[:min(n, len(m.rxQueued))]...)
}

// countFrame updates the statistics registers for a good frame of n bytes received
// (tx false) or sent on queue q: the global counters (which count the FCS) and the
// per-queue ones (82576 PQG*, 82599 QPRC/QBRC and QPTC/QBTC for queues 0-15).
func (m *Model) countFrame(tx bool, q, n int) {
	good, octL, octH := uint32(intelnic.GPRC), uint32(intelnic.GORCL), uint32(intelnic.GORCH)
	pq, pqOct := uint32(i82576.PQGPRC), uint32(i82576.PQGORC)
	qp, qOct := i82599.QPRC(q), i82599.QPRC(q)+4
	if tx {
		good, octL, octH = intelnic.GPTC, intelnic.GOTCL, intelnic.GOTCH
		pq, pqOct = i82576.PQGPTC, i82576.PQGOTC
		qp, qOct = i82599.QPTC(q), i82599.QBTC(q)
	}
	m.add(good, 1)
	m.add64(octL, octH, uint64(n+intelnic.FCSLen))
	switch {
	case m.cfg.Flavor == X82576:
		m.add(pq+i82576.PQStride*uint32(q), 1)
		m.add(pqOct+i82576.PQStride*uint32(q), uint32(n))
	case q < 16:
		m.add(qp, 1)
		m.add64(qOct, qOct+4, uint64(n))
	}
}

// Counters implements sim.Model: Missed counts packet-buffer misses and per-queue drops,
// TooLong runts and oversize frames.
func (m *Model) Counters() sim.Counters {
	s := m.Stats()
	return sim.Counters{
		WireOut: s.WireOut, WireLost: s.WireLost, RxFrames: s.RxFrames,
		Missed: s.Missed + s.QueueDrops, TooLong: s.BadFrames, Refused: s.Filtered + s.RxOff,
		Dropped: s.Dropped, TxErrors: s.TxErrors + s.TxLinkDown,
	}
}
