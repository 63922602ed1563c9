package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

// TestRunSimVirtio runs the uiod binary on two sim ports with nic: virtio (the embedded
// virtio-net model, driven by the virtio driver) on unix datagram wires, and `uiod latency`
// through them: every probe comes back, the log says the virtio driver opened both ports,
// and SIGTERM stops the daemon cleanly.
func TestRunSimVirtio(t *testing.T) {
	bin := uiodBinary(t)
	dir, err := os.MkdirTemp("", "uv") // unix socket paths must stay short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := func(n string) string { return filepath.Join(dir, n) }
	cfg := p("uiod.yaml")
	conf := `
metrics: {listen: "127.0.0.1:0"}
state_dir: ` + p("state") + `
ports:
  - {name: a, driver: sim, nic: virtio, wire: "unix:` + p("da") + `,` + p("ha") + `", promiscuous: true}
  - {name: b, driver: sim, nic: virtio, wire: "unix:` + p("db") + `,` + p("hb") + `", promiscuous: true}
forward: {mode: l2fwd}
poll: {mode: adaptive}
`
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, bin, cfg)
	log := d.log
	out := p("lat.json")
	lat := exec.Command(bin, "latency", "--tx", "unix:"+p("ha")+","+p("da"), "--rx", "unix:"+p("hb")+","+p("db"),
		"--count", "100", "--interval", "1ms", "--timeout", "5s", "--json", out)
	if b, err := lat.CombinedOutput(); err != nil {
		t.Fatalf("uiod latency: %v\n%s\ndaemon:\n%s", err, b, log.String())
	}
	var r struct{ Sent, Received, Late, Lost uint64 }
	if b, err := os.ReadFile(out); err != nil || json.Unmarshal(b, &r) != nil {
		t.Fatalf("latency JSON: %v: %s", err, b)
	}
	if r.Sent != 100 || r.Received+r.Late != 100 || r.Lost != 0 {
		t.Errorf("sent %d, back %d (late %d), lost %d; want all 100 back", r.Sent, r.Received+r.Late, r.Late, r.Lost)
	}
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit: %v\n%s", err, log.String())
	}
	testutil.TextContains(t, "log", log.String(), `"port": "a", "nic": "virtio"`, `"port": "b", "nic": "virtio"`, "stopped cleanly")
}
