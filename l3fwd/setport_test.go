package l3fwd

import (
	"net"
	"net/netip"
	"testing"

	"github.com/uiod/uiod/dataplane"
)

// TestSetPort: a port's new MAC is the one the router takes frames for (the fast path's
// and the slow path's check), the next hops leaving by it carry it as source, static and
// dynamic ones alike, and its new MTU bounds what it forwards; the tables publish a new
// generation and the dataplane's Process agrees with Forward throughout.
func TestSetPort(t *testing.T) {
	r := newProcessRig(t)
	a := r.a
	if _, err := a.Update([]Route{{Prefix: netip.MustParsePrefix("10.7.0.0/16"), Port: 1, NextHopMAC: macNH2}}, nil); err != nil {
		t.Fatal(err)
	}
	new0 := net.HardwareAddr{0x02, 0, 0, 0, 0xdd, 0}
	new1 := net.HardwareAddr{0x02, 0, 0, 0, 0xdd, 1}
	to := func(dst net.HardwareAddr, ip string, payload int) []byte {
		return frame{dst: dst, src: macSrc, from: src4, to: netip.MustParseAddr(ip), ttl: 64, payload: payload}.build()
	}
	gen := a.FIB().Generation
	if _, err := a.SetPort(0, new0, 0); err != nil {
		t.Fatal(err)
	}
	st, err := a.SetPort(1, new1, 1400)
	if err != nil {
		t.Fatal(err)
	}
	if st.Generation != gen+2 || st.Static != 4 || st.Dynamic != 1 {
		t.Errorf("FIB after two SetPorts %+v, want generation %d and the routes kept", st, gen+2)
	}
	if _, _, reason, ok := a.Forward(0, to(macP0, "10.1.0.1", 32)); ok {
		t.Error("a frame to port 0's old MAC was forwarded")
	} else {
		t.Logf("to the old MAC: %v", reason)
	}
	for _, ip := range []string{"10.1.0.1", "10.7.0.1"} {
		f := to(new0, ip, 32)
		p, _, reason, ok := a.Forward(0, f)
		if !ok || p != 1 || net.HardwareAddr(f[6:12]).String() != new1.String() {
			t.Errorf("%s to port 0's new MAC: port %d ok %v (%v), source %s: want port 1 from %s", ip, p, ok, reason, net.HardwareAddr(f[6:12]), new1)
		}
	}
	// IP packets of 1400 bytes leave by port 1; of 1401 they do not.
	if _, _, reason, ok := a.Forward(0, to(new0, "10.1.0.1", 1400-28)); !ok {
		t.Errorf("a 1400-byte packet to port 1 (MTU 1400) not forwarded: %v", reason)
	}
	if _, _, reason, ok := a.Forward(0, to(new0, "10.1.0.1", 1401-28)); ok {
		t.Error("a 1401-byte packet forwarded to port 1 of MTU 1400")
	} else {
		t.Logf("over the new MTU: %v", reason)
	}
	r.run(t, [][][]byte{
		{to(new0, "10.1.0.1", 32), to(new0, "10.7.0.9", 32), to(new0, "10.9.0.1", 32)},
		{to(macP0, "10.1.0.1", 32), to(new0, "10.1.0.1", 1401-28), to(new0, "10.1.2.3", 32)},
	})
	for _, bad := range []struct {
		port int
		mac  net.HardwareAddr
		mtu  int
	}{{2, new0, 0}, {0, net.HardwareAddr{1, 0, 0, 0, 0, 1}, 0}, {0, new0, 67}} {
		if _, err := a.SetPort(dataplane.PortID(bad.port), bad.mac, bad.mtu); err == nil {
			t.Errorf("SetPort(%d, %v, %d) accepted", bad.port, bad.mac, bad.mtu)
		}
	}
}
