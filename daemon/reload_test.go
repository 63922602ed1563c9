package daemon

import (
	"errors"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/sim"
)

// TestSignalReload runs Serve on a sim daemon with the process's own signals. SIGHUP with
// a changed configuration applies the log level, rebinds the metrics endpoint and puts the
// new idle policy in force, logs the change that needs a restart (ports[0].rx_ring) by its
// key and keeps the ring as it was; SIGHUP with a configuration that does not load is
// logged and ignored; each reload is RELOADING=1 then READY=1 on $NOTIFY_SOCKET. SIGTERM
// then ends Serve, and the ordered shutdown leaves every modelled NIC quiesced.
func TestSignalReload(t *testing.T) {
	sock, notes := testutil.NotifySocket(t)
	t.Setenv(NotifySocketEnv, sock)
	lvl := zap.NewAtomicLevelAt(zapcore.InfoLevel)
	core, logs := observer.New(lvl)
	cfg := simConfig(t, "drl", "busy", "")
	d := New(cfg, Options{Log: zap.New(core), LogLevel: &lvl, Version: "1.0-test", Revision: "abc"})
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop() })
	var devs []*sim.Device
	for _, p := range d.ports {
		devs = append(devs, p.model.Device())
	}
	oldAddr := d.MetricsAddr()

	var mu sync.Mutex
	var next *config.Config
	var nextErr error
	load := func() (*config.Config, error) {
		mu.Lock()
		defer mu.Unlock()
		return next, nextErr
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, Signals...)
	defer signal.Stop(sigs)
	served := make(chan os.Signal, 1)
	go func() { served <- d.Serve(sigs, load) }()
	waitNote(t, notes, "READY=1")

	changed := simConfig(t, "drl", "adaptive", ", idle_threshold: 50us")
	changed.StateDir = cfg.StateDir
	changed.Log.Level = "debug"
	changed.Metrics.Listen = "localhost:0" // 127.0.0.1, another ephemeral port
	changed.Ports[0].RxRing = 1024
	reloadWith(t, func() { mu.Lock(); next = changed; mu.Unlock() }, notes)
	if n := logs.FilterMessage("reload done").Len(); n != 1 {
		t.Fatalf("%d \"reload done\" lines, want 1: %v", n, messages(logs))
	}
	if lvl.Level() != zapcore.DebugLevel {
		t.Errorf("log level %v after reload, want debug", lvl.Level())
	}
	want, _ := changed.Poll.IdlePolicy()
	if got := d.dp.Policy(); got != want {
		t.Errorf("policy in force %+v, want %+v", got, want)
	}
	if st := d.Status(); st.Policy.Mode != "adaptive" || st.Policy.IdleThreshold != "50µs" {
		t.Errorf("/status policy %+v after reload, want adaptive 50µs", st.Policy)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		th := d.Status().Threads
		return len(th) > 0 && th[0].Sleeps > 0
	}, "the poll thread never slept under the reloaded adaptive policy")
	restart := logs.FilterMessage("configuration change needs a restart: keeping the running value").AllUntimed()
	if len(restart) != 1 || restart[0].ContextMap()["key"] != "ports[0].rx_ring" {
		t.Errorf("restart lines %v, want one for ports[0].rx_ring", restart)
	}
	if d.cfg.Ports[0].RxRing == 1024 {
		t.Error("the running configuration took rx_ring, which needs a restart")
	}
	newAddr := d.MetricsAddr()
	if newAddr == "" || newAddr == oldAddr {
		t.Fatalf("metrics endpoint %q after reload, was %q: not rebound", newAddr, oldAddr)
	}
	if st := getStatus(t, "http://"+newAddr+"/status"); st.Version != "1.0-test" || st.Revision != "abc" {
		t.Errorf("/status on the new endpoint: version %q revision %q, want 1.0-test abc", st.Version, st.Revision)
	}
	testutil.TextContains(t, "/metrics", get(t, "http://"+newAddr+"/metrics"),
		`uiod_build_info{goversion="`+runtime.Version()+`",revision="abc",version="1.0-test"} 1`)
	if c, err := net.DialTimeout("tcp", oldAddr, time.Second); err == nil {
		c.Close()
		t.Errorf("old endpoint %s still accepts connections", oldAddr)
	}

	reloadWith(t, func() {
		mu.Lock()
		next, nextErr = nil, errors.New("ports[0].rx_ring = 3: not a power of two")
		mu.Unlock()
	}, notes)
	if n := logs.FilterMessage("reload: configuration refused, keeping the running one").Len(); n != 1 {
		t.Errorf("%d refusal lines, want 1: %v", n, messages(logs))
	}
	if st := d.Status(); st.Policy.Mode != "adaptive" || d.MetricsAddr() != newAddr {
		t.Errorf("after a refused reload: policy %+v, metrics %s: the running configuration changed", st.Policy, d.MetricsAddr())
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case sig := <-served:
		if sig != syscall.SIGTERM {
			t.Fatalf("Serve returned %v, want SIGTERM", sig)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return on SIGTERM")
	}
	waitNote(t, notes, "STOPPING=1")
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	for i, dev := range devs {
		checkQuiesced(t, d.cfg.Ports[i].Name, dev)
	}
}

func messages(logs *observer.ObservedLogs) []string {
	var out []string
	for _, e := range logs.AllUntimed() {
		out = append(out, e.Message)
	}
	return out
}

// waitNote waits (at most 10 s) for the assignment want on the notify socket.
func waitNote(t *testing.T, notes <-chan string, want string) {
	t.Helper()
	testutil.WaitNotify(t, notes, want, 10*time.Second, nil)
}

// reloadWith runs set (which changes what load returns), sends SIGHUP and waits for the
// reload to end (RELOADING=1, then READY=1).
func reloadWith(t *testing.T, set func(), notes <-chan string) {
	t.Helper()
	set()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitNote(t, notes, "RELOADING=1")
	waitNote(t, notes, "READY=1")
}

// TestNotifyPath: Notify reaches a socket named by path, and refuses a $NOTIFY_SOCKET
// that is neither a path nor an abstract name; without one it does nothing.
func TestNotifyPath(t *testing.T) {
	path := t.TempDir() + "/notify"
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Setenv(NotifySocketEnv, path)
	if err := Notify("READY=1"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "READY=1" {
		t.Errorf("read %q, %v; want READY=1", buf[:n], err)
	}
	t.Setenv(NotifySocketEnv, "relative/sock")
	if err := Notify("READY=1"); err == nil {
		t.Error("a relative $NOTIFY_SOCKET was accepted")
	}
	t.Setenv(NotifySocketEnv, "")
	if err := Notify("READY=1"); err != nil {
		t.Errorf("without $NOTIFY_SOCKET: %v", err)
	}
}

// TestReloadUnchanged: a reload with the same configuration changes nothing and needs
// no restart; one that changes only restart keys reports each by its path.
func TestReloadUnchanged(t *testing.T) {
	cfg := simConfig(t, "dru", "busy", "")
	d, _ := startDaemon(t, cfg)
	same := *cfg
	applied, restart, err := d.Reload(&same)
	if err != nil || len(applied) != 0 || len(restart) != 0 {
		t.Errorf("same configuration: applied %v, restart %v, err %v; want nothing", applied, restart, err)
	}
	other := *cfg
	other.Ports = append([]config.Port(nil), cfg.Ports...)
	other.Ports[1].TxQueues = 2
	other.Forward.Mode = config.ForwardReflect
	other.Poll.CPUs = []int{0}
	other.StateDir = "/elsewhere"
	_, restart, err = d.Reload(&other)
	wantPaths := "state_dir ports[1].tx_queues forward.mode poll.cpus"
	if err != nil || strings.Join(restart, " ") != wantPaths {
		t.Errorf("restart %v, err %v; want %s", restart, err, wantPaths)
	}
	if d.dp.Policy().Mode != idle.Busy {
		t.Error("the policy changed")
	}
}
