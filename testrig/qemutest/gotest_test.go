package qemutest

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseGoTest(t *testing.T) {
	tests := []struct {
		name     string
		out      string
		want     []TestResult
		wantRest string
	}{{
		name: "pass, skip, nested subtests, summary",
		out: `=== RUN   TestGuestBind
    bind_test.go:10: binding
=== RUN   TestGuestBind/vfio-pci
    bind_test.go:20: bound
=== RUN   TestGuestBind/uio_pci_generic
=== NAME  TestGuestBind
    bind_test.go:30: back in the parent
--- PASS: TestGuestBind (0.25s)
    --- PASS: TestGuestBind/vfio-pci (0.10s)
    --- SKIP: TestGuestBind/uio_pci_generic (0.00s)
        bind_test.go:25: no uio here
=== RUN   TestGuestVFIO
    vfio_test.go:5: not in the guest
--- SKIP: TestGuestVFIO (0.00s)
PASS
`,
		want: []TestResult{
			{Name: "TestGuestBind", Status: Pass, Elapsed: 250 * time.Millisecond,
				Output: "    bind_test.go:10: binding\n    bind_test.go:30: back in the parent\n"},
			{Name: "TestGuestBind/vfio-pci", Status: Pass, Elapsed: 100 * time.Millisecond,
				Output: "    bind_test.go:20: bound\n"},
			{Name: "TestGuestBind/uio_pci_generic", Status: Skip,
				Output: "        bind_test.go:25: no uio here\n"},
			{Name: "TestGuestVFIO", Status: Skip, Output: "    vfio_test.go:5: not in the guest\n"},
		},
		wantRest: "PASS\n",
	}, {
		name: "failure and a crash",
		out: "=== RUN   TestA\r\n    a_test.go:1: boom\r\n--- FAIL: TestA (1.50s)\r\n" +
			"=== RUN   TestB\npanic: runtime error\n\ngoroutine 7 [running]:\nexit status 2\n",
		want: []TestResult{
			{Name: "TestA", Status: Fail, Elapsed: 1500 * time.Millisecond, Output: "    a_test.go:1: boom\n"},
			{Name: "TestB", Status: Unfinished, Output: "panic: runtime error\n\ngoroutine 7 [running]:\nexit status 2\n\n"},
		},
	}, {
		name:     "no tests",
		out:      "testing: warning: no tests to run\nPASS\n",
		wantRest: "testing: warning: no tests to run\nPASS\n",
	}, {
		name: "paused and continued",
		out: "=== RUN   TestP\n=== PAUSE TestP\n=== RUN   TestQ\n--- PASS: TestQ (0.00s)\n" +
			"=== CONT  TestP\n    p_test.go:3: late\n--- PASS: TestP (0.01s)\n",
		want: []TestResult{
			{Name: "TestP", Status: Pass, Elapsed: 10 * time.Millisecond, Output: "    p_test.go:3: late\n"},
			{Name: "TestQ", Status: Pass},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rest := ParseGoTest(tt.out)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("tests\n%#v\nwant\n%#v", got, tt.want)
			}
			if rest != tt.wantRest {
				t.Errorf("rest %q, want %q", rest, tt.wantRest)
			}
		})
	}
}

func TestTestResultParent(t *testing.T) {
	for name, want := range map[string]string{"TestA": "", "TestA/b": "TestA", "TestA/b/c_d": "TestA/b"} {
		if got := (TestResult{Name: name}).Parent(); got != want {
			t.Errorf("Parent of %q = %q, want %q", name, got, want)
		}
	}
}

func FuzzParseGoTest(f *testing.F) {
	f.Add("=== RUN   TestA\n    x\n--- PASS: TestA (0.00s)\nPASS\n")
	f.Add("=== RUN   TestA/b\n    --- FAIL: TestA/b (9.99s)\n")
	f.Add("--- SKIP: T (1e3s)\n=== NAME  \n")
	f.Fuzz(func(t *testing.T, out string) {
		tests, _ := ParseGoTest(out)
		seen := make(map[string]bool)
		for _, r := range tests {
			if r.Name == "" || strings.ContainsAny(r.Name, " \t\n") {
				t.Fatalf("bad test name %q", r.Name)
			}
			if seen[r.Name] {
				t.Fatalf("test %q listed twice", r.Name)
			}
			seen[r.Name] = true
			switch r.Status {
			case Pass, Fail, Skip, Unfinished:
			default:
				t.Fatalf("test %q has status %q", r.Name, r.Status)
			}
			if r.Elapsed < 0 {
				t.Fatalf("test %q took %v", r.Name, r.Elapsed)
			}
		}
	})
}
