package sim

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/uiod/uiod/internal/hw/pcispec"
	"github.com/uiod/uiod/pci"
)

// configSize is the size of the model's (PCIe) configuration space.
const configSize = pcispec.ExtConfigLen

// Configuration space layout of the model.
const (
	capMSIX      = 0x70 // MSI-X capability
	msixCtrl     = capMSIX + 2
	msixEnable   = 1 << 15
	msixFuncMask = 1 << 14
)

// configSpace is the function's configuration space. It shares the device lock.
type configSpace struct {
	d     *Device
	b     [configSize]byte
	wmask [configSize]byte // writable bits per byte
}

func (c *configSpace) init(cfg *Config) {
	le := binary.LittleEndian
	le.PutUint16(c.b[pci.CfgVendorID:], cfg.VendorID)
	le.PutUint16(c.b[pci.CfgDeviceID:], cfg.DeviceID)
	le.PutUint16(c.b[pci.CfgStatus:], pci.StatusCapList)
	c.b[pci.CfgRevision] = cfg.Revision
	c.b[pci.CfgClass] = byte(cfg.Class)
	c.b[pci.CfgClass+1] = byte(cfg.Class >> 8)
	c.b[pci.CfgClass+2] = byte(cfg.Class >> 16)
	le.PutUint32(c.b[0x10:], 0xfe000000) // BAR0: 32-bit memory
	c.b[pci.CfgCapPointer] = capMSIX
	c.b[0x3d] = 1 // interrupt pin INTA
	// MSI-X: table in BAR3 at 0, PBA in BAR3 at 0x2000.
	c.b[capMSIX] = pci.CapIDMSIX
	c.b[capMSIX+1] = 0
	n := cfg.MSIXVectors
	if n < 1 {
		n = 1
	}
	le.PutUint16(c.b[msixCtrl:], uint16(n-1))
	le.PutUint32(c.b[capMSIX+4:], 3)
	le.PutUint32(c.b[capMSIX+8:], 0x2000|3)

	cmd := uint16(pci.CmdMemory | pci.CmdBusMaster | pci.CmdINTxDisable | 1 | 1<<6 | 1<<8)
	le.PutUint16(c.wmask[pci.CfgCommand:], cmd)
	le.PutUint16(c.wmask[msixCtrl:], msixEnable|msixFuncMask)
	c.wmask[0x3c] = 0xff // interrupt line
}

func (c *configSpace) command() uint16 {
	return binary.LittleEndian.Uint16(c.b[pci.CfgCommand:])
}

func (c *configSpace) setCommand(v uint16) {
	binary.LittleEndian.PutUint16(c.b[pci.CfgCommand:], v)
}

// ReadAt implements io.ReaderAt.
func (c *configSpace) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= configSize {
		return 0, fmt.Errorf("config read at %d: %w", off, io.EOF)
	}
	c.d.mu.Lock()
	n := copy(p, c.b[off:])
	if c.d.gone {
		for i := range p[:n] {
			p[i] = 0xff
		}
	}
	c.d.mu.Unlock()
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt implements io.WriterAt. Read-only bits keep their value.
func (c *configSpace) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > configSize {
		return 0, fmt.Errorf("config write of %d bytes at %d: outside %d-byte config space", len(p), off, configSize)
	}
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gone {
		return len(p), nil // a write to a removed function goes nowhere
	}
	oldCmd := c.command()
	for i, v := range p {
		o := off + int64(i)
		c.b[o] = c.b[o]&^c.wmask[o] | v&c.wmask[o]
	}
	if off <= pci.CfgCommand+1 && off+int64(len(p)) > pci.CfgCommand {
		cmd := c.command()
		// Writing the command register with INTx-disable clear re-enables INTx (this is
		// how a uio_pci_generic driver re-arms it).
		if cmd&pci.CmdINTxDisable == 0 {
			d.intxMasked = false
		}
		if oldCmd&pci.CmdBusMaster != cmd&pci.CmdBusMaster && d.cfg.OnBusMaster != nil {
			d.cfg.OnBusMaster(cmd&pci.CmdBusMaster != 0)
		}
		d.evalINTx()
	}
	return len(p), nil
}
