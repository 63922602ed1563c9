package guest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

// unitFile is where the host test puts contrib/uiod.service in the guest (where the
// Debian package installs it).
const unitFile = "/lib/systemd/system/uiod.service"

// unitStatusURL is where the unit test's daemon serves /status.
const unitStatusURL = "http://127.0.0.1:9477/status"

// TestGuestUnitBindRunRestore runs the systemd unit's start and stop path by hand, as
// systemd would: the runtime directory, every ExecStartPre= line, ExecStart= in the
// background until the daemon forwards the frames the host sends into both NICs, the
// unit's KillSignal=, then every ExecStopPost= line. The command lines are read from the
// unit file, so the test follows the unit. The configuration the unit names binds NIC 1
// to vfio-pci and NIC 2 to uio_pci_generic (l2fwd between them). After the quiesce line
// both functions have bus mastering off; after the last line both are back on the driver
// they had (igb). It runs only in the boot of TestIntegrationUnit* (UIOD_GUEST_UNIT=1).
func TestGuestUnitBindRunRestore(t *testing.T) {
	nic1, nic2 := guestNICs(t)
	if os.Getenv("UIOD_GUEST_UNIT") != "1" {
		t.Skip("needs the host traffic of TestIntegrationUnit* (UIOD_GUEST_UNIT=1)")
	}
	f, err := os.Open(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	u, err := parseUnit(f)
	f.Close()
	if err != nil {
		t.Fatalf("%s: %v", unitFile, err)
	}
	if len(u.Start) != 1 {
		t.Fatalf("%s: %d ExecStart= lines, want 1", unitFile, len(u.Start))
	}
	cfgPath := u.Start[0].configArg()
	if cfgPath == "" {
		t.Fatalf("%s: ExecStart=%s names no --config", unitFile, u.Start[0].Raw)
	}
	installExecutables(t, u)
	yaml := fmt.Sprintf(`metrics:
  listen: %s
ports:
`, strings.TrimSuffix(strings.TrimPrefix(unitStatusURL, "http://"), "/status")) +
		igbPortYAML("p0", pcihost.DriverVFIO, nic1) + igbPortYAML("p1", pcihost.DriverUIO, nic2) + `forward:
  mode: l2fwd
  pairs:
    - [p0, p1]
`
	if err := os.MkdirAll(filepath.Dir(cfgPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	from := map[string]string{nic1: driverOf(t, nic1), nic2: driverOf(t, nic2)}
	t.Logf("before start: %s on %s, %s on %s", nic1, from[nic1], nic2, from[nic2])

	// systemd creates the runtime directories before the first ExecStartPre.
	mode := os.FileMode(0o755)
	if u.RuntimeDirectoryMode != "" {
		m, err := strconv.ParseUint(u.RuntimeDirectoryMode, 8, 32)
		if err != nil {
			t.Fatalf("RuntimeDirectoryMode=%s: %v", u.RuntimeDirectoryMode, err)
		}
		mode = os.FileMode(m)
	}
	for _, d := range u.RuntimeDirectory {
		p := filepath.Join("/run", d)
		if err := os.MkdirAll(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}

	for _, e := range u.StartPre {
		runExecLine(t, "ExecStartPre", e)
	}
	for nic, want := range map[string]string{nic1: pcihost.DriverVFIO, nic2: pcihost.DriverUIO} {
		if d := driverOf(t, nic); d != want {
			t.Fatalf("after ExecStartPre %s is on %q, want %s", nic, d, want)
		}
	}

	e := u.Start[0]
	log := &syncBuffer{}
	run := exec.Command(e.Args[0], e.Args[1:]...)
	run.Stdout, run.Stderr = log, log
	if err := run.Start(); err != nil {
		t.Fatalf("ExecStart=%s: %v", e.Raw, err)
	}
	t.Cleanup(func() {
		if run.ProcessState == nil {
			run.Process.Kill()
			run.Wait()
		}
	})
	waitForwardingBoth(t, run, log)

	sig := unitSignal(t, u.KillSignal)
	timeout := 90 * time.Second // systemd's DefaultTimeoutStopSec
	if u.TimeoutStopSec != "" {
		s, err := strconv.Atoi(u.TimeoutStopSec)
		if err != nil {
			t.Fatalf("TimeoutStopSec=%s: only whole seconds are implemented by the unit test", u.TimeoutStopSec)
		}
		timeout = time.Duration(s) * time.Second
	}
	if err := run.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- run.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("ExecStart=%s after %v: %v\n%s", e.Raw, sig, err, log)
		}
	case <-time.After(timeout):
		t.Fatalf("ExecStart=%s did not exit within TimeoutStopSec=%v of %v (systemd would SIGKILL it)\n%s", e.Raw, timeout, sig, log)
	}
	if !strings.Contains(log.String(), "stopped cleanly") {
		t.Errorf("the daemon's log after %v lacks \"stopped cleanly\":\n%s", sig, log)
	}
	t.Logf("uiod run stopped by %v; command registers %#04x (%s), %#04x (%s)", sig,
		commandRegister(t, nic1), nic1, commandRegister(t, nic2), nic2)

	quiesced := false
	for _, e := range u.StopPost {
		runExecLine(t, "ExecStopPost", e)
		if e.subcommand() != "quiesce" {
			continue
		}
		quiesced = true
		for _, nic := range []string{nic1, nic2} {
			cmd := commandRegister(t, nic)
			t.Logf("after ExecStopPost=%s: %s on %s, command %#04x", e.Raw, nic, driverOf(t, nic), cmd)
			if cmd&pci.CmdBusMaster != 0 {
				t.Errorf("after ExecStopPost=%s %s has bus mastering on (command %#04x)", e.Raw, nic, cmd)
			}
		}
	}
	if !quiesced {
		t.Errorf("%s: no ExecStopPost= line runs uiod quiesce", unitFile)
	}
	for nic, want := range from {
		if d := driverOf(t, nic); d != want {
			t.Errorf("after ExecStopPost %s is on %q, want %q (its driver before ExecStartPre)", nic, d, want)
		} else {
			t.Logf("after ExecStopPost %s is back on %s", nic, d)
		}
	}
}

// installExecutables makes every executable the unit names (/usr/bin/uiod) the uiod
// binary on PATH, and refuses a unit that runs anything else.
func installExecutables(t *testing.T, u *unitService) {
	t.Helper()
	bin := uiodBinary(t)
	for _, list := range [][]execLine{u.StartPre, u.Start, u.StopPost} {
		for _, e := range list {
			if filepath.Base(e.Args[0]) != "uiod" {
				t.Fatalf("%s runs %s: the unit test only has uiod", unitFile, e.Args[0])
			}
			if _, err := os.Stat(e.Args[0]); err == nil {
				continue
			}
			if err := os.MkdirAll(filepath.Dir(e.Args[0]), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(bin, e.Args[0]); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// runExecLine runs one command line of the unit to completion; a failure fails the test
// unless the line has the "-" prefix.
func runExecLine(t *testing.T, key string, e execLine) {
	t.Helper()
	out, err := exec.Command(e.Args[0], e.Args[1:]...).CombinedOutput()
	t.Logf("%s=%s: %v\n%s", key, e.Raw, err, out)
	if err != nil && !e.IgnoreFailure {
		t.Fatalf("%s=%s failed: %v", key, e.Raw, err)
	}
}

// unitSignal maps a KillSignal= value onto the signal ("" is systemd's SIGTERM).
func unitSignal(t *testing.T, name string) syscall.Signal {
	t.Helper()
	sigs := map[string]syscall.Signal{"": syscall.SIGTERM, "SIGTERM": syscall.SIGTERM,
		"SIGINT": syscall.SIGINT, "SIGHUP": syscall.SIGHUP, "SIGQUIT": syscall.SIGQUIT}
	s, ok := sigs[name]
	if !ok {
		t.Fatalf("KillSignal=%s: not implemented by the unit test", name)
	}
	return s
}

// waitForwardingBoth waits until the daemon has received frames on both ports and
// forwarded them out of the other.
func waitForwardingBoth(t *testing.T, run *exec.Cmd, log *syncBuffer) {
	t.Helper()
	waitPorts(t, run, log, unitStatusURL, 2, func(p statusPort) bool {
		return p.LinkUp && p.Stats.RxPackets > 0 && p.Stats.TxPackets > 0
	})
}
