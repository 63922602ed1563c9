package nic

import (
	"testing"

	"github.com/uiod/uiod/pci"
)

// heapDMA is an allocator on the Go heap; its slice field makes the value type
// uncomparable, as a pci.DMA implementation may be.
type heapDMA struct{ _ []int }

func (heapDMA) Alloc(size int) (pci.Mem, error) { return pci.Mem{Bytes: make([]byte, size)}, nil }
func (heapDMA) Free(pci.Mem) error              { return nil }

// ptrDMA is a comparable allocator.
type ptrDMA struct{ heapDMA }

func TestReachable(t *testing.T) {
	a, b := &ptrDMA{}, &ptrDMA{}
	tests := []struct {
		name      string
		pool, dev pci.DMA
		want      bool
	}{
		{"same allocator", a, a, true},
		{"another allocator", a, b, false},
		{"another type", a, heapDMA{}, false},
		{"uncomparable type", heapDMA{}, heapDMA{}, false},
		{"no allocator", a, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool, err := NewMempool(tt.pool, 4, 2048)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			if got := pool.Reachable(tt.dev); got != tt.want {
				t.Errorf("Reachable = %v, want %v", got, tt.want)
			}
		})
	}
}
