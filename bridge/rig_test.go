package bridge

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/nic"
)

// testFrame builds a frame from src to dst: untagged when vlan < 0, else with an 802.1Q
// tag of that VID (0: priority-tagged) and PCP pcp; EtherType 0x88b5 and id as payload.
func testFrame(dst, src string, vlan int, pcp uint16, id uint16) []byte {
	f := append([]byte{}, mac(dst)...)
	f = append(f, mac(src)...)
	if vlan >= 0 {
		f = binary.BigEndian.AppendUint16(f, tpid8021Q)
		f = binary.BigEndian.AppendUint16(f, pcp<<13|uint16(vlan))
	}
	f = binary.BigEndian.AppendUint16(f, 0x88b5)
	f = binary.BigEndian.AppendUint16(f, id)
	return append(f, make([]byte, 44)...)
}

func mac(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// decision is what the bridge did with one frame.
type decision struct {
	sent map[dataplane.PortID][]byte // port → the frame as it left
	drop string
}

// recorder is a sink that records the decisions of one frame at a time.
type recorder struct {
	frames []*nic.Buf
	d      []decision
}

func (r *recorder) at(i int) *decision {
	for len(r.d) <= i {
		r.d = append(r.d, decision{sent: map[dataplane.PortID][]byte{}})
	}
	return &r.d[i]
}

func (r *recorder) Send(i int, p dataplane.PortID) {
	d := r.at(i)
	if _, dup := d.sent[p]; dup {
		d.drop = fmt.Sprintf("sent twice to %d", p)
	}
	d.sent[p] = bytes.Clone(r.frames[i].Bytes())
}

func (r *recorder) Drop(i int, reason dataplane.DropReason) { r.at(i).drop = reason.String() }

func (r *recorder) SendCopy(i int, c *nic.Buf, p dataplane.PortID) {
	d := r.at(i)
	if _, dup := d.sent[p]; dup {
		d.drop = fmt.Sprintf("sent twice to %d", p)
	}
	d.sent[p] = bytes.Clone(c.Bytes())
	c.Free()
}

// rig drives an App's process directly, on the test goroutine, with a clock of its own.
type rig struct {
	t    testing.TB
	app  *App
	pool *nic.Mempool
	now  int64
}

func newRig(t testing.TB, cfg Config) *rig {
	t.Helper()
	r := &rig{t: t, now: int64(time.Hour)}
	cfg.Now = func() int64 { return r.now }
	app, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(app.Close)
	r.app = app
	if r.pool, err = nic.NewMempool(&nic.HeapDMA{}, 64, 2048); err != nil {
		t.Fatal(err)
	}
	return r
}

// burst processes frames as one burst received on port in by thread ti.
func (r *rig) burst(ti int, in dataplane.PortID, frames ...[]byte) []decision {
	r.t.Helper()
	rec := &recorder{}
	for _, f := range frames {
		b := r.pool.Get()
		b.SetLen(copy(b.Data(), f))
		rec.frames = append(rec.frames, b)
	}
	process(r.app, rec, ti, in, rec.frames, r.now)
	for i, b := range rec.frames {
		rec.at(i)
		b.Free()
	}
	if n := r.app.threads[ti].pool.Avail(); n != r.app.cfg.CopyBufs {
		r.t.Fatalf("%d copy buffers not given back", r.app.cfg.CopyBufs-n)
	}
	return rec.d
}

// describe renders a decision as "drop:REASON" or "0:u 2:t10" (port, untagged or tagged
// with a VID), checking that the frame left unchanged but for its tag.
func describe(t testing.TB, in []byte, d decision) string {
	if d.drop != "" {
		if len(d.sent) > 0 {
			return "drop and sent: " + d.drop
		}
		return "drop:" + d.drop
	}
	var out []string
	for p, f := range d.sent {
		if !bytes.Equal(untag(f), untag(in)) {
			t.Errorf("port %d got % x, from % x", p, f, in)
		}
		out = append(out, outForm(int(p), f))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// outForm renders frame f sent out of port p as describe does: "2:u" untagged, "2:t10"
// tagged with VID 10, "2:t10p5" with PCP 5 too.
func outForm(p int, f []byte) string {
	fr, _ := parse(f)
	if !fr.tagged {
		return fmt.Sprintf("%d:u", p)
	}
	form := fmt.Sprintf("%d:t%d", p, fr.tci&vidMask)
	if pcp := fr.tci >> 13; pcp != 0 {
		form += fmt.Sprintf("p%d", pcp)
	}
	return form
}

func untag(f []byte) []byte {
	if len(f) >= 16 && binary.BigEndian.Uint16(f[12:]) == tpid8021Q {
		return append(bytes.Clone(f[:12]), f[16:]...)
	}
	return f
}
