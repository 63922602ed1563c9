package bridge

import (
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/dataplane"
)

// step is one frame of a scenario: received on port in after the clock moved by wait,
// and what should become of it.
type step struct {
	name string
	wait time.Duration
	in   dataplane.PortID
	f    []byte
	want string // describe's rendering
}

const (
	mA = "02:00:00:00:00:0a"
	mB = "02:00:00:00:00:0b"
	mC = "02:00:00:00:00:0c"
	mD = "02:00:00:00:00:0d"
	mS = "02:00:00:00:00:55"
	bc = "ff:ff:ff:ff:ff:ff"
	mc = "01:00:5e:01:02:03"
)

// vlanPorts: p0 access 10, p1 access 20, p2 trunk 10+20 without native VLAN, p3 trunk 10
// with native VLAN 1.
func vlanPorts() []Port {
	return []Port{
		{Name: "p0", PVID: 10},
		{Name: "p1", PVID: 20},
		{Name: "p2", VLANs: []uint16{10, 20}},
		{Name: "p3", PVID: 1, VLANs: []uint16{10}},
	}
}

func TestScenarios(t *testing.T) {
	untagged := []Port{{Name: "p0", PVID: 1}, {Name: "p1", PVID: 1}, {Name: "p2", PVID: 1}}
	tests := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{"learning and flooding, untagged", Config{Ports: untagged}, []step{
			{"A broadcasts: flooded to the others", 0, 0, testFrame(bc, mA, -1, 0, 1), "1:u 2:u"},
			{"B to A: A is known", 0, 1, testFrame(mA, mB, -1, 0, 2), "0:u"},
			{"A to B: B is known", 0, 0, testFrame(mB, mA, -1, 0, 3), "1:u"},
			{"A to C: unknown unicast is flooded", 0, 0, testFrame(mC, mA, -1, 0, 4), "1:u 2:u"},
			{"multicast is flooded", 0, 2, testFrame(mc, mC, -1, 0, 5), "0:u 1:u"},
			{"A to C: C is known now", 0, 0, testFrame(mC, mA, -1, 0, 6), "2:u"},
			{"to a MAC on the RX port: dropped", 0, 1, testFrame(mB, mD, -1, 0, 7), "drop:same_port"},
			{"A moves to port 2", 0, 2, testFrame(bc, mA, -1, 0, 8), "0:u 1:u"},
			{"B to A follows the move", 0, 1, testFrame(mA, mB, -1, 0, 9), "2:u"},
			{"a tagged frame on an untagged-only port", 0, 0, testFrame(mB, mA, 5, 0, 10), "drop:vlan_filtered"},
		}},
		{"ageing", Config{Ports: untagged, Ageing: time.Second}, []step{
			{"A broadcasts", 0, 0, testFrame(bc, mA, -1, 0, 1), "1:u 2:u"},
			{"to A within the ageing time", 900 * time.Millisecond, 1, testFrame(mA, mB, -1, 0, 2), "0:u"},
			{"A refreshes its entry", 900 * time.Millisecond, 0, testFrame(mB, mA, -1, 0, 3), "1:u"},
			{"to A, 1.8 s after its first frame, 0.9 s after its last", 900 * time.Millisecond, 2, testFrame(mA, mC, -1, 0, 4), "0:u"},
			{"to A after the ageing time: flooded", 1100 * time.Millisecond, 2, testFrame(mA, mC, -1, 0, 5), "0:u 1:u"},
		}},
		{"vlans: access and trunk", Config{Ports: vlanPorts()}, []step{
			{"A on access 10 broadcasts: VLAN 10 only, tagged on trunks", 0, 0, testFrame(bc, mA, -1, 0, 1), "2:t10 3:t10"},
			{"C on access 20 broadcasts: VLAN 20 only", 0, 1, testFrame(bc, mC, -1, 0, 2), "2:t20"},
			{"B on trunk, tagged 10, to A: untagged out of access 10", 0, 2, testFrame(mA, mB, 10, 0, 3), "0:u"},
			{"A to B: tagged out of the trunk", 0, 0, testFrame(mB, mA, -1, 0, 4), "2:t10"},
			{"B tagged 20 to A: A is not known in VLAN 20", 0, 2, testFrame(mA, mB, 20, 0, 5), "1:u"},
			{"C to B: B is not known in VLAN 20 either... it is now", 0, 1, testFrame(mB, mC, -1, 0, 6), "2:t20"},
			{"untagged on the trunk without native VLAN", 0, 2, testFrame(bc, mB, -1, 0, 7), "drop:vlan_filtered"},
			{"a VLAN the trunk does not carry", 0, 2, testFrame(bc, mB, 30, 0, 8), "drop:vlan_filtered"},
			{"tagged 20 on access 10", 0, 0, testFrame(bc, mA, 20, 0, 9), "drop:vlan_filtered"},
			{"tagged with the access port's own VLAN: taken", 0, 0, testFrame(mB, mA, 10, 0, 10), "2:t10"},
			{"priority-tagged on access 10: VLAN 10, PCP kept", 0, 0, testFrame(bc, mA, 0, 5, 11), "2:t10p5 3:t10p5"},
			{"tagged with PCP: kept on the trunk", 0, 3, testFrame(bc, mD, 10, 3, 12), "0:u 2:t10p3"},
			{"native VLAN 1 on p3: no other port in it", 0, 3, testFrame(bc, mD, -1, 0, 13), "drop:no_port"},
			{"MAC move across trunks in VLAN 10", 0, 3, testFrame(bc, mA, 10, 0, 14), "0:u 2:t10"},
			{"B to A follows it", 0, 2, testFrame(mA, mB, 10, 0, 15), "3:t10"},
		}},
		{"link local and bad frames", Config{Ports: untagged}, []step{
			{"STP BPDU", 0, 0, testFrame("01:80:c2:00:00:00", mA, -1, 0, 1), "drop:link_local"},
			{"LLDP", 0, 0, testFrame("01:80:c2:00:00:0e", mA, -1, 0, 2), "drop:link_local"},
			{"01:80:c2:00:00:10 is not reserved", 0, 0, testFrame("01:80:c2:00:00:10", mA, -1, 0, 3), "1:u 2:u"},
			{"multicast source", 0, 0, testFrame(bc, "03:00:00:00:00:01", -1, 0, 4), "drop:bad_source"},
			{"zero source", 0, 0, testFrame(bc, "00:00:00:00:00:00", -1, 0, 5), "drop:bad_source"},
			{"runt", 0, 0, testFrame(bc, mA, -1, 0, 6)[:13], "drop:runt"},
			{"runt tag", 0, 0, testFrame(bc, mA, 7, 0, 7)[:17], "drop:runt"},
			{"header only", 0, 0, testFrame(bc, mA, -1, 0, 8)[:14], "1:u 2:u"},
		}},
		{"mac limit", Config{Ports: []Port{{Name: "p0", PVID: 1, MACLimit: 2}, {Name: "p1", PVID: 1}}}, []step{
			{"A learnt", 0, 0, testFrame(bc, mA, -1, 0, 1), "1:u"},
			{"B learnt", 0, 0, testFrame(bc, mB, -1, 0, 2), "1:u"},
			{"C over the limit: forwarded, not learnt", 0, 0, testFrame(bc, mC, -1, 0, 3), "1:u"},
			{"to C: flooded", 0, 1, testFrame(mC, mD, -1, 0, 4), "0:u"},
			{"to A: known", 0, 1, testFrame(mA, mD, -1, 0, 5), "0:u"},
			{"D on p1 has no limit", 0, 0, testFrame(mD, mA, -1, 0, 6), "1:u"},
			{"A and B age out; C can be learnt", 301 * time.Second, 0, testFrame(bc, mC, -1, 0, 7), "1:u"},
			{"to C: known (p1 sent this, so p1 learnt D again)", 0, 1, testFrame(mC, mD, -1, 0, 8), "0:u"},
		}},
		{"static entries", Config{Ports: untagged, Static: []Static{{MAC: mac(mS), Port: 2}}}, []step{
			{"to S: its port, never flooded", 0, 0, testFrame(mS, mA, -1, 0, 1), "2:u"},
			{"S on another port: forwarded, not moved", 0, 1, testFrame(mA, mS, -1, 0, 2), "0:u"},
			{"to S still on port 2", 0, 0, testFrame(mS, mA, -1, 0, 3), "2:u"},
			{"a year later too", 365 * 24 * time.Hour, 0, testFrame(mS, mA, -1, 0, 4), "2:u"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.cfg)
			for _, s := range tt.steps {
				r.now += int64(s.wait)
				d := r.burst(0, s.in, s.f)
				if got := describe(t, s.f, d[0]); got != s.want {
					t.Errorf("%s: %s, want %s", s.name, got, s.want)
				}
			}
		})
	}
}

func TestFloodLimit(t *testing.T) {
	r := newRig(t, Config{Ports: []Port{{Name: "p0", PVID: 1, FloodLimit: 100}, {Name: "p1", PVID: 1}}})
	// 100 a second is one per 10 ms, bursts of 0.1 s: 11 pass at once (the first, then
	// ten ahead of time), the rest of a 20-frame burst is dropped.
	var frames [][]byte
	for i := range 20 {
		frames = append(frames, testFrame(bc, mA, -1, 0, uint16(i)))
	}
	count := func(ds []decision) (sent, limited int) {
		for _, d := range ds {
			switch {
			case len(d.sent) == 1:
				sent++
			case d.drop == "flood_limit":
				limited++
			default:
				t.Errorf("unexpected decision %+v", d)
			}
		}
		return
	}
	if s, l := count(r.burst(0, 0, frames...)); s != 11 || l != 9 {
		t.Errorf("first burst: %d flooded, %d limited; want 11, 9", s, l)
	}
	r.now += int64(50 * time.Millisecond)
	if s, l := count(r.burst(0, 0, frames...)); s != 5 || l != 15 {
		t.Errorf("50 ms later: %d flooded, %d limited; want 5, 15", s, l)
	}
	// Unicast to a known MAC is not a flood.
	r.burst(0, 1, testFrame(bc, mB, -1, 0, 99))
	if d := r.burst(0, 0, testFrame(mB, mA, -1, 0, 100)); len(d[0].sent) != 1 {
		t.Errorf("known unicast over the flood limit: %+v", d[0])
	}
	st := r.app.Stats()[0]
	if st.Flooded != 16 || st.FloodLimited != 24 || st.Dropped != 24 {
		t.Errorf("port 0 stats %+v: want 16 flooded, 24 limited and dropped", st)
	}
}

func TestCounters(t *testing.T) {
	r := newRig(t, Config{Ports: []Port{{Name: "p0", PVID: 1, MACLimit: 1}, {Name: "p1", PVID: 1}}})
	r.burst(0, 0, testFrame(bc, mA, -1, 0, 1), testFrame(bc, mB, -1, 0, 2), testFrame(mA, mC, -1, 0, 3))
	r.burst(0, 1, testFrame(bc, mA, -1, 0, 4), testFrame("01:80:c2:00:00:00", mD, -1, 0, 5))
	st := r.app.Stats()
	want := []PortStats{
		{Name: "p0", Entries: 0, Learned: 1, Refused: 2, Flooded: 2, Dropped: 1},
		{Name: "p1", Entries: 1, Moved: 1, Flooded: 1, Dropped: 1},
	}
	for i := range want {
		if st[i] != want[i] {
			t.Errorf("port %d: %+v, want %+v", i, st[i], want[i])
		}
	}
	es := r.app.Entries()
	if len(es) != 1 || es[0].MAC.String() != mA || es[0].Port != 1 || es[0].VLAN != 1 || es[0].Static {
		t.Errorf("entries %+v, want A on port 1", es)
	}
}

func TestExpire(t *testing.T) {
	r := newRig(t, Config{Ports: []Port{{Name: "p0", PVID: 1, MACLimit: 2}, {Name: "p1", PVID: 1}}, Ageing: time.Second,
		Static: []Static{{MAC: mac(mS), Port: 1}}})
	r.burst(0, 0, testFrame(bc, mA, -1, 0, 1), testFrame(bc, mB, -1, 0, 2))
	r.now += int64(600 * time.Millisecond)
	r.burst(0, 0, testFrame(bc, mB, -1, 0, 3))
	if n := r.app.Expire(); n != 0 {
		t.Errorf("Expire removed %d entries before their time", n)
	}
	r.now += int64(600 * time.Millisecond)
	if n := r.app.Expire(); n != 1 {
		t.Errorf("Expire removed %d entries, want A's", n)
	}
	if es := r.app.Entries(); len(es) != 2 || es[0].MAC.String() != mB || es[0].Age != 600*time.Millisecond || !es[1].Static {
		t.Errorf("entries %+v: want B, 600 ms old, and S", es)
	}
	if st := r.app.Stats()[0]; st.Entries != 1 {
		t.Errorf("port 0 has %d entries after the ageing, want 1", st.Entries)
	}
	// The slot A left is a tombstone: B is still found past it, and C takes a free place.
	r.burst(0, 0, testFrame(bc, mC, -1, 0, 4))
	if es := r.app.Entries(); len(es) != 3 {
		t.Errorf("entries %+v: want B, C and S", es)
	}
}

func TestNewRefuses(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no ports", Config{}, "0 ports"},
		{"pvid 4095", Config{Ports: []Port{{PVID: 4095}}}, "pvid 4095"},
		{"vlan 0", Config{Ports: []Port{{VLANs: []uint16{0}}}}, "vlan 0"},
		{"pvid in vlans", Config{Ports: []Port{{PVID: 5, VLANs: []uint16{5}}}}, "is the port's pvid"},
		{"vlan twice", Config{Ports: []Port{{VLANs: []uint16{5, 5}}}}, "twice"},
		{"ageing", Config{Ports: []Port{{PVID: 1}}, Ageing: time.Millisecond}, "ageing 1ms"},
		{"static multicast", Config{Ports: []Port{{PVID: 1}}, Static: []Static{{MAC: mac(bc)}}}, "unicast"},
		{"static port", Config{Ports: []Port{{PVID: 1}}, Static: []Static{{MAC: mac(mS), Port: 3}}}, "port 3"},
		{"static vlan", Config{Ports: []Port{{Name: "x", PVID: 1}}, Static: []Static{{MAC: mac(mS), VLAN: 7}}}, "vlan 7: port x"},
		{"static twice", Config{Ports: []Port{{PVID: 1}}, Static: []Static{{MAC: mac(mS)}, {MAC: mac(mS)}}}, "second entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app, err := New(tt.cfg)
			if err == nil {
				app.Close()
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to say %q", err, tt.want)
			}
		})
	}
}
