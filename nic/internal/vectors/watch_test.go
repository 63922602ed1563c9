package vectors

import (
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
)

func TestWatchVector(t *testing.T) {
	testutil.CheckLeaks(t)
	v, err := irq.NewEventfd(irq.MSIX, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	fired := make(chan struct{}, 10)
	w, err := Watch(v, func() { fired <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := v.Signal(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-fired:
		case <-time.After(5 * time.Second):
			t.Fatalf("signal %d not seen", i)
		}
	}
	w.Stop()
	w.Stop()
	v.Signal()
	select {
	case <-fired:
		t.Fatal("callback after stop")
	case <-time.After(10 * time.Millisecond):
	}
}
