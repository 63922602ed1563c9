package vfio

import (
	"errors"
	"fmt"
	"math/bits"
	"sort"

	"github.com/uiod/uiod/dmamem"
)

// iovaGranule is the smallest unit of IOVA space the allocator hands out.
const iovaGranule = 4 << 10

// ErrIOVAExhausted is returned when no free IOVA range is large enough.
var ErrIOVAExhausted = errors.New("iova space exhausted")

// span is a half-open range [start, end) of IOVA space.
type span struct{ start, end uint64 }

// iovaAllocator hands out ranges of a device's I/O virtual address space: first fit over
// a sorted list of free ranges, with neighbours merged on Free. It is not safe for
// concurrent use.
type iovaAllocator struct {
	free    []span            // sorted, disjoint, never adjacent
	used    map[uint64]uint64 // start → size of live allocations
	total   uint64
	allowed []span // after Restrict: sorted, disjoint IOVA space a Free may return; nil = all
}

// newIOVAAllocator returns an allocator with no address space; add some with AddRange.
func newIOVAAllocator() *iovaAllocator {
	return &iovaAllocator{used: make(map[uint64]uint64)}
}

// AddRange makes [start, end) available. Both ends must be granule-aligned, the range
// must be non-empty and must not overlap space already added.
func (a *iovaAllocator) AddRange(start, end uint64) error {
	if start%iovaGranule != 0 || end%iovaGranule != 0 || start >= end {
		return fmt.Errorf("iova range [%#x, %#x): not a non-empty range aligned to %#x", start, end, iovaGranule)
	}
	for _, s := range a.free {
		if start < s.end && s.start < end {
			return fmt.Errorf("iova range [%#x, %#x) overlaps [%#x, %#x)", start, end, s.start, s.end)
		}
	}
	for u, n := range a.used {
		if start < u+n && u < end {
			return fmt.Errorf("iova range [%#x, %#x) overlaps an allocation at %#x", start, end, u)
		}
	}
	a.total += end - start
	a.insert(span{start, end})
	if a.allowed != nil {
		a.allowed = mergeSpans(append(a.allowed, span{start, end}))
	}
	return nil
}

// Alloc returns the start of a free range of size bytes (rounded up to the granule)
// aligned to align, which must be a power of two (values below the granule mean the
// granule).
func (a *iovaAllocator) Alloc(size, align uint64) (uint64, error) {
	if size == 0 || size > 1<<63 {
		return 0, fmt.Errorf("iova alloc: invalid size %#x", size)
	}
	if align < iovaGranule {
		align = iovaGranule
	}
	if bits.OnesCount64(align) != 1 {
		return 0, fmt.Errorf("iova alloc: alignment %#x is not a power of two", align)
	}
	size = (size + iovaGranule - 1) &^ (iovaGranule - 1)
	for i, s := range a.free {
		start := (s.start + align - 1) &^ (align - 1)
		if start < s.start { // overflow
			continue
		}
		if start >= s.end || s.end-start < size {
			continue
		}
		end := start + size
		// Carve [start, end) out of s: up to two pieces remain.
		var rest []span
		if s.start < start {
			rest = append(rest, span{s.start, start})
		}
		if end < s.end {
			rest = append(rest, span{end, s.end})
		}
		a.free = append(a.free[:i], append(rest, a.free[i+1:]...)...)
		a.used[start] = size
		return start, nil
	}
	return 0, fmt.Errorf("iova alloc %#x bytes aligned %#x: %w", size, align, ErrIOVAExhausted)
}

// Free returns a range that Alloc handed out. size must be the size passed to Alloc.
func (a *iovaAllocator) Free(iova, size uint64) error {
	n, ok := a.used[iova]
	if !ok {
		return fmt.Errorf("iova free %#x: not allocated", iova)
	}
	if want := (size + iovaGranule - 1) &^ (iovaGranule - 1); want != n {
		return fmt.Errorf("iova free %#x: size %#x, allocated %#x", iova, size, n)
	}
	delete(a.used, iova)
	if a.allowed == nil {
		a.insert(span{iova, iova + n})
		return nil
	}
	// A Restrict since the allocation may have forbidden part of it: only the allowed
	// part becomes free again.
	var kept uint64
	for _, r := range a.allowed {
		if s, ok := clipSpan(span{iova, iova + n}, r); ok {
			a.insert(s)
			kept += s.end - s.start
		}
	}
	a.total -= n - kept
	return nil
}

// Available returns the number of free bytes.
func (a *iovaAllocator) Available() uint64 {
	var n uint64
	for _, s := range a.free {
		n += s.end - s.start
	}
	return n
}

// Total returns the number of bytes added with AddRange.
func (a *iovaAllocator) Total() uint64 { return a.total }

// insert adds a free span and merges it with adjacent neighbours.
func (a *iovaAllocator) insert(n span) {
	i := sort.Search(len(a.free), func(i int) bool { return a.free[i].start >= n.start })
	a.free = append(a.free, span{})
	copy(a.free[i+1:], a.free[i:])
	a.free[i] = n
	if i+1 < len(a.free) && a.free[i].end == a.free[i+1].start {
		a.free[i].end = a.free[i+1].end
		a.free = append(a.free[:i+1], a.free[i+2:]...)
	}
	if i > 0 && a.free[i-1].end == a.free[i].start {
		a.free[i-1].end = a.free[i].end
		a.free = append(a.free[:i], a.free[i+1:]...)
	}
}

// Restrict removes from the free space everything outside allowed (half-open spans, in
// any order). Live allocations are left alone; when one is freed, only its part inside
// every range allowed so far becomes free again.
func (a *iovaAllocator) Restrict(allowed []span) {
	var out []span
	for _, f := range a.free {
		for _, r := range allowed {
			if s, ok := clipSpan(f, r); ok {
				out = append(out, s)
			}
		}
	}
	var now []span
	for _, r := range allowed {
		if a.allowed == nil {
			if s, ok := clipSpan(r, r); ok {
				now = append(now, s)
			}
			continue
		}
		for _, p := range a.allowed {
			if s, ok := clipSpan(r, p); ok {
				now = append(now, s)
			}
		}
	}
	a.allowed = mergeSpans(now)
	if a.allowed == nil {
		a.allowed = []span{} // everything forbidden, which is not "unrestricted"
	}
	removed := a.Available()
	a.free = a.free[:0]
	for _, s := range out {
		a.insertOverlapping(s)
	}
	removed -= a.Available()
	a.total -= removed
}

// insertOverlapping adds s to the free list, merging it with spans it overlaps or touches
// (allowed ranges from the kernel may overlap each other).
func (a *iovaAllocator) insertOverlapping(s span) {
	var out []span
	for _, f := range a.free {
		if f.end < s.start || s.end < f.start {
			out = append(out, f)
			continue
		}
		s.start, s.end = min(s.start, f.start), max(s.end, f.end)
	}
	out = append(out, s)
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	a.free = out
}

// clipSpan returns the granule-aligned part of s inside r, if any.
func clipSpan(s, r span) (span, bool) {
	lo, end := max(s.start, r.start), min(s.end, r.end)
	start := (lo + iovaGranule - 1) &^ (iovaGranule - 1)
	end &^= iovaGranule - 1
	return span{start, end}, start >= lo && start < end
}

// mergeSpans sorts spans and merges those that overlap or touch.
func mergeSpans(in []span) []span {
	sort.Slice(in, func(i, j int) bool { return in[i].start < in[j].start })
	var out []span
	for _, s := range in {
		if n := len(out); n > 0 && s.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, s.end)
			continue
		}
		out = append(out, s)
	}
	return out
}

// Default IOVA ranges handed to devices: below the x86 MSI window at 0xFEE00000 (so
// devices limited to 32-bit DMA work) and from 4 GiB up to 2^39, the smallest address
// width of Intel IOMMUs.
var defaultIOVARanges = [][2]uint64{
	{1 << 30, 0xFEE0_0000},
	{1 << 32, 1 << 39},
}

// translated is the IOVA bookkeeping of an address space behind an IOMMU (type1,
// iommufd): the default ranges, narrowed to what the kernel reports.
type translated struct {
	iova *iovaAllocator
}

func newTranslated() (translated, error) {
	a := newIOVAAllocator()
	for _, r := range defaultIOVARanges {
		if err := a.AddRange(r[0], r[1]); err != nil {
			return translated{}, err
		}
	}
	return translated{iova: a}, nil
}

// alloc returns an IOVA for size bytes, 2 MiB aligned for allocations of a hugepage or
// more so that the IOMMU can use superpages.
func (t translated) alloc(size uint64) (uint64, error) {
	align := uint64(iovaGranule)
	if size >= dmamem.HugePageSize {
		align = dmamem.HugePageSize
	}
	return t.iova.Alloc(size, align)
}

// mapAt allocates an IOVA range for b and maps b there with kernelMap, the backend's map
// ioctl (given b's virtual address); a failed map frees the range again.
func (t translated) mapAt(b []byte, kernelMap func(vaddr, iova, size uint64) error) (uint64, error) {
	size := uint64(len(b))
	iova, err := t.alloc(size)
	if err != nil {
		return 0, err
	}
	if err := kernelMap(uint64(dmamem.VirtAddr(b)), iova, size); err != nil {
		t.iova.Free(iova, size)
		return 0, fmt.Errorf("map %#x bytes at IOVA %#x: %w", size, iova, err)
	}
	return iova, nil
}

// unmapAt unmaps the size bytes mapped at iova with kernelUnmap, the backend's unmap
// ioctl, which returns how many bytes the kernel unmapped, and frees the range.
func (t translated) unmapAt(iova, size uint64, kernelUnmap func(iova, size uint64) (uint64, error)) error {
	n, err := kernelUnmap(iova, size)
	if err != nil {
		return fmt.Errorf("unmap IOVA %#x: %w", iova, err)
	}
	if n != size {
		return fmt.Errorf("unmap IOVA %#x: kernel unmapped %#x of %#x bytes", iova, n, size)
	}
	return t.iova.Free(iova, size)
}

// restrictTo narrows the allocator to the kernel's ranges, if it reported any (ok).
// Attaching a group or a device can only add reserved regions, so the allowed set only
// shrinks.
func (t translated) restrictTo(ranges []span, ok bool, err error) error {
	if err != nil || !ok {
		return err
	}
	t.iova.Restrict(ranges)
	if t.iova.Available() == 0 {
		return fmt.Errorf("no usable IOVA space: kernel allows %v", ranges)
	}
	return nil
}
