package guest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/pci/pcihost"
)

// guestNICs returns the addresses of the guest's igb NICs; it skips t outside the guest and
// fails it when the guest has fewer than two.
func guestNICs(t *testing.T) (vfioNIC, uioNIC string) {
	t.Helper()
	nics := guestNICsFor(t, "", "", 2, "two igb NICs")
	return nics[0], nics[1]
}

// guestNICsFor skips t unless it runs in a QEMU guest (UIOD_GUEST=1) booted for it (env
// set to 1 by the host test's script, run through go test ./integration/ with the flags
// run), and returns the guest's NICs (UIOD_GUEST_NICS), of which it needs at least n:
// what, for the messages.
func guestNICsFor(t *testing.T, env, run string, n int, what string) []string {
	t.Helper()
	if os.Getenv("UIOD_GUEST") != "1" || env != "" && os.Getenv(env) != "1" {
		t.Skipf("not in a QEMU guest with %s: run through go test ./integration/%s", what, run)
	}
	nics := strings.Fields(os.Getenv("UIOD_GUEST_NICS"))
	if len(nics) < n {
		t.Fatalf("UIOD_GUEST_NICS=%q: want %s", os.Getenv("UIOD_GUEST_NICS"), what)
	}
	return nics
}

// noIOMMU reports whether the guest runs vfio in unsafe no-IOMMU mode.
func noIOMMU() bool { return os.Getenv("UIOD_GUEST_NOIOMMU") == "1" }

// uiod runs the uiod binary with args and returns its combined output and exit status.
func uiod(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	code := runUIOD(t, &out, &out, args...)
	return out.String(), code
}

// uiodBinary is the uiod binary on PATH, the one the guest tests run.
func uiodBinary(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("uiod")
	if err != nil {
		t.Fatalf("uiod binary: %v", err)
	}
	return bin
}

// runUIOD runs the uiod binary with args, its stdout and stderr going to the writers, and
// returns its exit status.
func runUIOD(t *testing.T, stdout, stderr *bytes.Buffer, args ...string) int {
	t.Helper()
	cmd := exec.Command(uiodBinary(t), args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	default:
		t.Fatalf("run uiod %s: %v", strings.Join(args, " "), err)
		return -1
	}
}

// mustUIOD runs uiod and fails t unless it exits 0.
func mustUIOD(t *testing.T, args ...string) string {
	t.Helper()
	out, code := uiod(t, args...)
	if code != 0 {
		t.Fatalf("uiod %s: exit status %d:\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// driverOf returns the name of the driver a function is bound to ("" for none), from sysfs.
func driverOf(t *testing.T, addr string) string {
	t.Helper()
	l, err := os.Readlink(filepath.Join("/sys/bus/pci/devices", addr, "driver"))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Base(l)
}

// igbPortYAML is a one-line port list entry: the igb NIC at addr, promiscuous, as port
// name on driver with the interrupts that driver gives (uio_pci_generic: INTx, vfio-pci:
// MSI-X).
func igbPortYAML(name, driver, addr string) string {
	irqs := "msix"
	if driver == pcihost.DriverUIO {
		irqs = "intx"
	}
	return fmt.Sprintf("  - {name: %s, driver: %s, pci: %q, nic: igb, interrupts: %s, promiscuous: true}\n", name, driver, addr, irqs)
}

// overrideOf returns a function's driver_override ("" for none).
func overrideOf(t *testing.T, addr string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/sys/bus/pci/devices", addr, "driver_override"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSpace(string(b))
	if s == "(null)" {
		return ""
	}
	return s
}

// devicesJSON runs `uiod devices --json` and returns each function's driver by address.
func devicesJSON(t *testing.T) map[string]string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := runUIOD(t, &stdout, &stderr, "devices", "--json"); code != 0 {
		t.Fatalf("uiod devices --json: exit status %d:\n%s%s", code, stdout.Bytes(), stderr.Bytes())
	}
	var devs []struct {
		Address string `json:"address"`
		Driver  string `json:"driver"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &devs); err != nil {
		t.Fatalf("uiod devices --json: %v:\n%s", err, stdout.Bytes())
	}
	m := make(map[string]string, len(devs))
	for _, d := range devs {
		m[d.Address] = d.Driver
	}
	return m
}

// TestIgbPortYAML reads a configuration made of igbPortYAML entries as the daemon does:
// each port on its driver with that driver's interrupts, promiscuous.
func TestIgbPortYAML(t *testing.T) {
	doc := "ports:\n" + igbPortYAML("p0", pcihost.DriverVFIO, "0000:01:00.0") + igbPortYAML("p1", pcihost.DriverUIO, "0000:02:00.0") +
		"forward:\n  mode: l2fwd\n  pairs:\n    - [p0, p1]\n"
	c, err := config.Read(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	want := []struct{ name, driver, addr, irqs string }{
		{"p0", pcihost.DriverVFIO, "0000:01:00.0", "msix"},
		{"p1", pcihost.DriverUIO, "0000:02:00.0", "intx"},
	}
	if len(c.Ports) != len(want) {
		t.Fatalf("%d ports, want %d", len(c.Ports), len(want))
	}
	for i, w := range want {
		p := c.Ports[i]
		if p.Name != w.name || p.Driver != w.driver || p.PCI != w.addr || p.Interrupts != w.irqs || p.NIC != "igb" || !p.Promiscuous {
			t.Errorf("port %d: %+v, want %+v on nic igb, promiscuous", i, p, w)
		}
	}
}
