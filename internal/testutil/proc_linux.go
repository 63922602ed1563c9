package testutil

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
)

// Proc is a process a benchmark started and stops: a forwarder (uiod run, dpdk-testpmd,
// ovs-vswitchd) or a client.
type Proc struct {
	Name    string
	Cmd     *exec.Cmd
	stdin   io.WriteCloser // held open: testpmd without --stats-period exits at EOF
	LogPath string         // its standard output and error
	// RunDir, if set, is removed once the process has ended (a testpmd's
	// /var/run/dpdk/PREFIX).
	RunDir string
	done   chan struct{}
}

// StartProc runs argv as name, its output in dir/name.log and its standard input held
// open, and stops it when the test ends.
func StartProc(t testing.TB, dir, name string, argv ...string) *Proc {
	t.Helper()
	return StartProcEnv(t, dir, name, nil, argv...)
}

// StartProcEnv is StartProc with env (KEY=VALUE) added to the process's environment.
func StartProcEnv(t testing.TB, dir, name string, env []string, argv ...string) *Proc {
	t.Helper()
	p := &Proc{Name: name, Cmd: exec.Command(argv[0], argv[1:]...), LogPath: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	if env != nil {
		p.Cmd.Env = append(os.Environ(), env...)
	}
	out, err := os.Create(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close() // the child has its own copy
	p.Cmd.Stdout, p.Cmd.Stderr = out, out
	if p.stdin, err = p.Cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { p.Cmd.Wait(); close(p.done) }()
	t.Cleanup(p.Stop)
	return p
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop ends the process (SIGTERM, SIGKILL after 10 s), waits for it and removes its
// RunDir.
func (p *Proc) Stop() {
	if !p.Exited() {
		p.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.Cmd.Process.Kill()
			<-p.done
		}
		p.stdin.Close()
	}
	if p.RunDir != "" {
		os.RemoveAll(p.RunDir)
	}
}

// Tail is the last n lines of the process's output so far.
func (p *Proc) Tail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	l := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// Sched is a process's scheduler accounting summed over its threads: time on a CPU and
// time runnable but waiting for one.
type Sched struct{ Run, Wait time.Duration }

// Sub is s less o.
func (s Sched) Sub(o Sched) Sched { return Sched{s.Run - o.Run, s.Wait - o.Wait} }

// Sched is the process's accounting so far (`ip netns exec` execs its command, so the
// pid of the ip process is the command's).
func (p *Proc) Sched() (Sched, error) { return ProcessSched(p.Cmd.Process.Pid) }

// ProcessSched sums the schedstat of every live thread of process pid
// (/proc/PID/task/*/schedstat).
func ProcessSched(pid int) (Sched, error) {
	var sum Sched
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return sum, fmt.Errorf("process %d: no threads (exited?)", pid)
	}
	for _, f := range tasks {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that ended between the glob and the read
		}
		s, err := ParseSchedstat(string(raw))
		if err != nil {
			return sum, fmt.Errorf("%s: %w", f, err)
		}
		sum.Run += s.Run
		sum.Wait += s.Wait
	}
	return sum, nil
}

// ParseSchedstat reads a schedstat line: nanoseconds on a CPU, nanoseconds waiting on a
// run queue, time slices.
func ParseSchedstat(s string) (Sched, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return Sched{}, fmt.Errorf("schedstat %q: want 3 fields", s)
	}
	run, err1 := strconv.ParseInt(f[0], 10, 64)
	wait, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || run < 0 || wait < 0 {
		return Sched{}, fmt.Errorf("schedstat %q: bad times", s)
	}
	return Sched{time.Duration(run), time.Duration(wait)}, nil
}

// LoadAvg is /proc/loadavg's three averages ("unknown" if unreadable), for reports.
func LoadAvg() string {
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
