package virtio

import (
	"sync"
	"testing"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	simvirtio "github.com/uiod/uiod/sim/virtio"
	"github.com/uiod/uiod/wire"
)

// harness is one port on a strict virtio model with the test holding the far end of the
// cable.
type harness struct {
	t        testing.TB
	m        *simvirtio.Model
	peer     wire.Port
	port     *Port
	faultsOK bool

	mu  sync.Mutex
	got [][]byte
}

// newHarness opens a port on a fresh strict model (mc's Wire and Strict are set here) and
// closes it when the test ends, checking buffer conservation and model faults.
func newHarness(t testing.TB, mc simvirtio.Config, cfg nic.Config, opt Options) *harness {
	t.Helper()
	a, b := wire.Pair()
	mc.Wire, mc.Strict = a, true
	m, err := simvirtio.New(mc)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, m: m, peer: b}
	b.SetHandler(func(f []byte, _ int64) {
		h.mu.Lock()
		h.got = append(h.got, append([]byte(nil), f...))
		h.mu.Unlock()
	})
	p, err := OpenWith(m.PCI(), cfg, opt)
	if err != nil {
		t.Fatalf("open: %v (model: %v)", err, m.Device().Err())
	}
	h.port = p
	t.Cleanup(h.close)
	return h
}

func (h *harness) close() {
	h.t.Helper()
	if err := h.port.Close(); err != nil {
		h.t.Errorf("close: %v", err)
	}
	for i, pool := range h.port.pools {
		if pool.Avail() != pool.Size() {
			h.t.Errorf("pool %d: %d of %d buffers back after close", i, pool.Avail(), pool.Size())
		}
	}
	if err := h.m.Device().Err(); err != nil && !h.faultsOK {
		h.t.Errorf("model: %v", err)
	}
	h.peer.Close()
}

// received returns and forgets the frames the peer got.
func (h *harness) received() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.got
	h.got = nil
	return g
}

// send sends n 64-byte broadcast frames from the peer.
func (h *harness) send(n int) {
	h.t.Helper()
	for i := 0; i < n; i++ {
		f := nictest.Frame(rngFor(uint64(i)), nictest.Broadcast, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 64)
		if err := h.peer.Send(f); err != nil {
			h.t.Fatal(err)
		}
	}
}

// consume receives and frees everything waiting on RX queue q.
func (h *harness) consume(q int) int {
	var bufs [64]*nic.Buf
	total := 0
	for {
		n := h.port.RxBurst(q, bufs[:])
		for _, b := range bufs[:n] {
			b.Free()
		}
		total += n
		if n == 0 {
			return total
		}
	}
}
