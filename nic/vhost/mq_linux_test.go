package vhost

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	"github.com/uiod/uiod/nic"
)

// openMQ opens a server port offering pairs queue pairs.
func openMQ(t testing.TB, pairs int) (*Port, string) {
	sock := filepath.Join(t.TempDir(), "vhost.sock")
	p, err := Open(Config{Socket: sock, Mode: Server, Queues: pairs, Reconnect: 10 * time.Millisecond, PoolSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, sock
}

// startMQ opens a port of queues pairs (openMQ) and runs a front end on pairs of them,
// rings of 64 entries and MQ negotiated, until the link is up.
func startMQ(t testing.TB, queues, pairs int) (*Port, string, *frontend) {
	p, sock := openMQ(t, queues)
	f := dial(t, sock)
	f.num, f.pairs = 64, pairs
	f.start(stdFeatures | 1<<featMQ)
	eventually(t, "link up", func() bool { return p.Link().Up })
	return p, sock, f
}

// tagged is a 60-byte frame whose first bytes say which pair and which frame it is.
func tagged(q, i int) []byte {
	b := frame(q*16+i, 60)
	b[0], b[1] = byte(q), byte(i)
	return b
}

// rxQueue polls RX queue q until want frames came, and returns them.
func rxQueue(t testing.TB, p *Port, q, want int) [][]byte {
	t.Helper()
	bufs := make([]*nic.Buf, 32)
	var got [][]byte
	eventually(t, "frames on an RX queue", func() bool {
		n := p.RxBurst(q, bufs)
		for _, b := range bufs[:n] {
			got = append(got, append([]byte(nil), b.Bytes()...))
			b.Free()
		}
		return len(got) >= want
	})
	return got
}

// bufsOf copies frames into buffers of a pool of their own.
func bufsOf(t testing.TB, frames ...[]byte) []*nic.Buf {
	pool, err := nic.NewMempool(&nic.HeapDMA{}, len(frames), 2048)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*nic.Buf, len(frames))
	for i, f := range frames {
		b := pool.Get()
		b.SetLen(copy(b.Data(), f))
		out[i] = b
	}
	return out
}

// TestMultiQueue brings up 2 to 4 queue pairs from the test front end and checks that
// every pair carries frames both ways, each on its own queue and vector: a kick on pair q
// wakes RX queue q's vector alone, RX queue q takes pair q's frames alone, and TX queue q
// lands on pair q's guest RX ring.
func TestMultiQueue(t *testing.T) {
	for _, pairs := range []int{2, 3, 4} {
		t.Run(string(rune('0'+pairs))+"pairs", func(t *testing.T) {
			p, sock := openMQ(t, pairs)
			if p.NumRxQueues() != pairs || p.NumTxQueues() != pairs {
				t.Fatalf("queues %d/%d, want %d", p.NumRxQueues(), p.NumTxQueues(), pairs)
			}
			f := dial(t, sock)
			f.num, f.pairs = 64, pairs
			if got := binary.LittleEndian.Uint64(f.request(reqGetFeatures, nil, true)); got&(1<<featMQ) == 0 {
				t.Fatalf("features 0x%x lack VIRTIO_NET_F_MQ", got)
			}
			f.start(stdFeatures | 1<<featMQ)
			eventually(t, "link up", func() bool { return p.Link().Up })
			for q := range pairs {
				p.RxVector(q).Drain() // the wakes of each ring's start
			}
			for q := range pairs {
				f.transmitOn(q, 0, tagged(q, 0))
				for v := range pairs {
					n, _ := p.RxVector(v).Drain()
					if (n > 0) != (v == q) {
						t.Fatalf("a kick on pair %d: vector %d drained %d", q, v, n)
					}
				}
				for v := range pairs {
					if v == q {
						continue
					}
					if n := p.RxBurst(v, make([]*nic.Buf, 4)); n != 0 {
						t.Fatalf("RX queue %d took %d frames of pair %d", v, n, q)
					}
				}
				if got := rxQueue(t, p, q, 1); len(got) != 1 || !bytes.Equal(got[0], tagged(q, 0)) {
					t.Fatalf("RX queue %d got %x", q, got)
				}
			}
			for q := range pairs {
				f.postRxOn(q, 4)
			}
			for q := range pairs {
				if n := p.TxBurst(q, bufsOf(t, tagged(q, 1), tagged(q, 2))); n != 2 {
					t.Fatalf("TX queue %d took %d of 2", q, n)
				}
			}
			for q := range pairs {
				got := receivedHdr(f.f(q), 12)
				if len(got) != 2 || !bytes.Equal(got[0], tagged(q, 1)) || !bytes.Equal(got[1], tagged(q, 2)) {
					t.Fatalf("pair %d received %x", q, got)
				}
			}
			if s := p.Stats(); s.RxPackets != uint64(pairs) || s.TxPackets != uint64(2*pairs) || p.Faults() != 0 {
				t.Fatalf("stats %+v, faults %d", s, p.Faults())
			}
		})
	}
}

// pairView reads one pair's guest RX ring through the frontend's receivedRaw helpers.
type pairView struct {
	f *frontend
	q int
}

func (v pairView) receivedRaw() [][]byte { return v.f.receivedRawOn(v.q) }

// f returns a view of pair q for receivedHdr.
func (f *frontend) f(q int) rawReceiver { return pairView{f, q} }

// TestMultiQueueFewerPairs checks a front end that runs fewer pairs than the port offers
// (a guest with one vCPU, a DPDK application before its control queue's VQ_PAIRS_SET, a
// pair disabled later): the TX queues of the pairs it does not run send on the pairs it
// does, and nothing is lost; enabling a pair again gives it its own TX queue back.
func TestMultiQueueFewerPairs(t *testing.T) {
	p, _, f := startMQ(t, 4, 2) // pairs 2 and 3 never configured
	f.postRxOn(0, 16)
	f.postRxOn(1, 16)
	sent := func(q, i int) {
		t.Helper()
		if n := p.TxBurst(q, bufsOf(t, tagged(q, i))); n != 1 {
			t.Fatalf("TX queue %d took %d of 1", q, n)
		}
	}
	for q := range 4 {
		sent(q, 0)
	}
	// Queues 0 and 1 on their pairs; 2 → the first running pair (0), 3 → the second (1).
	want := map[int][][]byte{0: {tagged(0, 0), tagged(2, 0)}, 1: {tagged(1, 0), tagged(3, 0)}}
	for q, w := range want {
		if got := receivedHdr(f.f(q), 12); len(got) != len(w) || !bytes.Equal(got[0], w[0]) || !bytes.Equal(got[1], w[1]) {
			t.Fatalf("pair %d received %x, want %x", q, got, w)
		}
	}
	// Pair 1 disabled: every TX queue sends on pair 0.
	f.request(reqSetVringEnable, state(uint32(txRing(1)), 0), false)
	f.request(reqSetVringEnable, state(uint32(rxRing(1)), 0), false)
	for q := range 4 {
		sent(q, 1)
	}
	if got := receivedHdr(f.f(0), 12); len(got) != 4 {
		t.Fatalf("pair 0 received %d frames with pair 1 disabled, want 4", len(got))
	}
	if got := receivedHdr(f.f(1), 12); len(got) != 0 {
		t.Fatalf("disabled pair 1 received %x", got)
	}
	// Enabled again: TX queue 1 is pair 1's.
	f.request(reqSetVringEnable, state(uint32(txRing(1)), 1), false)
	f.request(reqSetVringEnable, state(uint32(rxRing(1)), 1), false)
	sent(1, 2)
	if got := receivedHdr(f.f(1), 12); len(got) != 1 || !bytes.Equal(got[0], tagged(1, 2)) {
		t.Fatalf("pair 1 enabled again received %x", got)
	}
	if s := p.Stats(); s.TxPackets != 9 || s.TxErrors != 0 || p.Faults() != 0 {
		t.Fatalf("stats %+v, faults %d", s, p.Faults())
	}
}

// TestMultiQueueRefusals checks the pairs a port does not have: a one-pair port offers
// no VIRTIO_NET_F_MQ and answers GET_QUEUE_NUM 1, and a vring beyond the port's pairs
// is a protocol violation, on either kind of port.
func TestMultiQueueRefusals(t *testing.T) {
	for _, tt := range []struct {
		pairs, vring int
	}{{1, 2}, {1, 3}, {2, 4}, {4, 8}, {4, 2*MaxQueuePairs - 1}} {
		p, sock := openMQ(t, tt.pairs)
		f := dial(t, sock)
		f.negotiate(stdFeatures)
		feat := binary.LittleEndian.Uint64(f.request(reqGetFeatures, nil, true))
		n := binary.LittleEndian.Uint64(f.request(reqGetQueueNum, nil, true))
		if (feat&(1<<featMQ) != 0) != (tt.pairs > 1) || n != uint64(tt.pairs) {
			t.Fatalf("%d pairs: features 0x%x, GET_QUEUE_NUM %d", tt.pairs, feat, n)
		}
		f.raw(reqSetVringNum, flagVersion, state(uint32(tt.vring), 64))
		eventually(t, "the front end disconnected", func() bool { return p.Faults() == 1 })
		// Every request naming a vring checks it against the port's pairs.
		for k, m := range [][]byte{
			msg(reqGetVringBase, flagVersion, state(uint32(tt.vring), 0)),
			msg(reqSetVringAddr, flagVersion, append(binary.LittleEndian.AppendUint32(nil, uint32(tt.vring)), make([]byte, addrSize-4)...)),
			msg(reqSetVringEnable, flagVersion, state(uint32(tt.vring), 1)),
			msg(reqSetVringCall, flagVersion, u64(uint64(tt.vring))),
			msg(reqSetVringKick, flagVersion, u64(uint64(tt.vring))),
			msg(reqSetVringErr, flagVersion, u64(uint64(tt.vring))),
		} {
			f := dial(t, sock)
			f.negotiate(stdFeatures)
			fd := f.call[0]
			if k >= 3 {
				f.send(m, fd)
			} else {
				f.send(m)
			}
			want := uint64(k + 2)
			eventually(t, "the front end disconnected", func() bool { return p.Faults() == want })
		}
	}
	if _, err := Open(Config{Socket: filepath.Join(t.TempDir(), "s"), Queues: MaxQueuePairs + 1}); err == nil {
		t.Fatalf("Open took %d queue pairs", MaxQueuePairs+1)
	}
}

// TestMultiQueueAllocs checks that bursts on a second pair, and on a TX queue sent on
// another's pair, allocate nothing.
func TestMultiQueueAllocs(t *testing.T) {
	p, _, f := startMQ(t, 3, 2)
	rx, tx := make([]*nic.Buf, 8), make([]*nic.Buf, 8)
	for i := range 8 {
		f.transmitOn(1, i, frame(i, 60))
	}
	rxQueue(t, p, 1, 8)
	ring := rxRing(1)
	allocs := testing.AllocsPerRun(100, func() {
		for i := range 8 {
			f.pushAvail(ring, uint16(i))
		}
		n := p.RxBurst(1, rx)
		f.postRxOn(0, n)
		copy(tx, rx[:n])
		if p.TxBurst(2, tx[:n]) != n { // queue 2 sends on pair 0
			panic("TxBurst short")
		}
		f.usedSeen[txRing(0)] = f.usedIdx(txRing(0))
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per pair of bursts", allocs)
	}
}

// TestMultiQueueFaultOnSecondPair checks a front end that breaks a rule on pair 1 only
// (its TX ring's available index jumps past the ring): RX queue 1's burst stops it, the
// connection is closed and every pair stopped, counted once; the next front end runs both
// pairs again.
func TestMultiQueueFaultOnSecondPair(t *testing.T) {
	p, sock, f := startMQ(t, 2, 2)
	_, a, _ := f.ringOff(rxRing(1))
	binary.LittleEndian.PutUint16(f.mem[a+2:], uint16(f.num+1))
	if n := p.RxBurst(1, make([]*nic.Buf, 8)); n != 0 {
		t.Fatalf("RX queue 1 took %d frames from a broken ring", n)
	}
	eventually(t, "the front end disconnected", func() bool { return p.Faults() == 1 && !p.Link().Up })
	for q := range 2 {
		if n := p.RxBurst(q, make([]*nic.Buf, 8)); n != 0 {
			t.Fatalf("RX queue %d took %d frames after the fault", q, n)
		}
	}
	g := dial(t, sock)
	g.num, g.pairs = 64, 2
	g.start(stdFeatures | 1<<featMQ)
	eventually(t, "link up again", func() bool { return p.Link().Up })
	for q := range 2 {
		g.transmitOn(q, 0, tagged(q, 0))
		if got := rxQueue(t, p, q, 1); !bytes.Equal(got[0], tagged(q, 0)) {
			t.Fatalf("RX queue %d after the reconnect got %x", q, got)
		}
	}
	if p.Faults() != 1 {
		t.Fatalf("faults %d, want 1", p.Faults())
	}
}
