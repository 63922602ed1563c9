package pci

import (
	"errors"
	"fmt"
)

// Regions keeps the BAR mappings of an open device for its Region method: each BAR is
// mapped once, the first time it is asked for, and all are released together at close.
// It has no lock of its own: the device's lock guards it.
type Regions struct {
	bars [6]Region
}

// Get returns the region of BAR bar, mapping it with open the first time. It fails for
// an index outside 0-5 and, when closed (the device is), with ErrClosed.
func (rs *Regions) Get(bar int, closed bool, open func(bar int) (Region, error)) (Region, error) {
	if bar < 0 || bar >= len(rs.bars) {
		return nil, fmt.Errorf("BAR%d: index out of range 0-%d", bar, len(rs.bars)-1)
	}
	if closed {
		return nil, fmt.Errorf("BAR%d: device %w", bar, ErrClosed)
	}
	if r := rs.bars[bar]; r != nil {
		return r, nil
	}
	r, err := open(bar)
	if err != nil {
		return nil, err
	}
	rs.bars[bar] = r
	return r, nil
}

// Release unmaps every region that is a mapping (has an Unmap method) and forgets them
// all; a later Get maps again.
func (rs *Regions) Release() error {
	var errs []error
	for i, r := range rs.bars {
		if m, ok := r.(interface{ Unmap() error }); ok {
			if err := m.Unmap(); err != nil {
				errs = append(errs, fmt.Errorf("unmap BAR%d: %w", i, err))
			}
		}
		rs.bars[i] = nil
	}
	return errors.Join(errs...)
}
