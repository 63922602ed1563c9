package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"golang.org/x/sys/unix"
)

var netnsSeq int

// testNetns creates a network namespace for the test (deleted at cleanup) and returns its
// name. It skips the test unless running as root with the ip tool.
func testNetns(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip tool")
	}
	netnsSeq++
	name := fmt.Sprintf("uiod-wire-%d-%d", os.Getpid(), netnsSeq)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	return name
}

// inNetns runs cmd (an ip command line) inside namespace ns.
func inNetns(t *testing.T, ns string, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v: %s", args, err, out)
	}
}

// openInNetns runs open on an OS thread that has entered namespace ns, so the sockets and
// devices it creates belong to ns, then returns the thread to the original namespace.
func openInNetns(t *testing.T, ns string, open func() (Port, error)) Port {
	t.Helper()
	type result struct {
		p   Port
		err error
	}
	ch := make(chan result)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			ch <- result{nil, err}
			return // thread is unchanged; unlocking is safe
		}
		defer orig.Close()
		target, err := os.Open("/run/netns/" + ns)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, fmt.Errorf("setns: %w", err)}
			return
		}
		p, err := open()
		if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread() // back home; otherwise the thread dies with the goroutine
		}
		ch <- result{p, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { r.p.Close() })
	return r.p
}

func TestIntegrationTAP(t *testing.T) {
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("no /dev/net/tun")
	}
	ns := testNetns(t)
	p := openInNetns(t, ns, func() (Port, error) { return Open("tap:uiodtap0") })
	if name := p.(*TAPPort).Name(); name != "uiodtap0" {
		t.Fatalf("Name() = %q", name)
	}
	inNetns(t, ns, "ip", "addr", "add", "10.77.0.1/24", "dev", "uiodtap0")
	inNetns(t, ns, "ip", "link", "set", "uiodtap0", "up")

	replies := make(chan []byte, 16)
	p.SetHandler(func(f []byte, ts int64) {
		if len(f) >= 42 && binary.BigEndian.Uint16(f[12:]) == 0x0806 && binary.BigEndian.Uint16(f[20:]) == 2 {
			replies <- append([]byte(nil), f...)
		}
	})
	// ARP: who has 10.77.0.1? tell 10.77.0.2 (02:00:00:00:00:02).
	me := []byte{2, 0, 0, 0, 0, 2}
	req := append(testutil.ARPRequest(me, [4]byte{10, 77, 0, 2}, [4]byte{10, 77, 0, 1}), make([]byte, 18)...) // padded to 60 bytes
	f, ok := await(func() { mustSend(t, p, req) }, replies, 200*time.Millisecond)
	if !ok {
		t.Fatal("no ARP reply from the kernel through the TAP")
	}
	if len(f) != MinFrame {
		t.Fatalf("42-byte ARP reply arrived as %d bytes, want it padded to %d", len(f), MinFrame)
	}
	if !bytes.Equal(f[0:6], me) || !bytes.Equal(f[28:32], []byte{10, 77, 0, 1}) {
		t.Fatalf("unexpected ARP reply % x", f[:42])
	}
	checkClosed(t, p, req)
}

func TestIntegrationAFPacket(t *testing.T) {
	_, a, b := vethPorts(t, "uiodva", "uiodvb")

	frame := make([]byte, 128)
	copy(frame[0:], []byte{2, 0, 0, 0, 0, 0xbb}) // not the veth's own address: needs promiscuous mode
	copy(frame[6:], []byte{2, 0, 0, 0, 0, 0xaa})
	binary.BigEndian.PutUint16(frame[12:], 0x88b5) // local experimental ethertype
	copy(frame[14:], "uiod afpacket test")

	got := make(chan []byte, 16)
	b.SetHandler(func(f []byte, ts int64) {
		if len(f) >= 14 && binary.BigEndian.Uint16(f[12:]) == 0x88b5 {
			got <- append([]byte(nil), f...)
		}
	})
	own := make(chan struct{}, 16)
	a.SetHandler(func(f []byte, ts int64) {
		if len(f) >= 14 && binary.BigEndian.Uint16(f[12:]) == 0x88b5 {
			own <- struct{}{}
		}
	})
	// The veth may still be without carrier for a moment after it came up: resend.
	f, ok := await(func() { mustSend(t, a, frame) }, got, 100*time.Millisecond)
	if !ok {
		t.Fatal("frame not delivered across the veth")
	}
	if !bytes.Equal(f, frame) {
		t.Fatalf("received % x", f)
	}
	select {
	case <-own:
		t.Fatal("sender saw its own outgoing frame")
	default:
	}
	if err := a.Send(frame[:10]); err == nil {
		t.Fatal("Send of a 10-byte frame succeeded")
	}
	// Sending, and the peer's reader receiving, allocate nothing.
	b.SetHandler(func([]byte, int64) {})
	if allocs := testing.AllocsPerRun(200, func() {
		if err := a.Send(frame); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Fatalf("%v allocations per frame sent and received, want 0", allocs)
	}
	checkClosed(t, a, frame)
}

// checkClosed closes p (twice) and checks that Send then fails with ErrClosed, as the
// Port contract says.
// vethPorts makes a veth pair ifa–ifb, both up, in a new network namespace and opens an
// AF_PACKET port on each end.
func vethPorts(t *testing.T, ifa, ifb string) (ns string, a, b Port) {
	t.Helper()
	ns = testNetns(t)
	inNetns(t, ns, "ip", "link", "add", ifa, "type", "veth", "peer", "name", ifb)
	inNetns(t, ns, "ip", "link", "set", ifa, "up")
	inNetns(t, ns, "ip", "link", "set", ifb, "up")
	a = openInNetns(t, ns, func() (Port, error) { return Open("afpacket:" + ifa) })
	b = openInNetns(t, ns, func() (Port, error) { return Open("afpacket:" + ifb) })
	return ns, a, b
}

// await calls send, then waits up to every for something to arrive on got, again and
// again for at most ten seconds. It returns what arrived; ok is false when nothing did.
func await[T any](send func(), got <-chan T, every time.Duration) (v T, ok bool) {
	ok = testutil.WaitFor(10*time.Second, func() bool {
		send()
		select {
		case v = <-got:
			return true
		case <-time.After(every):
			return false
		}
	})
	return v, ok
}

// mustSend sends frame on p, failing the test now if that fails.
func mustSend(t *testing.T, p Port, frame []byte) {
	t.Helper()
	if err := p.Send(frame); err != nil {
		t.Fatal(err)
	}
}

func checkClosed(t *testing.T, p Port, frame []byte) {
	t.Helper()
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := p.Send(frame); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close = %v, want ErrClosed", err)
	}
}

// TestIntegrationAFPacketLinkFlap: the kernel reports an interface going down to its
// packet sockets as one ENETDOWN from recvfrom; the port must keep receiving once the
// link is back, not lose its reader.
func TestIntegrationAFPacketLinkFlap(t *testing.T) {
	ns, a, b := vethPorts(t, "uiodfa", "uiodfb")
	frame := make([]byte, 64)
	copy(frame[0:], []byte{2, 0, 0, 0, 0, 0xbb})
	copy(frame[6:], []byte{2, 0, 0, 0, 0, 0xaa})
	binary.BigEndian.PutUint16(frame[12:], 0x88b5)
	got := make(chan struct{}, 64)
	b.SetHandler(func(f []byte, ts int64) {
		if len(f) >= 14 && binary.BigEndian.Uint16(f[12:]) == 0x88b5 {
			got <- struct{}{}
		}
	})
	deliver := func(what string) {
		t.Helper()
		// Send fails while the carrier is still coming up: resend.
		if _, ok := await(func() { a.Send(frame) }, got, 50*time.Millisecond); !ok {
			t.Fatalf("no frame delivered %s", what)
		}
	}
	deliver("before the flap")
	inNetns(t, ns, "ip", "link", "set", "uiodfb", "down")
	time.Sleep(20 * time.Millisecond)
	inNetns(t, ns, "ip", "link", "set", "uiodfb", "up")
	for len(got) > 0 {
		<-got
	}
	deliver("after the link flapped")
}
