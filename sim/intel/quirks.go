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
	// PTPSeqLate latches, in RXSATRH, the two bytes after a PTP frame's sequenceId
	// (controlField, logMessageInterval) instead of the sequenceId: QEMU's PTP2 header
	// struct is not packed, so its fields from source_uuid_lo on sit two bytes late
	// (timesync.go).
	PTPSeqLate bool
}

// QEMUQuirks returns every QEMU igb quirk.
func QEMUQuirks() Quirks {
	return Quirks{RSSNeedsPCSD: true, LateMSIX: true, PadRunts: true, PTPSeqLate: true}
}
