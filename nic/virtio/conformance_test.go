package virtio

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// eventModes are the three ways interrupts and notifications get suppressed: EVENT_IDX
// negotiated, declined by the driver, or not offered by the device (ring flags).
var eventModes = []struct {
	name string
	mc   simvirtio.Config
	opt  Options
}{
	{"event_idx", simvirtio.Config{}, Options{}},
	{"flags", simvirtio.Config{}, Options{NoEventIdx: true}},
	{"flags_only_device", simvirtio.Config{NoEventIdx: true}, Options{}},
}

// driverWith is this driver with options opt on the virtio model with mc's settings, for
// the shared suites. The model reports 10 Gb/s.
func driverWith(mc simvirtio.Config, opt Options) nictest.Driver {
	if mc.SpeedMbps == 0 {
		mc.SpeedMbps = 10000
	}
	return nictest.Driver{
		Open: func(dev pci.Device, cfg nic.Config) (nictest.Port, error) {
			p, err := OpenWith(dev, cfg, opt)
			if err != nil {
				return nil, err
			}
			return testPort{p}, nil
		},
		Family:    nictest.Virtio(mc),
		SpeedMbps: mc.SpeedMbps,
		MaxMTU:    MaxMTU,
	}
}

var driver = driverWith(simvirtio.Config{}, Options{})

// TestDriver runs the conformance suites (see nictest.Run) in every event-suppression
// mode.
func TestDriver(t *testing.T) {
	for _, m := range eventModes {
		t.Run(m.name, func(t *testing.T) { nictest.Run(t, driverWith(m.mc, m.opt)) })
	}
}

// BenchmarkForward is the driver-only cost of forwarding a frame (receive, send back,
// reclaim) with the rings' used entries written by the benchmark: one op is one packet.
//
//	go test -run '^$' -bench Forward -benchtime 3000000x ./nic/virtio/
func BenchmarkForward(b *testing.B) { nictest.BenchmarkForwardBatches(b, driver) }

// openTest opens a port on a strict model with mc's settings and options opt, closed (with
// the harness's checks) when the test ends.
func openTest(t testing.TB, mc simvirtio.Config, cfg nic.Config, opt Options) (*nictest.Harness, *Port) {
	t.Helper()
	h := nictest.New(t, driverWith(mc, opt), cfg)
	return h, h.Port.(testPort).Port
}

// testPort is a port with the internals the suites look at.
type testPort struct{ *Port }

var _ nictest.Port = testPort{}

func (p testPort) Pools() []*nic.Mempool     { return p.pools }
func (p testPort) RxPool(q int) *nic.Mempool { return p.rx[q].pool }
func (p testPort) RxPosted(q int) int        { return p.rx[q].posted }
func (p testPort) TxCopies(q int) uint64     { return p.tx[q].nCopies.Load() }
func (p testPort) Reclaim(q int)             { p.tx[q].reclaim() }

// SetRxAddr writes the buffer address of slot 0 (descriptor 1, after its header), the
// slot a fresh queue offers first.
func (p testPort) SetRxAddr(_ *sim.IOMMU, q int, bus uint64) error {
	binary.LittleEndian.PutUint64(p.rx[q].ring.mem.Bytes[16*1:], bus)
	return nil
}

func (p testPort) DeviceSide(*sim.IOMMU) (nictest.DeviceSide, error) {
	return &forwardSide{rx: deviceSide{r: p.rx[0].ring}, tx: deviceSide{r: p.tx[0].ring}, rxLen: 60}, nil
}

// forwardSide is the device's side of queue pair 0 for the nictest Forwarder.
type forwardSide struct {
	rx, tx deviceSide
	rxLen  uint32 // the length of the frames received, without the header
}

// SetRxLen implements nictest.FrameLenSetter.
func (f *forwardSide) SetRxLen(n int) { f.rxLen = uint32(n) }

func (f *forwardSide) CompleteRx(n int) { f.rx.complete(n, virtiospec.NetHdrLen+f.rxLen) }
func (f *forwardSide) CompleteTx(n int) { f.tx.complete(n, 0) }

// deviceSide is the device's view of one ring: it takes available heads and writes used
// entries with plain stores and one atomic index store per batch.
type deviceSide struct {
	r         *vring
	lastAvail uint16
	used      uint16
}

func (d *deviceSide) complete(n int, length uint32) {
	b := d.r.mem.Bytes
	l := d.r.l
	availIdx := uint16(sim.LoadUint32(b[l.avail:]) >> 16)
	if int(availIdx-d.lastAvail) < n {
		panic(fmt.Sprintf("device side: %d available, want %d", availIdx-d.lastAvail, n))
	}
	mask := uint16(l.size - 1)
	for i := 0; i < n; i++ {
		head := binary.LittleEndian.Uint16(b[l.avail+4+2*int(d.lastAvail&mask):])
		e := b[l.used+4+8*int(d.used&mask):]
		binary.LittleEndian.PutUint32(e, uint32(head))
		binary.LittleEndian.PutUint32(e[4:], length)
		d.lastAvail++
		d.used++
	}
	sim.StoreUint32(b[l.used:], uint32(d.used)<<16)
}

// TestDocumentedAPI checks that go doc lists the port's methods.
func TestDocumentedAPI(t *testing.T) {
	nictest.DocumentsPort(t, "IRQKind", "LinkChanges", "Device", "OnRecoverNeeded", "Recover", "RecoverBackoff")
}
