package soak

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/daemon"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/wire"
)

// TestSoakRemoval runs the daemon on four model ports, two l2fwd pairs, and takes the
// devices of the first pair away again and again while both pairs carry traffic: either
// asked for first (the device-request interrupt, then the kernel removes the function)
// or pulled away (the function reads all ones and does no DMA, then the request comes,
// as a hot-unplug's remove path sends it). Each time the port must be released (its
// device closed), come back by itself, and forward again; the second pair must lose no
// frame in the whole round; nothing may outlive a round.
func TestSoakRemoval(t *testing.T) {
	d, rng, base := startSoak(t, "removal soak", 0x7e40)
	var removals, surprises int
	testutil.Repeat(d, func(round int, left time.Duration) bool {
		rc := removalRound{nic: []string{"igb", "ixgbe", "virtio"}[rng.IntN(3)], mode: []string{"adaptive", "busy"}[rng.IntN(2)]}
		length := min(time.Duration(2+rng.IntN(3))*time.Second, left)
		ok := t.Run(fmt.Sprintf("round%d-%s-%s", round, rc.nic, rc.mode), func(t *testing.T) {
			r, s := rc.run(t, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())), length, round)
			removals += r
			surprises += s
		})
		if ok {
			base.check(t, round)
		}
		return ok
	})
	t.Logf("%d removals, %d of them surprise removals", removals, surprises)
}

// removalRound is what one round runs on.
type removalRound struct{ nic, mode string }

// run runs one round for length and returns how many removals it made and how many of
// them were surprises.
func (rc removalRound) run(t *testing.T, rng *rand.Rand, length time.Duration, round int) (removals, surprises int) {
	name := fmt.Sprintf("soakrm%d", round)
	cfg, err := config.Read(strings.NewReader(fmt.Sprintf(`
ports:
  - {name: a, driver: sim, nic: %[2]s, wire: "pair:%[1]s0", promiscuous: true}
  - {name: b, driver: sim, nic: %[2]s, wire: "pair:%[1]s1", promiscuous: true}
  - {name: c, driver: sim, nic: %[2]s, wire: "pair:%[1]s2", promiscuous: true}
  - {name: d, driver: sim, nic: %[2]s, wire: "pair:%[1]s3", promiscuous: true}
forward: {mode: l2fwd, pairs: [[a, b], [c, d]]}
poll: {mode: %[3]s, wait_timeout: 5ms}
metrics: {listen: "127.0.0.1:0"}
`, name, rc.nic, rc.mode)))
	if err != nil {
		t.Fatal(err)
	}
	cfg.StateDir = t.TempDir()
	core, logs := observer.New(zap.WarnLevel)
	dm := daemon.New(cfg, daemon.Options{Log: zap.New(core)})
	if err := dm.Start(); err != nil {
		t.Fatal(err)
	}
	defer dm.Stop()
	var ends [4]wire.Port
	var seen [4]testutil.SeqSink
	for i := range ends {
		w, err := wire.Open(fmt.Sprintf("pair:%s%d", name, i))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		w.SetHandler(seen[i].Handler)
		ends[i] = w
	}
	// Traffic: c⇄d in paced batches (none may be lost), a⇄b best effort.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var cdSent uint32
	wg.Add(1)
	go func() {
		defer wg.Done()
		for seq := uint32(0); ; seq++ {
			select {
			case <-stop:
				return
			default:
			}
			for _, i := range []int{2, 3, 0, 1} {
				if err := ends[i].Send(testutil.SeqFrame(seq)); err != nil {
					t.Error(err)
					return
				}
			}
			cdSent = seq + 1
			if seq%32 == 31 {
				// Pace: wait until c⇄d caught up, so that no frame is lost to a full ring.
				testutil.WaitFor(5*time.Second, func() bool { return seen[3].Count() >= int(seq)-8 && seen[2].Count() >= int(seq)-8 })
			}
		}
	}()
	testutil.Repeat(length, func(int, time.Duration) bool {
		time.Sleep(time.Duration(20+rng.IntN(180)) * time.Millisecond)
		port := []string{"a", "b"}[rng.IntN(2)]
		dev, ok := dm.SimDevice(port)
		if !ok {
			t.Fatalf("port %s has no device", port)
		}
		surprise := rng.IntN(2) == 1
		if surprise {
			dev.Remove()
			time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond) // the driver runs on a dead function a while
			surprises++
		}
		if err := dev.RequestRemoval(); err != nil {
			t.Fatal(err)
		}
		closed := func() bool { dev.Lock(); defer dev.Unlock(); return dev.Closed() }
		if !testutil.WaitFor(10*time.Second, closed) {
			t.Fatalf("port %s: the requested device was not released within 10 s", port)
		}
		dev.Remove()
		removals++
		back := func() bool { nd, ok := dm.SimDevice(port); return ok && nd != dev }
		if !testutil.WaitFor(10*time.Second, back) {
			t.Fatalf("port %s did not come back within 10 s", port)
		}
		return true
	})
	close(stop)
	wg.Wait()
	if !testutil.WaitFor(10*time.Second, func() bool { return seen[3].Count() >= int(cdSent) && seen[2].Count() >= int(cdSent) }) {
		t.Errorf("the pair that was never removed lost frames: c->d %d, d->c %d of %d", seen[3].Count(), seen[2].Count(), cdSent)
	}
	// a⇄b forwards again after the last return.
	before := seen[1].Count()
	for s := uint32(1 << 30); s < 1<<30+20; s++ {
		if err := ends[0].Send(testutil.SeqFrame(s)); err != nil {
			t.Fatal(err)
		}
	}
	if !testutil.WaitFor(10*time.Second, func() bool { return seen[1].Count() >= before+20 }) {
		t.Errorf("a->b after the last return: %d of 20", seen[1].Count()-before)
	}
	st := dm.Status()
	if st.Ports[0].Removals+st.Ports[1].Removals != uint64(removals) || st.Ports[2].Removals+st.Ports[3].Removals != 0 {
		t.Errorf("removals in /status: %+v, want %d on a and b", st.Ports, removals)
	}
	if err := dm.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	for _, e := range logs.FilterLevelExact(zap.ErrorLevel).All() {
		t.Errorf("daemon error: %s %v", e.Message, e.ContextMap())
	}
	return removals, surprises
}
