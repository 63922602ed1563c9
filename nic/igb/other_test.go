package igb

import (
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/sim/intel"
	"github.com/uiod/uiod/wire"
)

// TestLinkChangeDuringOtherInterrupt checks that a link change arriving while the "other"
// vector's handler runs (after it read ICR) raises a new message: the handler must clear
// the vector's EICR bit before it reads the causes, or the second change finds the bit
// still set and no message is ever sent for it.
func TestLinkChangeDuringOtherInterrupt(t *testing.T) {
	a, b := wire.Pair()
	defer b.Close()
	m, err := intel.New(intel.Config{Wire: a, Strict: true, Flavor: intel.X82576})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		armed bool
	)
	// After each register read: a second link change right after the handler read ICR.
	dev := nictest.Hooked(m.PCI(), nictest.Hooks{Read: func(_ int, off, v uint32) uint32 {
		mu.Lock()
		fire := armed && off == i82576.ICR
		armed = armed && !fire
		mu.Unlock()
		if fire {
			go m.SetLink(true) // the second change, inside the handler's window
			time.Sleep(5 * time.Millisecond)
		}
		return v
	}})
	p, err := Open(dev, nic.Config{Interrupts: nic.IRQMSIX})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if k, ok := p.IRQKind(); !ok || k != irq.MSIX {
		t.Fatalf("interrupt mode %v %v, want msix", k, ok)
	}
	mu.Lock()
	armed = true
	mu.Unlock()
	m.SetLink(false) // the first change: its handler reads ICR, and the link comes back
	testutil.WaitFor(2*time.Second, func() bool { return p.LinkChanges() >= 2 })
	if n := p.LinkChanges(); n < 2 {
		t.Fatalf("%d link changes handled, want 2 (link %+v, model %+v, armed %v)", n, p.Link(), m.Stats(), armed)
	}
	if err := m.Device().Err(); err != nil {
		t.Fatal(err)
	}
}
