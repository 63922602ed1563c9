package vhost_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/daemon"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic/vhost"
)

// TestDaemonVhostPort runs a daemon with a vhost-user port l2fwd-paired with a model NIC and
// the package's Go front end on its socket: frames from the model's wire reach the front
// end's RX ring, frames the front end sends leave by the wire, and /status shows the port
// like a NIC port (driver vhost-user, no PCI address, link up while the front end runs).
func TestDaemonVhostPort(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "vm.sock")
	wireName := fmt.Sprintf("vhdaemon%d", os.Getpid())
	cfg := pairedConfig(t, dir, wireName, sock, config.VhostServer, "mode: adaptive")
	var far farEnd
	far.open(t, wireName)
	d := daemon.New(cfg, daemon.Options{})
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	if st := d.Status().Ports[1]; st.LinkUp || st.Driver != config.DriverVhostUser || st.PCI != "" {
		t.Fatalf("before a front end: %+v", st)
	}
	fe := vhost.DialTestFrontend(t, sock)
	if !testutil.WaitFor(10*time.Second, func() bool { return d.Status().Ports[1].LinkUp }) {
		t.Fatal("link never up")
	}
	fe.PostRx(16)
	var got [][]byte
	for i := range 16 {
		far.w.Send(echoFrame(uint32(i)))
	}
	if !testutil.WaitFor(10*time.Second, func() bool { got = append(got, fe.Received()...); return len(got) >= 16 }) {
		t.Fatalf("front end received %d of 16 frames; status %+v", len(got), d.Status().Queues)
	}
	for i, f := range got {
		if !bytes.Equal(f, echoFrame(uint32(i))) {
			t.Fatalf("frame %d: % x", i, f)
		}
	}
	for i := range 16 {
		fe.Transmit(i, echoFrame(uint32(100+i)))
	}
	if !testutil.WaitFor(10*time.Second, func() bool { return far.echo.has(100, 116) }) {
		t.Fatalf("the front end's frames did not all leave by the wire; status %+v", d.Status().Queues)
	}
	// /metrics counts the vhost-user port like any other.
	resp, err := http.Get("http://" + d.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !regexp.MustCompile(`uiod_port_rx_packets_total\{[^}]*port="vm"[^}]*\} 16\b`).Match(body) {
		t.Errorf("/metrics lacks the vhost-user port's 16 received frames:\n%s", body)
	}
}
