package virtio

// Stats are the model's counters, for tests to check.
type Stats struct {
	WireIn   uint64 // frames that arrived from the wire
	WireOut  uint64 // frames handed to the wire
	WireLost uint64 // transmitted frames the wire refused

	RxFrames uint64 // frames written to receive buffers
	RxBytes  uint64
	Held     uint64 // frames held for want of a receive buffer, until the driver's notification
	Missed   uint64 // no available receive buffer and the held backlog full
	Oversize uint64 // frame larger than the available buffer (left available)
	RxOff    uint64 // arrived before DRIVER_OK, with the link down or the queue disabled
	RxErrors uint64 // unusable receive chains
	Dropped  uint64 // dropped by fault injection
	Filtered uint64 // refused by the receive filter (not promiscuous, not an address it takes)

	TxFrames   uint64
	TxBytes    uint64
	TxErrors   uint64 // unusable transmit chains
	TxLinkDown uint64 // frames discarded with the link down

	Notifies       uint64 // available-buffer notifications from the driver
	Interrupts     uint64 // used-buffer notifications sent
	Suppressed     uint64 // used-buffer notifications the driver's event suppression held back
	LostInterrupts uint64 // notifications to no vector
	Spurious       uint64 // injected notifications without a used entry
	LinkChanges    uint64
	CtrlCommands   uint64
	Resets         uint64
	NeedsReset     uint64 // times the device set DEVICE_NEEDS_RESET
	Failed         uint64 // times the driver set FAILED
	IgnoredNotify  uint64 // notifications a broken device ignored
}
