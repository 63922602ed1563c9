package vfio

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
)

// encodeIRQSet writes a struct vfio_irq_set into buf and returns the used prefix: the
// 20-byte header followed, for DATA_EVENTFD, by one full 32-bit slot per fd (never a
// truncated or an unfilled one). count is the number of vectors the set covers; fds must
// be empty or hold exactly count descriptors. buf must be large enough.
func encodeIRQSet(buf []byte, flags, index, start, count uint32, fds []int32) []byte {
	if len(fds) != 0 && len(fds) != int(count) {
		panic(fmt.Sprintf("vfio: irq set of %d vectors with %d fds", count, len(fds)))
	}
	n := irqSetHeaderSize + 4*len(fds)
	b := buf[:n]
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(n))
	ne.PutUint32(b[4:], flags)
	ne.PutUint32(b[8:], index)
	ne.PutUint32(b[12:], start)
	ne.PutUint32(b[16:], count)
	for i, fd := range fds {
		ne.PutUint32(b[irqSetHeaderSize+4*i:], uint32(fd))
	}
	return b
}

// IRQInfo returns how many vectors of a kind the device offers.
func (d *Device) IRQInfo(kind irq.Kind) (int, error) {
	info := irqInfo{Argsz: sizeofIRQInfo, Index: uint32(kind)}
	if err := vfioDeviceGetIRQInfo.do(d.fd, &info); err != nil {
		return 0, fmt.Errorf("get %v irq info: %w", kind, err)
	}
	if info.Flags&irqInfoEventfd == 0 {
		return 0, nil
	}
	return int(info.Count), nil
}

// IRQs enables n vectors of kind, each signalling its own eventfd, and returns them.
// VFIO enables one kind at a time: vectors of another kind are disabled and closed
// first, as is an earlier set of this kind. n = 0 disables the kind. An INTx vector is
// masked by the kernel when it fires; its Rearm unmasks it (VFIO_IRQ_SET_ACTION_UNMASK).
func (d *Device) IRQs(kind irq.Kind, n int) ([]*irq.Vector, error) {
	if kind != irq.INTx && kind != irq.MSI && kind != irq.MSIX {
		return nil, fmt.Errorf("irqs: unknown kind %v", kind)
	}
	if n < 0 || (kind == irq.INTx && n > 1) {
		return nil, fmt.Errorf("irqs: cannot enable %d %v vectors", n, kind)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.quiesced {
		return nil, fmt.Errorf("irqs: device %w", pci.ErrClosed)
	}
	if n == 0 {
		if d.vectors != nil && d.irqKind == kind {
			return nil, d.disableIRQs()
		}
		return nil, nil
	}
	avail, err := d.IRQInfo(kind)
	if err != nil {
		return nil, err
	}
	if n > avail {
		return nil, fmt.Errorf("irqs: %s has %d %v vectors, %d requested: %w", d.addr, avail, kind, n, pci.ErrNotSupported)
	}
	if err := d.disableIRQs(); err != nil {
		return nil, err
	}
	vs := make([]*irq.Vector, 0, n)
	fds := make([]int32, 0, n)
	closeAll := func() {
		for _, v := range vs {
			v.Close()
		}
	}
	for i := 0; i < n; i++ {
		v, err := irq.NewEventfd(kind, i)
		if err != nil {
			closeAll()
			return nil, err
		}
		vs = append(vs, v)
		fds = append(fds, int32(v.Fd()))
	}
	set := encodeIRQSet(make([]byte, irqSetHeaderSize+4*n), irqSetDataEventfd|irqSetActionTrig, uint32(kind), 0, uint32(n), fds)
	if err := ioctlSetIRQs(d.fd, set); err != nil {
		closeAll()
		return nil, fmt.Errorf("irqs: enable %d %v vectors: %w", n, kind, err)
	}
	if kind == irq.INTx {
		vs[0].SetRearm(d.unmaskINTx)
		d.intxArmed.Store(true)
	}
	d.irqKind, d.vectors = kind, vs
	return vs, nil
}

// disableIRQs turns off the enabled kind and closes its eventfds. Called with d.mu held.
func (d *Device) disableIRQs() error {
	if d.vectors == nil {
		return nil
	}
	d.intxArmed.Store(false)
	var buf [irqSetHeaderSize]byte
	set := encodeIRQSet(buf[:], irqSetDataNone|irqSetActionTrig, uint32(d.irqKind), 0, 0, nil)
	err := ioctlSetIRQs(d.fd, set)
	if err != nil {
		err = fmt.Errorf("irqs: disable %v: %w", d.irqKind, err)
	}
	// Close the eventfds even if disabling failed: the kernel holds its own references.
	for _, v := range d.vectors {
		v.Close()
	}
	d.vectors = nil
	return err
}

// unmaskINTx re-enables INTx after it fired. It allocates nothing.
func (d *Device) unmaskINTx() error {
	if !d.intxArmed.Load() {
		return errIRQsOff
	}
	return ioctlSetIRQs(d.fd, d.intxUnmask[:])
}

var errIRQsOff = errors.New("rearm: interrupts disabled")
