package qemutest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestStalled(t *testing.T) {
	for _, tc := range []struct {
		console string
		want    bool
	}{
		{"[  90.96] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:\n", true},
		{"[  90.97] rcu: rcu_preempt kthread timer wakeup didn't happen for 15754 jiffies!\n", true},
		{"UIOD-RESULT: boot uptime=3.37\nE2E READY vfio-pci\n", false},
		{"INFO: task uiod:144 blocked for more than 120 seconds.\n", false}, // a hang of our own, not the timer's
		{"qemu-system-x86_64: system/physmem.c:2678: iotlb_to_section: Assertion `section_index < d->map.sections_nb' failed.\n", true},
		{"qemu-system-x86_64: -device igb: Assertion `x' failed.\n", false}, // not the known race
	} {
		if got := stalled(tc.console); got != tc.want {
			t.Errorf("stalled(%q) = %v, want %v", tc.console, got, tc.want)
		}
	}
}

// fakeGo is a `go` for scripts/gotest.sh: the first call prints FAKE_OUT1, records
// FAKE_STALLS as the harness would and exits FAKE_RC1; the rerun prints FAKE_OUT2 and exits
// FAKE_RC2. Every call's arguments go to FAKE_CALLS.
const fakeGo = `#!/bin/bash
echo "$*" >>"$FAKE_CALLS"
if [ "$(wc -l <"$FAKE_CALLS")" = 1 ]; then
	printf '%b' "$FAKE_OUT1"
	[ -n "$FAKE_STALLS" ] && printf '%b' "$FAKE_STALLS" >>"$UIOD_QEMU_STALLS"
	exit "$FAKE_RC1"
fi
printf '%b' "$FAKE_OUT2"
exit "$FAKE_RC2"
`

func TestGotestRerunsOnlyStalledGuestTests(t *testing.T) {
	script, err := filepath.Abs("../../scripts/gotest.sh")
	if err != nil {
		t.Fatal(err)
	}
	const (
		stalledFail = "--- FAIL: TestIntegrationMultiQueue (600.36s)\\nFAIL\\nFAIL\\tgithub.com/uiod/uiod/integration\\t789.6s\\n"
		otherFail   = "--- FAIL: TestParse (0.01s)\\nFAIL\\nFAIL\\tgithub.com/uiod/uiod/config\\t0.9s\\n"
		rerunOK     = "ok  \\tgithub.com/uiod/uiod/integration\\t120.1s\\n"
	)
	for _, tc := range []struct {
		name             string
		out1, stalls     string
		rc1              string
		out2, rc2        string
		wantRC, wantRuns int
	}{
		{"all pass", "ok  \\tx\\t1s\\n", "", "0", "", "0", 0, 1},
		{"a failure without a stall", stalledFail, "", "1", rerunOK, "0", 1, 1},
		{"a stalled guest test, rerun passes", stalledFail, "TestIntegrationMultiQueue\\n", "1", rerunOK, "0", 0, 2},
		{"a stalled guest test, rerun fails", stalledFail, "TestIntegrationMultiQueue\\n", "1", "FAIL\\tgithub.com/uiod/uiod/integration\\n", "1", 1, 2},
		{"a stalled guest test, rerun runs nothing", stalledFail, "TestIntegrationMultiQueue\\n", "1", "ok  \\tgithub.com/uiod/uiod/integration\\t0.1s [no tests to run]\\n", "0", 1, 2},
		{"a stall and another package failing", stalledFail + otherFail, "TestIntegrationMultiQueue\\n", "1", rerunOK, "0", 1, 1},
		{"a stall and a panic", stalledFail + "panic: test timed out after 40m0s\\n", "TestIntegrationMultiQueue\\n", "1", rerunOK, "0", 1, 1},
		{"a stall in another test than the failing one", stalledFail, "TestIntegrationE2E\\n", "1", rerunOK, "0", 1, 1},
		{"a stall recorded outside the guest packages", otherFail, "TestParse\\n", "1", rerunOK, "0", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			goBin := filepath.Join(dir, "go")
			if err := os.WriteFile(goBin, []byte(fakeGo), 0o755); err != nil {
				t.Fatal(err)
			}
			calls := filepath.Join(dir, "calls")
			cmd := exec.Command("bash", script, "./...")
			cmd.Env = append(os.Environ(), "GO="+goBin, "FAKE_CALLS="+calls, "FAKE_OUT1="+tc.out1, "FAKE_RC1="+tc.rc1,
				"FAKE_STALLS="+tc.stalls, "FAKE_OUT2="+tc.out2, "FAKE_RC2="+tc.rc2)
			out, err := cmd.CombinedOutput()
			rc := 0
			if ee, ok := err.(*exec.ExitError); ok {
				rc = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if (rc == 0) != (tc.wantRC == 0) {
				t.Errorf("exit %d, want %d:\n%s", rc, tc.wantRC, out)
			}
			b, _ := os.ReadFile(calls)
			runs := strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(runs) != tc.wantRuns {
				t.Fatalf("%d go test runs, want %d: %q", len(runs), tc.wantRuns, runs)
			}
			if tc.wantRuns == 2 && !strings.Contains(runs[1], "-run ^(TestIntegrationMultiQueue)$ github.com/uiod/uiod/integration") {
				t.Errorf("rerun %q", runs[1])
			}
		})
	}
}
