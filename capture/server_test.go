package capture

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/internal/testutil"
)

func newServer(t *testing.T) (*Server, *fakeTarget) {
	t.Helper()
	ft := newFakeTarget(t)
	dir, err := os.MkdirTemp("", "uiodcap") // short: a unix socket path holds 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s, err := Listen(filepath.Join(dir, SocketName), ft, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, ft
}

// waitMirror waits (bounded) until port p has a mirror, or has none when want is false.
func waitMirror(t *testing.T, ft *fakeTarget, p dataplane.PortID, want bool) {
	t.Helper()
	if !testutil.Eventually(t, 10*time.Second, func() bool {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		_, ok := ft.mirrors[p]
		return ok == want
	}, "port %d: mirror attached is not %v", p, want) {
		t.FailNow()
	}
}

// captureAsync runs Capture on a goroutine of its own; the function it returns waits at
// most limit for it to end (once the caller cancelled ctx) and returns what it returned.
func captureAsync(ctx context.Context, path string, req Request, out *Output) func(t *testing.T, limit time.Duration) (Summary, error) {
	type result struct {
		sum Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := Capture(ctx, path, req, out)
		done <- result{sum, err}
	}()
	return func(t *testing.T, limit time.Duration) (Summary, error) {
		t.Helper()
		select {
		case r := <-done:
			return r.sum, r.err
		case <-time.After(limit):
			t.Fatalf("the capture did not end %v after the client asked", limit)
			return Summary{}, nil
		}
	}
}

func TestServerCapture(t *testing.T) {
	s, ft := newServer(t)
	if fi, err := os.Stat(s.Path()); err != nil || fi.Mode().Perm() != 0o600 || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("control socket %v, %v: want a socket of mode 0600", fi, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	wait := captureAsync(ctx, s.Path(), Request{Op: "capture", Ports: []string{"xe1"}}, bufOut(t, &out))
	waitMirror(t, ft, 1, true)
	seq := 0
	ft.send(1, 0, dataplane.RX, 0, 7, 80, &seq)
	cancel() // like Ctrl-C: the daemon ends the capture and sends the statistics
	sum, err := wait(t, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Captured[0] != 7 || sum.Dropped[0] != 0 || sum.Ports[0] != "xe1" {
		t.Errorf("summary %+v, want 7 captured on xe1", sum)
	}
	pkts, names, _ := readPcapng(t, &out)
	if len(pkts) != 7 || names[0] != "xe1" {
		t.Errorf("the file has %d packets on %v", len(pkts), names)
	}
	waitMirror(t, ft, 1, false)
}

func TestServerRefuses(t *testing.T) {
	s, ft := newServer(t)
	ctx := context.Background()
	// A capture that holds xe0.
	hold, cancel := context.WithCancel(ctx)
	held := make(chan error, 1)
	go func() {
		_, err := Capture(hold, s.Path(), Request{Op: "capture", Ports: []string{"xe0"}}, bufOut(t, &bytes.Buffer{}))
		held <- err
	}()
	waitMirror(t, ft, 0, true)
	tests := []struct {
		name  string
		req   Request
		want  string
		usage bool
	}{
		{"unknown port", Request{Op: "capture", Ports: []string{"eth9"}}, `port "eth9": the daemon has no such port`, true},
		{"long port name", Request{Op: "capture", Ports: []string{strings.Repeat("x", 1000)}}, "…(1000 bytes)", true},
		{"no port", Request{Op: "capture"}, "ports: none given", true},
		{"bad direction", Request{Op: "capture", Ports: []string{"xe1"}, Direction: "up"}, `direction "up"`, true},
		{"bad duration", Request{Op: "capture", Ports: []string{"xe1"}, Duration: "soon"}, `duration "soon"`, true},
		{"bad snaplen", Request{Op: "capture", Ports: []string{"xe1"}, Snaplen: -1}, "snaplen -1", false},
		{"bad op", Request{Op: "reboot", Ports: []string{"xe1"}}, `op "reboot"`, true},
		{"second capture", Request{Op: "capture", Ports: []string{"xe0"}}, "port xe0: a capture is already running", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Capture(ctx, s.Path(), tt.req, bufOut(t, &bytes.Buffer{}))
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(e.Msg, tt.want) || e.Usage != tt.usage || len(e.Msg) > 400 {
				t.Fatalf("Capture = %v, want an error with %q (usage %v), bounded", err, tt.want, tt.usage)
			}
		})
	}
	cancel()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
}

func TestServerHostileClients(t *testing.T) {
	s, _ := newServer(t)
	for _, tt := range []struct {
		name string
		send string
		want string
	}{
		{"not json", "hello\n", "request:"},
		{"unknown field", `{"op":"capture","ports":["xe0"],"rm":"-rf"}` + "\n", "unknown field"},
		{"no newline, too long", strings.Repeat("a", 2*maxRequest), "request:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("unix", s.Path())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			c.Write([]byte(tt.send))
			line, err := bufio.NewReader(c).ReadBytes('\n')
			if err != nil {
				t.Fatal(err)
			}
			var r Response
			if err := json.Unmarshal(line, &r); err != nil || !strings.Contains(r.Error, tt.want) {
				t.Fatalf("answer %q, want an error with %q", line, tt.want)
			}
		})
	}
}

func TestListenRefusesANonSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, SocketName)
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path, newFakeTarget(t), nil, nil); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a regular file = %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "x" {
		t.Error("Listen replaced the file")
	}
}

func FuzzRequestOptions(f *testing.F) {
	f.Add(`{"op":"capture","ports":["xe0"],"queue":-1,"direction":"rx","duration":"1s"}`)
	f.Add(`{"op":"capture","ports":["xe0","xe1"],"snaplen":64,"count":3}`)
	f.Fuzz(func(t *testing.T, s string) {
		var r Request
		if json.Unmarshal([]byte(s), &r) != nil {
			return
		}
		o, err := r.options([]string{"xe0", "xe1"})
		if err != nil {
			if len(err.Error()) > 1024 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		for _, p := range o.Ports {
			if p > 1 {
				t.Fatalf("port %d accepted", p)
			}
		}
	})
}

func TestServerOnALongPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ft := newFakeTarget(t)
	s, err := Listen(filepath.Join(dir, SocketName), ft, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Capture(context.Background(), s.Path(), Request{Op: "capture", Ports: []string{"nope"}}, bufOut(t, &bytes.Buffer{}))
	var e *Error
	if !errors.As(err, &e) || !e.Usage {
		t.Errorf("Capture over a %d-byte path = %v, want the daemon's answer", len(s.Path()), err)
	}
	s.Close()
	if _, err := os.Lstat(filepath.Join(dir, SocketName)); !os.IsNotExist(err) {
		t.Errorf("Close left the socket: %v", err)
	}
}
