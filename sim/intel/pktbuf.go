package intel

import (
	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
)

// rxFIFO is the packet buffer: frames wait in it while their queue has no descriptor
// (without SRRCTL.DROP_EN) or while RX is stalled, and are placed when the driver
// advances RDT. Its capacity is RXPBSIZE(0).
type rxFIFO struct {
	frames []fifoFrame
	head   int
	n      int
	bytes  int
	spare  [][]byte
}

type fifoFrame struct {
	b         []byte
	q         int
	hash, typ uint32
}

func (f *rxFIFO) clear() {
	for f.n > 0 {
		f.pop()
	}
	f.frames, f.head, f.bytes = nil, 0, 0
}

func (f *rxFIFO) peek() *fifoFrame { return &f.frames[f.head] }

func (f *rxFIFO) pop() {
	fr := f.frames[f.head]
	f.bytes -= len(fr.b)
	f.spare = append(f.spare, fr.b[:0])
	f.frames[f.head] = fifoFrame{}
	f.head = (f.head + 1) % len(f.frames)
	f.n--
}

func (f *rxFIFO) push(fr fifoFrame) {
	if f.n == len(f.frames) {
		grown := make([]fifoFrame, max(16, 2*len(f.frames)))
		for i := 0; i < f.n; i++ {
			grown[i] = f.frames[(f.head+i)%len(f.frames)]
		}
		f.frames, f.head = grown, 0
	}
	f.frames[(f.head+f.n)%len(f.frames)] = fr
	f.n++
	f.bytes += len(fr.b)
}

// enqueue puts a frame into the packet buffer, or counts it missed when the buffer is full.
func (m *Model) enqueue(q int, hash, typ uint32, frame []byte) {
	capacity := int(m.get(i82599.RXPBSIZE0)>>10&0x3FF) * 1024
	if m.cfg.Flavor == X82576 {
		capacity = int(m.get(i82576.RXPBS)&0x7F) * 1024
	}
	if m.fifo.bytes+len(frame) > capacity {
		m.missed()
		return
	}
	var b []byte
	if k := len(m.fifo.spare); k > 0 {
		b, m.fifo.spare = m.fifo.spare[k-1], m.fifo.spare[:k-1]
	}
	m.fifo.push(fifoFrame{b: append(b, frame...), q: q, hash: hash, typ: typ})
	m.st.Buffered++
}

// drainFIFO places waiting frames in order until one finds no descriptor (head-of-line
// blocking, as in the real packet buffer). The lock is held.
func (m *Model) drainFIFO() {
	for m.fifo.n > 0 && !m.inj.stall && !m.closing {
		fr := m.fifo.peek()
		if m.place(fr.q, fr.b, fr.hash, fr.typ) == noDescriptor {
			if m.rxl[fr.q].srrctl&m.l.srrctlDropEn == 0 {
				return
			}
			m.queueDrop(fr.q)
		}
		m.fifo.pop()
	}
}

// writeRDT is the RX tail hook: new descriptors may take waiting frames. A tail write
// before the queue is on does not stand.
func (m *Model) writeRDT(q int, old, _ uint32) {
	if m.guardTail(false, q, old) {
		m.drainFIFO()
	}
}
