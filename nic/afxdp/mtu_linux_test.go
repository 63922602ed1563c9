package afxdp

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/testutil"
)

// setRigMTU sets mtu on all four veth ends of r.
func setRigMTU(t *testing.T, r *rig, mtu int) {
	t.Helper()
	s := strconv.Itoa(mtu)
	testutil.IPIn(t, r.a, "link", "set", "xa0", "mtu", s)
	testutil.IPIn(t, r.b, "link", "set", "xb0", "mtu", s)
	testutil.IPIn(t, r.m, "link", "set", r.ma, "mtu", s)
	testutil.IPIn(t, r.m, "link", "set", r.mb, "mtu", s)
}

// TestMTU3000: veths at MTU 3000, which a 4096-byte chunk holds (up to MaxMTU, 3822).
// One port takes the interface's MTU (mtu left out), the other names it; both report
// it. Through l2fwd between them, in native and generic mode, `ping -M do -s 2972`
// (3014-byte frames, DF) is answered and 4 MiB over TCP arrive with the same SHA-256.
func TestMTU3000(t *testing.T) {
	if _, err := exec.LookPath("ping"); err != nil {
		t.Skip("needs ping (iputils-ping)")
	}
	for _, mode := range []Mode{ModeNative, ModeGeneric} {
		t.Run(mode.String(), func(t *testing.T) {
			r := newRig(t)
			setRigMTU(t, r, 3000)
			pa, err := r.open(t, Config{Interface: r.ma, Mode: mode, FrameSize: 4096, RxRing: 512, TxRing: 512})
			if err != nil {
				t.Fatal(err)
			}
			pb, err := r.open(t, Config{Interface: r.mb, Mode: mode, FrameSize: 4096, MTU: 3000, RxRing: 512, TxRing: 512})
			if err != nil {
				t.Fatal(err)
			}
			if pa.MTU() != 3000 || pb.MTU() != 3000 {
				t.Fatalf("ports' MTU %d and %d, want the interfaces' 3000", pa.MTU(), pb.MTU())
			}
			l2fwd(t, pa, pb, idle.PolicyConfig{Mode: idle.Adaptive})
			out, err := exec.Command("ip", "netns", "exec", r.a, "ping", "-c", "3", "-i", "0.2", "-W", "5",
				"-M", "do", "-s", "2972", r.ipB.String()).CombinedOutput()
			if err != nil || !strings.Contains(string(out), " 0% packet loss") {
				t.Fatalf("ping -M do -s 2972 through MTU 3000 ports: %v\n%s", err, out)
			}
			r.transfer(t, 4<<20)
			sa, sb := pa.Stats(), pb.Stats()
			if sa.RxErrors != 0 || sa.TxErrors != 0 || sb.RxErrors != 0 || sb.TxErrors != 0 {
				t.Fatalf("errors counted: a %+v, b %+v", sa, sb)
			}
			// The pings alone are 6 frames of 3014 bytes each way.
			if sa.RxBytes < 3*3014 || sb.RxBytes < 3*3014 {
				t.Fatalf("stats a %+v, b %+v: the 3014-byte frames did not go through", sa, sb)
			}
			t.Logf("%s: a %+v, b %+v", mode, sa, sb)
		})
	}
}

// TestMTURefused: an MTU a chunk cannot hold, 9000 at frame_size 4096 (frames of more
// than one chunk would need multi-buffer AF_XDP), 3000 at 2048, and an mtu that is not
// the interface's are refused naming the interface, both MTUs or the limit, and leave
// nothing attached.
func TestMTURefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mtu   int
		cfg   Config
		texts []string
	}{
		{"9000 at 4096", 9000, Config{FrameSize: 4096}, []string{"MTU 9000", "MTU 3822 at most", "XDP_USE_SG", "frame_size 4096"}},
		{"9000 asked at 4096", 9000, Config{FrameSize: 4096, MTU: 9000}, []string{"MTU 9000", "MTU 3822 at most", "XDP_USE_SG"}},
		{"3000 at 2048", 3000, Config{}, []string{"MTU 3000", "MTU 1774 at most", "use frame_size 4096"}},
		{"not the interface's", 1500, Config{MTU: 9000}, []string{"mtu 9000 asked", "has MTU 1500", "leave mtu out"}},
		{"not the interface's at 3000", 3000, Config{FrameSize: 4096, MTU: 1500}, []string{"mtu 1500 asked", "has MTU 3000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			setRigMTU(t, r, tc.mtu)
			cfg := tc.cfg
			cfg.Interface = r.ma
			_, err := r.open(t, cfg)
			if !errors.Is(err, ErrMTU) || !IsUsage(err) {
				t.Fatalf("Open: %v, want ErrMTU", err)
			}
			for _, s := range append(tc.texts, r.ma) {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Open: %v: does not say %q", err, s)
				}
			}
			if p := r.xdpProg(t, r.ma); p != "" {
				t.Fatalf("after the refusal %s still has XDP: %s", r.ma, p)
			}
		})
	}
}

// TestMTUChangeLogged: the interface's MTU changed under an open port (generic mode, which
// lets it) is logged with both MTUs, and one beyond what a chunk holds says the kernel
// drops the longer frames.
func TestMTUChangeLogged(t *testing.T) {
	r := newRig(t)
	core, logs := observer.New(zap.InfoLevel)
	p, err := r.open(t, Config{Interface: r.ma, Mode: ModeGeneric, Log: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	if p.MTU() != 1500 {
		t.Fatalf("port MTU %d, want the interface's 1500", p.MTU())
	}
	for _, tc := range []struct {
		mtu  int
		want string
	}{{1600, "the port keeps the MTU"}, {3000, "dropped by the kernel"}} {
		testutil.IPIn(t, r.m, "link", "set", r.ma, "mtu", strconv.Itoa(tc.mtu))
		deadline := time.Now().Add(5 * time.Second)
		for {
			found := false
			for _, e := range logs.FilterMessageSnippet(tc.want).All() {
				if m, ok := e.ContextMap()["mtu"].(int64); ok && m == int64(tc.mtu) {
					found = e.ContextMap()["port_mtu"] == int64(1500)
				}
			}
			if found {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("MTU %d: no warning saying %q with both MTUs; logged: %v", tc.mtu, tc.want, logs.All())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if p.MTU() != 1500 {
		t.Fatalf("port MTU %d after the change, want the one it opened with, 1500", p.MTU())
	}
}
