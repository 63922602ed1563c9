package virtio

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/pci"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// capSpace builds a config space with the given capabilities chained from 0x40, each as
// {id, type, bar, offset, length, extra}.
func capSpace(caps ...[6]uint32) []byte {
	b := make([]byte, 256)
	binary.LittleEndian.PutUint16(b[pci.CfgStatus:], pci.StatusCapList)
	at := 0x40
	b[pci.CfgCapPointer] = byte(at)
	for i, c := range caps {
		b[at] = byte(c[0])
		b[at+2] = 20
		b[at+3], b[at+4] = byte(c[1]), byte(c[2])
		binary.LittleEndian.PutUint32(b[at+8:], c[3])
		binary.LittleEndian.PutUint32(b[at+12:], c[4])
		binary.LittleEndian.PutUint32(b[at+16:], c[5])
		if i < len(caps)-1 {
			b[at+1] = byte(at + 20)
		}
		at += 20
	}
	return b
}

func TestParseCapabilities(t *testing.T) {
	full := [][6]uint32{{9, 1, 4, 0, 0x38, 0}, {9, 3, 4, 0x1000, 4, 0}, {9, 4, 4, 0x2000, 0x100, 0}, {9, 2, 4, 0x3000, 0x1000, 4}}
	tests := []struct {
		name  string
		space []byte
		want  string // error substring, "" for success
	}{
		{"all four", capSpace(full...), ""},
		{"other capabilities first", capSpace(append([][6]uint32{{0x11, 0, 0, 0, 0, 0}, {9, 9, 4, 0, 0, 0}}, full...)...), ""},
		{"first of a type wins", capSpace(append(full[:1:1], append([][6]uint32{{9, 1, 2, 0x8000, 0x38, 0}}, full[1:]...)...)...), ""},
		{"reserved bar skipped", capSpace(append([][6]uint32{{9, 1, 7, 0, 0x38, 0}}, full[1:]...)...), "no common"},
		{"no notify", capSpace(full[:3]...), "no notify"},
		{"common too short", capSpace(append([][6]uint32{{9, 1, 4, 0, 0x20, 0}}, full[1:]...)...), "no common"},
		{"common in an I/O BAR", ioBAR(capSpace(full...), 4), "no common configuration capability (the one at 0x40 names BAR4, an I/O BAR)"},
		{"common misaligned", capSpace(append([][6]uint32{{9, 1, 4, 2, 0x38, 0}}, full[1:]...)...), "not 4-byte aligned"},
		{"notify misaligned", capSpace(append(full[:3:3], [6]uint32{9, 2, 4, 0x3001, 0x1000, 4})...), "no notify configuration capability (the one at 0x7c has offset 0x3001, not 2-byte aligned)"},
		{"device misaligned", capSpace(append(full[:2:2], [6]uint32{9, 4, 4, 0x2002, 0x100, 0}, full[3])...), "no device"},
		{"misaligned skipped for the next", capSpace(append([][6]uint32{{9, 1, 4, 2, 0x38, 0}}, full...)...), ""},
		{"no list", make([]byte, 256), "no virtio 1.x"},
		{"truncated", make([]byte, 16), "truncated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseCapabilities(tt.space)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.common.bar != 4 || c.common.offset != 0 || c.notify.offset != 0x3000 || c.notifyMult != 4 || c.isr.offset != 0x1000 || c.device.length != 0x100 {
				t.Fatalf("capabilities %+v", c)
			}
		})
	}
	loop := capSpace(full...)
	loop[0x40+3*20+1] = 0x40
	if _, err := parseCapabilities(loop); err == nil || !strings.Contains(err.Error(), "loop") {
		t.Fatalf("looping list: %v", err)
	}
	if _, err := parseCapabilities(make([]byte, 16)); !errors.Is(err, pci.ErrTruncated) {
		t.Fatalf("short space: %v", err)
	}
	// The list is walked by pci.WalkCapabilities, as every other capability list is: a
	// pointer with its reserved low bits set is malformed there too.
	unaligned := capSpace(full...)
	unaligned[pci.CfgCapPointer] |= 1
	if _, err := parseCapabilities(unaligned); !errors.Is(err, pci.ErrMalformed) {
		t.Fatalf("unaligned pointer: %v", err)
	}
}

func TestParseModelCapabilities(t *testing.T) {
	m, err := simvirtio.New(simvirtio.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.PCI().Close()
	b := make([]byte, 256)
	m.PCI().Config().ReadAt(b, 0)
	c, err := parseCapabilities(b)
	if err != nil {
		t.Fatal(err)
	}
	if c.common.bar != 4 || c.notify.offset != 0x3000 || c.notifyMult != 4 {
		t.Fatalf("model capabilities %+v", c)
	}
}

// FuzzParseCapabilities feeds arbitrary configuration spaces to the parser: it must never
// panic, and what it accepts must name BARs 0-5.
func FuzzParseCapabilities(f *testing.F) {
	f.Add(capSpace([6]uint32{9, 1, 4, 0, 0x38, 0}, [6]uint32{9, 3, 4, 0x1000, 4, 0}, [6]uint32{9, 4, 4, 0x2000, 0x100, 0}, [6]uint32{9, 2, 4, 0x3000, 0x1000, 4}))
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseCapabilities(b)
		if err != nil {
			return
		}
		for _, s := range []capability{c.common, c.notify, c.isr, c.device} {
			if s.bar < 0 || s.bar > 5 {
				t.Fatalf("accepted BAR%d", s.bar)
			}
		}
		if c.common.length < virtiospec.ComLen {
			t.Fatalf("accepted a %d-byte common configuration", c.common.length)
		}
	})
}

// ioBAR marks BAR bar of space as an I/O BAR.
func ioBAR(space []byte, bar int) []byte {
	binary.LittleEndian.PutUint32(space[pci.CfgBAR0+4*bar:], 0xc001)
	return space
}
