package pcihost_test

import (
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

func TestBindModprobe(t *testing.T) {
	h, tr, k := host(t)
	tr.Remove("sys/bus/pci/drivers/uio_pci_generic")
	p, err := h.PlanBind(addrs(pcitest.Igb82576), pcihost.DriverUIO, pcihost.BindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Load, []string{pcihost.DriverUIO}) || !strings.Contains(p.String(), "modprobe uio_pci_generic") {
		t.Errorf("plan loads %v:\n%s", p.Load, p)
	}
	if err := h.Apply(p); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(k.Modprobes(), []string{pcihost.DriverUIO}) || tr.Driver(pcitest.Igb82576) != pcihost.DriverUIO {
		t.Errorf("modprobes %v, driver %q", k.Modprobes(), tr.Driver(pcitest.Igb82576))
	}
}

func TestBindModprobeFails(t *testing.T) {
	h, tr, k := host(t)
	tr.Remove("sys/bus/pci/drivers/uio_pci_generic")
	k.FailModprobe(errors.New("module not found"))
	p, err := h.PlanBind(addrs(pcitest.Igb82576), pcihost.DriverUIO, pcihost.BindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check := untouched(t, tr, k, "a failed modprobe")
	err = h.Apply(p)
	if err == nil || !strings.Contains(err.Error(), "load driver uio_pci_generic") {
		t.Errorf("error = %v", err)
	}
	check()
}

func TestBindRollback(t *testing.T) {
	a, b := pcitest.Igb82576, pcitest.Unbound
	tests := []struct {
		name   string
		addrs  []string
		inject func(k *pcitest.Kernel)
		step   string
		after  func(tr *pcitest.Tree) []pcitest.Write // writes after the failing one
	}{
		{"probe binds nothing", []string{a}, func(k *pcitest.Kernel) { k.IgnoreWrite("sys/bus/pci/drivers_probe") }, "verify",
			func(tr *pcitest.Tree) []pcitest.Write {
				return []pcitest.Write{
					w(tr, dev(a, "driver_override"), "\n"),
					w(tr, "sys/bus/pci/drivers/igb/bind", a),
				}
			}},
		{"unbind fails", []string{a}, func(k *pcitest.Kernel) { k.FailWrite("sys/bus/pci/drivers/igb/unbind", syscall.EBUSY) }, "unbind from igb",
			func(tr *pcitest.Tree) []pcitest.Write {
				return []pcitest.Write{w(tr, dev(a, "driver_override"), "\n")}
			}},
		{"probe fails", []string{a}, func(k *pcitest.Kernel) { k.FailWrite("sys/bus/pci/drivers_probe", syscall.EINVAL) }, "probe vfio-pci",
			func(tr *pcitest.Tree) []pcitest.Write {
				return []pcitest.Write{
					w(tr, dev(a, "driver_override"), "\n"),
					w(tr, "sys/bus/pci/drivers/igb/bind", a),
				}
			}},
		{"second function fails", []string{a, b}, func(k *pcitest.Kernel) { k.FailNext(dev(b, "driver_override"), syscall.EACCES) }, "set driver_override",
			func(tr *pcitest.Tree) []pcitest.Write {
				return []pcitest.Write{
					w(tr, dev(b, "driver_override"), "\n"), // b: nothing else to undo
					w(tr, dev(a, "driver_override"), "\n"), // a: already on vfio-pci
					w(tr, "sys/bus/pci/drivers/vfio-pci/unbind", a),
					w(tr, "sys/bus/pci/drivers/igb/bind", a),
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, tr, k := host(t)
			tt.inject(k)
			p, err := h.PlanBind(addrs(tt.addrs...), pcihost.DriverVFIO, pcihost.BindOptions{})
			if err != nil {
				t.Fatal(err)
			}
			err = h.Apply(p)
			if err == nil {
				t.Fatal("Apply succeeded")
			}
			if !strings.Contains(err.Error(), tt.step) || !strings.Contains(err.Error(), "rolled back") {
				t.Errorf("error %q does not name step %q and the rollback", err, tt.step)
			}
			got := k.Writes()
			// Find the failing write: the plan's writes up to it were made, then the rollback.
			pw := planWrites(p)
			n := 0
			for n < len(pw) && n < len(got) && got[n] == pw[n] {
				n++
			}
			checkWrites(t, got[n:], tt.after(tr))
			if tr.Driver(a) != "igb" {
				t.Errorf("%s driver %q after rollback, want igb", a, tr.Driver(a))
			}
			for _, x := range tt.addrs {
				if ov := tr.ReadFile(dev(x, "driver_override")); ov != "(null)\n" {
					t.Errorf("%s override %q after rollback", x, ov)
				}
				if _, ok, _ := h.State(pci.MustParseAddr(x)); ok {
					t.Errorf("%s state file left after rollback", x)
				}
			}
		})
	}
}

func TestBindNoIOMMURollback(t *testing.T) {
	h, tr, k := host(t)
	tr.DropIOMMU()
	tr.AddNoIOMMUParam()
	param := "sys/module/vfio/parameters/enable_unsafe_noiommu_mode"
	before := tr.ReadFile(param)
	k.IgnoreWrite("sys/bus/pci/drivers_probe")
	p, err := h.PlanBind(addrs(pcitest.Igb82576), pcihost.DriverVFIO, pcihost.BindOptions{NoIOMMU: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Apply(p); err == nil || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("Apply = %v, want a rolled back failure", err)
	}
	if got := tr.ReadFile(param); got != before {
		t.Errorf("noiommu param = %q after rollback, want %q", got, before)
	}
	if got := k.Writes(); len(got) == 0 || got[len(got)-1] != w(tr, param, "0") {
		t.Errorf("last write is not the param back to 0: %v", got)
	}
}

// TestJoinPlans: binds to two drivers joined into one plan are applied together, and a
// failure in the second rolls back the first too.
func TestJoinPlans(t *testing.T) {
	plan := func(t *testing.T, h *pcihost.Host) *pcihost.Plan {
		t.Helper()
		v, err := h.PlanBind(addrs(pcitest.Unbound), pcihost.DriverVFIO, pcihost.BindOptions{})
		if err != nil {
			t.Fatal(err)
		}
		u, err := h.PlanBind(addrs(pcitest.Igb82576), pcihost.DriverUIO, pcihost.BindOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := pcihost.JoinPlans(v, u)
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
		if tr.Driver(pcitest.Unbound) != pcihost.DriverVFIO || tr.Driver(pcitest.Igb82576) != pcihost.DriverUIO {
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
		a, _ := h.PlanBind(addrs(pcitest.Unbound), pcihost.DriverVFIO, pcihost.BindOptions{})
		b, _ := h.PlanBind(addrs(pcitest.Unbound), pcihost.DriverUIO, pcihost.BindOptions{})
		if _, err := pcihost.JoinPlans(a, b); err == nil {
			t.Error("joined two plans for one function")
		}
		u, _ := h.PlanUnbind(addrs(pcitest.I350), pcihost.UnbindOptions{})
		if _, err := pcihost.JoinPlans(a, u); err == nil {
			t.Error("joined a bind and an unbind")
		}
	})
}
