package intel

import (
	"encoding/binary"
	"fmt"

	"github.com/uiod/uiod/sim"
)

// injections are pending injected faults. Guarded by the device lock.
type injections struct {
	drop     int  // drop the next frames from the wire
	oversize int  // write back a length beyond the buffer size
	badDMA   int  // DMA the next RX buffers to an unmapped address
	stall    bool // RX DMA stalled: frames wait in the packet buffer
}

// DropNext drops the next n frames that arrive from the wire (counted in Stats.Dropped).
func (m *Model) DropNext(n int) {
	m.dev.Lock()
	m.inj.drop += n
	m.dev.Unlock()
}

// StallRX stops (true) or resumes (false) RX DMA. While stalled, arriving frames wait in
// the packet buffer (and are missed once it is full); resuming places them.
func (m *Model) StallRX(stalled bool) {
	m.dev.Lock()
	defer m.dev.Unlock()
	m.inj.stall = stalled
	if !stalled {
		m.drainFIFO()
	}
}

// OversizeNext makes the next n RX write-backs report a length beyond the buffer size
// (the data copied stays within the buffer).
func (m *Model) OversizeNext(n int) {
	m.dev.Lock()
	m.inj.oversize += n
	m.dev.Unlock()
}

// BadDMANext makes the next n RX buffer writes go to an unmapped bus address, as if the
// descriptor were corrupt: each is a DMA fault and the frame is lost.
func (m *Model) BadDMANext(n int) {
	m.dev.Lock()
	m.inj.badDMA += n
	m.dev.Unlock()
}

// WriteUnpostedDD writes a completed write-back (DD and EOP, length 60) into RX queue
// q's descriptor at RDT — the first descriptor the driver has not given to the device —
// without advancing RDH, as a buggy or malicious device might.
func (m *Model) WriteUnpostedDD(q int) error {
	m.dev.Lock()
	defer m.dev.Unlock()
	l := m.l
	if q < 0 || q >= l.queues {
		return fmt.Errorf("sim ixgbe: rx queue %d: no such queue", q)
	}
	n := m.get(l.rxq(q, qLEN)) / 16
	t := m.get(l.rxq(q, qT))
	if n == 0 || t >= n {
		return fmt.Errorf("sim ixgbe: rx queue %d: ring not set up", q)
	}
	base := uint64(m.get(l.rxq(q, qBAH)))<<32 | uint64(m.get(l.rxq(q, qBAL))&^0x7F)
	desc, err := m.dev.DMAAt(base+16*uint64(t), 16, "rx descriptor (injected)")
	if err != nil {
		return fmt.Errorf("sim ixgbe: rx queue %d: %w", q, err)
	}
	binary.LittleEndian.PutUint32(desc[12:], minFrame)
	sim.StoreUint32(desc[8:], rxStatusDD|rxStatusEOP)
	return nil
}

// SpuriousInterrupt signals vector v (MSI-X) or asserts INTx once without setting any
// cause, as a shared or glitching interrupt line would.
func (m *Model) SpuriousInterrupt(v int) {
	m.dev.Lock()
	defer m.dev.Unlock()
	m.spurious(v)
}

func (m *Model) spurious(v int) {
	m.st.Spurious++
	if m.dev.MSIXEnabled() {
		m.dev.FireMSIX(v)
		return
	}
	m.dev.SetINTx(true)
	m.ic.updateINTx() // the line falls back to what the causes say
}

// InterruptStorm signals vector v n times in a row, bypassing EITR.
func (m *Model) InterruptStorm(v, n int) {
	m.dev.Lock()
	defer m.dev.Unlock()
	for i := 0; i < n; i++ {
		m.spurious(v)
	}
}
