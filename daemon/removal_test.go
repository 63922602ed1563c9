package daemon

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/wire"
)

// TestDeviceRemoval: the kernel asks for port a's device (the model's device-request
// interrupt, as VFIO signals it before an unbind or remove). The port leaves the
// dataplane and its device is closed, so the kernel's operation could go on; the other
// pair forwards every frame meanwhile; /status, /metrics and /readyz show a absent; once
// the device is back the daemon re-opens a by itself and a⇄b forwards again.
func TestDeviceRemoval(t *testing.T) {
	for _, mode := range []string{"adaptive", "busy"} {
		t.Run(mode, func(t *testing.T) { testDeviceRemoval(t, mode) })
	}
}

// setSimPresent makes present say whether a sim port's device is there (the removal
// watcher's view) until the test ends.
func setSimPresent(t *testing.T, present func(config.Port) bool) {
	old := simPresent
	simPresent = present
	t.Cleanup(func() { simPresent = old })
}

// fourPortConfig is four sim ports a-d on the wires pair:NAME0-3, a↔b and c↔d under poll
// mode.
func fourPortConfig(t *testing.T, name, mode string) *config.Config {
	return testConfig(t, fmt.Sprintf(`
ports:
  - {name: a, driver: sim, wire: "pair:%[1]s0", promiscuous: true}
  - {name: b, driver: sim, wire: "pair:%[1]s1", promiscuous: true}
  - {name: c, driver: sim, wire: "pair:%[1]s2", promiscuous: true}
  - {name: d, driver: sim, wire: "pair:%[1]s3", promiscuous: true}
forward: {mode: l2fwd, pairs: [[a, b], [c, d]]}
poll: {mode: %[2]s, wait_timeout: 5ms}
`, name, mode))
}

func testDeviceRemoval(t *testing.T, mode string) {
	var back atomic.Bool
	setSimPresent(t, func(pc config.Port) bool { return pc.Name != "a" || back.Load() })
	name := "drm" + mode
	cfg := fourPortConfig(t, name, mode)
	d, base := startDaemon(t, cfg)
	var gen [4]wire.Port
	var sink [4]*frameSink
	for i := range gen {
		g, err := wire.Open(fmt.Sprintf("pair:%s%d", name, i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		sink[i] = &frameSink{}
		g.SetHandler(sink[i].handler)
		gen[i] = g
	}
	send := func(port int, from, n uint32) {
		for s := from; s < from+n; s++ {
			if err := gen[port].Send(frame(s)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// a⇄b forwards before the removal.
	send(0, 0, 50)
	if !testutil.WaitFor(10*time.Second, func() bool { return sink[1].count() >= 50 }) {
		t.Fatalf("a->b before the removal: %d of 50", sink[1].count())
	}

	d.mu.Lock()
	pa := d.ports[0]
	dev := pa.model.Device()
	d.mu.Unlock()
	start := time.Now()
	if err := dev.RequestRemoval(); err != nil {
		t.Fatal(err)
	}
	closed := func() bool { dev.Lock(); defer dev.Unlock(); return dev.Closed() }
	if !testutil.WaitFor(10*time.Second, closed) {
		t.Fatal("the requested device was not closed within 10 s")
	}
	t.Logf("device released %v after the request", time.Since(start))
	dev.Remove() // the kernel takes it: a late access would read all ones, and fault as after Close

	// c⇄d loses nothing while a is away; frames into b have nowhere to go.
	send(2, 0, 200)
	send(3, 0, 200)
	send(1, 0, 20)
	if !testutil.WaitFor(10*time.Second, func() bool { return sink[3].count() >= 200 && sink[2].count() >= 200 }) {
		t.Fatalf("c⇄d during the removal: %d and %d of 200", sink[3].count(), sink[2].count())
	}
	st := d.Status()
	if !st.Ports[0].Absent || st.Ports[0].Removals != 1 || st.Ports[0].LinkUp || st.Ports[1].Absent {
		t.Errorf("status during the removal: %+v", st.Ports[:2])
	}
	if code, body := getCode(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "port a (") {
		t.Errorf("/readyz = %d %q, want 503 naming port a", code, body)
	}
	if code, body := getCode(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if _, body := getCode(t, base+"/metrics"); !strings.Contains(body, `uiod_port_present{port="a"} 0`) ||
		!strings.Contains(body, `uiod_port_removals_total{port="a"} 1`) || !strings.Contains(body, `uiod_port_present{port="c"} 1`) {
		t.Error("metrics do not show port a absent")
	}

	back.Store(true)
	if !testutil.WaitFor(10*time.Second, func() bool { return !d.Status().Ports[0].Absent }) {
		t.Fatal("port a not re-opened within 10 s of its device's return")
	}
	if st := d.Status(); st.Ports[0].Reopens != 1 {
		t.Errorf("reopens %d, want 1", st.Ports[0].Reopens)
	}
	// Both directions again, on the new model (the interrupt vectors are new too).
	before0, before1 := sink[0].count(), sink[1].count()
	send(0, 1000, 50)
	send(1, 1000, 50)
	if !testutil.WaitFor(10*time.Second, func() bool { return sink[1].count() >= before1+50 && sink[0].count() >= before0+50 }) {
		t.Fatalf("a⇄b after the return: %d and %d of 50", sink[1].count()-before1, sink[0].count()-before0)
	}
	if code, body := getCode(t, base+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after the return = %d %q", code, body)
	}
	d.mu.Lock()
	ndev := d.ports[0].model.Device()
	d.mu.Unlock()
	if ndev == dev {
		t.Error("the port still has the removed device")
	}
	if err := ndev.Err(); err != nil {
		t.Error(err)
	}
}

func getCode(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestTwoRemovals: the kernel takes a second port while the first is still away (under
// adaptive, whose threads sleep on RX vectors the first port no longer has): the second
// device is released too, and both come back.
func TestTwoRemovals(t *testing.T) {
	var back atomic.Bool
	setSimPresent(t, func(config.Port) bool { return back.Load() })
	d, _ := startDaemon(t, fourPortConfig(t, "dtr", "adaptive"))
	for i, name := range []string{"a", "c"} {
		dev, ok := d.SimDevice(name)
		if !ok {
			t.Fatalf("no device for %s", name)
		}
		if err := dev.RequestRemoval(); err != nil {
			t.Fatal(err)
		}
		closed := func() bool { dev.Lock(); defer dev.Unlock(); return dev.Closed() }
		if !testutil.WaitFor(10*time.Second, closed) {
			t.Fatalf("removal %d (%s): the device was not released within 10 s", i+1, name)
		}
	}
	if st := d.Status(); !st.Ports[0].Absent || !st.Ports[2].Absent {
		t.Errorf("a and c not absent: %+v", st.Ports)
	}
	back.Store(true)
	if !testutil.WaitFor(10*time.Second, func() bool { st := d.Status(); return !st.Ports[0].Absent && !st.Ports[2].Absent }) {
		t.Fatalf("a and c not back: %+v", d.Status().Ports)
	}
}
