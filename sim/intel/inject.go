package intel

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/sim"
)

// Injected is a kind of fault the model can inject.
type Injected int

// Injectable faults. RX kinds apply to frames the port receives, TX kinds to its
// transmit descriptors; Queue selects the queue (AnyQueue: the first frame or descriptor
// of any queue).
const (
	// RxDrop drops the next Count frames from the wire before the MAC (Stats.Dropped).
	RxDrop Injected = iota + 1
	// RxOversize writes back a length beyond the buffer size in the next Count RX
	// write-backs (the data copied stays within the buffer).
	RxOversize
	// RxBadDMA sends the next Count RX buffer writes to an unmapped bus address, as if
	// the descriptor were corrupt: each is a DMA fault and the frame is lost.
	RxBadDMA
	// RxUnpostedDD writes a completed write-back (DD and EOP, length 60) into the RX
	// descriptor at RDT — the first one the driver has not given to the device — without
	// advancing RDH, as a buggy or malicious device might.
	RxUnpostedDD
	// RxStall stops RX DMA for Delay (until Resume when Delay is 0): arriving frames wait
	// in the packet buffer (and are missed once it is full) and are placed afterwards.
	RxStall
	// TxWritebackDelay holds back the DD write-back (and the TX interrupt cause) of the
	// next Count descriptors with RS for Delay; the frames leave at once, and later
	// write-backs of the queue wait behind the held ones, in order.
	TxWritebackDelay
	// TxWritebackLost never writes back DD for the next Count descriptors with RS (the
	// frames leave): the driver's descriptors stay "in flight" until it recovers the
	// queue.
	TxWritebackLost
	// TxHang stops the TX queue: it fetches no more descriptors (TDH stays, nothing is
	// sent) until the driver disables it (TXDCTL.ENABLE off) or resets the device.
	TxHang
	// TxBadDMA makes the next Count TX buffer reads fault: a DMA fault, the frame is not
	// sent (Stats.TxErrors), its descriptors are still written back.
	TxBadDMA
	// Spurious signals Vector (MSI-X) or asserts INTx once without setting any cause.
	Spurious
	// Storm signals Vector Count times in a row without a cause, bypassing EITR.
	Storm
	// LinkFlap takes the link down for Delay and brings it back, raising LSC twice.
	LinkFlap
)

var injectedNames = map[Injected]string{
	RxDrop: "rx-drop", RxOversize: "rx-oversize", RxBadDMA: "rx-bad-dma",
	RxUnpostedDD: "rx-unposted-dd", RxStall: "rx-stall",
	TxWritebackDelay: "tx-writeback-delay", TxWritebackLost: "tx-writeback-lost",
	TxHang: "tx-hang", TxBadDMA: "tx-bad-dma",
	Spurious: "spurious", Storm: "storm", LinkFlap: "link-flap",
}

// String names the fault.
func (k Injected) String() string {
	if s, ok := injectedNames[k]; ok {
		return s
	}
	return fmt.Sprintf("intel.Injected(%d)", int(k))
}

// AnyQueue makes an injection apply to whichever queue comes first.
const AnyQueue = -1

// Injection is one fault to inject.
type Injection struct {
	Kind Injected
	// Queue is the RX or TX queue the fault applies to, or AnyQueue.
	Queue int
	// Count is how many frames, descriptors or interrupts it applies to (0 means 1).
	Count int
	// Delay is how long RxStall, TxWritebackDelay and LinkFlap last.
	Delay time.Duration
	// Vector is the MSI-X vector of Spurious and Storm (under INTx the line is asserted).
	Vector int
}

// queued counts pending injections of one kind: for any queue and per queue.
type queued struct {
	total int
	any   int
	perQ  [64]int
}

func (c *queued) add(q, n int) {
	c.total += n
	if q == AnyQueue {
		c.any += n
	} else {
		c.perQ[q] += n
	}
}

// take consumes one injection for queue q, if there is one.
func (c *queued) take(q int) bool {
	if c.total == 0 {
		return false
	}
	switch {
	case c.any > 0:
		c.any--
	case q >= 0 && q < len(c.perQ) && c.perQ[q] > 0:
		c.perQ[q]--
	default:
		return false
	}
	c.total--
	return true
}

// injections are pending injected faults. Guarded by the device lock.
type injections struct {
	drop, oversize, badDMA queued
	wbDelay, wbLost        queued
	txBadDMA               queued
	wbDelayFor             [64]time.Duration
	hangAny                int
	stall                  bool
	stallTimer             *time.Timer
}

// Inject arms a fault. It fails for an unknown kind or a queue the port does not have.
func (m *Model) Inject(in Injection) error {
	if in.Queue != AnyQueue && (in.Queue < 0 || in.Queue >= m.l.queues) {
		return fmt.Errorf("sim intel: inject %v: queue %d: the port has %d", in.Kind, in.Queue, m.l.queues)
	}
	if in.Count < 0 || in.Delay < 0 {
		return fmt.Errorf("sim intel: inject %v: negative count or delay", in.Kind)
	}
	n := max(in.Count, 1)
	switch in.Kind {
	case RxUnpostedDD:
		return m.WriteUnpostedDD(max(in.Queue, 0))
	case RxStall:
		m.StallRX(true)
		if in.Delay > 0 {
			m.dev.Lock()
			if m.inj.stallTimer != nil {
				m.inj.stallTimer.Stop()
			}
			m.inj.stallTimer = time.AfterFunc(in.Delay, func() { m.StallRX(false) })
			m.dev.Unlock()
		}
		return nil
	case Spurious:
		m.SpuriousInterrupt(in.Vector)
		return nil
	case Storm:
		m.InterruptStorm(in.Vector, n)
		return nil
	case LinkFlap:
		m.FlapLink(in.Delay)
		return nil
	}
	m.dev.Lock()
	defer m.dev.Unlock()
	i := &m.inj
	switch in.Kind {
	case RxDrop:
		i.drop.add(in.Queue, n)
	case RxOversize:
		i.oversize.add(in.Queue, n)
	case RxBadDMA:
		i.badDMA.add(in.Queue, n)
	case TxWritebackDelay:
		i.wbDelay.add(in.Queue, n)
		if in.Queue == AnyQueue {
			for q := range i.wbDelayFor {
				i.wbDelayFor[q] = in.Delay
			}
		} else {
			i.wbDelayFor[in.Queue] = in.Delay
		}
	case TxWritebackLost:
		i.wbLost.add(in.Queue, n)
	case TxHang:
		if in.Queue == AnyQueue {
			i.hangAny++
		} else {
			m.txHung |= 1 << in.Queue
			m.st.TxHangs++
		}
	case TxBadDMA:
		i.txBadDMA.add(in.Queue, n)
	default:
		return fmt.Errorf("sim intel: inject %v: unknown fault", in.Kind)
	}
	return nil
}

// DropNext drops the next n frames that arrive from the wire (counted in Stats.Dropped).
func (m *Model) DropNext(n int) { m.Inject(Injection{Kind: RxDrop, Queue: AnyQueue, Count: n}) }

// StallRX stops (true) or resumes (false) RX DMA. While stalled, arriving frames wait in
// the packet buffer (and are missed once it is full); resuming places them.
func (m *Model) StallRX(stalled bool) {
	m.dev.Lock()
	defer m.dev.Unlock()
	m.inj.stall = stalled
	if !stalled {
		if m.inj.stallTimer != nil {
			m.inj.stallTimer.Stop()
			m.inj.stallTimer = nil
		}
		m.drainFIFO()
	}
}

// OversizeNext makes the next n RX write-backs report a length beyond the buffer size
// (the data copied stays within the buffer).
func (m *Model) OversizeNext(n int) {
	m.Inject(Injection{Kind: RxOversize, Queue: AnyQueue, Count: n})
}

// BadDMANext makes the next n RX buffer writes go to an unmapped bus address, as if the
// descriptor were corrupt: each is a DMA fault and the frame is lost.
func (m *Model) BadDMANext(n int) { m.Inject(Injection{Kind: RxBadDMA, Queue: AnyQueue, Count: n}) }

// WriteUnpostedDD writes a completed write-back (DD and EOP, length 60) into RX queue
// q's descriptor at RDT — the first descriptor the driver has not given to the device —
// without advancing RDH, as a buggy or malicious device might.
func (m *Model) WriteUnpostedDD(q int) error {
	m.dev.Lock()
	defer m.dev.Unlock()
	m.settle()
	l := m.l
	if q < 0 || q >= l.queues {
		return fmt.Errorf("sim intel: rx queue %d: no such queue", q)
	}
	lt := &m.rxl[q]
	t := m.get(l.rxq(q, intelnic.QT))
	if !lt.on || lt.n == 0 || t >= lt.n {
		return fmt.Errorf("sim intel: rx queue %d: ring not set up", q)
	}
	desc, err := m.dev.DMAAt(lt.base+16*uint64(t), 16, "rx descriptor (injected)")
	if err != nil {
		return fmt.Errorf("sim intel: rx queue %d: %w", q, err)
	}
	binary.LittleEndian.PutUint32(desc[12:], minFrame)
	sim.StoreUint32(desc[8:], intelnic.RxStatusDD|intelnic.RxStatusEOP)
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
