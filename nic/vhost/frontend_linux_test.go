package vhost

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// frontend is a test vhost-user front end (the part of virtio-user a back end sees): its
// memory is one memfd region holding both rings and the packet buffers.
type frontend struct {
	t     testing.TB
	c     *net.UnixConn
	memfd int
	mem   []byte
	gpa   uint64 // guest-physical (and front-end virtual) address of mem[0]
	num   int
	// availShift moves the available rings by that many bytes (2: the specification's
	// alignment, not 4).
	availShift int
	// pairs is the number of queue pairs start brings up (1 unless set before it).
	pairs int
	kick  [feMaxRings]int
	call  [feMaxRings]int
	// driver shadows
	availIdx [feMaxRings]uint16
	usedSeen [feMaxRings]uint16
	features uint64
}

// Memory layout of the test front end.
const (
	feMemSize  = 2 << 20
	feRingOff  = 0 // ring i at feRingOff + i*feRingSpan
	feRingSpan = 64 << 10
	feMaxRings = 8 // 4 queue pairs
	feBufOff   = feMaxRings * feRingSpan
	feBufSize  = 2048
	feGPA      = 0x4000_0000
)

func newFrontend(t testing.TB, c *net.UnixConn) *frontend {
	fd, err := unix.MemfdCreate("vhost-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatalf("memfd: %v", err)
	}
	if err := unix.Ftruncate(fd, feMemSize); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(fd, 0, feMemSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	f := &frontend{t: t, c: c, memfd: fd, mem: mem, gpa: feGPA, num: 256, pairs: 1}
	for i := range feMaxRings {
		for _, p := range []*int{&f.kick[i], &f.call[i]} {
			if *p, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(f.close)
	return f
}

func (f *frontend) close() {
	f.c.Close()
	unix.Munmap(f.mem)
	unix.Close(f.memfd)
	for i := range feMaxRings {
		unix.Close(f.kick[i])
		unix.Close(f.call[i])
	}
}

// msg builds a request.
func msg(req uint32, flags uint32, payload []byte) []byte {
	b := make([]byte, hdrSize+len(payload))
	binary.LittleEndian.PutUint32(b, req)
	binary.LittleEndian.PutUint32(b[4:], flags)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(payload)))
	copy(b[hdrSize:], payload)
	return b
}

func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func state(i, n uint32) []byte {
	return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, i), n)
}

// send writes raw bytes with descriptors.
func (f *frontend) send(b []byte, fds ...int) error {
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	_, _, err := f.c.WriteMsgUnix(b, oob, nil)
	return err
}

// request sends req and, when want is true, reads its reply payload.
func (f *frontend) request(req uint32, payload []byte, want bool, fds ...int) []byte {
	f.t.Helper()
	flags := uint32(flagVersion)
	ack := !want && f.features&(1<<featProtocolFeature) != 0
	if ack {
		flags |= flagNeedReply // REPLY_ACK: every request is acknowledged
		want = true
	}
	if err := f.send(msg(req, flags, payload), fds...); err != nil {
		f.t.Fatalf("request %d: %v", req, err)
	}
	if !want {
		return nil
	}
	p, err := f.reply(req)
	if err != nil {
		f.t.Fatalf("request %d: %v", req, err)
	}
	if ack && (len(p) != 8 || binary.LittleEndian.Uint64(p) != 0) {
		f.t.Fatalf("request %d: REPLY_ACK %x", req, p)
	}
	return p
}

func (f *frontend) reply(req uint32) ([]byte, error) {
	f.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var h [hdrSize]byte
	if _, err := io.ReadFull(f.c, h[:]); err != nil {
		return nil, err
	}
	if r := binary.LittleEndian.Uint32(h[:]); r != req || binary.LittleEndian.Uint32(h[4:])&flagReply == 0 {
		return nil, fmt.Errorf("reply %x to request %d", h, req)
	}
	p := make([]byte, binary.LittleEndian.Uint32(h[8:]))
	_, err := io.ReadFull(f.c, p)
	return p, err
}

// memTable is SET_MEM_TABLE's payload for the one region.
func (f *frontend) memTable() []byte {
	b := binary.LittleEndian.AppendUint32(nil, 1)
	b = binary.LittleEndian.AppendUint32(b, 0)
	for _, v := range []uint64{f.gpa, feMemSize, f.gpa, 0} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

func (f *frontend) ringOff(i int) (desc, avail, used int) {
	base := feRingOff + i*feRingSpan
	return base, base + 16*f.num + f.availShift, base + 16*f.num + 4096
}

func (f *frontend) addrs(i int) []byte {
	d, a, u := f.ringOff(i)
	b := binary.LittleEndian.AppendUint32(nil, uint32(i))
	b = binary.LittleEndian.AppendUint32(b, 0)
	for _, v := range []uint64{f.gpa + uint64(d), f.gpa + uint64(u), f.gpa + uint64(a), 0} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

// setBigRing sends SET_VRING_NUM, _ADDR and _KICK for vring ring of f.num entries, its
// parts laid out within its span for a ring of up to 2048 (the used ring 8192 bytes past
// the available one), and returns where its descriptor table and available ring are.
func (f *frontend) setBigRing(ring int) (desc, avail int) {
	base := feRingOff + ring*feRingSpan
	desc, avail, used := base, base+16*f.num, base+16*f.num+8192
	a := binary.LittleEndian.AppendUint32(nil, uint32(ring))
	a = binary.LittleEndian.AppendUint32(a, 0)
	for _, v := range []int{desc, used, avail, 0} {
		a = binary.LittleEndian.AppendUint64(a, f.gpa+uint64(v))
	}
	f.request(reqSetVringNum, state(uint32(ring), uint32(f.num)), false)
	f.request(reqSetVringAddr, a, false)
	f.request(reqSetVringKick, u64(uint64(ring)), false, f.kick[ring])
	return desc, avail
}

// negotiate exchanges features (features of the offered ones) and protocol features.
func (f *frontend) negotiate(features uint64) {
	got := binary.LittleEndian.Uint64(f.request(reqGetFeatures, nil, true))
	if got&features != features {
		f.t.Fatalf("offered features 0x%x lack 0x%x", got, features)
	}
	f.request(reqSetOwner, nil, false)
	if features&(1<<featProtocolFeature) != 0 {
		f.request(reqGetProtocolFeatures, nil, true)
		proto := uint64(1 << protoReplyAck)
		if f.pairs > 1 {
			proto |= 1 << protoMQ
		}
		f.request(reqSetProtocolFeatures, u64(proto), false)
		if f.pairs > 1 {
			if n := binary.LittleEndian.Uint64(f.request(reqGetQueueNum, nil, true)); n < uint64(f.pairs) {
				f.t.Fatalf("GET_QUEUE_NUM %d, want at least %d", n, f.pairs)
			}
		}
	}
	if features != 0 {
		f.request(reqSetFeatures, u64(features), false)
	}
	f.features = features
}

// start brings the front end up with features: memory, the rings of f.pairs queue pairs.
func (f *frontend) start(features uint64) {
	f.negotiate(features)
	f.request(reqSetMemTable, f.memTable(), false, f.memfd)
	for i := range 2 * f.pairs {
		f.request(reqSetVringCall, u64(uint64(i)), false, f.call[i])
		f.request(reqSetVringNum, state(uint32(i), uint32(f.num)), false)
		f.request(reqSetVringBase, state(uint32(i), 0), false)
		f.request(reqSetVringAddr, f.addrs(i), false)
		f.request(reqSetVringKick, u64(uint64(i)), false, f.kick[i])
		if features&(1<<featProtocolFeature) != 0 {
			f.request(reqSetVringEnable, state(uint32(i), 1), false)
		}
	}
}

const stdFeatures = 1<<featVersion1 | 1<<featEventIdx | 1<<featProtocolFeature

func (f *frontend) putDesc(ring, i int, addr uint64, n uint32, flags, next uint16) {
	d, _, _ := f.ringOff(ring)
	b := f.mem[d+16*i:]
	binary.LittleEndian.PutUint64(b, addr)
	binary.LittleEndian.PutUint32(b[8:], n)
	binary.LittleEndian.PutUint16(b[12:], flags)
	binary.LittleEndian.PutUint16(b[14:], next)
}

// pushAvail makes head available on ring and publishes the index (no kick).
func (f *frontend) pushAvail(ring int, head uint16) {
	_, a, _ := f.ringOff(ring)
	binary.LittleEndian.PutUint16(f.mem[a+4+2*int(f.availIdx[ring]%uint16(f.num)):], head)
	f.availIdx[ring]++
	binary.LittleEndian.PutUint16(f.mem[a+2:], f.availIdx[ring])
}

func (f *frontend) setAvailFlags(ring int, flags uint16) {
	_, a, _ := f.ringOff(ring)
	binary.LittleEndian.PutUint16(f.mem[a:], flags)
}

func (f *frontend) setUsedEvent(ring int, v uint16) {
	_, a, _ := f.ringOff(ring)
	binary.LittleEndian.PutUint16(f.mem[a+4+2*f.num:], v)
}

func (f *frontend) bufAddr(slot int) (int, uint64) {
	off := feBufOff + slot*feBufSize
	return off, f.gpa + uint64(off)
}

// transmit puts frame (behind a zero virtio-net header) in descriptor slot of the guest TX
// ring, makes it available and kicks.
func (f *frontend) transmit(slot int, frame []byte) { f.transmitOn(0, slot, frame) }

// transmitOn is transmit on queue pair q (its buffers are pair q's, 2·num slots from
// pair 0's for q > 0).
func (f *frontend) transmitOn(q, slot int, frame []byte) {
	off, addr := f.bufAddr(2*f.num*q + slot)
	clear(f.mem[off : off+12])
	copy(f.mem[off+12:], frame)
	i, ring := slot%f.num, rxRing(q)
	f.putDesc(ring, i, addr, uint32(12+len(frame)), 0, 0)
	f.pushAvail(ring, uint16(i))
	f.doKick(ring)
}

func (f *frontend) doKick(ring int) {
	unix.Write(f.kick[ring], u64(1))
}

// postRx offers n receive buffers on the guest RX ring.
func (f *frontend) postRx(n int) { f.postRxOn(0, n) }

// postRxOn offers n receive buffers on queue pair q's guest RX ring.
func (f *frontend) postRxOn(q, n int) {
	ring := txRing(q)
	for range n {
		i := int(f.availIdx[ring] % uint16(f.num))
		_, addr := f.bufAddr(2*f.num*q + f.num + i)
		f.putDesc(ring, i, addr, feBufSize, descWrite, 0)
		f.pushAvail(ring, uint16(i))
	}
}

// receivedRaw returns what the back end put in the guest RX ring since the last call,
// virtio-net header included.
func (f *frontend) receivedRaw() [][]byte { return f.receivedRawOn(0) }

// receivedRawOn is receivedRaw of queue pair q.
func (f *frontend) receivedRawOn(q int) [][]byte {
	ring := txRing(q)
	_, _, u := f.ringOff(ring)
	idx := binary.LittleEndian.Uint16(f.mem[u+2:])
	var out [][]byte
	for ; f.usedSeen[ring] != idx; f.usedSeen[ring]++ {
		e := f.mem[u+4+8*int(f.usedSeen[ring]%uint16(f.num)):]
		id, n := binary.LittleEndian.Uint32(e), binary.LittleEndian.Uint32(e[4:])
		off, _ := f.bufAddr(2*f.num*q + f.num + int(id))
		out = append(out, append([]byte(nil), f.mem[off:off+int(n)]...))
	}
	return out
}

// usedIdx is the back end's used index of ring.
func (f *frontend) usedIdx(ring int) uint16 {
	_, _, u := f.ringOff(ring)
	return binary.LittleEndian.Uint16(f.mem[u+2:])
}

// availEvent is the back end's avail_event of ring.
func (f *frontend) availEvent(ring int) uint16 {
	_, _, u := f.ringOff(ring)
	return binary.LittleEndian.Uint16(f.mem[u+4+8*f.num:])
}

// calls reads (and clears) the call eventfd count of ring.
func (f *frontend) calls(ring int) uint64 {
	var b [8]byte
	if n, err := unix.Read(f.call[ring], b[:]); err != nil || n != 8 {
		return 0
	}
	return binary.NativeEndian.Uint64(b[:])
}

var timeNow = time.Now

func isClosed(err error) bool { return errors.Is(err, net.ErrClosed) }
