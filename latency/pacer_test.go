package latency

import (
	"testing"
	"time"

	"github.com/uiod/uiod/wire"
)

func TestPacerNeverEarly(t *testing.T) {
	for _, spin := range []time.Duration{-1, 20 * time.Microsecond, DefaultSpin} {
		p := newPacer(spin, true)
		start := wire.Now()
		for i := int64(1); i <= 50; i++ {
			due := start + i*int64(100*time.Microsecond)
			now, ok := p.waitUntil(due, nil)
			if !ok || now < due {
				p.release()
				t.Fatalf("spin %v: waitUntil(%d) returned at %d, ok %v", spin, due, now, ok)
			}
		}
		p.release()
		s := p.stats()
		if s.Frames != 50 || s.MeanLateNs < 0 || s.MaxLateNs < int64(s.MeanLateNs) {
			t.Fatalf("spin %v: stats %+v", spin, s)
		}
		if spin < 0 && s.SpinNs != 0 {
			t.Fatalf("spin disabled but %d ns spent spinning", s.SpinNs)
		}
	}
}

func TestPacerStop(t *testing.T) {
	p := newPacer(-1, false)
	stop := make(chan struct{})
	close(stop)
	if _, ok := p.waitUntil(wire.Now()+int64(time.Hour), stop); ok {
		t.Fatal("waitUntil ignored a closed stop channel")
	}
	// A deadline already passed also sees the stop, so an overloaded sender can end.
	if _, ok := p.waitUntil(0, stop); ok {
		t.Fatal("waitUntil of a past deadline ignored the stop")
	}
}

func TestPacerAllocs(t *testing.T) {
	p := newPacer(-1, false)
	stop := make(chan struct{})
	n := testing.AllocsPerRun(100, func() { p.waitUntil(wire.Now(), stop) })
	if n != 0 {
		t.Fatalf("waitUntil allocates %v times", n)
	}
}
