package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic/afxdp"
)

// TestInterfaceLine: each interface's line says the modes and zero-copy its features
// allow, "unknown" without features, and the state, queues and program.
func TestInterfaceLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    afxdp.Interface
		want string
	}{
		{"zero-copy NIC", afxdp.Interface{Name: "ens1f0", Kind: "device", Driver: "ice", PCI: "0000:17:00.0", MAC: "02:00:00:00:00:01", MTU: 1500, Up: true, Running: true, RxQueues: 8,
			Features: &afxdp.DevFeatures{XDP: afxdp.XDPBasic | afxdp.XDPRedirect | afxdp.XDPNdoXmit | afxdp.XDPXSKZeroCopy | afxdp.XDPRxSG}},
			"ens1f0 kind=device drv=ice pci=0000:17:00.0 mac=02:00:00:00:00:01 mtu=1500 up queues=8 xdp=native,generic zerocopy=yes features=basic,redirect,ndo-xmit,xsk-zerocopy,rx-sg"},
		{"veth with a program", afxdp.Interface{Name: "v0", Kind: "veth", MTU: 1500, Up: true, RxQueues: 1, Program: `id 7, name "foo"`,
			Features: &afxdp.DevFeatures{XDP: afxdp.XDPBasic | afxdp.XDPRedirect | 1<<40}},
			`v0 kind=veth mtu=1500 up,no-carrier queues=1 xdp=native,generic zerocopy=no features=basic,redirect,bit-40 prog="id 7, name \"foo\""`},
		{"basic without redirect", afxdp.Interface{Name: "x", Kind: "device", MTU: 9000, Features: &afxdp.DevFeatures{XDP: afxdp.XDPBasic}},
			"x kind=device mtu=9000 down xdp=generic zerocopy=no features=basic"},
		{"no features", afxdp.Interface{Name: "lo", Kind: "device", MTU: 65536, Up: true, Running: true, RxQueues: 1, Features: &afxdp.DevFeatures{}},
			"lo kind=device mtu=65536 up queues=1 xdp=generic zerocopy=no features=none"},
		{"old kernel", afxdp.Interface{Name: "eth0", Kind: "device", Driver: "igb", MTU: 1500, Up: true, Running: true, RxQueues: 4},
			"eth0 kind=device drv=igb mtu=1500 up queues=4 xdp=unknown zerocopy=unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := interfaceLine(&tc.f); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestInterfaceJSON: the capabilities are null with the reason when unknown.
func TestInterfaceJSON(t *testing.T) {
	f := afxdp.Interface{Name: "eth0", Kind: "device"}
	j := newInterfaceJSON(&f, afxdp.ErrNoNetdevFamily)
	if j.Native != nil || j.ZeroCopy != nil || j.XDPFeatures != nil || !strings.Contains(j.FeaturesError, "6.3") {
		t.Errorf("unknown: %+v", j)
	}
	f.Features = &afxdp.DevFeatures{XDP: afxdp.XDPBasic | afxdp.XDPRedirect, XDPZCMaxSegs: 1}
	j = newInterfaceJSON(&f, nil)
	if j.Native == nil || !*j.Native || j.ZeroCopy == nil || *j.ZeroCopy || j.FeaturesError != "" || len(j.XDPFeatures) != 2 || *j.ZCMaxSegs != 1 {
		t.Errorf("known: %+v", j)
	}
}

// TestDevicesInterfaces: in a namespace with a veth pair, uiod devices --interfaces
// lists both ends with their queues and the kernel's xdp-features (veth: native), shows
// a program attached, and exits 2 for an interface that is not there.
func TestDevicesInterfaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	ns := testutil.Netns(t, "uiodif")
	testutil.IP(t, "-n", ns, "link", "add", "dv0", "numrxqueues", "3", "numtxqueues", "3", "type", "veth", "peer", "name", "dv1")
	testutil.IPIn(t, ns, "link", "set", "dv0", "up")
	testutil.IPIn(t, ns, "link", "set", "dv1", "up")
	bin := uiodBinary(t)
	inNS := func(args ...string) (string, error) {
		out, err := exec.Command("ip", append([]string{"netns", "exec", ns, bin}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := inNS("devices", "--interfaces", "--json")
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	var ifs []interfaceJSON
	if err := json.Unmarshal([]byte(out), &ifs); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	byName := map[string]interfaceJSON{}
	for _, f := range ifs {
		byName[f.Name] = f
	}
	v, ok := byName["dv0"]
	if !ok || byName["dv1"].Name == "" || byName["lo"].Name == "" {
		t.Fatalf("dv0, dv1 and lo not all listed:\n%s", out)
	}
	if v.Kind != "veth" || v.RxQueues != 3 || !v.Up {
		t.Errorf("dv0: %+v", v)
	}
	if v.FeaturesError == "" && (v.Native == nil || !*v.Native) {
		t.Errorf("veth's xdp-features should allow native XDP: %+v", v)
	}
	t.Logf("dv0: %+v", v)
	text, err := inNS("devices", "--interfaces", "dv1", "dv0")
	if err != nil {
		t.Fatalf("%v:\n%s", err, text)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[2], "dv1 kind=veth") || !strings.HasPrefix(lines[3], "dv0 kind=veth") || !strings.Contains(lines[3], " queues=3 ") {
		t.Errorf("text, dv1 then dv0:\n%s", text)
	}
	msg, err := inNS("devices", "--interfaces", "nosuch0")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(msg, "nosuch0: no such network interface") {
		t.Errorf("devices --interfaces nosuch0: %v, want exit 2:\n%s", err, msg)
	}
}
