package bridge

import (
	"bytes"
	"testing"

	"github.com/uiod/uiod/dataplane"
)

// FuzzFrame runs any bytes through the parser and the bridge: neither panics, a frame
// parse takes has its headers, and every frame the bridge sends is the input with the tag
// the output port wants, in the input's VLAN.
func FuzzFrame(f *testing.F) {
	f.Add(testFrame(bc, mA, -1, 0, 1), uint8(0))
	f.Add(testFrame(mB, mA, 10, 3, 1), uint8(2))
	f.Add(testFrame(bc, mA, 0, 7, 1), uint8(0))
	f.Add(testFrame("01:80:c2:00:00:00", mA, -1, 0, 1), uint8(1))
	f.Add(testFrame(bc, mA, 20, 0, 1)[:18], uint8(2))
	f.Add([]byte{0x81, 0}, uint8(3))
	r := newRig(f, Config{Ports: vlanPorts()})
	f.Fuzz(func(t *testing.T, in []byte, port uint8) {
		if len(in) > 2000 {
			in = in[:2000]
		}
		fr, res := parse(in)
		switch {
		case res == parseOK && len(in) < ethHeader:
			t.Fatalf("a %d-byte frame parsed", len(in))
		case res == parseOK && fr.tagged && len(in) < ethHeader+tagLen:
			t.Fatalf("a %d-byte tagged frame parsed", len(in))
		}
		r.t = t
		p := port % 4
		d := r.burst(0, dataplane.PortID(p), in)[0]
		if res != parseOK && d.drop == "" {
			t.Fatalf("a frame parse refused (%d) was sent", res)
		}
		for to, out := range d.sent {
			o, ores := parse(out)
			if ores == parseRunt && len(out) >= ethHeader {
				// An inner 0x8100 left outermost by the untagging, too short for a tag.
				if !bytes.Equal(out, untag(in)) {
					t.Fatalf("port %d got % x from % x", to, out, in)
				}
				continue
			}
			if ores != parseOK {
				t.Fatalf("sent a frame that does not parse: % x", out)
			}
			vlan := r.app.ports[p].pvid // the input's VLAN
			if fr.tagged && fr.tci&vidMask != 0 {
				vlan = fr.tci & vidMask
			}
			pvid := r.app.ports[to].pvid
			if o.tagged && (o.tci&vidMask != vlan || pvid == vlan) || !o.tagged && pvid != vlan {
				t.Fatalf("port %d (pvid %d) got tagged %v, tci %#x, from vlan %d", to, pvid, o.tagged, o.tci, vlan)
			}
			if !bytes.Equal(untag(out), untag(in)) {
				t.Fatalf("port %d got % x from % x", to, out, in)
			}
		}
	})
}
