package pci_test

import (
	"errors"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci"
)

// mapping is a pci.Region that counts its unmaps; plain is one without Unmap.
type mapping struct {
	plain
	unmaps int
	err    error
}

func (m *mapping) Unmap() error { m.unmaps++; return m.err }

type plain struct{}

func (plain) Read32(uint32) uint32   { return 0 }
func (plain) Write32(uint32, uint32) {}
func (plain) Read64(uint32) uint64   { return 0 }
func (plain) Write64(uint32, uint64) {}
func (plain) Len() int               { return 4096 }

// TestRegions: Get checks the index and the closed flag, maps a BAR once and keeps it,
// keeps nothing when the mapping fails, and Release unmaps what is a mapping and forgets
// every BAR.
func TestRegions(t *testing.T) {
	var rs pci.Regions
	m0, m2 := &mapping{}, &mapping{err: errors.New("busy")}
	opens := map[int]int{}
	open := func(bar int) (pci.Region, error) {
		opens[bar]++
		switch bar {
		case 0:
			return m0, nil
		case 1:
			return plain{}, nil
		case 2:
			return m2, nil
		}
		return nil, errors.New("BAR3: not implemented")
	}
	for _, tt := range []struct {
		bar    int
		closed bool
		want   pci.Region
		err    string
	}{
		{-1, false, nil, "BAR-1: index out of range 0-5"},
		{6, false, nil, "BAR6: index out of range 0-5"},
		{0, true, nil, "BAR0: device closed"},
		{0, false, m0, ""},
		{0, false, m0, ""},
		{1, false, plain{}, ""},
		{2, false, m2, ""},
		{3, false, nil, "BAR3: not implemented"},
		{3, false, nil, "BAR3: not implemented"},
	} {
		r, err := rs.Get(tt.bar, tt.closed, open)
		if tt.err != "" {
			testutil.ErrorContains(t, err, tt.err)
			if tt.closed && !errors.Is(err, pci.ErrClosed) {
				t.Errorf("BAR%d closed: %v is not ErrClosed", tt.bar, err)
			}
			continue
		}
		if err != nil || r != tt.want {
			t.Errorf("Get(%d) = %v, %v; want %v", tt.bar, r, err, tt.want)
		}
	}
	if opens[0] != 1 || opens[3] != 2 {
		t.Errorf("opens %v: want BAR0 mapped once, BAR3 tried each time", opens)
	}
	testutil.ErrorContains(t, rs.Release(), "unmap BAR2: busy")
	if m0.unmaps != 1 || m2.unmaps != 1 {
		t.Errorf("unmaps: BAR0 %d, BAR2 %d; want 1 each", m0.unmaps, m2.unmaps)
	}
	if err := rs.Release(); err != nil || m0.unmaps != 1 {
		t.Errorf("second Release: %v, BAR0 unmapped %d times", err, m0.unmaps)
	}
	if _, err := rs.Get(0, false, open); err != nil || opens[0] != 2 {
		t.Errorf("Get after Release: %v, BAR0 mapped %d times; want a new mapping", err, opens[0])
	}
}
