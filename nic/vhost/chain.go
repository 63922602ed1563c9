package vhost

import (
	"encoding/binary"
	"fmt"
)

// desc reads descriptor i (i < num, checked by the caller).
func (r *vring) descAt(i uint16) (addr uint64, n uint32, flags, next uint16) {
	off := 16 * int(i)
	d := r.lay.desc[off : off+16 : off+16]
	return binary.LittleEndian.Uint64(d), binary.LittleEndian.Uint32(d[8:]),
		binary.LittleEndian.Uint16(d[12:]), binary.LittleEndian.Uint16(d[14:])
}

// availCount returns how many entries the front end has made available beyond lastAvail,
// or an error when its index jumped further than the ring holds.
func (r *vring) availCount() (uint16, error) {
	idx := r.availIdx()
	n := idx - r.lastAvail
	if uint32(n) > r.num {
		return 0, fmt.Errorf("available index jumped from %d to %d on a ring of %d", r.lastAvail, idx, r.num)
	}
	return n, nil
}

// head takes the next available entry's chain head; ok is false when it names no
// descriptor (badHead is the error). It is small enough to be inlined in the bursts.
func (r *vring) head() (h uint16, ok bool) {
	h = le16v(r.lay.availRing[r.lastAvail&r.mask])
	return h, uint32(h) < r.num
}

func (r *vring) badHead() error {
	h := le16v(r.lay.availRing[r.lastAvail&r.mask])
	return fmt.Errorf("available entry %d names descriptor %d of %d", r.lastAvail, h, r.num)
}

// putUsed writes the used entry for chain head with n bytes written.
func (r *vring) putUsed(head uint16, n uint32) {
	r.lay.usedRing[r.usedIdx&r.mask] = usedElem{le32(uint32(head)), le32(n)}
	r.usedIdx++
}

// walker follows one descriptor chain, bounded by maxChain (the ring size, at most
// maxChainLen) so that a loop ends and a long chain costs a bounded walk.
type walker struct {
	r     *vring
	next  uint16
	more  bool
	steps uint32
}

// step returns the next descriptor's buffer in the front end's memory, translated whole
// (a buffer that spans regions is returned chunk by chunk by repeated calls, see gpaChunk).
// write says whether the chain must be device-writable (RX) or device-readable (TX).
func (w *walker) step(write bool) (addr uint64, n uint32, err error) {
	r := w.r
	if w.steps++; w.steps > r.maxChain {
		return 0, 0, fmt.Errorf("descriptor chain longer than %d descriptors (a loop, or beyond the limit)", r.maxChain)
	}
	addr, n, flags, next := r.descAt(w.next)
	want := uint16(0)
	if write {
		want = descWrite
	}
	if flags&(descIndirect|descWrite) != want || (flags&descNext != 0 && uint32(next) >= r.num) || addr+uint64(n) < addr {
		return 0, 0, w.bad(addr, n, flags, next, write)
	}
	w.more, w.next = flags&descNext != 0, next
	return addr, n, nil
}

// bad is step's error for the descriptor it read.
func (w *walker) bad(addr uint64, n uint32, flags, next uint16, write bool) error {
	switch {
	case flags&descIndirect != 0:
		return fmt.Errorf("descriptor %d is indirect, which was not negotiated", w.next)
	case (flags&descWrite != 0) != write:
		return fmt.Errorf("descriptor %d: write flag %v in a chain the device should write: %v", w.next, flags&descWrite != 0, write)
	case flags&descNext != 0 && uint32(next) >= w.r.num:
		return fmt.Errorf("descriptor %d chains to %d of %d", w.next, next, w.r.num)
	}
	return fmt.Errorf("descriptor %d: address 0x%x + %d overflows", w.next, addr, n)
}

// copyOut copies up to len(dst) bytes at guest address a (n bytes long) into dst and
// returns how many; every byte must lie in a region.
func (r *vring) copyOut(dst []byte, a uint64, n uint32) (int, error) {
	done := 0
	for n > 0 && done < len(dst) {
		c := r.mem.gpaChunk(a, n)
		if c == nil {
			return done, fmt.Errorf("buffer at 0x%x (%d bytes) outside every region", a, n)
		}
		k := copy(dst[done:], c)
		done += k
		a += uint64(k)
		n -= uint32(k)
	}
	return done, nil
}

// copyIn copies src into the n bytes at guest address a and returns how many it copied
// (at most n); every byte must lie in a region.
func (r *vring) copyIn(a uint64, n uint32, src []byte) (int, error) {
	done := 0
	for n > 0 && done < len(src) {
		c := r.mem.gpaChunk(a, n)
		if c == nil {
			return done, fmt.Errorf("buffer at 0x%x (%d bytes) outside every region", a, n)
		}
		k := copy(c, src[done:])
		done += k
		a += uint64(k)
		n -= uint32(k)
	}
	return done, nil
}
