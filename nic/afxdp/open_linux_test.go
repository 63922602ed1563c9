package afxdp

import (
	"errors"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"

	"github.com/uiod/uiod/internal/testutil"
)

// TestOpenRefuses: each bad input is an error naming the interface and what is wrong,
// and leaves no program attached.
func TestOpenRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, r *rig)
		cfg   func(r *rig) Config
		want  error
		text  string
	}{
		{name: "no such interface", cfg: func(r *rig) Config { return Config{Interface: "nosuch0"} }, want: ErrNoInterface, text: "nosuch0"},
		{name: "down", setup: func(t *testing.T, r *rig) { testutil.IPIn(t, r.m, "link", "set", r.ma, "down") },
			cfg: func(r *rig) Config { return Config{Interface: r.ma} }, want: ErrDown, text: "ip link set xma up"},
		{name: "queue beyond channels", cfg: func(r *rig) Config { return Config{Interface: r.ma, QueueStart: 1, Queues: 1} }, want: ErrQueues, text: "1 RX queues"},
		{name: "unbound queues", setup: func(t *testing.T, r *rig) {
			testutil.IP(t, "-n", r.m, "link", "add", "xmq", "numrxqueues", "2", "numtxqueues", "2", "type", "veth", "peer", "name", "xmq1")
			testutil.IPIn(t, r.m, "link", "set", "xmq", "up")
		}, cfg: func(r *rig) Config { return Config{Interface: "xmq", Queues: 1} }, want: ErrQueues, text: "set partial"},
		{name: "mtu", setup: func(t *testing.T, r *rig) { testutil.IPIn(t, r.m, "link", "set", r.ma, "mtu", "9711") },
			cfg: func(r *rig) Config { return Config{Interface: r.ma} }, want: ErrMTU, text: "(9710)"},
		{name: "zerocopy on", cfg: func(r *rig) Config { return Config{Interface: r.ma, ZeroCopy: ZeroCopyOn, Mode: ModeNative} }, want: ErrZeroCopyRefused, text: "XDP_ZEROCOPY"},
		{name: "frame size", cfg: func(r *rig) Config { return Config{Interface: r.ma, FrameSize: 3000} }, want: ErrConfig, text: "frame_size 3000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			if tc.setup != nil {
				tc.setup(t, r)
			}
			cfg := tc.cfg(r)
			_, err := r.open(t, cfg)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) || !strings.Contains(err.Error(), cfg.Interface) {
				t.Fatalf("Open: %v; want %v mentioning %q and %s", err, tc.want, tc.text, cfg.Interface)
			}
			if cfg.Interface != "nosuch0" {
				if p := r.xdpProg(t, cfg.Interface); p != "" {
					t.Fatalf("after the refusal %s still has XDP: %s", cfg.Interface, p)
				}
			}
		})
	}
}

// TestPartialQueues: with partial, a subset of the queues is bound.
func TestPartialQueues(t *testing.T) {
	r := newRig(t)
	testutil.IP(t, "-n", r.m, "link", "add", "xmq", "numrxqueues", "2", "numtxqueues", "2", "type", "veth", "peer", "name", "xmq1")
	testutil.IPIn(t, r.m, "link", "set", "xmq", "up")
	testutil.IPIn(t, r.m, "link", "set", "xmq1", "up")
	p, err := r.open(t, Config{Interface: "xmq", QueueStart: 1, Queues: 1, Partial: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.NumRxQueues() != 1 {
		t.Fatalf("%d queues", p.NumRxQueues())
	}
	all, err := r.open(t, Config{Interface: "xmq1"})
	if err != nil {
		t.Fatal(err)
	}
	if all.NumRxQueues() != 2 {
		t.Fatalf("default queues: %d, the interface has 2", all.NumRxQueues())
	}
}

// otherProgram is an XDP program of someone else's: XDP_PASS.
func otherProgram(t *testing.T) *ebpf.Program {
	t.Helper()
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "someone_else", Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, xdpPass), asm.Return()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestExistingProgram: an interface with another XDP program is refused, naming it, and
// left with it; with Replace a netlink-attached one is replaced. After Close nothing is
// attached.
func TestExistingProgram(t *testing.T) {
	r := newRig(t)
	prog := otherProgram(t)
	info, _ := prog.Info()
	id, _ := info.ID()
	lk := r.attachOther(t, r.ma, prog)
	defer lk.Close()
	before := r.xdpProg(t, r.ma)
	_, err := r.open(t, Config{Interface: r.ma})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "someone_else") || !strings.Contains(err.Error(), "id "+itoa(int(id))) {
		t.Fatalf("Open over another program: %v", err)
	}
	if after := r.xdpProg(t, r.ma); after != before || after == "" {
		t.Fatalf("the other program's attachment changed: %q, was %q", after, before)
	}
	// A bpf_link's program cannot be replaced: refused even with Replace.
	if _, err := r.open(t, Config{Interface: r.ma, Replace: true}); !errors.Is(err, ErrBusy) {
		t.Fatalf("Replace over a bpf_link: %v", err)
	}
	lk.Close()

	// A netlink-attached one is replaced.
	if err := testutil.InNetns(r.m, func() error {
		l, err := netlink.LinkByName(r.mb)
		if err != nil {
			return err
		}
		return netlink.LinkSetXdpFdWithFlags(l, prog.FD(), 2 /* XDP_FLAGS_SKB_MODE */)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.open(t, Config{Interface: r.mb}); !errors.Is(err, ErrBusy) {
		t.Fatalf("Open over a netlink program: %v", err)
	}
	p, err := r.open(t, Config{Interface: r.mb, Replace: true})
	if err != nil {
		t.Fatalf("Replace: %v", err)
	}
	if s := r.xdpProg(t, r.mb); s == "" {
		t.Fatal("nothing attached after Replace")
	}
	p.Close()
	if s := r.xdpProg(t, r.mb); s != "" {
		t.Fatalf("after Close %s still has XDP: %s", r.mb, s)
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
