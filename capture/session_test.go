package capture

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"
	"golang.org/x/net/bpf"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
)

// heapDMA is a pci.DMA over Go memory with made-up bus addresses.
type heapDMA struct{ next uint64 }

func (d *heapDMA) Alloc(size int) (pci.Mem, error) {
	d.next += 1 << 32
	return pci.Mem{Bytes: make([]byte, size), IOVA: d.next}, nil
}
func (d *heapDMA) Free(pci.Mem) error { return nil }

// macPort is a nic.Port of which a capture only asks the MAC, queue counts, link and
// statistics.
type macPort struct {
	nic.Port
	mac    net.HardwareAddr
	queues int
	missed *atomic.Uint64
}

func (p macPort) MAC() net.HardwareAddr { return p.mac }
func (p macPort) NumRxQueues() int      { return p.queues }
func (p macPort) NumTxQueues() int      { return p.queues }
func (p macPort) Link() nic.Link        { return nic.Link{Up: true, SpeedMbps: 10000} }
func (p macPort) Stats() nic.Stats      { return nic.Stats{RxMissed: p.missed.Load()} }

// bufOut is an Output to w, as -w - makes it.
func bufOut(t *testing.T, w io.Writer) *Output {
	t.Helper()
	o, err := NewOutput(OutputConfig{Path: "-", Stdout: w})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// fakeTarget is a dataplane of two ports and two threads whose frames the test hands to
// the attached mirrors itself.
type fakeTarget struct {
	mu      sync.Mutex
	ports   []dataplane.Port
	mirrors map[dataplane.PortID]dataplane.Mirror
	pool    *nic.Mempool
}

func newFakeTarget(t *testing.T) *fakeTarget {
	pool, err := nic.NewMempool(&heapDMA{}, 64, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeTarget{
		ports: []dataplane.Port{
			{Name: "xe0", NIC: macPort{mac: net.HardwareAddr{2, 0, 0, 0, 0, 1}, queues: 2, missed: new(atomic.Uint64)}},
			{Name: "xe1", NIC: macPort{mac: net.HardwareAddr{2, 0, 0, 0, 0, 2}, queues: 1, missed: new(atomic.Uint64)}},
		},
		mirrors: map[dataplane.PortID]dataplane.Mirror{},
		pool:    pool,
	}
}

func (f *fakeTarget) Ports() []dataplane.Port          { return f.ports }
func (f *fakeTarget) Threads() []dataplane.ThreadStats { return make([]dataplane.ThreadStats, 2) }
func (f *fakeTarget) SetMirror(p dataplane.PortID, m dataplane.Mirror) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if int(p) >= len(f.ports) {
		return errors.New("no such port")
	}
	if m == nil {
		delete(f.mirrors, p)
	} else {
		f.mirrors[p] = m
	}
	return nil
}

// send hands n frames of size bytes (tagged with seq) to port p's mirror as thread th
// would, and reports whether a mirror was attached.
func (f *fakeTarget) send(p dataplane.PortID, th int, dir dataplane.Direction, queue, n, size int, seq *int) bool {
	f.mu.Lock()
	m := f.mirrors[p]
	f.mu.Unlock()
	if m == nil {
		return false
	}
	bufs := make([]*nic.Buf, n)
	for i := range bufs {
		b := f.pool.Get()
		b.SetLen(size)
		d := b.Bytes()
		for j := range d {
			d[j] = byte(*seq + j)
		}
		*seq++
		bufs[i] = b
	}
	m.Mirror(th, dir, queue, bufs, idle.Now())
	for _, b := range bufs {
		b.Free()
	}
	return true
}

type readPacket struct {
	data  []byte
	iface int
	len   int
}

// readPcapng reads a whole stream: its packets and each interface's drops.
func readPcapng(t *testing.T, r io.Reader) (pkts []readPacket, names []string, dropped map[int]uint64) {
	t.Helper()
	dropped = map[int]uint64{}
	ng, err := pcapgo.NewNgReader(r, pcapgo.NgReaderOptions{StatisticsCallback: func(i int, st pcapgo.NgInterfaceStatistics) {
		dropped[i] = st.PacketsDropped
	}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, ci, err := ng.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		pkts = append(pkts, readPacket{data, ci.InterfaceIndex, ci.Length})
	}
	for i := 0; i < ng.NInterfaces(); i++ {
		intf, _ := ng.Interface(i)
		names = append(names, intf.Name)
	}
	return pkts, names, dropped
}

func TestSessionPcapng(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		wantN int // frames in the file
	}{
		{"both ports, all", Options{Ports: []dataplane.PortID{0, 1}, Queue: -1}, 4 + 3 + 2},
		{"rx only", Options{Ports: []dataplane.PortID{0, 1}, Queue: -1, Direction: RxOnly}, 4 + 2},
		{"tx only", Options{Ports: []dataplane.PortID{0}, Queue: -1, Direction: TxOnly}, 3},
		{"queue 1", Options{Ports: []dataplane.PortID{0}, Queue: 1}, 3},
		{"snaplen", Options{Ports: []dataplane.PortID{0}, Queue: -1, Snaplen: 20}, 7},
		{"count", Options{Ports: []dataplane.PortID{0, 1}, Queue: -1, Count: 5}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTarget(t)
			s, err := Start(ft, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			seq := 0
			ft.send(0, 0, dataplane.RX, 0, 4, 60, &seq)
			ft.send(0, 1, dataplane.TX, 1, 3, 1514, &seq)
			ft.send(1, 1, dataplane.RX, 0, 2, 100, &seq)
			s.Stop()
			var out bytes.Buffer
			if err := s.Write(&out, nil); err != nil {
				t.Fatal(err)
			}
			pkts, names, _ := readPcapng(t, &out)
			if len(pkts) != tt.wantN {
				t.Fatalf("%d packets, want %d", len(pkts), tt.wantN)
			}
			if len(names) != len(tt.opts.Ports) || names[0] != "xe0" {
				t.Errorf("interfaces %v", names)
			}
			for _, p := range pkts {
				want := p.len
				if tt.opts.Snaplen > 0 {
					want = min(want, tt.opts.Snaplen)
				}
				if len(p.data) != want {
					t.Errorf("captured %d of %d bytes, want %d", len(p.data), p.len, want)
				}
				for j := 1; j < len(p.data); j++ {
					if p.data[j] != p.data[0]+byte(j) {
						t.Fatalf("packet bytes differ from what was sent at %d", j)
					}
				}
			}
			if ft.send(0, 0, dataplane.RX, 0, 1, 60, &seq) {
				t.Error("the mirror is still attached after Stop")
			}
		})
	}
}

func TestSessionDropsAreCounted(t *testing.T) {
	ft := newFakeTarget(t)
	s, err := Start(ft, Options{Ports: []dataplane.PortID{0}, Queue: -1})
	if err != nil {
		t.Fatal(err)
	}
	slots := len(s.rings[0].buf) / align8(recHdr+64)
	// Nobody drains the ring: a burst past its size is dropped, and the rest of the
	// traffic too, while the other thread's ring still takes frames.
	seq, sent := 0, 0
	for sent < slots+50 {
		ft.send(0, 0, dataplane.RX, 0, 32, 64, &seq)
		sent += 32
	}
	ft.send(0, 1, dataplane.RX, 0, 10, 64, &seq)
	sent += 10
	s.Stop()
	var out bytes.Buffer
	if err := s.Write(&out, nil); err != nil {
		t.Fatal(err)
	}
	pkts, _, dropped := readPcapng(t, &out)
	if uint64(len(pkts))+dropped[0] != uint64(sent) || dropped[0] == 0 {
		t.Errorf("%d captured + %d dropped, want %d sent and some dropped", len(pkts), dropped[0], sent)
	}
	if st := s.Stats(); st.Captured[0] != uint64(len(pkts)) || st.Dropped[0] != dropped[0] || st.Seen[0] != uint64(sent) {
		t.Errorf("Stats %+v, want %d captured, %d dropped, %d seen", st, len(pkts), dropped[0], sent)
	}
}

func TestSessionEndsOnDuration(t *testing.T) {
	ft := newFakeTarget(t)
	s, err := Start(ft, Options{Ports: []dataplane.PortID{1}, Queue: -1, Duration: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Write(io.Discard, nil) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a 20ms capture still runs after 10s")
	}
}

func TestStartRefuses(t *testing.T) {
	for _, opts := range []Options{
		{},
		{Ports: []dataplane.PortID{2}},
		{Ports: []dataplane.PortID{0, 0}},
		{Ports: []dataplane.PortID{0}, Snaplen: MaxSnaplen + 1},
		{Ports: []dataplane.PortID{0}, Queue: -2},
		{Ports: []dataplane.PortID{1}, Queue: 5},                                        // xe1 has one queue
		{Ports: []dataplane.PortID{0}, Filter: []bpf.RawInstruction{{Op: 0x28, K: 12}}}, // no return
	} {
		ft := newFakeTarget(t)
		if _, err := Start(ft, opts); err == nil {
			t.Errorf("Start(%+v) succeeded", opts)
		}
		if len(ft.mirrors) != 0 {
			t.Errorf("Start(%+v) failed and left a mirror attached", opts)
		}
	}
}

func TestMirrorAllocatesNothing(t *testing.T) {
	ft := newFakeTarget(t)
	s, err := Start(ft, Options{Ports: []dataplane.PortID{0}, Queue: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	m := ft.mirrors[0]
	bufs := []*nic.Buf{ft.pool.Get(), ft.pool.Get()}
	for _, b := range bufs {
		b.SetLen(60)
	}
	r := s.rings[0]
	if n := testing.AllocsPerRun(100, func() {
		m.Mirror(0, dataplane.RX, 0, bufs, 1)
		for {
			rec, _, ok := r.peek()
			if !ok {
				break
			}
			r.release(rec)
		}
	}); n != 0 {
		t.Fatalf("Mirror allocates %.1f times per burst", n)
	}
}
