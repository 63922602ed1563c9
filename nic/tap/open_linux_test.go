package tap

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
)

// openIn opens a port in namespace ns; it is closed at cleanup.
func openIn(t *testing.T, ns string, cfg Config) (*Port, error) {
	t.Helper()
	var p *Port
	err := testutil.InNetns(ns, func() (err error) {
		p, err = Open(cfg)
		return err
	})
	if err == nil {
		t.Cleanup(func() { p.Close() })
	}
	return p, err
}

// link is what `ip -j link show` says about an interface.
type link struct {
	Name    string   `json:"ifname"`
	MAC     string   `json:"address"`
	MTU     int      `json:"mtu"`
	Flags   []string `json:"flags"`
	Missing bool     `json:"-"`
}

func (l link) up() bool {
	for _, f := range l.Flags {
		if f == "UP" {
			return true
		}
	}
	return false
}

// showLink describes interface name in ns (Missing if there is none).
func showLink(t *testing.T, ns, name string) link {
	t.Helper()
	out := testutil.IPIn(t, ns, "-j", "link", "show")
	var links []link
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		t.Fatalf("ip -j link show: %v: %s", err, out)
	}
	for _, l := range links {
		if l.Name == name {
			return l
		}
	}
	return link{Name: name, Missing: true}
}

func TestIntegrationOpen(t *testing.T) {
	ns := testutil.TAPNetns(t, "uiod-tap")
	mac := net.HardwareAddr{2, 0x75, 0x69, 0x6f, 0x64, 1}
	p, err := openIn(t, ns, Config{Name: "uiodk0", MAC: mac, MTU: 1400, TxQueues: 3})
	if err != nil {
		t.Fatal(err)
	}
	l := showLink(t, ns, "uiodk0")
	if l.Missing || l.MAC != mac.String() || l.MTU != 1400 || !l.up() {
		t.Fatalf("interface %+v, want %s, mtu 1400, up", l, mac)
	}
	if p.NumRxQueues() != 1 || p.NumTxQueues() != 3 || p.MAC().String() != mac.String() || !p.Link().Up {
		t.Fatalf("port: %d rx, %d tx queues, mac %s, link %+v", p.NumRxQueues(), p.NumTxQueues(), p.MAC(), p.Link())
	}

	// The kernel answers ARP for its address on the interface: request in by TX, reply
	// out by RX.
	testutil.IPIn(t, ns, "addr", "add", "10.77.0.1/24", "dev", "uiodk0")
	me := net.HardwareAddr{2, 0, 0, 0, 0, 2}
	req := testutil.ARPRequest(me, [4]byte{10, 77, 0, 2}, [4]byte{10, 77, 0, 1})
	pool, err := nic.NewMempool(&nic.HeapDMA{}, 8, 2048)
	if err != nil {
		t.Fatal(err)
	}
	bufs := make([]*nic.Buf, 32)
	var reply []byte
	ok := testutil.WaitFor(10*time.Second, func() bool {
		b := pool.Get()
		b.SetLen(copy(b.Data(), req))
		bufs[0] = b
		p.TxBurst(2, bufs[:1])
		return testutil.WaitFor(100*time.Millisecond, func() bool {
			n := p.RxBurst(0, bufs)
			for _, f := range bufs[:n] {
				fb := f.Bytes()
				if len(fb) >= 42 && binary.BigEndian.Uint16(fb[12:]) == 0x0806 && binary.BigEndian.Uint16(fb[20:]) == 2 {
					reply = append([]byte(nil), fb...)
				}
				f.Free()
			}
			return reply != nil
		})
	})
	if !ok {
		t.Fatalf("no ARP reply from the kernel (stats %+v)", p.Stats())
	}
	if !bytes.Equal(reply[0:6], me) || !bytes.Equal(reply[6:12], mac) || !bytes.Equal(reply[22:28], mac) {
		t.Fatalf("ARP reply % x: want it to %s from %s", reply[:42], me, mac)
	}

	// An interface taken down refuses frames: counted, and the port keeps going.
	testutil.IPIn(t, ns, "link", "set", "uiodk0", "down")
	b := pool.Get()
	b.SetLen(copy(b.Data(), req))
	bufs[0] = b
	if n := p.TxBurst(0, bufs[:1]); n != 1 {
		t.Fatalf("TxBurst took %d", n)
	}
	testutil.Eventually(t, 2*time.Second, func() bool { return p.Counters().TxWriteErrors == 1 }, "counters %+v: want the frame the down interface refused", p.Counters())

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if l := showLink(t, ns, "uiodk0"); !l.Missing {
		t.Fatalf("interface still there after Close: %+v", l)
	}
}

// TestIntegrationAttach: a persistent TAP (ip tuntap add) is attached to and given back
// as it was: address, MTU and down.
func TestIntegrationAttach(t *testing.T) {
	ns := testutil.TAPNetns(t, "uiod-tap")
	testutil.IPIn(t, ns, "tuntap", "add", "dev", "uiodp0", "mode", "tap")
	before := showLink(t, ns, "uiodp0")
	for _, name := range []string{"uiodp0", "uiodnone0"} { // a persistent TAP, nothing
		if err := testutil.InNetns(ns, func() error { return Available(name) }); err != nil {
			t.Fatalf("Available(%s): %v", name, err)
		}
	}
	mac := net.HardwareAddr{2, 0x75, 0x69, 0x6f, 0x64, 2}
	p, err := openIn(t, ns, Config{Name: "uiodp0", MAC: mac, MTU: 1280})
	if err != nil {
		t.Fatal(err)
	}
	if l := showLink(t, ns, "uiodp0"); l.MAC != mac.String() || l.MTU != 1280 || !l.up() {
		t.Fatalf("attached interface %+v, want %s, mtu 1280, up", l, mac)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	after := showLink(t, ns, "uiodp0")
	if after.Missing || after.MAC != before.MAC || after.MTU != before.MTU || after.up() != before.up() {
		t.Fatalf("after Close %+v, want it as before: %+v", after, before)
	}
}

// TestIntegrationRefuse: interfaces Open must not take are refused with an error naming
// them, and left as they were.
func TestIntegrationRefuse(t *testing.T) {
	ns := testutil.TAPNetns(t, "uiod-tap")
	testutil.IPIn(t, ns, "link", "add", "uiodv0", "type", "veth", "peer", "name", "uiodv1")
	testutil.IPIn(t, ns, "tuntap", "add", "dev", "uiodtun0", "mode", "tun")
	testutil.IPIn(t, ns, "tuntap", "add", "dev", "uiodmq0", "mode", "tap", "multi_queue")
	held, err := openIn(t, ns, Config{Name: "uiodheld0"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		want []string
	}{
		{"uiodv0", []string{"interface uiodv0 exists and is a veth, not a TAP"}},
		{"uiodtun0", []string{"uiodtun0", "TUN"}},
		{"uiodmq0", []string{"uiodmq0", "multi-queue"}},
		{held.Name(), []string{held.Name(), "held by another process"}},
		{"averyverylongname0", []string{"averyverylongname0", "longer than the kernel's 15"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := showLink(t, ns, c.name)
			_, err := openIn(t, ns, Config{Name: c.name, MAC: net.HardwareAddr{2, 1, 2, 3, 4, 5}, MTU: 1300})
			testutil.ErrorIs(t, err, ErrUnavailable, c.want[0])
			testutil.ErrorContains(t, err, c.want...)
			if c.name != held.Name() { // a held TAP is only found by attaching
				err := testutil.InNetns(ns, func() error { return Available(c.name) })
				testutil.ErrorIs(t, err, ErrUnavailable, c.want[0])
			}
			if after := showLink(t, ns, c.name); after.MAC != before.MAC || after.MTU != before.MTU || after.up() != before.up() || after.Missing != before.Missing {
				t.Fatalf("refused interface changed: %+v, was %+v", after, before)
			}
		})
	}
	var links []link
	if err := json.Unmarshal([]byte(testutil.IPIn(t, ns, "-j", "link", "show")), &links); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Name)
	}
	if got := strings.Join(names, " "); got != "lo uiodv1 uiodv0 uiodtun0 uiodmq0 uiodheld0" {
		t.Fatalf("interfaces %s: want only those the test made", got)
	}
}
