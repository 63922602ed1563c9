package vfio

import (
	"github.com/uiod/uiod/dmamem"
	"github.com/uiod/uiod/pci/pcihost"
)

// noIOMMU is the address space of a no-IOMMU group (vfio's enable_unsafe_noiommu_mode):
// no translation, bus addresses are physical addresses from /proc/self/pagemap, and
// nothing is mapped or unmapped in the kernel.
type noIOMMU struct {
	pagemap *dmamem.Pagemap
}

func newNoIOMMU(host *pcihost.Host) (*noIOMMU, error) {
	pm, err := dmamem.OpenPagemap(host.Root())
	if err != nil {
		return nil, err
	}
	return &noIOMMU{pagemap: pm}, nil
}

func (n *noIOMMU) noIOMMU() bool                        { return true }
func (n *noIOMMU) dmaMap(b []byte) (uint64, error)      { return n.pagemap.Map(b) }
func (n *noIOMMU) dmaUnmap(b []byte, phys uint64) error { return nil }
func (n *noIOMMU) restrict() error                      { return nil }
func (n *noIOMMU) close() error                         { return n.pagemap.Close() }
