package daemon

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

// bridgeFrame is a 64-byte frame from src to dst (last bytes of 02:00:00:00:00:xx, 0xff
// broadcast), tagged with vlan when it is not 0, carrying id.
func bridgeFrame(dst, src byte, vlan uint16, id uint16) []byte {
	d := []byte{2, 0, 0, 0, 0, dst}
	if dst == 0xff {
		d = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	f := append(d, 2, 0, 0, 0, 0, src)
	if vlan != 0 {
		f = binary.BigEndian.AppendUint16(f, 0x8100)
		f = binary.BigEndian.AppendUint16(f, vlan)
	}
	f = binary.BigEndian.AppendUint16(f, 0x88b5)
	f = binary.BigEndian.AppendUint16(f, id)
	return append(f, make([]byte, 64-len(f))...)
}

// TestBridge: the daemon switches between three sim ports (two access ports of VLAN 10,
// a trunk) on two poll threads, and shows the MAC table in /status and the bridge's
// counters in /metrics.
func TestBridge(t *testing.T) {
	n := t.Name()
	cfg := testConfig(t, fmt.Sprintf(`
ports:
  - {name: a, driver: sim, wire: "pair:%[1]s0", promiscuous: true, tx_queues: 2}
  - {name: b, driver: sim, wire: "pair:%[1]s1", promiscuous: true, tx_queues: 2}
  - {name: c, driver: sim, wire: "pair:%[1]s2", promiscuous: true, tx_queues: 2}
forward: {mode: bridge}
bridge:
  ports:
    - {port: a, pvid: 10}
    - {port: b, pvid: 10}
    - {port: c, vlans: [10], tagged_only: true}
poll: {mode: busy}
`, n))
	cfg.Poll.CPUs = []int{-1, -1} // two unpinned threads
	c := openWireEnds(t, n, 3)
	d, _ := startDaemon(t, cfg)
	// A's broadcast: untagged out of b, tagged out of c.
	if err := c.gen[0].Send(bridgeFrame(0xff, 0xa, 0, 1)); err != nil {
		t.Fatal(err)
	}
	c.wait(t, "the broadcast", func(got [][][]byte) bool { return len(got[1]) == 1 && len(got[2]) == 1 })
	// C (behind the trunk) answers A: only out of a, untagged.
	if err := c.gen[2].Send(bridgeFrame(0xa, 0xc, 10, 2)); err != nil {
		t.Fatal(err)
	}
	c.wait(t, "the answer", func(got [][][]byte) bool { return len(got[0]) == 1 })
	c.frames(func(got [][][]byte) {
		bcast, answer := bridgeFrame(0xff, 0xa, 0, 1), bridgeFrame(0xa, 0xc, 10, 2)
		tagged := append(append(bytes.Clone(bcast[:12]), 0x81, 0, 0, 10), bcast[12:]...)
		untagged := append(bytes.Clone(answer[:12]), answer[16:]...)
		if !bytes.Equal(got[1][0], bcast) || !bytes.Equal(got[2][0], tagged) || !bytes.Equal(got[0][0], untagged) {
			t.Errorf("frames out: a % x\nb % x\nc % x", got[0][0], got[1][0], got[2][0])
		}
	})
	st := d.Status()
	if st.Bridge == nil || st.Bridge.Entries != 2 || len(st.Bridge.FDB) != 2 || st.Bridge.Ageing != "5m0s" {
		t.Fatalf("status bridge %+v: want 2 entries", st.Bridge)
	}
	for i, want := range []BridgeEntry{{MAC: "02:00:00:00:00:0a", VLAN: 10, Port: "a"}, {MAC: "02:00:00:00:00:0c", VLAN: 10, Port: "c"}} {
		if e := st.Bridge.FDB[i]; e.MAC != want.MAC || e.VLAN != want.VLAN || e.Port != want.Port {
			t.Errorf("fdb[%d] = %+v, want %+v", i, e, want)
		}
	}
	if p := st.Bridge.Ports[0]; p.Learned != 1 || p.Flooded != 1 || p.Entries != 1 {
		t.Errorf("port a's counters %+v", p)
	}
	rec := httptest.NewRecorder()
	d.metricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, m := range []string{`uiod_bridge_learned_total{port="a"} 1`, `uiod_bridge_flooded_total{port="a"} 1`,
		`uiod_bridge_fdb_entries{port="c"} 1`, `uiod_bridge_dropped_total{port="b"} 0`} {
		if !strings.Contains(rec.Body.String(), m) {
			t.Errorf("metrics lack %s", m)
		}
	}
}
