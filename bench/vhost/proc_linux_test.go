package vhost

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is a process the benchmark started and stops: a back end or the client.
type proc struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser // held open: testpmd without --stats-period exits at EOF
	log   lockedBuffer
	done  chan struct{}
}

// lockedBuffer is the process's output, written by exec's copying goroutines and read by
// the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start runs argv as name, stopped when the test ends.
func start(t *testing.T, name string, argv ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(argv[0], argv[1:]...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.log, &p.log
	in, err := p.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = in
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.stop)
	return p
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process (SIGTERM, SIGKILL after 10 s) and waits for it.
func (p *proc) stop() {
	if p.exited() {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	p.stdin.Close()
}

// cpu is the CPU time of every thread of the process so far (schedstat, in ns).
func (p *proc) cpu() (time.Duration, error) {
	return processCPU(p.cmd.Process.Pid)
}

// processCPU sums the time on CPU of every live thread of process pid from
// /proc/PID/task/*/schedstat. `ip netns exec` execs its command, so the pid of the ip
// process is the back end's.
func processCPU(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("process %d: no threads (exited?)", pid)
	}
	var sum time.Duration
	for _, f := range tasks {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that ended between the glob and the read
		}
		d, err := parseSchedstat(string(raw))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		sum += d
	}
	return sum, nil
}

// parseSchedstat is the first field of a schedstat line: nanoseconds on a CPU.
func parseSchedstat(s string) (time.Duration, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return 0, fmt.Errorf("schedstat %q: want 3 fields", s)
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || ns < 0 {
		return 0, fmt.Errorf("schedstat %q: bad run time", s)
	}
	return time.Duration(ns), nil
}

// loadAvg is /proc/loadavg's three averages.
func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
