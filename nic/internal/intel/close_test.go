package intel

import (
	"testing"
	"time"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim"
)

// TestLinkDuringClose checks that Close waits for a Link reading in progress before it
// closes the device: on vfio/uio, Close unmaps BAR0, and a register read after that
// faults the process.
func TestLinkDuringClose(t *testing.T) {
	dev, err := sim.New(sim.Config{BAR0Size: 0x8000, Regs: []sim.Reg{{Name: "LINKS", Off: 0x10, Access: sim.RW}}})
	if err != nil {
		t.Fatal(err)
	}
	bar, err := dev.Region(0)
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	p := &Port{dev: dev, bar: bar}
	p.ops = Ops{
		Mask: func() {},
		Stop: func() {},
		Link: func() nic.Link {
			close(entered)
			<-release
			return nic.Link{Up: bar.Read32(0x10) != 0}
		},
	}
	linked := make(chan struct{})
	go func() {
		p.Link()
		close(linked)
	}()
	<-entered
	closed := make(chan error)
	go func() { closed <- p.Close() }()
	time.Sleep(20 * time.Millisecond) // a Close that does not wait has closed the device by now
	close(release)
	<-linked
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	faults, _ := dev.Faults()
	for _, f := range faults {
		if f.Kind == sim.AccessAfterClose {
			t.Fatalf("Link read a register after Close closed the device: %v", f)
		}
	}
	if l := p.Link(); l.Up {
		t.Errorf("link %+v after Close, want down", l)
	}
}
