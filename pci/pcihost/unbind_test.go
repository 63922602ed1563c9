package pcihost_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

func TestUnbind(t *testing.T) {
	tests := []struct {
		name   string
		addr   string
		opts   pcihost.UnbindOptions
		want   func(tr *pcitest.Tree) []pcitest.Write
		driver string
	}{
		{"vfio no state", pcitest.I350, pcihost.UnbindOptions{}, func(tr *pcitest.Tree) []pcitest.Write {
			return []pcitest.Write{w(tr, "sys/bus/pci/drivers/vfio-pci/unbind", pcitest.I350)}
		}, ""},
		{"restore without state: kernel picks", pcitest.I350, pcihost.UnbindOptions{Restore: true}, func(tr *pcitest.Tree) []pcitest.Write {
			return []pcitest.Write{
				w(tr, "sys/bus/pci/drivers/vfio-pci/unbind", pcitest.I350),
				w(tr, "sys/bus/pci/drivers_probe", pcitest.I350),
			}
		}, "igb"},
		{"nothing to do", pcitest.Unbound, pcihost.UnbindOptions{}, func(tr *pcitest.Tree) []pcitest.Write { return nil }, ""},
		{"active with force", pcitest.X540, pcihost.UnbindOptions{Force: true}, func(tr *pcitest.Tree) []pcitest.Write {
			return []pcitest.Write{w(tr, "sys/bus/pci/drivers/ixgbe/unbind", pcitest.X540)}
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, tr, k := host(t)
			before := tr.Snapshot()
			p, err := h.PlanUnbind(addrs(tt.addr), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(before, tr.Snapshot()) {
				t.Fatal("PlanUnbind changed the tree")
			}
			checkWrites(t, planWrites(p), tt.want(tr))
			if err := h.Apply(p); err != nil {
				t.Fatal(err)
			}
			checkWrites(t, k.Writes(), tt.want(tr))
			if got := tr.Driver(tt.addr); got != tt.driver {
				t.Errorf("driver = %q, want %q", got, tt.driver)
			}
		})
	}
}

func TestUnbindRefused(t *testing.T) {
	h, tr, k := host(t)
	check := untouched(t, tr, k, "a refused unbind")
	for _, a := range []string{pcitest.X540, "0000:42:00.0"} {
		if _, err := h.PlanUnbind(addrs(a), pcihost.UnbindOptions{}); err == nil || !strings.Contains(err.Error(), a) {
			t.Errorf("unbind %s: error %v", a, err)
		}
	}
	check()
}

// TestBindThenRestore checks that unbinding with Restore gives the function back to its
// original driver with the driver_override it had before uiod (none, or one an admin set)
// and drops the state record.
func TestBindThenRestore(t *testing.T) {
	tests := []struct {
		name     string
		override string // driver_override before the bind; "" leaves it unset
		restore  string // what the restore writes to driver_override
		after    string // driver_override afterwards
	}{
		{"no override", "", "\n", "(null)\n"},
		{"an admin pinned it to igb", "igb\n", "igb", "igb\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, tr, k := host(t)
			a := pcitest.Igb82576
			if tt.override != "" {
				tr.WriteFile(dev(a, "driver_override"), tt.override)
			}
			mustBind(t, h, pcihost.DriverVFIO, a)
			if st, _, _ := h.State(pci.MustParseAddr(a)); st.Override != strings.TrimSpace(tt.override) {
				t.Fatalf("state %+v does not record the override %q", st, tt.override)
			}
			n := len(k.Writes())
			mustUnbind(t, h, pcihost.UnbindOptions{Restore: true}, a)
			checkWrites(t, k.Writes()[n:], []pcitest.Write{
				w(tr, "sys/bus/pci/drivers/vfio-pci/unbind", a),
				w(tr, dev(a, "driver_override"), tt.restore),
				w(tr, "sys/bus/pci/drivers/igb/bind", a),
			})
			if tr.Driver(a) != "igb" || tr.ReadFile(dev(a, "driver_override")) != tt.after {
				t.Errorf("driver %q override %q", tr.Driver(a), tr.ReadFile(dev(a, "driver_override")))
			}
			if _, ok, _ := h.State(pci.MustParseAddr(a)); ok {
				t.Error("state file left after restore")
			}
		})
	}
}

func TestUnbindRestoreLoadsDriver(t *testing.T) {
	h, tr, k := host(t)
	a := pcitest.Igb82576
	mustBind(t, h, pcihost.DriverVFIO, a)
	tr.Remove("sys/bus/pci/drivers/igb") // igb was unloaded meanwhile
	mustUnbind(t, h, pcihost.UnbindOptions{Restore: true}, a)
	if !slices.Equal(k.Modprobes(), []string{"igb"}) || tr.Driver(a) != "igb" {
		t.Errorf("modprobes %v, driver %q", k.Modprobes(), tr.Driver(a))
	}
}

func TestUnbindUnreadableRoutes(t *testing.T) {
	h, tr, k := host(t)
	tr.WriteFile("proc/net/route", "Iface\tDestination\nbroken\n")
	check := untouched(t, tr, k, "a refused unbind")
	_, err := h.PlanUnbind(addrs(pcitest.Igb82576), pcihost.UnbindOptions{Restore: true})
	if !errors.Is(err, pcihost.ErrRefused) || !strings.Contains(err.Error(), "ens3f0") {
		t.Errorf("unbind with unreadable routes: err = %v, want refused naming ens3f0", err)
	}
	check()
	if _, err := h.PlanUnbind(addrs(pcitest.Igb82576), pcihost.UnbindOptions{Force: true}); err != nil {
		t.Errorf("--force: %v", err)
	}
	// A function without interfaces does not need the route tables.
	if _, err := h.PlanUnbind(addrs(pcitest.I350), pcihost.UnbindOptions{}); err != nil {
		t.Errorf("function without interfaces: %v", err)
	}
}

func TestBindBackToOriginal(t *testing.T) {
	h, tr, k := host(t)
	a := pcitest.Igb82576
	for _, drv := range []string{pcihost.DriverVFIO, "igb"} {
		mustBind(t, h, drv, a)
	}
	if got := k.Writes(); got[len(got)-1] != w(tr, dev(a, "driver_override"), "\n") {
		t.Errorf("last write %v, want the override cleared", got[len(got)-1])
	}
	if tr.Driver(a) != "igb" || tr.ReadFile(dev(a, "driver_override")) != "(null)\n" {
		t.Errorf("driver %q override %q, want igb and none", tr.Driver(a), tr.ReadFile(dev(a, "driver_override")))
	}
	if _, ok, _ := h.State(pci.MustParseAddr(a)); ok {
		t.Error("state file left after binding back to the original driver")
	}
}

// TestUnbindRestoreEdges covers the two restores that differ from the plain one: an
// override that names another driver than the recorded one is set only after that
// driver is bound (the kernel refuses the bind while it is set), and a function an
// admin already put back on its recorded driver is not unbound, only forgotten.
func TestUnbindRestoreEdges(t *testing.T) {
	a := pcitest.Igb82576
	tests := []struct {
		name     string
		override string                                                  // driver_override before uiod's bind
		meddle   func(t *testing.T, tr *pcitest.Tree, k *pcitest.Kernel) // after the bind
		want     func(tr *pcitest.Tree) []pcitest.Write                  // the restore's writes
		after    string                                                  // driver_override afterwards
	}{
		{
			name:     "override for another driver set last",
			override: "uio_pci_generic\n",
			want: func(tr *pcitest.Tree) []pcitest.Write {
				return []pcitest.Write{
					w(tr, "sys/bus/pci/drivers/vfio-pci/unbind", a),
					w(tr, dev(a, "driver_override"), "\n"),
					w(tr, "sys/bus/pci/drivers/igb/bind", a),
					w(tr, dev(a, "driver_override"), "uio_pci_generic"),
				}
			},
			after: "uio_pci_generic\n",
		},
		{
			name: "already back on igb",
			meddle: func(t *testing.T, tr *pcitest.Tree, k *pcitest.Kernel) {
				for _, wr := range []pcitest.Write{
					w(tr, "sys/bus/pci/drivers/vfio-pci/unbind", a),
					w(tr, dev(a, "driver_override"), "\n"),
					w(tr, "sys/bus/pci/drivers/igb/bind", a),
				} {
					if err := k.WriteFile(wr.Path, wr.Value); err != nil {
						t.Fatal(err)
					}
				}
			},
			want:  func(tr *pcitest.Tree) []pcitest.Write { return nil },
			after: "(null)\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, tr, k := host(t)
			if tt.override != "" {
				tr.WriteFile(dev(a, "driver_override"), tt.override)
			}
			mustBind(t, h, pcihost.DriverVFIO, a)
			if tt.meddle != nil {
				tt.meddle(t, tr, k)
			}
			n := len(k.Writes())
			mustUnbind(t, h, pcihost.UnbindOptions{Restore: true}, a)
			checkWrites(t, k.Writes()[n:], tt.want(tr))
			if tr.Driver(a) != "igb" || tr.ReadFile(dev(a, "driver_override")) != tt.after {
				t.Errorf("driver %q override %q, want igb and %q", tr.Driver(a), tr.ReadFile(dev(a, "driver_override")), tt.after)
			}
			if _, ok, _ := h.State(pci.MustParseAddr(a)); ok {
				t.Error("state file left after restore")
			}
		})
	}
}
