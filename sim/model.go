package sim

import (
	"net"
	"time"

	"github.com/uiod/uiod/pci"
)

// Model is a NIC device model: what every model package (sim/intel, sim/igbvf,
// sim/virtio) builds and what the daemon, the benches and the shared driver suites hold
// one by. A driver opens PCI; Device is the model core under it, for what every model has
// in common below the driver (Err, the IOMMU, surprise removal).
type Model interface {
	// PCI is the function a driver opens (nic.Open, a driver's Open).
	PCI() pci.Device
	// Device is the device-model core the function runs on: protocol and DMA faults,
	// the strict error (Err), the IOMMU, removal.
	Device() *Device
	// MAC is the station address the model has now.
	MAC() net.HardwareAddr
	// Link reports whether the link is up.
	Link() bool
	// SetLink takes the link up or down, as a cable plugged in or pulled out would.
	SetLink(up bool)
	// FlapLink takes the link down and brings it back after downFor (at once when
	// downFor is 0).
	FlapLink(downFor time.Duration)
	// Counters are the model's frame counters in the terms every model shares.
	Counters() Counters
	// DropNext loses the next n frames from the wire before they reach a buffer.
	DropNext(n int)
	// OversizeNext reports the next n receive completions with a length over their
	// buffer.
	OversizeNext(n int)
	// InterruptStorm raises an interrupt n times with nothing completed: on vector q
	// (Intel: the vector of queue q when the queues have one each), or for receive queue
	// q (virtio).
	InterruptStorm(q, n int)
	// Close closes the device; closing after the driver closed the function, or twice,
	// is safe.
	Close() error
}

// Counters are a model's frame counters that mean the same in every model. Each model's
// own Stats has the detail behind them.
type Counters struct {
	WireOut  uint64 // frames handed to the wire
	WireLost uint64 // transmitted frames the wire refused (unplugged, closed)
	RxFrames uint64 // frames written to receive buffers
	Missed   uint64 // frames lost for want of a posted receive buffer (or packet-buffer space)
	TooLong  uint64 // frames refused as too long (or too short) for the buffers or the MAC
	Refused  uint64 // other frames refused: address filters, receive off, unusable chains
	Dropped  uint64 // frames dropped by fault injection
	TxErrors uint64 // frames the device would not send: bad descriptors, link down, spoofed source
}

// Lost is every frame the counters say was lost or refused, on receive and transmit.
func (c Counters) Lost() uint64 {
	return c.Missed + c.TooLong + c.Refused + c.Dropped + c.TxErrors + c.WireLost
}
