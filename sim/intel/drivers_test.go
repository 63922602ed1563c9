package intel_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	_ "github.com/uiod/uiod/nic/igb"
	_ "github.com/uiod/uiod/nic/ixgbe"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim/intel"
	"github.com/uiod/uiod/wire"
)

// slow stretches every operation the hardware completes on its own, so a driver that
// does not poll for one of them fails.
var slow = intel.Timing{
	Reset:       3 * time.Millisecond,
	EEPROM:      6 * time.Millisecond,
	DMAInit:     9 * time.Millisecond,
	QueueEnable: 2 * time.Millisecond,
	Autoneg:     20 * time.Millisecond,
	SecRxReady:  3 * time.Millisecond, // beyond a 300 µs wait, within Linux's 40 ms
}

// broadcastFrame is a 128-byte broadcast frame of the ethertype from 02:00:00:00:00:01.
func broadcastFrame(ethertype uint16) []byte {
	f := make([]byte, 128)
	copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:], ethertype)
	return f
}

// tcp6Frame is a broadcast IPv6/TCP frame of flow i: only the source port varies, so
// only a hash over the ports spreads these flows.
func tcp6Frame(i int) []byte {
	f := broadcastFrame(0x86dd)
	ip := f[14:]
	ip[0], ip[6], ip[7] = 0x60, 6, 64
	binary.BigEndian.PutUint16(ip[4:], uint16(len(ip)-40))
	ip[8], ip[23], ip[24], ip[39] = 0xfd, 1, 0xfd, 2
	flowPorts(ip[40:], i, 80)
	ip[52] = 5 << 4 // data offset
	return f
}

// flowPorts writes flow i's ports at the start of the TCP or UDP header l4: source port
// 10000+i, destination port dport.
func flowPorts(l4 []byte, i int, dport uint16) {
	binary.BigEndian.PutUint16(l4, uint16(10000+i))
	binary.BigEndian.PutUint16(l4[2:], dport)
}

// receiveSpread sends frames of 64 flows made by frame and returns how many each of the
// port's queues received.
func receiveSpread(t *testing.T, far wire.Port, p nic.Port, frames int, frame func(i int) []byte) []int {
	t.Helper()
	per := make([]int, p.NumRxQueues())
	bufs := make([]*nic.Buf, 32)
	for i := 0; i < frames; i++ {
		if err := far.Send(frame(i % 64)); err != nil {
			t.Fatal(err)
		}
		for q := range per {
			n := p.RxBurst(q, bufs)
			per[q] += n
			for _, b := range bufs[:n] {
				b.Free()
			}
		}
	}
	return per
}

// udpFrame is a broadcast IPv4/UDP frame of flow i (the source port varies).
func udpFrame(i int) []byte {
	f := broadcastFrame(0x0800)
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(len(f)-14))
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	flowPorts(ip[20:], i, 53)
	return f
}

// TestDriversOnStrictModel opens the real drivers on strict models with slow resets,
// EEPROM reads, DMA init, queue enables and auto-negotiation, on every 82599 media the
// model distinguishes (each needs its own link mode), on the 82576 as silicon and as
// QEMU's igb, on its SerDes parts and with its PHY powered down: each must come up with link, spread flows over its four RSS queues and
// receive every frame, without a single model fault.
func TestDriversOnStrictModel(t *testing.T) {
	tests := []struct {
		name string
		cfg  intel.Config
	}{
		{"82599 SFP+", intel.Config{DeviceID: i82599.DeviceSFP}},
		// Handed over by Linux with the interface down: the SFP+ laser is off.
		{"82599 SFP+ laser off", intel.Config{DeviceID: i82599.DeviceSFP, PoweredDown: true}},
		{"82599 KX4", intel.Config{DeviceID: i82599.DeviceKX4}},
		{"82599 KR", intel.Config{DeviceID: 0x1517}},
		{"82599 CX4", intel.Config{DeviceID: i82599.DeviceCX4}},
		{"82599 XAUI", intel.Config{DeviceID: 0x10FC}},
		{"82576", intel.Config{Flavor: intel.X82576}},
		{"82576 QEMU", intel.Config{Flavor: intel.X82576, Quirks: intel.QEMUQuirks()}},
		// SerDes parts: the link comes up through the PCS, not the copper PHY.
		{"82576 fiber", intel.Config{Flavor: intel.X82576, DeviceID: 0x10E6}},
		{"82576 SerDes", intel.Config{Flavor: intel.X82576, DeviceID: 0x10E7}},
		{"82576 NS SerDes", intel.Config{Flavor: intel.X82576, DeviceID: 0x1518}},
		{"82576 SerDes quad", intel.Config{Flavor: intel.X82576, DeviceID: 0x150D}},
		// Handed over by Linux with the interface down: the PHY is powered down.
		{"82576 PHY powered down", intel.Config{Flavor: intel.X82576, PoweredDown: true}},
		{"82576 QEMU PHY powered down", intel.Config{Flavor: intel.X82576, PoweredDown: true, Quirks: intel.QEMUQuirks()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			far, cable := wire.Pair()
			cfg := tt.cfg
			cfg.Addr, cfg.Wire, cfg.Strict, cfg.Timing = pci.MustParseAddr("0000:02:00.0"), cable, true, slow
			m, err := intel.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			const queues = 4
			p, err := nic.Open(m.PCI(), "auto", nic.Config{RxQueues: queues, RxRing: 64, TxRing: 64, Interrupts: nic.IRQNone})
			if err != nil {
				t.Fatalf("open: %v (model: %v)", err, m.Device().Err())
			}
			defer p.Close()
			if l := p.Link(); !l.Up || (cfg.Flavor == intel.X82576 && l.SpeedMbps != 1000) {
				t.Fatalf("link %+v after open, want up (at 1000 Mb/s on an 82576; model: %v)", l, m.Device().Err())
			}
			const frames = 200
			for _, flows := range []struct {
				name  string
				frame func(int) []byte
			}{{"ipv4 udp", udpFrame}, {"ipv6 tcp", tcp6Frame}} {
				per := receiveSpread(t, far, p, frames, flows.frame)
				total := 0
				for q, n := range per {
					if n == 0 {
						t.Errorf("%s: queue %d got no frame of 64 flows: %v", flows.name, q, per)
					}
					total += n
				}
				if total != frames {
					t.Errorf("%s: received %d of %d frames: %v (model %+v)", flows.name, total, frames, per, m.Stats())
				}
			}
			// TX descriptor write-backs in order: relaxed ordering off on every queue.
			bar, err := m.Device().Region(0)
			if err != nil {
				t.Fatal(err)
			}
			for q := 0; q < p.NumTxQueues(); q++ {
				off, ro := i82599.DCATXCTRL(q), uint32(i82599.DcaTxCtrlDescWBRO)
				if cfg.Flavor == intel.X82576 {
					off, ro = i82576.DCATXCTRL(q), i82576.DcaTxctlTxWBRO
				}
				if v := bar.Read32(off); v&ro != 0 {
					t.Errorf("TX queue %d: DCA_TXCTRL %#x keeps write-back relaxed ordering on", q, v)
				}
			}
			// The filter tables come up with stray bits: the driver must have cleared them.
			mc := udpFrame(1)
			copy(mc, []byte{0x01, 0x00, 0x5e, 0x00, 0x10, 0x00})
			before := m.Stats().Filtered
			far.Send(mc)
			if m.Stats().Filtered != before+1 {
				t.Errorf("a multicast frame for a group nobody joined passed the filters (model %+v)", m.Stats())
			}
			// So do the receive addresses beyond the station's: a previous owner's stay.
			uc := udpFrame(2)
			copy(uc, intel.StaleAddress)
			before = m.Stats().Filtered
			far.Send(uc)
			if m.Stats().Filtered != before+1 {
				t.Errorf("a frame for a stale receive address %v passed the filters (model %+v)", intel.StaleAddress, m.Stats())
			}
			if err := m.Device().Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func ExampleNewPair() {
	pair, err := intel.NewPair(intel.Config{})
	if err != nil {
		panic(err)
	}
	defer pair.Close()
	a, b := pair.Models[0], pair.Models[1]
	fmt.Println(a.PCI().Addr(), b.PCI().Addr(), a.PCI().DMA() == b.PCI().DMA())
	// Output: 0000:00:00.0 0000:00:00.1 true
}

// TestDriverUnderLateMSIX runs the igb driver's arm → wait → disarm → poll cycle on a
// model with QEMU's quirks, whose throttled MSI-X messages still arrive after the queue
// was masked: a woken consumer may find nothing, and the next arm must still deliver the
// next frame. Every frame must arrive, with no bad write-back and no model fault.
func TestDriverUnderLateMSIX(t *testing.T) {
	far, cable := wire.Pair()
	m, err := intel.New(intel.Config{Flavor: intel.X82576, Wire: cable, Strict: true, Quirks: intel.QEMUQuirks()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p, err := nic.Open(m.PCI(), "igb", nic.Config{RxRing: 64, TxRing: 64, ITR: 500 * time.Microsecond})
	if err != nil {
		t.Fatalf("open: %v (model: %v)", err, m.Device().Err())
	}
	defer p.Close()
	v := p.RxVector(0)
	if v == nil {
		t.Fatal("no RX vector")
	}
	const frames = 50
	bufs := make([]*nic.Buf, 8)
	got, empty := 0, 0
	for i := 0; i < frames; i++ {
		p.EnableRxInterrupt(0)
		far.Send(udpFrame(i))
		far.Send(udpFrame(i)) // a second frame within the EITR interval: throttled
		for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Microsecond) {
			if n, err := v.Drain(); err != nil {
				t.Fatal(err)
			} else if n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("frame %d: no interrupt (model %+v)", i, m.Stats())
			}
		}
		p.DisableRxInterrupt(0)
		n := 0
		for k := p.RxBurst(0, bufs); k > 0; k = p.RxBurst(0, bufs) {
			for _, b := range bufs[:k] {
				b.Free()
			}
			n += k
		}
		if n == 0 {
			empty++ // woken by a message whose cause was gone
		}
		got += n
		time.Sleep(time.Millisecond) // polling on, masked: a held-back message comes now
	}
	// The last frames may still be on their way to the ring's consumer.
	testutil.WaitFor(2*time.Second, func() bool {
		k := p.RxBurst(0, bufs)
		for _, b := range bufs[:k] {
			b.Free()
		}
		got += k
		return got >= 2*frames
	})
	st := m.Stats()
	t.Logf("%d wake-ups found no frame; model: %d messages, %d throttled, %d sent after their cause was gone", empty, st.Interrupts, st.Throttled, st.LateInterrupts)
	if got != 2*frames {
		t.Fatalf("received %d of %d frames", got, 2*frames)
	}
	if s := p.Stats(); s.RxErrors != 0 {
		t.Fatalf("%d bad write-backs", s.RxErrors)
	}
	if err := m.Device().Err(); err != nil {
		t.Fatal(err)
	}
}
