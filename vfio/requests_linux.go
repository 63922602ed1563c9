package vfio

import (
	"errors"
	"fmt"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
)

// VFIO's PCI IRQ indexes beyond INTx, MSI and MSI-X (linux/vfio.h).
const (
	vfioPCIErrIRQIndex = 3 // AER: the device reported an uncorrectable error
	vfioPCIReqIRQIndex = 4 // the kernel asks for the device back (unbind, remove)
)

var _ pci.Requester = (*Device)(nil)

// Events implements pci.Requester: on first call it arms the device-request interrupt
// and, where the device has one, the error interrupt, each on an eventfd of its own
// (VFIO_DEVICE_SET_IRQS, DATA_EVENTFD | ACTION_TRIGGER), and relays them. Without the
// request interrupt the kernel's unbind or remove of the device waits, nagging in the
// log every 10 s, until the process closes it; with it, the holder hears the request.
// The channel is closed when the device is closed.
func (d *Device) Events() (<-chan pci.Event, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.quiesced {
		return nil, fmt.Errorf("events: device %w", pci.ErrClosed)
	}
	if d.relay != nil {
		return d.relay.C(), nil
	}
	vecs := map[pci.Event]*irq.Vector{}
	for _, ix := range []struct {
		ev    pci.Event
		index uint32
	}{{pci.EventRequest, vfioPCIReqIRQIndex}, {pci.EventError, vfioPCIErrIRQIndex}} {
		n, err := d.IRQInfo(irq.Kind(ix.index))
		if err != nil || n == 0 {
			if ix.ev == pci.EventRequest {
				d.closeEventVectors(vecs)
				return nil, fmt.Errorf("events: %s has no device-request interrupt: %w", d.addr, pci.ErrNotSupported)
			}
			continue // the error interrupt needs AER, which many devices (and QEMU's) lack
		}
		v, err := irq.NewEventfd(irq.Kind(ix.index), 0)
		if err != nil {
			d.closeEventVectors(vecs)
			return nil, err
		}
		set := encodeIRQSet(make([]byte, irqSetHeaderSize+4), irqSetDataEventfd|irqSetActionTrig, ix.index, 0, 1, []int32{int32(v.Fd())})
		if err := ioctlSetIRQs(d.fd, set); err != nil {
			v.Close()
			d.closeEventVectors(vecs)
			return nil, fmt.Errorf("events: arm %v interrupt: %w", ix.ev, err)
		}
		vecs[ix.ev] = v
	}
	r, err := pci.NewEventRelay(vecs)
	if err != nil {
		d.closeEventVectors(vecs)
		return nil, err
	}
	d.relay, d.eventVecs = r, vecs
	return r.C(), nil
}

// closeEventVectors disarms and closes armed event vectors. Called with d.mu held.
func (d *Device) closeEventVectors(vecs map[pci.Event]*irq.Vector) error {
	var errs []error
	for ev, v := range vecs {
		index := uint32(vfioPCIReqIRQIndex)
		if ev == pci.EventError {
			index = vfioPCIErrIRQIndex
		}
		var buf [irqSetHeaderSize]byte
		if err := ioctlSetIRQs(d.fd, encodeIRQSet(buf[:], irqSetDataNone|irqSetActionTrig, index, 0, 0, nil)); err != nil {
			errs = append(errs, fmt.Errorf("disarm %v interrupt: %w", ev, err))
		}
		v.Close()
	}
	return errors.Join(errs...)
}

// disarmEvents stops the relay and closes its vectors, as quiesce does. Called with d.mu
// held.
func (d *Device) disarmEvents() error {
	if d.relay == nil {
		return nil
	}
	err := errors.Join(d.relay.Close(), d.closeEventVectors(d.eventVecs))
	d.relay, d.eventVecs = nil, nil
	return err
}
