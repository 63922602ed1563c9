package virtio

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"

	"github.com/uiod/uiod/internal/hw/virtiospec"
)

// filterModel is a model whose driver accepted every filter feature, with its control
// commands run directly.
func filterModel(t testing.TB, feats uint64) *Model {
	m, err := New(Config{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	m.drvFeatures = feats
	return m
}

const filterFeats = 1<<virtiospec.FeatVersion1 | 1<<virtiospec.FeatCtrlVQ | 1<<virtiospec.FeatCtrlRX | 1<<virtiospec.FeatCtrlMACAddr

// table builds a MAC_TABLE_SET command.
func table(uni, multi [][]byte) []byte {
	c := []byte{virtiospec.CtrlClassMAC, virtiospec.CtrlMACTableSet}
	for _, l := range [][][]byte{uni, multi} {
		c = binary.LittleEndian.AppendUint32(c, uint32(len(l)))
		for _, a := range l {
			c = append(c, a...)
		}
	}
	return c
}

var (
	mcA = []byte{0x33, 0x33, 0, 0, 0, 1}
	mcB = []byte{0x33, 0x33, 0, 0, 0, 2}
	ucA = []byte{0x02, 1, 2, 3, 4, 5}
)

func frameTo(dst []byte) []byte { return append(append([]byte(nil), dst...), make([]byte, 54)...) }

// TestFilterCommands runs QEMU's receive filter: promiscuous after reset, then the table
// and modes the commands set, and VIRTIO_NET_ERR for every malformed command (the filter
// left as it was).
func TestFilterCommands(t *testing.T) {
	m := filterModel(t, filterFeats)
	if !m.accepts(frameTo(ucA)) || !m.accepts(frameTo(mcA)) {
		t.Fatal("a reset device is not promiscuous")
	}
	ok := func(c []byte) {
		t.Helper()
		if s := m.command(c); s != virtiospec.CtrlOK {
			t.Fatalf("command % x: ack %d", c, s)
		}
	}
	ok([]byte{virtiospec.CtrlClassRX, virtiospec.CtrlRXPromisc, 0})
	ok(table(nil, [][]byte{mcA}))
	for _, c := range []struct {
		dst  []byte
		want bool
	}{{defaultMAC, true}, {ucA, false}, {mcA, true}, {mcB, false}, {[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, true}} {
		if got := m.accepts(frameTo(c.dst)); got != c.want {
			t.Errorf("filter with table [%x]: %x accepted %v, want %v", mcA, c.dst, got, c.want)
		}
	}
	ok([]byte{virtiospec.CtrlClassMAC, virtiospec.CtrlMACAddrSet, 2, 1, 2, 3, 4, 5})
	if !m.accepts(frameTo(ucA)) || m.accepts(frameTo(defaultMAC)) {
		t.Error("MAC_ADDR_SET did not move the station address")
	}
	ok([]byte{virtiospec.CtrlClassRX, virtiospec.CtrlRXAllMulti, 1})
	if !m.accepts(frameTo(mcB)) {
		t.Error("all-multicast refused a group")
	}
	ok([]byte{virtiospec.CtrlClassRX, virtiospec.CtrlRXAllMulti, 0})
	var many [][]byte
	for i := 0; i < macTableEntries+1; i++ {
		many = append(many, []byte{0x33, 0x33, 1, 0, 0, byte(i)})
	}
	ok(table(nil, many))
	if f := m.Filter(); !f.MulticastOver || len(f.Multicast) != 0 || !m.accepts(frameTo(mcB)) {
		t.Errorf("65 groups: filter %+v, want the multicast overflow", f)
	}
	ok(table([][]byte{mcB[:6:6]}, [][]byte{mcA})) // QEMU keeps whatever the unicast list holds
	before := m.Filter()
	for name, c := range map[string][]byte{
		"rx mode without data":  {virtiospec.CtrlClassRX, virtiospec.CtrlRXPromisc},
		"rx mode with 2 bytes":  {virtiospec.CtrlClassRX, virtiospec.CtrlRXPromisc, 1, 0},
		"unknown rx command":    {virtiospec.CtrlClassRX, 9, 1},
		"mac address of 5":      {virtiospec.CtrlClassMAC, virtiospec.CtrlMACAddrSet, 2, 1, 2, 3, 4},
		"mac address of 7":      {virtiospec.CtrlClassMAC, virtiospec.CtrlMACAddrSet, 2, 1, 2, 3, 4, 5, 6},
		"table without counts":  {virtiospec.CtrlClassMAC, virtiospec.CtrlMACTableSet},
		"table, one count":      {virtiospec.CtrlClassMAC, virtiospec.CtrlMACTableSet, 0, 0, 0, 0},
		"table, short multi":    table(nil, [][]byte{mcA})[:13],
		"table, trailing bytes": append(table(nil, [][]byte{mcA}), 0),
		"table, unicast beyond": table([][]byte{mcA, mcA}, nil)[:16],
		"unknown mac command":   {virtiospec.CtrlClassMAC, 7},
	} {
		if s := m.command(c); s != virtiospec.CtrlErr {
			t.Errorf("%s: ack %d, want VIRTIO_NET_ERR", name, s)
		}
	}
	if after := m.Filter(); !sameFilter(before, after) {
		t.Errorf("malformed commands changed the filter: %+v → %+v", before, after)
	}
	m.dev.Lock()
	m.reset()
	m.dev.Unlock()
	if f := m.Filter(); !f.Promisc || len(f.Multicast) != 0 || !bytes.Equal(f.MAC, defaultMAC) {
		t.Errorf("after reset: %+v, want promiscuous with the configured address", f)
	}
}

func sameFilter(a, b Filter) bool {
	eq := func(x, y [][]byte) bool {
		return len(x) == len(y) && (len(x) == 0 || bytes.Equal(bytes.Join(x, nil), bytes.Join(y, nil)))
	}
	conv := func(l []net.HardwareAddr) [][]byte {
		var out [][]byte
		for _, a := range l {
			out = append(out, a)
		}
		return out
	}
	return a.Promisc == b.Promisc && a.AllMulti == b.AllMulti && bytes.Equal(a.MAC, b.MAC) &&
		a.UnicastOver == b.UnicastOver && a.MulticastOver == b.MulticastOver &&
		eq(conv(a.Unicast), conv(b.Unicast)) && eq(conv(a.Multicast), conv(b.Multicast))
}

// TestFilterCommandsNeedFeatures: each command is refused when its feature was not
// negotiated.
func TestFilterCommandsNeedFeatures(t *testing.T) {
	m := filterModel(t, 1<<virtiospec.FeatVersion1|1<<virtiospec.FeatCtrlVQ)
	for _, c := range [][]byte{
		{virtiospec.CtrlClassRX, virtiospec.CtrlRXPromisc, 0},
		table(nil, [][]byte{mcA}),
		{virtiospec.CtrlClassMAC, virtiospec.CtrlMACAddrSet, 2, 1, 2, 3, 4, 5},
	} {
		if s := m.command(c); s != virtiospec.CtrlErr {
			t.Errorf("command % x without its feature: ack %d", c, s)
		}
	}
	if !m.Filter().Promisc {
		t.Error("the device left promiscuous mode")
	}
}

// FuzzControlCommand runs arbitrary control commands: none panics, each is answered OK
// or VIRTIO_NET_ERR, and one answered VIRTIO_NET_ERR leaves the filter as it was.
func FuzzControlCommand(f *testing.F) {
	f.Add(table(nil, [][]byte{mcA}))
	f.Add(table([][]byte{ucA}, [][]byte{mcA, mcB}))
	f.Add([]byte{virtiospec.CtrlClassRX, virtiospec.CtrlRXAllMulti, 1})
	f.Add([]byte{virtiospec.CtrlClassMAC, virtiospec.CtrlMACAddrSet, 2, 1, 2, 3, 4, 5})
	f.Add([]byte{virtiospec.CtrlClassMAC, virtiospec.CtrlMACTableSet, 0xff, 0xff, 0xff, 0xff})
	m := filterModel(f, filterFeats)
	f.Fuzz(func(t *testing.T, c []byte) {
		before := m.Filter()
		s := m.command(c)
		switch s {
		case virtiospec.CtrlOK:
		case virtiospec.CtrlErr:
			if after := m.Filter(); !sameFilter(before, after) {
				t.Fatalf("refused command % x changed the filter", c)
			}
		default:
			t.Fatalf("ack %d", s)
		}
		if f := m.Filter(); len(f.Unicast)+len(f.Multicast) > macTableEntries {
			t.Fatalf("table of %d+%d entries", len(f.Unicast), len(f.Multicast))
		}
	})
}
