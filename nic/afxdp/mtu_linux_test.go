package afxdp

import (
	"errors"
	"fmt"
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

// TestMTU: veths at MTU 3000 and 9000 in namespaces, ports of frame_size 4096 and 2048
// through l2fwd, native and generic mode. MTU 3000 at 4096 fits one chunk (up to MaxMTU,
// 3822); the others use multi-buffer AF_XDP (a frame over several chunks, copied into one
// buffer on RX and split again on TX). One port takes the interface's MTU (mtu left out),
// the other names it; both report it. `ping -M do -s MTU-28` (frames of MTU+14 bytes, DF)
// is answered and 4 MiB over TCP arrive with the same SHA-256, in frames longer than a
// chunk where the MTU's are, with no error counted.
func TestMTU(t *testing.T) {
	if _, err := exec.LookPath("ping"); err != nil {
		t.Skip("needs ping (iputils-ping)")
	}
	for _, tc := range []struct{ mtu, frameSize int }{{3000, 4096}, {9000, 4096}, {9000, 2048}, {3000, 2048}} {
		for _, mode := range []Mode{ModeNative, ModeGeneric} {
			t.Run(fmt.Sprintf("%d-%d-%s", tc.mtu, tc.frameSize, mode), func(t *testing.T) {
				r := newRig(t)
				setRigMTU(t, r, tc.mtu)
				pa, err := r.open(t, Config{Interface: r.ma, Mode: mode, FrameSize: tc.frameSize, RxRing: 512, TxRing: 512})
				if err != nil {
					t.Fatal(err)
				}
				pb, err := r.open(t, Config{Interface: r.mb, Mode: mode, FrameSize: tc.frameSize, MTU: tc.mtu, RxRing: 512, TxRing: 512})
				if err != nil {
					t.Fatal(err)
				}
				if pa.MTU() != tc.mtu || pb.MTU() != tc.mtu {
					t.Fatalf("ports' MTU %d and %d, want the interfaces' %d", pa.MTU(), pb.MTU(), tc.mtu)
				}
				if sg := tc.mtu > MaxMTU(tc.frameSize); pa.queues[0].sg != sg {
					t.Fatalf("multi-buffer %v, want %v", pa.queues[0].sg, sg)
				}
				l2fwd(t, pa, pb, idle.PolicyConfig{Mode: idle.Adaptive})
				out, err := exec.Command("ip", "netns", "exec", r.a, "ping", "-c", "3", "-i", "0.2", "-W", "5",
					"-M", "do", "-s", strconv.Itoa(tc.mtu-28), r.ipB.String()).CombinedOutput()
				if err != nil || !strings.Contains(string(out), " 0% packet loss") {
					t.Fatalf("ping -M do -s %d through MTU %d ports: %v\n%s", tc.mtu-28, tc.mtu, err, out)
				}
				r.transfer(t, 4<<20)
				sa, sb := pa.Stats(), pb.Stats()
				if sa.RxErrors != 0 || sa.TxErrors != 0 || sb.RxErrors != 0 || sb.TxErrors != 0 {
					t.Fatalf("errors counted: a %+v, b %+v", sa, sb)
				}
				// 4 MiB in frames of the MTU: fewer than 4 MiB / (MTU - 100) + the pings and ACKs
				// would not hold them at 1500.
				if per := sa.RxBytes / max(sa.RxPackets, 1); per < uint64(tc.mtu)/2 {
					t.Fatalf("a's %d frames average %d bytes: not the MTU's (%+v)", sa.RxPackets, per, sa)
				}
				t.Logf("a %+v, b %+v", sa, sb)
			})
		}
	}
}

// TestMTURefused: an MTU above MaxMultiBufferMTU, one above a chunk with zerocopy on
// (multi-buffer frames are received in copy mode), and an mtu that is not the
// interface's are refused naming the interface, both MTUs or the limit, and leave
// nothing attached.
func TestMTURefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mtu   int
		cfg   Config
		texts []string
	}{
		{"9711", 9711, Config{FrameSize: 4096}, []string{"MTU 9711", "more than an af_xdp port takes (9710)"}},
		{"zerocopy on beyond a chunk", 9000, Config{FrameSize: 4096, ZeroCopy: ZeroCopyOn, Mode: ModeNative}, []string{"MTU 9000", "zero-copy MTU 3822 at most"}},
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
