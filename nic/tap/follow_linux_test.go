package tap

import (
	"strings"
	"testing"

	"github.com/uiod/uiod/nic"
)

// txSizes sends one frame of each size through TX queue 0 and returns what TxBurst took.
func txSizes(t *testing.T, p *Port, pool *nic.Mempool, sizes ...int) int {
	t.Helper()
	bufs := make([]*nic.Buf, len(sizes))
	for i, n := range sizes {
		if bufs[i] = pool.Get(); bufs[i] == nil {
			t.Fatal("pool empty")
		}
		bufs[i].SetLen(n)
	}
	return p.TxBurst(0, bufs)
}

// TestSetMTU: a lower MTU recorded on the port bounds the frames it hands the kernel
// (longer ones counted as bad length), the MTU it was opened with restores the bound,
// and an MTU above that is refused with both numbers.
func TestSetMTU(t *testing.T) {
	p, k := pairPort(t, Config{MTU: 9000}, 0)
	pool, err := nic.NewMempool(&nic.HeapDMA{}, 8, 16384)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetMTU(1400); err != nil {
		t.Fatal(err)
	}
	if p.MTU() != 1400 || p.MaxMTU() != 9000 {
		t.Fatalf("MTU %d, MaxMTU %d after SetMTU(1400) on a 9000 port", p.MTU(), p.MaxMTU())
	}
	if n := txSizes(t, p, pool, 1418, 1419, 2000); n != 3 {
		t.Fatalf("TxBurst took %d of 3", n)
	}
	if got := k.recv(); len(got) != 1418 {
		t.Fatalf("kernel got %d bytes, want the 1418-byte frame (1400 + header + tag)", len(got))
	}
	if c := p.Counters(); c.TxBadLength != 2 {
		t.Fatalf("counters %+v: want the 1419- and 2000-byte frames counted", c)
	}
	if err := p.SetMTU(9000); err != nil {
		t.Fatal(err)
	}
	txSizes(t, p, pool, 2000)
	if got := k.recv(); len(got) != 2000 {
		t.Fatalf("kernel got %d bytes at MTU 9000, want 2000", len(got))
	}
	err = p.SetMTU(9001)
	if err == nil || p.MTU() != 9000 {
		t.Fatalf("SetMTU(9001) on a 9000 port = %v, MTU %d: want refused", err, p.MTU())
	}
	for _, s := range []string{"9001", "9000"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
}

// TestSetDown: while the interface is recorded down TxBurst takes and frees every frame,
// counted as TxDown and in TxErrors, and writes nothing; up again, frames flow.
func TestSetDown(t *testing.T) {
	p, k := pairPort(t, Config{}, 0)
	pool, err := nic.NewMempool(&nic.HeapDMA{}, 8, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p.SetDown(true)
	if n := txSizes(t, p, pool, 100, 200, 300); n != 3 {
		t.Fatalf("TxBurst took %d of 3 while down", n)
	}
	if c := p.Counters(); c.TxDown != 3 || p.Stats().TxErrors != 3 || pool.Avail() != 8 {
		t.Fatalf("counters %+v, stats %+v, %d of 8 buffers back: want 3 frames dropped down", c, p.Stats(), pool.Avail())
	}
	p.SetDown(false)
	txSizes(t, p, pool, 400)
	if got := k.recv(); len(got) != 400 {
		t.Fatalf("kernel got %d bytes after up, want the 400-byte frame (nothing queued while down)", len(got))
	}
}
