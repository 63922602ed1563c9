package latency

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/wire"
)

// txStampWait bounds the wait for a marked probe's TX stamp: the NICs latch it as the
// frame leaves, which is as the doorbell is written on the models and QEMU.
const txStampWait = 10 * time.Millisecond

// NICWire is a wire.Port on a NIC port the generator drives itself, so that the 1588
// unit of the port can stamp the probes. Send queues a frame on TX queue 0; a poll
// goroutine receives from RX queue 0 and hands each frame to the handler stamped with
// wire.Now as the poll saw it (the software figure, which carries the generator's own
// scheduling). With Stamps set, Send marks every PTP probe for a TX stamp and gives it to
// Stamps, and the poll gives the RX stamps of PTP probes. A port that asks for Recover
// (nic.Recoverer: virtio, igbvf) is recovered by the poll goroutine between its bursts,
// holding sendMu so that no Send is inside TxBurst meanwhile.
type NICWire struct {
	port   nic.Port
	rec    *nic.Recovery // nil for a port that is no nic.Recoverer
	ts     nic.Timesync
	stamps atomic.Pointer[DeviceClock]
	txTo   bool // this wire sends the probes Stamps measures

	sendMu sync.Mutex
	pool   *nic.Mempool
	batch  [1]*nic.Buf

	// parked is an RX stamp read from the latch for a frame not yet seen (rxStamp; the
	// poll goroutine's).
	parked parkedStamp

	h      atomic.Pointer[wire.Handler]
	stop   chan struct{}
	done   chan struct{}
	closed atomic.Bool
}

// errNotStamped is the RX stamp error of a probe that arrived while the latch was full.
var errNotStamped = fmt.Errorf("probe not stamped: %w", nic.ErrTimestampLost)

// parkedStamp is an RX latch's content read before its frame was seen.
type parkedStamp struct {
	st nic.RxStamp
	ok bool
}

// dmaOf is what NewNICWire needs of a port: its device, for a pool of transmit buffers.
type dmaOf interface{ Device() pci.Device }

// NewNICWire starts a wire on port (which the wire now owns and closes).
func NewNICWire(port nic.Port) (*NICWire, error) {
	d, ok := port.(dmaOf)
	if !ok {
		return nil, fmt.Errorf("%s: no DMA allocator for transmit buffers (latency probes need a PCI port or a simulated one)", nic.Describe(port))
	}
	pool, err := nic.NewMempool(d.Device().DMA(), 256, 2048)
	if err != nil {
		return nil, fmt.Errorf("transmit buffers: %w", err)
	}
	w := &NICWire{port: port, pool: pool, stop: make(chan struct{}), done: make(chan struct{})}
	w.ts, _ = nic.TimesyncOf(port)
	w.rec = nic.NewRecovery(port, nil)
	go w.poll()
	return w, nil
}

// Timesync is the port's 1588 unit (nil and the reason if it has none).
func (w *NICWire) Timesync() (nic.Timesync, error) { return nic.TimesyncOf(w.port) }

// SetStamps makes the wire report device-clock stamps to d: as the sender (tx), the TX
// stamps of the probes it sends; otherwise the RX stamps of the probes it receives. Nil
// stops it.
func (w *NICWire) SetStamps(d *DeviceClock, tx bool) {
	w.sendMu.Lock()
	w.txTo = tx
	w.sendMu.Unlock()
	w.stamps.Store(d)
}

// Send implements wire.Port.
func (w *NICWire) Send(frame []byte) error {
	if w.closed.Load() {
		return wire.ErrClosed
	}
	w.sendMu.Lock()
	defer w.sendMu.Unlock()
	b := w.pool.Get()
	if b == nil {
		w.port.TxBurst(0, nil) // reclaim
		if b = w.pool.Get(); b == nil {
			return errors.New("nic wire: no free transmit buffer")
		}
	}
	if len(frame) > b.Cap() {
		b.Free()
		return fmt.Errorf("nic wire: %d-byte frame does not fit a %d-byte buffer", len(frame), b.Cap())
	}
	b.SetLen(copy(b.Data(), frame))
	d := w.stamps.Load()
	var p Probe
	measured := false
	if d != nil && w.txTo {
		if pp, ok, err := parsePTPProbe(frame); ok && err == nil && pp.Kind == KindProbe {
			p, measured = pp, true
			b.MarkTimestamp()
		}
	}
	w.batch[0] = b
	if w.port.TxBurst(0, w.batch[:]) != 1 {
		b.Free()
		return errors.New("nic wire: transmit ring full")
	}
	if measured {
		at, err := w.txStamp()
		d.TxStamp(p.Seq, at, err)
	}
	return nil
}

// txStamp waits for the TX latch, at most txStampWait.
func (w *NICWire) txStamp() (int64, error) {
	deadline := wire.Now() + int64(txStampWait)
	for {
		at, err := w.ts.TxTimestamp()
		if !errors.Is(err, nic.ErrNoTimestamp) || wire.Now() > deadline {
			return at, err
		}
		runtime.Gosched()
	}
}

// SetHandler implements wire.Port.
func (w *NICWire) SetHandler(h wire.Handler) {
	if h == nil {
		w.h.Store(nil)
		return
	}
	w.h.Store(&h)
}

// pollSpin is how long the poll keeps yielding without a frame before it sleeps: longer
// than the default probe gap, so that a probe is seen (and the RX latch freed for the
// next one) as soon as the scheduler lets the poll run.
const pollSpin = 2 * time.Millisecond

// exclusive runs fn with no goroutine in the port's queues: the poll goroutine's own RX
// queue is not in a burst, and sendMu keeps Send out of TxBurst.
func (w *NICWire) exclusive(fn func()) error {
	w.sendMu.Lock()
	defer w.sendMu.Unlock()
	fn()
	return nil
}

// poll receives until Close: busy while frames come, yielding for pollSpin without one,
// then sleeping 20 µs at a time. Between two bursts it runs the port's Recover when it
// asks for one (or a retry after a failed one is due).
func (w *NICWire) poll() {
	defer close(w.done)
	bufs := make([]*nic.Buf, 32)
	idleSince := wire.Now()
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		_, _ = w.rec.Poll(w.exclusive) // a failure leaves the port down: probes are lost, and counted
		n := w.port.RxBurst(0, bufs)
		now := wire.Now()
		for _, b := range bufs[:n] {
			w.deliver(b, now)
			b.Free()
		}
		switch {
		case n > 0:
			idleSince = now
		case now-idleSince < int64(pollSpin):
			runtime.Gosched()
		default:
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// deliver hands one received frame to the handler, after taking its RX stamp.
func (w *NICWire) deliver(b *nic.Buf, now int64) {
	f := b.Bytes()
	if d := w.stamps.Load(); d != nil && w.ts != nil {
		w.rxStamp(d, b, f)
	}
	if h := w.h.Load(); h != nil {
		(*h)(f, now)
	}
}

// rxStamp takes the RX stamp of frame f (in b) for d. The RX latch holds one stamp,
// and a frame arriving while it is full is not stamped, so every stamped frame's latch
// is read as the frame is seen, ours or not: a PTP Sync from another node (a
// grandmaster on the LAN) frees it at once instead of costing the next probe. A probe
// that arrived unstamped is lost; the latch may then hold the stamp of a frame after it
// (the latch was freed between the two arrivals), which is read and parked for the next
// stamped frame, and given to it only if the sequence ids agree.
func (w *NICWire) rxStamp(d *DeviceClock, b *nic.Buf, f []byte) {
	p, ok, err := parsePTPProbe(f)
	probe := ok && err == nil && p.Kind == KindProbe
	if !b.RxTimestamped() {
		if !probe {
			return
		}
		d.RxStamp(p.Seq, 0, errNotStamped)
		if !w.parked.ok {
			if st, err := w.ts.RxTimestamp(); err == nil {
				w.parked = parkedStamp{st, true}
			}
		}
		return
	}
	if w.parked.ok {
		w.parked.ok = false
		if probe && w.parked.st.SeqID == uint16(p.Seq) {
			d.RxStamp(p.Seq, w.parked.st.Time, nil)
			return
		}
		// The parked stamp was a frame's that never reached us (the NIC stamps before it
		// drops); this frame's own is in the latch.
	}
	if !probe {
		w.ts.RxTimestamp() // another node's frame: free the latch for the next probe
		return
	}
	at, err := nic.RxTimestampOf(w.ts, b, uint16(p.Seq))
	d.RxStamp(p.Seq, at, err)
}

// Close implements wire.Port: it stops the poll and closes the port.
func (w *NICWire) Close() error {
	if w.closed.Swap(true) {
		return nil
	}
	close(w.stop)
	<-w.done
	w.sendMu.Lock()
	defer w.sendMu.Unlock()
	err := w.port.Close()
	w.pool.Close()
	return err
}
