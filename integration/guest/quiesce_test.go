package guest

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/mmio"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

// igb receive registers read through BAR0 by the quiesce test.
const (
	igbRCTL   = 0x0100
	igbGPRC   = 0x4074 // good packets received, read to clear
	igbRDBAL0 = 0xC000 // RX queue 0 ring base, low
	igbRDH0   = 0xC010 // RX queue 0 head: the device advances it as it writes descriptors back
	rctlEN    = 1 << 1
)

// quiesceStatusURL is where the quiesce test's daemon serves /status.
const quiesceStatusURL = "http://127.0.0.1:9479/status"

// TestGuestQuiesceAfterKill proves that `uiod quiesce` stops a NIC a killed daemon left
// DMAing. It runs only in the boot of TestIntegrationQuiesce* (UIOD_GUEST_QUIESCE=1),
// whose host sends frames into NIC 2's wire the whole time. NIC 2 on uio_pci_generic runs
// under `uiod run` (reflect) until frames flow; then the daemon is killed with SIGKILL.
// The NIC keeps bus mastering on and keeps writing received frames into the dead
// process's (freed) buffers: its RX head moves and its counter counts. `uiod quiesce`
// then turns bus mastering off and resets it: the command register has bit 2 clear and,
// with frames still arriving, the RX head and counter stay still. Last, `uiod run` again
// finds the stale pid file, quiesces the port itself before programming it, and
// forwards frames again. The NIC is bound with `uiod bind --config` and given back with
// `uiod unbind --config --restore`.
//
// uio_pci_generic itself clears bus mastering when the dead process's /dev/uioN closes;
// the test then sets it again (what igb_uio, an older kernel, or a descriptor inherited
// by a surviving child leaves), and checks that the NIC resumes DMA before quiescing it.
func TestGuestQuiesceAfterKill(t *testing.T) {
	_, nic := guestNICs(t)
	if os.Getenv("UIOD_GUEST_QUIESCE") != "1" {
		t.Skip("needs the host traffic of TestIntegrationQuiesce* (UIOD_GUEST_QUIESCE=1)")
	}
	cfg := filepath.Join(t.TempDir(), "quiesce.yaml")
	yaml := `metrics:
  listen: 127.0.0.1:9479
ports:
` + igbPortYAML("p0", pcihost.DriverUIO, nic) + `forward:
  mode: reflect
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	from := driverOf(t, nic)
	t.Logf("uiod bind --config:\n%s", mustUIOD(t, "bind", "--config", cfg))
	if d := driverOf(t, nic); d != pcihost.DriverUIO {
		t.Fatalf("after uiod bind --config %s is on %q, want uio_pci_generic", nic, d)
	}

	run, log := startRun(t, cfg)
	waitForwarding(t, run, log)
	if err := run.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	run.Wait()
	t.Logf("uiod run (pid %d) killed with SIGKILL", run.Process.Pid)

	cmd := commandRegister(t, nic)
	if cmd&pci.CmdBusMaster == 0 {
		// uio_pci_generic clears bus mastering when the last descriptor of /dev/uioN
		// closes (its release(), drivers/uio/uio_pci_generic.c). Drivers without that hook (igb_uio), older
		// kernels, or a descriptor a surviving child inherited leave it on: put it back,
		// as they would have left it, with the rings still programmed.
		t.Logf("command %#04x after SIGKILL: uio_pci_generic's release turned bus mastering off; turning it back on as igb_uio would leave it", cmd)
		setCommandRegister(t, nic, cmd|pci.CmdBusMaster)
		cmd = commandRegister(t, nic)
	}
	bar0 := mapBAR0(t, nic)
	head, rctl := bar0.Read32(igbRDH0), bar0.Read32(igbRCTL)
	bar0.Read32(igbGPRC) // clear
	var got uint32
	dma := testutil.WaitFor(30*time.Second, func() bool {
		got += bar0.Read32(igbGPRC)
		return bar0.Read32(igbRDH0) != head && got > 0
	})
	t.Logf("after SIGKILL: command %#04x, RCTL %#x, RX head %d -> %d, %d frames received into the dead process's buffers",
		cmd, rctl, head, bar0.Read32(igbRDH0), got)
	if !dma {
		t.Fatal("the NIC did not DMA after the daemon died: the check below would prove nothing")
	}

	out := mustUIOD(t, "quiesce", nic)
	t.Logf("uiod quiesce %s:\n%s", nic, out)
	cmd = commandRegister(t, nic)
	if cmd&pci.CmdBusMaster != 0 {
		t.Errorf("command %#04x after uiod quiesce: bus mastering still on", cmd)
	}
	head = bar0.Read32(igbRDH0)
	bar0.Read32(igbGPRC)
	// Frames keep arriving from the host; none may reach memory.
	time.Sleep(3 * time.Second)
	after, count := bar0.Read32(igbRDH0), bar0.Read32(igbGPRC)
	t.Logf("after quiesce: command %#04x, RCTL %#x, RDBAL %#x, RX head %d -> %d, %d frames received in 3s",
		cmd, bar0.Read32(igbRCTL), bar0.Read32(igbRDBAL0), head, after, count)
	if after != head || count != 0 {
		t.Errorf("after uiod quiesce the NIC still receives: RX head %d -> %d, %d frames counted", head, after, count)
	}

	// A second daemon finds the stale pid file and quiesces the port before it programs it.
	run, log = startRun(t, cfg)
	waitForwarding(t, run, log)
	testutil.TextContains(t, "second uiod run's log", log.String(), "stale pid file", "quiesced")
	run.Process.Signal(syscall.SIGTERM)
	if err := run.Wait(); err != nil {
		t.Errorf("second uiod run after SIGTERM: %v\n%s", err, log)
	}

	// The configuration's ports go back to the driver they had.
	t.Logf("uiod unbind --config --restore:\n%s", mustUIOD(t, "unbind", "--config", cfg, "--restore"))
	if d := driverOf(t, nic); d != from {
		t.Errorf("after uiod unbind --config --restore %s is on %q, want %q", nic, d, from)
	}
}

// startRun starts `uiod run --config cfg`, its output collected in the returned buffer.
func startRun(t *testing.T, cfg string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	log := &syncBuffer{}
	cmd := exec.Command(uiodBinary(t), "run", "--config", cfg)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, log
}

// waitForwarding waits until the daemon's port has received frames from the host.
func waitForwarding(t *testing.T, run *exec.Cmd, log *syncBuffer) {
	t.Helper()
	waitPorts(t, run, log, quiesceStatusURL, 1, func(p statusPort) bool { return p.LinkUp && p.Stats.RxPackets > 0 })
}

// commandRegister reads a function's command register from sysfs.
func commandRegister(t *testing.T, addr string) uint16 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/sys/bus/pci/devices", addr, "config"))
	if err != nil || len(b) < 6 {
		t.Fatalf("read config of %s: %v", addr, err)
	}
	return binary.LittleEndian.Uint16(b[4:])
}

// setCommandRegister writes a function's command register through sysfs.
func setCommandRegister(t *testing.T, addr string, v uint16) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join("/sys/bus/pci/devices", addr, "config"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [2]byte
	binary.LittleEndian.PutUint16(b[:], v)
	if _, err := f.WriteAt(b[:], pci.CfgCommand); err != nil {
		t.Fatal(err)
	}
}

// mapBAR0 maps a function's BAR0 through its sysfs resource0 file.
func mapBAR0(t *testing.T, addr string) *mmio.Region {
	t.Helper()
	h, err := pcihost.New("/")
	if err != nil {
		t.Fatal(err)
	}
	f, err := h.OpenDeviceFile(pci.MustParseAddr(addr), "resource0", os.O_RDWR|syscall.O_SYNC)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	r, err := mmio.Map(int(f.Fd()), 0, int(fi.Size()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Unmap() })
	return r
}

// syncBuffer is a bytes.Buffer safe for a child's output and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
