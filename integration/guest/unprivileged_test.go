package guest

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

// unprivUID is the user the unprivileged run runs as.
const unprivUID = 1000

// TestGuestUnprivileged runs `uiod run` on both NICs, already bound to vfio-pci, as a user
// other than root with an empty capability set (CapEff 0): the user owns only the VFIO
// group nodes and its state directory, and RLIMIT_MEMLOCK is what `uiod config validate`
// says the ports pin (or twice that, if the kernel refuses: the type1 IOMMU's pinning and
// uiod's mlock may both count), and half of it must not do. Both ports must reflect the
// host's frames.
func TestGuestUnprivileged(t *testing.T) {
	a, b := guestNICs(t)
	if os.Getenv("UIOD_GUEST_REMOVAL") != "1" {
		t.Skip("needs the host traffic of TestIntegrationRemoval* (UIOD_GUEST_REMOVAL=1)")
	}
	dir := unprivDir(t)
	cfg := bindReflectPair(t, dir, a, b)
	defer func() {
		t.Logf("uiod unbind --config --restore:\n%s", mustUIOD(t, "unbind", "--config", cfg, "--restore"))
	}()
	state := unprivOwn(t, dir, a, b)
	need := memlockNeed(t, cfg)

	var saved unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &saved); err != nil {
		t.Fatal(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_MEMLOCK, &saved)
	// Half the need first: it must fail, else the limit was not what stopped anything.
	for i, limit := range []uint64{need / 2, need, 2 * need} {
		if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: limit, Max: limit}); err != nil {
			t.Fatal(err)
		}
		ok := runUnprivileged(t, cfg, state, limit)
		switch {
		case i == 0 && ok:
			t.Errorf("uiod run started with RLIMIT_MEMLOCK %d, half what config validate printed: the check proves nothing", limit)
			return
		case ok:
			t.Logf("RLIMIT_MEMLOCK %d bytes (%.1f× what config validate printed) was enough; half of it was not", limit, float64(limit)/float64(need))
			return
		}
	}
	t.Error("uiod run failed as an unprivileged user with RLIMIT_MEMLOCK up to twice what config validate printed")
}

// runUnprivileged runs the daemon as unprivUID until both ports reflect, checks its
// capabilities and stops it; false when the daemon exited on its own (logged).
func runUnprivileged(t *testing.T, cfg, state string, limit uint64) bool {
	t.Helper()
	log := &syncBuffer{}
	cmd, exited := startUnprivileged(t, cfg, state, log)
	ready := make(chan bool, 1)
	go waitPortsQuiet(removalStatusURL, 2, func(p statusPort) bool { return p.LinkUp && p.Stats.TxPackets > 0 }, ready)
	select {
	case err := <-exited:
		t.Logf("with RLIMIT_MEMLOCK %d: uiod run exited (%v):\n%s", limit, err, log)
		return false
	case ok := <-ready:
		if !ok {
			t.Fatalf("uiod run as uid %d did not reflect on both ports:\n%s", unprivUID, log)
		}
	}
	t.Logf("uiod run as uid %d with RLIMIT_MEMLOCK %d reflects on both ports", unprivUID, limit)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Errorf("uiod run: %v\n%s", err, log)
	}
	return true
}

// unprivDir makes the directory for an unprivileged run's configuration and state, not
// under t.TempDir(), whose parent only root may enter; it is removed when t ends.
func unprivDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "uiod-unpriv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// unprivOwn gives unprivUID dir, a state directory in it (returned) and the VFIO group
// nodes of the PCI functions addrs, which go back to root when t ends.
func unprivOwn(t *testing.T, dir string, addrs ...string) string {
	t.Helper()
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, state} {
		if err := os.Chown(p, unprivUID, unprivUID); err != nil {
			t.Fatal(err)
		}
	}
	h, err := pcihost.New("/")
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range addrs {
		g, err := h.IOMMUGroup(pci.MustParseAddr(addr))
		if err != nil || g < 0 {
			t.Fatalf("%s: IOMMU group %d, %v", addr, g, err)
		}
		node := "/dev/vfio/" + strconv.Itoa(g)
		if err := os.Chown(node, unprivUID, unprivUID); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chown(node, 0, 0) })
	}
	return state
}

// memlockNeed is the LimitMEMLOCK= bytes `uiod config validate` prints for cfg.
func memlockNeed(t *testing.T, cfg string) uint64 {
	t.Helper()
	out := mustUIOD(t, "config", "validate", cfg)
	m := regexp.MustCompile(`LimitMEMLOCK=(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("config validate says no memlock need:\n%s", out)
	}
	need, _ := strconv.ParseUint(m[1], 10, 64)
	t.Logf("config validate: %s", strings.TrimSpace(out))
	return need
}

// startUnprivileged starts `uiod run --config cfg` as unprivUID, its state in state and its
// output to out, checks that its CapEff is 0 and returns it and the channel its Wait's
// result arrives on. It prints the Uid:, CapEff: and CapPrm: lines of its status as
// "E2E unpriv pid=PID LINE" (for the guest scripts) and logs them.
func startUnprivileged(t *testing.T, cfg, state string, out io.Writer) (*exec.Cmd, <-chan error) {
	t.Helper()
	cmd := exec.Command(uiodBinary(t), "run", "--config", cfg)
	cmd.Env = append(os.Environ(), "UIOD_STATE_DIR="+state, "HOME="+state)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: unprivUID, Gid: unprivUID, Groups: []uint32{}}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "Uid:") || strings.HasPrefix(l, "CapEff:") || strings.HasPrefix(l, "CapPrm:") {
			l = strings.Join(strings.Fields(l), " ")
			fmt.Printf("E2E unpriv pid=%d %s\n", cmd.Process.Pid, l)
			t.Logf("uiod run (pid %d): %s", cmd.Process.Pid, l)
			if strings.HasPrefix(l, "CapEff:") && l != "CapEff: 0000000000000000" {
				t.Errorf("uiod run has capabilities: %s", l)
			}
		}
	}
	return cmd, exited
}

// waitPortsQuiet is waitPorts for a goroutine: it sends whether, within 90 s, the
// /status at url listed n ports for which ready holds.
func waitPortsQuiet(url string, n int, ready func(statusPort) bool, done chan<- bool) {
	done <- testutil.WaitFor(90*time.Second, func() bool {
		ok, _ := portsReady(url, n, ready)
		return ok
	})
}
