package guest

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// unprivToolWait bounds how long TestGuestToolUnprivileged keeps the daemon running
// for the host's probes before it stops it itself.
const unprivToolWait = 10 * time.Minute

// TestGuestToolUnprivileged is a tool for the guest scripts, not a test: with
// UIOD_UNPRIV_CONFIG (a daemon configuration whose ports UIOD_UNPRIV_PCI, space-separated,
// are bound to vfio-pci), UIOD_UNPRIV_STATUS (its /status URL) and UIOD_UNPRIV_LOG (the
// file for its output) set, it runs `uiod run` on the configuration as unprivUID with
// CapEff 0, owning only the ports' VFIO group nodes and its state directory, with
// RLIMIT_MEMLOCK half of what `uiod config validate` prints (which must fail), then that
// (or twice that, as TestGuestUnprivileged); a refused run's line naming RLIMIT_MEMLOCK it
// prints as "E2E unpriv refused memlock=N: LINE". Once every port's link is up it prints
// "E2E unpriv up ..." and keeps the daemon running until it gets SIGTERM, which it passes
// on; it fails when the daemon's exit status is not 0. It skips without the variables.
func TestGuestToolUnprivileged(t *testing.T) {
	cfg, url, logPath := os.Getenv("UIOD_UNPRIV_CONFIG"), os.Getenv("UIOD_UNPRIV_STATUS"), os.Getenv("UIOD_UNPRIV_LOG")
	addrs := strings.Fields(os.Getenv("UIOD_UNPRIV_PCI"))
	if cfg == "" || url == "" || logPath == "" || len(addrs) == 0 {
		t.Skip("UIOD_UNPRIV_CONFIG, UIOD_UNPRIV_PCI, UIOD_UNPRIV_STATUS and UIOD_UNPRIV_LOG not set: a tool of the igbvf guest script")
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)
	state := unprivOwn(t, unprivDir(t), addrs...)
	need := memlockNeed(t, cfg)
	for i, limit := range []uint64{need / 2, need, 2 * need} {
		if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: limit, Max: limit}); err != nil {
			t.Fatal(err)
		}
		log, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		defer log.Close()
		cmd, exited := startUnprivileged(t, cfg, state, log)
		ready := make(chan bool, 1)
		go waitPortsQuiet(url, len(addrs), func(p statusPort) bool { return p.LinkUp }, ready)
		select {
		case err := <-exited:
			out, _ := os.ReadFile(logPath)
			t.Logf("with RLIMIT_MEMLOCK %d: uiod run exited (%v):\n%s", limit, err, out)
			for _, l := range strings.Split(string(out), "\n") {
				if strings.Contains(l, "RLIMIT_MEMLOCK") {
					fmt.Printf("E2E unpriv refused memlock=%d: %s\n", limit, strings.TrimSpace(l))
					break
				}
			}
			continue
		case ok := <-ready:
			if !ok {
				cmd.Process.Kill()
				<-exited
				t.Fatalf("uiod run as uid %d: not %d links up in /status", unprivUID, len(addrs))
			}
		}
		if i == 0 {
			cmd.Process.Kill()
			<-exited
			t.Fatalf("uiod run started with RLIMIT_MEMLOCK %d, half what config validate printed: the check proves nothing", limit)
		}
		fmt.Printf("E2E unpriv up uid=%d pid=%d memlock=%d need=%d\n", unprivUID, cmd.Process.Pid, limit, need)
		select {
		case <-term:
		case <-time.After(unprivToolWait):
			t.Errorf("no SIGTERM in %v: stopping the daemon", unprivToolWait)
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			fmt.Printf("E2E unpriv exit=%v\n", err)
			if err != nil {
				t.Errorf("uiod run: %v", err)
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("uiod run did not exit within 30 s of SIGTERM")
		}
		return
	}
	t.Error("uiod run failed as an unprivileged user with RLIMIT_MEMLOCK up to twice what config validate printed")
}
