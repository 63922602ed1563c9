package integration

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/testrig/qemutest"
)

// vfProbes probes at e2eInterval go through the VFs per steady run; vfEventProbes cover a
// PF event (the guest's event takes 2-3 s, the PF's unbind and rebind longer).
const (
	vfProbes      = 200
	vfEventProbes = 1600
)

// vfIdle is the stretch without traffic over which idle CPU is measured: 600 ticks of
// USER_HZ, so that 0.5 % of a CPU is 3 of them.
const vfIdle = 6 * time.Second

// vfEventCount is how many probes cover the PF event ev.
func vfEventCount(ev string) int {
	if ev == "pfrebind" {
		return 2 * vfEventProbes
	}
	return vfEventProbes
}

// TestIntegrationIGBVF is the SR-IOV guest proof (testdata/igbvf.sh): the shared kernel
// with an emulated Intel IOMMU and two QEMU igb NICs, Linux's igb as the PF of both,
// creating two VFs each; VF 0 of each PF on vfio-pci, `uiod run` forwarding between them
// (nic: igbvf, adaptive). The host probes PF 1's wire and gets every probe back from PF
// 2's, the RX vector of VF 0 of PF 1 counts wake-ups in /proc/interrupts, then while
// probes run the PF changes the VF's MAC (and back), goes down and up, and is unbound from
// igb and bound again (its VFs go and are created again, VF 0 bound to vfio-pci again):
// after each the port forwards again, after the PF's reset it has re-initialised itself
// (device_resets in /status), after the rebind the daemon has re-opened it (reopens); the
// probes lost meanwhile are reported. Then the same forwarding runs as uid 1000 with
// CapEff 0 and the memlock `uiod config validate` prints (TestGuestToolUnprivileged), and
// every probe must come back. Before all that, the daemon starts with PF 1's interface
// down: it must run with vf0's link down until the PF is up, and vf0 then comes up by
// itself (checkPFDownOpen).
func TestIntegrationIGBVF(t *testing.T) {
	o := qemutest.Options{IOMMU: true, NICs: 2, HugePages: e2eHugePages, Timeout: 9 * time.Minute}
	o.Script = vfScript(t, "igbvf.sh")
	vm := startGuest(t, qemutest.SharedKernel, o)
	probe := func(name string, count int) *latencyRun { return vfProbe(t, vm, 0, name, count) }
	command := func(cmd, wait string) bool { return guestCommand(t, vm, cmd, wait) }
	runs := map[string]*latencyRun{}
	events := []string{"vfmac", "pfbounce", "pfrebind"}
	// measure probes the running daemon: snapshots NAME-pre and NAME (probed), NAME-idle0
	// and NAME-idle1 (vfIdle without traffic).
	measure := func(name string) bool {
		if !command("snap "+name+"-pre", "E2E snapshot "+name+"-pre taken") {
			return false
		}
		if runs[name] = probe(name, vfProbes); runs[name] == nil {
			return false
		}
		if !command("snap "+name, "E2E snapshot "+name+" taken") || !command("snap "+name+"-idle0", "E2E snapshot "+name+"-idle0 taken") {
			return false
		}
		time.Sleep(vfIdle)
		return command("snap "+name+"-idle1", "E2E snapshot "+name+"-idle1 taken")
	}
	if _, err := vm.WaitOutput("E2E READY", 6*time.Minute); err != nil {
		t.Errorf("guest not ready: %v", err)
	} else if measure("vf") && command("snap steady", "E2E snapshot steady taken") {
		runs["steady"] = runs["vf"]
		for _, ev := range events {
			done := make(chan *latencyRun)
			go func() { done <- probe("during-"+ev, vfEventCount(ev)) }()
			time.Sleep(time.Second)
			ok := command(ev, "E2E "+ev+" done")
			runs["during-"+ev] = <-done
			if !ok {
				break
			}
			time.Sleep(2 * time.Second) // the watcher's MAC check runs every second
			runs["after-"+ev] = probe("after-"+ev, vfProbes)
			if !command("snap after-"+ev, "E2E snapshot after-"+ev+" taken") {
				break
			}
		}
	}
	if runs["after-pfrebind"] != nil && command("unpriv", "E2E unpriv ready") {
		runs["unpriv"] = probe("unpriv", vfProbes)
	}
	if runs["after-pfrebind"] != nil && command("pfphase", "E2E pf ready") {
		measure("pf")
	}
	res, rep := doneE2E(t, vm)
	// The PF's rebind prints its VF 0 again: each address once.
	var vfs [][]string
	for _, m := range regexp.MustCompile(`E2E vf (\S+) of \S+ 0x8086:0x10ca`).FindAllStringSubmatch(res.Output, -1) {
		if !slices.ContainsFunc(vfs, func(v []string) bool { return v[1] == m[1] }) {
			vfs = append(vfs, m)
		}
	}
	if len(vfs) != 2 {
		t.Fatalf("guest VFs %q, want two 8086:10ca", vfs)
	}
	for i, vf := range vfs {
		if !rep.logged("nic driver", fmt.Sprintf(`"port": "vf%d"`, i), `"nic": "igbvf"`) {
			t.Errorf("the daemon's log does not say port vf%d (%s) was opened by igbvf", i, vf[1])
		}
	}
	t.Run("PF down at open", func(t *testing.T) { checkPFDownOpen(t, res.Output, rep, "vf0", "vf1") })
	t.Run("steady", func(t *testing.T) {
		r := runs["steady"]
		if r == nil {
			t.Fatal("no probes were sent")
		}
		checkProbes(t, r)
		n, ok := irqDelta(rep.snap("vf-pre"), rep.snap("steady"), "vfio-msix[0]("+vfs[0][1]+")")
		if !ok || n == 0 {
			t.Errorf("the RX vector of %s counted %d interrupts (line found %v) over %d probes", vfs[0][1], n, ok, vfProbes)
		}
		t.Logf("%s's RX vector (vfio-msix[0]) fired %d times for %d probes", vfs[0][1], n, vfProbes)
	})
	prev := "steady"
	for _, ev := range events {
		t.Run(ev, func(t *testing.T) {
			during, after := runs["during-"+ev], runs["after-"+ev]
			if during == nil || after == nil {
				t.Fatal("the event's probes were not sent")
			}
			t.Logf("during %s: sent %d, received %d, late %d, lost %d", ev, during.Sent, during.Received, during.Late, during.Lost)
			checkProbes(t, after)
			before, now := vfCounters(t, rep.snap(prev).status), vfCounters(t, rep.snap("after-"+ev).status)
			// Linux's igb tells a VF nothing of an administrator's MAC change ("Reload the
			// VF driver"): the probes to the old address are lost until it is set back.
			if ev == "pfbounce" && now[0].resets <= before[0].resets {
				t.Errorf("vf0 re-initialisations %d before, %d after: the port did not re-initialise", before[0].resets, now[0].resets)
			}
			// The PF's unbind removes its VFs: the port is taken out and re-opened.
			if ev == "pfrebind" {
				if now[0].reopens != before[0].reopens+1 || now[0].removals != before[0].removals+1 {
					t.Errorf("vf0 removals %d -> %d, re-opens %d -> %d: want one of each", before[0].removals, now[0].removals, before[0].reopens, now[0].reopens)
				}
				if now[1].removals != before[1].removals {
					t.Errorf("vf1 (of the other PF) removed %d times", now[1].removals-before[1].removals)
				}
				m := regexp.MustCompile(`E2E pfrebind-times (.*)`).FindStringSubmatch(res.Output)
				if m == nil {
					t.Error("the guest printed no pfrebind-times")
				} else {
					t.Logf("pfrebind (seconds from the unbind's start, rebound and back from the bind's): %s", m[1])
				}
				for _, l := range strings.Split(res.Output, "\n") {
					if strings.Contains(l, "device requested by the kernel") || strings.Contains(l, "device back") || strings.Contains(l, "pfrebind: unbind") {
						t.Log(strings.TrimSpace(l))
					}
				}
			}
			t.Logf("vf0 re-initialisations %d -> %d, removals %d -> %d, re-opens %d -> %d; vf1 re-initialisations %d -> %d",
				before[0].resets, now[0].resets, before[0].removals, now[0].removals, before[0].reopens, now[0].reopens, before[1].resets, now[1].resets)
		})
		prev = "after-" + ev
	}
	t.Run("unprivileged", func(t *testing.T) { checkUnprivVF(t, res.Output, runs["unpriv"]) })
	t.Run("against the PF", func(t *testing.T) {
		var rows []string
		var idleCPU [2]float64
		for i, side := range []string{"vf", "pf"} {
			r := runs[side]
			if r == nil {
				t.Fatalf("%s: no probes were sent", side)
			}
			checkProbes(t, r)
			probed := threadCPU(t, rep.snap(side+"-pre").status, rep.snap(side).status)
			idle := threadCPU(t, rep.snap(side+"-idle0").status, rep.snap(side+"-idle1").status)
			rows = append(rows, fmt.Sprintf("%s: p50 %v, p99 %v, poll-thread CPU %.1f%% probed, %.2f%% idle",
				side, time.Duration(r.MedianNs), time.Duration(r.P99Ns), probed, idle))
			a, okA := parseThreads(res.Output, side+"-idle0")
			b, okB := parseThreads(res.Output, side+"-idle1")
			cpu, sws, threads, ok := idleUse(a, b)
			if !okA || !okB || !ok {
				t.Errorf("%s: no THREADS lines for the idle stretch (%v, %v)", side, okA, okB)
				continue
			}
			idleCPU[i] = cpu
			rows = append(rows, fmt.Sprintf("%s idle %.1f s, whole daemon: %s", side, b.t-a.t, formatUse(cpu, sws, threads)))
		}
		if idleCPU[1] > 0 {
			rows = append(rows, fmt.Sprintf("idle CPU of the whole daemon, VF over PF: %.2f", idleCPU[0]/idleCPU[1]))
		}
		t.Log("uiod on a VF against uiod on its PF, one boot, " + strconv.Itoa(vfProbes) + " probes at " + e2eInterval.String() + ":\n" + strings.Join(rows, "\n"))
	})
	rep.checkRunExit(t)
}

// checkPFDownOpen checks the guest's first step (pfdown_open in vflib.sh): the daemon
// started with the PF of port down's VF down ran with down's link down and the others'
// up (snapshot "pfdown"), and down came up once the PF did, with the PF's address for it
// (the probes' MAC), before the snapshot "start" (the steady probes then show it forwards).
func checkPFDownOpen(t *testing.T, out string, rep *e2eReport, down string, others ...string) {
	t.Helper()
	m := regexp.MustCompile(`E2E pfdown-times up-to-link=(\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the guest printed no pfdown-times: %s did not come up after its PF", down)
	}
	before, after := portLinks(t, rep.snap("pfdown").status), portLinks(t, rep.snap("start").status)
	if p, ok := before[down]; !ok || p.up {
		t.Errorf("with the PF down /status has %s %+v (listed %v): want its link down", down, p, ok)
	}
	for _, name := range others {
		if p, ok := before[name]; !ok || !p.up {
			t.Errorf("with %s's PF down /status has %s %+v (listed %v): want its link up", down, name, p, ok)
		}
	}
	for _, name := range append([]string{down}, others...) {
		if p, ok := after[name]; !ok || !p.up {
			t.Errorf("after the PF came up /status has %s %+v (listed %v): want its link up", name, p, ok)
		}
	}
	// Until the PF answers the port has a random address.
	if a := after[down].mac; a != probeDstMAC {
		t.Errorf("%s has address %q once its PF is up, want the PF's %s", down, a, probeDstMAC)
	}
	t.Logf("PF down at the VFs' open: %s address %s while down, %s after; link up %s s after the PF's", down, before[down].mac, after[down].mac, m[1])
}

// probeDstMAC is the address the VF guest scripts have the PF give the VFs the host probes
// (PROBE_DST).
const probeDstMAC = "02:75:69:6f:64:02"

// portLink is a port's link and address in /status.
type portLink struct {
	up  bool
	mac string
}

// portLinks reads every port's link and address from a /status document, by name.
func portLinks(t *testing.T, status []byte) map[string]portLink {
	t.Helper()
	var s struct {
		Ports []struct {
			Name   string `json:"name"`
			MAC    string `json:"mac"`
			LinkUp bool   `json:"link_up"`
		} `json:"ports"`
	}
	out := map[string]portLink{}
	if err := json.Unmarshal(status, &s); err != nil {
		t.Errorf("status: %v: %s", err, status)
		return out
	}
	for _, p := range s.Ports {
		out[p.Name] = portLink{p.LinkUp, p.MAC}
	}
	return out
}

// vfProbe sends count probes at e2eInterval into the wire of NIC 2*pair and takes them
// from NIC 2*pair+1's; nil (and an error of t) when the run failed.
func vfProbe(t *testing.T, vm *qemutest.VM, pair int, name string, count int) *latencyRun {
	out, rep, err := qemutest.Latency(binaries.uiod, vm.NICs[2*pair], vm.NICs[2*pair+1], t.TempDir(), name, 3*time.Minute,
		"--count", strconv.Itoa(count), "--interval", e2eInterval.String(), "--timeout", e2eProbeTimeout.String())
	if err != nil {
		t.Errorf("uiod latency %s: %v", name, err)
		return nil
	}
	t.Log(out)
	return &latencyRun{Name: name, LatencyReport: *rep}
}

// guestCommand sends cmd to the guest script and waits up to 3 minutes for the line
// wait; false (and an error of t) when either fails.
func guestCommand(t *testing.T, vm *qemutest.VM, cmd, wait string) bool {
	if err := vm.Send(cmd); err != nil {
		t.Errorf("guest control port: %v", err)
		return false
	}
	if _, err := vm.WaitOutput(wait, 3*time.Minute); err != nil {
		t.Errorf("%s: %v", cmd, err)
		return false
	}
	return true
}

// vfScript is the guest script testdata/name after the shell functions of
// testdata/vflib.sh.
func vfScript(t *testing.T, name string) string {
	return testdataScript(t, "vflib.sh") + testdataScript(t, name)
}

// TestVFLibServeVFs runs vflib.sh's serve_vfs on the host's sh, with the guest library
// before it, serve replaced by a stand-in that prints its arguments and the configuration,
// and VFCONF in a temporary directory: one port a VF, the ports forwarded in pairs, as many
// links as ports.
func TestVFLibServeVFs(t *testing.T) {
	lib := strings.Replace(testdataScript(t, "vflib.sh"), ". /etc/uiod/lib.sh\n", "", 1)
	script := "VFCONF=" + t.TempDir() + "/vf.yaml\n" + qemutest.GuestLib + lib + `serve() { echo "serve $1 $2"; cat "$1"; }
serve_vfs a0 0000:01:10.0 a1 0000:02:10.0 b0 0000:03:10.0 b1 0000:04:10.0
`
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("serve_vfs: %v\n%s", err, out)
	}
	testutil.TextContains(t, "serve_vfs", string(out),
		"/vf.yaml 4\n",
		`  - {name: b1, driver: vfio-pci, pci: "0000:04:10.0", nic: igbvf, interrupts: msix}`,
		"pairs:\n    - [a0, a1]\n    - [b0, b1]\npoll:\n  mode: adaptive\n  idle_threshold: 300us\n")
}

// threadCPU is the poll threads' CPU share (percent of one CPU) between two /status
// documents.
func threadCPU(t *testing.T, before, after []byte) float64 {
	t.Helper()
	sum := func(doc []byte) (cpu, wall float64) {
		var s struct {
			Threads []struct {
				CPUSeconds  float64 `json:"cpu_seconds"`
				WallSeconds float64 `json:"wall_seconds"`
			} `json:"threads"`
		}
		if err := json.Unmarshal(doc, &s); err != nil {
			t.Errorf("status: %v: %s", err, doc)
		}
		for _, th := range s.Threads {
			cpu += th.CPUSeconds
			wall = max(wall, th.WallSeconds)
		}
		return cpu, wall
	}
	c0, w0 := sum(before)
	c1, w1 := sum(after)
	if w1 <= w0 {
		t.Errorf("no wall time between the snapshots (%v, %v)", w0, w1)
		return 0
	}
	return 100 * (c1 - c0) / (w1 - w0)
}

// vfCount is a VF port's recovery counters in /status.
type vfCount struct{ resets, removals, reopens uint64 }

// vfCounters reads the two ports' device_resets, removals and reopens from a /status
// document.
func vfCounters(t *testing.T, status []byte) [2]vfCount {
	t.Helper()
	var s struct {
		Ports []struct {
			Name     string `json:"name"`
			Removals uint64 `json:"removals"`
			Reopens  uint64 `json:"reopens"`
			Stats    struct {
				DeviceResets uint64 `json:"device_resets"`
			} `json:"stats"`
		} `json:"ports"`
	}
	var out [2]vfCount
	if err := json.Unmarshal(status, &s); err != nil {
		t.Errorf("status: %v: %s", err, status)
		return out
	}
	for _, p := range s.Ports {
		if i := strings.TrimPrefix(p.Name, "vf"); i == "0" || i == "1" {
			out[i[0]-'0'] = vfCount{p.Stats.DeviceResets, p.Removals, p.Reopens}
		}
	}
	return out
}
