package qemutest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
)

// fakeUIOD writes a shell script standing in for uiod: it prints its arguments, writes
// report to the --json file and exits with exit.
func fakeUIOD(t *testing.T, report string, exit int) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "uiod")
	script := "#!/bin/sh\necho \"args: $*\"\n" +
		"while [ $# -gt 0 ]; do [ \"$1\" = --json ] && printf '%s' '" + report + "' >\"$2\"; shift; done\n" +
		"echo oops >&2\nexit " + string(rune('0'+exit)) + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestLatency checks the command line Latency gives uiod and how it reads the report.
func TestLatency(t *testing.T) {
	tx := NIC{HostSocket: "/h0", GuestSocket: "/g0"}
	rx := NIC{HostSocket: "/h1", GuestSocket: "/g1"}
	bin := fakeUIOD(t, `{"sent": 5, "received": 4, "late": 1, "median_ns": 1200, "average_ns": 1300.5}`, 0)
	dir := t.TempDir()
	out, rep, err := Latency(bin, tx, rx, dir, "nic1-to-nic2", time.Minute, "--count", "5")
	if err != nil {
		t.Fatal(err)
	}
	wantArgs := "latency --tx unix:/h0,/g0 --rx unix:/h1,/g1 --count 5 --label nic1-to-nic2 --json " + filepath.Join(dir, "nic1-to-nic2.json")
	if !strings.Contains(out, "args: "+wantArgs) || !strings.HasPrefix(out, "uiod "+wantArgs+"\n") {
		t.Errorf("output %q, want the command line and uiod's output with arguments %q", out, wantArgs)
	}
	if rep.Sent != 5 || rep.Received != 4 || rep.Late != 1 || rep.MedianNs != 1200 || rep.AverageNs != 1300.5 {
		t.Errorf("report %+v", rep)
	}

	_, _, err = Latency(fakeUIOD(t, "{}", 1), tx, rx, t.TempDir(), "x", time.Minute)
	testutil.ErrorContains(t, err, "uiod latency", "exit status 1", "oops")
	_, _, err = Latency(fakeUIOD(t, "not json", 0), tx, rx, t.TempDir(), "x", time.Minute)
	testutil.ErrorContains(t, err, "uiod latency --json", "not json")
}
