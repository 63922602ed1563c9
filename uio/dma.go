package uio

import (
	"errors"

	"go.uber.org/zap"

	"github.com/uiod/uiod/dmamem"
)

// DMA is an allocator whose bus addresses are physical addresses (from
// /proc/self/pagemap), to share between uio devices with Options.DMA. Close frees every
// allocation, then closes the pagemap.
type DMA struct {
	*dmamem.Allocator
	pagemap *dmamem.Pagemap
}

// NewDMA returns a physical-address allocator with the given hugepage policy. The caller
// closes it after the devices that use it.
func NewDMA(root string, huge dmamem.HugePages, log *zap.Logger) (*DMA, error) {
	pm, err := dmamem.OpenPagemap(root)
	if err != nil {
		return nil, err
	}
	return &DMA{Allocator: dmamem.New(pm, dmamem.Options{HugePages: huge, Log: log}), pagemap: pm}, nil
}

// Close frees every allocation and closes the pagemap.
func (d *DMA) Close() error {
	return errors.Join(d.Allocator.Close(), d.pagemap.Close())
}
