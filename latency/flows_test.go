package latency

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/wire"
)

// fiveTuple is a frame's IPv4/UDP flow: addresses, protocol and ports.
type fiveTuple struct {
	src, dst         [4]byte
	proto            byte
	srcPort, dstPort uint16
}

func tupleOf(f []byte) fiveTuple {
	ip := f[offIP:]
	var t fiveTuple
	copy(t.src[:], ip[12:16])
	copy(t.dst[:], ip[16:20])
	t.proto = ip[9]
	t.srcPort = binary.BigEndian.Uint16(f[offUDP:])
	t.dstPort = binary.BigEndian.Uint16(f[offUDP+2:])
	return t
}

// TestFlowsSpreadProbes checks that Flows N sends probes on N distinct 5-tuples, in
// turn, and that the receiver still matches every probe (the UDP checksum stays right).
func TestFlowsSpreadProbes(t *testing.T) {
	for _, flows := range []int{1, 8, 64} {
		gen, far := wire.Pair()
		var mu sync.Mutex
		seen := map[fiveTuple]int{}
		far.SetHandler(func(f []byte, ts int64) {
			mu.Lock()
			seen[tupleOf(f)]++
			mu.Unlock()
			far.Send(f) // reflect
		})
		count := 4 * flows
		res, err := Run(context.Background(), gen, gen, Config{Count: count, Pattern: Constant{Gap: 20 * time.Microsecond}, Flows: flows, Spin: -1})
		gen.Close()
		far.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) != flows {
			t.Errorf("flows %d: %d distinct 5-tuples", flows, len(seen))
		}
		for tup, n := range seen {
			if n != count/flows || tup.proto != 17 || tup.dstPort != DefaultAddrs().DstPort ||
				tup.srcPort < DefaultAddrs().SrcPort || tup.srcPort >= DefaultAddrs().SrcPort+uint16(flows) {
				t.Errorf("flows %d: tuple %+v carried %d probes, want %d", flows, tup, n, count/flows)
			}
		}
		if res.Sent != uint64(count) || res.Received != uint64(count) || res.Lost != 0 || res.Foreign != 0 {
			t.Errorf("flows %d: sent %d received %d lost %d foreign %d", flows, res.Sent, res.Received, res.Lost, res.Foreign)
		}
	}
	a := DefaultAddrs()
	for _, flows := range []int{-1, 0x10000 - int(a.SrcPort) + 1} {
		if _, err := (Config{Count: 1, Flows: flows}).withDefaults(); err == nil {
			t.Errorf("flows %d accepted", flows)
		}
	}
}

func TestFlowStampAllocatesNothing(t *testing.T) {
	tmpl, _ := newFrameTemplate(DefaultAddrs(), 64, KindProbe)
	port := uint16(1000)
	if n := testing.AllocsPerRun(100, func() { tmpl.stampFlow(7, 9, port); port++ }); n != 0 {
		t.Errorf("%v allocations per stamp", n)
	}
	for p := range uint16(300) {
		if _, err := ParseProbe(tmpl.stampFlow(uint64(p), 5, 1000+p*211)); err != nil {
			t.Fatalf("port %d: %v", 1000+p*211, err)
		}
	}
}

// TestPaceLimits checks that patterns and loads faster than the generator paces are
// refused, and that Duration ends a run even when the schedule would not (the sender
// blocked in a send).
func TestPaceLimits(t *testing.T) {
	for _, p := range []Pattern{Constant{Gap: time.Nanosecond}, Constant{Gap: MinGap - 1}, Poisson{Rate: 2e6}, OnOff{Rate: 5e6, On: time.Millisecond, Off: time.Millisecond}} {
		if err := CheckPattern(p); err == nil {
			t.Errorf("pattern %v accepted", p)
		}
	}
	if err := CheckPattern(Constant{Gap: MinGap}); err != nil {
		t.Errorf("gap %v: %v", MinGap, err)
	}
	if _, err := (Config{Count: 1, LoadRate: 2e6}).withDefaults(); err == nil {
		t.Error("load of 2 Mpps accepted")
	}

	w := &slowWire{delay: 300 * time.Millisecond}
	start := time.Now()
	res, err := Run(context.Background(), w, w, Config{Duration: 50 * time.Millisecond, Timeout: time.Millisecond, Pattern: Constant{Gap: MinGap}, Spin: -1})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	// One send of 300 ms overruns a 50 ms run; a second must not start.
	if res.Sent > 1 || took > 5*time.Second {
		t.Errorf("sent %d in %v", res.Sent, took)
	}
}

// slowWire takes delay for every send and delivers nothing.
type slowWire struct{ delay time.Duration }

func (w *slowWire) Send([]byte) error       { time.Sleep(w.delay); return nil }
func (w *slowWire) SetHandler(wire.Handler) {}
func (w *slowWire) Close() error            { return nil }
