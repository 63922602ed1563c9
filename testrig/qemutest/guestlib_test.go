package qemutest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// guestLibShells are the shells the library is tried in: the host's sh and, where it is
// installed, busybox's (the guest's).
func guestLibShells() [][]string {
	shells := [][]string{{"sh"}}
	if bb, err := Busybox(); err == nil {
		shells = append(shells, []string{bb, "sh"})
	}
	return shells
}

// runGuestLib runs script in shell sh with the guest shell library sourced and returns
// its output, without the job-control notes some shells print for a killed job
// ("Terminated"), and its exit status.
func runGuestLib(t *testing.T, sh []string, env []string, script string) (string, int) {
	t.Helper()
	lib := filepath.Join(t.TempDir(), "lib.sh")
	if err := os.WriteFile(lib, []byte(GuestLib), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh[0], append(sh[1:], "-c", "set -u\n. "+lib+"\n"+script)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	exit := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		exit = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.SplitAfter(string(out), "\n") {
		if strings.TrimSpace(l) != "Terminated" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, ""), exit
}

// TestGuestLib runs the guest shell library's functions that need no guest: what they
// print is what the host tests parse and what the daemon reads as its configuration.
func TestGuestLib(t *testing.T) {
	dir := t.TempDir()
	log, ready := filepath.Join(dir, "run.log"), filepath.Join(dir, "ready")
	if err := os.WriteFile(log, []byte("line 1\nline 2\nline 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		env    []string
		script string
		want   string
		exit   int
	}{
		{"say", nil, "say READY", "E2E READY\n", 0},
		{"say with TAG", []string{"TAG=BENCH"}, "say READY x", "BENCH READY x\n", 0},
		{"nic", []string{"UIOD_GUEST_NICS=0000:01:00.0 0000:02:00.0"}, "nic 2", "0000:02:00.0\n", 0},
		// uiod is a stand-in that prints its arguments, or fails for the function "bad".
		{"bind_vfio", nil, `uiod() { echo "uiod $*"; }; bind_vfio --noiommu a b`, "uiod bind --driver vfio-pci --noiommu a b\n", 0},
		{"bind_vfio fails", nil, `uiod() { return 1; }; bind_vfio bad; echo not reached`, "E2E FAIL uiod bind --driver vfio-pci bad\n", 1},
		{"timesync_nics", []string{"UIOD_GUEST_NICS=a b c d"}, `uiod() { echo "uiod $*"; }; timesync_nics; echo "$gtx $din $dout $grx"`,
			"uiod bind --driver vfio-pci a b c d\na b c d\n", 0},
		{"timesync_nics of three", []string{"UIOD_GUEST_NICS=a b c"}, `uiod() { echo "uiod $*"; }; timesync_nics`,
			"E2E FAIL want four igb in 'a b c'\n", 1},
		{"wait_line", []string{"RUNLOG=/nonexistent"}, `f=$(mktemp); (sleep 0.3; echo "Press enter" >>"$f") & sleep 5 & PID=$!
wait_line "$f" "^Press enter" testpmd 10; echo ready; kill $PID; rm -f "$f"`, "ready\n", 0},
		{"wait_line exited", []string{"RUNLOG=/nonexistent"}, `f=$(mktemp); echo started >"$f"; true & PID=$!; wait $PID
wait_line "$f" "^never" testpmd 10 2>/dev/null; echo not reached`, "E2E FAIL testpmd exited: started\n", 1},
		{"wait_exit", []string{"RUNLOG=/nonexistent"}, `(sleep 0.3; exit 7) & PID=$!; wait_exit child 10; echo "status $?"`, "status 7\n", 0},
		{"exited_within", nil, `sleep 0.2 & a=$!; sleep 60 & b=$!; exited_within $a 5 && echo a; exited_within $b 1 || echo b; kill $b`, "a\nb\n", 0},
		// A process gone (or reaped between two polls) is not running, and saying so
		// prints nothing: the host compares the guest's output.
		{"running of none", nil, `running 2147483646 || echo gone; echo after`, "gone\nafter\n", 0},
		// The shell reaps its children when it likes, so a poll can find the process
		// there and its status file gone: 200 short-lived children, in the old code
		// about one in six printed "cannot open /proc/N/status".
		{"running of processes that come and go", nil, `i=0; while [ $i -lt 200 ]; do true & p=$!; while running $p; do :; done; i=$((i + 1)); done; echo done`, "done\n", 0},
		{"running", nil, `sleep 60 & a=$!; running $a && echo up; kill $a; wait $a; running $a || echo gone`, "up\ngone\n", 0},
		{"wait_exit of a zombie", []string{"RUNLOG=/nonexistent"}, `(exit 3) & PID=$!; sleep 0.5; wait_exit child 1; echo "status $?"`, "status 3\n", 0},
		// A process that outlives the bound is reported (its state and stacks: the lines
		// vary, so only the first word is compared), killed and failed.
		{"wait_exit of a hang", []string{"RUNLOG=/nonexistent"}, `f=$(mktemp); sleep 60 & PID=$!; (wait_exit sleeper 1) >"$f"; echo "exit $?"
cut -d' ' -f1-3 "$f" | sort -u; rm -f "$f"; running "$PID" || echo killed`,
			"exit 1\nE2E FAIL sleeper\nE2E HANG sleeper\nE2E HANG stack\nkilled\n", 0},
		{"driver of none", nil, "driver 0000:ff:1f.7 || echo none", "none\n", 0},
		{"conf_head", nil, "conf_head warn", "log:\n  level: warn\nmetrics:\n  listen: 127.0.0.1:9477\nports:\n", 0},
		{"conf_l2fwd", nil, "conf_l2fwd p0 p1", "forward:\n  mode: l2fwd\n  pairs:\n    - [p0, p1]\n", 0},
		{"conf_l2fwd pairs", nil, "conf_l2fwd a0 a1 b0 b1",
			"forward:\n  mode: l2fwd\n  pairs:\n    - [a0, a1]\n    - [b0, b1]\n", 0},
		{"conf_msix_port", nil, "conf_msix_port vf0 0000:01:10.0 igbvf",
			"  - {name: vf0, driver: vfio-pci, pci: \"0000:01:10.0\", nic: igbvf, interrupts: msix}\n", 0},
		{"conf_msix_port keys", nil, "conf_msix_port p0 0000:01:00.0 igb 'promiscuous: true'",
			"  - {name: p0, driver: vfio-pci, pci: \"0000:01:00.0\", nic: igb, interrupts: msix, promiscuous: true}\n", 0},
		{"conf_poll", nil, "conf_poll adaptive 300us",
			"poll:\n  mode: adaptive\n  idle_threshold: 300us\n  wait_timeout: 1s\n", 0},
		{"conf_poll cpus", nil, "conf_poll busy auto 0,1",
			"poll:\n  mode: busy\n  idle_threshold: auto\n  wait_timeout: 1s\n  cpus: [0,1]\n", 0},
		{"fail prints the log", []string{"RUNLOG=" + log}, "fail no link; echo not reached",
			"E2E FAIL no link\nE2E log line 1\nE2E log line 2\nE2E log line 3\n", 1},
		{"fail prints the log's tail", []string{"RUNLOG=" + log, "LOGTAIL=1", "TAG=BENCH"}, "fail x",
			"BENCH FAIL x\nBENCH log line 3\n", 1},
		// The stand-in daemon exits 0 on SIGTERM once it says it is ready (its trap set).
		{"stop_daemon", []string{"RUNLOG=" + log, "READY=" + ready},
			`rm -f "$READY"; sh -c 'trap "exit 0" TERM; touch "$READY"; while :; do sleep 0.05; done' & PID=$!
i=0; while [ ! -e "$READY" ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i + 1)); done
stop_daemon vfio-pci; echo "PID=$PID"`,
			"E2E run-exit=0 vfio-pci\nE2E log vfio-pci line 1\nE2E log vfio-pci line 2\nE2E log vfio-pci line 3\nPID=\n", 0},
	}
	for _, sh := range guestLibShells() {
		for _, tt := range tests {
			t.Run(filepath.Base(sh[0])+"/"+tt.name, func(t *testing.T) {
				out, exit := runGuestLib(t, sh, tt.env, tt.script)
				if out != tt.want || exit != tt.exit {
					t.Errorf("output %q, exit %d; want %q, exit %d", out, exit, tt.want, tt.exit)
				}
			})
		}
	}
}

// TestGuestLibFailStopsDaemon checks that fail stops the daemon before it exits.
func TestGuestLibFailStopsDaemon(t *testing.T) {
	for _, sh := range guestLibShells() {
		t.Run(filepath.Base(sh[0]), func(t *testing.T) {
			start := time.Now()
			out, exit := runGuestLib(t, sh, []string{"RUNLOG=/nonexistent"}, "sleep 30 & PID=$!; fail x")
			if out != "E2E FAIL x\n" || exit != 1 {
				t.Errorf("output %q, exit %d; want %q, exit 1", out, exit, "E2E FAIL x\n")
			}
			// The shell waits for the daemon it stopped: a daemon left running would
			// hold the shell's output open for its 30 s.
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("fail took %v: the daemon was not stopped", d)
			}
		})
	}
}

// TestInitramfsHasGuestLib checks that every guest gets the library where the scripts
// source it.
func TestInitramfsHasGuestLib(t *testing.T) {
	entries, err := initramfsConfig{Busybox: "/bin/busybox", Script: ". /etc/uiod/lib.sh\n"}.entries()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name == "etc/uiod/lib.sh" {
			if string(e.Data) != GuestLib || e.Mode != ModeRegular|0o644 {
				t.Errorf("etc/uiod/lib.sh (mode %o) is not GuestLib:\n%s", e.Mode, e.Data)
			}
			return
		}
	}
	t.Error("the initramfs has no etc/uiod/lib.sh")
}
