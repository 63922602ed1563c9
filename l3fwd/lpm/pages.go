package lpm

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// The page modes of a table's first level (PageInfo.Mode).
const (
	// PagesTHP: the first level is Go memory aligned to 2 MiB and advised
	// MADV_HUGEPAGE, so that the kernel backs it with transparent huge pages when it
	// has free 2 MiB blocks (HugeBytes says how much it did back).
	PagesTHP = "thp"
	// PagesSmall: 4 KiB pages (Reason says why).
	PagesSmall = "4k"
)

// hugePage is the size of an x86-64 (and arm64 4K-granule) huge page.
const hugePage = 2 << 20

// PageInfo says what pages a table's first level lies on.
//
// The first level is ordinary Go memory, never memory mapped from the hugetlb pool:
// a generation of the tables is freed by the garbage collector once no poll thread
// holds it (docs/design.md, "Routes from the kernel"), and a poll thread's lookups read
// the first level through a pointer the collector does not see into, so an explicit
// munmap at the table's finalizer could run while a burst still reads it. Transparent
// huge pages keep the collector in charge of the memory and still take the TLB misses
// of a random lookup from one per 4 KiB to one per 2 MiB.
type PageInfo struct {
	// Mode is PagesTHP or PagesSmall.
	Mode string `json:"mode"`
	// Reason says why the mode is PagesSmall (THP off, madvise refused, a table smaller
	// than a huge page, HugePages false).
	Reason string `json:"reason,omitempty"`
	// HugeBytes is how much of the first level the kernel backs by huge pages, as
	// /proc/self/smaps says when the table was built or cloned (-1: not known).
	HugeBytes int `json:"huge_bytes"`
}

func (p PageInfo) String() string {
	if p.Mode == PagesSmall {
		return fmt.Sprintf("4 KiB pages (%s)", p.Reason)
	}
	if p.HugeBytes < 0 {
		return "transparent huge pages (madvise)"
	}
	return fmt.Sprintf("transparent huge pages (madvise), %d MiB of it on huge pages", p.HugeBytes>>20)
}

// HugePages says whether new tables ask for transparent huge pages (true by default);
// set it before building tables, not while Clone runs.
var HugePages = true

// THPEnabledFile is the kernel's transparent huge page setting ("always [madvise]
// never"), a variable for the tests.
var THPEnabledFile = "/sys/kernel/mm/transparent_hugepage/enabled"

// smapsFile is where hugeBytes reads the mappings, a variable for the tests.
var smapsFile = "/proc/self/smaps"

// thpMode reads THPEnabledFile's selected value (the bracketed word).
func thpMode() (string, error) {
	b, err := os.ReadFile(THPEnabledFile)
	if err != nil {
		return "", err
	}
	return parseTHPEnabled(string(b))
}

// parseTHPEnabled returns the bracketed word of "always [madvise] never".
func parseTHPEnabled(s string) (string, error) {
	for _, w := range strings.Fields(s) {
		if len(w) > 2 && w[0] == '[' && w[len(w)-1] == ']' {
			return w[1 : len(w)-1], nil
		}
	}
	return "", fmt.Errorf("%s: no [selected] value in %q", THPEnabledFile, strings.TrimSpace(s))
}

// allocRoot returns a zeroed first level of n entries and what pages it lies on.
func allocRoot(n int) ([]uint32, PageInfo) {
	if !HugePages {
		return make([]uint32, n), PageInfo{Mode: PagesSmall, Reason: "huge pages turned off", HugeBytes: 0}
	}
	if n*4 < hugePage {
		return make([]uint32, n), PageInfo{Mode: PagesSmall, Reason: "smaller than a huge page", HugeBytes: 0}
	}
	mode, err := thpMode()
	switch {
	case err != nil:
		return make([]uint32, n), PageInfo{Mode: PagesSmall, Reason: fmt.Sprintf("transparent huge pages unavailable: %v", err), HugeBytes: 0}
	case mode == "never":
		return make([]uint32, n), PageInfo{Mode: PagesSmall, Reason: "transparent_hugepage is never", HugeBytes: 0}
	}
	// Over-allocate by a huge page and take the aligned window, so that every 2 MiB of
	// the table can be one huge page.
	buf := make([]uint32, n+hugePage/4)
	off := alignOffset(buf, hugePage) / 4
	root := buf[off : off+n : off+n]
	if err := adviseHuge(root); err != nil {
		return make([]uint32, n), PageInfo{Mode: PagesSmall, Reason: fmt.Sprintf("madvise(MADV_HUGEPAGE): %v", err), HugeBytes: 0}
	}
	return root, PageInfo{Mode: PagesTHP, HugeBytes: -1}
}

// measure fills p.HugeBytes from smapsFile for a THP first level.
func (p *PageInfo) measure(root []uint32) {
	if p.Mode != PagesTHP {
		return
	}
	start, end := span(root)
	f, err := os.Open(smapsFile)
	if err != nil {
		p.HugeBytes = -1
		return
	}
	defer f.Close()
	n, err := hugeBytes(f, start, end)
	if err != nil {
		n = -1
	}
	p.HugeBytes = n
}

// hugeBytes sums the AnonHugePages of the mappings of smaps (the format of
// /proc/PID/smaps) that overlap [start, end), each counted up to its overlap.
func hugeBytes(smaps io.Reader, start, end uint64) (int, error) {
	sc := bufio.NewScanner(smaps)
	var lo, hi uint64
	in := false
	total := 0
	for sc.Scan() {
		line := sc.Bytes()
		if i := bytes.IndexByte(line, ' '); i > 0 {
			if a, b, ok := bytes.Cut(line[:i], []byte{'-'}); ok {
				x, err1 := strconv.ParseUint(string(a), 16, 64)
				y, err2 := strconv.ParseUint(string(b), 16, 64)
				if err1 == nil && err2 == nil && x <= y {
					lo, hi, in = x, y, x < end && y > start
					continue
				}
			}
		}
		if !in || !bytes.HasPrefix(line, []byte("AnonHugePages:")) {
			continue
		}
		f := strings.Fields(string(line[len("AnonHugePages:"):]))
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("smaps: bad line %q", line)
		}
		kb, err := strconv.ParseUint(f[0], 10, 40)
		if err != nil {
			return 0, fmt.Errorf("smaps: bad line %q", line)
		}
		overlap := min(hi, end) - max(lo, start)
		total += int(min(kb<<10, overlap))
	}
	return total, sc.Err()
}
