package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

var netnsSeq atomic.Int32

// Netns creates a network namespace for the test, deleted (with every interface in it)
// when the test ends, and returns its name. It skips the test unless it runs as root with
// the ip tool.
func Netns(t testing.TB, prefix string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip tool (iproute2)")
	}
	name := fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), netnsSeq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	return name
}

// IP runs the ip tool with args (such as "-n", ns, "link", ...), failing the test on error.
func IP(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// Sysctl sets key=value inside namespace ns, failing the test on error.
func Sysctl(t testing.TB, ns, key, value string) {
	t.Helper()
	path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
	if out, err := exec.Command("ip", "netns", "exec", ns, "sh", "-c", "echo "+value+" > "+path).CombinedOutput(); err != nil {
		t.Fatalf("sysctl %s=%s in %s: %v: %s", key, value, ns, err, out)
	}
}

// IPIn runs `ip -n ns ARGS...`, failing the test now if it fails, and returns its output.
func IPIn(t testing.TB, ns string, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip -n %s %v: %v: %s", ns, args, err, out)
	}
	return string(out)
}

// InNetns runs fn on an OS thread that has entered namespace ns, so that the sockets,
// TAP interfaces and netlink handles fn creates belong to ns, then brings the thread back
// (a thread that cannot come back is not reused: it ends with its goroutine).
func InNetns(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer home.Close()
		target, err := os.Open("/run/netns/" + ns)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		err = fn()
		if unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}
