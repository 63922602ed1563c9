package daemon

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

// TestLockStateDirContained: state_dir never resolves outside the root.
func TestLockStateDirContained(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Base(t.TempDir())
	for _, dir := range []string{"/../../" + outside + "/uiod", "../" + outside} {
		l, err := lockStateDir(root, dir)
		if err == nil {
			l.release()
		}
		testutil.ErrorIs(t, err, pcihost.ErrOutsideRoot, "state_dir")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(root), outside, "uiod")); !os.IsNotExist(err) {
		t.Errorf("a state directory was created outside the root: %v", err)
	}
}

// TestPIDFileNeverFollowedOrTruncated: a pid file that is a symlink is refused, one that
// is a hard link to another file is replaced, not truncated: the other file keeps its
// content.
func TestPIDFileNeverFollowedOrTruncated(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "run/uiod")
	os.MkdirAll(dir, 0o755)
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious\n"), 0o644)

	os.Symlink(victim, filepath.Join(dir, pidFileName))
	if l, err := lockStateDir(root, "/run/uiod"); err == nil {
		l.release()
		t.Error("lock through a symlinked pid file succeeded")
	}
	os.Remove(filepath.Join(dir, pidFileName))

	hard := filepath.Join(root, "victim")
	os.WriteFile(hard, []byte("precious\n"), 0o644)
	if err := os.Link(hard, filepath.Join(dir, pidFileName)); err != nil {
		t.Fatal(err)
	}
	l, err := lockStateDir(root, "/run/uiod")
	if err != nil {
		t.Fatal(err)
	}
	defer l.release()
	for _, f := range []string{victim, hard} {
		if b, _ := os.ReadFile(f); string(b) != "precious\n" {
			t.Errorf("%s now holds %q", f, b)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, pidFileName)); string(b) != strconv.Itoa(os.Getpid())+"\n" {
		t.Errorf("pid file holds %q", b)
	}
}

// TestStalePIDFile: a pid file whose lock nobody holds is stale (its daemon died); one
// whose lock is held belongs to a running daemon.
func TestStalePIDFile(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "run/uiod")
	os.MkdirAll(dir, 0o755)
	pidFile := filepath.Join(dir, pidFileName)

	l, err := lockStateDir(root, "/run/uiod")
	if err != nil {
		t.Fatal(err)
	}
	if l.stale {
		t.Error("fresh state_dir reported stale")
	}
	if pid, running, err := RunningPID(root, "/run/uiod"); err != nil || !running || pid != os.Getpid() {
		t.Errorf("RunningPID while locked = %d, %v, %v", pid, running, err)
	}
	if _, err := lockStateDir(root, "/run/uiod"); err == nil || !strings.Contains(err.Error(), "another uiod run (pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("second lock: %v", err)
	}
	if err := l.release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Error("release left the pid file")
	}

	// A daemon killed with SIGKILL leaves its pid file behind, unlocked.
	os.WriteFile(pidFile, []byte("999999\n"), 0o644)
	if _, running, err := RunningPID(root, "/run/uiod"); err != nil || running {
		t.Errorf("RunningPID with a stale file = %v, %v", running, err)
	}
	l, err = lockStateDir(root, "/run/uiod")
	if err != nil {
		t.Fatal(err)
	}
	defer l.release()
	if !l.stale || l.stalePID != 999999 {
		t.Errorf("stale %v pid %d, want stale 999999", l.stale, l.stalePID)
	}
}

// TestRunningPIDHeldElsewhere: a lock held through another open file (another process)
// is running.
func TestRunningPIDHeldElsewhere(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "run/uiod"), 0o755)
	f, err := os.Create(filepath.Join(root, "run/uiod", pidFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("4321\n")
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if pid, running, err := RunningPID(root, "/run/uiod"); err != nil || !running || pid != 4321 {
		t.Errorf("RunningPID = %d, %v, %v", pid, running, err)
	}
	_, err = lockStateDir(root, "/run/uiod")
	testutil.ErrorContains(t, err, "another uiod run (pid 4321)")
}

// TestQuiesceStale: after a stale pid file, every PCI port's function gets bus
// mastering off and a reset before the daemon programs it; after a clean shutdown,
// nothing is touched.
func TestQuiesceStale(t *testing.T) {
	tr := pcitest.Standard(t)
	tr.AddFunction(pcitest.Function{Addr: "0000:09:00.0", Vendor: 0x8086, Device: 0x10c9, Class: 0x020000, Driver: pcihost.DriverUIO, IOMMUGroup: 9})
	tr.AddReset("0000:09:00.0")
	ports := []config.Port{
		{Name: "sim0", Driver: config.DriverSim},
		{Name: "uio0", Driver: config.DriverUIO, PCI: "0000:09:00.0"},
		{Name: "vfio0", Driver: config.DriverVFIO, PCI: pcitest.I350},
	}
	if err := quiesceStale(&pidLock{}, tr.Root, ports, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	if tr.Command("0000:09:00.0")&pci.CmdBusMaster == 0 {
		t.Fatal("quiesced without a stale pid file")
	}
	if err := quiesceStale(&pidLock{stale: true, stalePID: 7}, tr.Root, ports, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"0000:09:00.0", pcitest.I350} {
		if cmd := tr.Command(a); cmd&pci.CmdBusMaster != 0 || cmd != 0x0402 {
			t.Errorf("%s: command %#04x, want 0x0402 (bus master off, nothing else changed)", a, cmd)
		}
	}
	if got := tr.ReadFile("sys/bus/pci/devices/0000:09:00.0/reset"); got != "1" {
		t.Errorf("reset holds %q, want 1", got)
	}
	// A port on a host driver is refused, not quiesced.
	err := quiesceStale(&pidLock{stale: true}, tr.Root, []config.Port{{Name: "x", Driver: config.DriverUIO, PCI: pcitest.X540}}, zap.NewNop())
	testutil.ErrorIs(t, err, pcihost.ErrRefused, "ixgbe")
}

// TestStartQuiescesBeforeProgramming: Start after a daemon died quiesces every PCI port
// before it opens (programs) any; after a clean stop it leaves them alone. The fixture
// function cannot really be opened, so Start fails at the port — after the quiesce.
func TestStartQuiescesBeforeProgramming(t *testing.T) {
	const addr = "0000:09:00.0"
	for _, stale := range []bool{false, true} {
		tr := pcitest.New(t)
		tr.AddFunction(pcitest.Function{Addr: addr, Vendor: 0x8086, Device: 0x10c9, Class: 0x020000, Driver: pcihost.DriverUIO, IOMMUGroup: 9})
		tr.AddReset(addr)
		cfg := simConfig(t, "dq"+strconv.FormatBool(stale), "adaptive", "")
		cfg.StateDir = "/run/uiod"
		cfg.Ports = append(cfg.Ports, config.Port{Name: "u0", Driver: config.DriverUIO, PCI: addr, NIC: "igb"})
		if stale {
			tr.WriteFile("run/uiod/"+pidFileName, "999999\n")
		}
		d := New(cfg, Options{Root: tr.Root})
		if err := d.Start(); err == nil {
			d.Stop()
			t.Fatal("Start opened a fixture function")
		}
		cmd, reset := tr.Command(addr), tr.ReadFile("sys/bus/pci/devices/"+addr+"/reset")
		if stale && (cmd&pci.CmdBusMaster != 0 || reset != "1") {
			t.Errorf("after a stale pid file: command %#04x, reset %q; want bus master off and a reset", cmd, reset)
		}
		if !stale && (cmd&pci.CmdBusMaster == 0 || reset != "") {
			t.Errorf("after a clean stop: command %#04x, reset %q; want it untouched", cmd, reset)
		}
	}
}

// TestStartRefusesForeignStateDir: a daemon handed a configuration whose state_dir holds
// files that are not uiod's (validated or not) refuses to start, naming the directory and
// the file, and neither writes its pid file there nor touches what is there.
func TestStartRefusesForeignStateDir(t *testing.T) {
	for _, name := range []string{"passwd", ".bashrc", "uiod.pid.bak", "0000:01:00.0.json~"} {
		t.Run(name, func(t *testing.T) {
			cfg := simConfig(t, "dforeign", "busy", "")
			foreign := filepath.Join(cfg.StateDir, name)
			if err := os.WriteFile(foreign, []byte("keep\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			d := New(cfg, Options{})
			err := d.Start()
			if err == nil {
				d.Stop()
			}
			testutil.ErrorContains(t, err, "state_dir", cfg.StateDir, name, "not uiod's own")
			if b, err := os.ReadFile(foreign); err != nil || string(b) != "keep\n" {
				t.Errorf("%s after the refusal: %q, %v", foreign, b, err)
			}
			if _, err := os.Stat(filepath.Join(cfg.StateDir, pidFileName)); !os.IsNotExist(err) {
				t.Errorf("pid file written in a foreign state_dir (stat: %v)", err)
			}
		})
	}
}
