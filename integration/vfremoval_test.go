package integration

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/qemutest"
)

// vfRemovalProbes probes at e2eInterval go through each pair while a VF is removed and
// brought back: 15 s of them.
const vfRemovalProbes = 3000

// TestIntegrationVFRemoval is the guest proof of a VF's removal (testdata/vfremoval.sh):
// the shared kernel with an emulated Intel IOMMU and four QEMU igb NICs as Linux igb PFs
// with two VFs each (uiod vf create), VF 0 of each on vfio-pci, one `uiod run` forwarding
// l2fwd between the VFs of PF 1 and PF 2 (pair a) and of PF 3 and PF 4 (pair b), each
// pair probed by the host. Linux gives a VF no remove file, so under the probes VF 0 of
// PF 3 is taken away as the kernel allows: by "echo 0 > PF3/sriov_numvfs", then by "echo 1
// > PF3/remove". Each time the write returns, /status shows b0 absent and the other ports
// present and never removed, and pair a loses no probe while b0 is away and brought
// back; the guest tries a rescan, and where that does not re-create the VF, gives PF 3
// its VFs again (uiod vf create) and binds VF 0 to vfio-pci: the daemon re-opens b0 by
// itself and both pairs bring every probe back. The times and the way the VF came back
// are logged. Before all that, the daemon starts with PF 1's interface down: it must run
// with a0's link down until the PF is up, and a0 then comes up by itself
// (checkPFDownOpen).
func TestIntegrationVFRemoval(t *testing.T) {
	o := qemutest.Options{IOMMU: true, NICs: 4, HugePages: 2 * e2eHugePages, Timeout: 9 * time.Minute}
	o.Script = vfScript(t, "vfremoval.sh")
	vm := startGuest(t, qemutest.SharedKernel, o)
	// both probes the two pairs at once, count probes each.
	both := func(name string, count int, meanwhile func() bool) (runs [2]*latencyRun, ok bool) {
		done := make(chan struct{})
		for i := range 2 {
			go func() { runs[i] = vfProbe(t, vm, i, name+"-"+"ab"[i:i+1], count); done <- struct{}{} }()
		}
		ok = meanwhile()
		<-done
		<-done
		return runs, ok && runs[0] != nil && runs[1] != nil
	}
	command := func(cmd, wait string) bool { return guestCommand(t, vm, cmd, wait) }
	events := []string{"numvfs", "pfremove"}
	runs := map[string][2]*latencyRun{}
	ok := false
	if _, err := vm.WaitOutput("E2E READY", 7*time.Minute); err != nil {
		t.Errorf("guest not ready: %v", err)
	} else if runs["steady"], ok = both("steady", vfProbes, func() bool { return true }); ok && command("snap before", "E2E snapshot before taken") {
		for _, ev := range events {
			if runs["during-"+ev], ok = both("during-"+ev, vfRemovalProbes, func() bool {
				time.Sleep(time.Second)
				return command("vfremove "+ev, "E2E vfremove "+ev+" done")
			}); !ok {
				break
			}
			if runs["after-"+ev], ok = both("after-"+ev, vfProbes, func() bool { return true }); !ok {
				break
			}
			if ok = command("snap after-"+ev, "E2E snapshot after-"+ev+" taken"); !ok {
				break
			}
		}
	}
	res, rep := doneE2E(t, vm)
	for _, l := range strings.Split(res.Output, "\n") {
		if strings.Contains(l, "E2E vfremove") || strings.Contains(l, "device requested by the kernel") || strings.Contains(l, "device back") {
			t.Log(strings.TrimSpace(l))
		}
	}
	if !ok {
		t.Fatal("the probes did not all run")
	}
	t.Run("PF down at open", func(t *testing.T) { checkPFDownOpen(t, res.Output, rep, "a0", "a1", "b0", "b1") })
	t.Run("steady", func(t *testing.T) {
		checkProbes(t, runs["steady"][0])
		checkProbes(t, runs["steady"][1])
	})
	for n, ev := range events {
		t.Run(ev, func(t *testing.T) {
			a, b := runs["during-"+ev][0], runs["during-"+ev][1]
			t.Logf("while b0 was taken away (%s) and brought back: pair a sent %d, received %d, late %d, lost %d; pair b sent %d, received %d, late %d, lost %d",
				ev, a.Sent, a.Received, a.Late, a.Lost, b.Sent, b.Received, b.Late, b.Lost)
			if a.Sent != vfRemovalProbes || a.Received+a.Late != a.Sent || a.Lost != 0 || a.Duplicates != 0 {
				t.Errorf("pair a: %d of %d probes back, %d lost, %d duplicates: the other pair must lose nothing", a.Received+a.Late, a.Sent, a.Lost, a.Duplicates)
			}
			m := regexp.MustCompile(`E2E vfremove-times ` + ev + ` (.*)`).FindStringSubmatch(res.Output)
			if m == nil {
				t.Fatal("the guest printed no vfremove-times")
			}
			t.Logf("%s (seconds; removed and absent from the write's start, rebound and back from the rescan's): %s", ev, m[1])
			absent := removalPorts(t, rep.snap("absent-"+ev).status)
			if p := absent["b0"]; !p.Absent || p.Removals != uint64(n+1) {
				t.Errorf("while taken away /status has b0 %+v: want absent, %d removals", p, n+1)
			}
			for _, name := range []string{"a0", "a1", "b1"} {
				if p, seen := absent[name]; !seen || p.Absent || p.Removals != 0 {
					t.Errorf("while b0 was taken away /status has %s %+v (listed %v): want present, never removed", name, p, seen)
				}
			}
			if p := removalPorts(t, rep.snap("after-"+ev).status)["b0"]; p.Absent || p.Removals != uint64(n+1) || p.Reopens != uint64(n+1) {
				t.Errorf("after the VF came back /status has b0 %+v: want present, %d removals and re-opens", p, n+1)
			}
			checkProbes(t, runs["after-"+ev][0])
			checkProbes(t, runs["after-"+ev][1])
		})
	}
	rep.checkRunExit(t)
}

// removalPort is a port's presence in /status.
type removalPort struct {
	Absent   bool   `json:"absent"`
	Removals uint64 `json:"removals"`
	Reopens  uint64 `json:"reopens"`
}

// removalPorts reads every port's presence from a /status document, by name.
func removalPorts(t *testing.T, status []byte) map[string]removalPort {
	t.Helper()
	var s struct {
		Ports []struct {
			Name string `json:"name"`
			removalPort
		} `json:"ports"`
	}
	if err := json.Unmarshal(status, &s); err != nil {
		t.Errorf("status: %v: %s", err, status)
	}
	out := map[string]removalPort{}
	for _, p := range s.Ports {
		out[p.Name] = p.removalPort
	}
	return out
}
