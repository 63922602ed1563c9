package bridge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/tap"
)

// The comparison with Linux's bridge: the same frames go into port i of a Linux bridge
// (veth pairs in one namespace: lb<i> in br0, the test's end lh<i>) and of uiod's bridge
// (TAP ports t<i>, opened by nic/tap in another namespace, run by the dataplane), and
// what comes out of every port of each is compared, frame by frame.
//
//	lnx: lh0..lh3 ── lb0..lb3 [br0: Linux]
//	uio: t0..t3 [uiod: dataplane + bridge]

// kstep is one frame of the comparison, or an action between frames.
type kstep struct {
	name string
	in   int
	f    []byte
	want string // outputs, as "0:u 2:t10" (describe's form), "" none
	// linux is what Linux's bridge sends instead, where it differs on purpose.
	linux *string
	// do runs before the frame is sent (nil: none).
	do func(t *testing.T, k *kernelRig)
}

const kernelPorts = 4

func TestKernelBridge(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for an entry to age out of both bridges (seconds)")
	}
	t.Run("untagged", func(t *testing.T) {
		k := newKernelRig(t, false)
		k.run(t, untaggedSteps(k))
	})
	t.Run("vlan", func(t *testing.T) {
		k := newKernelRig(t, true)
		k.run(t, vlanSteps())
	})
}

func untaggedSteps(k *kernelRig) []kstep {
	f := func(dst, src string) []byte { return testFrame(dst, src, -1, 0, 0) }
	floods := "0:u 1:u 2:u"
	return []kstep{
		{name: "A broadcasts: flooded", in: 0, f: f(bc, mA), want: "1:u 2:u 3:u"},
		{name: "B to A: known", in: 1, f: f(mA, mB), want: "0:u"},
		{name: "A to B: known", in: 0, f: f(mB, mA), want: "1:u"},
		{name: "A to C: unknown unicast flooded", in: 0, f: f(mC, mA), want: "1:u 2:u 3:u"},
		{name: "C multicasts: flooded", in: 2, f: f(mc, mC), want: "0:u 1:u 3:u"},
		{name: "A to C: known", in: 0, f: f(mC, mA), want: "2:u"},
		{name: "D to B, both on port 1: not sent back", in: 1, f: f(mB, mD), want: ""},
		{name: "A moves to port 2", in: 2, f: f(bc, mA), want: "0:u 1:u 3:u"},
		{name: "B to A follows the move", in: 1, f: f(mA, mB), want: "2:u"},
		{name: "an STP BPDU: uiod drops it (no STP), Linux without STP floods it", in: 0,
			f: f("01:80:c2:00:00:00", "02:00:00:00:00:e1"), want: "", linux: ptr("1:u 2:u 3:u")},
		{name: "LLDP: not forwarded", in: 0, f: f("01:80:c2:00:00:0e", "02:00:00:00:00:e1"), want: ""},
		{name: "a multicast source: dropped", in: 0, f: f(bc, "03:00:00:00:00:e2"), want: ""},
		{name: "to static S: its port", in: 0, f: f(mS, mA), want: "3:u"},
		{name: "S on port 1: forwarded, not moved", in: 1, f: f(mA, mS), want: "0:u"},
		{name: "to S: still port 3", in: 0, f: f(mS, mB), want: "3:u"},
		{name: "G1 on port 3: learnt", in: 3, f: f(bc, "02:00:00:00:00:91"), want: floods,
			do: func(t *testing.T, k *kernelRig) { k.linuxMACLimit(t, 2) }},
		{name: "G2 on port 3: learnt", in: 3, f: f(bc, "02:00:00:00:00:92"), want: floods},
		{name: "G3 on port 3: over the limit, forwarded", in: 3, f: f(bc, "02:00:00:00:00:93"), want: floods,
			do: func(t *testing.T, k *kernelRig) { k.macLimitReached(t, 3) }},
		{name: "to G3: not learnt, flooded", in: 1, f: f("02:00:00:00:00:93", mB), want: "0:u 2:u 3:u"},
		{name: "to G1: learnt", in: 1, f: f("02:00:00:00:00:91", mB), want: "3:u"},
		{name: "J broadcasts, ageing now 3 s", in: 0, f: f(bc, "02:00:00:00:00:a1"), want: "1:u 2:u 3:u",
			do: func(t *testing.T, k *kernelRig) { k.linuxMACLimit(t, -1); k.setAgeing(t, 3*time.Second) }},
		{name: "to J: known", in: 1, f: f("02:00:00:00:00:a1", mB), want: "0:u"},
		{name: "to J once its entry aged out: flooded", in: 1, f: f("02:00:00:00:00:a1", mB), want: "0:u 2:u 3:u",
			do: func(t *testing.T, k *kernelRig) { k.waitAged(t, "02:00:00:00:00:a1") }},
	}
}

func vlanSteps() []kstep {
	return []kstep{
		{name: "A on access 10 broadcasts: VLAN 10 only", in: 0, f: testFrame(bc, mA, -1, 0, 0), want: "2:t10 3:t10"},
		{name: "C on access 20 broadcasts: VLAN 20 only", in: 1, f: testFrame(bc, mC, -1, 0, 0), want: "2:t20"},
		{name: "B tagged 10 to A: untagged out of access 10", in: 2, f: testFrame(mA, mB, 10, 0, 0), want: "0:u"},
		{name: "A to B: tagged out of the trunk", in: 0, f: testFrame(mB, mA, -1, 0, 0), want: "2:t10"},
		{name: "B tagged 20 to A: A unknown in VLAN 20", in: 2, f: testFrame(mA, mB, 20, 0, 0), want: "1:u"},
		{name: "untagged on the tagged-only trunk", in: 2, f: testFrame(bc, mB, -1, 0, 0), want: ""},
		{name: "VLAN 30 on the trunk", in: 2, f: testFrame(bc, mB, 30, 0, 0), want: ""},
		{name: "tagged 20 on access 10", in: 0, f: testFrame(bc, mA, 20, 0, 0), want: ""},
		{name: "tagged 10 on access 10", in: 0, f: testFrame(mB, mA, 10, 0, 0), want: "2:t10"},
		{name: "priority-tagged on access 10", in: 0, f: testFrame(bc, mA, 0, 5, 0), want: "2:t10p5 3:t10p5"},
		{name: "PCP kept across trunks", in: 3, f: testFrame(bc, mD, 10, 3, 0), want: "0:u 2:t10p3"},
		{name: "native VLAN 1 of port 3: no other port", in: 3, f: testFrame(bc, mD, -1, 0, 0), want: ""},
		{name: "A moves to port 3 in VLAN 10", in: 3, f: testFrame(bc, mA, 10, 0, 0), want: "0:u 2:t10"},
		{name: "B to A follows it", in: 2, f: testFrame(mA, mB, 10, 0, 0), want: "3:t10"},
		// One MAC in two VLANs is two entries, learnt and moved independently.
		{name: "B moves to access 20, stays on the trunk in VLAN 10", in: 1, f: testFrame(bc, mB, -1, 0, 0), want: "2:t20"},
		{name: "to B in VLAN 20: its new port", in: 2, f: testFrame(mB, mD, 20, 0, 0), want: "1:u"},
		{name: "to B in VLAN 10: still the trunk", in: 0, f: testFrame(mB, mC, -1, 0, 0), want: "2:t10"},
		// The trunk's MAC limit (4: it has B in VLAN 10 and D in VLAN 20) counts its
		// entries of every VLAN.
		{name: "G1 in VLAN 10 on the trunk: learnt", in: 2, f: testFrame(bc, mG1, 10, 0, 0), want: "0:u 3:t10",
			do: func(t *testing.T, k *kernelRig) { k.linuxMACLimit(t, 2) }},
		{name: "G1 in VLAN 20 on the trunk: a second entry, learnt", in: 2, f: testFrame(bc, mG1, 20, 0, 0), want: "1:u"},
		{name: "G2 in VLAN 10: over the trunk's limit, forwarded", in: 2, f: testFrame(bc, mG2, 10, 0, 0), want: "0:u 3:t10",
			do: func(t *testing.T, k *kernelRig) { k.macLimitReached(t, 2) }},
		{name: "to G2 in VLAN 10: not learnt, flooded", in: 0, f: testFrame(mG2, mC, -1, 0, 0), want: "2:t10 3:t10"},
		{name: "to G1 in VLAN 20: learnt", in: 1, f: testFrame(mG1, mC, -1, 0, 0), want: "2:t20"},
		{name: "to G1 in VLAN 10: learnt", in: 3, f: testFrame(mG1, mD, 10, 0, 0), want: "2:t10"},
		// S is static on the trunk in VLAN 20 only.
		{name: "to static S in VLAN 20: the trunk", in: 1, f: testFrame(mS, mC, -1, 0, 0), want: "2:t20",
			do: func(t *testing.T, k *kernelRig) { k.linuxMACLimit(t, -1) }},
		{name: "to S in VLAN 10: no entry there, flooded", in: 0, f: testFrame(mS, mC, -1, 0, 0), want: "2:t10 3:t10"},
		{name: "S on access 20: forwarded, not moved", in: 1, f: testFrame(mD, mS, -1, 0, 0), want: "2:t20"},
		{name: "to S in VLAN 20: still the trunk", in: 1, f: testFrame(mS, mC, -1, 0, 0), want: "2:t20"},
		{name: "VLAN 4095 (reserved) on the trunk", in: 2, f: testFrame(bc, mB, 4095, 0, 0), want: ""},
		{name: "priority-tagged on the tagged-only trunk", in: 2, f: testFrame(bc, mB, 0, 4, 0), want: ""},
		{name: "802.1ad-tagged on access 10: payload to an 802.1Q bridge, VLAN 10's", in: 0, f: sTagged(bc, mC, 100), want: "2:t10 3:t10"},
		// Ageing, per VLAN entry.
		{name: "J tagged 10 on port 3, ageing now 3 s", in: 3, f: testFrame(bc, mJ, 10, 0, 0), want: "0:u 2:t10",
			do: func(t *testing.T, k *kernelRig) { k.setAgeing(t, 3*time.Second) }},
		{name: "to J in VLAN 10: known", in: 0, f: testFrame(mJ, mC, -1, 0, 0), want: "3:t10"},
		{name: "to J in VLAN 10 once its entry aged out: flooded", in: 0, f: testFrame(mJ, mC, -1, 0, 0), want: "2:t10 3:t10",
			do: func(t *testing.T, k *kernelRig) { k.waitAged(t, mJ) }},
	}
}

// sTagged is testFrame(dst, src, -1, 0, 0) behind an 802.1ad S-tag of vid: payload to an
// 802.1Q bridge (Linux's with vlan_protocol 802.1Q), which treats the frame as untagged.
func sTagged(dst, src string, vid uint16) []byte {
	f := testFrame(dst, src, -1, 0, 0)
	return slices.Insert(f, 12, byte(tpid8021AD>>8), byte(tpid8021AD&0xff), byte(vid>>8), byte(vid))
}

const tpid8021AD = 0x88a8

// The VLAN rows' limited sources.
const (
	mG1 = "02:00:00:00:00:91"
	mG2 = "02:00:00:00:00:92"
	mJ  = "02:00:00:00:00:a1"
)

func ptr(s string) *string { return &s }

// kernelRig is the two bridges and the test's sockets on their ports.
type kernelRig struct {
	lnx, uio string
	cfg      Config
	app      *App
	dp       *dataplane.Dataplane
	lh, ut   []*pktSock // the test's ends: Linux's ports, uiod's ports
	// noMaxLearned: the kernel has no fdb_max_learned (before Linux 6.7), so the MAC
	// limit's rows turn learning off on the limited port where uiod's limit is reached;
	// learnOff is that port's Linux end (lb<i>) once off.
	noMaxLearned bool
	learnOff     string
}

func newKernelRig(t *testing.T, vlans bool) *kernelRig {
	if _, err := exec.LookPath("bridge"); err != nil {
		t.Skip("needs the bridge tool (iproute2)")
	}
	id := fmt.Sprintf("brk%d", os.Getpid()%100000)
	k := &kernelRig{lnx: testutil.Netns(t, id+"l"), uio: testutil.TAPNetns(t, id+"u")}
	for _, ns := range []string{k.lnx, k.uio} { // no IPv6 chatter (DAD, MLD, RS)
		testutil.Sysctl(t, ns, "net.ipv6.conf.all.disable_ipv6", "1")
		testutil.Sysctl(t, ns, "net.ipv6.conf.default.disable_ipv6", "1")
	}
	args := []string{"-n", k.lnx, "link", "add", "br0", "type", "bridge", "mcast_snooping", "0", "stp_state", "0"}
	if vlans {
		args = append(args, "vlan_filtering", "1")
	}
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		if vlans && strings.Contains(string(out), "not supported") {
			t.Skip("the kernel's bridge has no VLAN filtering (CONFIG_BRIDGE_VLAN_FILTERING)")
		}
		t.Fatalf("ip %v: %v: %s", args, err, out)
	}
	testutil.IP(t, "-n", k.lnx, "link", "set", "br0", "up")
	var ports []Port
	for i := range kernelPorts {
		lb, lh := fmt.Sprint("lb", i), fmt.Sprint("lh", i)
		testutil.IP(t, "-n", k.lnx, "link", "add", lb, "type", "veth", "peer", "name", lh)
		testutil.IP(t, "-n", k.lnx, "link", "set", lb, "master", "br0")
		testutil.IP(t, "-n", k.lnx, "link", "set", lb, "up")
		testutil.IP(t, "-n", k.lnx, "link", "set", lh, "up")
		ports = append(ports, Port{Name: fmt.Sprint("t", i), PVID: 1})
	}
	if vlans {
		// As vlanPorts: 0 access 10, 1 access 20, 2 trunk 10+20 tagged only, 3 trunk 10
		// with native VLAN 1 (the default PVID, which Linux gives every port).
		br := func(a ...string) { k.bridgeTool(t, a...) }
		for i, v := range []string{"10", "20"} {
			br("vlan", "del", "dev", fmt.Sprint("lb", i), "vid", "1")
			br("vlan", "add", "dev", fmt.Sprint("lb", i), "vid", v, "pvid", "untagged")
		}
		br("vlan", "del", "dev", "lb2", "vid", "1")
		br("vlan", "add", "dev", "lb2", "vid", "10")
		br("vlan", "add", "dev", "lb2", "vid", "20")
		br("vlan", "add", "dev", "lb3", "vid", "10")
		br("fdb", "add", mS, "dev", "lb2", "vlan", "20", "master", "static", "sticky")
		ports = vlanPorts()
		ports[2].MACLimit = 4
	} else {
		k.bridgeTool(t, "fdb", "add", mS, "dev", "lb3", "master", "static", "sticky")
		ports[3].MACLimit = 2
	}
	for i := range kernelPorts {
		k.lh = append(k.lh, openPktSock(t, k.lnx, fmt.Sprint("lh", i)))
	}
	if !testutil.WaitFor(10*time.Second, func() bool {
		out, _ := exec.Command("bridge", "-n", k.lnx, "link", "show").CombinedOutput()
		return strings.Count(string(out), "state forwarding") == kernelPorts
	}) {
		t.Fatal("the Linux bridge's ports did not reach the forwarding state")
	}
	cfg := Config{Ports: ports}
	if vlans {
		cfg.Static = []Static{{MAC: mac(mS), VLAN: 20, Port: 2}}
	} else {
		cfg.Static = []Static{{MAC: mac(mS), Port: 3}}
	}
	k.startUiod(t, cfg)
	return k
}

func (k *kernelRig) bridgeTool(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("bridge", append([]string{"-n", k.lnx}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("bridge %v: %v: %s", args, err, out)
	}
}

// startUiod opens the TAP ports in the uio namespace and runs the bridge on them.
func (k *kernelRig) startUiod(t *testing.T, cfg Config) {
	var ports []dataplane.Port
	var queues []dataplane.Queue
	var tx []dataplane.TxQueue
	for i := range kernelPorts {
		var p *tap.Port
		if err := testutil.InNetns(k.uio, func() (err error) { p, err = tap.Open(tap.Config{Name: fmt.Sprint("t", i)}); return }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		ports = append(ports, dataplane.Port{Name: p.Name(), NIC: p})
		queues = append(queues, dataplane.Queue{RxPort: p, TxPort: p})
		tx = append(tx, dataplane.TxQueue{Port: p})
		k.ut = append(k.ut, openPktSock(t, k.uio, p.Name()))
	}
	app, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dp, err := dataplane.New(dataplane.Config{Ports: ports, Threads: []dataplane.Thread{{CPU: -1, Queues: queues, Tx: tx}},
		App: app, Policy: idle.DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	if err := dp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(app.Close) // after the ports close (cleanups run last first)
	t.Cleanup(dp.Stop)
	k.cfg, k.app, k.dp = cfg, app, dp
}

// run sends each step's frame into both bridges and compares what comes out.
func (k *kernelRig) run(t *testing.T, steps []kstep) {
	for n, s := range steps {
		if s.do != nil {
			s.do(t, k)
		}
		id := uint16(0x100 + n)
		f := bytes.Clone(s.f)
		binary.BigEndian.PutUint16(f[len(f)-46:], id) // testFrame's id, before its 44 zero bytes
		want, lwant := s.want, s.want
		if s.linux != nil {
			lwant = *s.linux
		}
		rx := k.uiodRx()
		k.lh[s.in].send(t, f)
		k.ut[s.in].send(t, f)
		// Wait for what each should send; for a frame nothing should come of, for uiod to
		// have taken it and Linux a moment.
		if !testutil.WaitFor(5*time.Second, func() bool {
			return k.outputs(k.lh, id) == lwant && k.outputs(k.ut, id) == want && k.uiodRx() > rx
		}) {
			t.Errorf("%s: Linux sent %q (want %q), uiod %q (want %q)", s.name, k.outputs(k.lh, id), lwant, k.outputs(k.ut, id), want)
			continue
		}
		if want == "" || lwant == "" {
			time.Sleep(50 * time.Millisecond) // a frame either wrongly sent has arrived by now
		}
		t.Logf("%s: Linux %q, uiod %q", s.name, k.outputs(k.lh, id), k.outputs(k.ut, id))
		// Byte for byte, the frames that came out of both agree.
		for p := range kernelPorts {
			l, u := k.lh[p].frames(id), k.ut[p].frames(id)
			if s.linux == nil && !slices.EqualFunc(l, u, bytes.Equal) {
				t.Errorf("%s: port %d: Linux sent % x\nuiod % x", s.name, p, l, u)
			}
		}
	}
	time.Sleep(100 * time.Millisecond)
	for n, s := range steps {
		id := uint16(0x100 + n)
		want, lwant := s.want, s.want
		if s.linux != nil {
			lwant = *s.linux
		}
		if l, u := k.outputs(k.lh, id), k.outputs(k.ut, id); l != lwant || u != want {
			t.Errorf("in the end, %s: Linux sent %q (want %q), uiod %q (want %q)", s.name, l, lwant, u, want)
		}
	}
}

func (k *kernelRig) uiodRx() (n uint64) {
	for _, q := range k.dp.Stats() {
		n += q.RxPackets
	}
	return n
}

// outputs renders the frames with id that came out of the ports of socks, as describe.
func (k *kernelRig) outputs(socks []*pktSock, id uint16) string {
	var out []string
	for p, s := range socks {
		for _, f := range s.frames(id) {
			out = append(out, outForm(p, f))
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// linuxMACLimit sets the Linux bridge's fdb_max_learned to the entries it has learnt now
// plus extra (-1: no limit): a bridge-wide limit, which is uiod's limit of the port the
// rows after it send on while only that port learns new MACs. A kernel without
// fdb_max_learned (Linux 6.1 takes the attribute and ignores it) gets macLimitReached's
// stand-in instead; extra -1 then turns that port's learning back on.
func (k *kernelRig) linuxMACLimit(t *testing.T, extra int) {
	t.Helper()
	if k.noMaxLearned {
		if extra < 0 && k.learnOff != "" {
			k.bridgeTool(t, "link", "set", "dev", k.learnOff, "learning", "on")
			k.learnOff = ""
		}
		return
	}
	limit := 0
	if extra >= 0 {
		out, err := exec.Command("bridge", "-n", k.lnx, "fdb", "show", "br", "br0").CombinedOutput()
		if err != nil {
			t.Fatalf("bridge fdb show: %v: %s", err, out)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "master br0") && !strings.Contains(l, "permanent") && !strings.Contains(l, "static") {
				limit++
			}
		}
		limit += extra
	}
	var got uint32
	var has bool
	err := testutil.InNetns(k.lnx, func() (err error) {
		if err = setFDBMaxLearned("br0", uint32(limit)); err != nil {
			return err
		}
		got, has, err = fdbMaxLearned("br0")
		return err
	})
	switch {
	case err != nil:
		t.Logf("the kernel refuses fdb_max_learned (%v): the limited port's learning is turned off instead where uiod's limit is reached", err)
		k.noMaxLearned = true
	case !has:
		t.Log("the kernel reports no fdb_max_learned (Linux 6.7 on has it): the limited port's learning is turned off instead where uiod's limit is reached")
		k.noMaxLearned = true
	case got != uint32(limit):
		t.Fatalf("the bridge's fdb_max_learned is %d after setting %d", got, limit)
	}
}

// macLimitReached is the do of the first row over port's MAC limit: uiod's port must
// have exactly its limit of dynamic entries then (else the rows are wrong), and on a
// kernel without fdb_max_learned Linux's port stops learning here (`bridge link set
// learning off`: what it has stays, frames still pass; what a limit of that many does).
func (k *kernelRig) macLimitReached(t *testing.T, port int) {
	t.Helper()
	n := 0
	for _, e := range k.app.Entries() {
		if int(e.Port) == port && !e.Static {
			n++
		}
	}
	if limit := k.cfg.Ports[port].MACLimit; n != limit {
		t.Fatalf("uiod's port %d has %d dynamic entries before the row over its limit, want its limit %d", port, n, limit)
	}
	if k.noMaxLearned {
		k.learnOff = fmt.Sprint("lb", port)
		k.bridgeTool(t, "link", "set", "dev", k.learnOff, "learning", "off")
	}
}

// fdbMaxLearned reads bridge name's IFLA_BR_FDB_MAX_LEARNED; has is false when the
// kernel reports none (before Linux 6.7).
func fdbMaxLearned(name string) (limit uint32, has bool, err error) {
	ifi, err := netIndex(name)
	if err != nil {
		return 0, false, err
	}
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, 0)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(ifi)
	req.AddData(msg)
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
	if err != nil {
		return 0, false, err
	}
	for _, m := range msgs {
		if len(m) < unix.SizeofIfInfomsg {
			continue
		}
		data, err := nestedAttr(m[unix.SizeofIfInfomsg:], unix.IFLA_LINKINFO, nl.IFLA_INFO_DATA)
		if err != nil || data == nil {
			return 0, false, err
		}
		attrs, err := nl.ParseRouteAttr(data)
		if err != nil {
			return 0, false, err
		}
		for _, a := range attrs {
			if a.Attr.Type&nl.NLA_TYPE_MASK == unix.IFLA_BR_FDB_MAX_LEARNED && len(a.Value) >= 4 {
				return binary.NativeEndian.Uint32(a.Value), true, nil
			}
		}
	}
	return 0, false, nil
}

// nestedAttr returns the value of the attribute at path (types, outermost first) in the
// route attributes b, or nil.
func nestedAttr(b []byte, path ...uint16) ([]byte, error) {
	for _, typ := range path {
		attrs, err := nl.ParseRouteAttr(b)
		if err != nil {
			return nil, err
		}
		b = nil
		for _, a := range attrs {
			if a.Attr.Type&nl.NLA_TYPE_MASK == typ {
				b = a.Value
				break
			}
		}
		if b == nil {
			return nil, nil
		}
	}
	return b, nil
}

// setFDBMaxLearned sets IFLA_BR_FDB_MAX_LEARNED on bridge name, which iproute2 6.1
// cannot. The kernel ignores no attribute of a bridge's IFLA_INFO_DATA it does not know
// (strict checking): an older one refuses the request.
func setFDBMaxLearned(name string, limit uint32) error {
	ifi, err := netIndex(name)
	if err != nil {
		return err
	}
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(ifi)
	req.AddData(msg)
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("bridge"))
	data := info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
	data.AddRtAttr(unix.IFLA_BR_FDB_MAX_LEARNED, nl.Uint32Attr(limit))
	req.AddData(info)
	_, err = req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}

func netIndex(name string) (int, error) {
	b, err := os.ReadFile("/sys/class/net/" + name + "/ifindex")
	if err == nil {
		var n int
		_, err = fmt.Sscan(string(b), &n)
		return n, err
	}
	// /sys shows the namespace that mounted it: ask the kernel instead.
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, fmt.Errorf("SIOCGIFINDEX %s: %w", name, err)
	}
	return int(ifr.Uint32()), nil
}

// setAgeing sets both bridges' ageing time.
func (k *kernelRig) setAgeing(t *testing.T, d time.Duration) {
	t.Helper()
	testutil.IP(t, "-n", k.lnx, "link", "set", "br0", "type", "bridge", "ageing_time", fmt.Sprint(d.Milliseconds()/10))
	if err := k.app.SetAgeing(d); err != nil {
		t.Fatal(err)
	}
}

// waitAged waits until neither bridge has an entry for m.
func (k *kernelRig) waitAged(t *testing.T, m string) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, func() bool {
		out, _ := exec.Command("bridge", "-n", k.lnx, "fdb", "show", "br", "br0").CombinedOutput()
		if strings.Contains(string(out), m) {
			return false
		}
		for _, e := range k.app.Entries() {
			if e.MAC.String() == m {
				return false
			}
		}
		return true
	}, "%s did not age out of both tables", m)
}

// pktSock is an AF_PACKET socket on one interface: it sends frames out of it and keeps
// the test frames (EtherType 0x88b5, behind one 802.1Q tag or none) it receives, the
// tag the kernel took off put back from PACKET_AUXDATA.
type pktSock struct {
	fd   int
	ifi  int
	mu   sync.Mutex
	got  map[uint16][][]byte
	stop chan struct{}
	done chan struct{}
}

func openPktSock(t *testing.T, ns, ifname string) *pktSock {
	t.Helper()
	s := &pktSock{got: map[uint16][][]byte{}, stop: make(chan struct{}), done: make(chan struct{})}
	err := testutil.InNetns(ns, func() error {
		ifi, err := netIndex(ifname)
		if err != nil {
			return err
		}
		s.ifi = ifi
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		s.fd = fd
		for _, o := range []int{unix.PACKET_AUXDATA, unix.PACKET_IGNORE_OUTGOING} {
			if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, o, 1); err != nil {
				return fmt.Errorf("setsockopt %d: %w", o, err)
			}
		}
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 50_000}); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi})
	})
	if err != nil {
		if s.fd > 0 {
			unix.Close(s.fd)
		}
		t.Fatalf("packet socket on %s: %v", ifname, err)
	}
	go s.read()
	t.Cleanup(func() {
		close(s.stop)
		<-s.done
		unix.Close(s.fd)
	})
	return s
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (s *pktSock) send(t *testing.T, f []byte) {
	t.Helper()
	if err := unix.Sendto(s.fd, f, 0, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: s.ifi}); err != nil {
		t.Fatalf("send: %v", err)
	}
}

func (s *pktSock) read() {
	defer close(s.done)
	buf, oob := make([]byte, 4096), make([]byte, 256)
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		n, oobn, _, _, err := unix.Recvmsg(s.fd, buf, oob, 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		f := withTag(buf[:n], oob[:oobn])
		if id, ok := testID(f); ok {
			s.mu.Lock()
			s.got[id] = append(s.got[id], f)
			s.mu.Unlock()
		}
	}
}

// withTag returns a copy of frame f with the VLAN tag PACKET_AUXDATA reports put back.
func withTag(f, oob []byte) []byte {
	f = bytes.Clone(f)
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(f) < 12 {
		return f
	}
	for _, m := range msgs {
		// struct tpacket_auxdata: status, len, snaplen (u32), mac, net, vlan_tci, vlan_tpid (u16).
		if m.Header.Level != unix.SOL_PACKET || m.Header.Type != unix.PACKET_AUXDATA || len(m.Data) < 20 {
			continue
		}
		ne := binary.NativeEndian
		status, tci, tpid := ne.Uint32(m.Data), ne.Uint16(m.Data[16:]), ne.Uint16(m.Data[18:])
		if status&unix.TP_STATUS_VLAN_VALID == 0 {
			continue
		}
		if status&unix.TP_STATUS_VLAN_TPID_VALID == 0 {
			tpid = tpid8021Q
		}
		tag := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, tpid), tci)
		f = slices.Insert(f, 12, tag...)
	}
	return f
}

// testID is a test frame's id: the two bytes after EtherType 0x88b5 (behind an 802.1Q
// tag, an 802.1ad one, or both in that order).
func testID(f []byte) (uint16, bool) {
	off := 12
	if len(f) >= 16 && binary.BigEndian.Uint16(f[12:]) == tpid8021Q {
		off = 16
	}
	if len(f) >= off+4 && binary.BigEndian.Uint16(f[off:]) == tpid8021AD {
		off += 4
	}
	if len(f) < off+4 || binary.BigEndian.Uint16(f[off:]) != 0x88b5 {
		return 0, false
	}
	return binary.BigEndian.Uint16(f[off+2:]), true
}

func (s *pktSock) frames(id uint16) [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got[id])
}

var _ nic.Port = (*tap.Port)(nil)
