package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/daemon"
	"github.com/uiod/uiod/internal/testutil"
)

// captureRun is `uiod capture` running in-process until its context is cancelled.
type captureRun struct {
	cancel context.CancelFunc
	done   chan error
	errOut bytes.Buffer
}

// startCapture runs `uiod capture ARGS` on s's state_dir writing to out, and returns once
// the daemon reports the port as captured.
func startCapture(t *testing.T, s *simDaemon, port string, out io.Writer, args ...string) *captureRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &captureRun{cancel: cancel, done: make(chan error, 1)}
	root := newRootCmd(&globals{})
	root.SetArgs(append([]string{"capture", "--state-dir", s.stateDir(t), "--port", port}, args...))
	root.SetOut(out)
	root.SetErr(&c.errOut)
	go func() { c.done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() { cancel(); <-c.done })
	testutil.Eventually(t, 10*time.Second, func() bool {
		for _, p := range s.d.Status().Ports {
			if p.Name == port && p.Capturing {
				return true
			}
		}
		return false
	}, "port %s never showed as captured", port)
	return c
}

// stop ends the capture as Ctrl-C would and returns its error and summary line.
func (c *captureRun) stop(t *testing.T) (string, error) {
	t.Helper()
	c.cancel()
	select {
	case err := <-c.done:
		c.done <- err // for the cleanup
		return c.errOut.String(), err
	case <-time.After(20 * time.Second):
		t.Fatal("uiod capture did not end 20s after it was interrupted")
	}
	return "", nil
}

func (s *simDaemon) stateDir(t *testing.T) string {
	t.Helper()
	for _, l := range strings.Split(s.yaml, "\n") {
		if v, ok := strings.CutPrefix(l, "state_dir: "); ok {
			d, err := strconv.Unquote(v)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatal("no state_dir in the configuration")
	return ""
}

func portStatus(s *simDaemon, name string) daemon.PortStatus {
	for _, p := range s.d.Status().Ports {
		if p.Name == name {
			return p
		}
	}
	return daemon.PortStatus{}
}

// TestCaptureReadByTshark: what uiod capture writes, Wireshark's own reader reads: the
// frame count, lengths and bytes of what the test sent through the port.
func TestCaptureReadByTshark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark is not installed (Debian package tshark)")
	}
	s := startSimDaemon(t, "captshark")
	file := filepath.Join(t.TempDir(), "a.pcapng")
	c := startCapture(t, s, "a", io.Discard, "--direction", "rx", "-w", file)
	const n = 50
	s.forward(t, n)
	summary, err := c.stop(t)
	if err != nil {
		t.Fatalf("uiod capture: %v", err)
	}
	if !strings.Contains(summary, fmt.Sprintf("a: %d frames captured, 0 dropped", n)) {
		t.Errorf("summary %q, want %d captured and 0 dropped on a", summary, n)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(tshark, "-r", file, "-T", "fields", "-e", "frame.len", "-e", "frame.interface_name", "-e", "data.data")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != n {
		t.Fatalf("tshark read %d frames, want %d:\n%s", len(lines), n, out)
	}
	for i, l := range lines {
		f := strings.Split(l, "\t")
		payload := make([]byte, 50)
		binary.BigEndian.PutUint32(payload[46:], uint32(i))
		if len(f) != 3 || f[0] != "64" || f[1] != "a" || f[2] != hex.EncodeToString(payload) {
			t.Fatalf("frame %d as tshark reads it: %q, want length 64 on interface a with payload %x", i, l, payload)
		}
	}
}

// TestCapturePipesIntoTcpdump: `uiod capture -w - | tcpdump -r -`.
func TestCapturePipesIntoTcpdump(t *testing.T) {
	tcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		t.Skip("tcpdump is not installed (Debian package tcpdump)")
	}
	s := startSimDaemon(t, "captcpdump")
	pr, pw := io.Pipe()
	cmd := exec.Command(tcpdump, "-n", "-e", "-r", "-")
	cmd.Stdin = pr
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := startCapture(t, s, "b", pw, "-w", "-")
	const n = 20
	s.forward(t, n)
	if _, err := c.stop(t); err != nil {
		t.Fatalf("uiod capture: %v", err)
	}
	pw.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("tcpdump: %v\n%s", err, out.String())
	}
	// Port b receives n frames and sends n: both directions by default.
	if got := strings.Count(out.String(), "ethertype Unknown (0x88b5)"); got != 2*n {
		t.Errorf("tcpdump read %d frames, want %d:\n%s", got, 2*n, out.String())
	}
}

// TestCaptureAccountsForEveryFrame: at full model rate and the default snaplen the
// capture loses nothing (a thread's 4 MiB ring holds every frame sent even if the writer
// never drained it), and captured + dropped = the frames the port's RX queue delivered.
// It logs the rate the queue delivered frames at (BENCHMARKS.md).
func TestCaptureAccountsForEveryFrame(t *testing.T) {
	s := startSimDaemon(t, "capfull")
	file := filepath.Join(t.TempDir(), "a.pcapng")
	c := startCapture(t, s, "a", io.Discard, "--direction", "rx", "-w", file)
	f := make([]byte, 64)
	copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 9, 0x88, 0xb5})
	const sent = 20000
	start := time.Now()
	for range sent {
		s.gen[0].Send(f) // no pacing: the NIC may miss some, the capture must not drop
	}
	// Wait until the queue has delivered what the NIC took (bounded).
	var rx uint64
	testutil.Eventually(t, 20*time.Second, func() bool {
		st := portStatus(s, "a").Stats
		var q uint64
		for _, qs := range s.d.Status().Queues {
			if strings.HasPrefix(qs.Name, "a/") {
				q += qs.RxPackets
			}
		}
		rx = q
		return q == st.RxPackets && q > 0
	}, "port a's queue never caught up with the NIC")
	elapsed := time.Since(start)
	summary, err := c.stop(t)
	if err != nil {
		t.Fatalf("uiod capture: %v", err)
	}
	var captured, dropped uint64
	if _, err := fmt.Sscanf(summary, "a: %d frames captured, %d dropped by the capture", &captured, &dropped); err != nil {
		t.Fatalf("summary %q: %v", summary, err)
	}
	if captured+dropped != rx || dropped != 0 {
		t.Errorf("%d captured + %d dropped = %d, want the %d frames port a received and none dropped", captured, dropped, captured+dropped, rx)
	}
	t.Logf("%d of %d frames received in %v (%.0f frames/s), %d captured, %d dropped by the capture",
		rx, sent, elapsed.Round(time.Millisecond), float64(rx)/elapsed.Seconds(), captured, dropped)
}

// TestCaptureRefuses: bad requests name what is wrong, exit 2, and write no file.
func TestCaptureRefuses(t *testing.T) {
	s := startSimDaemon(t, "caprefuse")
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
		code int
	}{
		{"unknown port", []string{"--port", "nope"}, `port "nope": the daemon has no such port (have [a b])`, exitUsage},
		{"no port", nil, "--port", exitUsage},
		{"bad direction", []string{"--port", "a", "--direction", "in"}, `direction "in"`, exitUsage},
		{"bad snaplen", []string{"--port", "a", "-s", "-5"}, "--snaplen -5", exitUsage},
		{"no daemon", []string{"--port", "a", "--state-dir", dir}, "connect to the daemon's control socket", exitFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, tt.name+".pcapng")
			args := append([]string{"capture", "--state-dir", s.stateDir(t)}, tt.args...)
			_, stderr, code := runUIOD(t, "", nil, append(args, "-w", file)...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q: want %d and %q", code, stderr, tt.code, tt.want)
			}
			if _, err := os.Stat(file); !os.IsNotExist(err) {
				t.Errorf("a refused capture left %s", file)
			}
		})
	}
	// A second capture of a port that is being captured.
	startCapture(t, s, "a", io.Discard, "-w", filepath.Join(dir, "first.pcapng"))
	_, stderr, code := runUIOD(t, "", nil, "capture", "--state-dir", s.stateDir(t), "--port", "a", "-w", filepath.Join(dir, "second.pcapng"))
	if code != exitFailure || !strings.Contains(stderr, "port a: a capture is already running") {
		t.Errorf("second capture: exit %d, %q", code, stderr)
	}
}
