package guest

import (
	"os"
	"path/filepath"
	"testing"
)

// originalDriver is the kernel driver the NICs start on in the guest.
const originalDriver = "igb"

// TestGuestBind binds NIC 1 to vfio-pci and NIC 2 to uio_pci_generic through the real sysfs
// with `uiod bind`, after checking that a bind that cannot work changes nothing. It leaves
// the NICs bound for the device tests that follow (see the package comment).
func TestGuestBind(t *testing.T) {
	vfioNIC, uioNIC := guestNICs(t)
	for _, a := range []string{vfioNIC, uioNIC} {
		if d := driverOf(t, a); d != originalDriver {
			t.Fatalf("%s starts on driver %q, want %s", a, d, originalDriver)
		}
	}

	// The command must be there, or the failures below would prove nothing.
	mustUIOD(t, "bind", "--help")

	// Rollback: each of these must fail, and leave the NIC on igb without an override.
	for _, tc := range []struct {
		name, driver string
	}{
		// No such module: the bind fails before writing anything.
		{"unknown driver", "no-such-driver"},
		// A loaded driver that refuses the device: the override and the unbind are
		// written, the probe fails, and uiod must put igb back.
		{"refusing driver", "pcieport"},
	} {
		t.Run("rollback "+tc.name, func(t *testing.T) {
			out, code := uiod(t, "bind", "--driver", tc.driver, vfioNIC)
			t.Logf("uiod bind --driver %s %s: exit status %d:\n%s", tc.driver, vfioNIC, code, out)
			if code == 0 {
				t.Errorf("bind to %s succeeded, want an error", tc.driver)
			}
			if d := driverOf(t, vfioNIC); d != originalDriver {
				t.Errorf("after the failed bind %s is on driver %q, want %s", vfioNIC, d, originalDriver)
			}
			if o := overrideOf(t, vfioNIC); o != "" {
				t.Errorf("after the failed bind %s has driver_override %q, want none", vfioNIC, o)
			}
		})
	}

	t.Run("vfio-pci", func(t *testing.T) {
		args := []string{"bind", "--driver", "vfio-pci"}
		if noIOMMU() {
			args = append(args, "--noiommu-mode")
		}
		t.Log(mustUIOD(t, append(args, vfioNIC)...))
		if d := driverOf(t, vfioNIC); d != "vfio-pci" {
			t.Fatalf("%s is on driver %q, want vfio-pci", vfioNIC, d)
		}
		grp, err := os.Readlink(filepath.Join("/sys/bus/pci/devices", vfioNIC, "iommu_group"))
		if err != nil {
			t.Fatalf("%s has no IOMMU group after binding vfio-pci: %v", vfioNIC, err)
		}
		node := filepath.Join("/dev/vfio", filepath.Base(grp))
		if noIOMMU() {
			node = filepath.Join("/dev/vfio", "noiommu-"+filepath.Base(grp))
		}
		if _, err := os.Stat(node); err != nil {
			t.Errorf("group device of %s: %v", vfioNIC, err)
		}
	})

	t.Run("uio_pci_generic", func(t *testing.T) {
		t.Log(mustUIOD(t, "bind", "--driver", "uio_pci_generic", uioNIC))
		if d := driverOf(t, uioNIC); d != "uio_pci_generic" {
			t.Fatalf("%s is on driver %q, want uio_pci_generic", uioNIC, d)
		}
		uios, _ := filepath.Glob(filepath.Join("/sys/bus/pci/devices", uioNIC, "uio", "uio*"))
		if len(uios) != 1 {
			t.Fatalf("%s has uio devices %q, want one", uioNIC, uios)
		}
		if _, err := os.Stat(filepath.Join("/dev", filepath.Base(uios[0]))); err != nil {
			t.Errorf("uio device of %s: %v", uioNIC, err)
		}
	})

	t.Run("devices --json", func(t *testing.T) {
		drivers := devicesJSON(t)
		for a, want := range map[string]string{vfioNIC: "vfio-pci", uioNIC: "uio_pci_generic"} {
			got, ok := drivers[a]
			if !ok {
				t.Errorf("uiod devices --json lists no %s", a)
			} else if got != want {
				t.Errorf("uiod devices --json: %s has driver %q, want %s", a, got, want)
			}
		}
	})
}
