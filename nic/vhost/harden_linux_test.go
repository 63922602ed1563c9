package vhost

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/nic"
)

// Tests of the back end's defences against a front end that attacks it (docs/design.md,
// §15 "A hostile front end"). Each names the finding it covers.

// inChild runs body in a child process of the test binary (the test named t, with the
// environment variable VHOST_CHILD set to name) and returns its output: for failures that
// are the process dying. The child prints childSurvived when body returned.
func inChild(t *testing.T, name string, body func(t *testing.T)) string {
	t.Helper()
	if os.Getenv("VHOST_CHILD") == name {
		body(t)
		os.Stdout.WriteString(childSurvived + "\n")
		return ""
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "VHOST_CHILD="+name)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte(childSurvived)) {
		t.Fatalf("the process died or failed: %v\n%s", err, out)
	}
	return string(out)
}

const childSurvived = "VHOST-CHILD-SURVIVED"

// TestTruncatedMemoryOnEveryGoroutine (H1): a front end that truncates its memory file
// takes a recovered fault wherever the back end touches that memory, not only inside a
// burst: on the control goroutine (a ring's start reads used->idx and writes the used
// flags) and on the poll thread outside a burst (arming and disarming the RX interrupt).
// The process survives, the front end is counted as broken and disconnected.
func TestTruncatedMemoryOnEveryGoroutine(t *testing.T) {
	for _, tc := range []struct {
		name string
		act  func(t *testing.T, f *frontend, p *Port)
	}{
		{"before the kick starts the ring", func(t *testing.T, f *frontend, p *Port) {
			f.negotiate(stdFeatures)
			f.request(reqSetMemTable, f.memTable(), false, f.memfd)
			f.request(reqSetVringNum, state(1, uint32(f.num)), false)
			f.request(reqSetVringAddr, f.addrs(1), false)
			f.request(reqSetVringEnable, state(1, 1), false)
			unix.Ftruncate(f.memfd, 0)
			f.raw(reqSetVringKick, flagVersion, u64(1), f.kick[1])
		}},
		{"then the poll thread arms", func(t *testing.T, f *frontend, p *Port) {
			f.start(stdFeatures)
			eventually(t, "link up", func() bool { return p.Link().Up })
			unix.Ftruncate(f.memfd, 0)
			p.EnableRxInterrupt(0)
		}},
		{"then the poll thread disarms", func(t *testing.T, f *frontend, p *Port) {
			f.start(1 << featVersion1) // the flags path: the used head is written
			eventually(t, "link up", func() bool { return p.Link().Up })
			unix.Ftruncate(f.memfd, 0)
			p.DisableRxInterrupt(0)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inChild(t, tc.name, func(t *testing.T) {
				p, sock := openServer(t)
				f := dial(t, sock)
				tc.act(t, f, p)
				eventually(t, "the fault to be counted", func() bool { return p.Faults() == 1 })
				eventually(t, "the connection to end", func() bool { return !p.connected.Load() })
			})
		})
	}
}

// fillEventfd makes fd blocking and its counter full: a write of 1 would wait for a read.
func fillEventfd(t *testing.T, fd int) {
	t.Helper()
	if err := unix.SetNonblock(fd, false); err != nil {
		t.Fatal(err)
	}
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], 0xfffffffffffffffe)
	if _, err := unix.Write(fd, b[:]); err != nil {
		t.Fatal(err)
	}
}

// emptyEventfd reads fd's counter without blocking (whatever its flags).
func emptyEventfd(fd int) {
	var b [8]byte
	unix.Preadv2(fd, [][]byte{b[:]}, -1, unix.RWF_NOWAIT)
}

// TestSharedFdsNeverBlock (H2): the kick and call eventfds are the front end's open file
// descriptions, whose O_NONBLOCK it controls. A front end that makes them blocking (and
// fills or empties their counters) never blocks a uiod thread: the kick is never read
// (edge-triggered epoll), the self-wake goes to uiod's own eventfd, and the call is
// written by its own goroutine.
func TestSharedFdsNeverBlock(t *testing.T) {
	for _, tc := range []struct {
		name string
		prep func(t *testing.T, f *frontend, p *Port)
		op   func(p *Port) // on the "poll thread": must return
		undo func(f *frontend)
	}{
		{"kick made blocking, nothing pending: Drain", func(t *testing.T, f *frontend, p *Port) {
			unix.SetNonblock(f.kick[ringGuestTX], false)
			p.RxVector(0).Drain() // the back end's own kick at the start
		}, func(p *Port) { p.RxVector(0).Drain() }, func(f *frontend) { f.doKick(ringGuestTX) }},
		{"kick made blocking and full: the self-wake", func(t *testing.T, f *frontend, p *Port) {
			fillEventfd(t, f.kick[ringGuestTX])
		}, func(p *Port) { p.kicks[0].self() }, func(f *frontend) { emptyEventfd(f.kick[ringGuestTX]) }},
		{"call made blocking and full: RxBurst", func(t *testing.T, f *frontend, p *Port) {
			fillEventfd(t, f.call[ringGuestTX])
			f.transmit(0, frame(1, 60))
		}, func(p *Port) {
			bufs := make([]*nic.Buf, 8)
			for n := 0; n == 0; {
				n = p.RxBurst(0, bufs)
				for _, b := range bufs[:n] {
					b.Free()
				}
			}
		}, func(f *frontend) { emptyEventfd(f.call[ringGuestTX]) }},
		{"call made blocking and full: TxBurst", func(t *testing.T, f *frontend, p *Port) {
			fillEventfd(t, f.call[ringGuestRX])
			f.postRx(4)
		}, func(p *Port) {
			for range 4 {
				b := p.pools[0].Get()
				b.SetLen(60)
				if p.TxBurst(0, []*nic.Buf{b}) == 0 {
					b.Free()
				}
			}
		}, func(f *frontend) { emptyEventfd(f.call[ringGuestRX]) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, f := startServer(t, stdFeatures)
			tc.prep(t, f, p)
			done := make(chan struct{})
			go func() {
				tc.op(p)
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				tc.undo(f)
				<-done
				t.Fatal("a uiod thread blocked on a descriptor the front end shares")
			}
			// The port still closes, with the call's writer stuck or not.
			closed := make(chan struct{})
			go func() {
				p.Close()
				close(closed)
			}()
			select {
			case <-closed:
			case <-time.After(10 * time.Second):
				tc.undo(f)
				t.Fatal("Close blocked")
			}
		})
	}
}

// TestRefusedMemTableKeepsTheOld (H3): a SET_MEM_TABLE that leaves a running ring out is
// refused before anything changes: both rings stay on the old table, which stays mapped,
// and the poll thread's writes still land in the front end's memory.
func TestRefusedMemTableKeepsTheOld(t *testing.T) {
	p, f := startServer(t, stdFeatures)
	old := ringMem(p, ringGuestTX)
	// The new table lacks vring 0's memory (the first ring span).
	rs := regionsMsg(region{gpa: feGPA + feRingSpan, size: feMemSize - feRingSpan, uva: feGPA + feRingSpan, offset: feRingSpan})
	s := &session{p: p}
	if err := s.setMemTable(&message{hdr: header{req: reqSetMemTable}, payload: rs, fds: []int{f.memfd}}); err == nil {
		t.Fatal("a table without vring 0's memory was accepted")
	}
	for i := range numVrings {
		if got := ringMem(p, i); got != old {
			t.Fatalf("vring %d moved to another table (%p, was %p)", i, got, old)
		}
	}
	f.transmit(0, frame(3, 60))
	if got := rxAll(t, p, 1); !bytes.Equal(got[0], frame(3, 60)) {
		t.Fatalf("after the refusal got % x", got[0])
	}
	p.EnableRxInterrupt(0)
	if f.availEvent(ringGuestTX) != 1 || p.Faults() != 0 {
		t.Fatalf("avail_event %d, faults %d: the ring does not run on the front end's memory", f.availEvent(ringGuestTX), p.Faults())
	}
}

// ringMem is vring i's memory table.
func ringMem(p *Port, i int) *memTable {
	var m *memTable
	p.withRing(i, func(r *vring) error {
		m = r.mem
		return nil
	})
	return m
}

// TestQEMUStartOrder (H4): QEMU sends a masked call notifier at init, then the kick (the
// ring starts), and only then the real call fd. A frame delivered in between signals the
// masked notifier; the back end calls the real one once when it arrives, so that an
// EVENT_IDX guest, whose used_event stays behind, is not left waiting for ever.
func TestQEMUStartOrder(t *testing.T) {
	p, sock := openServer(t)
	f := dial(t, sock)
	masked, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(masked)
	f.negotiate(stdFeatures)
	for i := range 2 {
		f.request(reqSetVringCall, u64(uint64(i)), false, masked)
		f.request(reqSetVringEnable, state(uint32(i), 1), false)
	}
	f.request(reqSetMemTable, f.memTable(), false, f.memfd)
	f.postRx(8)
	f.request(reqSetVringNum, state(0, uint32(f.num)), false)
	f.request(reqSetVringBase, state(0, 0), false)
	f.request(reqSetVringAddr, f.addrs(0), false)
	f.request(reqSetVringKick, u64(0), false, f.kick[0])
	b := p.pools[0].Get()
	b.SetLen(60)
	if p.TxBurst(0, []*nic.Buf{b}) != 1 {
		t.Fatal("no frame delivered")
	}
	f.request(reqSetVringCall, u64(0), false, f.call[0])
	for range 3 {
		b := p.pools[0].Get()
		b.SetLen(60)
		p.TxBurst(0, []*nic.Buf{b}) // used_event stays 0: no call asked for
	}
	syncCalls(t, p)
	if f.calls(ringGuestRX) == 0 {
		t.Fatalf("used index %d, the guest's used_event 0: its notifier was never written", f.usedIdx(ringGuestRX))
	}
}

// TestRingWords (M2): the rings' head words are little-endian whatever the host: bytes
// 01 00 02 00 are flags 1, index 2. Run natively and under qemu-user for a big-endian
// architecture (GOARCH=s390x go test -c; qemu-s390x ./vhost.test -test.run TestRingWords).
func TestRingWords(t *testing.T) {
	b := make([]byte, 16)
	copy(b, []byte{1, 0, 2, 0, 7, 0})
	if got := loadAvailIdx(b, 0, 16); got != 2 {
		t.Fatalf("available index %d from 01 00 02 00, want 2", got)
	}
	if got := loadAvailIdx(b, 4, 0); got != 7 {
		t.Fatalf("available index %d from a 2-aligned ring, want 7", got)
	}
	storeUsedHead(b[8:], 1, 0x0302)
	if !bytes.Equal(b[8:12], []byte{1, 0, 2, 3}) {
		t.Fatalf("used head % x for flags 1, index 0x0302; want 01 00 02 03", b[8:12])
	}
}

// fsType is the filesystem type of dir.
func fsType(t *testing.T, dir string) int64 {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	return int64(uint32(fs.Type))
}

// TestMemoryFileFilesystem (M3): a memory file must be on tmpfs or hugetlbfs (a memfd), or
// on a filesystem the port's configuration allows: a file elsewhere (FUSE: the poll
// thread's page faults answered by another process) is refused.
func TestMemoryFileFilesystem(t *testing.T) {
	dir := t.TempDir()
	ft := fsType(t, dir)
	if ft == tmpfsMagic || ft == hugetlbfsMagic {
		t.Skipf("the test's temporary directory %s is on tmpfs", dir)
	}
	path := filepath.Join(dir, "guest-ram")
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if err := file.Truncate(feMemSize); err != nil {
		t.Fatal(err)
	}
	memfd, err := unix.MemfdCreate("vhost-fs", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(memfd)
	unix.Ftruncate(memfd, feMemSize)
	rs := []region{{gpa: feGPA, size: feMemSize, uva: feGPA}}
	for _, tc := range []struct {
		name  string
		fd    int
		allow []int64
		ok    bool
	}{
		{"memfd", memfd, nil, true},
		{"file on a disk filesystem", int(file.Fd()), nil, false},
		{"file on an allowed disk filesystem", int(file.Fd()), []int64{ft}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := mapTable(rs, []int{tc.fd}, tc.allow)
			if (err == nil) != tc.ok {
				t.Fatalf("mapTable: %v, want success %v", err, tc.ok)
			}
			m.unmap()
		})
	}
}

// TestShortChainOncePerBurst (M4): a receive chain too short for the frames is walked once
// per burst: TxBurst drops the first frame that does not fit and stops there, where it
// retried the same chain for every frame of the burst.
func TestShortChainOncePerBurst(t *testing.T) {
	p, f := startServer(t, stdFeatures)
	_, addr := f.bufAddr(f.num)
	f.putDesc(ringGuestRX, 0, addr, 16, descWrite, 0) // room for the header and 4 bytes
	f.pushAvail(ringGuestRX, 0)
	bufs := make([]*nic.Buf, 32)
	for i := range bufs {
		bufs[i] = p.pools[0].Get()
		bufs[i].SetLen(60)
	}
	n := p.TxBurst(0, bufs)
	for _, b := range bufs[n:] {
		b.Free()
	}
	if n != 1 || p.Stats().TxErrors != 1 || f.usedIdx(ringGuestRX) != 0 {
		t.Fatalf("TxBurst took %d frames, %d dropped, used index %d; want 1, 1, 0 (one walk of the short chain)",
			n, p.Stats().TxErrors, f.usedIdx(ringGuestRX))
	}
}

// TestChainLimit (M4): chains are bounded by maxChainLen whatever the ring size: on a ring
// of 2048 a chain of 1024 descriptors is taken and one of 1025 breaks the rules.
func TestChainLimit(t *testing.T) {
	for _, tc := range []struct {
		n     int
		fault bool
	}{{maxChainLen, false}, {maxChainLen + 1, true}} {
		t.Run(map[bool]string{false: "at the limit", true: "beyond it"}[tc.fault], func(t *testing.T) {
			p, sock := openServer(t)
			f := dial(t, sock)
			f.num = 2048
			f.negotiate(stdFeatures)
			f.request(reqSetMemTable, f.memTable(), false, f.memfd)
			desc, avail := f.setBigRing(ringGuestTX) // laid out for 2048 entries within its span
			f.request(reqSetVringEnable, state(ringGuestTX, 1), false)
			off, buf := f.bufAddr(0)
			clear(f.mem[off : off+12])
			for i := range tc.n {
				d := f.mem[desc+16*i:]
				ln, flags := uint32(1), uint16(descNext)
				if i == 0 {
					ln = 12 + 1 // the header and the first byte
				}
				if i == tc.n-1 {
					flags = 0
				}
				binary.LittleEndian.PutUint64(d, buf)
				binary.LittleEndian.PutUint32(d[8:], ln)
				binary.LittleEndian.PutUint16(d[12:], flags)
				binary.LittleEndian.PutUint16(d[14:], uint16(i+1))
			}
			binary.LittleEndian.PutUint16(f.mem[avail+4:], 0)
			binary.LittleEndian.PutUint16(f.mem[avail+2:], 1)
			bufs := make([]*nic.Buf, 1)
			got := 0
			eventually(t, "the chain to be taken or refused", func() bool {
				n := p.RxBurst(0, bufs)
				for _, b := range bufs[:n] {
					got = b.Len()
					b.Free()
				}
				return got > 0 || p.Faults() > 0
			})
			if tc.fault != (p.Faults() == 1) || !tc.fault && got != tc.n {
				t.Fatalf("chain of %d: faults %d, frame of %d bytes", tc.n, p.Faults(), got)
			}
		})
	}
}

// TestPollModeKick (M5): a front end that sends SET_VRING_KICK without a descriptor (it
// wants its ring polled) never kicks: arming the RX interrupt wakes the vector at once, so
// the poll thread does not sleep on the queue.
func TestPollModeKick(t *testing.T) {
	p, sock := openServer(t)
	f := dial(t, sock)
	f.negotiate(stdFeatures)
	f.request(reqSetMemTable, f.memTable(), false, f.memfd)
	for i := range 2 {
		f.request(reqSetVringCall, u64(uint64(i)), false, f.call[i])
		f.request(reqSetVringNum, state(uint32(i), uint32(f.num)), false)
		f.request(reqSetVringAddr, f.addrs(i), false)
		if i == ringGuestTX {
			f.request(reqSetVringKick, u64(uint64(i)|vringNoFd), false)
		} else {
			f.request(reqSetVringKick, u64(uint64(i)), false, f.kick[i])
		}
		f.request(reqSetVringEnable, state(uint32(i), 1), false)
	}
	eventually(t, "link up", func() bool { return p.Link().Up })
	vec := p.RxVector(0)
	vec.Drain()
	p.EnableRxInterrupt(0)
	fds := []unix.PollFd{{Fd: int32(vec.Fd()), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 5000); n != 1 || err != nil {
		t.Fatalf("the vector of a polled ring did not wake after arming: %d, %v", n, err)
	}
}

// TestDisabledRingDiscards (L1): SET_VRING_ENABLE 0 leaves a ring started but disabled: the
// guest's TX frames are processed and discarded (used->idx advances, no frame comes out),
// its RX ring is given nothing, and the link is down.
func TestDisabledRingDiscards(t *testing.T) {
	p, f := startServer(t, stdFeatures)
	f.request(reqSetVringEnable, state(ringGuestTX, 0), false)
	f.request(reqSetVringEnable, state(ringGuestRX, 0), false)
	if p.Link().Up {
		t.Fatal("link up with both rings disabled")
	}
	for i := range 3 {
		f.transmit(i, frame(i, 60))
	}
	bufs := make([]*nic.Buf, 8)
	eventually(t, "the disabled ring's frames to be consumed", func() bool {
		if n := p.RxBurst(0, bufs); n != 0 {
			t.Fatalf("a disabled ring gave %d frames", n)
		}
		return f.usedIdx(ringGuestTX) == 3
	})
	f.postRx(2)
	b := p.pools[0].Get()
	b.SetLen(60)
	if p.TxBurst(0, []*nic.Buf{b}) != 0 {
		t.Fatal("a disabled guest RX ring took a frame")
	}
	b.Free()
	f.request(reqSetVringEnable, state(ringGuestTX, 1), false)
	f.request(reqSetVringEnable, state(ringGuestRX, 1), false)
	eventually(t, "link up again", func() bool { return p.Link().Up })
	f.transmit(3, frame(3, 60))
	if got := rxAll(t, p, 1); !bytes.Equal(got[0], frame(3, 60)) {
		t.Fatalf("re-enabled ring gave % x", got[0])
	}
}

// TestResetOwner (L2): RESET_OWNER forgets the session whole: a front end that sets its
// rings up again without SET_FEATURES gets the legacy 10-byte header, not the one of the
// features negotiated before the reset.
func TestResetOwner(t *testing.T) {
	p, f := startServer(t, stdFeatures)
	f.request(reqResetOwner, nil, false)
	f.features = 0 // no protocol features: no more acks
	eventually(t, "link down", func() bool { return !p.Link().Up })
	f.availIdx, f.usedSeen = [feMaxRings]uint16{}, [feMaxRings]uint16{}
	clear(f.mem[:2*feRingSpan])
	f.start(0)
	eventually(t, "link up", func() bool { return p.Link().Up })
	off, addr := f.bufAddr(0)
	fr := frame(5, 60)
	clear(f.mem[off : off+10])
	copy(f.mem[off+10:], fr)
	f.putDesc(ringGuestTX, 0, addr, uint32(10+len(fr)), 0, 0)
	f.pushAvail(ringGuestTX, 0)
	if got := rxAll(t, p, 1); !bytes.Equal(got[0], fr) {
		t.Fatalf("after RESET_OWNER, a legacy-header frame came out as % x", got[0])
	}
}

// TestAvailTwoAligned (L4): the available ring needs the specification's 2-byte alignment,
// not 4: frames pass both ways with both available rings at 2 mod 4.
func TestAvailTwoAligned(t *testing.T) {
	p, sock := openServer(t)
	f := dial(t, sock)
	f.availShift = 2
	f.start(stdFeatures)
	eventually(t, "link up", func() bool { return p.Link().Up })
	for i := range 3 {
		f.transmit(i, frame(i, 60))
	}
	if got := rxAll(t, p, 3); !bytes.Equal(got[2], frame(2, 60)) {
		t.Fatalf("got % x", got[2])
	}
	sendN(t, p, f, 3)
	syncCalls(t, p)
	if f.usedIdx(ringGuestRX) != 3 || f.calls(ringGuestRX) == 0 || p.Faults() != 0 {
		t.Fatalf("guest RX used %d, faults %d", f.usedIdx(ringGuestRX), p.Faults())
	}
}

// TestSameMemTableKeepsMapping (L6): QEMU resends its unchanged memory table at every
// start; the back end keeps the mapping it has (no remap, no fresh page faults).
func TestSameMemTableKeepsMapping(t *testing.T) {
	p, f := startServer(t, stdFeatures)
	before := ringMem(p, ringGuestTX)
	dup, err := unix.Dup(f.memfd) // another descriptor of the same file
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dup)
	f.request(reqSetMemTable, f.memTable(), false, dup)
	if after := ringMem(p, ringGuestTX); after != before {
		t.Fatal("an identical memory table was mapped again")
	}
	f.transmit(0, frame(1, 60))
	rxAll(t, p, 1)
}

// TestLargeRegions (L7): regions beyond 1 TiB are accepted (the largest guests), up to the
// address space.
func TestLargeRegions(t *testing.T) {
	p, sock := openServer(t)
	f := dial(t, sock)
	f.negotiate(stdFeatures)
	const size = 2 << 40
	fd, err := unix.MemfdCreate("vhost-large", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, size); err != nil {
		t.Skipf("a 2 TiB memfd: %v", err)
	}
	f.request(reqSetMemTable, regionsMsg(region{gpa: 1 << 32, size: size, uva: 1 << 44}), false, fd) // acked 0
	if p.Faults() != 0 {
		t.Fatal("fault")
	}
}

// TestBaseMismatchLogged (L9): a ring that resumes at the used index in the front end's
// memory rather than at its SET_VRING_BASE says so.
func TestBaseMismatchLogged(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	sock := filepath.Join(t.TempDir(), "vhost.sock")
	p, err := Open(Config{Socket: sock, Reconnect: 10 * time.Millisecond, PoolSize: 64, Log: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	f := dial(t, sock)
	f.negotiate(stdFeatures)
	f.request(reqSetMemTable, f.memTable(), false, f.memfd)
	f.request(reqSetVringNum, state(1, uint32(f.num)), false)
	f.request(reqSetVringBase, state(1, 5), false)
	f.request(reqSetVringAddr, f.addrs(1), false)
	f.request(reqSetVringKick, u64(1), false, f.kick[1])
	f.request(reqSetVringEnable, state(1, 1), false)
	if n := logs.FilterMessageSnippet("SET_VRING_BASE").Len(); n != 1 {
		t.Fatalf("%d warnings about the base, want 1: %v", n, logs.All())
	}
}
