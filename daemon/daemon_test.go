package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/wire"
)

func TestDaemonForwardsAndStops(t *testing.T) {
	for _, mode := range []string{"busy", "adaptive", "sleep"} {
		t.Run(mode, func(t *testing.T) {
			name := "dtest" + mode
			cfg := simConfig(t, name, mode, "")
			d := New(cfg, Options{})
			procs := runtime.GOMAXPROCS(1) // so that Start must raise it
			defer runtime.GOMAXPROCS(procs)
			if err := d.Start(); err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer d.Stop()
			if n := runtime.GOMAXPROCS(0); n < dataplane.ProcsFor(1) {
				t.Errorf("GOMAXPROCS %d while running, want ≥ %d", n, dataplane.ProcsFor(1))
			}
			e := openFarEnds(t, name)
			// Keep at most 256 frames in flight so a descheduled poll thread cannot
			// overflow the 512-entry ring on this noisy machine, and pause now and then so
			// the loop crosses its idle threshold.
			const n = 2000
			e.sendBoth(t, n, 64, 192)
			if e.sink[1].count() != n || e.sink[0].count() != n {
				t.Logf("status: %+v", d.Status())
				t.Fatalf("forwarded a→b %d, b→a %d of %d", e.sink[1].count(), e.sink[0].count(), n)
			}

			// Status and metrics are served and add up.
			addr := d.MetricsAddr()
			var st Status
			var rx, tx, drops uint64
			// The poll thread publishes its counters about every ms and before it sleeps; a
			// descheduled busy thread publishes late, so wait (bounded) for the last burst.
			if !testutil.WaitFor(10*time.Second, func() bool {
				st = getStatus(t, "http://"+addr+"/status")
				rx, tx, drops = 0, 0, 0
				for _, q := range st.Queues {
					rx, tx, drops = rx+q.RxPackets, tx+q.TxPackets, drops+q.Drops
				}
				return rx == 2*n && rx == tx+drops
			}) {
				t.Errorf("queues after 10s: rx %d tx %d drops %d (sent %d)", rx, tx, drops, 2*n)
			}
			body := get(t, "http://"+addr+"/metrics")
			for _, m := range []string{"uiod_port_rx_packets_total{port=\"a\"}", "uiod_thread_cpu_seconds_total", "uiod_thread_sleeps_total",
				`uiod_thread_wakeups_total{cause="predicted"`, "uiod_thread_predicted_lead_seconds"} {
				if !strings.Contains(body, m) {
					t.Errorf("metrics lack %s", m)
				}
			}
			// Every duration is there as a number of seconds too, as the text says.
			if pol := st.Policy; pol.WaitTimeoutSeconds <= 0 || pol.IdleThresholdAuto || pol.IdleThresholdSeconds == nil ||
				time.Duration(*pol.IdleThresholdSeconds*1e9).Round(time.Microsecond).String() != pol.IdleThreshold {
				t.Errorf("policy durations in seconds %+v", pol)
			}
			if th := st.Threads[0]; time.Duration(th.ThresholdSeconds*1e9).Round(time.Microsecond).String() != th.Threshold && mode != "busy" {
				t.Errorf("thread idle_threshold_seconds %v, text %q", th.ThresholdSeconds, th.Threshold)
			}
			if mode == "busy" && st.Threads[0].Sleeps != 0 {
				t.Errorf("busy policy slept %d times", st.Threads[0].Sleeps)
			}
			if mode == "adaptive" && st.Threads[0].WakeInterrupt == 0 {
				t.Errorf("adaptive policy never woke by interrupt: %+v", st.Threads[0])
			}
			start := time.Now()
			if err := d.Stop(); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			t.Logf("stop took %v", time.Since(start))
			if n := runtime.GOMAXPROCS(0); n != 1 {
				t.Errorf("GOMAXPROCS %d after Stop, want the 1 it was before Start", n)
			}
			if err := e.gen[0].Send(frame(0)); err != wire.ErrClosed {
				t.Errorf("wire still open after Stop: %v", err)
			}
		})
	}
}

func TestDaemonStartFailureReleases(t *testing.T) {
	cfg := simConfig(t, "dfail", "adaptive", "")
	// The second port asks for a NIC driver that does not exist: start-up must fail
	// naming the port, and close the first port (its wire end) again.
	cfg.Ports[1].NIC = "nosuch"
	d := New(cfg, Options{})
	err := d.Start()
	if err == nil || !strings.Contains(err.Error(), "port b") {
		t.Fatalf("Start = %v, want an error naming port b", err)
	}
	gen0, _ := wire.Open("pair:dfail0")
	if err := gen0.Send(frame(1)); err != wire.ErrClosed {
		t.Errorf("port a's wire still open after failed start: %v", err)
	}
	if d.MetricsAddr() != "" {
		t.Error("metrics endpoint left running")
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	_, body := getCode(t, url)
	return body
}

func getStatus(t *testing.T, url string) Status {
	var st Status
	if err := json.Unmarshal([]byte(get(t, url)), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestStatusDuringStop reads the status (ports, NIC counters) from other goroutines while
// Stop closes the ports: no read may reach a closed port, and afterwards the metrics
// endpoint is reported off.
func TestStatusDuringStop(t *testing.T) {
	cfg := simConfig(t, "dstatusstop", "adaptive", "")
	d := New(cfg, Options{})
	if err := d.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if d.MetricsAddr() == "" {
		t.Fatal("metrics endpoint not running")
	}
	stop := hammer(4, func() bool { d.Status(); return true })
	time.Sleep(20 * time.Millisecond)
	if err := d.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	stop()
	if st := d.Status(); len(st.Ports) != 0 || len(st.Queues) != 0 {
		t.Errorf("status after Stop lists ports or queues: %+v", st)
	}
	if a := d.MetricsAddr(); a != "" {
		t.Errorf("MetricsAddr after Stop = %q, want \"\"", a)
	}
}

// TestINTxQueuesShareAThread: with INTx every RX queue of a port has the same interrupt,
// which only wakes the thread that sleeps on it, so the daemon must keep a port's queues
// on one thread however many poll CPUs there are.
func TestINTxQueuesShareAThread(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs to pin two poll threads")
	}
	cfg := testConfig(t, `
ports:
  - {name: a, driver: sim, wire: "pair:dintx0", promiscuous: true, interrupts: intx, rx_queues: 2, tx_queues: 2}
  - {name: b, driver: sim, wire: "pair:dintx1", promiscuous: true, interrupts: intx, rx_queues: 2, tx_queues: 2}
forward: {mode: l2fwd, pairs: [[a, b]]}
poll: {mode: adaptive, wait_timeout: 1s, cpus: [0, 1]}
`)
	d, _ := startDaemon(t, cfg)
	st := d.Status()
	threadOf := map[string]int{}
	for _, q := range st.Queues {
		port, _, _ := strings.Cut(q.Name, "/")
		if th, ok := threadOf[port]; ok && th != q.Thread {
			t.Fatalf("port %s's queues are polled by threads %d and %d: %+v", port, th, q.Thread, st.Queues)
		}
		threadOf[port] = q.Thread
	}
	if len(st.Queues) != 4 {
		t.Fatalf("queues %+v, want 4", st.Queues)
	}
	e := openFarEnds(t, "dintx")
	const n = 50
	for i := uint32(0); i < n; i++ {
		if err := e.gen[0].Send(frame(i)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // let the threads fall asleep between frames
	}
	testutil.WaitFor(10*time.Second, func() bool { return e.sink[1].count() >= n })
	if e.sink[1].count() != n {
		t.Fatalf("forwarded %d of %d frames; status %+v", e.sink[1].count(), n, d.Status())
	}
}

func TestDaemonStateDirLock(t *testing.T) {
	first := simConfig(t, "dlock1", "adaptive", "")
	second := simConfig(t, "dlock2", "adaptive", "")
	second.StateDir = first.StateDir
	d1 := New(first, Options{})
	if err := d1.Start(); err != nil {
		t.Fatalf("first Start: %v", err)
	}
	pidFile := filepath.Join(first.StateDir, pidFileName)
	b, err := os.ReadFile(pidFile)
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("pid file %s = %q, %v; want our pid", pidFile, b, err)
	}
	d2 := New(second, Options{})
	err = d2.Start()
	if err == nil || !strings.Contains(err.Error(), pidFile) {
		d2.Stop()
		t.Fatalf("second Start on the same state_dir = %v, want a refusal naming %s", err, pidFile)
	}
	// The refused daemon opened nothing: its port's wire is still free for a peer.
	if w, err := wire.Open("pair:dlock20"); err != nil {
		t.Fatal(err)
	} else if err := w.Send(frame(1)); err != nil {
		t.Errorf("refused daemon left its wire in use: %v", err)
	}
	if err := d1.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("pid file left after Stop: %v", err)
	}
	// Now the state directory is free again.
	d3 := New(second, Options{})
	if err := d3.Start(); err != nil {
		t.Fatalf("Start after the first daemon stopped: %v", err)
	}
	d3.Stop()
}
