package daemon

import (
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	simigbvf "github.com/uiod/uiod/sim/igbvf"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// TestSimPortRecovers breaks a running sim port the way its driver must recover from
// (virtio: DEVICE_NEEDS_RESET; igbvf: a PF reset) under the daemon: the dataplane runs the
// driver's Recover between its threads' turns (the port is behind a livePort, which
// passes it through), /status counts the reset and shows the link up again, and frames
// flow both ways after it.
func TestSimPortRecovers(t *testing.T) {
	tests := []struct {
		nic   string
		fault func(t *testing.T, d *Daemon)
	}{
		{"virtio", func(t *testing.T, d *Daemon) { d.ports[0].model.(*simvirtio.Model).RaiseNeedsReset() }},
		{"igbvf", func(t *testing.T, d *Daemon) { d.ports[0].model.(*simigbvf.Model).ResetPF(10 * time.Millisecond) }},
	}
	for _, tt := range tests {
		t.Run(tt.nic, func(t *testing.T) {
			name := "drec" + tt.nic
			cfg := simNICConfig(t, name, tt.nic, "")
			d, base := startDaemon(t, cfg)
			if d.ports[0].live == nil {
				t.Fatal("port a is not behind a livePort")
			}
			e := openFarEnds(t, name)
			const n = 200
			if !e.sendBoth(t, n, 32, 63) {
				t.Fatalf("before the break: forwarded a→b %d, b→a %d of %d", e.sink[1].count(), e.sink[0].count(), n)
			}
			tt.fault(t, d)
			var st Status
			if !testutil.WaitFor(20*time.Second, func() bool {
				st = getStatus(t, base+"/status")
				a := st.Ports[0]
				return a.Stats.DeviceResets >= 1 && a.LinkUp
			}) {
				t.Fatalf("port a not recovered: %+v", st.Ports[0])
			}
			for i := n; i < 2*n; i++ {
				for _, g := range e.gen {
					if err := g.Send(frame(uint32(i))); err != nil {
						t.Fatal(err)
					}
				}
				if i%32 == 31 {
					testutil.WaitFor(5*time.Second, func() bool { return e.sink[0].count() >= i-63 && e.sink[1].count() >= i-63 })
				}
			}
			if !testutil.WaitFor(10*time.Second, func() bool { return e.sink[0].count() >= 2*n && e.sink[1].count() >= 2*n }) {
				t.Fatalf("after the recovery: a→b %d, b→a %d of %d", e.sink[1].count(), e.sink[0].count(), 2*n)
			}
		})
	}
}
