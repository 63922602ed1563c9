package vfio

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestIOVAAllocator(t *testing.T) {
	a := NewIOVAAllocator()
	if _, err := a.Alloc(IOVAGranule, 0); !errors.Is(err, ErrIOVAExhausted) {
		t.Fatalf("Alloc from empty allocator: %v", err)
	}
	for _, r := range [][2]uint64{{0, 0}, {1, IOVAGranule}, {IOVAGranule, 0}, {2 * IOVAGranule, IOVAGranule}} {
		if err := a.AddRange(r[0], r[1]); err == nil {
			t.Errorf("AddRange(%#x, %#x) succeeded", r[0], r[1])
		}
	}
	if err := a.AddRange(0x10000, 0x20000); err != nil {
		t.Fatal(err)
	}
	if err := a.AddRange(0x18000, 0x30000); err == nil {
		t.Error("overlapping AddRange succeeded")
	}
	if err := a.AddRange(0x40000, 0x400000); err != nil {
		t.Fatal(err)
	}
	if a.Total() != 0x10000+0x3C0000 || a.Available() != a.Total() {
		t.Fatalf("Total %#x Available %#x", a.Total(), a.Available())
	}
	steps := []struct {
		size, align uint64
		want        uint64
		wantErr     bool
	}{
		{size: 1, want: 0x10000},                     // rounded to a granule
		{size: IOVAGranule, want: 0x11000},           //
		{size: 0x8000, align: 0x8000, want: 0x18000}, // skips to the alignment
		{size: 0x10000, want: 0x40000},               // too big for the rest of range 1
		{size: 0x100000, align: 0x100000, want: 0x100000},
		{size: 0, wantErr: true},
		{size: 1, align: 3 * IOVAGranule, wantErr: true},
		{size: 1 << 40, wantErr: true},
	}
	var got []uint64
	for i, s := range steps {
		iova, err := a.Alloc(s.size, s.align)
		if s.wantErr {
			if err == nil {
				t.Errorf("step %d: Alloc(%#x, %#x) = %#x, want an error", i, s.size, s.align, iova)
			}
			continue
		}
		if err != nil || iova != s.want {
			t.Fatalf("step %d: Alloc(%#x, %#x) = %#x, %v; want %#x", i, s.size, s.align, iova, err, s.want)
		}
		got = append(got, iova)
	}
	if err := a.Free(got[0], 2*IOVAGranule); err == nil {
		t.Error("Free with the wrong size succeeded")
	}
	if err := a.Free(got[2]+IOVAGranule, IOVAGranule); err == nil {
		t.Error("Free of an address inside an allocation succeeded")
	}
	sizes := []uint64{1, IOVAGranule, 0x8000, 0x10000, 0x100000}
	for i, iova := range got {
		if err := a.Free(iova, sizes[i]); err != nil {
			t.Fatalf("Free(%#x): %v", iova, err)
		}
	}
	if err := a.Free(got[0], 1); err == nil {
		t.Error("double Free succeeded")
	}
	if a.Available() != a.Total() || len(a.free) != 2 {
		t.Errorf("after freeing everything: available %#x of %#x in %d spans %v", a.Available(), a.Total(), len(a.free), a.free)
	}
}

// FuzzIOVAAllocator runs a program of allocs and frees and checks the invariants after
// every step: allocations are aligned, inside the ranges, disjoint from each other and
// from free space, and free + allocated always equals the total.
func FuzzIOVAAllocator(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 1, 0, 0, 16, 1, 1})
	f.Add([]byte{0, 255, 7, 0, 200, 3, 1, 0, 1, 0})
	f.Fuzz(func(t *testing.T, prog []byte) {
		a := NewIOVAAllocator()
		if err := a.AddRange(0x100000, 0x900000); err != nil {
			t.Fatal(err)
		}
		if err := a.AddRange(0x1000000, 0x1400000); err != nil {
			t.Fatal(err)
		}
		type alloc struct{ iova, size uint64 }
		var live []alloc
		for len(prog) >= 3 {
			op, arg := prog[0], binary.LittleEndian.Uint16(prog[1:3])
			prog = prog[3:]
			if op%2 == 0 { // alloc
				size := uint64(arg%512+1) * 512
				align := uint64(1) << (12 + op/2%10)
				iova, err := a.Alloc(size, align)
				if err != nil {
					if !errors.Is(err, ErrIOVAExhausted) {
						t.Fatalf("Alloc(%#x, %#x): %v", size, align, err)
					}
					continue
				}
				if iova%align != 0 {
					t.Fatalf("Alloc(%#x, %#x) = %#x: misaligned", size, align, iova)
				}
				live = append(live, alloc{iova, size})
			} else if len(live) > 0 { // free
				i := int(arg) % len(live)
				if err := a.Free(live[i].iova, live[i].size); err != nil {
					t.Fatalf("Free(%#x, %#x): %v", live[i].iova, live[i].size, err)
				}
				live = append(live[:i], live[i+1:]...)
			}
			var used uint64
			for i, x := range live {
				n := (x.size + IOVAGranule - 1) &^ (IOVAGranule - 1)
				used += n
				in := (x.iova >= 0x100000 && x.iova+n <= 0x900000) || (x.iova >= 0x1000000 && x.iova+n <= 0x1400000)
				if !in {
					t.Fatalf("allocation [%#x, +%#x) outside the ranges", x.iova, n)
				}
				for _, y := range live[i+1:] {
					if x.iova < y.iova+y.size && y.iova < x.iova+n {
						t.Fatalf("allocations %#x and %#x overlap", x.iova, y.iova)
					}
				}
				for _, s := range a.free {
					if x.iova < s.end && s.start < x.iova+n {
						t.Fatalf("allocation %#x overlaps free span [%#x, %#x)", x.iova, s.start, s.end)
					}
				}
			}
			for i := 1; i < len(a.free); i++ {
				if a.free[i-1].end >= a.free[i].start {
					t.Fatalf("free spans unsorted or unmerged: %v", a.free)
				}
			}
			if used+a.Available() != a.Total() {
				t.Fatalf("used %#x + free %#x != total %#x", used, a.Available(), a.Total())
			}
		}
	})
}
