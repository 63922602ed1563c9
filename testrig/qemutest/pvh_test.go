package qemutest

import (
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"
)

// note encodes one little-endian ELF note.
func note(name string, typ uint32, desc []byte) []byte {
	le := binary.LittleEndian
	n := append([]byte(name), 0)
	b := le.AppendUint32(nil, uint32(len(n)))
	b = le.AppendUint32(b, uint32(len(desc)))
	b = le.AppendUint32(b, typ)
	b = append(b, n...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	b = append(b, desc...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func TestHasNote(t *testing.T) {
	entry := note("Xen", xenPhys32Entry, []byte{0, 0, 0, 1})
	tests := []struct {
		name string
		b    []byte
		want bool
	}{
		{"only note", entry, true},
		{"after others", append(append(note("GNU", 3, make([]byte, 20)), note("Xen", 6, []byte("linux\x00"))...), entry...), true},
		{"other owner", note("Xem", xenPhys32Entry, nil), false},
		{"other type", note("Xen", 17, []byte{1}), false},
		{"truncated", entry[:len(entry)-1], false},
		{"huge descsz", func() []byte {
			b := append([]byte(nil), entry...)
			binary.LittleEndian.PutUint32(b[4:], 0xfffffff0)
			return b
		}(), false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		if got := hasNote(tt.b, "Xen", xenPhys32Entry); got != tt.want {
			t.Errorf("%s: hasNote = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestDebianKernelPrefersPVH(t *testing.T) {
	k, err := DebianKernel()
	if err != nil {
		t.Skip(err)
	}
	ver := strings.TrimPrefix(k.Name, "debian ")
	vmlinux := filepath.Join(filepath.Dir(k.Image), "vmlinux-"+ver)
	want := filepath.Join(filepath.Dir(k.Image), "vmlinuz-"+ver)
	if hasPVHEntry(vmlinux) {
		want = vmlinux
	}
	if k.Image != want {
		t.Errorf("kernel image %s, want %s", k.Image, want)
	}
}

func FuzzHasNote(f *testing.F) {
	f.Add(note("Xen", xenPhys32Entry, []byte{1, 2, 3, 4}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		hasNote(b, "Xen", xenPhys32Entry) // must not panic on any input
		if !hasNote(append(append([]byte(nil), note("A", 1, nil)...), note("Xen", xenPhys32Entry, b)...), "Xen", xenPhys32Entry) {
			t.Fatal("a well-formed note after another was not found")
		}
	})
}
