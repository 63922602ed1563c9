package pcihost_test

import (
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

// hostAt is pcihost.New(root), failing the test on an error.
func hostAt(t testing.TB, root string) *pcihost.Host {
	t.Helper()
	h, err := pcihost.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// host returns a Host on the standard tree with a fake kernel behind it.
func host(t *testing.T) (*pcihost.Host, *pcitest.Tree, *pcitest.Kernel) {
	t.Helper()
	tr := pcitest.Standard(t)
	k := tr.Kernel()
	h := hostAt(t, tr.Root)
	h.Writer, h.Modprobe = k, k.Modprobe
	return h, tr, k
}

// untouched applies the setups that are not nil to the tree, snapshots it and returns the
// check that a refused plan left it as it was, with no write seen by the kernel; msg says
// what was refused.
func untouched(t *testing.T, tr *pcitest.Tree, k *pcitest.Kernel, msg string, setups ...func(*pcitest.Tree)) func() {
	t.Helper()
	for _, setup := range setups {
		if setup != nil {
			setup(tr)
		}
	}
	before := tr.Snapshot()
	return func() {
		t.Helper()
		if len(k.Writes()) != 0 || !maps.Equal(before, tr.Snapshot()) {
			t.Error(msg + " touched the tree")
		}
	}
}

func addrs(s ...string) []pci.Addr {
	var out []pci.Addr
	for _, a := range s {
		out = append(out, pci.MustParseAddr(a))
	}
	return out
}

// mustBind plans binding the functions a to driver and applies the plan.
func mustBind(t *testing.T, h *pcihost.Host, driver string, a ...string) {
	t.Helper()
	p, err := h.PlanBind(addrs(a...), driver, pcihost.BindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Apply(p); err != nil {
		t.Fatalf("bind to %s: %v", driver, err)
	}
}

// mustUnbind plans unbinding the functions a with opts and applies the plan.
func mustUnbind(t *testing.T, h *pcihost.Host, opts pcihost.UnbindOptions, a ...string) {
	t.Helper()
	p, err := h.PlanUnbind(addrs(a...), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Apply(p); err != nil {
		t.Fatalf("unbind: %v", err)
	}
}

// w builds the expected write of value to rel under the tree.
func w(tr *pcitest.Tree, rel, value string) pcitest.Write {
	return pcitest.Write{Path: tr.Path(rel), Value: value}
}

func planWrites(p *pcihost.Plan) []pcitest.Write {
	var out []pcitest.Write
	for _, x := range p.Writes() {
		out = append(out, pcitest.Write{Path: x.Path, Value: x.Value})
	}
	return out
}

func dev(a, f string) string { return "sys/bus/pci/devices/" + a + "/" + f }

func checkWrites(t *testing.T, got, want []pcitest.Write) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("writes:\n got %v\nwant %v", got, want)
	}
}

func TestBindWrites(t *testing.T) {
	tests := []struct {
		name   string
		addrs  []string
		driver string
		opts   pcihost.BindOptions
		want   func(tr *pcitest.Tree) []pcitest.Write
	}{
		{"kernel driver to vfio", []string{pcitest.Igb82576}, pcihost.DriverVFIO, pcihost.BindOptions{}, func(tr *pcitest.Tree) []pcitest.Write {
			return []pcitest.Write{
				w(tr, dev(pcitest.Igb82576, "driver_override"), "vfio-pci"),
				w(tr, "sys/bus/pci/drivers/igb/unbind", pcitest.Igb82576),
				w(tr, "sys/bus/pci/drivers_probe", pcitest.Igb82576),
			}
		}},
		{"unbound to uio", []string{pcitest.Unbound}, pcihost.DriverUIO, pcihost.BindOptions{}, func(tr *pcitest.Tree) []pcitest.Write {
			return []pcitest.Write{
				w(tr, dev(pcitest.Unbound, "driver_override"), "uio_pci_generic"),
				w(tr, "sys/bus/pci/drivers_probe", pcitest.Unbound),
			}
		}},
		{"already bound", []string{pcitest.I350}, pcihost.DriverVFIO, pcihost.BindOptions{}, func(tr *pcitest.Tree) []pcitest.Write { return nil }},
		{"vfio back to igb", []string{pcitest.I350}, "igb", pcihost.BindOptions{}, func(tr *pcitest.Tree) []pcitest.Write {
			return []pcitest.Write{
				w(tr, dev(pcitest.I350, "driver_override"), "igb"),
				w(tr, "sys/bus/pci/drivers/vfio-pci/unbind", pcitest.I350),
				w(tr, "sys/bus/pci/drivers_probe", pcitest.I350),
			}
		}},
		{"active with force", []string{pcitest.X540}, pcihost.DriverVFIO, pcihost.BindOptions{Force: true}, func(tr *pcitest.Tree) []pcitest.Write {
			return []pcitest.Write{
				w(tr, dev(pcitest.X540, "driver_override"), "vfio-pci"),
				w(tr, "sys/bus/pci/drivers/ixgbe/unbind", pcitest.X540),
				w(tr, "sys/bus/pci/drivers_probe", pcitest.X540),
			}
		}},
		{"whole group (bridge exempt)", []string{pcitest.Port82599A, pcitest.Port82599B, pcitest.Port82599A}, pcihost.DriverVFIO, pcihost.BindOptions{}, func(tr *pcitest.Tree) []pcitest.Write {
			return []pcitest.Write{
				w(tr, dev(pcitest.Port82599A, "driver_override"), "vfio-pci"),
				w(tr, "sys/bus/pci/drivers/ixgbe/unbind", pcitest.Port82599A),
				w(tr, "sys/bus/pci/drivers_probe", pcitest.Port82599A),
				w(tr, dev(pcitest.Port82599B, "driver_override"), "vfio-pci"),
				w(tr, "sys/bus/pci/drivers/ixgbe/unbind", pcitest.Port82599B),
				w(tr, "sys/bus/pci/drivers_probe", pcitest.Port82599B),
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, tr, k := host(t)
			before := tr.Snapshot()
			p, err := h.PlanBind(addrs(tt.addrs...), tt.driver, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(before, tr.Snapshot()) {
				t.Fatal("PlanBind changed the tree")
			}
			want := tt.want(tr)
			checkWrites(t, planWrites(p), want)
			if err := h.Apply(p); err != nil {
				t.Fatal(err)
			}
			checkWrites(t, k.Writes(), want)
			for _, a := range tt.addrs {
				if got := tr.Driver(a); got != tt.driver {
					t.Errorf("%s driver = %q, want %q", a, got, tt.driver)
				}
			}
		})
	}
}

func TestBindRecordsState(t *testing.T) {
	h, tr, _ := host(t)
	a := pci.MustParseAddr(pcitest.Igb82576)
	mustBind(t, h, pcihost.DriverVFIO, pcitest.Igb82576)
	st, ok, err := h.State(a)
	if err != nil || !ok || st.Driver != "igb" || st.BoundTo != pcihost.DriverVFIO || st.Addr != a {
		t.Fatalf("state = %+v %v %v, want original driver igb", st, ok, err)
	}
	if h.StatePath(a) != filepath.Join(tr.Root, "run/uiod/"+pcitest.Igb82576+".json") {
		t.Errorf("state path %s", h.StatePath(a))
	}
	// Moving it on to uio keeps the original record.
	mustBind(t, h, pcihost.DriverUIO, pcitest.Igb82576)
	if st, _, _ := h.State(a); st.Driver != "igb" {
		t.Errorf("state after rebind: %+v, want original igb", st)
	}
	// Binding back to the original driver drops the record.
	mustBind(t, h, "igb", pcitest.Igb82576)
	if _, ok, _ := h.State(a); ok || tr.Driver(pcitest.Igb82576) != "igb" {
		t.Errorf("state kept (%v) or driver %q after binding back", ok, tr.Driver(pcitest.Igb82576))
	}
}

func TestBindRefused(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(tr *pcitest.Tree)
		addrs  []string
		driver string
		opts   pcihost.BindOptions
		is     error
		want   []string
		reject []string
	}{
		{"unknown device", nil, []string{"0000:42:00.0"}, pcihost.DriverVFIO, pcihost.BindOptions{}, pcihost.ErrNoDevice, []string{"0000:42:00.0"}, nil},
		{"active", nil, []string{pcitest.X540}, pcihost.DriverVFIO, pcihost.BindOptions{}, pcihost.ErrRefused, []string{pcitest.X540, "ens2f0", "--force"}, nil},
		{"active to uio", nil, []string{pcitest.X540}, pcihost.DriverUIO, pcihost.BindOptions{}, pcihost.ErrRefused, []string{"active"}, nil},
		{"group not viable", nil, []string{pcitest.Port82599A}, pcihost.DriverVFIO, pcihost.BindOptions{}, pcihost.ErrRefused,
			[]string{"IOMMU group 1", pcitest.Port82599B, "ixgbe"}, []string{pcitest.Bridge}},
		{"no IOMMU", func(tr *pcitest.Tree) { tr.DropIOMMU() }, []string{pcitest.Igb82576}, pcihost.DriverVFIO, pcihost.BindOptions{}, pcihost.ErrRefused,
			[]string{"IOMMU", "--noiommu-mode"}, nil},
		{"bad driver name", nil, []string{pcitest.Igb82576}, "../../x", pcihost.BindOptions{}, nil, []string{"invalid driver name"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, tr, k := host(t)
			check := untouched(t, tr, k, "a refused plan", tt.setup)
			_, err := h.PlanBind(addrs(tt.addrs...), tt.driver, tt.opts)
			if err == nil {
				t.Fatal("PlanBind succeeded")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			for _, s := range tt.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			for _, s := range tt.reject {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q mentions %q", err, s)
				}
			}
			check()
		})
	}
}

func TestBindNoIOMMUMode(t *testing.T) {
	h, tr, k := host(t)
	tr.DropIOMMU()
	tr.AddNoIOMMUParam()
	p, err := h.PlanBind(addrs(pcitest.Port82599A), pcihost.DriverVFIO, pcihost.BindOptions{NoIOMMU: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Warnings, pcihost.WarnNoIOMMU) {
		t.Errorf("warnings %q lack the no-IOMMU warning", p.Warnings)
	}
	param := "sys/module/vfio/parameters/enable_unsafe_noiommu_mode"
	want := []pcitest.Write{
		w(tr, param, "1"),
		w(tr, dev(pcitest.Port82599A, "driver_override"), "vfio-pci"),
		w(tr, "sys/bus/pci/drivers/ixgbe/unbind", pcitest.Port82599A),
		w(tr, "sys/bus/pci/drivers_probe", pcitest.Port82599A),
	}
	checkWrites(t, planWrites(p), want)
	if err := h.Apply(p); err != nil {
		t.Fatal(err)
	}
	checkWrites(t, k.Writes(), want)
	if got := tr.ReadFile(param); got != "Y\n" {
		t.Errorf("noiommu param = %q", got)
	}
	// Once on, it is not written again.
	p, err = h.PlanBind(addrs(pcitest.Port82599B), pcihost.DriverVFIO, pcihost.BindOptions{NoIOMMU: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Setup) != 0 {
		t.Errorf("setup writes %v with the mode already on", p.Setup)
	}
}

func TestBindNoIOMMUUnsupported(t *testing.T) {
	h, tr, _ := host(t)
	tr.DropIOMMU()
	_, err := h.PlanBind(addrs(pcitest.Igb82576), pcihost.DriverVFIO, pcihost.BindOptions{NoIOMMU: true})
	if err == nil || !strings.Contains(err.Error(), "CONFIG_VFIO_NOIOMMU") {
		t.Errorf("error = %v, want one about CONFIG_VFIO_NOIOMMU", err)
	}
}

func TestBindUIOWarns(t *testing.T) {
	h, _, _ := host(t)
	p, err := h.PlanBind(addrs(pcitest.Igb82576), pcihost.DriverUIO, pcihost.BindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Warnings, pcihost.WarnUIO) || !strings.Contains(pcihost.WarnUIO, "DMA") {
		t.Errorf("warnings %q", p.Warnings)
	}
}

func TestPlanString(t *testing.T) {
	h, tr, _ := host(t)
	p, err := h.PlanBind(addrs(pcitest.Igb82576, pcitest.I350), pcihost.DriverVFIO, pcihost.BindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := p.String()
	for _, want := range []string{
		"# 0000:03:00.0: igb -> vfio-pci",
		`echo -n vfio-pci > ` + tr.Path(dev(pcitest.Igb82576, "driver_override")),
		`echo -n 0000:03:00.0 > ` + tr.Path("sys/bus/pci/drivers/igb/unbind"),
		"record original driver \"igb\"",
		"0000:04:00.0: already on vfio-pci, nothing to do",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("plan text lacks %q:\n%s", want, s)
		}
	}
}

// TestBindViableGroupMembers binds the two 82599 ports one at a time: a group member that
// is unbound, on vfio-pci or a bridge does not make the group unviable.
func TestBindViableGroupMembers(t *testing.T) {
	h, tr, _ := host(t)
	apply := func(p *pcihost.Plan, err error) {
		t.Helper()
		if err == nil {
			err = h.Apply(p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// B unbound: A's group holds the bridge and an unbound function.
	apply(h.PlanUnbind(addrs(pcitest.Port82599B), pcihost.UnbindOptions{}))
	apply(h.PlanBind(addrs(pcitest.Port82599A), pcihost.DriverVFIO, pcihost.BindOptions{}))
	// B's group now holds the bridge and A on vfio-pci.
	apply(h.PlanBind(addrs(pcitest.Port82599B), pcihost.DriverVFIO, pcihost.BindOptions{}))
	for _, a := range []string{pcitest.Port82599A, pcitest.Port82599B} {
		if tr.Driver(a) != pcihost.DriverVFIO {
			t.Errorf("%s on %q", a, tr.Driver(a))
		}
	}
}

// TestBindNoIOMMURollback checks that a failed bind turns no-IOMMU mode off again when the
// plan turned it on: the host is left as it was.
// TestBindViablePCIStub checks that a group member parked on pci-stub does not make the
// group unviable: the kernel allows pci-stub (it does no DMA) next to vfio-pci.
func TestBindViablePCIStub(t *testing.T) {
	h, tr, k := host(t)
	tr.AddDriver("pci-stub")
	for _, x := range []struct{ rel, v string }{
		{dev(pcitest.Port82599B, "driver_override"), "pci-stub"},
		{"sys/bus/pci/drivers/ixgbe/unbind", pcitest.Port82599B},
		{"sys/bus/pci/drivers/pci-stub/bind", pcitest.Port82599B},
	} {
		if err := k.WriteFile(tr.Path(x.rel), x.v); err != nil {
			t.Fatal(err)
		}
	}
	if d := tr.Driver(pcitest.Port82599B); d != "pci-stub" {
		t.Fatalf("setup: %s on %q", pcitest.Port82599B, d)
	}
	if _, err := h.PlanBind(addrs(pcitest.Port82599A), pcihost.DriverVFIO, pcihost.BindOptions{}); err != nil {
		t.Errorf("group with a pci-stub member refused: %v", err)
	}
	// Any other driver still makes it unviable.
	h2, tr2, _ := host(t)
	if _, err := h2.PlanBind(addrs(pcitest.Port82599A), pcihost.DriverVFIO, pcihost.BindOptions{}); !errors.Is(err, pcihost.ErrRefused) {
		t.Errorf("group with an ixgbe member: err = %v, want refused (tree %s)", err, tr2.Root)
	}
}

// TestUnbindUnreadableRoutes checks that unbind fails closed when it cannot tell whether
// a function's interface carries routes: refused unless --force, and nothing written.
// TestBindBackToOriginal checks that binding a function back to the driver recorded when
// uiod took it drops the record and puts back the override the record kept, instead of
// leaving driver_override naming the kernel driver for good.
