package qemutest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseResultPort(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    Result
		wantErr string
	}{{
		name: "complete",
		data: "UIOD-RESULT: boot uptime=1.00 kernel=6.1\r\n" +
			"UIOD-RESULT: nics 0000:01:00.0 0000:02:00.0\r\n" +
			"UIOD-RESULT: start uptime=2.50\r\n" +
			"hello\r\nworld\r\n" +
			"UIOD-RESULT: exit=3 uptime=4.00\r\n",
		want: Result{Exit: 3, Output: "hello\nworld", NICs: []string{"0000:01:00.0", "0000:02:00.0"},
			Boot: 2500 * time.Millisecond, Script: 1500 * time.Millisecond},
	}, {
		name: "no nics, script printed a marker-like line mid-line",
		data: "UIOD-RESULT: start uptime=1\nsays UIOD-RESULT: exit=9\nUIOD-RESULT: exit=0 uptime=1\n",
		want: Result{Exit: 0, Output: "says UIOD-RESULT: exit=9", Boot: time.Second},
	}, {
		name:    "guest died during the script",
		data:    "UIOD-RESULT: start uptime=1\npartial output",
		want:    Result{Exit: -1, Output: "partial output", Boot: time.Second},
		wantErr: "no exit status",
	}, {
		name:    "nothing",
		want:    Result{Exit: -1},
		wantErr: "no exit status",
	}, {
		name:    "bad exit",
		data:    "UIOD-RESULT: exit=x\n",
		want:    Result{Exit: -1},
		wantErr: "bad exit status",
	}, {
		name: "bad uptime is ignored",
		data: "UIOD-RESULT: start uptime=-4\nUIOD-RESULT: exit=1 uptime=zz\n",
		want: Result{Exit: 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Result
			err := parseResultPort(tt.data, &got)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if got.Exit != tt.want.Exit || got.Output != tt.want.Output || strings.Join(got.NICs, ",") != strings.Join(tt.want.NICs, ",") ||
				got.Boot != tt.want.Boot || got.Script != tt.want.Script {
				t.Errorf("got exit %d output %q nics %q boot %v script %v\nwant exit %d output %q nics %q boot %v script %v",
					got.Exit, got.Output, got.NICs, got.Boot, got.Script,
					tt.want.Exit, tt.want.Output, tt.want.NICs, tt.want.Boot, tt.want.Script)
			}
		})
	}
}

func FuzzParseResultPort(f *testing.F) {
	f.Add("UIOD-RESULT: start uptime=1\nx\nUIOD-RESULT: exit=0 uptime=2\n")
	f.Add("UIOD-RESULT: exit=-1 uptime=1e308\n")
	f.Fuzz(func(t *testing.T, data string) {
		var r Result
		err := parseResultPort(data, &r)
		if err == nil && r.Exit == -1 && !strings.Contains(data, "exit=-1") {
			t.Fatalf("no error but no exit status")
		}
		if r.Boot < 0 || r.Script < 0 {
			t.Fatalf("negative times: boot %v script %v", r.Boot, r.Script)
		}
		if len(r.Output) > len(data) {
			t.Fatalf("output longer than the input")
		}
	})
}

// TestReport runs reportChild in a child test process (Report must fail tests, which a
// test cannot watch happen to itself) and checks what the child's go test -v output says.
func TestReport(t *testing.T) {
	tests := []struct {
		name, guest string
		exit        int
		want        []string
		wantFail    bool
	}{{
		name: "mixed",
		guest: "=== RUN   TestGuestA\n    a_test.go:1: hello from A\n=== RUN   TestGuestA/sub\n" +
			"--- FAIL: TestGuestA (0.10s)\n    --- FAIL: TestGuestA/sub (0.05s)\n" +
			"=== RUN   TestGuestB\n    b_test.go:2: no device\n--- SKIP: TestGuestB (0.00s)\n" +
			"=== RUN   TestGuestC\n--- PASS: TestGuestC (0.00s)\nFAIL\n",
		exit: 1,
		want: []string{"--- FAIL: TestReportChild/TestGuestA ", "--- FAIL: TestReportChild/TestGuestA/sub ",
			"--- SKIP: TestReportChild/TestGuestB ", "--- PASS: TestReportChild/TestGuestC ", "hello from A", "no device"},
		wantFail: true,
	}, {
		name:  "all pass",
		guest: "=== RUN   TestGuestA\n--- PASS: TestGuestA (0.10s)\nPASS\n",
		want:  []string{"--- PASS: TestReportChild/TestGuestA ", "--- PASS: TestReportChild "},
	}, {
		name:     "crash",
		guest:    "=== RUN   TestGuestA\npanic: boom\n",
		exit:     2,
		want:     []string{"--- FAIL: TestReportChild/TestGuestA ", "did not finish", "panic: boom"},
		wantFail: true,
	}, {
		name:     "nonzero exit, no failed test",
		guest:    "=== RUN   TestGuestA\n--- PASS: TestGuestA (0.10s)\nsegfault after the tests\n",
		exit:     139,
		want:     []string{"--- PASS: TestReportChild/TestGuestA ", "exited with status 139", "segfault after the tests"},
		wantFail: true,
	}, {
		name:     "no tests",
		guest:    "sh: guest.test: not found\n",
		exit:     127,
		want:     []string{"ran no test", "guest.test: not found"},
		wantFail: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestReportChild$", "-test.v")
			cmd.Env = append(os.Environ(), "QEMUTEST_REPORT_GUEST="+tt.guest, "QEMUTEST_REPORT_EXIT="+strconv.Itoa(tt.exit))
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tt.wantFail {
				t.Errorf("child failed: %v, want %v", err, tt.wantFail)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("child output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestReportChild reports a made-up guest run described by the environment (see
// TestReport); without it, it does nothing.
func TestReportChild(t *testing.T) {
	guest, ok := os.LookupEnv("QEMUTEST_REPORT_GUEST")
	if !ok {
		t.Skip("runs as TestReport's child")
	}
	exit, _ := strconv.Atoi(os.Getenv("QEMUTEST_REPORT_EXIT"))
	r := &Result{Kernel: "test", Exit: exit, Output: guest}
	r.Tests, r.Rest = ParseGoTest(guest)
	r.Report(t)
}
