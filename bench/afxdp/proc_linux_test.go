package afxdp

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

// proc is a forwarder process the benchmark started: uiod run or dpdk-testpmd.
type proc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser // held open: testpmd in interactive-less mode exits at EOF
	logPath string
	runDir  string // a testpmd's /var/run/dpdk/PREFIX, removed after
	done    chan struct{}
}

// start runs argv with its output in dir/name.log; the test's end stops it.
func start(t *testing.T, dir, name string, argv ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(argv[0], argv[1:]...), logPath: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	out, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
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

// log is the process's output so far, its last n lines.
func (p *proc) log(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	l := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// cpu is the time the process's threads have run so far (/proc/PID/task/*/schedstat;
// `ip netns exec` execs, so its pid is the forwarder's).
func (p *proc) cpu() (time.Duration, error) { return processCPU(p.cmd.Process.Pid) }

func processCPU(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("process %d: no threads (exited?)", pid)
	}
	var sum time.Duration
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that ended meanwhile
		}
		d, err := parseSchedRun(string(b))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		sum += d
	}
	return sum, nil
}

// parseSchedRun reads a schedstat line's first field, nanoseconds on a CPU.
func parseSchedRun(s string) (time.Duration, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return 0, fmt.Errorf("schedstat %q: want 3 fields", s)
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("schedstat %q: bad run time", s)
	}
	return time.Duration(n), nil
}

func TestParseSchedRun(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{{"123 456 7\n", 123, true}, {"0 0 0", 0, true}, {"1 2", 0, false}, {"x 1 2", 0, false}, {"-1 0 0", 0, false}} {
		got, err := parseSchedRun(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSchedRun(%q) = %v, %v; want %v ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
