// Package nictest runs the NIC drivers against the device model: a harness that opens a
// driver's port on a strict modelled NIC with the test holding the other end of the
// cable, and the test suites every Intel driver must pass (byte-exact forwarding,
// interrupts, faults, RSS).
package nictest

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel/ring"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/intel"
	"github.com/uiod/uiod/wire"
)

// Port is what the suites need of a driver's port beyond nic.Port.
type Port interface {
	nic.Port
	RxQueue(q int) *ring.RxQueue
	TxQueue(q int) *ring.TxQueue
	LinkChanges() uint64
	IRQKind() (irq.Kind, bool)
}

// Opener opens a driver's port on a device.
type Opener func(dev pci.Device, cfg nic.Config) (Port, error)

// Driver is a driver under test: how to open it and which model flavour speaks its NIC.
type Driver struct {
	Open   Opener
	Flavor intel.Flavor
	// SpeedMbps is the link speed the model reports.
	SpeedMbps int
	// MaxFrame is the largest frame (without FCS) the MAC accepts, 0 for no limit below
	// the largest buffer.
	MaxFrame int
	// Quirks are the model behaviours of QEMU's emulation to run against (see
	// intel.Quirks); the zero value is the silicon's.
	Quirks intel.Quirks
}

// Harness is one port on a strict model.
type Harness struct {
	T     testing.TB
	Model *intel.Model
	Dev   *sim.Device
	Peer  wire.Port // the test's end of the cable
	Port  Port
	// FaultsOK lets a test that provokes device faults pass the strict check at close.
	FaultsOK bool

	mu  sync.Mutex
	got [][]byte
}

// New opens a port of drv on a fresh strict model and closes it (checking buffer
// conservation and model faults) when the test ends.
func New(t testing.TB, drv Driver, cfg nic.Config) *Harness {
	t.Helper()
	a, b := wire.Pair()
	m, err := intel.New(intel.Config{Wire: a, Strict: true, Flavor: drv.Flavor, Quirks: drv.Quirks})
	if err != nil {
		t.Fatal(err)
	}
	h := &Harness{T: t, Model: m, Dev: m.Device(), Peer: b}
	b.SetHandler(func(f []byte, ts int64) {
		h.mu.Lock()
		h.got = append(h.got, append([]byte(nil), f...))
		h.mu.Unlock()
	})
	p, err := drv.Open(m.Device(), cfg)
	if err != nil {
		t.Fatalf("open: %v (model: %v)", err, m.Device().Err())
	}
	h.Port = p
	t.Cleanup(h.close)
	return h
}

func (h *Harness) close() {
	h.T.Helper()
	if err := h.Port.Close(); err != nil {
		h.T.Errorf("close: %v", err)
	}
	for q := 0; q < h.Port.NumRxQueues(); q++ {
		if pool := h.Port.RxQueue(q).Pool(); pool.Avail() != pool.Size() {
			h.T.Errorf("rx queue %d: %d of %d buffers back after close", q, pool.Avail(), pool.Size())
		}
	}
	for q := 0; q < h.Port.NumTxQueues(); q++ {
		if pool := h.Port.TxQueue(q).CopyPool(); pool != nil && pool.Avail() != pool.Size() {
			h.T.Errorf("tx queue %d: copy pool %d of %d back after close", q, pool.Avail(), pool.Size())
		}
	}
	if err := h.Dev.Err(); err != nil && !h.FaultsOK {
		h.T.Errorf("model: %v", err)
	}
	h.Peer.Close()
}

// Received returns and forgets the frames the peer got.
func (h *Harness) Received() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.got
	h.got = nil
	return g
}

// Broadcast is the Ethernet broadcast address.
var Broadcast = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// Frame builds an n-byte IPv4/UDP frame to dst with a random payload.
func Frame(rng *rand.Rand, dst net.HardwareAddr, srcIP, dstIP [4]byte, sport, dport uint16, n int) []byte {
	f := make([]byte, n)
	copy(f, dst)
	copy(f[6:], []byte{0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee})
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(n-14))
	ip[8] = 64
	ip[9] = 17 // UDP
	copy(ip[12:], srcIP[:])
	copy(ip[16:], dstIP[:])
	udp := ip[20:]
	binary.BigEndian.PutUint16(udp[0:], sport)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], uint16(n-34))
	for i := 42; i < n; i++ {
		f[i] = byte(rng.Uint32())
	}
	return f
}

// Send sends n 64-byte broadcast frames from the peer.
func (h *Harness) Send(n int) {
	h.T.Helper()
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	for i := 0; i < n; i++ {
		if err := h.Peer.Send(Frame(rng, Broadcast, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 64)); err != nil {
			h.T.Fatal(err)
		}
	}
}

// Consume receives and frees everything waiting on RX queue q and returns the count.
func (h *Harness) Consume(q int) int {
	bufs := make([]*nic.Buf, 64)
	total := 0
	for {
		n := h.Port.RxBurst(q, bufs)
		for _, b := range bufs[:n] {
			b.Free()
		}
		total += n
		if n == 0 {
			return total
		}
	}
}

// Drain returns how often v fired since the last Drain.
func Drain(t testing.TB, v *irq.Vector) uint64 {
	t.Helper()
	n, err := v.Drain()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// WaitFired waits up to a second for v to fire and returns the count (0: it did not).
func WaitFired(t testing.TB, v *irq.Vector) uint64 {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if n := Drain(t, v); n > 0 {
			return n
		}
		time.Sleep(50 * time.Microsecond)
	}
	return 0
}

// waitFor polls cond for up to a second.
func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
	return true
}
