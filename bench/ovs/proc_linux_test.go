package ovs

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/qemutest"
)

// proc is a process the benchmark started and stops: a switch, a daemon or a front end.
type proc struct {
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser // held open: testpmd without --stats-period exits at EOF
	logPath string         // its standard output and error
	runDir  string         // removed once it has ended: a DPDK process's /var/run/dpdk/PREFIX
	done    chan struct{}
}

// start runs argv as name with the extra environment env, its output in dir/name.log,
// stopped when the test ends.
func start(t *testing.T, dir, name string, env []string, argv ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(argv[0], argv[1:]...), logPath: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	out, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close() // the child has its own copy
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.stop)
	return p
}

// tail is the last n lines of the process's output.
func (p *proc) tail(n int) string {
	raw, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	return qemutest.Tail(string(raw), n)
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

// stop ends the process (SIGTERM, SIGKILL after 10 s), waits for it and removes its run
// directory. It may be called more than once.
func (p *proc) stop() {
	if !p.exited() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
		p.stdin.Close()
	}
	if p.runDir != "" {
		os.RemoveAll(p.runDir)
	}
}

// sched is a process's scheduler accounting: time on a CPU and time runnable but waiting
// for one, summed over its threads.
type sched struct{ run, wait time.Duration }

func (s sched) sub(o sched) sched { return sched{s.run - o.run, s.wait - o.wait} }

// sched is the process's accounting so far.
func (p *proc) sched() (sched, error) { return processSched(p.cmd.Process.Pid) }

// processSched sums the schedstat of every live thread of process pid. `ip netns exec`
// execs its command, so the pid of the ip process is the switch's.
func processSched(pid int) (sched, error) {
	var sum sched
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return sum, fmt.Errorf("process %d: no threads (exited?)", pid)
	}
	for _, f := range tasks {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that ended between the glob and the read
		}
		s, err := parseSchedstat(string(raw))
		if err != nil {
			return sum, fmt.Errorf("%s: %w", f, err)
		}
		sum.run += s.run
		sum.wait += s.wait
	}
	return sum, nil
}

// parseSchedstat reads a schedstat line: nanoseconds on a CPU, nanoseconds waiting on a
// run queue, time slices.
func parseSchedstat(s string) (sched, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return sched{}, fmt.Errorf("schedstat %q: want 3 fields", s)
	}
	run, err1 := strconv.ParseInt(f[0], 10, 64)
	wait, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || run < 0 || wait < 0 {
		return sched{}, fmt.Errorf("schedstat %q: bad times", s)
	}
	return sched{time.Duration(run), time.Duration(wait)}, nil
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

func TestParseSchedstat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want sched
		ok   bool
	}{
		{"123456789 1000 42\n", sched{123456789, 1000}, true},
		{"0 0 0", sched{}, true},
		{"12 34", sched{}, false},
		{"x 1 2", sched{}, false},
		{"1 y 2", sched{}, false},
		{"-5 1 2", sched{}, false},
	} {
		got, err := parseSchedstat(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSchedstat(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
