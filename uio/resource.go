package uio

import (
	"fmt"
	"strconv"
	"strings"
)

// Resource flags of the sysfs "resource" file (linux/ioport.h).
const (
	ioresourceIO  = 0x100
	ioresourceMem = 0x200
)

// bar is one line of a function's sysfs "resource" file.
type bar struct {
	start, end, flags uint64
}

func (b bar) size() uint64 {
	if b.start == 0 && b.end == 0 {
		return 0
	}
	return b.end - b.start + 1
}

// parseResource parses the sysfs "resource" file: one line per resource, three hex
// numbers (start, end, flags). The first six lines are the BARs.
func parseResource(text string) ([]bar, error) {
	var bars []bar
	for i, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("resource line %d: %d fields, want 3", i, len(f))
		}
		var v [3]uint64
		for j, s := range f {
			h, ok := strings.CutPrefix(s, "0x")
			if !ok {
				return nil, fmt.Errorf("resource line %d: %q is not 0x-prefixed hex", i, s)
			}
			n, err := strconv.ParseUint(h, 16, 64)
			if err != nil {
				return nil, fmt.Errorf("resource line %d: %q is not 0x-prefixed hex", i, s)
			}
			v[j] = n
		}
		b := bar{v[0], v[1], v[2]}
		if b.end < b.start {
			return nil, fmt.Errorf("resource line %d: end %#x before start %#x", i, b.end, b.start)
		}
		if b.end-b.start == ^uint64(0) {
			return nil, fmt.Errorf("resource line %d: size overflows", i)
		}
		if b.start == 0 && b.end == 0 && b.flags != 0 {
			// unassigned but flagged: treat as absent
			b.flags = 0
		}
		bars = append(bars, b)
	}
	return bars, nil
}
