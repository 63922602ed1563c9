package guest

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci/pcihost"
)

// removalStatusURL is where the removal test's daemon serves /status.
const removalStatusURL = "http://127.0.0.1:9480/status"

// removalPort is one port of /status as the removal test reads it.
type removalPort struct {
	Name     string `json:"name"`
	Absent   bool   `json:"absent"`
	Removals uint64 `json:"removals"`
	Reopens  uint64 `json:"reopens"`
	Stats    struct {
		RxPackets uint64 `json:"rx_packets"`
		TxPackets uint64 `json:"tx_packets"`
	} `json:"stats"`
}

// removalStatus reads the daemon's ports, nil if it does not answer.
func removalStatus() []removalPort {
	ports, err := statusPorts[removalPort](removalStatusURL)
	if err != nil {
		return nil
	}
	return ports
}

// bindReflectPair writes dir/pair.yaml, two vfio-pci igb ports a and b reflecting under
// adaptive with /status at removalStatusURL, binds them with uiod bind --config and
// returns the file's path.
func bindReflectPair(t *testing.T, dir, a, b string) string {
	t.Helper()
	cfg := filepath.Join(dir, "pair.yaml")
	yaml := fmt.Sprintf(`metrics:
  listen: 127.0.0.1:9480
ports:
  - {name: p0, driver: vfio-pci, pci: "%s", nic: igb, promiscuous: true}
  - {name: p1, driver: vfio-pci, pci: "%s", nic: igb, promiscuous: true}
forward:
  mode: reflect
poll:
  mode: adaptive
`, a, b)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("uiod bind --config:\n%s", mustUIOD(t, "bind", "--config", cfg))
	return cfg
}

// TestGuestRemoval proves that the kernel's remove of a vfio-pci function uiod drives
// does not wait for uiod: both NICs on vfio-pci under `uiod run` (reflect), the host
// sending frames into both (TestIntegrationRemoval*, UIOD_GUEST_REMOVAL=1); then
// `echo 1 > /sys/bus/pci/devices/NIC/remove` on the first. The write returns (the daemon
// heard the device request and released the device), /status shows the port absent, and
// the second port goes on reflecting. `echo 1 > /sys/bus/pci/rescan` brings the function
// back on igb; `uiod bind` puts it on vfio-pci again, and the daemon re-opens the port by
// itself and reflects on it again.
func TestGuestRemoval(t *testing.T) {
	a, b := guestNICs(t)
	if os.Getenv("UIOD_GUEST_REMOVAL") != "1" {
		t.Skip("needs the host traffic of TestIntegrationRemoval* (UIOD_GUEST_REMOVAL=1)")
	}
	cfg := bindReflectPair(t, t.TempDir(), a, b)
	run, log := startRun(t, cfg)
	waitPorts(t, run, log, removalStatusURL, 2, func(p statusPort) bool { return p.LinkUp && p.Stats.TxPackets > 0 })

	before := removalStatus()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- os.WriteFile(filepath.Join("/sys/bus/pci/devices", a, "remove"), []byte("1"), 0) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("remove %s: %v", a, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("echo 1 > /sys/bus/pci/devices/%s/remove blocked for 30 s: the daemon did not release the device\n%s", a, log)
	}
	t.Logf("echo 1 > /sys/bus/pci/devices/%s/remove returned after %v", a, time.Since(start))

	var during []removalPort
	if !testutil.WaitFor(60*time.Second, func() bool {
		during = removalStatus()
		return len(during) == 2 && during[0].Absent && during[1].Stats.TxPackets > before[1].Stats.TxPackets+2 && during[1].Stats.RxPackets == during[1].Stats.TxPackets
	}) {
		t.Fatalf("after the remove: %+v (before %+v): want p0 absent and p1 reflecting every frame it receives\n%s", during, before, log)
	}
	t.Logf("p0 absent (removals %d); p1 reflected %d frames meanwhile", during[0].Removals, during[1].Stats.TxPackets-before[1].Stats.TxPackets)

	if err := os.WriteFile("/sys/bus/pci/rescan", []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	if !testutil.WaitFor(10*time.Second, func() bool { _, err := os.Stat(filepath.Join("/sys/bus/pci/devices", a)); return err == nil }) {
		t.Fatalf("%s not back after rescan", a)
	}
	t.Logf("after rescan %s is on %q; uiod bind:\n%s", a, driverOf(t, a), mustUIOD(t, "bind", "--driver", pcihost.DriverVFIO, a))
	var after []removalPort
	if !testutil.WaitFor(60*time.Second, func() bool {
		after = removalStatus()
		return len(after) == 2 && !after[0].Absent && after[0].Reopens == 1 && after[0].Stats.TxPackets > during[0].Stats.TxPackets+2
	}) {
		t.Fatalf("after the re-bind: %+v: want p0 back and reflecting\n%s", after, log)
	}
	t.Logf("p0 re-opened and reflecting: %+v", after[0])

	if err := run.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := run.Wait(); err != nil {
		t.Errorf("uiod run: %v\n%s", err, log)
	}
	t.Logf("uiod unbind --config --restore:\n%s", mustUIOD(t, "unbind", "--config", cfg, "--restore"))
}
