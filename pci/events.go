package pci

// Event is a notice from the kernel (or a device model) about an opened function.
type Event int

// Events a Requester delivers.
const (
	// EventRequest: the kernel wants the function back — an unbind from vfio-pci, a
	// remove through sysfs, a hot-unplug. Its operation waits until every descriptor of
	// the device is closed, so the holder must stop using it, quiesce it and close it
	// promptly.
	EventRequest Event = iota + 1
	// EventError: the function reported an uncorrectable error (AER); its registers may
	// read all ones until it is reset.
	EventError
)

// String names the event.
func (e Event) String() string {
	switch e {
	case EventRequest:
		return "device request"
	case EventError:
		return "device error"
	}
	return "unknown event"
}

// Requester is implemented by a Device whose backend hears the kernel ask for the device
// back: vfio (VFIO_PCI_REQ_IRQ_INDEX and VFIO_PCI_ERR_IRQ_INDEX) and the device model.
type Requester interface {
	// Events arms the notifications on first call and returns the channel they arrive
	// on; it is closed when the device is closed. A slow reader loses nothing that
	// matters: one pending event of each kind is kept.
	Events() (<-chan Event, error)
}
