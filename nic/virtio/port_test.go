package virtio

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/pci"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// eventModes runs f with EVENT_IDX negotiated and without (ring flags).
func eventModes(t *testing.T, f func(t *testing.T, mc simvirtio.Config, opt Options)) {
	for _, tc := range []struct {
		name string
		mc   simvirtio.Config
		opt  Options
	}{
		{"event_idx", simvirtio.Config{}, Options{}},
		{"flags", simvirtio.Config{}, Options{NoEventIdx: true}},
		{"flags_only_device", simvirtio.Config{NoEventIdx: true}, Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) { f(t, tc.mc, tc.opt) })
	}
}

func TestOpenStrict(t *testing.T) {
	for _, kind := range []irq.Kind{irq.MSIX, irq.INTx} {
		eventModes(t, func(t *testing.T, mc simvirtio.Config, opt Options) {
			mc.SpeedMbps = 10000
			h := newHarness(t, mc, nic.Config{RxQueues: 2, TxQueues: 2, Interrupts: nic.IRQModeOf(kind)}, opt)
			p := h.port
			if !bytes.Equal(p.MAC(), h.m.MAC()) {
				t.Errorf("MAC %v, model has %v", p.MAC(), h.m.MAC())
			}
			if l := p.Link(); !l.Up || l.SpeedMbps != 10000 {
				t.Errorf("link %+v, want up at 10000", l)
			}
			if got, ok := p.IRQKind(); !ok || got != kind {
				t.Errorf("irq kind %v %v, want %v", got, ok, kind)
			}
			if p.NumRxQueues() != 2 || p.NumTxQueues() != 2 || h.m.Pairs() != 2 {
				t.Errorf("queues %d/%d, model pairs %d", p.NumRxQueues(), p.NumTxQueues(), h.m.Pairs())
			}
			need := uint64(1)<<featVersion1 | 1<<featAccessPlat | 1<<featMQ | 1<<featCtrlVQ | 1<<featStatus | 1<<featMAC
			if f := h.m.Features(); f&need != need || f != p.Features() {
				t.Errorf("features: model %#x, driver %#x, want at least %#x", f, p.Features(), need)
			}
			wantEvent := !opt.NoEventIdx && !mc.NoEventIdx
			if got := p.has(featEventIdx); got != wantEvent {
				t.Errorf("EVENT_IDX negotiated %v, want %v", got, wantEvent)
			}
			if err := h.m.Device().Err(); err != nil {
				t.Fatalf("init: %v", err)
			}
		})
	}
}

// TestForwardByteExact sends frames of random sizes, receives them, sends them back and
// checks every byte on both legs across many ring wraps.
func TestForwardByteExact(t *testing.T) {
	eventModes(t, func(t *testing.T, mc simvirtio.Config, opt Options) {
		const ring = 64
		h := newHarness(t, mc, nic.Config{RxRing: ring, TxRing: ring, PoolSize: 160, NoIRQ: true}, opt)
		rng := rngFor(11)
		frames := 200_000
		if testing.Short() {
			frames = 30_000
		}
		bufs := make([]*nic.Buf, 48)
		templ := make([][]byte, 128)
		for i := range templ {
			templ[i] = nictest.Frame(rng, nictest.Broadcast, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1000, 2000, 60+rng.IntN(nic.DefaultBufSize-60+1))
		}
		var sent [][]byte
		done := 0
		for done < frames {
			k := 1 + rng.IntN(len(bufs))
			sent = sent[:0]
			for i := 0; i < k; i++ {
				f := templ[rng.IntN(len(templ))]
				f[len(f)-1] = byte(done + i)
				if err := h.peer.Send(f); err != nil {
					t.Fatal(err)
				}
				sent = append(sent, append([]byte(nil), f...))
			}
			got := 0
			for got < k {
				n := h.port.RxBurst(0, bufs[got:k])
				if n == 0 {
					t.Fatalf("after %d frames: got %d of %d (model %+v, port %+v)", done, got, k, h.m.Stats(), h.port.Stats())
				}
				for j, b := range bufs[got : got+n] {
					if !bytes.Equal(b.Bytes(), sent[got+j]) {
						t.Fatalf("frame %d: received %d bytes, sent %d: contents differ", done+got+j, b.Len(), len(sent[got+j]))
					}
				}
				got += n
			}
			for off := 0; off < k; {
				n := h.port.TxBurst(0, bufs[off:k])
				if n == 0 {
					t.Fatalf("tx ring stuck after %d frames", done)
				}
				off += n
			}
			back := h.received()
			if len(back) != k {
				t.Fatalf("peer got %d of %d frames back", len(back), k)
			}
			for i := range back {
				if !bytes.Equal(back[i], sent[i]) {
					t.Fatalf("frame %d: sent back %d bytes, want %d: contents differ", done+i, len(back[i]), len(sent[i]))
				}
			}
			done += k
		}
		h.port.tx[0].reclaim()
		st, ms := h.port.Stats(), h.m.Stats()
		if st.RxPackets != uint64(done) || st.TxPackets != uint64(done) || st.RxErrors != 0 || st.TxErrors != 0 {
			t.Fatalf("stats %+v after %d frames each way", st, done)
		}
		if ms.Missed != 0 || ms.WireOut != uint64(done) {
			t.Fatalf("model %+v after %d frames each way", ms, done)
		}
		t.Logf("%d frames each way; %d notifications, %d interrupts suppressed", done, ms.Notifies, ms.Suppressed)
	})
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name string
		mc   simvirtio.Config
		cfg  nic.Config
		want string
		is   error
	}{
		{"more tx than rx queues", simvirtio.Config{}, nic.Config{RxQueues: 1, TxQueues: 2}, "more than rx queues", nil},
		{"more pairs than offered", simvirtio.Config{MaxPairs: 2}, nic.Config{RxQueues: 3}, "rx queues 3: want 1..2", nil},
		{"no multi-queue", simvirtio.Config{MaxPairs: 1}, nic.Config{RxQueues: 2}, "rx queues 2: want 1..1", nil},
		{"buffer too small", simvirtio.Config{}, nic.Config{BufSize: 1024}, "buffer size 1024", nil},
		{"bad ring", simvirtio.Config{}, nic.Config{RxRing: 100}, "rx ring 100", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.mc.Strict = true
			m, err := simvirtio.New(tt.mc)
			if err != nil {
				t.Fatal(err)
			}
			defer m.PCI().Close()
			_, err = Open(m.PCI(), tt.cfg)
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tt.want)) {
				t.Fatalf("open: %v, want an error containing %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("open: %v, want %v", err, tt.is)
			}
			if err := m.Device().Err(); err != nil {
				t.Fatalf("model after the failed open: %v", err)
			}
			if n := m.Device().IOMMU().Mappings(); n != 0 {
				t.Fatalf("%d DMA mappings left after the failed open", n)
			}
		})
	}
}

func TestMSIXFallsBackToINTx(t *testing.T) {
	h := newHarness(t, simvirtio.Config{NoMSIX: true}, nic.Config{}, Options{})
	if kind, ok := h.port.IRQKind(); !ok || kind != irq.INTx {
		t.Fatalf("irq kind %v %v, want intx after MSI-X is not supported", kind, ok)
	}
	d := newHarness(t, simvirtio.Config{}, nic.Config{}, Options{})
	if kind, ok := d.port.IRQKind(); !ok || kind != irq.MSIX {
		t.Fatalf("default mode: irq kind %v %v, want msix", kind, ok)
	}
	m, err := simvirtio.New(simvirtio.Config{NoMSIX: true, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := Open(m.PCI(), nic.Config{Interrupts: nic.IRQMSIX}); !errors.Is(err, pci.ErrNotSupported) {
		t.Fatalf("msix asked for explicitly without MSI-X: %v, want ErrNotSupported", err)
	}
}

func TestRegistered(t *testing.T) {
	m, err := simvirtio.New(simvirtio.Config{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := nic.Open(m.PCI(), "auto", nic.Config{NoIRQ: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*Port); !ok {
		t.Fatalf("auto picked %T", p)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint16{DeviceIDNet, DeviceIDNetTransient} {
		if !Match(VendorID, id) || Name(VendorID, id) != "virtio-net" {
			t.Errorf("1af4:%04x not matched", id)
		}
	}
	if Match(VendorID, 0x1042) || Match(0x8086, DeviceIDNet) {
		t.Error("matched a function that is no virtio-net")
	}
	_ = pci.ErrNotSupported
	_ = fmt.Sprint
}

// TestLinkDuringClose calls Link from another goroutine (a status page) while the port
// closes: no register may be read after the device is closed.
func TestLinkDuringClose(t *testing.T) {
	for i := 0; i < 200; i++ {
		m, err := simvirtio.New(simvirtio.Config{Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		p, err := Open(m.PCI(), nic.Config{NoIRQ: true, RxRing: 8, TxRing: 8, PoolSize: 8})
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		running := make(chan struct{})
		go func() {
			defer close(done)
			close(running)
			for {
				select {
				case <-stop:
					return
				default:
					p.Link()
				}
			}
		}()
		<-running
		time.Sleep(20 * time.Microsecond) // let it spin
		err = p.Close()
		close(stop)
		<-done
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Device().Err(); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
}
