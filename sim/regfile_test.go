package sim

import (
	"fmt"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci"
)

func TestRegisterSemantics(t *testing.T) {
	type step struct {
		write   bool
		off, v  uint32
		want    uint32 // for reads
		comment string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"rw", []step{{true, toyAddr, 0xdeadbeef, 0, ""}, {false, toyAddr, 0, 0xdeadbeef, "stored"}, {false, toyAddr + 4, 0, 0, "instance 1 separate"}}},
		{"ro", []step{{false, toyID, 0, 0x1234, "reset value"}, {true, toyID, 0, 0, ""}, {false, toyID, 0, 0x1234, "write ignored"}}},
		{"w1s", []step{{true, toyMaskS, 0x3, 0, ""}, {true, toyMaskS, 0x4, 0, ""}, {false, toyMaskS, 0, 0x7, "bits accumulate"}, {true, toyMaskS, 0, 0, ""}, {false, toyMaskS, 0, 0x7, "zeros change nothing"}}},
		{"w1c", []step{{true, toyAddr, 0, 0, ""}, {true, toyCause, 0x1, 0, ""}, {false, toyAddr, 0, 0, ""}}},
		{"read-to-clear", []step{{false, toyStat, 0, 0, ""}}},
		{"mask", []step{{true, toyMasked, 0xFFFF, 0, ""}, {false, toyMasked, 0, 0xABFF, "only low byte writable"}}},
		{"write-only", []step{{true, toyWO, 0x55, 0, ""}, {false, toyWO, 0, 0, "reads zero"}}},
		{"self-clearing reset", []step{{true, toyAddr, 7, 0, ""}, {true, toyCtrl, 1<<31 | 1, 0, ""}, {false, toyCtrl, 0, 0, "RST clear and reset applied"}, {false, toyAddr, 0, 0, "registers reset"}, {false, toyMasked, 0, 0xAB00, "reset value"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := newToy(t, true, nil)
			r, _ := y.d.Region(0)
			for i, s := range tt.steps {
				if s.write {
					r.Write32(s.off, s.v)
					continue
				}
				if got := r.Read32(s.off); got != s.want {
					t.Errorf("step %d: read 0x%x = 0x%x, want 0x%x (%s)", i, s.off, got, s.want, s.comment)
				}
			}
			if err := y.d.Err(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestRegisterHooks(t *testing.T) {
	y := newToy(t, true, nil)
	r, _ := y.d.Region(0)
	r.Write32(toyArr+0x20, 9)
	if len(y.writes) != 1 || y.writes[0] != 2<<16|9 {
		t.Fatalf("array hook saw %x, want instance 2 value 9", y.writes)
	}
	r.Write32(toyCtrl, 1<<31)
	if y.resets != 1 {
		t.Fatalf("OnReset ran %d times", y.resets)
	}
	r.Write64(toyAddr, 0x1122334455667788)
	if got := r.Read64(toyAddr); got != 0x1122334455667788 {
		t.Fatalf("Read64 = %x", got)
	}
	if r.Len() != 0x100 {
		t.Fatalf("Len %d", r.Len())
	}
}

func TestStrictUnknownRegister(t *testing.T) {
	for _, strict := range []bool{false, true} {
		y := newToy(t, strict, nil)
		r, _ := y.d.Region(0)
		if v := r.Read32(0x80); v != 0 {
			t.Errorf("unknown read = %x", v)
		}
		r.Write32(0x84, 1)
		faults, n := y.d.Faults()
		if n != 2 || faults[0].Kind != UnknownRead || faults[1].Kind != UnknownWrite || faults[1].Addr != 0x84 {
			t.Errorf("faults %v (%d)", faults, n)
		}
		if err := y.d.Err(); (err != nil) != strict {
			t.Errorf("strict=%v: Err() = %v", strict, err)
		}
	}
}

func TestBadAccessPanics(t *testing.T) {
	y := newToy(t, false, nil)
	r, _ := y.d.Region(0)
	for _, off := range []uint32{0x2, 0x100, 0xfffffffc} {
		testutil.Panics(t, fmt.Sprintf("access at 0x%x", off), func() { r.Read32(off) })
	}
	if _, err := y.d.Region(1); err == nil {
		t.Error("BAR1 exists")
	}
}

func TestRegFileErrors(t *testing.T) {
	bad := [][]Reg{
		{{Name: "A", Off: 0x2}},
		{{Name: "A", Off: 0x100}},
		{{Name: "A", Off: 0x0}, {Name: "B", Off: 0x0}},
		{{Name: "A", Off: 0x0, N: 4}},
	}
	for i, regs := range bad {
		if _, err := New(Config{BAR0Size: 0x100, Regs: regs}); err == nil {
			t.Errorf("table %d accepted", i)
		}
	}
}

func FuzzRegisterAccess(f *testing.F) {
	f.Add([]byte{0, 0x14, 1, 0, 0, 0, 1, 0x0c, 0xff})
	f.Fuzz(func(t *testing.T, ops []byte) {
		y := newToy(t, false, nil)
		r, _ := y.d.Region(0)
		pci.SetBusMaster(y.d.Config(), true)
		mem, _ := y.d.DMA().Alloc(4096)
		r.Write64(toyAddr, mem.IOVA)
		for len(ops) >= 6 {
			off := uint32(ops[1]) &^ 3
			v := uint32(ops[2]) | uint32(ops[3])<<8 | uint32(ops[4])<<16 | uint32(ops[5])<<24
			if ops[0]&1 == 0 {
				r.Read32(off)
			} else {
				r.Write32(off, v)
			}
			ops = ops[6:]
		}
	})
}
