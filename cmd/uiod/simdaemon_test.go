package main

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/daemon"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/wire"
)

// simDaemon is an in-process daemon on two sim ports forwarding to each other, with its
// metrics endpoint on an ephemeral loopback port, and generators on the wires' far ends.
type simDaemon struct {
	d    *daemon.Daemon
	addr string // host:port of the metrics endpoint
	yaml string // the configuration, metrics.listen included
	gen  [2]wire.Port
	got  [2]atomic.Int64 // frames that came back out of port a (got[0]) and b (got[1])
}

// startSimDaemon starts a sim daemon whose wires are pair:NAME0 and pair:NAME1 and stops
// it when the test ends.
func startSimDaemon(t *testing.T, name string) *simDaemon {
	t.Helper()
	y := fmt.Sprintf(`
metrics: {listen: "127.0.0.1:0"}
state_dir: %q
ports:
  - {name: a, driver: sim, wire: "pair:%[2]s0", promiscuous: true}
  - {name: b, driver: sim, wire: "pair:%[2]s1", promiscuous: true}
forward: {mode: l2fwd, pairs: [[a, b]]}
poll: {mode: adaptive, idle_threshold: auto, wait_timeout: 5ms}
`, t.TempDir(), name)
	cfg, err := config.Read(strings.NewReader(y))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	s := &simDaemon{d: daemon.New(cfg, daemon.Options{})}
	if err := s.d.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.d.Stop() })
	s.addr = s.d.MetricsAddr()
	s.yaml = strings.Replace(y, "127.0.0.1:0", s.addr, 1)
	for i := range s.gen {
		g, err := wire.Open(fmt.Sprintf("pair:%s%d", name, i))
		if err != nil {
			t.Fatal(err)
		}
		got := &s.got[i]
		g.SetHandler(func([]byte, int64) { got.Add(1) })
		s.gen[i] = g
	}
	return s
}

// forward sends n frames into each port, a few at a time, and waits (bounded) until
// every one came out of the other port.
func (s *simDaemon) forward(t *testing.T, n int) {
	t.Helper()
	want := [2]int64{s.got[0].Load() + int64(n), s.got[1].Load() + int64(n)}
	f := make([]byte, 64)
	copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 9, 0x88, 0xb5})
	for i := 0; i < n; i++ {
		binary.BigEndian.PutUint32(f[60:], uint32(i))
		for _, g := range s.gen {
			if err := g.Send(f); err != nil {
				t.Fatal(err)
			}
		}
		if i%32 == 31 { // at most 32 frames in flight per port: no ring can overflow
			testutil.WaitFor(10*time.Second, func() bool {
				return s.got[0].Load() >= want[0]-int64(n-i-1) && s.got[1].Load() >= want[1]-int64(n-i-1)
			})
		}
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return s.got[0].Load() >= want[0] && s.got[1].Load() >= want[1] },
		"forwarded %d and %d of %d frames each way", s.got[1].Load(), s.got[0].Load(), n)
}

// execUIOD runs the CLI in-process with args and returns its standard output and error.
func execUIOD(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := execSplit(t, args...)
	return out, err
}

// testRoot builds the command tree as run does, with the completion command cobra would
// add when it executes (for walking the tree, not for executing it).
func testRoot() *cobra.Command {
	root := newRootCmd(&globals{})
	root.InitDefaultCompletionCmd()
	return root
}
