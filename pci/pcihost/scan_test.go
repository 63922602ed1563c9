package pcihost_test

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

func scanStandard(t *testing.T, ids bool, all bool) (map[string]pcihost.DeviceInfo, []string) {
	t.Helper()
	tr := pcitest.Standard(t)
	if ids {
		tr.InstallPCIIDs()
	}
	var warnings []string
	h := hostAt(t, tr.Root)
	h.Warn = func(m string) { warnings = append(warnings, m) }
	list, err := h.Scan(all)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]pcihost.DeviceInfo{}
	for _, d := range list {
		m[d.Addr.String()] = d
	}
	return m, warnings
}

func TestScanFields(t *testing.T) {
	devs, warnings := scanStandard(t, true, true)
	if len(warnings) != 0 {
		t.Errorf("warnings with pci.ids: %q", warnings)
	}
	tests := []struct {
		addr  string
		check func(d pcihost.DeviceInfo) bool
		what  string
	}{
		{pcitest.Port82599A, func(d pcihost.DeviceInfo) bool { return d.VendorID == 0x8086 && d.DeviceID == 0x10fb }, "ids 8086:10fb"},
		{pcitest.Port82599A, func(d pcihost.DeviceInfo) bool { return d.SubsystemVendorID == 0x8086 && d.SubsystemDeviceID == 0x0003 }, "subsystem 8086:0003"},
		{pcitest.Port82599A, func(d pcihost.DeviceInfo) bool { return d.Class == 0x020000 && d.Revision == 1 }, "class 020000 rev 01"},
		{pcitest.Port82599A, func(d pcihost.DeviceInfo) bool { return d.VendorName == "Intel Corporation" }, "vendor name"},
		{pcitest.Port82599A, func(d pcihost.DeviceInfo) bool {
			return d.DeviceName == "82599ES 10-Gigabit SFI/SFP+ Network Connection"
		}, "device name"},
		{pcitest.Port82599A, func(d pcihost.DeviceInfo) bool { return d.ClassName == "Ethernet controller" }, "class name"},
		{pcitest.Port82599A, func(d pcihost.DeviceInfo) bool { return d.Driver == "ixgbe" }, "driver ixgbe"},
		{pcitest.Port82599A, func(d pcihost.DeviceInfo) bool { return slices.Equal(d.Interfaces, []string{"eth0"}) }, "interfaces [eth0]"},
		{pcitest.Port82599A, func(d pcihost.DeviceInfo) bool { return d.IOMMUGroup == 1 }, "iommu group 1"},
		{pcitest.Port82599A, func(d pcihost.DeviceInfo) bool {
			return slices.Equal(d.IOMMUGroupMembers, []pci.Addr{pci.MustParseAddr(pcitest.Bridge), pci.MustParseAddr(pcitest.Port82599B)})
		}, "group members bridge + port B"},
		{pcitest.Port82599A, func(d pcihost.DeviceInfo) bool { return d.NUMANode == 0 }, "numa 0"},
		{pcitest.Port82599A, func(d pcihost.DeviceInfo) bool { return d.MSIXVectors == 64 }, "64 msix"},
		{pcitest.Port82599A, func(d pcihost.DeviceInfo) bool { return !d.Active }, "eth0 (link-local routes only) inactive"},
		{pcitest.Port82599A, func(d pcihost.DeviceInfo) bool { return d.Err == nil }, "no error"},
		{pcitest.X540, func(d pcihost.DeviceInfo) bool { return d.Active && d.NUMANode == 1 && d.DeviceID == 0x1528 }, "X540 active numa 1"},
		{pcitest.Igb82576, func(d pcihost.DeviceInfo) bool { return d.NUMANode == -1 && d.MSIXVectors == 10 && d.Driver == "igb" }, "82576"},
		{pcitest.Igb82576, func(d pcihost.DeviceInfo) bool { return d.VendorName == "Intel Corporation" && d.DeviceName == "" }, "unknown product: ids only"},
		{pcitest.I350, func(d pcihost.DeviceInfo) bool {
			return d.Driver == "vfio-pci" && d.IsUserspace() && len(d.Interfaces) == 0
		}, "I350 on vfio"},
		{pcitest.Virtio, func(d pcihost.DeviceInfo) bool {
			return slices.Equal(d.Interfaces, []string{"ens5"}) && d.MSIXVectors == 3
		}, "virtio ens5"},
		{pcitest.Virtio, func(d pcihost.DeviceInfo) bool { return d.VendorName == "Red Hat, Inc." }, "virtio vendor"},
		{pcitest.Unbound, func(d pcihost.DeviceInfo) bool {
			return d.Driver == "" && d.Err == nil && len(d.IOMMUGroupMembers) == 0
		}, "unbound"},
		{pcitest.Bridge, func(d pcihost.DeviceInfo) bool { return d.Class.IsBridge() && d.MSIXVectors == 0 }, "bridge without msix"},
		{pcitest.SATA, func(d pcihost.DeviceInfo) bool { return d.Class == 0x010601 && d.ClassName == "SATA controller" }, "sata"},
		{pcitest.Garbage, func(d pcihost.DeviceInfo) bool {
			return d.Err != nil && strings.Contains(d.Err.Error(), "vendor") && d.DeviceID == 0x10fb && d.IOMMUGroup == 7
		}, "garbage vendor: error naming vendor, other fields read"},
	}
	for _, tt := range tests {
		d, ok := devs[tt.addr]
		if !ok {
			t.Errorf("%s missing from scan", tt.addr)
			continue
		}
		if !tt.check(d) {
			t.Errorf("%s: want %s, got %+v", tt.addr, tt.what, d)
		}
	}
	if len(devs) != 10 {
		t.Errorf("scan --all found %d functions, want 10", len(devs))
	}
}

func TestScanNetworkOnly(t *testing.T) {
	devs, _ := scanStandard(t, true, false)
	for _, a := range []string{pcitest.Bridge, pcitest.SATA} {
		if _, ok := devs[a]; ok {
			t.Errorf("%s listed without all", a)
		}
	}
	if _, ok := devs[pcitest.Garbage]; !ok {
		t.Errorf("%s (network, with error) not listed", pcitest.Garbage)
	}
	if len(devs) != 8 {
		t.Errorf("found %d network functions, want 8", len(devs))
	}
}

func TestScanWithoutPCIIDs(t *testing.T) {
	devs, warnings := scanStandard(t, false, true)
	if len(warnings) != 1 || !strings.Contains(warnings[0], "pci.ids") {
		t.Errorf("warnings = %q, want one about pci.ids", warnings)
	}
	for a, d := range devs {
		if d.VendorName != "" || d.DeviceName != "" {
			t.Errorf("%s has names %q %q without pci.ids", a, d.VendorName, d.DeviceName)
		}
		if a != pcitest.Garbage && d.Err != nil {
			t.Errorf("%s: %v", a, d.Err)
		}
	}
}

func TestScanCorruptPCIIDs(t *testing.T) {
	tr := pcitest.Standard(t)
	tr.WriteFile("usr/share/misc/pci.ids", "x\n\tC\n")
	var warnings []string
	h := hostAt(t, tr.Root)
	h.Warn = func(m string) { warnings = append(warnings, m) }
	if _, err := h.Scan(true); err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 {
		t.Errorf("warnings = %q, want one", warnings)
	}
}

func TestScanBadFiles(t *testing.T) {
	tests := []struct {
		name, file, content, want string
	}{
		{"class", "class", "network\n", "class"},
		{"numa", "numa_node", "one\n", "numa_node"},
		{"config loop", "config", string(loopConfig()), "loop"},
		{"device too long", "device", "0x10fb0\n", "device"},
		{"empty revision", "revision", "", "revision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := pcitest.Standard(t)
			tr.WriteFile("sys/bus/pci/devices/"+pcitest.Igb82576+"/"+tt.file, tt.content)
			h := hostAt(t, tr.Root)
			list, err := h.Scan(true)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range list {
				switch a := d.Addr.String(); {
				case a == pcitest.Igb82576:
					if d.Err == nil || !strings.Contains(d.Err.Error(), tt.want) || !errors.Is(d.Err, pci.ErrMalformed) {
						t.Errorf("error = %v, want ErrMalformed naming %q", d.Err, tt.want)
					}
					if !strings.Contains(d.Err.Error(), a) {
						t.Errorf("error %v does not name the device", d.Err)
					}
				case a != pcitest.Garbage && d.Err != nil:
					t.Errorf("%s: %v", a, d.Err)
				}
			}
		})
	}
}

func TestScanUnreadableRoutes(t *testing.T) {
	tr := pcitest.Standard(t)
	tr.WriteFile("proc/net/route", "Iface\tDestination\nbroken\n")
	h := hostAt(t, tr.Root)
	d, err := h.Device(pci.MustParseAddr(pcitest.X540))
	if err != nil {
		t.Fatal(err)
	}
	if d.Err == nil || !strings.Contains(d.Err.Error(), "proc/net/route") {
		t.Errorf("error = %v, want one naming proc/net/route", d.Err)
	}
	d, _ = h.Device(pci.MustParseAddr(pcitest.Unbound))
	if d.Err != nil {
		t.Errorf("function without interfaces: %v", d.Err)
	}
}

func TestScanNoProc(t *testing.T) {
	tr := pcitest.Standard(t)
	tr.Remove("proc")
	h := hostAt(t, tr.Root)
	d, err := h.Device(pci.MustParseAddr(pcitest.X540))
	if err != nil || d.Err != nil || d.Active {
		t.Errorf("without proc: %+v, %v; want inactive, no error", d, err)
	}
}

func TestDeviceMissing(t *testing.T) {
	tr := pcitest.Standard(t)
	h := hostAt(t, tr.Root)
	_, err := h.Device(pci.MustParseAddr("0000:42:00.0"))
	if !errors.Is(err, pcihost.ErrNoDevice) || !strings.Contains(err.Error(), "0000:42:00.0") {
		t.Errorf("error = %v, want ErrNoDevice naming the address", err)
	}
}

func TestScanUnprivilegedConfig(t *testing.T) {
	tr := pcitest.Standard(t)
	cfg := pcitest.ConfigSpace(0x8086, 0x10c9, 0x020000, 1, 10)[:64]
	tr.WriteFile("sys/bus/pci/devices/"+pcitest.Igb82576+"/config", string(cfg))
	h := hostAt(t, tr.Root)
	d, _ := h.Device(pci.MustParseAddr(pcitest.Igb82576))
	if d.Err != nil || d.MSIXVectors != -1 {
		t.Errorf("64-byte config: msix %d err %v, want -1 and no error", d.MSIXVectors, d.Err)
	}
}

func TestDeviceInfoJSON(t *testing.T) {
	devs, _ := scanStandard(t, true, true)
	b, err := json.Marshal(devs[pcitest.Garbage])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"address", "vendor_id", "device_id", "vendor_name", "device_name", "class", "driver",
		"interfaces", "iommu_group", "iommu_group_members", "numa_node", "msix_vectors", "active", "error"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
	if m["address"] != pcitest.Garbage || m["device_id"] != "10fb" || m["class"] != "020000" || m["error"] == "" {
		t.Errorf("JSON values wrong: %s", b)
	}
	b, _ = json.Marshal(devs[pcitest.Port82599A])
	if !strings.Contains(string(b), `"iommu_group_members":["0000:00:01.0","0000:01:00.1"]`) ||
		!strings.Contains(string(b), `"error":""`) {
		t.Errorf("JSON: %s", b)
	}
}

func loopConfig() []byte {
	c := pcitest.ConfigSpace(0x8086, 0x10c9, 0x020000, 1, 0)
	c[0x41] = 0x40 // PM capability points to itself
	return c
}

func TestMain(m *testing.M) {
	// pcidb must never be steered by the environment in these tests.
	os.Unsetenv("PCIDB_PATH")
	os.Exit(m.Run())
}

// TestScanMissingLinks: a per-function sysfs entry that is missing, dangling or
// inconsistent where the kernel always has one is listed with an error naming the
// function and the entry; where its absence is normal (no IOMMU at all, vfio's no-IOMMU
// mode), it is not an error. The other functions scan clean either way.
func TestScanMissingLinks(t *testing.T) {
	dev := "sys/bus/pci/devices/" + pcitest.Igb82576
	real := "sys/devices/pci0000:03/" + pcitest.Igb82576
	tests := []struct {
		name  string
		setup func(tr *pcitest.Tree)
		want  string // "" for no error
	}{
		{"iommu_group missing, IOMMU on", func(tr *pcitest.Tree) { tr.Remove(dev + "/iommu_group") }, "no iommu_group link"},
		{"iommu_group dangling", func(tr *pcitest.Tree) { tr.Remove("sys/kernel/iommu_groups/3") }, "dangling"},
		{"iommu_group not a link", func(tr *pcitest.Tree) {
			tr.Remove(dev + "/iommu_group")
			tr.WriteFile(real+"/iommu_group", "3\n")
		}, "iommu_group"},
		{"group does not list the function", func(tr *pcitest.Tree) {
			tr.Remove("sys/kernel/iommu_groups/3/devices/" + pcitest.Igb82576)
		}, "do not list it"},
		{"group unreadable", func(tr *pcitest.Tree) {
			tr.Remove("sys/kernel/iommu_groups/3/devices")
			tr.WriteFile("sys/kernel/iommu_groups/3/devices", "")
		}, "IOMMU group 3"},
		{"config missing", func(tr *pcitest.Tree) { tr.Remove(real + "/config") }, "config"},
		{"vendor missing", func(tr *pcitest.Tree) { tr.Remove(real + "/vendor") }, "vendor"},
		{"iommu_group missing, no IOMMU", func(tr *pcitest.Tree) { tr.DropIOMMU() }, ""},
		{"iommu_group missing, vfio no-IOMMU mode", func(tr *pcitest.Tree) {
			tr.Remove(dev + "/iommu_group")
			tr.WriteFile("sys/module/vfio/parameters/enable_unsafe_noiommu_mode", "Y\n")
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := pcitest.Standard(t)
			tt.setup(tr)
			h := hostAt(t, tr.Root)
			list, err := h.Scan(false)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, d := range list {
				switch a := d.Addr.String(); {
				case a == pcitest.Igb82576:
					found = true
					if tt.want == "" {
						if d.Err != nil {
							t.Errorf("error %v, want none", d.Err)
						}
						break
					}
					if d.Err == nil || !strings.Contains(d.Err.Error(), tt.want) || !strings.Contains(d.Err.Error(), a) {
						t.Errorf("error = %v, want one naming %s and %q", d.Err, a, tt.want)
					}
				case a != pcitest.Garbage && d.Err != nil:
					t.Errorf("%s: %v", a, d.Err)
				}
			}
			if !found {
				t.Errorf("%s not listed", pcitest.Igb82576)
			}
		})
	}
}
