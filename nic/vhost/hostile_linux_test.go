package vhost

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/nic"
)

// hostile is one way for a front end to misbehave.
type hostile struct {
	name string
	// act misbehaves on f (connected to p, nothing negotiated); it drives the port's
	// bursts itself when the rule it breaks is on the data path.
	act func(t *testing.T, f *frontend, p *Port)
	// fault says the port must count the front end as broken (otherwise it must only
	// drop the connection, or keep it: see keep).
	fault bool
	// keep says the connection survives (a refused request).
	keep bool
}

// regionsMsg is SET_MEM_TABLE's payload for rs.
func regionsMsg(rs ...region) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(rs)))
	b = binary.LittleEndian.AppendUint32(b, 0)
	for _, r := range rs {
		for _, v := range []uint64{r.gpa, r.size, r.uva, r.offset} {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
	}
	return b
}

// raw sends a request with flags exactly as given.
func (f *frontend) raw(req, flags uint32, payload []byte, fds ...int) {
	f.t.Helper()
	if err := f.send(msg(req, flags, payload), fds...); err != nil {
		f.t.Fatalf("request %d: %v", req, err)
	}
}

// burstUntilFault runs both bursts, as the poll thread would, until the port stops the
// front end (at most 10 s); each burst must return.
func burstUntilFault(t *testing.T, p *Port) {
	t.Helper()
	bufs := make([]*nic.Buf, 32)
	eventually(t, "the port to stop the front end", func() bool {
		for _, b := range bufs[:p.RxBurst(0, bufs)] {
			b.Free()
		}
		if b := p.pools[0].Get(); b != nil {
			b.SetLen(60)
			if p.TxBurst(0, []*nic.Buf{b}) == 0 {
				b.Free()
			}
		}
		return p.Faults() > 0
	})
}

// txChain starts the front end, then writes descriptor 0 of the guest TX ring with the
// given fields and makes head available.
func txChain(f *frontend, p *Port, t *testing.T, head uint16, addr uint64, n uint32, flags, next uint16) {
	f.start(stdFeatures)
	eventually(t, "link up", func() bool { return p.Link().Up })
	f.putDesc(ringGuestTX, 0, addr, n, flags, next)
	f.pushAvail(ringGuestTX, head)
	burstUntilFault(t, p)
}

var hostileCases = []hostile{
	{name: "bad version", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.raw(reqGetFeatures, 2, nil)
	}},
	{name: "reply flag on a request", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.raw(reqGetFeatures, flagVersion|flagReply, nil)
	}},
	{name: "payload beyond the limit", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		b := msg(reqSetFeatures, flagVersion, nil)
		binary.LittleEndian.PutUint32(b[8:], 1<<20)
		f.send(b)
	}},
	{name: "short payload", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.raw(reqSetFeatures, flagVersion, []byte{1, 2, 3})
	}},
	{name: "features not offered", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.raw(reqSetFeatures, flagVersion, u64(1<<34)) // packed rings
	}},
	{name: "regions overlap", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.raw(reqSetMemTable, flagVersion, regionsMsg(
			region{gpa: feGPA, size: 4096, uva: feGPA}, region{gpa: feGPA + 2048, size: 4096, uva: 0x9000_0000}), f.memfd, f.memfd)
	}},
	{name: "region overflows", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.raw(reqSetMemTable, flagVersion, regionsMsg(region{gpa: math.MaxUint64 - 4095, size: 8192, uva: feGPA}), f.memfd)
	}},
	{name: "region beyond its file", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.raw(reqSetMemTable, flagVersion, regionsMsg(region{gpa: feGPA, size: 2 * feMemSize, uva: feGPA}), f.memfd)
	}},
	{name: "region without a descriptor", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.raw(reqSetMemTable, flagVersion, regionsMsg(region{gpa: feGPA, size: 4096, uva: feGPA}))
	}},
	{name: "nine regions", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		rs := make([]region, 9)
		for i := range rs {
			rs[i] = region{gpa: uint64(i) << 20, size: 4096, uva: uint64(i) << 20}
		}
		f.raw(reqSetMemTable, flagVersion, regionsMsg(rs...), f.memfd)
	}},
	{name: "descriptors beyond the limit", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		fds := make([]int, 12)
		for i := range fds {
			fds[i] = f.memfd
		}
		f.raw(reqSetMemTable, flagVersion, regionsMsg(region{gpa: feGPA, size: 4096, uva: feGPA}), fds...)
	}},
	{name: "ring size not a power of two", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.raw(reqSetVringNum, flagVersion, state(0, 255))
	}},
	{name: "vring index out of range", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.raw(reqSetVringNum, flagVersion, state(7, 256))
	}},
	{name: "kick that is no eventfd", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		var pp [2]int
		if err := unix.Pipe2(pp[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(pp[0])
		defer unix.Close(pp[1])
		f.raw(reqSetVringKick, flagVersion, u64(1), pp[0])
	}},
	{name: "ring outside every region", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.negotiate(1 << featVersion1)
		f.request(reqSetMemTable, f.memTable(), false, f.memfd)
		f.request(reqSetVringNum, state(1, 256), false)
		a := f.addrs(1)
		binary.LittleEndian.PutUint64(a[8:], f.gpa+feMemSize) // descriptor table just past the region
		f.request(reqSetVringAddr, a, false)
		f.raw(reqSetVringKick, flagVersion, u64(1), f.kick[1])
	}},
	{name: "descriptor loop", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		_, addr := f.bufAddr(0)
		txChain(f, p, t, 0, addr, 16, descNext, 0)
	}},
	{name: "descriptor outside every region", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		txChain(f, p, t, 0, 0x1000, 100, 0, 0)
	}},
	{name: "descriptor straddling the region's end", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		txChain(f, p, t, 0, f.gpa+feMemSize-50, 100, 0, 0)
	}},
	{name: "descriptor length overflows", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		txChain(f, p, t, 0, math.MaxUint64-10, 100, 0, 0)
	}},
	{name: "chain to a descriptor beyond the ring", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		_, addr := f.bufAddr(0)
		txChain(f, p, t, 0, addr, 16, descNext, 4000)
	}},
	{name: "head beyond the ring", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		_, addr := f.bufAddr(0)
		txChain(f, p, t, 300, addr, 64, 0, 0)
	}},
	{name: "indirect descriptor", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		_, addr := f.bufAddr(0)
		txChain(f, p, t, 0, addr, 64, descIndirect, 0)
	}},
	{name: "device-writable buffer to send", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		_, addr := f.bufAddr(0)
		txChain(f, p, t, 0, addr, 64, descWrite, 0)
	}},
	{name: "available index jump", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.start(stdFeatures)
		eventually(t, "link up", func() bool { return p.Link().Up })
		_, a, _ := f.ringOff(ringGuestTX)
		binary.LittleEndian.PutUint16(f.mem[a+2:], 1000)
		burstUntilFault(t, p)
	}},
	{name: "read-only receive buffer", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.start(stdFeatures)
		eventually(t, "link up", func() bool { return p.Link().Up })
		_, addr := f.bufAddr(300)
		f.putDesc(ringGuestRX, 0, addr, 2048, 0, 0)
		f.pushAvail(ringGuestRX, 0)
		burstUntilFault(t, p)
	}},
	{name: "receive buffer outside every region", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.start(stdFeatures)
		eventually(t, "link up", func() bool { return p.Link().Up })
		f.putDesc(ringGuestRX, 0, 0x10, 2048, descWrite, 0)
		f.pushAvail(ringGuestRX, 0)
		burstUntilFault(t, p)
	}},
	{name: "memory truncated under the mapping", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.start(stdFeatures)
		eventually(t, "link up", func() bool { return p.Link().Up })
		if err := unix.Ftruncate(f.memfd, 0); err != nil { // the rings are now beyond the file: SIGBUS
			t.Fatal(err)
		}
		unix.Munmap(f.mem)
		f.mem = nil
		burstUntilFault(t, p)
	}},
	{name: "memory truncated before the kick", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.negotiate(stdFeatures)
		f.request(reqSetMemTable, f.memTable(), false, f.memfd)
		f.request(reqSetVringNum, state(1, uint32(f.num)), false)
		f.request(reqSetVringAddr, f.addrs(1), false)
		unix.Ftruncate(f.memfd, 0) // the ring's start reads used->idx on the control goroutine
		f.raw(reqSetVringKick, flagVersion, u64(1), f.kick[1])
	}},
	{name: "memory truncated, then the poll thread arms", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.start(stdFeatures)
		eventually(t, "link up", func() bool { return p.Link().Up })
		unix.Ftruncate(f.memfd, 0)
		p.EnableRxInterrupt(0)
	}},
	{name: "table that leaves a running ring out", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.start(stdFeatures)
		eventually(t, "link up", func() bool { return p.Link().Up })
		f.raw(reqSetMemTable, flagVersion, regionsMsg(region{gpa: feGPA + feRingSpan, size: feMemSize - feRingSpan,
			uva: feGPA + feRingSpan, offset: feRingSpan}), f.memfd)
	}},
	{name: "memory file on a disk filesystem", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		file, err := os.Create(filepath.Join(t.TempDir(), "ram"))
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		file.Truncate(feMemSize)
		if ft := fsType(t, filepath.Dir(file.Name())); ft == tmpfsMagic {
			t.Skip("the temporary directory is on tmpfs")
		}
		f.raw(reqSetMemTable, flagVersion, regionsMsg(region{gpa: feGPA, size: feMemSize, uva: feGPA}), int(file.Fd()))
	}},
	{name: "regions larger than the address space together", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.raw(reqSetMemTable, flagVersion, regionsMsg(region{gpa: 0, size: maxRegionSize, uva: 0},
			region{gpa: maxRegionSize, size: maxRegionSize, uva: maxRegionSize}), f.memfd, f.memfd)
	}},
	{name: "used ring misaligned in the file", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		// The region's uva is 2 off its file offset: the used ring's 4-aligned address is
		// 2 mod 4 in the mapping.
		f.negotiate(1 << featVersion1)
		f.request(reqSetMemTable, regionsMsg(region{gpa: feGPA, size: feMemSize - 4096, uva: feGPA + 2}), false, f.memfd)
		f.request(reqSetVringNum, state(1, uint32(f.num)), false)
		f.request(reqSetVringAddr, f.addrs(1), false)
		f.raw(reqSetVringKick, flagVersion, u64(1), f.kick[1])
	}},
	{name: "features changed on running rings", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.start(stdFeatures)
		eventually(t, "link up", func() bool { return p.Link().Up })
		f.raw(reqSetFeatures, flagVersion, u64(1<<featVersion1|1<<featProtocolFeature))
	}},
	{name: "chain longer than the limit", fault: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.num = 2048 // chains of up to 1024 descriptors on a ring of 2048
		f.negotiate(1 << featVersion1)
		f.request(reqSetMemTable, f.memTable(), false, f.memfd)
		desc, avail := f.setBigRing(ringGuestTX)
		_, buf := f.bufAddr(0)
		for i := range f.num {
			d := f.mem[desc+16*i:]
			binary.LittleEndian.PutUint64(d, buf)
			binary.LittleEndian.PutUint32(d[8:], 0)
			binary.LittleEndian.PutUint16(d[12:], descNext)
			binary.LittleEndian.PutUint16(d[14:], uint16((i+1)%f.num))
		}
		binary.LittleEndian.PutUint16(f.mem[avail+2:], 1)
		eventually(t, "the ring to start", func() bool { return ringMem(p, ringGuestTX) != nil })
		burstUntilFault(t, p)
	}},
	{name: "kick eventfd made blocking", keep: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.start(stdFeatures)
		eventually(t, "link up", func() bool { return p.Link().Up })
		unix.SetNonblock(f.kick[ringGuestTX], false)
		for range 3 {
			p.RxVector(0).Drain()
			p.EnableRxInterrupt(0)
			p.DisableRxInterrupt(0)
		}
		f.transmit(0, frame(1, 60))
		rxAll(t, p, 1)
	}},
	{name: "call eventfds made blocking and full", keep: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.start(stdFeatures)
		eventually(t, "link up", func() bool { return p.Link().Up })
		fillEventfd(t, f.call[ringGuestTX])
		fillEventfd(t, f.call[ringGuestRX])
		for i := range 4 {
			f.transmit(i, frame(i, 60))
		}
		rxAll(t, p, 4)
		sendN(t, p, f, 4)
	}},
	{name: "refused request with a native reply", keep: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.negotiate(stdFeatures)
		f.raw(24, flagVersion, make([]byte, 12)) // GET_CONFIG, no NEED_REPLY: it waits for the reply
		if r, err := f.reply(24); err != nil || len(r) != 0 {
			t.Fatalf("GET_CONFIG: reply %x, %v; want an empty (failed) reply", r, err)
		}
		if got := binary.LittleEndian.Uint64(f.request(reqGetFeatures, nil, true)); got != offeredFeatures {
			t.Fatalf("after a refused request: features 0x%x", got)
		}
	}},
	{name: "gone mid-header", act: func(t *testing.T, f *frontend, p *Port) {
		f.send(msg(reqGetFeatures, flagVersion, nil)[:6])
		f.c.Close()
	}},
	{name: "gone mid-payload", act: func(t *testing.T, f *frontend, p *Port) {
		f.send(msg(reqSetMemTable, flagVersion, f.memTable())[:20], f.memfd)
		f.c.Close()
	}},
	{name: "unknown request", keep: true, act: func(t *testing.T, f *frontend, p *Port) {
		f.negotiate(stdFeatures)
		f.raw(99, flagVersion|flagNeedReply, nil)
		r, err := f.reply(99)
		if err != nil || len(r) != 8 || binary.LittleEndian.Uint64(r) == 0 {
			t.Fatalf("unknown request: reply %x, %v; want a failure ack", r, err)
		}
		if got := binary.LittleEndian.Uint64(f.request(reqGetFeatures, nil, true)); got != offeredFeatures {
			t.Fatalf("after a refused request: features 0x%x", got)
		}
	}},
}

// TestHostileFrontEnd checks that a front end that breaks the protocol or the ring rules
// is disconnected and, when it broke a rule, counted, without the port (or the test's poll
// loop) crashing or blocking, and that the next front end is served as if nothing happened.
func TestHostileFrontEnd(t *testing.T) {
	for _, tc := range hostileCases {
		t.Run(tc.name, func(t *testing.T) {
			p, sock := openServer(t)
			f := dial(t, sock)
			tc.act(t, f, p)
			if tc.keep {
				if p.Faults() != 0 {
					t.Fatalf("faults = %d", p.Faults())
				}
				if !p.connected.Load() {
					t.Fatal("the connection ended")
				}
				f.c.Close()
				eventually(t, "the connection to end", func() bool { return !p.connected.Load() })
				checkServes(t, p, sock)
				return
			}
			if f.c != nil {
				var b [1]byte
				f.c.SetReadDeadline(timeNow().Add(10e9))
				if _, err := f.c.Read(b[:]); err != io.EOF && !errors.Is(err, unix.ECONNRESET) && !isClosed(err) {
					t.Fatalf("connection not closed by the port: %v", err)
				}
			}
			want := uint64(0)
			if tc.fault {
				want = 1
			}
			eventually(t, "the connection to end", func() bool { return !p.connected.Load() })
			if got := p.Faults(); got != want {
				t.Fatalf("faults = %d, want %d", got, want)
			}
			if p.Link().Up {
				t.Fatal("link up after the front end went")
			}
			if got := p.Stats().RxErrors; got < want {
				t.Fatalf("rx errors = %d, want ≥ %d", got, want)
			}
			checkServes(t, p, sock)
		})
	}
}

// checkServes connects a well-behaved front end and passes a frame each way.
func checkServes(t *testing.T, p *Port, sock string) {
	t.Helper()
	f := dial(t, sock)
	f.start(stdFeatures)
	eventually(t, "link up for the next front end", func() bool { return p.Link().Up })
	f.transmit(0, frame(7, 60))
	if got := rxAll(t, p, 1); string(got[0]) != string(frame(7, 60)) {
		t.Fatalf("next front end: got % x", got[0])
	}
	f.postRx(1)
	b := p.pools[0].Get()
	b.SetLen(copy(b.Data(), frame(9, 70)))
	if p.TxBurst(0, []*nic.Buf{b}) != 1 {
		t.Fatal("next front end: TxBurst took nothing")
	}
	if rx := receivedHdr(f, 12); len(rx) != 1 || string(rx[0]) != string(frame(9, 70)) {
		t.Fatalf("next front end received %x", rx)
	}
}
