package afxdp

import (
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/testutil"
)

// l2fwd runs the dataplane's l2fwd between pa and pb on one thread under policy.
func l2fwd(t *testing.T, pa, pb *Port, policy idle.PolicyConfig) *dataplane.Dataplane {
	t.Helper()
	var qs []dataplane.Queue
	for q := 0; q < pa.NumRxQueues(); q++ {
		qs = append(qs, dataplane.Queue{RxPort: pa, RxQ: q, TxPort: pb, TxQ: q}, dataplane.Queue{RxPort: pb, RxQ: q, TxPort: pa, TxQ: q})
	}
	dp, err := dataplane.New(dataplane.Config{App: dataplane.L2Fwd, Policy: policy, Threads: []dataplane.Thread{{CPU: -1, Queues: qs}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := dp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dp.Stop)
	return dp
}

func TestL2fwdPingAndTransfer(t *testing.T) {
	for _, mode := range []Mode{ModeNative, ModeGeneric} {
		t.Run(mode.String(), func(t *testing.T) {
			r := newRig(t)
			pa, err := r.open(t, Config{Interface: r.ma, Mode: mode, RxRing: 512, TxRing: 512})
			if err != nil {
				t.Fatal(err)
			}
			pb, err := r.open(t, Config{Interface: r.mb, Mode: mode, RxRing: 512, TxRing: 512})
			if err != nil {
				t.Fatal(err)
			}
			if pa.AttachMode() != mode || pb.AttachMode() != mode {
				t.Fatalf("attached %v and %v, asked %v", pa.AttachMode(), pb.AttachMode(), mode)
			}
			dp := l2fwd(t, pa, pb, idle.PolicyConfig{Mode: idle.Adaptive})
			rtts := r.ping(t, 5, 2*time.Second)
			if len(rtts) < 4 {
				t.Fatalf("%d of 5 pings answered through the ports", len(rtts))
			}
			r.transfer(t, 1<<20)
			st := pa.Stats()
			if st.RxPackets == 0 || st.TxPackets == 0 {
				t.Fatalf("port a stats %+v", st)
			}
			th := dp.Threads()[0]
			if th.Idle.Sleeps == 0 || th.Idle.WakeInterrupt == 0 {
				t.Fatalf("adaptive thread never slept and woke by the socket: %+v", th.Idle)
			}
			t.Logf("%s: ping %v; a %+v; thread %+v", mode, rtts, st, th.Idle)
		})
	}
}

// waitFor polls cond every millisecond for up to 5 s.
func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// TestLinkStateAndDeletion: the peer's link going down and up shows in Link through
// rtnetlink (a socket is not woken by it), deletion makes the port absent, and Close
// then succeeds with the interface gone.
func TestLinkStateAndDeletion(t *testing.T) {
	r := newRig(t)
	p, err := r.open(t, Config{Interface: r.ma})
	if err != nil {
		t.Fatal(err)
	}
	if !waitFor(func() bool { return p.Link().Up }) {
		t.Fatal("link not up at open")
	}
	testutil.IPIn(t, r.a, "link", "set", "xa0", "down")
	if !waitFor(func() bool { return !p.Link().Up }) {
		t.Fatal("peer down: link still up")
	}
	testutil.IPIn(t, r.a, "link", "set", "xa0", "up")
	if !waitFor(func() bool { return p.Link().Up }) {
		t.Fatal("peer up again: link still down")
	}
	testutil.IPIn(t, r.m, "link", "del", r.ma)
	if !waitFor(func() bool { return !p.Present() }) {
		t.Fatal("interface deleted: port still present")
	}
	if p.Link().Up {
		t.Fatal("deleted interface: link up")
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close after deletion: %v", err)
	}
}

// TestCloseDetaches: after Close no program is attached and a new port may open.
func TestCloseDetaches(t *testing.T) {
	r := newRig(t)
	for i := range 2 {
		p, err := r.open(t, Config{Interface: r.ma, Promiscuous: true})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if s := r.xdpProg(t, r.ma); s == "" {
			t.Fatal("nothing attached while open")
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if s := r.xdpProg(t, r.ma); s != "" {
			t.Fatalf("after Close: %s", s)
		}
		if out := testutil.IPIn(t, r.m, "link", "show", r.ma); strings.Contains(out, "PROMISC") {
			t.Fatalf("promiscuous left on: %s", out)
		}
	}
}
