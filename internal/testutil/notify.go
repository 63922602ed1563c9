package testutil

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// NotifySocket listens as a service manager's $NOTIFY_SOCKET does: an abstract unix
// datagram socket, closed when the test ends. It returns the socket's name ("@...") and
// the assignments that arrive on it, one line each.
func NotifySocket(t testing.TB) (string, <-chan string) {
	t.Helper()
	name := fmt.Sprintf("@uiod-test-notify-%d-%d", os.Getpid(), time.Now().UnixNano())
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			for _, l := range strings.Split(string(buf[:n]), "\n") {
				lines <- l
			}
		}
	}()
	return name, lines
}

// WaitNotify waits at most timeout for the assignment want (such as "READY=1") on a
// NotifySocket's lines, skipping the others; it fails the test, with context, if none comes.
func WaitNotify(t testing.TB, lines <-chan string, want string, timeout time.Duration, context fmt.Stringer) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("notify socket closed before %s\n%v", want, context)
			}
			if l == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %s on the notify socket within %v\n%v", want, timeout, context)
		}
	}
}
