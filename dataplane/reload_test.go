package dataplane

import (
	"errors"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
)

// TestSetPolicy changes a running thread's policy both ways: busy → adaptive (it goes to
// sleep on interrupts, and a frame still wakes it), then adaptive → busy while it sleeps
// with a 1 s wait_timeout (it takes the change without waiting the timeout out and stops
// sleeping), and the idle counters carry on across each change. Frames are forwarded
// throughout and no buffer leaks.
func TestSetPolicy(t *testing.T) {
	p := newPair(t, L2Fwd, idle.PolicyConfig{Mode: idle.Busy}, 3)
	if err := p.dp.Start(); err != nil {
		t.Fatal(err)
	}
	var buf [frameLen]byte
	send := func(seq uint64) {
		t.Helper()
		if !p.a.inject(0, makeFrame(buf[:], p.b.mac, p.a.mac, seq, idle.Now())) {
			t.Fatal("inject: ring full")
		}
		waitFor(t, "the frame", func() bool { return p.rec.count.Load() == int64(seq+1) })
	}
	send(0)
	adaptive := idle.PolicyConfig{Mode: idle.Adaptive, IdleThreshold: time.Nanosecond, WaitTimeout: time.Second}
	if err := p.dp.SetPolicy(adaptive); err != nil {
		t.Fatal(err)
	}
	if got := p.dp.Policy(); got != adaptive {
		t.Errorf("Policy() = %+v, want %+v", got, adaptive)
	}
	waitFor(t, "a sleep under adaptive", func() bool {
		th := p.dp.Threads()[0]
		return th.State == idle.Asleep && th.Idle.Sleeps > 0
	})
	send(1) // an interrupt wakes it
	waitFor(t, "an interrupt wake-up", func() bool { return p.dp.Threads()[0].Idle.WakeInterrupt > 0 })
	waitFor(t, "the next sleep", func() bool { return p.dp.Threads()[0].State == idle.Asleep })
	before := p.dp.Threads()[0].Idle

	start := time.Now()
	if err := p.dp.SetPolicy(idle.PolicyConfig{Mode: idle.Busy}); err != nil {
		t.Fatal(err)
	}
	// Asleep for up to 1 s under the old policy: the change wakes it.
	waitFor(t, "the thread to take busy", func() bool { return p.dp.loops[0].idlerNow().Config().Mode == idle.Busy })
	took := time.Since(start)
	after := p.dp.Threads()[0].Idle
	if after.Sleeps < before.Sleeps || after.Arms < before.Arms || after.WakeInterrupt < before.WakeInterrupt {
		t.Errorf("idle counters went back across the change: before %+v, after %+v", before, after)
	}
	time.Sleep(20 * time.Millisecond)
	if again := p.dp.Threads()[0].Idle; again.Sleeps != after.Sleeps {
		t.Errorf("still sleeping under busy: sleeps %d -> %d", after.Sleeps, again.Sleeps)
	}
	t.Logf("adaptive -> busy taken %v after SetPolicy (wait_timeout 1 s)", took)
	send(2)
	p.checkClean(t)
}

// TestSetPolicyRefused: an invalid policy, one that needs interrupts the queues do not
// have, and a change after Stop are refused, and the policy in force stays.
func TestSetPolicyRefused(t *testing.T) {
	dma := &goDMA{}
	a, b := newFakePort(t, dma, 1, 1, false), newFakePort(t, dma, 1, 1, false)
	busy := idle.PolicyConfig{Mode: idle.Busy}
	dp, err := New(Config{App: L2Fwd, Policy: busy, Threads: []Thread{{CPU: -1, Queues: []Queue{{Name: "a", RxPort: a, TxPort: b}, {Name: "b", RxPort: b, TxPort: a}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := dp.SetPolicy(idle.PolicyConfig{Mode: idle.Adaptive}); !errors.Is(err, ErrNeedsRestart) {
		t.Errorf("adaptive without RX interrupts: %v, want ErrNeedsRestart", err)
	}
	if err := dp.SetPolicy(idle.PolicyConfig{Mode: idle.SleepRange, SleepMin: time.Millisecond, SleepMax: time.Microsecond}); err == nil {
		t.Error("sleep_min above sleep_max accepted")
	}
	sleep := idle.PolicyConfig{Mode: idle.SleepRange, SleepMin: time.Microsecond, SleepMax: 2 * time.Microsecond}
	if err := dp.SetPolicy(sleep); err != nil { // before Start: in force at once
		t.Fatal(err)
	}
	if got := dp.Policy(); got != sleep {
		t.Errorf("Policy() = %+v, want %+v", got, sleep)
	}
	dp.Stop()
	if err := dp.SetPolicy(busy); err == nil {
		t.Error("SetPolicy after Stop accepted")
	}
	for _, port := range []*fakePort{a, b} {
		if err := port.Close(); err != nil {
			t.Error(err)
		}
	}
}
