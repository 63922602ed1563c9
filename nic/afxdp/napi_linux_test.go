package afxdp

import (
	"github.com/uiod/uiod/internal/testutil"
	"testing"
	"time"
)

// TestNapiKnobs: on veth in native mode (which has NAPI instances while a program is
// attached) the knobs are set on the bound queue's NAPI and read back, and then put back
// to what they were; in generic mode (no NAPI instance) Open still succeeds and sets
// nothing.
func TestNapiKnobs(t *testing.T) {
	want := NapiSettings{DeferHardIRQs: 2, GROFlushTimeout: 200 * time.Microsecond, IRQSuspendTimeout: 20 * time.Millisecond}
	t.Run("native", func(t *testing.T) {
		r := newRig(t)
		nd, err := inRig(r, DialNetdev)
		if err != nil {
			t.Skipf("netdev family: %v", err)
		}
		defer nd.Close()
		p, err := r.open(t, Config{Interface: r.ma, Mode: ModeNative, Napi: want})
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.NapiSettings()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			t.Skip("veth has no NAPI instance here: nothing to set (logged)")
		}
		for _, n := range got {
			if n.NapiSettings != want {
				t.Errorf("NAPI %d: %+v, set %+v", n.ID, n.NapiSettings, want)
			}
		}
		// Put back while the program (and so veth's NAPI) is still there: the values
		// from before Open, which the kernel reported then.
		before := p.napiSaved
		if err := p.restoreNapi(); err != nil {
			t.Fatal(err)
		}
		after, err := nd.Napis(p.ifindex)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range before {
			for _, n := range after {
				if n.ID == s.id && n.NapiSettings != s.old {
					t.Errorf("NAPI %d after restore: %+v, was %+v", n.ID, n.NapiSettings, s.old)
				}
			}
		}
		t.Logf("set %+v on %d instances; restored %+v", want, len(got), after)
	})
	t.Run("generic", func(t *testing.T) {
		r := newRig(t)
		p, err := r.open(t, Config{Interface: r.ma, Mode: ModeGeneric, Napi: want})
		if err != nil {
			t.Fatalf("generic mode with NAPI knobs: %v", err)
		}
		got, _ := p.NapiSettings()
		t.Logf("generic: %d NAPI instances set", len(got))
	})
}

// inRig runs fn in the rig's namespace m.
func inRig[T any](r *rig, fn func() (T, error)) (T, error) {
	var v T
	err := testutil.InNetns(r.m, func() error {
		var err error
		v, err = fn()
		return err
	})
	return v, err
}
