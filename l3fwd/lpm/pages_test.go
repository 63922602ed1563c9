package lpm

import (
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// withTHP points THPEnabledFile at a file holding s for the test ("" : no file).
func withTHP(t *testing.T, s string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "enabled")
	if s != "" {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := THPEnabledFile
	THPEnabledFile = path
	t.Cleanup(func() { THPEnabledFile = old })
}

// checkTable4 fills t with a default route and a few longer ones and checks lookups.
func checkTable4(t *testing.T, tb *Table4) {
	t.Helper()
	for i, p := range []string{"0.0.0.0/0", "10.0.0.0/8", "10.1.2.128/25"} {
		if err := tb.Insert(netip.MustParsePrefix(p), NextHop(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	for a, want := range map[uint32]NextHop{0x01020304: 1, 0x0a000001: 2, 0x0a010281: 3, 0x0a010201: 2} {
		if got, ok := tb.Lookup(a); !ok || got != want {
			t.Errorf("Lookup(%08x) = %d %v, want %d", a, got, ok, want)
		}
	}
}

// TestPagesFallback: with transparent huge pages off, unreadable or turned off here, the
// first level is on 4 KiB pages, says why, and the table works; IPv6's 256 KiB first
// level never asks for huge pages.
func TestPagesFallback(t *testing.T) {
	for _, c := range []struct{ name, file, reason string }{
		{"never", "always madvise [never]\n", "transparent_hugepage is never"},
		{"missing", "", "transparent huge pages unavailable"},
		{"garbled", "always madvise never\n", "no [selected] value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			withTHP(t, c.file)
			tb := NewTable4()
			checkTable4(t, tb)
			p := tb.Pages()
			if p.Mode != PagesSmall || !strings.Contains(p.Reason, c.reason) || p.HugeBytes != 0 {
				t.Errorf("Pages() = %+v, want mode %s, reason with %q, no huge bytes", p, PagesSmall, c.reason)
			}
			if !strings.HasPrefix(p.String(), "4 KiB pages (") {
				t.Errorf("String() = %q", p.String())
			}
			if c := tb.Clone(); c.Pages().Mode != PagesSmall || c.Memory() != tb.Memory() {
				t.Errorf("clone: %+v, memory %d (original %d)", c.Pages(), c.Memory(), tb.Memory())
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		HugePages = false
		t.Cleanup(func() { HugePages = true })
		if p := NewTable4().Pages(); p.Mode != PagesSmall || p.Reason != "huge pages turned off" {
			t.Errorf("HugePages false: %+v", p)
		}
	})
	if p := NewTable6().Pages(); p.Mode != PagesSmall || p.Reason != "smaller than a huge page" {
		t.Errorf("Table6: %+v", p)
	}
}

// TestPagesTHP: where the kernel offers transparent huge pages, the IPv4 first level is
// 2 MiB aligned, advised, and measured from /proc/self/smaps; a clone is too, and both
// look up the same. How much the kernel backs by huge pages depends on its free 2 MiB
// blocks, so it is logged, not required (BENCHMARKS.md has a measured run).
func TestPagesTHP(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("madvise(MADV_HUGEPAGE) is Linux's")
	}
	mode, err := thpMode()
	if err != nil || mode == "never" {
		t.Skipf("transparent huge pages: %q %v", mode, err)
	}
	tb := NewTable4()
	checkTable4(t, tb)
	p := tb.Pages()
	start, end := span(tb.t.root)
	if p.Mode != PagesTHP || p.HugeBytes < 0 || p.HugeBytes > int(end-start) || start%hugePage != 0 || end-start != 64<<20 {
		t.Fatalf("Pages() = %+v over [%#x, %#x), want thp, aligned, measured", p, start, end)
	}
	t.Logf("first level: %v", p)
	c := tb.Clone()
	cp := c.Pages()
	if cp.Mode != PagesTHP || cp.HugeBytes < 0 {
		t.Errorf("clone: %+v", cp)
	}
	t.Logf("clone: %v", cp)
	for _, a := range []uint32{0x01020304, 0x0a000001, 0x0a010281} {
		x, _ := tb.Lookup(a)
		y, _ := c.Lookup(a)
		if x != y {
			t.Errorf("%08x: %d, clone %d", a, x, y)
		}
	}
	if tb.Memory()-4*cap(tb.t.tbl8) != 64<<20+hugePage {
		t.Errorf("Memory() = %d, want the first level and its alignment slack", tb.Memory())
	}
}

const smapsSample = `7f0000000000-7f0004000000 rw-p 00000000 00:00 0 
Size:              65536 kB
AnonHugePages:     61440 kB
VmFlags: rd wr mr mw me ac hg
7f0004000000-7f0004200000 rw-p 00000000 00:00 0 
AnonHugePages:      2048 kB
00400000-00401000 r-xp 00000000 08:01 123                                /usr/bin/x
AnonHugePages:         0 kB
`

// TestHugeBytes: the AnonHugePages of the mappings overlapping a range, each up to the
// overlap; a bad value is an error.
func TestHugeBytes(t *testing.T) {
	for _, c := range []struct {
		start, end uint64
		want       int
	}{
		{0x7f0000000000, 0x7f0004000000, 60 << 20},
		{0x7f0000000000, 0x7f0004200000, 62 << 20},
		{0x7f0003f00000, 0x7f0004100000, 2 << 20}, // 1 MiB of each mapping
		{0x10000000, 0x20000000, 0},
	} {
		got, err := hugeBytes(strings.NewReader(smapsSample), c.start, c.end)
		if err != nil || got != c.want {
			t.Errorf("[%#x, %#x): %d %v, want %d", c.start, c.end, got, err, c.want)
		}
	}
	if _, err := hugeBytes(strings.NewReader("7f0000000000-7f0004000000 rw-p 0 0 0\nAnonHugePages: x kB\n"), 0x7f0000000000, 0x7f0000001000); err == nil {
		t.Error("a bad AnonHugePages line: no error")
	}
}

// FuzzPagesParsers: the smaps and THP setting parsers never panic, and hugeBytes never
// counts more than the range.
func FuzzPagesParsers(f *testing.F) {
	f.Add(smapsSample, uint64(0x7f0000000000), uint64(0x7f0004000000))
	f.Add("always [madvise] never", uint64(0), uint64(1))
	f.Fuzz(func(t *testing.T, s string, start, end uint64) {
		_, _ = parseTHPEnabled(s)
		if start > end {
			start, end = end, start
		}
		n, err := hugeBytes(strings.NewReader(s), start, end)
		if err == nil && (n < 0 || uint64(n) > end-start) {
			t.Fatalf("hugeBytes = %d over a range of %d", n, end-start)
		}
	})
}
