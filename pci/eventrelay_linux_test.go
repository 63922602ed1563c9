package pci_test

import (
	"testing"
	"time"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
)

func TestEventRelay(t *testing.T) {
	req, err := irq.NewEventfd(irq.Kind(4), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer req.Close()
	errv, err := irq.NewEventfd(irq.Kind(3), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer errv.Close()
	r, err := pci.NewEventRelay(map[pci.Event]*irq.Vector{pci.EventRequest: req, pci.EventError: errv})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		v    *irq.Vector
		want pci.Event
	}{{req, pci.EventRequest}, {errv, pci.EventError}, {req, pci.EventRequest}} {
		if err := tt.v.Signal(); err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-r.C():
			if e != tt.want {
				t.Errorf("got %v, want %v", e, tt.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %v within 10 s", tt.want)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-r.C(); ok {
		t.Error("channel open after Close")
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := pci.NewEventRelay(nil); err == nil {
		t.Error("a relay of no vectors")
	}
}
