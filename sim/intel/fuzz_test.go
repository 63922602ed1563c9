package intel

import (
	"encoding/binary"
	"testing"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/irq"
)

// FuzzModel drives the model with arbitrary register writes, descriptor contents, frames
// and injected faults. It must never panic or hang, whatever the "driver" does.
func FuzzModel(f *testing.F) {
	f.Add([]byte{0, 0x18, 0x10, 3, 0, 0, 0, 1, 200, 2, 5, 0xff, 3, 0, 4, 1})
	f.Add([]byte{2, 0, 0x60, 0x18, 0, 0, 0, 3, 7, 7, 7, 7, 7, 7, 7, 7, 1, 64})
	f.Add([]byte{0, 0x98, 0x08, 0x10, 0, 0, 0, 0, 0x80, 0x08, 1, 0, 0, 0, 1, 100, 4, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		g := newRig(t, Config{})
		g.allowFaults = true
		g.dev.IRQs(irq.MSIX, 4)
		g.initDevice()
		rx := g.setupRX(0, 16, 2048, ops != nil && len(ops)%2 == 0)
		tx := g.setupTX(0, 16, 2048)
		g.setupRX(1, 8, 1024, false)
		regs := g.m.regs
		for len(ops) >= 2 {
			op, arg := ops[0]%8, ops[1]
			ops = ops[2:]
			word := func() uint32 {
				if len(ops) < 4 {
					return uint32(arg)
				}
				v := binary.LittleEndian.Uint32(ops)
				ops = ops[4:]
				return v
			}
			switch op {
			case 0: // write a known register instance
				r := &regs[int(arg)%len(regs)]
				i := 0
				if n := r.N; n > 1 {
					i = int(word()>>8) % n
				}
				g.wr(r.Offset(i), word())
			case 1: // a frame from the wire
				n := int(arg) * 12
				fr := g.frame(max(n, 14), arg)
				g.peer.Send(fr)
			case 2: // scribble on a TX descriptor and ring the doorbell
				d := tx.desc.Bytes[16*(int(arg)%16):]
				binary.LittleEndian.PutUint32(d[0:], word())
				binary.LittleEndian.PutUint32(d[4:], word())
				binary.LittleEndian.PutUint32(d[8:], word())
				g.wr(g.txq(0, intelnic.QT), word())
			case 3: // scribble on an RX descriptor and move the tail
				d := rx.desc.Bytes[16*(int(arg)%16):]
				binary.LittleEndian.PutUint32(d[0:], word())
				binary.LittleEndian.PutUint32(d[4:], word())
				g.wr(g.rxq(0, intelnic.QT), word())
			case 4: // injected faults
				switch arg % 8 {
				case 0:
					g.m.DropNext(1)
				case 1:
					g.m.StallRX(arg&8 != 0)
				case 2:
					g.m.OversizeNext(1)
				case 3:
					g.m.BadDMANext(1)
				case 4:
					g.m.WriteUnpostedDD(int(arg>>4) % 2)
				case 5:
					g.m.InterruptStorm(int(arg>>4)%4, 3)
				case 6:
					g.m.FlapLink(0)
				case 7:
					g.m.SpuriousInterrupt(int(arg >> 4))
				}
			case 5: // read a known register
				r := &regs[int(arg)%len(regs)]
				g.rd(r.Offset(0))
			case 6: // any aligned offset in the BAR
				off := (word() % uint32(g.r.Len())) &^ 3
				if arg&1 == 0 {
					g.rd(off)
				} else {
					g.wr(off, word())
				}
			case 7: // function-level reset or bus mastering toggled
				if arg&1 == 0 {
					g.dev.Reset()
				} else {
					g.wr(intelnic.CTRL, intelnic.CtrlReset)
				}
			}
		}
		g.m.Stats()
	})
}
