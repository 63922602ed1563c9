package sim

import (
	"encoding/binary"
	"fmt"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
)

// ErrNotSupported is returned, wrapped, for interrupt kinds the model does not offer. It is
// pci.ErrNotSupported, so a driver falls back from MSI-X the same way on the model as on uio.
var ErrNotSupported = pci.ErrNotSupported

// IRQs implements pci.Device. MSI-X offers up to the configured table size; INTx one
// level-triggered vector that is masked when it fires until Rearm (or a command-register
// write with INTx-disable clear) re-enables it, firing again at once if the model still
// asserts it. Calling IRQs replaces the previous set; n = 0 disables interrupts.
func (d *Device) IRQs(kind irq.Kind, n int) ([]*irq.Vector, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("sim %s: irqs: device closed", d.cfg.Addr)
	}
	switch kind {
	case irq.MSIX:
		if n < 0 || n > d.cfg.MSIXVectors {
			return nil, fmt.Errorf("sim %s: %d msix vectors: device has %d", d.cfg.Addr, n, d.cfg.MSIXVectors)
		}
	case irq.INTx:
		if n < 0 || n > 1 {
			return nil, fmt.Errorf("sim %s: %d intx vectors: device has 1", d.cfg.Addr, n)
		}
	default:
		return nil, fmt.Errorf("sim %s: %v interrupts: %w", d.cfg.Addr, kind, ErrNotSupported)
	}
	d.closeVectors()
	if n == 0 {
		return nil, nil
	}
	vs := make([]*irq.Vector, n)
	for i := range vs {
		v, err := irq.NewEventfd(kind, i)
		if err != nil {
			for _, c := range vs[:i] {
				c.Close()
			}
			return nil, fmt.Errorf("sim %s: %w", d.cfg.Addr, err)
		}
		vs[i] = v
	}
	d.kind, d.vectors, d.fired = kind, vs, make([]uint64, n)
	if kind == irq.INTx {
		d.intxMasked = false
		vs[0].SetRearm(d.rearmINTx)
		d.evalINTx()
	} else {
		c := binary.LittleEndian.Uint16(d.conf.b[msixCtrl:])
		binary.LittleEndian.PutUint16(d.conf.b[msixCtrl:], c|msixEnable)
	}
	return append([]*irq.Vector(nil), vs...), nil
}

// closeVectors drops the current vectors. The lock is held.
func (d *Device) closeVectors() {
	for _, v := range d.vectors {
		v.Close()
	}
	d.vectors, d.fired, d.kind = nil, nil, -1
	c := binary.LittleEndian.Uint16(d.conf.b[msixCtrl:])
	binary.LittleEndian.PutUint16(d.conf.b[msixCtrl:], c&^msixEnable)
}

// MSIXEnabled reports whether MSI-X vectors are set up. The lock must be held.
func (d *Device) MSIXEnabled() bool { return d.kind == irq.MSIX }

// FireMSIX signals MSI-X vector v and reports whether a vector was there to signal (an
// interrupt to a vector the driver did not set up is lost, as on hardware). The lock must
// be held.
func (d *Device) FireMSIX(v int) bool {
	if d.closed || d.gone || d.kind != irq.MSIX || v < 0 || v >= len(d.vectors) {
		return false
	}
	if binary.LittleEndian.Uint16(d.conf.b[msixCtrl:])&msixFuncMask != 0 {
		return false
	}
	if d.vectors[v].Signal() != nil {
		return false
	}
	d.fired[v]++
	return true
}

// SetINTx sets the level of the INTx line as the model computes it (cause and mask). A
// rising level fires the vector unless it is masked or INTx is disabled in the command
// register. The lock must be held.
func (d *Device) SetINTx(level bool) {
	d.intxLevel = level
	d.evalINTx()
}

// evalINTx fires INTx if it is asserted and deliverable. The lock is held.
func (d *Device) evalINTx() {
	if !d.intxLevel || d.intxMasked || d.closed || d.gone || d.kind != irq.INTx {
		return
	}
	if d.conf.command()&pci.CmdINTxDisable != 0 {
		return
	}
	if d.vectors[0].Signal() == nil {
		d.fired[0]++
	}
	d.intxMasked = true
}

// rearmINTx is the INTx vector's Rearm: unmask, and fire again if still asserted.
func (d *Device) rearmINTx() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.intxMasked = false
	d.evalINTx()
	return nil
}

// Fired returns how often each current vector was signalled.
func (d *Device) Fired() []uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]uint64(nil), d.fired...)
}
