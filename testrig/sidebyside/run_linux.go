package sidebyside

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
)

// Contender is a running contender: the process whose CPU is measured and what it
// started with it.
type Contender interface {
	Sched() (testutil.Sched, error)
	Tail(lines int) string
	Exited() bool
	Stop()
}

// Starter adapts a bench's own start function to Spec.Start: a nil C is no contender.
func Starter[C interface {
	comparable
	Contender
}](start func(t *testing.T, name, dir string, socks []string) (C, error)) func(t *testing.T, name, dir string, socks []string) (Contender, error) {
	return func(t *testing.T, name, dir string, socks []string) (Contender, error) {
		c, err := start(t, name, dir, socks)
		var none C
		if c == none {
			return nil, err
		}
		return c, err
	}
}

// Spec is what a bench starts for each contender and how it reports.
type Spec struct {
	Roles
	Plan
	// Sockets are the vhost-user sockets' names in each measurement's directory; Measure
	// waits up to SocketWait for the contender to create them.
	Sockets    []string
	SocketWait time.Duration
	// Start starts contender name in dir serving the sockets socks: nil or the contender
	// (to be stopped even with an error).
	Start func(t *testing.T, name, dir string, socks []string) (Contender, error)
	// StartPeer starts the DPDK program that connects to the sockets.
	StartPeer func(t *testing.T, dir string, socks []string) *testutil.Proc
	// ReportEnv names the environment variable whose value, if set, is the file the
	// Markdown report is written to.
	ReportEnv string
}

// Run measures every contender of order Rounds times, the order rotated by one each
// round, logs each measurement and the report, and writes the report where s.ReportEnv
// says; a failed measurement fails t.
func (b *Bench) Run(t *testing.T, order []string, s Spec) {
	t.Helper()
	rep := Report{Roles: s.Roles, Started: time.Now().UTC(), LoadStart: testutil.LoadAvg(), Rounds: s.Rounds, Probes: s.Probes, Interval: s.Interval, Idle: s.Idle}
	for r := range s.Rounds {
		for i := range order {
			name := order[(i+r)%len(order)]
			res, err := b.Measure(t, name, r, s)
			if err != nil {
				t.Fatalf("%s round %d: %v", name, r+1, err)
			}
			t.Logf("%s round %d: p50 %.1f µs p99 %.1f µs lost %d late %d, CPU probed %.2f %% idle %.3f %%, run-queue wait %s %v %s %v (load %s)",
				name, r+1, res.P50us(), res.P99us(), res.Lat.Lost, res.Lat.Late, res.ProbeCPU, res.IdleCPU,
				s.Contender, res.Wait.Round(time.Millisecond), s.Peer, res.PeerWait.Round(time.Millisecond), res.Load)
			rep.Runs = append(rep.Runs, res)
		}
	}
	rep.Ended, rep.LoadEnd = time.Now().UTC(), testutil.LoadAvg()
	md := rep.Markdown()
	t.Log("\n" + md)
	if path := os.Getenv(s.ReportEnv); path != "" {
		if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Measure starts contender name (round counts from 0) with its sockets and the peer,
// waits until probes come back, then probes and idles, reading the contender's CPU around
// each; everything is stopped after.
func (b *Bench) Measure(t *testing.T, name string, round int, s Spec) (Run, error) {
	res := Run{Name: name, Round: round + 1}
	dir := filepath.Join(b.Dir, fmt.Sprintf("%s-%d", name, round+1))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return res, err
	}
	var socks []string
	for _, n := range s.Sockets {
		socks = append(socks, filepath.Join(dir, n))
	}
	c, err := s.Start(t, name, dir, socks)
	if c != nil {
		defer c.Stop()
	}
	if err != nil {
		return res, err
	}
	ready := func() bool {
		for _, p := range socks {
			if _, err := os.Stat(p); err != nil {
				return false
			}
		}
		return true
	}
	if !testutil.WaitFor(s.SocketWait, func() bool { return ready() || c.Exited() }) || c.Exited() {
		return res, fmt.Errorf("no sockets %v:\n%s", socks, c.Tail(30))
	}
	peer := s.StartPeer(t, dir, socks)
	defer peer.Stop()
	// testpmd waits up to 9 s for its ports' links before it forwards: probe until a short
	// run comes back whole.
	deadline := time.Now().Add(90 * time.Second)
	for {
		lat, _, err := b.Latency(dir, "warmup", 200, time.Millisecond, 200*time.Millisecond)
		if err == nil && lat.Received == lat.Sent && lat.Sent > 0 {
			break
		}
		if c.Exited() || peer.Exited() || time.Now().After(deadline) {
			return res, fmt.Errorf("no probe back (%v, %+v):\n%s:\n%s\n%s:\n%s", err, lat,
				s.Contender, c.Tail(20), s.Peer, peer.Tail(20))
		}
	}
	if s.Settle > 0 {
		// The first seconds after the links come up are slower for every contender (OVS
		// reassigns its RX queues, pages fault in): settle, then warm up at the probes' rate.
		time.Sleep(s.Settle)
		if _, out, err := b.Latency(dir, "settle", 2000, s.Interval, time.Second); err != nil {
			return res, fmt.Errorf("%v\n%s", err, out)
		}
	}
	// sched reads the contender's and the peer's accounting.
	sched := func() (cs, ps testutil.Sched, err error) {
		if cs, err = c.Sched(); err == nil {
			ps, err = peer.Sched()
		}
		return cs, ps, err
	}
	c0, p0, err := sched()
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	lat, out, err := b.Latency(dir, "probes", s.Probes, s.Interval, time.Second)
	secs := time.Since(t0).Seconds()
	if err != nil {
		return res, fmt.Errorf("%v\n%s", err, out)
	}
	if lat.Samples == 0 {
		return res, fmt.Errorf("no probe came back:\n%s", out)
	}
	c1, p1, err := sched()
	if err != nil {
		return res, err
	}
	res.Lat, res.ProbeCPU = lat, 100*c1.Sub(c0).Run.Seconds()/secs
	res.Wait, res.PeerWait = c1.Sub(c0).Wait, p1.Sub(p0).Wait
	time.Sleep(time.Second) // out of the traffic: adaptive deep idle, auto's estimate
	c0, err = c.Sched()
	if err != nil {
		return res, err
	}
	t0 = time.Now()
	time.Sleep(s.Idle)
	c1, err = c.Sched()
	if err != nil {
		return res, err
	}
	res.IdleCPU = 100 * c1.Sub(c0).Run.Seconds() / time.Since(t0).Seconds()
	res.Load = testutil.LoadAvg()
	if c.Exited() || peer.Exited() {
		return res, fmt.Errorf("a process ended during the run:\n%s:\n%s\n%s:\n%s", s.Contender, c.Tail(20), s.Peer, peer.Tail(20))
	}
	return res, nil
}
