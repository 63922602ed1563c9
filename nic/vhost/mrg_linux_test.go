package vhost

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	"github.com/uiod/uiod/nic"
)

const mrgFeatures = stdFeatures | 1<<featMrgRxBuf

// openJumbo opens a server port of MTU mtu and starts a front end on it with features.
func openJumbo(t *testing.T, mtu int, features uint64) (*Port, *frontend) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "vhost.sock")
	p, err := Open(Config{Socket: sock, Mode: Server, Reconnect: 10 * time.Millisecond, PoolSize: 256, MTU: mtu})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	f := dial(t, sock)
	f.start(features)
	eventually(t, "link up", func() bool { return p.Link().Up })
	return p, f
}

// transmitChain sends frame from the front end as one chain of feBufSize descriptors
// starting at descriptor (and buffer slot) first of the guest TX ring, behind a zero
// 12-byte header, without a kick (the tests poll). It allocates nothing.
func (f *frontend) transmitChain(first int, frame []byte) {
	ring := rxRing(0)
	total := 12 + len(frame)
	k := (total + feBufSize - 1) / feBufSize
	for j := range k {
		off, addr := f.bufAddr(first + j)
		n := min(feBufSize, total-j*feBufSize)
		b := f.mem[off : off+n]
		if j == 0 {
			clear(b[:12])
			copy(b[12:], frame)
		} else {
			copy(b, frame[j*feBufSize-12:])
		}
		flags, next := uint16(descNext), uint16(first+j+1)
		if j == k-1 {
			flags, next = 0, 0
		}
		f.putDesc(ring, first+j, addr, uint32(n), flags, next)
	}
	f.pushAvail(ring, uint16(first))
}

// receivedMerged returns the frames the back end put in the guest RX ring since the last
// call, each gathered from num_buffers used entries, and each frame's num_buffers.
func (f *frontend) receivedMerged(t *testing.T) (frames [][]byte, nbufs []int) {
	raw := f.receivedRaw()
	for i := 0; i < len(raw); {
		if len(raw[i]) < 12 {
			t.Fatalf("used entry %d: %d bytes, shorter than the header", i, len(raw[i]))
		}
		nb := int(binary.LittleEndian.Uint16(raw[i][10:]))
		if nb < 1 || i+nb > len(raw) {
			t.Fatalf("used entry %d: num_buffers %d with %d entries left", i, nb, len(raw)-i)
		}
		fr := append([]byte(nil), raw[i][12:]...)
		for _, b := range raw[i+1 : i+nb] {
			fr = append(fr, b...)
		}
		frames, nbufs = append(frames, fr), append(nbufs, nb)
		i += nb
	}
	return frames, nbufs
}

// txPool is a pool of buffers for frames sent to the front end.
func txPool(t *testing.T) *nic.Mempool {
	pool, err := nic.NewMempool(&nic.HeapDMA{}, 64, 16384)
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

func bufOf(t *testing.T, pool *nic.Mempool, fr []byte) *nic.Buf {
	b := pool.Get()
	if b == nil {
		t.Fatal("tx pool empty")
	}
	copy(b.Data(), fr)
	b.SetLen(len(fr))
	return b
}

// TestMergeableJumboToGuest sends frames up to nic.MaxFrame(9000) into 2 KiB receive
// buffers with mergeable RX buffers: each spread over the buffers it needs, num_buffers
// right, the bytes intact; one byte longer is dropped and counted.
func TestMergeableJumboToGuest(t *testing.T) {
	p, f := openJumbo(t, 9000, mrgFeatures)
	pool := txPool(t)
	sizes := []int{60, 1514, 1515, 2036, 2037, 4096, 9014, nic.MaxFrame(9000)}
	f.postRx(64)
	bufs := make([]*nic.Buf, 0, len(sizes)+1)
	for i, n := range sizes {
		bufs = append(bufs, bufOf(t, pool, frame(i, n)))
	}
	bufs = append(bufs, bufOf(t, pool, frame(99, nic.MaxFrame(9000)+1))) // MTU+1: dropped
	if n := p.TxBurst(0, bufs); n != len(bufs) {
		t.Fatalf("TxBurst took %d of %d", n, len(bufs))
	}
	got, nbufs := f.receivedMerged(t)
	if len(got) != len(sizes) {
		t.Fatalf("front end got %d frames, want %d", len(got), len(sizes))
	}
	for i, n := range sizes {
		if want := (12 + n + feBufSize - 1) / feBufSize; nbufs[i] != want {
			t.Errorf("frame of %d bytes: num_buffers %d, want %d", n, nbufs[i], want)
		}
		if !bytes.Equal(got[i], frame(i, n)) {
			t.Errorf("frame of %d bytes: got %d bytes, not the frame sent", n, len(got[i]))
		}
	}
	st := p.Stats()
	if st.TxPackets != uint64(len(sizes)) || st.TxErrors != 1 {
		t.Errorf("stats %+v: want %d sent, 1 error", st, len(sizes))
	}
	if pool.Avail() != pool.Size() {
		t.Errorf("tx pool: %d of %d buffers back", pool.Avail(), pool.Size())
	}
}

// TestMergeableWaitsForBuffers checks a frame the available buffers cannot hold yet: it
// stays the caller's and nothing is taken, and goes once the front end posts more; and a
// frame longer than the whole ring's buffers is dropped.
func TestMergeableWaitsForBuffers(t *testing.T) {
	p, f := openJumbo(t, 9000, mrgFeatures)
	pool := txPool(t)
	fr := frame(7, 9014) // 5 buffers of 2 KiB
	f.postRx(3)
	b := bufOf(t, pool, fr)
	bufs := []*nic.Buf{b}
	if n := p.TxBurst(0, bufs); n != 0 {
		t.Fatalf("TxBurst took %d with 3 buffers for a 5-buffer frame", n)
	}
	if u := f.usedIdx(txRing(0)); u != 0 {
		t.Fatalf("used index %d after a frame that did not fit", u)
	}
	f.postRx(2)
	if n := p.TxBurst(0, bufs); n != 1 {
		t.Fatalf("TxBurst took %d with 5 buffers", n)
	}
	got, nbufs := f.receivedMerged(t)
	if len(got) != 1 || nbufs[0] != 5 || !bytes.Equal(got[0], fr) {
		t.Fatalf("got %d frames (num_buffers %v)", len(got), nbufs)
	}
	if st := p.Stats(); st.TxPackets != 1 || st.TxErrors != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestJumboWithoutMergeable checks the behaviour without MRG_RXBUF: a frame longer than
// the front end's buffer is dropped and counted, one that fits goes, num_buffers 1.
func TestJumboWithoutMergeable(t *testing.T) {
	p, f := openJumbo(t, 9000, stdFeatures)
	pool := txPool(t)
	f.postRx(4)
	if n := p.TxBurst(0, []*nic.Buf{bufOf(t, pool, frame(1, 4096))}); n != 1 {
		t.Fatalf("TxBurst took %d", n)
	}
	if n := p.TxBurst(0, []*nic.Buf{bufOf(t, pool, frame(2, 1514))}); n != 1 {
		t.Fatalf("TxBurst took %d", n)
	}
	wantOneDropped(t, p, f, frame(2, 1514), 1)
}

// wantOneDropped checks what a test that sent two frames, one too long, finds: the front
// end received want alone, in nbuf buffers, and the port counted 1 sent, 1 error.
func wantOneDropped(t *testing.T, p *Port, f *frontend, want []byte, nbuf int) {
	t.Helper()
	got, nbufs := f.receivedMerged(t)
	if len(got) != 1 || nbufs[0] != nbuf || !bytes.Equal(got[0], want) {
		t.Fatalf("got %d frames (num_buffers %v)", len(got), nbufs)
	}
	if st := p.Stats(); st.TxPackets != 1 || st.TxErrors != 1 {
		t.Errorf("stats %+v: want 1 sent, 1 error", st)
	}
}

// TestJumboFromGuest receives frames up to nic.MaxFrame(9000) sent as chains of 2 KiB
// descriptors; one byte longer is dropped and counted; every buffer comes back.
func TestJumboFromGuest(t *testing.T) {
	p, f := openJumbo(t, 9000, mrgFeatures)
	sizes := []int{60, 1514, 1515, 4096, 9014, nic.MaxFrame(9000)}
	slot := 0
	for i, n := range sizes {
		f.transmitChain(slot, frame(i, n))
		slot += 5
	}
	f.transmitChain(slot, frame(99, nic.MaxFrame(9000)+1))
	got := rxAll(t, p, len(sizes))
	for i, n := range sizes {
		if !bytes.Equal(got[i], frame(i, n)) {
			t.Errorf("frame of %d bytes: got %d bytes, not the frame sent", n, len(got[i]))
		}
	}
	eventually(t, "the oversized frame's drop", func() bool {
		var b [1]*nic.Buf
		if p.RxBurst(0, b[:]) > 0 {
			t.Errorf("a frame of %d bytes was received", b[0].Len())
			b[0].Free()
		}
		return p.Stats().RxErrors == 1
	})
	if u := f.usedIdx(rxRing(0)); u != uint16(len(sizes)+1) {
		t.Errorf("used index %d, want %d (every chain given back)", u, len(sizes)+1)
	}
	if pl := p.pools[0]; pl.Avail() != pl.Size() || pl.BufSize() < nic.MaxFrame(9000) {
		t.Errorf("pool: %d of %d buffers back, %d bytes each", pl.Avail(), pl.Size(), pl.BufSize())
	}
}

// TestJumboAllocs checks that 9014-byte frames cost no allocation either way.
func TestJumboAllocs(t *testing.T) {
	p, f := openJumbo(t, 9000, mrgFeatures)
	pool := txPool(t)
	fr := frame(3, 9014)
	bufs := make([]*nic.Buf, 1)
	var tx, rx int
	allocs := testing.AllocsPerRun(100, func() {
		f.postRx(5)
		b := pool.Get()
		copy(b.Data(), fr)
		b.SetLen(len(fr))
		bufs[0] = b
		tx += p.TxBurst(0, bufs)
		f.transmitChain(0, fr)
		if n := p.RxBurst(0, bufs); n > 0 {
			rx += n
			bufs[0].Free()
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per frame sent and received", allocs)
	}
	if tx != 101 || rx != 101 {
		t.Errorf("%d frames sent, %d received of 101", tx, rx)
	}
}

// TestNetSetMTU checks VHOST_USER_NET_SET_MTU: the protocol feature offered, an MTU up to
// the port's acknowledged, one above refused with the connection kept; and the features
// offered (MRG_RXBUF, MTU).
func TestNetSetMTU(t *testing.T) {
	p, f := openJumbo(t, 9000, mrgFeatures)
	if got := binary.LittleEndian.Uint64(f.request(reqGetProtocolFeatures, nil, true)); got&(1<<protoNetMTU) == 0 {
		t.Fatalf("protocol features 0x%x lack NET_MTU", got)
	}
	f.request(reqSetProtocolFeatures, u64(1<<protoReplyAck|1<<protoNetMTU), false)
	for _, tc := range []struct {
		mtu  uint64
		want uint64
	}{{1500, 0}, {9000, 0}, {9001, 1}, {67, 1}} {
		if err := f.send(msg(reqNetSetMTU, flagVersion|flagNeedReply, u64(tc.mtu))); err != nil {
			t.Fatal(err)
		}
		r, err := f.reply(reqNetSetMTU)
		if err != nil {
			t.Fatalf("NET_SET_MTU %d: %v", tc.mtu, err)
		}
		if len(r) != 8 || binary.LittleEndian.Uint64(r) != tc.want {
			t.Errorf("NET_SET_MTU %d: reply %x, want %d", tc.mtu, r, tc.want)
		}
	}
	want := uint64(1<<featMrgRxBuf | 1<<featMTU)
	if got := binary.LittleEndian.Uint64(f.request(reqGetFeatures, nil, true)); got != p.offer() || got&want != want {
		t.Errorf("after a refused MTU: GET_FEATURES 0x%x, want 0x%x with MRG_RXBUF and MTU", got, p.offer())
	}
	if !p.Link().Up || p.Faults() != 0 {
		t.Errorf("link %v, faults %d after NET_SET_MTU", p.Link(), p.Faults())
	}
}

// TestOpenMTU checks Config.MTU's range and the buffer size it asks for.
func TestOpenMTU(t *testing.T) {
	for _, tc := range []struct {
		mtu, buf int
		ok       bool
	}{{0, 0, true}, {9000, 0, true}, {MaxMTU, 0, true}, {MaxMTU + 1, 0, false}, {67, 0, false}, {9000, 8192, false}} {
		sock := filepath.Join(t.TempDir(), "vhost.sock")
		p, err := Open(Config{Socket: sock, MTU: tc.mtu, BufSize: tc.buf, PoolSize: 4})
		if (err == nil) != tc.ok {
			t.Errorf("mtu %d buf %d: error %v, want ok %v", tc.mtu, tc.buf, err, tc.ok)
		}
		if err == nil {
			mtu := max(tc.mtu, nic.DefaultMTU)
			if p.pools[0].BufSize() != nic.BufSizeFor(mtu) {
				t.Errorf("mtu %d: buffers of %d bytes, want %d", tc.mtu, p.pools[0].BufSize(), nic.BufSizeFor(mtu))
			}
			p.Close()
		}
	}
}

// TestMergeableLongerThanRing checks a frame that a whole ring of available buffers
// cannot hold (4 entries of 2 KiB for 9014 bytes): dropped and counted, the buffers left
// for the next frame.
func TestMergeableLongerThanRing(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "vhost.sock")
	p, err := Open(Config{Socket: sock, Mode: Server, PoolSize: 16, MTU: 9000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	f := dial(t, sock)
	f.num = 4
	f.start(mrgFeatures)
	eventually(t, "link up", func() bool { return p.Link().Up })
	pool := txPool(t)
	f.postRx(4)
	bufs := []*nic.Buf{bufOf(t, pool, frame(1, 9014)), bufOf(t, pool, frame(2, 4096))}
	if n := p.TxBurst(0, bufs); n != 2 {
		t.Fatalf("TxBurst took %d of 2", n)
	}
	wantOneDropped(t, p, f, frame(2, 4096), 3)
}

// TestNetSetMTUUnnegotiated checks that NET_SET_MTU without the NET_MTU protocol feature
// is a protocol violation: the front end is disconnected.
func TestNetSetMTUUnnegotiated(t *testing.T) {
	p, f := openJumbo(t, 9000, mrgFeatures) // protocol features: REPLY_ACK only
	if err := f.send(msg(reqNetSetMTU, flagVersion, u64(1500))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the front end's disconnection", func() bool { return !p.connected.Load() })
}
