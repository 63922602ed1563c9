package virtio

import (
	"errors"
	"fmt"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/sim"
)

// RaiseNeedsReset marks the device broken now, as QEMU does when it meets a ring it cannot
// use (virtio_error): DEVICE_NEEDS_RESET in the status, no further queue processing until
// the driver resets the device, and a configuration-change notification.
func (m *Model) RaiseNeedsReset() {
	m.dev.Lock()
	defer m.dev.Unlock()
	m.needsReset()
}

// needsReset sets DEVICE_NEEDS_RESET and notifies a configuration change. The lock is held.
func (m *Model) needsReset() {
	if m.broken() {
		return
	}
	m.status |= virtiospec.StatusNeedsReset
	m.st.NeedsReset++
	m.generation++
	m.configChanged()
}

// broken reports whether DEVICE_NEEDS_RESET is set. The lock is held.
func (m *Model) broken() bool { return m.status&virtiospec.StatusNeedsReset != 0 }

// configChanged sends a configuration-change notification once the driver is running:
// the configuration vector (MSI-X) or INTx with the ISR configuration bit. The lock is held.
func (m *Model) configChanged() {
	if m.status&virtiospec.StatusDriverOK == 0 || m.dev.Closed() {
		return
	}
	if m.dev.MSIXEnabled() {
		if m.msixConfig == virtiospec.NoVector || !m.dev.FireMSIX(int(m.msixConfig)) {
			m.st.LostInterrupts++
		}
		return
	}
	m.isr |= virtiospec.ISRConfig
	m.dev.SetINTx(true)
}

// errBypass is the error of a DMA access that bypasses a translating IOMMU.
var errBypass = errors.New("dma bypasses the iommu")

// dmaAt is the device's DMA access. With ACCESS_PLATFORM it goes through the IOMMU.
// Without it the device bypasses the IOMMU and takes bus addresses for physical
// addresses, which only a physical address space (sim.NewPhysicalIOMMU: uio, VFIO
// no-IOMMU) hands out; behind a translating one every access is a DMA fault, as the real
// device would read and write the wrong memory. The lock is held.
func (m *Model) dmaAt(addr uint64, n int, what string) ([]byte, error) {
	if !m.dev.BusMaster() {
		return nil, sim.ErrNoBusMaster
	}
	if !m.has(virtiospec.FeatAccessPlat) && !m.dev.IOMMU().PhysicalAddresses() {
		m.dev.Fault(sim.Fault{Kind: sim.DMAFault, Addr: addr, Msg: fmt.Sprintf(
			"%s (%d bytes) without ACCESS_PLATFORM: the device bypasses the IOMMU and takes IOVA 0x%x for a physical address", what, n, addr)})
		return nil, errBypass
	}
	return m.dev.DMAAt(addr, n, what)
}
