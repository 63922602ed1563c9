package testutil

import (
	"fmt"
	"os"
	"runtime"
	"time"
)

// Runner is what a TestMain runs: *testing.M.
type Runner interface {
	Run() int
}

// RunCheckingLeaks runs a package's tests and fails the run (exit code 1) if goroutines
// they started are still running once they pass: each is given five seconds to exit, and
// the stacks of all goroutines are printed when one does not. It is for a package whose
// code starts goroutines, as
//
//	func TestMain(m *testing.M) { os.Exit(testutil.RunCheckingLeaks(m)) }
func RunCheckingLeaks(m Runner) int { return runCheckingLeaks(m, 5*time.Second) }

func runCheckingLeaks(m Runner, grace time.Duration) int {
	g0 := runtime.NumGoroutine()
	code := m.Run()
	if code != 0 {
		return code
	}
	if !WaitFor(grace, func() bool { return runtime.NumGoroutine() <= g0 }) {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		fmt.Fprintf(os.Stderr, "goroutines left running by the tests: %d at start, %d at end\n%s", g0, runtime.NumGoroutine(), buf[:n])
		return 1
	}
	return 0
}
