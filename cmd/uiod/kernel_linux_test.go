package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

// TestRunKernelTapTaken: `uiod run` whose kernel.tap names an existing interface that is
// not a TAP exits 2 (configuration) with an error naming the interface, and leaves the
// host's interfaces as they were.
func TestRunKernelTapTaken(t *testing.T) {
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("no /dev/net/tun")
	}
	ns := testutil.Netns(t, "uiod-run-k")
	testutil.IPIn(t, ns, "link", "add", "uiodv0", "type", "veth", "peer", "name", "uiodv1")
	before := testutil.IPIn(t, ns, "-br", "link", "show")
	cfg := filepath.Join(t.TempDir(), "uiod.yaml")
	text := `
metrics: {listen: ""}
state_dir: ` + t.TempDir() + `
ports:
  - {name: a, driver: sim, wire: "pair:a", kernel: {tap: uiodka}}
  - {name: b, driver: sim, wire: "pair:b", kernel: {tap: uiodv0}}
`
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ip", "netns", "exec", ns, uiodBinary(t), "run", "--config", cfg).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
		t.Fatalf("uiod run: %v, want exit %d:\n%s", err, exitUsage, out)
	}
	if !strings.Contains(string(out), "port b: kernel: tap uiodv0: interface uiodv0 exists and is a veth, not a TAP") {
		t.Fatalf("error does not name the interface:\n%s", out)
	}
	if after := testutil.IPIn(t, ns, "-br", "link", "show"); after != before {
		t.Fatalf("interfaces after the refused start:\n%s\nbefore:\n%s", after, before)
	}
}
