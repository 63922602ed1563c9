package vhost

import (
	"bytes"
	"testing"

	"github.com/uiod/uiod/nic"
	"golang.org/x/sys/unix"
)

// swapMemory gives the front end a new memory file holding a copy of its memory and sends
// a SET_MEM_TABLE of it, one region at guest-physical address gpa (its virtual addresses
// stay, so the rings do not move). The old file stays mapped in the test and keeps its
// bytes; the back end unmaps its own mapping of it.
func (f *frontend) swapMemory(t *testing.T, gpa uint64) (old []byte) {
	fd, err := unix.MemfdCreate("vhost-test-2", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Ftruncate(fd, feMemSize); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(fd, 0, feMemSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	copy(mem, f.mem)
	f.request(reqSetMemTable, regionsMsg(region{gpa: gpa, size: feMemSize, uva: f.gpa, offset: 0}), false, fd)
	old, f.mem = f.mem, mem
	return old
}

// TestRegionCacheNewTable: the region a ring translated its last buffer into is forgotten
// when a SET_MEM_TABLE replaces the table between bursts. The first burst of each case
// fills the cache with the first file's region; then the front end moves its memory.
func TestRegionCacheNewTable(t *testing.T) {
	t.Run("same addresses, new file", func(t *testing.T) {
		p, f := startServer(t, stdFeatures)
		f.transmit(0, frame(1, 60))
		if got := rxAll(t, p, 1); !bytes.Equal(got[0], frame(1, 60)) {
			t.Fatalf("first frame % x", got[0])
		}
		f.postRx(1)
		sendOne(t, p, frame(2, 60))

		old := f.swapMemory(t, f.gpa)
		// The same buffer in the old file holds another frame: a back end that still read
		// the old mapping would return it (or fault, once it is unmapped).
		f.transmit(1, frame(3, 60))
		off, _ := f.bufAddr(1)
		copy(old[off+12:], frame(4, 60))
		if got := rxAll(t, p, 1); !bytes.Equal(got[0], frame(3, 60)) {
			t.Fatalf("after the new table got % x, want the new file's frame", got[0][:8])
		}
		f.receivedRaw() // the frame sent before the swap
		f.postRx(1)
		sendOne(t, p, frame(5, 60))
		got := f.receivedRaw()
		if len(got) != 1 || !bytes.Equal(got[0][12:], frame(5, 60)) {
			t.Fatalf("after the new table the front end received %d frames in its new file", len(got))
		}
		if p.Faults() != 0 {
			t.Fatalf("%d faults", p.Faults())
		}
	})
	t.Run("old addresses gone", func(t *testing.T) {
		p, f := startServer(t, stdFeatures)
		f.transmit(0, frame(1, 60))
		rxAll(t, p, 1)
		// The same memory now sits at another guest-physical address: a descriptor
		// naming the old one is outside every region, whatever the last burst used.
		f.swapMemory(t, f.gpa+1<<32)
		f.transmit(1, frame(3, 60)) // at the old guest-physical address
		bufs := make([]*nic.Buf, 32)
		if n := p.RxBurst(0, bufs); n != 0 {
			t.Fatalf("took %d frames from a buffer outside every region", n)
		}
		eventually(t, "the fault to be counted", func() bool { return p.Faults() == 1 })
	})
}

// sendOne sends frame with TxBurst and fails unless it was taken.
func sendOne(t *testing.T, p *Port, frame []byte) {
	t.Helper()
	b := p.pools[0].Get()
	b.SetLen(copy(b.Data(), frame))
	if p.TxBurst(0, []*nic.Buf{b}) != 1 {
		t.Fatal("TxBurst took nothing")
	}
}
