package daemon

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/internal/testutil"
)

// l3fwdConfig is three sim ports on the wires pair:NAME0..2 routing 10.1/16 to c, a /32
// to b and the rest to a, on two poll threads.
func l3fwdConfig(t *testing.T, name string, txQueues int) *config.Config {
	t.Helper()
	return testConfig(t, fmt.Sprintf(`
ports:
  - {name: a, driver: sim, wire: "pair:%[1]s0", promiscuous: true, tx_queues: %[2]d}
  - {name: b, driver: sim, wire: "pair:%[1]s1", promiscuous: true, tx_queues: %[2]d}
  - {name: c, driver: sim, wire: "pair:%[1]s2", promiscuous: true, tx_queues: %[2]d}
forward:
  mode: l3fwd
  routes:
    - {prefix: 10.1.0.0/16, port: c, next_hop_mac: "02:00:00:00:0c:01"}
    - {prefix: 10.1.2.3/32, port: b, next_hop_mac: "02:00:00:00:0b:01"}
    - {prefix: 0.0.0.0/0, port: a, next_hop_mac: "02:00:00:00:0a:01"}
poll: {mode: busy}
`, name, txQueues))
}

// ipv4Frame is a 64-byte IPv4/UDP frame to dst with the given TTL and seq in its payload.
func ipv4Frame(dst net.IP, ttl uint8, seq uint32) []byte {
	f := make([]byte, 64)
	copy(f, []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 9, 0x08, 0x00})
	h := f[14:34]
	h[0] = 0x45
	binary.BigEndian.PutUint16(h[2:], 50)
	h[8], h[9] = ttl, 17
	copy(h[12:], net.IPv4(192, 0, 2, 1).To4())
	copy(h[16:], dst.To4())
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(h[10:], ^uint16(sum))
	binary.BigEndian.PutUint32(f[60:], seq)
	return f
}

// TestL3fwd: the daemon routes frames to the port and next hop of their longest prefix,
// with their TTL decremented, and counts what it cannot route by reason, on two poll
// threads that each send to every port.
func TestL3fwd(t *testing.T) {
	cfg := l3fwdConfig(t, t.Name(), 2)
	cfg.Poll.CPUs = []int{-1, -1} // two unpinned threads
	c := openWireEnds(t, t.Name(), 3)
	d, _ := startDaemon(t, cfg)
	sends := []struct {
		port int
		dst  net.IP
		ttl  uint8
		to   int // -1: not forwarded
		mac  string
	}{
		{0, net.IPv4(10, 1, 9, 9), 64, 2, "02:00:00:00:0c:01"},
		{1, net.IPv4(10, 1, 2, 3), 64, 1, "02:00:00:00:0b:01"},
		{2, net.IPv4(8, 8, 8, 8), 64, 0, "02:00:00:00:0a:01"},
		{0, net.IPv4(10, 1, 9, 9), 1, -1, ""},
	}
	for i, s := range sends {
		f := ipv4Frame(s.dst, s.ttl, uint32(i))
		copy(f, d.ports[s.port].nic.MAC()) // l3fwd routes only what is sent to the port's MAC
		if err := c.gen[s.port].Send(f); err != nil {
			t.Fatal(err)
		}
	}
	c.wait(t, "forwarded frames did not arrive", func(got [][][]byte) bool { return len(got[0])+len(got[1])+len(got[2]) >= 3 })
	c.frames(func(got [][][]byte) {
		for i, s := range sends {
			if s.to < 0 {
				continue
			}
			if len(got[s.to]) == 0 {
				t.Errorf("frame %d: nothing out of port %d", i, s.to)
				continue
			}
			f := got[s.to][0]
			got[s.to] = got[s.to][1:]
			want := ipv4Frame(s.dst, s.ttl-1, uint32(i))
			mac, _ := net.ParseMAC(s.mac)
			copy(want, mac)
			copy(want[6:], d.ports[s.to].nic.MAC())
			if !bytes.Equal(f, want) {
				t.Errorf("frame %d out of port %d:\n got % x\nwant % x", i, s.to, f, want)
			}
		}
	})
	if !testutil.WaitFor(5*time.Second, func() bool {
		for _, q := range d.dp.Stats() {
			if q.DropsBy["ttl_expired"] == 1 {
				return true
			}
		}
		return false
	}) {
		t.Errorf("the TTL 1 frame was not counted under ttl_expired: %+v", d.dp.Stats())
	}
}

// TestL3fwdTooFewTxQueues: a port with fewer TX queues than poll threads is refused at
// start, naming the port, and nothing is left running.
func TestL3fwdTooFewTxQueues(t *testing.T) {
	cfg := l3fwdConfig(t, t.Name(), 1)
	cfg.Poll.CPUs = []int{-1, -1}
	d := New(cfg, Options{})
	err := d.Start()
	if err == nil || !strings.Contains(err.Error(), "port a has 1 tx_queues, fewer than the 2 poll threads") {
		t.Fatalf("Start = %v", err)
	}
	if d.dp != nil || len(d.ports) != 0 {
		t.Error("a failed start left the dataplane or ports open")
	}
}
