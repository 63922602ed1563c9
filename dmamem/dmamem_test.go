package dmamem

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/uiod/uiod/pci"
)

// fakeMapper hands out bus addresses from a counter and records what is mapped.
type fakeMapper struct {
	next    uint64
	mapped  map[uint64]int
	failMap error
	failUn  error
}

func newFakeMapper() *fakeMapper { return &fakeMapper{next: 0x10000000, mapped: map[uint64]int{}} }

func (f *fakeMapper) Map(b []byte) (uint64, error) {
	if f.failMap != nil {
		return 0, f.failMap
	}
	bus := f.next
	f.next += uint64(len(b))
	f.mapped[bus] = len(b)
	return bus, nil
}

func (f *fakeMapper) Unmap(b []byte, bus uint64) error {
	if f.failUn != nil {
		return f.failUn
	}
	n, ok := f.mapped[bus]
	if !ok || n != len(b) {
		return errors.New("unmap of something not mapped")
	}
	delete(f.mapped, bus)
	return nil
}

// hugePagesFree reads HugePages_Free from /proc/meminfo.
func hugePagesFree(t *testing.T) int {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Skipf("no /proc/meminfo: %v", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "HugePages_Free:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

func TestAllocFreeClose(t *testing.T) {
	m := newFakeMapper()
	a := New(m, Options{HugePages: HugeOff})
	var mems []pci.Mem
	for _, size := range []int{1, 100, PageSize, PageSize + 1, 3 * PageSize} {
		mem, err := a.Alloc(size)
		if err != nil {
			t.Fatalf("Alloc(%d): %v", size, err)
		}
		if len(mem.Bytes) != size {
			t.Errorf("Alloc(%d): got %d bytes", size, len(mem.Bytes))
		}
		if VirtAddr(mem.Bytes)%PageSize != 0 {
			t.Errorf("Alloc(%d): address %#x not page aligned", size, VirtAddr(mem.Bytes))
		}
		for i, c := range mem.Bytes {
			if c != 0 {
				t.Fatalf("Alloc(%d): byte %d is %#x, want zero", size, i, c)
			}
		}
		mem.Bytes[size-1] = 0xAB // writable to the end
		mems = append(mems, mem)
	}
	if n, bytes := a.InUse(); n != 5 || bytes != 1*PageSize+1*PageSize+1*PageSize+2*PageSize+3*PageSize {
		t.Errorf("InUse = %d, %d", n, bytes)
	}
	if err := a.Free(mems[0]); err != nil {
		t.Fatalf("Free: %v", err)
	}
	if err := a.Free(mems[0]); err == nil {
		t.Error("double Free succeeded")
	}
	bad := mems[1]
	bad.IOVA++
	if err := a.Free(bad); err == nil {
		t.Error("Free with the wrong IOVA succeeded")
	}
	if err := a.Free(pci.Mem{}); err == nil {
		t.Error("Free of an empty Mem succeeded")
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if len(m.mapped) != 0 {
		t.Errorf("Close left %d mappings", len(m.mapped))
	}
	if n, bytes := a.InUse(); n != 0 || bytes != 0 {
		t.Errorf("after Close InUse = %d, %d", n, bytes)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := a.Alloc(1); !errors.Is(err, pci.ErrClosed) {
		t.Errorf("Alloc after Close: %v, want pci.ErrClosed", err)
	}
}

func TestAllocErrors(t *testing.T) {
	a := New(newFakeMapper(), Options{HugePages: HugeOff})
	defer a.Close()
	for _, size := range []int{0, -1} {
		if _, err := a.Alloc(size); err == nil {
			t.Errorf("Alloc(%d) succeeded", size)
		}
	}
	m := newFakeMapper()
	m.failMap = ErrNotContiguous
	b := New(m, Options{HugePages: HugeOff})
	_, err := b.Alloc(2 * PageSize)
	if !errors.Is(err, ErrNotContiguous) || !strings.Contains(err.Error(), "hugepages") {
		t.Errorf("Alloc with a failing mapper: %v, want ErrNotContiguous advising hugepages", err)
	}
	if n, _ := b.InUse(); n != 0 {
		t.Errorf("failed Alloc is tracked: %d", n)
	}
}

func TestUnmapFailureLeaks(t *testing.T) {
	m := newFakeMapper()
	a := New(m, Options{HugePages: HugeOff})
	mem, err := a.Alloc(10)
	if err != nil {
		t.Fatal(err)
	}
	m.failUn = errors.New("iommu says no")
	if err := a.Free(mem); err == nil || !strings.Contains(err.Error(), "leaked") {
		t.Errorf("Free with failing unmap: %v, want a leak error", err)
	}
}

func TestHugePagePolicy(t *testing.T) {
	free := hugePagesFree(t)
	t.Run("auto", func(t *testing.T) {
		a := New(newFakeMapper(), Options{HugePages: HugeAuto})
		defer a.Close()
		mem, err := a.Alloc(PageSize)
		if err != nil {
			t.Fatalf("Alloc: %v", err)
		}
		if got, want := a.FellBack(), free == 0; got != want {
			t.Errorf("FellBack = %v with %d free hugepages", got, free)
		}
		align := uintptr(PageSize)
		if free > 0 {
			align = HugePageSize
		}
		if VirtAddr(mem.Bytes)%align != 0 {
			t.Errorf("address %#x not aligned to %#x", VirtAddr(mem.Bytes), align)
		}
	})
	t.Run("require", func(t *testing.T) {
		a := New(newFakeMapper(), Options{HugePages: HugeRequire})
		defer a.Close()
		_, err := a.Alloc(PageSize)
		if free == 0 && err == nil {
			t.Error("HugeRequire succeeded without hugepages")
		}
		if free > 0 && err != nil {
			t.Errorf("HugeRequire with %d free hugepages: %v", free, err)
		}
		if a.FellBack() {
			t.Error("HugeRequire fell back")
		}
	})
}

func TestContiguousPFN(t *testing.T) {
	entry := func(pfn uint64, flags uint64) []byte {
		var b [8]byte
		v := pfn | flags
		for i := range b {
			b[i] = byte(v >> (8 * i))
		}
		return b[:]
	}
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	tests := []struct {
		name    string
		in      []byte
		want    uint64
		wantErr error
		anyErr  bool
	}{
		{name: "one page", in: entry(0x1234, pmPresent), want: 0x1234},
		{name: "three contiguous", in: cat(entry(7, pmPresent), entry(8, pmPresent), entry(9, pmPresent)), want: 7},
		{name: "soft-dirty and exclusive bits ignored", in: entry(5, pmPresent|1<<55|1<<56), want: 5},
		{name: "gap", in: cat(entry(7, pmPresent), entry(9, pmPresent)), wantErr: ErrNotContiguous},
		{name: "descending", in: cat(entry(9, pmPresent), entry(8, pmPresent)), wantErr: ErrNotContiguous},
		{name: "not present", in: entry(7, 0), anyErr: true},
		{name: "swapped", in: entry(7, pmPresent|pmSwapped), anyErr: true},
		{name: "hidden pfn", in: entry(0, pmPresent), wantErr: ErrNoPhysAddr},
		{name: "empty", in: nil, anyErr: true},
		{name: "partial entry", in: []byte{1, 2, 3}, anyErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := contiguousPFN(tt.in)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("err = %v, want %v", err, tt.wantErr)
				}
			case tt.anyErr:
				if err == nil {
					t.Errorf("got %#x, want an error", got)
				}
			default:
				if err != nil || got != tt.want {
					t.Errorf("got %#x, %v; want %#x", got, err, tt.want)
				}
			}
		})
	}
}

func FuzzContiguousPFN(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x34, 0x12, 0, 0, 0, 0, 0, 0x80})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0x80, 2, 0, 0, 0, 0, 0, 0, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		pfn, err := contiguousPFN(b)
		if err != nil {
			return
		}
		if len(b) == 0 || len(b)%8 != 0 || pfn == 0 || pfn > pmPFNMask {
			t.Fatalf("accepted %d bytes with pfn %#x", len(b), pfn)
		}
		for i := 0; i < len(b)/8; i++ {
			var e uint64
			for j := 0; j < 8; j++ {
				e |= uint64(b[8*i+j]) << (8 * j)
			}
			if e&pmPresent == 0 || e&pmPFNMask != pfn+uint64(i) {
				t.Fatalf("entry %d = %#x accepted in a run from %#x", i, e, pfn)
			}
		}
	})
}

func TestPagemap(t *testing.T) {
	p, err := OpenPagemap("/")
	if err != nil {
		t.Skipf("no pagemap: %v", err)
	}
	defer p.Close()
	a := New(p, Options{HugePages: HugeOff})
	defer a.Close()
	mem, err := a.Alloc(PageSize)
	if errors.Is(err, ErrNoPhysAddr) {
		t.Skipf("unprivileged: %v", err)
	}
	if err != nil {
		t.Fatalf("Alloc one page: %v", err)
	}
	if mem.IOVA == 0 || mem.IOVA%PageSize != 0 {
		t.Errorf("physical address %#x", mem.IOVA)
	}
	// The same page seen through an offset.
	phys, err := p.Phys(VirtAddr(mem.Bytes)+100, 8)
	if err != nil || phys != mem.IOVA+100 {
		t.Errorf("Phys(+100) = %#x, %v; want %#x", phys, err, mem.IOVA+100)
	}
	// Several 4 KiB pages: either they happen to be contiguous (then every page must
	// agree) or the allocator refuses with ErrNotContiguous. It never hands out a range
	// the device would see scattered.
	big, err := a.Alloc(8 * PageSize)
	switch {
	case errors.Is(err, ErrNotContiguous):
		t.Logf("8 pages refused as expected: %v", err)
	case err != nil:
		t.Fatalf("Alloc 8 pages: %v", err)
	default:
		for i := 0; i < 8; i++ {
			ph, err := p.Phys(VirtAddr(big.Bytes)+uintptr(i*PageSize), 1)
			if err != nil || ph != big.IOVA+uint64(i*PageSize) {
				t.Errorf("page %d at %#x, %v; want %#x", i, ph, err, big.IOVA+uint64(i*PageSize))
			}
		}
	}
	if _, err := p.Phys(0, 0); err == nil {
		t.Error("Phys of zero bytes succeeded")
	}
}

func TestOpenPagemapMissing(t *testing.T) {
	_, err := OpenPagemap(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "proc/self/pagemap") {
		t.Errorf("OpenPagemap on an empty root: %v, want an error naming the path", err)
	}
}

// flakyMapper refuses the first mapping as not contiguous, like pagemap does when pages
// came in the wrong order.
type flakyMapper struct {
	fakeMapper
	refused int
}

func (f *flakyMapper) Map(b []byte) (uint64, error) {
	if f.refused == 0 {
		f.refused++
		return 0, ErrNotContiguous
	}
	return f.fakeMapper.Map(b)
}

func TestAllocRetriesInReverseOrder(t *testing.T) {
	m := &flakyMapper{fakeMapper: *newFakeMapper()}
	a := New(m, Options{HugePages: HugeOff})
	defer a.Close()
	mem, err := a.Alloc(4 * PageSize)
	if err != nil {
		t.Fatalf("Alloc: %v", err)
	}
	if m.refused != 1 {
		t.Errorf("mapper refused %d times", m.refused)
	}
	if n, bytes := a.InUse(); n != 1 || bytes != 4*PageSize {
		t.Errorf("InUse = %d, %d after a retried Alloc", n, bytes)
	}
	for i, c := range mem.Bytes {
		if c != 0 {
			t.Fatalf("byte %d = %#x after the reverse fault-in", i, c)
		}
	}
}

// physMapper is a Mapper that says its addresses are physical.
type physMapper struct{ *fakeMapper }

func (physMapper) PhysicalAddresses() bool { return true }

// TestPhysicalAddresses: the allocator reports what its Mapper says, and a Mapper that
// says nothing hands out IOVAs; the pagemap's addresses are physical.
func TestPhysicalAddresses(t *testing.T) {
	tests := []struct {
		name string
		m    Mapper
		want bool
	}{
		{"silent mapper", newFakeMapper(), false},
		{"physical mapper", physMapper{newFakeMapper()}, true},
		{"pagemap", &Pagemap{}, true},
	}
	for _, tt := range tests {
		if got := pci.PhysicalAddresses(New(tt.m, Options{})); got != tt.want {
			t.Errorf("%s: PhysicalAddresses %v, want %v", tt.name, got, tt.want)
		}
	}
}
