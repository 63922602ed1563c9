package afxdp

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/internal/testutil"
)

// rig is two hosts in namespaces a and b, each on a veth whose other end is in namespace
// m, where the ports under test open: a's 10.x.0.1 talks to b's 10.x.0.2 only through
// whatever forwards between ma and mb.
type rig struct {
	a, m, b  string
	ma, mb   string // the ends in m
	ipA, ipB net.IP
}

var rigSeq int

func newRig(t *testing.T) *rig {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, XDP)")
	}
	rigSeq++
	r := &rig{
		a: testutil.Netns(t, "xska"), m: testutil.Netns(t, "xskm"), b: testutil.Netns(t, "xskb"),
		ma: "xma", mb: "xmb",
		ipA: net.IPv4(10, 213, byte(rigSeq), 1), ipB: net.IPv4(10, 213, byte(rigSeq), 2),
	}
	testutil.IP(t, "link", "add", "xa0", "netns", r.a, "type", "veth", "peer", "name", r.ma, "netns", r.m)
	testutil.IP(t, "link", "add", "xb0", "netns", r.b, "type", "veth", "peer", "name", r.mb, "netns", r.m)
	for _, ns := range []string{r.a, r.m, r.b} {
		testutil.Sysctl(t, ns, "net.ipv6.conf.all.disable_ipv6", "1")
		testutil.Sysctl(t, ns, "net.ipv6.conf.default.disable_ipv6", "1")
		testutil.IPIn(t, ns, "link", "set", "lo", "up")
	}
	testutil.IPIn(t, r.a, "addr", "add", r.ipA.String()+"/24", "dev", "xa0")
	testutil.IPIn(t, r.b, "addr", "add", r.ipB.String()+"/24", "dev", "xb0")
	// veth hands the peer a TCP segment whose checksum is still to be done
	// (CHECKSUM_PARTIAL): copied out through an XSK it arrives with a bad one. A NIC
	// computes it on the wire; here the senders compute it.
	r.txChecksumOff(t, r.a, "xa0")
	r.txChecksumOff(t, r.b, "xb0")
	testutil.IPIn(t, r.a, "link", "set", "xa0", "up")
	testutil.IPIn(t, r.b, "link", "set", "xb0", "up")
	testutil.IPIn(t, r.m, "link", "set", r.ma, "up")
	testutil.IPIn(t, r.m, "link", "set", r.mb, "up")
	return r
}

// txChecksumOff turns TX checksum offload off on ifname in ns (ethtool -K tx off).
func (r *rig) txChecksumOff(t *testing.T, ns, ifname string) {
	t.Helper()
	err := testutil.InNetns(ns, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return setEthtoolValue(fd, ifname, ethtoolSTxCsum, 0)
	})
	if err != nil {
		t.Fatalf("tx checksum offload off on %s: %v", ifname, err)
	}
}

// ethtoolSTxCsum is ETHTOOL_STXCSUM.
const ethtoolSTxCsum = 0x17

// open opens a port in m.
func (r *rig) open(t *testing.T, cfg Config) (*Port, error) {
	t.Helper()
	var p *Port
	err := testutil.InNetns(r.m, func() error {
		var err error
		p, err = Open(cfg)
		return err
	})
	if err == nil {
		t.Cleanup(func() { p.Close() })
	}
	return p, err
}

// xdpProg is what `ip link` shows attached to the interface in m ("" if nothing).
func (r *rig) xdpProg(t *testing.T, ifname string) string {
	t.Helper()
	out := testutil.IPIn(t, r.m, "-d", "link", "show", "dev", ifname)
	for _, f := range bytes.Fields([]byte(out)) {
		if bytes.HasPrefix(f, []byte("xdp")) && len(f) <= 12 {
			return string(f)
		}
	}
	for _, l := range bytes.Split([]byte(out), []byte("\n")) {
		if i := bytes.Index(l, []byte("prog/xdp")); i >= 0 {
			return string(bytes.TrimSpace(l))
		}
	}
	return ""
}

// ping sends n echo requests from a to b, one at a time, each waited for up to timeout;
// it returns the round-trip times of the answered ones.
func (r *rig) ping(t *testing.T, n int, timeout time.Duration) []time.Duration {
	t.Helper()
	return r.pingTo(t, r.ipB, n, timeout)
}

// pingTo is ping to dst.
func (r *rig) pingTo(t *testing.T, dst net.IP, n int, timeout time.Duration) []time.Duration {
	t.Helper()
	c := r.icmpConn(t)
	defer c.Close()
	var rtts []time.Duration
	buf := make([]byte, 1500)
	id := os.Getpid() & 0xffff
	for seq := 1; seq <= n; seq++ {
		m := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte("uiod-afxdp")}}
		wb, err := m.Marshal(nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := c.WriteTo(wb, &net.IPAddr{IP: dst}); err != nil {
			continue // no neighbour (EHOSTUNREACH after a failed resolution): unanswered
		}
		deadline := start.Add(timeout)
		for {
			c.SetReadDeadline(deadline)
			k, _, err := c.ReadFrom(buf)
			if err != nil {
				break // timed out: unanswered
			}
			rm, err := icmp.ParseMessage(1, buf[:k])
			if err != nil || rm.Type != ipv4.ICMPTypeEchoReply {
				continue
			}
			if e, ok := rm.Body.(*icmp.Echo); ok && e.ID == id && e.Seq == seq {
				rtts = append(rtts, time.Since(start))
				break
			}
		}
	}
	return rtts
}

// transfer sends size random bytes over TCP from a to b and checks their SHA-256.
func (r *rig) transfer(t *testing.T, size int) {
	t.Helper()
	var ln net.Listener
	if err := testutil.InNetns(r.b, func() error {
		var err error
		ln, err = net.Listen("tcp4", net.JoinHostPort(r.ipB.String(), "0"))
		return err
	}); err != nil {
		t.Fatalf("listen in %s: %v", r.b, err)
	}
	defer ln.Close()
	got := make(chan [32]byte, 1)
	errc := make(chan error, 1)
	go func() {
		ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second))
		c, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(60 * time.Second))
		h := sha256.New()
		if _, err := io.Copy(h, c); err != nil {
			errc <- err
			return
		}
		var s [32]byte
		copy(s[:], h.Sum(nil))
		got <- s
	}()
	data := make([]byte, size)
	rand.Read(data)
	want := sha256.Sum256(data)
	var c net.Conn
	if err := testutil.InNetns(r.a, func() error {
		var err error
		c, err = net.DialTimeout("tcp4", ln.Addr().String(), 10*time.Second)
		return err
	}); err != nil {
		t.Fatalf("dial from %s: %v", r.a, err)
	}
	c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := c.Write(data); err != nil {
		c.Close()
		t.Fatalf("write: %v", err)
	}
	c.Close()
	select {
	case s := <-got:
		if s != want {
			t.Fatalf("%d bytes through the ports: SHA-256 %x, sent %x", size, s, want)
		}
	case err := <-errc:
		t.Fatalf("receive: %v", err)
	case <-time.After(90 * time.Second):
		t.Fatal("transfer did not finish in 90 s")
	}
}

func (r *rig) String() string { return fmt.Sprintf("%s|%s|%s", r.a, r.m, r.b) }

// macB is the MAC of b's end, xb0.
func (r *rig) macB(t *testing.T) string {
	t.Helper()
	var mac string
	if err := testutil.InNetns(r.b, func() error {
		ifc, err := net.InterfaceByName("xb0")
		if err == nil {
			mac = ifc.HardwareAddr.String()
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return mac
}

// recreateB makes b's veth pair (xb0 in b, mb in m) again after a test deleted it, as
// newRig did: b's address, TX checksum offload off, both ends up. xb0 gets mac, the one
// it had, so that a's neighbour entry still holds; mb has a new ifindex.
func (r *rig) recreateB(t *testing.T, mac string) {
	t.Helper()
	testutil.IP(t, "link", "add", "xb0", "netns", r.b, "address", mac, "type", "veth", "peer", "name", r.mb, "netns", r.m)
	testutil.IPIn(t, r.b, "addr", "add", r.ipB.String()+"/24", "dev", "xb0")
	r.txChecksumOff(t, r.b, "xb0")
	testutil.IPIn(t, r.b, "link", "set", "xb0", "up")
	testutil.IPIn(t, r.m, "link", "set", r.mb, "up")
}

// icmpConn is an ICMP socket on a's address, opened in netns a.
func (r *rig) icmpConn(t *testing.T) *icmp.PacketConn {
	t.Helper()
	var c *icmp.PacketConn
	if err := testutil.InNetns(r.a, func() error {
		var err error
		c, err = icmp.ListenPacket("ip4:icmp", r.ipA.String())
		return err
	}); err != nil {
		t.Fatalf("icmp socket in %s: %v", r.a, err)
	}
	return c
}

// attachOther attaches prog to interface ifname of netns m in generic mode, through
// netlink as another program's loader would; the caller closes the link.
func (r *rig) attachOther(t *testing.T, ifname string, prog *ebpf.Program) link.Link {
	t.Helper()
	var lk link.Link
	if err := testutil.InNetns(r.m, func() error {
		l, err := netlink.LinkByName(ifname)
		if err != nil {
			return err
		}
		lk, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: l.Attrs().Index, Flags: link.XDPGenericMode})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return lk
}

// pingFlood sends an echo request from a to b every interval until stop is closed,
// without waiting for answers: traffic into the ports while a test changes them.
func (r *rig) pingFlood(t *testing.T, interval time.Duration, stop <-chan struct{}) (done <-chan struct{}) {
	t.Helper()
	c := r.icmpConn(t)
	d := make(chan struct{})
	go func() {
		defer close(d)
		defer c.Close()
		tk := time.NewTicker(interval)
		defer tk.Stop()
		for seq := 1; ; seq++ {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			m := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: 0x5a5a, Seq: seq & 0xffff, Data: []byte("flood")}}
			if wb, err := m.Marshal(nil); err == nil {
				c.WriteTo(wb, &net.IPAddr{IP: r.ipB}) // errors (no neighbour yet) are part of it
			}
		}
	}()
	return d
}
