package qemutest

import (
	"debug/elf"
	"encoding/binary"
	"io"
)

// xenPhys32Entry is XEN_ELFNOTE_PHYS32_ENTRY: the note that gives a kernel's 32-bit PVH
// entry point, which QEMU needs to boot an uncompressed ELF vmlinux with -kernel.
const xenPhys32Entry = 18

// hasPVHEntry reports whether the ELF file at path has a PVH entry note.
func hasPVHEntry(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz > 1<<20 {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			continue
		}
		if hasNote(b, "Xen", xenPhys32Entry) {
			return true
		}
	}
	return false
}

// hasNote reports whether a PT_NOTE segment's contents (little-endian ELF notes: namesz,
// descsz, type, then the NUL-terminated name and the descriptor, each padded to 4 bytes)
// hold a note with the given owner name and type. Malformed contents end the search.
func hasNote(b []byte, name string, typ uint32) bool {
	le := binary.LittleEndian
	for len(b) >= 12 {
		namesz, descsz, t := le.Uint32(b[0:]), le.Uint32(b[4:]), le.Uint32(b[8:])
		b = b[12:]
		nlen, dlen := pad4(uint64(namesz)), pad4(uint64(descsz))
		if nlen > uint64(len(b)) || dlen > uint64(len(b))-nlen {
			return false
		}
		n := b[:namesz]
		if len(n) > 0 && n[len(n)-1] == 0 {
			n = n[:len(n)-1]
		}
		if t == typ && string(n) == name {
			return true
		}
		b = b[nlen+dlen:]
	}
	return false
}

func pad4(n uint64) uint64 { return (n + 3) &^ 3 }
