package intel

// Quirks are behaviours of QEMU's igb emulation that differ from the silicon. A driver
// must work on both, so the model offers them as options (QEMUQuirks turns them all on).
type Quirks struct {
	// RSSNeedsPCSD spreads frames by RSS only while RXCSUM.PCSD is set; without it every
	// frame goes to queue 0 (QEMU igb_rss_enabled requires !igb_rx_csum_enabled, which is
	// PCSD set). On silicon PCSD only selects what the write-back reports.
	RSSNeedsPCSD bool
	// LateMSIX sends a throttled MSI-X message when its EITR interval ends even if the
	// cause was masked or cleared meanwhile (QEMU arms the message when the cause rises):
	// the driver sees vectors with no work and must tolerate them.
	LateMSIX bool
	// PadRunts pads frames under 60 bytes from the wire and delivers them, as QEMU's
	// receive path does, instead of counting them in RUC.
	PadRunts bool
	// RXDWWithoutIVAR raises ICR.RXDW (and TXDW) for a queue whose IVAR entry is not
	// valid, as QEMU's igb_receive_internal does for every frame; on silicon a queue's
	// cause reaches no interrupt without its IVAR allocation, in legacy mode too.
	RXDWWithoutIVAR bool
	// RSSIPv6TCPEx hashes IPv6 TCP over the ports only with MRQC bit 18 (TCP over IPv6
	// with extension headers) and ignores bit 21 (TCP over IPv6), as QEMU's
	// igb_rss_get_hash_type does; the silicon hashes it with either.
	RSSIPv6TCPEx bool
	// PTPSeqLate latches, in RXSATRH, the two bytes after a PTP frame's sequenceId
	// (controlField, logMessageInterval) instead of the sequenceId: QEMU's PTP2 header
	// struct is not packed, so its fields from source_uuid_lo on sit two bytes late
	// (timesync.go).
	PTPSeqLate bool
	// RxLatchFreedBySATRH frees the RX timestamp latch (clears TSYNCRXCTL.VALID) on a
	// read of RXSATRH and not on one of RXSTMPH, as QEMU's igb_get_rxsatrh does; the
	// silicon frees it on the RXSTMPH read (Linux igb_ptp_rx_hang: "Only need to read
	// the high RXSTMP register to clear the lock").
	RxLatchFreedBySATRH bool
	// QEMUClockRegs makes TIMINCA and TIMADJ writes act as QEMU's e1000x_set_timinca and
	// igb_set_timadjh: a TIMINCA write adds (new − old)·ns/16 to the clock's offset (so
	// the first write jumps SYSTIM to about twice the scaled time and a rewrite of the
	// same value changes nothing), and TIMADJH:TIMADJL is added as a two's-complement
	// 64-bit number. Without it, TIMINCA keeps SYSTIM continuous and TIMADJH bit 31 is
	// the sign of a magnitude in the other 63 bits, as on the silicon (timesync.go).
	QEMUClockRegs bool
}

// QEMUQuirks returns every QEMU igb quirk.
func QEMUQuirks() Quirks {
	return Quirks{RSSNeedsPCSD: true, LateMSIX: true, PadRunts: true, RXDWWithoutIVAR: true, RSSIPv6TCPEx: true, PTPSeqLate: true,
		RxLatchFreedBySATRH: true, QEMUClockRegs: true}
}
