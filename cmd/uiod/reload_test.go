package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
)

// TestRunReload: `kill -HUP` on `uiod run` re-reads the file: the new idle policy is
// applied, a ring change is logged as needing a restart (by its key) and the daemon goes
// on; a file that no longer validates is logged and ignored; SIGTERM still shuts down in
// order and exits 0. The startup log names the version.
func TestRunReload(t *testing.T) {
	bin := uiodBinary(t)
	cfg := filepath.Join(t.TempDir(), "uiod.yaml")
	base := runTestConfig + "state_dir: " + t.TempDir() + "\n"
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(strings.Replace(base, "mode: adaptive", "mode: busy", 1))
	d := startDaemon(t, bin, cfg)
	waitLog := func(want string) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, func() bool { return strings.Contains(d.log.String(), want) },
			"the daemon's log never said "+want+":\n"+d.log.String())
	}
	testutil.TextContains(t, "startup log", d.log.String(), "uiod starting", `"version": "`+version+`"`)

	write(strings.Replace(base, `{name: a, driver: sim, wire: "pair:a"}`, `{name: a, driver: sim, wire: "pair:a", rx_ring: 1024}`, 1))
	d.cmd.Process.Signal(syscall.SIGHUP)
	waitLog("reload done")
	testutil.TextContains(t, "log", d.log.String(), "idle policy changed", "policy\": \"adaptive",
		"configuration change needs a restart", `"key": "ports[0].rx_ring"`)

	write(base + "poll: {mode: nap}\n")
	d.cmd.Process.Signal(syscall.SIGHUP)
	waitLog("configuration refused, keeping the running one")
	testutil.TextContains(t, "log", d.log.String(), "poll.mode")

	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, d.log.String())
	}
	testutil.TextContains(t, "log", d.log.String(), "dataplane stopped", "stopped cleanly")
}
