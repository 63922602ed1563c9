// Package nictest runs the NIC drivers against the device models: a harness that opens a
// driver's port on a strict modelled NIC of its family (Intel, virtio; see Family) with
// the test holding the other end of the cable, and the conformance suites every driver
// must pass (byte-exact forwarding, interrupts, idle wake-ups, faults, multi-queue), plus
// the ones only a family's devices can run (Intel: interrupt moderation, per-queue drop
// counters, TX hang recovery, the RSS state after every recovery).
package nictest

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/wire"
)

// Port is what the suites need of a driver's port beyond nic.Port: the link and
// interrupt state every driver reports, and a view of its internals (Internals).
type Port interface {
	nic.Port
	LinkChanges() uint64
	IRQKind() (irq.Kind, bool)
	Internals
}

// Internals is what the suites read and write inside a port: its buffer pools, its queues'
// counters and its rings. A driver's tests implement it over the driver's own types (the
// Intel drivers through OpenWith).
type Internals interface {
	// Pools are every buffer pool the port owns (receive pools and transmit copy pools):
	// all their buffers must be back when the port is closed.
	Pools() []*nic.Mempool
	// RxPool is the pool RX queue q posts and RxPosted how many of its buffers are posted.
	RxPool(q int) *nic.Mempool
	RxPosted(q int) int
	// TxCopies counts the frames TX queue q copied into its own buffers (frames from a
	// pool the device cannot reach).
	TxCopies(q int) uint64
	// Reclaim takes back the buffers of frames TX queue q sent.
	Reclaim(q int)
	// SetRxAddr overwrites, in the driver's ring, the bus address of the buffer the device
	// fills next on RX queue q (the ring is found through iommu where it is not mapped
	// in the driver's memory).
	SetRxAddr(iommu *sim.IOMMU, q int, bus uint64) error
	// DeviceSide plays the device's DMA side of queue pair 0 for the Forwarder.
	DeviceSide(iommu *sim.IOMMU) (DeviceSide, error)
}

// DeviceSide completes a port's descriptors on queue pair 0 as the device would, with a
// few stores per packet, so that a benchmark measures the driver alone.
type DeviceSide interface {
	// CompleteRx completes the next n posted receive buffers with 60-byte frames.
	CompleteRx(n int)
	// CompleteTx completes the next n frames queued for sending.
	CompleteTx(n int)
}

// Opener opens a driver's port on a device.
type Opener func(dev pci.Device, cfg nic.Config) (Port, error)

// Driver is a driver under test: how to open it and which modelled device family it runs
// on.
type Driver struct {
	Open   Opener
	Family Family
	// SpeedMbps is the link speed the model reports.
	SpeedMbps int
	// MaxFrame is the largest frame (without FCS) the MAC accepts, 0 for no limit below
	// the largest buffer.
	MaxFrame int
	// BufSizes are the buffer sizes BufferSizes tries (nil: 1024, 9 KiB and 16 KiB).
	BufSizes []int
	// MaxMTU is the largest MTU the driver takes (its nic.Limits.MaxMTU); 0: the standard
	// MTU only, the frames it carries bounded by its buffers (BufferSizes).
	MaxMTU int
	// RSSKey is the Toeplitz key the driver programs for RSS (Intel; RSSAfterRecovery).
	RSSKey []byte
}

// Harness is one port on a strict model.
type Harness struct {
	T     testing.TB
	Model Model
	Dev   *sim.Device
	Peer  wire.Port // the test's end of the cable
	Port  Port
	// FaultsOK lets a test that provokes device faults pass the strict check at close.
	FaultsOK bool

	peer   wire.Recorder // what the peer got
	probes uint32        // Probe's tags
}

// New opens a port of drv on a fresh strict model and closes it (checking buffer
// conservation and model faults) when the test ends.
func New(t testing.TB, drv Driver, cfg nic.Config) *Harness {
	t.Helper()
	return NewOn(t, drv, cfg, ModelConfig{})
}

// NewOn is New with the model's settings: mc's Wire is set here.
func NewOn(t testing.TB, drv Driver, cfg nic.Config, mc ModelConfig) *Harness {
	t.Helper()
	a, b := wire.Pair()
	mc.Wire = a
	if mc.MTU == 0 {
		mc.MTU = cfg.MTU
	}
	m, err := drv.Family.New(mc)
	if err != nil {
		t.Fatal(err)
	}
	h := &Harness{T: t, Model: m, Dev: m.Device(), Peer: b}
	b.SetHandler(h.peer.Handle)
	p, err := drv.Open(m.PCI(), cfg)
	if err != nil {
		m.Close()
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
	for i, pool := range h.Port.Pools() {
		if pool.Avail() != pool.Size() {
			h.T.Errorf("pool %d: %d of %d buffers back after close", i, pool.Avail(), pool.Size())
		}
	}
	if err := h.Dev.Err(); err != nil && !h.FaultsOK {
		h.T.Errorf("model: %v", err)
	}
	h.Peer.Close()
}

// Received returns and forgets the frames the peer got.
func (h *Harness) Received() [][]byte { return h.peer.Take() }

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

// WaitFired waits up to a second for v to fire and returns the count (0: it did not).
func WaitFired(t testing.TB, v *irq.Vector) uint64 {
	t.Helper()
	var n uint64
	testutil.WaitFor(time.Second, func() bool { n = testutil.Drain(t, v); return n > 0 })
	return n
}
