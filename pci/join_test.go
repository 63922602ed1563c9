package pci_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcitest"
)

// TestJoinPlans: binds to two drivers joined into one plan are applied together, and a
// failure in the second rolls back the first too.
func TestJoinPlans(t *testing.T) {
	plan := func(t *testing.T, h *pci.Host) *pci.Plan {
		t.Helper()
		v, err := h.PlanBind(addrs(pcitest.Unbound), pci.DriverVFIO, pci.BindOptions{})
		if err != nil {
			t.Fatal(err)
		}
		u, err := h.PlanBind(addrs(pcitest.Igb82576), pci.DriverUIO, pci.BindOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := pci.JoinPlans(v, u)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Devices) != 2 || len(p.Warnings) != 1 {
			t.Fatalf("joined plan: %d devices, warnings %q", len(p.Devices), p.Warnings)
		}
		return p
	}
	t.Run("apply", func(t *testing.T) {
		h, tr, _ := host(t)
		if err := h.Apply(plan(t, h)); err != nil {
			t.Fatal(err)
		}
		if tr.Driver(pcitest.Unbound) != pci.DriverVFIO || tr.Driver(pcitest.Igb82576) != pci.DriverUIO {
			t.Errorf("drivers %q, %q", tr.Driver(pcitest.Unbound), tr.Driver(pcitest.Igb82576))
		}
	})
	t.Run("rollback", func(t *testing.T) {
		h, tr, k := host(t)
		k.FailWrite("sys/bus/pci/drivers/igb/unbind", syscall.EIO)
		err := h.Apply(plan(t, h))
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("Apply: %v", err)
		}
		if tr.Driver(pcitest.Unbound) != "" || tr.Driver(pcitest.Igb82576) != "igb" {
			t.Errorf("after rollback: drivers %q, %q; want none and igb", tr.Driver(pcitest.Unbound), tr.Driver(pcitest.Igb82576))
		}
	})
	t.Run("same function twice", func(t *testing.T) {
		h, _, _ := host(t)
		a, _ := h.PlanBind(addrs(pcitest.Unbound), pci.DriverVFIO, pci.BindOptions{})
		b, _ := h.PlanBind(addrs(pcitest.Unbound), pci.DriverUIO, pci.BindOptions{})
		if _, err := pci.JoinPlans(a, b); err == nil {
			t.Error("joined two plans for one function")
		}
		u, _ := h.PlanUnbind(addrs(pcitest.I350), pci.UnbindOptions{})
		if _, err := pci.JoinPlans(a, u); err == nil {
			t.Error("joined a bind and an unbind")
		}
	})
}
