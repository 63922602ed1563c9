package qemutest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Result is what a guest run produced.
type Result struct {
	Kernel  string   // the guest kernel's name (Kernel.Name)
	Exit    int      // the guest script's exit status; -1 when the guest never reported one
	Output  string   // what the script wrote to stdout and stderr
	Console string   // the serial console: kernel messages and "uiod-init:" lines
	NICs    []string // PCI addresses of the igb NICs, as the guest found them

	// Tests are the guest tests found in Output (a test binary run with -test.v); Rest is
	// what Output had outside any test (the binary's summary, a panic's trace).
	Tests []TestResult
	Rest  string

	// Boot is the guest's uptime when the script started: kernel boot, unpacking and
	// module loading. Script is how long the script ran (guest clock). Wall is the host's
	// time from starting QEMU to its exit (power-off).
	Boot, Script, Wall time.Duration
}

// parseResultPort splits what the guest wrote to its result port into the protocol lines
// (see ResultMarker), which fill r, and the script's output.
func parseResultPort(data string, r *Result) error {
	r.Exit = -1
	var (
		out               strings.Builder
		startUp, exitUp   float64
		gotStart, gotExit bool
	)
	for _, line := range strings.Split(strings.ReplaceAll(data, "\r", ""), "\n") {
		rest, ok := strings.CutPrefix(line, ResultMarker)
		if !ok {
			if gotStart && !gotExit {
				out.WriteString(line + "\n")
			}
			continue
		}
		verb, args, _ := strings.Cut(rest, " ")
		if k, v, ok := strings.Cut(verb, "="); ok && k == "exit" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("result line %q: bad exit status", line)
			}
			r.Exit, gotExit = n, true
			exitUp = uptime(args)
			continue
		}
		switch verb {
		case "nics":
			r.NICs = strings.Fields(args)
		case "start":
			gotStart = true
			startUp = uptime(args)
		}
	}
	r.Output = strings.TrimSuffix(out.String(), "\n")
	if gotStart {
		r.Boot = seconds(startUp)
	}
	if gotStart && gotExit && exitUp >= startUp {
		r.Script = seconds(exitUp - startUp)
	}
	if !gotExit {
		return fmt.Errorf("guest reported no exit status")
	}
	return nil
}

// uptime returns the value of the uptime=S field in args, or 0.
func uptime(args string) float64 {
	for _, f := range strings.Fields(args) {
		if v, ok := strings.CutPrefix(f, "uptime="); ok {
			s, err := strconv.ParseFloat(v, 64)
			if err == nil && s >= 0 && s < 1e9 {
				return s
			}
		}
	}
	return 0
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Report makes each guest test a subtest of t with the same name (guest subtests nested in
// the same way): it logs the guest test's output and passes, fails or skips as the guest
// test did; an Unfinished test fails. t itself fails when the guest script exited non-zero
// without a failing test to show for it, or ran no test at all.
func (r *Result) Report(t *testing.T) {
	t.Helper()
	children := make(map[string][]TestResult)
	for _, tr := range r.Tests {
		children[tr.Parent()] = append(children[tr.Parent()], tr)
	}
	failed := false
	var report func(t *testing.T, tr TestResult)
	report = func(t *testing.T, tr TestResult) {
		name := tr.Name[strings.LastIndexByte(tr.Name, '/')+1:]
		t.Run(name, func(t *testing.T) {
			if out := strings.TrimRight(tr.Output, "\n"); out != "" {
				t.Logf("guest output:\n%s", out)
			}
			for _, c := range children[tr.Name] {
				report(t, c)
			}
			switch tr.Status {
			case Fail:
				failed = true
				t.Errorf("guest test failed (%v)", tr.Elapsed)
			case Unfinished:
				failed = true
				t.Errorf("guest test did not finish; after the tests the output had:\n%s", r.Rest)
			case Skip:
				t.Skip("skipped in the guest")
			}
		})
	}
	for _, tr := range children[""] {
		report(t, tr)
	}
	if len(r.Tests) == 0 {
		t.Errorf("guest (%s) ran no test; exit status %d; output:\n%s", r.Kernel, r.Exit, r.Output)
		return
	}
	if r.Exit != 0 && !failed {
		t.Errorf("guest script exited with status %d but no guest test failed; output outside tests:\n%s", r.Exit, r.Rest)
	}
}

// RequireTagged logs the lines of the script's output that start with tag and a space,
// and fails t unless the script exited 0 after printing the line tag+" done".
func (r *Result) RequireTagged(t testing.TB, tag string) {
	t.Helper()
	for _, l := range strings.Split(r.Output, "\n") {
		if strings.HasPrefix(l, tag+" ") {
			t.Log(l)
		}
	}
	if r.Exit != 0 || !strings.Contains(r.Output, tag+" done") {
		t.Fatalf("guest script exit %d:\n%s", r.Exit, r.Output)
	}
}
