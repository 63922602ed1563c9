package capture

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/bpf"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/nic"
)

// testBlock is a pcapng block as the tests walk a stream, independently of ngReader.
type testBlock struct {
	typ  uint32
	body []byte
}

func walk(t *testing.T, b []byte) []testBlock {
	t.Helper()
	var out []testBlock
	for len(b) > 0 {
		if len(b) < 12 {
			t.Fatalf("%d bytes left after the last block", len(b))
		}
		l := binary.LittleEndian.Uint32(b[4:])
		if l < 12 || int(l) > len(b) || binary.LittleEndian.Uint32(b[l-4:]) != l {
			t.Fatalf("block of length %d in %d bytes", l, len(b))
		}
		out = append(out, testBlock{binary.LittleEndian.Uint32(b), b[8 : l-4]})
		b = b[l:]
	}
	return out
}

// opts returns a block's options (from its fixed part's end) by code.
func opts(b []byte) map[uint16][]byte {
	m := map[uint16][]byte{}
	for len(b) >= 4 {
		c, l := binary.LittleEndian.Uint16(b), int(binary.LittleEndian.Uint16(b[2:]))
		if c == 0 || 4+l > len(b) {
			break
		}
		m[c] = b[4 : 4+l]
		b = b[min(4+(l+3)&^3, len(b)):]
	}
	return m
}

// epbs returns the stream's packet blocks' fixed fields and options.
type epb struct {
	iface uint32
	ts    uint64
	data  []byte
	opts  map[uint16][]byte
}

func packets(t *testing.T, blocks []testBlock) []epb {
	var out []epb
	for _, b := range blocks {
		if b.typ != blockEPB {
			continue
		}
		c := binary.LittleEndian.Uint32(b.body[12:])
		out = append(out, epb{
			iface: binary.LittleEndian.Uint32(b.body),
			ts:    uint64(binary.LittleEndian.Uint32(b.body[4:]))<<32 | uint64(binary.LittleEndian.Uint32(b.body[8:])),
			data:  b.body[20 : 20+c],
			opts:  opts(b.body[20+(c+3)&^3:]),
		})
	}
	return out
}

// runSession starts a session with opts, lets feed send frames, stops it and returns
// the stream it wrote.
func runSession(t *testing.T, opts Options, feed func(ft *fakeTarget, seq *int)) *bytes.Buffer {
	t.Helper()
	ft := newFakeTarget(t)
	s, err := Start(ft, opts)
	if err != nil {
		t.Fatal(err)
	}
	seq := 0
	feed(ft, &seq)
	s.Stop()
	var out bytes.Buffer
	if err := s.Write(&out, nil); err != nil {
		t.Fatal(err)
	}
	return &out
}

// TestRingMemory: a thread's ring is ringBytes whatever the snaplen (it was 100 MiB of
// slot records at -s 1), and holds thousands of small frames at the default snaplen
// (it was 256 slots).
func TestRingMemory(t *testing.T) {
	for _, snap := range []int{1, 64, 0, MaxSnaplen} {
		ft := newFakeTarget(t)
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		s, err := Start(ft, Options{Ports: []dataplane.PortID{0}, Queue: -1, Snaplen: snap})
		if err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&m1)
		s.Stop()
		if per := (m1.TotalAlloc - m0.TotalAlloc) / 2; per > 2*ringBytes {
			t.Errorf("snaplen %d: %d MiB per thread, want at most %d", snap, per>>20, 2*ringBytes>>20)
		}
	}
}

// TestSessionSustains: 4096 64-byte frames between two drains at the default snaplen
// drop nothing (256 slots dropped 3840 of them).
func TestSessionSustains(t *testing.T) {
	ft := newFakeTarget(t)
	s, err := Start(ft, Options{Ports: []dataplane.PortID{0}, Queue: -1})
	if err != nil {
		t.Fatal(err)
	}
	seq := 0
	for range 4096 / 32 {
		ft.send(0, 0, dataplane.RX, 0, 32, 64, &seq)
	}
	s.Stop()
	var out bytes.Buffer
	if err := s.Write(&out, nil); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Dropped[0] != 0 || st.Captured[0] != 4096 {
		t.Errorf("%d captured, %d dropped of 4096", st.Captured[0], st.Dropped[0])
	}
}

// TestOrderAcrossThreads: frames that two threads saw alternately come out in time
// order (each ring was written whole, one after the other), and -c takes the first in
// time.
func TestOrderAcrossThreads(t *testing.T) {
	for _, count := range []uint64{0, 3} {
		ft := newFakeTarget(t)
		s, err := Start(ft, Options{Ports: []dataplane.PortID{0, 1}, Queue: -1, Count: count})
		if err != nil {
			t.Fatal(err)
		}
		buf := ft.pool.Get()
		buf.SetLen(60)
		base := idle.Now()
		for i := range 6 {
			ft.mirrors[dataplane.PortID(i%2)].Mirror(1-i%2, dataplane.RX, 0, []*nic.Buf{buf}, base+int64(i+1)*1000)
		}
		buf.Free()
		s.Stop()
		var out bytes.Buffer
		if err := s.Write(&out, nil); err != nil {
			t.Fatal(err)
		}
		pk := packets(t, walk(t, out.Bytes()))
		want := 6
		if count > 0 {
			want = int(count)
		}
		if len(pk) != want {
			t.Fatalf("count %d: %d packets, want %d", count, len(pk), want)
		}
		for i, p := range pk {
			if p.iface != uint32(i%2) || (i > 0 && p.ts-pk[i-1].ts != 1000) {
				t.Errorf("count %d: packet %d on interface %d at +%d ns: not in time order", count, i, p.iface, p.ts-pk[0].ts)
			}
		}
	}
}

// TestPcapngContent: the interface blocks carry the MAC and speed, each packet its queue
// and direction, the statistics blocks their comment and counts.
func TestPcapngContent(t *testing.T) {
	out := runSession(t, Options{Ports: []dataplane.PortID{0}, Queue: -1, Direction: Both}, func(ft *fakeTarget, seq *int) {
		ft.send(0, 0, dataplane.RX, 1, 2, 60, seq)
		ft.send(0, 1, dataplane.TX, 0, 1, 60, seq)
	})
	blocks := walk(t, out.Bytes())
	for _, b := range blocks {
		switch b.typ {
		case blockIDB:
			o := opts(b.body[8:])
			if !bytes.Equal(o[optIfMACAddr], []byte{2, 0, 0, 0, 0, 1}) || len(o[optIfSpeed]) != 8 ||
				binary.LittleEndian.Uint64(o[optIfSpeed]) != 10e9 || string(o[optIfName]) != "xe0" {
				t.Errorf("interface block options %v: want xe0, its MAC and 10 Gb/s", o)
			}
		case blockISB:
			o := opts(b.body[12:])
			u := func(c uint16) uint64 {
				if len(o[c]) != 8 {
					t.Fatalf("statistics block has no option %d: %v", c, o)
				}
				return binary.LittleEndian.Uint64(o[c])
			}
			if u(optISBIfRecv) != 3 || u(optISBFilterAccept) != 3 || u(optISBIfDrop) != 0 || u(optISBUsrDeliv) != 3 {
				t.Errorf("statistics %v", o)
			}
			if c := string(o[optComment]); !strings.Contains(c, "3 frames captured, 0 dropped") {
				t.Errorf("statistics comment %q", c)
			}
		}
	}
	pk := packets(t, blocks)
	if len(pk) != 3 {
		t.Fatalf("%d packets", len(pk))
	}
	wantQ, wantDir := []uint32{1, 1, 0}, []uint32{epbInbound, epbInbound, epbOutbound}
	for i, p := range pk {
		q, f := p.opts[optEPBQueue], p.opts[optEPBFlags]
		if len(q) != 4 || binary.LittleEndian.Uint32(q) != wantQ[i] || len(f) != 4 || binary.LittleEndian.Uint32(f) != wantDir[i] {
			t.Errorf("packet %d options %v: want queue %d, direction %d", i, p.opts, wantQ[i], wantDir[i])
		}
	}
}

// TestRequestQueue: a request without "queue" captures every queue (it captured queue
// 0), and a queue the port does not have is refused by name (it captured nothing).
func TestRequestQueue(t *testing.T) {
	var r Request
	if err := json.Unmarshal([]byte(`{"op":"capture","ports":["xe0"]}`), &r); err != nil {
		t.Fatal(err)
	}
	o, err := r.options([]string{"xe0", "xe1"})
	if err != nil || o.Queue != -1 {
		t.Errorf("a request without queue: queue %d, %v; want -1 (every queue)", o.Queue, err)
	}
	_, err = Start(newFakeTarget(t), Options{Ports: []dataplane.PortID{1}, Queue: 5})
	if err == nil || !strings.Contains(err.Error(), "queue 5: port xe1 has 1 queue") {
		t.Errorf("queue 5 on a one-queue port: %v", err)
	}
}

// slowWriter takes its first write only after a pause, like a paused Wireshark.
type slowWriter struct {
	pause  time.Duration
	paused atomic.Bool
	w      bytes.Buffer
}

func (s *slowWriter) Write(b []byte) (int, error) {
	if !s.paused.Swap(true) {
		time.Sleep(s.pause)
	}
	return s.w.Write(b)
}

// TestSlowReaderKeepsItsCapture: a client that does not read for 6 s keeps its capture
// and learns how many frames it lost (the daemon ended the capture after 5 s, mid-block,
// without statistics).
func TestSlowReaderKeepsItsCapture(t *testing.T) {
	s, ft := newServer(t)
	sw := &slowWriter{pause: 6 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := captureAsync(ctx, s.Path(), Request{Op: "capture", Ports: []string{"xe0"}}, bufOut(t, sw))
	waitMirror(t, ft, 0, true)
	seq, sent := 0, 0
	for end := time.Now().Add(7 * time.Second); time.Now().Before(end); {
		if !ft.send(0, 0, dataplane.RX, 0, 32, 1514, &seq) {
			t.Fatal("the capture ended while its client was paused")
		}
		sent += 32
		time.Sleep(time.Millisecond)
	}
	cancel()
	sum, err := wait(t, 20*time.Second)
	if err != nil {
		t.Fatalf("Capture: %v", err)
	}
	if sum.Captured[0]+sum.Dropped[0] != uint64(sent) || sum.Dropped[0] == 0 {
		t.Errorf("%d captured + %d dropped, want %d sent with some dropped", sum.Captured[0], sum.Dropped[0], sent)
	}
	if sum.Ended != "the client ended the capture" {
		t.Errorf("ended: %q", sum.Ended)
	}
}

// udpProgram is `tcpdump -ddd udp` for Ethernet.
var udpProgram = []bpf.RawInstruction{
	{Op: 0x28, K: 12}, {Op: 0x15, Jt: 0, Jf: 5, K: 0x86dd}, {Op: 0x30, K: 20}, {Op: 0x15, Jt: 6, Jf: 0, K: 17},
	{Op: 0x15, Jt: 0, Jf: 6, K: 44}, {Op: 0x30, K: 54}, {Op: 0x15, Jt: 3, Jf: 4, K: 17}, {Op: 0x15, Jt: 0, Jf: 3, K: 0x800},
	{Op: 0x30, K: 23}, {Op: 0x15, Jt: 0, Jf: 1, K: 17}, {Op: 0x6, K: 262144}, {Op: 0x6, K: 0},
}

// udpFrame writes an IPv4 frame of protocol proto into b.
func udpFrame(b *nic.Buf, proto byte) {
	b.SetLen(64)
	d := b.Bytes()
	clear(d)
	binary.BigEndian.PutUint16(d[12:], 0x800)
	d[14], d[23] = 0x45, proto
}

func TestFilter(t *testing.T) {
	ft := newFakeTarget(t)
	s, err := Start(ft, Options{Ports: []dataplane.PortID{0}, Queue: -1, Filter: udpProgram, FilterText: "udp"})
	if err != nil {
		t.Fatal(err)
	}
	bufs := []*nic.Buf{ft.pool.Get(), ft.pool.Get(), ft.pool.Get()}
	udpFrame(bufs[0], 17)
	udpFrame(bufs[1], 6)
	udpFrame(bufs[2], 17)
	ft.mirrors[0].Mirror(0, dataplane.RX, 0, bufs, idle.Now())
	s.Stop()
	var out bytes.Buffer
	if err := s.Write(&out, nil); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Captured[0] != 2 || st.Seen[0] != 2 || st.Received[0] != 3 {
		t.Errorf("stats %+v: want 3 received, 2 accepted and captured", st)
	}
	for _, b := range walk(t, out.Bytes()) {
		if b.typ == blockIDB {
			if f := opts(b.body[8:])[optIfFilter]; string(f) != "\x00udp" {
				t.Errorf("if_filter %q", f)
			}
		}
	}
	s, err = Start(ft, Options{Ports: []dataplane.PortID{0}, Queue: -1, Filter: udpProgram})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	m := ft.mirrors[0]
	if n := testing.AllocsPerRun(100, func() { m.Mirror(0, dataplane.RX, 0, bufs, 1) }); n != 0 {
		t.Errorf("a filtered Mirror allocates %.1f times", n)
	}
}

// BenchmarkMirror: the poll thread's cost per frame of a capture, with and without a
// filter, for 64-byte frames in bursts of 32 (the ring drained as it goes).
func BenchmarkMirror(b *testing.B) {
	for _, tc := range []struct {
		name   string
		filter []bpf.RawInstruction
		proto  byte
	}{{"nofilter", nil, 17}, {"udp-accept", udpProgram, 17}, {"udp-reject", udpProgram, 6}} {
		b.Run(tc.name, func(b *testing.B) {
			ft := newFakeTarget(&testing.T{})
			s, err := Start(ft, Options{Ports: []dataplane.PortID{0}, Queue: -1, Filter: tc.filter})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Stop()
			bufs := make([]*nic.Buf, 32)
			for i := range bufs {
				bufs[i] = ft.pool.Get()
				udpFrame(bufs[i], tc.proto)
			}
			m, r := ft.mirrors[0], s.rings[0]
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.Mirror(0, dataplane.RX, 0, bufs, 1)
				if i%1000 == 999 {
					for {
						rec, _, ok := r.peek()
						if !ok {
							break
						}
						r.release(rec)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*32), "ns/frame")
		})
	}
}

// TestStreamRoundTrip: what a session writes, the client's reader reads back.
func TestStreamRoundTrip(t *testing.T) {
	out := runSession(t, Options{Ports: []dataplane.PortID{0, 1}, Queue: -1, Snaplen: 100}, func(ft *fakeTarget, seq *int) {
		ft.send(0, 0, dataplane.RX, 0, 5, 300, seq)
		ft.send(1, 1, dataplane.TX, 0, 4, 60, seq)
	})
	rd := newNgReader(out)
	n := map[uint32]int{}
	for {
		b, err := rd.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if b.typ == blockEPB {
			n[b.iface]++
			if len(b.data) > 100 || (b.iface == 0 && b.origLen != 300) {
				t.Errorf("packet on %d: %d of %d bytes", b.iface, len(b.data), b.origLen)
			}
		}
	}
	if n[0] != 5 || n[1] != 4 || len(rd.idbs) != 2 {
		t.Errorf("read %v packets, %d interfaces", n, len(rd.idbs))
	}
}

func FuzzNgReader(f *testing.F) {
	ft := newFakeTarget(&testing.T{})
	s, _ := Start(ft, Options{Ports: []dataplane.PortID{0}, Queue: -1})
	seq := 0
	ft.send(0, 0, dataplane.RX, 0, 2, 60, &seq)
	s.Stop()
	var out bytes.Buffer
	s.Write(&out, nil)
	f.Add(out.Bytes())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		rd := newNgReader(bytes.NewReader(b))
		for range 10000 {
			blk, err := rd.next()
			if err != nil {
				return
			}
			if blk.typ == blockEPB && (int(blk.iface) >= len(rd.ifaces) || len(blk.data) > len(blk.raw)) {
				t.Fatalf("packet block %+v accepted", blk)
			}
		}
	})
}

func FuzzParseBPF(f *testing.F) {
	f.Add("4\n40 0 0 12\n21 0 1 2048\n6 0 0 262144\n6 0 0 0\n")
	f.Add("1\n6 0 0 0")
	f.Fuzz(func(t *testing.T, s string) {
		prog, err := ParseBPF([]byte(s))
		if err != nil {
			if len(err.Error()) > 1024 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if len(prog) == 0 || len(prog) > maxFilter {
			t.Fatalf("%d instructions accepted", len(prog))
		}
		CompileFilter(rawProgram(prog)) // must not panic
	})
}

func FuzzParseConditions(f *testing.F) {
	for _, s := range []string{"filesize:1000", "files:5", "duration:1.5", "packets:10", "duration:10s", "x:y", ":"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var cfg OutputConfig
		var req Request
		if ParseRingBuffer(&cfg, s) == nil && (cfg.FileSize < 0 || cfg.Files < 0 || cfg.FileDuration < 0) {
			t.Fatalf("-b %q: %+v", s, cfg)
		}
		if ParseAutostop(&cfg, &req, s) == nil && (cfg.StopFileSize < 0 || cfg.StopFiles < 0) {
			t.Fatalf("-a %q: %+v", s, cfg)
		}
		if req.Duration != "" {
			if d, err := time.ParseDuration(req.Duration); err != nil || d <= 0 {
				t.Fatalf("-a %q: duration %q", s, req.Duration)
			}
		}
	})
}
