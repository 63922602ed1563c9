package uio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
)

// IRQs enables (n = 1) or disables (n = 0) INTx, the only kind uio_pci_generic offers.
// The vector reads /dev/uioN; the kernel masks INTx (sets the command register's
// INTx-disable bit) each time it fires, and the vector's Rearm clears the bit again.
func (d *Device) IRQs(kind irq.Kind, n int) ([]*irq.Vector, error) {
	if kind != irq.INTx {
		return nil, fmt.Errorf("irqs: %v: uio_pci_generic offers INTx only: %w", kind, pci.ErrNotSupported)
	}
	if n < 0 || n > 1 {
		return nil, fmt.Errorf("irqs: cannot enable %d INTx vectors", n)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("irqs: device %w", pci.ErrClosed)
	}
	if err := d.disableINTx(); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	v := irq.NewUIO(d.uioFD, d.cfg.clearINTxDisable)
	if _, err := v.Drain(); err != nil { // sync with the kernel's cumulative count
		return nil, err
	}
	if err := d.cfg.clearINTxDisable(); err != nil {
		return nil, err
	}
	d.vec = v
	return []*irq.Vector{v}, nil
}

// disableINTx masks INTx at the device. Called with d.mu held.
func (d *Device) disableINTx() error {
	if d.vec != nil {
		d.vec.Close()
		d.vec = nil
	}
	if err := pci.UpdateCommand(d.cfg, pci.CmdINTxDisable, 0); err != nil {
		return fmt.Errorf("irqs: disable INTx: %w", err)
	}
	return nil
}

// configFile is configuration space through the sysfs config file.
type configFile struct {
	f    *os.File
	fd   int
	path string
	cmd  [2]byte // Rearm's buffer: no allocation on the hot path
	mu   sync.Mutex
}

// ReadAt reads configuration space at off.
func (c *configFile) ReadAt(b []byte, off int64) (int, error) {
	return c.transfer(unix.Pread, "read", b, off)
}

// WriteAt writes configuration space at off.
func (c *configFile) WriteAt(b []byte, off int64) (int, error) {
	return c.transfer(unix.Pwrite, "write", b, off)
}

// transfer reads or writes (op, unix.Pread or unix.Pwrite; verb names it) b at off of the
// open file. A short transfer is an error.
func (c *configFile) transfer(op func(int, []byte, int64) (int, error), verb string, b []byte, off int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return 0, fmt.Errorf("%s %s: %w", verb, c.path, pci.ErrClosed)
	}
	n, err := op(c.fd, b, off)
	if err != nil {
		return 0, fmt.Errorf("%s %s at %#x: %w", verb, c.path, off, err)
	}
	if n != len(b) {
		return n, fmt.Errorf("%s %s at %#x: short %s %d of %d", verb, c.path, off, verb, n, len(b))
	}
	return n, nil
}

// clearINTxDisable re-enables INTx after uio_pci_generic masked it. It allocates nothing.
func (c *configFile) clearINTxDisable() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return errRearm
	}
	if n, err := unix.Pread(c.fd, c.cmd[:], pci.CfgCommand); err != nil || n != 2 {
		return errRearm
	}
	v := binary.LittleEndian.Uint16(c.cmd[:])
	if v&pci.CmdINTxDisable == 0 {
		return nil
	}
	binary.LittleEndian.PutUint16(c.cmd[:], v&^pci.CmdINTxDisable)
	if n, err := unix.Pwrite(c.fd, c.cmd[:], pci.CfgCommand); err != nil || n != 2 {
		return errRearm
	}
	return nil
}

// close closes the config file; later accesses fail instead of reaching a reused fd.
func (c *configFile) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return nil
	}
	err := c.f.Close()
	c.fd = -1
	return err
}

var errRearm = errors.New("rearm INTx: config space access failed")
