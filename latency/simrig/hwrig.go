package simrig

import (
	"fmt"
	"runtime"
	"time"

	"github.com/uiod/uiod/latency"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/wire"
)

// genRig is the generator side of a bench measured on device clocks: two more model
// ports of the bench's kind, driven by the generator itself through NICWires, cabled to
// the forwarding ports (generator 0 → forwarding port 0, forwarding port 1 → generator 1).
// Every model port runs on the wire clock, as every igb of a QEMU guest runs on its
// virtual clock; each 1588 unit starts its clock when it is enabled, so the two
// generator ports' clocks differ by an offset the run measures.
type genRig struct {
	ports *Ports
	wires [2]*latency.NICWire
	ts    [2]nic.Timesync
}

// openGen builds the generator ports on cables. A kind whose ports cannot timestamp is
// an error wrapping nic.ErrNoTimesync, which Run turns into software timestamps.
func openGen(name string, cables [2]wire.Port) (*genRig, error) {
	ps, err := OpenNIC(name, cables)
	if err != nil {
		return nil, fmt.Errorf("generator ports: %w", err)
	}
	g := &genRig{ports: ps}
	for i, p := range ps.NICs {
		if g.ts[i], err = nic.TimesyncOf(p); err != nil {
			g.close()
			return nil, fmt.Errorf("generator port %d: %w", i, err)
		}
	}
	for i, p := range ps.NICs {
		if g.wires[i], err = latency.NewNICWire(p); err != nil {
			g.close()
			return nil, fmt.Errorf("generator port %d: %w", i, err)
		}
	}
	return g, nil
}

// stamps returns a fresh device-clock collector for one run, sending on generator 0 and
// receiving on generator 1.
func (g *genRig) stamps() *latency.DeviceClock {
	d := &latency.DeviceClock{Tx: g.ts[0], Rx: g.ts[1]}
	g.wires[0].SetStamps(d, true)
	g.wires[1].SetStamps(d, false)
	return d
}

// delayWire holds each frame d before sending it, busy-waiting on the wire clock (the
// sender's goroutine, here the generator port's transmit, waits with it).
type delayWire struct {
	wire.Port
	d time.Duration
}

// Send implements wire.Port.
func (w delayWire) Send(f []byte) error {
	for end := wire.Now() + int64(w.d); wire.Now() < end; {
		runtime.Gosched()
	}
	return w.Port.Send(f)
}

func (g *genRig) close() {
	for _, w := range g.wires {
		if w != nil {
			w.Close()
		}
	}
	g.ports.Close()
}
