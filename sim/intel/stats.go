package intel

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
