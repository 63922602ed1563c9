package sim

import (
	"errors"
	"fmt"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
)

// removalState is the model's side of the device-request notification: the eventfd the
// "kernel" signals and the relay that turns it into Events. Guarded by the device lock.
type removalState struct {
	req   *irq.Vector
	relay *pci.EventRelay
}

var _ pci.Requester = (*Device)(nil)

// Events implements pci.Requester as VFIO does: the first call arms a device-request
// vector, which RequestRemoval signals. The channel is closed when the device is closed.
func (d *Device) Events() (<-chan pci.Event, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("sim %s: events: %w", d.cfg.Addr, pci.ErrClosed)
	}
	if r := d.removal.relay; r != nil {
		return r.C(), nil
	}
	v, err := irq.NewEventfd(irq.Kind(4), 0)
	if err != nil {
		return nil, err
	}
	r, err := pci.NewEventRelay(map[pci.Event]*irq.Vector{pci.EventRequest: v})
	if err != nil {
		v.Close()
		return nil, err
	}
	d.removal = removalState{req: v, relay: r}
	return r.C(), nil
}

// ErrNotArmed is returned by RequestRemoval when the driver never armed Events: the
// kernel's request would go unheard and its unbind would wait for the process.
var ErrNotArmed = errors.New("device-request interrupt not armed")

// RequestRemoval asks for the device back as the kernel does before an unbind or a
// remove: it signals the device-request vector. The device keeps working until the
// holder closes it (or Remove pulls it away).
func (d *Device) RequestRemoval() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("sim %s: request removal: %w", d.cfg.Addr, pci.ErrClosed)
	}
	if d.removal.req == nil {
		return fmt.Errorf("sim %s: %w", d.cfg.Addr, ErrNotArmed)
	}
	return d.removal.req.Signal()
}

// Remove pulls the device out from under its driver (a surprise removal, a hot-unplug or
// a function that died): from now on every register and configuration space read returns
// all ones, writes go nowhere, the device does no DMA and raises no interrupt. Close still
// works. A removal the driver was told of first is RequestRemoval then, after a grace
// period, Remove.
func (d *Device) Remove() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gone = true
}

// Gone reports whether Remove was called.
func (d *Device) Gone() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.gone
}

// closeRemoval stops the relay and closes the request vector. The lock is held; the relay
// goroutine never takes it.
func (d *Device) closeRemoval() {
	if d.removal.relay != nil {
		_ = d.removal.relay.Close()
		_ = d.removal.req.Close()
	}
	d.removal = removalState{}
}
