package config

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Size is memory.dma_limit: a number of bytes, or auto (what the host allows; see Host).
type Size struct {
	Auto  bool
	Bytes uint64 // meaningful when Auto is false
}

// sizeUnits are the suffixes ParseSize accepts, binary multiples as the kernel counts.
var sizeUnits = []struct {
	suffix string
	shift  uint
}{{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}, {"B", 0}} // B last: it is a suffix of the others

// ParseSize parses "auto" or a whole number of bytes with an optional unit: B, KiB, MiB,
// GiB or TiB, such as 512MiB or 1073741824.
func ParseSize(s string) (Size, error) {
	if s == "auto" {
		return Size{Auto: true}, nil
	}
	num, shift := strings.TrimSpace(s), uint(0)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, shift = strings.TrimSpace(n), u.shift
			break
		}
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil || num == "" || num[0] == '+' {
		return Size{}, fmt.Errorf("not a size (such as 512MiB, 2GiB or a number of bytes) or auto")
	}
	if bits.Len64(n)+int(shift) > 64 || n<<shift > math.MaxInt64 {
		return Size{}, fmt.Errorf("size out of range")
	}
	return Size{Bytes: n << shift}, nil
}

// String returns "auto" or the size in the largest unit that divides it.
func (s Size) String() string {
	if s.Auto {
		return "auto"
	}
	return formatBytes(s.Bytes)
}

// formatBytes writes n exactly, in the largest binary unit that divides it.
func formatBytes(n uint64) string {
	for i := len(sizeUnits) - 2; i >= 0 && n != 0; i-- {
		if u := sizeUnits[i]; n%(1<<u.shift) == 0 {
			return strconv.FormatUint(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatUint(n, 10) + "B"
}

// humanBytes writes n rounded to a tenth of the largest binary unit not above it.
func humanBytes(n uint64) string {
	for i := len(sizeUnits) - 2; i >= 0; i-- {
		if u := sizeUnits[i]; n >= 1<<u.shift {
			if n%(1<<u.shift) == 0 {
				return strconv.FormatUint(n>>u.shift, 10) + u.suffix
			}
			return strconv.FormatFloat(float64(n)/float64(uint64(1)<<u.shift), 'f', 1, 64) + u.suffix
		}
	}
	return strconv.FormatUint(n, 10) + "B"
}

// MarshalText implements encoding.TextMarshaler.
func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseSize's rules.
func (s *Size) UnmarshalText(b []byte) error { return unmarshalText(s, b, ParseSize) }
