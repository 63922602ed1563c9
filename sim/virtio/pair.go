package virtio

import (
	"fmt"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/wire"
)

// NewPair returns two modelled virtio-net functions on one IOMMU (as two devices in one
// VFIO container: a buffer of one may be sent out of the other without copying), at
// 0000:01:00.0 and 0000:01:00.1 with MACs 52:54:00:12:34:56 and …:57, each plugged into
// its cable. base supplies the other settings (its Addr, MAC, Wire and IOMMU are
// replaced); a nil iommu means a new one.
func NewPair(base Config, cables [2]wire.Port, iommu *sim.IOMMU) ([2]*Model, error) {
	var ms [2]*Model
	if iommu == nil {
		iommu = sim.NewIOMMU()
	}
	for i := range ms {
		c := base
		c.Addr = pci.Addr{Bus: 1, Function: uint8(i)}
		c.MAC = []byte{0x52, 0x54, 0x00, 0x12, 0x34, byte(0x56 + i)}
		c.Wire, c.IOMMU = cables[i], iommu
		m, err := New(c)
		if err != nil {
			if ms[0] != nil {
				ms[0].Close()
			}
			return ms, fmt.Errorf("model port %d: %w", i, err)
		}
		ms[i] = m
	}
	return ms, nil
}
