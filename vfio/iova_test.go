package vfio

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestIOVAAllocator(t *testing.T) {
	a := newIOVAAllocator()
	if _, err := a.Alloc(iovaGranule, 0); !errors.Is(err, ErrIOVAExhausted) {
		t.Fatalf("Alloc from empty allocator: %v", err)
	}
	for _, r := range [][2]uint64{{0, 0}, {1, iovaGranule}, {iovaGranule, 0}, {2 * iovaGranule, iovaGranule}} {
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
		{size: iovaGranule, want: 0x11000},           //
		{size: 0x8000, align: 0x8000, want: 0x18000}, // skips to the alignment
		{size: 0x10000, want: 0x40000},               // too big for the rest of range 1
		{size: 0x100000, align: 0x100000, want: 0x100000},
		{size: 0, wantErr: true},
		{size: 1, align: 3 * iovaGranule, wantErr: true},
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
	if err := a.Free(got[0], 2*iovaGranule); err == nil {
		t.Error("Free with the wrong size succeeded")
	}
	if err := a.Free(got[2]+iovaGranule, iovaGranule); err == nil {
		t.Error("Free of an address inside an allocation succeeded")
	}
	sizes := []uint64{1, iovaGranule, 0x8000, 0x10000, 0x100000}
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
	f.Add([]byte{0, 0, 1, 2, 0, 1, 0xFF, 20, 0, 1, 0, 0, 1, 0, 0, 0, 4, 0})
	f.Fuzz(func(t *testing.T, prog []byte) {
		a := newIOVAAllocator()
		if err := a.AddRange(0x100000, 0x900000); err != nil {
			t.Fatal(err)
		}
		if err := a.AddRange(0x1000000, 0x1400000); err != nil {
			t.Fatal(err)
		}
		type alloc struct{ iova, size uint64 }
		var live []alloc
		lo := uint64(0) // everything below was forbidden by a Restrict
		for len(prog) >= 3 {
			op, arg := prog[0], binary.LittleEndian.Uint16(prog[1:3])
			prog = prog[3:]
			if op == 0xFF { // restrict: forbid everything below a new floor
				lo = max(lo, 0x100000+uint64(arg%64)*0x10000)
				a.Restrict([]span{{lo, 1 << 40}})
			} else if op%2 == 0 { // alloc
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
				n := (x.size + iovaGranule - 1) &^ (iovaGranule - 1)
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
			for _, s := range a.free {
				if s.start < lo {
					t.Fatalf("free span [%#x, %#x) below the restricted floor %#x", s.start, s.end, lo)
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

func TestIOVARestrict(t *testing.T) {
	a := newIOVAAllocator()
	for _, r := range defaultIOVARanges {
		if err := a.AddRange(r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	used, err := a.Alloc(0x200000, 0)
	if err != nil {
		t.Fatal(err)
	}
	// What intel-iommu reports with its MSI window and a 39-bit address width, plus an
	// overlapping duplicate and an unaligned edge.
	a.Restrict([]span{
		{0, 0xFEE00000},
		{0xFEF00000, 1 << 39},
		{0x1000, 0x50000000},
		{0x60000800, 0x70000000},
	})
	want := []span{{0x40200000, 0xFEE00000}, {1 << 32, 1 << 39}}
	if len(a.free) != len(want) {
		t.Fatalf("free = %#v, want %#v", a.free, want)
	}
	for i := range want {
		if a.free[i] != want[i] {
			t.Errorf("free[%d] = %#v, want %#v", i, a.free[i], want[i])
		}
	}
	if a.Available()+0x200000 != a.Total() {
		t.Errorf("available %#x + used 0x200000 != total %#x", a.Available(), a.Total())
	}
	if err := a.Free(used, 0x200000); err != nil {
		t.Fatal(err)
	}
	// Everything forbidden: nothing left to hand out.
	a.Restrict([]span{{0, 0x1000}})
	if _, err := a.Alloc(1, 0); !errors.Is(err, ErrIOVAExhausted) {
		t.Errorf("Alloc after restricting to nothing usable: %v", err)
	}
}

// TestIOVARestrictThenFree frees allocations made before a Restrict (a second group
// joined with a reserved region): only their allowed part may become free again.
func TestIOVARestrictThenFree(t *testing.T) {
	a := newIOVAAllocator()
	if err := a.AddRange(0x100000, 0x200000); err != nil {
		t.Fatal(err)
	}
	low, err := a.Alloc(0x10000, 0) // [0x100000, 0x110000)
	if err != nil {
		t.Fatal(err)
	}
	high, err := a.Alloc(0x10000, 0) // [0x110000, 0x120000)
	if err != nil {
		t.Fatal(err)
	}
	// The new group reserves [0x100000, 0x118000); a later report also forbids the top.
	a.Restrict([]span{{0x118000, 0x200000}})
	a.Restrict([]span{{0x100000, 0x1F0000}})
	for _, x := range []uint64{low, high} {
		if err := a.Free(x, 0x10000); err != nil {
			t.Fatal(err)
		}
	}
	want := []span{{0x118000, 0x1F0000}}
	if len(a.free) != len(want) || a.free[0] != want[0] {
		t.Errorf("free = %#v, want %#v", a.free, want)
	}
	if a.Total() != a.Available() || a.Total() != 0x1F0000-0x118000 {
		t.Errorf("total %#x, available %#x, want both %#x", a.Total(), a.Available(), 0x1F0000-0x118000)
	}
	for {
		iova, err := a.Alloc(iovaGranule, 0)
		if errors.Is(err, ErrIOVAExhausted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if iova < 0x118000 || iova >= 0x1F0000 {
			t.Fatalf("Alloc handed out forbidden IOVA %#x", iova)
		}
	}
	// Space added later is usable even after a Restrict.
	if err := a.AddRange(0x400000, 0x500000); err != nil {
		t.Fatal(err)
	}
	x, err := a.Alloc(0x100000, 0)
	if err != nil || x != 0x400000 {
		t.Fatalf("Alloc after AddRange = %#x, %v", x, err)
	}
	if err := a.Free(x, 0x100000); err != nil || a.Available() != 0x100000 {
		t.Errorf("Free of added space: %v, available %#x", err, a.Available())
	}
}

func TestParseIOVARangeCap(t *testing.T) {
	ne := binary.NativeEndian
	build := func(flags uint32, caps ...[]byte) []byte {
		b := make([]byte, sizeofType1Info)
		ne.PutUint32(b[4:], flags)
		off := uint32(sizeofType1Info)
		if len(caps) > 0 {
			ne.PutUint32(b[16:], off)
		}
		for i, c := range caps {
			next := uint32(0)
			if i+1 < len(caps) {
				next = off + uint32(len(c))
			}
			ne.PutUint32(c[4:], next)
			b = append(b, c...)
			off += uint32(len(c))
		}
		ne.PutUint32(b[0:], uint32(len(b)))
		return b
	}
	rangeCap := func(r ...[2]uint64) []byte {
		c := make([]byte, sizeofIOVARangeCap+sizeofIOVARange*len(r))
		ne.PutUint16(c[0:], iommuType1InfoCapIOVARange)
		ne.PutUint16(c[2:], 1)
		ne.PutUint32(c[8:], uint32(len(r)))
		for i, x := range r {
			ne.PutUint64(c[16+16*i:], x[0])
			ne.PutUint64(c[24+16*i:], x[1])
		}
		return c
	}
	otherCap := func() []byte {
		c := make([]byte, 16)
		ne.PutUint16(c[0:], 2) // migration cap
		return c
	}
	got, ok, err := parseIOVARangeCap(build(iommuInfoPgSizes|iommuInfoCaps, otherCap(),
		rangeCap([2]uint64{0, 0xFEDFFFFF}, [2]uint64{0xFEF00000, 1<<39 - 1})))
	if err != nil || !ok {
		t.Fatalf("parse: %v, %v", ok, err)
	}
	want := []span{{0, 0xFEE00000}, {0xFEF00000, 1 << 39}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ranges %#v, want %#v", got, want)
	}
	if _, ok, err := parseIOVARangeCap(build(iommuInfoPgSizes)); ok || err != nil {
		t.Errorf("no caps: ok=%v err=%v", ok, err)
	}
	if _, ok, err := parseIOVARangeCap(build(iommuInfoCaps, otherCap())); ok || err != nil {
		t.Errorf("no range cap: ok=%v err=%v", ok, err)
	}
	full, _, err := parseIOVARangeCap(build(iommuInfoCaps, rangeCap([2]uint64{0, ^uint64(0)})))
	if err != nil || len(full) != 1 || full[0].end != ^uint64(0)&^(iovaGranule-1) {
		t.Errorf("full range: %#v, %v", full, err)
	}
	bad := map[string][]byte{
		"short":    make([]byte, 8),
		"reversed": build(iommuInfoCaps, rangeCap([2]uint64{0x2000, 0x1000})),
		"overrun":  build(iommuInfoCaps, rangeCap([2]uint64{0, 1}))[:sizeofType1Info+20],
		"loop": func() []byte {
			b := build(iommuInfoCaps, otherCap())
			ne.PutUint32(b[sizeofType1Info+4:], sizeofType1Info)
			return b
		}(),
		"cap beyond": func() []byte { b := build(iommuInfoCaps); ne.PutUint32(b[16:], 4096); return b }(),
	}
	for name, b := range bad {
		if r, ok, err := parseIOVARangeCap(b); err == nil {
			t.Errorf("%s: accepted (%v, %#v)", name, ok, r)
		}
	}
}

func FuzzParseIOVARangeCap(f *testing.F) {
	seed := make([]byte, sizeofType1Info+sizeofIOVARangeCap+sizeofIOVARange)
	ne := binary.NativeEndian
	ne.PutUint32(seed[0:], uint32(len(seed)))
	ne.PutUint32(seed[4:], iommuInfoCaps)
	ne.PutUint32(seed[16:], sizeofType1Info)
	ne.PutUint16(seed[sizeofType1Info:], iommuType1InfoCapIOVARange)
	ne.PutUint32(seed[sizeofType1Info+8:], 1)
	ne.PutUint64(seed[sizeofType1Info+24:], 0xFFFFF)
	f.Add(seed)
	f.Add(make([]byte, sizeofType1Info))
	f.Fuzz(func(t *testing.T, b []byte) {
		ranges, ok, err := parseIOVARangeCap(b)
		if err != nil {
			return
		}
		if !ok && len(ranges) != 0 {
			t.Fatal("ranges without ok")
		}
		a := newIOVAAllocator()
		if err := a.AddRange(iovaGranule, 1<<40); err != nil {
			t.Fatal(err)
		}
		a.Restrict(ranges)
		for i, f := range a.free {
			if i > 0 && a.free[i-1].end >= f.start {
				t.Fatalf("restricted free list unsorted or unmerged: %#v", a.free)
			}
			inside := false
			for _, r := range ranges {
				inside = inside || (f.start >= r.start && f.end <= r.end)
			}
			if !inside && ok {
				// Merged neighbours may span touching allowed ranges: walk the cover.
				for cur := f.start; cur < f.end; {
					next := cur
					for _, r := range ranges {
						if r.start <= cur && cur < r.end {
							next = max(next, r.end)
						}
					}
					if next == cur {
						t.Fatalf("address %#x of free span %#v outside the allowed ranges %#v", cur, f, ranges)
					}
					cur = next
				}
			}
		}
		if a.Available() != a.Total() {
			t.Fatalf("available %#x != total %#x", a.Available(), a.Total())
		}
	})
}
