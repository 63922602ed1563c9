package sim

import "fmt"

// Access says how a register answers reads and writes.
type Access uint8

// Register access kinds. Every kind may add a Read or Write hook for side effects.
const (
	// RW registers store what is written (only the bits in Mask; the rest keep their value).
	RW Access = iota
	// RO registers ignore writes (a Write hook still runs: a model may keep the state
	// elsewhere, as for interrupt cause registers).
	RO
	// WO registers store writes but read as zero (unless a Read hook says otherwise).
	WO
	// W1S registers set the bits written as 1 (interrupt mask set, EIMS).
	W1S
	// W1C registers clear the bits written as 1 (interrupt cause, EICR).
	W1C
)

// accessNames are the access kinds' names, indexed by Access.
var accessNames = [...]string{RW: "rw", RO: "ro", WO: "wo", W1S: "w1s", W1C: "w1c"}

// String names the access kind.
func (a Access) String() string {
	if int(a) < len(accessNames) {
		return accessNames[a]
	}
	return fmt.Sprintf("sim.Access(%d)", uint8(a))
}

// Reg describes one register, or an array of N registers Stride bytes apart, of a device's
// register file. A model declares its registers as a table of Regs, so adding a register is
// one line.
//
// Hooks run with the device lock held (see Device.Lock) and may read and set other
// registers with Device.Get and Device.Set; Doorbell runs after the lock is released, so it
// may do work that must not hold it (sending frames to a wire).
type Reg struct {
	Name   string
	Off    uint32 // offset of instance 0
	N      int    // number of instances; 0 means 1
	Stride uint32 // distance between instances
	Access Access
	// ReadClear clears the register after a read (statistics counters).
	ReadClear bool
	Reset     uint32 // value after reset
	// Sticky registers take Reset only at power-on and keep their value across resets
	// (tables the hardware leaves undefined, which a driver must clear itself).
	Sticky    bool
	Mask      uint32 // writable bits for RW, W1S, W1C; 0 means all
	SelfClear uint32 // bits that read back clear once Write has run (reset, restart bits)
	// Read, when set, computes what a read returns from the stored value v; it may also
	// change state (a read that acknowledges something). ReadClear applies afterwards.
	Read func(i int, v uint32) uint32
	// Write, when set, runs after a write has been stored; old is the previous value.
	Write func(i int, old, v uint32)
	// Doorbell, when set, runs after a write with the lock released.
	Doorbell func(i int, v uint32)
}

// Offset returns the offset of instance i.
func (r *Reg) Offset(i int) uint32 { return r.Off + uint32(i)*r.Stride }

func (r *Reg) count() int {
	if r.N <= 0 {
		return 1
	}
	return r.N
}

func (r *Reg) mask() uint32 {
	if r.Mask == 0 {
		return ^uint32(0)
	}
	return r.Mask
}

// regSlot is what one 32-bit word of the register file is.
type regSlot struct {
	r *Reg
	i int // instance
}

// regFile is a device's BAR0: the values and, per word, the register it belongs to.
type regFile struct {
	vals  []uint32
	slots []regSlot
	regs  []*Reg
}

func newRegFile(size int, regs []Reg) (*regFile, error) {
	if size <= 0 || size%4 != 0 {
		return nil, fmt.Errorf("register file size %d is not a positive multiple of 4", size)
	}
	f := &regFile{vals: make([]uint32, size/4), slots: make([]regSlot, size/4)}
	for k := range regs {
		r := &regs[k]
		n := r.count()
		if n > 1 && r.Stride == 0 {
			return nil, fmt.Errorf("register %s: %d instances without a stride", r.Name, n)
		}
		for i := 0; i < n; i++ {
			off := r.Offset(i)
			if off%4 != 0 || int(off) >= size {
				return nil, fmt.Errorf("register %s[%d]: offset 0x%x outside the %d-byte BAR or unaligned", r.Name, i, off, size)
			}
			if s := f.slots[off/4]; s.r != nil {
				return nil, fmt.Errorf("register %s[%d] at 0x%x overlaps %s[%d]", r.Name, i, off, s.r.Name, s.i)
			}
			f.slots[off/4] = regSlot{r: r, i: i}
		}
		f.regs = append(f.regs, r)
	}
	f.load(true)
	return f, nil
}

// reset loads every register's reset value, except sticky ones.
func (f *regFile) reset() { f.load(false) }

func (f *regFile) load(powerOn bool) {
	for _, r := range f.regs {
		if r.Sticky && !powerOn {
			continue
		}
		for i := 0; i < r.count(); i++ {
			f.vals[r.Offset(i)/4] = r.Reset
		}
	}
}

// read performs a read with the register's semantics; ok is false for an unknown offset.
func (f *regFile) read(off uint32) (v uint32, ok bool) {
	s := f.slots[off/4]
	if s.r == nil {
		return 0, false
	}
	v = f.vals[off/4]
	switch {
	case s.r.Read != nil:
		v = s.r.Read(s.i, v)
	case s.r.Access == WO:
		v = 0
	}
	if s.r.ReadClear {
		f.vals[off/4] = 0
	}
	return v, true
}

// write performs a write with the register's semantics and returns the register written
// (nil for an unknown offset) so the caller can ring its doorbell after unlocking.
func (f *regFile) write(off, v uint32) (*Reg, int) {
	s := f.slots[off/4]
	r := s.r
	if r == nil {
		return nil, 0
	}
	old := f.vals[off/4]
	m := r.mask()
	var nv uint32
	switch r.Access {
	case RO:
		nv = old
	case W1S:
		nv = old | v&m
	case W1C:
		nv = old &^ (v & m)
	default: // RW, WO
		nv = old&^m | v&m
	}
	f.vals[off/4] = nv
	if r.Write != nil {
		r.Write(s.i, old, v)
	}
	if r.SelfClear != 0 {
		f.vals[off/4] &^= r.SelfClear
	}
	return r, s.i
}
